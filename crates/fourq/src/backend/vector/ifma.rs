//! Eight FourQ points at once with AVX-512 IFMA: GF(p²) in radix 2^43, the CL15 point
//! formulas lane-wise, and three kernels built on them:
//!
//! * [`mul_lanes`]: `[k]P` (optionally `[k]([392]P)`) for eight points and one recoded scalar —
//!   φ, ψ and the 8-point table of [CL15, Alg. 2] per lane, then the 64 double-and-add steps
//!   with one digit sequence for all lanes ([FLS15] GLV-SAC recoding, done once);
//! * [`decode_mul_lanes`]: on-curve decoding (FourQlib's `decode`: `√(u/v)`, the sign of `x`, the
//!   curve equation) + cofactor clearing + the ladder, for received points;
//! * [`map_and_clear_lanes`]: FourQlib's `HashToCurve` map + cofactor clearing.
//!
//! The final normalisation (one inversion per chunk, Montgomery's trick) and the encoding run
//! on the serial side (`Point::batch_to_bytes`).
//!
//! This file holds the lane field (GF(p) and GF(p²) in radix 2⁴³) and the comparisons the
//! decoder and the hash map need; the point formulas and the three kernels are in
//! `kernels.rs`, shared with the AVX2 backend and compiled here with this backend's features.
//! The tests, shared too, are in `lane_tests.rs`.
//!
//! [CL15]: https://eprint.iacr.org/2015/565
//! [FLS15]: https://eprint.iacr.org/2013/158
//!
//! # Representation
//!
//! An element of GF(p), p = 2¹²⁷ − 1, is three limbs `l0 + l1·2⁴³ + l2·2⁸⁶` in three `__m512i`
//! (one lane per point). Radix 2⁴³ (three limbs span 129 bits) is chosen over 2⁵² because
//!
//! * `2¹²⁹ = 4·p + 4 ≡ 4 (mod p)`: the wrap-around is a shift by 2 that lands on a limb
//!   boundary (radix 2⁵² would wrap at bit 127 inside the third limb);
//! * `vpmadd52{lo,hi}uq` read 52 bits of each operand, so 43-bit limbs leave 5 bits of
//!   headroom: sums and differences of several field elements can be multiplied without a
//!   carry pass (the *lazy* bounds below).
//!
//! The product `a·b` is formed by 9 `madd52lo` and 9 `madd52hi` per GF(p) product: the low half
//! of `a_i·b_j` lands at bit `43(i+j)`, the high half at `43(i+j) + 52 = 43(i+j+1) + 9`, so the
//! high columns are shifted left by 9 into the next column and columns 3–5 (bits ≥ 129) fold
//! back into columns 0–2 with a factor 4. One carry pass (with the top carry again times 4)
//! gives limbs below `2⁴³ + 2¹⁷` ("normal form"). GF(p²) products use the schoolbook formula
//! with both products of each output coordinate accumulated before the single reduction:
//! `c0 = a0·b0 + a1·(128p − b1)`, `c1 = a0·b1 + a1·b0` (36 multiply-accumulates, 2 reductions).
//!
//! # Limb bounds (checked by `debug_assert`s in the test profile)
//!
//! * multiplication inputs: limbs `< 2⁴⁸` (`< 2⁴⁸ − 128` for the imaginary part of the second
//!   factor, which is negated), so every 52-bit IFMA operand is exact and the column sums stay
//!   below 2⁶⁰; outputs in normal form;
//! * squaring inputs: limbs `< 2⁴⁷ − 64`;
//! * `sub(a, b) = a + 64p − b` needs `b < 2⁴⁷ − 64` per limb; `neg(a) = 16p − a` needs
//!   `a < 2⁴⁵ − 16`. The point formulas are arranged (e.g. `2Z² + X² − Y²` instead of
//!   `2Z² − (Y² − X²)`) so that every subtrahend is a normal-form value or a sum of two.
//!
//! Nothing branches on or indexes by a value: the scalar's digits select table entries with
//! masks over all eight entries, and negation is a masked blend.

