//! Stash-less cuckoo hashing with three hash functions, and simple hashing into the same bins,
//! for PSI (KKRT16, batch OPRF) and batch PIR.
//!
//! - [`CuckooParams`]: the number of bins for `n` items and a statistical security parameter
//!   (2^-40 by default), from the empirical bound of [PSZ18] (see below).
//! - [`CuckooHasher`]: the three hash functions `h_0, h_1, h_2 : Block → [0, bins)`, from one
//!   AES call per item under a seed both parties share; an item's three bins are distinct
//!   (from three bins on).
//! - [`CuckooTable`]: every item in exactly one of its three bins, at most one item per bin, no
//!   stash; records which hash function placed each item; insertion is a bounded random walk
//!   and, when that gives up, an augmenting-path search, so it fails only when the items have
//!   no placement at all, returning [`Error::InsertionFailed`] with an item left over instead
//!   of looping.
//! - [`SimpleTable`]: the other side's items, each in all of its (distinct) bins.
//! - [`IndexBins`]: simple hashing of the integer indices `0..n` (hashed as `Block(j)`,
//!   [`CuckooHasher::hash_index`]), storing only the indices: the public bucket layout of
//!   batch PIR.
//! - [`place_exact`]: items into distinct bins among their candidates by augmenting paths,
//!   which finds a placement whenever one exists (the bounded random walk of
//!   [`CuckooTable`] may give up on a set that has one); for small sets such as a batch PIR
//!   client's indices.
//!
//! ```
//! use obliv_core::Block;
//! use obliv_cuckoo::{CuckooTable, SimpleTable};
//!
//! let seed = Block(42); // shared, drawn after the inputs are fixed
//! let mine: Vec<Block> = (0..1000u128).map(Block).collect();
//! let table = CuckooTable::build(&mine, seed).unwrap(); // 2^-40 failure bound
//! let (bin, idx) = table.find(Block(7)).unwrap(); // where item 7 sits
//! let (_, k) = table.bin(bin).unwrap(); // which hash function placed it
//! let theirs = SimpleTable::build(table.hasher(), &mine).unwrap();
//! assert!(theirs.bin(bin).iter().any(|e| e.item as usize == idx && (e.hashes >> k) & 1 == 1));
//! ```
//!
//! # Hash functions
//!
//! `y = AES_seed(x)` (a pseudorandom permutation of the 128-bit item, keyed by the shared
//! seed), and with `y_k` bits `42k .. 42k+42` of `y` and `r(v, m) = ⌊v · m / 2^42⌋` (Lemire's
//! multiply-shift range reduction; the bias is below `m / 2^42`, i.e. under 2^-14 for
//! `m ≤ 2^28`): `h_0 = r(y_0, bins)`, `h_1` is the `r(y_1, bins − 1)`-th bin other than
//! `h_0`, and `h_2` the `r(y_2, bins − 2)`-th bin other than both. So an item's three bins
//! are a uniform 3-subset of the bins (up to that bias), never a repeat: with independent
//! values two items could share one bin with probability about `n^2 / bins^5`, which would
//! dominate the failure probability of small tables. With one or two bins the values are
//! `r(y_k, bins)` and repeat. Items are 128-bit blocks; callers hash longer items first, and
//! an integer index `j` is the item `Block(j)`.
//! The seed is public: cuckoo hashing needs the hash functions to be independent of the
//! items, not secret. An adversary who chooses items *after* seeing the seed could force a
//! failure, so the seed should be drawn (or coin-tossed) after the inputs are fixed.
//!
//! # Table size: the bound used
//!
//! With `h = 3` hash functions and no stash, [PSZ18, §5] (Pinkas, Schneider, Zohner, "Scalable
//! Private Set Intersection Based on OT Extension", ACM TOPS 2018, ePrint 2016/930) fit their
//! experiments to `λ = a_n·e + b_n`, where `e = bins / n` and `2^-λ` is the failure
//! probability, with
//!
//! ```text
//! a_n = 123.5/2 · (1 + erf((log2 n − 6.3) / (2.3·√2)))
//! b_n = −130/2 · (1 + erf((log2 n − 6.45) / (2.18·√2))) − log2 n
//! ```
//!
//! (the form libOTe's `CuckooIndex::selectParams` uses), so `e = (λ − b_n) / a_n`. For large
//! `n`, `a_n → 123.5` and `b_n → −130 − log2 n`: `e ≈ 1.54` at `n = 2^20` and `1.57` at `2^24`
//! for λ = 40; small `n` needs far more (`e ≈ 3.1` at `n = 16`). [`CuckooParams::new`] uses
//! this bound, rounded up, with at least `n + 8` bins, and never fewer than
//! [`small_set_bins`]: the fit misses that a few items can have all their bins among too few
//! bins (four items on the same three bins: probability about `9·n^4 / bins^9`, 2^-35 for 8
//! items in the fit's 44 bins), which falls only polynomially with the table size, so a union
//! bound over every set of at most 64 items sets a floor (67 bins for 8 items, 230 for 100 at
//! λ = 40; it decides up to about a thousand items, and further at larger λ, where the fit's
//! linear extrapolation is least trustworthy). A table fails exactly when its items have no
//! placement ([`CuckooTable`] completes a failed random walk with an augmenting-path
//! search), the event both bounds are about.
//!
//! The formula SecretFlow uses, `e = (λ + log2 n + 256) / 240` (an older fit from the same
//! line of work: `e ≈ 1.32` at `2^20`), gives much smaller tables: by the fit above it reaches
//! only about 2^-13 at `n = 2^20`, and Google's DPF library notes that it "does not work" and
//! switched to the fit above. Asymptotically, 3-ary cuckoo hashing below the load threshold
//! (`e > 1.09`) fails with probability `Θ(n^{-2})`, which is where the folklore "1.27n is
//! enough for 2^-40 at 2^20" comes from — but that is an asymptotic statement without the
//! constant. We take the published, conservative empirical bound by default and let the
//! caller choose another factor with [`CuckooParams::with_factor`] (e.g. 1.27 for
//! benchmarks comparable with other libraries), documenting the trade-off there.
//!
//! The bound is per table. A job of `T` tables (buckets, shards, sessions) fails with up to
//! `T` times that probability: for `2^-40` over the job, size each table for
//! `λ = 40 + ⌈log2 T⌉` (obliv-psi's `job_stat_security` does this).
//!
//! # Side channels and what stays in memory
//!
//! Cuckoo insertion is inherently data dependent, and the hashes are public (the seed is
//! shared): whoever can compute `h_k(x)` for a guessed item `x` and observe the builder's
//! memory accesses (cache timing on the same machine) can test the guess. What building a
//! [`CuckooTable`] reveals to such an observer, and through its running time to anyone:
//!
//! - the bins every item is written to, read from and evicted from (indices that are functions
//!   of the items);
//! - the number of evictions of each insertion, whether the augmenting-path search runs and
//!   how far it goes (so the running time depends on the items, not only on their number);
//! - the outcome: a failure (probability at most `2^-λ` at the default size) is visible to
//!   anyone who sees the caller retry with a new seed.
//!
//! [`CuckooTable::find`] and [`CuckooTable::locate`] branch on the table's contents and
//! compare items with early exit; [`SimpleTable`], [`IndexBins`] and [`place_exact`] index
//! memory by the items' bins. Only the hashing itself ([`CuckooHasher::hash`] and friends,
//! AES and the range reduction) runs in time independent of the item. Build tables from
//! private items only where such an observer is not part of the threat model (the project's
//! `docs/security.md` lists cuckoo insertion among what is not protected against a
//! co-located process).
//!
//! [`CuckooTable`] keeps copies of its items and treats them as private: its `Debug` shows
//! only sizes, [`Error::InsertionFailed`] names an item by index only, and the items, their
//! hashes and their placement are wiped when the table is dropped (and when its buffers are
//! moved to grow). [`CuckooHasher::hash_many`] wipes its buffer of `AES_seed(x)` values
//! (which, under the public seed, are as good as the items). [`SimpleTable`] and
//! [`IndexBins`] hold item indices and bins, never items, and are not wiped;
//! [`place_exact`] wipes its working state.
//!
//! # Simple hashing and coinciding values
//!
//! [`SimpleTable`] stores each item in each of its bins once, with a bit mask of the hash
//! functions that lead there ([`SimpleEntry::hashes`]). From three bins on an item's bins are
//! distinct, so every mask has one bit and [`SimpleTable::len`] is exactly `3n`: the number of
//! (bin, item) pairs says nothing about the items. Only a table of one or two bins has
//! coinciding values (an item then sits in a bin once, with several bits set).
//!
//! [PSZ18]: https://eprint.iacr.org/2016/930
#![forbid(unsafe_code)]

use obliv_core::{Aes, Block};
use zeroize::{Zeroize, Zeroizing};

