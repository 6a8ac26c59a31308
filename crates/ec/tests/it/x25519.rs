//! Known-answer and rejection tests of [`obliv_ec::X25519`]: RFC 7748 §5.2 (the two vectors
//! and the 1 and 1,000 iteration ones) through the group's ladder, RFC 9380 Appendix J.7.1
//! (`curve25519_XMD:SHA-512_ELL2_RO_`), torsion projection, and strict decoding.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use curve25519_dalek::constants::EIGHT_TORSION;
use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::montgomery::MontgomeryPoint;
use obliv_ec::{Error, PrimeGroup, X25519};
use proptest::prelude::*;

fn h32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

/// RFC 7748 §5.2, the two single test vectors (scalar, input u, output u).
#[test]
fn rfc7748_5_2_vectors() {
    let v = [
        (
            "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
            "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
        ),
        (
            "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
            "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
            "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957",
        ),
    ];
    for (k, u, out) in v {
        assert_eq!(X25519::x25519_rfc7748(&h32(k), &h32(u)), h32(out));
        assert_eq!(X25519::x25519_rfc7748_serial(&h32(k), &h32(u)), h32(out));
    }
}

/// RFC 7748 §5.2 iterated: `k, u = X25519(k, u), k` starting from `k = u = 9`, after 1 and
/// 1,000 iterations (the 1,000,000 one is left out: minutes of run time).
#[test]
fn rfc7748_5_2_iterations() {
    let mut k = [0u8; 32];
    k[0] = 9;
    let mut u = k;
    for i in 1..=1000 {
        let r = X25519::x25519_rfc7748(&k, &u);
        u = k;
        k = r;
        if i == 1 {
            assert_eq!(
                k,
                h32("422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079")
            );
        }
    }
    assert_eq!(
        k,
        h32("684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51")
    );
}

