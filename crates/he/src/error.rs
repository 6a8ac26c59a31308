//! The crate's error type.

use thiserror::Error;

/// Everything that can go wrong in `obliv-he`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Error {
    /// A key size that this constructor does not allow.
    #[error("unsupported key size: {bits} bits (allowed: {allowed})")]
    UnsupportedKeySize {
        /// The requested size of the modulus in bits.
        bits: u32,
        /// The sizes that are allowed, for the message.
        allowed: &'static str,
    },
    /// A plaintext outside the message space of the scheme (for Paillier: not in `[0, n)`).
    #[error("plaintext out of range")]
    PlaintextOutOfRange,
    /// A ciphertext that is not a unit of the ciphertext group (for Paillier: not in `Z*_{n²}`).
    #[error("malformed ciphertext: {0}")]
    MalformedCiphertext(&'static str),
    /// A value too large for the encoding (fixed point / signed integer), or a decoded value that
    /// lies in the overflow band between the positive and the negative range.
    #[error("encoding overflow: {0}")]
    Overflow(&'static str),
    /// Two operands that were produced under different keys or parameters.
    #[error("key mismatch")]
    KeyMismatch,
    /// A key or parameter that fails validation (not prime, wrong size, wrong form).
    #[error("invalid key: {0}")]
    InvalidKey(&'static str),
    /// A discrete logarithm not found in the range covered by the baby-step giant-step table.
    #[error("discrete logarithm not in range [0, 2^{bits})")]
    DlogOutOfRange {
        /// The range bound of the table, as a power of two.
        bits: u32,
    },
    /// Bytes or text that do not decode to a value.
    #[error("decoding failed: {0}")]
    Decoding(&'static str),
    /// A non-finite float, or a precision that is not positive.
    #[error("invalid number: {0}")]
    InvalidNumber(&'static str),
}

/// `Result` with this crate's [`Error`](enum@Error).
pub type Result<T> = core::result::Result<T, Error>;
