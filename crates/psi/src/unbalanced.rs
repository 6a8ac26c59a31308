//! Unbalanced PSI from the ECDH-based OPRF, with an offline and an online phase.
//!
//! A server holds a large set `Y` (1e8–1e9 items), a client a small set `X` (1e5–1e6). The
//! OPRF is 2HashDH: `F_k(y) = H2(y, H1(y)^k)`, truncated to `w` bytes (12 by default, as
//! SecretFlow), with `H1` the curve's hash to the group and `H2` a domain-separated BLAKE3.
//!
//! - **Offline** (once per server set and key): the server evaluates `F_k` on all of `Y` and
//!   streams the values, shuffled within each batch, to the client, which stores them in a
//!   sorted, checksummed [`Cache`] file built by external sorting (memory bounded by the run
//!   size, whatever the set size).
//! - **Online** (per query set): the client sends `H1(x)^r` for a fresh random `r`, the server
//!   answers `(H1(x)^r)^k`, the client unblinds with `r^{-1}`, hashes to `F_k(x)` and looks the
//!   values up in the cache by one sequential merge pass (checking the cache's checksum on the
//!   way). The online cost is independent of `|Y|` except for that pass over the file.
//!
//! The server keeps `k` in a [`ServerKey`] file and reuses it for every online phase; the cache
//! records a fingerprint of the key (a hash of `k·G`), and the online phase refuses a cache made
//! under another key or for another set size.
//!
//! # Security and leakage
//!
//! Semi-honest, under the one-more-gap-Diffie–Hellman assumption with `H1`, `H2` random oracles
//! (Jarecki–Kiayias–Krawczyk). The client learns `X ∩ Y` and `|Y|`; the server learns `|X|`.
//! The client also keeps `F_k(Y)` — pseudorandom values that reveal nothing about `Y` without
//! the key — and can test further items against them only by running the online phase with the
//! server again. False positives: `|X|·|Y|·2^{-8w}`; with `w = 12` that is below `2^-40` for
//! `|X|·|Y| ≤ 2^56` (e.g. 1e6 × 7e10); [`online_client`] checks the bound.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use obliv_ec::{Curve, DynGroup, SecretKey};
use obliv_net::Channel;
use rand::seq::SliceRandom;
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use crate::ecdh::{
    MAX_BATCH, RngAdapter, STAT_SECURITY, batch_len, code_name, curve_code, frame, parse,
};
use crate::error::{Error, Result};
use crate::handshake::{self, Hello};

const OFFLINE_ID: u8 = 30;
const ONLINE_ID: u8 = 31;
const ROLE_SERVER: u8 = 1;
const ROLE_CLIENT: u8 = 0;
const TAG_VALUES: u8 = 1;
const TAG_BLINDED: u8 = 2;
const TAG_ANSWER: u8 = 3;
const KEY_MAGIC: &[u8; 8] = b"OBUBKEY1";
const CACHE_MAGIC: &[u8; 8] = b"OBUBCACH";
const CACHE_VERSION: u32 = 1;
/// Bytes of the cache header.
const HEADER_LEN: usize = 8 + 4 + 1 + 1 + 2 + 8 + 32 + 32;
/// Values per sorted run while building a cache (memory: `RUN · w` bytes).
const RUN: usize = 1 << 22;

/// Parameters of both phases (checked by the handshakes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UbConfig {
    /// The group (FourQ by default, the fastest here).
    pub curve: Curve,
    /// Items per streamed batch.
    pub batch_size: usize,
    /// Bytes kept of each OPRF value (8..=32).
    pub width: usize,
}

impl Default for UbConfig {
    fn default() -> Self {
        UbConfig {
            curve: Curve::FourQ,
            batch_size: 4096,
            width: 12,
        }
    }
}

