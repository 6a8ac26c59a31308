//! CPU-specific kernels, each with a portable fallback that is tested to give the same output.
//! The only `unsafe` in this crate lives here.
#![allow(unsafe_code)]

pub(crate) mod aes_dm;
pub(crate) mod blake3x16;

obliv_cpu::feature_set! {
    /// The carry-less multiplication kernels (GF(2^128)).
    pub(crate) mod pclmul = ["pclmulqdq", "sse2"];
}

obliv_cpu::feature_set! {
    /// The SSE2 kernels (bit-plane masks of the transpose): the x86-64 baseline, detected all
    /// the same so that it can be switched off like any other set.
    pub(crate) mod sse2 = ["sse2"];
}

/// Carry-less 64×64 → 128-bit product, PCLMULQDQ when available.
#[inline]
#[cfg_attr(not(test), allow(dead_code))] // the 128-bit kernels below are what the field uses
pub(crate) fn clmul64(a: u64, b: u64) -> u128 {
    #[cfg(obliv_x86_simd)]
    if pclmul::detected() {
        // SAFETY: `pclmul::detected()` confirmed at run time that the CPU supports
        // PCLMULQDQ and SSE2, the features `clmul64_pclmul` is compiled for.
        return unsafe { x86::clmul64_pclmul(a, b) };
    }
    clmul64_portable(a, b)
}

/// Unreduced 128×128 → 256-bit carry-less product `(lo, hi)`, Karatsuba over three 64-bit
/// products, PCLMULQDQ when available.
#[inline]
pub(crate) fn clmul128(a: u128, b: u128) -> (u128, u128) {
    #[cfg(obliv_x86_simd)]
    if pclmul::detected() {
        // SAFETY: PCLMULQDQ and SSE2 were confirmed at run time (see `clmul64`).
        return unsafe { x86::clmul128_pclmul(a, b) };
    }
    clmul128_with(a, b, clmul64_portable)
}

/// `Σ a[i]·b[i]` unreduced, as `(lo, hi)`. The slices have equal length (checked by the caller).
#[inline]
pub(crate) fn clmul_dot(a: &[u128], b: &[u128]) -> (u128, u128) {
    #[cfg(obliv_x86_simd)]
    if pclmul::detected() {
        // SAFETY: PCLMULQDQ and SSE2 were confirmed at run time (see `clmul64`).
        return unsafe { x86::clmul_dot_pclmul(a, b) };
    }
    a.iter().zip(b).fold((0, 0), |(l, h), (x, y)| {
        let (pl, ph) = clmul128_with(*x, *y, clmul64_portable);
        (l ^ pl, h ^ ph)
    })
}

/// Reduces `hi·x^128 + lo` modulo x^128 + x^7 + x^2 + x + 1, in constant time: `hi·x^128 ≡
/// hi·(x^7 + x^2 + x + 1)`; the bits shifted past x^127 (at most 7) fold once more and fit.
#[inline(always)]
pub(crate) fn reduce(lo: u128, hi: u128) -> u128 {
    let t = hi ^ (hi << 1) ^ (hi << 2) ^ (hi << 7);
    let o = (hi >> 127) ^ (hi >> 126) ^ (hi >> 121);
    let o = o ^ (o << 1) ^ (o << 2) ^ (o << 7);
    lo ^ t ^ o
}

/// `a·b` reduced in GF(2^128): one call into the PCLMULQDQ kernel when the CPU has it.
#[inline]
pub(crate) fn gf_mul(a: u128, b: u128) -> u128 {
    #[cfg(obliv_x86_simd)]
    if pclmul::detected() {
        // SAFETY: PCLMULQDQ and SSE2 were confirmed at run time (see `clmul64`).
        return unsafe { x86::gf_mul_pclmul(a, b) };
    }
    let (lo, hi) = clmul128_with(a, b, clmul64_portable);
    reduce(lo, hi)
}

/// `out[i] = a[i]·b[i]` reduced (equal lengths checked by the caller).
pub(crate) fn gf_mul_slices(a: &[u128], b: &[u128], out: &mut [u128]) {
    #[cfg(obliv_x86_simd)]
    if pclmul::detected() {
        // SAFETY: PCLMULQDQ and SSE2 were confirmed at run time (see `clmul64`).
        return unsafe { x86::gf_mul_slices_pclmul(a, b, out) };
    }
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        let (lo, hi) = clmul128_with(*x, *y, clmul64_portable);
        *o = reduce(lo, hi);
    }
}

