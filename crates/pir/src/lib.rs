//! Private information retrieval: distributed point functions, two-server DPF-PIR and an IT-PIR baseline.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
