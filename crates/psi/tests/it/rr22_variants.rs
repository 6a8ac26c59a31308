//! RR22 malicious and low-communication against the plain intersection: sizes, edge cases,
//! TCP, variant mismatches, hostile and deviating peers.
#![allow(clippy::unwrap_used)]

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, TcpChannel, TcpOptions, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, Rr22Config, Variant};
use obliv_psi::{Error, ErrorKind, plain_intersection};

const MAL: Variant = Variant::Malicious;
const LOW: Variant = Variant::LowComm;

fn items(range: std::ops::Range<u64>, tag: u8) -> Vec<Vec<u8>> {
    range
        .map(|i| {
            let mut v = i.to_le_bytes().to_vec();
            v.push(tag);
            v
        })
        .collect()
}

fn run_pair<C: Channel + 'static>(
    (mut a, mut b): (C, C),
    x: &[Vec<u8>],
    y: Vec<Vec<u8>>,
    variant: Variant,
    seed: u8,
) -> Vec<usize> {
    let cfg = Rr22Config::new(variant);
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([seed.wrapping_add(1); 16]);
        rr22::run(&mut b, Role::Sender, &y, &cfg, &mut rng)
    });
    let mut rng = AesRng::from_seed([seed; 16]);
    let out = rr22::run(&mut a, Role::Receiver, x, &cfg, &mut rng).unwrap();
    assert!(t.join().unwrap().unwrap().is_none());
    out.unwrap()
}

fn check(variant: Variant, x: Vec<Vec<u8>>, y: Vec<Vec<u8>>, seed: u8) {
    let expected = plain_intersection(&x, &y);
    let got = run_pair(mem_pair(), &x, y, variant, seed);
    assert_eq!(got, expected, "{variant:?} |X| = {}, seed {seed}", x.len());
}

#[test]
fn empty_single_and_tiny() {
    for v in [MAL, LOW] {
        check(v, vec![], vec![], 1);
        check(v, vec![], items(0..10, 0), 2);
        check(v, items(0..10, 0), vec![], 3);
        check(v, items(0..1, 0), items(0..1, 0), 4);
        check(v, items(0..1, 0), items(1..2, 0), 5);
        check(v, items(0..2, 0), items(1..3, 0), 6);
        check(v, items(0..3, 0), items(0..1, 0), 7);
    }
}

#[test]
fn many_sizes_and_seeds_against_plain() {
    // Odd sizes, a bin boundary ± 1, unbalanced sizes; overlap about half.
    let sizes: [(u64, u64); 8] = [
        (5, 7),
        (33, 33),
        (101, 37),
        (3, 1000),
        (1000, 3),
        (16383, 16385),
        (16385, 16383),
        (4097, 9001),
    ];
    for v in [MAL, LOW] {
        for (i, &(nx, ny)) in sizes.iter().enumerate() {
            let x = items(0..nx, 0);
            let y = items(nx / 2..nx / 2 + ny, 0);
            check(v, x, y, 10 + u8::try_from(i).unwrap());
        }
    }
}

#[test]
fn lowcomm_against_plain_over_many_seeds() {
    // The SecretFlow low-comm bug lost ~0.6 % of the intersection: every element must come
    // back, at every seed (different VOLE noise, OKVS seeds, keys).
    for seed in 0..12u8 {
        let n = 2000 + 37 * u64::from(seed);
        let x = items(0..n, seed);
        let y = items(n / 3..n / 3 + n, seed);
        check(LOW, x, y, 100 + seed);
    }
}

#[test]
fn lowcomm_1e5() {
    let x = items(0..100_000, 0);
    let y = items(50_000..150_000, 0);
    let got = run_pair(mem_pair(), &x, y, LOW, 60);
    assert_eq!(got, (50_000..100_000).collect::<Vec<_>>());
}

#[test]
fn malicious_2_16() {
    let x = items(0..1 << 16, 0);
    let y = items(1 << 15..(1 << 16) + (1 << 15), 0);
    let got = run_pair(mem_pair(), &x, y, MAL, 61);
    assert_eq!(got, (1 << 15..1 << 16).collect::<Vec<_>>());
}

