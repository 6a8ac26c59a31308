//! Forked RR22 sessions and the concurrent bucket driver, against the plain intersection:
//! children of one split run side by side on their own channels (fast, low-comm; malicious
//! forks are refused), the parent keeps working after a fork, crossed children and
//! mismatched fork counts are handshake errors; `run_buckets` over a `Mux` on memory
//! channels and on TCP with 1, 2 and 3 workers and several bucket counts and sizes
//! (malicious on independent worker sessions), mismatched worker or bucket counts, hostile
//! peers and early drops end in typed errors without hanging.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, Mux, MuxOptions, Split, TcpChannel, TcpOptions, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, BucketOutput, Rr22Config, Rr22Session, Variant};
use obliv_psi::{Error, ErrorKind, plain_intersection};

type Items = Vec<Vec<u8>>;

fn items(range: std::ops::Range<u64>, tag: u8) -> Items {
    range
        .map(|i| {
            let mut v = i.to_le_bytes().to_vec();
            v.push(tag);
            v
        })
        .collect()
}

/// `n` buckets of the receiver and the sender: bucket `i` has `X_i = 0..s_i`,
/// `Y_i = s_i/2..s_i/2 + s_i` over a per-bucket tag (some buckets empty on one side).
fn buckets(sizes: &[u64]) -> (Vec<Items>, Vec<Items>) {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for (i, &s) in sizes.iter().enumerate() {
        let tag = u8::try_from(i % 256).unwrap();
        xs.push(items(0..s, tag));
        ys.push(items(s / 2..s / 2 + s + i as u64 % 3, tag));
    }
    (xs, ys)
}

fn mux_opts() -> MuxOptions {
    MuxOptions {
        recv_timeout: Duration::from_secs(20),
        ..MuxOptions::default()
    }
}

/// Both parties' results of a driver run: the receiver's per-bucket results (or its error)
/// and the sender's bucket count (or its error).
type DriverOut = (Result<Vec<Vec<usize>>, Error>, Result<usize, Error>);

/// Runs `run_buckets` as receiver (on `a`, `workers.0`) and sender (on `b`, `workers.1`).
fn drive<C>(
    (a, b): (C, C),
    variant: Variant,
    workers: (usize, usize),
    xs: Vec<Items>,
    ys: Vec<Items>,
) -> DriverOut
where
    C: Split + Send + 'static,
    C::Sender: Send,
{
    let cfg = Rr22Config::new(variant);
    let t = std::thread::spawn(move || -> Result<usize, Error> {
        let mux = Mux::with_options(b, mux_opts()).unwrap();
        let mut rng = AesRng::from_seed([2; 16]);
        let it = rr22::run_buckets(&mux, Role::Sender, &cfg, workers.1, ys, &mut rng)?;
        let mut n = 0;
        for (i, out) in it.enumerate() {
            let out = out?;
            assert_eq!(out.index, i);
            assert!(out.result.is_none());
            n += 1;
        }
        Ok(n)
    });
    let mux = Mux::with_options(a, mux_opts()).unwrap();
    let mut rng = AesRng::from_seed([1; 16]);
    let recv = (|| -> Result<Vec<Vec<usize>>, Error> {
        let it = rr22::run_buckets(&mux, Role::Receiver, &cfg, workers.0, xs, &mut rng)?;
        assert_eq!(it.workers(), workers.0);
        let mut got = Vec::new();
        for (i, out) in it.enumerate() {
            let BucketOutput {
                index,
                bucket,
                result,
                stats,
                worker,
            } = out?;
            assert!(worker < workers.0);
            assert_eq!(index, i);
            assert!(stats.bytes_sent > 0 || bucket.is_empty());
            got.push(result.unwrap());
        }
        Ok(got)
    })();
    (recv, t.join().unwrap())
}

fn expected(xs: &[Items], ys: &[Items]) -> Vec<Vec<usize>> {
    xs.iter()
        .zip(ys)
        .map(|(x, y)| plain_intersection(x, y))
        .collect()
}