impl UbConfig {
    fn check(&self) -> Result<()> {
        if self.batch_size == 0 || self.batch_size > MAX_BATCH || !(8..=32).contains(&self.width) {
            return Err(Error::InvalidParameter(format!(
                "batch size must be in 1..={MAX_BATCH} and width in 8..=32 bytes"
            )));
        }
        Ok(())
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The server's OPRF key, reusable across online phases.
pub struct ServerKey {
    group: DynGroup,
    secret: SecretKey,
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
    ]
    .into_iter()
    .find(|&k| curve_code(k) == c)
}

/// `H2(y, P)` truncated to `w` bytes, appended to `out`.
fn h2_into(item: &[u8], point: &[u8], w: usize, out: &mut Vec<u8>) {
    let mut h = blake3::Hasher::new_derive_key("obliv-psi unbalanced v1 H2");
    h.update(&(item.len() as u64).to_le_bytes());
    h.update(item);
    h.update(point);
    let mut buf = [0u8; 32];
    h.finalize_xof().fill(&mut buf);
    out.extend_from_slice(&buf[..w]);
}

fn hello(cfg: &UbConfig, protocol: u8, role: u8, n: usize) -> Hello {
    Hello {
        protocol,
        curve: curve_code(cfg.curve),
        role,
        flags: 0,
        batch: u32::try_from(cfg.batch_size).unwrap_or(u32::MAX),
        n_items: n as u64,
        param: cfg.width as u64,
    }
}

fn names(field: &'static str, v: u8) -> String {
    match (field, v) {
        ("protocol", OFFLINE_ID) => "unbalanced-offline".into(),
        ("protocol", ONLINE_ID) => "unbalanced-online".into(),
        ("role", ROLE_SERVER) => "server".into(),
        ("role", ROLE_CLIENT) => "client".into(),
        _ => code_name(field, v),
    }
}

/// The server's offline phase: evaluates the OPRF on every item and streams the values.
///
/// # Errors
/// Handshake, network or group errors; [`Error::InvalidParameter`] if the key's curve is not
/// `cfg.curve`.
pub fn offline_server<C, T, R>(
    ch: &mut C,
    key: &ServerKey,
    items: &[T],
    cfg: &UbConfig,
    rng: &mut R,
) -> Result<()>
where
    C: Channel + ?Sized,
    T: AsRef<[u8]> + Sync,
    R: CryptoRng + ?Sized,
{
    cfg.check()?;
    if key.curve() != cfg.curve {
        return Err(Error::InvalidParameter(
            "the key is for another curve".into(),
        ));
    }
    handshake::exchange(
        ch,
        &hello(cfg, OFFLINE_ID, ROLE_SERVER, items.len()),
        ROLE_CLIENT,
        names,
    )?;
    ch.send(&key.fingerprint()?)?;
    let (b, w) = (cfg.batch_size, cfg.width);
    for i in 0..items.len().div_ceil(b) {
        let batch = &items[i * b..i * b + batch_len(i, items.len(), b)];
        let points = key.group.hash_and_mul_batch(batch, &key.secret)?;
        let len = key.group.encoded_len();
        let mut values: Vec<[u8; 32]> = Vec::with_capacity(batch.len());
        for (item, p) in batch.iter().zip(points.chunks_exact(len)) {
            let mut v = Vec::with_capacity(w);
            h2_into(item.as_ref(), p, w, &mut v);
            let mut a = [0u8; 32];
            a[..w].copy_from_slice(&v);
            values.push(a);
        }
        values.shuffle(&mut RngAdapter(rng));
        let payload: Vec<u8> = values.iter().flat_map(|v| v[..w].iter().copied()).collect();
        ch.send_vec(frame(TAG_VALUES, i, &payload)?)?;
    }
    ch.flush()?;
    Ok(())
}

/// The client's offline phase: receives the server's values and builds the cache at `path`
/// (temporary run files go to the same directory). Returns the cache.
///
/// # Errors
/// Handshake, network and protocol errors; [`Error::Io`] for the files.
pub fn offline_client<C: Channel + ?Sized>(
    ch: &mut C,
    cfg: &UbConfig,
    path: &Path,
) -> Result<Cache> {
    cfg.check()?;
    let theirs = handshake::exchange(
        ch,
        &hello(cfg, OFFLINE_ID, ROLE_CLIENT, 0),
        ROLE_SERVER,
        names,
    )?;
    let n = usize::try_from(theirs.n_items)
        .map_err(|_| Error::Protocol("server announced too many items".into()))?;
    let fp: [u8; 32] = ch
        .recv_max(32)?
        .try_into()
        .map_err(|_| Error::Protocol("the key fingerprint must be 32 bytes".into()))?;
    let (b, w) = (cfg.batch_size, cfg.width);
    let mut builder = CacheBuilder::new(path, w)?;
    for i in 0..n.div_ceil(b) {
        let f = ch.recv_max(5 + b * w)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_VALUES || index != i || payload.len() != batch_len(i, n, b) * w {
            return Err(Error::Protocol(format!("malformed value batch {i}")));
        }
        builder.push(payload)?;
    }
    builder.finish(curve_code(cfg.curve), fp)
}

/// The server's online phase: raises every blinded point the client sends to `k`.
///
/// # Errors
/// Handshake, network, protocol and group errors (a point that is not in the group).
pub fn online_server<C: Channel + ?Sized>(
    ch: &mut C,
    key: &ServerKey,
    n_server: usize,
    cfg: &UbConfig,
) -> Result<()> {
    cfg.check()?;
    let theirs = handshake::exchange(
        ch,
        &hello(cfg, ONLINE_ID, ROLE_SERVER, n_server),
        ROLE_CLIENT,
        names,
    )?;
    ch.send(&key.fingerprint()?)?;
    let n = usize::try_from(theirs.n_items)
        .map_err(|_| Error::Protocol("client announced too many items".into()))?;
    let (b, len) = (cfg.batch_size, key.group.encoded_len());
    for i in 0..n.div_ceil(b) {
        let f = ch.recv_max(5 + b * len)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_BLINDED || index != i || payload.len() != batch_len(i, n, b) * len {
            return Err(Error::Protocol(format!("malformed blinded batch {i}")));
        }
        let answer = key.group.mul_encoded_batch(payload, &key.secret)?;
        ch.send_vec(frame(TAG_ANSWER, i, &answer)?)?;
    }
    ch.flush()?;
    Ok(())
}

/// The client's online phase: returns the indices (ascending) of `items` in the server's set.
///
/// # Errors
/// [`Error::Cache`] if the cache belongs to another key, curve, width or set size, or was
/// tampered with (checked by its checksum during the lookup pass); [`Error::InvalidParameter`]
/// if `w` bytes cannot keep false positives below 2^-40 for these sizes; handshake, network,
/// protocol and group errors.
pub fn online_client<C, T, R>(
    ch: &mut C,
    items: &[T],
    cache: &Cache,
    cfg: &UbConfig,
    rng: &mut R,
) -> Result<Vec<usize>>
where
    C: Channel + ?Sized,
    T: AsRef<[u8]> + Sync,
    R: CryptoRng + ?Sized,
{
    cfg.check()?;
    let group = DynGroup::new(cfg.curve)?;
    if cache.width != cfg.width || cache.curve != curve_code(cfg.curve) {
        return Err(Error::Cache(
            "the cache was built with another curve or width".into(),
        ));
    }
    let bits = STAT_SECURITY
        + obliv_core::log2_ceil(items.len() as u64)
        + obliv_core::log2_ceil(cache.count);
    if bits as usize > 8 * cfg.width {
        return Err(Error::InvalidParameter(format!(
            "{} bytes per value cannot keep false positives below 2^-40 for these sizes; need {}",
            cfg.width,
            bits.div_ceil(8)
        )));
    }
    let theirs = handshake::exchange(
        ch,
        &hello(cfg, ONLINE_ID, ROLE_CLIENT, items.len()),
        ROLE_SERVER,
        names,
    )?;
    let fp = ch.recv_max(32)?;
    if fp != cache.fingerprint || theirs.n_items != cache.count {
        return Err(Error::Cache(
            "the cache was built for another server key or set size: run the offline phase again"
                .into(),
        ));
    }
    let r = group.random_secret(rng)?;
    let r_inv = group.invert(&r)?;
    let (b, w, len) = (cfg.batch_size, cfg.width, group.encoded_len());
    let nb = items.len().div_ceil(b);
    let mut values = Vec::with_capacity(items.len() * w);
    let mut sent = 0;
    const WINDOW: usize = 8;
    for i in 0..nb {
        while sent < nb && sent < i + WINDOW {
            let batch = &items[sent * b..sent * b + batch_len(sent, items.len(), b)];
            ch.send_vec(frame(
                TAG_BLINDED,
                sent,
                &group.hash_and_mul_batch(batch, &r)?,
            )?)?;
            sent += 1;
        }
        ch.flush()?;
        let f = ch.recv_max(5 + b * len)?;
        let (tag, index, payload) = parse(&f)?;
        let count = batch_len(i, items.len(), b);
        if tag != TAG_ANSWER || index != i || payload.len() != count * len {
            return Err(Error::Protocol(format!("malformed answer batch {i}")));
        }
        let unblinded = group.mul_encoded_batch(payload, &r_inv)?;
        for (j, p) in unblinded.chunks_exact(len).enumerate() {
            h2_into(items[i * b + j].as_ref(), p, w, &mut values);
        }
    }
    cache.lookup(&values)
}

/// The client's sorted, checksummed file of the server's OPRF values.
///
/// Layout: `"OBUBCACH"`, version (u32 LE), curve code, width `w`, 2 reserved bytes, count
/// (u64 LE), the server key's fingerprint (32 bytes), BLAKE3 of the body (32 bytes); then the
/// body: `count` values of `w` bytes in ascending byte order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    path: PathBuf,
    curve: u8,
    width: usize,
    count: u64,
    fingerprint: [u8; 32],
    checksum: [u8; 32],
}

