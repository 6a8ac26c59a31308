//! Run-time dispatch of the serial variable-base multiplication and of the encoding's
//! inversion to copies of the same portable code compiled with more CPU features enabled (as
//! curve25519-dalek selects its AVX2 backend at run time): one copy with `bmi2`, `adx` and
//! `avx2` (every x86-64 CPU since Haswell/Zen), and one that adds AVX-512F/VL/BW/DQ (Skylake
//! servers, Ice Lake and later, Zen 4), each entered only after its own feature set was
//! detected in full.
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

obliv_cpu::feature_set! {
    /// The serial copy for AVX-512 CPUs (wider registers for the table scan).
    pub(crate) mod avx512 = ["bmi2", "adx", "avx2", "avx512f", "avx512vl", "avx512bw", "avx512dq"];
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

    crate::backend::serial::x86::avx512::enable! {
        pub(super) fn mul_endo_avx512(p: &Point, k: &[u64; 4]) -> Point {
            crate::scalar_mul::mul_endo_portable(p, k)
        }

        pub(super) fn invert_avx512(a: &Fp2) -> Fp2 {
            a.invert_portable()
        }
    }
}

/// Which compiled copy of the serial code [`mul_endo`] and [`invert`] run on this CPU:
/// `"avx512"`, `"avx2"` or `"portable"`.
pub(crate) fn serial_backend() -> &'static str {
    if avx512::detected() {
        "avx512"
    } else if avx2::detected() {
        "avx2"
    } else {
        "portable"
    }
}

/// `[k]P` with the CL15 method ([`crate::scalar_mul::mul_endo_portable`]), on the fastest
/// compiled copy this CPU runs.
pub(crate) fn mul_endo(p: &Point, k: &[u64; 4]) -> Point {
    #[cfg(obliv_x86_simd)]
    {
        if avx512::detected() {
            // SAFETY: `avx512::detected()` confirmed every feature the copy is compiled with.
            return unsafe { copies::mul_endo_avx512(p, k) };
        }
        if avx2::detected() {
            // SAFETY: `avx2::detected()` confirmed every feature the copy is compiled with.
            return unsafe { copies::mul_endo_avx2(p, k) };
        }
    }
    crate::scalar_mul::mul_endo_portable(p, k)
}

/// `a^−1` in GF(p²) (0 for 0), on the fastest compiled copy this CPU runs.
pub(crate) fn invert(a: &Fp2) -> Fp2 {
    #[cfg(obliv_x86_simd)]
    {
        if avx512::detected() {
            // SAFETY: `avx512::detected()` confirmed every feature the copy is compiled with.
            return unsafe { copies::invert_avx512(a) };
        }
        if avx2::detected() {
            // SAFETY: `avx2::detected()` confirmed every feature the copy is compiled with.
            return unsafe { copies::invert_avx2(a) };
        }
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
            {
                if avx2::detected() {
                    // SAFETY: detected just above.
                    let got = unsafe { copies::mul_endo_avx2(&p, &k) };
                    prop_assert_eq!(got.to_bytes(), want);
                    // SAFETY: detected just above.
                    prop_assert_eq!(limbs(&unsafe { copies::invert_avx2(&z) }), want_inv);
                }
                if avx512::detected() {
                    // SAFETY: detected just above.
                    let got = unsafe { copies::mul_endo_avx512(&p, &k) };
                    prop_assert_eq!(got.to_bytes(), want);
                    // SAFETY: detected just above.
                    prop_assert_eq!(limbs(&unsafe { copies::invert_avx512(&z) }), want_inv);
                }
            }
        }
    }

    #[test]
    fn reports_a_backend() {
        let b = serial_backend();
        eprintln!("obliv-fourq serial copy on this CPU: {b}");
        assert!(["avx512", "avx2", "portable"].contains(&b));
    }
}
