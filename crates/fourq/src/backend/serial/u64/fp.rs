//! Arithmetic in GF(p), p = 2^127 − 1 (the Mersenne prime of FourQ, [CL15, §2]).
//!
//! An element is two 64-bit limbs `[lo, hi]` holding an integer `a` with `0 ≤ a ≤ 2^127 − 1 = p`.
//! Both `0` and `p` stand for zero (a *weakly reduced* form, as FourQlib keeps it); every
//! operation accepts and returns this range, and [`Fp::canonical`] maps `p` to `0` for
//! encoding and comparison. Products are formed from four `u64 × u64 → u128` multiplications
//! and reduced with `2^127 ≡ 1 (mod p)`, so nothing ever branches on a value.
//!
//! [CL15]: https://eprint.iacr.org/2015/565 "Costello, Longa, FourQ: four-dimensional
//! decompositions on a Q-curve over the Mersenne prime, ASIACRYPT 2015"

// Limb arithmetic splits u128 values into u64 halves on purpose.
#![allow(clippy::cast_possible_truncation)]

use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};
use zeroize::Zeroize;

/// `2^127 − 1`, also the mask of the low 127 bits.
const M127: u128 = (1u128 << 127) - 1;

/// An element of GF(2^127 − 1), weakly reduced to `[0, p]`.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub(crate) struct Fp(pub(crate) [u64; 2]);

impl Fp {
    /// Zero.
    pub(crate) const ZERO: Fp = Fp([0, 0]);
    /// One.
    pub(crate) const ONE: Fp = Fp([1, 0]);

    /// From a `u128` that is already at most `p`.
    #[inline(always)]
    pub(crate) const fn from_u128_reduced(v: u128) -> Fp {
        Fp([v as u64, (v >> 64) as u64])
    }

    /// Any 128-bit integer, reduced modulo p.
    #[inline(always)]
    pub(crate) const fn from_u128(v: u128) -> Fp {
        // v = (v mod 2^127) + 2^127·b ≡ (v mod 2^127) + b; the sum is at most 2^127 − 1 + 1,
        // and equals 2^127 only when v = 2^128 − 1, which reduces to 1 below.
        let s = (v & M127) + (v >> 127);
        Fp::from_u128_reduced((s & M127) + (s >> 127))
    }

    /// The value as a `u128` (in `[0, p]`).
    #[inline(always)]
    pub(crate) const fn to_u128(self) -> u128 {
        (self.0[0] as u128) | ((self.0[1] as u128) << 64)
    }

    /// `a + b`. Inputs in `[0, p]`, so `a + b ≤ 2^128 − 2` and one fold lands in `[0, p]`.
    #[inline(always)]
    pub(crate) fn add(&self, b: &Fp) -> Fp {
        let s = self.to_u128() + b.to_u128();
        Fp::from_u128_reduced((s & M127) + (s >> 127))
    }

    /// `a − b`. With a borrow, `a − b + 2^128` has bit 127 set and `a − b + p` equals its low
    /// 127 bits minus one (which is `≥ 0` because `a − b ≥ −p`).
    #[inline(always)]
    pub(crate) fn sub(&self, b: &Fp) -> Fp {
        let d = self.to_u128().wrapping_sub(b.to_u128());
        Fp::from_u128_reduced((d & M127) - (d >> 127))
    }

    /// `a − b − c` with one reduction: `b + c ≤ 2p < 2^128` needs no fold; on a borrow the
    /// wrapped difference `a − b − c + 2^128 ∈ [2, 2^128)` is congruent to `a − b − c + 2`
    /// (as `2^128 ≡ 2`), so subtract 2 and fold once (the result is at most `2^127 − 2`).
    #[inline(always)]
    pub(crate) fn sub_sum(&self, b: &Fp, c: &Fp) -> Fp {
        let s = b.to_u128() + c.to_u128();
        let (d, borrow) = self.to_u128().overflowing_sub(s);
        let v = d - (u128::from(borrow) << 1);
        Fp::from_u128_reduced((v & M127) + (v >> 127))
    }

    /// `−a = p − a`.
    #[inline(always)]
    pub(crate) fn neg(&self) -> Fp {
        Fp::from_u128_reduced(M127 - self.to_u128())
    }

    /// `2a`.
    #[inline(always)]
    pub(crate) fn double(&self) -> Fp {
        self.add(self)
    }

