//! Eight elements of GF(2^255 − 19) in the lanes of AVX-512 registers: radix 2^51, five limbs,
//! limb `i` of all eight elements in one `__m512i`.
//!
//! The products follow curve25519-dalek's AVX-512 IFMA backend (`backend::vector::ifma::field`;
//! H. de Valence, "Accelerating Edwards curve arithmetic with parallel formulas", 2018):
//! `vpmadd52luq`/`vpmadd52huq` split each 51-bit × 51-bit limb product into its low 52 bits
//! (weight 1) and high part (weight `2^52 = 2·2^51`, one column up, doubled). Here the eight
//! lanes hold eight independent elements (dalek's four lanes hold the four coordinates of
//! one point), and the high columns are multiplied by 19 with shifts and additions
//! ([`mul19`]) instead of further IFMA products, which leaves the IFMA ports to the 25
//! (multiplication) or 15 (squaring) products.
//!
//! # Why radix 2^51 and not 2^52
//!
//! `vpmadd52{l,h}uq` multiply 52-bit operands, so limbs must stay below 2^52. With five
//! 51-bit limbs (255 bits) the wrap-around is `2^255 ≡ 19`, the products of the high half
//! come back with a factor 2 (`2^52 = 2·2^51`), and a reduced limb `< 2^51 + 2^18` leaves
//! room below 2^52; radix 2^52 would need `2^260 ≡ 608` and one bit less head-room.
//!
//! # Limb bounds
//!
//! A *reduced* element ([`F8`]) has every limb below `2^51 + 2^18` (`< 2^52`), which is what
//! [`F8::mul`] and [`F8::square`] require of their inputs. Every operation here returns a
//! reduced element: sums and differences are carried once (one parallel carry step, as in
//! dalek's `F51x4Unreduced → F51x4Reduced`), products are reduced after the IFMA schedule.
//! Differences add `16p` first (limbs `2^55 − 304`, `2^55 − 16`), which exceeds every
//! reduced limb, so no limb underflows. [`F8::freeze`] gives the canonical representative
//! (every limb `< 2^51`, value `< p`), needed for equality, sign and byte encoding.
#![allow(clippy::cast_possible_truncation)] // limb packing: truncation to 51/64 bits intended
#![allow(clippy::cast_possible_wrap)] // u64 bit patterns passed to _mm512_set1_epi64
#![allow(clippy::many_single_char_names)]

use core::arch::x86_64::{
    __m512i, __mmask8, _mm512_add_epi64, _mm512_and_si512, _mm512_cmpeq_epi64_mask,
    _mm512_madd52hi_epu64, _mm512_madd52lo_epu64, _mm512_mask_blend_epi64, _mm512_or_si512,
    _mm512_set_epi64, _mm512_set1_epi64, _mm512_setzero_si512, _mm512_slli_epi64,
    _mm512_srli_epi64, _mm512_storeu_si512, _mm512_sub_epi64, _mm512_test_epi64_mask,
};

const MASK51: u64 = (1 << 51) - 1;

/// Eight field elements, reduced (every limb below `2^51 + 2^18`).
#[derive(Clone, Copy)]
pub(crate) struct F8(pub(crate) [__m512i; 5]);

// SAFETY: five `__m512i`: all zeros is a valid value.
unsafe impl crate::wipe::ZeroBits for F8 {}

