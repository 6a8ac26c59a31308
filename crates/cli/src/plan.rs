//! The bucket plan of a PSI job: how many buckets every shard is split into and how many keys
//! each party's buckets hold, both from public data only.
//!
//! The public data are every party's number of data rows in its whole input (before
//! sharding; exchanged in the job hello), the shard count `S` (part of the agreed settings)
//! and the expected bucket load `L` (`--bucket-load`, also agreed; default [`DEFAULT_LOAD`]).
//! From them every party computes the same plan:
//!
//! - **Bucket count.** `B` is the largest power of two with `max_p N_p / (S·B) ≥ L`, and 1 if
//!   there is none: the larger party expects at least `L` keys per bucket. No option of one
//!   party changes it; a peer with another `L` or `S` is refused before anything else is
//!   sent.
//! - **Workers.** With `W > 1` workers (`--workers`, agreed too), `B` is raised to
//!   `min(4·W rounded up to a power of two, the largest power of two with
//!   max_p N_p / (S·B) ≥ PARALLEL_LOAD)` when that is larger: each worker then gets about four
//!   buckets, so that on a slow link one worker's bulk transfer overlaps the others' round
//!   trips and computation and the first and last buckets (when one direction of the link
//!   idles) are short, while no bucket drops below [`PARALLEL_LOAD`] keys, where padding
//!   would start to cost more than a few percent. With one worker the plan is as above.
//! - **Padded bucket size.** Every bucket of party `p` is filled up with random dummy keys
//!   to `bound(N_p, S·B)` keys ([`padded_bound`]), a Chernoff bound on the number of keys that
//!   the public hash puts into one of `S·B` buckets: it is exceeded by some bucket of the job
//!   with probability at most 2^-42 per party for any fixed input, below 2^-40 for the job. So
//!   every PSI run announces and processes a size that depends on public data only, and a
//!   peer learns nothing about how our keys spread over the buckets (which, with the public
//!   hash, would let it test candidate keys for membership).
//! - **Overflow.** A bucket with more distinct keys than its bound stops the job on that
//!   party before its PSI starts (an input error); the peer sees the connection end, which
//!   tells it that some bucket overflowed and nothing about its size.
//!
//! Each party also refuses a plan whose largest bound exceeds its own `--bucket-size` (a
//! local memory limit, never sent), and takes the peer's bound as the most items the peer may
//! announce in a bucket.
//!
//! Padding costs `bound / μ − 1` more keys per bucket, with `μ = N_p / (S·B)`: below 1 % at the
//! default load. Rows with repeated keys are counted as rows (the distinct count is not
//! public), so a file with many duplicate keys pays for its rows.

use crate::error::CliError;

/// Default expected number of keys per bucket of the larger party.
pub const DEFAULT_LOAD: u64 = 1 << 20;

/// Smallest `--bucket-load` accepted. Below 2^16 the padding costs more than a few percent;
/// small loads exist for tests that need many buckets from small files.
pub const MIN_LOAD: u64 = 1 << 6;

/// Smallest expected load that the worker rule of the plan ([`BucketPlan::new`]) lowers the
/// load to: about 3 % of padding per bucket.
pub const PARALLEL_LOAD: u64 = 1 << 16;

/// Buckets per worker that the worker rule of the plan aims at.
pub const BUCKETS_PER_WORKER: u64 = 4;

/// Largest `--bucket-load` accepted.
pub const MAX_LOAD: u64 = 1 << 32;

/// Most buckets per shard a plan may have.
pub const MAX_BUCKETS: u64 = 1 << 30;

/// Bits of the per-party overflow bound: some bucket of one party overflows with probability
/// at most `2^-OVERFLOW_BITS`, so with up to three parties some bucket of the job overflows
/// with probability below 2^-40.
pub const OVERFLOW_BITS: u32 = 42;

/// The agreed plan of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketPlan {
    /// Buckets per shard (a power of two).
    pub buckets: u64,
    /// Shards of the job.
    pub shards: u64,
    /// Padded keys per bucket, by party rank.
    pub bounds: Vec<u64>,
}

impl BucketPlan {
    /// The plan for parties with `rows[p]` data rows each, `shards` shards, expected load
    /// `load` and `workers` workers (see the module documentation).
    ///
    /// # Errors
    /// [`ExitKind::Usage`](crate::ExitKind::Usage) for a load outside `MIN_LOAD..=MAX_LOAD` or no shards.
    pub fn new(rows: &[u64], shards: u64, load: u64, workers: u64) -> Result<Self, CliError> {
        if !(MIN_LOAD..=MAX_LOAD).contains(&load) {
            return Err(CliError::usage(format!(
                "--bucket-load {load} is outside {MIN_LOAD}..={MAX_LOAD}"
            )));
        }
        if shards == 0 {
            return Err(CliError::usage("no shards"));
        }
        let largest = rows.iter().copied().max().unwrap_or(0);
        let mut buckets = bucket_count(largest, shards, load);
        if workers > 1 {
            let aim = workers
                .saturating_mul(BUCKETS_PER_WORKER)
                .checked_next_power_of_two()
                .unwrap_or(MAX_BUCKETS)
                .min(MAX_BUCKETS);
            buckets = buckets.max(aim.min(bucket_count(largest, shards, PARALLEL_LOAD)));
        }
        let slots = buckets.saturating_mul(shards);
        let bounds = rows.iter().map(|&n| padded_bound(n, slots)).collect();
        Ok(BucketPlan {
            buckets,
            shards,
            bounds,
        })
    }

