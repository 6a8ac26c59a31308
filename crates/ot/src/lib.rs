//! Oblivious transfer: base OT, OT extension (IKNP, SoftSpokenOT) and the KKRT16 batched OPRF.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
