//! GF(p), p = 2^127 − 1, on two 64-bit limbs with `u128` products.

pub(crate) mod fp;
