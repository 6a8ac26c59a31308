//! Scalars modulo the prime order `N` of FourQ's subgroup (246 bits,
//! `N = 0x29cbc14e5e0a72f05397829cbc14e5dfbd004dfe0f79992fb2540ec7768ce7`).
//!
//! Values are kept fully reduced in four little-endian 64-bit limbs. Products use Montgomery
//! multiplication (CIOS) with `R = 2^256`; the constants `−N⁻¹ mod 2^64` and `R² mod N` are
//! FourQlib's `Montgomery_rprime` (low word) and `Montgomery_Rprime`, checked by the tests.
//! All arithmetic is constant time; inversion is Fermat's `a^(N−2)` with the public exponent.

// Limb arithmetic splits u128 values into u64 halves on purpose.
#![allow(clippy::cast_possible_truncation)]

use subtle::{Choice, ConditionallySelectable, ConstantTimeEq, CtOption};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::constants::ORDER;

/// `−N⁻¹ mod 2^64` (low word of FourQlib's `Montgomery_rprime`).
const N0_INV: u64 = 0xE12FE5F079BC3929;
/// `R² mod N` with `R = 2^256` (FourQlib's `Montgomery_Rprime`).
const R2: [u64; 4] = [
    0xC81DB8795FF3D621,
    0x173EA5AAEA6B387D,
    0x3D01B7C72136F61C,
    0x0006A5F16AC8F9D3,
];

/// An integer modulo `N`, the order of FourQ's prime subgroup. Treated as secret: compared in
/// constant time, its `Debug` prints nothing of the value, and it implements [`Zeroize`]. It is
/// `Copy` (as `ff::Field` requires), so it is *not* wiped when dropped: keep long-lived secret
/// scalars in a [`SecretScalar`], which is.
#[derive(Clone, Copy, Default)]
pub struct Scalar(pub(crate) [u64; 4]);

#[inline(always)]
fn adc(a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = (a as u128) + (b as u128) + (carry as u128);
    (t as u64, (t >> 64) as u64)
}

#[inline(always)]
fn sbb(a: u64, b: u64, borrow: u64) -> (u64, u64) {
    let t = (a as u128).wrapping_sub((b as u128) + ((borrow >> 63) as u128));
    (t as u64, (t >> 64) as u64)
}

#[inline(always)]
fn mac(a: u64, b: u64, c: u64, carry: u64) -> (u64, u64) {
    let t = (a as u128) + (b as u128) * (c as u128) + (carry as u128);
    (t as u64, (t >> 64) as u64)
}

/// `a − N` if `a ≥ N` (with an extra carry word `hi`), else `a`, in constant time.
#[inline(always)]
fn sub_n_if_needed(a: [u64; 4], hi: u64) -> [u64; 4] {
    let (r0, b) = sbb(a[0], ORDER[0], 0);
    let (r1, b) = sbb(a[1], ORDER[1], b);
    let (r2, b) = sbb(a[2], ORDER[2], b);
    let (r3, b) = sbb(a[3], ORDER[3], b);
    let (_, b) = sbb(hi, 0, b);
    // b is all ones when a < N (keep a), zero otherwise (take a − N).
    let keep = Choice::from((b & 1) as u8);
    let r = [r0, r1, r2, r3];
    let mut out = [0u64; 4];
    for i in 0..4 {
        out[i] = u64::conditional_select(&r[i], &a[i], keep);
    }
    out
}

/// Montgomery product `a·b·2^−256 mod N` (CIOS); needs `a·b < N·2^256`.
#[inline(always)]
fn mont_mul(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let mut t = [0u64; 6];
    for &ai in a.iter() {
        let mut c = 0;
        for j in 0..4 {
            let (lo, hi) = mac(t[j], ai, b[j], c);
            t[j] = lo;
            c = hi;
        }
        let (lo, hi) = adc(t[4], c, 0);
        t[4] = lo;
        t[5] = hi;
        let m = t[0].wrapping_mul(N0_INV);
        let (_, mut c) = mac(t[0], m, ORDER[0], 0);
        for j in 1..4 {
            let (lo, hi) = mac(t[j], m, ORDER[j], c);
            t[j - 1] = lo;
            c = hi;
        }
        let (lo, hi) = adc(t[4], c, 0);
        t[3] = lo;
        t[4] = t[5] + hi;
    }
    sub_n_if_needed([t[0], t[1], t[2], t[3]], t[4])
}

impl Scalar {
    /// `0`.
    pub const ZERO: Scalar = Scalar([0; 4]);
    /// `1`.
    pub const ONE: Scalar = Scalar([1, 0, 0, 0]);

