//! The server's OPRF key file.
//!
//! The file format and the query budget are documented on [`ServerKey`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use obliv_ec::{Curve, DynGroup, SecretKey};
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use crate::ecdh::curve_code;
use crate::error::{Error, Result};

use super::io_err;
use super::shuffle::Shuffle;

const KEY_MAGIC_V1: &[u8; 8] = b"OBUBKEY1";
const KEY_MAGIC: &[u8; 8] = b"OBUBKEY2";
const TAG_DOMAIN: &str = "obliv-psi unbalanced v1 key file";

/// How much of its budget a key has used, and the file that records it.
#[derive(Debug, Default)]
struct Usage {
    served: u64,
    file: Option<PathBuf>,
}

/// The server's OPRF key, reusable across online phases up to its query budget.
///
/// # File
///
/// `OBUBKEY2` ‖ curve code ‖ scalar length ‖ scalar ‖ OPRF evaluations served (u64 LE) ‖ a
/// BLAKE3 tag of all that (detects corruption). Files of the first format (`OBUBKEY1`, no
/// counter) load with a count of 0. Every write goes to a fresh temporary file in the same
/// directory (created exclusively, so never through a symlink, with mode 0600 on Unix), is
/// synced, and is renamed over the destination, then the directory is synced: a crash leaves
/// the old file or the new one, never a torn one. A destination that is a symbolic link is
/// refused.
///
/// # Query budget
///
/// A A `ServerKey` counts the OPRF evaluations it has answered (each online phase reserves
/// the client's announced item count before answering anything) and refuses to go past the
/// online phase's limit ([`UbConfig::max_key_queries`](super::UbConfig::max_key_queries)). A key loaded from or saved
/// to a file is bound to it: every reservation is written to the file before any point is
/// answered, so the budget holds across processes that load the same file.
pub struct ServerKey {
    pub(crate) group: DynGroup,
    pub(crate) secret: SecretKey,
    usage: Mutex<Usage>,
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
        Ok(ServerKey {
            group,
            secret,
            usage: Mutex::new(Usage::default()),
        })
    }

    /// The curve.
    pub fn curve(&self) -> Curve {
        self.group.curve()
    }

    /// OPRF evaluations answered (or reserved by an online phase) under this key so far.
    pub fn queries_served(&self) -> u64 {
        self.usage.lock().map_or(u64::MAX, |u| u.served)
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

    /// Writes the key and its query count to `path` atomically (see [`ServerKey`]'s
    /// documentation), with mode 0600 on Unix, and binds the key to the file: later
    /// online phases record their reservations there.
    ///
    /// # Errors
    /// [`Error::Io`], also if `path` is a symbolic link.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut usage = self
            .usage
            .lock()
            .map_err(|_| Error::InvalidParameter("the key's usage lock is poisoned".into()))?;
        self.write_file(path, usage.served)?;
        usage.file = Some(path.to_path_buf());
        Ok(())
    }

    fn write_file(&self, path: &Path, served: u64) -> Result<()> {
        let scalar = self.secret.expose_secret_bytes();
        let mut body = Zeroizing::new(Vec::with_capacity(18 + scalar.len() + 32));
        body.extend_from_slice(KEY_MAGIC);
        body.push(curve_code(self.curve()));
        body.push(u8::try_from(scalar.len()).unwrap_or(u8::MAX));
        body.extend_from_slice(scalar);
        body.extend_from_slice(&served.to_le_bytes());
        let tag = obliv_core::hash::ro_hash(TAG_DOMAIN, &body);
        body.extend_from_slice(&tag);
        write_atomic(path, &body)
    }

    /// Reserves `n` OPRF evaluations under a lifetime budget of `limit`, recording the new
    /// count in the key's file (if bound to one) before returning.
    ///
    /// # Errors
    /// [`Error::Protocol`] naming `max_key_queries` if the budget would be exceeded (nothing
    /// is reserved then); [`Error::Io`] if the file cannot be rewritten.
    pub(crate) fn reserve_queries(&self, n: u64, limit: u64) -> Result<()> {
        let mut usage = self
            .usage
            .lock()
            .map_err(|_| Error::InvalidParameter("the key's usage lock is poisoned".into()))?;
        let total = usage.served.saturating_add(n);
        if total > limit {
            return Err(Error::Protocol(format!(
                "the client asks for {n} OPRF evaluations; this key has answered {} of its \
                 max_key_queries = {limit}",
                usage.served
            )));
        }
        if let Some(file) = usage.file.clone() {
            self.write_file(&file, total)?;
        }
        usage.served = total;
        Ok(())
    }

    /// Reads a key written by [`ServerKey::save`] and binds it to the file.
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
        let v2 = match bytes.get(..8) {
            Some(m) if m == KEY_MAGIC => true,
            Some(m) if m == KEY_MAGIC_V1 => false,
            _ => return Err(bad()),
        };
        if bytes.len() < 10 + 32 {
            return Err(bad());
        }
        let (body, tag) = bytes.split_at(bytes.len() - 32);
        if obliv_core::hash::ro_hash(TAG_DOMAIN, body) != tag {
            return Err(bad());
        }
        let curve = curve_from_code(body[8]).ok_or_else(bad)?;
        let len = usize::from(body[9]);
        let counter = if v2 { 8 } else { 0 };
        if body.len() != 10 + len + counter {
            return Err(bad());
        }
        let served = if v2 {
            let mut c = [0u8; 8];
            c.copy_from_slice(&body[10 + len..]);
            u64::from_le_bytes(c)
        } else {
            0
        };
        let group = DynGroup::new(curve)?;
        let secret = group.secret_from_bytes(&body[10..10 + len])?;
        Ok(ServerKey {
            group,
            secret,
            usage: Mutex::new(Usage {
                served,
                file: Some(path.to_path_buf()),
            }),
        })
    }
}

/// Writes `bytes` to `path` through a new temporary file in the same directory (created
/// exclusively, so never through a link, with mode 0600 on Unix), synced, renamed over
/// `path`, and the directory synced. Refuses a `path` that is a symbolic link (a rename
/// would replace the link, not follow it, but a link there is not a key file we wrote).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |e: std::io::Error| Error::Io {
        path: path.display().to_string(),
        source: e,
    };
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "refusing to write a key file through a symbolic link",
        )));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = super::temp::Announced::new_in(&dir, ".obliv-key-").map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(io)?;
    }
    tmp.as_file().write_all(bytes).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    // On failure the temporary file is removed.
    tmp.persist(path).map_err(io)?;
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(&dir) {
        // Makes the rename durable; a directory that cannot be synced is not an error.
        let _ = d.sync_all();
    }
    Ok(())
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
