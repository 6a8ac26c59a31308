//! [`Rr22Session`]: one peer, many buckets, the VOLE generator set up once; and its
//! [`PsiSession`] implementation.

use obliv_core::Block;
use obliv_net::Channel;
use obliv_vole::{
    Subfield64VoleReceiver, Subfield64VoleSender, VoleConfig, VoleReceiver, VoleReceiverGen,
    VoleSender, VoleSenderGen,
};
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use super::{
    MAX_CHILDREN, MAX_FRAME_LEN, MAX_ITEMS, Rr22Config, Variant, code_name, fast, lowcomm, vole_err,
};
use crate::error::{Error, Result};
use crate::handshake::{self, FLAG_CONTINUED, FLAG_PRE_HASHED, Hello};
use crate::item::PsiItem;
use crate::session::{PsiSession, agree_split};
use crate::wire::{Role, check_stat_security, compare_width, peer_count};

// Flag bits of the [`Hello`] (the table of every bit is at `handshake::FLAG_CONTINUED`):
// `FLAG_CONTINUED` marks a session's second and later runs (the first run's hello is the
// one-shot `run`'s, flags 0); `FLAG_PRE_HASHED` a run on items the caller hashed already
// ([`crate::HashedItem`]), so that a peer passing the other kind of items (whose keys would
// not match) is a handshake mismatch instead of a silently empty intersection.

/// A session's VOLE generator slot in one family: the generator of the session's role,
/// empty until the first run (or fork) that needs it sets it up.
#[derive(Debug)]
pub(super) enum Slot<S, R> {
    /// The sender's generator.
    Sender(Option<S>),
    /// The receiver's generator.
    Receiver(Option<R>),
}

impl<S: VoleSenderGen, R: VoleReceiverGen> Slot<S, R> {
    /// The empty slot of `role`.
    fn new(role: Role) -> Self {
        match role {
            Role::Sender => Slot::Sender(None),
            Role::Receiver => Slot::Receiver(None),
        }
    }

    /// The sender's generator, or an error if this is a receiver's slot (which the
    /// session's construction rules out).
    pub(super) fn sender(&mut self) -> Result<&mut Option<S>> {
        match self {
            Slot::Sender(g) => Ok(g),
            Slot::Receiver(_) => Err(wrong_generator()),
        }
    }

    /// The receiver's generator, or an error if this is a sender's slot.
    pub(super) fn receiver(&mut self) -> Result<&mut Option<R>> {
        match self {
            Slot::Receiver(g) => Ok(g),
            Slot::Sender(_) => Err(wrong_generator()),
        }
    }
}

fn wrong_generator() -> Error {
    Error::InvalidParameter("this RR22 session holds another kind of VOLE generator".into())
}

/// The VOLE generator of a session: the family of its variant, fixed when the session is
/// made.
#[derive(Debug)]
pub(super) enum Generator {
    /// GF(2^128) VOLE (fast and malicious).
    Gf128(Slot<VoleSender, VoleReceiver>),
    /// Subfield VOLE over GF(2^64) (low-comm).
    Sub64(Slot<Subfield64VoleSender, Subfield64VoleReceiver>),
}

impl Generator {
    /// The empty generator of `variant` and `role`.
    fn new(variant: Variant, role: Role) -> Self {
        match variant {
            Variant::LowComm => Generator::Sub64(Slot::new(role)),
            _ => Generator::Gf128(Slot::new(role)),
        }
    }

    /// The GF(2^128) slot, or an error if the session holds the other family.
    pub(super) fn gf128(&mut self) -> Result<&mut Slot<VoleSender, VoleReceiver>> {
        match self {
            Generator::Gf128(s) => Ok(s),
            Generator::Sub64(_) => Err(wrong_generator()),
        }
    }

    /// The GF(2^64) subfield slot, or an error if the session holds the other family.
    pub(super) fn sub64(
        &mut self,
    ) -> Result<&mut Slot<Subfield64VoleSender, Subfield64VoleReceiver>> {
        match self {
            Generator::Sub64(s) => Ok(s),
            Generator::Gf128(_) => Err(wrong_generator()),
        }
    }
}

/// The sender's generator in `slot`, set up on its first use with the base correlations
/// `cfg.security` calls for (base OT + IKNP semi-honest, base OT + SoftSpokenOT with its
/// check malicious; [`VoleSenderGen::setup`]).
pub(super) fn sender_in<'a, G, C, R>(
    slot: &'a mut Option<G>,
    ch: &mut C,
    cfg: VoleConfig,
    rng: &mut R,
) -> Result<&'a mut G>
where
    G: VoleSenderGen,
    C: Channel + ?Sized,
    R: CryptoRng + ?Sized,
{
    Ok(match slot {
        Some(g) => g,
        None => slot.insert(G::setup(ch, cfg, rng).map_err(vole_err)?),
    })
}

