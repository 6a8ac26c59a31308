//! The error type of obliv-core.

/// What went wrong in an obliv-core call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A buffer had the wrong length.
    #[error("unexpected length: expected {expected}, got {got}")]
    UnexpectedLength {
        /// The length required.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// Dimensions that the operation does not support.
    #[error("invalid shape: {what}")]
    InvalidShape {
        /// Which constraint was violated.
        what: &'static str,
    },
}
