//! Architecture hooks: AVX-512 and AVX2 kernels for the ExConv convolution (the accumulator),
//! chosen at run time with the portable scalar rows of [`crate::code`] as the fallback. (The
//! expander's prefetch hints are `obliv_core::mem::prefetch_l2`.)
//!
//! The only `unsafe` of the crate lives here: calls of `#[target_feature]` functions after
//! run-time detection, and unaligned loads and stores from bounds-checked slices.
#![allow(unsafe_code)]

use obliv_core::Block;

use crate::code::BlockPair;

obliv_cpu::feature_set! {
    /// The AVX-512 convolution kernels for blocks and block pairs: AVX-512F/BW, BMI2 (`pdep`)
    /// and VPCLMULQDQ (the `μ` mix).
    mod avx512_blocks = ["avx512f", "avx512bw", "bmi2", "vpclmulqdq"];
}

obliv_cpu::feature_set! {
    /// The AVX2 convolution kernel for blocks and block pairs: AVX2 and PCLMULQDQ (the `μ`
    /// mix, one 128-bit element at a time).
    mod avx2_blocks = ["avx2", "pclmulqdq"];
}

obliv_cpu::feature_set! {
    /// The convolution kernel for bytes: AVX-512F/BW and VBMI (byte permutes).
    mod avx512_bytes = ["avx512f", "avx512bw", "avx512vbmi"];
}

obliv_cpu::feature_set! {
    /// The AVX2 convolution kernel for bytes.
    mod avx2_bytes = ["avx2"];
}

obliv_cpu::feature_set! {
    /// The 64-byte loads and stores both AVX-512 kernels share (a subset of both sets above).
    mod avx512_loads = ["avx512f"];
}

/// A vectorised convolution kernel for blocks and block pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockKernel {
    /// A window of 32 elements in ZMM registers, masked XORs (`avx512_blocks`).
    Avx512,
    /// A window of 28 elements in YMM registers, two rows at a time (`avx2_blocks`).
    Avx2,
}

/// The block kernels this CPU can run (after `OBLIV_CPU_DISABLE`), fastest first.
pub(crate) fn block_kernels() -> impl Iterator<Item = BlockKernel> {
    [
        (BlockKernel::Avx512, avx512_blocks::detected()),
        (BlockKernel::Avx2, avx2_blocks::detected()),
    ]
    .into_iter()
    .filter_map(|(k, here)| here.then_some(k))
}

/// The fastest block kernel this CPU can run, if any.
fn best_block_kernel() -> Option<BlockKernel> {
    block_kernels().next()
}

/// Whether [`acc_blocks`] and [`acc_pairs`] run a vectorised kernel on this CPU.
pub(crate) fn have_fast_blocks() -> bool {
    best_block_kernel().is_some()
}

/// A vectorised convolution kernel for bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ByteKernel {
    /// A window of 128 bytes in two ZMM registers, 64 rows per step (`avx512_bytes`).
    Avx512,
    /// A window of 64 bytes in two YMM registers, 32 rows per step (`avx2_bytes`).
    Avx2,
}

/// The byte kernels this CPU can run (after `OBLIV_CPU_DISABLE`), fastest first.
pub(crate) fn byte_kernels() -> impl Iterator<Item = ByteKernel> {
    [
        (ByteKernel::Avx512, avx512_bytes::detected()),
        (ByteKernel::Avx2, avx2_bytes::detected()),
    ]
    .into_iter()
    .filter_map(|(k, here)| here.then_some(k))
}

/// The fastest byte kernel this CPU can run, if any.
fn best_byte_kernel() -> Option<ByteKernel> {
    byte_kernels().next()
}

/// Whether [`acc_bytes`] runs a vectorised kernel on this CPU.
pub(crate) fn have_fast_bytes() -> bool {
    best_byte_kernel().is_some()
}

