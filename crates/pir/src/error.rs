//! The error type of this crate.

/// What went wrong: a malformed key or query from a peer, a bad argument, or the network.
///
/// Every variant a peer can cause is a value, never a panic: keys and queries are parsed
/// into typed values or rejected with the reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A serialised key or message has the wrong number of bytes.
    #[error("wrong length: expected {expected} bytes, got {got}")]
    WrongLength {
        /// The length the header implies.
        expected: usize,
        /// The length that arrived.
        got: usize,
    },
    /// A DPF key is for a different domain than the one expected.
    #[error("wrong domain: expected a key over 2^{expected} points, got 2^{got}")]
    WrongDomain {
        /// Domain bits expected by the evaluator.
        expected: u32,
        /// Domain bits announced by the key.
        got: u32,
    },
    /// The domain is larger than this implementation supports.
    #[error("domain of 2^{bits} points exceeds the maximum of 2^{max}")]
    DomainTooLarge {
        /// Requested domain bits.
        bits: u32,
        /// The supported maximum.
        max: u32,
    },
    /// A point or index lies outside its domain.
    #[error("index {index} out of range (domain size {size})")]
    IndexOutOfRange {
        /// The index.
        index: u64,
        /// The size of the domain.
        size: u64,
    },
    /// A serialised value has bits set that the encoding requires to be zero.
    #[error("non-canonical encoding: {what}")]
    NonCanonical {
        /// Which field.
        what: &'static str,
    },
    /// A message does not follow the protocol (unknown tag, inconsistent fields).
    #[error("malformed message: {what}")]
    Malformed {
        /// What was wrong.
        what: &'static str,
    },
    /// A database or batch parameter is invalid.
    #[error("invalid parameter: {what}")]
    InvalidParameter {
        /// What was wrong.
        what: &'static str,
    },
    /// A size announced by the peer (or implied by what it announced) exceeds the bound this
    /// party agreed to (its own configured maximum), checked before anything is allocated
    /// for it.
    #[error("{field} is {got}, above the agreed maximum {max}")]
    LimitExceeded {
        /// Which field of the peer's message.
        field: &'static str,
        /// The value announced (or implied).
        got: u64,
        /// The most this party accepts.
        max: u64,
    },
    /// Cuckoo hashing could not place every index of a batch (probability documented in
    /// [`crate::batch`]); the batch must be split or retried with other parameters.
    #[error("cuckoo hashing failed to place {count} of the batch's indices")]
    CuckooFailure {
        /// Indices that found no bucket.
        count: usize,
    },
    /// The server answered with an error.
    #[error("server error: {0}")]
    Server(String),
    /// The server is at its load limit and refused the request.
    #[error("server busy")]
    Busy,
    /// A channel error.
    #[error(transparent)]
    Net(#[from] obliv_net::Error),
    /// An I/O error (reading a database file, binding a socket).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
