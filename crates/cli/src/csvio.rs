//! The CSV plumbing under the one key reader and the one row writer ([`crate::bucket`]):
//! the key encoding, opening a file at its header with the key columns found, hashing what is
//! read, wording the `csv` parser's errors, and `ub-psi`'s view of its keys ([`read_keys`]).
//!
//! Keys are read as UTF-8 text and encoded as bytes by [`push_key_field`], one key column after
//! the other (the same encoding on every path: the byte scanner, the `csv` parser, `ub-psi` and
//! `merge`). Outputs are written to a temporary file beside the target and renamed into place
//! only on success, so a partial file is never left under the output name.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::bucket::{InputShape, KeySink, read_key_columns};
use crate::error::CliError;
use crate::progress::ProgressMode;

/// What ends every field of an encoded key (see [`push_key_field`]).
pub const FIELD_END: [u8; 2] = [0x00, 0x01];
/// What a zero byte inside a field is written as.
const ZERO_ESCAPE: [u8; 2] = [0x00, 0xff];

/// Appends one key column's value to the encoded key `out`: the field's bytes with every zero
/// byte written as `00 FF`, then [`FIELD_END`] (`00 01`).
///
/// A key is the concatenation of its columns' fields so encoded. The encoding is injective on
/// tuples of byte strings of any length, the number of columns included: reading from the
/// start, `00 FF` is a zero byte of the field, `00 01` ends it, and no other byte follows a
/// zero, so every field (and where the next one starts) is read back unambiguously; a
/// single-column key is encoded the same way, so it never equals a multi-column one. The
/// separator, quote, comma, empty and control-byte cases that joining with a separator got
/// wrong all decode to their own fields. It also keeps the order: comparing encoded keys
/// byte by byte orders them as the tuples of their fields (each field compared as bytes, a
/// field before its extensions), because `00 01` sorts below every byte that may follow a
/// field's prefix, `00 FF` included. So `--sort` and `merge --sort` sort by the key columns.
#[inline]
pub fn push_key_field(out: &mut Vec<u8>, field: &[u8]) {
    let mut rest = field;
    while let Some(i) = memchr::memchr(0, rest) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(&ZERO_ESCAPE);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&FIELD_END);
}

/// The fields of an encoded key, or `None` if `key` is not an encoding (the inverse of
/// [`push_key_field`], for tests and diagnostics).
pub fn decode_key(key: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut fields = Vec::new();
    let mut cur = Vec::new();
    let mut i = 0;
    while i < key.len() {
        if key[i] == 0 {
            match key.get(i + 1) {
                Some(0xff) => cur.push(0),
                Some(0x01) => fields.push(std::mem::take(&mut cur)),
                _ => return None,
            }
            i += 2;
        } else {
            cur.push(key[i]);
            i += 1;
        }
    }
    cur.is_empty().then_some(fields)
}

/// The keys of one input file.
#[derive(Debug, Clone)]
pub struct KeyedInput {
    /// The file's shape: header, key columns, rows, size, digest, where the data starts.
    pub shape: InputShape,
    /// The distinct keys, in order of first appearance.
    pub distinct: KeyArena,
    /// For every data row, the index of its key in `distinct` (empty from
    /// [`read_distinct_keys`], which does not keep it).
    pub row_key: Vec<u32>,
    /// BLAKE3 of the whole file as it was read; [`crate::bucket::write_rows`] refuses a file
    /// that no longer has it.
    pub digest: [u8; 32],
}

/// A reader that hashes every byte that passes through it (exactly once, whatever buffers
/// sit above it).
pub(crate) struct HashingReader<R> {
    pub(crate) inner: R,
    pub(crate) hasher: blake3::Hasher,
}