    /// From a `u64`.
    pub fn from_u64(v: u64) -> Scalar {
        Scalar([v, 0, 0, 0])
    }

    /// The little-endian 32-byte canonical encoding.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, w) in self.0.iter().enumerate() {
            out[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    fn words_le(bytes: &[u8]) -> [u64; 4] {
        let mut w = [0u64; 4];
        for (i, chunk) in bytes.chunks_exact(8).take(4).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            w[i] = u64::from_le_bytes(b);
        }
        w
    }

    /// Parse a canonical little-endian encoding (the value must be below `N`).
    pub fn from_canonical_bytes(bytes: &[u8; 32]) -> CtOption<Scalar> {
        let w = Scalar::words_le(bytes);
        let (_, b) = sbb(w[0], ORDER[0], 0);
        let (_, b) = sbb(w[1], ORDER[1], b);
        let (_, b) = sbb(w[2], ORDER[2], b);
        let (_, b) = sbb(w[3], ORDER[3], b);
        CtOption::new(Scalar(w), Choice::from((b & 1) as u8))
    }

    /// A 256-bit little-endian integer reduced modulo `N`.
    pub fn from_bytes_mod_order(bytes: &[u8; 32]) -> Scalar {
        let w = Scalar::words_le(bytes);
        // w·R·R⁻¹: Montgomery-multiply by R² (w < 2^256 and R² < N), then by 1.
        Scalar(mont_mul(&mont_mul(&w, &R2), &[1, 0, 0, 0]))
    }

    /// A 512-bit little-endian integer reduced modulo `N` (bias below 2^−266: use this with 64
    /// uniform bytes to get a uniform scalar).
    pub fn from_bytes_mod_order_wide(bytes: &[u8; 64]) -> Scalar {
        let lo = Scalar::words_le(&bytes[..32]);
        let hi = Scalar::words_le(&bytes[32..]);
        // lo + hi·2^256 = (lo·R + hi·R²)·R⁻¹; lo·R = mont(lo, R²), hi·R² = mont(mont(hi, R²), R²).
        let a = mont_mul(&lo, &R2);
        let b = mont_mul(&mont_mul(&hi, &R2), &R2);
        let s = Scalar(a).add(&Scalar(b));
        Scalar(mont_mul(&s.0, &[1, 0, 0, 0]))
    }

    /// A uniformly random scalar (64 random bytes reduced).
    pub fn random<R: rand_core::Rng + ?Sized>(rng: &mut R) -> Scalar {
        let mut b = [0u8; 64];
        rng.fill_bytes(&mut b);
        let s = Scalar::from_bytes_mod_order_wide(&b);
        b.zeroize();
        s
    }

    /// `a + b mod N`.
    pub fn add(&self, b: &Scalar) -> Scalar {
        let (r0, c) = adc(self.0[0], b.0[0], 0);
        let (r1, c) = adc(self.0[1], b.0[1], c);
        let (r2, c) = adc(self.0[2], b.0[2], c);
        let (r3, c) = adc(self.0[3], b.0[3], c);
        Scalar(sub_n_if_needed([r0, r1, r2, r3], c))
    }

    /// `a − b mod N`.
    pub fn sub(&self, b: &Scalar) -> Scalar {
        let (r0, br) = sbb(self.0[0], b.0[0], 0);
        let (r1, br) = sbb(self.0[1], b.0[1], br);
        let (r2, br) = sbb(self.0[2], b.0[2], br);
        let (r3, br) = sbb(self.0[3], b.0[3], br);
        // Add N back under the borrow mask.
        let (r0, c) = adc(r0, ORDER[0] & br, 0);
        let (r1, c) = adc(r1, ORDER[1] & br, c);
        let (r2, c) = adc(r2, ORDER[2] & br, c);
        let (r3, _) = adc(r3, ORDER[3] & br, c);
        Scalar([r0, r1, r2, r3])
    }

    /// `−a mod N`.
    pub fn neg(&self) -> Scalar {
        Scalar::ZERO.sub(self)
    }

    /// `a·b mod N`.
    pub fn mul(&self, b: &Scalar) -> Scalar {
        Scalar(mont_mul(&mont_mul(&self.0, &b.0), &R2))
    }

    /// `a²`.
    pub fn square(&self) -> Scalar {
        self.mul(self)
    }

