//! Private set intersection: ECDH-PSI (2 and 3 parties), KKRT16, RR22 and unbalanced ECDH-OPRF PSI.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
