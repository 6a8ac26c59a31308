//! The silent VOLE generators, in both roles and both flavours.
//!
//! | type | role | gets |
//! |---|---|---|
//! | [`SubfieldVoleSender`] | sender | `Δ ∈ GF(2^128)`, `B ∈ GF(2^128)^n` |
//! | [`SubfieldVoleReceiver`] | receiver | `A ∈ GF(2)^n` (bytes 0/1), `C ∈ GF(2^128)^n` |
//! | [`crate::Subfield64VoleSender`] | sender | `Δ`, `B ∈ GF(2^128)^n` |
//! | [`crate::Subfield64VoleReceiver`] | receiver | `A ∈ GF(2^64)^n` (`u64`), `C ∈ GF(2^128)^n` |
//! | [`VoleSender`] | sender | `Δ`, `B ∈ GF(2^128)^n` |
//! | [`VoleReceiver`] | receiver | `A ∈ GF(2^128)^n`, `C ∈ GF(2^128)^n` |
//!
//! with `C[i] = B[i] + A[i]·Δ` for every `i` (`+` is XOR; for subfield VOLE `A[i]·Δ` is `Δ`
//! or 0, so the pair is also a correlated OT; for the 64-bit one `A[i]` enters as
//! [`crate::embed64`]`(A[i])`). `Δ` is fixed for the life of a sender.
//!
//! **Working buffers.** `extend_chunks` (and the GF(2^128) generators' `extend`) keep the
//! extension's working vectors (`N ≈ 2·max_chunk` elements) in the generator for the next
//! call, so a generator in steady state takes no page faults; the buffers hold the last
//! chunk's outputs until they are overwritten, and are zeroized when the generator is
//! dropped.
//!
//! **Chunks and bootstrapping.** A request for `n` correlations runs as a sequence of silent
//! extensions of at most [`VoleConfig::max_chunk`] outputs each; every extension produces a
//! few thousand extra outputs that become the base correlations of the next one (standard
//! since Boyle et al. CCS'19 §6 and Ferret §4: the outputs are COTs / VOLEs under the same
//! `Δ`), so memory stays at `O(max_chunk)` and base OT runs once per generator. The
//! GF(2^128) generators keep an inner subfield generator for the tree COTs they need and
//! bootstrap their base VOLEs from their own previous output.
//!
//! Both parties must call the same methods with the same `n` and configuration, in the same
//! order; the streaming `*_chunks` methods hand each chunk to a callback as it is produced.
//!
//! **After an error.** A call that fails once it has begun (a channel error or timeout, a
//! peer message of the wrong length, a failed consistency check, an error returned by the
//! caller's callback) may leave a generator's base pool and hash tweaks out of step with the
//! peer's: running on would give silently wrong correlations, reuse base correlations, or let
//! a cheating sender retry a selective-failure guess on the malicious check. Such a generator
//! refuses every later call with [`Error::Aborted`]; set up a new one. A request too large to
//! collect in memory is refused with [`Error::TooLarge`] before anything is sent, and the
//! generator stays usable.
//!
//! **One core.** The chunk loop, the `extend` paths and the buffer reuse are written once in
//! the private `generator` module; the GF(2^128) and 64-bit generators are one generic
//! generator over an inner subfield generator, differing only in a small flavour trait
//! (extension kind, COTs per packed base VOLE, the type of `A`).

use obliv_core::Block;
use obliv_net::Channel;
use rand_core::CryptoRng;
use zeroize::Zeroize;

use crate::base::{ReceiverBase, SenderBase};
use crate::error::{Error, Result};
use crate::extend::{self, AVec, Kind, Params, Security, pack_bits, pack128};
use crate::generator::{
    AValue, OuterReceiver, OuterSender, Packed, ReceiverStep, SenderStep, TAG_SUBFIELD, Tweaks,
    debug_generator,
};
use crate::source::BaseSource;
use crate::traits::{VoleReceiverGen, VoleSenderGen};