/// The receiver's generator in `slot`, set up on its first use (see [`sender_in`]).
pub(super) fn receiver_in<'a, G, C, R>(
    slot: &'a mut Option<G>,
    ch: &mut C,
    cfg: VoleConfig,
    rng: &mut R,
) -> Result<&'a mut G>
where
    G: VoleReceiverGen,
    C: Channel + ?Sized,
    R: CryptoRng + ?Sized,
{
    Ok(match slot {
        Some(g) => g,
        None => slot.insert(G::setup(ch, cfg, rng).map_err(vole_err)?),
    })
}

/// What a session keeps between runs: its VOLE generator and output vectors.
#[derive(Debug)]
pub(super) struct Generators {
    /// The generator of the session's variant and role.
    pub(super) generator: Generator,
    /// The VOLE output vectors, kept from run to run.
    pub(super) bufs: VoleBuffers,
}

impl Generators {
    pub(super) fn new(generator: Generator) -> Self {
        Generators {
            generator,
            bufs: VoleBuffers::default(),
        }
    }
}

/// The VOLE output vectors a session keeps between runs: each run's extension writes into
/// them (`extend_into`), so the buckets after the first reuse their memory instead of
/// faulting in tens of MB of fresh pages each. They hold correlations: zeroized when
/// overwritten by a failed extension and when the session is dropped; `Debug` shows lengths
/// only.
#[derive(Default)]
pub(super) struct VoleBuffers {
    /// The receiver's `A` (GF(2^128)) or the sender's `B`.
    pub(super) a_or_b: Zeroizing<Vec<Block>>,
    /// The receiver's `C`.
    pub(super) c: Zeroizing<Vec<Block>>,
    /// The low-communication receiver's `A` (GF(2^64)).
    pub(super) a64: Zeroizing<Vec<u64>>,
}

impl core::fmt::Debug for VoleBuffers {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "VoleBuffers({} / {} / {} elements)",
            self.a_or_b.len(),
            self.c.len(),
            self.a64.len()
        )
    }
}

/// An RR22 PSI session with one peer: the silent VOLE's base correlations are produced once,
/// and each [`run`](Rr22Session::run) intersects one bucket with a fresh VOLE extension of
/// the OKVS size of that bucket.
///
/// # Message flow
///
/// The first run is byte for byte the one-shot [`run`](fn@super::run): its [`Hello`] (protocol, role, bin
/// size, statistical security, set sizes) is the session's handshake, so mismatched
/// variants, bin sizes, statistical security or roles stop there with
/// [`Error::HandshakeMismatch`]; the VOLE generator (base OT + IKNP for the
/// semi-honest variants, base OT + SoftSpokenOT with its check for the malicious one) is set
/// up inside the first run whose two sets are non-empty, at the point where the one-shot
/// protocol runs it. Every later run starts with another [`Hello`] carrying the bucket's set
/// size (with flag bit 1 set, so a peer that is not at the same stage is a mismatch) and
/// then extends the same generator: `obliv-vole` bootstraps the next base correlations from
/// its own outputs, so no base OT runs again. A run on [`HashedItem`](crate::HashedItem)s sets
/// flag bit 3 in its hello (a run on byte strings does not), so a peer passing the other kind
/// of items is a mismatch too. Per-run protocol steps (OKVS seed, masked OKVS,
/// the malicious coin toss for `w`, the sender's values) and all their checks are unchanged.
///
/// # Security across buckets
///
/// All runs of a session share the sender's `Δ` (the OPRF key, as in one long VOLE): the
/// correlations of the runs are disjoint pieces of one VOLE, each used for one OKVS only.
/// A sender value for an item outside the receiver's bucket involves `e·Δ` with `e ≠ 0`,
/// pseudorandom to the receiver as long as `Δ` is hidden, exactly as for the many items of
/// one run; nothing of one run's correlation is reused in another. The malicious coin toss
/// for `w` is repeated per run. The low-comm bound `n_s·2^-64` adds up over the runs (see
/// [`lowcomm`](super::lowcomm)).
///
/// The same holds across the children of [`split`](Rr22Session::split) (and theirs): each
/// child's base correlated OTs are fresh, disjoint correlations of its parent's VOLE under
/// the same `Δ` (derandomised by the receiver's mask `A ⊕ r`, uniform to the sender), and
/// each child's own outputs serve one OKVS each, so the buckets of a parent and all its
/// descendants are again disjoint pieces of one VOLE under one `Δ`; the low-comm bound adds
/// up over all of them. See [`fork`](super::fork) for the step and why malicious sessions are not forked.
///
/// After an error the two sides may no longer be in step: the session refuses further runs
/// (open a new one on a fresh channel).
#[derive(Debug)]
pub struct Rr22Session {
    pub(super) role: Role,
    pub(super) cfg: Rr22Config,
    pub(super) runs: u64,
    pub(super) failed: bool,
    pub(super) vole: Generators,
    /// 0 for a session made by [`Rr22Session::new`]; a non-zero 48-bit tag for a child of
    /// [`Rr22Session::split`], sent in every hello so that mismatched children are caught.
    pub(super) lineage: u64,
    /// Fork steps taken so far (part of the children's lineage tags).
    pub(super) forks: u64,
}