#[test]
fn disjoint_identical_duplicates() {
    for v in [MAL, LOW] {
        let x = items(0..500, 0);
        assert!(run_pair(mem_pair(), &x, items(0..500, 1), v, 20).is_empty());
        assert_eq!(
            run_pair(mem_pair(), &x, x.clone(), v, 21),
            (0..500).collect::<Vec<_>>()
        );
        let mut x = items(0..50, 0);
        x.extend(items(0..10, 0));
        x.extend(items(100..110, 0));
        let mut y = items(5..60, 0);
        y.extend(items(5..20, 0));
        check(v, x, y, 22);
    }
}

#[test]
fn over_tcp() {
    for v in [MAL, LOW] {
        let x = items(0..3000, 0);
        let y = items(1000..5000, 0);
        let expected = plain_intersection(&x, &y);
        let pair = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
        assert_eq!(run_pair(pair, &x, y, v, 50), expected);
    }
}

#[test]
fn variant_mismatch_is_a_clear_error() {
    for (ours, theirs) in [(Variant::Fast, MAL), (MAL, LOW), (LOW, Variant::Fast)] {
        let (mut a, mut b) = mem_pair();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([1; 16]);
            rr22::run(
                &mut b,
                Role::Sender,
                &items(0..10, 0),
                &Rr22Config::new(theirs),
                &mut rng,
            )
        });
        let mut rng = AesRng::from_seed([2; 16]);
        let err = rr22::run(
            &mut a,
            Role::Receiver,
            &items(0..10, 0),
            &Rr22Config::new(ours),
            &mut rng,
        )
        .unwrap_err();
        match &err {
            Error::HandshakeMismatch {
                field: "protocol",
                ours: o,
                theirs: t,
            } => {
                assert_eq!(o, ours.name());
                assert_eq!(t, theirs.name());
            }
            other => panic!("expected a protocol mismatch, got {other}"),
        }
        assert!(t.join().unwrap().is_err());
    }
}

fn hello(protocol: u8, role: u8, batch: u32, n: u64) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(b"OBPS");
    h.extend_from_slice(&obliv_psi::handshake::WIRE_VERSION.to_le_bytes());
    h.extend_from_slice(&[protocol, 0, role, 0]);
    h.extend_from_slice(&batch.to_le_bytes());
    h.extend_from_slice(&n.to_le_bytes());
    h.extend_from_slice(&40u64.to_le_bytes());
    h
}

fn frame(tag: u8, index: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![tag];
    f.extend_from_slice(&index.to_le_bytes());
    f.extend_from_slice(payload);
    f
}

/// A receiver of 1000 items that runs the handshake and the low-comm VOLE honestly, then
/// sends `frames` instead of the masked OKVS; returns the sender's error.
fn hostile_lowcomm_receiver(frames: Vec<Vec<u8>>) -> Error {
    let (mut a, mut b) = mem_pair();
    let y = items(0..1000, 0);
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([3; 16]);
        rr22::run(&mut b, Role::Sender, &y, &Rr22Config::new(LOW), &mut rng)
    });
    a.send(&hello(11, 0, 0, 1000)).unwrap();
    a.recv().unwrap();
    let m = obliv_okvs::Paxos::<obliv_okvs::Binary>::new(1000, 40, obliv_core::Block(0)).unwrap();
    let m = obliv_okvs::Okvs::size(&m);
    let mut rng = AesRng::from_seed([4; 16]);
    let mut r = obliv_vole::Subfield64VoleReceiver::new(
        &mut a,
        obliv_vole::VoleConfig::default(),
        &mut rng,
    )
    .unwrap();
    r.extend(&mut a, m, &mut rng).unwrap();
    for f in frames {
        a.send(&f).unwrap();
    }
    a.flush().unwrap();
    let err = t.join().unwrap().unwrap_err();
    drop(a);
    err
}

#[test]
fn lowcomm_hostile_okvs_is_rejected() {
    let m = obliv_okvs::Okvs::size(
        &obliv_okvs::Paxos::<obliv_okvs::Binary>::new(1000, 40, obliv_core::Block(0)).unwrap(),
    );
    for frames in [
        vec![frame(1, 0, &[0; 15])], // short seed
        vec![frame(1, 0, &[0; 16]), frame(2, 0, &vec![0; 8 * m - 8])], // one slot short
        vec![frame(1, 0, &[0; 16]), frame(2, 0, &vec![0; 16 * m])], // 16-byte slots
        vec![frame(1, 0, &[0; 16]), frame(4, 0, &vec![0; 8 * m])], // wrong tag
        vec![frame(1, 0, &[0; 16]), frame(2, 1, &vec![0; 8 * m])], // wrong index
    ] {
        let e = hostile_lowcomm_receiver(frames);
        assert!(
            matches!(e.kind(), ErrorKind::PeerMisbehaved | ErrorKind::Network),
            "{e}"
        );
    }
}