/// Runs rows `start, start + 1, …` of one convolution pass over blocks — row `i`:
/// `x[i+1+p] ^= c_{i,p}·x[i]` for the set bits `p < 24` of `coeffs[i − start]`, then
/// `x[i+25] = μ·(x[i+25] ^ x[i])` with `μ` = [`crate::code::GF128_MIX`] if `mix`, else 1 —
/// for as long as the rows stay clear of the end of `x` (no wrap-around), and returns the
/// first row it did not run. Same results as the scalar rows; runs none (returns `start`)
/// without the CPU features.
pub(crate) fn acc_blocks(x: &mut [Block], start: usize, coeffs: &[u32], mix: bool) -> usize {
    match best_block_kernel() {
        Some(k) => acc_blocks_with(k, x, start, coeffs, mix),
        None => start,
    }
}

/// As [`acc_blocks`] for block pairs (both halves transformed alike).
pub(crate) fn acc_pairs(x: &mut [BlockPair], start: usize, coeffs: &[u32], mix: bool) -> usize {
    match best_block_kernel() {
        Some(k) => acc_pairs_with(k, x, start, coeffs, mix),
        None => start,
    }
}

/// [`acc_blocks`] with the given kernel; runs none (returns `start`) if this CPU lacks its
/// features.
pub(crate) fn acc_blocks_with(
    kernel: BlockKernel,
    x: &mut [Block],
    start: usize,
    coeffs: &[u32],
    mix: bool,
) -> usize {
    #[cfg(obliv_x86_simd)]
    match kernel {
        BlockKernel::Avx512 if avx512_blocks::detected() => {
            // SAFETY: the CPU supports every target feature of the kernel (checked at run
            // time just above), the only requirement of calling it.
            return unsafe {
                if mix {
                    avx512::acc_blocks::run::<true>(x, start, coeffs)
                } else {
                    avx512::acc_blocks::run::<false>(x, start, coeffs)
                }
            };
        }
        BlockKernel::Avx2 if avx2_blocks::detected() => {
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(x);
            // SAFETY: as above: the kernel's target features were detected at run time.
            return unsafe { avx2::run_mixed(bytes, 16, 0, start, coeffs, mix) };
        }
        _ => {}
    }
    let _ = (kernel, x, coeffs, mix);
    start
}

/// [`acc_pairs`] with the given kernel; runs none (returns `start`) if this CPU lacks its
/// features.
pub(crate) fn acc_pairs_with(
    kernel: BlockKernel,
    x: &mut [BlockPair],
    start: usize,
    coeffs: &[u32],
    mix: bool,
) -> usize {
    #[cfg(obliv_x86_simd)]
    match kernel {
        BlockKernel::Avx512 if avx512_blocks::detected() => {
            // SAFETY: the target features were detected at run time just above.
            return unsafe {
                if mix {
                    avx512::acc_pairs::run::<true>(x, start, coeffs)
                } else {
                    avx512::acc_pairs::run::<false>(x, start, coeffs)
                }
            };
        }
        BlockKernel::Avx2 if avx2_blocks::detected() => {
            // The two halves never mix: each is a pass over blocks 32 bytes apart, and both
            // passes run the same rows (the count depends only on `start`, `coeffs` and the
            // length).
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(x);
            // SAFETY: as above: the kernel's target features were detected at run time.
            return unsafe {
                let done = avx2::run_mixed(bytes, 32, 0, start, coeffs, mix);
                let again = avx2::run_mixed(bytes, 32, 16, start, coeffs, mix);
                debug_assert_eq!(done, again);
                done
            };
        }
        _ => {}
    }
    let _ = (kernel, x, coeffs, mix);
    start
}

/// As [`acc_blocks`] for byte elements (each byte a GF(2)^8 vector, e.g. one bit 0/1), for
/// the binary code (`μ` acts as the identity on bytes, so `mix` changes nothing).
pub(crate) fn acc_bytes(x: &mut [u8], start: usize, coeffs: &[u32]) -> usize {
    match best_byte_kernel() {
        Some(k) => acc_bytes_with(k, x, start, coeffs),
        None => start,
    }
}