impl Rr22Session {
    /// A session as `role` with parameters `cfg` (checked here; the peer's are checked by
    /// the first run's handshake). Nothing is sent until the first [`run`](Self::run).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the bin size is outside `1..=2^24`, `max_peer_items`
    /// above [`MAX_ITEMS`] or the statistical security parameter outside `40..=128`.
    pub fn new(role: Role, cfg: &Rr22Config) -> Result<Self> {
        if cfg.bin_size == 0 || cfg.bin_size > 1 << 24 {
            return Err(Error::InvalidParameter(
                "bin size must be in 1..=2^24".into(),
            ));
        }
        if cfg.max_peer_items > MAX_ITEMS {
            return Err(Error::InvalidParameter(format!(
                "max_peer_items must be at most {MAX_ITEMS}"
            )));
        }
        check_stat_security(cfg.stat_security)?;
        Ok(Rr22Session {
            role,
            cfg: *cfg,
            runs: 0,
            failed: false,
            vole: Generators::new(Generator::new(cfg.variant, role)),
            lineage: 0,
            forks: 0,
        })
    }

    /// The `batch` field of this session's hellos: the bin size (0 for low-comm).
    pub(super) fn hello_batch(&self) -> u32 {
        match self.cfg.variant {
            Variant::LowComm => 0,
            _ => u32::try_from(self.cfg.bin_size).unwrap_or(u32::MAX),
        }
    }

    /// The `param` field of this session's hellos: the configured statistical security
    /// parameter in the low byte, with the lineage tag of a forked session above bit 16 (just
    /// the parameter for a session that was not forked).
    pub(super) fn hello_param(&self) -> u64 {
        handshake::stat_param(self.cfg.stat_security, self.lineage << 8)
    }

    /// Whether this session is a child of [`split`](Self::split) or [`fork`](Self::fork).
    pub fn is_forked(&self) -> bool {
        self.lineage != 0
    }

    /// The role of this side.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The configuration.
    pub fn config(&self) -> &Rr22Config {
        &self.cfg
    }