/// The default largest extension: 2^21 outputs (a working vector of `N ≈ 2^22` blocks, 64
/// MiB, per party; the receivers of the 64-bit and GF(2^128) VOLEs also keep `N` 32-byte
/// (A, C) cells), 0.26 bits of communication per subfield correlation (0.62 for the 64-bit
/// and GF(2^128) VOLEs). Larger chunks send less (2^22: 0.14 bits) but run slower per
/// correlation, being bound by the encoder's random memory accesses; smaller ones are faster
/// and send more: 2^20 sends 0.49 bits (1.16) and runs about 20 % faster here (see the
/// crate README).
pub const DEFAULT_MAX_CHUNK: usize = 1 << 21;
/// The largest allowed `max_chunk`.
pub const MAX_CHUNK_LIMIT: usize = 1 << 26;
/// Slack added to `max_chunk` when sizing the bootstrapped reserve.
const RESERVE_SLACK: usize = 1 << 16;

/// Configuration shared by both parties (they must agree on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VoleConfig {
    /// Semi-honest or malicious (GGM consistency check).
    pub security: Security,
    /// Largest single extension (outputs per chunk); larger requests are split.
    pub max_chunk: usize,
}

impl Default for VoleConfig {
    fn default() -> Self {
        VoleConfig {
            security: Security::SemiHonest,
            max_chunk: DEFAULT_MAX_CHUNK,
        }
    }
}

impl VoleConfig {
    /// The default configuration with the given security.
    pub fn with_security(security: Security) -> Self {
        VoleConfig {
            security,
            ..Self::default()
        }
    }

    /// Checks `max_chunk`.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_chunk == 0 || self.max_chunk > MAX_CHUNK_LIMIT {
            return Err(Error::TooLarge {
                requested: self.max_chunk,
                max: MAX_CHUNK_LIMIT,
            });
        }
        Ok(())
    }

    /// [`validate`](Self::validate), and that a base of `have` COTs is large enough for
    /// `from_base`.
    fn check_base(&self, have: usize) -> Result<()> {
        self.validate()?;
        let needed = self.base_cots_needed();
        if have < needed {
            return Err(Error::NotEnoughBase {
                what: "base COTs",
                needed,
                have,
            });
        }
        Ok(())
    }

    /// COTs a subfield generator keeps in reserve for its next extension.
    pub(crate) fn subfield_reserve(&self) -> usize {
        Params::new(
            Kind::Subfield,
            self.max_chunk + RESERVE_SLACK,
            self.security,
        )
        .cots_needed()
    }

    /// Base VOLEs a generator of `kind` (GF(2^128) or 64-bit subfield) keeps in reserve.
    pub(crate) fn vole_reserve(&self, kind: Kind) -> usize {
        Params::new(kind, self.max_chunk + RESERVE_SLACK, self.security).voles_needed()
    }

    /// The number of base COTs (with `Δ`) that `from_base` needs: enough for one bootstrap
    /// extension that produces the first reserve.
    pub fn base_cots_needed(&self) -> usize {
        Params::new(Kind::Subfield, self.subfield_reserve(), self.security).cots_needed()
    }
}

/// Copies the reserve `buf[from..to]` out as the next pool and wipes it from `buf`.
pub(crate) fn take_reserve<T: Copy + Zeroize>(buf: &mut [T], from: usize, to: usize) -> Vec<T> {
    let pool = buf[from..to].to_vec();
    buf[from..to].iter_mut().for_each(Zeroize::zeroize);
    pool
}

/// Subfield VOLE sender: holds `Δ`, gets `B` with `C = B + A·Δ`.
pub struct SubfieldVoleSender {
    delta: Block,
    pool: Vec<Block>,
    cfg: VoleConfig,
    tweaks: Tweaks,
    /// The working buffer of `extend_chunks`, kept for the next call (no page faults).
    scratch: Vec<Block>,
    /// Set by a failed call: every later call gives [`Error::Aborted`].
    aborted: bool,
}

impl core::fmt::Debug for SubfieldVoleSender {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_generator(f, "SubfieldVoleSender", self.cfg, Some(self.pool.len()))
    }
}

impl Drop for SubfieldVoleSender {
    fn drop(&mut self) {
        self.delta.zeroize();
        self.pool.zeroize();
        self.scratch.zeroize();
    }
}

