//! Oblivious transfer: base OT, IKNP OT extension and the KKRT16 batched OPRF.
#![forbid(unsafe_code)]

pub mod base;
mod error;
pub mod iknp;
pub mod kkrt;

pub use error::{Error, Result};