/// RFC 7748 §6.1: the Diffie–Hellman vector (public keys and shared secret).
#[test]
fn rfc7748_6_1_diffie_hellman() {
    let a = h32("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    let b = h32("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
    let mut nine = [0u8; 32];
    nine[0] = 9;
    let pa = X25519::x25519_rfc7748(&a, &nine);
    let pb = X25519::x25519_rfc7748(&b, &nine);
    assert_eq!(
        pa,
        h32("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
    );
    assert_eq!(
        pb,
        h32("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
    );
    let shared = h32("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    assert_eq!(X25519::x25519_rfc7748(&a, &pb), shared);
    assert_eq!(X25519::x25519_rfc7748(&b, &pa), shared);
}

/// RFC 9380 Appendix J.7.1 (`curve25519_XMD:SHA-512_ELL2_RO_`): `P.x` for the five
/// messages, big-endian hex as printed in the RFC.
#[test]
fn rfc9380_j_7_1_curve25519_ro() {
    let dst = b"QUUX-V01-CS02-with-curve25519_XMD:SHA-512_ELL2_RO_";
    let msgs: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"abc".to_vec(),
        b"abcdef0123456789".to_vec(),
        [b"q128_".as_slice(), &[b'q'; 128]].concat(),
        [b"a512_".as_slice(), &[b'a'; 512]].concat(),
    ];
    let px = [
        "2de3780abb67e861289f5749d16d3e217ffa722192d16bbd9d1bfb9d112b98c0",
        "2b4419f1f2d48f5872de692b0aca72cc7b0a60915dd70bde432e826b6abc526d",
        "68ca1ea5a6acf4e9956daa101709b1eee6c1bb0df1de3b90d4602382a104c036",
        "096e9c8bae6c06b554c1ee69383bb0e82267e064236b3a30608d4ed20b73ac5a",
        "1bc61845a138e912f047b5e70ba9606ba2a447a4dade024c8ef3dd42b7bbc5fe",
    ];
    for (m, want) in msgs.iter().zip(px) {
        let mut u = X25519::encode(&X25519::hash_to_point_with_dst(m, dst).unwrap());
        u.reverse();
        assert_eq!(hex::encode(u), want);
    }
}

/// A DST over 255 bytes is hashed first (RFC 9380 §5.3.3) instead of panicking.
#[test]
fn long_dst_is_hashed() {
    let long = vec![b'd'; 300];
    let p = X25519::hash_to_point_with_dst(b"x", &long).unwrap();
    assert!(X25519::decode(&X25519::encode(&p)).is_ok());
    assert_ne!(
        p,
        X25519::hash_to_point_with_dst(b"x", &long[..255]).unwrap()
    );
}

fn scalar(seed: u64) -> obliv_ec::SecretScalar<curve25519_dalek::Scalar> {
    use rand::SeedableRng;
    X25519::random_scalar(&mut rand::rngs::StdRng::seed_from_u64(seed))
}

/// Decoding `P₀ + T` for each `T ∈ E[8]` gives `P₀`, and the batch answers `[k]P₀` for all
/// eight: a peer's torsion never reaches the answer (ECDH-PSI, OPRF).
#[test]
fn torsion_is_projected_away() {
    let k = scalar(1);
    let p0 = EdwardsPoint::mul_base(&curve25519_dalek::Scalar::from(123_456_789u64));
    let p0_elem = X25519::decode(&p0.to_montgomery().to_bytes()).unwrap();
    let want = X25519::encode(&X25519::mul(&p0_elem, &k));
    let encs: Vec<[u8; 32]> = EIGHT_TORSION
        .iter()
        .map(|t| (p0 + t).to_montgomery().to_bytes())
        .collect();
    for e in &encs {
        assert_eq!(X25519::decode(e).unwrap(), p0_elem);
        assert_eq!(
            X25519::decode(e).unwrap().to_montgomery(),
            p0.to_montgomery()
        );
    }
    let out = X25519::mul_encoded_batch(&encs, &k).unwrap();
    assert!(out.iter().all(|o| *o == want));
    // OPRF unblinding through a torsioned answer: [r⁻¹]([k][r]H + T) = [k]H.
    let r = scalar(2);
    let hx = X25519::hash_to_point(b"item");
    let blinded = X25519::mul(&hx, &r);
    let answered = X25519::mul(&blinded, &k);
    let ed = answered.to_montgomery().to_edwards(0).unwrap() + EIGHT_TORSION[3];
    let unblinded =
        X25519::mul_encoded_batch(&[ed.to_montgomery().to_bytes()], &X25519::scalar_invert(&r))
            .unwrap();
    assert_eq!(unblinded[0], X25519::encode(&X25519::mul(&hx, &k)));
}

/// Every small-order u is rejected: `0` as the identity, `1`, the order-8 values and
/// `p − 1` (on the twist) as invalid.
#[test]
fn small_order_rejected() {
    for t in EIGHT_TORSION {
        let u = t.to_montgomery().to_bytes();
        let r = X25519::decode(&u);
        if u == [0u8; 32] {
            assert!(matches!(r, Err(Error::Identity { .. })), "{r:?}");
        } else {
            assert!(matches!(r, Err(Error::InvalidPoint { .. })), "{r:?}");
        }
    }
    let mut p_minus_1 = [0xffu8; 32];
    p_minus_1[0] = 0xec;
    p_minus_1[31] = 0x7f;
    assert!(matches!(
        X25519::decode(&p_minus_1),
        Err(Error::InvalidPoint { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random 32 bytes: accepted exactly when canonical (bit 255 clear, u < p), on the curve
    /// and not of small order; an accepted u decodes to the projection of its point.
    #[test]
    fn decode_accepts_exactly_curve_points(b in any::<[u8; 32]>()) {
        let r = X25519::decode(&b);
        let ed = MontgomeryPoint(b).to_edwards(0);
        let top = b[31] & 0x80 != 0;
        let noncanon = !top && {
            let mut le = b;
            le[31] &= 0x7f;
            le[31] == 0x7f && le[1..31].iter().all(|&x| x == 0xff) && le[0] >= 0xed
        };
        match (top || noncanon, ed) {
            (true, _) | (false, None) => {
                prop_assert!(matches!(r, Err(Error::InvalidPoint { .. })), "{:?}", r)
            }
            (false, Some(p)) if p.is_small_order() => prop_assert!(r.is_err()),
            (false, Some(p)) => {
                let p0 = p.mul_by_cofactor()
                    * curve25519_dalek::Scalar::from(8u8).invert();
                prop_assert_eq!(r.unwrap().to_montgomery(), p0.to_montgomery());
            }
        }
    }

    /// Points on the twist are rejected by `decode` and by the batch (lanes) with the index.
    #[test]
    fn twist_rejected_in_batch(b in any::<[u8; 32]>(), at in 0usize..40) {
        let mut u = b;
        u[31] &= 0x7f;
        prop_assume!(MontgomeryPoint(u).to_edwards(0).is_none());
        let d = X25519::decode(&u);
        prop_assert!(matches!(d, Err(Error::InvalidPoint { .. })), "{:?}", d);
        let mut batch: Vec<[u8; 32]> = (0..40u32)
            .map(|i| X25519::encode(&X25519::hash_to_point(&i.to_le_bytes())))
            .collect();
        batch[at] = u;
        let r = X25519::mul_encoded_batch(&batch, &scalar(3));
        prop_assert!(
            matches!(&r, Err(Error::Batch { index, source }) if *index == at && matches!(**source, Error::InvalidPoint { .. })),
            "{:?}", r
        );
    }
}
