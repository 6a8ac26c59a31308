//! Hashing keys to OKVS rows with fixed-key AES (keys derived from the OKVS seed).
//!
//! For a key `x` (a [`Block`]; callers hash longer items to a block first):
//!
//! - `h₁ = AES_{k₁}(x) ⊕ x` gives the three distinct sparse positions: three windows of its
//!   bits are mapped by Lemire's multiply-shift (`⌊a·r / 2^bits⌋`) into `[0, m)`,
//!   `[0, m−1)` and `[0, m−2)`, then shifted past the earlier positions, which yields a
//!   uniform set of three distinct columns. For `m < 2^24` (every bin of the binned form)
//!   the windows are bits 0–31, 32–63 and 64–95 (bias at most `m / 2^32 < 2^-8` relative,
//!   typically `2^-17`), and bits 96–127 pick the bin, independent of the positions; for
//!   larger `m` the windows are 43, 43 and 42 bits wide (bias `≤ m / 2^42`);
//! - `h₂ = AES_{k₂}(x) ⊕ x` is the dense hash (bits for [`Binary`](crate::Binary), the field
//!   element `x` of `(x, x², …)` for [`Gf128`](crate::Gf128)).
//!
//! `k_i = tccr(i, seed)`. Separate AES keys and disjoint bit windows keep positions, dense
//! row and bin independent, as the analysis of RR22 assumes. Hashing runs on batches so the
//! AES pipeline stays full: two AES calls per key for both forms.

use obliv_core::hash::tccr;
use obliv_core::{Aes, Block};
use zeroize::Zeroize;

/// Keys hashed per AES batch.
pub(crate) const BATCH: usize = 64;

const MASK43: u128 = (1 << 43) - 1;
const MASK32: u128 = (1 << 32) - 1;

/// Multiply-shift range reduction of a `bits`-bit value into `[0, range)`.
#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // the result is < range ≤ u32::MAX
fn reduce(x: u128, range: u64, bits: u32) -> u32 {
    ((x * u128::from(range)) >> bits) as u32
}

/// `m` below which positions use 32-bit windows and bits 96–127 are free for the bin.
pub(crate) const NARROW_LIMIT: u64 = 1 << 24;

/// The bin of row hash `h` among `bins` (bits 96–127; only with `m < NARROW_LIMIT`).
#[inline(always)]
pub(crate) fn bin_of(h: Block, bins: u64) -> u32 {
    reduce(h.0 >> 96, bins, 32)
}

/// The three distinct sparse columns of row hash `h` in `[0, m)` (`m ≥ 3`).
#[inline(always)]
pub(crate) fn positions(h: Block, m: u64) -> [u32; 3] {
    let v = h.0;
    let (p0, mut p1, mut p2) = if m < NARROW_LIMIT {
        (
            reduce(v & MASK32, m, 32),
            reduce((v >> 32) & MASK32, m - 1, 32),
            reduce((v >> 64) & MASK32, m - 2, 32),
        )
    } else {
        (
            reduce(v & MASK43, m, 43),
            reduce((v >> 43) & MASK43, m - 1, 43),
            reduce(v >> 86, m - 2, 42),
        )
    };
    p1 += u32::from(p1 >= p0);
    let (lo, hi) = if p0 < p1 { (p0, p1) } else { (p1, p0) };
    p2 += u32::from(p2 >= lo);
    p2 += u32::from(p2 >= hi);
    [p0, p1, p2]
}

/// Derives the AES key number `i` from the seed.
fn sub_key(seed: Block, i: u128) -> Aes {
    Aes::new(tccr(Block(i), seed))
}

/// Hashes keys to rows (sparse positions and dense hash) of one OKVS of `m` sparse columns.
#[derive(Clone, Debug)]
pub(crate) struct RowHasher {
    row: Aes,
    dense: Aes,
    m: u64,
}

impl RowHasher {
    pub(crate) fn new(seed: Block, m: usize) -> Self {
        RowHasher {
            row: sub_key(seed, 1),
            dense: sub_key(seed, 2),
            m: m as u64,
        }
    }

    /// Hashes `keys` (at most [`BATCH`]) into `rows` and `dense` (same length).
    #[inline]
    pub(crate) fn hash_batch(&self, keys: &[Block], rows: &mut [[u32; 3]], dense: &mut [Block]) {
        debug_assert!(keys.len() <= BATCH && rows.len() == keys.len());
        let mut buf = [Block::ZERO; BATCH];
        let b = &mut buf[..keys.len()];
        b.copy_from_slice(keys);
        self.row.encrypt_blocks(b);
        for ((r, h), k) in rows.iter_mut().zip(b.iter()).zip(keys) {
            *r = positions(*h ^ *k, self.m);
        }
        // Encryptions of the keys: wiped (once per batch, before the stack slot is reused).
        buf.zeroize();
        dense.copy_from_slice(keys);
        self.dense.encrypt_blocks(dense);
        for (d, k) in dense.iter_mut().zip(keys) {
            *d ^= *k;
        }
    }