/// [`acc_bytes`] with the given kernel; runs none (returns `start`) if this CPU lacks its
/// features.
pub(crate) fn acc_bytes_with(
    kernel: ByteKernel,
    x: &mut [u8],
    start: usize,
    coeffs: &[u32],
) -> usize {
    #[cfg(obliv_x86_simd)]
    match kernel {
        ByteKernel::Avx512 if avx512_bytes::detected() => {
            // SAFETY: the CPU supports AVX-512F, AVX-512BW and AVX-512VBMI (checked at run
            // time just above), the only requirement of calling a function with these
            // target features.
            return unsafe { avx512::acc_bytes(x, start, coeffs) };
        }
        ByteKernel::Avx2 if avx2_bytes::detected() => {
            // SAFETY: the CPU supports AVX2 (checked at run time just above), the only
            // requirement of calling a function with this target feature.
            return unsafe { avx2::acc_bytes(x, start, coeffs) };
        }
        _ => {}
    }
    let _ = (kernel, x, coeffs);
    start
}

#[cfg(obliv_x86_simd)]
mod avx2 {
    //! The convolution with the band held in YMM registers: a window of 28 elements (14
    //! registers of two 128-bit elements) slides over `x` two rows at a time. Row `i + r`
    //! broadcasts element `r` of the window to both lanes and XORs it into each register
    //! under the mask its two coefficient bits pick from a table of four lane masks; with
    //! `mix`, the element on the fixed diagonal is then multiplied by `μ` in place (one
    //! 128-bit carry-less product, PCLMULQDQ), as the scalar row does.
    //!
    //! The elements are 16 bytes `stride` bytes apart from byte `offset` on: blocks
    //! (stride 16) or one half of block pairs (stride 32, offset 0 or 16), so a pass over
    //! pairs is two passes over their halves.
    //!
    //! Bytes ([`acc_bytes`]) have a kernel of their own: a 64-byte window in two registers,
    //! 32 rows per step.
    use core::arch::x86_64::{
        __m128i, __m256i, _mm_clmulepi64_si128, _mm_loadu_si128, _mm_set_epi64x, _mm_slli_si128,
        _mm_srli_si128, _mm_storeu_si128, _mm_xor_si128, _mm256_and_si256, _mm256_castsi256_si128,
        _mm256_cmpeq_epi8, _mm256_extracti128_si256, _mm256_inserti128_si256, _mm256_load_si256,
        _mm256_loadu_si256, _mm256_permute2x128_si256, _mm256_permutevar8x32_epi32,
        _mm256_set_m128i, _mm256_set1_epi8, _mm256_set1_epi32, _mm256_set1_epi64x,
        _mm256_setr_epi8, _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_storeu_si256,
        _mm256_xor_si256,
    };

    use crate::code::GF128_MIX;

    /// Registers in the window.
    const REGS: usize = 14;
    /// Elements per register, and rows per step of the window.
    const PER: usize = 2;

    /// The XOR masks for two coefficient bits `b1 b0`: bit 0 selects the low 128-bit lane
    /// (the lower-numbered element), bit 1 the high one.
    #[repr(C, align(32))]
    struct LaneMasks([[u64; 4]; 4]);

    static LANE_MASKS: LaneMasks = LaneMasks([
        [0, 0, 0, 0],
        [u64::MAX, u64::MAX, 0, 0],
        [0, 0, u64::MAX, u64::MAX],
        [u64::MAX; 4],
    ]);

