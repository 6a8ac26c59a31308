//! Eight elements of a 256-bit prime field `GF(p)` in the lanes of AVX-512 registers:
//! Montgomery form with `R = 2^260`, radix `2^52`, five limbs, limb `i` of all eight elements
//! in one `__m512i`. The prime is a parameter ([`Params`]: SM2, P-256, secp256k1).
//!
//! # Representation and bounds
//!
//! An element `a` ([`F8`]) is held as `a·R mod p` plus possibly one extra `p`: every limb is
//! *normalised* (below `2^52`, which is what `vpmadd52{l,h}uq` read) and the value is below
//! `2p` (`< 2^257`). Every operation takes and returns elements in this form:
//!
//! * [`F8::mul`]: operand-scanning Montgomery multiplication (one 52-bit digit of `b` per
//!   round: `t += a·b_i`, `m = −t_0·p^{-1} mod 2^52`, `t += m·p`, shift by one limb). With
//!   `a, b < 2p` the result `(ab + Mp)/2^260` is below `4p²/2^260 + p < 2^254 + p < 2p`
//!   (`p > 2^255`), so no final subtraction is needed. Column sums stay below
//!   `20·2^52 < 2^57`: no overflow of the 64-bit lanes.
//! * [`F8::add`], [`F8::sub`]: the sum `a + b` or `a + 2p − b` lies in `[0, 4p)`; the limbs are
//!   carried (signed shifts), `2p` is subtracted and the result kept when it is non-negative
//!   (sign of the top limb, a lane mask: no branch).
//! * [`F8::freeze`]: the canonical representative `< p`, for equality, sign and encoding.
//!
//! The reduction for `p ≡ −1 (mod 2^52)` (SM2, P-256) needs no multiplication for `m`
//! (`−p^{-1} ≡ 1`); for other odd `p` (secp256k1) `m = t_0·(−p^{-1}) mod 2^52` is one more
//! `vpmadd52luq` per round. All constants (`2p`, `R mod p`, `R² mod p`, `−p^{-1}`) are
//! computed from `p` at compile time.
#![allow(clippy::cast_possible_truncation)] // limb packing: truncation to 52/64 bits intended
#![allow(clippy::cast_possible_wrap)] // u64 bit patterns passed to _mm512_set1_epi64

use crate::fastmul::Params;
use core::arch::x86_64::{
    __m512i, __mmask8, _mm512_add_epi64, _mm512_and_si512, _mm512_cmpeq_epi64_mask,
    _mm512_cmplt_epi64_mask, _mm512_loadu_si512, _mm512_madd52hi_epu64, _mm512_madd52lo_epu64,
    _mm512_mask_blend_epi64, _mm512_or_si512, _mm512_set1_epi64, _mm512_setzero_si512,
    _mm512_srai_epi64, _mm512_srli_epi64, _mm512_storeu_si512, _mm512_sub_epi64,
};
use core::marker::PhantomData;

/// `2^52 − 1`.
pub(crate) const M52: u64 = (1 << 52) - 1;

/// Four little-endian 64-bit limbs to five 52-bit limbs.
pub(crate) const fn to52(x: [u64; 4]) -> [u64; 5] {
    [
        x[0] & M52,
        ((x[0] >> 52) | (x[1] << 12)) & M52,
        ((x[1] >> 40) | (x[2] << 24)) & M52,
        ((x[2] >> 28) | (x[3] << 36)) & M52,
        x[3] >> 16,
    ]
}

/// Five 52-bit limbs (value below `2^256`) to four little-endian 64-bit limbs.
pub(crate) const fn from52(x: [u64; 5]) -> [u64; 4] {
    [
        x[0] | (x[1] << 52),
        (x[1] >> 12) | (x[2] << 40),
        (x[2] >> 24) | (x[3] << 28),
        (x[3] >> 36) | (x[4] << 16),
    ]
}

