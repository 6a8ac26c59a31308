//! Bucketing for inputs larger than memory.
//!
//! A party first reads its CSV once to validate it and count rows (all input errors surface
//! here, before any network traffic), then streams its keys into `B_own` temporary files by a
//! public hash of the key, `B_own` the power of two at or above `rows / bucket size`. Only then
//! does it connect. The parties agree on `B = max B_own` over all of them; since every count is
//! a power of two, bucket `b` of `B` is the part of local file `b mod B_own` whose keys hash to
//! `b` modulo `B`, so equal keys meet in the same bucket on every side. One PSI runs per bucket
//! on that bucket's distinct keys. Matching rows are marked in a bit set
//! (one bit per input row), and a last pass over the input writes them out.
//!
//! Sharding (`--shard I/N`): the same hash of a key ([`key_hash`], BLAKE3 in derive-key mode)
//! gives two 64-bit words; the first picks the bucket, the second the shard (`h₂ mod N`). A
//! shard counts, splits and runs only its own keys, so `B_own` follows from the shard's rows,
//! and shard `I` of every party meets only shard `I` of the others (docs/sharding.md).
//!
//! Memory per party: one bucket's keys plus `rows / 8` bytes, whatever the input size.
//! Leakage: each protocol run reveals its bucket's number of distinct keys to the peers, i.e.
//! a histogram of a public hash of the keys, which says nothing about individual keys.

use std::fs::File;
use std::hash::BuildHasher as _;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::csvio::{KEY_SEPARATOR, describe, keyed_reader, open};
use crate::error::CliError;
use crate::progress::{Progress, ProgressMode};

/// The validated shape of an input file.
#[derive(Clone, Debug)]
pub struct InputShape {
    /// Header row.
    pub header: Vec<String>,
    /// Indices of the key columns.
    pub key_cols: Vec<usize>,
    /// Data rows.
    pub rows: u64,
    /// Data rows whose key belongs to this party's shard (all rows without `--shard`).
    pub shard_rows: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// BLAKE3 hash of the whole file, when asked for (it identifies a checkpoint's input).
    pub digest: Option<[u8; 32]>,
}