impl<R> HashingReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: blake3::Hasher::new(),
        }
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Most bytes one CSV record may span (its line, or the lines of a record with quoted line
/// breaks), header included: 16 MiB. A longer record (a file without line ends, or a quote
/// that is never closed, which makes the rest of the file one field) is refused before it is
/// buffered, instead of growing one buffer to the size of the file.
pub const MAX_RECORD_BYTES: u64 = 16 << 20;

/// A reader under a `csv` reader that refuses to read more than [`MAX_RECORD_BYTES`] past the
/// start of the record being parsed, which the loop reading the records reports
/// ([`Bounded::record_ends`]) after every record. The `csv` reader buffers at most its buffer
/// capacity ahead, so a record of up to `MAX_RECORD_BYTES` less that capacity always passes,
/// and the memory a record takes is bounded whatever the file holds.
#[derive(Debug)]
pub(crate) struct Bounded<R> {
    pub(crate) inner: R,
    read: u64,
    record_start: u64,
}

impl<R> Bounded<R> {
    /// `inner`, read from its start (offset 0).
    pub(crate) fn new(inner: R) -> Self {
        Bounded {
            inner,
            read: 0,
            record_start: 0,
        }
    }

    /// The record before offset `at` (the `csv` reader's position) is parsed: the next one
    /// starts there.
    pub(crate) fn record_ends(&mut self, at: u64) {
        self.record_start = self.record_start.max(at);
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.read.saturating_sub(self.record_start) >= MAX_RECORD_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the record that starts at byte {} is longer than {} MiB (a line without \
                     its end, or a quote that is never closed?)",
                    self.record_start,
                    MAX_RECORD_BYTES >> 20
                ),
            ));
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Tells the [`Bounded`] reader under `rdr` that the record just read has ended.
pub(crate) fn record_read<R: Read>(rdr: &mut csv::Reader<Bounded<R>>) {
    let at = rdr.position().byte();
    rdr.get_mut().record_ends(at);
}

/// Opens `path` for reading through a [`HashingReader`], with records [`Bounded`].
pub(crate) fn open_hashing(path: &Path) -> Result<Bounded<HashingReader<File>>, CliError> {
    let f = File::open(path)
        .map_err(|e| CliError::file(format!("cannot open {}", path.display()), e))?;
    Ok(Bounded::new(HashingReader::new(f)))
}

/// Finishes the digest of a file read through `rdr`: hashes what follows the last record.
pub(crate) fn finish_digest<R: Read>(
    path: &Path,
    rdr: csv::Reader<Bounded<HashingReader<R>>>,
) -> Result<[u8; 32], CliError> {
    let mut inner = rdr.into_inner().inner;
    std::io::copy(&mut inner, &mut std::io::sink())
        .map_err(|e| CliError::file(path.display().to_string(), e))?;
    Ok(*inner.hasher.finalize().as_bytes())
}

/// The error when the input's digest at output time differs from the one at ingest.
pub(crate) fn changed(path: &Path) -> CliError {
    CliError::input(format!(
        "{} changed since it was read (its BLAKE3 digest differs): the rows of the \
         intersection cannot be selected by row number, nothing was written",
        path.display()
    ))
}

impl KeyedInput {
    /// Number of data rows.
    pub fn rows(&self) -> usize {
        usize::try_from(self.shape.rows).unwrap_or(usize::MAX)
    }
}

pub(crate) fn open(path: &Path) -> Result<CsvReader, CliError> {
    let f = File::open(path)
        .map_err(|e| CliError::file(format!("cannot open {}", path.display()), e))?;
    Ok(csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(Bounded::new(BufReader::with_capacity(1 << 20, f))))
}

pub(crate) fn describe(path: &Path, e: &csv::Error) -> CliError {
    let at = e
        .position()
        .map(|p| format!(" at line {}", p.line()))
        .unwrap_or_default();
    let what = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            format!("a row has {len} fields where the header has {expected_len}")
        }
        csv::ErrorKind::Utf8 { .. } => "the file is not valid UTF-8".to_string(),
        _ => e.to_string(),
    };
    CliError::input(format!("{}{at}: {what}", path.display()))
}

/// A CSV reader positioned after the header, the header, and the key columns' indices.
pub(crate) type Keyed<R> = (csv::Reader<R>, Vec<String>, Vec<usize>);

/// A CSV reader over a buffered file, its records [`Bounded`].
pub(crate) type CsvReader = csv::Reader<Bounded<BufReader<File>>>;

