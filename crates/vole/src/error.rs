//! The error type of obliv-vole.

/// Result of a VOLE operation.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong in a VOLE protocol.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The channel failed (peer gone, timeout, a frame of the wrong length, …).
    #[error("channel error: {0}")]
    Net(#[from] obliv_net::Error),
    /// The base correlations are too few for the requested extension.
    #[error("not enough base correlations: need {needed} {what}, have {have}")]
    NotEnoughBase {
        /// Which correlation ran short.
        what: &'static str,
        /// How many the extension needs.
        needed: usize,
        /// How many are available.
        have: usize,
    },
    /// The base correlations of the two parties do not fit together (different lengths).
    #[error("malformed base correlations: {reason}")]
    MalformedBase {
        /// What is inconsistent.
        reason: &'static str,
    },
    /// The malicious-security consistency check on the GGM trees failed: the sender sent
    /// messages that do not define a valid multi-point VOLE. The outputs were discarded.
    #[error("GGM-tree consistency check failed: the sender is cheating")]
    ConsistencyCheck,
    /// The base OT / OT extension that sets up the base correlations failed.
    #[error("base OT failed: {0}")]
    BaseOt(#[from] obliv_ot::Error),
    /// The requested number of correlations is larger than supported in one call (an invalid
    /// `max_chunk`, or more outputs than one collecting call can hold in memory). Nothing was
    /// sent.
    #[error("requested {requested} correlations, the limit is {max}")]
    TooLarge {
        /// The request.
        requested: usize,
        /// The largest supported request.
        max: usize,
    },
    /// An earlier call on this generator failed (a channel error or timeout, a peer message
    /// of the wrong length, a failed consistency check, an error of the caller's `sink`):
    /// the generator's state (base pool, hash tweaks) may be out of step with the peer's, and
    /// running again could produce silently wrong correlations, reuse base correlations, or
    /// let a cheating sender retry a selective-failure guess, so the generator refuses every
    /// further call. Set up a new one.
    #[error("the generator was aborted by an earlier error; set up a new one")]
    Aborted,
    /// Code parameters that do not define a valid code (from
    /// [`ExConvCode::try_new`](crate::ExConvCode::try_new)): for example a noise length
    /// `n < k + 26`, or a parity part `n − k` beyond `2^32`.
    #[error("invalid code parameters k = {k}, n = {n}: {reason}")]
    InvalidCode {
        /// The requested message length `k`.
        k: usize,
        /// The requested noise length `n`.
        n: usize,
        /// Which constraint was violated.
        reason: &'static str,
    },
}

/// Runs one call of a generator: `Err(Aborted)` if an earlier call failed; the flag stays
/// set unless this call succeeds (also if it unwinds).
pub(crate) fn guarded<S: ?Sized, T>(
    state: &mut S,
    flag: impl Fn(&mut S) -> &mut bool,
    call: impl FnOnce(&mut S) -> Result<T>,
) -> Result<T> {
    if *flag(state) {
        return Err(Error::Aborted);
    }
    *flag(state) = true;
    let out = call(state)?;
    *flag(state) = false;
    Ok(out)
}