/// `out[i] = a[i]·s` reduced (equal lengths checked by the caller).
pub(crate) fn gf_scale(a: &[u128], s: u128, out: &mut [u128]) {
    #[cfg(obliv_x86_simd)]
    if pclmul::detected() {
        // SAFETY: PCLMULQDQ and SSE2 were confirmed at run time (see `clmul64`).
        return unsafe { x86::gf_scale_pclmul(a, s, out) };
    }
    for (o, x) in out.iter_mut().zip(a) {
        let (lo, hi) = clmul128_with(*x, s, clmul64_portable);
        *o = reduce(lo, hi);
    }
}

/// Karatsuba: three 64-bit carry-less products make one 128-bit one.
#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // splitting into 64-bit halves
fn clmul128_with(a: u128, b: u128, f: impl Fn(u64, u64) -> u128) -> (u128, u128) {
    let (a0, a1) = (a as u64, (a >> 64) as u64);
    let (b0, b1) = (b as u64, (b >> 64) as u64);
    let lo = f(a0, b0);
    let hi = f(a1, b1);
    let mid = f(a0 ^ a1, b0 ^ b1) ^ lo ^ hi;
    (lo ^ (mid << 64), hi ^ (mid >> 64))
}

/// Low 64 bits of the carry-less product, by integer multiplication with holes (BearSSL's
/// `bmul64`): with every fourth bit kept, no position of an integer product sums more than
/// 15 ones below bit 64, so carries never reach the next kept bit. Constant time.
#[inline]
fn bmul64(x: u64, y: u64) -> u64 {
    const M0: u64 = 0x1111_1111_1111_1111;
    const M1: u64 = 0x2222_2222_2222_2222;
    const M2: u64 = 0x4444_4444_4444_4444;
    const M3: u64 = 0x8888_8888_8888_8888;
    let (x0, x1, x2, x3) = (x & M0, x & M1, x & M2, x & M3);
    let (y0, y1, y2, y3) = (y & M0, y & M1, y & M2, y & M3);
    let m = |a: u64, b: u64| a.wrapping_mul(b);
    let z0 = m(x0, y0) ^ m(x1, y3) ^ m(x2, y2) ^ m(x3, y1);
    let z1 = m(x0, y1) ^ m(x1, y0) ^ m(x2, y3) ^ m(x3, y2);
    let z2 = m(x0, y2) ^ m(x1, y1) ^ m(x2, y0) ^ m(x3, y3);
    let z3 = m(x0, y3) ^ m(x1, y2) ^ m(x2, y1) ^ m(x3, y0);
    (z0 & M0) | (z1 & M1) | (z2 & M2) | (z3 & M3)
}

/// Portable constant-time carry-less 64×64 → 128-bit product: the low half by [`bmul64`],
/// the high half by [`bmul64`] on bit-reversed operands (BearSSL's `ghash_ctmul64`).
#[inline]
pub(crate) fn clmul64_portable(a: u64, b: u64) -> u128 {
    let lo = bmul64(a, b);
    let hi = bmul64(a.reverse_bits(), b.reverse_bits()).reverse_bits() >> 1;
    u128::from(lo) | (u128::from(hi) << 64)
}

/// Gathers the top bit of each of the 16 bytes of `v` into a 16-bit mask (bit `i` = byte `i`),
/// like SSE2's `pmovmskb`, portably.
#[inline]
pub(crate) fn movemask_portable(v: u128) -> u16 {
    // For 8 bytes in a u64: isolate the top bits and gather them with one multiplication.
    const MAGIC: u64 = 0x0002_0408_1020_4081;
    #[allow(clippy::cast_possible_truncation)] // splitting into halves; the mask fits in 8 bits
    let half = |x: u64| (((x & 0x8080_8080_8080_8080).wrapping_mul(MAGIC)) >> 56) as u16;
    #[allow(clippy::cast_possible_truncation)] // taking the low half
    let lo = half(v as u64);
    let hi = half((v >> 64) as u64);
    lo | (hi << 8)
}

#[cfg(obliv_x86_simd)]
pub(crate) mod x86 {
    use core::arch::x86_64::{
        __m128i, _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_movemask_epi8, _mm_set_epi64x,
        _mm_setzero_si128, _mm_slli_epi64, _mm_slli_si128, _mm_srli_si128, _mm_unpackhi_epi64,
        _mm_xor_si128,
    };

    crate::backend::sse2::enable! {
        #[inline]
        #[allow(clippy::cast_possible_wrap)] // bit-for-bit reinterpretation of the halves
        fn to_m128(v: u128) -> __m128i {
            #[allow(clippy::cast_possible_truncation)] // taking the halves
            let (lo, hi) = (v as u64 as i64, (v >> 64) as u64 as i64);
            _mm_set_epi64x(hi, lo)
        }
    }

