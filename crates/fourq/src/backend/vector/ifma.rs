//! Eight FourQ points at once with AVX-512 IFMA: GF(p²) in radix 2^43, the CL15 point
//! formulas lane-wise, and three kernels built on them:
//!
//! * [`mul8`]: `[k]P` (optionally `[k]([392]P)`) for eight points and one recoded scalar —
//!   φ, ψ and the 8-point table of [CL15, Alg. 2] per lane, then the 64 double-and-add steps
//!   with one digit sequence for all lanes ([FLS15] GLV-SAC recoding, done once);
//! * [`decode_mul8`]: on-curve decoding (FourQlib's `decode`: `√(u/v)`, the sign of `x`, the
//!   curve equation) + cofactor clearing + the ladder, for received points;
//! * [`map_and_clear8`]: FourQlib's `HashToCurve` map + cofactor clearing.
//!
//! The final normalisation (one inversion per chunk, Montgomery's trick) and the encoding run
//! on the serial side (`Point::batch_to_bytes`).
//!
//! One backend is one file of kernels: the lane field, the lane point formulas and the three
//! kernels share private types, the `#[target_feature]` wrappers of one feature set and the
//! limb bounds below, which are checked against one another, so the file stays whole rather
//! than being split into modules that would have to widen those internals. Its tests are in
//! `ifma/tests.rs`.
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

crate::backend::vector::ifma_set::enable! {
    #[inline]
    fn splat(v: u64) -> __m512i {
        _mm512_set1_epi64(v as i64)
    }
}