crate::cpu::ifma25519::enable! {
    #[inline]
    fn splat(x: u64) -> __m512i {
        _mm512_set1_epi64(x as i64)
    }

    #[inline]
    fn add(a: __m512i, b: __m512i) -> __m512i {
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

    /// One parallel carry step: limbs of up to 64 bits in, reduced limbs out (dalek's
    /// `From<F51x4Unreduced> for F51x4Reduced`): `c_i = x_i >> 51`, limb `i` keeps its low 51
    /// bits plus `c_{i−1}`, limb 0 gets `19·c_4`.
    #[inline]
    fn carry(x: [__m512i; 5]) -> F8 {
        let mask = splat(MASK51);
        let r19 = splat(19);
        let c0 = _mm512_srli_epi64::<51>(x[0]);
        let c1 = _mm512_srli_epi64::<51>(x[1]);
        let c2 = _mm512_srli_epi64::<51>(x[2]);
        let c3 = _mm512_srli_epi64::<51>(x[3]);
        let c4 = _mm512_srli_epi64::<51>(x[4]);
        F8([
            lo(_mm512_and_si512(x[0], mask), c4, r19),
            add(_mm512_and_si512(x[1], mask), c0),
            add(_mm512_and_si512(x[2], mask), c1),
            add(_mm512_and_si512(x[3], mask), c2),
            add(_mm512_and_si512(x[4], mask), c3),
        ])
    }

    /// `19·x` lane-wise as `x + 2x + 16x` (two shifts and two additions instead of a
    /// `vpmullq`, which may compete with the IFMA products for the multiplier ports; measured
    /// neutral here). `x` is a product column, below `15·2^52 < 2^56`: `19x < 2^60.3`, no
    /// overflow.
    #[inline]
    fn mul19(x: __m512i) -> __m512i {
        add(add(x, _mm512_slli_epi64::<1>(x)), _mm512_slli_epi64::<4>(x))
    }

    /// `rₖ = cₖ + 19·cₖ₊₅` for `k = 0…4` (`2^255 ≡ 19`), `19·c` by [`mul19`], then one
    /// carry step is left to the caller ([`U8`]). The columns `cₖ` (`k = 0…9`) must be below
    /// `15·2^52`, so that `rₖ < 300·2^52 < 2^60.3`.
    #[inline]
    fn fold(col: impl Fn(usize) -> __m512i) -> U8 {
        let r = |k: usize| add(col(k), mul19(col(k + 5)));
        U8([r(0), r(1), r(2), r(3), r(4)])
    }
}

/// Eight field elements with *unreduced* limbs below `300·2^52 < 2^60.3`: products before
/// their carry step. They are only combined linearly ([`U8::combine`]) and carried once, which
/// saves the carry step of every product that feeds an addition or subtraction.
#[derive(Clone, Copy)]
pub(crate) struct U8(pub(crate) [__m512i; 5]);

impl U8 {
    crate::cpu::ifma25519::enable! {
        /// `carry(Σ plus + 2^12·p − Σ minus)`, reduced; at most three terms in `plus` and two in
        /// `minus`.
        ///
        /// Bounds: `2^12·p` has limbs `2^63 − 19·2^12` and `2^63 − 2^12`, above `Σ minus < 2^61.3`,
        /// and `Σ plus + 2^12·p < 3·2^60.3 + 2^63 < 2^64`; the carry step of a 64-bit limb leaves
        /// it below `2^51 + 19·2^13`.
        #[inline]
        pub(crate) fn combine(plus: &[&U8], minus: &[&U8]) -> F8 {
            debug_assert!(plus.len() <= 3 && minus.len() <= 2);
            let k0 = splat((1u64 << 63) - 19 * (1 << 12));
            let ki = splat((1u64 << 63) - (1 << 12));
            let mut acc = [k0, ki, ki, ki, ki];
            for (i, a) in acc.iter_mut().enumerate() {
                for p in plus {
                    *a = add(*a, p.0[i]);
                }
                for m in minus {
                    *a = _mm512_sub_epi64(*a, m.0[i]);
                }
            }
            carry(acc)
        }

        /// The carried (reduced) value.
        #[inline]
        pub(crate) fn reduce(&self) -> F8 {
            carry(self.0)
        }
    }
}

/// The five folded, uncarried limbs of `x·y` (limbs below `2^60.3`; see [`F8::mul`]): one
/// body for [`F8::mul`] and [`F8::mul_nc`], so that `mul` carries the limbs in registers
/// rather than through the memory a call to `mul_nc` would return them in.
macro_rules! mul_columns {
    ($x:expr, $y:expr) => {{
        let x: &[__m512i; 5] = $x;
        let y: &[__m512i; 5] = $y;
        // Column by column (product scanning), the high columns first so that each low
        // column is folded as soon as it is complete: few accumulators live at once.
        let col = |k: usize| {
            let z = _mm512_setzero_si512();
            let (mut l, mut h) = (z, z);
            for i in k.saturating_sub(4)..=k.min(4) {
                l = lo(l, x[i], y[k - i]);
            }
            if k >= 1 {
                for i in (k - 1).saturating_sub(4)..=(k - 1).min(4) {
                    h = hi(h, x[i], y[k - 1 - i]);
                }
            }
            add(l, _mm512_slli_epi64::<1>(h))
        };
        let high = [col(5), col(6), col(7), col(8), col(9)];
        let r = |k: usize| add(col(k), mul19(high[k]));
        [r(0), r(1), r(2), r(3), r(4)]
    }};
}

impl F8 {
    crate::cpu::ifma25519::enable! {
        /// Every lane zero.
        #[inline]
        pub(crate) fn zero() -> Self {
            F8([_mm512_setzero_si512(); 5])
        }

        /// The same element (given by its five 51-bit limbs) in every lane.
        #[inline]
        pub(crate) fn splat(limbs: [u64; 5]) -> Self {
            F8([
                splat(limbs[0]),
                splat(limbs[1]),
                splat(limbs[2]),
                splat(limbs[3]),
                splat(limbs[4]),
            ])
        }

        /// Every lane one.
        #[inline]
        pub(crate) fn one() -> Self {
            Self::splat([1, 0, 0, 0, 0])
        }

        /// From per-lane limbs `limbs[i][lane]` (each below `2^52`).
        #[inline]
        pub(crate) fn from_limbs(limbs: &[[u64; 8]; 5]) -> Self {
            let v = |l: &[u64; 8]| {
                _mm512_set_epi64(
                    l[7] as i64,
                    l[6] as i64,
                    l[5] as i64,
                    l[4] as i64,
                    l[3] as i64,
                    l[2] as i64,
                    l[1] as i64,
                    l[0] as i64,
                )
            };
            F8([
                v(&limbs[0]),
                v(&limbs[1]),
                v(&limbs[2]),
                v(&limbs[3]),
                v(&limbs[4]),
            ])
        }

        /// The per-lane limbs `[i][lane]` (not normalised).
        #[inline]
        pub(crate) fn to_limbs(self) -> [[u64; 8]; 5] {
            let mut out = [[0u64; 8]; 5];
            for (o, v) in out.iter_mut().zip(self.0) {
                // SAFETY: `o` is 64 bytes of writable memory (`[u64; 8]`) and `storeu` has no
                // alignment requirement.
                unsafe { _mm512_storeu_si512(o.as_mut_ptr().cast(), v) };
            }
            out
        }

        /// Eight elements from 32-byte little-endian strings; bit 255 is ignored (as in
        /// RFC 7748 and dalek's `FieldElement::from_bytes`), values in `[p, 2^255)` are accepted
        /// unreduced (callers check canonicity where it matters).
        #[inline]
        pub(crate) fn from_bytes(bytes: &[[u8; 32]; 8]) -> Self {
            let mut limbs = [[0u64; 8]; 5];
            for (lane, b) in bytes.iter().enumerate() {
                let l = limbs_from_bytes(b);
                for i in 0..5 {
                    limbs[i][lane] = l[i];
                }
            }
            Self::from_limbs(&limbs)
        }

        /// The canonical 32-byte little-endian encodings of the eight elements.
        #[inline]
        pub(crate) fn to_bytes(self) -> [[u8; 32]; 8] {
            let l = self.freeze().to_limbs();
            let mut out = [[0u8; 32]; 8];
            for (lane, o) in out.iter_mut().enumerate() {
                *o = bytes_from_canonical_limbs([
                    l[0][lane], l[1][lane], l[2][lane], l[3][lane], l[4][lane],
                ]);
            }
            out
        }

        /// `a + b`.
        #[inline]
        pub(crate) fn add(&self, b: &F8) -> F8 {
            let a = &self.0;
            let b = &b.0;
            carry([
                add(a[0], b[0]),
                add(a[1], b[1]),
                add(a[2], b[2]),
                add(a[3], b[3]),
                add(a[4], b[4]),
            ])
        }

        /// `a − b`, computed as `a + 16p − b`.
        #[inline]
        pub(crate) fn sub(&self, b: &F8) -> F8 {
            let a = &self.0;
            let b = &b.0;
            let p0 = splat(36_028_797_018_963_664); // 16·(2^51 − 19)
            let pi = splat(36_028_797_018_963_952); // 16·(2^51 − 1)
            carry([
                _mm512_sub_epi64(add(a[0], p0), b[0]),
                _mm512_sub_epi64(add(a[1], pi), b[1]),
                _mm512_sub_epi64(add(a[2], pi), b[2]),
                _mm512_sub_epi64(add(a[3], pi), b[3]),
                _mm512_sub_epi64(add(a[4], pi), b[4]),
            ])
        }

        /// `−a`.
        #[inline]
        pub(crate) fn neg(&self) -> F8 {
            F8::zero().sub(self)
        }

        /// Lane-wise select: lane `i` of the result is `b`'s if bit `i` of `mask` is set, else `a`'s.
        #[inline]
        pub(crate) fn select(a: &F8, b: &F8, mask: __mmask8) -> F8 {
            F8([
                _mm512_mask_blend_epi64(mask, a.0[0], b.0[0]),
                _mm512_mask_blend_epi64(mask, a.0[1], b.0[1]),
                _mm512_mask_blend_epi64(mask, a.0[2], b.0[2]),
                _mm512_mask_blend_epi64(mask, a.0[3], b.0[3]),
                _mm512_mask_blend_epi64(mask, a.0[4], b.0[4]),
            ])
        }

        /// `−a` in the lanes selected by `mask`, `a` elsewhere.
        #[inline]
        pub(crate) fn cond_neg(&self, mask: __mmask8) -> F8 {
            F8::select(self, &self.neg(), mask)
        }

        /// The canonical representative: every limb below `2^51`, value below `p` (dalek's
        /// `FieldElement51::to_bytes` normalisation: one carry step, `q = ⌊(x + 19)/2^255⌋` by a
        /// carry chain, then `x + 19q` carried with the top bit dropped).
        #[inline]
        pub(crate) fn freeze(&self) -> F8 {
            let mask = splat(MASK51);
            let r = carry(self.0).0;
            let mut q = _mm512_srli_epi64::<51>(add(r[0], splat(19)));
            q = _mm512_srli_epi64::<51>(add(r[1], q));
            q = _mm512_srli_epi64::<51>(add(r[2], q));
            q = _mm512_srli_epi64::<51>(add(r[3], q));
            q = _mm512_srli_epi64::<51>(add(r[4], q));
            let mut l0 = lo(r[0], q, splat(19));
            let mut l1 = add(r[1], _mm512_srli_epi64::<51>(l0));
            l0 = _mm512_and_si512(l0, mask);
            let mut l2 = add(r[2], _mm512_srli_epi64::<51>(l1));
            l1 = _mm512_and_si512(l1, mask);
            let mut l3 = add(r[3], _mm512_srli_epi64::<51>(l2));
            l2 = _mm512_and_si512(l2, mask);
            let mut l4 = add(r[4], _mm512_srli_epi64::<51>(l3));
            l3 = _mm512_and_si512(l3, mask);
            l4 = _mm512_and_si512(l4, mask);
            F8([l0, l1, l2, l3, l4])
        }

        /// Lanes whose canonical value is odd ("negative" in RFC 9496 §4.1).
        #[inline]
        pub(crate) fn is_negative(&self) -> __mmask8 {
            _mm512_test_epi64_mask(self.freeze().0[0], splat(1))
        }

        /// Lanes equal to zero.
        #[inline]
        pub(crate) fn is_zero(&self) -> __mmask8 {
            let f = self.freeze().0;
            let or = _mm512_or_si512(
                _mm512_or_si512(f[0], f[1]),
                _mm512_or_si512(_mm512_or_si512(f[2], f[3]), f[4]),
            );
            _mm512_cmpeq_epi64_mask(or, _mm512_setzero_si512())
        }

        /// Lanes where `a = b`.
        #[inline]
        pub(crate) fn ct_eq(&self, b: &F8) -> __mmask8 {
            self.sub(b).is_zero()
        }

        /// `a·b`: the 25 partial products `xᵢ·yⱼ` split by IFMA into `lo52` (weight 1 at column
        /// `i + j`) and `hi52` (weight `2^52 = 2·2^51`, i.e. 2 at column `i + j + 1`), summed per
        /// column, then the columns 5…9 folded back with `2^255 ≡ 19` by shifts and adds, and one
        /// carry step.
        ///
        /// Bounds: inputs below `2^52` make every `lo52`/`hi52` term below `2^52`; a column holds at
        /// most 5 `lo` and 5 doubled `hi` terms, so `cₖ < 15·2^52 < 2^56`, and
        /// `cₖ + 19·cₖ₊₅ < 20·2^56 < 2^61` does not overflow 64 bits. The carry step then leaves
        /// limbs below `2^51 + 19·2^13`.
        #[inline(never)]
        pub(crate) fn mul(&self, rhs: &F8) -> F8 {
            carry(mul_columns!(&self.0, &rhs.0))
        }

        /// `c·a` for a small constant `c < 2^52` (the same in every lane), unreduced: each limb
        /// product `aᵢ·c` split by IFMA into `lo52` (column `i`) and `hi52` (column `i + 1`,
        /// weight 2), column 5 folded back with `2^255 ≡ 19`. For `c < 2^17` (the ladder's
        /// `a24 = 121665`) the limbs stay below `2^52 + 2^24`, far inside [`U8`]'s bound.
        #[inline]
        pub(crate) fn mul_small(&self, c: u64) -> U8 {
            let x = &self.0;
            let c = splat(c);
            let z = _mm512_setzero_si512();
            let h = |i: usize| _mm512_slli_epi64::<1>(hi(z, x[i], c));
            U8([
                lo(mul19(h(4)), x[0], c),
                lo(h(0), x[1], c),
                lo(h(1), x[2], c),
                lo(h(2), x[3], c),
                lo(h(3), x[4], c),
            ])
        }

        /// `a²`, reduced.
        #[inline]
        pub(crate) fn square(&self) -> F8 {
            self.square_nc().reduce()
        }

        /// [`F8::mul`] without the final carry step (limbs below `2^60.3`).
        #[inline]
        pub(crate) fn mul_nc(&self, rhs: &F8) -> U8 {
            U8(mul_columns!(&self.0, &rhs.0))
        }

        /// `a²`: the 15 distinct products, the off-diagonal ones counted twice (weights 2 and 4
        /// for `lo52` and `hi52`), then the same fold and carry as [`F8::mul`] (same bounds:
        /// a column holds at most the equivalent of 15 terms below `2^52`).
        #[inline]
        pub(crate) fn square_nc(&self) -> U8 {
            let x = &self.0;
            let z = _mm512_setzero_si512();
            let mut w1 = [z; 9]; // weight 1: lo52 of the squares xᵢ²
            let mut w2 = [z; 10]; // weight 2: hi52 of squares, lo52 of cross products
            let mut w4 = [z; 10]; // weight 4: hi52 of cross products
            for i in 0..5 {
                w1[2 * i] = lo(w1[2 * i], x[i], x[i]);
                w2[2 * i + 1] = hi(w2[2 * i + 1], x[i], x[i]);
                for j in i + 1..5 {
                    w2[i + j] = lo(w2[i + j], x[i], x[j]);
                    w4[i + j + 1] = hi(w4[i + j + 1], x[i], x[j]);
                }
            }
            let col = |k: usize| {
                let t = add(_mm512_slli_epi64::<1>(w2[k]), _mm512_slli_epi64::<2>(w4[k]));
                if k < 9 { add(w1[k], t) } else { t }
            };
            fold(col)
        }

        /// `a^(p − 2) = a^{−1}` (`0` for `0`).
        pub(crate) fn invert(&self) -> F8 {
            let (t19, t3) = pow22501_n(&[*self]);
            let t = pow2k_n(&t19, 5);
            t[0].mul(&t3[0])
        }

        /// RFC 9496 §4.2 `SQRT_RATIO_M1(u, v)` (dalek's `FieldElement::sqrt_ratio_i`): the lanes
        /// where `u/v` is a non-zero square (or `u = 0`), and the non-negative `r` with
        /// `r² = u/v`, or `r² = i·u/v` where `u/v` is not a square.
        #[cfg(test)]
        pub(crate) fn sqrt_ratio_i(u: &F8, v: &F8) -> (__mmask8, F8) {
            let (m, r) = sqrt_ratio_i_n(&[*u], &[*v]);
            (m[0], r[0])
        }
    }
}

crate::cpu::ifma25519::enable! {
    /// `aⱼ²` for each of `N` independent vectors: the `N` squarings stand side by side in the
    /// instruction stream, so that one chain's IFMA latency (a squaring depends on the previous
    /// one in an exponentiation) is hidden behind the others' products.
    #[inline]
    pub(crate) fn square_n<const N: usize>(a: &[F8; N]) -> [F8; N] {
        let mut o = *a;
        for (o, a) in o.iter_mut().zip(a) {
            *o = a.square();
        }
        o
    }

    /// `aⱼ·bⱼ` for each of `N` independent vectors (see [`square_n`]).
    #[inline]
    pub(crate) fn mul_n<const N: usize>(a: &[F8; N], b: &[F8; N]) -> [F8; N] {
        let mut o = *a;
        for ((o, a), b) in o.iter_mut().zip(a).zip(b) {
            *o = a.mul(b);
        }
        o
    }

    /// `aⱼ^(2^k)` for `k ≥ 1`, the `N` chains interleaved.
    #[inline]
    pub(crate) fn pow2k_n<const N: usize>(a: &[F8; N], k: u32) -> [F8; N] {
        let mut t = square_n(a);
        for _ in 1..k {
            t = square_n(&t);
        }
        t
    }

    /// `aⱼ^(2^250 − 1)` and `aⱼ^11` (dalek's addition chain `FieldElement::pow22501`: 249
    /// squarings and 10 multiplications per chain), `N` chains interleaved.
    pub(crate) fn pow22501_n<const N: usize>(a: &[F8; N]) -> ([F8; N], [F8; N]) {
        let t0 = square_n(a);
        let t1 = pow2k_n(&t0, 2);
        let t2 = mul_n(a, &t1);
        let t3 = mul_n(&t0, &t2);
        let t4 = square_n(&t3);
        let t5 = mul_n(&t2, &t4);
        let t6 = pow2k_n(&t5, 5);
        let t7 = mul_n(&t6, &t5);
        let t8 = pow2k_n(&t7, 10);
        let t9 = mul_n(&t8, &t7);
        let t10 = pow2k_n(&t9, 20);
        let t11 = mul_n(&t10, &t9);
        let t12 = pow2k_n(&t11, 10);
        let t13 = mul_n(&t12, &t7);
        let t14 = pow2k_n(&t13, 50);
        let t15 = mul_n(&t14, &t13);
        let t16 = pow2k_n(&t15, 100);
        let t17 = mul_n(&t16, &t15);
        let t18 = pow2k_n(&t17, 50);
        let t19 = mul_n(&t18, &t13);
        (t19, t3)
    }

    /// RFC 9496 §4.2 `SQRT_RATIO_M1(uⱼ, vⱼ)` (dalek's `FieldElement::sqrt_ratio_i`) for `N`
    /// independent vectors, the exponentiations interleaved: per vector the lanes where `u/v` is
    /// a non-zero square (or `u = 0`), and the non-negative `r` with `r² = u/v`, or `r² = i·u/v`
    /// where `u/v` is not a square. Per lane: 254 squarings and 19 multiplications (`u = 1`
    /// costs the same; the three products by `u` are a small share).
    #[allow(clippy::needless_range_loop)] // parallel per-group arrays, indexed together
    pub(crate) fn sqrt_ratio_i_n<const N: usize>(u: &[F8; N], v: &[F8; N]) -> ([__mmask8; N], [F8; N]) {
        let v3 = mul_n(&square_n(v), v);
        let v7 = mul_n(&square_n(&v3), v);
        let uv3 = mul_n(u, &v3);
        let uv7 = mul_n(u, &v7);
        // (u·v^7)^((p − 5)/8) = (u·v^7)^(2^252 − 3).
        let (t19, _) = pow22501_n(&uv7);
        let p58 = mul_n(&uv7, &pow2k_n(&t19, 2));
        let r = mul_n(&uv3, &p58);
        let check = mul_n(v, &square_n(&r));
        let i = F8::splat(SQRT_M1);
        let mut ok = [0; N];
        let mut out = r;
        for j in 0..N {
            let neg_u = u[j].neg();
            let correct_sign = check[j].ct_eq(&u[j]);
            let flipped_sign = check[j].ct_eq(&neg_u);
            let flipped_sign_i = check[j].ct_eq(&neg_u.mul(&i));
            let r_prime = i.mul(&r[j]);
            let rj = F8::select(&r[j], &r_prime, flipped_sign | flipped_sign_i);
            out[j] = rj.cond_neg(rj.is_negative());
            ok[j] = correct_sign | flipped_sign;
        }
        (ok, out)
    }
}

/// The five 51-bit limbs of a 32-byte little-endian string (bit 255 ignored).
pub(crate) fn limbs_from_bytes(b: &[u8; 32]) -> [u64; 5] {
    let load8 = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(w)
    };
    [
        load8(0) & MASK51,
        (load8(6) >> 3) & MASK51,
        (load8(12) >> 6) & MASK51,
        (load8(19) >> 1) & MASK51,
        (load8(24) >> 12) & MASK51,
    ]
}