/// `a ≥ b` on four-limb integers.
const fn geq(a: [u64; 4], b: [u64; 4]) -> bool {
    let mut i = 4;
    while i > 0 {
        i -= 1;
        if a[i] != b[i] {
            return a[i] > b[i];
        }
    }
    true
}

/// `a − b mod 2^256`.
const fn sub4(a: [u64; 4], b: [u64; 4]) -> [u64; 4] {
    let mut r = [0u64; 4];
    let mut borrow = 0u64;
    let mut i = 0;
    while i < 4 {
        let (d, b1) = a[i].overflowing_sub(b[i]);
        let (d, b2) = d.overflowing_sub(borrow);
        r[i] = d;
        borrow = (b1 | b2) as u64;
        i += 1;
    }
    r
}

/// `2^e mod p` for `2^255 < p < 2^256` (compile time only).
const fn pow2_mod(e: u32, p: [u64; 4]) -> [u64; 4] {
    let mut x = [1u64, 0, 0, 0];
    let mut k = 0;
    while k < e {
        let top = x[3] >> 63;
        x = [
            x[0] << 1,
            (x[1] << 1) | (x[0] >> 63),
            (x[2] << 1) | (x[1] >> 63),
            (x[3] << 1) | (x[2] >> 63),
        ];
        if top == 1 || geq(x, p) {
            x = sub4(x, p);
        }
        k += 1;
    }
    x
}

/// `−p_0^{-1} mod 2^52` (Newton iteration; `p_0` odd).
const fn neg_inv52(p0: u64) -> u64 {
    let mut inv = p0; // correct to 3 bits
    let mut i = 0;
    while i < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(p0.wrapping_mul(inv)));
        i += 1;
    }
    inv.wrapping_neg() & M52
}

/// The radix-2^52 constants of a field.
pub(crate) struct K52 {
    /// `p`.
    p: [u64; 5],
    /// `2p`.
    two_p: [u64; 5],
    /// `−p^{-1} mod 2^52`.
    pinv: u64,
    /// `R² mod p`, `R = 2^260`.
    r2: [u64; 5],
    /// `R mod p`.
    one: [u64; 5],
}

impl K52 {
    const fn new(p: [u64; 4]) -> Self {
        let p5 = to52(p);
        // 2p < 2^257: limb-wise doubling, then one carry pass.
        let mut two_p = [0u64; 5];
        let mut c = 0u64;
        let mut i = 0;
        while i < 5 {
            let v = 2 * p5[i] + c;
            two_p[i] = if i < 4 { v & M52 } else { v };
            c = v >> 52;
            i += 1;
        }
        K52 {
            p: p5,
            two_p,
            pinv: neg_inv52(p[0]),
            r2: to52(pow2_mod(520, p)),
            one: to52(pow2_mod(260, p)),
        }
    }
}

/// The radix-2^52 constants of a [`Params`] field.
pub(crate) trait Field52: Params {
    /// Derived from [`Params::P`] at compile time.
    const K: K52 = K52::new(Self::P);
}
impl<C: Params> Field52 for C {}

/// A lane mask: bit `i` for lane `i`.
pub(crate) type Mask = __mmask8;

