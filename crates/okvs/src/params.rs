//! Parameter selection: sparse size, gap and dense size for a failure probability 2^-λ, and
//! the bin capacity of the binned form.
//!
//! # The unbinned OKVS [RR22, §3–4]
//!
//! Each of `n` keys gets a row with `w = 3` ones among `m = ⌊e·n⌋` sparse columns and `d`
//! dense columns. Triangulation (peeling) leaves a "gap" of rows it cannot place on the
//! diagonal; those are solved on the dense columns, which needs the gap to be at most `g`.
//! RR22 fitted, from experiments on the 2-core of random 3-hypergraphs, the statistical
//! security `λ` as a linear function of the expansion `e` with a slope depending on `n`
//! (volePSI, `PaxosParam::init`):
//!
//! ```text
//! log2(λ/e slope) = 0.555·log2 n + 0.093·log2³w − 1.01·log2²w + 2.925·log2 w − 0.133
//! λ = slope·e + b,   b = −9.2 − slope·1.223         (w = 3: e = 1.223 at λ = −9.2)
//! e = (λ − b) / slope,   g = ⌊λ / ((w − 2)·log2(e·n))⌋
//! ```
//!
//! For `λ = 40` this gives `e ≈ 1.268` at `n = 2^14`, `e ≈ 1.2276` at `n = 2^20`, and `g` of 2
//! and 1 respectively. The dense size is `d = g` for GF(2^128) dense columns and `d = g + λ`
//! for binary ones (the λ extra columns make the `g × d` binary gap matrix have full rank
//! except with probability `≤ 2^-λ`).
//!
//! ## A floor on the gap for GF(2^128) dense columns
//!
//! The fit extrapolates from large experiments; one failure event it undercounts is
//! polynomial, not exponential, in `1/n`: two keys whose three sparse positions coincide
//! (probability `1 / C(m, 3)` per pair) have linearly dependent sparse rows, so one of them
//! must be solved on the dense columns. `k` such pairs force a gap of at least `k`, and with
//! `C(n, 2)` pairs the expected number is `μ = C(n, 2) / C(m, 3) ≈ 3 / (e³·n)`, slightly
//! more than the `1/(e·n)` per gap row that `g = ⌊λ / log2(e·n)⌋` assumes. With GF(2^128)
//! dense columns (`d = g`, a gap above `g` fails outright) that alone exceeded `2^-λ` by up
//! to a factor two, for example `2^-39.6` at `n = 2^20, λ = 40` (`g = 1`: two coinciding
//! pairs among 2^20 keys). So for [`Gf128`](crate::Gf128) `g` is raised, when needed, to the
//! least value with the rigorous union bound
//! `Pr[≥ g + 1 such pairs] ≤ μ^(g+1) / (g + 1)! ≤ 2^-(λ+1)`
//! ([`log2_identical_rows_bound`]). At `λ = 40` this adds one dense column for `n` from about
//! 8.3·10³ to 1.0·10⁴ and from about 8.6·10⁵ to 1.7·10⁶; the default bins (about 17 400 keys
//! at `λ_bin = 47`) are unchanged. Binary dense columns need no floor: `d = g + λ` random
//! bits leave a gap of `k ≤ d` rows unsolvable with probability below `2^(k−d)`, so a gap
//! above `g` costs a factor `2^(k−g)` that the small probability of such a gap outweighs.
//!
//! ## The limit of the field for GF(2^128) dense columns
//!
//! The dense rows of the `k ≤ g` gap keys, `x·(1, x, …, x^(g−1))` with `x = H₂(key)`, are
//! linearly dependent exactly when one `x` is zero or two coincide (a Vandermonde matrix with
//! distinct nonzero nodes is invertible), which has probability at most
//! `(g + C(g, 2)) / 2^128 = C(g + 1, 2) / 2^128` ([`log2_dense_singular_bound`]). That is no
//! longer small against `2^-λ` near λ = 128: at `n = 1000` (`g = 12`) it is `2^-121.7`. So a
//! λ for which it exceeds `2^-(λ+1)` is refused with [`Error::UnsupportedSsp`] rather than
//! accepted and missed; [`PaxosParams::max_ssp`] gives the limit (127 for `g = 1`, lower for
//! small `n`, where `g` is larger). No number of extra columns of this form helps: the
//! failure is a collision of the 128-bit hash `x`.
//!
//! # The binned OKVS (volePSI's `Baxos`)
//!
//! Keys are hashed into `B = ⌈n / bin_size⌉` bins; every bin is an OKVS of the same fixed
//! capacity `c` (so the layout does not depend on the data). The failure probability is split
//! by a union bound:
//!
//! - overflow: `c` is the least load with `B · Pr[Binomial(n, 1/B) > c] ≤ 2^-(λ+1)`
//!   ([`bin_capacity`], an exact binomial tail bound, no table);
//! - per bin: each bin's OKVS is parameterised for `λ_bin = λ + 1 + ⌈log2 B⌉`, so all `B`
//!   bins together fail with probability at most `2^-(λ+1)`.
//!
//! In total `Pr[failure] ≤ 2^-(λ+1) + 2^-(λ+1) = 2^-λ`.
//!
//! [RR22]: https://eprint.iacr.org/2022/320

