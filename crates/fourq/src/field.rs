//! GF(p^2) = GF(p)\[i\]/(i^2 + 1), p = 2^127 − 1, the field FourQ is defined over ([CL15, §2]).
//!
//! An element `a0 + a1·i` holds two [`Fp`] values in the weakly reduced range `[0, p]`.
//! Multiplication is Karatsuba (three GF(p) products), squaring uses
//! `(a0 + a1 i)^2 = (a0 + a1)(a0 − a1) + 2·a0·a1·i` (two products), inversion is
//! `(a0 − a1 i)/(a0^2 + a1^2)` with one constant-time GF(p) inversion (a fixed addition chain).
//! The canonical 32-byte encoding is `a0 ‖ a1`, each 16 bytes little-endian with bit 127
//! clear — FourQlib's layout.
//!
//! [CL15]: <https://eprint.iacr.org/2015/565>

use subtle::{Choice, ConditionallyNegatable, ConditionallySelectable, ConstantTimeEq, CtOption};
use zeroize::Zeroize;

pub(crate) use crate::backend::serial::u64::fp::Fp;

/// An element `a0 + a1·i` of GF(p^2). (`repr(C)`, so that the assembly products see the limbs
/// `a0.lo, a0.hi, a1.lo, a1.hi` in this order.)
#[derive(Clone, Copy, Default, Debug)]
#[repr(C)]
pub(crate) struct Fp2 {
    pub(crate) a0: Fp,
    pub(crate) a1: Fp,
}

/// How the point formulas form GF(p²) products: [`Portable`] (the `u128` code of [`Fp2::mul`]
/// and [`Fp2::square`], any CPU) or, on x86-64 CPUs with BMI2, the `mulx` assembly of
/// `backend::serial::u64::fp2_mulx::Mulx`. A zero-sized token passed down from the entry point
/// that chose it; both give the same result in `[0, p]` for inputs in `[0, p]`.
pub(crate) trait Fp2Mul: Copy {
    /// `a·b`.
    fn mul(self, a: &Fp2, b: &Fp2) -> Fp2;
    /// `a²`.
    fn square(self, a: &Fp2) -> Fp2;
}

/// The portable GF(p²) products ([`Fp2::mul`], [`Fp2::square`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Fp2Mul for Portable {
    #[inline(always)]
    fn mul(self, a: &Fp2, b: &Fp2) -> Fp2 {
        a.mul(b)
    }

    #[inline(always)]
    fn square(self, a: &Fp2) -> Fp2 {
        a.square()
    }
}

impl Fp2 {
    pub(crate) const ZERO: Fp2 = Fp2 {
        a0: Fp::ZERO,
        a1: Fp::ZERO,
    };
    pub(crate) const ONE: Fp2 = Fp2 {
        a0: Fp::ONE,
        a1: Fp::ZERO,
    };

    /// From FourQlib's `f2elm_t` layout: four little-endian 64-bit words `a0.lo, a0.hi, a1.lo, a1.hi`.
    /// The caller guarantees each half is at most `p` (true of every constant in FourQlib).
    pub(crate) const fn from_words(w: [u64; 4]) -> Fp2 {
        Fp2 {
            a0: Fp([w[0], w[1]]),
            a1: Fp([w[2], w[3]]),
        }
    }

    #[inline(always)]
    pub(crate) fn add(&self, b: &Fp2) -> Fp2 {
        Fp2 {
            a0: self.a0.add(&b.a0),
            a1: self.a1.add(&b.a1),
        }
    }

    #[inline(always)]
    pub(crate) fn sub(&self, b: &Fp2) -> Fp2 {
        Fp2 {
            a0: self.a0.sub(&b.a0),
            a1: self.a1.sub(&b.a1),
        }
    }

    #[inline(always)]
    pub(crate) fn neg(&self) -> Fp2 {
        Fp2 {
            a0: self.a0.neg(),
            a1: self.a1.neg(),
        }
    }

