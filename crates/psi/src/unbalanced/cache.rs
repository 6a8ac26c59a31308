//! The client's on-disk cache of the server's OPRF values: sorted, checksummed, built by
//! external sorting, extended by a sorted merge when the server appends items.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

use super::io_err;

const CACHE_MAGIC: &[u8; 8] = b"OBUBCACH";
/// Version 2 added the optional server positions. Version 3: the `obliv` command encodes
/// multi-column keys injectively, so a cache of versions 1 and 2 may hold the values of keys in
/// the older encoding, which would silently match nothing. Version 4 added the digest of the
/// server's set ([`ServerSet`](super::ServerSet)). A cache of an earlier version is refused
/// (build it again with the offline phase).
const CACHE_VERSION: u32 = 4;
/// Bytes of the cache header.
pub(crate) const HEADER_LEN: usize = 8 + 4 + 1 + 1 + 1 + 1 + 8 + 32 + 32 + 32;
/// Bytes of a stored server position (big-endian, so records sort by value, then position).
pub(crate) const POS_BYTES: usize = 5;
/// Largest server set whose positions fit in [`POS_BYTES`].
pub(crate) const MAX_POSITIONS: u64 = 1 << (8 * POS_BYTES);
/// Records read per call in a lookup pass.
const LOOKUP_CHUNK: usize = if cfg!(test) { 7 } else { 1 << 16 };
/// Records per sorted run while building a cache (memory: `RUN · (w + 5)` bytes).
const RUN: usize = 1 << 22;

/// The client's sorted, checksummed file of the server's OPRF values.
///
/// Layout: `"OBUBCACH"`, version (u32 LE, 4), curve code, width `w`, position bytes `p`
/// (0, or 5 when the cache was built for `server_get_result`), 1 reserved byte, count
/// (u64 LE), the server key's fingerprint (32 bytes), BLAKE3 of the body (32 bytes), the
/// digest of the server's set ([`ServerSet`](super::ServerSet), 32 bytes); then the
/// body: `count` records of `w + p` bytes in ascending byte order, each the OPRF value
/// followed by its position in the server's shuffled stream (big-endian).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    path: PathBuf,
    pub(crate) curve: u8,
    pub(crate) width: usize,
    pub(crate) pos_bytes: usize,
    pub(crate) count: u64,
    pub(crate) fingerprint: [u8; 32],
    checksum: [u8; 32],
    pub(crate) set_digest: [u8; 32],
}

/// What a lookup found.
pub(crate) struct Hits {
    /// Indices (ascending) of the client's values that occur in the cache.
    pub(crate) client: Vec<usize>,
    /// Server positions (ascending, distinct) of the cache records that match a client
    /// value; empty if the cache stores no positions.
    pub(crate) positions: Vec<u64>,
}

impl Cache {
    /// Opens a cache file and reads its header (the body is verified during lookups).
    ///
    /// # Errors
    /// [`Error::Io`], or [`Error::Cache`] for a file that is not a cache of a known version or
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
        let version = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        if (1..=3).contains(&version) {
            return Err(bad(&format!(
                "cache version {version} was built by an older obliv (keys encoded otherwise, \
                 or no digest of the server's set): run the offline phase again"
            )));
        }
        if version != CACHE_VERSION {
            return Err(bad("unsupported cache version"));
        }
        let width = usize::from(h[13]);
        let pos_bytes = usize::from(h[14]);
        if pos_bytes != 0 && pos_bytes != POS_BYTES {
            return Err(bad("unsupported position width"));
        }
        let mut c = [0u8; 8];
        c.copy_from_slice(&h[16..24]);
        let count = u64::from_le_bytes(c);
        let mut fingerprint = [0u8; 32];
        fingerprint.copy_from_slice(&h[24..56]);
        let mut checksum = [0u8; 32];
        checksum.copy_from_slice(&h[56..88]);
        let mut set_digest = [0u8; 32];
        set_digest.copy_from_slice(&h[88..120]);
        let len = f.metadata().map_err(io_err(path))?.len();
        if !(8..=32).contains(&width)
            || count
                .checked_mul((width + pos_bytes) as u64)
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
            pos_bytes,
            count,
            fingerprint,
            checksum,
            set_digest,
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