impl SubfieldVoleSender {
    /// A sender with a fresh random `Δ`: runs 128 base OTs (Chou–Orlandi) and IKNP OT
    /// extension for [`VoleConfig::base_cots_needed`] correlated OTs (obliv-ot), then
    /// bootstraps. The peer runs [`SubfieldVoleReceiver::new`].
    ///
    /// The IKNP base is semi-honest: with [`Security::Malicious`] the GGM consistency check
    /// protects the receiver against a malicious sender, but a malicious *receiver* could
    /// attack the IKNP base setup. [`VoleSenderGen::setup`] sets a malicious configuration
    /// up with SoftSpokenOT and its consistency check instead ([`BaseSource::SoftSpoken`]).
    ///
    /// # Errors
    /// [`Error::BaseOt`] if base OT or OT extension fails; channel errors.
    pub fn new<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut R,
    ) -> Result<Self> {
        <Self as VoleSenderGen>::with_source(ch, cfg, BaseSource::Iknp, rng)
    }

    /// A sender from base COTs under `base.delta()` (at least
    /// [`VoleConfig::base_cots_needed`] of them).
    ///
    /// # Errors
    /// [`Error::TooLarge`] for an invalid `max_chunk`; [`Error::NotEnoughBase`] if the base is
    /// too small.
    pub fn from_base(base: SenderBase, cfg: VoleConfig) -> Result<Self> {
        cfg.check_base(base.len())?;
        Ok(SubfieldVoleSender {
            delta: base.delta,
            pool: base.q.clone(),
            cfg,
            tweaks: Tweaks::new(TAG_SUBFIELD),
            scratch: Vec::new(),
            aborted: false,
        })
    }

    /// `Δ`.
    pub fn delta(&self) -> Block {
        self.delta
    }

    /// The configuration.
    pub fn config(&self) -> VoleConfig {
        self.cfg
    }

    /// Produces `n` correlations, handing them to `sink` chunk by chunk.
    ///
    /// # Errors
    /// Channel errors, or [`Error::ConsistencyCheck`] is reported on the receiver's side.
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
        self.chunks(ch, n, rng, sink)
    }

    /// Produces `B` of `n` correlations.
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::extend_chunks`].
    pub fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<Block>> {
        self.collect_or_single(ch, n, rng)
    }

    /// Produces `B` of `n` correlations into `out` (any contents on entry; `n` elements on
    /// success), reusing its memory: with `n` at most `max_chunk`, `out` is the extension's
    /// working buffer and keeps a capacity of about `2n` blocks, so that calling again with
    /// the same vector allocates nothing (no page faults): the form for a session of many
    /// extensions. On error `out` is zeroized and emptied.
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::extend_chunks`].
    pub fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        out: &mut Vec<Block>,
    ) -> Result<()> {
        self.collect_into(ch, n, rng, out)
    }
}

impl SenderStep for SubfieldVoleSender {
    fn config(&self) -> VoleConfig {
        self.cfg
    }

    fn scratch(&mut self) -> &mut Vec<Block> {
        &mut self.scratch
    }

    fn aborted(&mut self) -> &mut bool {
        &mut self.aborted
    }

    /// The base is the pool of COTs itself: when it is short, one extension refills it.
    fn run_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
        buf: &mut Vec<Block>,
    ) -> Result<()> {
        let reserve = self.cfg.subfield_reserve();
        let params = Params::new(Kind::Subfield, k_user + reserve, self.cfg.security);
        if self.pool.len() < params.cots_needed() {
            // Bootstrap: one extension that only refills the reserve.
            let boot = Params::new(Kind::Subfield, reserve, self.cfg.security);
            let tw = self.tweaks.next();
            let out = extend::send(ch, &boot, self.delta, &self.pool, &[], tw, rng)?;
            self.pool.zeroize();
            self.pool = out;
        }
        let tw = self.tweaks.next();
        extend::send_into(ch, &params, self.delta, &self.pool, &[], tw, rng, buf)?;
        self.pool.zeroize();
        self.pool = take_reserve(buf, k_user, params.k);
        Ok(())
    }
}

