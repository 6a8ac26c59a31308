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
//! Big integers are GMP's (through `rug`); see the crate README for the measurements behind
//! that choice and what is and is not constant time.
// Unsafe code is denied everywhere except the AVX-512 IFMA module (intrinsics and vector
// loads), where every block carries a SAFETY comment.
#![deny(unsafe_code)]

mod bigint;
pub mod elgamal;
pub mod error;
mod ifma;
pub mod paillier;
pub mod reencrypt;

pub use error::{Error, Result};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
pub use rug::Integer;