#[test]
fn driver_matches_plain_intersection_in_memory() {
    let cases: [(Variant, usize, &[u64]); 7] = [
        (Variant::Fast, 1, &[300, 0, 1, 2000]),
        (Variant::Fast, 2, &[1000, 1, 0, 5, 3000, 64, 700]),
        (Variant::Fast, 3, &[4000, 2, 800, 0, 1500]),
        (Variant::LowComm, 1, &[500, 2500]),
        (Variant::LowComm, 2, &[2000, 0, 7, 1200, 300]),
        (Variant::LowComm, 3, &[100, 3000, 1, 900, 2, 50, 1000]),
        (Variant::Malicious, 2, &[1000, 3, 0, 2000]),
    ];
    for (v, w, sizes) in cases {
        let (xs, ys) = buckets(sizes);
        let want = expected(&xs, &ys);
        let (r, s) = drive(mem_pair(), v, (w, w), xs, ys);
        assert_eq!(r.unwrap(), want, "{} with {w} workers", v.name());
        assert_eq!(s.unwrap(), sizes.len());
        // Not vacuous.
        assert!(want.iter().any(|g| g.len() > 100));
    }
}

#[test]
fn driver_over_tcp() {
    for (v, w) in [(Variant::Fast, 2), (Variant::LowComm, 3)] {
        let sizes = [2000u64, 10, 0, 3000, 500];
        let (xs, ys) = buckets(&sizes);
        let want = expected(&xs, &ys);
        let pair = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
        let (r, s) = drive(pair, v, (w, w), xs, ys);
        assert_eq!(r.unwrap(), want, "{}", v.name());
        assert_eq!(s.unwrap(), sizes.len());
    }
}

#[test]
fn driver_without_buckets() {
    let (r, s) = drive(mem_pair(), Variant::Fast, (2, 2), vec![], vec![]);
    assert_eq!(r.unwrap(), Vec::<Vec<usize>>::new());
    assert_eq!(s.unwrap(), 0);
}