crate::backend::vector::ifma_set::enable! {
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

crate::backend::vector::ifma_set::enable! {
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
    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn zero() -> Fe {
            Fe([_mm512_setzero_si512(); 3])
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// The same serial element in every lane.
        #[inline]
        fn splat(a: &Fp) -> Fe {
            let l = fp_limbs(a);
            Fe([splat(l[0]), splat(l[1]), splat(l[2])])
        }
    }

    crate::backend::vector::ifma_set::enable! {
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

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn to_serial(self) -> [Fp; LANES] {
            let l = [lanes(self.0[0]), lanes(self.0[1]), lanes(self.0[2])];
            core::array::from_fn(|i| fp_from_limbs([l[0][i], l[1][i], l[2][i]]))
        }
    }

    crate::backend::vector::ifma_set::enable! {
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

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn add(&self, b: &Fe) -> Fe {
            Fe([
                _mm512_add_epi64(self.0[0], b.0[0]),
                _mm512_add_epi64(self.0[1], b.0[1]),
                _mm512_add_epi64(self.0[2], b.0[2]),
            ])
        }
    }

    crate::backend::vector::ifma_set::enable! {
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

    crate::backend::vector::ifma_set::enable! {
        /// `16p − a` (needs `a < 2⁴⁵ − 16` per limb).
        #[inline]
        fn neg(&self) -> Fe {
            self.check(P16[0]);
            Fe(core::array::from_fn(|k| {
                _mm512_sub_epi64(splat(P16[k]), self.0[k])
            }))
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `128p − a` (needs `a < 2⁴⁸ − 128`): only inside the multiplication.
        #[inline]
        fn neg_wide(&self) -> Fe {
            self.check(P128[0]);
            Fe(core::array::from_fn(|k| {
                _mm512_sub_epi64(splat(P128[k]), self.0[k])
            }))
        }
    }

    crate::backend::vector::ifma_set::enable! {
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

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn reduce(&self) -> Fe {
            Fe::carry(self.0)
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `a·b` in GF(p).
        #[inline]
        fn mul(&self, b: &Fe) -> Fe {
            let mut acc = Acc::new();
            acc.mac(self, b);
            acc.reduce()
        }
    }
}

/// Column accumulators of a product: `lo[k]` at bit `43k`, `hi[k]` at bit `43(k+1) + 9`.
struct Acc {
    lo: [__m512i; 5],
    hi: [__m512i; 5],
}

impl Acc {
    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn new() -> Acc {
            Acc {
                lo: [_mm512_setzero_si512(); 5],
                hi: [_mm512_setzero_si512(); 5],
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
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

    crate::backend::vector::ifma_set::enable! {
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

impl Fe2 {
    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn zero() -> Fe2 {
            Fe2 {
                a0: Fe::zero(),
                a1: Fe::zero(),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn splat(a: &Fp2) -> Fe2 {
            Fe2 {
                a0: Fe::splat(&a.a0),
                a1: Fe::splat(&a.a1),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn from_serial(a: &[Fp2; LANES]) -> Fe2 {
            Fe2 {
                a0: Fe::from_serial(&core::array::from_fn(|i| a[i].a0)),
                a1: Fe::from_serial(&core::array::from_fn(|i| a[i].a1)),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn to_serial(self) -> [Fp2; LANES] {
            let a0 = self.a0.to_serial();
            let a1 = self.a1.to_serial();
            core::array::from_fn(|i| Fp2 {
                a0: a0[i],
                a1: a1[i],
            })
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn add(&self, b: &Fe2) -> Fe2 {
            Fe2 {
                a0: self.a0.add(&b.a0),
                a1: self.a1.add(&b.a1),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn sub(&self, b: &Fe2) -> Fe2 {
            Fe2 {
                a0: self.a0.sub(&b.a0),
                a1: self.a1.sub(&b.a1),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn neg(&self) -> Fe2 {
            Fe2 {
                a0: self.a0.neg(),
                a1: self.a1.neg(),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn double(&self) -> Fe2 {
            self.add(self)
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `a0 − a1·i`.
        #[inline]
        fn conj(&self) -> Fe2 {
            Fe2 {
                a0: self.a0,
                a1: self.a1.neg(),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn reduce(&self) -> Fe2 {
            Fe2 {
                a0: self.a0.reduce(),
                a1: self.a1.reduce(),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// Schoolbook: `c0 = a0·b0 + a1·(128p − b1)`, `c1 = a0·b1 + a1·b0`, one reduction each.
        #[inline]
        fn mul(&self, b: &Fe2) -> Fe2 {
            let nb1 = b.a1.neg_wide();
            let mut c0 = Acc::new();
            c0.mac(&self.a0, &b.a0);
            c0.mac(&self.a1, &nb1);
            let mut c1 = Acc::new();
            c1.mac(&self.a0, &b.a1);
            c1.mac(&self.a1, &b.a0);
            Fe2 {
                a0: c0.reduce(),
                a1: c1.reduce(),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
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

/// R1: `(X, Y, Z, Ta, Tb)` with `T = Ta·Tb`.
#[derive(Clone, Copy)]
struct P1 {
    x: Fe2,
    y: Fe2,
    z: Fe2,
    ta: Fe2,
    tb: Fe2,
}

/// R2: `(X+Y, Y−X, 2Z, 2d·T)`, every coordinate in normal form.
#[derive(Clone, Copy)]
struct P2 {
    xy: Fe2,
    yx: Fe2,
    z2: Fe2,
    t2: Fe2,
}

/// R3: `(X+Y, Y−X, Z, T)`.
#[derive(Clone, Copy)]
struct P3 {
    xy: Fe2,
    yx: Fe2,
    z: Fe2,
    t: Fe2,
}

impl P1 {
    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn from_serial(p: &[Point; LANES]) -> P1 {
            P1 {
                x: Fe2::from_serial(&core::array::from_fn(|i| p[i].x)),
                y: Fe2::from_serial(&core::array::from_fn(|i| p[i].y)),
                z: Fe2::from_serial(&core::array::from_fn(|i| p[i].z)),
                ta: Fe2::from_serial(&core::array::from_fn(|i| p[i].ta)),
                tb: Fe2::from_serial(&core::array::from_fn(|i| p[i].tb)),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn to_serial(self) -> [Point; LANES] {
            let (x, y, z) = (self.x.to_serial(), self.y.to_serial(), self.z.to_serial());
            let (ta, tb) = (self.ta.to_serial(), self.tb.to_serial());
            core::array::from_fn(|i| Point {
                x: x[i],
                y: y[i],
                z: z[i],
                ta: ta[i],
                tb: tb[i],
            })
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `2P` (dbl-2008-hwcd, `a = −1`), reading `X, Y, Z`: `4M + 3S`.
        #[inline]
        fn double(&self) -> P1 {
            let x2 = self.x.square();
            let y2 = self.y.square();
            let xy = self.x.add(&self.y);
            let tb = x2.add(&y2); // X² + Y²
            let t1 = y2.sub(&x2); // Y² − X²
            let ta = xy.square().sub(&tb); // 2XY
            // 2Z² − (Y² − X²), written so that the subtrahend is a normal-form value.
            let t2 = self.z.square().double().add(&x2).sub(&y2);
            P1 {
                x: ta.mul(&t2),
                y: t1.mul(&tb),
                z: t1.mul(&t2),
                ta,
                tb,
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn to_r3(self) -> P3 {
            P3 {
                xy: self.x.add(&self.y),
                yx: self.y.sub(&self.x),
                z: self.z,
                t: self.ta.mul(&self.tb),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// R2 with every coordinate carried to normal form (table entries, addends).
        #[inline]
        fn to_r2(self, d2: &Fe2) -> P2 {
            P2 {
                xy: self.x.add(&self.y).reduce(),
                yx: self.y.sub(&self.x).reduce(),
                z2: self.z.double().reduce(),
                t2: self.ta.mul(&self.tb).mul(d2),
            }
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `ψ(P) = τ̂ ∘ δψδ⁻¹ ∘ τ`.
        #[inline]
        fn psi(&self) -> P1 {
            let (x, y, z) = tau(self);
            let (x, y, z) = delta_psi_delta(x, y, z);
            tau_dual(x, y, z)
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `φ(P) = τ̂ ∘ δφδ⁻¹ ∘ τ`.
        #[inline]
        fn phi(&self) -> P1 {
            let (x, y, z) = tau(self);
            let (x, y, z) = delta_phi_delta(x, y, z);
            tau_dual(x, y, z)
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `[392]P`: `3P`, `48P`, `49P`, `392P`.
        #[inline]
        fn mul_by_cofactor(&self, d2: &Fe2) -> P1 {
            let q = self.to_r2(d2);
            let mut p = add_core(&q, &self.double().to_r3());
            for _ in 0..4 {
                p = p.double();
            }
            p = add_core(&q, &p.to_r3());
            for _ in 0..3 {
                p = p.double();
            }
            p
        }
    }
}

crate::backend::vector::ifma_set::enable! {
    /// `P + Q`, `P` in R2 and `Q` in R3 (FourQlib `eccadd_core`): `8M`.
    #[inline]
    fn add_core(p: &P2, q: &P3) -> P1 {
        let c = p.t2.mul(&q.t);
        let d = p.z2.mul(&q.z);
        let b = p.xy.mul(&q.xy);
        let a = p.yx.mul(&q.yx);
        let f = d.sub(&c);
        let g = d.add(&c);
        let e = b.sub(&a);
        let h = b.add(&a);
        P1 {
            x: e.mul(&f),
            y: g.mul(&h),
            z: f.mul(&g),
            ta: h,
            tb: e,
        }
    }
}

crate::backend::vector::ifma_set::enable! {
    /// τ: E → Ê (FourQlib `ecc_tau`).
    #[inline]
    fn tau(p: &P1) -> (Fe2, Fe2, Fe2) {
        let t0 = p.x.square();
        let t1 = p.y.square();
        let xy = p.x.mul(&p.y);
        let z = t0.add(&t1);
        let d = t1.sub(&t0);
        // 2Z² − (Y² − X²) as 2Z² + X² − Y².
        let y = p.z.square().double().add(&t0).sub(&t1);
        (xy.mul(&d).mul(&Fe2::splat(&CTAU1)), y.mul(&z), z.mul(&d))
    }
}

crate::backend::vector::ifma_set::enable! {
    /// τ̂: Ê → E (FourQlib `ecc_tau_dual`), returning R1.
    #[inline]
    fn tau_dual(x: Fe2, y: Fe2, z: Fe2) -> P1 {
        let t0 = x.square();
        let z2 = z.square();
        let t1 = y.square();
        let ta = t1.sub(&t0); // Y² − X²
        let s = t0.add(&t1); // X² + Y²
        let zz = z2.double().add(&t0).sub(&t1); // 2Z² − (Y² − X²)
        let tb = x.mul(&y).mul(&Fe2::splat(&CTAUDUAL1));
        P1 {
            x: tb.mul(&s),
            y: zz.mul(&ta),
            z: zz.mul(&s),
            ta,
            tb,
        }
    }
}

crate::backend::vector::ifma_set::enable! {
    /// δ∘φ_W∘δ⁻¹ on Ê (FourQlib `ecc_delphidel`).
    #[inline]
    fn delta_phi_delta(x: Fe2, y: Fe2, z: Fe2) -> (Fe2, Fe2, Fe2) {
        let c = |k: &Fp2| Fe2::splat(k);
        let t4 = z.square();
        let t3 = y.mul(&z);
        let t2 = y.square();
        let t0 = t4.mul(&c(&CPHI4)).add(&t2);
        let t1 = t3.mul(&c(&CPHI3));
        let t5 = t0.sub(&t1);
        let t0 = t0.add(&t1).mul(&z).mul(&t5);
        let t1 = t3.mul(&c(&CPHI1));
        let t5 = t2.add(&t4.mul(&c(&CPHI2)));
        let t6 = t1.sub(&t5).mul(&t1.add(&t5)).mul(&c(&CPHI0));
        let x = x.mul(&t6);
        let t6 = t2.square();
        let t2 = t3.square();
        let t3 = t4.square();
        let t1 = t2.mul(&c(&CPHI8)).add(&t6).add(&t3.mul(&c(&CPHI9))).mul(&y);
        let t2 = t2.mul(&c(&CPHI6)).add(&t3.mul(&c(&CPHI7)));
        let yy = t6.add(&t2).mul(&c(&CPHI5));
        let x = x.mul(&t1).conj();
        let yy = yy.mul(&z).mul(&t0).conj();
        let zz = t0.mul(&t1).conj();
        (x, yy, zz)
    }
}

crate::backend::vector::ifma_set::enable! {
    /// δ∘ψ_W∘δ⁻¹ on Ê (FourQlib `ecc_delpsidel`).
    #[inline]
    fn delta_psi_delta(x: Fe2, y: Fe2, z: Fe2) -> (Fe2, Fe2, Fe2) {
        let x = x.conj();
        let z = z.conj();
        let y = y.conj();
        let t2 = z.square();
        let t0 = x.square();
        let x = x.mul(&t2);
        let zz = t0.add(&t2.mul(&Fe2::splat(&CPSI2)));
        let t1 = t0.add(&t2.mul(&Fe2::splat(&CPSI3)));
        let t2 = t0.add(&t2.mul(&Fe2::splat(&CPSI4))).neg();
        let zz = zz.mul(&y);
        let x = x.mul(&t2).mul(&Fe2::splat(&CPSI1));
        let y = t1.mul(&zz);
        let z = zz.mul(&t2);
        (x, y, z)
    }
}

/// The eight table entries as 24 vectors each (`xy, yx, z2, t2`, two coordinates, three limbs).
type Table = [[__m512i; 24]; 8];

crate::backend::vector::ifma_set::enable! {
    #[inline]
    fn p2_to_words(p: &P2) -> [__m512i; 24] {
        let mut w = [_mm512_setzero_si512(); 24];
        for (k, e) in [p.xy, p.yx, p.z2, p.t2].iter().enumerate() {
            w[6 * k..6 * k + 3].copy_from_slice(&e.a0.0);
            w[6 * k + 3..6 * k + 6].copy_from_slice(&e.a1.0);
        }
        w
    }
}

crate::backend::vector::ifma_set::enable! {
    #[inline]
    fn p2_from_words(w: &[__m512i; 24]) -> P2 {
        let e = |k: usize| Fe2 {
            a0: Fe([w[6 * k], w[6 * k + 1], w[6 * k + 2]]),
            a1: Fe([w[6 * k + 3], w[6 * k + 4], w[6 * k + 5]]),
        };
        P2 {
            xy: e(0),
            yx: e(1),
            z2: e(2),
            t2: e(3),
        }
    }
}

crate::backend::vector::ifma_set::enable! {
    /// FourQlib's `ecc_precomp` lane-wise: `T[v] = P + [v₀]φ(P) + [v₁]ψ(P) + [v₂]ψ(φ(P))`.
    #[inline]
    fn precompute(p: &P1, d2: &Fe2) -> Table {
        let phi = p.phi();
        let psi_phi = phi.psi();
        let psi = p.psi();
        let q = phi.to_r3();
        let r = psi.to_r3();
        let s = psi_phi.to_r3();
        let t0 = p.to_r2(d2);
        let t1 = add_core(&t0, &q).to_r2(d2);
        let t2 = add_core(&t0, &r).to_r2(d2);
        let t3 = add_core(&t1, &r).to_r2(d2);
        let t4 = add_core(&t0, &s).to_r2(d2);
        let t5 = add_core(&t1, &s).to_r2(d2);
        let t6 = add_core(&t2, &s).to_r2(d2);
        let t7 = add_core(&t3, &s).to_r2(d2);
        [
            p2_to_words(&t0),
            p2_to_words(&t1),
            p2_to_words(&t2),
            p2_to_words(&t3),
            p2_to_words(&t4),
            p2_to_words(&t5),
            p2_to_words(&t6),
            p2_to_words(&t7),
        ]
    }
}

/// All-ones when `a == b`, hidden from the optimiser (as the serial `eq_mask`).
#[inline(always)]
fn eq_mask(a: u8, b: u8) -> u64 {
    let diff = u64::from(a ^ b);
    core::hint::black_box(0u64.wrapping_sub(diff.wrapping_sub(1) >> 63))
}

crate::backend::vector::ifma_set::enable! {
    /// `±T[digit]`: all eight entries are read and masked (the digit is secret but the same in
    /// every lane), then `−Q = (Y−X, X+Y, 2Z, −2dT)` is blended in under the negation mask.
    #[inline]
    fn lookup(table: &Table, digit: u8, negate: u8) -> P2 {
        let mut acc = [_mm512_setzero_si512(); 24];
        for (j, e) in table.iter().enumerate() {
            let m = splat(eq_mask(digit, j as u8));
            for (a, w) in acc.iter_mut().zip(e.iter()) {
                *a = _mm512_or_si512(*a, _mm512_and_si512(*w, m));
            }
        }
        let n = splat(0u64.wrapping_sub(u64::from(negate)));
        for k in 0..6 {
            // Swap X+Y and Y−X under the mask.
            let d = _mm512_and_si512(_mm512_xor_si512(acc[k], acc[6 + k]), n);
            acc[k] = _mm512_xor_si512(acc[k], d);
            acc[6 + k] = _mm512_xor_si512(acc[6 + k], d);
        }
        let mut p = p2_from_words(&acc);
        let neg = p.t2.neg();
        let blend = |a: &mut Fe, b: &Fe| {
            for k in 0..3 {
                a.0[k] = _mm512_xor_si512(
                    a.0[k],
                    _mm512_and_si512(_mm512_xor_si512(a.0[k], b.0[k]), n),
                );
            }
        };
        blend(&mut p.t2.a0, &neg.a0);
        blend(&mut p.t2.a1, &neg.a1);
        p
    }
}

crate::backend::vector::ifma_set::enable! {
    /// The main loop of [CL15, Alg. 2] in eight lanes: one table per lane, one digit sequence.
    #[inline]
    fn ladder(table: &Table, rec: &Recoded) -> P1 {
        let (digits, negate) = rec.digits();
        let first = lookup(table, digits[64], 0);
        // (2X, 2Y, 2Z), carried so that the doubling's squarings get normal-form inputs.
        let mut q = P1 {
            x: first.xy.sub(&first.yx).reduce(),
            y: first.xy.add(&first.yx).reduce(),
            z: first.z2,
            ta: Fe2::zero(),
            tb: Fe2::zero(),
        };
        for i in (0..64).rev() {
            let s = lookup(table, digits[i], negate[i]);
            q = add_core(&s, &q.double().to_r3());
        }
        q
    }
}

crate::backend::vector::ifma_set::enable! {
    /// `[k]P_i` for eight points with the recoded `k`; with `clear_cofactor`, `[k]([392]P_i)`.
    ///
    /// Callable only where `avx512f` and `avx512ifma` are known to be present (an `unsafe` call
    /// after run-time detection).
    pub(crate) fn mul8(rec: &Recoded, points: &[Point; LANES], clear_cofactor: bool) -> [Point; LANES] {
        let d2 = Fe2::splat(&D.double());
        let mut p = P1::from_serial(points);
        if clear_cofactor {
            p = p.mul_by_cofactor(&d2);
        }
        let table = precompute(&p, &d2);
        ladder(&table, rec).to_serial()
    }
}

// ---- Hash to the curve in lanes: FourQlib's map `M` and the cofactor clearing. ----

/// A GF(p) lane vector whose every operation returns normal form (the map is dominated by its
/// three exponentiations, so the extra carry passes after additions cost little and keep the
/// bounds trivial).
#[derive(Clone, Copy)]
struct H(Fe);

impl H {
    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn c(a: &Fp) -> H {
            H(Fe::splat(a))
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn add(&self, b: &H) -> H {
            H(self.0.add(&b.0).reduce())
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn sub(&self, b: &H) -> H {
            H(self.0.sub(&b.0).reduce())
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn neg(&self) -> H {
            H(self.0.neg().reduce())
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn double(&self) -> H {
            self.add(self)
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn mul(&self, b: &H) -> H {
            H(self.0.mul(&b.0))
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn square(&self) -> H {
            H(self.0.mul(&self.0))
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `a/2 = a·2¹²⁶` (since `2·2¹²⁶ = 2¹²⁷ ≡ 1`).
        #[inline]
        fn half(&self) -> H {
            self.mul(&H::c(&Fp::from_u128(1 << 126)))
        }
    }

    crate::backend::vector::ifma_set::enable! {
        #[inline]
        fn square_n(&self, k: u32) -> H {
            let mut r = *self;
            for _ in 0..k {
                r = r.square();
            }
            r
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `a^(2¹²⁵ − 1)`: the serial addition chain.
        #[inline]
        fn pow_2_125_minus_1(&self) -> H {
            let x1 = *self;
            let x2 = x1.square().mul(&x1);
            let x4 = x2.square_n(2).mul(&x2);
            let x8 = x4.square_n(4).mul(&x4);
            let x16 = x8.square_n(8).mul(&x8);
            let x32 = x16.square_n(16).mul(&x16);
            let x64 = x32.square_n(32).mul(&x32);
            let x96 = x64.square_n(32).mul(&x32);
            let x112 = x96.square_n(16).mul(&x16);
            let x120 = x112.square_n(8).mul(&x8);
            let x124 = x120.square_n(4).mul(&x4);
            x124.square().mul(&x1)
        }
    }

    crate::backend::vector::ifma_set::enable! {
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

    crate::backend::vector::ifma_set::enable! {
        /// Lane mask of `a == b` (mod p).
        #[inline]
        fn ct_eq(&self, b: &H) -> __mmask8 {
            let (x, y) = (self.canonical(), b.canonical());
            _mm512_cmpeq_epi64_mask(x[0], y[0])
                & _mm512_cmpeq_epi64_mask(x[1], y[1])
                & _mm512_cmpeq_epi64_mask(x[2], y[2])
        }
    }

    crate::backend::vector::ifma_set::enable! {
        /// `b` in the lanes where `c` is set, `a` elsewhere.
        #[inline]
        fn select(a: &H, b: &H, c: __mmask8) -> H {
            H(Fe(core::array::from_fn(|k| {
                _mm512_mask_blend_epi64(c, a.0.0[k], b.0.0[k])
            })))
        }
    }
}

crate::backend::vector::ifma_set::enable! {
    /// FourQlib's `HashToCurve` map in lanes: the serial `hash::map_to_curve` operation for
    /// operation, with per-lane masks for its two selections.
    #[allow(clippy::many_single_char_names)]
    #[inline]
    fn map_to_curve(r: &Fe2) -> P1 {
        let (r0, r1) = (H(r.a0), H(r.a1));
        let one = H::c(&Fp::ONE);
        let x16 = |v: H| v.double().double().double().double();

        let t0 = r0.add(&r1).mul(&r0.sub(&r1));
        let t1 = r0.mul(&r1).double();
        let t2 = t0.add(&t1.double());
        let t3 = t0.double().sub(&t1);
        let t0 = t3.add(&one);
        let t4 = H::c(&H2C_A1).mul(&t2).sub(&H::c(&H2C_A0).mul(&t0));
        let t1 = H::c(&H2C_A0).mul(&t2).add(&H::c(&H2C_A1).mul(&t0));
        let t6 = t0.add(&t2).mul(&t0.sub(&t2));
        let t5 = t2.mul(&t0).double();
        let t8 = H::c(&H2C_CON2)
            .mul(&t2)
            .add(&t6.sub(&H::c(&H2C_CON1).mul(&t3)));
        let t9 = t5
            .sub(&H::c(&H2C_CON1).mul(&t2))
            .sub(&H::c(&H2C_CON2).mul(&t3));
        let t7 = t4.mul(&t8).add(&t1.mul(&t9));
        let t10 = t4.mul(&t9).sub(&t1.mul(&t8));
        let t5 = t7.square().add(&t10.square());
        let t7 = t5.mul(&t5.pow_2_125_minus_1().square());
        // t7 = t5^((p−1)/2): the quadratic character of the norm selects the branch.
        let is_one = t7.ct_eq(&one);
        let t3 = H::select(&H::c(&H2C_A0).add(&t4), &H::c(&H2C_A0).neg(), is_one);
        let t10 = H::select(&H::c(&H2C_A1).sub(&t1), &H::c(&H2C_A1).neg(), is_one);

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
        let t7n = H::select(&t11, &two, eq);
        let t11 = H::select(&two.neg(), &t11, eq);
        let t7 = t7n;
        let t13 = t13.double();

        let y0 = t3.sub(&t0);
        let y1 = t10.sub(&t2);
        let t15 = y0.mul(&t6).sub(&y1.mul(&t12));
        let t16 = t6.mul(&y1).add(&y0.mul(&t12));
        let y0 = t15.mul(&t4).add(&t1.mul(&t16)).mul(&t13);
        let y1 = t4.mul(&t16).sub(&t1.mul(&t15)).mul(&t13);
        let t15 = H::c(&H2C_B0).mul(&t3).sub(&H::c(&H2C_B1).mul(&t10));
        let t16 = H::c(&H2C_B0).mul(&t10).add(&H::c(&H2C_B1).mul(&t3));
        let x0 = t1.mul(&t16).add(&t15.mul(&t4));
        let x1 = t4.mul(&t16).sub(&t1.mul(&t15));
        let t15 = x0.mul(&t0).sub(&x1.mul(&t2));
        let t16 = x1.mul(&t0).add(&x0.mul(&t2));
        let x0 = t15.mul(&t14).sub(&t16.mul(&t8));
        let x1 = t16.mul(&t14).add(&t15.mul(&t8));
        let t15 = x0.mul(&t7).sub(&x1.mul(&t11));
        let t16 = t11.mul(&x0).add(&t7.mul(&x1));
        let t13 = t13.mul(&t9);
        let x = Fe2 {
            a0: t15.mul(&t13).0,
            a1: t16.mul(&t13).0,
        };
        let y = Fe2 { a0: y0.0, a1: y1.0 };
        P1 {
            x,
            y,
            z: Fe2::splat(&Fp2::ONE),
            ta: x,
            tb: y,
        }
    }
}

crate::backend::vector::ifma_set::enable! {
    /// `[392]·M(r_i)` for eight field elements (the hash to the curve after SHA-512).
    /// Callable only where `avx512f` and `avx512ifma` are known to be present.
    pub(crate) fn map_and_clear8(r: &[Fp2; LANES]) -> [Point; LANES] {
        let d2 = Fe2::splat(&D.double());
        map_to_curve(&Fe2::from_serial(r))
            .mul_by_cofactor(&d2)
            .to_serial()
    }
}

// ---- Decoding in lanes: the on-curve decoder of `Point::from_bytes_unchecked_subgroup`. ----

crate::backend::vector::ifma_set::enable! {
    /// GF(p²) helpers for the decoder, every result in normal form.
    #[inline]
    fn h2(a: &Fe2) -> (H, H) {
        (H(a.a0), H(a.a1))
    }
}

crate::backend::vector::ifma_set::enable! {
    #[inline]
    fn fe2(a0: H, a1: H) -> Fe2 {
        Fe2 { a0: a0.0, a1: a1.0 }
    }
}

crate::backend::vector::ifma_set::enable! {
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

crate::backend::vector::ifma_set::enable! {
    /// Lane mask of bit 126 of the canonical value (bit 40 of the top limb).
    #[inline]
    fn bit126(a: &H) -> __mmask8 {
        _mm512_test_epi64_mask(a.canonical()[2], splat(1 << 40))
    }
}

crate::backend::vector::ifma_set::enable! {
    #[inline]
    fn canonical(a: &H) -> H {
        H(Fe(a.canonical()))
    }
}

crate::backend::vector::ifma_set::enable! {
    #[inline]
    fn fe2_eq(a: &Fe2, b: &Fe2) -> __mmask8 {
        H(a.a0).ct_eq(&H(b.a0)) & H(a.a1).ct_eq(&H(b.a1))
    }
}

crate::backend::vector::ifma_set::enable! {
    /// `√(u/v)` lane-wise: the serial `Fp2::sqrt_ratio`, operation for operation, with lane
    /// masks for its selections. Returns `(is_square, x)`.
    #[inline]
    fn sqrt_ratio(u: &Fe2, v: &Fe2) -> (__mmask8, Fe2) {
        let norm = |a: &Fe2| {
            let (a0, a1) = h2(a);
            a0.square().add(&a1.square())
        };
        let t = norm(v);
        let w = u.mul(&v.conj());
        let (w0, w1) = h2(&w);
        let s = norm(&w).square_n(125);
        let c_plus = w0.add(&s);
        let c = H::select(&c_plus, &w0.sub(&s), is_zero(&c_plus)).double();
        let a = c.mul(&t);
        let r = a.mul(&t.square()).pow_2_125_minus_1();
        let x0 = a.mul(&r);
        let x1 = w1.mul(&r).mul(&t);
        let a_is_sq = x0.square().mul(&t).ct_eq(&c);
        let half = x0.half();
        let xa = fe2(half, x1);
        let xb = fe2(x1.neg(), half);
        let x = Fe2 {
            a0: H::select(&H(xb.a0), &H(xa.a0), a_is_sq).0,
            a1: H::select(&H(xb.a1), &H(xa.a1), a_is_sq).0,
        };
        let ok = fe2_eq(&v.mul(&x.square()), u) & !(is_zero(&H(v.a0)) & is_zero(&H(v.a1)));
        (ok, x)
    }
}

crate::backend::vector::ifma_set::enable! {
    /// The on-curve decoder for eight encodings whose `y` halves are already parsed (`y`,
    /// canonical, and the sign bits as a lane mask). Returns the lane mask of valid encodings
    /// (a square root exists, not the sign bit with `x = 0`, on the curve) and `(x, y)`.
    #[inline]
    fn decode(y: &Fe2, sign: __mmask8) -> (__mmask8, P1) {
        let one = Fe2::splat(&Fp2::ONE);
        let d = Fe2::splat(&D);
        let y2 = y.square();
        let u = y2.sub(&one).reduce();
        let v = d.mul(&y2).add(&one).reduce();
        let (is_sq, x) = sqrt_ratio(&u, &v);
        let (x0, x1) = h2(&x);
        let x0_zero = is_zero(&x0);
        // The "sign" of x: bit 126 of x0, or of x1 when x0 = 0.
        let s = (bit126(&x0) & !x0_zero) | (bit126(&x1) & x0_zero);
        let flip = s ^ sign;
        let x0 = canonical(&H::select(&x0, &x0.neg(), flip));
        let x1 = canonical(&H::select(&x1, &x1.neg(), flip));
        let x_zero = is_zero(&x0) & is_zero(&x1);
        let x = fe2(x0, x1);
        // −x² + y² = 1 + d·x²·y².
        let x2 = x.square();
        let lhs = y2.sub(&x2).reduce();
        let rhs = one.add(&d.mul(&x2).mul(&y2)).reduce();
        let on_curve = fe2_eq(&lhs, &rhs);
        let p = P1 {
            x,
            y: *y,
            z: one,
            ta: x,
            tb: *y,
        };
        (is_sq & !(x_zero & sign) & on_curve, p)
    }
}

crate::backend::vector::ifma_set::enable! {
    /// For eight 32-byte encodings: decode on the curve, clear the cofactor and multiply by the
    /// recoded scalar, all in lanes. Returns the points and, per lane, whether the encoding was
    /// valid (canonical `y`, a point of the curve); the points of invalid lanes are meaningless.
    /// Callable only where `avx512f` and `avx512ifma` are known to be present.
    pub(crate) fn decode_mul8(
        rec: &Recoded,
        enc: &[[u8; 32]; LANES],
    ) -> ([Point; LANES], [bool; LANES]) {
        let mut ys = [Fp2::ZERO; LANES];
        let mut canon = [false; LANES];
        let mut sign: __mmask8 = 0;
        for (i, e) in enc.iter().enumerate() {
            sign |= (e[31] >> 7) << i;
            let mut yb = *e;
            yb[31] &= 0x7f;
            let y = Fp2::from_bytes(&yb);
            canon[i] = bool::from(y.is_some());
            ys[i] = y.unwrap_or(Fp2::ZERO);
        }
        let (valid, p) = decode(&Fe2::from_serial(&ys), sign);
        let d2 = Fe2::splat(&D.double());
        let table = precompute(&p.mul_by_cofactor(&d2), &d2);
        let out = ladder(&table, rec).to_serial();
        let ok = core::array::from_fn(|i| canon[i] && (valid >> i) & 1 == 1);
        (out, ok)
    }
}

crate::backend::vector::ifma_set::enable! {
    /// The decoder alone (for the tests): validity and canonical affine `(x, y)` per lane.
    #[cfg(test)]
    fn decode8(enc: &[[u8; 32]; LANES]) -> [Option<(Fp2, Fp2)>; LANES] {
        let mut ys = [Fp2::ZERO; LANES];
        let mut canon = [false; LANES];
        let mut sign: __mmask8 = 0;
        for (i, e) in enc.iter().enumerate() {
            sign |= (e[31] >> 7) << i;
            let mut yb = *e;
            yb[31] &= 0x7f;
            let y = Fp2::from_bytes(&yb);
            canon[i] = bool::from(y.is_some());
            ys[i] = y.unwrap_or(Fp2::ZERO);
        }
        let (valid, p) = decode(&Fe2::from_serial(&ys), sign);
        let (x, y) = (p.x.to_serial(), p.y.to_serial());
        core::array::from_fn(|i| (canon[i] && (valid >> i) & 1 == 1).then_some((x[i], y[i])))
    }
}

#[cfg(test)]
mod tests;