/// Number of hash functions.
pub const NUM_HASHES: usize = 3;

/// Default statistical security parameter λ (failure probability 2^-λ).
pub const DEFAULT_STAT_SEC: u32 = 40;

/// Default bound on evictions per insertion.
pub const DEFAULT_MAX_EVICTIONS: usize = 1000;

/// Largest number of items (and bins) a table may hold: indices are stored as `u32`.
pub const MAX_ITEMS: usize = (u32::MAX - 1) as usize;

/// Bits of the AES output used per hash function.
const HASH_BITS: u32 = 42;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The items have no placement: some of them have all their bins among fewer bins than
    /// they number (the random walk gave up and no augmenting path exists). The table is left
    /// holding the items up to the one whose insertion failed, each in a bin except the one
    /// reported (the items after it are not inserted); rebuild with a new seed or more bins.
    ///
    /// The error names the item by its index only: items are private inputs, and errors end up
    /// in logs and in callers' messages.
    #[error(
        "cuckoo insertion failed: no placement after {evictions} evictions and a full search; item {index} has no bin"
    )]
    InsertionFailed {
        /// Index (in the table's insertion order) of the item left without a bin: not
        /// necessarily the one being inserted, but the last one evicted.
        index: usize,
        /// Evictions the random walk tried before the search.
        evictions: usize,
    },
    /// Parameters out of range.
    #[error("invalid cuckoo parameters: {0}")]
    InvalidParams(String),
    /// An item index given twice, or the table is full.
    #[error("item index {0} is already in the table")]
    DuplicateIndex(usize),
    /// [`place_exact`]: the items have no placement into distinct bins.
    #[error("no placement into distinct bins: {unplaced} items left over")]
    NoPlacement {
        /// Items left without a bin by a maximum placement: the fewest items that must be
        /// dropped for the others to have a placement.
        unplaced: usize,
    },
}

/// Result of a cuckoo operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Table parameters: items, bins, and the eviction bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CuckooParams {
    /// Number of items the table is sized for.
    pub items: usize,
    /// Number of bins.
    pub bins: usize,
    /// Evictions the random walk tries per insertion before an augmenting-path search
    /// (which decides whether a placement exists) takes over.
    pub max_evictions: usize,
}

/// The error function, Abramowitz–Stegun 7.1.26 (absolute error below 1.5·10^-7), enough for
/// choosing a table size.
fn erf(x: f64) -> f64 {
    let sign = if x < 0.0 { -1.0 } else { 1.0 };
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    sign * y
}

/// Sets of at most this many items are bounded by [`small_set_bins`].
const SMALL_SET: usize = 64;

/// `log2` of the union bound on some set of `s` items, `4 ≤ s ≤ SMALL_SET`, having all its
/// (three distinct) bins among `s − 1` bins, which leaves no placement (Hall's condition):
/// `Σ_s C(n, s)·C(bins, s − 1)·(C(s − 1, 3) / C(bins, 3))^s`. Fewer than four items always
/// have a placement, their bins being distinct.
fn small_set_log2_bound(n: usize, bins: usize) -> f64 {
    #[allow(clippy::cast_precision_loss)] // counts below 2^53: exact enough for a bound
    let (nf, mf) = (n as f64, bins as f64);
    if bins < NUM_HASHES {
        return if n > bins { 0.0 } else { f64::NEG_INFINITY };
    }
    let ln_cm3 = (mf * (mf - 1.0) * (mf - 2.0) / 6.0).ln();
    let mut total = 0.0f64;
    // ln C(n, s) and ln C(bins, s − 1), kept up to date as s grows.
    let (mut ln_cn, mut ln_cm) = (0.0f64, 0.0f64);
    for s in 1..=n.min(SMALL_SET) {
        #[allow(clippy::cast_precision_loss)] // s ≤ 64
        let sf = s as f64;
        ln_cn += ((nf - sf + 1.0) / sf).ln();
        if s >= 2 {
            if s - 1 > bins {
                break;
            }
            // C(bins, s − 1) from C(bins, s − 2).
            ln_cm += ((mf - sf + 2.0) / (sf - 1.0)).ln();
        }
        if s < 4 {
            continue;
        }
        let ln_in = ((sf - 1.0) * (sf - 2.0) * (sf - 3.0) / 6.0).ln();
        total += (ln_cn + ln_cm + sf * (ln_in - ln_cm3)).exp();
    }
    if total > 0.0 {
        total.log2()
    } else {
        f64::NEG_INFINITY
    }
}