#[test]
fn mismatched_worker_counts_fail_in_the_setup() {
    for v in [Variant::Fast, Variant::Malicious] {
        let (xs, ys) = buckets(&[100, 100]);
        let t0 = Instant::now();
        let (r, s) = drive(mem_pair(), v, (2, 3), xs, ys);
        for e in [r.unwrap_err(), s.unwrap_err()] {
            assert!(matches!(e, Error::HandshakeMismatch { .. }), "{e}");
        }
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
}

#[test]
fn bad_worker_counts_are_refused() {
    let (a, _b) = mem_pair();
    let mux = Mux::new(a).unwrap();
    let mut rng = AesRng::from_seed([1; 16]);
    let cfg = Rr22Config::default();
    for w in [0, rr22::MAX_WORKERS + 1] {
        let e = rr22::run_buckets(&mux, Role::Receiver, &cfg, w, Vec::<Items>::new(), &mut rng)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
    }
}

#[test]
fn mismatched_bucket_counts_stop_promptly() {
    // The sender has two buckets more than the receiver: the sender's workers get the
    // receiver workers' stop frames instead of a hello (an error, not a 20 s timeout); the
    // receiver's own results are complete and correct.
    let (xs, mut ys) = buckets(&[300, 200, 100]);
    ys.push(items(0..10, 50));
    ys.push(items(0..10, 51));
    let want = expected(&xs, &ys[..3]);
    let t0 = Instant::now();
    let (r, s) = drive(mem_pair(), Variant::Fast, (2, 2), xs, ys);
    assert_eq!(r.unwrap(), want);
    let e = s.unwrap_err();
    assert!(
        matches!(&e, Error::Protocol(m) if m.contains("stopped")),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn dropping_the_iterator_stops_both_sides() {
    // The receiver takes one result and drops the iterator; the sender's remaining buckets
    // fail promptly instead of hanging, and the drop joins the receiver's workers.
    let (a, b) = mem_pair();
    let (xs, ys) = buckets(&[200, 300, 400, 500, 600, 700]);
    let cfg = Rr22Config::new(Variant::LowComm);
    let t = std::thread::spawn(move || {
        let mux = Mux::with_options(b, mux_opts()).unwrap();
        let mut rng = AesRng::from_seed([2; 16]);
        rr22::run_buckets(&mux, Role::Sender, &cfg, 2, ys, &mut rng)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
    });
    let t0 = Instant::now();
    let mux = Mux::with_options(a, mux_opts()).unwrap();
    let mut rng = AesRng::from_seed([1; 16]);
    let mut it = rr22::run_buckets(&mux, Role::Receiver, &cfg, 2, xs.clone(), &mut rng).unwrap();
    let first = it.next().unwrap().unwrap();
    assert_eq!(
        first.result.unwrap(),
        plain_intersection(&xs[0], &buckets(&[200]).1[0])
    );
    drop(it);
    let e = t.join().unwrap().unwrap_err();
    assert!(
        matches!(&e, Error::Protocol(m) if m.contains("stopped")),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn hostile_peer_gives_errors_not_hangs() {
    // 1. Junk instead of the set-up hello.
    let (a, b) = mem_pair();
    let mux_b = Mux::with_options(b, mux_opts()).unwrap();
    let mut junk = mux_b.sub(rr22::SUB_CONTROL).unwrap();
    junk.send(b"not a hello at all").unwrap();
    junk.flush().unwrap();
    let mux = Mux::with_options(a, mux_opts()).unwrap();
    let mut rng = AesRng::from_seed([1; 16]);
    let cfg = Rr22Config::default();
    let e = rr22::run_buckets(&mux, Role::Receiver, &cfg, 2, Vec::<Items>::new(), &mut rng)
        .unwrap_err();
    assert!(e.kind() == ErrorKind::PeerMisbehaved, "{e}");

    // 2. An honest set-up, then junk on worker 1's sub-channel where its hello belongs.
    let (a, b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mux = Mux::with_options(b, mux_opts()).unwrap();
        let mut ctrl = mux.sub(rr22::SUB_CONTROL).unwrap();
        let mut rng = AesRng::from_seed([2; 16]);
        let mut root = Rr22Session::new(Role::Sender, &cfg).unwrap();
        let mut kids = root.split(&mut ctrl, 2, &mut rng).unwrap();
        let mut w0 = mux.sub(rr22::worker_sub_id(0)).unwrap();
        let mut w1 = mux.sub(rr22::worker_sub_id(1)).unwrap();
        w1.send(&[0xee; 30]).unwrap();
        w1.flush().unwrap();
        // Worker 0 behaves (bucket 0 succeeds, unless the receiver stopped before starting
        // it, in which case this run sees its stop frame).
        if kids[0].run(&mut w0, &items(0..100, 0), &mut rng).is_ok() {
            // Keep the connection until the receiver is done.
            let _ = w0.recv();
        }
    });
    let mux = Mux::with_options(a, mux_opts()).unwrap();
    let (xs, _) = buckets(&[100, 100, 100]);
    let t0 = Instant::now();
    let it = rr22::run_buckets(&mux, Role::Receiver, &cfg, 2, xs, &mut rng).unwrap();
    let outs: Vec<_> = it.collect();
    assert!(outs.len() <= 2, "{} results", outs.len());
    let e = outs.into_iter().find_map(Result::err).unwrap();
    assert!(e.kind() == ErrorKind::PeerMisbehaved, "{e}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    drop(mux);
    t.join().unwrap();
}

/// Runs `buckets[j]` on child `j` of each side, all children at once on channels of their
/// own; returns the receiver's results.
fn run_children(
    kids_r: Vec<Rr22Session>,
    kids_s: Vec<Rr22Session>,
    xs: Vec<Items>,
    ys: Vec<Items>,
) -> Vec<Vec<usize>> {
    std::thread::scope(|sc| {
        let hs: Vec<_> = kids_r
            .into_iter()
            .zip(kids_s)
            .zip(xs.into_iter().zip(ys))
            .enumerate()
            .map(|(j, ((mut r, mut s), (x, y)))| {
                sc.spawn(move || {
                    let (mut a, mut b) = mem_pair();
                    let u8j = u8::try_from(j).unwrap();
                    let t = std::thread::spawn(move || {
                        let mut rng = AesRng::from_seed([100 + u8j; 16]);
                        s.run(&mut b, &y, &mut rng).unwrap()
                    });
                    let mut rng = AesRng::from_seed([u8j; 16]);
                    let got = r.run(&mut a, &x, &mut rng).unwrap().unwrap();
                    assert!(t.join().unwrap().is_none());
                    got
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Splits a receiver and a sender session into `k` children each over `ch`, after
/// `before` buckets on the parents; returns the parents and their children.
fn split_pair(
    v: Variant,
    k: usize,
    before: &[(Items, Items)],
) -> (Rr22Session, Rr22Session, Vec<Rr22Session>, Vec<Rr22Session>) {
    let (mut a, mut b) = mem_pair();
    let cfg = Rr22Config::new(v);
    let bs = before.to_vec();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([7; 16]);
        let mut s = Rr22Session::new(Role::Sender, &cfg).unwrap();
        for (_, y) in &bs {
            s.run(&mut b, y, &mut rng).unwrap();
        }
        let kids = s.split(&mut b, k, &mut rng).unwrap();
        (s, kids)
    });
    let mut rng = AesRng::from_seed([8; 16]);
    let mut r = Rr22Session::new(Role::Receiver, &cfg).unwrap();
    for (x, y) in before {
        assert_eq!(
            r.run(&mut a, x, &mut rng).unwrap().unwrap(),
            plain_intersection(x, y)
        );
    }
    let kids_r = r.split(&mut a, k, &mut rng).unwrap();
    let (s, kids_s) = t.join().unwrap();
    (r, s, kids_r, kids_s)
}

#[test]
fn forked_children_run_side_by_side() {
    for v in [Variant::Fast, Variant::LowComm] {
        // Fork before any bucket (the fork sets the generator up) and after some.
        for before in [vec![], vec![(items(0..500, 9), items(250..900, 9))]] {
            let (mut r, mut s, kids_r, kids_s) = split_pair(v, 3, &before);
            assert!(kids_r.iter().all(Rr22Session::is_forked));
            assert!(!r.is_forked());
            let (xs, ys) = buckets(&[1500, 1, 800]);
            let want = expected(&xs, &ys);
            assert_eq!(run_children(kids_r, kids_s, xs, ys), want, "{}", v.name());
            // The parents go on, with a bucket of their own.
            let (mut a, mut b) = mem_pair();
            let (x, y) = (items(0..600, 77), items(300..1000, 77));
            let want = plain_intersection(&x, &y);
            let t = std::thread::spawn(move || {
                let mut rng = AesRng::from_seed([9; 16]);
                s.run(&mut b, &y, &mut rng).unwrap()
            });
            let mut rng = AesRng::from_seed([10; 16]);
            assert_eq!(r.run(&mut a, &x, &mut rng).unwrap().unwrap(), want);
            t.join().unwrap();
        }
    }
}

#[test]
fn children_can_run_many_buckets_and_fork_again() {
    let (_, _, mut kids_r, mut kids_s) = split_pair(Variant::Fast, 1, &[]);
    let (mut r, mut s) = (kids_r.pop().unwrap(), kids_s.pop().unwrap());
    let (mut a, mut b) = mem_pair();
    let (xs, ys) = buckets(&[700, 0, 900]);
    let want = expected(&xs, &ys);
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([3; 16]);
        for y in &ys {
            s.run(&mut b, y, &mut rng).unwrap();
        }
        let g = s.fork(&mut b, &mut rng).unwrap();
        (g, ys)
    });
    let mut rng = AesRng::from_seed([4; 16]);
    let got: Vec<Vec<usize>> = xs
        .iter()
        .map(|x| r.run(&mut a, x, &mut rng).unwrap().unwrap())
        .collect();
    assert_eq!(got, want);
    let g_r = r.fork(&mut a, &mut rng).unwrap();
    let (g_s, _) = t.join().unwrap();
    let (xs, ys) = buckets(&[1200]);
    assert_eq!(
        run_children(vec![g_r], vec![g_s], xs.clone(), ys.clone()),
        expected(&xs, &ys)
    );
}

#[test]
fn crossed_children_are_a_handshake_mismatch() {
    // Child 0 of the receiver against child 1 of the sender: their VOLE outputs are not
    // correlated, so this must fail in the hello instead of giving a wrong intersection.
    let (_, _, mut kids_r, mut kids_s) = split_pair(Variant::Fast, 2, &[]);
    let mut r = kids_r.swap_remove(0);
    let mut s = kids_s.pop().unwrap();
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([3; 16]);
        s.run(&mut b, &items(0..50, 0), &mut rng)
    });
    let mut rng = AesRng::from_seed([4; 16]);
    let e = r.run(&mut a, &items(0..50, 0), &mut rng).unwrap_err();
    assert!(
        matches!(
            e,
            Error::HandshakeMismatch {
                field: "parameters",
                ..
            }
        ),
        "{e}"
    );
    assert!(t.join().unwrap().is_err());
}

#[test]
fn fork_counts_and_stages_must_agree() {
    let cfg = Rr22Config::default();
    // Different child counts.
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([3; 16]);
        Rr22Session::new(Role::Sender, &cfg)
            .unwrap()
            .split(&mut b, 3, &mut rng)
            .map(|v| v.len())
    });
    let mut rng = AesRng::from_seed([4; 16]);
    let mut r = Rr22Session::new(Role::Receiver, &cfg).unwrap();
    let e = r.split(&mut a, 2, &mut rng).unwrap_err();
    assert!(
        matches!(
            e,
            Error::HandshakeMismatch {
                field: "fork children",
                ..
            }
        ),
        "{e}"
    );
    assert!(t.join().unwrap().is_err());
    // A failed session refuses further use.
    let again = r.split(&mut a, 2, &mut rng).unwrap_err();
    assert!(matches!(again, Error::InvalidParameter(_)), "{again}");

    // One side forks, the other runs a bucket.
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([3; 16]);
        Rr22Session::new(Role::Sender, &cfg)
            .unwrap()
            .run(&mut b, &items(0..10, 0), &mut rng)
    });
    let e = Rr22Session::new(Role::Receiver, &cfg)
        .unwrap()
        .split(&mut a, 2, &mut rng)
        .unwrap_err();
    assert!(matches!(e, Error::HandshakeMismatch { .. }), "{e}");
    assert!(t.join().unwrap().is_err());

    // Out-of-range child counts are refused locally.
    for k in [0, rr22::MAX_CHILDREN + 1] {
        let (mut a, _b) = mem_pair();
        let e = Rr22Session::new(Role::Receiver, &cfg)
            .unwrap()
            .split(&mut a, k, &mut rng)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
        assert_eq!(a.stats().bytes_sent, 0);
    }
}

#[test]
fn malicious_sessions_refuse_to_fork() {
    let (mut a, _b) = mem_pair();
    let mut rng = AesRng::from_seed([4; 16]);
    let mut s = Rr22Session::new(Role::Receiver, &Rr22Config::new(Variant::Malicious)).unwrap();
    let e = s.fork(&mut a, &mut rng).unwrap_err();
    assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
    assert_eq!(a.stats().bytes_sent, 0);
}
