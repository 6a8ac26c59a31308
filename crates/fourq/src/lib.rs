//! FourQ in pure, constant-time Rust: field, curve, endomorphisms, scalar multiplication, encoding and hashing to the curve.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