    crate::arch::avx2_blocks::enable! {
    /// Element `i` (16 bytes at `offset + stride·i`).
    #[inline]
    fn load1(x: &[u8], stride: usize, offset: usize, i: usize) -> __m128i {
        let at = offset + stride * i;
        let s: &[u8; 16] = x[at..at + 16]
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 16 bytes"));
        // SAFETY: `s` is 16 readable bytes; the unaligned load has no alignment requirement.
        unsafe { _mm_loadu_si128(s.as_ptr().cast()) }
    }

    #[inline]
    fn store1(x: &mut [u8], stride: usize, offset: usize, i: usize, v: __m128i) {
        let at = offset + stride * i;
        let d: &mut [u8; 16] = (&mut x[at..at + 16])
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 16 bytes"));
        // SAFETY: `d` is 16 writable bytes (exclusively borrowed); the unaligned store has no
        // alignment requirement, and every bit pattern is a valid element.
        unsafe { _mm_storeu_si128(d.as_mut_ptr().cast(), v) }
    }

    /// Elements `i` (low lane) and `i + 1` (high lane).
    #[inline]
    fn load2(x: &[u8], stride: usize, offset: usize, i: usize) -> __m256i {
        _mm256_set_m128i(
            load1(x, stride, offset, i + 1),
            load1(x, stride, offset, i),
        )
    }

    #[inline]
    fn store2(x: &mut [u8], stride: usize, offset: usize, i: usize, v: __m256i) {
        store1(x, stride, offset, i, _mm256_castsi256_si128(v));
        store1(x, stride, offset, i + 1, _mm256_extracti128_si256::<1>(v));
    }

    /// The lane mask for the two bits `idx & 3`.
    #[inline]
    fn lane_mask(idx: u32) -> __m256i {
        let m = &LANE_MASKS.0[(idx & 3) as usize];
        // SAFETY: `m` is 32 readable bytes aligned to 32 (`LaneMasks` is 32-aligned and its
        // rows are 32 bytes).
        unsafe { _mm256_load_si256(m.as_ptr().cast()) }
    }

    /// `μ·v` in GF(2^128) (`x^128 + x^7 + x^2 + x + 1`). `μ` has 32 bits, so `v_hi·μ`
    /// overflows `x^128` by at most 31 bits, reduced by one more product with `0x87` (at
    /// most 39 bits: no second overflow).
    #[inline]
    #[allow(clippy::cast_possible_wrap)] // bit patterns of the constants
    fn mul_mix(v: __m128i) -> __m128i {
        const _: () = assert!(GF128_MIX.0 < 1 << 32);
        let mu = _mm_set_epi64x(0, GF128_MIX.to_u64s().0 as i64);
        let poly = _mm_set_epi64x(0, 0x87);
        let lo = _mm_clmulepi64_si128::<0x00>(v, mu);
        let hi = _mm_clmulepi64_si128::<0x01>(v, mu);
        let res = _mm_xor_si128(lo, _mm_slli_si128::<8>(hi));
        let over = _mm_srli_si128::<8>(hi);
        _mm_xor_si128(res, _mm_clmulepi64_si128::<0x00>(over, poly))
    }

    /// Row `R` of the current pair of rows (see the module documentation).
    #[inline]
    fn row<const R: usize, const MIX: bool>(w: &mut [__m256i; REGS], c: u32) {
        // Bits 1..=25 (R = 0) or 2..=26 (R = 1): elements R + 1 ..= R + 25 of the window.
        let bits = ((c & 0x00ff_ffff) | (1 << 24)) << (R + 1);
        let xi = if R == 0 {
            _mm256_permute2x128_si256::<0x00>(w[0], w[0])
        } else {
            _mm256_permute2x128_si256::<0x11>(w[0], w[0])
        };
        // Registers outside (R + 1) / 2 ..= (R + 25) / 2 have all-zero masks and are skipped
        // (constant bounds: the loop unrolls to the XORs needed).
        let (first, last) = ((R + 1) / PER, (R + 25) / PER);
        for (j, v) in w.iter_mut().enumerate() {
            if j >= first && j <= last {
                #[allow(clippy::cast_possible_truncation)] // j < 14
                let m = lane_mask(bits >> (PER * j) as u32);
                *v = _mm256_xor_si256(*v, _mm256_and_si256(xi, m));
            }
        }
        if MIX {
            let (j, e) = ((R + 25) / PER, (R + 25) % PER);
            w[j] = if e == 0 {
                _mm256_inserti128_si256::<0>(w[j], mul_mix(_mm256_castsi256_si128(w[j])))
            } else {
                let hi = _mm256_extracti128_si256::<1>(w[j]);
                _mm256_inserti128_si256::<1>(w[j], mul_mix(hi))
            };
        }
    }

    /// The pass over the elements `offset + stride·i` of `x` (see [`super::acc_blocks`]).
    fn run<const MIX: bool>(
        x: &mut [u8],
        stride: usize,
        offset: usize,
        start: usize,
        coeffs: &[u32],
    ) -> usize {
        // Whole elements only: an element ends at offset + stride·i + 16 ≤ x.len().
        let size = (x.len() + stride).saturating_sub(offset + 16) / stride;
        let end = start + coeffs.len();
        if start + PER > end || start + PER * REGS + PER > size {
            return start;
        }
        let mut w = [_mm256_setzero_si256(); REGS];
        for (j, v) in w.iter_mut().enumerate() {
            *v = load2(x, stride, offset, start + PER * j);
        }
        let mut i = start;
        while i + PER <= end && i + PER * REGS + PER <= size {
            let c = &coeffs[i - start..i - start + PER];
            row::<0, MIX>(&mut w, c[0]);
            row::<1, MIX>(&mut w, c[1]);
            store2(x, stride, offset, i, w[0]);
            // Spelled out (not a loop or `copy_within`), so that the window stays in
            // registers instead of becoming a memmove.
            w = [
                w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13],
                load2(x, stride, offset, i + PER * REGS),
            ];
            i += PER;
        }
        for (j, v) in w.iter().enumerate() {
            store2(x, stride, offset, i + PER * j, *v);
        }
        i
    }

