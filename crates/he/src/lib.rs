//! Homomorphic encryption: Paillier (CRT, DJN, encodings, batches) and ElGamal (EC additive, multiplicative).
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