    /// `a^−1 mod N` (`None` for zero): Fermat, `a^(N−2)`, a fixed square-and-multiply over the
    /// public exponent, so the time does not depend on `a`.
    pub fn invert(&self) -> CtOption<Scalar> {
        // In the Montgomery domain: am = a·R.
        let am = mont_mul(&self.0, &R2);
        let mut e = ORDER;
        e[0] -= 2; // N is odd and its low word exceeds 2.
        let one_m = mont_mul(&[1, 0, 0, 0], &R2);
        let mut acc = one_m;
        for i in (0..256).rev() {
            acc = mont_mul(&acc, &acc);
            // The exponent is public: branching on its bits reveals nothing about a.
            if (e[i / 64] >> (i % 64)) & 1 == 1 {
                acc = mont_mul(&acc, &am);
            }
        }
        let r = Scalar(mont_mul(&acc, &[1, 0, 0, 0]));
        CtOption::new(r, !self.is_zero())
    }

    /// Is zero.
    pub fn is_zero(&self) -> Choice {
        self.ct_eq(&Scalar::ZERO)
    }

    /// Is odd (bit 0 of the canonical value).
    pub fn is_odd(&self) -> Choice {
        Choice::from((self.0[0] & 1) as u8)
    }

    /// The canonical little-endian limbs.
    pub(crate) fn limbs(&self) -> [u64; 4] {
        self.0
    }
}

impl ConstantTimeEq for Scalar {
    fn ct_eq(&self, other: &Scalar) -> Choice {
        self.0[0].ct_eq(&other.0[0])
            & self.0[1].ct_eq(&other.0[1])
            & self.0[2].ct_eq(&other.0[2])
            & self.0[3].ct_eq(&other.0[3])
    }
}

impl ConditionallySelectable for Scalar {
    fn conditional_select(a: &Scalar, b: &Scalar, c: Choice) -> Scalar {
        let mut r = [0u64; 4];
        for (i, ri) in r.iter_mut().enumerate() {
            *ri = u64::conditional_select(&a.0[i], &b.0[i], c);
        }
        Scalar(r)
    }
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Scalar) -> bool {
        bool::from(self.ct_eq(other))
    }
}

impl Eq for Scalar {}

impl Zeroize for Scalar {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl core::fmt::Debug for Scalar {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Scalar(<redacted>)")
    }
}

impl From<u64> for Scalar {
    fn from(v: u64) -> Scalar {
        Scalar::from_u64(v)
    }
}

macro_rules! scalar_ops {
    ($tr:ident, $f:ident, $atr:ident, $af:ident, $inh:ident) => {
        impl core::ops::$tr<&Scalar> for &Scalar {
            type Output = Scalar;
            fn $f(self, rhs: &Scalar) -> Scalar {
                Scalar::$inh(self, rhs)
            }
        }
        impl core::ops::$tr<Scalar> for Scalar {
            type Output = Scalar;
            fn $f(self, rhs: Scalar) -> Scalar {
                Scalar::$inh(&self, &rhs)
            }
        }
        impl core::ops::$tr<&Scalar> for Scalar {
            type Output = Scalar;
            fn $f(self, rhs: &Scalar) -> Scalar {
                Scalar::$inh(&self, rhs)
            }
        }
        impl core::ops::$tr<Scalar> for &Scalar {
            type Output = Scalar;
            fn $f(self, rhs: Scalar) -> Scalar {
                Scalar::$inh(self, &rhs)
            }
        }
        impl core::ops::$atr<Scalar> for Scalar {
            fn $af(&mut self, rhs: Scalar) {
                *self = Scalar::$inh(self, &rhs);
            }
        }
        impl core::ops::$atr<&Scalar> for Scalar {
            fn $af(&mut self, rhs: &Scalar) {
                *self = Scalar::$inh(self, rhs);
            }
        }
    };
}
scalar_ops!(Add, add, AddAssign, add_assign, add);
scalar_ops!(Sub, sub, SubAssign, sub_assign, sub);
scalar_ops!(Mul, mul, MulAssign, mul_assign, mul);

impl core::ops::Neg for Scalar {
    type Output = Scalar;
    fn neg(self) -> Scalar {
        Scalar::neg(&self)
    }
}

impl core::ops::Neg for &Scalar {
    type Output = Scalar;
    fn neg(self) -> Scalar {
        Scalar::neg(self)
    }
}

impl core::iter::Sum for Scalar {
    fn sum<I: Iterator<Item = Scalar>>(iter: I) -> Scalar {
        iter.fold(Scalar::ZERO, |a, b| a + b)
    }
}

impl<'a> core::iter::Sum<&'a Scalar> for Scalar {
    fn sum<I: Iterator<Item = &'a Scalar>>(iter: I) -> Scalar {
        iter.fold(Scalar::ZERO, |a, b| a + b)
    }
}

