//! Test data for PSI, the equivalent of the benchmark documents' `generate_psi.py`: files
//! `psi_1.csv`, `psi_2.csv` (and `psi_3.csv`) with one column `id`, `size` rows each, of
//! which a fraction `overlap` is common to all parties and the rest is unique to each party.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use obliv_core::{Aes, Block, hash::ro_hash_block};

use crate::error::CliError;

/// The id generator: AES under a key derived from the seed and a stream name, in counter
/// mode, keeping 80 bits of each block (24 decimal digits at most; collisions between the
/// 3·10^9 ids of the largest runs have probability below 2^-17·…, negligible in practice).
struct Ids(Aes);

impl Ids {
    fn new(seed: u64, stream: &str) -> Self {
        let key = ro_hash_block(
            "obliv-cli gen-data v1",
            format!("{seed}/{stream}").as_bytes(),
        );
        Ids(Aes::new(key))
    }
    fn id(&self, i: u64) -> u128 {
        self.0.encrypt_block(Block(u128::from(i))).0 >> 48
    }
}

/// Most rows per file: 10^10, about 250 GB per file (ten times the largest documented run;
/// the ids of a three-party run of that size still collide with probability below 2^-11,
/// and the common-row count is exact, far below 2^53).
pub const MAX_ROWS: u64 = 10_000_000_000;

/// Number of common rows for `size` rows and `overlap`.
pub fn common_rows(size: u64, overlap: f64) -> u64 {
    // The float product is exact for every size up to 2^53.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let c = (size as f64 * overlap).floor() as u64;
    c.min(size)
}

/// Writes the files and returns their paths.
///
/// Row `i` of every file is common when `⌊(i+1)·c/size⌋ > ⌊i·c/size⌋` (spreading the `c`
/// common rows evenly), otherwise unique to the file.
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) for bad parameters (a size above [`MAX_ROWS`]
/// included, before anything is written), [`ExitKind::Input`](crate::ExitKind::Input) if a
/// file cannot be written.
pub fn generate(
    size: u64,
    parties: usize,
    overlap: f64,
    out_dir: &Path,
    seed: u64,
) -> Result<Vec<PathBuf>, CliError> {
    if !(2..=3).contains(&parties) {
        return Err(CliError::usage("--parties must be 2 or 3"));
    }
    if !(0.0..=1.0).contains(&overlap) {
        return Err(CliError::usage("--overlap must be between 0 and 1"));
    }
    if size > MAX_ROWS {
        return Err(CliError::usage(format!(
            "--size {size} is above the {MAX_ROWS} rows per file gen-data writes"
        )));
    }
    std::fs::create_dir_all(out_dir)
        .map_err(|e| CliError::file(format!("cannot create {}", out_dir.display()), e))?;
    let c = common_rows(size, overlap);
    let common = Ids::new(seed, "common");
    let mut paths = Vec::new();
    for p in 1..=parties {
        let own = Ids::new(seed, &format!("party-{p}"));
        let path = out_dir.join(format!("psi_{p}.csv"));
        let err = |e: std::io::Error| CliError::file(format!("writing {}", path.display()), e);
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&path).map_err(err)?);
        writeln!(w, "id").map_err(err)?;
        for i in 0..size {
            let (a, b) = (
                u128::from(i) * u128::from(c),
                u128::from(i + 1) * u128::from(c),
            );
            let s = u128::from(size.max(1));
            let ci = a / s;
            let id = if b / s > ci {
                common.id(u64::try_from(ci).unwrap_or(u64::MAX))
            } else {
                own.id(i - u64::try_from(ci).unwrap_or(0))
            };
            writeln!(w, "{id}").map_err(err)?;
        }
        w.flush().map_err(err)?;
        paths.push(path);
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_overlap() {
        let dir = tempfile::tempdir().unwrap();
        let paths = generate(1000, 3, 0.5, dir.path(), 7).unwrap();
        let read = |p: &Path| -> Vec<String> {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .skip(1)
                .map(str::to_string)
                .collect()
        };
        let (a, b, c) = (read(&paths[0]), read(&paths[1]), read(&paths[2]));
        assert_eq!(a.len(), 1000);
        let sb: std::collections::HashSet<_> = b.iter().collect();
        let sc: std::collections::HashSet<_> = c.iter().collect();
        assert_eq!(a.iter().filter(|x| sb.contains(x)).count(), 500);
        assert_eq!(
            a.iter()
                .filter(|x| sb.contains(x) && sc.contains(x))
                .count(),
            500
        );
        assert_eq!(common_rows(10, 0.33), 3);
        assert!(generate(10, 4, 0.5, dir.path(), 1).is_err());
    }
}
