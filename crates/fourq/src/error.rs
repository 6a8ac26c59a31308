//! The crate's error type.

/// Why a value could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input had the wrong length.
    #[error("invalid length: expected {expected} bytes, got {got}")]
    InvalidLength {
        /// The required length.
        expected: usize,
        /// The length received.
        got: usize,
    },
    /// A coordinate or scalar was not in canonical form, or no curve point has this encoding.
    #[error("not a canonical encoding of a FourQ point or scalar")]
    InvalidEncoding,
    /// The point is on the curve but outside the prime-order subgroup.
    #[error("point is not in the prime-order subgroup")]
    NotInSubgroup,
    /// The point is on the curve but its component in the order-`N` subgroup is the identity:
    /// it is the identity or a point of small order (dividing the cofactor 392). Returned by
    /// [`Point::mul_many_encoded_projecting`](crate::Point::mul_many_encoded_projecting).
    #[error("point has small order (its prime-order component is the identity)")]
    SmallOrder,
}
