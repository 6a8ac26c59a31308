//! Homomorphic encryption for private computation.
//!
//! * [`paillier`] — Paillier with `g = n + 1`: DJN short-exponent public-key encryption with a
//!   fixed-base table, CRT secret-key encryption and decryption, homomorphic addition,
//!   subtraction, plaintext addition and scalar multiplication, negation, re-randomisation,
//!   python-phe-compatible fixed-point encoding, batches on rayon, serde.
//! * [`elgamal`] — additive EC ElGamal over any prime-order group implementing the RustCrypto
//!   `group` traits (Ristretto today) with a shareable baby-step giant-step table, and
//!   multiplicative ElGamal over the RFC 3526 MODP groups.
//! * [`reencrypt`] — the HE study's pipeline: a trusted re-encryption agent that converts
//!   Paillier ciphertexts to multiplicative ElGamal and back, so that products of sums and a
//!   small linear regression can be computed on encrypted inputs.
//!
//! Big integers are our own, in pure Rust: [`Integer`] for the generic (variable-time)
//! arithmetic of the API, and a constant-time Montgomery backend on 64-bit limbs (a portable
//! `u128` kernel, an x86-64 `mulx`/`adcx`/`adox` kernel chosen at run time, and an AVX-512 IFMA
//! exponentiation) for everything that touches secrets. See the crate README for the
//! measurements behind that choice and what is and is not constant time.
// Unsafe code is denied everywhere except the AVX-512 IFMA module (intrinsics and vector
// loads) and the ADX kernel (inline assembly), where every block carries a SAFETY comment.
#![deny(unsafe_code)]

mod bigint;
pub mod elgamal;
pub mod error;
mod ifma;
pub mod paillier;
mod par;
pub mod reencrypt;

pub use bigint::{Integer, ParseIntegerError};
pub use error::{Error, Result};

/// Switches for benchmarks that compare the backends in one binary. Not part of the API: they
/// change global state read when keys, groups and tables are created.
#[doc(hidden)]
pub mod __bench {
    /// Keys, groups and tables created after `set_ifma(false)` do not use the AVX-512 IFMA
    /// path even when the CPU has it; `set_ifma(true)` (the default) restores it.
    pub fn set_ifma(on: bool) {
        crate::ifma::disable(!on);
    }

    /// Montgomery contexts created after `set_adx(false)` use the portable `u128` kernel even
    /// when the CPU has BMI2 and ADX; `set_adx(true)` (the default) restores the assembly one.
    pub fn set_adx(on: bool) {
        crate::bigint::monty::force_portable(!on);
    }
}

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