    /// [`run`] with `μ` applied on the fixed diagonal if `mix`.
    pub(super) fn run_mixed(
        x: &mut [u8],
        stride: usize,
        offset: usize,
        start: usize,
        coeffs: &[u32],
        mix: bool,
    ) -> usize {
        if mix {
            run::<true>(x, stride, offset, start, coeffs)
        } else {
            run::<false>(x, stride, offset, start, coeffs)
        }
    }
    }

    crate::arch::avx2_bytes::enable! {
    /// 32 bytes of `x` from `at` on.
    #[inline]
    fn load32(x: &[u8], at: usize) -> __m256i {
        let s: &[u8; 32] = x[at..at + 32]
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 32 bytes"));
        // SAFETY: `s` is 32 readable bytes; the unaligned load has no alignment requirement.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    #[inline]
    fn store32(x: &mut [u8], at: usize, v: __m256i) {
        let d: &mut [u8; 32] = (&mut x[at..at + 32])
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 32 bytes"));
        // SAFETY: `d` is 32 writable bytes (exclusively borrowed); the unaligned store has no
        // alignment requirement, and every bit pattern is a valid byte.
        unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), v) }
    }

    /// The 32 bits of `m` as 32 bytes, `0xff` where the bit is set (byte `k` from bit `k`).
    #[inline]
    #[allow(clippy::cast_possible_wrap)] // bit patterns
    fn byte_mask(m: u32) -> __m256i {
        // Byte k of the result takes byte k / 8 of `m`, then tests bit k mod 8 of it.
        let spread = _mm256_setr_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, //
            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201_u64 as i64);
        let v = _mm256_shuffle_epi8(_mm256_set1_epi32(m as i32), spread);
        _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit)
    }

    /// The byte version: a window of 64 bytes (`x[i..i+64]`, two registers) slides 32
    /// rows at a time; row `i + r` broadcasts byte `r` of the window (the dword holding it
    /// to every dword, then the byte within it to every byte) and XORs it into the bytes
    /// its 25-bit mask, shifted by `r + 1`, selects.
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // mask halves, r < 32
    pub(super) fn acc_bytes(x: &mut [u8], start: usize, coeffs: &[u32]) -> usize {
        let size = x.len();
        let end = start + coeffs.len();
        if start + 32 > end || start + 96 > size {
            return start;
        }
        let mut w0 = load32(x, start);
        let mut w1 = load32(x, start + 32);
        let mut i = start;
        while i + 32 <= end && i + 96 <= size {
            let c = &coeffs[i - start..i - start + 32];
            for (r, &cr) in c.iter().enumerate() {
                let bits = u64::from(cr & 0x00ff_ffff | (1 << 24)) << (r + 1);
                let dword = _mm256_permutevar8x32_epi32(w0, _mm256_set1_epi32((r / 4) as i32));
                let xi = _mm256_shuffle_epi8(dword, _mm256_set1_epi8((r % 4) as i8));
                w0 = _mm256_xor_si256(w0, _mm256_and_si256(xi, byte_mask(bits as u32)));
                w1 = _mm256_xor_si256(w1, _mm256_and_si256(xi, byte_mask((bits >> 32) as u32)));
            }
            store32(x, i, w0);
            w0 = w1;
            w1 = load32(x, i + 64);
            i += 32;
        }
        store32(x, i, w0);
        store32(x, i + 32, w1);
        i
    }
    }
}

