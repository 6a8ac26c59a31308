//! RR22 sessions: several buckets of different sizes (0 and 1 items included) over one
//! session per side, for each variant, in memory and over TCP, against the plain
//! intersection; the base setup runs once (later buckets send fewer messages); handshake
//! mismatches and out-of-step peers are errors, and a failed session refuses further runs.
#![allow(clippy::unwrap_used)]

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, Stats, TcpChannel, TcpOptions, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, Rr22Config, Rr22Session, Variant};
use obliv_psi::{Error, ErrorKind, plain_intersection};

/// One bucket: the receiver's and the sender's items.
type Bucket = (Vec<Vec<u8>>, Vec<Vec<u8>>);

const ALL: [Variant; 3] = [Variant::Fast, Variant::LowComm, Variant::Malicious];

fn items(range: std::ops::Range<u64>, tag: u8) -> Vec<Vec<u8>> {
    range
        .map(|i| {
            let mut v = i.to_le_bytes().to_vec();
            v.push(tag);
            v
        })
        .collect()
}

/// Buckets `(X_i, Y_i)`: empty on both sides, empty on one side before and after the VOLE
/// generator exists, single items (common and not), and overlapping sets of several sizes.
fn buckets(b: u8) -> Vec<Bucket> {
    vec![
        (vec![], vec![]),
        (items(0..1, b), vec![]),
        (vec![], items(0..7, b)),
        (items(5..6, b), items(5..6, b)),
        (items(0..300, b), items(150..650, b)),
        (items(0..1, b), items(1..2, b)),
        (vec![], items(0..3, b)),
        (items(0..2000, b), items(1000..2500, b)),
        (items(7..8, b), items(0..100, b)),
        (items(0..40, b), items(0..1, b)),
    ]
}

/// Runs every bucket over one session per side; returns the receiver's results and the
/// receiver's channel statistics after each bucket.
fn run_session<C: Channel + 'static>(
    (mut a, mut b): (C, C),
    variant: Variant,
    buckets: &[Bucket],
    seed: u8,
) -> (Vec<Vec<usize>>, Vec<Stats>) {
    let cfg = Rr22Config::new(variant);
    let ys: Vec<Vec<Vec<u8>>> = buckets.iter().map(|(_, y)| y.clone()).collect();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([seed.wrapping_add(1); 16]);
        let mut s = Rr22Session::new(Role::Sender, &cfg).unwrap();
        for y in &ys {
            assert!(s.run(&mut b, y, &mut rng).unwrap().is_none());
        }
        s.runs()
    });
    let mut rng = AesRng::from_seed([seed; 16]);
    let mut s = Rr22Session::new(Role::Receiver, &cfg).unwrap();
    let mut out = Vec::new();
    let mut stats = Vec::new();
    for (x, _) in buckets {
        out.push(s.run(&mut a, x, &mut rng).unwrap().unwrap());
        stats.push(a.stats());
    }
    assert_eq!(t.join().unwrap(), buckets.len() as u64);
    assert_eq!(s.runs(), buckets.len() as u64);
    (out, stats)
}

fn expected(buckets: &[Bucket]) -> Vec<Vec<usize>> {
    buckets
        .iter()
        .map(|(x, y)| plain_intersection(x, y))
        .collect()
}

#[test]
fn session_buckets_in_memory() {
    for (i, v) in ALL.into_iter().enumerate() {
        let bs = buckets(u8::try_from(i).unwrap());
        let (got, _) = run_session(mem_pair(), v, &bs, 10 + u8::try_from(i).unwrap());
        assert_eq!(got, expected(&bs), "{}", v.name());
        // Not vacuous: some buckets intersect, some do not.
        assert!(got.iter().any(|g| g.len() > 100));
        assert!(got.iter().any(Vec::is_empty));
    }
}

#[test]
fn session_buckets_over_tcp() {
    for v in ALL {
        let bs = vec![
            (items(0..1, 9), items(0..1, 9)),
            (vec![], items(0..10, 9)),
            (items(0..1500, 9), items(700..3000, 9)),
            (items(0..64, 9), items(32..40, 9)),
        ];
        let pair = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
        let (got, _) = run_session(pair, v, &bs, 30);
        assert_eq!(got, expected(&bs), "{}", v.name());
    }
}

#[test]
fn base_setup_runs_once_per_session() {
    // Two equal buckets: the second must not repeat the base OTs, so it costs fewer messages
    // and fewer bytes than the first; a one-shot run costs what the session's first run does.
    for v in ALL {
        let bs = vec![
            (items(0..1000, 1), items(500..1500, 1)),
            (items(0..1000, 2), items(500..1500, 2)),
        ];
        let (got, stats) = run_session(mem_pair(), v, &bs, 40);
        assert_eq!(got, expected(&bs));
        let first = stats[0];
        let second = Stats {
            bytes_sent: stats[1].bytes_sent - first.bytes_sent,
            bytes_received: stats[1].bytes_received - first.bytes_received,
            messages_sent: stats[1].messages_sent - first.messages_sent,
            messages_received: stats[1].messages_received - first.messages_received,
            rounds: stats[1].rounds - first.rounds,
        };
        assert!(
            second.messages_sent + second.messages_received
                < first.messages_sent + first.messages_received,
            "{}: {first:?} then {second:?}",
            v.name()
        );
        assert!(
            second.bytes_sent + second.bytes_received < first.bytes_sent + first.bytes_received,
            "{}: {first:?} then {second:?}",
            v.name()
        );
        // The one-shot `run` is the session's first run, message for message.
        let (mut a, mut b) = mem_pair();
        let (x, y) = bs[0].clone();
        let cfg = Rr22Config::new(v);
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([41; 16]);
            rr22::run(&mut b, Role::Sender, &y, &cfg, &mut rng).unwrap()
        });
        let mut rng = AesRng::from_seed([40; 16]);
        rr22::run(&mut a, Role::Receiver, &x, &cfg, &mut rng).unwrap();
        t.join().unwrap();
        let one = a.stats();
        assert_eq!(
            (one.messages_sent, one.messages_received),
            (first.messages_sent, first.messages_received),
            "{}",
            v.name()
        );
    }
}