impl Cache {
    /// Opens a cache file and reads its header (the body is verified during lookups).
    ///
    /// # Errors
    /// [`Error::Io`], or [`Error::Cache`] for a file that is not a cache of this version or
    /// whose length does not match its header.
    pub fn open(path: &Path) -> Result<Self> {
        let mut f = File::open(path).map_err(io_err(path))?;
        let mut h = [0u8; HEADER_LEN];
        f.read_exact(&mut h)
            .map_err(|_| Error::Cache(format!("{} is not a cache", path.display())))?;
        let bad = |what: &str| Error::Cache(format!("{}: {what}", path.display()));
        if &h[..8] != CACHE_MAGIC {
            return Err(bad("not an obliv unbalanced-PSI cache"));
        }
        if u32::from_le_bytes([h[8], h[9], h[10], h[11]]) != CACHE_VERSION {
            return Err(bad("unsupported cache version"));
        }
        let width = usize::from(h[13]);
        let mut c = [0u8; 8];
        c.copy_from_slice(&h[16..24]);
        let count = u64::from_le_bytes(c);
        let mut fingerprint = [0u8; 32];
        fingerprint.copy_from_slice(&h[24..56]);
        let mut checksum = [0u8; 32];
        checksum.copy_from_slice(&h[56..88]);
        let len = f.metadata().map_err(io_err(path))?.len();
        if !(8..=32).contains(&width)
            || count
                .checked_mul(width as u64)
                .and_then(|b| b.checked_add(HEADER_LEN as u64))
                != Some(len)
        {
            return Err(bad(
                "length does not match the header (truncated or tampered)",
            ));
        }
        Ok(Cache {
            path: path.to_path_buf(),
            curve: h[12],
            width,
            count,
            fingerprint,
            checksum,
        })
    }

