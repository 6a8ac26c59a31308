//! Private set intersection.
//!
//! Two-party protocols, each a [`PsiSession`] (one shape: both roles, one `run` per bucket
//! over a channel):
//!
//! - [`ecdh`]: ECDH-PSI on any `obliv-ec` curve, streamed in batches (semi-honest).
//! - [`kkrt`]: KKRT16, cuckoo hashing and an OPRF from OT extension (semi-honest).
//! - [`rr22`]: RR22, OKVS and silent VOLE: fast, low-communication (semi-honest) and
//!   malicious variants.
//!
//! [`driver`] runs any of them over many buckets, one after the other or on several
//! workers over one connection. Beside them:
//!
//! - [`ecdh3`]: three-party ECDH-PSI (see there for what each party learns).
//! - [`unbalanced`]: ECDH-OPRF PSI for a large server set, with an offline phase that leaves
//!   a sorted cache at the client and an online phase per query set.
//!
//! Every protocol runs over an [`obliv_net::Channel`], opens with a handshake that checks
//! protocol, version, curve and parameters on both sides ([`handshake`]), and treats every
//! peer message as untrusted: sizes are checked before allocation (against bounds this party
//! sets, not the peer), points are validated, and anything out of place is an [`Error`] whose
//! [`ErrorKind`] says whose fault it is, never a panic.
//!
//! # Statistical security
//!
//! Each run keeps its probability of a false match (and of a hashing or encoding failure)
//! below `2^-λ`, with `λ` the `stat_security` of its configuration ([`STAT_SECURITY`] = 40
//! by default, at most [`MAX_STAT_SECURITY`]); `λ` sets the comparison width and the table
//! and OKVS sizes, and travels in the handshake, so peers with different values stop with
//! [`Error::HandshakeMismatch`]. A job of many runs (buckets, shards) that must fail with
//! probability `2^-40` as a whole runs each at [`job_stat_security`]`(runs)`
//! (`40 + ⌈log₂ runs⌉`, by the union bound). The unbalanced protocol keeps its own width
//! ([`unbalanced::UbConfig`]).
#![forbid(unsafe_code)]

pub mod driver;
pub mod ecdh;
pub mod ecdh3;
mod error;
pub mod handshake;
pub mod item;
pub mod kkrt;
pub mod rr22;
pub mod session;
pub mod unbalanced;
mod wire;

pub use error::{Error, ErrorKind, PeerMisbehaved, Result};
pub use item::{HashedItem, PsiItem};
pub use session::PsiSession;
pub use wire::{MAX_STAT_SECURITY, Role, STAT_SECURITY, job_stat_security};

/// The plain intersection: indices (ascending) of `ours` whose item occurs in `theirs`. The
/// oracle that the protocol tests compare against, and a reference for callers.
pub fn plain_intersection<T: AsRef<[u8]>, U: AsRef<[u8]>>(ours: &[T], theirs: &[U]) -> Vec<usize> {
    let set: std::collections::HashSet<&[u8]> = theirs.iter().map(|t| t.as_ref()).collect();
    (0..ours.len())
        .filter(|&i| set.contains(ours[i].as_ref()))
        .collect()
}

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