#[cfg(obliv_x86_simd)]
mod avx512 {
    //! The convolution with the band held in registers: a window of 32 elements (8 ZMM
    //! registers of 4 blocks, or 16 of 2 block pairs) slides over `x`, one register's worth
    //! of rows at a time; row `i + r` broadcasts element `r` of the window and XORs it into
    //! the lanes its coefficient bits select (one masked XOR per register: the 24
    //! coefficient bits and the fixed diagonal, shifted by `r + 1` elements and widened to
    //! 64-bit lanes); with `mix`, the element `v` on the fixed diagonal is then multiplied
    //! by `μ` (carry-less multiplications, VPCLMULQDQ). To keep that multiplication off the
    //! critical path, `μ·v` goes to a pending register and the element is cleared: the
    //! group's later rows XOR into the cleared element, and the sum (the same value, by
    //! linearity of XOR) is formed at the end of the group.
    use core::arch::x86_64::{
        __m512i, _mm512_bslli_epi128, _mm512_bsrli_epi128, _mm512_clmulepi64_epi128,
        _mm512_loadu_si512, _mm512_mask_xor_epi64, _mm512_maskz_mov_epi8, _mm512_maskz_mov_epi64,
        _mm512_permutexvar_epi8, _mm512_permutexvar_epi64, _mm512_set1_epi8, _mm512_set1_epi64,
        _mm512_setr_epi64, _mm512_setzero_si512, _mm512_storeu_si512, _mm512_xor_si512, _pdep_u64,
    };
    use obliv_core::Block;

    use crate::code::{BlockPair, GF128_MIX};

    crate::arch::avx512_loads::enable! {
    #[inline]
    fn load64(s: &[u8]) -> __m512i {
        let s: &[u8; 64] = s
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 64 bytes"));
        // SAFETY: `s` is 64 readable bytes; the unaligned load has no alignment requirement.
        unsafe { _mm512_loadu_si512(s.as_ptr().cast()) }
    }

    #[inline]
    fn store64(d: &mut [u8], v: __m512i) {
        let d: &mut [u8; 64] = d
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 64 bytes"));
        // SAFETY: `d` is 64 writable bytes (exclusively borrowed); the unaligned store has
        // no alignment requirement, and every bit pattern is valid for the element types
        // (blocks, block pairs, bytes).
        unsafe { _mm512_storeu_si512(d.as_mut_ptr().cast(), v) }
    }
    }

    crate::arch::avx512_blocks::enable! {
    /// `μ·v` in every 128-bit lane (GF(2^128), `x^128 + x^7 + x^2 + x + 1`). `μ` has 32
    /// bits, so `v_hi·μ` overflows `x^128` by at most 31 bits, reduced by one more product
    /// with `0x87` (at most 39 bits: no second overflow).
    #[inline]
    fn mul_mix(v: __m512i) -> __m512i {
        // The single reduction step below needs μ < 2^32.
        const _: () = assert!(GF128_MIX.0 < 1 << 32);
        #[allow(clippy::cast_possible_wrap)] // bit pattern of the 32-bit constant
        let mu = _mm512_set1_epi64(GF128_MIX.to_u64s().0 as i64);
        let poly = _mm512_set1_epi64(0x87);
        let lo = _mm512_clmulepi64_epi128::<0x00>(v, mu);
        let hi = _mm512_clmulepi64_epi128::<0x01>(v, mu);
        let res = _mm512_xor_si512(lo, _mm512_bslli_epi128::<8>(hi));
        let over = _mm512_bsrli_epi128::<8>(hi);
        _mm512_xor_si512(res, _mm512_clmulepi64_epi128::<0x00>(over, poly))
    }
    }