/// 32 little-endian bytes of a value given by five limbs below `2^51`.
pub(crate) fn bytes_from_canonical_limbs(l: [u64; 5]) -> [u8; 32] {
    let w = [
        l[0] | (l[1] << 51),
        (l[1] >> 13) | (l[2] << 38),
        (l[2] >> 26) | (l[3] << 25),
        (l[3] >> 39) | (l[4] << 12),
    ];
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(8).zip(w) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// `d = −121665/121666` (dalek `EDWARDS_D`).
pub(crate) const EDWARDS_D: [u64; 5] = [
    929_955_233_495_203,
    466_365_720_129_213,
    1_662_059_464_998_953,
    2_033_849_074_728_123,
    1_442_794_654_840_575,
];
/// `2d` (dalek `EDWARDS_D2`).
pub(crate) const EDWARDS_D2: [u64; 5] = [
    1_859_910_466_990_425,
    932_731_440_258_426,
    1_072_319_116_312_658,
    1_815_898_335_770_999,
    633_789_495_995_903,
];
/// `√−1` (dalek `SQRT_M1`).
pub(crate) const SQRT_M1: [u64; 5] = [
    1_718_705_420_411_056,
    234_908_883_556_509,
    2_233_514_472_574_048,
    2_117_202_627_021_982,
    765_476_049_583_133,
];
/// `1/√(a − d)` (dalek `INVSQRT_A_MINUS_D`).
pub(crate) const INVSQRT_A_MINUS_D: [u64; 5] = [
    278_908_739_862_762,
    821_645_201_101_625,
    8_113_234_426_968,
    1_777_959_178_193_151,
    2_118_520_810_568_447,
];
/// `(1 − d)²` (dalek `ONE_MINUS_EDWARDS_D_SQUARED`).
pub(crate) const ONE_MINUS_D_SQ: [u64; 5] = [
    1_136_626_929_484_150,
    1_998_550_399_581_263,
    496_427_632_559_748,
    118_527_312_129_759,
    45_110_755_273_534,
];
/// `(d − 1)²` (dalek `EDWARDS_D_MINUS_ONE_SQUARED`).
pub(crate) const D_MINUS_ONE_SQ: [u64; 5] = [
    1_507_062_230_895_904,
    1_572_317_787_530_805,
    683_053_064_812_840,
    317_374_165_784_489,
    1_572_899_562_415_810,
];
/// `√(a·d − 1)` (dalek `SQRT_AD_MINUS_ONE`).
pub(crate) const SQRT_AD_MINUS_ONE: [u64; 5] = [
    2_241_493_124_984_347,
    425_987_919_032_274,
    2_207_028_919_301_688,
    1_220_490_630_685_848,
    974_799_131_293_748,
];