    /// Number of server values in the cache.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether the cache holds no values.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Indices (ascending) of the `w`-byte values in `values` (concatenated) that occur in the
    /// cache, by sorting them and merging with one sequential pass over the file, whose
    /// checksum is verified before anything is returned.
    fn lookup(&self, values: &[u8]) -> Result<Vec<usize>> {
        let w = self.width;
        let mut order: Vec<usize> = (0..values.len() / w).collect();
        order
            .sort_unstable_by(|&a, &b| values[a * w..(a + 1) * w].cmp(&values[b * w..(b + 1) * w]));
        let f = File::open(&self.path).map_err(io_err(&self.path))?;
        let mut rdr = BufReader::with_capacity(1 << 20, f);
        let mut skip = [0u8; HEADER_LEN];
        rdr.read_exact(&mut skip).map_err(io_err(&self.path))?;
        let mut hasher = blake3::Hasher::new();
        let mut cur = vec![0u8; w];
        let mut prev = vec![0u8; w];
        let mut hits = Vec::new();
        let mut k = 0;
        for i in 0..self.count {
            rdr.read_exact(&mut cur).map_err(io_err(&self.path))?;
            hasher.update(&cur);
            if i > 0 && cur < prev {
                return Err(Error::Cache("cache values out of order (tampered)".into()));
            }
            while k < order.len() && values[order[k] * w..(order[k] + 1) * w] < cur[..] {
                k += 1;
            }
            let mut j = k;
            while j < order.len() && values[order[j] * w..(order[j] + 1) * w] == cur[..] {
                hits.push(order[j]);
                j += 1;
            }
            std::mem::swap(&mut cur, &mut prev);
        }
        if *hasher.finalize().as_bytes() != self.checksum {
            return Err(Error::Cache(
                "cache checksum mismatch (tampered or corrupted)".into(),
            ));
        }
        hits.sort_unstable();
        hits.dedup();
        Ok(hits)
    }
}

