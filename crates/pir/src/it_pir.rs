//! The information-theoretic two-server PIR baseline of Chor, Goldreich, Kushilevitz and
//! Sudan (*Private Information Retrieval*, FOCS 1995 / JACM 1998, §3.2), with the `√N`
//! square layout — the IT-PIR that BENCHMARKS.md §3 compares DPF-PIR against.
//!
//! The `N` records form a matrix of `rows = ⌈N / cols⌉` rows and `cols = ⌈√N⌉` columns,
//! record `i` at row `⌊i / cols⌋`, column `i mod cols` (missing cells are zero). To read
//! record `i` the client draws a uniformly random subset `S` of the columns and sends `S` to
//! server 0 and `S △ {i mod cols}` to server 1, each as a `cols`-bit vector. Each server
//! returns, for every row, the XOR of that row's records in its subset (`rows` padded
//! records, one pass over the database); XORing the two answers gives the whole column
//! `i mod cols`, whose row `⌊i / cols⌋` is the record.
//!
//! Security: perfect (information-theoretic) privacy against each single server, since each
//! subset alone is uniform; none if the servers collude. Upload `2·⌈cols/8⌉` bytes, download
//! `2·rows` records: 256 KiB per server for `N = 2^16` records of 1 KiB.

use obliv_core::Block;
use rand_core::CryptoRng;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::db::Database;
use crate::error::{Error, Result};

/// The `rows × cols` shape of the square layout of `records` records.
pub fn shape(records: usize) -> (usize, usize) {
    let mut cols = records.isqrt();
    if cols * cols < records {
        cols += 1;
    }
    let cols = cols.max(1);
    (records.div_ceil(cols), cols)
}

/// The client's two subset vectors.
///
/// Together they reveal the index: zeroized on drop, and `Debug` shows only their length.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct ItQuery {
    /// Subset for server 0 (`⌈cols/8⌉` bytes, bit `c` of byte `c/8` little-endian).
    pub to_server0: Vec<u8>,
    /// Subset for server 1: the same with the target column flipped.
    pub to_server1: Vec<u8>,
    /// The row that holds the record.
    pub row: usize,
}

impl core::fmt::Debug for ItQuery {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ItQuery")
            .field("subset_len", &self.to_server0.len())
            .finish_non_exhaustive()
    }
}

/// Builds the query for record `index` of `records`.
pub fn query<R: CryptoRng + ?Sized>(records: usize, index: usize, rng: &mut R) -> Result<ItQuery> {
    if index >= records {
        return Err(Error::IndexOutOfRange {
            index: index as u64,
            size: records as u64,
        });
    }
    if records > crate::db::MAX_RECORDS {
        return Err(Error::InvalidParameter {
            what: "number of records must be in 1..=2^32",
        });
    }
    let (_, cols) = shape(records);
    let mut s = vec![0u8; cols.div_ceil(8)];
    rng.fill_bytes(&mut s);
    if cols % 8 != 0 {
        // Clear the padding bits so both vectors are canonical.
        if let Some(last) = s.last_mut() {
            *last &= (1u8 << (cols % 8)) - 1;
        }
    }
    let mut t = s.clone();
    let c = index % cols;
    t[c / 8] ^= 1 << (c % 8);
    Ok(ItQuery {
        to_server0: s,
        to_server1: t,
        row: index / cols,
    })
}

/// A server's answer: for each row the XOR of its records in the subset (`rows` padded
/// records, concatenated).
///
/// Errors: [`Error::WrongLength`] if the subset is not `⌈cols/8⌉` bytes,
/// [`Error::NonCanonical`] if padding bits are set.
pub fn answer(db: &Database, subset: &[u8]) -> Result<Vec<u8>> {
    let (rows, cols) = shape(db.len());
    let expected = cols.div_ceil(8);
    if subset.len() != expected {
        return Err(Error::WrongLength {
            expected,
            got: subset.len(),
        });
    }
    if cols % 8 != 0 && subset[expected - 1] >> (cols % 8) != 0 {
        return Err(Error::NonCanonical {
            what: "padding bits of the column subset",
        });
    }
    // The subset as a bit vector of blocks.
    let mut bits = vec![Block::ZERO; cols.div_ceil(128)];
    Block::slice_as_bytes_mut(&mut bits)[..expected].copy_from_slice(subset);
    let stride = db.stride();
    let mut out = vec![Block::ZERO; rows * stride];
    for (r, acc) in out.chunks_exact_mut(stride).enumerate() {
        let first = r * cols;
        let count = cols.min(db.len() - first);
        db.xor_selected_range(&bits, first, count, acc)?;
    }
    Ok(Block::slice_as_bytes(&out).to_vec())
}

