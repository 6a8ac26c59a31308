//! Limb-level arithmetic. Only the portable 64-bit serial backend exists today.

pub(crate) mod serial;