use crate::error::Error;
use crate::value::DenseType;

/// The row weight: every key touches three sparse columns.
pub const WEIGHT: usize = 3;

/// The largest statistical security parameter λ an OKVS accepts.
pub const MAX_SSP: u32 = 128;

/// The most binary dense columns an OKVS may have: coefficient `j` of a key's dense row is
/// bit `j` of one 128-bit hash block.
pub const MAX_BINARY_DENSE: usize = 128;

/// The largest number of columns an OKVS (or one bin) may have: indices are `u32`.
pub const MAX_COLUMNS: usize = (u32::MAX - 1) as usize;

/// The sizes of one (unbinned) OKVS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaxosParams {
    /// The largest number of keys the OKVS is built for (`n`).
    pub items: usize,
    /// The number of sparse columns `m`.
    pub sparse: usize,
    /// The number of dense columns `d`.
    pub dense: usize,
    /// The gap `g` the parameters are sized for (rows left after peeling).
    pub gap: usize,
    /// The statistical security parameter λ: encoding fails with probability `≤ 2^-λ`.
    pub ssp: u32,
    /// Binary or GF(2^128) dense columns.
    pub dense_type: DenseType,
}

impl PaxosParams {
    /// Parameters for up to `items` keys at failure probability `2^-ssp`, following the
    /// RR22/volePSI formula in the [module documentation](self).
    ///
    /// `items = 0` is treated as `items = 1` (the OKVS still has a well-defined size and every
    /// key decodes to something).
    ///
    /// # Errors
    /// [`Error::InvalidParams`] if `ssp` is 0 or the OKVS would need more than
    /// `u32::MAX − 1` columns; [`Error::UnsupportedSsp`] if `ssp` cannot be delivered:
    /// above [`MAX_SSP`], or, for binary dense columns, when `g + ssp` would exceed
    /// [`MAX_BINARY_DENSE`] ([`max_ssp`](Self::max_ssp) gives the limit).
    pub fn new(items: usize, ssp: u32, dense_type: DenseType) -> Result<Self, Error> {
        if ssp == 0 {
            return Err(Error::InvalidParams {
                what: "the statistical security parameter must be positive",
            });
        }
        match Self::fitted(items, ssp, dense_type) {
            Err(Error::UnsupportedSsp { .. }) => Err(Error::UnsupportedSsp {
                ssp,
                max: Self::max_ssp(items, dense_type),
            }),
            r => r,
        }
    }

    /// The largest `ssp` that [`new`](Self::new) accepts for `items` keys and `dense_type`
    /// ([`MAX_SSP`] for GF(2^128) dense columns; less for binary ones, whose `g + λ` dense
    /// columns must fit in [`MAX_BINARY_DENSE`]), or 0 if none does (too many items).
    pub fn max_ssp(items: usize, dense_type: DenseType) -> u32 {
        (1..=MAX_SSP)
            .rev()
            .find(|&l| Self::fitted(items, l, dense_type).is_ok())
            .unwrap_or(0)
    }

