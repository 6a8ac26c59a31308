//! Channels for two- and n-party protocols: in-memory, TCP and a simulated link, with byte and round counters.
//!
//! Work in progress: this crate is being built; see the workspace README.
#![forbid(unsafe_code)]
