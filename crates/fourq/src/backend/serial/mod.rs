//! Serial (one element at a time) backends.

pub(crate) mod u64;
pub(crate) mod x86;
