//! Silent VOLE and subfield VOLE over GF(2^128) from LPN with an expand-convolute code.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