    /// As [`hash_batch`](Self::hash_batch), also writing the bin of each key among `bins`
    /// (requires `m < NARROW_LIMIT`).
    #[inline]
    pub(crate) fn hash_batch_binned(
        &self,
        keys: &[Block],
        bins: u64,
        bin: &mut [u32],
        rows: &mut [[u32; 3]],
        dense: &mut [Block],
    ) {
        debug_assert!(keys.len() <= BATCH && rows.len() == keys.len());
        debug_assert!(self.m < NARROW_LIMIT);
        let mut buf = [Block::ZERO; BATCH];
        let b = &mut buf[..keys.len()];
        b.copy_from_slice(keys);
        self.row.encrypt_blocks(b);
        for (((r, o), h), k) in rows.iter_mut().zip(bin.iter_mut()).zip(b.iter()).zip(keys) {
            let h = *h ^ *k;
            *r = positions(h, self.m);
            *o = bin_of(h, bins);
        }
        buf.zeroize();
        dense.copy_from_slice(keys);
        self.dense.encrypt_blocks(dense);
        for (d, k) in dense.iter_mut().zip(keys) {
            *d ^= *k;
        }
    }

    /// Writes the bin of each key (at most [`BATCH`]) among `bins` into `out` (requires
    /// `m < NARROW_LIMIT`).
    #[inline]
    pub(crate) fn bin_batch(&self, keys: &[Block], bins: u64, out: &mut [u32]) {
        debug_assert!(self.m < NARROW_LIMIT);
        let mut buf = [Block::ZERO; BATCH];
        let b = &mut buf[..keys.len()];
        b.copy_from_slice(keys);
        self.row.encrypt_blocks(b);
        for ((o, h), k) in out.iter_mut().zip(b.iter()).zip(keys) {
            *o = bin_of(*h ^ *k, bins);
        }
        buf.zeroize();
    }

    /// Hashes any number of keys.
    pub(crate) fn hash_all(&self, keys: &[Block], rows: &mut [[u32; 3]], dense: &mut [Block]) {
        for ((k, r), d) in keys
            .chunks(BATCH)
            .zip(rows.chunks_mut(BATCH))
            .zip(dense.chunks_mut(BATCH))
        {
            self.hash_batch(k, r, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_distinct_and_in_range() {
        let aes = Aes::new(Block(5));
        for m in [
            3u64,
            4,
            5,
            17,
            1000,
            1 << 20,
            (1 << 24) - 1,
            1 << 24,
            u64::from(u32::MAX - 1),
        ] {
            for i in 0..2000u128 {
                let p = positions(aes.encrypt_block(Block(i)), m);
                assert!(p.iter().all(|&x| u64::from(x) < m), "{p:?} {m}");
                assert!(p[0] != p[1] && p[0] != p[2] && p[1] != p[2], "{p:?} {m}");
            }
        }
    }

    /// With m = 3 every triple is a permutation of {0,1,2}; with m = 4 each of the 4 columns
    /// is hit about 3/4 of the time: a coarse uniformity check.
    #[test]
    fn positions_roughly_uniform() {
        let aes = Aes::new(Block(9));
        let mut counts = [0u32; 4];
        let trials = 40_000;
        for i in 0..trials {
            for c in positions(aes.encrypt_block(Block(i)), 4) {
                counts[c as usize] += 1;
            }
        }
        for c in counts {
            let expect = trials as f64 * 0.75;
            assert!((c as f64 - expect).abs() < expect * 0.02, "{counts:?}");
        }
    }

    #[test]
    fn bins_in_range_and_consistent() {
        let h = RowHasher::new(Block(1), 1000);
        let keys: Vec<Block> = (0..BATCH as u128).map(Block).collect();
        let mut out = [0u32; BATCH];
        h.bin_batch(&keys, 7, &mut out);
        assert!(out.iter().all(|&b| b < 7));
        assert!(out.iter().any(|&b| b != out[0]));
        let (mut bins, mut rows, mut dense) =
            ([0u32; BATCH], [[0u32; 3]; BATCH], [Block::ZERO; BATCH]);
        h.hash_batch_binned(&keys, 7, &mut bins, &mut rows, &mut dense);
        assert_eq!(bins, out);
        let (mut rows2, mut dense2) = ([[0u32; 3]; BATCH], [Block::ZERO; BATCH]);
        h.hash_batch(&keys, &mut rows2, &mut dense2);
        assert_eq!(rows, rows2);
        assert_eq!(dense, dense2);
    }
}
