//! The bucket driver against the plain intersection, for every two-party protocol behind the
//! one `PsiSession` shape: ECDH, KKRT16 and the three RR22 variants, on one worker (the
//! channel itself) and on several (sub-channels of a `Mux`), with empty buckets; a peer
//! with another worker count or another protocol stops with a handshake mismatch.
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
    let (a, b) = mem_pair();
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
    let want: Vec<Vec<usize>> = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| plain_intersection(x, y))
        .collect();
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