    /// Whether the cache stores the server's positions, so that an online phase with
    /// `server_get_result` can run on it.
    pub fn has_positions(&self) -> bool {
        self.pos_bytes != 0
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn body_reader(&self) -> Result<BufReader<File>> {
        let mut f = File::open(&self.path).map_err(io_err(&self.path))?;
        f.seek(SeekFrom::Start(HEADER_LEN as u64))
            .map_err(io_err(&self.path))?;
        Ok(BufReader::with_capacity(1 << 20, f))
    }

    fn checksum_error() -> Error {
        Error::Cache("cache checksum mismatch (tampered or corrupted)".into())
    }

    /// Looks up the `w`-byte values in `values` (concatenated) by sorting them and merging
    /// with one sequential pass over the file, whose checksum is verified before anything is
    /// returned.
    pub(crate) fn lookup(&self, values: &[u8]) -> Result<Hits> {
        let (w, rec) = (self.width, self.width + self.pos_bytes);
        let val = |i: usize| &values[i * w..(i + 1) * w];
        let mut order: Vec<usize> = (0..values.len() / w).collect();
        order.sort_unstable_by(|&a, &b| val(a).cmp(val(b)));
        let mut rdr = self.body_reader()?;
        let mut hasher = blake3::Hasher::new();
        // Whole chunks of records: one read and one (SIMD) hash call per chunk.
        let mut buf = vec![0u8; LOOKUP_CHUNK * rec];
        let mut prev = vec![0u8; rec];
        let mut client = Vec::new();
        let mut positions = Vec::new();
        let mut k = 0;
        let mut left = self.count;
        while left > 0 {
            let n = usize::try_from(left).map_or(LOOKUP_CHUNK, |l| l.min(LOOKUP_CHUNK));
            let chunk = &mut buf[..n * rec];
            rdr.read_exact(chunk).map_err(io_err(&self.path))?;
            hasher.update(chunk);
            let first = left == self.count;
            for (i, cur) in chunk.chunks_exact(rec).enumerate() {
                let before = if i == 0 {
                    &prev[..]
                } else {
                    &chunk[(i - 1) * rec..i * rec]
                };
                if !(first && i == 0) && cur < before {
                    return Err(Error::Cache("cache values out of order (tampered)".into()));
                }
                let v = &cur[..w];
                while k < order.len() && val(order[k]) < v {
                    k += 1;
                }
                let mut j = k;
                while j < order.len() && val(order[j]) == v {
                    client.push(order[j]);
                    j += 1;
                }
                if j > k && self.pos_bytes != 0 {
                    let mut p = [0u8; 8];
                    p[8 - POS_BYTES..].copy_from_slice(&cur[w..]);
                    positions.push(u64::from_be_bytes(p));
                }
            }
            prev.copy_from_slice(&chunk[(n - 1) * rec..]);
            left -= n as u64;
        }
        if *hasher.finalize().as_bytes() != self.checksum {
            return Err(Self::checksum_error());
        }
        client.sort_unstable();
        client.dedup();
        positions.sort_unstable();
        positions.dedup();
        Ok(Hits { client, positions })
    }
}

/// Builds a cache by external sorting: records collect into runs of [`RUN`], each sorted and
/// written to an anonymous temporary file (unlinked from the start, so nothing of it outlives
/// the process however it ends), then merged (with the body of an existing cache, when
/// appending) into the final file, which replaces `path` atomically.
pub(crate) struct CacheBuilder {
    path: PathBuf,
    w: usize,
    pos_bytes: usize,
    buf: Vec<u8>,
    runs: Vec<File>,
    base: Option<Cache>,
    /// Records per run ([`RUN`]; smaller in tests).
    run: usize,
}

impl CacheBuilder {
    /// A new cache at `path` with `w`-byte values and, if `pos_bytes > 0`, positions.
    pub(crate) fn new(path: &Path, w: usize, pos_bytes: usize) -> Self {
        CacheBuilder {
            path: path.to_path_buf(),
            w,
            pos_bytes,
            buf: Vec::new(),
            runs: Vec::new(),
            base: None,
            run: RUN,
        }
    }

    /// A builder that extends `cache` in place (its body is merged in and re-verified).
    pub(crate) fn extend(cache: &Cache) -> Self {
        let mut b = CacheBuilder::new(&cache.path, cache.width, cache.pos_bytes);
        b.base = Some(cache.clone());
        b
    }

    fn dir(&self) -> &Path {
        self.path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    }

