//! `obliv merge`: joins the outputs of the shards of one job into the output an unsharded run
//! writes.
//!
//! The shards split the keys by a public hash, so every row of the full result is in exactly
//! one part and all rows with the same key are in the same part. Without `--sort` the parts are
//! concatenated in the order given (one header, then each part's rows in that part's input
//! order). With `--sort` (parts written with `--sort`) they are merged by key, which gives
//! byte for byte what the unsharded `--sort` run writes: the unsharded run sorts stably by key,
//! and rows with equal keys all come from one part, in input order.

use std::collections::BinaryHeap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::bucket::key_of;
use crate::csvio::{column_list, describe, open, open_keyed};
use crate::error::CliError;

/// One part's next row, ordered for a min-heap by key, then part index.
#[derive(PartialEq, Eq)]
struct Head {
    key: Vec<u8>,
    part: usize,
    record: csv::StringRecord,
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: BinaryHeap is a max-heap.
        other
            .key
            .cmp(&self.key)
            .then_with(|| other.part.cmp(&self.part))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Merges `parts` into `output` (temporary file, renamed on success); returns the number of
/// data rows written. Every part must have the same header. With `sort`, the rows are merged
/// by the key columns `keys` (each part must be sorted by key, as `--sort` writes it).
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) without parts or with `output` one of them
/// (renaming the merged file over it would replace that part);
/// [`ExitKind::Input`](crate::ExitKind::Input) for unreadable parts, differing headers, a
/// missing key column, a part that is not sorted, or an `output` that cannot be written.
pub fn merge(
    parts: &[PathBuf],
    keys: &[String],
    sort: bool,
    output: &Path,
) -> Result<u64, CliError> {
    if parts.is_empty() {
        return Err(CliError::usage("obliv merge needs at least one part"));
    }
    // The merged file is renamed over `output`: a part named there would be replaced.
    let keep: Vec<(&str, &Path)> = parts.iter().map(|p| ("a part", p.as_path())).collect();
    crate::bucket::check_writable("--output", output, &keep)?;
    let mut readers = Vec::with_capacity(parts.len());
    let mut header: Option<Vec<String>> = None;
    let mut cols = Vec::new();
    for p in parts {
        // Key columns matter only for the merge by key.
        let (rdr, h, c) = if sort {
            open_keyed(p, keys)?
        } else {
            let mut rdr = open(p)?;
            let h: Vec<String> = rdr
                .headers()
                .map_err(|e| describe(p, &e))?
                .iter()
                .map(str::to_string)
                .collect();
            if h.iter().all(String::is_empty) {
                return Err(CliError::input(format!(
                    "{} is empty: no header row (every part that obliv psi writes has one)",
                    p.display()
                )));
            }
            (rdr, h, Vec::new())
        };
        match &header {
            None => {
                header = Some(h);
                cols = c;
            }
            Some(first) if *first != h => {
                return Err(CliError::input(format!(
                    "{} has header ({}), but {} has ({}): not parts of one job",
                    p.display(),
                    column_list(&h),
                    parts[0].display(),
                    column_list(first)
                )));
            }
            Some(_) => {}
        }
        readers.push(rdr);
    }
    let header = header.unwrap_or_default();
    let tmp = crate::bucket::temp_beside(output)?;
    let mut wtr = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, tmp.as_file()));
    let err = |e: csv::Error| CliError::file(format!("writing {}", output.display()), e);
    wtr.write_record(&header).map_err(err)?;
    let mut written = 0u64;
    if sort {
        let mut heap = BinaryHeap::new();
        let next = |part: usize,
                    readers: &mut Vec<crate::csvio::CsvReader>|
         -> Result<Option<Head>, CliError> {
            let mut record = csv::StringRecord::new();
            match readers[part].read_record(&mut record) {
                Ok(true) => {
                    crate::csvio::record_read(&mut readers[part]);
                    let mut key = Vec::new();
                    key_of(&record, &cols, &mut key);
                    Ok(Some(Head { key, part, record }))
                }
                Ok(false) => Ok(None),
                Err(e) => Err(describe(&parts[part], &e)),
            }
        };
        for part in 0..readers.len() {
            if let Some(h) = next(part, &mut readers)? {
                heap.push(h);
            }
        }
        while let Some(h) = heap.pop() {
            wtr.write_record(&h.record).map_err(err)?;
            written += 1;
            if let Some(n) = next(h.part, &mut readers)? {
                if n.key < h.key {
                    return Err(CliError::input(format!(
                        "{} is not sorted by key (write the parts with --sort, or merge \
                         without --sort)",
                        parts[h.part].display()
                    )));
                }
                heap.push(n);
            }
        }
    } else {
        let mut record = csv::StringRecord::new();
        for (part, rdr) in readers.iter_mut().enumerate() {
            loop {
                match rdr.read_record(&mut record) {
                    Ok(true) => crate::csvio::record_read(rdr),
                    Ok(false) => break,
                    Err(e) => return Err(describe(&parts[part], &e)),
                }
                wtr.write_record(&record).map_err(err)?;
                written += 1;
            }
        }
    }
    let mut inner = wtr
        .into_inner()
        .map_err(|e| CliError::file("", e.into_error()))?;
    inner.flush().map_err(|e| CliError::file("", e))?;
    drop(inner);
    tmp.persist(output)
        .map_err(|e| CliError::file(format!("cannot write {}", output.display()), e))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_parts_merge_by_key_and_plain_parts_concatenate() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("p0.csv"), "id,v\na,1\nc,2\nc,0\n").unwrap();
        std::fs::write(d.join("p1.csv"), "id,v\nb,3\n\"d,x\",4\n").unwrap();
        let parts = vec![d.join("p0.csv"), d.join("p1.csv")];
        let out = d.join("m.csv");
        assert_eq!(merge(&parts, &["id".into()], true, &out).unwrap(), 5);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "id,v\na,1\nb,3\nc,2\nc,0\n\"d,x\",4\n"
        );
        // Without --sort the key columns need not exist.
        assert_eq!(merge(&parts, &["nope".into()], false, &out).unwrap(), 5);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "id,v\na,1\nc,2\nc,0\nb,3\n\"d,x\",4\n"
        );
        // An unsorted part and a foreign header are refused.
        std::fs::write(d.join("p2.csv"), "id,v\nz,1\na,2\n").unwrap();
        let e = merge(&[d.join("p2.csv")], &["id".into()], true, &out).unwrap_err();
        assert!(e.to_string().contains("not sorted"), "{e}");
        std::fs::write(d.join("p3.csv"), "id,w\nz,1\n").unwrap();
        let e = merge(
            &[d.join("p0.csv"), d.join("p3.csv")],
            &["id".into()],
            false,
            &out,
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 3);
    }

    /// A part without a header row (a data file given by mistake) has a row in its place:
    /// the error for differing headers quoted it whole, into logs; a few fields of it now.
    #[test]
    fn differing_headers_are_quoted_in_part() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("p0.csv"), "id,v\na,1\n").unwrap();
        let secret = "s".repeat(60);
        let row: Vec<String> = (0..30).map(|i| format!("{secret}{i}")).collect();
        std::fs::write(d.join("p1.csv"), row.join(",") + "\n").unwrap();
        let parts = vec![d.join("p0.csv"), d.join("p1.csv")];
        let e = merge(&parts, &["id".into()], false, &d.join("m.csv"))
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains(&secret) && e.contains("30 columns in all"),
            "{e}"
        );
        assert!(e.contains("(id, v)"), "{e}");
    }

    /// `--output` naming one of the parts (by its path or another link to it) replaced that
    /// part with the merged file; refused now, before anything is read.
    #[test]
    fn output_that_is_a_part_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("p0.csv"), "id,v\na,1\n").unwrap();
        std::fs::write(d.join("p1.csv"), "id,v\nb,2\n").unwrap();
        std::fs::hard_link(d.join("p1.csv"), d.join("link.csv")).unwrap();
        let parts = vec![d.join("p0.csv"), d.join("p1.csv")];
        for out in ["p1.csv", "link.csv"] {
            for sort in [false, true] {
                let e = merge(&parts, &["id".into()], sort, &d.join(out)).unwrap_err();
                assert_eq!(e.exit_code(), 2, "{e}");
                assert_eq!(
                    std::fs::read_to_string(d.join("p1.csv")).unwrap(),
                    "id,v\nb,2\n"
                );
            }
        }
    }

    /// An empty part (no header) without `--sort`: merging only empty parts wrote `""` (a
    /// header of one empty column) and reported success; an empty part beside real ones was
    /// refused as having "header []". Refused now, saying that the part is empty.
    #[test]
    fn empty_parts_are_refused_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("e.csv"), "").unwrap();
        std::fs::write(d.join("p.csv"), "id,v\nk1,1\n").unwrap();
        let out = d.join("m.csv");
        for parts in [["e.csv", "e.csv"], ["e.csv", "p.csv"], ["p.csv", "e.csv"]] {
            let parts: Vec<PathBuf> = parts.iter().map(|p| d.join(p)).collect();
            for sort in [false, true] {
                let e = merge(&parts, &["id".into()], sort, &out).unwrap_err();
                assert_eq!(e.exit_code(), 3, "{e}");
                assert!(e.to_string().contains("e.csv is empty"), "{e}");
                assert!(!out.exists());
            }
        }
        // A part with a header and no rows is a part.
        std::fs::write(d.join("h.csv"), "id,v\n").unwrap();
        let parts = vec![d.join("h.csv"), d.join("p.csv")];
        assert_eq!(merge(&parts, &["id".into()], false, &out).unwrap(), 1);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "id,v\nk1,1\n");
    }
}