/// The record from the two answers.
///
/// Errors: [`Error::WrongLength`] if an answer is not `rows` padded records long,
/// [`Error::InvalidParameter`] if the query is for a database of another shape (its row lies
/// beyond `db_records`' rows) or `record_len` is out of range.
pub fn reconstruct(
    db_records: usize,
    record_len: usize,
    query: &ItQuery,
    answer0: &[u8],
    answer1: &[u8],
) -> Result<Vec<u8>> {
    let (rows, _) = shape(db_records);
    let padded = crate::dpf_pir::padded_len(record_len)?;
    if query.row >= rows {
        return Err(Error::InvalidParameter {
            what: "the IT-PIR query is for a database of another shape",
        });
    }
    for a in [answer0, answer1] {
        if a.len() != rows * padded {
            return Err(Error::WrongLength {
                expected: rows * padded,
                got: a.len(),
            });
        }
    }
    let r = query.row * padded..query.row * padded + padded;
    crate::dpf_pir::reconstruct(record_len, &answer0[r.clone()], &answer1[r])
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use rand_core::{Rng, SeedableRng};

    #[test]
    fn shapes() {
        assert_eq!(shape(1), (1, 1));
        assert_eq!(shape(2), (1, 2));
        assert_eq!(shape(5), (2, 3));
        assert_eq!(shape(65536), (256, 256));
        assert_eq!(shape(1000), (32, 32));
        assert_eq!(shape(1001), (32, 32));
        assert_eq!(shape(1025), (32, 33));
    }

    #[test]
    fn returns_the_record() {
        let mut rng = AesRng::from_seed([15; 16]);
        for (n, len) in [(1usize, 3usize), (5, 16), (1000, 40), (4096, 100)] {
            let db = Database::random(n, len, &mut rng).unwrap();
            for _ in 0..8 {
                let i = (rng.next_u64() % n as u64) as usize;
                let q = query(n, i, &mut rng).unwrap();
                let a0 = answer(&db, &q.to_server0).unwrap();
                let a1 = answer(&db, &q.to_server1).unwrap();
                assert_eq!(
                    reconstruct(n, len, &q, &a0, &a1).unwrap(),
                    db.record(i).unwrap()
                );
            }
        }
    }

    #[test]
    fn errors() {
        let mut rng = AesRng::from_seed([16; 16]);
        let db = Database::random(1000, 8, &mut rng).unwrap();
        assert!(matches!(
            answer(&db, &[0; 3]),
            Err(Error::WrongLength { .. })
        ));
        assert!(matches!(
            query(1000, 1000, &mut rng),
            Err(Error::IndexOutOfRange { .. })
        ));
        let db5 = Database::random(5, 8, &mut rng).unwrap();
        assert!(matches!(
            answer(&db5, &[0xff]),
            Err(Error::NonCanonical { .. })
        ));
    }

    /// `reconstruct` for a database of another shape than the query's is an error, not an
    /// out-of-bounds panic; so is an absurd record length or record count.
    #[test]
    fn misuse_is_an_error() {
        let mut rng = AesRng::from_seed([32; 16]);
        let q = query(1000, 999, &mut rng).unwrap();
        let (rows, _) = shape(100);
        let a = vec![0u8; rows * 16];
        assert!(matches!(
            reconstruct(100, 16, &q, &a, &a),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            reconstruct(1000, usize::MAX - 3, &q, &a, &a),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            query(usize::MAX, 0, &mut rng),
            Err(Error::InvalidParameter { .. })
        ));
    }

    /// The query reveals the index: `Debug` prints neither the row nor the subsets.
    #[test]
    fn query_debug_hides_it_and_it_is_zeroized() {
        fn zeroized_on_drop<T: zeroize::ZeroizeOnDrop>(_: &T) {}
        let mut rng = AesRng::from_seed([33; 16]);
        let q = query(1000, 999, &mut rng).unwrap();
        zeroized_on_drop(&q);
        let s = format!("{q:?}");
        assert!(!s.contains("row") && !s.contains("to_server"), "{s}");
    }
}
