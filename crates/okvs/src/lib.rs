//! Oblivious key-value stores: the RR22 sparse-plus-dense OKVS, binned and parallel.
//!
//! An OKVS encodes a map `{kᵢ → vᵢ}` into a vector `P` of `≈ 1.23–1.35·n` values such that
//! `Decode(P, kᵢ) = vᵢ`; decoding any other key gives a value that, for random `vᵢ`, looks
//! random and independent of the encoded keys. This crate implements the OKVS of
//! Raghuraman and Rindal, "Blazing Fast PSI from Improved OKVS and Subfield VOLE"
//! (CCS 2022, [ePrint 2022/320], §3–4), following the parameters of their reference
//! implementation (volePSI's `Paxos` and `Baxos`):
//!
//! - every key `k` has a row `(s(k) ‖ δ(k))`: three distinct positions among `m` sparse
//!   columns, from a fixed-key-AES hash of `k` ([`hash`](crate#hashing)), and a dense row of
//!   `d` coefficients;
//! - `Decode(P, k) = P[s₀] + P[s₁] + P[s₂] + ⟨δ(k), P[m..]⟩`;
//! - encoding solves `H·P = X` by peeling the weight-3 hypergraph (PaXoS-style
//!   triangulation), Gaussian elimination of the few left-over "gap" rows on the dense
//!   columns, and back-substitution;
//! - the dense part is either binary ([`Binary`], `d = g + λ`, any [`OkvsValue`] such as
//!   `u64` or [`Block`]) or over GF(2^128) ([`Gf128`], `d = g`, values are [`Block`]s);
//! - [`Paxos`] is one system over all keys; [`BinnedPaxos`] splits the keys into bins of
//!   about 2^14 and solves them in parallel with rayon (encode and decode).
//!
//! Encoding fails with probability `≤ 2^-λ` ([`params`] says how the sizes achieve that);
//! a failure is [`Error::SolveFailed`] or [`Error::BinOverflow`] and the caller retries with
//! a new seed. Duplicate keys give [`Error::DuplicateKey`].
//!
//! # Hashing
//!
//! Keys are 128-bit [`Block`]s (hash longer items to a block first, for example with
//! `obliv_core::hash::ro_hash_block`). The sparse positions, the dense row and the bin
//! come from three AES keys derived from the OKVS seed, applied in batches.
//!
//! # Security and what it leaks
//!
//! The encoding `P` reveals nothing about the keys beyond `n` when the values are uniformly
//! random and the encoding is randomized ([`Okvs::encode_randomized_into`]): `P` is then
//! uniform subject to the linear constraints (RR22, Def. 2.2 "obliviousness"). The plain
//! [`Okvs::encode_into`] leaves unused columns at zero, which is fine when `P` is masked
//! afterwards (as in VOLE-based PSI) but not otherwise. Encoding and decoding read memory
//! at key-dependent positions (as every OKVS implementation does): a co-located attacker
//! observing cache timing learns about the keys of the party that runs them.
//!
//! [ePrint 2022/320]: https://eprint.iacr.org/2022/320
// No unsafe code: the prefetch hints come from `obliv_core::mem::prefetch_l2`.
#![forbid(unsafe_code)]

mod binned;
mod error;
mod hash;
pub mod params;
mod paxos;
mod solver;
mod value;

pub use binned::{BinnedPaxos, DEFAULT_BIN_SIZE};
pub use error::Error;
pub use obliv_core::Block;
pub use params::PaxosParams;
pub use paxos::Paxos;
pub use value::{Binary, DenseKind, DenseType, DenseValue, Gf128, OkvsValue};

use obliv_core::rand_core::Rng;

/// The operations every OKVS here offers; `D` is the dense-column kind.
pub trait Okvs<D: DenseKind> {
    /// The number of values in an encoding.
    fn size(&self) -> usize;

    /// The largest number of keys the OKVS was built for.
    fn items(&self) -> usize;

    /// Encodes `keys[i] → values[i]` into `out` (`out.len() = size()`), with columns that are
    /// not determined by the keys set to zero.
    ///
    /// # Errors
    /// [`Error::SolveFailed`] / [`Error::BinOverflow`] (probability `≤ 2^-λ`: retry with a
    /// new seed), [`Error::DuplicateKey`], [`Error::TooManyItems`],
    /// [`Error::LengthMismatch`].
    fn encode_into<V: DenseValue<D>>(
        &self,
        keys: &[Block],
        values: &[V],
        out: &mut [V],
    ) -> Result<(), Error>;

    /// As [`encode_into`](Self::encode_into) with the undetermined columns uniformly random
    /// from `rng`, so that `out` is uniform subject to the constraints.
    ///
    /// # Errors
    /// As [`encode_into`](Self::encode_into).
    fn encode_randomized_into<V: DenseValue<D>, R: Rng + ?Sized>(
        &self,
        keys: &[Block],
        values: &[V],
        out: &mut [V],
        rng: &mut R,
    ) -> Result<(), Error>;

    /// Decodes every key of `keys` against the encoding `okvs`, writing into `out`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `okvs.len() ≠ size()` or `out.len() ≠ keys.len()`.
    fn decode_into<V: DenseValue<D>>(
        &self,
        keys: &[Block],
        okvs: &[V],
        out: &mut [V],
    ) -> Result<(), Error>;

    /// [`encode_into`](Self::encode_into) into a new vector.
    ///
    /// # Errors
    /// As [`encode_into`](Self::encode_into).
    fn encode<V: DenseValue<D>>(&self, keys: &[Block], values: &[V]) -> Result<Vec<V>, Error> {
        let mut out = vec![V::default(); self.size()];
        self.encode_into(keys, values, &mut out)?;
        Ok(out)
    }

    /// [`encode_randomized_into`](Self::encode_randomized_into) into a new vector.
    ///
    /// # Errors
    /// As [`encode_into`](Self::encode_into).
    fn encode_randomized<V: DenseValue<D>, R: Rng + ?Sized>(
        &self,
        keys: &[Block],
        values: &[V],
        rng: &mut R,
    ) -> Result<Vec<V>, Error> {
        let mut out = vec![V::default(); self.size()];
        self.encode_randomized_into(keys, values, &mut out, rng)?;
        Ok(out)
    }

    /// [`decode_into`](Self::decode_into) into a new vector.
    ///
    /// # Errors
    /// As [`decode_into`](Self::decode_into).
    fn decode<V: DenseValue<D>>(&self, keys: &[Block], okvs: &[V]) -> Result<Vec<V>, Error> {
        let mut out = vec![V::default(); keys.len()];
        self.decode_into(keys, okvs, &mut out)?;
        Ok(out)
    }
}

/// `Err(LengthMismatch)` unless `got == expected`.
pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what,
            expected,
            got,
        })
    }
}

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
