//! Subfield VOLE with 64-bit values: `A ∈ GF(2^64)^n`, `B, C ∈ GF(2^128)^n`.
//!
//! | type | role | gets |
//! |---|---|---|
//! | [`Subfield64VoleSender`] | sender | `Δ ∈ GF(2^128)`, `B ∈ GF(2^128)^n` |
//! | [`Subfield64VoleReceiver`] | receiver | `A ∈ GF(2^64)^n` (`u64`), `C ∈ GF(2^128)^n` |
//!
//! with, for every `i`,
//!
//! ```text
//!     C[i] = B[i] ⊕ gf128::mul(embed64(A[i]), Δ)
//! ```
//!
//! where [`embed64`] places the 64 bits of `A[i]` in the low half of a block: the polynomial
//! `Σ_{j<64} a_j·X^j` of degree `< 64` in GF(2^128) = GF(2)\[X\]/(X^128 + X^7 + X^2 + X + 1).
//! The correlation only uses the GF(2)-linear structure of `embed64` (`embed64(a ⊕ b) =
//! embed64(a) ⊕ embed64(b)`), so `A[i]` may be read as an element of GF(2^64) in any basis,
//! or simply as 64 bits: bit `j` of `A` and the blocks `X^j·Δ` form 64 correlated OTs
//! `C = B ⊕ Σ_j a_j·(X^j·Δ)`. This is the correlation RR22's low-communication PSI
//! (Raghuraman–Rindal, CCS 2022, [ePrint 2022/320]) needs for a 64-bit OKVS value field.
//!
//! # Construction
//!
//! The same silent pipeline as [`crate::SubfieldVoleSender`] (see [`crate::extend`]), with
//! 64-bit noise values:
//!
//! 1. **Regular-noise SPCOT with 64-bit `β`.** For each of the `t` regions the receiver
//!    holds a base correlation `cᵢ = bᵢ ⊕ embed64(βᵢ)·Δ` with `βᵢ` uniform in `{0,1}^64`;
//!    the GGM trees are those of the GF(2^128) VOLE (the sender sends `dᵢ = Σ_j vᵢ[j] ⊕ bᵢ`),
//!    and the receiver ends with `w = v ⊕ e·Δ` where `e[αᵢ] = embed64(βᵢ)`, zero elsewhere.
//! 2. **Base correlations for `β·Δ`.** The first batch is packed from 64 correlated OTs per
//!    noise position, without interaction:
//!    `Σ_{j<64} X^j·tⱼ = Σ_j X^j·qⱼ ⊕ embed64(Σ_j rⱼ·2^j)·Δ` (the `tⱼ = qⱼ ⊕ rⱼ·Δ` come from
//!    an inner [`crate::SubfieldVoleSender`] sharing `Δ`, whose own base is base OT + IKNP
//!    or [`from_base`](Subfield64VoleSender::from_base)). Every later extension takes them
//!    from the previous extension's output: each extension makes `t` extra 64-bit subfield
//!    VOLEs that are exactly the next one's base (bootstrapping, as in [BCG+19, §6]).
//!    The tree COTs always come from the inner generator.
//! 3. **Compression with the binary ExConv7x24 code.** `G` has entries in GF(2) (no
//!    multiplication by `μ`), so `B = G·v`, `C = G·w` are encoded as blocks and
//!    `A = G·e` as `u64` words (8 bytes per element, half the memory traffic of blocks),
//!    and `C = B ⊕ embed64(A)·Δ` holds because `G` and `x ↦ embed64(x)·Δ` are both
//!    GF(2)-linear.
//! 4. **Malicious variant**: the Ferret/libOTe check of [`crate::extend`] with
//!    `eᵢ = embed64(βᵢ)`; its mask `a*` is uniform in GF(2^128), packed from 128 extra COTs.
//!
//! # Security
//!
//! `A = G·e` is LPN over GF(2^64) with a binary code: equivalently 64 binary dual-LPN
//! instances that share the noise positions (bit slice `j` has noise `βᵢ,ⱼ` at `αᵢ`). This
//! is the structure of every GF(2^64)-subfield VOLE built on a binary code (the code never
//! uses the field multiplication). A GF(2)-linear test on `A` — a combination of any
//! non-empty set of slices — sees noise that is present in each region with probability
//! 1/2, so its bias is `Π_i (1 − δ_test,i)`, not the `(1 − 2δ)^t` of binary regular noise.
//! The noise weight is therefore the one of uniform field noise (`f = 1` in
//! [`crate::extend::noise_weight`]): **`t = 280`** regions, giving `(1 − 0.15)^280 < 2^-64`
//! for ExConv7x24's assumed relative pseudo-minimum distance `δ = 0.15`; each binary slice
//! then has about 140 noisy regions (≥ 128 except with small probability), above the
//! algebraic-attack floor of binary regular LPN. The GF(2^128) VOLE uses the same `t`.
//!
//! [ePrint 2022/320]: https://eprint.iacr.org/2022/320
//! [BCG+19]: https://eprint.iacr.org/2019/1159

