//! Oblivious transfer: base OT, IKNP OT extension and the KKRT16 batched OPRF.
//!
//! - [`base`]: Chou–Orlandi "simplest OT" on Ristretto255 with the instance index and the
//!   transcript hashed into every key; batched, one message each way.
//! - [`iknp`]: IKNP OT extension with the ALSZ13 optimisations — random OT, chosen-message
//!   OT and the raw correlated OT `q_i = t_i ⊕ r_i·Δ` (global Δ), chunked so memory stays
//!   bounded; base OTs injectable.
//! - [`softspoken`]: SoftSpokenOT, OT extension from small-field subspace VOLE (`k = 2..=8`)
//!   with its consistency check; same output correlation as IKNP at `1/k` of the traffic.
//! - [`kkrt`]: the KKRT16 batched OPRF (1-out-of-∞ OT with a 512-bit AES pseudorandom
//!   code), the engine of KKRT PSI.
//!
//! All protocols are claimed semi-honest only (see each module's security section:
//! SoftSpokenOT's consistency check is implemented, but its malicious-security claim has not
//! yet been checked against the paper's parameters).
//!
//! ```
//! use obliv_core::{AesRng, Block};
//! use obliv_net::mem_pair;
//! use obliv_ot::kkrt::{KkrtReceiver, KkrtSender};
//!
//! let (mut a, mut b) = mem_pair();
//! let peer = std::thread::spawn(move || {
//!     let mut r = KkrtReceiver::setup(&mut b, &mut AesRng::from_entropy()).unwrap();
//!     r.receive(&mut b, &[Block(1), Block(2)]).unwrap() // [F_0(1), F_1(2)]
//! });
//! let mut s = KkrtSender::setup(&mut a, &mut AesRng::from_entropy()).unwrap();
//! let key = s.send(&mut a, 2).unwrap();
//! let outs = peer.join().unwrap();
//! assert_eq!(outs[1], key.eval(1, Block(2)).unwrap());
//! assert_ne!(outs[1], key.eval(1, Block(3)).unwrap());
//! ```
#![forbid(unsafe_code)]

pub mod base;
mod error;
pub mod iknp;
pub mod kkrt;
pub mod softspoken;

pub use error::{Error, Result};

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
