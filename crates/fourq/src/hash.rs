//! Hashing to FourQ.
//!
//! # Construction
//!
//! `hash_to_curve(msg) = [392]·M(r)` where
//!
//! 1. `h = SHA-512(msg)` (64 bytes);
//! 2. `r = r0 + r1·i ∈ GF(p²)` with `r0 = LE(h[0..32]) mod p`, `r1 = LE(h[32..64]) mod p`
//!    (each a 256-bit integer reduced modulo `p = 2^127 − 1`, statistical distance from
//!    uniform below 2^−128 per coordinate);
//! 3. `M` is FourQlib's `HashToCurve` map from GF(p²) to `E` (`hash_to_curve.c`,
//!    FourQ_64bit_and_portable), a straight-line program of GF(p) operations with two
//!    exponentiations `x^(2^125−1)` per branch and constant-time selections, evaluated here
//!    with the same operations in the same order and no branch on `r`;
//! 4. `[392]` clears the cofactor (`392 = 2³·7²`), so the output lies in the order-`N` subgroup.
//!
//! The map `M` is deterministic and constant time; it is not claimed to be an
//! indifferentiable "random oracle" encoding in the sense of RFC 9380 (it is a single
//! evaluation, not the sum of two), which is the same property FourQlib and SecretFlow rely on
//! for ECDH-PSI: the output of `H` must not have a known discrete logarithm.
//!
//! # Compared with SecretFlow / FourQlib users
//!
//! SecretFlow's FourQ ECDH-PSI feeds the first 32 bytes of `SHA-512(msg)` to FourQlib's
//! `HashToCurve`, reading them as `r0 = LE(bytes[0..16]) mod p`, `r1 = LE(bytes[16..32]) mod p`
//! (FourQlib's `mod1271`). That is [`crate::Point::hash_to_curve_fourqlib_compat`], bit-for-bit
//! the same point as FourQlib (tested against the `fourq` crate, which binds FourQlib). It
//! uses 256 hash bits for 254 bits of field element, each half reduced from 128 bits (a bias of
//! about 2^−127 per coordinate: negligible, but not the full-width reduction); the default
//! [`crate::Point::hash_to_curve`] reduces 256 bits per coordinate instead.

use sha2::{Digest, Sha512};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::constants::{H2C_A0, H2C_A1, H2C_B0, H2C_B1, H2C_CON1, H2C_CON2};
use crate::field::{Fp, Fp2};
use crate::point::Point;

/// `v mod p` for a 256-bit little-endian `v`: `lo + hi·2^128 ≡ lo + 2·hi`.
fn fp_from_256(bytes: &[u8]) -> Fp {
    let mut lo = [0u8; 16];
    let mut hi = [0u8; 16];
    lo.copy_from_slice(&bytes[..16]);
    hi.copy_from_slice(&bytes[16..32]);
    Fp::from_u128(u128::from_le_bytes(lo)).add(&Fp::from_u128(u128::from_le_bytes(hi)).double())
}

/// The GF(p²) element the default hash feeds to the map.
pub(crate) fn hash_to_fp2(msg: &[u8]) -> Fp2 {
    let h = Sha512::digest(msg);
    Fp2 {
        a0: fp_from_256(&h[..32]),
        a1: fp_from_256(&h[32..64]),
    }
}

/// FourQlib's reading of 32 bytes as `r0 ‖ r1`, 16 bytes each, reduced modulo p.
pub(crate) fn fourqlib_bytes_to_fp2(bytes: &[u8; 32]) -> Fp2 {
    let mut lo = [0u8; 16];
    let mut hi = [0u8; 16];
    lo.copy_from_slice(&bytes[..16]);
    hi.copy_from_slice(&bytes[16..]);
    Fp2 {
        a0: Fp::from_u128(u128::from_le_bytes(lo)),
        a1: Fp::from_u128(u128::from_le_bytes(hi)),
    }
}

/// `[392]·M(r)`.
pub(crate) fn map_and_clear(r: &Fp2) -> Point {
    map_to_curve(r).mul_by_cofactor()
}