    /// Adds `values` (concatenated `w`-byte values) streamed at positions `first..`.
    pub(crate) fn push(&mut self, values: &[u8], first: u64) -> Result<()> {
        if self.pos_bytes == 0 {
            self.buf.extend_from_slice(values);
        } else {
            for (i, v) in values.chunks_exact(self.w).enumerate() {
                self.buf.extend_from_slice(v);
                let p = (first + i as u64).to_be_bytes();
                self.buf.extend_from_slice(&p[8 - POS_BYTES..]);
            }
        }
        if self.buf.len() >= self.run * (self.w + self.pos_bytes) {
            self.spill()?;
        }
        Ok(())
    }

    fn sorted(&self) -> Vec<u8> {
        let mut chunks: Vec<&[u8]> = self.buf.chunks_exact(self.w + self.pos_bytes).collect();
        chunks.sort_unstable();
        chunks.concat()
    }

    fn spill(&mut self) -> Result<()> {
        let sorted = self.sorted();
        let dir = self.dir().to_path_buf();
        let mut run = tempfile::tempfile_in(&dir).map_err(io_err(&dir))?;
        run.write_all(&sorted).map_err(io_err(&dir))?;
        self.runs.push(run);
        self.buf.clear();
        Ok(())
    }

    /// Writes the cache for the key with `fingerprint` on the curve with code `curve`, of the
    /// server set with digest `set_digest`.
    pub(crate) fn finish(
        mut self,
        curve: u8,
        fingerprint: [u8; 32],
        set_digest: [u8; 32],
    ) -> Result<Cache> {
        let rec = self.w + self.pos_bytes;
        let dir = self.dir().to_path_buf();
        let tmp = super::temp::Announced::new_in(&dir, ".obliv-cache-").map_err(io_err(&dir))?;
        let mut out = BufWriter::with_capacity(1 << 20, tmp.as_file());
        out.write_all(&[0u8; HEADER_LEN]).map_err(io_err(&dir))?;
        let mut hasher = blake3::Hasher::new();
        let mut count = 0u64;
        let mut emit = |v: &[u8], out: &mut BufWriter<&File>| -> Result<()> {
            hasher.update(v);
            count += 1;
            out.write_all(v).map_err(io_err(&dir))
        };
        if self.runs.is_empty() && self.base.is_none() {
            for v in self.sorted().chunks_exact(rec) {
                emit(v, &mut out)?;
            }
        } else {
            if !self.buf.is_empty() {
                self.spill()?;
            }
            // Each run is read once, from its start, through its own handle.
            let mut readers: Vec<(BufReader<File>, u64)> = std::mem::take(&mut self.runs)
                .into_iter()
                .map(|mut f| {
                    f.seek(SeekFrom::Start(0))
                        .map(|_| (BufReader::with_capacity(1 << 16, f), u64::MAX))
                })
                .collect::<std::io::Result<_>>()
                .map_err(io_err(&dir))?;
            // The existing cache's body is one more sorted run, of known length, whose
            // checksum is recomputed on the way (a tampered cache is not extended).
            let base = self.base.take();
            let mut base_hash = blake3::Hasher::new();
            let base_idx = readers.len();
            if let Some(c) = &base {
                readers.push((c.body_reader()?, c.count));
            }
            let mut heap = BinaryHeap::new();
            let next = |readers: &mut [(BufReader<File>, u64)], i: usize| {
                let (r, left) = &mut readers[i];
                if *left == 0 {
                    return None;
                }
                *left = left.saturating_sub(1);
                let mut v = vec![0u8; rec];
                r.read_exact(&mut v).ok().map(|()| v)
            };
            for i in 0..readers.len() {
                if let Some(v) = next(&mut readers, i) {
                    heap.push(Head(v, i));
                }
            }
            let mut base_seen = 0u64;
            while let Some(Head(v, i)) = heap.pop() {
                if base.is_some() && i == base_idx {
                    base_hash.update(&v);
                    base_seen += 1;
                }
                emit(&v, &mut out)?;
                if let Some(n) = next(&mut readers, i) {
                    heap.push(Head(n, i));
                }
            }
            if let Some(c) = &base
                && (base_seen != c.count || *base_hash.finalize().as_bytes() != c.checksum)
            {
                return Err(Cache::checksum_error());
            }
        }
        out.flush().map_err(io_err(&dir))?;
        drop(out);
        let checksum = *hasher.finalize().as_bytes();
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(CACHE_MAGIC);
        header.extend_from_slice(&CACHE_VERSION.to_le_bytes());
        header.push(curve);
        header.push(u8::try_from(self.w).unwrap_or(u8::MAX));
        header.push(u8::try_from(self.pos_bytes).unwrap_or(u8::MAX));
        header.push(0);
        header.extend_from_slice(&count.to_le_bytes());
        header.extend_from_slice(&fingerprint);
        header.extend_from_slice(&checksum);
        header.extend_from_slice(&set_digest);
        {
            let mut f = tmp.as_file();
            f.seek(SeekFrom::Start(0)).map_err(io_err(&dir))?;
            f.write_all(&header).map_err(io_err(&dir))?;
            f.sync_all().map_err(io_err(&dir))?;
        }
        tmp.persist(&self.path).map_err(|e| Error::Io {
            path: self.path.display().to_string(),
            source: e,
        })?;
        Cache::open(&self.path)
    }
}

/// A run's current record, ordered for a min-heap.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Many runs, then an extension with more runs: the file is sorted, checksummed, and a
    /// lookup finds exactly the values (and positions) that were pushed.
    #[test]
    fn external_sort_and_merge_with_many_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        let mut prg = obliv_core::Prg::new(obliv_core::Block::from(7u128));
        let w = 8;
        let mut vals = vec![0u8; 1000 * w];
        prg.fill_bytes(&mut vals);
        let mut b = CacheBuilder::new(&path, w, POS_BYTES);
        b.run = 37;
        for (i, chunk) in vals.chunks(w * 10).enumerate() {
            b.push(chunk, (i * 10) as u64).unwrap();
        }
        // 25 runs spilled, none of them visible in the directory (nothing to leave behind).
        assert_eq!(b.runs.len(), 25);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let c = b.finish(1, [9; 32], [7; 32]).unwrap();
        assert!(b_runs_sorted(&path, w + POS_BYTES));
        let mut more = vec![0u8; 500 * w];
        prg.fill_bytes(&mut more);
        let mut b = CacheBuilder::extend(&c);
        b.run = 41;
        b.push(&more, 1000).unwrap();
        let c = b.finish(1, [9; 32], [7; 32]).unwrap();
        assert_eq!(c.len(), 1500);
        assert!(b_runs_sorted(&path, w + POS_BYTES));
        // Query values 3, 999 (first part) and 1000 + 7 (appended), and a miss.
        let mut q = Vec::new();
        q.extend_from_slice(&vals[3 * w..4 * w]);
        q.extend_from_slice(&[0xAB; 8]);
        q.extend_from_slice(&more[7 * w..8 * w]);
        q.extend_from_slice(&vals[999 * w..1000 * w]);
        let hits = c.lookup(&q).unwrap();
        assert_eq!(hits.client, vec![0, 2, 3]);
        assert_eq!(hits.positions, vec![3, 999, 1007]);
    }

    /// Records swapped and the checksum recomputed: the order check still refuses the file.
    #[test]
    fn out_of_order_body_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        let w = 8;
        let mut vals = vec![0u8; 100 * w];
        obliv_core::Prg::new(obliv_core::Block::from(8u128)).fill_bytes(&mut vals);
        let mut b = CacheBuilder::new(&path, w, 0);
        b.push(&vals, 0).unwrap();
        b.finish(1, [0; 32], [7; 32]).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let body = HEADER_LEN..bytes.len();
        let (x, y) = (HEADER_LEN + 40 * w, HEADER_LEN + 41 * w);
        for i in 0..w {
            bytes.swap(x + i, y + i);
        }
        let sum = *blake3::hash(&bytes[body]).as_bytes();
        bytes[56..88].copy_from_slice(&sum);
        std::fs::write(&path, &bytes).unwrap();
        let c = Cache::open(&path).unwrap();
        assert!(matches!(c.lookup(&vals[..w]), Err(Error::Cache(_))));
    }

    fn b_runs_sorted(path: &Path, rec: usize) -> bool {
        let body = std::fs::read(path).unwrap()[HEADER_LEN..].to_vec();
        body.chunks(rec)
            .collect::<Vec<_>>()
            .windows(2)
            .all(|p| p[0] <= p[1])
    }
}