    /// The kernel for elements of `$lanes` 64-bit lanes (`$per` per register, `$regs`
    /// registers = a window of 32 elements), in a module of its own: `run::<MIX>`.
    macro_rules! conv_kernel {
        (
            $name:ident, $elem:ty, $per:literal, $regs:literal, $lanes:literal, $spread:literal,
            [$($r:literal),*], [$($next:literal),*]
        ) => {
            pub(super) mod $name {
                use super::{
                    __m512i, _mm512_maskz_mov_epi64, _mm512_mask_xor_epi64,
                    _mm512_permutexvar_epi64, _mm512_setr_epi64, _mm512_setzero_si512,
                    _mm512_xor_si512, _pdep_u64, load64, mul_mix, store64,
                };
                #[allow(unused_imports)] // the element types of the two expansions
                use super::{Block, BlockPair};

                const PER: usize = $per;
                const REGS: usize = $regs;
                const LANES: usize = $lanes;
                const ELEM_MASK: u64 = (1 << LANES) - 1;
                const HALF: usize = 64 / LANES; // elements per 64 mask bits
                /// The registers holding the fixed-diagonal elements of a group's rows.
                const FIRST_MIXED: usize = 25 / PER;
                const _: () = assert!((24 + PER) / PER <= FIRST_MIXED + 1); // the last row

                crate::arch::avx512_blocks::enable! {
                /// Row `R` of the current group (see the module documentation above).
                #[inline]
                #[allow(clippy::cast_possible_truncation)] // 8-bit slices of the lane mask
                fn row<const R: usize, const MIX: bool>(
                    w: &mut [__m512i; REGS],
                    pend: &mut [__m512i; 2],
                    bcast: __m512i,
                    c: u32,
                ) {
                    let bits = (u64::from(c & 0x00ff_ffff) | (1 << 24)) << (R + 1);
                    let m0 = _pdep_u64(bits & ((1 << HALF) - 1), $spread) * ELEM_MASK;
                    let m1 = _pdep_u64(bits >> HALF, $spread) * ELEM_MASK;
                    let xi = _mm512_permutexvar_epi64(bcast, w[0]);
                    // Row R reaches elements R + 1 ..= R + 25 only: the registers outside
                    // (3 of 16 for pairs, 1 of 8 for blocks) have all-zero masks and are
                    // skipped (constant bounds: the loop unrolls to the XORs needed).
                    let (first, last) = ((R + 1) / PER, ((R + 25) / PER).min(REGS - 1));
                    for (j, v) in w.iter_mut().enumerate() {
                        if j >= first && j <= last {
                            let m = if j < 8 { m0 >> (8 * j) } else { m1 >> (8 * (j - 8)) };
                            *v = _mm512_mask_xor_epi64(*v, m as u8, *v, xi);
                        }
                    }
                    if MIX {
                        let (j, e) = ((R + 25) / PER, (R + 25) % PER);
                        let m = (ELEM_MASK << (LANES * e)) as u8;
                        let prod = _mm512_maskz_mov_epi64(m, mul_mix(w[j]));
                        pend[j - FIRST_MIXED] = _mm512_xor_si512(pend[j - FIRST_MIXED], prod);
                        w[j] = _mm512_maskz_mov_epi64(!m, w[j]);
                    }
                }

                #[allow(clippy::cast_possible_wrap)] // lane indices < 8
                pub(in crate::arch) fn run<const MIX: bool>(
                    x: &mut [$elem],
                    start: usize,
                    coeffs: &[u32],
                ) -> usize {
                    let size = x.len();
                    let end = start + coeffs.len();
                    if start + PER > end || start + 32 + PER > size {
                        return start;
                    }
                    let mut w = [_mm512_setzero_si512(); REGS];
                    for (j, v) in w.iter_mut().enumerate() {
                        let at = start + PER * j;
                        *v = load64(bytemuck::cast_slice(&x[at..at + PER]));
                    }
                    // Lane indices broadcasting element r of a register.
                    let mut bcast = [_mm512_setzero_si512(); PER];
                    for (r, b) in bcast.iter_mut().enumerate() {
                        let l = (r * LANES) as i64;
                        let idx: [i64; 8] = core::array::from_fn(|q| l + (q % LANES) as i64);
                        *b = _mm512_setr_epi64(
                            idx[0], idx[1], idx[2], idx[3], idx[4], idx[5], idx[6], idx[7],
                        );
                    }
                    let mut i = start;
                    while i + PER <= end && i + 32 + PER <= size {
                        // μ-products of this group's fixed-diagonal elements (see the
                        // module documentation), added back at the end of the group.
                        let mut pend = [_mm512_setzero_si512(); 2];
                        let c = &coeffs[i - start..i - start + PER];
                        $( row::<$r, MIX>(&mut w, &mut pend, bcast[$r], c[$r]); )*
                        if MIX {
                            for (q, p) in pend.iter().enumerate() {
                                let j = FIRST_MIXED + q;
                                w[j] = _mm512_xor_si512(w[j], *p);
                            }
                        }
                        store64(bytemuck::cast_slice_mut(&mut x[i..i + PER]), w[0]);
                        let at = i + 32;
                        // Spelled out (not a loop or `copy_within`), so that the window
                        // stays in registers instead of becoming a memmove.
                        w = [$(w[$next],)* load64(bytemuck::cast_slice(&x[at..at + PER]))];
                        i += PER;
                    }
                    for (j, v) in w.iter().enumerate() {
                        let at = i + PER * j;
                        store64(bytemuck::cast_slice_mut(&mut x[at..at + PER]), *v);
                    }
                    i
                }
                }
            }
        };
    }

