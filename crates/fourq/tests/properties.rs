//! Property tests of the public API: group laws, the order of the subgroup, fixed-base against
//! variable-base, batch against single, encode/decode round trips and rejection of bad
//! encodings.

use obliv_fourq::{Error, Point, Scalar};
use proptest::prelude::*;

fn scalar() -> impl Strategy<Value = Scalar> {
    any::<[u8; 64]>().prop_map(|b| Scalar::from_bytes_mod_order_wide(&b))
}

fn point() -> impl Strategy<Value = Point> {
    any::<[u8; 16]>().prop_map(|b| Point::hash_to_curve(&b))
}

/// N − 1 as a scalar.
fn minus_one() -> Scalar {
    -Scalar::ONE
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn group_laws(p in point(), q in point(), r in point()) {
        prop_assert_eq!(p + q, q + p);
        prop_assert_eq!((p + q) + r, p + (q + r));
        prop_assert_eq!(p + Point::identity(), p);
        prop_assert_eq!(p - p, Point::identity());
        prop_assert_eq!(p.double(), p + p);
    }

    #[test]
    fn scalar_mult_is_a_module_action(p in point(), a in scalar(), b in scalar()) {
        prop_assert_eq!(p * (a + b), p * a + p * b);
        prop_assert_eq!(p * (a * b), (p * a) * b);
        prop_assert_eq!(p * minus_one(), -p);
        prop_assert_eq!(p * a, p.mul_fixed_window(&a));
    }

    #[test]
    fn order_annihilates_and_fixed_base_agrees(p in point(), k in scalar()) {
        // [N]P = [N−1]P + P = O for every point the crate produces.
        prop_assert!((p * minus_one() + p).is_identity_vartime());
        prop_assert!(p.is_torsion_free_vartime());
        prop_assert_eq!(Point::mul_base(&k), Point::generator() * k);
    }

    #[test]
    fn batch_matches_single(k in scalar(), pts in proptest::collection::vec(point(), 0..6)) {
        let many = Point::mul_many(&k, &pts);
        let enc = Point::mul_many_to_bytes(&k, &pts);
        prop_assert_eq!(many.len(), pts.len());
        for ((p, m), e) in pts.iter().zip(&many).zip(&enc) {
            prop_assert_eq!(*p * k, *m);
            prop_assert_eq!(m.to_bytes(), *e);
        }
        let all = Point::batch_to_bytes(&many);
        prop_assert_eq!(all, enc);
    }

    #[test]
    fn encoding_round_trip(p in point(), k in scalar()) {
        for q in [p, p * k, Point::mul_base(&k)] {
            let b = q.to_bytes();
            prop_assert_eq!(Point::from_bytes(&b).unwrap(), q);
            prop_assert_eq!(Point::decode(&b).unwrap(), q);
        }
    }

    #[test]
    fn random_bytes_rarely_decode(b in any::<[u8; 32]>()) {
        // A uniformly random string decodes to a subgroup point with probability about
        // 1/(2·392); whatever decodes must re-encode to the same bytes.
        if let Ok(p) = Point::decode(&b) {
            prop_assert_eq!(p.to_bytes(), b);
            prop_assert!(p.is_torsion_free_vartime());
        }
    }
}

#[test]
fn rejects_bad_encodings() {
    assert_eq!(
        Point::decode(&[0u8; 31]),
        Err(Error::InvalidLength {
            expected: 32,
            got: 31
        })
    );
    // y = p (non-canonical).
    let mut b = [0xffu8; 32];
    b[15] = 0x7f;
    b[31] = 0x00;
    assert_eq!(Point::decode(&b), Err(Error::InvalidEncoding));
    // Points of small order: (0, −1) has order 2, so it is on the curve but outside the
    // subgroup.
    let mut minus_one_y = [0xffu8; 32];
    minus_one_y[0] = 0xfe;
    minus_one_y[15] = 0x7f;
    minus_one_y[16..].fill(0);
    assert_eq!(Point::decode(&minus_one_y), Err(Error::NotInSubgroup));
    // Count: among many y values, on-curve ones outside the subgroup are rejected.
    let mut off_subgroup = 0;
    for i in 0..200u64 {
        let mut y = [0u8; 32];
        y[..8].copy_from_slice(&(i + 2).to_le_bytes());
        match Point::decode(&y) {
            Err(Error::NotInSubgroup) => off_subgroup += 1,
            Err(Error::InvalidEncoding) | Ok(_) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(off_subgroup > 50, "{off_subgroup}");
}

#[test]
fn hash_many_matches_single() {
    // Lengths 0..=200 bytes; 201 messages: several chunks of 64 and a partial group of 8.
    let msgs: Vec<Vec<u8>> = (0..=200u8).map(|i| vec![i; i as usize]).collect();
    let many = Point::hash_to_curve_many(&msgs);
    for (m, p) in msgs.iter().zip(&many) {
        assert_eq!(Point::hash_to_curve(m), *p);
    }
    assert!(Point::mul_many(&Scalar::ONE, &[]).is_empty());
    assert!(Point::mul_many_to_bytes(&Scalar::ONE, &[]).is_empty());
    // Several chunks of the batch encoder.
    let pts: Vec<Point> = (0..130u64)
        .map(|i| Point::hash_to_curve(&i.to_le_bytes()))
        .collect();
    let k = Scalar::from_u64(0x1234_5678_9abc_def1);
    let enc = Point::mul_many_to_bytes(&k, &pts);
    for (p, e) in pts.iter().zip(&enc) {
        assert_eq!((*p * k).to_bytes(), *e);
    }
}
