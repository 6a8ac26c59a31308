//! The error type of this crate.

/// Everything that can go wrong in `obliv-ec`. Nothing a peer sends makes this crate panic:
/// every received encoding is parsed into a point or rejected with one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An encoding had the wrong length.
    #[error("{group}: encoding has {got} bytes, expected {expected}")]
    WrongLength {
        /// The group ([`crate::PrimeGroup::NAME`]).
        group: &'static str,
        /// The expected length.
        expected: usize,
        /// The received length.
        got: usize,
    },
    /// The bytes are not the canonical encoding of a point of the prime-order group (off the
    /// curve, non-canonical coordinates or tag, or outside the subgroup).
    #[error("{group}: bytes do not encode an element of the prime-order group")]
    InvalidPoint {
        /// The group.
        group: &'static str,
    },
    /// The encoding is that of the identity, which a protocol must never accept.
    #[error("{group}: the identity element is rejected")]
    Identity {
        /// The group.
        group: &'static str,
    },
    /// A scalar encoding was not reduced modulo the group order, or was zero.
    #[error("{group}: scalar is not a canonical non-zero element of Z_q")]
    InvalidScalar {
        /// The group.
        group: &'static str,
    },
    /// An output buffer had the wrong number of elements.
    #[error("output buffer holds {got} elements, the input {expected}")]
    BufferLength {
        /// Number of input elements.
        expected: usize,
        /// Size of the output buffer.
        got: usize,
    },
    /// A flat buffer of encodings was not a whole number of encodings.
    #[error("{group}: a buffer of {len} bytes is not a multiple of the {stride}-byte encoding")]
    RaggedBuffer {
        /// The group.
        group: &'static str,
        /// Buffer length.
        len: usize,
        /// Encoding length.
        stride: usize,
    },
    /// Element `index` of a batch was rejected.
    #[error("element {index} of the batch: {source}")]
    Batch {
        /// Position in the batch.
        index: usize,
        /// Why it was rejected.
        #[source]
        source: Box<Error>,
    },
    /// Hash to curve was called with an invalid domain separation tag (empty).
    #[error("hash to curve: {0}")]
    HashToCurve(&'static str),
    /// A curve name that is none of `fourq`, `25519`, `sm2`, `secp256k1`, `p256`.
    #[error("unknown curve {0:?}: expected one of fourq, 25519, sm2, secp256k1, p256")]
    UnknownCurve(String),
    /// The curve exists in [`crate::Curve`] but its backend is not built into this crate.
    #[error("curve {0} is not available in this build of obliv-ec")]
    Unavailable(&'static str),
    /// A secret key belongs to another curve than the group it is used with.
    #[error("secret key is for {key}, the group is {group}")]
    CurveMismatch {
        /// The key's curve.
        key: &'static str,
        /// The group's curve.
        group: &'static str,
    },
}
