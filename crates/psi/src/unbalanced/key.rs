//! The server's OPRF key file.

use std::io::Write;
use std::path::Path;

use obliv_ec::{Curve, DynGroup, SecretKey};
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use crate::ecdh::curve_code;
use crate::error::{Error, Result};

use super::io_err;
use super::shuffle::Shuffle;

const KEY_MAGIC: &[u8; 8] = b"OBUBKEY1";

/// The server's OPRF key, reusable across online phases.
pub struct ServerKey {
    pub(crate) group: DynGroup,
    pub(crate) secret: SecretKey,
}

impl std::fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerKey({}, ..)", self.group.curve())
    }
}

impl ServerKey {
    /// A fresh random key on `curve`.
    ///
    /// # Errors
    /// [`Error::Group`] if the curve has no backend in this build.
    pub fn generate<R: CryptoRng + ?Sized>(curve: Curve, rng: &mut R) -> Result<Self> {
        let group = DynGroup::new(curve)?;
        let secret = group.random_secret(rng)?;
        Ok(ServerKey { group, secret })
    }

    /// The curve.
    pub fn curve(&self) -> Curve {
        self.group.curve()
    }

    /// A public fingerprint of the key: a hash of `k·G`.
    ///
    /// # Errors
    /// Only a group error, which cannot happen for a key made by this type.
    pub fn fingerprint(&self) -> Result<[u8; 32]> {
        let pk = self.group.mul_base(&self.secret)?;
        Ok(obliv_core::hash::ro_hash(
            "obliv-psi unbalanced v1 key fingerprint",
            &pk,
        ))
    }

    /// Writes the key to `path` (created with mode 0600 on Unix; overwrites): magic, curve
    /// code, scalar, and a BLAKE3 tag that detects corruption.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn save(&self, path: &Path) -> Result<()> {
        let scalar = self.secret.expose_secret_bytes();
        let mut body = Zeroizing::new(Vec::with_capacity(10 + scalar.len() + 32));
        body.extend_from_slice(KEY_MAGIC);
        body.push(curve_code(self.curve()));
        body.push(u8::try_from(scalar.len()).unwrap_or(u8::MAX));
        body.extend_from_slice(scalar);
        let tag = obliv_core::hash::ro_hash("obliv-psi unbalanced v1 key file", &body);
        body.extend_from_slice(&tag);
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut f = opts.open(path).map_err(io_err(path))?;
        f.write_all(&body).map_err(io_err(path))?;
        f.sync_all().map_err(io_err(path))
    }

    /// Reads a key written by [`ServerKey::save`].
    ///
    /// # Errors
    /// [`Error::Io`], or [`Error::Cache`] if the file is not a valid key file.
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = Zeroizing::new(std::fs::read(path).map_err(io_err(path))?);
        let bad = || {
            Error::Cache(format!(
                "{} is not a valid obliv server key file",
                path.display()
            ))
        };
        if bytes.len() < 10 + 32 || &bytes[..8] != KEY_MAGIC {
            return Err(bad());
        }
        let (body, tag) = bytes.split_at(bytes.len() - 32);
        if obliv_core::hash::ro_hash("obliv-psi unbalanced v1 key file", body) != tag {
            return Err(bad());
        }
        let curve = curve_from_code(body[8]).ok_or_else(bad)?;
        let len = usize::from(body[9]);
        if body.len() != 10 + len {
            return Err(bad());
        }
        let group = DynGroup::new(curve)?;
        let secret = group.secret_from_bytes(&body[10..])?;
        Ok(ServerKey { group, secret })
    }
}

fn curve_from_code(c: u8) -> Option<Curve> {
    [
        Curve::FourQ,
        Curve::Curve25519,
        Curve::Sm2,
        Curve::Secp256k1,
        Curve::P256,
        Curve::Ristretto255,
    ]
    .into_iter()
    .find(|&k| curve_code(k) == c)
}

impl ServerKey {
    /// The server's shuffle of the segment `[offset, offset + n)` of its set, derived from
    /// the key (so the key file is all the server keeps to map positions back).
    pub(crate) fn shuffle(&self, offset: u64, n: u64) -> Shuffle {
        Shuffle::new(self.secret.expose_secret_bytes(), offset, n)
    }
}