    conv_kernel!(
        acc_blocks,
        Block,
        4,
        8,
        2,
        0x5555_5555_5555_5555,
        [0, 1, 2, 3],
        [1, 2, 3, 4, 5, 6, 7]
    );
    conv_kernel!(
        acc_pairs,
        BlockPair,
        2,
        16,
        4,
        0x1111_1111_1111_1111,
        [0, 1],
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
    );

    crate::arch::avx512_bytes::enable! {
    /// The byte version: a window of 128 bytes (`x[i..i+128]`, two registers) slides 64
    /// rows at a time; row `i + r` broadcasts byte `r` of the window (a VBMI permute) and
    /// XORs it into the bytes its 25-bit mask, shifted by `r + 1`, selects.
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // mask halves, r < 64
    pub(super) fn acc_bytes(x: &mut [u8], start: usize, coeffs: &[u32]) -> usize {
        let size = x.len();
        let end = start + coeffs.len();
        if start + 64 > end || start + 192 > size {
            return start;
        }
        let mut w0 = load64(&x[start..start + 64]);
        let mut w1 = load64(&x[start + 64..start + 128]);
        let mut i = start;
        while i + 64 <= end && i + 192 <= size {
            let c = &coeffs[i - start..i - start + 64];
            for (r, &cr) in c.iter().enumerate() {
                let bits = u128::from(cr & 0x00ff_ffff | (1 << 24)) << (r + 1);
                let xi = _mm512_permutexvar_epi8(_mm512_set1_epi8(r as i8), w0);
                w0 = _mm512_xor_si512(w0, _mm512_maskz_mov_epi8(bits as u64, xi));
                w1 = _mm512_xor_si512(w1, _mm512_maskz_mov_epi8((bits >> 64) as u64, xi));
            }
            store64(&mut x[i..i + 64], w0);
            w0 = w1;
            w1 = load64(&x[i + 128..i + 192]);
            i += 64;
        }
        store64(&mut x[i..i + 64], w0);
        store64(&mut x[i + 64..i + 128], w1);
        i
    }
    }
}
