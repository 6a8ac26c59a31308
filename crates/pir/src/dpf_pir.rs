//! Two-server PIR from a DPF (Boyle–Gilboa–Ishai, *Function Secret Sharing*, Eurocrypt 2015
//! and CCS 2016; the scheme of Chor et al. with the query vector compressed by a DPF).
//!
//! Both servers hold the same [`Database`] of `N` records. To read record `i` the client
//! generates DPF keys `(k_0, k_1)` for the point function `f_i` over `n = ⌈log2 N⌉` bits and
//! sends `k_b` to server `b`. Server `b` expands its key over the full domain into a bit
//! vector `v_b` (with `v_0 ⊕ v_1 = e_i`) and answers `a_b = ⨁_{j : v_b[j] = 1} record_j`,
//! one pass over the database. The client outputs `a_0 ⊕ a_1 = record_i`.
//!
//! Security: two non-colluding, semi-honest servers. Each server sees one DPF key, which is
//! pseudorandom on its own, so it learns nothing about `i` (beyond `N`). Servers that collude
//! learn `i`. A malicious server can make the client output a wrong record (no integrity).
//! Costs per query for `N = 2^16`: upload 179 bytes per server, download one padded record
//! per server.

use rand_core::CryptoRng;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::db::Database;
use crate::dpf::{self, DpfKey};
use crate::error::{Error, Result};
use obliv_core::Block;

/// The client's two query messages, one per server (serialised DPF keys).
///
/// Together they reveal the index: zeroized on drop, and `Debug` shows only their length.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Query {
    /// The message for server 0.
    pub to_server0: Vec<u8>,
    /// The message for server 1.
    pub to_server1: Vec<u8>,
}

impl core::fmt::Debug for Query {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Query")
            .field("key_len", &self.to_server0.len())
            .finish_non_exhaustive()
    }
}

/// Builds the query for record `index` of a database of `records` records.
///
/// Errors: [`Error::IndexOutOfRange`], [`Error::InvalidParameter`] for `records = 0`.
pub fn query<R: CryptoRng + ?Sized>(records: usize, index: usize, rng: &mut R) -> Result<Query> {
    if records == 0 {
        return Err(Error::InvalidParameter {
            what: "empty database",
        });
    }
    if index >= records {
        return Err(Error::IndexOutOfRange {
            index: index as u64,
            size: records as u64,
        });
    }
    let n = obliv_core::log2_ceil(records as u64);
    let (k0, k1) = dpf::gen_keys(n, index as u64, rng)?;
    Ok(Query {
        to_server0: k0.to_bytes(),
        to_server1: k1.to_bytes(),
    })
}

/// A server's answer to a serialised DPF key: the XOR of the selected records, padded to
/// 16 bytes (`db.stride()` blocks).
///
/// The key and its full-domain evaluation (this server's share of the selection vector,
/// which with the other server's gives the index) are wiped before they are freed.
///
/// Errors: a malformed key or one over the wrong domain ([`DpfKey::from_bytes_for_domain`]).
pub fn answer(db: &Database, key: &[u8]) -> Result<Vec<u8>> {
    let key = DpfKey::from_bytes_for_domain(key, db.domain_bits())?;
    let bits = Zeroizing::new(key.eval_full());
    let acc = db.xor_selected(&bits)?;
    Ok(Block::slice_as_bytes(&acc).to_vec())
}

/// Answers several keys with one pass over the database ([`Database::xor_selected_multi`]):
/// `result[q]` equals [`answer`]`(db, keys[q])`. A malformed key gets its own error and does
/// not affect the others. The keys' evaluations are wiped as in [`answer`].
pub fn answer_many(db: &Database, keys: &[&[u8]]) -> Vec<Result<Vec<u8>>> {
    let parsed: Vec<Result<Zeroizing<Vec<Block>>>> = keys
        .iter()
        .map(|k| {
            DpfKey::from_bytes_for_domain(k, db.domain_bits())
                .map(|k| Zeroizing::new(k.eval_full()))
        })
        .collect();
    let good: Vec<&[Block]> = parsed
        .iter()
        .filter_map(|p| p.as_ref().ok().map(|b| b.as_slice()))
        .collect();
    // The keys are over the database's domain, so their bit vectors cover every record.
    let Ok(sums) = db.xor_selected_multi(&good) else {
        return parsed
            .into_iter()
            .map(|_| {
                Err(Error::InvalidParameter {
                    what: "bit vector shorter than the database",
                })
            })
            .collect();
    };
    let mut sums = sums.into_iter();
    parsed
        .into_iter()
        .map(|p| {
            p.map(|_| {
                // One sum per parsed key, in order.
                sums.next()
                    .map(|acc| Block::slice_as_bytes(&acc).to_vec())
                    .unwrap_or_default()
            })
        })
        .collect()
}