/// Subfield VOLE receiver: gets `A ∈ {0,1}^n` (one byte per bit) and `C = B + A·Δ`.
pub struct SubfieldVoleReceiver {
    pool_r: Vec<u8>,
    pool_t: Vec<Block>,
    cfg: VoleConfig,
    tweaks: Tweaks,
    /// The working buffers of `extend_chunks`, kept for the next call.
    scratch: (AVec, Vec<Block>),
    /// Set by a failed call: every later call gives [`Error::Aborted`].
    aborted: bool,
}

impl core::fmt::Debug for SubfieldVoleReceiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_generator(f, "SubfieldVoleReceiver", self.cfg, Some(self.pool_t.len()))
    }
}

impl Drop for SubfieldVoleReceiver {
    fn drop(&mut self) {
        self.pool_r.zeroize();
        self.pool_t.zeroize();
        self.scratch.0.zeroize();
        self.scratch.1.zeroize();
    }
}

impl SubfieldVoleReceiver {
    /// A receiver: runs the base OTs and IKNP extension with the sender's
    /// [`SubfieldVoleSender::new`] (random choice bits), then bootstraps.
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::new`].
    pub fn new<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut R,
    ) -> Result<Self> {
        <Self as VoleReceiverGen>::with_source(ch, cfg, BaseSource::Iknp, rng)
    }

    /// A receiver from base COTs (at least [`VoleConfig::base_cots_needed`]).
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::from_base`].
    pub fn from_base(base: ReceiverBase, cfg: VoleConfig) -> Result<Self> {
        cfg.check_base(base.len())?;
        Ok(SubfieldVoleReceiver {
            pool_r: base.r.clone(),
            pool_t: base.t.clone(),
            cfg,
            tweaks: Tweaks::new(TAG_SUBFIELD),
            scratch: (AVec::empty(Kind::Subfield), Vec::new()),
            aborted: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> VoleConfig {
        self.cfg
    }

    /// Produces `n` correlations, handing `(A, C)` to `sink` chunk by chunk.
    ///
    /// # Errors
    /// Channel errors; [`Error::ConsistencyCheck`] if the sender cheated (malicious mode).
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
        F: FnMut(&[u8], &[Block]) -> Result<()>,
    {
        self.chunks(ch, n, rng, sink)
    }

    /// Produces `(A, C)` of `n` correlations (`A` as bytes 0/1).
    ///
    /// # Errors
    /// As [`SubfieldVoleReceiver::extend_chunks`].
    pub fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<(Vec<u8>, Vec<Block>)> {
        self.collect_or_single(ch, n, rng)
    }

    /// Produces `(A, C)` of `n` correlations into `a` and `c` (any contents on entry; `n`
    /// elements each on success), reusing their memory: with `n` at most `max_chunk` they
    /// are the extension's working buffers for `A` and `C`, so that calling again with the
    /// same vectors allocates nothing for them (no page faults): the form for a session of
    /// many extensions. On error both are zeroized and emptied.
    ///
    /// # Errors
    /// As [`SubfieldVoleReceiver::extend_chunks`].
    pub fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        a: &mut Vec<u8>,
        c: &mut Vec<Block>,
    ) -> Result<()> {
        self.collect_into(ch, n, rng, a, c)
    }
}

impl ReceiverStep for SubfieldVoleReceiver {
    type A = u8;

    fn config(&self) -> VoleConfig {
        self.cfg
    }

    fn scratch(&mut self) -> &mut (AVec, Vec<Block>) {
        &mut self.scratch
    }

    fn aborted(&mut self) -> &mut bool {
        &mut self.aborted
    }

    /// The base is the pool of COTs itself: when it is short, one extension refills it.
    fn run_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
        a: &mut AVec,
        c: &mut Vec<Block>,
    ) -> Result<()> {
        let reserve = self.cfg.subfield_reserve();
        let params = Params::new(Kind::Subfield, k_user + reserve, self.cfg.security);
        if self.pool_t.len() < params.cots_needed() {
            // Bootstrap: one extension that only refills the reserve.
            let boot = Params::new(Kind::Subfield, reserve, self.cfg.security);
            let tw = self.tweaks.next();
            let (pr, pt) = (&self.pool_r, &self.pool_t);
            let (bits, cots) = extend::receive(ch, &boot, pr, pt, &[], &[], tw, rng)?;
            self.pool_r.zeroize();
            self.pool_t.zeroize();
            self.pool_r = u8::into_values(bits);
            self.pool_t = cots;
        }
        let tw = self.tweaks.next();
        let (pr, pt) = (&self.pool_r, &self.pool_t);
        extend::receive_into(ch, &params, pr, pt, &[], &[], tw, rng, a, c)?;
        self.pool_r.zeroize();
        self.pool_t.zeroize();
        self.pool_r = take_reserve(u8::values_mut(a), k_user, params.k);
        self.pool_t = take_reserve(c, k_user, params.k);
        Ok(())
    }
}