    crate::backend::sse2::enable! {
        #[inline]
        #[allow(clippy::cast_sign_loss)] // bit-for-bit reinterpretation of the halves
        fn from_m128(v: __m128i) -> u128 {
            let lo = _mm_cvtsi128_si64(v) as u64;
            let hi = _mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v)) as u64;
            u128::from(lo) | (u128::from(hi) << 64)
        }
    }

    crate::backend::pclmul::enable! {
        /// Carry-less product by PCLMULQDQ.
        #[inline]
        pub(crate) fn clmul64_pclmul(a: u64, b: u64) -> u128 {
            let p = _mm_clmulepi64_si128::<0x00>(to_m128(u128::from(a)), to_m128(u128::from(b)));
            from_m128(p)
        }
    }

    crate::backend::pclmul::enable! {
        /// The 256-bit product of two 128-bit operands by four PCLMULQDQs (schoolbook: on this
        /// hardware one more multiply beats Karatsuba's extra XORs and shuffles).
        #[inline]
        fn clmul128_m(a: __m128i, b: __m128i) -> (__m128i, __m128i, __m128i) {
            let lo = _mm_clmulepi64_si128::<0x00>(a, b);
            let hi = _mm_clmulepi64_si128::<0x11>(a, b);
            let m1 = _mm_clmulepi64_si128::<0x10>(a, b);
            let m2 = _mm_clmulepi64_si128::<0x01>(a, b);
            (lo, _mm_xor_si128(m1, m2), hi)
        }
    }

    crate::backend::sse2::enable! {
        /// Folds `(lo, mid, hi)` (mid at x^64) into `(lo, hi)` 128-bit halves.
        #[inline]
        fn fold(lo: __m128i, mid: __m128i, hi: __m128i) -> (u128, u128) {
            let lo = _mm_xor_si128(lo, _mm_slli_si128::<8>(mid));
            let hi = _mm_xor_si128(hi, _mm_srli_si128::<8>(mid));
            (from_m128(lo), from_m128(hi))
        }
    }

    crate::backend::pclmul::enable! {
        /// Unreduced 128×128 carry-less product.
        #[inline]
        pub(crate) fn clmul128_pclmul(a: u128, b: u128) -> (u128, u128) {
            let (lo, mid, hi) = clmul128_m(to_m128(a), to_m128(b));
            fold(lo, mid, hi)
        }
    }

    crate::backend::pclmul::enable! {
        /// Reduced product in GF(2^128) (modulus x^128 + x^7 + x^2 + x + 1), all in one
        /// function so that the caller pays one call, not one per step.
        #[inline]
        pub(crate) fn gf_mul_pclmul(a: u128, b: u128) -> u128 {
            let (lo, hi) = clmul128_pclmul(a, b);
            super::reduce(lo, hi)
        }
    }

    crate::backend::pclmul::enable! {
        /// `out[i] = a[i]·b[i]` reduced, the loop inside the feature-enabled function.
        pub(crate) fn gf_mul_slices_pclmul(a: &[u128], b: &[u128], out: &mut [u128]) {
            for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
                *o = gf_mul_pclmul(*x, *y);
            }
        }
    }

    crate::backend::pclmul::enable! {
        /// `out[i] = a[i]·s` reduced.
        pub(crate) fn gf_scale_pclmul(a: &[u128], s: u128, out: &mut [u128]) {
            for (o, x) in out.iter_mut().zip(a) {
                *o = gf_mul_pclmul(*x, s);
            }
        }
    }

    crate::backend::pclmul::enable! {
        /// Unreduced inner product: the products are XORed before the single fold.
        pub(crate) fn clmul_dot_pclmul(a: &[u128], b: &[u128]) -> (u128, u128) {
            let (mut lo, mut mid, mut hi) = (
                _mm_setzero_si128(),
                _mm_setzero_si128(),
                _mm_setzero_si128(),
            );
            for (x, y) in a.iter().zip(b) {
                let (l, m, h) = clmul128_m(to_m128(*x), to_m128(*y));
                lo = _mm_xor_si128(lo, l);
                mid = _mm_xor_si128(mid, m);
                hi = _mm_xor_si128(hi, h);
            }
            fold(lo, mid, hi)
        }
    }

    crate::backend::sse2::enable! {
        /// [`super::transpose_tiles_with`] compiled with SSE2 so the intrinsics inline.
        pub(crate) fn transpose_tiles_sse2(input: &[u8], rows: usize, cols: usize, out: &mut [u8]) {
            super::transpose_tiles_with(input, rows, cols, out, |v| movemask_planes(v));
        }
    }

    crate::backend::sse2::enable! {
        /// The 8 masks of bit planes 7, 6, …, 0 of the 16 bytes of `v`: `out[k]` gathers bit
        /// `7 − k` of every byte (SSE2 `pmovmskb` after `k` left shifts). SSE2 is part of the
        /// x86-64 baseline, so no run-time check is needed.
        #[inline]
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // pmovmskb fills 16 bits
        pub(crate) fn movemask_planes(v: u128) -> [u16; 8] {
            let mut x = to_m128(v);
            let mut out = [0u16; 8];
            for o in out.iter_mut() {
                *o = _mm_movemask_epi8(x) as u16;
                x = _mm_slli_epi64::<1>(x);
            }
            out
        }
    }
}

