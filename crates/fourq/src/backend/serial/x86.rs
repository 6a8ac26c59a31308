//! Run-time dispatch of the serial variable-base multiplication (a recoded scalar times one
//! point: the single `[k]P` and every point of the serial same-scalar batches enter here) and
//! of the encoding's inversion to a copy of the same portable code compiled with `bmi2`, `adx`
//! and `avx2` enabled (every x86-64 CPU since Broadwell/Zen; as curve25519-dalek selects its
//! AVX2 backend at run time), entered only after all three were detected. (An earlier copy
//! also enabled AVX-512F/VL/BW/DQ after checking only these three: undefined behaviour on
//! AVX2-only CPUs. One copy is kept, not a second one with AVX-512: each copy is another fully
//! inlined multiplication to compile, and what the copy gains is mostly the `mulx`/`adcx`
//! products.)
//!
//! Nothing changes in the arithmetic: the functions below call the very same
//! `#[inline(always)]` code as the portable path, so LLVM may use `mulx`/`adcx` for the
//! `u64 × u64 → u128` products and vector registers for the full-scan table look-up (which
//! still reads and masks every entry). Results are bit-identical; on a CPU without these
//! features the portable code runs. All of these instructions run in data-independent time.
#![allow(unsafe_code)]

use crate::field::Fp2;
use crate::point::Point;
use crate::scalar_mul::Recoded;

obliv_cpu::feature_set! {
    /// The serial copy for AVX2-class CPUs.
    pub(crate) mod avx2 = ["bmi2", "adx", "avx2"];
}

#[cfg(obliv_x86_simd)]
mod copies {
    use crate::field::Fp2;
    use crate::point::Point;
    use crate::scalar_mul::Recoded;

    crate::backend::serial::x86::avx2::enable! {
        pub(super) fn mul_recoded_avx2(p: &Point, rec: &Recoded) -> Point {
            crate::scalar_mul::mul_recoded_portable(p, rec)
        }

        pub(super) fn invert_avx2(a: &Fp2) -> Fp2 {
            a.invert_portable()
        }
    }
}

/// Which compiled copy of the serial code [`mul_recoded`] and [`invert`] run on this CPU:
/// `"avx2"` (BMI2, ADX, AVX2) or `"portable"`.
pub(crate) fn serial_backend() -> &'static str {
    if avx2::detected() { "avx2" } else { "portable" }
}

/// `[k]P` for a recoded `k` with the CL15 method
/// ([`crate::scalar_mul::mul_recoded_portable`]), on the fastest compiled copy this CPU runs.
pub(crate) fn mul_recoded(p: &Point, rec: &Recoded) -> Point {
    #[cfg(obliv_x86_simd)]
    if avx2::detected() {
        // SAFETY: `avx2::detected()` confirmed every feature the copy is compiled with.
        return unsafe { copies::mul_recoded_avx2(p, rec) };
    }
    crate::scalar_mul::mul_recoded_portable(p, rec)
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
        fn every_copy_matches_portable(
            kb in any::<[u8; 32]>(),
            pb in any::<[u8; 32]>(),
        ) {
            let k = Scalar::from_bytes_mod_order(&kb).limbs();
            let rec = crate::scalar_mul::recode_u256(&k);
            let p = Point::hash_to_curve(&pb);
            let want = crate::scalar_mul::mul_recoded_portable(&p, &rec).to_bytes();
            prop_assert_eq!(mul_recoded(&p, &rec).to_bytes(), want);
            let z = p.x;
            let want_inv = limbs(&z.invert_portable());
            prop_assert_eq!(limbs(&invert(&z)), want_inv);
            #[cfg(obliv_x86_simd)]
            if avx2::detected() {
                // SAFETY: detected just above.
                let got = unsafe { copies::mul_recoded_avx2(&p, &rec) };
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