/// Opens `path`, reads its header and finds the key columns `keys` in it.
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) if `keys` is empty; [`ExitKind::Input`](crate::ExitKind::Input) for a missing or unreadable
/// file, an empty file (no header) or a key column that the header lacks.
pub(crate) fn open_keyed(
    path: &Path,
    keys: &[String],
) -> Result<(CsvReader, Vec<String>, Vec<usize>), CliError> {
    if keys.is_empty() {
        return Err(CliError::usage("--keys names no column"));
    }
    let rdr = open(path)?;
    with_key_columns(path, rdr, keys)
}

/// As [`open_keyed`], on an already opened `reader` of `path` (buffered by the CSV reader).
pub(crate) fn keyed_reader<R: std::io::Read>(
    path: &Path,
    reader: R,
    keys: &[String],
) -> Result<Keyed<R>, CliError> {
    if keys.is_empty() {
        return Err(CliError::usage("--keys names no column"));
    }
    let rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .buffer_capacity(1 << 20)
        .from_reader(reader);
    with_key_columns(path, rdr, keys)
}

/// The header's column names for an error message, cut short: at most 16 names of at most
/// 40 characters each. A file without a header row has a data row there, and an error message
/// (which goes to logs) must not copy a private row, nor a megabyte of one.
pub(crate) fn column_list(header: &[String]) -> String {
    const NAMES: usize = 16;
    const CHARS: usize = 40;
    let mut list: Vec<String> = header
        .iter()
        .take(NAMES)
        .map(|h| match h.char_indices().nth(CHARS) {
            Some((cut, _)) => format!("{}…", &h[..cut]),
            None => h.clone(),
        })
        .collect();
    if header.len() > NAMES {
        list.push(format!("… {} columns in all", header.len()));
    }
    list.join(", ")
}

fn with_key_columns<R: std::io::Read>(
    path: &Path,
    mut rdr: csv::Reader<R>,
    keys: &[String],
) -> Result<Keyed<R>, CliError> {
    let header: Vec<String> = rdr
        .headers()
        .map_err(|e| describe(path, &e))?
        .iter()
        .map(str::to_string)
        .collect();
    if header.is_empty() || header.iter().all(String::is_empty) {
        return Err(CliError::input(format!(
            "{} is empty: no header row",
            path.display()
        )));
    }
    let cols = keys
        .iter()
        .map(|k| {
            let col = header.iter().position(|h| h == k).ok_or_else(|| {
                CliError::input(format!(
                    "{} has no column {k:?} (columns: {})",
                    path.display(),
                    column_list(&header)
                ))
            })?;
            // Which of two equally named columns holds the key is anyone's guess: refused
            // rather than matched on the first.
            let named = header.iter().filter(|h| *h == k).count();
            if named > 1 {
                return Err(CliError::input(format!(
                    "{} has {named} columns named {k:?}: rename them so that the key column's \
                     name is unique",
                    path.display()
                )));
            }
            Ok(col)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rdr, header, cols))
}

/// Keys stored back to back in one buffer, with the end offset of each: about 8 bytes per key
/// on top of the key itself, where a `Vec<u8>` per key costs 24 bytes and an allocation. The
/// server of `obliv ub-psi` holds every distinct key of its CSV file this way.
#[derive(Debug, Clone, Default)]
pub struct KeyArena {
    bytes: Vec<u8>,
    ends: Vec<u64>,
}

impl KeyArena {
    /// The number of keys.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Key `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = usize::try_from(*self.ends.get(i)?).ok()?;
        let start = match i.checked_sub(1) {
            Some(j) => usize::try_from(self.ends[j]).ok()?,
            None => 0,
        };
        self.bytes.get(start..end)
    }

    /// Appends `key`.
    pub fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len() as u64);
    }

    /// The keys in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| &self[i])
    }

    /// Returns unused capacity to the allocator (after the last key is pushed).
    fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

impl std::ops::Index<usize> for KeyArena {
    type Output = [u8];