/// [`answer`] with the scan split over `threads` threads (the evaluation wiped likewise).
pub fn answer_parallel(db: &Database, key: &[u8], threads: usize) -> Result<Vec<u8>> {
    let key = DpfKey::from_bytes_for_domain(key, db.domain_bits())?;
    let bits = Zeroizing::new(key.eval_full());
    let acc = db.xor_selected_parallel(&bits, threads)?;
    Ok(Block::slice_as_bytes(&acc).to_vec())
}

/// The record: `answer0 ⊕ answer1`, cut to `record_len` bytes.
///
/// Errors: [`Error::WrongLength`] if the answers are not both `16·⌈record_len/16⌉` bytes,
/// [`Error::InvalidParameter`] for `record_len` above [`crate::db::MAX_RECORD_LEN`].
pub fn reconstruct(record_len: usize, answer0: &[u8], answer1: &[u8]) -> Result<Vec<u8>> {
    let padded = padded_len(record_len)?;
    for a in [answer0, answer1] {
        if a.len() != padded {
            return Err(Error::WrongLength {
                expected: padded,
                got: a.len(),
            });
        }
    }
    Ok(answer0[..record_len]
        .iter()
        .zip(&answer1[..record_len])
        .map(|(x, y)| x ^ y)
        .collect())
}

/// `16·⌈record_len/16⌉`: the bytes of a padded record in an answer.
///
/// Errors: [`Error::InvalidParameter`] for `record_len` above [`crate::db::MAX_RECORD_LEN`]
/// (no database holds such records; near `usize::MAX` the product would overflow).
pub(crate) fn padded_len(record_len: usize) -> Result<usize> {
    if record_len > crate::db::MAX_RECORD_LEN {
        return Err(Error::InvalidParameter {
            what: "record length must be at most 2^24 bytes",
        });
    }
    Ok(record_len.div_ceil(16) * 16)
}

