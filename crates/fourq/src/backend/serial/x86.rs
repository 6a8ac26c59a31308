//! Run-time dispatch of the serial variable-base multiplication and of the encoding's
//! inversion to copies of the same portable code compiled with `bmi2`, `adx` and `avx2`
//! enabled (as curve25519-dalek selects its AVX2 backend at run time).
//!
//! Nothing changes in the arithmetic: the functions below call the very same
//! `#[inline(always)]` code as the portable path, so LLVM may use `mulx`/`adcx` for the
//! `u64 × u64 → u128` products and vector registers for the full-scan table look-up (which
//! still reads and masks every entry). Results are bit-identical; on a CPU without these
//! features the portable code runs. All of these instructions run in data-independent time.
#![allow(unsafe_code)]

use crate::field::Fp2;
use crate::point::Point;

/// Does this CPU have `bmi2`, `adx` and `avx2`? Cached by the standard library.
#[inline]
fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("adx")
            && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2,adx,avx2,avx512f,avx512vl,avx512bw,avx512dq")]
fn mul_endo_bmi2(p: &Point, k: &[u64; 4]) -> Point {
    crate::scalar_mul::mul_endo_portable(p, k)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2,adx,avx2,avx512f,avx512vl,avx512bw,avx512dq")]
fn invert_bmi2(a: &Fp2) -> Fp2 {
    a.invert_portable()
}

/// `[k]P` with the CL15 method ([`crate::scalar_mul::mul_endo_portable`]), on the fastest
/// compiled copy this CPU runs.
pub(crate) fn mul_endo(p: &Point, k: &[u64; 4]) -> Point {
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: available() has just confirmed that the CPU supports bmi2, adx and avx2,
        // the target features `mul_endo_bmi2` is compiled for.
        return unsafe { mul_endo_bmi2(p, k) };
    }
    crate::scalar_mul::mul_endo_portable(p, k)
}

/// `a^−1` in GF(p²) (0 for 0), on the fastest compiled copy this CPU runs.
pub(crate) fn invert(a: &Fp2) -> Fp2 {
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: available() has just confirmed that the CPU supports bmi2, adx and avx2,
        // the target features `invert_bmi2` is compiled for.
        return unsafe { invert_bmi2(a) };
    }
    a.invert_portable()
}
