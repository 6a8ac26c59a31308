use super::*;
use crypto_bigint::{BoxedUint, NonZero};
use rand_core::Rng as RngCore;

fn rand_int(rng: &mut impl RngCore, limbs: usize) -> Integer {
    let mut v: Vec<u64> = (0..limbs).map(|_| rng.next_u64()).collect();
    // Sprinkle edge limbs.
    if limbs > 0 && rng.next_u32().is_multiple_of(4) {
        v[0] = u64::MAX;
    }
    if limbs > 1 && rng.next_u32().is_multiple_of(4) {
        v[limbs - 1] = 1;
    }
    Integer::from_limbs(&v)
}

fn to_cb(x: &Integer, limbs: usize) -> BoxedUint {
    let v = x.to_limbs_padded(limbs).expect("fits");
    BoxedUint::from_words(v)
}

#[test]
fn division_matches_crypto_bigint() {
    let mut rng = rand::rng();
    for ul in 1..=20usize {
        for vl in 1..=ul {
            for _ in 0..4 {
                let u = rand_int(&mut rng, ul);
                let v = rand_int(&mut rng, vl);
                if v.is_zero() {
                    continue;
                }
                let (q, r) = u.div_rem(&v);
                assert!(r < v);
                assert_eq!(&(&q * &v) + &r, u);
                let cu = to_cb(&u, ul);
                let cv = NonZero::new(to_cb(&v, ul)).expect("nonzero");
                let (cq, cr) = cu.div_rem(&cv);
                assert_eq!(Integer::from_limbs(cq.as_words()), q, "{ul} {vl}");
                assert_eq!(Integer::from_limbs(cr.as_words()), r, "{ul} {vl}");
            }
        }
    }
}

#[test]
fn signed_arithmetic_and_text() {
    let a = Integer::from(-17);
    let b = Integer::from(5u32);
    assert_eq!(&a / &b, -3);
    assert_eq!(&a % &b, -2);
    assert_eq!(a.modulo(&b), 3);
    assert_eq!(&a + &b, -12);
    assert_eq!(&a - &b, -22);
    assert_eq!(&a * &b, -85);
    assert_eq!(-&a, 17);
    assert_eq!(a.to_i64(), Some(-17));
    assert_eq!(Integer::from(i64::MIN).to_i64(), Some(i64::MIN));
    assert_eq!((Integer::from(i64::MAX) + 1u32).to_i64(), None);
    let big: Integer = "-123456789012345678901234567890123456789"
        .parse()
        .expect("ok");
    assert_eq!(big.to_string(), "-123456789012345678901234567890123456789");
    let h = Integer::from_str_radix("DEADbeef0123456789abcdef0123456789", 16).expect("ok");
    assert_eq!(h.to_string_radix(16), "deadbeef0123456789abcdef0123456789");
    assert_eq!(Integer::new().to_string_radix(16), "0");
    assert_eq!(Integer::from_str_radix("0000", 16).expect("ok"), 0);
    assert!(Integer::from_str_radix("", 16).is_err());
    assert!(Integer::from_str_radix("12g", 16).is_err());
    assert!(Integer::from_str_radix("-", 10).is_err());
    assert_eq!(
        Integer::from_be_bytes(&[1, 2, 3]).to_be_bytes(),
        vec![1, 2, 3]
    );
    assert_eq!(Integer::from_be_bytes(&[0, 0]), 0);
    assert_eq!((Integer::from(1u32) << 200u32) >> 199u32, 2);
    assert_eq!(Integer::from(12u32).gcd(&Integer::from(18u32)), 6);
    assert_eq!(
        Integer::from(3u32).invert(&Integer::from(7u32)),
        Some(Integer::from(5u32))
    );
    assert_eq!(Integer::from(2u32).invert(&Integer::from(4u32)), None);
    // Jacobi symbols against Euler's criterion modulo a prime.
    let p = Integer::from(1_000_003u32);
    for a in 1..50u32 {
        let e = Integer::from(a)
            .pow_mod(&Integer::from(500_001u32), &p)
            .expect("ok");
        let want = if e == 1u32 { 1 } else { -1 };
        assert_eq!(Integer::from(a).jacobi(&p), want, "{a}");
    }
    assert_eq!(Integer::from(3u32).jacobi(&Integer::from(15u32)), 0);
    let mut x = Integer::new();
    x.set_bit(130, true);
    assert_eq!(x.significant_bits(), 131);
    x.set_bit(130, false);
    assert!(x.is_zero());
    assert_eq!(Integer::from(1u64 << 53).to_f64(), 2f64.powi(53));
    // Even modulus path of pow_mod.
    assert_eq!(
        Integer::from(3u32)
            .pow_mod(&Integer::from(5u32), &Integer::from(16u32))
            .expect("ok"),
        3
    );
}