    /// The number of runs started so far.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Intersects one bucket with the peer's (which calls `run` on its session at the same
    /// point). Returns, for the receiver, the indices (ascending) of `items` in the
    /// intersection; `None` for the sender. Buckets may have any size up to [`MAX_ITEMS`],
    /// including 0.
    ///
    /// # Errors
    /// As [`run`](fn@super::run); also [`Error::InvalidParameter`] if an earlier run of this session
    /// failed.
    pub fn run<C, T, R>(
        &mut self,
        ch: &mut C,
        items: &[T],
        rng: &mut R,
    ) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        if self.failed {
            return Err(Error::InvalidParameter(
                "an earlier run of this RR22 session failed; open a new session".into(),
            ));
        }
        if items.len() > MAX_ITEMS {
            return Err(Error::InvalidParameter(format!(
                "at most {MAX_ITEMS} items per run"
            )));
        }
        let r = self.run_inner(ch, items, rng);
        self.runs += 1;
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn run_inner<C, T, R>(
        &mut self,
        ch: &mut C,
        items: &[T],
        rng: &mut R,
    ) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        let (cfg, role) = (self.cfg, self.role);
        let ours = Hello {
            protocol: cfg.variant.protocol_id(),
            curve: 0,
            role: role.code(),
            flags: (if self.runs == 0 { 0 } else { FLAG_CONTINUED })
                | (if T::PRE_HASHED { FLAG_PRE_HASHED } else { 0 }),
            batch: self.hello_batch(),
            n_items: items.len() as u64,
            param: self.hello_param(),
        };
        let theirs = handshake::exchange_stat(ch, &ours, role.other().code(), code_name)?;
        let n_peer = peer_count("n_items", theirs.n_items, cfg.max_peer_items)?;
        let (n_r, n_s) = match role {
            Role::Receiver => (items.len(), n_peer),
            Role::Sender => (n_peer, items.len()),
        };
        let max_s = lowcomm::max_sender_items(cfg.stat_security);
        if cfg.variant == Variant::LowComm && n_s > max_s {
            return Err(Error::InvalidParameter(format!(
                "rr22-lowcomm: the sender's {n_s} items exceed {max_s} (the 2^-{} bound needs \
                 n_s ≤ 2^(64 - {}); split the set into buckets)",
                cfg.stat_security, cfg.stat_security
            )));
        }
        if n_r == 0 || n_s == 0 {
            return Ok(match role {
                Role::Receiver => Some(Vec::new()),
                Role::Sender => None,
            });
        }
        // Malicious compares 16 bytes, which the width for λ must not exceed either.
        let w = compare_width(cfg.stat_security, n_r, n_s)?;
        let v = &mut self.vole;
        match (cfg.variant, role) {
            (Variant::Fast, Role::Receiver) => fast::receiver(
                ch,
                items,
                n_s,
                w,
                &cfg,
                false,
                (v.generator.gf128()?.receiver()?, &mut v.bufs),
                rng,
            )
            .map(Some),
            (Variant::Fast, Role::Sender) => fast::sender(
                ch,
                items,
                n_r,
                w,
                &cfg,
                false,
                (v.generator.gf128()?.sender()?, &mut v.bufs),
                rng,
            )
            .map(|()| None),
            (Variant::Malicious, Role::Receiver) => fast::receiver(
                ch,
                items,
                n_s,
                16,
                &cfg,
                true,
                (v.generator.gf128()?.receiver()?, &mut v.bufs),
                rng,
            )
            .map(Some),
            (Variant::Malicious, Role::Sender) => fast::sender(
                ch,
                items,
                n_r,
                16,
                &cfg,
                true,
                (v.generator.gf128()?.sender()?, &mut v.bufs),
                rng,
            )
            .map(|()| None),
            (Variant::LowComm, Role::Receiver) => lowcomm::receiver(
                ch,
                items,
                n_s,
                (w, cfg.stat_security),
                (v.generator.sub64()?.receiver()?, &mut v.bufs),
                rng,
            )
            .map(Some),
            (Variant::LowComm, Role::Sender) => lowcomm::sender(
                ch,
                items,
                n_r,
                (w, cfg.stat_security),
                (v.generator.sub64()?.sender()?, &mut v.bufs),
                rng,
            )
            .map(|()| None),
        }
    }
}

impl PsiSession for Rr22Session {
    fn protocol(&self) -> &'static str {
        self.cfg.variant.name()
    }

    fn set_job_limits(&mut self, max_peer_items: usize, stat_security: u32) -> Result<()> {
        if self.failed {
            return Err(Error::InvalidParameter(
                "an earlier run of this RR22 session failed; open a new session".into(),
            ));
        }
        let cfg = Rr22Config {
            max_peer_items,
            stat_security,
            ..self.cfg
        };
        Rr22Session::new(self.role, &cfg)?;
        self.cfg = cfg;
        Ok(())
    }

    fn role(&self) -> Role {
        self.role
    }

    fn max_frame_len(&self) -> usize {
        MAX_FRAME_LEN
    }

    fn run<C, T, R>(&mut self, ch: &mut C, items: &[T], rng: &mut R) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        Rr22Session::run(self, ch, items, rng)
    }

    /// The semi-honest variants fork the VOLE ([`Rr22Session::split`]: no new base OT);
    /// malicious sessions cannot be forked (see [`fork`](super::fork)), so after a handshake on the
    /// child count each child is an independent session (its own SoftSpokenOT base and `Δ`,
    /// set up in its first non-empty run).
    fn split<C, R>(&mut self, ch: &mut C, n: usize, rng: &mut R) -> Result<Vec<Self>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        if self.cfg.variant != Variant::Malicious {
            return Rr22Session::split(self, ch, n, rng);
        }
        if self.failed {
            return Err(Error::InvalidParameter(
                "an earlier run of this RR22 session failed; open a new session".into(),
            ));
        }
        if n == 0 || n > MAX_CHILDREN {
            return Err(Error::InvalidParameter(format!(
                "1..={MAX_CHILDREN} children, not {n}"
            )));
        }
        let ours = Hello {
            protocol: self.cfg.variant.protocol_id(),
            curve: 0,
            role: self.role.code(),
            flags: 0,
            batch: self.hello_batch(),
            n_items: 0,
            param: self.hello_param(),
        };
        if let Err(e) = agree_split(ch, ours, self.role, n, code_name) {
            self.failed = true;
            return Err(e);
        }
        (0..n)
            .map(|_| Rr22Session::new(self.role, &self.cfg))
            .collect()
    }
}