#[cfg(test)]
#[allow(
    clippy::needless_range_loop,
    clippy::cast_possible_truncation,
    clippy::useless_vec
)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use rand_core::{Rng, SeedableRng};

    #[test]
    fn returns_the_record_for_random_indices() {
        let mut rng = AesRng::from_seed([9; 16]);
        for (n, len) in [
            (1usize, 5usize),
            (2, 16),
            (3, 17),
            (127, 33),
            (128, 1),
            (129, 100),
            (1000, 1024),
            (4097, 48),
        ] {
            let db = Database::random(n, len, &mut rng).unwrap();
            let mut idx = vec![0, n - 1];
            for _ in 0..6 {
                idx.push((rng.next_u64() % n as u64) as usize);
            }
            for i in idx {
                let q = query(n, i, &mut rng).unwrap();
                let a0 = answer(&db, &q.to_server0).unwrap();
                let a1 = answer_parallel(&db, &q.to_server1, 3).unwrap();
                assert_eq!(a1, answer(&db, &q.to_server1).unwrap());
                let rec = reconstruct(len, &a0, &a1).unwrap();
                assert_eq!(rec, db.record(i).unwrap(), "n = {n}, i = {i}");
            }
        }
    }

    #[test]
    fn answer_many_agrees_with_answer() {
        let mut rng = AesRng::from_seed([20; 16]);
        for (n, len) in [(1usize, 16usize), (200, 40), (3000, 1024), (5000, 20)] {
            let db = Database::random(n, len, &mut rng).unwrap();
            let qs: Vec<Query> = (0..5)
                .map(|k| query(n, (k * 977) % n, &mut rng).unwrap())
                .collect();
            let mut keys: Vec<&[u8]> = qs.iter().map(|q| q.to_server0.as_slice()).collect();
            keys.insert(2, &[1, 2, 3]);
            let many = answer_many(&db, &keys);
            assert_eq!(many.len(), 6);
            assert!(many[2].is_err());
            for (k, r) in keys.iter().zip(&many) {
                if let Ok(r) = r {
                    assert_eq!(r, &answer(&db, k).unwrap());
                }
            }
        }
    }

    #[test]
    fn scan_agrees_with_plain_xor() {
        let mut rng = AesRng::from_seed([10; 16]);
        let db = Database::random(1003, 40, &mut rng).unwrap();
        let bits: Vec<Block> = (0..8).map(|_| Block::random(&mut rng)).collect();
        let mut expected = vec![0u8; 48];
        for i in 0..1003 {
            if bits[i / 128].bit(i % 128) {
                for (e, b) in expected.iter_mut().zip(db.record(i).unwrap()) {
                    *e ^= b;
                }
            }
        }
        let got = db.xor_selected(&bits).unwrap();
        assert_eq!(Block::slice_as_bytes(&got), &expected[..]);
        for t in [2, 3, 7, usize::MAX] {
            assert_eq!(db.xor_selected_parallel(&bits, t).unwrap(), got);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// For any shape and index, the two answers XOR to the record.
        #[test]
        fn prop_round_trip(n in 1usize..600, len in 1usize..70, i in proptest::prelude::any::<usize>(), seed in proptest::prelude::any::<[u8; 16]>()) {
            let mut rng = AesRng::from_seed(seed);
            let db = Database::random(n, len, &mut rng).unwrap();
            let i = i % n;
            let q = query(n, i, &mut rng).unwrap();
            let rec = reconstruct(len, &answer(&db, &q.to_server0).unwrap(), &answer(&db, &q.to_server1).unwrap()).unwrap();
            proptest::prop_assert_eq!(rec.as_slice(), db.record(i).unwrap());
        }
    }

    #[test]
    fn errors() {
        let mut rng = AesRng::from_seed([11; 16]);
        let db = Database::random(100, 10, &mut rng).unwrap();
        assert!(matches!(
            query(100, 100, &mut rng),
            Err(Error::IndexOutOfRange { .. })
        ));
        assert!(matches!(
            query(0, 0, &mut rng),
            Err(Error::InvalidParameter { .. })
        ));
        let q = query(1000, 5, &mut rng).unwrap();
        assert!(matches!(
            answer(&db, &q.to_server0),
            Err(Error::WrongDomain { .. })
        ));
        assert!(matches!(answer(&db, &[]), Err(Error::WrongLength { .. })));
        assert!(matches!(
            reconstruct(10, &[0; 16], &[0; 15]),
            Err(Error::WrongLength { .. })
        ));
        assert!(Database::from_bytes(3, &[0; 10]).is_err());
        assert!(Database::from_bytes(0, &[]).is_err());
        assert!(Database::random(0, 10, &mut rng).is_err());
    }

    /// A record length near `usize::MAX` is an error (the padded length used to overflow:
    /// a panic, or in release a zero length and then an out-of-bounds slice).
    #[test]
    fn reconstruct_rejects_absurd_record_lengths() {
        for len in [usize::MAX, usize::MAX - 10, (1 << 24) + 1] {
            assert!(matches!(
                reconstruct(len, &[], &[]),
                Err(Error::InvalidParameter { .. })
            ));
        }
        // The largest record length is allowed (here: answers of the wrong length).
        assert!(matches!(
            reconstruct(1 << 24, &[], &[]),
            Err(Error::WrongLength { .. })
        ));
    }

    /// The two keys reveal the index: `Debug` prints no key bytes.
    #[test]
    fn query_debug_hides_the_keys_and_they_are_zeroized() {
        fn zeroized_on_drop<T: zeroize::ZeroizeOnDrop>(_: &T) {}
        let mut rng = AesRng::from_seed([34; 16]);
        let q = query(1000, 3, &mut rng).unwrap();
        zeroized_on_drop(&q);
        let s = format!("{q:?}");
        assert!(!s.contains("to_server") && s.len() < 60, "{s}");
    }
}
