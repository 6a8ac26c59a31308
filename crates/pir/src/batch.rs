//! Batch DPF-PIR: `k` records in one round for a server scan of about `3N` records instead of
//! `kN`, by cuckoo hashing the client's indices into buckets (probabilistic batch codes,
//! Angel, Chen, Laine and Setty, *PIR with compressed queries and amortized query
//! processing*, S&P 2018, §4; the construction goes back to Ishai–Kushilevitz–Ostrovsky–Sahai
//! batch codes, STOC 2004).
//!
//! # Layout (public, the same at both servers and the client)
//!
//! `B` buckets and three hash functions `h_0, h_1, h_2 : [N] → [B]`, those of
//! [`obliv_cuckoo::CuckooHasher`] on the index as a block: the three buckets of record `j`
//! come from `AES_seed(j)` (`j` as the 128-bit integer of a [`Block`]) and are distinct from
//! three buckets on (see that crate for the reduction). Record `j` is listed in each of its
//! buckets `{h_0(j), h_1(j), h_2(j)}`, in increasing order of `j`
//! ([`obliv_cuckoo::IndexBins`]). The buckets together list at most `3N` records; the records
//! themselves are not copied.
//!
//! # Query
//!
//! The client places its `k ≤ B` distinct indices into distinct buckets, each index in one of
//! its three buckets: a bipartite matching, found exactly with augmenting paths (Kuhn's
//! algorithm, [`obliv_cuckoo::place_exact`]), so placement fails only when none exists. For
//! every bucket `b` it sends each
//! server a DPF key over `⌈log2 |b|⌉` bits for the position of its index in bucket `b` (a
//! random position for a bucket without an index), so every batch looks alike: `B` keys of
//! public sizes. Each server answers, per bucket, the XOR of the bucket's records its key
//! selects; the client XORs the two answers of the bucket holding each index.
//!
//! # Parameters and failure probability
//!
//! Placement fails when some set of `s` buckets is the only choice of more than `s` indices
//! (Hall's condition); with three distinct buckets per index that takes `s ≥ 3`, so a batch of
//! at most three indices always has a placement. A failure is a function of the indices, so a
//! client that reacts to it (splits the batch, or fails) tells the servers something about
//! them. Two sizings:
//!
//! - [`BatchParams::for_batch`] (the default) sizes `B` like an obliv-cuckoo table for `k`
//!   items at `2^-40` ([`obliv_cuckoo::CuckooParams::new`]: the PSZ18 fit and, for small
//!   batches, the bound over every set of up to 64 items that decides there), so a batch of
//!   up to `k` indices has no placement with probability at most `2^-40`: for example
//!   `B = 76` for `k = 10`, `B = 136` for `k = 32`, `B = 396` for `k = 256`, and `1.5k` or
//!   less from about a thousand on.
//!   The servers' scan is the same `3N` records whatever `B`; the query and the answer grow
//!   with `B` (one key and one record per bucket).
//! - [`BatchParams::angel`] takes Angel et al.'s `B = ⌈1.5k⌉` (at least 3): `k = 10, B = 15`
//!   fails for about `5.5·10^-4` of random batches (553 in 10^6 measured; the test
//!   `failure_rate_k10` checks 100 000 batches against that rate), `k = 32, B = 48` for about
//!   `2·10^-5` (21 in 10^6; both measured by the ignored test `failure_rates_documented`),
//!   falling with `k` (Angel et al. report below `2^-20` from `k = 256`). For benchmarks
//!   comparable with theirs, not for private batches of that size.
//!
//! [`BatchParams::capacity`] is the largest batch a layout serves at `2^-40`; the client
//! ([`crate::server::PirClient::query_batch`]) cuts its requests into batches of at most that
//! many indices (a split that depends on their number only, which the servers see anyway),
//! so with the servers' `angel(10)` it sends batches of three, and falls back to splitting a
//! batch with no placement only in the `2^-40` event. A query with no placement is reported
//! as [`Error::CuckooFailure`].
//!
//! Security: that of [`crate::dpf_pir`]; the layout is public and the bucket sizes are the
//! same for every batch, so the servers see only `B` pseudorandom keys.

