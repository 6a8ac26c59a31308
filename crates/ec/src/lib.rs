//! One prime-order group trait for ECDH-style protocols, with Curve25519, FourQ, secp256k1, SM2 and P-256 behind it.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