use obliv_core::Block;
use obliv_net::Channel;
use rand_core::CryptoRng;
use zeroize::Zeroize;

use crate::base::{ReceiverBase, SenderBase};
use crate::error::Result;
use crate::extend::{Kind, pack_poly};
use crate::generator::{
    OuterReceiver, OuterSender, Packed, ReceiverStep, SenderStep, debug_generator,
};
use crate::vole::{SubfieldVoleReceiver, SubfieldVoleSender, VoleConfig};

/// The 64-bit value `a` as a GF(2^128) element: `a` in the low 64 bits of the block, i.e.
/// the polynomial `Σ_{j<64} a_j·X^j` (bit `j` of `a` is the coefficient of `X^j`).
///
/// GF(2)-linear: `embed64(a ^ b) == embed64(a) ^ embed64(b)`.
#[inline]
pub fn embed64(a: u64) -> Block {
    Block(u128::from(a))
}

/// `Σ_{j<64} bits[j]·2^j` for bits stored one per byte (0 or 1).
fn pack_bits64(bits: &[u8]) -> u64 {
    debug_assert_eq!(bits.len(), 64);
    bits.iter()
        .enumerate()
        .fold(0u64, |acc, (j, b)| acc | (u64::from(*b & 1) << j))
}

/// The 64-bit flavour of the [`Packed`] generators: a base VOLE packs 64 COTs, `A` is `u64`.
pub(crate) struct Gf64;

impl Packed for Gf64 {
    const KIND: Kind = Kind::Subfield64;
    const WIDTH: usize = 64;
    type A = u64;
    fn pack_blocks(v: &[Block]) -> Block {
        pack_poly(v)
    }
    fn pack_bits(bits: &[u8]) -> u64 {
        pack_bits64(bits)
    }
    fn with_blocks<T>(a: &[u64], f: impl FnOnce(&[Block]) -> T) -> T {
        let mut blocks: Vec<Block> = a.iter().map(|a| embed64(*a)).collect();
        let res = f(&blocks);
        blocks.zeroize();
        res
    }
}

/// Subfield VOLE sender with 64-bit values: holds `Δ`, gets `B` with
/// `C = B ⊕ embed64(A)·Δ` (see the [module documentation](self)).
pub struct Subfield64VoleSender {
    core: OuterSender<Gf64>,
}

impl core::fmt::Debug for Subfield64VoleSender {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let pool = Some(self.core.pool_len());
        debug_generator(f, "Subfield64VoleSender", self.core.config(), pool)
    }
}

impl Subfield64VoleSender {
    /// A sender with a fresh random `Δ`, base correlations from base OT + IKNP (see
    /// [`SubfieldVoleSender::new`]). The peer runs [`Subfield64VoleReceiver::new`].
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::new`].
    pub fn new<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut R,
    ) -> Result<Self> {
        let inner = SubfieldVoleSender::new(ch, cfg, rng)?;
        Ok(Subfield64VoleSender {
            core: OuterSender::new(inner),
        })
    }

    /// A sender from base COTs under `Δ` (at least [`VoleConfig::base_cots_needed`]).
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::from_base`].
    pub fn from_base(base: SenderBase, cfg: VoleConfig) -> Result<Self> {
        let inner = SubfieldVoleSender::from_base(base, cfg)?;
        Ok(Subfield64VoleSender {
            core: OuterSender::new(inner),
        })
    }

    /// `Δ`.
    pub fn delta(&self) -> Block {
        self.core.delta()
    }

    /// The configuration.
    pub fn config(&self) -> VoleConfig {
        self.core.config()
    }

    /// Produces `n` correlations, handing `B` to `sink` chunk by chunk (at most
    /// [`VoleConfig::max_chunk`] each).
    ///
    /// # Errors
    /// Channel errors, or an error returned by `sink`.
    pub fn extend_chunks<C, R, F>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        sink: F,
    ) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[Block]) -> Result<()>,
    {
        self.core.chunks(ch, n, rng, sink)
    }

    /// Produces `B` of `n` correlations.
    ///
    /// # Errors
    /// As [`Subfield64VoleSender::extend_chunks`].
    pub fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<Block>> {
        self.core.collect_or_single(ch, n, rng)
    }

    /// Produces `B` of `n` correlations into `out` (any contents on entry; `n` elements on
    /// success), reusing its memory: with `n` at most `max_chunk`, `out` is the extension's
    /// working buffer and keeps a capacity of about `2n` blocks, so that calling again with
    /// the same vector allocates nothing (no page faults): the form for a session of many
    /// extensions. On error `out` is zeroized and emptied.
    ///
    /// # Errors
    /// As [`Subfield64VoleSender::extend_chunks`].
    pub fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        out: &mut Vec<Block>,
    ) -> Result<()> {
        self.core.collect_into(ch, n, rng, out)
    }
}

