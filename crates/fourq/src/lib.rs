//! FourQ in pure, constant-time Rust: field, curve, endomorphisms, scalar multiplication,
//! encoding and hashing to the curve.
//!
//! FourQ is the twisted Edwards curve `−x² + y² = 1 + d·x²·y²` over GF(p²), p = 2¹²⁷ − 1, with a
//! prime-order subgroup of 246 bits and two efficiently computable endomorphisms that give a
//! four-dimensional scalar decomposition (CL15: Costello and Longa, "FourQ: four-dimensional
//! decompositions on a Q-curve over the Mersenne prime", ASIACRYPT 2015,
//! <https://eprint.iacr.org/2015/565>). Constants and known answers come from Microsoft's
//! FourQlib.
//!
//! ```
//! use obliv_fourq::{Point, Scalar};
//! use rand::{SeedableRng, rngs::StdRng};
//!
//! let mut rng = StdRng::seed_from_u64(1);
//! let a = Scalar::random(&mut rng); // Alice's key
//! let b = Scalar::random(&mut rng); // Bob's key
//! let h = Point::hash_to_curve(b"alice@example.com");
//! let ha = h * a; // Alice sends ha.to_bytes()
//! let hab = Point::decode(&ha.to_bytes()).unwrap() * b;
//! assert_eq!(hab, Point::hash_to_curve(b"alice@example.com") * (a * b));
//! let batch = Point::mul_many(&b, &[ha, h]); // one recoding, many points
//! assert_eq!(batch[0], hab);
//! assert_eq!(Point::mul_base(&a), Point::generator() * a);
//! ```
//!
//! Module map: `backend::serial::u64::fp` (GF(p) limbs), `field` (GF(p²)), `point`
//! (coordinates, addition, φ, ψ, encoding), `scalar_mul` (CL15 variable-base, fixed-window
//! reference, fixed-base table, variable-time NAF), `scalar` (integers mod N), `hash`
//! (hash to the curve), `group_impl` (`ff`/`group` traits), `api` (the public operations),
//! `backend::vector` (the same-scalar batch, the peer-point decoding and the batch hash in
//! vector lanes: eight points per AVX-512 vector (IFMA, or AVX-512F without it) or four per
//! AVX2 vector, chosen at run time, the serial code as fallback).
//! See the crate README for the security notes and measured figures.
// `unsafe` is denied everywhere except `backend::vector`, where the lane kernels are entered
// after run-time feature detection, and `backend::serial::x86`, which enters the
// bmi2/adx/avx2 copy of the serial code the same way (each block carries a SAFETY comment).
#![deny(unsafe_code)]

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

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
