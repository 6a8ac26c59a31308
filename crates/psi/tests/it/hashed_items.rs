//! Items the caller hashed already ([`HashedItem`]): RR22 uses them as its keys and finds the
//! same intersection as on the raw items; a run never mixes the two kinds, and a peer that
//! passes the other kind is a handshake mismatch; ECDH and KKRT treat a key as its 16 bytes.
#![allow(clippy::unwrap_used)]

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::mem_pair;
use obliv_psi::rr22::{Rr22Config, Rr22Session, Variant};
use obliv_psi::{Error, HashedItem, PsiItem, PsiSession, Role, plain_intersection};

/// Items of 3 to 40 bytes (both short and long ones), distinct for distinct `i`.
fn items(range: std::ops::Range<u64>) -> Vec<Vec<u8>> {
    range
        .map(|i| {
            let mut v = i.to_le_bytes().to_vec();
            v.truncate(3 + (i % 6) as usize);
            v.resize(v.len() + (i % 33) as usize, 0xa5);
            v
        })
        .collect()
}

/// The caller's key of an item: the first 16 bytes of BLAKE3 `derive_key`, as the `obliv`
/// CLI keys its rows.
fn hashed(items: &[Vec<u8>]) -> Vec<HashedItem> {
    items
        .iter()
        .map(|it| {
            let h = blake3::derive_key("obliv-psi test hashed items", it);
            let mut k = [0u8; 16];
            k.copy_from_slice(&h[..16]);
            HashedItem(k)
        })
        .collect()
}

/// Both sides' results of one run.
type Outcome = Result<Option<Vec<usize>>, Error>;

/// One run of a fresh session per side, the receiver on `x`, the sender on `y`.
fn run<X, Y>(variant: Variant, x: Vec<X>, y: Vec<Y>) -> (Outcome, Outcome)
where
    X: PsiItem + Sync + Send + 'static,
    Y: PsiItem + Sync + Send + 'static,
{
    let cfg = Rr22Config::new(variant);
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([2; 16]);
        let mut s = Rr22Session::new(Role::Sender, &cfg).unwrap();
        PsiSession::run(&mut s, &mut b, &y, &mut rng)
    });
    let mut rng = AesRng::from_seed([1; 16]);
    let mut r = Rr22Session::new(Role::Receiver, &cfg).unwrap();
    let got = PsiSession::run(&mut r, &mut a, &x, &mut rng);
    (got, t.join().unwrap())
}

#[test]
fn rr22_on_hashed_items_equals_raw() {
    let (x, y) = (items(0..3000), items(1700..5000));
    let want = plain_intersection(&x, &y);
    assert_eq!(want.len(), 1300);
    for variant in [Variant::Fast, Variant::LowComm, Variant::Malicious] {
        let (raw, s) = run(variant, x.clone(), y.clone());
        assert!(s.unwrap().is_none());
        assert_eq!(raw.unwrap().unwrap(), want, "{variant:?} raw");
        let (pre, s) = run(variant, hashed(&x), hashed(&y));
        assert!(s.unwrap().is_none());
        assert_eq!(pre.unwrap().unwrap(), want, "{variant:?} hashed");
    }
}

/// One run's items are of one type (so never mixed); a peer that passes the other kind of
/// items stops at the handshake, on both sides, instead of finding nothing.
#[test]
fn rr22_refuses_a_peer_of_the_other_kind() {
    let (x, y) = (items(0..100), items(50..150));
    for variant in [Variant::Fast, Variant::LowComm, Variant::Malicious] {
        let (r, s) = run(variant, hashed(&x), y.clone());
        for e in [r.unwrap_err(), s.unwrap_err()] {
            assert!(
                matches!(
                    e,
                    Error::HandshakeMismatch {
                        field: "options",
                        ..
                    }
                ),
                "{variant:?}: {e}"
            );
        }
        let (r, s) = run(variant, x.clone(), hashed(&y));
        assert!(matches!(r.unwrap_err(), Error::HandshakeMismatch { .. }));
        assert!(matches!(s.unwrap_err(), Error::HandshakeMismatch { .. }));
    }
}

/// ECDH and KKRT hash a key's 16 bytes like any item: a `HashedItem` and the same 16 bytes
/// as a byte string give the same intersection against each other.
#[test]
fn other_protocols_hash_the_key_bytes() {
    let (x, y) = (hashed(&items(0..200)), hashed(&items(120..300)));
    let y_bytes: Vec<[u8; 16]> = y.iter().map(|h| h.0).collect();
    let want: Vec<usize> = (120..200).collect();

    let cfg = obliv_psi::ecdh::EcdhConfig::default();
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([4; 16]);
        let mut s = obliv_psi::ecdh::EcdhSession::new(Role::Sender, &cfg).unwrap();
        PsiSession::run(&mut s, &mut b, &y_bytes, &mut rng).unwrap()
    });
    let mut rng = AesRng::from_seed([3; 16]);
    let mut r = obliv_psi::ecdh::EcdhSession::new(Role::Receiver, &cfg).unwrap();
    let got = PsiSession::run(&mut r, &mut a, &x, &mut rng).unwrap();
    t.join().unwrap();
    assert_eq!(got.unwrap(), want);

    let kcfg = obliv_psi::kkrt::KkrtConfig::default();
    let y_bytes: Vec<[u8; 16]> = y.iter().map(|h| h.0).collect();
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([6; 16]);
        let mut s = obliv_psi::kkrt::KkrtSession::new(Role::Sender, &kcfg).unwrap();
        PsiSession::run(&mut s, &mut b, &y_bytes, &mut rng).unwrap()
    });
    let mut rng = AesRng::from_seed([5; 16]);
    let mut r = obliv_psi::kkrt::KkrtSession::new(Role::Receiver, &kcfg).unwrap();
    let got = PsiSession::run(&mut r, &mut a, &x, &mut rng).unwrap();
    t.join().unwrap();
    assert_eq!(got.unwrap(), want);
}