/// The fewest bins (at least `n`) for which a set of at most 64 items without a placement
/// (all its bins among fewer bins than it has items) occurs with probability at most
/// `2^-stat_sec`, by a union bound (see [`CuckooParams::factor`]); `MAX_ITEMS + 1` if even
/// [`MAX_ITEMS`] bins do not reach it.
pub fn small_set_bins(n: usize, stat_sec: u32) -> usize {
    let target = -f64::from(stat_sec);
    let (mut lo, mut hi) = (n.max(NUM_HASHES), MAX_ITEMS);
    if small_set_log2_bound(n, lo) <= target {
        return lo;
    }
    if small_set_log2_bound(n, hi) > target {
        return MAX_ITEMS + 1;
    }
    // The bound falls as the bins grow (each term like bins^(−2s−1)): bisect.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if small_set_log2_bound(n, mid) <= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

impl CuckooParams {
    /// The expansion factor `e = bins / n` for failure probability `2^-stat_sec`: the
    /// larger of the [PSZ18] fit and the small-set floor [`small_set_bins`]`(n, λ) / n`
    /// (see the crate documentation).
    ///
    /// The fit was measured around λ = 40 and extrapolates linearly in `e`; it misses
    /// failures of a few items whose bins all fall among too few bins, whose probability
    /// falls only polynomially with the table size (four items sharing the same three bins:
    /// about `9·n^4 / bins^9`). The floor bounds those events for every set of up to 64
    /// items; it decides below about a thousand items at λ = 40 (67 bins for 8 items where
    /// the fit gives 44, 230 for 100) and at large λ (λ = 64: up to a few thousand items).
    ///
    /// [PSZ18]: https://eprint.iacr.org/2016/930
    pub fn factor(n: usize, stat_sec: u32) -> f64 {
        let nn = (n.max(1) as f64).log2();
        let a = 123.5 / 2.0 * (1.0 + erf((nn - 6.3) / (2.3 * std::f64::consts::SQRT_2)));
        let b = -130.0 / 2.0 * (1.0 + erf((nn - 6.45) / (2.18 * std::f64::consts::SQRT_2))) - nn;
        let fit = (f64::from(stat_sec) - b) / a;
        #[allow(clippy::cast_precision_loss)] // counts below 2^53
        let floor = small_set_bins(n, stat_sec) as f64 / n.max(1) as f64;
        fit.max(floor)
    }

    /// Parameters for `n` items and failure probability `2^-stat_sec`, by [`Self::factor`].
    pub fn new(n: usize, stat_sec: u32) -> Result<Self> {
        Self::with_factor(n, Self::factor(n, stat_sec))
    }

    /// Parameters for `n` items at the default 2^-40.
    pub fn for_items(n: usize) -> Result<Self> {
        Self::new(n, DEFAULT_STAT_SEC)
    }

    /// Parameters with a caller-chosen expansion factor `e` (`bins = ⌈e·n⌉`, at least
    /// `n + 8`, at most [`MAX_ITEMS`]). The failure probability is then the caller's
    /// responsibility: by the [PSZ18] fit it is about `2^-(a_n·e + b_n)`, e.g. 2^-7 for
    /// `e = 1.27` at `n = 2^20`, while empirically (and asymptotically, `Θ(n^-2)`) such
    /// tables rarely fail.
    ///
    /// [PSZ18]: https://eprint.iacr.org/2016/930
    pub fn with_factor(n: usize, e: f64) -> Result<Self> {
        if n > MAX_ITEMS {
            return Err(Error::InvalidParams(format!(
                "{n} items, at most {MAX_ITEMS}"
            )));
        }
        if !e.is_finite() || e < 1.0 {
            return Err(Error::InvalidParams(format!("expansion factor {e} < 1")));
        }
        let bins_f = (e * n as f64).ceil();
        if bins_f > MAX_ITEMS as f64 {
            return Err(Error::InvalidParams(format!(
                "{bins_f} bins, at most {MAX_ITEMS}"
            )));
        }
        #[allow(clippy::cast_possible_truncation)] // checked against MAX_ITEMS just above
        let bins = (bins_f as usize).max(n.saturating_add(8));
        if bins > MAX_ITEMS {
            return Err(Error::InvalidParams(format!(
                "{bins} bins (at least n + 8 for {n} items), at most {MAX_ITEMS}"
            )));
        }
        Ok(CuckooParams {
            items: n,
            bins,
            max_evictions: DEFAULT_MAX_EVICTIONS,
        })
    }

    /// Parameters with an explicit number of bins (at least 1, at most [`MAX_ITEMS`]).
    pub fn with_bins(n: usize, bins: usize) -> Result<Self> {
        if bins == 0 || bins > MAX_ITEMS || n > MAX_ITEMS {
            return Err(Error::InvalidParams(format!("{bins} bins for {n} items")));
        }
        Ok(CuckooParams {
            items: n,
            bins,
            max_evictions: DEFAULT_MAX_EVICTIONS,
        })
    }
}

/// The three hash functions, keyed by a shared seed (see the crate documentation).
#[derive(Clone, Debug)]
pub struct CuckooHasher {
    aes: Aes,
    bins: u64,
}

impl CuckooHasher {
    /// Hash functions onto `bins` bins (`1 ≤ bins ≤ MAX_ITEMS`) under `seed`.
    pub fn new(seed: Block, bins: usize) -> Result<Self> {
        if bins == 0 || bins > MAX_ITEMS {
            return Err(Error::InvalidParams(format!("{bins} bins")));
        }
        Ok(CuckooHasher {
            aes: Aes::new(seed),
            bins: bins as u64,
        })
    }

    /// Number of bins.
    pub fn bins(&self) -> usize {
        // `bins` came from a usize in `new`.
        usize::try_from(self.bins).unwrap_or(usize::MAX)
    }

    /// `⌊part · range / 2^42⌋` for a 42-bit `part` and `range < 2^32`: below `range`.
    #[inline]
    fn scale(part: u128, range: u64) -> u32 {
        // part < 2^42 and range < 2^32, so the product fits in 74 bits and the shifted
        // result is < range ≤ u32::MAX.
        #[allow(clippy::cast_possible_truncation)]
        {
            ((part * u128::from(range)) >> HASH_BITS) as u32
        }
    }

    /// Three distinct bins (for at least three bins) from the 126 low bits of `y`: the first
    /// from `bins` values, the second from the `bins − 1` others, the third from the
    /// `bins − 2` left (an order-preserving map skipping the bins already taken), so the
    /// three are a uniform 3-subset up to the multiply-shift bias.
    #[inline]
    fn reduce(&self, y: u128) -> [u32; NUM_HASHES] {
        let mask = (1u128 << HASH_BITS) - 1;
        let part = |k: u32| (y >> (HASH_BITS * k)) & mask;
        if self.bins < NUM_HASHES as u64 {
            // One or two bins: the values must coincide; independent choices.
            return [0, 1, 2].map(|k| Self::scale(part(k), self.bins));
        }
        let h0 = Self::scale(part(0), self.bins);
        let mut h1 = Self::scale(part(1), self.bins - 1);
        h1 += u32::from(h1 >= h0);
        let (lo, hi) = (h0.min(h1), h0.max(h1));
        let mut h2 = Self::scale(part(2), self.bins - 2);
        h2 += u32::from(h2 >= lo);
        h2 += u32::from(h2 >= hi);
        [h0, h1, h2]
    }

    /// The bins `[h_0(x), h_1(x), h_2(x)]` of one item.
    pub fn hash(&self, x: Block) -> [u32; NUM_HASHES] {
        self.reduce(self.aes.encrypt_block(x).0)
    }

    /// The bins of the integer index `j`, hashed as the item `Block(j)` (the encoding
    /// [`IndexBins`] and [`CuckooHasher::hash_index_range`] use).
    pub fn hash_index(&self, j: u64) -> [u32; NUM_HASHES] {
        self.hash(Block(u128::from(j)))
    }

    /// The bins of the indices `start, start + 1, …` (AES batched):
    /// `out[i] = hash_index(start + i)`.
    pub fn hash_index_range(&self, start: u64, out: &mut [[u32; NUM_HASHES]]) {
        let mut buf = [Block::ZERO; 256];
        let mut next = u128::from(start);
        for oc in out.chunks_mut(256) {
            let b = &mut buf[..oc.len()];
            for blk in b.iter_mut() {
                *blk = Block(next);
                next += 1;
            }
            self.aes.encrypt_blocks(b);
            for (o, y) in oc.iter_mut().zip(b.iter()) {
                *o = self.reduce(y.0);
            }
        }
    }

    /// The bins of many items (AES batched): `out[i] = hash(xs[i])`.
    ///
    /// # Panics
    /// Panics if the slices differ in length (a caller bug).
    pub fn hash_many(&self, xs: &[Block], out: &mut [[u32; NUM_HASHES]]) {
        assert_eq!(
            xs.len(),
            out.len(),
            "hash_many: slices of different lengths"
        );
        let mut buf = [Block::ZERO; 256];
        for (xc, oc) in xs.chunks(256).zip(out.chunks_mut(256)) {
            let b = &mut buf[..xc.len()];
            self.aes.encrypt_blocks_into(xc, b);
            for (o, y) in oc.iter_mut().zip(b.iter()) {
                *o = self.reduce(y.0);
            }
        }
        // `AES_seed` under the public seed is invertible: the buffer is as private as the
        // items.
        buf.zeroize();
    }
}

const EMPTY: u32 = u32::MAX;

/// A stash-less cuckoo table: each inserted item sits in exactly one of its three bins.
///
/// The items are treated as private: `Debug` shows only the sizes, and the items, their
/// hashes and their placement are wiped on drop. Building the table is data dependent all
/// the same (see *Side channels* in the crate documentation).
#[derive(Clone)]
pub struct CuckooTable {
    hasher: CuckooHasher,
    max_evictions: usize,
    /// `slots[b]` = index of the item in bin `b`, or `EMPTY`.
    slots: Vec<u32>,
    /// `which[b]` = the hash function that placed it.
    which: Vec<u8>,
    /// The items by index and their three bins.
    items: Vec<Block>,
    hashes: Vec<[u32; NUM_HASHES]>,
    /// xorshift state for the random walk (public, only steers eviction choices).
    walk: u64,
}

impl core::fmt::Debug for CuckooTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CuckooTable")
            .field("bins", &self.slots.len())
            .field("items", &self.items.len())
            .finish_non_exhaustive()
    }
}

impl CuckooTable {
    /// An empty table with `params.bins` bins and hash functions under `seed`.
    ///
    /// Errors: [`Error::InvalidParams`] for no bins, or more than [`MAX_ITEMS`] bins or
    /// items (the fields are public: they are checked here, before anything is allocated).
    pub fn new(params: &CuckooParams, seed: Block) -> Result<Self> {
        if params.items > MAX_ITEMS {
            return Err(Error::InvalidParams(format!(
                "{} items, at most {MAX_ITEMS}",
                params.items
            )));
        }
        let hasher = CuckooHasher::new(seed, params.bins)?;
        let (lo, hi) = seed.to_u64s();
        // A table holds at most one item per bin.
        let capacity = params.items.min(params.bins);
        Ok(CuckooTable {
            hasher,
            max_evictions: params.max_evictions,
            slots: vec![EMPTY; params.bins],
            which: vec![0; params.bins],
            items: Vec::with_capacity(capacity),
            hashes: Vec::with_capacity(capacity),
            walk: (lo ^ hi.rotate_left(17)) | 1,
        })
    }

    /// Builds a table of `items` (item `i` gets index `i`) for the default 2^-40 parameters.
    pub fn build(items: &[Block], seed: Block) -> Result<Self> {
        let params = CuckooParams::for_items(items.len())?;
        Self::build_with(&params, items, seed)
    }

    /// Builds a table of `items` with the given parameters.
    pub fn build_with(params: &CuckooParams, items: &[Block], seed: Block) -> Result<Self> {
        let mut t = Self::new(params, seed)?;
        t.insert_all(items)?;
        Ok(t)
    }

