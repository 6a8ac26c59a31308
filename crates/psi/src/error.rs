//! The error type of obliv-psi.

/// What went wrong in a PSI run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The channel failed (peer gone, timeout, oversized frame, …).
    #[error("network: {0}")]
    Net(#[from] obliv_net::Error),
    /// A group operation failed; for points received from the peer this means the peer sent
    /// something that is not a valid group element.
    #[error("group: {0}")]
    Group(#[from] obliv_ec::Error),
    /// The two sides' handshakes disagree (protocol, version, curve, parameters or roles).
    #[error("handshake mismatch on {field}: we have {ours}, the peer has {theirs}")]
    HandshakeMismatch {
        /// Which field differs.
        field: &'static str,
        /// Our value.
        ours: String,
        /// The peer's value.
        theirs: String,
    },
    /// The peer sent a message that does not fit the protocol at this point.
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A file (key file, cache) could not be read or written.
    #[error("i/o on {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A key file or cache is malformed, tampered with, or does not belong to this run.
    #[error("cache or key file: {0}")]
    Cache(String),
    /// A caller-supplied parameter is out of range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
}

/// `Result` with [`Error`].
pub type Result<T> = core::result::Result<T, Error>;
