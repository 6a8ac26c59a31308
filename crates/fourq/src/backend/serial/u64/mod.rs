//! GF(p), p = 2^127 − 1, on two 64-bit limbs with `u128` products, and GF(p²) products in
//! `mulx` assembly for x86-64 CPUs with BMI2.

pub(crate) mod fp;
#[cfg(obliv_x86_simd)]
pub(crate) mod fp2_mulx;