    /// Inserts items; item `items[j]` gets index `len() + j`.
    ///
    /// Errors: [`Error::InvalidParams`] if the items do not fit the bins (nothing is
    /// inserted); [`Error::InsertionFailed`] if they have no placement, leaving the table as
    /// that error describes: the items after the one whose insertion failed are not in it.
    pub fn insert_all(&mut self, items: &[Block]) -> Result<()> {
        // Both lengths are below isize::MAX / 16: the sum does not overflow.
        let total = self.items.len() + items.len();
        if total > self.slots.len() || total > MAX_ITEMS {
            return Err(Error::InvalidParams(format!(
                "{total} items do not fit {} bins",
                self.slots.len()
            )));
        }
        let start = self.items.len();
        self.reserve_wiped(total);
        self.items.extend_from_slice(items);
        self.hashes.resize(total, [0; NUM_HASHES]);
        self.hasher.hash_many(items, &mut self.hashes[start..]);
        for i in start..total {
            if let Err(e) = self.place(i) {
                // The items after `i` were never offered a bin: take them out again (wiped).
                self.items[i + 1..].zeroize();
                self.items.truncate(i + 1);
                self.hashes[i + 1..].iter_mut().for_each(Zeroize::zeroize);
                self.hashes.truncate(i + 1);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Makes room for `total` items and their hashes, moving them to new buffers by hand
    /// (the old ones wiped) rather than letting a vector grow, which frees its old buffer as
    /// it is.
    fn reserve_wiped(&mut self, total: usize) {
        // Doubling, as a vector would (one item at a time stays linear), within the bins.
        let cap = total.max(
            self.items
                .capacity()
                .saturating_mul(2)
                .min(self.slots.len()),
        );
        if self.items.capacity() < total {
            let mut items = Vec::with_capacity(cap);
            items.extend_from_slice(&self.items);
            self.items.zeroize();
            self.items = items;
        }
        if self.hashes.capacity() < total {
            let mut hashes = Vec::with_capacity(cap);
            hashes.extend_from_slice(&self.hashes);
            self.hashes.zeroize();
            self.hashes = hashes;
        }
    }

    /// Inserts one item; returns its index.
    pub fn insert(&mut self, item: Block) -> Result<usize> {
        let i = self.items.len();
        self.insert_all(&[item])?;
        Ok(i)
    }

    #[inline]
    fn next_walk(&mut self) -> u64 {
        let mut x = self.walk;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.walk = x;
        x
    }

    /// Random-walk insertion of item `i` (bounded).
    fn place(&mut self, i: usize) -> Result<()> {
        #[allow(clippy::cast_possible_truncation)] // i < MAX_ITEMS, checked in insert_all
        let mut cur = i as u32;
        let mut avoid = usize::MAX; // bin we were just evicted from
        for evictions in 0..=self.max_evictions {
            let hs = self.hashes[cur as usize];
            // A free bin among the item's bins?
            for (k, &b) in hs.iter().enumerate() {
                if self.slots[b as usize] == EMPTY {
                    self.slots[b as usize] = cur;
                    #[allow(clippy::cast_possible_truncation)] // k < 3
                    {
                        self.which[b as usize] = k as u8;
                    }
                    return Ok(());
                }
            }
            if evictions == self.max_evictions {
                break;
            }
            // Evict from a random bin of the item, other than the one it was just evicted from.
            let r = self.next_walk();
            let mut k = usize::from(r % 3 == 1) + 2 * usize::from(r % 3 == 2);
            if hs[k] as usize == avoid {
                k = (k + 1 + usize::from(r & (1 << 40) != 0)) % NUM_HASHES;
            }
            let b = hs[k] as usize;
            let out = self.slots[b];
            self.slots[b] = cur;
            #[allow(clippy::cast_possible_truncation)] // k < 3
            {
                self.which[b] = k as u8;
            }
            cur = out;
            avoid = b;
        }
        // The walk gave up: search for an augmenting path from the item left over, which
        // exists exactly when the items have a placement (Berge), so the table fails only
        // when Hall's condition does, the event the table size bounds.
        if self.augment(cur) {
            return Ok(());
        }
        Err(Error::InsertionFailed {
            index: cur as usize,
            evictions: self.max_evictions,
        })
    }

    /// Places item `start`, which has no bin while every other item has one, by an
    /// augmenting path (depth-first, iterative): items along the path each move to another
    /// of their bins, ending in a free one. Returns `false`, leaving the table as it was, if
    /// no such path exists (then the current placement is maximum and no placement holds
    /// every item). `O(bins + 3n)` time; only run when the random walk gives up.
    fn augment(&mut self, start: u32) -> bool {
        let mut seen = vec![false; self.slots.len()];
        // The path: (item, next hash function to try), and the bin each step went through.
        let mut stack: Vec<(u32, usize)> = vec![(start, 0)];
        let mut through: Vec<usize> = Vec::new();
        while let Some(top) = stack.last_mut() {
            let (item, k) = *top;
            if k == NUM_HASHES {
                stack.pop();
                through.pop();
                continue;
            }
            top.1 += 1;
            let b = self.hashes[item as usize][k] as usize;
            if seen[b] {
                continue;
            }
            seen[b] = true;
            let owner = self.slots[b];
            if owner != EMPTY {
                through.push(b);
                stack.push((owner, 0));
                continue;
            }
            // A free bin: the last item takes it, every earlier one the bin it went through
            // (the hash function it used for that step is one before its counter).
            self.slots[b] = item;
            #[allow(clippy::cast_possible_truncation)] // hash function indices are < 3
            {
                self.which[b] = k as u8;
                for (&(it, next), &tb) in stack.iter().zip(&through) {
                    self.slots[tb] = it;
                    self.which[tb] = (next - 1) as u8;
                }
            }
            return true;
        }
        false
    }

    /// Number of bins.
    pub fn bins(&self) -> usize {
        self.slots.len()
    }

    /// Number of items inserted.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no item was inserted.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The hash functions (to give the other side the same bins).
    pub fn hasher(&self) -> &CuckooHasher {
        &self.hasher
    }

    /// Bin `b`: `Some((item index, hash function index))` or `None` if empty.
    pub fn bin(&self, b: usize) -> Option<(usize, usize)> {
        match self.slots.get(b) {
            Some(&s) if s != EMPTY => Some((s as usize, usize::from(self.which[b]))),
            _ => None,
        }
    }

    /// The item in bin `b`, or `None`.
    pub fn item_in_bin(&self, b: usize) -> Option<Block> {
        self.bin(b).map(|(i, _)| self.items[i])
    }

    /// Where item `index` sits: `(bin, hash function index)`, or `None` for an unknown index.
    /// (Linear in the three candidate bins.)
    pub fn locate(&self, index: usize) -> Option<(usize, usize)> {
        let hs = self.hashes.get(index)?;
        hs.iter().find_map(|&b| {
            let b = b as usize;
            (self.slots[b] as usize == index).then(|| (b, usize::from(self.which[b])))
        })
    }

    /// Finds an item: `Some((bin, index))` if `x` is in the table.
    pub fn find(&self, x: Block) -> Option<(usize, usize)> {
        self.hasher.hash(x).iter().find_map(|&b| {
            let b = b as usize;
            let s = self.slots[b];
            (s != EMPTY && self.items[s as usize] == x).then_some((b, s as usize))
        })
    }

    /// For each bin, the item in it or `filler` for an empty bin: the OPRF inputs of a KKRT
    /// receiver (which uses a random dummy as `filler` so empty bins look like full ones).
    pub fn bin_items(&self, filler: Block) -> Vec<Block> {
        self.slots
            .iter()
            .map(|&s| {
                if s == EMPTY {
                    filler
                } else {
                    self.items[s as usize]
                }
            })
            .collect()
    }
}

/// The items are private inputs (a PSI receiver's set), and their hashes and placement are
/// functions of them: all wiped when the table is dropped.
impl Drop for CuckooTable {
    fn drop(&mut self) {
        self.items.zeroize();
        self.hashes.zeroize();
        self.slots.zeroize();
        self.which.zeroize();
        self.walk.zeroize();
    }
}

/// One entry of a [`SimpleTable`] bin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimpleEntry {
    /// Index of the item in the input.
    pub item: u32,
    /// Bit `k` set if `h_k(item)` is this bin (one bit from three bins on; two or three when
    /// hash values coincide, in tables of one or two bins).
    pub hashes: u8,
}

/// Simple hashing: every item in each of its distinct bins (deduplicated per bin).
///
/// Stored compactly (one offsets array and one entry array), so 2^24 items take
/// about `3 · 8 · 2^24` bytes.
#[derive(Clone, Debug)]
pub struct SimpleTable {
    offsets: Vec<usize>,
    entries: Vec<SimpleEntry>,
}

impl SimpleTable {
    /// Hashes `items` into `hasher.bins()` bins.
    pub fn build(hasher: &CuckooHasher, items: &[Block]) -> Result<Self> {
        if items.len() > MAX_ITEMS {
            return Err(Error::InvalidParams(format!("{} items", items.len())));
        }
        let bins = hasher.bins();
        // 1. The distinct (bin, entry) pairs of every item, in input order (sequential).
        let mut pairs: Vec<(u32, SimpleEntry)> = Vec::with_capacity(items.len() * NUM_HASHES);
        let mut hs = [[0u32; NUM_HASHES]; 256];
        for (c, chunk) in items.chunks(256).enumerate() {
            let h = &mut hs[..chunk.len()];
            hasher.hash_many(chunk, h);
            for (j, h) in h.iter().enumerate() {
                // i < MAX_ITEMS < 2^32, checked above.
                #[allow(clippy::cast_possible_truncation)]
                let item = (c * 256 + j) as u32;
                let first = pairs.len();
                for (k, &b) in h.iter().enumerate() {
                    if let Some(e) = pairs[first..].iter_mut().find(|e| e.0 == b) {
                        e.1.hashes |= 1 << k;
                    } else {
                        pairs.push((
                            b,
                            SimpleEntry {
                                item,
                                hashes: 1 << k,
                            },
                        ));
                    }
                }
            }
        }
        // 2. Partition by bin range into P parts (P write streams, cache friendly); the
        //    partition of bin b is ⌊b·P / bins⌋, monotone in b.
        const P: usize = 256;
        // b < bins, so the quotient is < P.
        #[allow(clippy::cast_possible_truncation)]
        let part = |b: u32| (u64::from(b) * P as u64 / bins as u64) as usize;
        let mut pcount = [0usize; P + 1];
        for &(b, _) in &pairs {
            pcount[part(b) + 1] += 1;
        }
        for p in 0..P {
            pcount[p + 1] += pcount[p];
        }
        let mut pfill = pcount;
        let mut parted = vec![(0u32, SimpleEntry { item: 0, hashes: 0 }); pairs.len()];
        for &pe in &pairs {
            let p = part(pe.0);
            parted[pfill[p]] = pe;
            pfill[p] += 1;
        }
        drop(pairs);
        // 3. Within each partition (a small range of bins), count and place: every access
        //    stays inside a cache-sized window. Items keep their input order within a bin.
        let mut offsets = vec![0usize; bins + 1];
        let mut entries = vec![SimpleEntry { item: 0, hashes: 0 }; parted.len()];
        let mut lo_bin = 0usize;
        for p in 0..P {
            let slice = &parted[pcount[p]..pcount[p + 1]];
            // Bins of partition p: [lo_bin, hi_bin).
            let hi_bin = if p + 1 == P {
                bins
            } else {
                // Smallest b with part(b) ≥ p + 1.
                ((p + 1) * bins).div_ceil(P)
            };
            for &(b, _) in slice {
                offsets[b as usize + 1] += 1;
            }
            offsets[lo_bin] = pcount[p];
            for b in lo_bin..hi_bin {
                offsets[b + 1] += offsets[b];
            }
            let mut fill: Vec<usize> = offsets[lo_bin..hi_bin].to_vec();
            for &(b, e) in slice {
                let at = &mut fill[b as usize - lo_bin];
                entries[*at] = e;
                *at += 1;
            }
            lo_bin = hi_bin;
        }
        Ok(SimpleTable { offsets, entries })
    }

    /// Number of bins.
    pub fn bins(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Total (bin, item) pairs (at most `3n`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries of bin `b` (empty for `b` out of range).
    pub fn bin(&self, b: usize) -> &[SimpleEntry] {
        match (self.offsets.get(b), self.offsets.get(b + 1)) {
            (Some(&s), Some(&e)) => &self.entries[s..e],
            _ => &[],
        }
    }

    /// The largest bin.
    pub fn max_bin_len(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// All `(bin, entry)` pairs in bin order (the form a batched OPRF evaluation takes).
    pub fn iter(&self) -> impl Iterator<Item = (usize, SimpleEntry)> + '_ {
        self.offsets
            .windows(2)
            .enumerate()
            .flat_map(move |(b, w)| self.entries[w[0]..w[1]].iter().map(move |e| (b, *e)))
    }
}

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Largest number of indices [`IndexBins`] takes: they are stored as `u32`.
pub const MAX_INDICES: u64 = 1 << 32;

/// Simple hashing of the integer indices `0..n` (e.g. the records of a database): every
/// index in each of its distinct bins, each bin listing its indices in increasing order.
///
/// Index `j` is hashed as the item `Block(j)` ([`CuckooHasher::hash_index`]), so
/// [`place_exact`] with the candidates `hash_index(j)` puts every index into a bin that lists
/// it. Only the indices are stored (4 bytes per (bin, index) pair and one offset per bin),
/// and the build takes two passes of one AES call per index (count, then fill) instead of
/// keeping the hashes, so its peak memory is the table itself (at most `12n` bytes plus the
/// offsets). The fill pass scatters into all bins at once: meant for few bins, such as the
/// buckets of batch PIR; for bins of the order of `n` use [`SimpleTable`] (cache-partitioned,
/// with the hash masks).
#[derive(Clone, Debug)]
pub struct IndexBins {
    /// Bin `b` lists `members[offsets[b]..offsets[b + 1]]`.
    offsets: Vec<usize>,
    members: Vec<u32>,
}

/// The distinct values among an item's three bins, in hash function order, and how many.
#[inline]
fn distinct(h: [u32; NUM_HASHES]) -> ([u32; NUM_HASHES], usize) {
    let mut out = [h[0]; NUM_HASHES];
    let mut m = 1;
    for &b in &h[1..] {
        if !out[..m].contains(&b) {
            out[m] = b;
            m += 1;
        }
    }
    (out, m)
}

impl IndexBins {
    /// Hashes the indices `0..n` into `hasher.bins()` bins (`n ≤ MAX_INDICES`).
    pub fn build(hasher: &CuckooHasher, n: usize) -> Result<Self> {
        if n as u64 > MAX_INDICES {
            return Err(Error::InvalidParams(format!(
                "{n} indices, at most {MAX_INDICES}"
            )));
        }
        let bins = hasher.bins();
        let mut hs = [[0u32; NUM_HASHES]; 256];
        // Pass 1: the size of every bin (counted one slot ahead for the prefix sum).
        let mut offsets = vec![0usize; bins + 1];
        for start in (0..n).step_by(256) {
            let h = &mut hs[..(n - start).min(256)];
            hasher.hash_index_range(start as u64, h);
            for &hj in h.iter() {
                let (d, m) = distinct(hj);
                for &b in &d[..m] {
                    offsets[b as usize + 1] += 1;
                }
            }
        }
        for b in 0..bins {
            offsets[b + 1] += offsets[b];
        }
        // Pass 2: the same hashes again, each index appended to its bins in increasing order.
        let mut fill: Vec<usize> = offsets[..bins].to_vec();
        let mut members = vec![0u32; offsets[bins]];
        for start in (0..n).step_by(256) {
            let h = &mut hs[..(n - start).min(256)];
            hasher.hash_index_range(start as u64, h);
            for (i, &hj) in h.iter().enumerate() {
                // start + i < n ≤ 2^32, checked above.
                #[allow(clippy::cast_possible_truncation)]
                let j = (start + i) as u32;
                let (d, m) = distinct(hj);
                for &b in &d[..m] {
                    let at = &mut fill[b as usize];
                    members[*at] = j;
                    *at += 1;
                }
            }
        }
        Ok(IndexBins { offsets, members })
    }

    /// Number of bins.
    pub fn bins(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Total (bin, index) pairs (at most `3n`).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The indices of bin `b`, in increasing order (empty for `b` out of range).
    pub fn bin(&self, b: usize) -> &[u32] {
        match (self.offsets.get(b), self.offsets.get(b + 1)) {
            (Some(&s), Some(&e)) => &self.members[s..e],
            _ => &[],
        }
    }

    /// The largest bin.
    pub fn max_bin_len(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }
}

/// An exact placement of items into distinct bins: item `i` goes into one of the bins
/// `candidates[i]` (repeats allowed, e.g. coinciding hash values), no bin takes two items,
/// and the placement is found **whenever one exists**.
///
/// Returns the bin of each item, or [`Error::NoPlacement`] with the number of items a maximum
/// placement leaves over; [`Error::InvalidParams`] if a candidate is not below `bins`.
///
/// This is a maximum bipartite matching by augmenting paths (Kuhn's algorithm): the items are
/// inserted in order, each by a depth-first search for a path from the item, through bins
/// whose owners move to another of their candidates, to a free bin. A matching with no
/// augmenting path is maximum (Berge), so an item that finds none can be left out for good
/// and the count of such items is the deficiency of Hall's condition. With `k` items and `m`
/// candidate entries in all, each search visits every bin and entry at most once: `O(k·m)`
/// time at worst (`O(k^2)` for three candidates per item), `O(bins + k)` memory, and no
/// recursion. Unlike the bounded random walk of [`CuckooTable`], which can give up on a set
/// that has a placement, it fails only when Hall's condition does (some `s` bins are the only
/// candidates of more than `s` items); use it for small sets where that difference matters,
/// such as the client's indices in batch PIR. It is variable-time in the candidates; its
/// working state (which item sits in which bin) is wiped before it returns.
pub fn place_exact<C: AsRef<[u32]>>(candidates: &[C], bins: usize) -> Result<Vec<usize>> {
    const FREE: usize = usize::MAX;
    if let Some(b) = candidates
        .iter()
        .flat_map(|c| c.as_ref().iter())
        .find(|&&b| b as usize >= bins)
    {
        return Err(Error::InvalidParams(format!(
            "candidate bin {b} of {bins} bins"
        )));
    }
    // owner[b]: the item in bin b. seen[b] == epoch: bin b visited by the current search.
    // Like the path below, they describe the placement (secret for a PIR client): wiped on
    // every return, and sized up front so no copy is left behind by a reallocation.
    let mut owner = Zeroizing::new(vec![FREE; bins]);
    let mut seen = Zeroizing::new(vec![0usize; bins]);
    // The search path: [item, next candidate to try], and the bin each step went through
    // (an item is on the path at most once).
    let mut stack: Zeroizing<Vec<[usize; 2]>> =
        Zeroizing::new(Vec::with_capacity(candidates.len() + 1));
    let mut through: Zeroizing<Vec<usize>> = Zeroizing::new(Vec::with_capacity(candidates.len()));
    let mut unplaced = 0;
    for (epoch, start) in (1..).zip(0..candidates.len()) {
        stack.clear();
        through.clear();
        stack.push([start, 0]);
        let mut placed = false;
        while let Some(top) = stack.last_mut() {
            let [item, next] = *top;
            let Some(&b) = candidates[item].as_ref().get(next) else {
                // Dead end: no free bin reachable from this item.
                stack.pop();
                through.pop();
                continue;
            };
            top[1] += 1;
            let b = b as usize;
            if seen[b] == epoch {
                continue;
            }
            seen[b] = epoch;
            if owner[b] == FREE {
                // Augment: each item on the path moves into the bin it went through.
                owner[b] = item;
                for (&[it, _], &tb) in stack.iter().zip(through.iter()) {
                    owner[tb] = it;
                }
                placed = true;
                break;
            }
            through.push(b);
            stack.push([owner[b], 0]);
        }
        if !placed {
            unplaced += 1;
        }
    }
    if unplaced > 0 {
        return Err(Error::NoPlacement { unplaced });
    }
    let mut slot = vec![0usize; candidates.len()];
    for (b, &o) in owner.iter().enumerate() {
        if o != FREE {
            slot[o] = b;
        }
    }
    Ok(slot)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use obliv_core::Prg;
    use proptest::prelude::*;

    fn items(n: usize, seed: u128) -> Vec<Block> {
        Prg::new(Block(seed)).blocks(n)
    }

    #[test]
    fn factors_follow_the_fit() {
        let e20 = CuckooParams::factor(1 << 20, 40);
        assert!((1.53..1.55).contains(&e20), "{e20}");
        let e24 = CuckooParams::factor(1 << 24, 40);
        assert!((1.56..1.58).contains(&e24), "{e24}");
        assert!(CuckooParams::factor(16, 40) > 3.0);
        assert!(CuckooParams::factor(1, 40) > 50.0);
        // More security, more bins.
        assert!(CuckooParams::factor(1 << 20, 60) > e20);
        assert!(CuckooParams::with_factor(10, 0.5).is_err());
        assert!(CuckooParams::with_factor(10, f64::NAN).is_err());
        assert_eq!(CuckooParams::with_factor(0, 1.3).unwrap().bins, 8);
        // erf against known values (A&S accuracy).
        assert!((erf(0.5) - 0.520_499_877_8).abs() < 2e-7);
        assert!((erf(-1.0) + 0.842_700_792_9).abs() < 2e-7);
    }

    #[test]
    fn hashes_are_in_range_and_batch_agrees() {
        let h = CuckooHasher::new(Block(5), 1000).unwrap();
        let xs = items(777, 1);
        let mut out = vec![[0u32; 3]; xs.len()];
        h.hash_many(&xs, &mut out);
        for (x, o) in xs.iter().zip(&out) {
            assert_eq!(h.hash(*x), *o);
            assert!(o.iter().all(|&b| b < 1000));
        }
        // Different seeds, different functions.
        let h2 = CuckooHasher::new(Block(6), 1000).unwrap();
        assert_ne!(h.hash(xs[0]), h2.hash(xs[0]));
        assert!(CuckooHasher::new(Block(0), 0).is_err());
    }

    fn check_table(t: &CuckooTable, xs: &[Block]) {
        let mut seen = vec![false; xs.len()];
        for b in 0..t.bins() {
            if let Some((i, k)) = t.bin(b) {
                assert!(!seen[i]);
                seen[i] = true;
                assert_eq!(t.hasher().hash(xs[i])[k] as usize, b);
            }
        }
        assert!(seen.iter().all(|&s| s), "every item placed");
        for (i, x) in xs.iter().enumerate() {
            let (b, idx) = t.find(*x).unwrap();
            assert_eq!(idx, i);
            assert_eq!(t.locate(i).map(|l| l.0), Some(b));
        }
    }

    #[test]
    fn small_sizes() {
        for n in [0usize, 1, 2, 3, 17, 127, 128, 129, 1000] {
            let xs = items(n, n as u128 + 10);
            let t = CuckooTable::build(&xs, Block(99)).unwrap();
            check_table(&t, &xs);
            assert!(t.find(Block(u128::MAX)).is_none());
            let filler = Block(42);
            let bi = t.bin_items(filler);
            assert_eq!(bi.iter().filter(|&&x| x != filler).count(), n);
        }
    }

    #[test]
    fn fills_2_20_tables_from_several_seeds() {
        let n = 1 << 20;
        let xs = items(n, 7);
        for seed in 0..3u128 {
            let t = CuckooTable::build(&xs, Block(seed * 0x1234_5678_9abc)).unwrap();
            check_table(&t, &xs);
        }
    }

    /// Many seeds at 2^20 with the default (2^-40) parameters: none may fail.
    #[test]
    #[ignore = "long: 64 tables of 2^20 items (about a minute)"]
    fn fills_2_20_tables_from_many_seeds() {
        let n = 1 << 20;
        for seed in 0..64u128 {
            let xs = items(n, 1000 + seed);
            CuckooTable::build(&xs, Block(seed)).unwrap();
        }
    }

    #[test]
    fn overfull_table_reports_the_item() {
        // Four items in four bins fail when all four leave out the same bin (probability
        // 4·4^-4 = 1/64 per seed): some seed must fail, and the error names an item of the
        // input.
        let xs = items(4, 3);
        let mut failures = 0;
        for seed in 0..2000u128 {
            let p = CuckooParams::with_bins(4, 4).unwrap();
            match CuckooTable::build_with(&p, &xs, Block(seed)) {
                Ok(t) => check_table(&t, &xs),
                Err(Error::InsertionFailed { index, .. }) => {
                    assert!(index < xs.len());
                    failures += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        // Expected 31.25 (standard deviation 5.5).
        assert!((10..=60).contains(&failures), "{failures} of 2000");
        // More items than bins is refused up front.
        let p = CuckooParams::with_bins(30, 10).unwrap();
        assert!(matches!(
            CuckooTable::build_with(&p, &items(30, 3), Block(1)),
            Err(Error::InvalidParams(_))
        ));
    }

    #[test]
    fn an_items_bins_are_distinct_and_uniform() {
        // Every ordered triple of distinct bins among 5 equally likely (1/60 each).
        let h = CuckooHasher::new(Block(9), 5).unwrap();
        let mut count = [0u32; 125];
        let samples = 60_000u32;
        for x in items(samples as usize, 4) {
            let [a, b, c] = h.hash(x);
            assert!(a != b && a != c && b != c && a < 5 && b < 5 && c < 5);
            count[(a * 25 + b * 5 + c) as usize] += 1;
        }
        let hit: Vec<u32> = count.iter().copied().filter(|&c| c > 0).collect();
        assert_eq!(hit.len(), 60);
        // 1000 expected per triple, standard deviation about 31.
        assert!(hit.iter().all(|&c| (850..1150).contains(&c)), "{hit:?}");
        // Distinct at every table size from three bins on, in range below three.
        for bins in [1usize, 2, 3, 4, 7, 1000, MAX_ITEMS] {
            let h = CuckooHasher::new(Block(bins as u128), bins).unwrap();
            for x in items(2000, 5) {
                let [a, b, c] = h.hash(x);
                assert!([a, b, c].iter().all(|&v| (v as usize) < bins));
                assert!(
                    bins < 3 || (a != b && a != c && b != c),
                    "{bins}: {a} {b} {c}"
                );
            }
        }
    }

    /// Regression: `CuckooParams` has public fields, and `CuckooTable::new` reserved
    /// `params.items` entries unchecked (a capacity-overflow panic for `usize::MAX`, an
    /// allocation abort for a large count); `with_factor` could return more than
    /// `MAX_ITEMS` bins (its `n + 8` floor).
    #[test]
    fn table_params_out_of_range_are_errors() {
        for items in [usize::MAX, MAX_ITEMS + 1] {
            let p = CuckooParams {
                items,
                bins: 16,
                max_evictions: 10,
            };
            assert!(
                matches!(CuckooTable::new(&p, Block(1)), Err(Error::InvalidParams(_))),
                "{items} items"
            );
        }
        let p = CuckooParams {
            items: 4,
            bins: MAX_ITEMS + 1,
            max_evictions: 10,
        };
        assert!(matches!(
            CuckooTable::new(&p, Block(1)),
            Err(Error::InvalidParams(_))
        ));
        // More items announced than bins: refused on insertion, as before (the capacity is
        // bounded by the bins).
        let p = CuckooParams::with_bins(30, 10).unwrap();
        let t = CuckooTable::new(&p, Block(1)).unwrap();
        assert_eq!(t.bins(), 10);
        for n in [MAX_ITEMS, MAX_ITEMS - 7] {
            match CuckooParams::with_factor(n, 1.0) {
                Ok(p) => assert!(p.bins <= MAX_ITEMS, "{n}: {} bins", p.bins),
                Err(Error::InvalidParams(_)) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(
            CuckooParams::with_factor(MAX_ITEMS - 8, 1.0).map(|p| p.bins),
            Ok(MAX_ITEMS)
        );
    }

    /// Regression: `InsertionFailed` carried the failing item, so its `Display` and `Debug`
    /// (logged, or put into a caller's error message, as obliv-psi does) printed a private
    /// input. The error names only the item's index.
    #[test]
    fn insertion_failure_does_not_print_the_item() {
        let xs = items(4, 3);
        let mut failures = 0;
        for seed in 0..2000u128 {
            let p = CuckooParams::with_bins(4, 4).unwrap();
            if let Err(e) = CuckooTable::build_with(&p, &xs, Block(seed)) {
                failures += 1;
                let (display, debug) = (format!("{e}"), format!("{e:?}"));
                for x in &xs {
                    let hex = format!("{:032x}", x.0);
                    assert!(!display.contains(&hex) && !debug.contains(&hex), "{debug}");
                }
            }
        }
        assert!(failures > 0);
    }

    /// Regression: `CuckooTable`'s derived `Debug` printed every item.
    #[test]
    fn table_debug_hides_the_items() {
        let xs = items(5, 8);
        let t = CuckooTable::build(&xs, Block(2)).unwrap();
        let s = format!("{t:?}");
        for x in &xs {
            assert!(!s.contains(&format!("{:032x}", x.0)), "{s}");
        }
        assert!(s.contains("CuckooTable") && s.len() < 80, "{s}");
    }

    /// Regression: an insertion that failed left the items after it in the table's count but
    /// in no bin (`len()` counted them, `locate` and `find` did not find them). After a
    /// failure every item of the table but the one reported sits in a bin.
    #[test]
    fn failed_insertion_leaves_a_consistent_table() {
        let n = 6;
        let xs = items(n, 17);
        let mut early = 0;
        for seed in 0..3000u128 {
            let p = CuckooParams::with_bins(n, n).unwrap();
            let mut t = CuckooTable::new(&p, Block(seed)).unwrap();
            let Err(Error::InsertionFailed { index, .. }) = t.insert_all(&xs) else {
                continue;
            };
            early += usize::from(t.len() < n);
            assert!(index < t.len(), "seed {seed}");
            for (i, x) in xs.iter().enumerate().take(t.len()) {
                if i == index {
                    assert_eq!(t.locate(i), None);
                    assert_eq!(t.find(*x), None);
                } else {
                    let (b, _) = t
                        .locate(i)
                        .unwrap_or_else(|| panic!("seed {seed}: item {i}"));
                    assert_eq!(t.find(*x), Some((b, i)));
                }
            }
            let placed = (0..t.bins()).filter(|&b| t.bin(b).is_some()).count();
            assert_eq!(placed, t.len() - 1, "seed {seed}");
        }
        assert!(early > 0, "some failure before the last item");
    }

    /// The table fails exactly when no placement of the items exists (Hall's condition),
    /// whatever the random walk does: with no evictions allowed the walk gives up often and
    /// the augmenting-path search must place the item.
    #[test]
    fn table_fails_exactly_when_no_placement_exists() {
        let mut rescued = 0;
        let mut failed = 0;
        for n in 4..9usize {
            let xs = items(n, n as u128);
            for seed in 0..400u128 {
                let mut p = CuckooParams::with_bins(n, n).unwrap();
                p.max_evictions = 0;
                let h = CuckooHasher::new(Block(seed), n).unwrap();
                let c: Vec<[u32; 3]> = xs.iter().map(|&x| h.hash(x)).collect();
                let exact = place_exact(&c, n);
                match CuckooTable::build_with(&p, &xs, Block(seed)) {
                    Ok(t) => {
                        assert!(exact.is_ok(), "n = {n}, seed {seed}");
                        check_table(&t, &xs);
                    }
                    Err(Error::InsertionFailed { .. }) => {
                        assert!(exact.is_err(), "n = {n}, seed {seed}: a placement exists");
                        failed += 1;
                    }
                    Err(e) => panic!("{e}"),
                }
                // How often the walk alone (no evictions) would have given up.
                let mut slots = vec![false; n];
                let walk_fails = c.iter().any(|hs| {
                    let free = hs.iter().find(|&&b| !slots[b as usize]);
                    free.map(|&b| slots[b as usize] = true).is_none()
                });
                rescued += usize::from(walk_fails && exact.is_ok());
            }
        }
        assert!(
            rescued > 100 && failed > 0,
            "rescued {rescued}, failed {failed}"
        );
    }

    /// The union bound is exact where only one event can happen: four items in four bins
    /// fail iff all four leave out the same bin, probability 4·4^-4 = 2^-6.
    #[test]
    fn small_set_bound_known_values() {
        assert!((small_set_log2_bound(4, 4) + 6.0).abs() < 1e-9);
        // Three items always have a placement (their bins are distinct).
        assert_eq!(small_set_log2_bound(3, 3), f64::NEG_INFINITY);
        assert_eq!(small_set_bins(3, 128), 3);
        // Four items sharing three bins: C(n, 4)·C(m, 3)^-3 dominates for small n.
        let m = small_set_bins(8, 40) as f64;
        let four = 70.0 * (m * (m - 1.0) * (m - 2.0) / 6.0).powi(-3);
        assert!(
            four <= 2f64.powi(-40) && four > 2f64.powi(-42),
            "{m} bins: {four}"
        );
        // More security, more bins; the floor is never below n.
        assert!(small_set_bins(100, 64) > small_set_bins(100, 40));
        assert_eq!(small_set_bins(1 << 20, 40), 1 << 20);
    }

    /// Regression: the [PSZ18] fit alone gave 44 bins for 8 items, where four items with the
    /// same three bins (probability `C(8, 4)·C(44, 3)^-3 ≈ 2^-35`) already break the 2^-40
    /// claim; small tables must bound the events of small sets. Checked here against the
    /// exact probability of the dominant event.
    #[test]
    fn small_tables_bound_small_colliding_sets() {
        for lambda in [40u32, 50, 64] {
            for n in (4..=130).chain([200, 256, 512, 1000, 2048, 4096, 8192, 1 << 20]) {
                let bins = CuckooParams::new(n, lambda).unwrap().bins;
                let m = bins as f64;
                let nf = n as f64;
                let c4 = nf * (nf - 1.0) * (nf - 2.0) * (nf - 3.0) / 24.0;
                let four = c4 * (m * (m - 1.0) * (m - 2.0) / 6.0).powi(-3);
                assert!(
                    four.log2() <= -f64::from(lambda),
                    "λ = {lambda}, n = {n}: {bins} bins, 2^{:.1}",
                    four.log2()
                );
            }
        }
    }

    #[test]
    fn simple_table_holds_every_item_in_each_distinct_bin() {
        for bins in [2usize, 64] {
            simple_table_case(bins);
        }
    }

    /// Every item once in each of its distinct bins; hash values coincide only with fewer
    /// than three bins.
    fn simple_table_case(bins: usize) {
        let xs = items(5000, 11);
        let h = CuckooHasher::new(Block(3), bins).unwrap();
        let s = SimpleTable::build(&h, &xs).unwrap();
        let mut total = 0;
        let mut coincide = 0;
        for (i, x) in xs.iter().enumerate() {
            let hs = h.hash(*x);
            let mut distinct = hs.to_vec();
            distinct.sort_unstable();
            distinct.dedup();
            total += distinct.len();
            coincide += 3 - distinct.len();
            for &b in &distinct {
                let e: Vec<_> = s
                    .bin(b as usize)
                    .iter()
                    .filter(|e| e.item as usize == i)
                    .collect();
                assert_eq!(e.len(), 1, "item once per bin");
                for (k, &hb) in hs.iter().enumerate() {
                    assert_eq!(e[0].hashes >> k & 1 == 1, hb == b);
                }
            }
        }
        assert_eq!(coincide > 0, bins < 3, "{bins} bins");
        assert_eq!(s.len(), total);
        assert_eq!(s.iter().count(), total);
        assert!(s.max_bin_len() >= total / bins);
        assert!(s.bin(bins).is_empty());
    }

    #[test]
    fn cuckoo_and_simple_agree_on_bins() {
        // PSI invariant: an item the cuckoo side placed in bin b is among the simple side's
        // entries of bin b.
        let xs = items(3000, 21);
        let t = CuckooTable::build(&xs, Block(8)).unwrap();
        let s = SimpleTable::build(t.hasher(), &xs).unwrap();
        for b in 0..t.bins() {
            if let Some((i, k)) = t.bin(b) {
                assert!(
                    s.bin(b)
                        .iter()
                        .any(|e| e.item as usize == i && e.hashes >> k & 1 == 1)
                );
            }
        }
    }

    #[test]
    fn index_hashes_are_block_hashes() {
        let h = CuckooHasher::new(Block(17), 15).unwrap();
        let mut out = vec![[0u32; 3]; 600];
        h.hash_index_range(u64::from(u32::MAX) - 300, &mut out);
        for (i, o) in out.iter().enumerate() {
            let j = u64::from(u32::MAX) - 300 + i as u64;
            assert_eq!(h.hash_index(j), *o);
            assert_eq!(h.hash(Block(u128::from(j))), *o);
        }
    }

    #[test]
    fn index_bins_list_every_index_in_each_distinct_bin() {
        for (n, bins) in [
            (0usize, 1usize),
            (1, 1),
            (1000, 15),
            (5000, 64),
            (300, 1000),
        ] {
            let h = CuckooHasher::new(Block(n as u128), bins).unwrap();
            let t = IndexBins::build(&h, n).unwrap();
            assert_eq!(t.bins(), bins);
            let mut total = 0;
            for j in 0..n {
                let hs = h.hash_index(j as u64);
                for b in 0..bins {
                    let listed = t.bin(b).binary_search(&(j as u32)).is_ok();
                    assert_eq!(listed, hs.contains(&(b as u32)), "index {j} bin {b}");
                }
                let mut d = hs.to_vec();
                d.sort_unstable();
                d.dedup();
                total += d.len();
            }
            assert_eq!(t.len(), total);
            assert_eq!(t.is_empty(), n == 0);
            for b in 0..bins {
                assert!(t.bin(b).windows(2).all(|w| w[0] < w[1]), "bin {b} sorted");
            }
            assert!(t.max_bin_len() * bins >= total);
            assert!(t.bin(bins).is_empty());
        }
        // Too many indices is refused before anything is allocated.
        let h = CuckooHasher::new(Block(1), 4).unwrap();
        assert!(matches!(
            IndexBins::build(&h, (1usize << 32) + 1),
            Err(Error::InvalidParams(_))
        ));
    }

    /// Checks a placement: each item in one of its candidates, no bin twice.
    fn check_placement(cands: &[Vec<u32>], bins: usize, slot: &[usize]) {
        assert_eq!(slot.len(), cands.len());
        let mut used = vec![false; bins];
        for (c, &b) in cands.iter().zip(slot) {
            assert!(c.contains(&(b as u32)), "bin {b} not among {c:?}");
            assert!(!used[b], "bin {b} used twice");
            used[b] = true;
        }
    }

    /// The size of a maximum placement, by trying every assignment (small instances only).
    fn brute_force_max(cands: &[Vec<u32>], used: &mut [bool]) -> usize {
        let Some((first, rest)) = cands.split_first() else {
            return 0;
        };
        let mut best = brute_force_max(rest, used); // item left out
        for &b in first {
            if !used[b as usize] {
                used[b as usize] = true;
                best = best.max(1 + brute_force_max(rest, used));
                used[b as usize] = false;
            }
        }
        best
    }

    /// Recursive Kuhn's algorithm, the textbook form: the reference for `place_exact`.
    fn kuhn_reference(cands: &[[u32; 3]], bins: usize) -> usize {
        fn augment(
            i: usize,
            c: &[[u32; 3]],
            owner: &mut [Option<usize>],
            seen: &mut [bool],
        ) -> bool {
            for &b in &c[i] {
                let b = b as usize;
                if seen[b] {
                    continue;
                }
                seen[b] = true;
                if owner[b].is_none_or(|o| augment(o, c, owner, seen)) {
                    owner[b] = Some(i);
                    return true;
                }
            }
            false
        }
        let mut owner = vec![None; bins];
        (0..cands.len())
            .filter(|&i| !augment(i, cands, &mut owner, &mut vec![false; bins]))
            .count()
    }

    #[test]
    fn exact_placement_small_cases() {
        // Greedy order puts item 0 in bin 0; item 1 only fits bin 0, so item 0 must move.
        let c: Vec<Vec<u32>> = vec![vec![0, 1], vec![0], vec![1, 2]];
        let slot = place_exact(&c, 3).unwrap();
        assert_eq!(slot, [1, 0, 2]);
        check_placement(&c, 3, &slot);
        // Four items whose only candidates are three bins: Hall's condition fails.
        let c = [[0u32, 1, 2], [2, 1, 0], [1, 1, 1], [0, 2, 2]];
        assert_eq!(place_exact(&c, 5), Err(Error::NoPlacement { unplaced: 1 }));
        // Three items sharing one bin, and two more items on another pair of bins.
        let c: Vec<Vec<u32>> = vec![vec![3], vec![3], vec![3], vec![0, 1], vec![1, 0]];
        assert_eq!(place_exact(&c, 4), Err(Error::NoPlacement { unplaced: 2 }));
        // An item without candidates, a candidate out of range, nothing to place.
        assert_eq!(
            place_exact(&[Vec::<u32>::new()], 1),
            Err(Error::NoPlacement { unplaced: 1 })
        );
        assert!(matches!(
            place_exact(&[[0u32, 1, 4]], 4),
            Err(Error::InvalidParams(_))
        ));
        assert_eq!(place_exact::<[u32; 3]>(&[], 0), Ok(vec![]));
        // A long augmenting path: item i has the bins {i, i + 1} and first takes bin i; a last
        // item with bin 0 only moves every other item one bin along.
        let n = 5000u32;
        let mut c: Vec<[u32; 3]> = (0..n).map(|i| [i, i + 1, i + 1]).collect();
        c.push([0, 0, 0]);
        let slot = place_exact(&c, n as usize + 1).unwrap();
        assert_eq!(slot[n as usize], 0);
        let cv: Vec<Vec<u32>> = c.iter().map(|a| a.to_vec()).collect();
        check_placement(&cv, n as usize + 1, &slot);
    }

    #[test]
    fn exact_placement_agrees_with_kuhn_on_hashed_batches() {
        // Batches of 10 indices in 15 bins, as batch PIR draws them: place_exact succeeds
        // exactly when the recursive algorithm does, and leaves as many items over.
        let h = CuckooHasher::new(Block(77), 15).unwrap();
        let mut rng = Prg::new(Block(78));
        let mut failures = 0;
        for _ in 0..20_000 {
            let c: Vec<[u32; 3]> = (0..10)
                .map(|_| h.hash_index(rng.next_block().to_u64s().0 % (1 << 20)))
                .collect();
            let reference = kuhn_reference(&c, 15);
            match place_exact(&c, 15) {
                Ok(slot) => {
                    assert_eq!(reference, 0);
                    let cv: Vec<Vec<u32>> = c.iter().map(|a| a.to_vec()).collect();
                    check_placement(&cv, 15, &slot);
                }
                Err(Error::NoPlacement { unplaced }) => {
                    assert_eq!(unplaced, reference);
                    failures += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(
            failures > 0,
            "some batches of 10 in 15 bins have no placement"
        );
    }

    proptest! {
        #[test]
        fn exact_placement_is_maximum(
            bins in 1usize..7,
            raw in proptest::collection::vec(proptest::collection::vec(any::<u32>(), 0..4), 0..8),
        ) {
            let cands: Vec<Vec<u32>> = raw
                .iter()
                .map(|c| c.iter().map(|&b| b % bins as u32).collect())
                .collect();
            let max = brute_force_max(&cands, &mut vec![false; bins]);
            match place_exact(&cands, bins) {
                Ok(slot) => {
                    prop_assert_eq!(max, cands.len());
                    check_placement(&cands, bins, &slot);
                }
                Err(Error::NoPlacement { unplaced }) => {
                    prop_assert_eq!(unplaced, cands.len() - max);
                }
                Err(e) => prop_assert!(false, "{}", e),
            }
        }

        #[test]
        fn any_small_set_is_placed(n in 0usize..300, seed in any::<u64>()) {
            let xs = items(n, u128::from(seed));
            let t = CuckooTable::build(&xs, Block(u128::from(seed) << 1)).unwrap();
            check_table(&t, &xs);
        }
    }
}
