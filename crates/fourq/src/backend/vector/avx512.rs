//! Eight FourQ points at once with AVX-512F, for CPUs whose AVX-512 lacks IFMA (Intel Skylake,
//! Cascade Lake and Cooper Lake servers): the radix-2^25.5 lane field of the AVX2 backend
//! (`radix26.rs`, `vpmuludq` products) on `__m512i`, twice the lanes per instruction and 32
//! vector registers. The point formulas and kernels (`kernels.rs`) and the tests
//! (`lane_tests.rs`) are shared with every lane backend. This file holds the 64-bit-lane
//! primitives. Only `avx512f` is enabled (with the AVX2, FMA and F16C it implies, which the
//! detector checks too); every instruction below is AVX-512F.

// Limb arithmetic: truncating casts between u64 and the i64 lanes of the intrinsics are meant.
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

use core::arch::x86_64::{
    __m512i, _mm512_add_epi64, _mm512_and_si512, _mm512_cmpeq_epi64_mask, _mm512_maskz_set1_epi64,
    _mm512_mul_epu32, _mm512_or_si512, _mm512_set1_epi64, _mm512_setzero_si512, _mm512_slli_epi64,
    _mm512_srli_epi64, _mm512_sub_epi64, _mm512_ternarylogic_epi64, _mm512_test_epi64_mask,
    _mm512_xor_si512,
};

use crate::backend::vector::avx512_set::enable;
use crate::constants::*;
use crate::field::{Fp, Fp2};
use crate::point::Point;
use crate::scalar_mul::Recoded;

/// Lanes per vector.
pub(crate) const LANES: usize = 8;
/// The vector type of this backend.
type V = __m512i;
/// One bit per lane (lane 0 in bit 0).
type Mask = u8;
/// The table scan entry by entry: the 20-word accumulator fits in the 32 vector registers.
const LOOKUP_WORD_BY_WORD: bool = false;

/// Does this CPU run this backend (every feature of `avx512_set`, none switched off)?
#[cfg(test)]
fn available() -> bool {
    crate::backend::vector::avx512_set::detected()
}

enable! {
    #[inline]
    fn splat(v: u64) -> V {
        _mm512_set1_epi64(v as i64)
    }

    #[inline]
    fn v_zero() -> V {
        _mm512_setzero_si512()
    }

    #[inline]
    fn v_add(a: V, b: V) -> V {
        _mm512_add_epi64(a, b)
    }

    #[inline]
    fn v_sub(a: V, b: V) -> V {
        _mm512_sub_epi64(a, b)
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
            core::arch::asm!("/* {0} */", inout(zmm_reg) v, options(pure, nomem, nostack, preserves_flags));
        }
        v
    }

    /// The low 32 bits of `a` times the low 32 bits of `b`, per lane.
    #[inline]
    fn v_mul32(a: V, b: V) -> V {
        _mm512_mul_epu32(a, b)
    }

    #[inline]
    fn v_and(a: V, b: V) -> V {
        _mm512_and_si512(a, b)
    }

    #[inline]
    fn v_or(a: V, b: V) -> V {
        _mm512_or_si512(a, b)
    }

    #[inline]
    fn v_xor(a: V, b: V) -> V {
        _mm512_xor_si512(a, b)
    }

    #[inline]
    fn v_shr25(a: V) -> V {
        _mm512_srli_epi64::<25>(a)
    }

    #[inline]
    fn v_shr26(a: V) -> V {
        _mm512_srli_epi64::<26>(a)
    }

    #[inline]
    fn v_shr32(a: V) -> V {
        _mm512_srli_epi64::<32>(a)
    }

    #[inline]
    fn v_shl32(a: V) -> V {
        _mm512_slli_epi64::<32>(a)
    }

    /// All ones in the lanes where `a == b`, zero elsewhere.
    #[inline]
    fn v_eq(a: V, b: V) -> V {
        expand(_mm512_cmpeq_epi64_mask(a, b))
    }

    /// `b` where the word of `m` is all ones, `a` where it is zero: one bitwise select
    /// (`vpternlogq` with the truth table of `m ? b : a`).
    #[inline]
    fn v_pick(a: V, b: V, m: V) -> V {
        _mm512_ternarylogic_epi64::<0xD8>(a, b, m)
    }

    /// `a | (b & m)`: the table scan's step (see `kernels.rs`), one `vpternlogq`.
    #[inline]
    fn v_or_masked(a: V, b: V, m: V) -> V {
        _mm512_ternarylogic_epi64::<0xF8>(a, b, m)
    }

    #[inline]
    fn lanes(v: V) -> [u64; LANES] {
        // SAFETY: a 512-bit vector and eight u64 have the same size, and every bit pattern is
        // valid for both.
        unsafe { core::mem::transmute::<V, [u64; LANES]>(v) }
    }

    #[inline]
    fn from_lanes(v: [u64; LANES]) -> V {
        // SAFETY: as in `lanes`.
        unsafe { core::mem::transmute::<[u64; LANES], V>(v) }
    }

    /// The lane mask of the lanes whose 64-bit words of `m` are not zero (`m` all ones or all
    /// zeros per lane, a comparison result).
    #[inline]
    fn movemask(m: V) -> Mask {
        _mm512_test_epi64_mask(m, m)
    }

    /// All ones in the lanes whose bit is set in `c`.
    #[inline]
    fn expand(c: Mask) -> V {
        _mm512_maskz_set1_epi64(c, -1)
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