    /// `a / 2`: a rotation of the 127-bit value (since `2^127 ≡ 1`, halving is rotating right).
    #[inline(always)]
    pub(crate) fn half(&self) -> Fp {
        let a = self.to_u128();
        Fp::from_u128_reduced((a >> 1) | ((a & 1) << 126))
    }

    /// Reduce a product `lo + hi·2^128` (with the whole product below 2^254) modulo p.
    #[inline(always)]
    fn reduce_wide(lo: u128, hi: u128) -> Fp {
        // x = (x mod 2^127) + 2^127·(x >> 127) ≡ (x mod 2^127) + (x >> 127), and x >> 127 < 2^127.
        let h = (hi << 1) | (lo >> 127);
        let s = (lo & M127) + h;
        Fp::from_u128_reduced((s & M127) + (s >> 127))
    }

    /// `a · b`: a 2×2-limb schoolbook product (four `u64 × u64` products) and a fold.
    #[inline(always)]
    pub(crate) fn mul(&self, b: &Fp) -> Fp {
        let (a0, a1) = (self.0[0] as u128, self.0[1] as u128);
        let (b0, b1) = (b.0[0] as u128, b.0[1] as u128);
        let lo = a0 * b0;
        // Each cross product is below 2^127, so their sum fits in 128 bits.
        let mid = a0 * b1 + a1 * b0;
        let hi = a1 * b1;
        let (low, c) = lo.overflowing_add(mid << 64);
        let high = hi + (mid >> 64) + c as u128;
        Fp::reduce_wide(low, high)
    }

    /// `a^2` with three `u64 × u64` products.
    #[inline(always)]
    pub(crate) fn square(&self) -> Fp {
        let (a0, a1) = (self.0[0] as u128, self.0[1] as u128);
        let lo = a0 * a0;
        let mid = (a0 * a1) << 1; // a0·a1 < 2^127
        let hi = a1 * a1;
        let (low, c) = lo.overflowing_add(mid << 64);
        let high = hi + (mid >> 64) + c as u128;
        Fp::reduce_wide(low, high)
    }

    /// `a^(2^k)`.
    #[inline(always)]
    pub(crate) fn square_n(&self, k: u32) -> Fp {
        let mut r = *self;
        for _ in 0..k {
            r = r.square();
        }
        r
    }

    /// `a^(2^125 − 1)` by a fixed addition chain (124 squarings, 11 multiplications); the
    /// building block of inversion and square roots ([CL15, §5.1]; FourQlib's `fpexp1251`).
    #[inline(always)]
    pub(crate) fn pow_2_125_minus_1(&self) -> Fp {
        let x1 = *self;
        let x2 = x1.square().mul(&x1); // 2^2 − 1
        let x4 = x2.square_n(2).mul(&x2); // 2^4 − 1
        let x8 = x4.square_n(4).mul(&x4);
        let x16 = x8.square_n(8).mul(&x8);
        let x32 = x16.square_n(16).mul(&x16);
        let x64 = x32.square_n(32).mul(&x32);
        let x96 = x64.square_n(32).mul(&x32);
        let x112 = x96.square_n(16).mul(&x16);
        let x120 = x112.square_n(8).mul(&x8);
        let x124 = x120.square_n(4).mul(&x4);
        x124.square().mul(&x1) // 2^125 − 1
    }

    /// `a^(p−2) = (a^(2^125−1))^4 · a`, which is `a^−1` for `a ≠ 0` and `0` for `a = 0`.
    /// Constant time (a fixed chain).
    #[inline(always)]
    pub(crate) fn invert(&self) -> Fp {
        self.pow_2_125_minus_1().square_n(2).mul(self)
    }

    /// `a^((p+1)/4) = a^(2^125)`: the square root of `a` when `a` is a square (p ≡ 3 mod 4).
    pub(crate) fn sqrt_candidate(&self) -> Fp {
        self.square_n(125)
    }

    /// The unique representative in `[0, p − 1]`.
    #[inline(always)]
    pub(crate) fn canonical(&self) -> Fp {
        let a = self.to_u128();
        // a + 1 has bit 127 set exactly when a = p.
        Fp::from_u128_reduced((a + ((a + 1) >> 127)) & M127)
    }

    /// `a == 0` (either representative).
    #[inline(always)]
    pub(crate) fn is_zero(&self) -> Choice {
        let c = self.canonical();
        (c.0[0] | c.0[1]).ct_eq(&0)
    }