use obliv_core::{Block, log2_ceil};
use obliv_cuckoo::{CuckooHasher, IndexBins, NUM_HASHES};
use rand_core::CryptoRng;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::db::Database;
use crate::dpf::{self, DpfKey};
use crate::error::{Error, Result};

/// Number of hash functions (choices per index).
pub const HASHES: usize = NUM_HASHES;

/// Largest batch supported (the placement is `O(k · B)` at worst).
pub const MAX_BATCH: usize = 1 << 14;

/// The statistical security of [`BatchParams::for_batch`]: a batch has no placement with
/// probability at most `2^-40`.
pub const PLACEMENT_STAT_SEC: u32 = 40;

/// Parameters of a batch layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchParams {
    /// Number of buckets `B` (at most `B` indices per batch).
    pub buckets: usize,
    /// Public seed of the hash functions.
    pub seed: [u8; 16],
}

impl BatchParams {
    /// The public seed of the hash functions, the same for every layout.
    pub const SEED: [u8; 16] = *b"obliv-pir-batch!";

    /// Buckets for batches of up to `k` indices that have no placement with probability at
    /// most `2^-`[`PLACEMENT_STAT_SEC`]: obliv-cuckoo's table size for `k` items at that
    /// security (3 buckets for `k ≤ 3`, which always place), with the fixed public seed.
    /// (For `k` beyond [`MAX_BATCH`] the layout refuses the bucket count; `B` saturates rather
    /// than wraps around to a small count.)
    pub fn for_batch(k: usize) -> Self {
        let buckets = if k <= HASHES {
            HASHES
        } else {
            obliv_cuckoo::CuckooParams::new(k, PLACEMENT_STAT_SEC)
                .map_or(usize::MAX, |p| p.bins.max(HASHES))
        };
        BatchParams {
            buckets,
            seed: Self::SEED,
        }
    }

    /// Angel et al.'s `B = max(⌈1.5k⌉, 3)` buckets: fewer keys and records per batch, but a
    /// batch of `k` indices has no placement far more often than `2^-40` (about `5.5·10^-4` at
    /// `k = 10`; see the module documentation). The client still serves only
    /// [`capacity`](Self::capacity) indices per batch from such a layout.
    pub fn angel(k: usize) -> Self {
        BatchParams {
            buckets: k.saturating_mul(3).div_ceil(2).max(HASHES),
            seed: Self::SEED,
        }
    }

