//! The last pass over the input: the rows the intersection marked ([`RowSet`], one bit per
//! input row) are written to the output, copied line by line from a simple file or through
//! the `csv` reader and writer, while the input's digest is recomputed to refuse a file that
//! changed since [`ingest`] read it. Every subcommand that writes rows (`psi`, `ub-psi`)
//! writes them here.

use super::*;

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

/// Checks, before any work whose result it would hold, that `output` can take the rows of
/// `input` as [`write_rows`] writes them (a temporary file beside it, renamed over it): it is
/// not `input` itself (the rename would replace the input with the rows selected from it), it
/// is not a directory or another non-regular file (a device, a pipe: the rename would replace
/// it), and a file can be created in its directory.
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) if `output` is `input`;
/// [`ExitKind::Input`](crate::ExitKind::Input) if it is not a regular file or its directory
/// is missing or not writable.
pub fn check_output(input: &Path, output: &Path) -> Result<(), CliError> {
    check_writable("--output", output, &[("the input file", input)])
}

/// Checks, before the run, that the file `path` given as `flag` (`--output`, `--report`,
/// `--cache`) can be written when the run ends: it is none of the files in `keep` (each with
/// what it is, for the message), it is not a directory or another non-regular file, and a
/// file can be created in its directory.
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) if `path` is one of `keep`;
/// [`ExitKind::Input`](crate::ExitKind::Input) if it is not a regular file or its directory
/// is missing or not writable.
pub fn check_writable(flag: &str, path: &Path, keep: &[(&str, &Path)]) -> Result<(), CliError> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            return Err(CliError::input(format!(
                "{flag} {} is {}, not a file: give the path of a file to write",
                path.display(),
                if m.is_dir() {
                    "a directory"
                } else {
                    "a device, pipe or socket"
                }
            )));
        }
        Ok(m) => {
            for (what, other) in keep {
                if std::fs::metadata(other).is_ok_and(|o| same_file(&o, &m, other, path)) {
                    return Err(CliError::usage(format!(
                        "{flag} {} is {what}: writing it would replace that file; give \
                         another {flag}",
                        path.display()
                    )));
                }
            }
        }
        Err(_) => {
            // Not there yet: two flags naming one new file are the same path.
            for (what, other) in keep {
                if other == &path {
                    return Err(CliError::usage(format!(
                        "{flag} {} is {what}: give another {flag}",
                        path.display()
                    )));
                }
            }
        }
    }
    let dir = crate::cleanup::dir_of(path);
    crate::cleanup::TempOutput::beside(path)
        .map(drop)
        .map_err(|e| {
            CliError::file(
                format!(
                    "cannot create {flag} {} (its directory {} must exist and be writable)",
                    path.display(),
                    dir.display()
                ),
                e,
            )
        })
}

/// The temporary file an output is written to before it is renamed into place
/// ([`crate::cleanup::TempOutput::beside`]), with the error a user can act on.
///
/// # Errors
/// [`CliError`] naming the directory when the file cannot be created there.
pub fn temp_beside(output: &Path) -> Result<crate::cleanup::TempOutput, CliError> {
    crate::cleanup::TempOutput::beside(output).map_err(|e| {
        CliError::file(
            format!(
                "cannot create a file in {}",
                crate::cleanup::dir_of(output).display()
            ),
            e,
        )
    })
}

/// Whether two files' metadata are of one file (the same inode on the same device).
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata, _: &Path, _: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// Whether two paths name one file (without inode numbers: by their canonical paths).
#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata, a: &Path, b: &Path) -> bool {
    matches!(
        (std::fs::canonicalize(a), std::fs::canonicalize(b)),
        (Ok(x), Ok(y)) if x == y
    )
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
    let tmp = temp_beside(output)?;
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
    let mut file = File::open(input)
        .map_err(|e| CliError::file(format!("cannot open {}", input.display()), e))?;
    let scan = fastcsv::for_each_line(
        input,
        &mut file,
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
    let mut row = 0u64;
    loop {
        let mut rec = csv::StringRecord::new();
        match rdr.read_record(&mut rec) {
            Ok(true) => record_read(&mut rdr),
            Ok(false) => break,
            Err(e) => return Err(describe(input, &e)),
        }
        bar.inc(1);
        let this = row;
        row += 1;
        if rows.contains(this) {
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