    #[inline(always)]
    pub(crate) fn double(&self) -> Fp2 {
        self.add(self)
    }

    /// The Frobenius map `a^p = a0 − a1·i` (conjugation).
    #[inline(always)]
    pub(crate) fn conj(&self) -> Fp2 {
        Fp2 {
            a0: self.a0,
            a1: self.a1.neg(),
        }
    }

    /// Karatsuba: `c0 = a0 b0 − a1 b1`, `c1 = (a0 + a1)(b0 + b1) − a0 b0 − a1 b1` (three
    /// reduced GF(p) products; a lazily reduced 256-bit variant measured no faster here).
    #[inline(always)]
    pub(crate) fn mul(&self, b: &Fp2) -> Fp2 {
        let t1 = self.a0.mul(&b.a0);
        let t2 = self.a1.mul(&b.a1);
        let t3 = self.a0.add(&self.a1).mul(&b.a0.add(&b.a1));
        Fp2 {
            a0: t1.sub(&t2),
            a1: t3.sub_sum(&t1, &t2),
        }
    }

    /// `(a0 + a1)(a0 − a1) + 2 a0 a1 i`.
    #[inline(always)]
    pub(crate) fn square(&self) -> Fp2 {
        let t1 = self.a0.add(&self.a1);
        let t2 = self.a0.sub(&self.a1);
        let t3 = self.a0.mul(&self.a1);
        Fp2 {
            a0: t1.mul(&t2),
            a1: t3.double(),
        }
    }

    /// The norm `a0^2 + a1^2 ∈ GF(p)`.
    #[inline(always)]
    pub(crate) fn norm(&self) -> Fp {
        self.a0.square().add(&self.a1.square())
    }

    /// `a^−1 = (a0 − a1 i)/(a0^2 + a1^2)`; maps 0 to 0. Constant time. Dispatches at run
    /// time to a copy compiled for `bmi2`/`adx`/`avx2` when the CPU has them (same result).
    pub(crate) fn invert(&self) -> Fp2 {
        crate::backend::serial::x86::invert(self)
    }

    /// [`Fp2::invert`] in portable code, inlined into each compiled copy.
    #[inline(always)]
    pub(crate) fn invert_portable(&self) -> Fp2 {
        let n = self.norm().invert();
        Fp2 {
            a0: self.a0.mul(&n),
            a1: self.a1.neg().mul(&n),
        }
    }

    /// Constant-time square root: `(is_square, r)` with `r^2 = a` when `is_square` is set.
    #[cfg(test)]
    pub(crate) fn sqrt(&self) -> (Choice, Fp2) {
        Fp2::sqrt_ratio(self, &Fp2::ONE)
    }

    /// Constant-time `√(u/v)` with two exponentiations and no inversion. Returns
    /// `(is_square, x)`; when `is_square` is set, `v·x² = u`.
    ///
    /// With `t = N(v) = v0² + v1²` and `w = u·v̄` we have `u/v = w/t`. Let `s = √N(w)` in GF(p)
    /// (`N(w)^(2^125)`), `c = 2(w0 + s)` (or `2(w0 − s)` when that sum vanishes) and `a = c·t`.
    /// One exponentiation `r = (a·t²)^((p−3)/4)` gives both `x0 = a·r = ±√a / t` and
    /// `1/(x0·t) = ±r·t`. If `a` is a square, `x = x0/2 + (w1·r·t)·i`; otherwise the roles of
    /// the two coordinates swap and `x = −w1·r·t + (x0/2)·i`. The result is then checked.
    pub(crate) fn sqrt_ratio(u: &Fp2, v: &Fp2) -> (Choice, Fp2) {
        let t = v.norm();
        let w = u.mul(&v.conj());
        let s = w.norm().sqrt_candidate();
        let c_plus = w.a0.add(&s);
        let c = Fp::conditional_select(&c_plus, &w.a0.sub(&s), c_plus.is_zero()).double();
        let a = c.mul(&t);
        let r = a.mul(&t.square()).pow_2_125_minus_1();
        let x0 = a.mul(&r);
        let x1 = w.a1.mul(&r).mul(&t);
        let a_is_sq = x0.square().mul(&t).ct_eq(&c);
        let half = x0.half();
        let xa = Fp2 { a0: half, a1: x1 };
        let xb = Fp2 {
            a0: x1.neg(),
            a1: half,
        };
        let x = Fp2::conditional_select(&xb, &xa, a_is_sq);
        let ok = v.mul(&x.square()).ct_eq(u) & !v.is_zero();
        (ok, x)
    }

