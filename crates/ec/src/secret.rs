//! Secret scalars: zeroized on drop, never printed.

use core::fmt;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// A secret non-zero scalar of a [`crate::PrimeGroup`].
///
/// Wraps the backend's scalar type. It is zeroized when dropped and its `Debug` prints no
/// value. Construct it with [`crate::PrimeGroup::random_scalar`] or
/// [`crate::PrimeGroup::scalar_from_bytes`], which both exclude zero, so that
/// [`crate::PrimeGroup::scalar_invert`] is always defined.
#[derive(Clone)]
pub struct SecretScalar<S: Zeroize>(pub(crate) S);

impl<S: Zeroize> SecretScalar<S> {
    /// The backend scalar (hazmat: for callers that combine this crate with the backend
    /// directly; the value is secret).
    pub fn expose_secret(&self) -> &S {
        &self.0
    }
}

impl<S: Zeroize> Zeroize for SecretScalar<S> {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl<S: Zeroize> Drop for SecretScalar<S> {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl<S: Zeroize> ZeroizeOnDrop for SecretScalar<S> {}

impl<S: Zeroize> fmt::Debug for SecretScalar<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretScalar(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every backend's scalar, wrapped, is wiped on drop and prints nothing.
    #[test]
    fn secret_scalars_zeroize_on_drop() {
        fn wiped<T: ZeroizeOnDrop + Zeroize>() {}
        wiped::<SecretScalar<curve25519_dalek::Scalar>>();
        wiped::<SecretScalar<obliv_fourq::Scalar>>();
        wiped::<SecretScalar<p256::Scalar>>();
        wiped::<SecretScalar<k256::Scalar>>();
        wiped::<SecretScalar<sm2::Scalar>>();
        wiped::<crate::SecretKey>();
        let mut k = SecretScalar(curve25519_dalek::Scalar::from(7u8));
        assert_eq!(format!("{k:?}"), "SecretScalar(..)");
        k.zeroize();
        assert_eq!(k.0, curve25519_dalek::Scalar::ZERO);
    }
}