/// Subfield VOLE receiver with 64-bit values: gets `A ∈ GF(2^64)^n` (as `u64`) and
/// `C = B ⊕ embed64(A)·Δ` (see the [module documentation](self)).
pub struct Subfield64VoleReceiver {
    core: OuterReceiver<Gf64>,
}

impl core::fmt::Debug for Subfield64VoleReceiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let pool = Some(self.core.pool_len());
        debug_generator(f, "Subfield64VoleReceiver", self.core.config(), pool)
    }
}

impl Subfield64VoleReceiver {
    /// A receiver, base correlations from base OT + IKNP with the sender's
    /// [`Subfield64VoleSender::new`].
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::new`].
    pub fn new<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut R,
    ) -> Result<Self> {
        let inner = SubfieldVoleReceiver::new(ch, cfg, rng)?;
        Ok(Subfield64VoleReceiver {
            core: OuterReceiver::new(inner),
        })
    }

    /// A receiver from base COTs (at least [`VoleConfig::base_cots_needed`]).
    ///
    /// # Errors
    /// As [`SubfieldVoleReceiver::from_base`].
    pub fn from_base(base: ReceiverBase, cfg: VoleConfig) -> Result<Self> {
        let inner = SubfieldVoleReceiver::from_base(base, cfg)?;
        Ok(Subfield64VoleReceiver {
            core: OuterReceiver::new(inner),
        })
    }

    /// The configuration.
    pub fn config(&self) -> VoleConfig {
        self.core.config()
    }

    /// Produces `n` correlations, handing `(A, C)` to `sink` chunk by chunk (at most
    /// [`VoleConfig::max_chunk`] each).
    ///
    /// # Errors
    /// Channel errors; [`crate::Error::ConsistencyCheck`] if the sender cheated (malicious
    /// mode); an error returned by `sink`.
    pub fn extend_chunks<C, R, F>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        sink: F,
    ) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[u64], &[Block]) -> Result<()>,
    {
        self.core.chunks(ch, n, rng, sink)
    }

    /// Produces `(A, C)` of `n` correlations.
    ///
    /// # Errors
    /// As [`Subfield64VoleReceiver::extend_chunks`].
    pub fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<(Vec<u64>, Vec<Block>)> {
        self.core.collect_or_single(ch, n, rng)
    }

    /// Produces `(A, C)` of `n` correlations into `a` and `c` (any contents on entry; `n`
    /// elements each on success), reusing their memory: with `n` at most `max_chunk` they
    /// are the extension's working buffers for `A` and `C`, so that calling again with the
    /// same vectors allocates nothing for them (no page faults): the form for a session of
    /// many extensions. On error both are zeroized and emptied.
    ///
    /// # Errors
    /// As [`Subfield64VoleReceiver::extend_chunks`].
    pub fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        a: &mut Vec<u64>,
        c: &mut Vec<Block>,
    ) -> Result<()> {
        self.core.collect_into(ch, n, rng, a, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::{Prg, gf128};

    #[test]
    fn embed_is_low_half_and_linear() {
        assert_eq!(embed64(0), Block::ZERO);
        assert_eq!(embed64(1), Block::ONE);
        assert_eq!(embed64(u64::MAX), Block::from_u64s(u64::MAX, 0));
        assert_eq!(embed64(1 << 63).to_u64s(), (1 << 63, 0));
        let (a, b) = (0x0123_4567_89ab_cdef_u64, 0xfedc_ba98_7654_3210_u64);
        assert_eq!(embed64(a ^ b), embed64(a) ^ embed64(b));
        // X·X^63 = X^64: the embedding's top coefficient times X leaves the low half.
        let x = Block(2);
        assert_eq!(gf128::mul(embed64(1 << 63), x), Block(1u128 << 64));
    }

    #[test]
    fn packing_64_cots_is_a_64_bit_vole() {
        let mut prg = Prg::new(Block(64));
        let delta = prg.next_block();
        let q = prg.blocks(64);
        let bits: Vec<u8> = (0..64).map(|_| u8::from(prg.next_block().lsb())).collect();
        let t: Vec<Block> = q
            .iter()
            .zip(&bits)
            .map(|(q, r)| if *r == 1 { *q ^ delta } else { *q })
            .collect();
        let a = pack_bits64(&bits);
        assert_ne!(a, 0);
        assert_eq!(pack_poly(&t), pack_poly(&q) ^ gf128::mul(embed64(a), delta));
    }
}