#[test]
fn mismatched_variants_fail_in_the_handshake() {
    for (ours, theirs) in [
        (Variant::Fast, Variant::Malicious),
        (Variant::Malicious, Variant::LowComm),
        (Variant::LowComm, Variant::Fast),
    ] {
        let (mut a, mut b) = mem_pair();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([1; 16]);
            let mut s = Rr22Session::new(Role::Sender, &Rr22Config::new(theirs)).unwrap();
            s.run(&mut b, &items(0..10, 0), &mut rng)
        });
        let mut rng = AesRng::from_seed([2; 16]);
        let mut s = Rr22Session::new(Role::Receiver, &Rr22Config::new(ours)).unwrap();
        let err = s.run(&mut a, &items(0..10, 0), &mut rng).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::HandshakeMismatch {
                    field: "protocol",
                    ..
                }
            ),
            "{err}"
        );
        assert!(t.join().unwrap().is_err());
        // A failed session refuses further runs instead of going out of step.
        let again = s.run(&mut a, &items(0..10, 0), &mut rng).unwrap_err();
        assert!(matches!(again, Error::InvalidParameter(_)), "{again}");
    }
}

#[test]
fn out_of_step_peer_is_a_handshake_mismatch() {
    // The receiver runs a second bucket on its session; the sender answers with a fresh
    // session (as after a restart): the stage flag differs, both sides stop with an error.
    for v in ALL {
        let (mut a, mut b) = mem_pair();
        let cfg = Rr22Config::new(v);
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([3; 16]);
            let mut s = Rr22Session::new(Role::Sender, &cfg).unwrap();
            s.run(&mut b, &items(0..50, 0), &mut rng).unwrap();
            let mut fresh = Rr22Session::new(Role::Sender, &cfg).unwrap();
            fresh.run(&mut b, &items(0..50, 0), &mut rng)
        });
        let mut rng = AesRng::from_seed([4; 16]);
        let mut s = Rr22Session::new(Role::Receiver, &cfg).unwrap();
        let first = s.run(&mut a, &items(25..75, 0), &mut rng).unwrap().unwrap();
        assert_eq!(first, (0..25).collect::<Vec<_>>());
        let err = s.run(&mut a, &items(0..50, 0), &mut rng).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::HandshakeMismatch {
                    field: "options",
                    ..
                }
            ),
            "{}: {err}",
            v.name()
        );
        assert!(t.join().unwrap().is_err());
    }
}

#[test]
fn hostile_count_in_a_later_bucket_is_rejected() {
    // A sender that runs the first bucket honestly, then announces more than MAX_ITEMS.
    let (mut a, mut b) = mem_pair();
    let cfg = Rr22Config::default();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([5; 16]);
        let mut s = Rr22Session::new(Role::Sender, &cfg).unwrap();
        s.run(&mut b, &items(0..20, 0), &mut rng).unwrap();
        let mut h = Vec::new();
        h.extend_from_slice(b"OBPS");
        h.extend_from_slice(&obliv_psi::handshake::WIRE_VERSION.to_le_bytes());
        h.extend_from_slice(&[10, 0, 1, 2]);
        h.extend_from_slice(&(1u32 << 14).to_le_bytes());
        h.extend_from_slice(&u64::MAX.to_le_bytes());
        h.extend_from_slice(&40u64.to_le_bytes());
        b.send(&h).unwrap();
        b.flush().unwrap();
        let _ = b.recv();
    });
    let mut rng = AesRng::from_seed([6; 16]);
    let mut s = Rr22Session::new(Role::Receiver, &cfg).unwrap();
    assert_eq!(
        s.run(&mut a, &items(10..30, 0), &mut rng).unwrap().unwrap(),
        (0..10).collect::<Vec<_>>()
    );
    let err = s.run(&mut a, &items(0..20, 0), &mut rng).unwrap_err();
    assert!(err.kind() == ErrorKind::PeerMisbehaved, "{err}");
    drop(a);
    t.join().unwrap();
}

#[test]
fn bad_config_is_rejected() {
    for bin_size in [0, (1 << 24) + 1] {
        let cfg = Rr22Config {
            bin_size,
            ..Rr22Config::default()
        };
        assert!(matches!(
            Rr22Session::new(Role::Receiver, &cfg),
            Err(Error::InvalidParameter(_))
        ));
    }
}