/// Shard `index` of `count`: the keys whose shard hash is `index` modulo `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, below `count`.
    pub index: u64,
    /// Number of shards (at least 1).
    pub count: u64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = CliError;
    /// `I/N` with `I < N`, `1 <= N <= 2^20`.
    fn from_str(s: &str) -> Result<Self, CliError> {
        let bad = || {
            CliError::Usage(format!(
                "--shard {s:?}: expected I/N with 0 <= I < N, e.g. 3/8"
            ))
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count || count > 1 << 20 {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether `key` belongs to this shard.
    pub fn owns(&self, key: &[u8]) -> bool {
        self.count == 1 || key_hash(key).1 % self.count == self.index
    }
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Option<blake3::Hasher>,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// Reads the whole file once: checks the header, the key columns, every row's field count and
/// UTF-8, counts rows (and those of `shard`), and hashes the file with `digest`.
///
/// # Errors
/// [`CliError::Input`] as `csvio::read_keys` describes.
pub fn scan(
    path: &Path,
    keys: &[String],
    shard: Shard,
    digest: bool,
    progress: ProgressMode,
) -> Result<InputShape, CliError> {
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let file = File::open(path)
        .map_err(|e| CliError::Input(format!("cannot open {}: {e}", path.display())))?;
    let reader = Hashing {
        inner: file,
        hasher: digest.then(blake3::Hasher::new),
    };
    let (mut rdr, header, key_cols) = keyed_reader(path, reader, keys)?;
    let mut record = csv::StringRecord::new();
    let mut key = Vec::new();
    let (mut rows, mut shard_rows) = (0u64, 0u64);
    let mut bar = Progress::new(progress, "reading input", "bytes", bytes);
    loop {
        match rdr.read_record(&mut record) {
            Ok(true) => {
                rows += 1;
                if shard.count > 1 {
                    key_of(&record, &key_cols, &mut key);
                    shard_rows += u64::from(shard.owns(&key));
                } else {
                    shard_rows += 1;
                }
                bar.set(record.position().map_or(0, csv::Position::byte));
            }
            Ok(false) => break,
            Err(e) => return Err(describe(path, &e)),
        }
    }
    bar.set(bytes);
    bar.finish();
    let mut inner = rdr.into_inner();
    // The csv reader stops at the last record; hash whatever follows it too.
    if let Some(h) = &mut inner.hasher {
        let mut rest = Vec::new();
        inner
            .inner
            .read_to_end(&mut rest)
            .map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?;
        h.update(&rest);
    }
    Ok(InputShape {
        header,
        key_cols,
        rows,
        shard_rows,
        bytes,
        digest: inner.hasher.map(|h| *h.finalize().as_bytes()),
    })
}

/// The key of a record: the key columns joined by [`KEY_SEPARATOR`].
pub fn key_of(record: &csv::StringRecord, cols: &[usize], out: &mut Vec<u8>) {
    out.clear();
    for (i, &c) in cols.iter().enumerate() {
        if i > 0 {
            out.push(KEY_SEPARATOR);
        }
        out.extend_from_slice(record.get(c).unwrap_or_default().as_bytes());
    }
}

/// The public hash of a key: its first word picks the bucket, its second the shard.
pub fn key_hash(key: &[u8]) -> (u64, u64) {
    key_hashes(&[key])[0]
}

/// [`key_hash`] of many keys; keys of at most 64 bytes are hashed sixteen at a time in SIMD
/// lanes ([`obliv_core::hash::RoHasher::hash_blocks`]).
pub fn key_hashes(keys: &[&[u8]]) -> Vec<(u64, u64)> {
    thread_local! {
        // BLAKE3 key derivation for the domain once per thread, not once per key.
        static HASHER: std::cell::RefCell<obliv_core::hash::RoHasher> =
            std::cell::RefCell::new(obliv_core::hash::RoHasher::new("obliv-cli bucket v1"));
    }
    // The first 16 bytes of BLAKE3-derive-key("obliv-cli bucket v1", key), as two words.
    HASHER.with_borrow_mut(|h| {
        h.hash_blocks(keys)
            .into_iter()
            .map(|b| {
                let h = b.to_bytes();
                let mut a = [0u8; 8];
                let mut c = [0u8; 8];
                a.copy_from_slice(&h[..8]);
                c.copy_from_slice(&h[8..16]);
                (u64::from_le_bytes(a), u64::from_le_bytes(c))
            })
            .collect()
    })
}

/// The bucket of a key among `buckets` (a public, keyless hash: every party computes the same).
pub fn bucket_of(key: &[u8], buckets: usize) -> usize {
    // The remainder is below `buckets`, a usize.
    usize::try_from(key_hash(key).0 % buckets as u64).unwrap_or(0)
}

/// Keys of a file split into bucket files in a temporary directory.
#[derive(Debug)]
pub struct BucketFiles {
    _dir: tempfile::TempDir,
    files: Vec<PathBuf>,
}

/// One bucket in memory: its distinct keys, and for each of its rows the row number and the
/// index of the row's key among [`Bucket::distinct`].
///
/// The keys stay in the bucket file's bytes (one allocation for the whole bucket, not one per
/// key); `distinct` lists where each distinct key lies in them.
#[derive(Debug, Default)]
pub struct Bucket {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
    /// `(row, key index)` for every row of the bucket.
    pub rows: Vec<(u64, u32)>,
}

impl Bucket {
    /// The distinct keys, in an order fixed by a per-process keyed hash (not input order).
    pub fn distinct(&self) -> Vec<&[u8]> {
        self.spans
            .iter()
            .map(|&(at, len)| &self.bytes[at..at + len])
            .collect()
    }

    /// Number of distinct keys.
    pub fn distinct_len(&self) -> usize {
        self.spans.len()
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |e| CliError::Input(format!("{}: {e}", path.display()))
}

impl BucketFiles {
    /// Streams the keys of `path` that belong to `shard` into `buckets` files under
    /// `tmp_root` (a fresh temporary directory inside it).
    ///
    /// # Errors
    /// [`CliError::Input`] for I/O errors.
    pub fn split(
        path: &Path,
        shape: &InputShape,
        buckets: usize,
        shard: Shard,
        tmp_root: &Path,
        progress: ProgressMode,
    ) -> Result<Self, CliError> {
        let dir = tempfile::Builder::new()
            .prefix("obliv-buckets-")
            .tempdir_in(tmp_root)
            .map_err(io(tmp_root))?;
        let files: Vec<PathBuf> = (0..buckets)
            .map(|b| dir.path().join(format!("b{b}")))
            .collect();
        let mut writers = files
            .iter()
            .map(|f| File::create(f).map(|f| BufWriter::with_capacity(1 << 16, f)))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(io(dir.path()))?;
        let mut rdr = open(path)?;
        let mut record = csv::StringRecord::new();
        let mut key = Vec::new();
        let mut row = 0u64;
        let mut bar = Progress::new(progress, "splitting", "rows", shape.rows);
        // Keys are hashed in batches (SIMD lanes): `arena` holds the batch's keys back to back.
        const BATCH: usize = 1024;
        let mut arena: Vec<u8> = Vec::new();
        let mut spans: Vec<(u64, usize, usize)> = Vec::with_capacity(BATCH);
        let mut flush = |arena: &mut Vec<u8>,
                         spans: &mut Vec<(u64, usize, usize)>|
         -> Result<(), CliError> {
            let keys: Vec<&[u8]> = spans
                .iter()
                .map(|&(_, at, len)| &arena[at..at + len])
                .collect();
            for (&(row, _, _), (key, (hb, hs))) in
                spans.iter().zip(keys.iter().zip(key_hashes(&keys)))
            {
                if shard.count > 1 && hs % shard.count != shard.index {
                    continue;
                }
                let w = &mut writers[usize::try_from(hb % buckets as u64).unwrap_or(0)];
                let len = u32::try_from(key.len())
                    .map_err(|_| CliError::Input(format!("a key of row {row} is over 4 GiB")))?;
                w.write_all(&row.to_le_bytes()).map_err(io(path))?;
                w.write_all(&len.to_le_bytes()).map_err(io(path))?;
                w.write_all(key).map_err(io(path))?;
            }
            arena.clear();
            spans.clear();
            Ok(())
        };
        loop {
            match rdr.read_record(&mut record) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return Err(describe(path, &e)),
            }
            bar.inc(1);
            key_of(&record, &shape.key_cols, &mut key);
            spans.push((row, arena.len(), key.len()));
            arena.extend_from_slice(&key);
            row += 1;
            if spans.len() == BATCH {
                flush(&mut arena, &mut spans)?;
            }
        }
        flush(&mut arena, &mut spans)?;
        for w in &mut writers {
            w.flush().map_err(io(dir.path()))?;
        }
        bar.finish();
        Ok(BucketFiles { _dir: dir, files })
    }

    /// Number of local bucket files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there are no buckets.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Loads bucket `b` of `total` (a power-of-two multiple of [`BucketFiles::len`]): the keys
    /// of local file `b mod len` that hash to `b` modulo `total`.
    ///
    /// # Errors
    /// [`CliError::Input`] for I/O errors or a damaged bucket file.
    pub fn load(&self, b: usize, total: usize) -> Result<Bucket, CliError> {
        let path = &self.files[b % self.files.len()];
        let refine = total != self.files.len();
        let mut bytes = Vec::new();
        BufReader::new(File::open(path).map_err(io(path))?)
            .read_to_end(&mut bytes)
            .map_err(io(path))?;
        let damaged = || CliError::Input(format!("bucket file {} is damaged", path.display()));
        // Parse the records: (row, span of the key in `bytes`).
        let mut records: Vec<(u64, usize, usize)> = Vec::with_capacity(bytes.len() / 24);
        let mut at = 0;
        while at < bytes.len() {
            let head = bytes.get(at..at + 12).ok_or_else(damaged)?;
            let mut r = [0u8; 8];
            r.copy_from_slice(&head[..8]);
            let len = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
            let key = bytes.get(at + 12..at + 12 + len).ok_or_else(damaged)?;
            if !refine || bucket_of(key, total) == b {
                records.push((u64::from_le_bytes(r), at + 12, len));
            }
            at += 12 + len;
        }
        u32::try_from(records.len()).map_err(|_| damaged())?;
        // Group equal keys by sorting (keyed hash, record) pairs instead of a hash table: one
        // sort of 12-byte pairs instead of a random access per row into a table the size of
        // the bucket, and no allocation per key. Equal hashes are confirmed byte by byte, so a
        // collision costs time, never a wrong grouping.
        let hasher = std::hash::RandomState::new();
        let key = |i: usize| &bytes[records[i].1..records[i].1 + records[i].2];
        #[allow(clippy::cast_possible_truncation)] // record count checked to fit u32 above
        let mut order: Vec<(u64, u32)> = (0..records.len())
            .map(|i| (hasher.hash_one(key(i)), i as u32))
            .collect();
        order.sort_unstable();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut ids = vec![0u32; records.len()];
        let mut run_start = 0;
        while run_start < order.len() {
            let h = order[run_start].0;
            let mut run_end = run_start;
            while run_end < order.len() && order[run_end].0 == h {
                run_end += 1;
            }
            // Distinct keys first seen in this run (almost always one).
            let first_id = spans.len();
            for &(_, rec) in &order[run_start..run_end] {
                let rec = rec as usize;
                let k = key(rec);
                let found = (first_id..spans.len())
                    .find(|&id| &bytes[spans[id].0..spans[id].0 + spans[id].1] == k);
                let id = found.unwrap_or_else(|| {
                    spans.push((records[rec].1, records[rec].2));
                    spans.len() - 1
                });
                #[allow(clippy::cast_possible_truncation)] // ids < records.len() ≤ u32::MAX
                {
                    ids[rec] = id as u32;
                }
            }
            run_start = run_end;
        }
        // Rows in file order (the caller reports matches in input order).
        let rows = records.iter().zip(ids).map(|(r, id)| (r.0, id)).collect();
        Ok(Bucket { bytes, spans, rows })
    }
}

/// One bit per input row.
#[derive(Clone, Debug)]
pub struct RowSet(Vec<u64>);

impl RowSet {
    /// An empty set for `rows` rows.
    pub fn new(rows: u64) -> Self {
        RowSet(vec![
            0;
            usize::try_from(rows.div_ceil(64)).unwrap_or(usize::MAX)
        ])
    }
    /// Marks `row`.
    pub fn insert(&mut self, row: u64) {
        if let Some(w) = usize::try_from(row / 64)
            .ok()
            .and_then(|i| self.0.get_mut(i))
        {
            *w |= 1 << (row % 64);
        }
    }
    /// Whether `row` is marked.
    pub fn contains(&self, row: u64) -> bool {
        usize::try_from(row / 64)
            .ok()
            .and_then(|i| self.0.get(i))
            .is_some_and(|w| (w >> (row % 64)) & 1 == 1)
    }
    /// Number of marked rows.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

/// Writes the header and the marked rows of `input` to `output` (temporary file, renamed on
/// success), in input order or sorted by key. Returns the number of rows written.
///
/// # Errors
/// [`CliError::Input`].
pub fn write_rows(
    input: &Path,
    shape: &InputShape,
    rows: &RowSet,
    output: &Path,
    sort: bool,
    progress: ProgressMode,
) -> Result<u64, CliError> {
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| CliError::Input(format!("cannot create a file in {}: {e}", dir.display())))?;
    let mut rdr = open(input)?;
    let mut wtr = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, tmp.as_file()));
    let err = |e: csv::Error| CliError::Input(format!("writing {}: {e}", output.display()));
    wtr.write_record(&shape.header).map_err(err)?;
    let mut kept: Vec<(Vec<u8>, csv::StringRecord)> = Vec::new();
    let mut written = 0;
    let mut bar = Progress::new(progress, "writing output", "rows", shape.rows);
    for (row, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| describe(input, &e))?;
        bar.inc(1);
        if rows.contains(row as u64) {
            if sort {
                let mut k = Vec::new();
                key_of(&rec, &shape.key_cols, &mut k);
                kept.push((k, rec));
            } else {
                wtr.write_record(&rec).map_err(err)?;
            }
            written += 1;
        }
    }
    if sort {
        kept.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, rec) in &kept {
            wtr.write_record(rec).map_err(err)?;
        }
    }
    let mut inner = wtr
        .into_inner()
        .map_err(|e| CliError::Input(e.to_string()))?;
    inner.flush().map_err(|e| CliError::Input(e.to_string()))?;
    drop(inner);
    tmp.persist(output)
        .map_err(|e| CliError::Input(format!("cannot write {}: {e}", output.display())))?;
    bar.finish();
    Ok(written)
}

