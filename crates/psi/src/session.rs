//! One shape for every two-party PSI protocol: a [`PsiSession`] is one side of a protocol
//! with one peer, run bucket after bucket on a channel.
//!
//! | protocol | session | set-up (once per session) | [`PsiSession::split`] |
//! |---|---|---|---|
//! | ECDH-PSI | [`EcdhSession`] | none | a handshake; children are copies |
//! | KKRT16 | [`KkrtSession`] | 512 base OTs, in the first run | a handshake; OPRF split, no base OT |
//! | RR22 fast / low-comm | [`Rr22Session`] | VOLE base OT, in the first non-empty run | the VOLE fork step |
//! | RR22 malicious | [`Rr22Session`] | SoftSpokenOT, in each session's first non-empty run | a handshake; independent sessions |
//!
//! Every run starts with the protocol's handshake (its identifier, roles, parameters and the
//! bucket's set size), so two parties that disagree stop there with
//! [`Error::HandshakeMismatch`] before any item-dependent data flows. A session that failed
//! refuses further runs: after an error the two sides may no longer be in step.
//!
//! The driver of [`crate::driver`] runs any session over any number of buckets, one at a
//! time or on several workers.
//!
//! [`EcdhSession`]: crate::ecdh::EcdhSession
//! [`KkrtSession`]: crate::kkrt::KkrtSession
//! [`Rr22Session`]: crate::rr22::Rr22Session

use obliv_net::Channel;
use rand_core::CryptoRng;

use crate::error::{Error, Result};
use crate::handshake::{self, Hello};
use crate::item::PsiItem;
use crate::wire::Role;

/// One side of a two-party PSI protocol with one peer, run once per bucket.
///
/// Items are anything `AsRef<[u8]>`, which the protocols hash to their own domain, or
/// [`HashedItem`](crate::HashedItem)s, 128-bit keys the caller has hashed already (callers
/// that bucket by a public hash pass that hash; see [`PsiItem`] for what RR22 then saves and
/// the caller's obligation). A party's item count per run is public: it
/// travels in the run's handshake.
pub trait PsiSession: Send + Sized {
    /// The protocol's name, as in messages (`ecdh-2pc`, `kkrt16`, `rr22-fast`, …).
    fn protocol(&self) -> &'static str;

    /// This side's role.
    fn role(&self) -> Role;

    /// The longest frame the peer's session of this protocol, with the parameters the
    /// handshake makes both sides agree on, sends in a run or a split, whatever the set sizes:
    /// every protocol streams its data in chunks of a fixed size.
    ///
    /// A caller that owns the channel lowers its limit to this
    /// ([`Channel::set_max_frame_len`]), so that a hostile peer announcing a longer frame is
    /// refused as soon as the length arrives, before any of it is buffered; the bucket driver
    /// ([`crate::driver::run_buckets`]) does so.
    fn max_frame_len(&self) -> usize;

    /// Intersects one bucket with the peer's (which calls `run` on its session at the same
    /// point). Returns, for a party that learns the result, the indices (ascending) of
    /// `items` in the intersection (every index of a repeated item); `None` otherwise.
    ///
    /// # Errors
    /// A handshake mismatch, a network error, a peer that breaks the protocol
    /// ([`crate::ErrorKind::PeerMisbehaved`]), or an invalid parameter; after an error the
    /// session refuses further runs.
    fn run<C, T, R>(&mut self, ch: &mut C, items: &[T], rng: &mut R) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized;

    /// Sets the job's bounds, which this session checks from its next run on: the most items
    /// the peer may announce in one run (`max_peer_items`) and the statistical security
    /// parameter of each run (`stat_security`, compared in every run's handshake), as the
    /// configuration given to the constructor sets them.
    ///
    /// For a caller that sets the session up or splits it before it knows the job's sizes
    /// (neither the set-up nor [`split`](Self::split) depends on them): the bucket driver's
    /// [`prepare`](crate::driver::prepare) runs the split while the caller still reads its
    /// input, and [`Prepared::set_job_limits`](crate::driver::Prepared::set_job_limits)
    /// sets the bounds on every child once the sizes are agreed. Both parties set the same
    /// `stat_security` (every run's handshake checks it).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for values the constructor would refuse, or if the
    /// session failed.
    fn set_job_limits(&mut self, max_peer_items: usize, stat_security: u32) -> Result<()>;

    /// Splits off `n` child sessions for buckets run side by side, each with its peer's
    /// child on a channel of its own (child `j` with child `j`). Runs on `ch` (a control
    /// channel) at the same point as the peer's `split`; checks that the peer splits into
    /// as many children.
    ///
    /// # Errors
    /// [`Error::HandshakeMismatch`] if the peer splits into another number of children or
    /// runs other parameters; network and set-up errors.
    fn split<C, R>(&mut self, ch: &mut C, n: usize, rng: &mut R) -> Result<Vec<Self>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized;
}

/// Flag bit of the hello of a split step that needs nothing but agreement (ECDH, KKRT,
/// RR22 malicious); the table of every flag bit is at [`handshake::FLAG_CONTINUED`].
pub(crate) use crate::handshake::FLAG_SPLIT;

/// The split step's agreement: a hello like the protocol's own (`ours`, with
/// [`FLAG_SPLIT`] set and the child count as its item count, its `param` carrying the
/// statistical security parameter in the low byte), and a mismatch on any field or on the
/// count is an error.
pub(crate) fn agree_split<C: Channel + ?Sized>(
    ch: &mut C,
    mut ours: Hello,
    role: Role,
    n: usize,
    name_of: impl Fn(&'static str, u8) -> String,
) -> Result<()> {
    ours.flags |= FLAG_SPLIT;
    ours.n_items = n as u64;
    let theirs = handshake::exchange_stat(ch, &ours, role.other().code(), name_of)?;
    if theirs.n_items != ours.n_items {
        return Err(Error::HandshakeMismatch {
            field: "workers",
            ours: n.to_string(),
            theirs: theirs.n_items.to_string(),
        });
    }
    Ok(())
}