/// The 8 bit-plane masks of `v` (see `x86::movemask_planes`), on any CPU (tests compare the
/// kernels through it).
#[cfg(test)]
fn movemask_planes(v: u128) -> [u16; 8] {
    #[cfg(obliv_x86_simd)]
    if sse2::detected() {
        // SAFETY: `sse2::detected()` confirmed the feature `x86::movemask_planes` is compiled
        // for.
        return unsafe { x86::movemask_planes(v) };
    }
    movemask_planes_portable(v)
}

/// Portable [`movemask_planes`].
#[inline]
pub(crate) fn movemask_planes_portable(v: u128) -> [u16; 8] {
    let mut out = [0u16; 8];
    let mut x = v;
    for o in out.iter_mut() {
        *o = movemask_portable(x);
        // Shift each 64-bit lane left by one, as _mm_slli_epi64 does.
        #[allow(clippy::cast_possible_truncation)] // taking the low half
        let lo = (x as u64).wrapping_shl(1);
        #[allow(clippy::cast_possible_truncation)] // taking the high half
        let hi = ((x >> 64) as u64).wrapping_shl(1);
        x = u128::from(lo) | (u128::from(hi) << 64);
    }
    out
}

/// The transpose kernel (see `crate::transpose`): shapes were checked by the caller
/// (`rows % 16 == 0`, `cols % 8 == 0`, both buffers `rows * cols / 8` bytes).
pub(crate) fn transpose_tiles(input: &[u8], rows: usize, cols: usize, out: &mut [u8]) {
    #[cfg(obliv_x86_simd)]
    if sse2::detected() {
        // SAFETY: `sse2::detected()` confirmed the feature the kernel is compiled for.
        return unsafe { x86::transpose_tiles_sse2(input, rows, cols, out) };
    }
    transpose_tiles_with(input, rows, cols, out, movemask_planes_portable)
}

/// The transpose loop over 16-row × 8-column tiles, with the bit-plane kernel `planes`.
#[inline(always)]
fn transpose_tiles_with(
    input: &[u8],
    rows: usize,
    cols: usize,
    out: &mut [u8],
    planes: impl Fn(u128) -> [u16; 8],
) {
    let in_row = cols / 8;
    let out_row = rows / 8;
    for (tile, rows16) in input.chunks_exact(16 * in_row).enumerate() {
        let rr8 = tile * 2; // byte offset of these 16 rows within an output row
        for cb in 0..in_row {
            let mut gathered = [0u8; 16];
            for (i, g) in gathered.iter_mut().enumerate() {
                *g = rows16[i * in_row + cb];
            }
            let p = planes(u128::from_le_bytes(gathered));
            let base = cb * 8 * out_row + rr8;
            for (k, mask) in p.iter().enumerate() {
                let at = base + (7 - k) * out_row;
                out[at..at + 2].copy_from_slice(&mask.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn planes_agree(v in any::<u128>()) {
            prop_assert_eq!(movemask_planes(v), movemask_planes_portable(v));
        }

        #[test]
        fn transpose_kernels_agree(bytes in proptest::collection::vec(any::<u8>(), 32 * 3)) {
            let (mut a, mut b) = (vec![0u8; bytes.len()], vec![0u8; bytes.len()]);
            transpose_tiles(&bytes, 32, 24, &mut a);
            transpose_tiles_with(&bytes, 32, 24, &mut b, movemask_planes_portable);
            prop_assert_eq!(a, b);
        }

        #[test]
        fn movemask_reads_top_bits(v in any::<u128>()) {
            let mut expect = 0u16;
            for i in 0..16 {
                if (v >> (8 * i + 7)) & 1 == 1 {
                    expect |= 1 << i;
                }
            }
            prop_assert_eq!(movemask_portable(v), expect);
        }
    }
}