    /// The largest batch these buckets serve with no placement except with probability
    /// `2^-`[`PLACEMENT_STAT_SEC`]: the largest `k ≤ `[`MAX_BATCH`] with
    /// `for_batch(k).buckets ≤ buckets` (three for `3 ≤ buckets` below that, since three
    /// indices always place; one for fewer than three buckets, whose hash values need not
    /// differ).
    pub fn capacity(&self) -> usize {
        if self.buckets < HASHES {
            return 1;
        }
        // `for_batch(k).buckets` grows with `k` (tested), so the accepted `k` form an
        // interval from 1: bisect for its end. Invariant: `lo` is accepted, `hi` is not.
        let fits = |k: usize| Self::for_batch(k).buckets <= self.buckets;
        let (mut lo, mut hi) = (HASHES, self.buckets.min(MAX_BATCH) + 1);
        if lo >= hi {
            return hi - 1;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The public assignment of records to buckets.
#[derive(Clone)]
pub struct BatchLayout {
    records: usize,
    params: BatchParams,
    /// The records of each bucket.
    bins: IndexBins,
    /// The hash functions, under the public seed.
    hasher: CuckooHasher,
}

impl core::fmt::Debug for BatchLayout {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BatchLayout")
            .field("records", &self.records)
            .field("buckets", &self.params.buckets)
            .field("listed", &self.bins.len())
            .finish()
    }
}

impl BatchLayout {
    /// Builds the layout of `records` records over `params.buckets` buckets (`2N` AES calls:
    /// [`IndexBins::build`] hashes every index twice rather than storing its buckets).
    ///
    /// Errors: [`Error::InvalidParameter`] for zero or too many records or buckets.
    pub fn new(records: usize, params: BatchParams) -> Result<Self> {
        if records == 0 || records > crate::db::MAX_RECORDS {
            return Err(Error::InvalidParameter {
                what: "number of records must be in 1..=2^32",
            });
        }
        if params.buckets == 0 || params.buckets > MAX_BATCH * 2 {
            return Err(Error::InvalidParameter {
                what: "number of buckets must be in 1..=2^15",
            });
        }
        // Both are in range for obliv-cuckoo (bins ≤ 2^15, indices ≤ 2^32), checked above.
        let hasher =
            CuckooHasher::new(Block::from_bytes(params.seed), params.buckets).map_err(|_| {
                Error::InvalidParameter {
                    what: "number of buckets out of range for the hash functions",
                }
            })?;
        let bins = IndexBins::build(&hasher, records).map_err(|_| Error::InvalidParameter {
            what: "number of records out of range for the hash functions",
        })?;
        Ok(BatchLayout {
            records,
            params,
            bins,
            hasher,
        })
    }

    /// The parameters.
    pub fn params(&self) -> BatchParams {
        self.params
    }

    /// Number of records `N`.
    pub fn records(&self) -> usize {
        self.records
    }

    /// Number of buckets `B`.
    pub fn buckets(&self) -> usize {
        self.params.buckets
    }

    /// The records listed in bucket `b`, in increasing order.
    pub fn bucket(&self, b: usize) -> &[u32] {
        self.bins.bin(b)
    }

    /// Records a batch answer scans: the total size of all buckets (`≤ 3N`).
    pub fn total_listed(&self) -> usize {
        self.bins.len()
    }

    /// DPF domain bits of bucket `b`.
    pub fn bucket_domain_bits(&self, b: usize) -> u32 {
        log2_ceil(self.bucket(b).len() as u64)
    }

    /// Length of a batch query message: the sum of the buckets' key lengths.
    pub fn query_len(&self) -> usize {
        (0..self.buckets())
            .map(|b| dpf::key_len(self.bucket_domain_bits(b)))
            .sum()
    }

    /// The buckets `[h_0(j), h_1(j), h_2(j)]` of record `j`.
    fn hashes(&self, j: usize) -> [u32; HASHES] {
        self.hasher.hash_index(j as u64)
    }

    /// The distinct buckets of record `j`, in increasing order.
    #[cfg(test)]
    fn choices(&self, j: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.hashes(j).iter().map(|&b| b as usize).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// A batch query: one message per server and, for each requested index, the bucket that
/// will hold its record.
///
/// The messages together, and the slots alone, reveal the indices: zeroized on drop, and
/// `Debug` shows only sizes.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct BatchQuery {
    /// The message for server 0 (the buckets' keys, concatenated).
    pub to_server0: Vec<u8>,
    /// The message for server 1.
    pub to_server1: Vec<u8>,
    /// For each requested index (in request order), its bucket.
    pub slots: Vec<usize>,
}

impl core::fmt::Debug for BatchQuery {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BatchQuery")
            .field("message_len", &self.to_server0.len())
            .field("indices", &self.slots.len())
            .finish_non_exhaustive()
    }
}

/// The bucket of each of `candidates` (their three buckets each) by an exact placement;
/// [`Error::CuckooFailure`] with the number left over if there is none.
fn place(candidates: &[[u32; HASHES]], buckets: usize) -> Result<Vec<usize>> {
    obliv_cuckoo::place_exact(candidates, buckets).map_err(|e| match e {
        obliv_cuckoo::Error::NoPlacement { unplaced } => Error::CuckooFailure { count: unplaced },
        // Candidates come from the layout's hasher, so they are all below `buckets`.
        _ => Error::InvalidParameter {
            what: "bucket out of range in the batch placement",
        },
    })
}

/// Builds a batch query for `indices` (duplicates allowed; each distinct index is fetched
/// once).
///
/// The working copies of the indices, their buckets, their positions in the buckets and the
/// serialised keys are zeroized before they are freed (the keys are written straight into
/// the messages); only the returned [`BatchQuery`] holds them afterwards. (The placement
/// search of [`obliv_cuckoo::place_exact`] keeps its own short-lived bookkeeping of which
/// item sits in which bucket.)
///
/// Errors: [`Error::IndexOutOfRange`], [`Error::InvalidParameter`] for more distinct indices
/// than buckets, [`Error::CuckooFailure`] if no placement exists.
pub fn query<R: CryptoRng + ?Sized>(
    layout: &BatchLayout,
    indices: &[usize],
    rng: &mut R,
) -> Result<BatchQuery> {
    // Every vector below is allocated at its final size, so none is reallocated (which would
    // free a copy without zeroizing it).
    let mut distinct = Zeroizing::new(indices.to_vec());
    distinct.sort_unstable();
    distinct.dedup();
    if let Some(&bad) = distinct.last().filter(|&&i| i >= layout.records) {
        return Err(Error::IndexOutOfRange {
            index: bad as u64,
            size: layout.records as u64,
        });
    }
    if distinct.len() > layout.buckets() {
        return Err(Error::InvalidParameter {
            what: "more distinct indices than buckets",
        });
    }
    let candidates: Zeroizing<Vec<[u32; HASHES]>> =
        Zeroizing::new(distinct.iter().map(|&j| layout.hashes(j)).collect());
    let placed = Zeroizing::new(place(&candidates, layout.buckets())?);
    // Position of each bucket's index, or a random one.
    let mut target: Zeroizing<Vec<Option<usize>>> = Zeroizing::new(vec![None; layout.buckets()]);
    for (item, &b) in placed.iter().enumerate() {
        let j = u32::try_from(distinct[item]).unwrap_or(u32::MAX);
        // j is listed in bucket b: b is one of its hash values.
        target[b] = layout.bucket(b).binary_search(&j).ok();
    }
    let mut q0 = Zeroizing::new(Vec::with_capacity(layout.query_len()));
    let mut q1 = Zeroizing::new(Vec::with_capacity(layout.query_len()));
    for (b, t) in target.iter().enumerate() {
        let n = layout.bucket_domain_bits(b);
        let len = layout.bucket(b).len().max(1) as u64;
        let alpha = match t {
            Some(p) => *p as u64,
            None => rng.next_u64() % len,
        };
        let (k0, k1) = dpf::gen_keys(n, alpha, rng)?;
        k0.write_bytes(&mut q0);
        k1.write_bytes(&mut q1);
    }
    let slots = indices
        .iter()
        .map(|i| {
            let pos = distinct.binary_search(i).unwrap_or(0);
            placed[pos]
        })
        .collect();
    Ok(BatchQuery {
        to_server0: core::mem::take(&mut *q0),
        to_server1: core::mem::take(&mut *q1),
        slots,
    })
}

/// A server's answer to a batch query: for each bucket, the XOR of its selected records
/// (`B · 16·stride` bytes). Scans every bucket once: `layout.total_listed()` records. Each
/// key's full-domain evaluation is wiped before it is freed (as in [`crate::dpf_pir::answer`]).
///
/// Errors: [`Error::WrongLength`] for a message of the wrong size, key errors for a
/// malformed key, [`Error::InvalidParameter`] if the layout is for another database size.
pub fn answer(db: &Database, layout: &BatchLayout, msg: &[u8]) -> Result<Vec<u8>> {
    if layout.records != db.len() {
        return Err(Error::InvalidParameter {
            what: "batch layout is for a database of another size",
        });
    }
    let expected = layout.query_len();
    if msg.len() != expected {
        return Err(Error::WrongLength {
            expected,
            got: msg.len(),
        });
    }
    let stride = db.stride();
    let mut out = vec![Block::ZERO; layout.buckets() * stride];
    let mut off = 0;
    for (b, acc) in out.chunks_exact_mut(stride).enumerate() {
        let n = layout.bucket_domain_bits(b);
        let len = dpf::key_len(n);
        let key = DpfKey::from_bytes_for_domain(&msg[off..off + len], n)?;
        off += len;
        let bits = Zeroizing::new(key.eval_full());
        db.xor_selected_indices(&bits, layout.bucket(b), acc)?;
    }
    Ok(Block::slice_as_bytes(&out).to_vec())
}

/// The requested records, in request order, from the two servers' answers.
///
/// Errors: [`Error::WrongLength`] if an answer is not `B` padded records long,
/// [`Error::InvalidParameter`] if `buckets` is not the query's layout's (a slot of the query
/// lies beyond it) or `record_len` is out of range.
pub fn reconstruct(
    record_len: usize,
    buckets: usize,
    query: &BatchQuery,
    answer0: &[u8],
    answer1: &[u8],
) -> Result<Vec<Vec<u8>>> {
    let padded = crate::dpf_pir::padded_len(record_len)?;
    if buckets > MAX_BATCH * 2 || query.slots.iter().any(|&b| b >= buckets) {
        return Err(Error::InvalidParameter {
            what: "the batch query is for a layout with other buckets",
        });
    }
    let expected = padded * buckets;
    for a in [answer0, answer1] {
        if a.len() != expected {
            return Err(Error::WrongLength {
                expected,
                got: a.len(),
            });
        }
    }
    query
        .slots
        .iter()
        .map(|&b| {
            let r = b * padded..b * padded + padded;
            crate::dpf_pir::reconstruct(record_len, &answer0[r.clone()], &answer1[r])
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use crate::dpf_pir;
    use obliv_core::AesRng;
    use rand_core::{Rng, SeedableRng};

    /// `for_batch` is obliv-cuckoo's 2^-40 table size (three buckets up to three indices),
    /// grows with `k` (which `capacity`'s bisection relies on), and every batch size up to
    /// `MAX_BATCH` gives a layout; `capacity` inverts it.
    #[test]
    fn placement_sizes_and_capacity() {
        let mut last = 0;
        for k in 1..=2000usize {
            let b = BatchParams::for_batch(k).buckets;
            assert!(b >= last, "k = {k}: {b} < {last}");
            last = b;
            if k > HASHES {
                let want = obliv_cuckoo::CuckooParams::new(k, PLACEMENT_STAT_SEC).unwrap();
                assert_eq!(b, want.bins, "k = {k}");
            } else {
                assert_eq!(b, HASHES);
            }
        }
        assert!(BatchParams::for_batch(MAX_BATCH).buckets <= 2 * MAX_BATCH);
        assert!(BatchLayout::new(100, BatchParams::for_batch(MAX_BATCH)).is_ok());
        for k in [1usize, 3, 4, 10, 32, 100, 1000, MAX_BATCH] {
            let p = BatchParams::for_batch(k);
            let cap = p.capacity();
            assert!(cap >= k, "k = {k}: capacity {cap}");
            if cap < MAX_BATCH {
                assert!(
                    BatchParams::for_batch(cap + 1).buckets > p.buckets,
                    "k = {k}"
                );
            }
        }
        // Angel et al.'s sizing serves small batches in threes only.
        assert_eq!(BatchParams::angel(10).capacity(), HASHES);
        assert_eq!(BatchParams::angel(32).capacity(), 4);
        for buckets in [1, 2] {
            let p = BatchParams {
                buckets,
                seed: BatchParams::SEED,
            };
            assert_eq!(p.capacity(), 1);
        }
    }

    /// Regression: `for_batch(10)` had Angel et al.'s 15 buckets, where about one batch of ten
    /// in 1 800 has no placement (a client that splits it tells the servers so). Now no
    /// placement fails in the same 100 000 batches that give about 55 failures with 15.
    #[test]
    fn default_placement_does_not_fail() {
        assert_eq!(
            placement_failures(BatchParams::for_batch(10), 10, 100_000, 13),
            0
        );
    }

    #[test]
    fn layout_lists_each_record_in_its_buckets() {
        let layout = BatchLayout::new(1000, BatchParams::angel(10)).unwrap();
        assert_eq!(layout.buckets(), 15);
        // Each record once in each of its distinct buckets: 3 listings per record.
        let listed = layout.total_listed();
        assert_eq!(listed, 3000);
        for j in 0..1000 {
            let c = layout.choices(j);
            for b in 0..15 {
                let listed = layout.bucket(b).binary_search(&(j as u32)).is_ok();
                assert_eq!(listed, c.contains(&b), "record {j} bucket {b}");
            }
        }
        for b in 0..15 {
            assert!(layout.bucket(b).windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn batch_agrees_with_single_queries() {
        let mut rng = AesRng::from_seed([12; 16]);
        for (n, len, k) in [
            (1usize, 8usize, 1usize),
            (50, 20, 10),
            (1000, 100, 10),
            (4096, 64, 32),
        ] {
            let db = Database::random(n, len, &mut rng).unwrap();
            let layout = BatchLayout::new(n, BatchParams::for_batch(k)).unwrap();
            for _ in 0..3 {
                let mut idx: Vec<usize> = (0..k)
                    .map(|_| (rng.next_u64() % n as u64) as usize)
                    .collect();
                if n > 1 {
                    idx[0] = n - 1;
                }
                let q = match query(&layout, &idx, &mut rng) {
                    Ok(q) => q,
                    Err(Error::CuckooFailure { .. }) => continue,
                    Err(e) => panic!("{e}"),
                };
                assert_eq!(q.to_server0.len(), layout.query_len());
                let a0 = answer(&db, &layout, &q.to_server0).unwrap();
                let a1 = answer(&db, &layout, &q.to_server1).unwrap();
                let recs = reconstruct(len, layout.buckets(), &q, &a0, &a1).unwrap();
                for (i, r) in idx.iter().zip(&recs) {
                    let single = dpf_pir::query(n, *i, &mut rng).unwrap();
                    let s = dpf_pir::reconstruct(
                        len,
                        &dpf_pir::answer(&db, &single.to_server0).unwrap(),
                        &dpf_pir::answer(&db, &single.to_server1).unwrap(),
                    )
                    .unwrap();
                    assert_eq!(r, &s);
                    assert_eq!(r.as_slice(), db.record(*i).unwrap());
                }
            }
        }
    }

    /// Batches of `k` random indices of 2^16 records (with repeats, as a client might ask)
    /// that have no placement into the buckets of `params`, out of `trials`.
    fn placement_failures(params: BatchParams, k: usize, trials: usize, seed: u8) -> usize {
        let mut rng = AesRng::from_seed([seed; 16]);
        let layout = BatchLayout::new(1 << 16, params).unwrap();
        let mut failures = 0;
        for _ in 0..trials {
            let idx: Vec<usize> = (0..k)
                .map(|_| (rng.next_u64() % (1 << 16)) as usize)
                .collect();
            let mut d = idx.clone();
            d.sort_unstable();
            d.dedup();
            let ch: Vec<[u32; HASHES]> = d.iter().map(|&j| layout.hashes(j)).collect();
            if place(&ch, layout.buckets()).is_err() {
                failures += 1;
            }
        }
        failures
    }

    /// Empirical placement failure rate for k = 10 in Angel et al.'s B = 15 buckets
    /// (documented above).
    #[test]
    fn failure_rate_k10() {
        let trials = 100_000;
        let failures = placement_failures(BatchParams::angel(10), 10, trials, 13);
        // Measured 553 in 10^6 with another seed: expect about 55 here (standard deviation
        // about 7.4).
        assert!(
            (25..100).contains(&failures),
            "{failures} failures in {trials}"
        );
    }

    /// The measurements behind the documented rates: a million batches at k = 10 and at
    /// k = 32 (a few seconds; `cargo test -p obliv-pir --lib -- --ignored --nocapture`).
    #[test]
    #[ignore = "long: 2 million placements"]
    fn failure_rates_documented() {
        let k10 = placement_failures(BatchParams::angel(10), 10, 1_000_000, 21);
        let k32 = placement_failures(BatchParams::angel(32), 32, 1_000_000, 22);
        println!("k = 10, B = 15: {k10} in 10^6; k = 32, B = 48: {k32} in 10^6");
        assert!((400..720).contains(&k10), "{k10}");
        assert!((5..45).contains(&k32), "{k32}");
    }

    #[test]
    fn errors() {
        let mut rng = AesRng::from_seed([14; 16]);
        let db = Database::random(100, 16, &mut rng).unwrap();
        let layout = BatchLayout::new(100, BatchParams::angel(4)).unwrap();
        assert!(matches!(
            query(&layout, &[100], &mut rng),
            Err(Error::IndexOutOfRange { .. })
        ));
        let too_many: Vec<usize> = (0..7).collect();
        assert!(matches!(
            query(&layout, &too_many, &mut rng),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            answer(&db, &layout, &[0; 3]),
            Err(Error::WrongLength { .. })
        ));
        let other = BatchLayout::new(99, BatchParams::angel(4)).unwrap();
        assert!(matches!(
            answer(&db, &other, &[]),
            Err(Error::InvalidParameter { .. })
        ));
        // A key with a wrong domain byte inside a well-sized message.
        let q = query(&layout, &[1, 2], &mut rng).unwrap();
        let mut bad = q.to_server0.clone();
        bad[0] ^= 1;
        assert!(answer(&db, &layout, &bad).is_err());
        assert!(BatchLayout::new(0, BatchParams::for_batch(4)).is_err());
    }

    /// `reconstruct` with fewer buckets than the query's layout (a caller's mistake, or a
    /// server's answer sized for another layout) is an error, not an out-of-bounds panic.
    #[test]
    fn reconstruct_with_other_buckets_is_an_error() {
        let mut rng = AesRng::from_seed([30; 16]);
        let layout = BatchLayout::new(500, BatchParams::for_batch(10)).unwrap();
        let q = query(&layout, &[1, 2, 3, 50, 400], &mut rng).unwrap();
        let far = q.slots.iter().copied().max().unwrap();
        assert!(far >= 1);
        // Answers of the length the (wrong) bucket count implies.
        let a = vec![0u8; 16 * far];
        assert!(matches!(
            reconstruct(16, far, &q, &a, &a),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            reconstruct(usize::MAX, layout.buckets(), &q, &a, &a),
            Err(Error::InvalidParameter { .. })
        ));
    }

    /// A huge batch size gives a bucket count the layout refuses (`3k` wrapped around to a
    /// small count: `for_batch(usize::MAX / 3 + 1)` had 3 buckets).
    #[test]
    fn huge_batch_sizes_are_refused() {
        for k in [
            usize::MAX / 3 + 1,
            usize::MAX / 2,
            usize::MAX,
            MAX_BATCH * 2,
        ] {
            for p in [BatchParams::for_batch(k), BatchParams::angel(k)] {
                assert!(p.buckets >= k.min(usize::MAX / 2), "{k}: {}", p.buckets);
                assert!(matches!(
                    BatchLayout::new(100, p),
                    Err(Error::InvalidParameter { .. })
                ));
            }
        }
        assert_eq!(BatchParams::angel(MAX_BATCH).buckets, MAX_BATCH * 3 / 2);
    }

    /// The batch query reveals the indices: `Debug` prints no key bytes or slots.
    #[test]
    fn batch_query_debug_hides_it_and_it_is_zeroized() {
        fn zeroized_on_drop<T: zeroize::ZeroizeOnDrop>(_: &T) {}
        let mut rng = AesRng::from_seed([31; 16]);
        let layout = BatchLayout::new(500, BatchParams::for_batch(10)).unwrap();
        let q = query(&layout, &[417, 483], &mut rng).unwrap();
        zeroized_on_drop(&q);
        for s in [format!("{q:?}"), format!("{q:#?}")] {
            assert!(!s.contains("slots") && !s.contains("to_server"), "{s}");
            assert!(!s.contains("417") && !s.contains("483"), "{s}");
            assert!(s.len() < 100, "{s}");
        }
    }
}
