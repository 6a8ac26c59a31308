//! Private set intersection.
//!
//! - [`ecdh`]: two-party ECDH-PSI on any `obliv-ec` curve, streamed in batches.
//! - [`ecdh3`]: three-party ECDH-PSI (the receiver also learns `|X_P ∩ X_Q|`; see there).
//! - [`unbalanced`]: ECDH-OPRF PSI for a large server set, with an offline phase that leaves
//!   a sorted cache at the client and an online phase per query set.
//!
//! Every protocol runs over an [`obliv_net::Channel`], opens with a handshake that checks
//! protocol, version, curve and parameters on both sides ([`handshake`]), and treats every
//! peer message as untrusted: sizes are checked before allocation, points are validated, and
//! anything out of place is an [`Error`], never a panic.
#![forbid(unsafe_code)]

pub mod ecdh;
pub mod ecdh3;
mod error;
pub mod handshake;
pub mod kkrt;
pub mod rr22;
pub mod unbalanced;

pub use error::{Error, Result};

/// The plain intersection: indices (ascending) of `ours` whose item occurs in `theirs`. The
/// oracle that the protocol tests compare against, and a reference for callers.
pub fn plain_intersection<T: AsRef<[u8]>, U: AsRef<[u8]>>(ours: &[T], theirs: &[U]) -> Vec<usize> {
    let set: std::collections::HashSet<&[u8]> = theirs.iter().map(|t| t.as_ref()).collect();
    (0..ours.len())
        .filter(|&i| set.contains(ours[i].as_ref()))
        .collect()
}
