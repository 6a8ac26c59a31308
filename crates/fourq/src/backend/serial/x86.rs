//! Run-time dispatch of the serial variable-base multiplication and of the encoding's
//! inversion to a copy of the same portable code compiled with `bmi2`, `adx` and `avx2`
//! enabled (every x86-64 CPU since Broadwell/Zen; as curve25519-dalek selects its AVX2 backend
//! at run time), entered only after all three were detected. (An earlier copy also enabled
//! AVX-512F/VL/BW/DQ after checking only these three: undefined behaviour on AVX2-only CPUs.
//! One copy is kept, not a second one with AVX-512: each copy is another fully inlined
//! multiplication to compile, and what the copy gains is mostly the `mulx`/`adcx` products.)
//!
//! Nothing changes in the arithmetic: the functions below call the very same
//! `#[inline(always)]` code as the portable path, so LLVM may use `mulx`/`adcx` for the
//! `u64 × u64 → u128` products and vector registers for the full-scan table look-up (which
//! still reads and masks every entry). Results are bit-identical; on a CPU without these
//! features the portable code runs. All of these instructions run in data-independent time.
#![allow(unsafe_code)]

use crate::field::Fp2;
use crate::point::Point;

obliv_cpu::feature_set! {
    /// The serial copy for AVX2-class CPUs.
    pub(crate) mod avx2 = ["bmi2", "adx", "avx2"];
}

#[cfg(obliv_x86_simd)]
mod copies {
    use crate::field::Fp2;
    use crate::point::Point;

    crate::backend::serial::x86::avx2::enable! {
        pub(super) fn mul_endo_avx2(p: &Point, k: &[u64; 4]) -> Point {
            crate::scalar_mul::mul_endo_portable(p, k)
        }

        pub(super) fn invert_avx2(a: &Fp2) -> Fp2 {
            a.invert_portable()
        }
    }
}

/// Which compiled copy of the serial code [`mul_endo`] and [`invert`] run on this CPU:
/// `"avx2"` (BMI2, ADX, AVX2) or `"portable"`.
pub(crate) fn serial_backend() -> &'static str {
    if avx2::detected() { "avx2" } else { "portable" }
}

/// `[k]P` with the CL15 method ([`crate::scalar_mul::mul_endo_portable`]), on the fastest
/// compiled copy this CPU runs.
pub(crate) fn mul_endo(p: &Point, k: &[u64; 4]) -> Point {
    #[cfg(obliv_x86_simd)]
    if avx2::detected() {
        // SAFETY: `avx2::detected()` confirmed every feature the copy is compiled with.
        return unsafe { copies::mul_endo_avx2(p, k) };
    }
    crate::scalar_mul::mul_endo_portable(p, k)
}

/// `a^−1` in GF(p²) (0 for 0), on the fastest compiled copy this CPU runs.
pub(crate) fn invert(a: &Fp2) -> Fp2 {
    #[cfg(obliv_x86_simd)]
    if avx2::detected() {
        // SAFETY: `avx2::detected()` confirmed every feature the copy is compiled with.
        return unsafe { copies::invert_avx2(a) };
    }
    a.invert_portable()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scalar;
    use proptest::prelude::*;

    fn limbs(a: &Fp2) -> [[u64; 2]; 2] {
        [a.a0.0, a.a1.0]
    }

    proptest! {
        /// Every copy this CPU can run gives the portable result, bit for bit.
        #[test]
        fn every_copy_matches_portable(kb in any::<[u8; 32]>(), pb in any::<[u8; 32]>()) {
            let k = Scalar::from_bytes_mod_order(&kb).limbs();
            let p = Point::hash_to_curve(&pb);
            let want = crate::scalar_mul::mul_endo_portable(&p, &k).to_bytes();
            prop_assert_eq!(mul_endo(&p, &k).to_bytes(), want);
            let z = p.x;
            let want_inv = limbs(&z.invert_portable());
            prop_assert_eq!(limbs(&invert(&z)), want_inv);
            #[cfg(obliv_x86_simd)]
            if avx2::detected() {
                // SAFETY: detected just above.
                let got = unsafe { copies::mul_endo_avx2(&p, &k) };
                prop_assert_eq!(got.to_bytes(), want);
                // SAFETY: detected just above.
                prop_assert_eq!(limbs(&unsafe { copies::invert_avx2(&z) }), want_inv);
            }
        }
    }

    #[test]
    fn reports_a_backend() {
        let b = serial_backend();
        eprintln!("obliv-fourq serial copy on this CPU: {b}");
        assert!(["avx2", "portable"].contains(&b));
    }
}
