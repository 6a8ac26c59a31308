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
