//! A byte scanner for the common, simple CSV file: no quote character anywhere in the data
//! rows, lines ended by `\n` or `\r\n`, valid UTF-8.
//!
//! For such a file every line is one record and every `,` separates two fields, so a record is
//! found with one vectorised search for `\n` ([`memchr`]) and its fields with one for `,`,
//! without the general parser's state machine, per-record UTF-8 validation of every field or
//! per-row allocation. Whether a file is simple is only known once it has been read; the
//! scanner gives up ([`Scan::NotSimple`]) at the first quote, lone `\r`, invalid UTF-8 or row
//! whose field count differs from the header's, and the caller then runs the general parser
//! ([`csv`]) over the whole file, which reads quoted fields and reports errors with their line
//! numbers. Both paths see the same records: `csv` skips empty lines, and so does the scanner.
//!
//! The header row is always parsed by `csv` (it may be quoted, or start with a byte-order
//! mark); the scanner starts at the byte where `csv` says the first data record starts.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::csvio::{MAX_RECORD_BYTES, push_key_field};
use crate::error::CliError;

/// Bytes read at a time.
const CHUNK: usize = 4 << 20;

/// How a scan ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scan {
    /// Every data line was passed to the callback.
    Done,
    /// The file is not simple (or a row is malformed): read it with `csv` instead.
    NotSimple,
}

/// Calls `line` with every non-empty data line of `file`, opened from `path` and read from its
/// current position, its start (without its `\n` or `\r\n`), in file order, starting at byte
/// `data_start`. Every byte of the file (the header too) is passed to
/// `seen` as it is read, e.g. to hash the file. `line` returns `Ok(false)` to give up.
/// `at` is told the file offset after each processed chunk (for progress).
///
/// # Errors
/// [`ExitKind::Input`](crate::ExitKind::Input) for I/O errors, or what `line` returns.
pub(crate) fn for_each_line(
    path: &Path,
    file: &mut File,
    data_start: u64,
    mut seen: impl FnMut(&[u8]),
    mut at: impl FnMut(u64),
    mut line: impl FnMut(&[u8]) -> Result<bool, CliError>,
) -> Result<Scan, CliError> {
    let io = |e: std::io::Error| CliError::file(path.display().to_string(), e);
    let mut buf = vec![0u8; CHUNK];
    // buf[start..end] is read but not yet processed; `pos` is the file offset of buf[0].
    let (mut start, mut end, mut pos) = (0usize, 0usize, 0u64);
    let mut skip = data_start;
    loop {
        if start > 0 {
            buf.copy_within(start..end, 0);
            end -= start;
            pos += start as u64;
            start = 0;
        }
        if end == buf.len() {
            // One line longer than the buffer: grow it, up to the longest record the `csv`
            // parser accepts. Beyond, the parser takes over and words the error (a line
            // without its end must not grow the buffer to the size of the file).
            if buf.len() as u64 >= MAX_RECORD_BYTES {
                return Ok(Scan::NotSimple);
            }
            buf.resize(buf.len() * 2, 0);
        }
        let n = file.read(&mut buf[end..]).map_err(io)?;
        seen(&buf[end..end + n]);
        end += n;
        let eof = n == 0;
        if skip > 0 {
            let s = usize::try_from(skip).unwrap_or(usize::MAX).min(end - start);
            start += s;
            skip -= s as u64;
            if skip > 0 {
                if eof {
                    return Ok(Scan::Done);
                }
                continue;
            }
        }
        // Whole lines only, except for a last line without terminator at the end of the file.
        let region_end = if eof {
            end
        } else {
            match memchr::memrchr(b'\n', &buf[start..end]) {
                Some(i) => start + i + 1,
                None => continue,
            }
        };
        let region = &buf[start..region_end];
        if memchr::memchr(b'"', region).is_some() || std::str::from_utf8(region).is_err() {
            return Ok(Scan::NotSimple);
        }
        // `csv` ends a record at a lone `\r` too; only `\r\n` is handled here.
        if memchr::memchr_iter(b'\r', region).any(|i| region.get(i + 1) != Some(&b'\n')) {
            return Ok(Scan::NotSimple);
        }
        let mut from = 0;
        let mut emit = |l: &[u8]| -> Result<bool, CliError> {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            if l.is_empty() {
                return Ok(true);
            }
            line(l)
        };
        for nl in memchr::memchr_iter(b'\n', region) {
            if !emit(&region[from..nl])? {
                return Ok(Scan::NotSimple);
            }
            from = nl + 1;
        }
        if from < region.len() && !emit(&region[from..])? {
            return Ok(Scan::NotSimple);
        }
        start = region_end;
        at(pos + start as u64);
        if eof {
            return Ok(Scan::Done);
        }
    }
}

/// Splits simple CSV lines into fields and assembles keys.
#[derive(Debug)]
pub(crate) struct Fields {
    fields: usize,
    cols: Vec<usize>,
    spans: Vec<(usize, usize)>,
}

impl Fields {
    /// For rows of `fields` fields, keys made of the columns `cols`.
    pub(crate) fn new(fields: usize, cols: &[usize]) -> Self {
        Fields {
            fields,
            cols: cols.to_vec(),
            spans: Vec::with_capacity(fields),
        }
    }

    /// Appends the key of `line` (its key columns encoded by [`push_key_field`], as
    /// `bucket::key_of` builds it from a parsed record) to `out`. Returns `false`, leaving `out`
    /// unchanged, when the line does not have exactly the header's number of fields.
    #[inline]
    pub(crate) fn key_into(&mut self, line: &[u8], out: &mut Vec<u8>) -> bool {
        if self.fields == 1 {
            // One column: the line is the field (it has no comma, or it is malformed).
            if memchr::memchr(b',', line).is_some() {
                return false;
            }
            push_key_field(out, line);
            return true;
        }
        self.spans.clear();
        let mut from = 0;
        for c in memchr::memchr_iter(b',', line) {
            if self.spans.len() + 1 == self.fields {
                return false;
            }
            self.spans.push((from, c));
            from = c + 1;
        }
        self.spans.push((from, line.len()));
        if self.spans.len() != self.fields {
            return false;
        }
        for &c in &self.cols {
            let (a, b) = self.spans[c];
            push_key_field(out, &line[a..b]);
        }
        true
    }
}
