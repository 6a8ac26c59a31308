//! The CPU feature sets of this crate's SIMD backends, each declared once (`obliv_cpu`): the
//! same list gives the run-time detector (`<set>::detected()`) and the `<set>::enable!`
//! wrapper every kernel function of that backend is compiled with, so a kernel can only be
//! entered after checking exactly the features it uses.
//!
//! Both sets report themselves absent when x86 SIMD is compiled out (`--cfg obliv_portable`,
//! or a target other than x86-64), on CPUs without them, and when one of their features is
//! switched off by `obliv_cpu::disable` or the environment variable `OBLIV_CPU_DISABLE`
//! (e.g. `OBLIV_CPU_DISABLE=avx512ifma`); every batch call asks again, so switching off takes
//! effect at any time.

obliv_cpu::feature_set! {
    /// The eight-lane Curve25519 kernels of `ifma25519` (ristretto255, the X25519-style ladder,
    /// their hashes and the lanes' SHA-512), GF(2^255 − 19) in radix 2^51.
    pub(crate) mod ifma25519 = ["avx512f", "avx512dq", "avx512ifma"];
}

obliv_cpu::feature_set! {
    /// The eight-lane short-Weierstrass kernels of `ifma_weierstrass` (SM2, P-256, secp256k1).
    pub(crate) mod ifma_weierstrass = ["avx512f", "avx512ifma"];
}