// Limb arithmetic: truncating casts between u64 and the i64 lanes of the intrinsics are meant.
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

use core::arch::x86_64::{
    __m512i, __mmask8, _mm256_extract_epi64, _mm512_add_epi64, _mm512_and_si512,
    _mm512_cmpeq_epi64_mask, _mm512_extracti64x4_epi64, _mm512_madd52hi_epu64,
    _mm512_madd52lo_epu64, _mm512_mask_blend_epi64, _mm512_or_si512, _mm512_set_epi64,
    _mm512_set1_epi64, _mm512_setzero_si512, _mm512_slli_epi64, _mm512_srli_epi64,
    _mm512_sub_epi64, _mm512_test_epi64_mask, _mm512_xor_si512,
};

use crate::backend::vector::ifma_set::enable;
use crate::constants::*;
use crate::field::{Fp, Fp2};
use crate::point::Point;
use crate::scalar_mul::Recoded;

/// Lanes per vector.
pub(crate) const LANES: usize = 8;

const M43: u64 = (1 << 43) - 1;
/// `64p = 2¹³³ − 64` as limbs `(2⁴⁷ − 64, 2⁴⁷ − 16, 2⁴⁷ − 16)`.
const P64: [u64; 3] = [(1 << 47) - 64, (1 << 47) - 16, (1 << 47) - 16];
/// `16p = 2¹³¹ − 16` as limbs `(2⁴⁵ − 16, 2⁴⁵ − 4, 2⁴⁵ − 4)`.
const P16: [u64; 3] = [(1 << 45) - 16, (1 << 45) - 4, (1 << 45) - 4];
/// `128p = 2¹³⁴ − 128` as limbs `(2⁴⁸ − 128, 2⁴⁸ − 32, 2⁴⁸ − 32)`.
const P128: [u64; 3] = [(1 << 48) - 128, (1 << 48) - 32, (1 << 48) - 32];

/// Eight elements of GF(p), one per lane, radix 2⁴³.
#[derive(Clone, Copy)]
struct Fe([__m512i; 3]);

/// Eight elements of GF(p²).
#[derive(Clone, Copy)]
struct Fe2 {
    a0: Fe,
    a1: Fe,
}

enable! {
    #[inline]
    fn splat(v: u64) -> __m512i {
        _mm512_set1_epi64(v as i64)
    }
}

enable! {
    #[inline]
    fn lanes(v: __m512i) -> [u64; 8] {
        let lo = _mm512_extracti64x4_epi64::<0>(v);
        let hi = _mm512_extracti64x4_epi64::<1>(v);
        [
            _mm256_extract_epi64::<0>(lo) as u64,
            _mm256_extract_epi64::<1>(lo) as u64,
            _mm256_extract_epi64::<2>(lo) as u64,
            _mm256_extract_epi64::<3>(lo) as u64,
            _mm256_extract_epi64::<0>(hi) as u64,
            _mm256_extract_epi64::<1>(hi) as u64,
            _mm256_extract_epi64::<2>(hi) as u64,
            _mm256_extract_epi64::<3>(hi) as u64,
        ]
    }
}

enable! {
    #[inline]
    fn from_lanes(v: [u64; 8]) -> __m512i {
        _mm512_set_epi64(
            v[7] as i64,
            v[6] as i64,
            v[5] as i64,
            v[4] as i64,
            v[3] as i64,
            v[2] as i64,
            v[1] as i64,
            v[0] as i64,
        )
    }
}

/// Limbs of a weakly reduced serial element (`≤ p`).
fn fp_limbs(a: &Fp) -> [u64; 3] {
    let v = a.to_u128();
    [(v as u64) & M43, ((v >> 43) as u64) & M43, (v >> 86) as u64]
}

