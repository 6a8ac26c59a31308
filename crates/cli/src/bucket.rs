//! Bucketing for inputs larger than memory.
//!
//! A party reads its CSV once ([`ingest`]): it validates it (all input errors surface here,
//! before any network traffic), counts the rows, and files every key, as the 128-bit public hash
//! [`key_hash`] with its row number, into [`Buckets`]: sub-buckets by the first hash word, in
//! memory up to a budget and appended to temporary files beyond it. Only then does it connect.
//! The bucket count `B` follows from public data only (every party's row count, the shard
//! count and the agreed load; [`crate::plan`]), and bucket `b` of `B` holds the keys whose
//! first hash word is `b` modulo `B`, so equal keys meet in the same bucket on every side. One
//! PSI runs per bucket on that bucket's distinct key hashes (grouped by a radix sort, no
//! per-key allocation), padded with dummies to the plan's public bound.
//! Matching rows are marked in a bit set (one bit per input row), and a last pass over the input
//! writes them out. Simple files (no quotes) are read and copied by a byte scanner
//! (`fastcsv`); others by the `csv` parser.
//!
//! Sharding (`--shard I/N`): the same hash of a key ([`key_hash`], BLAKE3 in derive-key mode)
//! gives two 64-bit words; the first picks the bucket, the second the shard (`h₂ mod N`). A
//! shard splits and runs only its own keys; its bucket count and padded sizes follow from the
//! whole file's row count (public), not from the shard's, and shard `I` of every party meets
//! only shard `I` of the others (docs/sharding.md).
//!
//! Memory per party: 24 bytes per row of the shard up to the memory budget (default 1 GiB),
//! then one bucket's entries, plus `rows / 8` bytes. The PSI runs on the keys' 128-bit hashes:
//! two distinct keys collide with probability 2^-128 per pair (2^-75 for 10^8 rows a side).
//! Leakage: every bucket's PSI announces its padded size, a function of the public row counts,
//! so the peers learn nothing about how the keys spread over the buckets or shards (with the
//! public hash such a histogram would let a peer test candidate keys for membership).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::csvio::{
    changed, describe, finish_digest, keyed_reader, open_hashing, open_keyed, push_key_field,
};
use crate::error::CliError;
use crate::fastcsv::{self, Fields, Scan};
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
    /// BLAKE3 hash of the whole file as [`ingest`] read it (always set by it): it identifies a
    /// checkpoint's input, and [`write_rows`] refuses a file that no longer has it.
    pub digest: Option<[u8; 32]>,
    /// For a simple file (read by the byte scanner), the byte where the data rows start; the
    /// output is then copied line by line. `None`: the file needs the `csv` parser.
    pub data_start: Option<u64>,
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
            CliError::usage(format!(
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

/// Default of [`IngestOptions::memory_budget`]: bytes of bucket entries held in memory before
/// they are written to temporary files (24 bytes per row: about 44 million rows).
pub const DEFAULT_MEMORY_BUDGET: usize = 1 << 30;

/// Number of local sub-buckets the keys are split into while the file is read (before the
/// bucket count of the run is known). A power of two.
const SUB_BUCKETS: usize = 256;

/// Keys hashed per batch (SIMD lanes of [`key_hashes`]).
const BATCH: usize = 1024;

/// How [`ingest`] reads and where it keeps the keys.
#[derive(Clone, Debug)]
pub struct IngestOptions {
    /// Only the keys of this shard are kept.
    pub shard: Shard,
    /// Ignored: the whole file is always hashed, since [`write_rows`] re-checks the digest
    /// (which is also a checkpoint's identity).
    pub digest: bool,
    /// Directory for temporary bucket files, when the keys do not fit the budget.
    pub tmp_root: PathBuf,
    /// Bytes of bucket entries (24 per row) kept in memory; beyond it they go to files.
    pub memory_budget: usize,
    /// Progress display.
    pub progress: ProgressMode,
    /// Always use the general CSV parser (tests compare both paths).
    pub force_csv: bool,
    /// Local sub-bucket count (a power of two; tests lower it to exercise refinement).
    pub sub_buckets: usize,
}

impl IngestOptions {
    /// The defaults for `shard`, temporary files under `tmp_root`.
    pub fn new(shard: Shard, digest: bool, tmp_root: &Path, progress: ProgressMode) -> Self {
        IngestOptions {
            shard,
            digest,
            tmp_root: tmp_root.to_path_buf(),
            memory_budget: DEFAULT_MEMORY_BUDGET,
            progress,
            force_csv: false,
            sub_buckets: SUB_BUCKETS,
        }
    }
}

/// Collects keys, hashes them in batches and files `(hash, row)` entries into sub-buckets.
struct Sink {
    /// The keys of the batch, back to back.
    arena: Vec<u8>,
    /// `(row, start of its key in arena)` for the batch.
    spans: Vec<(u64, usize)>,
    shard: Shard,
    buckets: Buckets,
    owned: u64,
}

impl Sink {
    fn new(opts: &IngestOptions) -> Self {
        Sink {
            arena: Vec::with_capacity(BATCH * 32),
            spans: Vec::with_capacity(BATCH),
            shard: opts.shard,
            buckets: Buckets::new(opts),
            owned: 0,
        }
    }

    /// Row `row`'s key was appended to `arena` from `at` on.
    #[inline]
    fn push(&mut self, row: u64, at: usize) -> Result<(), CliError> {
        self.spans.push((row, at));
        if self.spans.len() == BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), CliError> {
        let ends = self
            .spans
            .iter()
            .skip(1)
            .map(|&(_, at)| at)
            .chain(std::iter::once(self.arena.len()));
        let keys: Vec<&[u8]> = self
            .spans
            .iter()
            .zip(ends)
            .map(|(&(_, at), end)| &self.arena[at..end])
            .collect();
        let hashes = key_hashes(&keys);
        for (&(row, _), (lo, hi)) in self.spans.iter().zip(hashes) {
            if self.shard.count > 1 && hi % self.shard.count != self.shard.index {
                continue;
            }
            self.owned += 1;
            self.buckets.push(Entry { hi, lo, row });
        }
        self.arena.clear();
        self.spans.clear();
        self.buckets.maybe_spill()
    }
}

/// Reads the input once: checks the header, the key columns, every row's field count and
/// UTF-8, counts the rows (and those of the shard), hashes the file when asked, and files every
/// key of the shard into buckets (in memory up to the budget, in temporary files beyond).
///
/// Simple files (no quotes, `\n` or `\r\n` line ends) are read by a byte scanner
/// (`fastcsv`); any other file, or a malformed one, by the `csv` parser, which also
/// words the errors. Both give the same rows and keys.
///
/// # Errors
/// [`ExitKind::Input`](crate::ExitKind::Input) as `csvio::read_keys` describes, and for I/O errors.
pub fn ingest(
    path: &Path,
    keys: &[String],
    opts: &IngestOptions,
) -> Result<(InputShape, Buckets), CliError> {
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let (rdr, header, key_cols) = open_keyed(path, keys)?;
    let data_start = rdr.position().byte();
    drop(rdr);
    if !opts.force_csv {
        let mut sink = Sink::new(opts);
        let mut hasher = blake3::Hasher::new();
        let mut bar = Progress::new(opts.progress, "reading input", "bytes", bytes);
        let mut fields = Fields::new(header.len(), &key_cols);
        let mut rows = 0u64;
        let scan = fastcsv::for_each_line(
            path,
            data_start,
            |b| {
                hasher.update(b);
            },
            |at| bar.set(at),
            |line| {
                let at = sink.arena.len();
                if !fields.key_into(line, &mut sink.arena) {
                    return Ok(false);
                }
                sink.push(rows, at)?;
                rows += 1;
                Ok(true)
            },
        )?;
        if scan == Scan::Done {
            sink.flush()?;
            bar.set(bytes);
            bar.finish();
            let shape = InputShape {
                header,
                key_cols,
                rows,
                shard_rows: sink.owned,
                bytes,
                digest: Some(*hasher.finalize().as_bytes()),
                data_start: Some(data_start),
            };
            return Ok((shape, sink.buckets));
        }
        // Not simple: start over with the general parser (the partial buckets are dropped).
    }
    ingest_csv(path, keys, opts, bytes)
}

/// [`ingest`] with the `csv` parser.
fn ingest_csv(
    path: &Path,
    keys: &[String],
    opts: &IngestOptions,
    bytes: u64,
) -> Result<(InputShape, Buckets), CliError> {
    let (mut rdr, header, key_cols) = keyed_reader(path, open_hashing(path)?, keys)?;
    let mut record = csv::StringRecord::new();
    let mut sink = Sink::new(opts);
    let mut rows = 0u64;
    let mut bar = Progress::new(opts.progress, "reading input", "bytes", bytes);
    loop {
        match rdr.read_record(&mut record) {
            Ok(true) => {
                let at = sink.arena.len();
                append_key(&record, &key_cols, &mut sink.arena);
                sink.push(rows, at)?;
                rows += 1;
                bar.set(record.position().map_or(0, csv::Position::byte));
            }
            Ok(false) => break,
            Err(e) => return Err(describe(path, &e)),
        }
    }
    sink.flush()?;
    bar.set(bytes);
    bar.finish();
    // The csv reader stops at the last record; the digest covers whatever follows it too.
    let digest = finish_digest(path, rdr)?;
    let shape = InputShape {
        header,
        key_cols,
        rows,
        shard_rows: sink.owned,
        bytes,
        digest: Some(digest),
        data_start: None,
    };
    Ok((shape, sink.buckets))
}

/// The key of a record: its key columns encoded by [`push_key_field`] (injective, and ordered
/// as the tuple of the columns).
pub fn key_of(record: &csv::StringRecord, cols: &[usize], out: &mut Vec<u8>) {
    out.clear();
    append_key(record, cols, out);
}

/// Appends the key of a record to `out`.
fn append_key(record: &csv::StringRecord, cols: &[usize], out: &mut Vec<u8>) {
    for &c in cols {
        push_key_field(out, record.get(c).unwrap_or_default().as_bytes());
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

/// One row of a bucket: the public hash of its key (`lo` the first word, which picks the
/// bucket, `hi` the second) and the row number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Entry {
    hi: u64,
    lo: u64,
    row: u64,
}

/// Bytes of one entry in memory and in a bucket file.
const ENTRY_BYTES: usize = 24;

/// Entries per chunk of a sub-bucket in memory (96 KiB).
const CHUNK_ENTRIES: usize = 4096;

impl Entry {
    fn sort_key(&self) -> (u64, u64) {
        (self.hi, self.lo)
    }
}

/// The keys of a file (as `(hash, row)` entries) split into local sub-buckets by the first
/// hash word, held in memory up to a budget and appended to temporary files beyond it.
#[derive(Debug)]
pub struct Buckets {
    /// Per sub-bucket, chunks of [`CHUNK_ENTRIES`] entries (no doubling of one large vector).
    mem: Vec<Vec<Vec<Entry>>>,
    held: usize,
    budget: usize,
    tmp_root: PathBuf,
    spill: Option<tempfile::TempDir>,
}

/// One bucket in memory: its distinct keys and, for each, the rows that hold it.
///
/// A key here is the 16-byte public hash of the CSV key ([`key_hash`], both words
/// little-endian): the PSI runs on these hashes, so every key has the same size whatever its
/// columns. Two distinct keys collide with probability 2^-128 per pair.
#[derive(Debug, Default)]
pub struct Bucket {
    keys: Vec<[u8; 16]>,
    /// Rows of key `i`: `rows[starts[i]..starts[i + 1]]`.
    starts: Vec<u32>,
    rows: Vec<u64>,
}

impl Bucket {
    /// A bucket of the given distinct keys, key `i` on row `i` (for tests).
    #[cfg(test)]
    pub(crate) fn with_keys(keys: Vec<[u8; 16]>) -> Self {
        let n = u32::try_from(keys.len()).unwrap_or(u32::MAX);
        Bucket {
            starts: (0..=n).collect(),
            rows: (0..u64::from(n)).collect(),
            keys,
        }
    }

    /// The distinct keys, sorted by hash (not in input order; the protocols hide order).
    pub fn distinct(&self) -> Vec<&[u8]> {
        self.keys.iter().map(|k| &k[..]).collect()
    }

    /// Number of distinct keys.
    pub fn distinct_len(&self) -> usize {
        self.keys.len()
    }

    /// Number of rows in the bucket.
    pub fn rows_len(&self) -> usize {
        self.rows.len()
    }

    /// The rows whose key is distinct key `i` (empty past the end).
    pub fn rows_of(&self, i: usize) -> &[u64] {
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.rows[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Groups the entries of `parts` by hash: a radix pass on the top bits of the (uniform)
    /// hash, straight from the parts, then a sort of each small group.
    fn from_parts(parts: Vec<Vec<Entry>>) -> Result<Self, CliError> {
        let n: usize = parts.iter().map(Vec::len).sum();
        u32::try_from(n)
            .map_err(|_| CliError::input(format!("a bucket of {n} rows is over 2^32")))?;
        let sorted = if n < 256 {
            let mut v: Vec<Entry> = parts.concat();
            v.sort_unstable_by_key(Entry::sort_key);
            v
        } else {
            // About two entries per group; positions fit u32 (checked above).
            let bits = (usize::BITS - n.leading_zeros() - 2).min(20);
            let shift = 64 - bits;
            let group = |e: &Entry| usize::try_from(e.hi >> shift).unwrap_or(0);
            // next[g]: where group g's next entry goes; after the scatter, where it ends.
            let mut next = vec![0u32; 1 << bits];
            for e in parts.iter().flatten() {
                next[group(e)] += 1;
            }
            let mut sum = 0u32;
            for c in &mut next {
                let here = *c;
                *c = sum;
                sum += here;
            }
            let mut out = vec![Entry::default(); n];
            for part in parts {
                for e in &part {
                    let g = group(e);
                    out[next[g] as usize] = *e;
                    next[g] += 1;
                }
            }
            let mut from = 0usize;
            for &end in &next {
                let end = end as usize;
                sort_small(&mut out[from..end]);
                from = end;
            }
            out
        };
        let mut b = Bucket {
            keys: Vec::with_capacity(n),
            starts: Vec::with_capacity(n + 1),
            rows: Vec::with_capacity(n),
        };
        let mut prev = None;
        for (i, e) in sorted.iter().enumerate() {
            if prev != Some(e.sort_key()) {
                prev = Some(e.sort_key());
                let mut k = [0u8; 16];
                k[..8].copy_from_slice(&e.lo.to_le_bytes());
                k[8..].copy_from_slice(&e.hi.to_le_bytes());
                b.keys.push(k);
                // i < n, which fits u32 (checked above).
                b.starts.push(u32::try_from(i).unwrap_or(u32::MAX));
            }
            b.rows.push(e.row);
        }
        b.starts.push(u32::try_from(n).unwrap_or(u32::MAX));
        Ok(b)
    }
}

/// Sorts a group of the radix pass by hash: insertion sort for the usual few entries.
fn sort_small(v: &mut [Entry]) {
    if v.len() > 16 {
        v.sort_unstable_by_key(Entry::sort_key);
        return;
    }
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1].sort_key() > x.sort_key() {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |e| CliError::file(path.display().to_string(), e)
}

impl Buckets {
    fn new(opts: &IngestOptions) -> Self {
        let sub = opts.sub_buckets.max(1).next_power_of_two();
        Buckets {
            mem: vec![Vec::new(); sub],
            held: 0,
            budget: opts.memory_budget,
            tmp_root: opts.tmp_root.clone(),
            spill: None,
        }
    }

    #[inline]
    fn push(&mut self, e: Entry) {
        let sub = self.mem.len();
        // The remainder is below `sub`, a usize.
        let s = usize::try_from(e.lo % sub as u64).unwrap_or(0);
        let chunks = &mut self.mem[s];
        match chunks.last_mut() {
            Some(c) if c.len() < CHUNK_ENTRIES => c.push(e),
            _ => {
                let mut c = Vec::with_capacity(CHUNK_ENTRIES);
                c.push(e);
                chunks.push(c);
            }
        }
        self.held += ENTRY_BYTES;
    }

    fn file(&self, s: usize) -> Option<PathBuf> {
        self.spill.as_ref().map(|d| d.path().join(format!("s{s}")))
    }

    /// Over the budget: appends every sub-bucket to its file and frees the memory.
    fn maybe_spill(&mut self) -> Result<(), CliError> {
        if self.held <= self.budget {
            return Ok(());
        }
        if self.spill.is_none() {
            self.spill = Some(
                tempfile::Builder::new()
                    .prefix("obliv-buckets-")
                    .tempdir_in(&self.tmp_root)
                    .map_err(io(&self.tmp_root))?,
            );
        }
        let mut bytes = Vec::new();
        for s in 0..self.mem.len() {
            let v = std::mem::take(&mut self.mem[s]);
            if v.is_empty() {
                continue;
            }
            bytes.clear();
            for e in v.iter().flatten() {
                bytes.extend_from_slice(&e.hi.to_le_bytes());
                bytes.extend_from_slice(&e.lo.to_le_bytes());
                bytes.extend_from_slice(&e.row.to_le_bytes());
            }
            let path = self.file(s).unwrap_or_default();
            File::options()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(&bytes))
                .map_err(io(&path))?;
        }
        self.held = 0;
        Ok(())
    }

    /// Appends the entries of sub-bucket `s`'s file that `keep` accepts to `out`.
    fn read_file(
        &self,
        s: usize,
        out: &mut Vec<Entry>,
        keep: impl Fn(&Entry) -> bool,
    ) -> Result<(), CliError> {
        let Some(path) = self.file(s) else {
            return Ok(());
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(&path)(e)),
        };
        if bytes.len() % ENTRY_BYTES != 0 {
            return Err(CliError::input(format!(
                "bucket file {} is damaged",
                path.display()
            )));
        }
        let word = |c: &[u8], i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&c[i..i + 8]);
            u64::from_le_bytes(w)
        };
        out.extend(
            bytes
                .chunks_exact(ENTRY_BYTES)
                .map(|c| Entry {
                    hi: word(c, 0),
                    lo: word(c, 8),
                    row: word(c, 16),
                })
                .filter(|e| keep(e)),
        );
        Ok(())
    }

    /// Takes bucket `b` of `total` (a power of two): the keys whose first hash word is `b`
    /// modulo `total`. With `total` at most the sub-bucket count the bucket is the union of
    /// whole sub-buckets, whose memory is handed over (each bucket can be taken once);
    /// otherwise sub-bucket `b mod sub` is filtered.
    ///
    /// # Errors
    /// [`ExitKind::Input`](crate::ExitKind::Input) for I/O errors or a damaged bucket file.
    pub fn take(&mut self, b: usize, total: usize) -> Result<Bucket, CliError> {
        let sub = self.mem.len();
        let mut parts: Vec<Vec<Entry>> = Vec::new();
        if total <= sub {
            for s in (b % total..sub).step_by(total.max(1)) {
                let mut from_file = Vec::new();
                self.read_file(s, &mut from_file, |_| true)?;
                parts.push(from_file);
                parts.append(&mut self.mem[s]);
            }
        } else {
            let s = b % sub;
            let mine = |e: &Entry| e.lo % total as u64 == b as u64;
            let mut v: Vec<Entry> = self.mem[s]
                .iter()
                .flatten()
                .filter(|e| mine(e))
                .copied()
                .collect();
            self.read_file(s, &mut v, mine)?;
            parts.push(v);
        }
        Bucket::from_parts(parts)
    }

    /// Whether some entries went to temporary files.
    pub fn spilled(&self) -> bool {
        self.spill.is_some()
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
/// A simple input ([`InputShape::data_start`] set by [`ingest`]) is copied line by line (each
/// row as it was, with `\n` line ends, which is what the CSV writer would produce for a row
/// without quotes); any other through the `csv` reader and writer.
///
/// The rows are picked by row number, so the input must still be the file [`ingest`] read: its
/// BLAKE3 digest is recomputed during the pass and compared with [`InputShape::digest`] before
/// the output is put in place.
///
/// # Errors
/// [`ExitKind::Input`](crate::ExitKind::Input), also when the input has changed since [`ingest`] (nothing is written
/// then).
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
        .map_err(|e| CliError::file(format!("cannot create a file in {}", dir.display()), e))?;
    let mut out = BufWriter::with_capacity(1 << 20, tmp.as_file());
    let err = |e: csv::Error| CliError::file(format!("writing {}", output.display()), e);
    let ioerr = |e: std::io::Error| CliError::file(format!("writing {}", output.display()), e);
    {
        let mut wtr = csv::Writer::from_writer(&mut out);
        wtr.write_record(&shape.header).map_err(err)?;
        wtr.flush().map_err(ioerr)?;
    }
    let mut bar = Progress::new(progress, "writing output", "rows", shape.rows);
    let (written, digest) = match shape.data_start {
        Some(start) => copy_rows(input, shape, start, rows, &mut out, sort, &mut bar)?,
        None => rewrite_rows(input, shape, rows, &mut out, sort, &mut bar)?,
    };
    if shape.digest.is_some_and(|d| d != digest) {
        return Err(changed(input));
    }
    out.flush().map_err(ioerr)?;
    drop(out);
    tmp.persist(output)
        .map_err(|e| CliError::file(format!("cannot write {}", output.display()), e))?;
    bar.finish();
    Ok(written)
}

/// [`write_rows`] for a simple file: marked lines copied as they are. Returns the rows
/// written and the file's digest.
fn copy_rows(
    input: &Path,
    shape: &InputShape,
    start: u64,
    rows: &RowSet,
    out: &mut impl Write,
    sort: bool,
    bar: &mut Progress,
) -> Result<(u64, [u8; 32]), CliError> {
    let ioerr = |e: std::io::Error| CliError::file("writing output", e);
    let mut row = 0u64;
    let mut written = 0u64;
    let mut fields = Fields::new(shape.header.len(), &shape.key_cols);
    // With `sort`: (key, line) spans in one arena.
    let mut arena: Vec<u8> = Vec::new();
    let mut kept: Vec<(usize, usize, usize)> = Vec::new();
    let mut failed = None;
    let mut hasher = blake3::Hasher::new();
    let scan = fastcsv::for_each_line(
        input,
        start,
        |b| {
            hasher.update(b);
        },
        |_| {},
        |line| {
            if rows.contains(row) {
                written += 1;
                if sort {
                    let at = arena.len();
                    if !fields.key_into(line, &mut arena) {
                        return Ok(false);
                    }
                    let mid = arena.len();
                    arena.extend_from_slice(line);
                    kept.push((at, mid, arena.len()));
                } else if let Err(e) = out.write_all(line).and_then(|()| out.write_all(b"\n")) {
                    failed = Some(e);
                    return Ok(false);
                }
            }
            row += 1;
            if row.is_multiple_of(4096) {
                bar.set(row);
            }
            Ok(true)
        },
    )?;
    if let Some(e) = failed {
        return Err(ioerr(e));
    }
    if scan != Scan::Done || row != shape.rows {
        return Err(changed(input));
    }
    if sort {
        // Stable: rows of equal keys stay in input order.
        kept.sort_by(|a, b| arena[a.0..a.1].cmp(&arena[b.0..b.1]));
        for &(_, mid, end) in &kept {
            out.write_all(&arena[mid..end]).map_err(ioerr)?;
            out.write_all(b"\n").map_err(ioerr)?;
        }
    }
    bar.set(row);
    Ok((written, *hasher.finalize().as_bytes()))
}

/// [`write_rows`] through the `csv` parser and writer. Returns the rows written and the
/// file's digest.
fn rewrite_rows(
    input: &Path,
    shape: &InputShape,
    rows: &RowSet,
    out: &mut impl Write,
    sort: bool,
    bar: &mut Progress,
) -> Result<(u64, [u8; 32]), CliError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .buffer_capacity(1 << 20)
        .from_reader(open_hashing(input)?);
    let mut wtr = csv::Writer::from_writer(out);
    let err = |e: csv::Error| CliError::file("writing output", e);
    let mut kept: Vec<(Vec<u8>, csv::StringRecord)> = Vec::new();
    let mut written = 0;
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
    let digest = finish_digest(input, rdr)?;
    if digest != shape.digest.unwrap_or(digest) {
        return Err(changed(input));
    }
    if sort {
        kept.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, rec) in &kept {
            wtr.write_record(rec).map_err(err)?;
        }
    }
    wtr.flush()
        .map_err(|e| CliError::file("writing output", e))?;
    Ok((written, digest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn key_hash_is_the_documented_blake3_derive_key() {
        for key in [&b""[..], b"k1", &[0xab; 64], &[7; 65], &[1; 300]] {
            let h = blake3::derive_key("obliv-cli bucket v1", key);
            let a = u64::from_le_bytes(h[..8].try_into().unwrap());
            let b = u64::from_le_bytes(h[8..16].try_into().unwrap());
            assert_eq!(key_hash(key), (a, b));
        }
    }

    fn opts(dir: &Path, force_csv: bool) -> IngestOptions {
        let mut o = IngestOptions::new(Shard::default(), true, dir, ProgressMode::Off);
        o.force_csv = force_csv;
        o
    }

    /// Every bucket of `total`: key hash -> sorted rows, and which bucket held it.
    fn contents(b: &mut Buckets, total: usize) -> BTreeMap<Vec<u8>, (usize, Vec<u64>)> {
        let mut all = BTreeMap::new();
        for i in 0..total {
            let bucket = b.take(i, total).unwrap();
            assert_eq!(bucket.distinct_len(), bucket.distinct().len());
            for (k, key) in bucket.distinct().into_iter().enumerate() {
                let mut rows = bucket.rows_of(k).to_vec();
                rows.sort_unstable();
                assert!(all.insert(key.to_vec(), (i, rows)).is_none(), "a key twice");
            }
        }
        all
    }

    /// The plain computation: every record read by `csv`, its key, and the rows of each key.
    fn plain(path: &Path, keys: &[&str]) -> (u64, BTreeMap<Vec<u8>, Vec<u64>>) {
        let mut rdr = csv::Reader::from_path(path).unwrap();
        let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
        let cols: Vec<usize> = keys
            .iter()
            .map(|k| header.iter().position(|h| h == k).unwrap())
            .collect();
        let mut map: BTreeMap<Vec<u8>, Vec<u64>> = BTreeMap::new();
        let mut rows = 0;
        for rec in rdr.records() {
            let mut key = Vec::new();
            key_of(&rec.unwrap(), &cols, &mut key);
            let (lo, hi) = key_hash(&key);
            let mut h = lo.to_le_bytes().to_vec();
            h.extend_from_slice(&hi.to_le_bytes());
            map.entry(h).or_default().push(rows);
            rows += 1;
        }
        (rows, map)
    }

    const FILES: &[(&str, &str, bool)] = &[
        // (contents, key columns, simple)
        ("id,x\nk1,1\nk2,2\nk1,3\n", "id", true),
        ("id,x\r\nk1,1\r\n\r\nk2,2\r\nk1,3", "id", true),
        ("id\n\nk1\n\n\nk2\nk1\n\n", "id", true),
        ("a,b,c\n1,2,3\n1,2,4\n2,2,3\n1,2,3\n", "c,a", true),
        ("a,b,c\n1,2,3\n1,2,4\n2,2,3\n1,2,3\n", "b", true),
        ("a,b\n,\n,x\n ,\nä,ö\n", "a,b", true),
        ("\"id\",x\nk1,1\nk2,2\n", "id", true),
        ("\u{feff}id,x\nk1,1\nk2,2\n", "id", true),
        (
            "id,x\n\"k,1\",1\nk1,2\n\"k\"\"q\",3\n\"k\"\"q\",4\n",
            "id",
            false,
        ),
        ("id,x\nk1,\"multi\nline\"\nk2,2\n", "id", false),
        ("id,x\rk1,1\rk2,2\r", "id", false),
        ("id,x\nk1,1\rk2,2\n", "id", false),
    ];

    #[test]
    fn byte_scanner_and_csv_parser_give_the_same_buckets_and_output() {
        let dir = tempfile::tempdir().unwrap();
        for (n, &(body, keys, simple)) in FILES.iter().enumerate() {
            let input = dir.path().join(format!("in{n}.csv"));
            std::fs::write(&input, body).unwrap();
            let keys: Vec<String> = keys.split(',').map(String::from).collect();
            let (fast, mut fb) = ingest(&input, &keys, &opts(dir.path(), false)).unwrap();
            let (slow, mut sb) = ingest(&input, &keys, &opts(dir.path(), true)).unwrap();
            assert_eq!(fast.data_start.is_some(), simple, "file {n}");
            assert_eq!(slow.data_start, None);
            assert_eq!(
                (fast.rows, fast.shard_rows, fast.digest, &fast.header),
                (slow.rows, slow.shard_rows, slow.digest, &slow.header),
                "file {n}"
            );
            assert_eq!(fast.digest, Some(*blake3::hash(body.as_bytes()).as_bytes()));
            let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            let (rows, want) = plain(&input, &key_refs);
            assert_eq!(fast.rows, rows, "file {n}");
            for total in [1, 2, 4] {
                let (f, s) = (contents(&mut fb, total), contents(&mut sb, total));
                assert_eq!(f, s, "file {n}");
                let got: BTreeMap<Vec<u8>, Vec<u64>> =
                    f.into_iter().map(|(k, (_, r))| (k, r)).collect();
                assert_eq!(got, want, "file {n}");
                // Taken buckets are gone; read the file again for the next count.
                (_, fb) = ingest(&input, &keys, &opts(dir.path(), false)).unwrap();
                (_, sb) = ingest(&input, &keys, &opts(dir.path(), true)).unwrap();
            }
            // The output, both ways, every other row marked, in input order and sorted.
            let mut set = RowSet::new(rows);
            for r in (0..rows).step_by(2) {
                set.insert(r);
            }
            for sort in [false, true] {
                let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
                let wa = write_rows(&input, &fast, &set, &a, sort, ProgressMode::Off).unwrap();
                let wb = write_rows(&input, &slow, &set, &b, sort, ProgressMode::Off).unwrap();
                assert_eq!(wa, wb);
                assert_eq!(wa, rows.div_ceil(2));
                assert_eq!(
                    std::fs::read_to_string(&a).unwrap(),
                    std::fs::read_to_string(&b).unwrap(),
                    "file {n}, sort {sort}"
                );
            }
        }
    }

    #[test]
    fn malformed_files_get_the_parsers_errors() {
        let dir = tempfile::tempdir().unwrap();
        for body in [
            &b"id,x\nk1,1\nk2\n"[..],
            b"id,x\nk1,1\nk2,2,3\n",
            b"id,x\nk1,1\nk\xff,2\n",
            b"id\nk1\nk2,2\n",
        ] {
            let input = dir.path().join("bad.csv");
            std::fs::write(&input, body).unwrap();
            let keys = ["id".to_string()];
            let fast = ingest(&input, &keys, &opts(dir.path(), false)).unwrap_err();
            let slow = ingest(&input, &keys, &opts(dir.path(), true)).unwrap_err();
            assert_eq!(fast.to_string(), slow.to_string());
            assert!(fast.to_string().contains("line 3"), "{fast}");
        }
    }

    #[test]
    fn spilled_refined_and_sharded_buckets_keep_equal_keys_together() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.csv");
        let mut body = String::from("id,x\n");
        for i in 0..3000 {
            body += &format!("k{},{i}\n", i % 1100);
        }
        std::fs::write(&input, body).unwrap();
        let keys = ["id".to_string()];
        let (shape, mut mem) = ingest(&input, &keys, &opts(dir.path(), false)).unwrap();
        assert!(!mem.spilled());
        let want = contents(&mut mem, 8);
        assert_eq!((shape.rows, want.len()), (3000, 1100));
        for (k, (b, _)) in &want {
            let lo = u64::from_le_bytes(k[..8].try_into().unwrap());
            assert_eq!(lo % 8, *b as u64);
        }
        // A tiny budget (every batch goes to files) and four sub-buckets refined into 8 and 16.
        for (budget, sub) in [(0, 256), (0, 4), (1 << 30, 4), (5000, 2)] {
            for total in [8, 16] {
                let mut o = opts(dir.path(), false);
                o.memory_budget = budget;
                o.sub_buckets = sub;
                let (_, mut b) = ingest(&input, &keys, &o).unwrap();
                assert_eq!(b.spilled(), budget < 1 << 30);
                let got = contents(&mut b, total);
                let strip = |m: &BTreeMap<Vec<u8>, (usize, Vec<u64>)>| {
                    m.iter()
                        .map(|(k, (_, r))| (k.clone(), r.clone()))
                        .collect::<Vec<_>>()
                };
                assert_eq!(strip(&got), strip(&want), "budget {budget} sub {sub}");
                assert!(got.iter().all(|(k, (b, _))| {
                    u64::from_le_bytes(k[..8].try_into().unwrap()) % total as u64 == *b as u64
                }));
            }
        }
        // Shards: disjoint, together everything, counted.
        let mut union = BTreeMap::new();
        let mut rows = 0;
        for i in 0..3 {
            let mut o = opts(dir.path(), false);
            o.shard = Shard { index: i, count: 3 };
            let (s, mut b) = ingest(&input, &keys, &o).unwrap();
            assert_eq!(s.rows, 3000);
            rows += s.shard_rows;
            for (k, v) in contents(&mut b, 8) {
                let (_, hi) = (0, u64::from_le_bytes(k[8..].try_into().unwrap()));
                assert_eq!(hi % 3, i);
                assert!(union.insert(k, v).is_none());
            }
        }
        assert_eq!(rows, 3000);
        assert_eq!(union, want);
    }

    #[test]
    fn output_keeps_marked_rows() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.csv");
        let mut body = String::from("id,x\n");
        for i in 0..500 {
            body += &format!("k{},{i}\n", i % 200);
        }
        std::fs::write(&input, body).unwrap();
        let (shape, _) = ingest(&input, &["id".to_string()], &opts(dir.path(), false)).unwrap();
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

    /// Field values that a separator-joined key confuses: separators, quotes, commas, empty
    /// fields, control bytes, and values that look like two fields joined.
    const TRICKY: &[&str] = &[
        "",
        "a",
        "b",
        "\u{1f}",
        "a\u{1f}b",
        "b\u{1f}c",
        "\u{0}",
        "\u{0}\u{1}",
        "\u{1}",
        "\u{0}\u{ff}",
        "\t",
        " ",
        ",",
        "\"",
        "a,b",
        "x\ny",
        "\r",
    ];

    /// Writes a CSV (header `k1,v,k2,k3`) with one row per triple of `values`, by the `csv`
    /// writer (which quotes what needs it); returns the triples in row order.
    fn tricky_file(path: &Path, values: &[&str]) -> Vec<[String; 3]> {
        let mut w = csv::Writer::from_path(path).unwrap();
        w.write_record(["k1", "v", "k2", "k3"]).unwrap();
        let mut rows = Vec::new();
        for a in values {
            for b in values {
                for c in values {
                    w.write_record([*a, "val", *b, *c]).unwrap();
                    rows.push([a.to_string(), b.to_string(), c.to_string()]);
                }
            }
        }
        w.flush().unwrap();
        rows
    }

    /// Rows grouped by their key's public hash, on both reading paths, equal rows grouped by
    /// their key columns' values: the key is an injective function of the key columns, in
    /// every column position, whatever bytes the fields hold.
    #[test]
    fn keys_are_injective_on_the_byte_scanner_and_the_csv_parser() {
        let dir = tempfile::tempdir().unwrap();
        let simple: Vec<&str> = TRICKY
            .iter()
            .copied()
            .filter(|v| !v.contains([',', '"', '\n', '\r']))
            .collect();
        for (name, values, fast_path) in [("all", TRICKY, false), ("simple", &simple[..], true)] {
            let input = dir.path().join(format!("{name}.csv"));
            let tuples = tricky_file(&input, values);
            for keys in [
                &["k1", "k2", "k3"][..],
                &["k3", "k1"],
                &["k2"],
                &["k1", "k2"],
            ] {
                let cols: Vec<usize> = keys
                    .iter()
                    .map(|k| ["k1", "k2", "k3"].iter().position(|c| c == k).unwrap())
                    .collect();
                // Rows by the values of their key columns.
                let mut want: BTreeMap<Vec<&str>, Vec<u64>> = BTreeMap::new();
                for (r, t) in tuples.iter().enumerate() {
                    let vals = cols.iter().map(|&c| t[c].as_str()).collect();
                    want.entry(vals).or_default().push(r as u64);
                }
                let want: std::collections::BTreeSet<Vec<u64>> = want.into_values().collect();
                let keys: Vec<String> = keys.iter().map(|k| (*k).to_string()).collect();
                for force_csv in [false, true] {
                    let (shape, mut b) =
                        ingest(&input, &keys, &opts(dir.path(), force_csv)).unwrap();
                    assert_eq!(
                        shape.data_start.is_some(),
                        fast_path && !force_csv,
                        "{name}"
                    );
                    assert_eq!(usize::try_from(shape.rows).unwrap(), tuples.len());
                    let got: std::collections::BTreeSet<Vec<u64>> =
                        contents(&mut b, 1).into_values().map(|(_, r)| r).collect();
                    assert_eq!(got, want, "{name}, keys {keys:?}, csv parser {force_csv}");
                }
                // And `read_keys` (ub-psi) decodes every key back to its columns' values.
                let kd = crate::csvio::read_keys(&input, &keys).unwrap();
                for (r, t) in tuples.iter().enumerate() {
                    let key = &kd.distinct[kd.row_key[r] as usize];
                    let fields = crate::csvio::decode_key(key).unwrap();
                    let vals: Vec<&[u8]> = cols.iter().map(|&c| t[c].as_bytes()).collect();
                    assert_eq!(fields, vals, "{name}, row {r}");
                }
            }
        }
    }

    /// Two rows that a 0x1F join made one key: (`a\x1fb`, `c`) and (`a`, `b\x1fc`).
    #[test]
    fn joined_looking_fields_do_not_collide() {
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        std::fs::write(&pa, "id,region\na\u{1f}b,c\n").unwrap();
        std::fs::write(&pb, "id,region\na,b\u{1f}c\n").unwrap();
        let keys = ["id".to_string(), "region".to_string()];
        for force_csv in [false, true] {
            let (_, mut a) = ingest(&pa, &keys, &opts(dir.path(), force_csv)).unwrap();
            let (_, mut b) = ingest(&pb, &keys, &opts(dir.path(), force_csv)).unwrap();
            let (ka, kb) = (contents(&mut a, 1), contents(&mut b, 1));
            assert_eq!((ka.len(), kb.len()), (1, 1));
            assert_ne!(ka.keys().next(), kb.keys().next(), "csv parser {force_csv}");
        }
    }

    /// A file edited between ingest and output, with the same number of rows (and, for the
    /// byte scanner, the same length): the output pass refuses it with exit code 3 and
    /// leaves no output file.
    #[test]
    fn output_refuses_an_input_changed_since_ingest() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.csv");
        for (before, after) in [
            ("id,x\nk1,1\nk2,2\nk3,3\n", "id,x\nk1,1\nk9,2\nk3,3\n"),
            ("id,x\n\"k,1\",1\nk2,2\n", "id,x\n\"k,1\",1\nk2,3\n"),
        ] {
            for force_csv in [false, true] {
                std::fs::write(&input, before).unwrap();
                let (shape, _) =
                    ingest(&input, &["id".into()], &opts(dir.path(), force_csv)).unwrap();
                let mut set = RowSet::new(shape.rows);
                set.insert(1);
                let out = dir.path().join("out.csv");
                let _ = std::fs::remove_file(&out);
                // Unchanged: written.
                assert_eq!(
                    write_rows(&input, &shape, &set, &out, false, ProgressMode::Off).unwrap(),
                    1
                );
                std::fs::remove_file(&out).unwrap();
                std::fs::write(&input, after).unwrap();
                for sort in [false, true] {
                    let e = write_rows(&input, &shape, &set, &out, sort, ProgressMode::Off)
                        .unwrap_err();
                    assert_eq!(e.exit_code(), 3, "{e}");
                    assert!(e.to_string().contains("changed"), "{e}");
                    assert!(!out.exists());
                }
            }
        }
    }
}
