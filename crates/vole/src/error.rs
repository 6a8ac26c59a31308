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
    /// The requested number of correlations is larger than supported in one call.
    #[error("requested {requested} correlations, the limit is {max}")]
    TooLarge {
        /// The request.
        requested: usize,
        /// The largest supported request.
        max: usize,
    },
}