    /// [`new`](Self::new) for `ssp ≥ 1`, with `max: 0` in [`Error::UnsupportedSsp`].
    fn fitted(items: usize, ssp: u32, dense_type: DenseType) -> Result<Self, Error> {
        if ssp > MAX_SSP {
            return Err(Error::UnsupportedSsp { ssp, max: 0 });
        }
        let n = items.max(1);
        let lambda = f64::from(ssp);
        #[allow(clippy::cast_precision_loss)] // n < 2^53: exact enough for a size estimate
        let nf = n as f64;
        let log_n = nf.log2();
        let log_w = (WEIGHT as f64).log2();
        let log_slope =
            0.555 * log_n + 0.093 * log_w.powi(3) - 1.01 * log_w.powi(2) + 2.925 * log_w - 0.133;
        let slope = log_slope.exp2();
        let b = -9.2 - slope * 1.223;
        let e = (lambda - b) / slope;
        let sparse_f = (nf * e).floor();
        let g_f = (lambda / (((WEIGHT - 2) as f64) * (e * nf).log2())).floor();
        if !(sparse_f.is_finite() && sparse_f < MAX_COLUMNS as f64 && g_f.is_finite()) {
            return Err(Error::InvalidParams {
                what: "too many items for one OKVS (use the binned form)",
            });
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked above
        let sparse = (sparse_f as usize).max(WEIGHT).max(n);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 0 ≤ g ≤ λ
        let mut gap = (g_f.max(1.0) as usize).min(ssp as usize);
        if dense_type == DenseType::Gf128 {
            // The fitted gap undercounts keys with identical sparse rows (see the module
            // documentation): raise it until they alone fail with at most 2^-(λ+1).
            while gap < n && log2_identical_rows_bound(n, sparse, gap + 1) > -(lambda + 1.0) {
                gap += 1;
            }
        }
        if dense_type == DenseType::Gf128 && log2_dense_singular_bound(gap) > -(lambda + 1.0) {
            // A collision of the 128-bit dense hash among the gap keys (see the module
            // documentation) would alone exceed the budget: refuse rather than miss it.
            return Err(Error::UnsupportedSsp { ssp, max: 0 });
        }
        let dense = match dense_type {
            DenseType::Gf128 => gap,
            DenseType::Binary => gap + ssp as usize,
        };
        if dense_type == DenseType::Binary && dense > MAX_BINARY_DENSE {
            // The λ extra columns are what makes the gap solvable except with probability
            // 2^-λ: fewer would silently weaken the guarantee, so λ is refused instead.
            return Err(Error::UnsupportedSsp { ssp, max: 0 });
        }
        Self::with_sizes(items, sparse, dense, gap, ssp, dense_type)
    }

    /// Explicit sizes, for experiments and tests (for example a sparse size too small to
    /// succeed). `gap` is informational only: the solver accepts any gap it can solve.
    ///
    /// # Errors
    /// [`Error::InvalidParams`] if `sparse < 3`, the total exceeds `u32::MAX − 1` columns, or
    /// binary dense columns exceed 128.
    pub fn with_sizes(
        items: usize,
        sparse: usize,
        dense: usize,
        gap: usize,
        ssp: u32,
        dense_type: DenseType,
    ) -> Result<Self, Error> {
        if sparse < WEIGHT {
            return Err(Error::InvalidParams {
                what: "the sparse part needs at least 3 columns",
            });
        }
        if sparse.checked_add(dense).is_none_or(|t| t > MAX_COLUMNS) || items > MAX_COLUMNS {
            return Err(Error::InvalidParams {
                what: "too many columns or items for u32 indices",
            });
        }
        if dense_type == DenseType::Binary && dense > MAX_BINARY_DENSE {
            return Err(Error::InvalidParams {
                what: "binary dense part limited to 128 columns (the dense hash has 128 bits)",
            });
        }
        Ok(PaxosParams {
            items,
            sparse,
            dense,
            gap,
            ssp,
            dense_type,
        })
    }

    /// The number of values in the encoding, `m + d`.
    pub fn size(&self) -> usize {
        self.sparse + self.dense
    }

    /// The expansion `size / items` (values per key).
    pub fn expansion(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // a ratio for display
        let r = self.size() as f64 / self.items.max(1) as f64;
        r
    }
}

/// `log2` of a union bound on the probability that `n` keys hashed to uniform 3-subsets of
/// `m` sparse columns include `k` pairs of keys with identical rows, as a forest on the
/// keys (so that their sparse parts have corank at least `k`):
/// `C(n, 2)^k / k! · C(m, 3)^-k` (there are at most `C(C(n, 2), k) ≤ C(n, 2)^k / k!` sets of
/// `k` pairs, and the `k` equalities of a forest are independent, each of probability
/// `1 / C(m, 3)`). `−∞` when `n < 2`.
pub fn log2_identical_rows_bound(n: usize, m: usize, k: usize) -> f64 {
    if n < 2 || m < WEIGHT {
        return f64::NEG_INFINITY;
    }
    #[allow(clippy::cast_precision_loss)] // counts below 2^53: a bound, not exact arithmetic
    let (nf, mf) = (n as f64, m as f64);
    let log_pairs = (nf * (nf - 1.0) / 2.0).log2();
    let log_triples = (mf * (mf - 1.0) * (mf - 2.0) / 6.0).log2();
    #[allow(clippy::cast_precision_loss)]
    let log_fact: f64 = (2..=k).map(|i| (i as f64).log2()).sum();
    #[allow(clippy::cast_precision_loss)]
    let kf = k as f64;
    kf * (log_pairs - log_triples) - log_fact
}

/// `log2` of a bound on the probability that the GF(2^128) dense rows
/// `x·(1, x, …, x^(g−1))` of up to `g` gap keys are linearly dependent, for `x` uniform per
/// key: `C(g + 1, 2) / 2^128` (one `x` zero, or two equal). `−∞` when `g = 0`.
pub fn log2_dense_singular_bound(g: usize) -> f64 {
    if g == 0 {
        return f64::NEG_INFINITY;
    }
    #[allow(clippy::cast_precision_loss)] // g ≤ λ ≤ 128
    let gf = g as f64;
    (gf * (gf + 1.0) / 2.0).log2() - 128.0
}

/// `⌈log2 x⌉` for `x ≥ 1`.
pub(crate) fn ceil_log2(x: usize) -> u32 {
    if x <= 1 {
        0
    } else {
        usize::BITS - (x - 1).leading_zeros()
    }
}

/// The least capacity `c` such that `bins · Pr[Binomial(items, 1/bins) > c] ≤ 2^-ssp`:
/// with this many slots per bin, no bin overflows except with probability `2^-ssp`.
///
/// The tail is bounded by its first term over one minus the ratio of consecutive terms
/// (the terms decrease geometrically beyond the mean), computed in log space, so the result
/// is an upper bound on the exact answer and never an underestimate.
pub fn bin_capacity(items: usize, bins: usize, ssp: u32) -> usize {
    if bins <= 1 || items == 0 {
        return items;
    }
    #[allow(clippy::cast_precision_loss)] // counts below 2^53
    let (n, nb) = (items as f64, bins as f64);
    let p = 1.0 / nb;
    let log_odds = (p / (1.0 - p)).ln();
    let ln_q = (-p).ln_1p();
    // ln of the target probability per bin.
    let target = -(f64::from(ssp)) * core::f64::consts::LN_2 - nb.ln();
    // Start just above the mean: ln term(i) = ln C(n, i) + i ln p + (n − i) ln(1 − p).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 0 ≤ n·p ≤ n
    let mut i = (n * p).floor() as usize + 1;
    if i > items {
        return items;
    }
    let mut ln_c = 0.0f64;
    for k in 0..i {
        #[allow(clippy::cast_precision_loss)]
        let kf = k as f64;
        ln_c += ((n - kf) / (kf + 1.0)).ln();
    }
    #[allow(clippy::cast_precision_loss)]
    let mut ln_term = ln_c + (i as f64) * p.ln() + (n - i as f64) * ln_q;
    loop {
        // ratio r(i) = term(i+1)/term(i) = (n − i)/(i + 1) · p/(1 − p), decreasing in i.
        #[allow(clippy::cast_precision_loss)]
        let fi = i as f64;
        let ln_r = ((n - fi) / (fi + 1.0)).ln() + log_odds;
        // Pr[X ≥ i] ≤ term(i) / (1 − r(i)) when r(i) < 1.
        if ln_r < 0.0 {
            let ln_tail = ln_term - (-ln_r.exp()).ln_1p();
            if ln_tail <= target {
                // Pr[X > i − 1] ≤ target: capacity i − 1 suffices.
                return i - 1;
            }
        }
        if i >= items {
            return items;
        }
        ln_term += ln_r;
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volepsi_sizes() {
        // Values of volePSI's PaxosParam::init (w = 3, λ = 40), recomputed by hand from the
        // formula: n = 2^20 → e ≈ 1.2276, g = 1; n = 2^14 → e ≈ 1.2677, g = ⌊40 / 14.34⌋ = 2.
        let p = PaxosParams::new(1 << 20, 40, DenseType::Gf128).unwrap();
        assert!(
            (p.sparse as f64 / (1 << 20) as f64 - 1.2276).abs() < 0.001,
            "{p:?}"
        );
        // The fit gives g = 1; the identical-rows floor raises it to 2 (GF(2^128) only).
        assert_eq!(p.gap, 2);
        assert_eq!(p.dense, 2);
        let p = PaxosParams::new(1 << 20, 40, DenseType::Binary).unwrap();
        assert_eq!((p.gap, p.dense), (1, 41));
        let p = PaxosParams::new(1 << 14, 40, DenseType::Binary).unwrap();
        assert!(
            (p.sparse as f64 / (1 << 14) as f64 - 1.2677).abs() < 0.001,
            "{p:?}"
        );
        assert_eq!(p.gap, 2);
        assert_eq!(p.dense, 42);
    }

    #[test]
    fn small_and_invalid() {
        for n in 0..20 {
            let p = PaxosParams::new(n, 40, DenseType::Binary).unwrap();
            assert!(p.sparse >= 3 && p.sparse >= n && p.dense <= 128, "{p:?}");
        }
        assert!(PaxosParams::new(10, 0, DenseType::Gf128).is_err());
        assert!(PaxosParams::new(10, 129, DenseType::Gf128).is_err());
        assert!(PaxosParams::with_sizes(10, 2, 1, 1, 40, DenseType::Gf128).is_err());
        assert!(PaxosParams::with_sizes(10, 20, 129, 1, 40, DenseType::Binary).is_err());
        assert!(PaxosParams::new(usize::MAX / 2, 40, DenseType::Gf128).is_err());
    }

    /// For GF(2^128) dense columns (a gap above `g` fails), keys with coinciding sparse rows
    /// alone must stay below `2^-(λ+1)`, at every size and at large λ (the λ of the bins of a
    /// large job, up to 128). Failed at n = 2^20, λ = 40 (`2^-39.6`) and around n = 10^4 with
    /// the fitted gap alone.
    #[test]
    fn identical_rows_within_budget() {
        let mut sizes: Vec<usize> = (1..=3000).collect();
        let mut x = 3000usize;
        while x < 60_000_000 {
            sizes.push(x);
            x += x / 100;
        }
        sizes.extend([1 << 14, 1 << 16, 1 << 20, 1 << 24]);
        for lambda in [20u32, 40, 41, 47, 50, 60, 80, 100, 110] {
            for &n in &sizes {
                let p = PaxosParams::new(n, lambda, DenseType::Gf128).unwrap();
                let b = log2_identical_rows_bound(n, p.sparse, p.gap + 1);
                assert!(
                    b <= -f64::from(lambda + 1),
                    "n = {n}, λ = {lambda}: {p:?}, 2^{b}"
                );
            }
        }
        // The bound itself: two keys among m = 3 columns always coincide (μ = 1).
        assert!((log2_identical_rows_bound(2, 3, 1) - 0.0).abs() < 1e-12);
        assert_eq!(log2_identical_rows_bound(1, 10, 1), f64::NEG_INFINITY);
        // μ = C(1000, 2) / C(1433, 3) ≈ 2^-9.94; k = 4: 4·(−9.94) − log2 24 ≈ −44.3.
        let b = log2_identical_rows_bound(1000, 1433, 4);
        assert!((b + 44.3).abs() < 0.1, "{b}");
    }

    /// λ near and above the limit of binary dense columns (`g + λ ≤ 128`): every accepted λ
    /// gets its full `λ` extra dense columns, every other one is refused with
    /// `UnsupportedSsp` and the exact limit. Used to be an `InvalidParams` about dense
    /// columns, with no way to learn the limit.
    #[test]
    fn binary_ssp_limit() {
        for n in [0usize, 1, 2, 10, 100, 1000, 1 << 14, 1 << 20, 1 << 24] {
            let max = PaxosParams::max_ssp(n, DenseType::Binary);
            assert!((90..128).contains(&max), "n = {n}: {max}");
            for lambda in 80..=140u32 {
                match PaxosParams::new(n, lambda, DenseType::Binary) {
                    Ok(p) => {
                        assert!(lambda <= max, "n = {n}, λ = {lambda}");
                        assert_eq!(p.ssp, lambda);
                        assert_eq!(p.dense, p.gap + lambda as usize, "{p:?}");
                        assert!(p.dense <= MAX_BINARY_DENSE, "{p:?}");
                    }
                    Err(e) => {
                        assert!(lambda > max, "n = {n}, λ = {lambda}: {e:?}");
                        assert_eq!(e, Error::UnsupportedSsp { ssp: lambda, max });
                    }
                }
            }
        }
        // Too many items: no λ works.
        assert_eq!(PaxosParams::max_ssp(usize::MAX / 2, DenseType::Binary), 0);
    }

    /// Regression: GF(2^128) dense columns accepted λ up to 128, but a collision of the
    /// 128-bit dense hash among the gap keys alone fails with probability up to
    /// `C(g + 1, 2) / 2^128` (`2^-121.7` at n = 1000, λ = 128). Every accepted λ now keeps it
    /// below `2^-(λ+1)`, and every other λ is refused with the exact limit.
    #[test]
    fn gf128_ssp_limit() {
        assert_eq!(log2_dense_singular_bound(0), f64::NEG_INFINITY);
        assert!((log2_dense_singular_bound(1) + 128.0).abs() < 1e-12);
        assert!((log2_dense_singular_bound(12) + 121.7).abs() < 0.05);
        for n in [0usize, 1, 2, 10, 100, 1000, 1 << 14, 1 << 20, 1 << 24] {
            let max = PaxosParams::max_ssp(n, DenseType::Gf128);
            assert!((100..MAX_SSP).contains(&max), "n = {n}: {max}");
            for lambda in 90..=140u32 {
                match PaxosParams::new(n, lambda, DenseType::Gf128) {
                    Ok(p) => {
                        assert!(lambda <= max, "n = {n}, λ = {lambda}");
                        let b = log2_dense_singular_bound(p.dense);
                        assert!(b <= -f64::from(lambda + 1), "n = {n}, λ = {lambda}: 2^{b}");
                    }
                    Err(e) => {
                        assert!(lambda > max, "n = {n}, λ = {lambda}: {e:?}");
                        assert_eq!(e, Error::UnsupportedSsp { ssp: lambda, max });
                    }
                }
            }
        }
        assert_eq!(
            PaxosParams::new(1000, 128, DenseType::Gf128),
            Err(Error::UnsupportedSsp {
                ssp: 128,
                max: PaxosParams::max_ssp(1000, DenseType::Gf128)
            })
        );
    }

    #[test]
    fn ceil_log2_values() {
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(3), 2);
        assert_eq!(ceil_log2(64), 6);
        assert_eq!(ceil_log2(65), 7);
    }

    /// Exact tail by summing every term, for small cases.
    fn exact_tail_log2(n: usize, bins: usize, c: usize) -> f64 {
        let p = 1.0 / bins as f64;
        let mut ln_term = (n as f64) * (-p).ln_1p(); // i = 0
        let mut sum = 0.0;
        for i in 0..n {
            // term(i+1)
            ln_term += ((n - i) as f64 / (i + 1) as f64).ln() + (p / (1.0 - p)).ln();
            if i + 1 > c {
                sum += ln_term.exp();
            }
        }
        (sum * bins as f64).log2()
    }

    #[test]
    fn bin_capacity_is_tight_upper_bound() {
        for &(n, bins) in &[(1000usize, 4usize), (5000, 10), (20_000, 16)] {
            let c = bin_capacity(n, bins, 20);
            assert!(exact_tail_log2(n, bins, c) <= -20.0, "{n} {bins} {c}");
            // One less would (nearly) violate the bound: the estimate is not loose.
            assert!(exact_tail_log2(n, bins, c - 2) > -20.0, "{n} {bins} {c}");
        }
        assert_eq!(bin_capacity(100, 1, 40), 100);
        assert_eq!(bin_capacity(0, 5, 40), 0);
        assert_eq!(bin_capacity(3, 100, 40), 3);
        // 2^20 items in 64 bins at 2^-41: about 7.7 standard deviations above the mean.
        let c = bin_capacity(1 << 20, 64, 41);
        assert!((17_200..17_500).contains(&c), "{c}");
    }
}
