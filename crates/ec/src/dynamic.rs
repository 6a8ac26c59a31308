//! Run-time choice of the group: [`Curve`] (parsed from the names the CLI and configs use)
//! and [`DynGroup`], which dispatches to the [`PrimeGroup`] implementations over byte
//! encodings, so callers need no generics.

use crate::{Error, FourQ, P256, PrimeGroup, Ristretto255, Secp256k1, Sm2, X25519, hash_encoded};
use core::fmt;
use core::str::FromStr;
use rand_core::CryptoRng;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// The curves of this workspace, by the names `fourq`, `25519`, `sm2`, `secp256k1`, `p256`,
/// `ristretto255`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Curve {
    /// FourQ (Costello–Longa 2015), from the `obliv-fourq` crate ([`FourQ`]).
    FourQ,
    /// Curve25519 as the X25519-style group on u-coordinates ([`X25519`]): the faster of the
    /// two Curve25519 groups in the ECDH batches (crate README, "Why `Curve::Curve25519` is
    /// the X25519-style group").
    Curve25519,
    /// SM2 ([`Sm2`]).
    Sm2,
    /// secp256k1 ([`Secp256k1`]).
    Secp256k1,
    /// NIST P-256 ([`P256`]).
    P256,
    /// Curve25519 as the prime-order group ristretto255 ([`Ristretto255`]): a decoder that
    /// rejects rather than projects, and point addition for protocols that need it.
    Ristretto255,
}

impl Curve {
    /// Every curve, in the order of the CLI's help text.
    pub const ALL: [Curve; 6] = [
        Curve::FourQ,
        Curve::Curve25519,
        Curve::Sm2,
        Curve::Secp256k1,
        Curve::P256,
        Curve::Ristretto255,
    ];

    /// The name [`FromStr`] accepts and [`fmt::Display`] prints.
    pub const fn name(self) -> &'static str {
        match self {
            Curve::FourQ => "fourq",
            Curve::Curve25519 => "25519",
            Curve::Sm2 => "sm2",
            Curve::Secp256k1 => "secp256k1",
            Curve::P256 => "p256",
            Curve::Ristretto255 => "ristretto255",
        }
    }

    /// Whether this build of the crate has a backend for the curve.
    pub const fn is_available(self) -> bool {
        true
    }
}

impl fmt::Display for Curve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Curve {
    type Err = Error;

    /// Parses the canonical names, case-insensitively, plus the aliases `curve25519` and
    /// `x25519` (for `25519`), `ristretto` (for `ristretto255`), `k256` and
    /// `p-256`/`secp256r1`.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.to_ascii_lowercase().as_str() {
            "fourq" => Ok(Curve::FourQ),
            "25519" | "curve25519" | "x25519" => Ok(Curve::Curve25519),
            "ristretto255" | "ristretto" => Ok(Curve::Ristretto255),
            "sm2" => Ok(Curve::Sm2),
            "secp256k1" | "k256" => Ok(Curve::Secp256k1),
            "p256" | "p-256" | "secp256r1" => Ok(Curve::P256),
            _ => Err(Error::UnknownCurve(s.chars().take(64).collect())),
        }
    }
}

/// A secret non-zero scalar of one curve, held as its canonical bytes; zeroized on drop, its
/// `Debug` prints no value.
#[derive(Clone)]
pub struct SecretKey {
    curve: Curve,
    bytes: Zeroizing<Vec<u8>>,
}

impl SecretKey {
    /// The curve this key belongs to.
    pub fn curve(&self) -> Curve {
        self.curve
    }

    /// The canonical scalar encoding (secret).
    pub fn expose_secret_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey({}, ..)", self.curve)
    }
}

impl Zeroize for SecretKey {
    fn zeroize(&mut self) {
        self.bytes.zeroize();
    }
}

impl ZeroizeOnDrop for SecretKey {}

/// A [`PrimeGroup`] chosen at run time. All points are passed as flat byte buffers of
/// `n × encoded_len()` bytes, in the groups' canonical encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynGroup {
    curve: Curve,
}

/// Runs `$body` with `$g` bound to the group type of `$curve`.
macro_rules! dispatch {
    ($curve:expr, $g:ident => $body:expr) => {
        match $curve {
            Curve::Curve25519 => {
                type $g = X25519;
                $body
            }
            Curve::Ristretto255 => {
                type $g = Ristretto255;
                $body
            }
            Curve::Sm2 => {
                type $g = Sm2;
                $body
            }
            Curve::Secp256k1 => {
                type $g = Secp256k1;
                $body
            }
            Curve::P256 => {
                type $g = P256;
                $body
            }
            Curve::FourQ => {
                type $g = FourQ;
                $body
            }
        }
    };
}

fn flatten<E: AsRef<[u8]>>(v: &[E], len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * len);
    for e in v {
        out.extend_from_slice(e.as_ref());
    }
    out
}

