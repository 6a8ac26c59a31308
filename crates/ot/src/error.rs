//! The error type of obliv-ot.

/// What went wrong in an OT protocol.
///
/// Every variant a peer can cause is a value here, never a panic: malformed points, messages of
/// the wrong length, and channel failures (timeouts, disconnects) all end the protocol with an
/// error that says what was wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The channel failed (I/O, timeout, disconnect, a frame of the wrong length).
    #[error("channel error: {0}")]
    Net(#[from] obliv_net::Error),
    /// An obliv-core primitive rejected its arguments (a bug in this crate if it ever shows).
    #[error("core primitive error: {0}")]
    Core(#[from] obliv_core::Error),
    /// The peer sent a group element that does not decode (or is the identity where that is
    /// forbidden).
    #[error("invalid group element from peer in {what} (element {index})")]
    InvalidPoint {
        /// Which message held it.
        what: &'static str,
        /// Its position in the message.
        index: usize,
    },
    /// A peer message had the wrong length.
    #[error("{what}: expected {expected} bytes, got {got}")]
    UnexpectedLength {
        /// Which message.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length that arrived.
        got: usize,
    },
    /// The peer failed a consistency check (SoftSpokenOT): it deviated from the protocol.
    #[error("the peer failed the consistency check")]
    ConsistencyCheck,
    /// A count exceeds the bound this party agreed to (its own configured maximum), checked
    /// before anything is allocated for it.
    #[error("{field} is {got}, above the agreed maximum {max}")]
    LimitExceeded {
        /// Which count (the name of the field or argument).
        field: &'static str,
        /// The count requested or announced.
        got: u64,
        /// The most this party accepts.
        max: u64,
    },
    /// An earlier call on this session failed (a channel error, a consistency check, a peer
    /// message of the wrong length): the two parties' PRG streams may no longer agree, and
    /// running again could reuse correlations or let a cheating peer retry a selective
    /// failure, so the session refuses every further call. Set up a new one.
    #[error("the session was aborted by an earlier error; set up a new one")]
    Aborted,
    /// A caller-supplied argument is out of range (wrong number of base OTs, an instance index
    /// past the batch, mismatched slice lengths, a batch too large).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// Result of an OT operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs one call of a session: `Err(Aborted)` if an earlier call failed; the flag stays set
/// unless this call succeeds.
pub(crate) fn guarded<T>(aborted: &mut bool, call: impl FnOnce() -> Result<T>) -> Result<T> {
    if *aborted {
        return Err(Error::Aborted);
    }
    *aborted = true;
    let out = call()?;
    *aborted = false;
    Ok(out)
}
