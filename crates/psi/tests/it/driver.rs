//! The bucket driver against the plain intersection, for every two-party protocol behind the
//! one `PsiSession` shape: ECDH, KKRT16 and the three RR22 variants, on one worker (the
//! channel itself) and on several (sub-channels of a `Mux`), with empty buckets; a peer
//! with another worker count or another protocol stops with a handshake mismatch; the set-up
//! apart from the buckets (`driver::prepare`), with the bounds set after it.
#![allow(clippy::unwrap_used)]

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_ec::Curve;
use obliv_net::mem_pair;
use obliv_psi::driver;
use obliv_psi::ecdh::{EcdhConfig, EcdhSession};
use obliv_psi::kkrt::{KkrtConfig, KkrtSession};
use obliv_psi::rr22::{Rr22Config, Rr22Session, Variant};
use obliv_psi::{Error, ErrorKind, PsiSession, Role, plain_intersection};

type Items = Vec<Vec<u8>>;

/// The receiver's results per bucket and the sender's bucket count (or their errors).
type Outcome = (Result<Vec<Vec<usize>>, Error>, Result<usize, Error>);

/// Bucket `i` of the receiver holds `0..s_i`, the sender's `s_i/2..s_i/2 + s_i`, under a
/// per-bucket tag.
fn buckets(sizes: &[u64]) -> (Vec<Items>, Vec<Items>) {
    let items = |r: std::ops::Range<u64>, tag: u8| -> Items {
        r.map(|i| {
            let mut v = i.to_le_bytes().to_vec();
            v.push(tag);
            v
        })
        .collect()
    };
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for (i, &s) in sizes.iter().enumerate() {
        let tag = u8::try_from(i).unwrap();
        xs.push(items(0..s, tag));
        ys.push(items(s / 2..s / 2 + s, tag));
    }
    (xs, ys)
}

/// Runs the driver with `make(role)` sessions on both sides; returns the receiver's results
/// per bucket and the sender's bucket count (or their errors).
fn drive<P, F>(make: F, workers: (usize, usize), xs: Vec<Items>, ys: Vec<Items>) -> Outcome
where
    P: PsiSession + 'static,
    F: Fn(Role) -> P + Send + Sync + Copy + 'static,
{
    drive_limited(make, workers, xs, ys, None)
}

/// As [`drive`], with both ends' channels limited to `max_frame` bytes per frame first.
fn drive_limited<P, F>(
    make: F,
    workers: (usize, usize),
    xs: Vec<Items>,
    ys: Vec<Items>,
    max_frame: Option<usize>,
) -> Outcome
where
    P: PsiSession + 'static,
    F: Fn(Role) -> P + Send + Sync + Copy + 'static,
{
    let (mut a, mut b) = mem_pair();
    if let Some(max) = max_frame {
        a.set_max_frame_len(max);
        b.set_max_frame_len(max);
    }
    let t = std::thread::spawn(move || -> Result<usize, Error> {
        let mut rng = AesRng::from_seed([2; 16]);
        let it = driver::run_buckets(b, make(Role::Sender), workers.1, ys, &mut rng)?;
        let mut n = 0;
        for out in it {
            assert!(out?.result.is_none());
            n += 1;
        }
        Ok(n)
    });
    let mut rng = AesRng::from_seed([1; 16]);
    let recv = (|| -> Result<Vec<Vec<usize>>, Error> {
        let it = driver::run_buckets(a, make(Role::Receiver), workers.0, xs, &mut rng)?;
        let mut got = Vec::new();
        for (i, out) in it.enumerate() {
            let out = out?;
            assert_eq!(out.index, i);
            got.push(out.result.unwrap());
        }
        Ok(got)
    })();
    (recv, t.join().unwrap())
}

/// The plain intersection of each pair of buckets.
fn expected(xs: &[Items], ys: &[Items]) -> Vec<Vec<usize>> {
    xs.iter()
        .zip(ys)
        .map(|(x, y)| plain_intersection(x, y))
        .collect()
}

fn ecdh(role: Role) -> EcdhSession {
    let cfg = EcdhConfig {
        curve: Curve::Curve25519,
        batch_size: 256,
        ..EcdhConfig::default()
    };
    EcdhSession::new(role, &cfg).unwrap()
}

fn kkrt(role: Role) -> KkrtSession {
    KkrtSession::new(role, &KkrtConfig::default()).unwrap()
}

fn rr22_fast(role: Role) -> Rr22Session {
    Rr22Session::new(role, &Rr22Config::new(Variant::Fast)).unwrap()
}

fn rr22_lowcomm(role: Role) -> Rr22Session {
    Rr22Session::new(role, &Rr22Config::new(Variant::LowComm)).unwrap()
}

fn rr22_malicious(role: Role) -> Rr22Session {
    Rr22Session::new(role, &Rr22Config::new(Variant::Malicious)).unwrap()
}