    /// Little-endian canonical encoding in 16 bytes (bit 127 clear).
    pub(crate) fn to_bytes(self) -> [u8; 16] {
        self.canonical().to_u128().to_le_bytes()
    }

    /// The bit `i` (0-based) of the canonical value.
    #[inline(always)]
    pub(crate) fn bit(&self, i: u32) -> u8 {
        ((self.canonical().to_u128() >> i) & 1) as u8
    }
}

impl ConstantTimeEq for Fp {
    fn ct_eq(&self, other: &Fp) -> Choice {
        let a = self.canonical();
        let b = other.canonical();
        a.0[0].ct_eq(&b.0[0]) & a.0[1].ct_eq(&b.0[1])
    }
}

impl ConditionallySelectable for Fp {
    #[inline(always)]
    fn conditional_select(a: &Fp, b: &Fp, choice: Choice) -> Fp {
        Fp([
            u64::conditional_select(&a.0[0], &b.0[0], choice),
            u64::conditional_select(&a.0[1], &b.0[1], choice),
        ])
    }
}

impl Zeroize for Fp {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl core::fmt::Debug for Fp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Fp(0x{:032x})", self.canonical().to_u128())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: u128 = M127;

    /// Reference arithmetic: schoolbook on u128 with a slow reduction of the 256-bit product.
    fn ref_mul(a: u128, b: u128) -> u128 {
        // Double-and-add modulo p, with every intermediate kept below 2^128.
        let (mut acc, mut x, mut y) = (0u128, a % P, b % P);
        while y > 0 {
            if y & 1 == 1 {
                acc = (acc + x) % P;
            }
            x = (x << 1) % P;
            y >>= 1;
        }
        acc
    }

    fn fp() -> impl Strategy<Value = u128> {
        prop_oneof![0..=P, Just(0u128), Just(P), Just(P - 1), Just(1u128)]
    }

    proptest! {
        #[test]
        fn add_sub_mul_match_reference(a in fp(), b in fp()) {
            let (x, y) = (Fp::from_u128_reduced(a), Fp::from_u128_reduced(b));
            prop_assert_eq!(x.add(&y).canonical().to_u128(), (a % P + b % P) % P);
            prop_assert_eq!(x.sub(&y).canonical().to_u128(), (a % P + P - b % P) % P);
            prop_assert_eq!(x.mul(&y).canonical().to_u128(), ref_mul(a, b));
            prop_assert_eq!(x.square().canonical().to_u128(), ref_mul(a, a));
            prop_assert_eq!(x.neg().add(&x).canonical().to_u128(), 0);
            let z = x.mul(&y);
            let w = z.sub_sum(&x, &y);
            prop_assert_eq!(w.canonical().to_u128(), z.sub(&x).sub(&y).canonical().to_u128());
            prop_assert!(w.to_u128() <= P);
            prop_assert!(x.sub_sum(&Fp::from_u128_reduced(P), &y).to_u128() <= P);
            prop_assert_eq!(x.half().double().canonical().to_u128(), a % P);
            prop_assert!(x.add(&y).to_u128() <= P && x.sub(&y).to_u128() <= P);
            prop_assert!(x.mul(&y).to_u128() <= P && x.square().to_u128() <= P);
        }

        #[test]
        fn inverse(a in 1..P) {
            let x = Fp::from_u128_reduced(a);
            prop_assert_eq!(x.mul(&x.invert()).canonical().to_u128(), 1);
        }

        #[test]
        fn sqrt_of_square(a in fp()) {
            let x = Fp::from_u128_reduced(a).square();
            let r = x.sqrt_candidate();
            prop_assert!(bool::from(r.square().ct_eq(&x)));
        }

        #[test]
        fn from_u128_reduces(v in any::<u128>()) {
            prop_assert_eq!(Fp::from_u128(v).canonical().to_u128(), v % P);
        }
    }

    #[test]
    fn edge_values() {
        assert_eq!(
            Fp::from_u128(u128::MAX).canonical().to_u128(),
            u128::MAX % P
        );
        assert!(bool::from(Fp::from_u128_reduced(P).is_zero()));
        assert!(bool::from(Fp::ZERO.invert().is_zero()));
        // p ≡ 3 (mod 4): −1 is not a square, so its candidate root squares to +1.
        let m1 = Fp::ONE.neg();
        assert!(!bool::from(m1.sqrt_candidate().square().ct_eq(&m1)));
    }
}