impl DynGroup {
    /// The group for `curve`.
    ///
    /// # Errors
    /// [`Error::Unavailable`] if this build has no backend for the curve.
    pub fn new(curve: Curve) -> Result<Self, Error> {
        if curve.is_available() {
            Ok(DynGroup { curve })
        } else {
            Err(Error::Unavailable(curve.name()))
        }
    }

    /// The curve.
    pub fn curve(&self) -> Curve {
        self.curve
    }

    /// Bytes per encoded point.
    pub fn encoded_len(&self) -> usize {
        match self.curve {
            Curve::Curve25519 | Curve::Ristretto255 | Curve::FourQ => 32,
            Curve::Sm2 | Curve::Secp256k1 | Curve::P256 => 33,
        }
    }

    fn check_key(&self, sk: &SecretKey) -> Result<(), Error> {
        if sk.curve != self.curve {
            return Err(Error::CurveMismatch {
                key: sk.curve.name(),
                group: self.curve.name(),
            });
        }
        Ok(())
    }

    fn split<'a>(&self, flat: &'a [u8]) -> Result<Vec<&'a [u8]>, Error> {
        let stride = self.encoded_len();
        if !flat.len().is_multiple_of(stride) {
            return Err(Error::RaggedBuffer {
                group: self.curve.name(),
                len: flat.len(),
                stride,
            });
        }
        Ok(flat.chunks_exact(stride).collect())
    }

    /// A uniformly random non-zero secret scalar.
    ///
    /// # Errors
    /// [`Error::Unavailable`] only (a `DynGroup` is never built for such a curve).
    pub fn random_secret<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Result<SecretKey, Error> {
        dispatch!(self.curve, G => {
            let k = G::random_scalar(rng);
            Ok(SecretKey { curve: self.curve, bytes: G::scalar_to_bytes(&k) })
        })
    }

    /// A secret scalar from its canonical encoding.
    ///
    /// # Errors
    /// [`Error::WrongLength`], [`Error::InvalidScalar`] (not reduced or zero).
    pub fn secret_from_bytes(&self, bytes: &[u8]) -> Result<SecretKey, Error> {
        dispatch!(self.curve, G => {
            let k = G::scalar_from_bytes(bytes)?;
            Ok(SecretKey { curve: self.curve, bytes: G::scalar_to_bytes(&k) })
        })
    }

    /// `k^{-1} mod q`, for unblinding OPRF outputs.
    ///
    /// # Errors
    /// [`Error::CurveMismatch`] if `sk` is for another curve.
    pub fn invert(&self, sk: &SecretKey) -> Result<SecretKey, Error> {
        self.check_key(sk)?;
        dispatch!(self.curve, G => {
            let k = G::scalar_from_bytes(&sk.bytes)?;
            Ok(SecretKey { curve: self.curve, bytes: G::scalar_to_bytes(&G::scalar_invert(&k)) })
        })
    }

    /// `[k]G`, encoded (a public key).
    ///
    /// # Errors
    /// [`Error::CurveMismatch`].
    pub fn mul_base(&self, sk: &SecretKey) -> Result<Vec<u8>, Error> {
        self.check_key(sk)?;
        dispatch!(self.curve, G => {
            let k = G::scalar_from_bytes(&sk.bytes)?;
            Ok(G::encode(&G::mul_base(&k)).as_ref().to_vec())
        })
    }

    /// `[k]H(x)` for every item, as one flat buffer of `items.len() × encoded_len()` bytes.
    ///
    /// # Errors
    /// [`Error::CurveMismatch`].
    pub fn hash_and_mul_batch<T: AsRef<[u8]> + Sync>(
        &self,
        items: &[T],
        sk: &SecretKey,
    ) -> Result<Vec<u8>, Error> {
        self.check_key(sk)?;
        dispatch!(self.curve, G => {
            let k = G::scalar_from_bytes(&sk.bytes)?;
            Ok(flatten(&G::hash_and_mul_batch(items, &k), G::ENCODED_LEN))
        })
    }

    /// Decode each point of the flat buffer, multiply by `k`, re-encode.
    ///
    /// # Errors
    /// [`Error::RaggedBuffer`], [`Error::Batch`] (which element, and why), or
    /// [`Error::CurveMismatch`].
    pub fn mul_encoded_batch(&self, points: &[u8], sk: &SecretKey) -> Result<Vec<u8>, Error> {
        self.check_key(sk)?;
        let pts = self.split(points)?;
        dispatch!(self.curve, G => {
            let k = G::scalar_from_bytes(&sk.bytes)?;
            Ok(flatten(&G::mul_encoded_batch(&pts, &k)?, G::ENCODED_LEN))
        })
    }

    /// The comparison hash ([`PrimeGroup::hash_point`]) of every encoded point of the flat
    /// buffer, without decoding.
    ///
    /// # Errors
    /// [`Error::RaggedBuffer`].
    pub fn hash_encoded_batch(&self, points: &[u8]) -> Result<Vec<[u8; 32]>, Error> {
        let pts = self.split(points)?;
        dispatch!(self.curve, G => {
            use rayon::prelude::*;
            Ok(pts.par_iter().map(|p| hash_encoded::<G>(p)).collect())
        })
    }
}
