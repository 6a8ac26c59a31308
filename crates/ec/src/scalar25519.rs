//! The scalars of the two Curve25519 groups, [`Ristretto255`](crate::Ristretto255) and
//! [`X25519`](crate::X25519): both are curve25519-dalek's `Scalar`, the integers modulo
//! `ℓ = 2^252 + 27742317777372353535851937790883648493`, so both groups' scalar methods of
//! [`PrimeGroup`](crate::PrimeGroup) are these functions.

use curve25519_dalek::scalar::Scalar;
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use crate::{Error, SecretScalar};

/// A uniformly random non-zero scalar.
pub(crate) fn random<R: CryptoRng + ?Sized>(rng: &mut R) -> SecretScalar<Scalar> {
    loop {
        let s = SecretScalar(Scalar::random(rng));
        // Rejection of zero (probability 2^-252): the loop leaks only that a draw was zero.
        if s.0 != Scalar::ZERO {
            return s;
        }
    }
}

/// `k⁻¹ mod ℓ` (constant time).
pub(crate) fn invert(k: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
    SecretScalar(k.0.invert())
}

/// `a·b mod ℓ`.
pub(crate) fn mul(a: &SecretScalar<Scalar>, b: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
    SecretScalar(a.0 * b.0)
}

/// The canonical 32-byte little-endian encoding.
pub(crate) fn to_bytes(k: &SecretScalar<Scalar>) -> Zeroizing<Vec<u8>> {
    Zeroizing::new(k.0.to_bytes().to_vec())
}

/// Parses a canonical non-zero scalar of `group` (named in the errors).
pub(crate) fn from_bytes(bytes: &[u8], group: &'static str) -> Result<SecretScalar<Scalar>, Error> {
    let arr: Zeroizing<[u8; 32]> =
        Zeroizing::new(bytes.try_into().map_err(|_| Error::WrongLength {
            group,
            expected: 32,
            got: bytes.len(),
        })?);
    let s: Option<Scalar> = Scalar::from_canonical_bytes(*arr).into();
    let s = SecretScalar(s.ok_or(Error::InvalidScalar { group })?);
    if s.0 == Scalar::ZERO {
        return Err(Error::InvalidScalar { group });
    }
    Ok(s)
}