    /// PSI runs of the whole job (every bucket of every shard), for the statistical
    /// security of each run.
    pub fn runs(&self) -> u64 {
        self.buckets.saturating_mul(self.shards)
    }

    /// Padded keys per bucket of party `rank`.
    pub fn bound(&self, rank: usize) -> u64 {
        self.bounds.get(rank).copied().unwrap_or(0)
    }

    /// The largest padded bucket of any party.
    pub fn largest(&self) -> u64 {
        self.bounds.iter().copied().max().unwrap_or(0)
    }
}

/// Buckets per shard: the largest power of two `B` with `rows / (shards·B) ≥ load`, at least
/// 1 and at most [`MAX_BUCKETS`].
pub fn bucket_count(rows: u64, shards: u64, load: u64) -> u64 {
    let per_shard = rows / shards.max(1);
    let mut b = 1u64;
    while b < MAX_BUCKETS && per_shard / (2 * b) >= load.max(1) {
        b *= 2;
    }
    b
}

/// The padded size of every bucket of a party with `rows` rows whose keys a public hash
/// spreads over `slots` buckets: the least `m` (at most `rows`) such that some bucket gets
/// more than `m` distinct keys with probability at most `2^-OVERFLOW_BITS`.
///
/// The load `X` of one bucket is at most `Bin(rows, 1/slots)` (repeated keys only lower it).
/// The multiplicative Chernoff bound `Pr[X ≥ (1+δ)μ] ≤ exp(−δ²μ/(2+δ))` with `μ = rows/slots`,
/// set to `2^-OVERFLOW_BITS / slots` (a union bound over the buckets), gives
/// `δ = (t + √(t² + 8tμ)) / 2μ` with `t = ln slots + OVERFLOW_BITS·ln 2`.
pub fn padded_bound(rows: u64, slots: u64) -> u64 {
    if slots <= 1 || rows == 0 {
        return rows;
    }
    #[allow(clippy::cast_precision_loss)]
    let (n, s) = (rows as f64, slots as f64);
    let mu = n / s;
    let t = s.ln() + f64::from(OVERFLOW_BITS) * std::f64::consts::LN_2;
    let delta = (t + (t * t + 8.0 * t * mu).sqrt()) / (2.0 * mu);
    // One more than the ceiling absorbs the rounding of the floating-point arithmetic.
    let m = (mu * (1.0 + delta)).ceil() + 1.0;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let m = if m >= n { rows } else { m as u64 };
    m.min(rows)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
mod tests {
    use super::*;

    /// `v[m] = ln Pr[Bin(n, p) > m]` for every `m < n`, summed exactly in log space.
    fn ln_tails(n: u64, p: f64) -> Vec<f64> {
        let mut ln_pmf = Vec::with_capacity(n as usize + 1);
        let mut cur = (n as f64) * (1.0 - p).ln();
        ln_pmf.push(cur);
        for k in 0..n {
            cur += ((n - k) as f64).ln() - ((k + 1) as f64).ln() + (p / (1.0 - p)).ln();
            ln_pmf.push(cur);
        }
        // Suffix log-sum-exp: tails[m] = ln sum_{k > m} pmf(k).
        let mut tails = vec![f64::NEG_INFINITY; n as usize];
        let mut acc = f64::NEG_INFINITY;
        for m in (0..n as usize).rev() {
            let x = ln_pmf[m + 1];
            let hi = acc.max(x);
            acc = hi + ((acc - hi).exp() + (x - hi).exp()).ln();
            tails[m] = acc;
        }
        tails
    }

    #[test]
    fn bound_holds_against_the_exact_binomial_tail_and_is_not_loose() {
        let target = -f64::from(OVERFLOW_BITS) * std::f64::consts::LN_2;
        for (n, slots) in [
            (2_000u64, 4u64),
            (20_000, 16),
            (50_000, 2),
            (3_000, 64),
            (500, 8),
        ] {
            let m = padded_bound(n, slots);
            let tails = ln_tails(n, 1.0 / slots as f64);
            // Union over the slots: each bucket's tail at most 2^-OVERFLOW_BITS / slots.
            let union = |k: u64| {
                tails
                    .get(k as usize)
                    .map_or(f64::NEG_INFINITY, |t| t + (slots as f64).ln())
            };
            assert!(
                union(m) <= target,
                "n={n} slots={slots} m={m}: ln tail {}",
                union(m)
            );
            // Chernoff is loose, but not by much: the padding above the mean is at most twice
            // what the exact tail needs.
            let mu = n / slots;
            let exact = (mu..=n).find(|&k| union(k) <= target).unwrap();
            assert!(exact <= m, "n={n} slots={slots}: exact {exact} > {m}");
            assert!(
                (m - mu) as f64 <= 2.0 * (exact - mu) as f64 + 2.0,
                "n={n} slots={slots}: bound {m}, exact {exact}, mean {mu}"
            );
        }
    }

    #[test]
    fn bound_edge_cases() {
        assert_eq!(padded_bound(0, 16), 0);
        assert_eq!(padded_bound(1000, 1), 1000);
        assert_eq!(padded_bound(1000, 0), 1000);
        // Tiny loads are capped by the rows.
        assert_eq!(padded_bound(10, 1 << 20), 10);
        // At the default load the padding is below 1 %.
        let m = padded_bound(1 << 24, 16);
        let mu = (1u64 << 24) / 16;
        assert!(m > mu && (m - mu) * 100 < mu, "{m}");
        // Monotone in the rows.
        let mut last = 0;
        for n in (0..200_000u64).step_by(997) {
            let m = padded_bound(n, 8);
            assert!(m >= last && m <= n);
            last = m;
        }
    }

    #[test]
    fn bucket_count_is_public_and_respects_the_load() {
        assert_eq!(bucket_count(0, 1, DEFAULT_LOAD), 1);
        assert_eq!(bucket_count((1 << 21) - 1, 1, DEFAULT_LOAD), 1);
        assert_eq!(bucket_count(1 << 21, 1, DEFAULT_LOAD), 2);
        assert_eq!(bucket_count(10_000_000, 1, DEFAULT_LOAD), 8);
        assert_eq!(bucket_count(10_000_000, 4, DEFAULT_LOAD), 2);
        assert_eq!(bucket_count(2_000, 1, 500), 4);
        assert_eq!(bucket_count(u64::MAX, 1, MIN_LOAD), MAX_BUCKETS);
        for rows in [3u64 << 20, 1 << 30, 12_345_678_901] {
            let b = bucket_count(rows, 1, DEFAULT_LOAD);
            assert!(b.is_power_of_two());
            assert!(rows / b >= DEFAULT_LOAD && rows / (2 * b) < DEFAULT_LOAD);
        }
    }

    #[test]
    fn plan_depends_on_public_data_only() {
        // The same for every party, whichever party computes it; the larger party sets B.
        let p = BucketPlan::new(&[2_000, 100_000], 1, 500, 1).unwrap();
        assert_eq!(p.buckets, 128);
        assert_eq!(p, BucketPlan::new(&[2_000, 100_000], 1, 500, 1).unwrap());
        assert!(p.bound(0) >= 2_000 / 128 && p.bound(0) <= 2_000);
        assert!(p.bound(1) > 100_000 / 128);
        assert_eq!(p.runs(), 128);
        let s = BucketPlan::new(&[1 << 24, 1 << 24], 4, DEFAULT_LOAD, 1).unwrap();
        assert_eq!((s.buckets, s.runs()), (4, 16));
        assert!(BucketPlan::new(&[10], 1, 1, 1).is_err());
        assert!(BucketPlan::new(&[10], 0, DEFAULT_LOAD, 1).is_err());
    }

    #[test]
    fn workers_get_about_four_buckets_each_down_to_the_parallel_load() {
        let buckets = |rows: u64, shards: u64, load: u64, workers: u64| {
            BucketPlan::new(&[rows, rows / 2], shards, load, workers)
                .unwrap()
                .buckets
        };
        // 1e7 rows: 8 buckets at the default load with one worker; 32 with 8 workers (load
        // about 2^18), 16 with 3 workers (12 rounded up).
        assert_eq!(buckets(10_000_000, 1, DEFAULT_LOAD, 1), 8);
        assert_eq!(buckets(10_000_000, 1, DEFAULT_LOAD, 8), 32);
        assert_eq!(buckets(10_000_000, 1, DEFAULT_LOAD, 3), 16);
        // 1e6 rows: the parallel load caps the count at 8 (1e6 / 8 ≥ 2^16 > 1e6 / 16).
        assert_eq!(buckets(1_000_000, 1, DEFAULT_LOAD, 8), 8);
        assert_eq!(buckets(1_000_000, 1, DEFAULT_LOAD, 1), 1);
        // Small inputs are left alone; a smaller explicit load still wins.
        assert_eq!(buckets(6_000, 1, 375, 3), 16);
        assert_eq!(buckets(100_000, 1, DEFAULT_LOAD, 8), 1);
        assert_eq!(buckets(10_000_000, 1, 1 << 16, 2), 128);
        // Per shard: 4 shards of 1e7 rows with 8 workers get 32 buckets each only while each
        // keeps 2^16 keys: 2.5e6 / 32 ≥ 2^16.
        assert_eq!(buckets(10_000_000, 4, DEFAULT_LOAD, 8), 32);
        // Both parties compute the same plan from the same public data.
        assert_eq!(
            BucketPlan::new(&[10_000_000, 3], 1, DEFAULT_LOAD, 8).unwrap(),
            BucketPlan::new(&[10_000_000, 3], 1, DEFAULT_LOAD, 8).unwrap()
        );
    }
}