fn check<P, F>(make: F, sizes: &[u64])
where
    P: PsiSession + 'static,
    F: Fn(Role) -> P + Send + Sync + Copy + 'static,
{
    let name = make(Role::Receiver).protocol();
    let (xs, ys) = buckets(sizes);
    let want = expected(&xs, &ys);
    assert!(want.iter().any(|w| w.len() >= 100), "not vacuous");
    for workers in [1, 3] {
        let (r, s) = drive(make, (workers, workers), xs.clone(), ys.clone());
        assert_eq!(r.unwrap(), want, "{name} on {workers} workers");
        assert_eq!(s.unwrap(), sizes.len(), "{name} on {workers} workers");
    }
}

#[test]
fn every_protocol_through_the_driver() {
    check(ecdh, &[300, 0, 40, 7]);
    check(kkrt, &[500, 1, 0, 1200, 30]);
    check(rr22_fast, &[800, 0, 5, 1500]);
    check(rr22_lowcomm, &[600, 2, 0, 900]);
    check(rr22_malicious, &[700, 0, 300]);
}

/// Every protocol's [`PsiSession::max_frame_len`] is the longest frame it sends: each runs
/// with both ends' channels limited to exactly that (the driver lowers them to it anyway), at
/// sizes past every chunk size (ECDH's batch, KKRT's OT chunk, RR22's OKVS chunk), on one
/// worker and on two (the `Mux` applies the transport's limit); and where the protocol's
/// longest frame reaches the bound, a limit one byte lower fails with `FrameTooLarge` for a
/// frame of exactly the bound, so the bound is not loose.
#[test]
fn every_protocol_fits_its_frame_limit_and_the_limit_is_tight() {
    fn fits<P, F>(make: F, sizes: &[u64], tight: bool)
    where
        P: PsiSession + 'static,
        F: Fn(Role) -> P + Send + Sync + Copy + 'static,
    {
        let session = make(Role::Receiver);
        let (name, bound) = (session.protocol(), session.max_frame_len());
        let (xs, ys) = buckets(sizes);
        let want = expected(&xs, &ys);
        for workers in [1, 2] {
            let (r, s) = drive_limited(
                make,
                (workers, workers),
                xs.clone(),
                ys.clone(),
                Some(bound),
            );
            assert_eq!(
                r.unwrap(),
                want,
                "{name} on {workers} workers, {bound}-byte frames"
            );
            assert_eq!(s.unwrap(), sizes.len(), "{name} on {workers} workers");
        }
        if tight {
            let (r, s) = drive_limited(make, (1, 1), xs, ys, Some(bound - 1));
            let errors = [r.map(|_| ()).unwrap_err(), s.map(|_| ()).unwrap_err()];
            let refused = format!("frame of {bound} bytes exceeds the limit of {}", bound - 1);
            assert!(
                errors.iter().any(|e| e.to_string().contains(&refused)),
                "{name}: a {bound}-byte frame should meet a limit one byte lower: {errors:?}"
            );
        }
    }
    let fourq = |role| {
        let cfg = EcdhConfig {
            curve: Curve::FourQ,
            ..EcdhConfig::default()
        };
        EcdhSession::new(role, &cfg).unwrap()
    };
    assert_eq!(fourq(Role::Sender).max_frame_len(), 5 + 4096 * 32);
    fits(fourq, &[5000, 3], true);
    fits(ecdh, &[700, 0], true);
    fits(kkrt, &[10_000, 0], true);
    fits(rr22_fast, &[70_000, 2], true);
    fits(rr22_lowcomm, &[70_000], false);
    fits(rr22_malicious, &[70_000], true);
}

/// The VOLE under RR22 stays within RR22's frame bound at every VOLE chunk size a session may
/// use: its longest message, the GGM tree message of `t·(2·depth + 1)` blocks, at the largest
/// chunk, for both correlations and both security levels.
#[test]
fn the_vole_messages_fit_the_rr22_frame_bound() {
    use obliv_vole::{Kind, MAX_CHUNK_LIMIT, Params, Security};
    for kind in [Kind::Subfield, Kind::Subfield64, Kind::Field] {
        for security in [Security::SemiHonest, Security::Malicious] {
            for k in [
                1 << 10,
                1 << 16,
                obliv_vole::DEFAULT_MAX_CHUNK,
                MAX_CHUNK_LIMIT,
            ] {
                let p = Params::new(kind, k, security);
                let tree = p.t * (2 * p.depth + 1) * 16;
                assert!(
                    tree < obliv_psi::rr22::MAX_FRAME_LEN / 4,
                    "{kind:?} {security:?} k = {k}: {tree}-byte tree message"
                );
            }
        }
    }
}

