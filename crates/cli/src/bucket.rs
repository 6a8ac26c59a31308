//! Bucketing for inputs larger than memory.
//!
//! A party reads its CSV once ([`ingest`]): it validates it (all input errors surface here,
//! before anything that depends on the input is sent), counts the rows, and files every key, as the 128-bit
//! public hash [`key_hash`] with its row number, into [`Buckets`]: sub-buckets by the first
//! hash word, in memory up to a budget and appended to temporary files beyond it. The
//! connection and the bucket driver are set up meanwhile; the job handshake waits for this
//! pass.
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
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::csvio::{
    Bounded, HashingReader, changed, describe, finish_digest, keyed_reader, open_hashing,
    push_key_field, record_read,
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
    /// Directory of the anonymous temporary bucket file (unlinked at once), when the keys do
    /// not fit the budget.
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

/// Where [`read_key_columns`] puts the keys it reads: each row's key is appended to the
/// sink's arena, then handed over by [`KeySink::push`].
pub(crate) trait KeySink {
    /// The buffer the next key is appended to.
    fn arena(&mut self) -> &mut Vec<u8>;
    /// Row `row`'s key was appended to the arena from `at` on.
    fn push(&mut self, row: u64, at: usize) -> Result<(), CliError>;
}

impl KeySink for Sink {
    #[inline]
    fn arena(&mut self) -> &mut Vec<u8> {
        &mut self.arena
    }
    #[inline]
    fn push(&mut self, row: u64, at: usize) -> Result<(), CliError> {
        Sink::push(self, row, at)
    }
}

/// Reads the input once: checks the header, the key columns, every row's field count and
/// UTF-8, counts the rows (and those of the shard), hashes the file when asked, and files every
/// key of the shard into buckets (in memory up to the budget, in temporary files beyond).
///
/// Simple files (no quotes, `\n` or `\r\n` line ends) are read by a byte scanner
/// (`fastcsv`); any other file, or a malformed one, by the `csv` parser, which also words
/// the errors. Both give the same rows and keys. The same reader (`read_key_columns`) gives
/// `ub-psi` its keys ([`crate::csvio::read_keys`]).
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) if `keys` is empty;
/// [`ExitKind::Input`](crate::ExitKind::Input) for a missing or unreadable file, an empty
/// file (no header), a key column that the header lacks, a row with the wrong number of
/// fields (with its line number), bad UTF-8, a bucket file that cannot be written.
pub fn ingest(
    path: &Path,
    keys: &[String],
    opts: &IngestOptions,
) -> Result<(InputShape, Buckets), CliError> {
    let (mut shape, mut sink) =
        read_key_columns(path, keys, opts.progress, opts.force_csv, || {
            Sink::new(opts)
        })?;
    sink.flush()?;
    shape.shard_rows = sink.owned;
    Ok((shape, sink.buckets))
}

/// The one reader of key columns, for every subcommand that reads an input's keys (`psi`
/// through [`ingest`], `ub-psi` through [`crate::csvio::read_keys`]): checks the header, the
/// key columns, every row's field count and UTF-8, hashes the whole file, and hands every
/// row's encoded key ([`push_key_field`]) to a sink made by `new_sink`.
///
/// Simple files (no quotes, `\n` or `\r\n` line ends) are read by a byte scanner
/// (`fastcsv`); any other file, or a malformed one, by the `csv` parser, which also
/// words the errors, into a fresh sink (the first one's partial keys are dropped). Both give
/// the same rows and keys. The shape's `shard_rows` is the row count; the caller sets it.
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) if `keys` is empty;
/// [`ExitKind::Input`](crate::ExitKind::Input) for a missing or unreadable file, an empty
/// file (no header), a key column that the header lacks, a row with the wrong number of
/// fields (with its line number), bad UTF-8, or what the sink refuses.
pub(crate) fn read_key_columns<S: KeySink>(
    path: &Path,
    keys: &[String],
    progress: ProgressMode,
    force_csv: bool,
    mut new_sink: impl FnMut() -> S,
) -> Result<(InputShape, S), CliError> {
    if keys.is_empty() {
        return Err(CliError::usage("--keys names no column"));
    }
    // One open for the whole read: the header, then the scan from the start, and the `csv`
    // parser from the start again if the scanner gives up.
    let mut file = File::open(path)
        .map_err(|e| CliError::file(format!("cannot open {}", path.display()), e))?;
    let rewind = |file: &mut File| {
        file.seek(SeekFrom::Start(0))
            .map(|_| ())
            .map_err(|e| CliError::file(path.display().to_string(), e))
    };
    let meta = file
        .metadata()
        .map_err(|e| CliError::file(path.display().to_string(), e))?;
    if !meta.is_file() {
        return Err(CliError::input(format!(
            "{} is not a regular file (a directory, pipe or device): obliv reads its input \
             twice, to check it and to write the matching rows; give a CSV file",
            path.display()
        )));
    }
    let bytes = meta.len();
    let (rdr, header, key_cols) = keyed_reader(path, Bounded::new(&mut file), keys)?;
    let data_start = rdr.position().byte();
    drop(rdr);
    rewind(&mut file)?;
    if !force_csv {
        let mut sink = new_sink();
        let mut hasher = blake3::Hasher::new();
        let mut bar = Progress::new(progress, "reading input", "bytes", bytes);
        let mut fields = Fields::new(header.len(), &key_cols);
        let mut rows = 0u64;
        let scan = fastcsv::for_each_line(
            path,
            &mut file,
            data_start,
            |b| {
                hasher.update(b);
            },
            |at| bar.set(at),
            |line| {
                let arena = sink.arena();
                let at = arena.len();
                if !fields.key_into(line, arena) {
                    return Ok(false);
                }
                sink.push(rows, at)?;
                rows += 1;
                Ok(true)
            },
        )?;
        if scan == Scan::Done {
            bar.set(bytes);
            bar.finish();
            let shape = InputShape {
                header,
                key_cols,
                rows,
                shard_rows: rows,
                bytes,
                digest: Some(*hasher.finalize().as_bytes()),
                data_start: Some(data_start),
            };
            return Ok((shape, sink));
        }
        // Not simple: start over with the general parser.
        rewind(&mut file)?;
    }
    read_key_columns_csv(path, &mut file, keys, progress, bytes, new_sink())
}