    /// Key `i`; panics past the end, as slices do.
    fn index(&self, i: usize) -> &[u8] {
        match self.get(i) {
            Some(k) => k,
            None => panic!("key {i} of {}", self.len()),
        }
    }
}

impl obliv_psi::unbalanced::ItemList for KeyArena {
    fn len(&self) -> usize {
        KeyArena::len(self)
    }

    fn item(&self, i: usize) -> &[u8] {
        &self[i]
    }
}

/// The distinct keys of a file in order of first appearance, and each row's key index.
///
/// The index of distinct keys is a table of 8-byte entries, each a key's number beside 32 bits
/// of its hash (SipHash with a random key, as `std`'s maps): every key is stored once, in the
/// arena, and growing the table rehashes the stored bits instead of reading every key again.
/// A lookup compares the key's bytes, so equal hash bits only cost a probe.
struct DistinctKeys {
    scratch: Vec<u8>,
    distinct: KeyArena,
    index: hashbrown::HashTable<u64>,
    hasher: std::hash::RandomState,
    /// Whether `row_key` is kept (4 bytes per row).
    keep_rows: bool,
    row_key: Vec<u32>,
}

impl DistinctKeys {
    fn new(keep_rows: bool) -> Self {
        DistinctKeys {
            scratch: Vec::new(),
            distinct: KeyArena::default(),
            index: hashbrown::HashTable::new(),
            hasher: std::hash::RandomState::new(),
            keep_rows,
            row_key: Vec::new(),
        }
    }
}

