//! Stash-less cuckoo hashing and simple hashing into bins, for PSI and batch PIR.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