/// The local bucket count: the power of two at or above `rows / bucket_size` (at least 1).
pub fn local_buckets(rows: u64, bucket_size: usize) -> usize {
    let need = rows.div_ceil(bucket_size.max(1) as u64).max(1);
    usize::try_from(need.next_power_of_two()).unwrap_or(1 << 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hash_is_the_documented_blake3_derive_key() {
        for key in [&b""[..], b"k1", &[0xab; 64], &[7; 65], &[1; 300]] {
            let h = blake3::derive_key("obliv-cli bucket v1", key);
            let a = u64::from_le_bytes(h[..8].try_into().unwrap());
            let b = u64::from_le_bytes(h[8..16].try_into().unwrap());
            assert_eq!(key_hash(key), (a, b));
        }
    }

    #[test]
    fn buckets_keep_equal_keys_together_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.csv");
        let mut body = String::from("id,x\n");
        for i in 0..500 {
            body += &format!("k{},{i}\n", i % 200);
        }
        std::fs::write(&input, body).unwrap();
        let shape = scan(
            &input,
            &["id".to_string()],
            Shard::default(),
            true,
            ProgressMode::Off,
        )
        .unwrap();
        assert_eq!(
            shape.digest,
            Some(*blake3::hash(&std::fs::read(&input).unwrap()).as_bytes())
        );
        assert_eq!(shape.rows, 500);
        let files = BucketFiles::split(
            &input,
            &shape,
            7,
            Shard::default(),
            dir.path(),
            ProgressMode::Off,
        )
        .unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut rows = 0;
        for b in 0..files.len() {
            let bucket = files.load(b, 7).unwrap();
            rows += bucket.rows.len();
            for k in bucket.distinct() {
                assert_eq!(bucket_of(k, 7), b);
                assert!(seen.insert(k.to_vec()), "a key in two buckets");
            }
        }
        assert_eq!((rows, seen.len()), (500, 200));
        // Refining 4 local files into 16 buckets.
        let four = BucketFiles::split(
            &input,
            &shape,
            4,
            Shard::default(),
            dir.path(),
            ProgressMode::Off,
        )
        .unwrap();
        let mut total = 0;
        for b in 0..16 {
            let bucket = four.load(b, 16).unwrap();
            assert!(bucket.distinct().iter().all(|k| bucket_of(k, 16) == b));
            total += bucket.rows.len();
        }
        assert_eq!(total, 500);
        let mut set = RowSet::new(500);
        set.insert(3);
        set.insert(499);
        assert_eq!(set.count(), 2);
        let out = dir.path().join("out.csv");
        assert_eq!(
            write_rows(&input, &shape, &set, &out, false, ProgressMode::Off).unwrap(),
            2
        );
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "id,x\nk3,3\nk99,499\n"
        );
    }
}