/// [`read_key_columns`] with the `csv` parser.
fn read_key_columns_csv<S: KeySink>(
    path: &Path,
    file: &mut File,
    keys: &[String],
    progress: ProgressMode,
    bytes: u64,
    mut sink: S,
) -> Result<(InputShape, S), CliError> {
    let (mut rdr, header, key_cols) =
        keyed_reader(path, Bounded::new(HashingReader::new(file)), keys)?;
    let mut record = csv::StringRecord::new();
    let mut rows = 0u64;
    let mut bar = Progress::new(progress, "reading input", "bytes", bytes);
    loop {
        match rdr.read_record(&mut record) {
            Ok(true) => {
                record_read(&mut rdr);
                let arena = sink.arena();
                let at = arena.len();
                append_key(&record, &key_cols, arena);
                sink.push(rows, at)?;
                rows += 1;
                bar.set(record.position().map_or(0, csv::Position::byte));
            }
            Ok(false) => break,
            Err(e) => return Err(describe(path, &e)),
        }
    }
    bar.set(bytes);
    bar.finish();
    // The csv reader stops at the last record; the digest covers whatever follows it too.
    let digest = finish_digest(path, rdr)?;
    let shape = InputShape {
        header,
        key_cols,
        rows,
        shard_rows: rows,
        bytes,
        digest: Some(digest),
        data_start: None,
    };
    Ok((shape, sink))
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
    /// The key as a bucket holds it: both hash words, little-endian, `lo` first (so that
    /// `u128::from_le_bytes` orders keys by `(hi, lo)`).
    fn key(&self) -> [u8; 16] {
        (u128::from(self.hi) << 64 | u128::from(self.lo)).to_le_bytes()
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
    spill: Option<Spill>,
}

/// The entries that did not fit the memory budget: one anonymous temporary file (created
/// with mode 0600 and unlinked at once, so it never has a name another user could open and
/// nothing of it survives the process, however it ends: Ctrl-C, a kill or a panic), and
/// where each sub-bucket's runs of entries lie in it.
#[derive(Debug)]
struct Spill {
    file: File,
    /// Per sub-bucket, the `(offset, length)` of each run of its entries, in bytes.
    runs: Vec<Vec<(u64, u64)>>,
    /// Bytes written so far (where the next run goes).
    end: u64,
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

    /// Moves the distinct keys out (in the order of [`Bucket::distinct`]), leaving the rows
    /// of each key in place: afterwards [`Bucket::distinct_len`] is 0 while
    /// [`Bucket::rows_of`] still answers by the old key numbers.
    pub fn take_keys(&mut self) -> Vec<[u8; 16]> {
        std::mem::take(&mut self.keys)
    }

    /// Groups the entries of `parts` by hash: a radix pass on the top bits of the (uniform)
    /// hash, straight from the parts into the bucket's own key and row vectors, a sort of
    /// each small group, then the duplicates folded in place (no intermediate copy of the
    /// entries: at 2^20 rows that is 24 MiB less memory to fault in).
    fn from_parts(parts: Vec<Vec<Entry>>) -> Result<Self, CliError> {
        let n: usize = parts.iter().map(Vec::len).sum();
        let n32 = u32::try_from(n)
            .map_err(|_| CliError::input(format!("a bucket of {n} rows is over 2^32")))?;
        // About two entries per group (one group below 256 entries); positions fit u32.
        let bits = if n < 256 {
            0
        } else {
            (usize::BITS - n.leading_zeros() - 2).min(20)
        };
        let group = |e: &Entry| {
            if bits == 0 {
                0
            } else {
                usize::try_from(e.hi >> (64 - bits)).unwrap_or(0)
            }
        };
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
        // Zero-filled vectors of plain integers come from the allocator already zeroed
        // (`calloc`): no pass over the memory before the scatter writes it.
        let mut keys = vec![[0u8; 16]; n];
        let mut rows = vec![0u64; n];
        for part in parts {
            for e in &part {
                let g = group(e);
                let at = next[g] as usize;
                keys[at] = e.key();
                rows[at] = e.row;
                next[g] += 1;
            }
        }
        let mut from = 0usize;
        for &end in &next {
            let end = end as usize;
            sort_group(&mut keys[from..end], &mut rows[from..end]);
            from = end;
        }
        // Fold equal keys (now adjacent): key i's rows are rows[starts[i]..starts[i + 1]].
        let mut starts = Vec::with_capacity(n + 1);
        let mut distinct = 0usize;
        for i in 0..n {
            if i == 0 || keys[i] != keys[distinct - 1] {
                keys[distinct] = keys[i];
                distinct += 1;
                // i < n, which fits u32 (checked above).
                starts.push(u32::try_from(i).unwrap_or(u32::MAX));
            }
        }
        starts.push(n32);
        keys.truncate(distinct);
        Ok(Bucket { keys, starts, rows })
    }
}

/// Sorts one group of the radix pass by key (as `u128`, the hash's order), carrying the
/// rows along: insertion sort for the usual few entries.
fn sort_group(keys: &mut [[u8; 16]], rows: &mut [u64]) {
    let ord = |k: &[u8; 16]| u128::from_le_bytes(*k);
    if keys.len() > 16 {
        let mut v: Vec<([u8; 16], u64)> = keys.iter().copied().zip(rows.iter().copied()).collect();
        v.sort_unstable_by_key(|(k, _)| ord(k));
        for ((k, r), (dk, dr)) in v.into_iter().zip(keys.iter_mut().zip(rows.iter_mut())) {
            *dk = k;
            *dr = r;
        }
        return;
    }
    for i in 1..keys.len() {
        let (k, r) = (keys[i], rows[i]);
        let mut j = i;
        while j > 0 && ord(&keys[j - 1]) > ord(&k) {
            keys[j] = keys[j - 1];
            rows[j] = rows[j - 1];
            j -= 1;
        }
        keys[j] = k;
        rows[j] = r;
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |e| CliError::file(format!("temporary bucket file in {}", path.display()), e)
}

/// A sub-bucket's spilled entries do not fit this machine's address space.
fn too_large(bytes: u64) -> CliError {
    CliError::input(format!(
        "a bucket of {bytes} bytes does not fit in memory: use --shard"
    ))
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

    /// Over the budget: appends every sub-bucket to its file and frees the memory.
    fn maybe_spill(&mut self) -> Result<(), CliError> {
        if self.held <= self.budget {
            return Ok(());
        }
        if self.spill.is_none() {
            self.spill = Some(Spill {
                file: tempfile::tempfile_in(&self.tmp_root).map_err(io(&self.tmp_root))?,
                runs: vec![Vec::new(); self.mem.len()],
                end: 0,
            });
        }
        let Some(spill) = &mut self.spill else {
            return Ok(());
        };
        let path = &self.tmp_root;
        spill
            .file
            .seek(SeekFrom::Start(spill.end))
            .map_err(io(path))?;
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
            spill.file.write_all(&bytes).map_err(io(path))?;
            let len = bytes.len() as u64;
            spill.runs[s].push((spill.end, len));
            spill.end += len;
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
        let Some(spill) = &self.spill else {
            return Ok(());
        };
        let runs = spill.runs.get(s).map_or(&[][..], Vec::as_slice);
        let total: u64 = runs.iter().map(|r| r.1).sum();
        let mut bytes = vec![0u8; usize::try_from(total).map_err(|_| too_large(total))?];
        let mut at = 0usize;
        let mut file = &spill.file;
        for &(offset, len) in runs {
            let len = usize::try_from(len).map_err(|_| too_large(total))?;
            file.seek(SeekFrom::Start(offset))
                .and_then(|_| file.read_exact(&mut bytes[at..at + len]))
                .map_err(io(&self.tmp_root))?;
            at += len;
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

mod write;
pub use write::{RowSet, check_output, check_writable, temp_beside, write_rows};

#[cfg(test)]
mod tests;
