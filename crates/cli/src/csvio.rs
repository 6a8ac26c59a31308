//! Reading the key columns of a CSV file and writing the rows of the intersection.
//!
//! Keys are read as UTF-8 text; a multi-column key is the columns' values joined by the
//! ASCII unit separator (0x1F), so `("a,b")` and `("a", "b")` never collide. The output is
//! written to a temporary file beside the target and renamed into place only on success, so
//! a partial file is never left under the output name.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use crate::error::CliError;

/// Separator between the columns of a multi-column key.
pub const KEY_SEPARATOR: u8 = 0x1f;

/// The keys of one input file.
#[derive(Debug, Clone)]
pub struct KeyedInput {
    /// Header row.
    pub header: Vec<String>,
    /// The distinct keys, in order of first appearance.
    pub distinct: Vec<Vec<u8>>,
    /// For every data row, the index of its key in `distinct`.
    pub row_key: Vec<u32>,
}

impl KeyedInput {
    /// Number of data rows.
    pub fn rows(&self) -> usize {
        self.row_key.len()
    }
}

pub(crate) fn open(path: &Path) -> Result<csv::Reader<BufReader<File>>, CliError> {
    let f = File::open(path)
        .map_err(|e| CliError::Input(format!("cannot open {}: {e}", path.display())))?;
    Ok(csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(BufReader::with_capacity(1 << 20, f)))
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
    CliError::Input(format!("{}{at}: {what}", path.display()))
}

/// A CSV reader positioned after the header, the header, and the key columns' indices.
pub(crate) type Keyed<R> = (csv::Reader<R>, Vec<String>, Vec<usize>);

/// A CSV reader over a buffered file.
pub(crate) type CsvReader = csv::Reader<BufReader<File>>;

/// Opens `path`, reads its header and finds the key columns `keys` in it.
///
/// # Errors
/// [`CliError::Usage`] if `keys` is empty; [`CliError::Input`] for a missing or unreadable
/// file, an empty file (no header) or a key column that the header lacks.
pub(crate) fn open_keyed(
    path: &Path,
    keys: &[String],
) -> Result<(CsvReader, Vec<String>, Vec<usize>), CliError> {
    if keys.is_empty() {
        return Err(CliError::Usage("--keys names no column".into()));
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
        return Err(CliError::Usage("--keys names no column".into()));
    }
    let rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .buffer_capacity(1 << 20)
        .from_reader(reader);
    with_key_columns(path, rdr, keys)
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
        return Err(CliError::Input(format!(
            "{} is empty: no header row",
            path.display()
        )));
    }
    let cols = keys
        .iter()
        .map(|k| {
            header.iter().position(|h| h == k).ok_or_else(|| {
                CliError::Input(format!(
                    "{} has no column {k:?} (columns: {})",
                    path.display(),
                    header.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rdr, header, cols))
}

/// Reads `path` and extracts the key columns `keys` of every row.
///
/// # Errors
/// [`CliError::Input`] for a missing or unreadable file, an empty file (no header), a key
/// column that the header lacks, a row with the wrong number of fields (with its line
/// number), or bad UTF-8.
pub fn read_keys(path: &Path, keys: &[String]) -> Result<KeyedInput, CliError> {
    let (mut rdr, header, cols) = open_keyed(path, keys)?;
    let mut index: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut distinct = Vec::new();
    let mut row_key = Vec::new();
    let mut record = csv::StringRecord::new();
    let mut key = Vec::new();
    loop {
        match rdr.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(describe(path, &e)),
        }
        key.clear();
        for (i, &c) in cols.iter().enumerate() {
            if i > 0 {
                key.push(KEY_SEPARATOR);
            }
            key.extend_from_slice(record.get(c).unwrap_or_default().as_bytes());
        }
        let next = u32::try_from(distinct.len())
            .map_err(|_| CliError::Input("more than 2^32 distinct keys in one file".into()))?;
        let id = *index.entry(key.clone()).or_insert_with(|| {
            distinct.push(key.clone());
            next
        });
        row_key.push(id);
    }
    Ok(KeyedInput {
        header,
        distinct,
        row_key,
    })
}

/// Writes the header and every row of `input` whose key index is marked in `selected` to
/// `output`, in input order, or sorted by key with `sort`. Returns the number of rows written.
///
/// # Errors
/// [`CliError::Input`] if the input cannot be re-read or the output cannot be written.
pub fn write_selected(
    input: &Path,
    keyed: &KeyedInput,
    selected: &[bool],
    output: &Path,
    sort: bool,
) -> Result<usize, CliError> {
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| CliError::Input(format!("cannot create a file in {}: {e}", dir.display())))?;
    let mut rdr = open(input)?;
    let mut wtr = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, tmp.as_file()));
    let io_err = |e: csv::Error| CliError::Input(format!("writing {}: {e}", output.display()));
    wtr.write_record(&keyed.header).map_err(io_err)?;
    let mut kept: Vec<(u32, csv::StringRecord)> = Vec::new();
    let mut written = 0;
    for (row, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| describe(input, &e))?;
        let k = *keyed.row_key.get(row).ok_or_else(|| {
            CliError::Input(format!(
                "{} changed while it was being read",
                input.display()
            ))
        })?;
        if selected.get(k as usize).copied().unwrap_or(false) {
            if sort {
                kept.push((k, rec));
            } else {
                wtr.write_record(&rec).map_err(io_err)?;
            }
            written += 1;
        }
    }
    if sort {
        kept.sort_by(|a, b| keyed.distinct[a.0 as usize].cmp(&keyed.distinct[b.0 as usize]));
        for (_, rec) in &kept {
            wtr.write_record(rec).map_err(io_err)?;
        }
    }
    let mut inner = wtr
        .into_inner()
        .map_err(|e| CliError::Input(e.to_string()))?;
    inner.flush().map_err(|e| CliError::Input(e.to_string()))?;
    drop(inner);
    tmp.persist(output)
        .map_err(|e| CliError::Input(format!("cannot write {}: {e}", output.display())))?;
    Ok(written)
}