/// The table's 64-bit hash from an entry's 32 stored bits: a multiplication by an odd
/// constant spreads them over the high bits (the table's tag) and the low bits (its index).
fn spread(bits: u32) -> u64 {
    u64::from(bits).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// An entry's key number: its low 32 bits.
#[allow(clippy::cast_possible_truncation)] // keeps the low half on purpose
fn entry_id(e: u64) -> u32 {
    e as u32
}

impl KeySink for DistinctKeys {
    fn arena(&mut self) -> &mut Vec<u8> {
        &mut self.scratch
    }

    fn push(&mut self, _row: u64, at: usize) -> Result<(), CliError> {
        use std::hash::BuildHasher;
        let DistinctKeys {
            scratch,
            distinct,
            index,
            hasher,
            keep_rows,
            row_key,
        } = self;
        let key = scratch.get(at..).unwrap_or_default();
        let bits = (hasher.hash_one(key) >> 32) as u32;
        let h = spread(bits);
        let found = index
            .find(h, |&e| {
                (e >> 32) as u32 == bits && distinct.get(entry_id(e) as usize) == Some(key)
            })
            .copied();
        let id = match found {
            Some(e) => entry_id(e),
            None => {
                let next = u32::try_from(distinct.len())
                    .map_err(|_| CliError::input("more than 2^32 distinct keys in one file"))?;
                distinct.push(key);
                index.insert_unique(h, (u64::from(bits) << 32) | u64::from(next), |&e| {
                    spread((e >> 32) as u32)
                });
                next
            }
        };
        if *keep_rows {
            row_key.push(id);
        }
        scratch.truncate(at);
        Ok(())
    }
}

/// Reads `path` and extracts the key columns `keys` of every row, by the one reader of key
/// columns that [`crate::bucket::ingest`] uses too (the byte scanner, or the `csv` parser for
/// files with quotes).
///
/// # Errors
/// [`ExitKind::Input`](crate::ExitKind::Input) for a missing or unreadable file, an empty
/// file (no header), a key column that the header lacks, a row with the wrong number of
/// fields (with its line number), or bad UTF-8.
pub fn read_keys(path: &Path, keys: &[String]) -> Result<KeyedInput, CliError> {
    read_with(path, keys, true)
}

/// As [`read_keys`] without each row's key index (`row_key` stays empty): for a party that
/// only sends its distinct keys, such as the server of `ub-psi offline`, 4 bytes per row less.
///
/// # Errors
/// As [`read_keys`].
pub fn read_distinct_keys(path: &Path, keys: &[String]) -> Result<KeyedInput, CliError> {
    read_with(path, keys, false)
}

fn read_with(path: &Path, keys: &[String], keep_rows: bool) -> Result<KeyedInput, CliError> {
    let (shape, keyed) = read_key_columns(path, keys, ProgressMode::Off, false, || {
        DistinctKeys::new(keep_rows)
    })?;
    let mut distinct = keyed.distinct;
    distinct.shrink_to_fit();
    Ok(KeyedInput {
        distinct,
        row_key: keyed.row_key,
        digest: shape.digest.unwrap_or_default(),
        shape,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(fields: &[&[u8]]) -> Vec<u8> {
        let mut k = Vec::new();
        for f in fields {
            push_key_field(&mut k, f);
        }
        k
    }

    /// Every tuple of one to three fields over bytes that a separator join gets wrong: the
    /// encodings are distinct, decode back, and sort as the tuples do.
    #[test]
    fn key_encoding_is_injective_and_keeps_tuple_order() {
        let vals: &[&[u8]] = &[
            b"",
            b"a",
            b"b",
            b"\x1f",
            b"a\x1fb",
            b"\x00",
            b"\x00\x01",
            b"\x01",
            b"\x00\xff",
            b"\xff",
            b"\x00\x00",
            b",",
            b"\"",
        ];
        let mut tuples: Vec<Vec<&[u8]>> = Vec::new();
        for &a in vals {
            tuples.push(vec![a]);
            for &b in vals {
                tuples.push(vec![a, b]);
                for &c in vals {
                    tuples.push(vec![a, b, c]);
                }
            }
        }
        let mut seen = std::collections::HashMap::new();
        for t in &tuples {
            let k = encode(t);
            assert_eq!(decode_key(&k).unwrap(), *t);
            assert!(seen.insert(k, t.clone()).is_none(), "{t:?} collides");
        }
        let mut by_tuple = tuples.clone();
        by_tuple.sort();
        let mut by_key = tuples;
        by_key.sort_by_key(|t| encode(t));
        assert_eq!(by_tuple, by_key);
        assert_eq!(decode_key(b"a\x00"), None);
        assert_eq!(decode_key(b"a\x00\x02"), None);
        assert_eq!(decode_key(b"a"), None);
    }

    /// `ub-psi`'s output pass (the one row writer, [`crate::bucket::write_rows`]): a file
    /// changed since `read_keys` (same rows, same length) is
    /// refused with exit code 3 and nothing is written.
    /// The distinct keys in order of first appearance, each row pointing at its key, against a
    /// plain map; duplicates, an empty key, multi-column keys and enough keys to make the
    /// index grow several times.
    #[test]
    fn distinct_keys_match_a_plain_map() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.csv");
        let mut rows: Vec<(String, String)> = Vec::new();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..5000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // About a third of the rows repeat an earlier key; some keys are empty.
            let a = if i % 97 == 0 {
                String::new()
            } else {
                format!("k{}", rng % 3000)
            };
            rows.push((a, format!("{}", rng % 2)));
        }
        let mut text = String::from("a,b,x\n");
        for (a, b) in &rows {
            text.push_str(&format!("{a},{b},1\n"));
        }
        std::fs::write(&input, &text).unwrap();
        let kd = read_keys(&input, &["a".into(), "b".into()]).unwrap();
        let mut want: Vec<Vec<u8>> = Vec::new();
        let mut seen = std::collections::HashMap::new();
        let mut want_rows = Vec::new();
        for (a, b) in &rows {
            let k = encode(&[a.as_bytes(), b.as_bytes()]);
            let id = *seen.entry(k.clone()).or_insert_with(|| {
                want.push(k);
                want.len() - 1
            });
            want_rows.push(u32::try_from(id).unwrap());
        }
        assert_eq!(kd.distinct.len(), want.len());
        assert!(kd.distinct.iter().eq(want.iter().map(Vec::as_slice)));
        assert_eq!(kd.row_key, want_rows);
        assert_eq!(kd.rows(), rows.len());
        assert_eq!(kd.distinct.get(want.len()), None);
        let only = read_distinct_keys(&input, &["a".into(), "b".into()]).unwrap();
        assert!(only.distinct.iter().eq(kd.distinct.iter()));
        assert!(only.row_key.is_empty());
        assert_eq!(only.rows(), rows.len());
        let items: &dyn obliv_psi::unbalanced::ItemList = &kd.distinct;
        assert_eq!(items.len(), want.len());
        assert_eq!(items.item(want.len() - 1), want[want.len() - 1].as_slice());
    }

    /// A key column whose name the header repeats used to be read from the first of them,
    /// silently; refused now, on both readers and in `merge --sort`.
    #[test]
    fn a_key_column_named_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.csv");
        for body in ["id,x,id\nk1,1,z\n", "id,x,id\n\"k,1\",1,z\n"] {
            std::fs::write(&input, body).unwrap();
            let e = read_keys(&input, &["id".into()]).unwrap_err();
            assert_eq!(e.exit_code(), 3, "{e}");
            assert!(e.to_string().contains("2 columns named \"id\""), "{e}");
            let e = open_keyed(&input, &["x".into(), "id".into()]).unwrap_err();
            assert!(e.to_string().contains("2 columns named \"id\""), "{e}");
            // Other columns may repeat.
            assert_eq!(read_keys(&input, &["x".into()]).unwrap().rows(), 1);
        }
    }

    /// A file without a header row has a data row in its place: the error for a missing key
    /// column lists at most 16 of its fields, each cut to 40 characters (it quoted the whole
    /// line, a private row, into logs).
    #[test]
    fn a_missing_key_column_error_quotes_little_of_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.csv");
        let secret = "s".repeat(60);
        let row: Vec<String> = (0..40).map(|i| format!("{secret}{i}")).collect();
        std::fs::write(&input, row.join(",") + "\n").unwrap();
        let e = read_keys(&input, &["id".into()]).unwrap_err().to_string();
        assert!(!e.contains(&secret), "{e}");
        assert!(!e.contains("s20"), "{e}");
        assert!(e.contains("40 columns in all"), "{e}");
        // Short headers are listed whole.
        std::fs::write(&input, "name,x\n").unwrap();
        let e = read_keys(&input, &["id".into()]).unwrap_err().to_string();
        assert!(e.contains("(columns: name, x)"), "{e}");
    }

    #[test]
    fn key_arena_keeps_empty_keys_and_bounds() {
        let mut a = KeyArena::default();
        assert!(a.is_empty());
        a.push(b"");
        a.push(b"xy");
        a.push(b"");
        assert_eq!(a.len(), 3);
        assert_eq!(a.iter().collect::<Vec<_>>(), [b"".as_slice(), b"xy", b""]);
        assert_eq!(&a[1], b"xy");
        assert_eq!(a.get(3), None);
    }

    #[test]
    fn ub_psi_output_refuses_a_changed_input() {
        use crate::bucket::{RowSet, write_rows};
        use crate::progress::ProgressMode;
        let write_selected = |input: &Path, kd: &KeyedInput, sel: &[bool], out: &Path| {
            let mut rows = RowSet::new(kd.rows() as u64);
            for (row, &k) in kd.row_key.iter().enumerate() {
                if sel[k as usize] {
                    rows.insert(row as u64);
                }
            }
            write_rows(input, &kd.shape, &rows, out, false, ProgressMode::Off)
        };
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.csv");
        let out = dir.path().join("out.csv");
        std::fs::write(&input, "id,x\nk1,1\nk2,2\n").unwrap();
        let kd = read_keys(&input, &["id".into()]).unwrap();
        assert_eq!(kd.digest, *blake3::hash(b"id,x\nk1,1\nk2,2\n").as_bytes());
        assert_eq!(
            write_selected(&input, &kd, &[false, true], &out).unwrap(),
            1
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "id,x\nk2,2\n");
        std::fs::remove_file(&out).unwrap();
        std::fs::write(&input, "id,x\nk1,1\nk3,2\n").unwrap();
        let e = write_selected(&input, &kd, &[false, true], &out).unwrap_err();
        assert_eq!(e.exit_code(), 3, "{e}");
        assert!(!out.exists());
    }
}
