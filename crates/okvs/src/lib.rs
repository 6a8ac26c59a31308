//! Oblivious key-value stores: the RR22 sparse-plus-dense OKVS, binned and parallel.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