#[test]
fn worker_counts_must_agree() {
    fn mismatch<P, F>(make: F)
    where
        P: PsiSession + 'static,
        F: Fn(Role) -> P + Send + Sync + Copy + 'static,
    {
        let (xs, ys) = buckets(&[100, 100]);
        let (r, s) = drive(make, (2, 3), xs, ys);
        for e in [r.map(|_| ()).unwrap_err(), s.map(|_| ()).unwrap_err()] {
            assert_eq!(e.kind(), ErrorKind::Mismatch, "{e}");
        }
    }
    mismatch(ecdh);
    mismatch(kkrt);
    mismatch(rr22_malicious);
    mismatch(rr22_fast);
}

#[test]
fn different_protocols_stop_at_the_handshake() {
    let (xs, ys) = buckets(&[50]);
    let (a, b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([2; 16]);
        let it = driver::run_buckets(b, kkrt(Role::Sender), 1, ys, &mut rng).unwrap();
        it.map(|o| o.map(|_| ()))
            .collect::<Result<Vec<()>, Error>>()
    });
    let mut rng = AesRng::from_seed([1; 16]);
    let it = driver::run_buckets(a, rr22_fast(Role::Receiver), 1, xs, &mut rng).unwrap();
    let r = it
        .map(|o| o.map(|_| ()))
        .collect::<Result<Vec<()>, Error>>();
    assert_eq!(r.unwrap_err().kind(), ErrorKind::Mismatch);
    assert_eq!(t.join().unwrap().unwrap_err().kind(), ErrorKind::Mismatch);
}

/// [`driver::prepare`], then the caller's own messages on the control channel, then the job's
/// bounds ([`driver::Prepared::set_job_limits`]), then the buckets: the sessions are made
/// admitting no peer items at all, so the buckets run only if the bounds set after the split
/// reach every child (without them every run fails).
#[test]
fn prepared_driver_takes_the_callers_messages_and_the_bounds_set_after_the_split() {
    fn prepared<P, F>(make: F, workers: usize, set_limits: bool) -> Outcome
    where
        P: PsiSession + 'static,
        F: Fn(Role) -> P + Send + Sync + Copy + 'static,
    {
        let (xs, ys) = buckets(&[400, 0, 90, 700]);
        let (a, b) = mem_pair();
        let idle = std::time::Duration::from_secs(10);
        let side =
            move |ch, role, items: Vec<Items>, seed| -> Result<Vec<Option<Vec<usize>>>, Error> {
                let mut rng = AesRng::from_seed([seed; 16]);
                let mut p = driver::prepare(ch, make(role), workers, idle, &mut rng)?;
                assert_eq!(p.workers(), workers);
                // The caller's messages after the set-up: each side's plan, compared.
                let plan = format!("plan of {workers} workers");
                p.control().send(plan.as_bytes()).unwrap();
                p.control().flush().unwrap();
                assert_eq!(p.control().recv_max(64).unwrap(), plan.as_bytes());
                if set_limits {
                    p.set_job_limits(1000, 41)?;
                }
                p.run(items, &mut rng)?
                    .map(|o| o.map(|o| o.result))
                    .collect()
            };
        let t = std::thread::spawn(move || side(b, Role::Sender, ys, 2).map(|r| r.len()));
        let r = side(a, Role::Receiver, xs, 1).map(|r| r.into_iter().map(Option::unwrap).collect());
        (r, t.join().unwrap())
    }
    fn check_prepared<P, F>(make: F)
    where
        P: PsiSession + 'static,
        F: Fn(Role) -> P + Send + Sync + Copy + 'static,
    {
        let name = make(Role::Receiver).protocol();
        let (xs, ys) = buckets(&[400, 0, 90, 700]);
        let want = expected(&xs, &ys);
        for workers in [1, 3] {
            let (r, s) = prepared(make, workers, true);
            assert_eq!(r.unwrap(), want, "{name} on {workers} workers");
            assert_eq!(s.unwrap(), 4, "{name} on {workers} workers");
            let (r, _) = prepared(make, workers, false);
            assert!(r.is_err(), "{name} on {workers} workers ran past its bound");
        }
    }
    check_prepared(|role| {
        let cfg = EcdhConfig {
            curve: Curve::Curve25519,
            batch_size: 256,
            max_peer_items: 0,
            ..EcdhConfig::default()
        };
        EcdhSession::new(role, &cfg).unwrap()
    });
    check_prepared(|role| {
        let cfg = KkrtConfig {
            max_peer_items: 0,
            ..KkrtConfig::default()
        };
        KkrtSession::new(role, &cfg).unwrap()
    });
    for v in [Variant::Fast, Variant::LowComm, Variant::Malicious] {
        let make = move |role| {
            let cfg = Rr22Config {
                max_peer_items: 0,
                ..Rr22Config::new(v)
            };
            Rr22Session::new(role, &cfg).unwrap()
        };
        check_prepared(make);
    }
}
