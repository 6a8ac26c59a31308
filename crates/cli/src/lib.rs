//! The obliv command: PSI over CSV files between processes over TCP, unbalanced PSI, PIR, demos.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