/// A serial element from limbs below 2⁶⁰ (value reduced mod p into `[0, p]`).
fn fp_from_limbs(l: [u64; 3]) -> Fp {
    let (mut l0, mut l1, mut l2) = (l[0], l[1], l[2]);
    l1 += l0 >> 43;
    l0 &= M43;
    l2 += l1 >> 43;
    l1 &= M43;
    // Bits of l2 from 41 up sit at 2^127 and above: 2^127 ≡ 1.
    let top = l2 >> 41;
    l2 &= (1 << 41) - 1;
    let v = u128::from(l0) | (u128::from(l1) << 43) | (u128::from(l2) << 86);
    Fp::from_u128(v + u128::from(top))
}

impl Fe {
    enable! {
        #[inline]
        fn zero() -> Fe {
            Fe([_mm512_setzero_si512(); 3])
        }
    }

    enable! {
        /// The same serial element in every lane.
        #[inline]
        fn splat(a: &Fp) -> Fe {
            let l = fp_limbs(a);
            Fe([splat(l[0]), splat(l[1]), splat(l[2])])
        }
    }

    enable! {
        #[inline]
        fn from_serial(a: &[Fp; LANES]) -> Fe {
            let mut l = [[0u64; 8]; 3];
            for (i, x) in a.iter().enumerate() {
                let xl = fp_limbs(x);
                for k in 0..3 {
                    l[k][i] = xl[k];
                }
            }
            Fe([from_lanes(l[0]), from_lanes(l[1]), from_lanes(l[2])])
        }
    }

    enable! {
        #[inline]
        fn to_serial(self) -> [Fp; LANES] {
            let l = [lanes(self.0[0]), lanes(self.0[1]), lanes(self.0[2])];
            core::array::from_fn(|i| fp_from_limbs([l[0][i], l[1][i], l[2][i]]))
        }
    }

    enable! {
        /// Debug check: every limb of every lane below `bound`.
        #[inline]
        fn check(&self, bound: u64) {
            if cfg!(debug_assertions) {
                for l in self.0 {
                    for v in lanes(l) {
                        debug_assert!(v < bound, "limb {v:#x} not below {bound:#x}");
                    }
                }
            }
        }
    }

    enable! {
        #[inline]
        fn add(&self, b: &Fe) -> Fe {
            Fe([
                _mm512_add_epi64(self.0[0], b.0[0]),
                _mm512_add_epi64(self.0[1], b.0[1]),
                _mm512_add_epi64(self.0[2], b.0[2]),
            ])
        }
    }

    enable! {
        /// `a + 64p − b` (needs `b < 2⁴⁷ − 64` per limb).
        #[inline]
        fn sub(&self, b: &Fe) -> Fe {
            b.check(P64[0]);
            let r = Fe(core::array::from_fn(|k| {
                _mm512_sub_epi64(_mm512_add_epi64(self.0[k], splat(P64[k])), b.0[k])
            }));
            r.check(1 << 48);
            r
        }
    }

    enable! {
        /// `16p − a` (needs `a < 2⁴⁵ − 16` per limb).
        #[inline]
        fn neg(&self) -> Fe {
            self.check(P16[0]);
            Fe(core::array::from_fn(|k| {
                _mm512_sub_epi64(splat(P16[k]), self.0[k])
            }))
        }
    }

    enable! {
        /// `128p − a` (needs `a < 2⁴⁸ − 128`): only inside the multiplication.
        #[inline]
        fn neg_wide(&self) -> Fe {
            self.check(P128[0]);
            Fe(core::array::from_fn(|k| {
                _mm512_sub_epi64(splat(P128[k]), self.0[k])
            }))
        }
    }

    enable! {
        /// Carry pass: limbs below 2⁶⁰ in, normal form (`< 2⁴³ + 2¹⁷`) out, same value mod p.
        #[inline]
        fn carry(r: [__m512i; 3]) -> Fe {
            let m = splat(M43);
            let [mut r0, mut r1, mut r2] = r;
            r1 = _mm512_add_epi64(r1, _mm512_srli_epi64::<43>(r0));
            r0 = _mm512_and_si512(r0, m);
            r2 = _mm512_add_epi64(r2, _mm512_srli_epi64::<43>(r1));
            r1 = _mm512_and_si512(r1, m);
            // 2^129 ≡ 4 (mod p).
            r0 = _mm512_add_epi64(r0, _mm512_slli_epi64::<2>(_mm512_srli_epi64::<43>(r2)));
            r2 = _mm512_and_si512(r2, m);
            Fe([r0, r1, r2])
        }
    }