impl core::iter::Product for Scalar {
    fn product<I: Iterator<Item = Scalar>>(iter: I) -> Scalar {
        iter.fold(Scalar::ONE, |a, b| a * b)
    }
}

impl<'a> core::iter::Product<&'a Scalar> for Scalar {
    fn product<I: Iterator<Item = &'a Scalar>>(iter: I) -> Scalar {
        iter.fold(Scalar::ONE, |a, b| a * b)
    }
}

/// A [`Scalar`] that is wiped when dropped.
///
/// [`Scalar`] itself must be `Copy` to implement `ff::Field`, and a `Copy` type cannot run
/// code on drop; hold long-lived secret keys in this wrapper instead (it dereferences to the
/// scalar).
#[derive(Clone, Default)]
pub struct SecretScalar(Scalar);

impl SecretScalar {
    /// Wrap a scalar.
    pub fn new(s: Scalar) -> SecretScalar {
        SecretScalar(s)
    }
}

impl core::ops::Deref for SecretScalar {
    type Target = Scalar;
    fn deref(&self) -> &Scalar {
        &self.0
    }
}

impl core::fmt::Debug for SecretScalar {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SecretScalar(<redacted>)")
    }
}

impl Drop for SecretScalar {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl ZeroizeOnDrop for SecretScalar {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Big-integer reference on u32 digits (slow, simple): value of 64 LE bytes mod N.
    fn ref_mod(bytes: &[u8]) -> [u64; 4] {
        // Horner from the most significant byte, with a 4-limb + carry accumulator.
        let mut acc = Scalar::ZERO;
        let b256 = Scalar::from_u64(256);
        for &byte in bytes.iter().rev() {
            acc = ref_mul(&acc, &b256).add(&Scalar::from_u64(u64::from(byte)));
        }
        acc.0
    }

    /// Double-and-add multiplication mod N (independent of the Montgomery code).
    fn ref_mul(a: &Scalar, b: &Scalar) -> Scalar {
        let mut acc = Scalar::ZERO;
        for i in (0..256).rev() {
            acc = acc.add(&acc);
            if (b.0[i / 64] >> (i % 64)) & 1 == 1 {
                acc = acc.add(a);
            }
        }
        acc
    }

    fn scalar() -> impl Strategy<Value = Scalar> {
        any::<[u8; 64]>().prop_map(|b| Scalar::from_bytes_mod_order_wide(&b))
    }

    #[test]
    fn montgomery_constants() {
        // N·(−N⁻¹) ≡ −1 mod 2^64.
        assert_eq!(ORDER[0].wrapping_mul(N0_INV), u64::MAX);
        // R² mod N: 2^512 mod N by repeated doubling of 1.
        let mut r = Scalar::ONE;
        for _ in 0..512 {
            r = r.add(&r);
        }
        assert_eq!(r.0, R2);
    }

    proptest! {
        #[test]
        fn wide_reduction_matches_reference(b in any::<[u8; 64]>()) {
            prop_assert_eq!(Scalar::from_bytes_mod_order_wide(&b).0, ref_mod(&b));
            let mut n = [0u8; 32];
            n.copy_from_slice(&b[..32]);
            prop_assert_eq!(Scalar::from_bytes_mod_order(&n).0, ref_mod(&n));
        }

        #[test]
        fn field_laws(a in scalar(), b in scalar(), c in scalar()) {
            prop_assert_eq!(a * b, ref_mul(&a, &b));
            prop_assert_eq!((a + b) * c, a * c + b * c);
            prop_assert_eq!(a - b + b, a);
            prop_assert_eq!(a + (-a), Scalar::ZERO);
            if !bool::from(a.is_zero()) {
                prop_assert_eq!(a * a.invert().unwrap(), Scalar::ONE);
            }
            let enc = a.to_bytes();
            prop_assert_eq!(Scalar::from_canonical_bytes(&enc).unwrap(), a);
        }
    }

    #[test]
    fn canonical_rejects_order() {
        let mut n = [0u8; 32];
        for (i, w) in ORDER.iter().enumerate() {
            n[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        assert!(bool::from(Scalar::from_canonical_bytes(&n).is_none()));
        assert_eq!(Scalar::from_bytes_mod_order(&n), Scalar::ZERO);
        assert!(bool::from(Scalar::ZERO.invert().is_none()));
        assert_eq!(format!("{:?}", Scalar::ONE), "Scalar(<redacted>)");
    }
}
