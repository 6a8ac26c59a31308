//! Architecture hooks: software prefetch for the encoder's random reads.
//!
//! The only `unsafe` of the crate lives here.
#![allow(unsafe_code)]

/// Hints the CPU to bring `slice[i]` into the L1 cache. Never faults and has no effect on
/// the program's results; a no-op off x86-64.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = slice.as_ptr().wrapping_add(i).cast::<i8>();
        // SAFETY: `_mm_prefetch` needs only SSE, which is part of every x86-64 target (the
        // baseline `x86_64` target enables it), and PREFETCHh is a hint that never faults nor
        // reads memory architecturally, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (slice, i);
    }
}

/// Whether the AVX-512 convolution kernel for blocks can run on this CPU (checked once).
#[cfg(target_arch = "x86_64")]
fn have_avx512() -> bool {
    use std::sync::OnceLock;
    static HAVE: OnceLock<bool> = OnceLock::new();
    *HAVE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("bmi2")
    })
}

/// Whether the AVX-512 convolution kernel for bytes can run on this CPU (checked once).
#[cfg(target_arch = "x86_64")]
fn have_avx512_bytes() -> bool {
    use std::sync::OnceLock;
    static HAVE: OnceLock<bool> = OnceLock::new();
    *HAVE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    })
}

/// Whether [`acc_bytes`] runs a vectorised kernel on this CPU.
pub(crate) fn have_fast_bytes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        have_avx512_bytes()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// As [`acc_blocks`] for byte elements (each byte a GF(2)^8 vector, e.g. one bit 0/1).
pub(crate) fn acc_bytes(x: &mut [u8], start: usize, coeffs: &[u32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if have_avx512_bytes() {
            // SAFETY: the CPU supports AVX-512F, AVX-512BW and AVX-512VBMI (checked at run
            // time just above), the only requirement of calling a function with these
            // target features.
            return unsafe { avx512::acc_bytes(x, start, coeffs) };
        }
    }
    let _ = (x, coeffs);
    start
}

/// Whether [`acc_blocks`] runs a vectorised kernel on this CPU.
pub(crate) fn have_fast_blocks() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        have_avx512()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs rows `start, start + 1, …` of one binary convolution pass over blocks (row `i`:
/// `x[i+1+p] ^= c_{i,p}·x[i]` for the set bits `p < 24` of `coeffs[i − start]`, then
/// `x[i+25] ^= x[i]`) for as long as the rows stay clear of the end of `x` (no wrap-around),
/// and returns the first row it did not run. Same results as the scalar rows; does nothing
/// (returns `start`) without AVX-512.
pub(crate) fn acc_blocks(x: &mut [obliv_core::Block], start: usize, coeffs: &[u32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if have_avx512() {
            // SAFETY: the CPU supports AVX-512F and BMI2 (checked at run time just above),
            // the only requirement of calling a function with these target features.
            return unsafe { avx512::acc_blocks(x, start, coeffs) };
        }
    }
    let _ = (x, coeffs);
    start
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! The convolution with the band held in registers: a window of 32 blocks (8 ZMM
    //! registers, `x[i..i+32]`) slides over `x` four rows at a time; row `i + r` XORs the
    //! broadcast block `r` of the window into the lanes its coefficient bits select (one
    //! masked XOR per register, the mask being the 24 coefficient bits and the fixed
    //! diagonal, shifted by `r + 1` blocks and doubled to 64-bit lanes).
    use core::arch::x86_64::{
        __m512i, _mm512_loadu_si512, _mm512_mask_xor_epi64, _mm512_maskz_mov_epi8,
        _mm512_permutexvar_epi8, _mm512_set1_epi8, _mm512_shuffle_i64x2, _mm512_storeu_si512,
        _mm512_xor_si512, _pdep_u64,
    };
    use obliv_core::Block;

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load4(s: &[Block]) -> __m512i {
        let s: &[Block; 4] = s
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 4 blocks"));
        // SAFETY: `s` is 64 readable bytes (four blocks); the unaligned load has no
        // alignment requirement.
        unsafe { _mm512_loadu_si512(s.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store4(d: &mut [Block], v: __m512i) {
        let d: &mut [Block; 4] = d
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 4 blocks"));
        // SAFETY: `d` is 64 writable bytes (four blocks, exclusively borrowed); the
        // unaligned store has no alignment requirement, and any bit pattern is a valid block.
        unsafe { _mm512_storeu_si512(d.as_mut_ptr().cast(), v) }
    }

    /// Row `R` (0..4) of the current group of four.
    #[inline]
    #[target_feature(enable = "avx512f,bmi2")]
    #[allow(clippy::cast_possible_truncation)] // taking 8-bit mask slices
    fn row<const R: u32, const SHUF: i32>(w: &mut [__m512i; 8], c: u32) {
        let bits = (u64::from(c & 0x00ff_ffff) | (1 << 24)) << (R + 1);
        let m = _pdep_u64(bits, 0x5555_5555_5555_5555) * 3;
        let xi = _mm512_shuffle_i64x2::<SHUF>(w[0], w[0]);
        for (j, v) in w.iter_mut().enumerate() {
            *v = _mm512_mask_xor_epi64(*v, (m >> (8 * j)) as u8, *v, xi);
        }
    }

    #[target_feature(enable = "avx512f,bmi2")]
    pub(super) fn acc_blocks(x: &mut [Block], start: usize, coeffs: &[u32]) -> usize {
        let size = x.len();
        let end = start + coeffs.len();
        if start + 4 > end || start + 36 > size {
            return start;
        }
        let mut w = [load4(&x[start..start + 4]); 8];
        for (j, v) in w.iter_mut().enumerate().skip(1) {
            *v = load4(&x[start + 4 * j..start + 4 * j + 4]);
        }
        let mut i = start;
        while i + 4 <= end && i + 36 <= size {
            let c = &coeffs[i - start..i - start + 4];
            row::<0, 0x00>(&mut w, c[0]);
            row::<1, 0x55>(&mut w, c[1]);
            row::<2, 0xaa>(&mut w, c[2]);
            row::<3, 0xff>(&mut w, c[3]);
            store4(&mut x[i..i + 4], w[0]);
            w = [
                w[1],
                w[2],
                w[3],
                w[4],
                w[5],
                w[6],
                w[7],
                load4(&x[i + 32..i + 36]),
            ];
            i += 4;
        }
        for (j, v) in w.iter().enumerate() {
            store4(&mut x[i + 4 * j..i + 4 * j + 4], *v);
        }
        i
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load64(s: &[u8]) -> __m512i {
        let s: &[u8; 64] = s
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 64 bytes"));
        // SAFETY: `s` is 64 readable bytes; the unaligned load has no alignment requirement.
        unsafe { _mm512_loadu_si512(s.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store64(d: &mut [u8], v: __m512i) {
        let d: &mut [u8; 64] = d
            .try_into()
            .unwrap_or_else(|_| unreachable!("slice of 64 bytes"));
        // SAFETY: `d` is 64 writable bytes (exclusively borrowed); the unaligned store has
        // no alignment requirement.
        unsafe { _mm512_storeu_si512(d.as_mut_ptr().cast(), v) }
    }

    /// The byte version: a window of 128 bytes (`x[i..i+128]`, two registers) slides 64
    /// rows at a time; row `i + r` broadcasts byte `r` of the window (a VBMI permute) and
    /// XORs it into the bytes its 25-bit mask, shifted by `r + 1`, selects.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
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