    enable! {
        #[inline]
        fn reduce(&self) -> Fe {
            Fe::carry(self.0)
        }
    }

    enable! {
        /// `a·b` in GF(p).
        #[inline]
        fn mul(&self, b: &Fe) -> Fe {
            let mut acc = Acc::new();
            acc.mac(self, b);
            acc.reduce()
        }
    }

    enable! {
        /// `a²` in GF(p) (the product: IFMA's nine multiply-accumulates leave little to save).
        #[inline]
        fn square(&self) -> Fe {
            self.mul(self)
        }
    }
}

/// Column accumulators of a product: `lo[k]` at bit `43k`, `hi[k]` at bit `43(k+1) + 9`.
struct Acc {
    lo: [__m512i; 5],
    hi: [__m512i; 5],
}

impl Acc {
    enable! {
        #[inline]
        fn new() -> Acc {
            Acc {
                lo: [_mm512_setzero_si512(); 5],
                hi: [_mm512_setzero_si512(); 5],
            }
        }
    }

    enable! {
        /// `acc += a·b` (limbs `< 2⁴⁸`; at most two products per accumulator).
        #[inline]
        fn mac(&mut self, a: &Fe, b: &Fe) {
            a.check(1 << 48);
            b.check(1 << 48);
            let [a0, a1, a2] = a.0;
            let [b0, b1, b2] = b.0;
            let l = &mut self.lo;
            l[0] = _mm512_madd52lo_epu64(l[0], a0, b0);
            l[1] = _mm512_madd52lo_epu64(l[1], a0, b1);
            l[1] = _mm512_madd52lo_epu64(l[1], a1, b0);
            l[2] = _mm512_madd52lo_epu64(l[2], a0, b2);
            l[2] = _mm512_madd52lo_epu64(l[2], a1, b1);
            l[2] = _mm512_madd52lo_epu64(l[2], a2, b0);
            l[3] = _mm512_madd52lo_epu64(l[3], a1, b2);
            l[3] = _mm512_madd52lo_epu64(l[3], a2, b1);
            l[4] = _mm512_madd52lo_epu64(l[4], a2, b2);
            let h = &mut self.hi;
            h[0] = _mm512_madd52hi_epu64(h[0], a0, b0);
            h[1] = _mm512_madd52hi_epu64(h[1], a0, b1);
            h[1] = _mm512_madd52hi_epu64(h[1], a1, b0);
            h[2] = _mm512_madd52hi_epu64(h[2], a0, b2);
            h[2] = _mm512_madd52hi_epu64(h[2], a1, b1);
            h[2] = _mm512_madd52hi_epu64(h[2], a2, b0);
            h[3] = _mm512_madd52hi_epu64(h[3], a1, b2);
            h[3] = _mm512_madd52hi_epu64(h[3], a2, b1);
            h[4] = _mm512_madd52hi_epu64(h[4], a2, b2);
        }
    }

    enable! {
        /// Fold the six columns into three (`2¹²⁹ ≡ 4`) and carry.
        ///
        /// With operands below 2⁴⁸ and two products: `lo` sums `< 6·2⁵²`, `hi` sums `< 6·2⁴⁴`,
        /// so every folded limb is below 2⁵⁹.
        #[inline]
        fn reduce(&self) -> Fe {
            let (l, h) = (&self.lo, &self.hi);
            let add = _mm512_add_epi64;
            let r0 = add(
                add(l[0], _mm512_slli_epi64::<2>(l[3])),
                _mm512_slli_epi64::<11>(h[2]),
            );
            let r1 = add(
                add(l[1], _mm512_slli_epi64::<9>(h[0])),
                add(_mm512_slli_epi64::<2>(l[4]), _mm512_slli_epi64::<11>(h[3])),
            );
            let r2 = add(
                add(l[2], _mm512_slli_epi64::<9>(h[1])),
                _mm512_slli_epi64::<11>(h[4]),
            );
            Fe::carry([r0, r1, r2])
        }
    }
}