/// A malicious-variant sender that runs the handshake, commits to `w_s`, runs the malicious
/// VOLE honestly, drains the receiver's OKVS, and then sends `after` (opening, values…);
/// returns the receiver's result.
fn deviating_malicious_sender(
    commit_to: [u8; 32],
    after: impl FnOnce(&mut obliv_net::MemChannel, usize),
) -> Result<Option<Vec<usize>>, Error> {
    let (mut a, mut b) = mem_pair();
    let x = items(0..100, 0);
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([5; 16]);
        rr22::run(&mut a, Role::Receiver, &x, &Rr22Config::new(MAL), &mut rng)
    });
    b.send(&hello(12, 1, 1 << 14, 100)).unwrap();
    b.recv().unwrap();
    b.send(&frame(5, 0, &commit_to)).unwrap();
    let m =
        obliv_okvs::BinnedPaxos::<obliv_okvs::Gf128>::new(100, 40, obliv_core::Block(0)).unwrap();
    let m = obliv_okvs::Okvs::size(&m);
    let mut rng = AesRng::from_seed([6; 16]);
    rr22::malicious::vole_send(&mut b, m, &mut rng).unwrap();
    // The seed and w_r, then the masked OKVS.
    let first = b.recv().unwrap();
    assert_eq!(first.len(), 5 + 32);
    for _ in 0..m.div_ceil(1 << 16) {
        b.recv().unwrap();
    }
    after(&mut b, m);
    b.flush().unwrap();
    let r = t.join().unwrap();
    drop(b);
    r
}

#[test]
fn malicious_wrong_opening_is_caught() {
    let w_s = [7u8; 16];
    let commitment = *blake3::Hasher::new_derive_key("obliv-psi rr22 v1 coin commitment")
        .update(&w_s)
        .finalize()
        .as_bytes();
    // Opening a different w_s than committed: the receiver aborts.
    let r = deviating_malicious_sender(commitment, |b, _| {
        b.send(&frame(6, 0, &[8u8; 16])).unwrap();
        b.send(&frame(3, 0, &0u64.to_le_bytes())).unwrap();
    });
    let e = r.unwrap_err();
    assert!(
        matches!(&e, Error::Protocol(s) if s.contains("commitment")),
        "{e}"
    );
    // The right opening and no values: an empty intersection, no error.
    let r = deviating_malicious_sender(commitment, |b, _| {
        b.send(&frame(6, 0, &w_s)).unwrap();
        b.send(&frame(3, 0, &0u64.to_le_bytes())).unwrap();
    });
    assert_eq!(r.unwrap().unwrap(), Vec::<usize>::new());
    // Values of the wrong width (semi-honest width instead of 16 bytes): rejected.
    let r = deviating_malicious_sender(commitment, |b, _| {
        b.send(&frame(6, 0, &w_s)).unwrap();
        b.send(&frame(3, 0, &3u64.to_le_bytes())).unwrap();
        b.send(&frame(4, 0, &[0u8; 3 * 8])).unwrap();
    });
    assert!(r.unwrap_err().kind() == ErrorKind::PeerMisbehaved);
    // Random 16-byte values (a sender that does not follow the hash): no false match.
    let r = deviating_malicious_sender(commitment, |b, _| {
        b.send(&frame(6, 0, &w_s)).unwrap();
        b.send(&frame(3, 0, &100u64.to_le_bytes())).unwrap();
        let vals: Vec<u8> = (0..1600u32)
            .map(|i| u8::try_from(i * 37 % 251).unwrap())
            .collect();
        b.send(&frame(4, 0, &vals)).unwrap();
    });
    assert_eq!(r.unwrap().unwrap(), Vec::<usize>::new());
}

