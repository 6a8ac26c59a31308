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
use crate::extend::{self, AVec, Kind, Params, pack_poly};
use crate::vole::{SubfieldVoleReceiver, SubfieldVoleSender, TAG_FIELD, VoleConfig, take_reserve};

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

/// Subfield VOLE sender with 64-bit values: holds `Δ`, gets `B` with
/// `C = B ⊕ embed64(A)·Δ` (see the [module documentation](self)).
pub struct Subfield64VoleSender {
    inner: SubfieldVoleSender,
    pool_b: Vec<Block>,
    counter: u64,
    /// The working buffer of `extend_chunks`, kept for the next call (no page faults).
    scratch: Vec<Block>,
}

impl core::fmt::Debug for Subfield64VoleSender {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Subfield64VoleSender")
            .field("cfg", &self.inner.config())
            .field("pool", &self.pool_b.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Subfield64VoleSender {
    fn drop(&mut self) {
        self.pool_b.zeroize();
        self.scratch.zeroize();
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
        Ok(Subfield64VoleSender {
            inner: SubfieldVoleSender::new(ch, cfg, rng)?,
            pool_b: Vec::new(),
            counter: 0,
            scratch: Vec::new(),
        })
    }

    /// A sender from base COTs under `Δ` (at least [`VoleConfig::base_cots_needed`]).
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::from_base`].
    pub fn from_base(base: SenderBase, cfg: VoleConfig) -> Result<Self> {
        Ok(Subfield64VoleSender {
            inner: SubfieldVoleSender::from_base(base, cfg)?,
            pool_b: Vec::new(),
            counter: 0,
            scratch: Vec::new(),
        })
    }

    /// `Δ`.
    pub fn delta(&self) -> Block {
        self.inner.delta()
    }

    /// The configuration.
    pub fn config(&self) -> VoleConfig {
        self.inner.config()
    }

    fn run<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
    ) -> Result<Vec<Block>> {
        let mut out = Vec::new();
        self.run_into(ch, k_user, rng, &mut out)?;
        out.truncate(k_user);
        Ok(out)
    }

    /// One extension into the reusable buffer `buf` (`B` in `buf[..k_user]`).
    fn run_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
        buf: &mut Vec<Block>,
    ) -> Result<()> {
        let cfg = self.inner.config();
        let reserve = cfg.sub64_reserve();
        let params = Params::new(Kind::Subfield64, k_user + reserve, cfg.security);
        if self.pool_b.len() < params.voles_needed() {
            // Base 64-bit VOLEs from 64 COTs each (non-interactive packing).
            let mut cots = self.inner.extend(ch, 64 * reserve, rng)?;
            self.pool_b.zeroize();
            self.pool_b = cots.chunks_exact(64).map(pack_poly).collect();
            cots.zeroize();
        }
        let mut cots = self.inner.extend(ch, params.cots_needed(), rng)?;
        let tw = (self.counter << 1) | TAG_FIELD;
        self.counter += 1;
        let delta = self.inner.delta();
        let res = extend::send_into(ch, &params, delta, &cots, &self.pool_b, tw, rng, buf);
        cots.zeroize();
        res?;
        self.pool_b.zeroize();
        self.pool_b = take_reserve(buf, k_user, params.k);
        Ok(())
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
        mut sink: F,
    ) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[Block]) -> Result<()>,
    {
        let mut buf = core::mem::take(&mut self.scratch);
        let mut left = n;
        let mut res = Ok(());
        while left > 0 && res.is_ok() {
            let k = left.min(self.inner.config().max_chunk);
            res = self
                .run_into(ch, k, rng, &mut buf)
                .and_then(|()| sink(&buf[..k]));
            left -= k;
        }
        self.scratch = buf;
        res
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
        if n <= self.inner.config().max_chunk {
            return if n == 0 {
                Ok(Vec::new())
            } else {
                self.run(ch, n, rng)
            };
        }
        let mut all = Vec::with_capacity(n);
        self.extend_chunks(ch, n, rng, |b| {
            all.extend_from_slice(b);
            Ok(())
        })?;
        Ok(all)
    }
}

/// Subfield VOLE receiver with 64-bit values: gets `A ∈ GF(2^64)^n` (as `u64`) and
/// `C = B ⊕ embed64(A)·Δ` (see the [module documentation](self)).
pub struct Subfield64VoleReceiver {
    inner: SubfieldVoleReceiver,
    pool_a: Vec<u64>,
    pool_c: Vec<Block>,
    counter: u64,
    /// The working buffers of `extend_chunks`, kept for the next call.
    scratch: (AVec, Vec<Block>),
}

impl core::fmt::Debug for Subfield64VoleReceiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Subfield64VoleReceiver")
            .field("cfg", &self.inner.config())
            .field("pool", &self.pool_c.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Subfield64VoleReceiver {
    fn drop(&mut self) {
        self.pool_a.zeroize();
        self.pool_c.zeroize();
        self.scratch.0.zeroize();
        self.scratch.1.zeroize();
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
        Ok(Subfield64VoleReceiver {
            inner: SubfieldVoleReceiver::new(ch, cfg, rng)?,
            pool_a: Vec::new(),
            pool_c: Vec::new(),
            counter: 0,
            scratch: (AVec::empty(Kind::Subfield64), Vec::new()),
        })
    }

    /// A receiver from base COTs (at least [`VoleConfig::base_cots_needed`]).
    ///
    /// # Errors
    /// As [`SubfieldVoleReceiver::from_base`].
    pub fn from_base(base: ReceiverBase, cfg: VoleConfig) -> Result<Self> {
        Ok(Subfield64VoleReceiver {
            inner: SubfieldVoleReceiver::from_base(base, cfg)?,
            pool_a: Vec::new(),
            pool_c: Vec::new(),
            counter: 0,
            scratch: (AVec::empty(Kind::Subfield64), Vec::new()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> VoleConfig {
        self.inner.config()
    }

    fn run<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
    ) -> Result<(Vec<u64>, Vec<Block>)> {
        let (mut a, mut c) = (AVec::empty(Kind::Subfield64), Vec::new());
        self.run_into(ch, k_user, rng, &mut a, &mut c)?;
        let AVec::U64(mut a, mut pairs) = a else {
            unreachable!("a 64-bit subfield extension returns u64 values")
        };
        pairs.zeroize();
        a.truncate(k_user);
        c.truncate(k_user);
        Ok((a, c))
    }

    /// One extension into the reusable buffers (`A`, `C` in `[..k_user]`).
    fn run_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
        a: &mut AVec,
        c: &mut Vec<Block>,
    ) -> Result<()> {
        let cfg = self.inner.config();
        let reserve = cfg.sub64_reserve();
        let params = Params::new(Kind::Subfield64, k_user + reserve, cfg.security);
        if self.pool_c.len() < params.voles_needed() {
            let (mut bits, mut cots) = self.inner.extend(ch, 64 * reserve, rng)?;
            self.pool_a.zeroize();
            self.pool_c.zeroize();
            self.pool_a = bits.chunks_exact(64).map(pack_bits64).collect();
            self.pool_c = cots.chunks_exact(64).map(pack_poly).collect();
            bits.zeroize();
            cots.zeroize();
        }
        let (mut r, mut t) = self.inner.extend(ch, params.cots_needed(), rng)?;
        let tw = (self.counter << 1) | TAG_FIELD;
        self.counter += 1;
        let mut vole_a: Vec<Block> = self.pool_a.iter().map(|a| embed64(*a)).collect();
        let pc = &self.pool_c;
        let res = extend::receive_into(ch, &params, &r, &t, &vole_a, pc, tw, rng, a, c);
        vole_a.zeroize();
        r.zeroize();
        t.zeroize();
        res?;
        let AVec::U64(vals, _) = a else {
            unreachable!("a 64-bit subfield extension returns u64 values")
        };
        self.pool_a.zeroize();
        self.pool_c.zeroize();
        self.pool_a = take_reserve(vals, k_user, params.k);
        self.pool_c = take_reserve(c, k_user, params.k);
        Ok(())
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
        mut sink: F,
    ) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[u64], &[Block]) -> Result<()>,
    {
        let (mut a, mut c) = core::mem::replace(
            &mut self.scratch,
            (AVec::empty(Kind::Subfield64), Vec::new()),
        );
        let mut left = n;
        let mut res = Ok(());
        while left > 0 && res.is_ok() {
            let k = left.min(self.inner.config().max_chunk);
            res = self
                .run_into(ch, k, rng, &mut a, &mut c)
                .and_then(|()| match &a {
                    AVec::U64(vals, _) => sink(&vals[..k], &c[..k]),
                    AVec::Bits(_) | AVec::Field(..) => {
                        unreachable!("a 64-bit subfield extension returns u64 values")
                    }
                });
            left -= k;
        }
        self.scratch = (a, c);
        res
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
        if n <= self.inner.config().max_chunk {
            return if n == 0 {
                Ok((Vec::new(), Vec::new()))
            } else {
                self.run(ch, n, rng)
            };
        }
        let (mut aa, mut cc) = (Vec::with_capacity(n), Vec::with_capacity(n));
        self.extend_chunks(ch, n, rng, |a, c| {
            aa.extend_from_slice(a);
            cc.extend_from_slice(c);
            Ok(())
        })?;
        Ok((aa, cc))
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