crate::cpu::ifma_weierstrass::enable! {
    #[inline]
    pub(crate) fn splat(x: u64) -> __m512i {
        _mm512_set1_epi64(x as i64)
    }

    #[inline]
    fn add64(a: __m512i, b: __m512i) -> __m512i {
        _mm512_add_epi64(a, b)
    }

    #[inline]
    fn lo(z: __m512i, x: __m512i, y: __m512i) -> __m512i {
        _mm512_madd52lo_epu64(z, x, y)
    }

    #[inline]
    fn hi(z: __m512i, x: __m512i, y: __m512i) -> __m512i {
        _mm512_madd52hi_epu64(z, x, y)
    }

    /// Carry limbs 0..3 into the next (signed shifts: limbs may be negative, the value must not).
    #[inline]
    fn carry_signed(mut t: [__m512i; 5]) -> [__m512i; 5] {
        let mask = splat(M52);
        for i in 0..4 {
            let c = _mm512_srai_epi64::<52>(t[i]);
            t[i] = _mm512_and_si512(t[i], mask);
            t[i + 1] = add64(t[i + 1], c);
        }
        t
    }

    /// Carry unsigned limbs (below `2^63`).
    #[inline]
    fn carry_unsigned(mut t: [__m512i; 5]) -> [__m512i; 5] {
        let mask = splat(M52);
        for i in 0..4 {
            let c = _mm512_srli_epi64::<52>(t[i]);
            t[i] = _mm512_and_si512(t[i], mask);
            t[i + 1] = add64(t[i + 1], c);
        }
        t
    }

    /// Value `v ∈ [0, 2q)` with arbitrary signed limbs → normalised `v mod q`... precisely: `v − q`
    /// if that is non-negative, else `v`, normalised.
    #[inline]
    fn reduce_below(s: [__m512i; 5], q: &[u64; 5]) -> [__m512i; 5] {
        let n = carry_signed(s);
        let mut d = n;
        for i in 0..5 {
            d[i] = _mm512_sub_epi64(d[i], splat(q[i]));
        }
        let d = carry_signed(d);
        let neg = _mm512_cmplt_epi64_mask(d[4], _mm512_setzero_si512());
        let mut r = d;
        for i in 0..5 {
            r[i] = _mm512_mask_blend_epi64(neg, d[i], n[i]);
        }
        r
    }
}

/// Eight elements of `GF(p)`, Montgomery form (`R = 2^260`), normalised limbs, value `< 2p`.
#[derive(Clone, Copy)]
pub(crate) struct F8<C>(pub(crate) [__m512i; 5], PhantomData<C>);