/// FourQlib's `HashToCurve` map `M: GF(p²) → E` (before cofactor clearing), constant time.
#[allow(clippy::many_single_char_names)]
pub(crate) fn map_to_curve(r: &Fp2) -> Point {
    let (r0, r1) = (r.a0, r.a1);
    let one = Fp::ONE;
    let x16 = |v: Fp| v.double().double().double().double();

    let t0 = r0.add(&r1).mul(&r0.sub(&r1));
    let t1 = r0.mul(&r1).double();
    let t2 = t0.add(&t1.double());
    let t3 = t0.double().sub(&t1);
    let t0 = t3.add(&one);
    let t4 = H2C_A1.mul(&t2).sub(&H2C_A0.mul(&t0));
    let t1 = H2C_A0.mul(&t2).add(&H2C_A1.mul(&t0));
    let t6 = t0.add(&t2).mul(&t0.sub(&t2));
    let t5 = t2.mul(&t0).double();
    let t8 = H2C_CON2.mul(&t2).add(&t6.sub(&H2C_CON1.mul(&t3)));
    let t9 = t5.sub(&H2C_CON1.mul(&t2)).sub(&H2C_CON2.mul(&t3));
    let t7 = t4.mul(&t8).add(&t1.mul(&t9));
    let t10 = t4.mul(&t9).sub(&t1.mul(&t8));
    let t5 = t7.square().add(&t10.square());
    let t7 = t5.mul(&t5.pow_2_125_minus_1().square());
    // t7 = t5^((p−1)/2): the quadratic character of the norm selects the branch.
    let is_one = t7.ct_eq(&one);
    let t3 = Fp::conditional_select(&H2C_A0.add(&t4), &H2C_A0.neg(), is_one);
    let t10 = Fp::conditional_select(&H2C_A1.sub(&t1), &H2C_A1.neg(), is_one);

    let t8 = t0.mul(&t3).sub(&t2.mul(&t10));
    let t9 = t2.mul(&t3).add(&t0.mul(&t10));
    let t5 = t3.add(&t10).mul(&t3.sub(&t10));
    let t11 = t3.mul(&t10).double();
    let t13 = t3.mul(&t4).add(&t1.mul(&t10));
    let t12 = t4.mul(&t10).sub(&t1.mul(&t3));
    let t5 = t5.sub(&t13).add(&t6);
    let t11 = t11.sub(&t12).add(&t0.mul(&t2).double());
    let t6 = x16(t5.mul(&t8).sub(&t9.mul(&t11)));
    let t12 = x16(t5.mul(&t9).add(&t8.mul(&t11)));
    let t14 = t0.add(&t3).double();
    let t8 = t2.add(&t10).double();
    let t4 = t6.mul(&t14).sub(&t8.mul(&t12));
    let t1 = t6.mul(&t8).add(&t12.mul(&t14));
    let t9 = t12.square().add(&t6.square());
    let t11 = t4.square().add(&t1.square());
    let t5 = t11.square().mul(&t9);
    let t7 = t5.pow_2_125_minus_1();
    let t13 = t7.square().square().mul(&t11).mul(&t9).mul(&t5);
    let t7 = t5.mul(&t13.mul(&t7));
    let t5 = t6.add(&t7).half();
    let t9 = t5.pow_2_125_minus_1();
    let t11 = t5.mul(&t9.square().square()).mul(&t12);
    let t9 = t5.mul(&t9);
    let t7 = t9.square();
    let two = one.double();
    let eq = t5.ct_eq(&t7);
    let t7n = Fp::conditional_select(&t11, &two, eq);
    let t11 = Fp::conditional_select(&two.neg(), &t11, eq);
    let t7 = t7n;
    let t13 = t13.double();

    let y0 = t3.sub(&t0);
    let y1 = t10.sub(&t2);
    let t15 = y0.mul(&t6).sub(&y1.mul(&t12));
    let t16 = t6.mul(&y1).add(&y0.mul(&t12));
    let y0 = t15.mul(&t4).add(&t1.mul(&t16)).mul(&t13);
    let y1 = t4.mul(&t16).sub(&t1.mul(&t15)).mul(&t13);
    let t15 = H2C_B0.mul(&t3).sub(&H2C_B1.mul(&t10));
    let t16 = H2C_B0.mul(&t10).add(&H2C_B1.mul(&t3));
    let x0 = t1.mul(&t16).add(&t15.mul(&t4));
    let x1 = t4.mul(&t16).sub(&t1.mul(&t15));
    let t15 = x0.mul(&t0).sub(&x1.mul(&t2));
    let t16 = x1.mul(&t0).add(&x0.mul(&t2));
    let x0 = t15.mul(&t14).sub(&t16.mul(&t8));
    let x1 = t16.mul(&t14).add(&t15.mul(&t8));
    let t15 = x0.mul(&t7).sub(&x1.mul(&t11));
    let t16 = t11.mul(&x0).add(&t7.mul(&x1));
    let t13 = t13.mul(&t9);
    let x = Fp2 {
        a0: t15.mul(&t13),
        a1: t16.mul(&t13),
    };
    let y = Fp2 { a0: y0, a1: y1 };
    Point::from_affine(x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_lands_on_curve_and_in_subgroup() {
        for i in 0..32u32 {
            let r = hash_to_fp2(&i.to_le_bytes());
            let raw = map_to_curve(&r);
            assert!(raw.is_valid(), "raw map output {i} off the curve");
            let p = map_and_clear(&r);
            assert!(p.is_valid());
            assert!(p.is_torsion_free_vartime());
            assert!(!p.is_identity_vartime());
        }
    }

    /// Edge inputs of the map (what `hash_to_curve_fourqlib_compat` receives from a caller
    /// that passes raw bytes): zero, one, `p − 1`, `p` and all ones in either half land on the
    /// curve and, after cofactor clearing, on a non-identity subgroup point; the lanes agree.
    #[test]
    fn map_edge_inputs() {
        let edges = [
            0u128,
            1,
            2,
            (1 << 126),
            (1 << 127) - 2,
            (1 << 127) - 1,
            u128::MAX,
        ];
        let (mut rs, mut want) = (Vec::new(), Vec::new());
        for &a in &edges {
            for &b in &edges {
                let mut bytes = [0u8; 32];
                bytes[..16].copy_from_slice(&a.to_le_bytes());
                bytes[16..].copy_from_slice(&b.to_le_bytes());
                let r = fourqlib_bytes_to_fp2(&bytes);
                assert!(map_to_curve(&r).is_valid(), "raw map of ({a:x}, {b:x})");
                let p = map_and_clear(&r);
                assert!(p.is_torsion_free_vartime() && !p.is_identity_vartime());
                rs.push(r);
                want.push(p);
            }
        }
        if let Some(lanes) = crate::backend::vector::map_and_clear_many(&rs) {
            assert_eq!(lanes, want);
        }
    }

    #[test]
    fn distinct_inputs_distinct_points() {
        let a = map_and_clear(&hash_to_fp2(b"a"));
        let b = map_and_clear(&hash_to_fp2(b"b"));
        assert_ne!(a, b);
        assert_eq!(a, map_and_clear(&hash_to_fp2(b"a")));
    }
}

#[cfg(test)]
pub(crate) mod torsion_tests {
    use super::*;
    use crate::constants::ORDER;
    use crate::scalar_mul::{mul_endo, mul_vartime_u256};
    use std::collections::BTreeMap;

    /// All 392 points of `E(GF(p²))[392]`, as `[N]R` for points `R` of the whole group (the map
    /// without cofactor clearing), collected until every one has appeared.
    pub(crate) fn torsion_points() -> Vec<Point> {
        let mut seen = BTreeMap::new();
        let mut i = 0u32;
        while seen.len() < 392 && i < 20_000 {
            let r = map_to_curve(&hash_to_fp2(&i.to_le_bytes()));
            let t = mul_vartime_u256(&r, &ORDER);
            seen.entry(t.to_bytes()).or_insert(t);
            i += 1;
        }
        seen.into_values().collect()
    }

    /// The endomorphism-based check used by `is_torsion_free_vartime` is exact: the lattice
    /// vector `decompose(0)` kills the order-N subgroup but no non-zero 392-torsion point,
    /// checked exhaustively over all 392 of them, alone and added to a subgroup point.
    #[test]
    fn subgroup_check_is_exact_on_all_torsion() {
        let ts = torsion_points();
        assert_eq!(ts.len(), 392);
        let g = Point::generator();
        let subgroup = [g, g.double(), map_and_clear(&hash_to_fp2(b"q"))];
        let mut exceptional = 0;
        for t in &ts {
            let id = t.is_identity_vartime();
            // The four points where the isogeny formulas degenerate give (0 : 0 : 0).
            let e = mul_endo(t, &[0; 4]);
            if bool::from(e.z.is_zero()) {
                exceptional += 1;
            } else {
                assert_eq!(e.is_identity_vartime(), id);
            }
            assert_eq!(t.is_torsion_free_vartime(), id);
            assert_eq!(t.is_torsion_free_naf_vartime(), id);
            for q in &subgroup {
                let e = mul_endo(&(q + t), &[0; 4]);
                assert!(!bool::from(e.z.is_zero()));
                assert_eq!((q + t).is_torsion_free_vartime(), id);
            }
        }
        assert!(exceptional <= 4);
    }
}