    /// Is zero (either representative of each coordinate).
    #[inline(always)]
    pub(crate) fn is_zero(&self) -> Choice {
        self.a0.is_zero() & self.a1.is_zero()
    }

    /// Canonical coordinates.
    pub(crate) fn canonical(&self) -> Fp2 {
        Fp2 {
            a0: self.a0.canonical(),
            a1: self.a1.canonical(),
        }
    }

    /// `a0 ‖ a1`, each 16 bytes little-endian, canonical.
    pub(crate) fn to_bytes(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out[..16].copy_from_slice(&self.a0.to_bytes());
        out[16..].copy_from_slice(&self.a1.to_bytes());
        out
    }

    /// Parse `a0 ‖ a1`; rejects a set bit 127 in either half or a half equal to p.
    pub(crate) fn from_bytes(bytes: &[u8; 32]) -> CtOption<Fp2> {
        let mut lo = [0u8; 16];
        let mut hi = [0u8; 16];
        lo.copy_from_slice(&bytes[..16]);
        hi.copy_from_slice(&bytes[16..]);
        let a0 = u128::from_le_bytes(lo);
        let a1 = u128::from_le_bytes(hi);
        let p = (1u128 << 127) - 1;
        // Canonical means strictly below p (which excludes bit 127 too).
        let ok = ct_lt_u128(a0, p) & ct_lt_u128(a1, p);
        let v = Fp2 {
            a0: Fp::from_u128(a0),
            a1: Fp::from_u128(a1),
        };
        CtOption::new(v, ok)
    }
}

/// Constant-time `a < b` on `u128`.
pub(crate) fn ct_lt_u128(a: u128, b: u128) -> Choice {
    let (_, borrow) = a.overflowing_sub(b);
    Choice::from(u8::from(borrow))
}

impl ConstantTimeEq for Fp2 {
    fn ct_eq(&self, other: &Fp2) -> Choice {
        self.a0.ct_eq(&other.a0) & self.a1.ct_eq(&other.a1)
    }
}

impl ConditionallySelectable for Fp2 {
    #[inline(always)]
    fn conditional_select(a: &Fp2, b: &Fp2, choice: Choice) -> Fp2 {
        Fp2 {
            a0: Fp::conditional_select(&a.a0, &b.a0, choice),
            a1: Fp::conditional_select(&a.a1, &b.a1, choice),
        }
    }
}

impl ConditionallyNegatable for Fp2 {
    fn conditional_negate(&mut self, choice: Choice) {
        let n = self.neg();
        self.conditional_assign(&n, choice);
    }
}