#[test]
fn malicious_tampered_messages_are_caught_or_harmless() {
    // A sender whose channel flips one bit in its k-th message (base OTs, SoftSpokenOT, the
    // silent VOLE's trees and check, the opening, the values): the receiver must return an
    // error or a result inside the true intersection (tampering can only lose matches), and
    // never panic; a flip in the VOLE must be caught by some check at least once.
    let x = items(0..200, 0);
    let y = items(100..300, 0);
    let expected = plain_intersection(&x, &y);
    let mut caught = 0;
    for flip_at in 3..=16 {
        let (mut a, b) = mem_pair();
        let xr = x.clone();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([5; 16]);
            rr22::run(&mut a, Role::Receiver, &xr, &Rr22Config::new(MAL), &mut rng)
        });
        let mut tamper = Tamper {
            inner: b,
            sent: 0,
            flip_at,
        };
        let mut rng = AesRng::from_seed([6; 16]);
        let s = rr22::run(
            &mut tamper,
            Role::Sender,
            &y,
            &Rr22Config::new(MAL),
            &mut rng,
        );
        drop(tamper);
        match t.join().expect("the receiver panicked") {
            Err(_) => caught += 1,
            Ok(r) => {
                let r = r.unwrap();
                assert!(
                    r.iter().all(|i| expected.contains(i)),
                    "flip at {flip_at}: output outside the intersection"
                );
                if s.is_err() {
                    caught += 1;
                }
            }
        }
    }
    assert!(caught > 0, "no tampered message was detected");
}

/// A channel that flips one bit in its `flip_at`-th sent message.
struct Tamper {
    inner: obliv_net::MemChannel,
    sent: usize,
    flip_at: usize,
}

impl Channel for Tamper {
    fn send(&mut self, msg: &[u8]) -> obliv_net::Result<()> {
        self.sent += 1;
        if self.sent == self.flip_at && !msg.is_empty() {
            let mut m = msg.to_vec();
            let last = m.len() - 1;
            m[last] ^= 1;
            return self.inner.send(&m);
        }
        self.inner.send(msg)
    }
    fn recv_frame(
        &mut self,
        max_len: usize,
        buf: &mut dyn obliv_net::RecvBuf,
    ) -> obliv_net::Result<()> {
        self.inner.recv_frame(max_len, buf)
    }
    fn flush(&mut self) -> obliv_net::Result<()> {
        self.inner.flush()
    }
    fn stats(&self) -> obliv_net::Stats {
        self.inner.stats()
    }
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.inner.set_deadline(deadline)
    }
    fn set_max_frame_len(&mut self, max: usize) {
        self.inner.set_max_frame_len(max);
    }
}

#[test]
fn malicious_hostile_receiver_messages_are_rejected() {
    // A malicious-variant receiver that runs the handshake and the malicious VOLE honestly,
    // then sends a seed frame of the semi-honest length (no w_r), or a short OKVS: the sender
    // fails with an error, without opening its coin-toss share.
    let m = obliv_okvs::Okvs::size(
        &obliv_okvs::BinnedPaxos::<obliv_okvs::Gf128>::new(1000, 40, obliv_core::Block(0)).unwrap(),
    );
    for frames in [
        vec![frame(1, 0, &[0; 16])],
        vec![frame(1, 0, &[0; 32]), frame(2, 0, &[0; 16])],
        vec![frame(1, 0, &[0; 32]), frame(4, 0, &vec![0; 16 * m])],
    ] {
        let (mut a, mut b) = mem_pair();
        let y = items(0..1000, 0);
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([3; 16]);
            rr22::run(&mut b, Role::Sender, &y, &Rr22Config::new(MAL), &mut rng)
        });
        a.send(&hello(12, 0, 1 << 14, 1000)).unwrap();
        a.recv().unwrap();
        let commitment = a.recv().unwrap();
        assert_eq!(commitment.len(), 5 + 32);
        let mut rng = AesRng::from_seed([4; 16]);
        rr22::malicious::vole_receive(&mut a, m, &mut rng).unwrap();
        for f in frames {
            a.send(&f).unwrap();
        }
        a.flush().unwrap();
        let e = t.join().unwrap().unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::PeerMisbehaved | ErrorKind::Network),
            "{e}"
        );
        // Nothing after the error: in particular no opening of w_s.
        assert!(a.recv().is_err());
    }
}
