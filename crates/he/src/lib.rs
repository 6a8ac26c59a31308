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
#![forbid(unsafe_code)]

mod bigint;
pub mod elgamal;
pub mod error;
pub mod paillier;
pub mod reencrypt;

pub use error::{Error, Result};
pub use rug::Integer;