/// The body of [`Fe2::mul`] and [`Fe2::mul_into`], an expression of type `Fe2` (a macro, so
/// that `mul_into` stores the result straight into its destination).
macro_rules! fe2_mul {
    ($a:expr, $b:expr) => {{
        let (a, b): (&Fe2, &Fe2) = ($a, $b);
        let nb1 = b.a1.neg_wide();
        let mut c0 = Acc::new();
        c0.mac(&a.a0, &b.a0);
        c0.mac(&a.a1, &nb1);
        let mut c1 = Acc::new();
        c1.mac(&a.a0, &b.a1);
        c1.mac(&a.a1, &b.a0);
        Fe2 {
            a0: c0.reduce(),
            a1: c1.reduce(),
        }
    }};
}

impl Fe2 {
    enable! {
        /// Schoolbook: `c0 = a0·b0 + a1·(128p − b1)`, `c1 = a0·b1 + a1·b0`, one reduction each.
        #[inline]
        fn mul(&self, b: &Fe2) -> Fe2 {
            fe2_mul!(self, b)
        }
    }

    enable! {
        /// `*out = a·b`: [`Fe2::mul`] storing into a place of the caller (a field of a point
        /// being built), where assigning `mul`'s result there goes through a copy.
        #[inline]
        fn mul_into(&self, b: &Fe2, out: &mut Fe2) {
            *out = fe2_mul!(self, b);
        }
    }

    enable! {
        /// `(a0 + a1)(a0 − a1) + 2·a0·a1·i` (limbs `< 2⁴⁷ − 64`).
        #[inline]
        fn square(&self) -> Fe2 {
            self.a0.check(P64[0]);
            let t1 = self.a0.add(&self.a1);
            let t2 = self.a0.sub(&self.a1);
            Fe2 {
                a0: t1.mul(&t2),
                a1: self.a0.add(&self.a0).mul(&self.a1),
            }
        }
    }
}

/// Does this CPU run this backend (every feature of `ifma_set`, none switched off)?
#[cfg(test)]
fn available() -> bool {
    crate::backend::vector::ifma_set::detected()
}

/// The vector type of this backend.
type V = __m512i;
/// Limbs per GF(p) element.
const LIMBS: usize = 3;
/// One bit per lane.
type Mask = __mmask8;
/// The table scan entry by entry: its 24-word accumulator fits in the 32 vector registers.
const LOOKUP_WORD_BY_WORD: bool = false;
/// Vectors per table entry: the words unpacked (52-bit limbs leave no room to pack two).
const ENTRY_WORDS: usize = 8 * LIMBS;

enable! {
    /// A table entry as stored: its words as they are.
    #[inline]
    fn pack_entry(w: &[V; 8 * LIMBS]) -> [V; ENTRY_WORDS] {
        *w
    }
}

enable! {
    /// The words of a stored table entry.
    #[inline]
    fn unpack_entry(e: &[V; ENTRY_WORDS]) -> [V; 8 * LIMBS] {
        *e
    }
}

enable! {
    #[inline]
    fn v_zero() -> V {
        _mm512_setzero_si512()
    }
}

enable! {
    #[inline]
    fn v_and(a: V, b: V) -> V {
        _mm512_and_si512(a, b)
    }
}

enable! {
    /// `a | (b & m)`: the table scan's step (see `kernels.rs`).
    #[inline]
    fn v_or_masked(a: V, b: V, m: V) -> V {
        _mm512_or_si512(a, _mm512_and_si512(b, m))
    }
}

enable! {
    #[inline]
    fn v_xor(a: V, b: V) -> V {
        _mm512_xor_si512(a, b)
    }
}

/// A GF(p) lane vector whose every operation returns normal form (the hash map and the decoder;
/// their shared operations are in `kernels.rs`).
#[derive(Clone, Copy)]
struct H(Fe);