/// The GF(2^128) flavour of the [`Packed`] generators: a base VOLE packs 128 COTs.
pub(crate) struct Gf128;

impl Packed for Gf128 {
    const KIND: Kind = Kind::Field;
    const WIDTH: usize = 128;
    type A = Block;
    fn pack_blocks(v: &[Block]) -> Block {
        pack128(v)
    }
    fn pack_bits(bits: &[u8]) -> Block {
        pack_bits(bits)
    }
    fn with_blocks<T>(a: &[Block], f: impl FnOnce(&[Block]) -> T) -> T {
        f(a)
    }
}

/// GF(2^128) VOLE sender: holds `Δ`, gets `B` with `C = B + A·Δ`, `A` uniform in GF(2^128).
pub struct VoleSender {
    core: OuterSender<Gf128>,
}

impl core::fmt::Debug for VoleSender {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_generator(f, "VoleSender", self.core.config(), None)
    }
}

impl VoleSender {
    /// A sender with a fresh random `Δ`, base correlations from base OT + IKNP (see
    /// [`SubfieldVoleSender::new`]). The peer runs [`VoleReceiver::new`].
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::new`].
    pub fn new<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut R,
    ) -> Result<Self> {
        let inner = SubfieldVoleSender::new(ch, cfg, rng)?;
        Ok(VoleSender {
            core: OuterSender::new(inner),
        })
    }

    /// A sender from base COTs under `Δ` (at least [`VoleConfig::base_cots_needed`]).
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::from_base`].
    pub fn from_base(base: SenderBase, cfg: VoleConfig) -> Result<Self> {
        let inner = SubfieldVoleSender::from_base(base, cfg)?;
        Ok(VoleSender {
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

    /// Produces `n` correlations, handing `B` to `sink` chunk by chunk.
    ///
    /// # Errors
    /// Channel errors.
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
    /// Channel errors.
    pub fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<Block>> {
        self.core.collect(ch, n, rng)
    }

    /// Produces `B` of `n` correlations into `out` (any contents on entry; `n` elements on
    /// success), reusing its memory: with `n` at most `max_chunk`, `out` is the extension's
    /// working buffer and keeps a capacity of about `2n` blocks, so that calling again with
    /// the same vector allocates nothing (no page faults): the form for a session of many
    /// extensions. On error `out` is zeroized and emptied.
    ///
    /// # Errors
    /// Channel errors.
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

/// GF(2^128) VOLE receiver: gets `A` (uniform in GF(2^128)) and `C = B + A·Δ`.
pub struct VoleReceiver {
    core: OuterReceiver<Gf128>,
}

impl core::fmt::Debug for VoleReceiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_generator(f, "VoleReceiver", self.core.config(), None)
    }
}

impl VoleReceiver {
    /// A receiver, base correlations from base OT + IKNP with the sender's
    /// [`VoleSender::new`].
    ///
    /// # Errors
    /// As [`SubfieldVoleSender::new`].
    pub fn new<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut R,
    ) -> Result<Self> {
        let inner = SubfieldVoleReceiver::new(ch, cfg, rng)?;
        Ok(VoleReceiver {
            core: OuterReceiver::new(inner),
        })
    }

    /// A receiver from base COTs (at least [`VoleConfig::base_cots_needed`]).
    ///
    /// # Errors
    /// As [`SubfieldVoleReceiver::from_base`].
    pub fn from_base(base: ReceiverBase, cfg: VoleConfig) -> Result<Self> {
        let inner = SubfieldVoleReceiver::from_base(base, cfg)?;
        Ok(VoleReceiver {
            core: OuterReceiver::new(inner),
        })
    }

    /// The configuration.
    pub fn config(&self) -> VoleConfig {
        self.core.config()
    }

    /// Produces `n` correlations, handing `(A, C)` to `sink` chunk by chunk.
    ///
    /// # Errors
    /// Channel errors; [`Error::ConsistencyCheck`] if the sender cheated (malicious mode).
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
        F: FnMut(&[Block], &[Block]) -> Result<()>,
    {
        self.core.chunks(ch, n, rng, sink)
    }

    /// Produces `(A, C)` of `n` correlations.
    ///
    /// # Errors
    /// As [`VoleReceiver::extend_chunks`].
    pub fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<(Vec<Block>, Vec<Block>)> {
        self.core.collect(ch, n, rng)
    }

    /// Produces `(A, C)` of `n` correlations into `a` and `c` (any contents on entry; `n`
    /// elements each on success), reusing their memory: with `n` at most `max_chunk` they
    /// are the extension's working buffers for `A` and `C`, so that calling again with the
    /// same vectors allocates nothing for them (no page faults): the form for a session of
    /// many extensions. On error both are zeroized and emptied.
    ///
    /// # Errors
    /// As [`VoleReceiver::extend_chunks`].
    pub fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        a: &mut Vec<Block>,
        c: &mut Vec<Block>,
    ) -> Result<()> {
        self.core.collect_into(ch, n, rng, a, c)
    }
}