impl<C: Params> F8<C> {
    crate::cpu::ifma_weierstrass::enable! {
        /// All lanes `x` (already in the internal form: normalised limbs, `< 2p`).
        #[inline]
        pub(crate) fn splat_raw(x: [u64; 5]) -> Self {
            F8(
                [
                    splat(x[0]),
                    splat(x[1]),
                    splat(x[2]),
                    splat(x[3]),
                    splat(x[4]),
                ],
                PhantomData,
            )
        }

        /// Zero in every lane.
        #[inline]
        pub(crate) fn zero() -> Self {
            Self::splat_raw([0; 5])
        }

        /// One in every lane.
        #[inline]
        pub(crate) fn one() -> Self {
            Self::splat_raw(C::K.one)
        }

        /// The plain value `x < 2^256` (little-endian 64-bit limbs) in every lane, to Montgomery
        /// form.
        #[inline]
        pub(crate) fn constant(x: [u64; 4]) -> Self {
            Self::splat_raw(to52(x)).mul(&Self::splat_raw(C::K.r2))
        }

        /// Eight plain values `< 2^256` (little-endian 64-bit limbs), one per lane, to Montgomery
        /// form.
        #[inline]
        pub(crate) fn from_lanes(lanes: &[[u64; 4]; 8]) -> Self {
            let mut limbs = [[0u64; 8]; 5];
            for (l, x) in lanes.iter().enumerate() {
                for (i, v) in to52(*x).into_iter().enumerate() {
                    limbs[i][l] = v;
                }
            }
            // SAFETY: each `limbs[i]` is 64 readable bytes; `loadu` has no alignment requirement.
            let v = limbs.map(|a| unsafe { _mm512_loadu_si512(a.as_ptr().cast()) });
            F8(v, PhantomData).mul(&Self::splat_raw(C::K.r2))
        }

        /// The canonical plain values (`< p`, little-endian 64-bit limbs) of the eight lanes.
        #[inline]
        pub(crate) fn to_lanes(self) -> [[u64; 4]; 8] {
            let plain = self.mul(&Self::splat_raw([1, 0, 0, 0, 0])).freeze();
            let mut limbs = [[0u64; 8]; 5];
            for (i, a) in limbs.iter_mut().enumerate() {
                // SAFETY: `a` is 64 writable bytes; `storeu` has no alignment requirement.
                unsafe { _mm512_storeu_si512(a.as_mut_ptr().cast(), plain.0[i]) };
            }
            let mut out = [[0u64; 4]; 8];
            for (l, o) in out.iter_mut().enumerate() {
                *o = from52([
                    limbs[0][l],
                    limbs[1][l],
                    limbs[2][l],
                    limbs[3][l],
                    limbs[4][l],
                ]);
            }
            out
        }

        /// Montgomery product `a·b·2^{-260} mod p` (see the module docs for the bounds).
        #[inline]
        pub(crate) fn mul(&self, rhs: &Self) -> Self {
            let k = &C::K;
            let (a, b) = (&self.0, &rhs.0);
            let p = [
                splat(k.p[0]),
                splat(k.p[1]),
                splat(k.p[2]),
                splat(k.p[3]),
                splat(k.p[4]),
            ];
            let z = _mm512_setzero_si512();
            let mut t = [z; 6];
            for &bi in b {
                for j in 0..5 {
                    t[j] = lo(t[j], a[j], bi);
                }
                for j in 0..5 {
                    t[j + 1] = hi(t[j + 1], a[j], bi);
                }
                let m = if k.pinv == 1 {
                    _mm512_and_si512(t[0], splat(M52))
                } else {
                    lo(z, t[0], splat(k.pinv))
                };
                for j in 0..5 {
                    t[j] = lo(t[j], m, p[j]);
                }
                for j in 0..5 {
                    t[j + 1] = hi(t[j + 1], m, p[j]);
                }
                // t_0 ≡ 0 (mod 2^52): shift down one limb, carrying its high part.
                let c = _mm512_srli_epi64::<52>(t[0]);
                t = [add64(t[1], c), t[2], t[3], t[4], t[5], z];
            }
            F8(carry_unsigned([t[0], t[1], t[2], t[3], t[4]]), PhantomData)
        }

        /// `a²`: product scanning with each cross product `a_i·a_j` (`i < j`) computed once and
        /// doubled (15 instead of 25 limb products), then five Montgomery reduction rounds on the
        /// ten columns. Same bounds as [`F8::mul`]: columns below `2·10·2^52 + 2^57 < 2^58`.
        #[inline]
        pub(crate) fn square(&self) -> Self {
            let k = &C::K;
            let a = &self.0;
            let z = _mm512_setzero_si512();
            // Cross products into `c`, squares into `s`; column `i + j` gets the low half and
            // column `i + j + 1` the high half.
            let mut c = [z; 10];
            let mut s = [z; 10];
            for i in 0..5 {
                s[2 * i] = lo(s[2 * i], a[i], a[i]);
                s[2 * i + 1] = hi(s[2 * i + 1], a[i], a[i]);
                for j in i + 1..5 {
                    c[i + j] = lo(c[i + j], a[i], a[j]);
                    c[i + j + 1] = hi(c[i + j + 1], a[i], a[j]);
                }
            }
            let mut t = [z; 10];
            for i in 0..10 {
                t[i] = add64(add64(c[i], c[i]), s[i]);
            }
            let p = [
                splat(k.p[0]),
                splat(k.p[1]),
                splat(k.p[2]),
                splat(k.p[3]),
                splat(k.p[4]),
            ];
            for i in 0..5 {
                let m = if k.pinv == 1 {
                    _mm512_and_si512(t[i], splat(M52))
                } else {
                    lo(z, t[i], splat(k.pinv))
                };
                for j in 0..5 {
                    t[i + j] = lo(t[i + j], m, p[j]);
                }
                for j in 0..5 {
                    t[i + j + 1] = hi(t[i + j + 1], m, p[j]);
                }
                // t_i ≡ 0 (mod 2^52): carry its high part into the next column.
                let cy = _mm512_srli_epi64::<52>(t[i]);
                t[i + 1] = add64(t[i + 1], cy);
            }
            F8(carry_unsigned([t[5], t[6], t[7], t[8], t[9]]), PhantomData)
        }

        /// `a + b`.
        #[inline]
        pub(crate) fn add(&self, rhs: &Self) -> Self {
            let mut s = self.0;
            for (si, r) in s.iter_mut().zip(rhs.0) {
                *si = add64(*si, r);
            }
            F8(reduce_below(s, &C::K.two_p), PhantomData)
        }

        /// `a − b` (computed as `a + 2p − b ∈ (0, 4p)`).
        #[inline]
        pub(crate) fn sub(&self, rhs: &Self) -> Self {
            let mut s = self.0;
            for (i, si) in s.iter_mut().enumerate() {
                *si = _mm512_sub_epi64(add64(*si, splat(C::K.two_p[i])), rhs.0[i]);
            }
            F8(reduce_below(s, &C::K.two_p), PhantomData)
        }

        /// `2a`.
        #[inline]
        pub(crate) fn double(&self) -> Self {
            self.add(self)
        }

        /// `−a`.
        #[inline]
        pub(crate) fn neg(&self) -> Self {
            Self::zero().sub(self)
        }

        /// The canonical representative (`< p`) of the Montgomery value.
        #[inline]
        pub(crate) fn freeze(&self) -> Self {
            F8(reduce_below(self.0, &C::K.p), PhantomData)
        }

        /// Lanes equal to zero.
        #[inline]
        pub(crate) fn is_zero(&self) -> Mask {
            let f = self.freeze().0;
            let o = _mm512_or_si512(
                _mm512_or_si512(f[0], f[1]),
                _mm512_or_si512(_mm512_or_si512(f[2], f[3]), f[4]),
            );
            _mm512_cmpeq_epi64_mask(o, _mm512_setzero_si512())
        }

        /// Lanes where `a = b`.
        #[inline]
        pub(crate) fn eq(&self, rhs: &Self) -> Mask {
            self.sub(rhs).is_zero()
        }

        /// Lanes whose canonical plain value is odd (`sgn0` of RFC 9380 §4.1).
        #[inline]
        pub(crate) fn sgn0(&self) -> Mask {
            let plain = self.mul(&Self::splat_raw([1, 0, 0, 0, 0])).freeze();
            let one = splat(1);
            _mm512_cmpeq_epi64_mask(_mm512_and_si512(plain.0[0], one), one)
        }

        /// Lane-wise `if m { b } else { a }`.
        #[inline]
        pub(crate) fn select(m: Mask, a: &Self, b: &Self) -> Self {
            let mut r = a.0;
            for (i, ri) in r.iter_mut().enumerate() {
                *ri = _mm512_mask_blend_epi64(m, a.0[i], b.0[i]);
            }
            F8(r, PhantomData)
        }

        /// `a^e` for a public exponent `e` (little-endian limbs): fixed 4-bit window.
        #[inline]
        pub(crate) fn pow_public(&self, e: &[u64; 4]) -> Self {
            let mut table = [Self::one(); 16];
            table[1] = *self;
            for i in 2..16 {
                table[i] = table[i - 1].mul(self);
            }
            let mut r = Self::one();
            for i in (0..64).rev() {
                if i != 63 {
                    r = r.square().square().square().square();
                }
                // A nibble of the public exponent.
                let nib = ((e[i / 16] >> (4 * (i % 16))) & 15) as usize;
                if nib != 0 {
                    r = r.mul(&table[nib]);
                }
            }
            r
        }

        /// `a^{-1}` (`a^{p−2}`; zero maps to zero).
        #[inline]
        pub(crate) fn invert(&self) -> Self {
            let mut e = C::P;
            e[0] -= 2; // p odd and > 2: no borrow
            self.pow_public(&e)
        }
    }
}
