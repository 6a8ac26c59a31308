//! Limb-level arithmetic: the portable 64-bit serial backend, and an AVX-512 IFMA vector
//! backend for the same-scalar batch, chosen at run time.

pub(crate) mod serial;
pub(crate) mod vector;