impl H {
    enable! {
        /// The same value. The radix-2^25.5 backends hide loop-carried limbs from the optimiser
        /// here (their products are generic multiplications LLVM may widen); `vpmadd52luq` is an
        /// intrinsic it leaves as it is, so nothing is needed.
        #[inline]
        fn opaque(self) -> H {
            self
        }
    }

    enable! {
        /// The canonical representative in `[0, p − 1]`, limbs `(43, 43, 41)` bits.
        #[inline]
        fn canonical(&self) -> [__m512i; 3] {
            let m = splat(M43);
            let m41 = splat((1 << 41) - 1);
            let prop = |l: [__m512i; 3]| {
                let [mut l0, mut l1, mut l2] = l;
                l1 = _mm512_add_epi64(l1, _mm512_srli_epi64::<43>(l0));
                l0 = _mm512_and_si512(l0, m);
                l2 = _mm512_add_epi64(l2, _mm512_srli_epi64::<43>(l1));
                l1 = _mm512_and_si512(l1, m);
                [l0, l1, l2]
            };
            // Normal form, then all limbs below 2^43 (+1 on the top limb): value < 2^129 + 2^86.
            let l = prop(self.0.0);
            // Two folds of the bits from 127 up (2^127 ≡ 1) leave a value in [0, p].
            let fold = |l: [__m512i; 3]| {
                let top = _mm512_srli_epi64::<41>(l[2]);
                prop([
                    _mm512_add_epi64(l[0], top),
                    l[1],
                    _mm512_and_si512(l[2], m41),
                ])
            };
            let l = fold(fold(l));
            // p itself (all ones) is zero.
            let is_p = _mm512_cmpeq_epi64_mask(l[0], m)
                & _mm512_cmpeq_epi64_mask(l[1], m)
                & _mm512_cmpeq_epi64_mask(l[2], m41);
            let z = _mm512_setzero_si512();
            [
                _mm512_mask_blend_epi64(is_p, l[0], z),
                _mm512_mask_blend_epi64(is_p, l[1], z),
                _mm512_mask_blend_epi64(is_p, l[2], z),
            ]
        }
    }

    enable! {
        /// Lane mask of `a == b` (mod p).
        #[inline]
        fn ct_eq(&self, b: &H) -> __mmask8 {
            let (x, y) = (self.canonical(), b.canonical());
            _mm512_cmpeq_epi64_mask(x[0], y[0])
                & _mm512_cmpeq_epi64_mask(x[1], y[1])
                & _mm512_cmpeq_epi64_mask(x[2], y[2])
        }
    }

    enable! {
        /// `b` in the lanes where `c` is set, `a` elsewhere.
        #[inline]
        fn select(a: &H, b: &H, c: __mmask8) -> H {
            H(Fe(core::array::from_fn(|k| {
                _mm512_mask_blend_epi64(c, a.0.0[k], b.0.0[k])
            })))
        }
    }
}

enable! {
    /// Lane mask of `a == 0` (mod p).
    #[inline]
    fn is_zero(a: &H) -> __mmask8 {
        let c = a.canonical();
        let z = _mm512_setzero_si512();
        _mm512_cmpeq_epi64_mask(c[0], z)
            & _mm512_cmpeq_epi64_mask(c[1], z)
            & _mm512_cmpeq_epi64_mask(c[2], z)
    }
}

enable! {
    /// Lane mask of bit 126 of the canonical value (bit 40 of the top limb).
    #[inline]
    fn bit126(a: &H) -> __mmask8 {
        _mm512_test_epi64_mask(a.canonical()[2], splat(1 << 40))
    }
}

/// The formulas and kernels shared with the AVX2 backend, compiled for this one.
mod kernels {
    use super::*;
    include!("kernels.rs");
}

pub(crate) use kernels::{decode_mul_lanes, map_and_clear_lanes, mul_lanes};

#[cfg(test)]
mod tests {
    use super::kernels::*;
    use super::*;
    include!("lane_tests.rs");
}
