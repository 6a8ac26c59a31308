//! Architecture hooks: AVX-512 kernels for the ExConv convolution (the accumulator), chosen
//! at run time with the portable scalar rows of [`crate::code`] as the fallback. (The
//! expander's prefetch hints are `obliv_core::mem::prefetch_l2`.)
//!
//! The only `unsafe` of the crate lives here: calls of `#[target_feature]` functions after
//! run-time detection, and unaligned 64-byte loads and stores from bounds-checked slices.
#![allow(unsafe_code)]

use obliv_core::Block;

use crate::code::BlockPair;

obliv_cpu::feature_set! {
    /// The convolution kernels for blocks and block pairs: AVX-512F/BW, BMI2 (`pdep`) and
    /// VPCLMULQDQ (the `μ` mix).
    mod avx512_blocks = ["avx512f", "avx512bw", "bmi2", "vpclmulqdq"];
}

obliv_cpu::feature_set! {
    /// The convolution kernel for bytes: AVX-512F/BW and VBMI (byte permutes).
    mod avx512_bytes = ["avx512f", "avx512bw", "avx512vbmi"];
}

obliv_cpu::feature_set! {
    /// The 64-byte loads and stores both kernels share (a subset of both sets above).
    mod avx512_loads = ["avx512f"];
}

/// Whether [`acc_blocks`] and [`acc_pairs`] run a vectorised kernel on this CPU.
pub(crate) fn have_fast_blocks() -> bool {
    avx512_blocks::detected()
}

/// Whether [`acc_bytes`] runs a vectorised kernel on this CPU.
pub(crate) fn have_fast_bytes() -> bool {
    avx512_bytes::detected()
}

/// Runs rows `start, start + 1, …` of one convolution pass over blocks — row `i`:
/// `x[i+1+p] ^= c_{i,p}·x[i]` for the set bits `p < 24` of `coeffs[i − start]`, then
/// `x[i+25] = μ·(x[i+25] ^ x[i])` with `μ` = [`crate::code::GF128_MIX`] if `mix`, else 1 —
/// for as long as the rows stay clear of the end of `x` (no wrap-around), and returns the
/// first row it did not run. Same results as the scalar rows; runs none (returns `start`)
/// without the CPU features.
pub(crate) fn acc_blocks(x: &mut [Block], start: usize, coeffs: &[u32], mix: bool) -> usize {
    #[cfg(obliv_x86_simd)]
    {
        if avx512_blocks::detected() {
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
    }
    let _ = (x, coeffs, mix);
    start
}

/// As [`acc_blocks`] for block pairs (both halves transformed alike).
pub(crate) fn acc_pairs(x: &mut [BlockPair], start: usize, coeffs: &[u32], mix: bool) -> usize {
    #[cfg(obliv_x86_simd)]
    {
        if avx512_blocks::detected() {
            // SAFETY: as in `acc_blocks`: the target features were detected at run time.
            return unsafe {
                if mix {
                    avx512::acc_pairs::run::<true>(x, start, coeffs)
                } else {
                    avx512::acc_pairs::run::<false>(x, start, coeffs)
                }
            };
        }
    }
    let _ = (x, coeffs, mix);
    start
}

/// As [`acc_blocks`] for byte elements (each byte a GF(2)^8 vector, e.g. one bit 0/1), for
/// the binary code (`μ` acts as the identity on bytes, so `mix` changes nothing).
pub(crate) fn acc_bytes(x: &mut [u8], start: usize, coeffs: &[u32]) -> usize {
    #[cfg(obliv_x86_simd)]
    {
        if avx512_bytes::detected() {
            // SAFETY: the CPU supports AVX-512F, AVX-512BW and AVX-512VBMI (checked at run
            // time just above), the only requirement of calling a function with these
            // target features.
            return unsafe { avx512::acc_bytes(x, start, coeffs) };
        }
    }
    let _ = (x, coeffs);
    start
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
