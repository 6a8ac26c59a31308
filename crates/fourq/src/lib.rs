//! FourQ in pure, constant-time Rust: field, curve, endomorphisms, scalar multiplication,
//! encoding and hashing to the curve.
//!
//! FourQ is the twisted Edwards curve `−x² + y² = 1 + d·x²·y²` over GF(p²), p = 2¹²⁷ − 1, with a
//! prime-order subgroup of 246 bits and two efficiently computable endomorphisms that give a
//! four-dimensional scalar decomposition ([CL15]: Costello and Longa, "FourQ: four-dimensional
//! decompositions on a Q-curve over the Mersenne prime", ASIACRYPT 2015,
//! <https://eprint.iacr.org/2015/565>). Constants and known answers come from Microsoft's
//! FourQlib.
#![forbid(unsafe_code)]

mod api;
mod backend;
mod constants;
mod error;
mod field;
mod group_impl;
mod hash;
mod point;
mod scalar;
mod scalar_mul;

pub use error::Error;
pub use point::Point;
pub use scalar::{Scalar, SecretScalar};
