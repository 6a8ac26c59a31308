//! Silent VOLE and subfield VOLE over GF(2^128) from LPN with an expand-convolute code.
//!
//! A *vector oblivious linear evaluation* (VOLE) gives the sender `Δ` and `B`, the receiver
//! `A` and `C`, with
//!
//! ```text
//!     C[i] = B[i] + A[i]·Δ        (in GF(2^128); + is XOR)
//! ```
//!
//! where `A` is uniform in GF(2^128) ([`VoleSender`]/[`VoleReceiver`]) or in GF(2)
//! ([`SubfieldVoleSender`]/[`SubfieldVoleReceiver`]: the subfield VOLE that RR22-style PSI and
//! silent OT use; it is a correlated OT with global offset `Δ`) or in GF(2^64)
//! ([`Subfield64VoleSender`]/[`Subfield64VoleReceiver`]: `A` as `u64`, embedded in
//! GF(2^128) by [`embed64`], [`vole64`]). The sender learns nothing about `A`; the receiver
//! nothing about `Δ`.
//!
//! The construction is the *silent* one (Boyle, Couteau, Gilboa, Ishai, Kohl, Rindal,
//! Scholl, CCS 2019, [ePrint 2019/1159]; Weng, Yang, Katz, Wang, "Ferret"/"Wolverine",
//! [ePrint 2020/925]): a regular-noise multi-point VOLE built from `t` GGM-tree punctured
//! PRFs (SPCOT with correlated OT, [`extend`]) is compressed by the dual of a linear code
//! in which syndrome decoding is hard. The code is Expand-Convolute ExConv7x24
//! (Raghuraman, Rindal, Tanguy, CRYPTO 2023, [ePrint 2023/882], [`code`]), **not** Silver
//! (broken in 2023). Communication is `O(t·log(n/t))` blocks per extension, sublinear in `n`.
//!
//! Everything rests on a batch of base correlated OTs under `Δ` ([`base`]); the generators
//! bootstrap their later base correlations from their own outputs, so base OT runs once.
//!
//! The six generators implement [`VoleSenderGen`] / [`VoleReceiverGen`] (the receiver's `A`
//! as an associated type), so a protocol can be written once over all three families. They
//! are built from a base-correlation source ([`source`]): [`VoleSenderGen::setup`] runs the
//! one the configuration's [`Security`] calls for (base OT + IKNP semi-honest, base OT +
//! SoftSpokenOT with its consistency check malicious), [`VoleSenderGen::with_source`] takes
//! any ([`BaseSource`], or a given [`SenderBase`] such as an earlier generator's outputs),
//! and the inherent `new` constructors keep running base OT + IKNP whatever the security.
//!
//! ```
//! use obliv_core::{AesRng, gf128};
//! use obliv_core::rand_core::SeedableRng;
//! use obliv_vole::{VoleConfig, VoleReceiver, VoleSender};
//!
//! let cfg = VoleConfig::default();
//! let (mut c0, mut c1) = obliv_net::mem_pair();
//! let t = std::thread::spawn(move || {
//!     let mut rng = AesRng::from_seed([2; 16]);
//!     let mut s = VoleSender::new(&mut c0, cfg, &mut rng).unwrap(); // base OT + IKNP
//!     (s.delta(), s.extend(&mut c0, 1000, &mut rng).unwrap())
//! });
//! let mut rng = AesRng::from_seed([1; 16]);
//! let mut r = VoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
//! let (a, c) = r.extend(&mut c1, 1000, &mut rng).unwrap();
//! let (delta, b) = t.join().unwrap();
//! assert!((0..1000).all(|i| c[i] == b[i] ^ gf128::mul(a[i], delta)));
//! ```
//!
//! [ePrint 2019/1159]: https://eprint.iacr.org/2019/1159
//! [ePrint 2020/925]: https://eprint.iacr.org/2020/925
//! [ePrint 2023/882]: https://eprint.iacr.org/2023/882
// Unsafe code only in `arch` (prefetch hints), each block with its SAFETY argument.
#![deny(unsafe_code)]

mod arch;
pub mod base;
pub mod code;
mod error;
pub mod extend;
mod generator;
mod ggm;
pub mod source;
mod traits;
mod vole;
pub mod vole64;

#[cfg(test)]
mod tests;

pub use base::{ReceiverBase, SenderBase};
pub use code::{BlockPair, CodeElement, CodeField, ExConvCode, LpnCode};
pub use error::{Error, Result};
pub use extend::{Kind, Params, Security};
pub use source::{BaseSource, ReceiverBaseSource, SOFTSPOKEN_K, SenderBaseSource};
pub use traits::{VoleReceiverGen, VoleSenderGen};
pub use vole::{
    DEFAULT_MAX_CHUNK, MAX_CHUNK_LIMIT, SubfieldVoleReceiver, SubfieldVoleSender, VoleConfig,
    VoleReceiver, VoleSender, subfield_vole_receive, subfield_vole_send, vole_receive, vole_send,
};
pub use vole64::{Subfield64VoleReceiver, Subfield64VoleSender, embed64};