impl Zeroize for Fp2 {
    fn zeroize(&mut self) {
        self.a0.zeroize();
        self.a1.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: u128 = (1u128 << 127) - 1;

    fn fp2() -> impl Strategy<Value = Fp2> {
        (0..=P, 0..=P).prop_map(|(a, b)| Fp2 {
            a0: Fp::from_u128_reduced(a),
            a1: Fp::from_u128_reduced(b),
        })
    }

    fn eq(a: &Fp2, b: &Fp2) -> bool {
        bool::from(a.ct_eq(b))
    }

    proptest! {
        #[test]
        fn ring_laws(a in fp2(), b in fp2(), c in fp2()) {
            prop_assert!(eq(&a.add(&b), &b.add(&a)));
            prop_assert!(eq(&a.mul(&b), &b.mul(&a)));
            let m = a.mul(&b);
            prop_assert!(m.a0.to_u128() < (1u128 << 127) && m.a1.to_u128() < (1u128 << 127));
            prop_assert!(eq(&a.mul(&b).mul(&c), &a.mul(&b.mul(&c))));
            prop_assert!(eq(&a.mul(&b.add(&c)), &a.mul(&b).add(&a.mul(&c))));
            prop_assert!(eq(&a.sub(&b).add(&b), &a));
            prop_assert!(eq(&a.square(), &a.mul(&a)));
            prop_assert!(eq(&a.neg().add(&a), &Fp2::ZERO));
            prop_assert!(eq(&a.mul(&Fp2::ONE), &a));
        }

        #[test]
        fn inverse(a in fp2()) {
            prop_assume!(!bool::from(a.is_zero()));
            prop_assert!(eq(&a.mul(&a.invert()), &Fp2::ONE));
        }

        #[test]
        fn sqrt_of_square(a in fp2()) {
            let s = a.square();
            let (ok, r) = s.sqrt();
            prop_assert!(bool::from(ok));
            prop_assert!(eq(&r.square(), &s));
        }

        #[test]
        fn sqrt_ratio_of_squares(v in fp2(), y in fp2()) {
            prop_assume!(!bool::from(v.is_zero()));
            let u = v.mul(&y.square());
            let (ok, x) = Fp2::sqrt_ratio(&u, &v);
            prop_assert!(bool::from(ok));
            prop_assert!(eq(&x.square(), &y.square()));
        }

        #[test]
        fn bytes_round_trip(a in fp2()) {
            let b = a.to_bytes();
            let back = Option::<Fp2>::from(Fp2::from_bytes(&b)).unwrap();
            prop_assert!(eq(&back, &a));
            prop_assert_eq!(back.to_bytes(), b);
        }
    }

    #[test]
    fn i_squared_is_minus_one() {
        let i = Fp2 {
            a0: Fp::ZERO,
            a1: Fp::ONE,
        };
        assert!(eq(&i.square(), &Fp2::ONE.neg()));
        // Every element of GF(p) is a square in GF(p^2): −1 = i^2, and a non-square of GF(p).
        let (ok, r) = Fp2::ONE.neg().sqrt();
        assert!(bool::from(ok) && eq(&r.square(), &Fp2::ONE.neg()));
        let three = Fp2 {
            a0: Fp::from_u128(3),
            a1: Fp::ZERO,
        }
        .neg();
        let (ok, r) = three.sqrt();
        assert!(bool::from(ok) && eq(&r.square(), &three));
        let (ok, r) = Fp2::ZERO.sqrt();
        assert!(bool::from(ok) && bool::from(r.is_zero()));
    }

    #[test]
    fn non_squares_are_rejected() {
        // A non-square of GF(p^2) has a non-square norm; count roughly half rejected.
        let mut rejected = 0;
        for k in 1..200u128 {
            let a = Fp2 {
                a0: Fp::from_u128(k * 7919),
                a1: Fp::from_u128(k * k + 3),
            };
            let (ok, r) = a.sqrt();
            if bool::from(ok) {
                assert!(eq(&r.square(), &a));
            } else {
                rejected += 1;
            }
        }
        assert!((60..140).contains(&rejected), "{rejected}");
    }

    #[test]
    fn from_bytes_rejects_non_canonical() {
        let mut b = [0u8; 32];
        b[15] = 0x80;
        assert!(bool::from(Fp2::from_bytes(&b).is_none()));
        let mut b = [0xffu8; 32];
        b[15] = 0x7f;
        b[31] = 0x00;
        assert!(bool::from(Fp2::from_bytes(&b).is_none())); // a0 = p
    }
}