/// One-shot GF(2^128) VOLE, sender side: base OT + IKNP + silent extension; returns
/// `(Δ, B)` of `n` correlations. The peer calls [`vole_receive`] with the same `n` and `cfg`.
/// To extend again later without new base OTs, keep a [`VoleSender`] instead.
///
/// # Errors
/// As [`VoleSender::new`] and [`VoleSender::extend`].
pub fn vole_send<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    n: usize,
    cfg: VoleConfig,
    rng: &mut R,
) -> Result<(Block, Vec<Block>)> {
    let mut s = VoleSender::new(ch, cfg, rng)?;
    let b = s.extend(ch, n, rng)?;
    Ok((s.delta(), b))
}

/// One-shot GF(2^128) VOLE, receiver side: returns `(A, C)` with `C = B + A·Δ`.
///
/// # Errors
/// As [`VoleReceiver::new`] and [`VoleReceiver::extend`].
pub fn vole_receive<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    n: usize,
    cfg: VoleConfig,
    rng: &mut R,
) -> Result<(Vec<Block>, Vec<Block>)> {
    VoleReceiver::new(ch, cfg, rng)?.extend(ch, n, rng)
}

/// One-shot subfield VOLE, sender side: returns `(Δ, B)`. The peer calls
/// [`subfield_vole_receive`].
///
/// # Errors
/// As [`SubfieldVoleSender::new`] and [`SubfieldVoleSender::extend`].
pub fn subfield_vole_send<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    n: usize,
    cfg: VoleConfig,
    rng: &mut R,
) -> Result<(Block, Vec<Block>)> {
    let mut s = SubfieldVoleSender::new(ch, cfg, rng)?;
    let b = s.extend(ch, n, rng)?;
    Ok((s.delta(), b))
}

/// One-shot subfield VOLE, receiver side: returns `(A, C)` (`A` as bytes 0/1) with
/// `C = B ⊕ A·Δ`.
///
/// # Errors
/// As [`SubfieldVoleReceiver::new`] and [`SubfieldVoleReceiver::extend`].
pub fn subfield_vole_receive<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    n: usize,
    cfg: VoleConfig,
    rng: &mut R,
) -> Result<(Vec<u8>, Vec<Block>)> {
    SubfieldVoleReceiver::new(ch, cfg, rng)?.extend(ch, n, rng)
}
