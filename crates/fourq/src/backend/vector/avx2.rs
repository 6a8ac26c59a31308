//! Four FourQ points at once with AVX2, for CPUs without AVX-512 (AMD Zen 1–3, Intel before
//! Ice Lake server and its laptops). The lane field (GF(p²) in five 25/26-bit limbs per
//! coordinate, `radix26.rs`) is shared with the eight-lane AVX-512F backend ([`super::avx512`]);
//! the point formulas and the three kernels (`mul_lanes`, `decode_mul_lanes`,
//! `map_and_clear_lanes`) with every lane backend (`kernels.rs`), and so are the tests
//! (`lane_tests.rs`). This file holds the 64-bit-lane primitives on `__m256i`. Only `avx2` is
//! needed (every instruction below is AVX2 or AVX), and nothing else is enabled.

// Limb arithmetic: truncating casts between u64 and the i64 lanes of the intrinsics are meant.
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

use core::arch::x86_64::{
    __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_blendv_epi8, _mm256_castsi256_pd,
    _mm256_cmpeq_epi64, _mm256_extract_epi64, _mm256_movemask_pd, _mm256_mul_epu32,
    _mm256_or_si256, _mm256_set_epi64x, _mm256_set1_epi64x, _mm256_setzero_si256,
    _mm256_slli_epi64, _mm256_srli_epi64, _mm256_sub_epi64, _mm256_xor_si256,
};

use crate::backend::vector::avx2_set::enable;
use crate::constants::*;
use crate::field::{Fp, Fp2};
use crate::point::Point;
use crate::scalar_mul::Recoded;

/// Lanes per vector.
pub(crate) const LANES: usize = 4;
/// The vector type of this backend.
type V = __m256i;
/// One bit per lane (lane 0 in bit 0).
type Mask = u8;
/// The table scan word by word: a 20-word accumulator does not fit in 16 vector registers.
const LOOKUP_WORD_BY_WORD: bool = true;

/// Does this CPU run this backend (every feature of `avx2_set`, none switched off)?
#[cfg(test)]
fn available() -> bool {
    crate::backend::vector::avx2_set::detected()
}

enable! {
    #[inline]
    fn splat(v: u64) -> V {
        _mm256_set1_epi64x(v as i64)
    }

    #[inline]
    fn v_zero() -> V {
        _mm256_setzero_si256()
    }

    #[inline]
    fn v_add(a: V, b: V) -> V {
        _mm256_add_epi64(a, b)
    }

    #[inline]
    fn v_sub(a: V, b: V) -> V {
        _mm256_sub_epi64(a, b)
    }

    /// `v` unchanged, through an empty `asm!` block, so that the optimiser knows nothing of
    /// its bits. A loop that carries limbs in registers (the squarings of an exponentiation)
    /// passes them through this: otherwise LLVM proves them below 2³², drops the masks of
    /// `v_mul32`, and instruction selection, which looks at one loop iteration, no longer sees
    /// that they fit and emits a full 64-bit product (three `vpmuludq` and shifts) for each.
    #[inline]
    fn v_opaque(mut v: V) -> V {
        // SAFETY: an empty template that reads and writes one vector register: no memory,
        // stack or flags touched.
        unsafe {
            core::arch::asm!("/* {0} */", inout(ymm_reg) v, options(pure, nomem, nostack, preserves_flags));
        }
        v
    }

    /// The low 32 bits of `a` times the low 32 bits of `b`, per lane.
    #[inline]
    fn v_mul32(a: V, b: V) -> V {
        _mm256_mul_epu32(a, b)
    }

    #[inline]
    fn v_and(a: V, b: V) -> V {
        _mm256_and_si256(a, b)
    }

    #[inline]
    fn v_or(a: V, b: V) -> V {
        _mm256_or_si256(a, b)
    }

    #[inline]
    fn v_xor(a: V, b: V) -> V {
        _mm256_xor_si256(a, b)
    }

    #[inline]
    fn v_shr25(a: V) -> V {
        _mm256_srli_epi64::<25>(a)
    }

    #[inline]
    fn v_shr26(a: V) -> V {
        _mm256_srli_epi64::<26>(a)
    }

    #[inline]
    fn v_shr32(a: V) -> V {
        _mm256_srli_epi64::<32>(a)
    }

    #[inline]
    fn v_shl32(a: V) -> V {
        _mm256_slli_epi64::<32>(a)
    }

    /// All ones in the lanes where `a == b`, zero elsewhere.
    #[inline]
    fn v_eq(a: V, b: V) -> V {
        _mm256_cmpeq_epi64(a, b)
    }

    /// `b` where the word of `m` is all ones, `a` where it is zero (one blend).
    #[inline]
    fn v_pick(a: V, b: V, m: V) -> V {
        _mm256_blendv_epi8(a, b, m)
    }

    /// `a | (b & m)`: the table scan's step (see `kernels.rs`). Two single-uop instructions
    /// rather than `vpblendvb`, which is two or three uops on recent Intel cores.
    #[inline]
    fn v_or_masked(a: V, b: V, m: V) -> V {
        _mm256_or_si256(a, _mm256_and_si256(b, m))
    }

    #[inline]
    fn lanes(v: V) -> [u64; LANES] {
        [
            _mm256_extract_epi64::<0>(v) as u64,
            _mm256_extract_epi64::<1>(v) as u64,
            _mm256_extract_epi64::<2>(v) as u64,
            _mm256_extract_epi64::<3>(v) as u64,
        ]
    }

    #[inline]
    fn from_lanes(v: [u64; LANES]) -> V {
        _mm256_set_epi64x(v[3] as i64, v[2] as i64, v[1] as i64, v[0] as i64)
    }

    /// The lane mask of the lanes whose 64-bit words of `m` are all ones (`m` a comparison
    /// result).
    #[inline]
    fn movemask(m: V) -> Mask {
        _mm256_movemask_pd(_mm256_castsi256_pd(m)) as u8
    }

    /// All ones in the lanes whose bit is set in `c`.
    #[inline]
    fn expand(c: Mask) -> V {
        let bits = _mm256_set_epi64x(8, 4, 2, 1);
        _mm256_cmpeq_epi64(_mm256_and_si256(splat(u64::from(c)), bits), bits)
    }
}

include!("radix26.rs");

/// The formulas and kernels shared with the other lane backends, compiled for this one.
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