/// Builds a cache by external sorting: values collect into runs of [`RUN`], each sorted and
/// written to a temporary file, then merged into the final file.
struct CacheBuilder {
    path: PathBuf,
    w: usize,
    buf: Vec<u8>,
    runs: Vec<tempfile::NamedTempFile>,
}

impl CacheBuilder {
    fn new(path: &Path, w: usize) -> Result<Self> {
        Ok(CacheBuilder {
            path: path.to_path_buf(),
            w,
            buf: Vec::new(),
            runs: Vec::new(),
        })
    }

    fn dir(&self) -> &Path {
        self.path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    }

    fn push(&mut self, values: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(values);
        if self.buf.len() >= RUN * self.w {
            self.spill()?;
        }
        Ok(())
    }

    fn sorted(&self) -> Vec<u8> {
        let w = self.w;
        let mut chunks: Vec<&[u8]> = self.buf.chunks_exact(w).collect();
        chunks.sort_unstable();
        chunks.concat()
    }

    fn spill(&mut self) -> Result<()> {
        let sorted = self.sorted();
        let dir = self.dir().to_path_buf();
        let mut run = tempfile::NamedTempFile::new_in(&dir).map_err(io_err(&dir))?;
        run.write_all(&sorted).map_err(io_err(&dir))?;
        run.flush().map_err(io_err(&dir))?;
        self.runs.push(run);
        self.buf.clear();
        Ok(())
    }

    fn finish(mut self, curve: u8, fingerprint: [u8; 32]) -> Result<Cache> {
        let w = self.w;
        let dir = self.dir().to_path_buf();
        let tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io_err(&dir))?;
        let mut out = BufWriter::with_capacity(1 << 20, tmp.as_file());
        out.write_all(&[0u8; HEADER_LEN]).map_err(io_err(&dir))?;
        let mut hasher = blake3::Hasher::new();
        let mut count = 0u64;
        let mut emit = |v: &[u8], out: &mut BufWriter<&File>| -> Result<()> {
            hasher.update(v);
            count += 1;
            out.write_all(v).map_err(io_err(&dir))
        };
        if self.runs.is_empty() {
            for v in self.sorted().chunks_exact(w) {
                emit(v, &mut out)?;
            }
        } else {
            if !self.buf.is_empty() {
                self.spill()?;
            }
            let mut readers: Vec<BufReader<File>> = self
                .runs
                .iter()
                .map(|r| r.reopen().map(|f| BufReader::with_capacity(1 << 16, f)))
                .collect::<std::io::Result<_>>()
                .map_err(io_err(&dir))?;
            let mut heap = BinaryHeap::new();
            for (i, r) in readers.iter_mut().enumerate() {
                let mut v = vec![0u8; w];
                if r.read_exact(&mut v).is_ok() {
                    heap.push(Head(v, i));
                }
            }
            while let Some(Head(v, i)) = heap.pop() {
                emit(&v, &mut out)?;
                let mut next = v;
                if readers[i].read_exact(&mut next).is_ok() {
                    heap.push(Head(next, i));
                }
            }
        }
        out.flush().map_err(io_err(&dir))?;
        drop(out);
        let checksum = *hasher.finalize().as_bytes();
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(CACHE_MAGIC);
        header.extend_from_slice(&CACHE_VERSION.to_le_bytes());
        header.push(curve);
        header.push(u8::try_from(w).unwrap_or(u8::MAX));
        header.extend_from_slice(&[0, 0]);
        header.extend_from_slice(&count.to_le_bytes());
        header.extend_from_slice(&fingerprint);
        header.extend_from_slice(&checksum);
        {
            use std::io::{Seek, SeekFrom};
            let mut f = tmp.as_file();
            f.seek(SeekFrom::Start(0)).map_err(io_err(&dir))?;
            f.write_all(&header).map_err(io_err(&dir))?;
            f.sync_all().map_err(io_err(&dir))?;
        }
        tmp.persist(&self.path).map_err(|e| Error::Io {
            path: self.path.display().to_string(),
            source: e.error,
        })?;
        Cache::open(&self.path)
    }
}

/// A run's current value, ordered for a min-heap.
#[derive(PartialEq, Eq)]
struct Head(Vec<u8>, usize);

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
