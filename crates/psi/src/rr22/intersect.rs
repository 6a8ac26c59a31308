//! The receiver's last step: which of its own values did the sender send?
//!
//! Both sides hold about a million pseudorandom values of `w` bytes; the sender's arrive
//! sorted. A lookup per value into the whole sorted list (and a directory over it) is two
//! random reads into some 20 MB per value, each a cache and TLB miss. Here the receiver's
//! values are first partitioned in place by their top [`GROUP_BITS`] bits (one counting pass,
//! one cycle-leader permutation of values and indices, no new large buffer besides the
//! indices), so each group of about `n / 256` values is then looked up in the matching slice
//! of the sender's list, which stays in L2 together with a small directory over the group's
//! next bits. Hits are marked in a bitmap, which gives the indices in ascending order.
//!
//! The result is the same as the plain computation (the tests check this); so is the bound a
//! hostile sender meets: values crowding one group or one directory entry are searched by
//! bisection, `O(log n_s)` per lookup.

use obliv_core::Block;
use obliv_net::Channel;

use super::{CHUNK, TAG_COUNT, TAG_VALUES};
use crate::error::{Error, Result};
use crate::wire::{pack, parse};

/// Bits of the first partition (256 groups: few enough write streams for the TLB, small
/// enough groups for L2 at a million values).
const GROUP_BITS: u32 = 8;

/// Below this many values of ours the direct lookup ([`intersect`]) is as fast.
const MIN_PARTITIONED: usize = 1 << 14;

/// The receiver's values, made ready for [`Prepared::intersect`] before the sender's arrive
/// (the partition runs while the sender is still computing its values).
pub(super) enum Prepared {
    /// Few values, or a width too small to partition by: looked up directly.
    Direct(Vec<Block>, usize),
    /// Values truncated to `w` bytes and partitioned by group, with their indices.
    Partitioned {
        /// The truncated values, group by group.
        vals: Vec<u128>,
        /// `idx[j]`: the index in the receiver's set of `vals[j]`.
        idx: Vec<u32>,
        /// Group `g` is `vals[starts[g]..starts[g + 1]]`.
        starts: Vec<usize>,
        /// The comparison width in bytes.
        w: usize,
    },
}

impl Prepared {
    /// Prepares `ours` (whose values are compared on their low `w` bytes); takes it by value
    /// to reuse its buffer for the truncated values.
    pub(super) fn new(ours: Vec<Block>, w: usize) -> Self {
        let n = ours.len();
        if n < MIN_PARTITIONED || 8 * w < 2 * GROUP_BITS as usize || u32::try_from(n).is_err() {
            return Prepared::Direct(ours, w);
        }
        // `Block` is a transparent `u128`: the collect reuses the buffer in place.
        let mut vals: Vec<u128> = ours.into_iter().map(|b| truncate(b, w)).collect();
        // `n` fits in u32 (checked above).
        #[allow(clippy::cast_possible_truncation)]
        let mut idx: Vec<u32> = (0..n as u32).collect();
        let starts = partition(&mut vals, &mut idx, |v| top_bits(v, w, GROUP_BITS));
        Prepared::Partitioned {
            vals,
            idx,
            starts,
            w,
        }
    }

    /// The indices `j` (ascending) whose value `ours[j]`, truncated to `w` bytes, is in
    /// `theirs` (sorted ascending, without repeats, values below `2^(8·w)`).
    pub(super) fn intersect(&self, theirs: &[u128]) -> Vec<usize> {
        let (vals, idx, starts, w) = match self {
            Prepared::Direct(ours, w) => return intersect(ours, theirs, *w),
            Prepared::Partitioned {
                vals,
                idx,
                starts,
                w,
            } => (vals, idx, starts, *w),
        };
        if theirs.is_empty() {
            return Vec::new();
        }
        // The sender's list is sorted, so each group is one slice of it.
        let mut theirs_starts = [0usize; (1 << GROUP_BITS) + 1];
        for (g, s) in theirs_starts.iter_mut().enumerate() {
            *s = theirs.partition_point(|&v| top_bits(v, w, GROUP_BITS) < g);
        }
        let mut hits = vec![0u64; vals.len().div_ceil(64)];
        let mut dir: Vec<u32> = Vec::new();
        for g in 0..1usize << GROUP_BITS {
            let ours_g = &vals[starts[g]..starts[g + 1]];
            let idx_g = &idx[starts[g]..starts[g + 1]];
            let theirs_g = &theirs[theirs_starts[g]..theirs_starts[g + 1]];
            if !ours_g.is_empty() && !theirs_g.is_empty() {
                lookup_group(ours_g, idx_g, theirs_g, w, &mut dir, &mut hits);
            }
        }
        let mut out = Vec::new();
        for (k, &word) in hits.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                out.push(64 * k + word.trailing_zeros() as usize);
                word &= word - 1;
            }
        }
        out
    }
}

/// [`Prepared::new`] then [`Prepared::intersect`].
/// The first `w ≤ 16` bytes of `b`, as an integer.
pub(super) fn truncate(b: Block, w: usize) -> u128 {
    if w >= 16 {
        b.0
    } else {
        b.0 & ((1u128 << (8 * w)) - 1)
    }
}

/// Receives the sender's values (at most `n_s` of `w` bytes) and returns the indices `j`
/// (ascending) whose `ours[j]`, truncated to `w` bytes, the sender sent. `scratch` (a vector
/// the caller no longer needs, its length irrelevant) lends its allocation to the sender's
/// values.
pub(super) fn recv_and_intersect<C>(
    ch: &mut C,
    ours: Vec<Block>,
    scratch: Vec<Block>,
    n_s: usize,
    w: usize,
) -> Result<Vec<usize>>
where
    C: Channel + ?Sized,
{
    // Partitioned while the sender computes its values.
    let ours = Prepared::new(ours, w);
    let f = ch.recv_max(5 + 8)?;
    let (tag, index, payload) = parse(&f)?;
    if tag != TAG_COUNT || index != 0 || payload.len() != 8 {
        return Err(Error::Protocol(
            "expected the count of the sender's values".into(),
        ));
    }
    let mut cb = [0u8; 8];
    cb.copy_from_slice(payload);
    let count = usize::try_from(u64::from_le_bytes(cb))
        .ok()
        .filter(|&c| c <= n_s)
        .ok_or_else(|| Error::Protocol(format!("more values than the {n_s} items announced")))?;
    let mut theirs = Block::into_u128_vec(scratch);
    theirs.clear();
    theirs.reserve(count);
    for i in 0..count.div_ceil(CHUNK) {
        let expected = (count - i * CHUNK).min(CHUNK) * w;
        let f = ch.recv_max(5 + expected)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_VALUES || index != i || payload.len() != expected {
            return Err(Error::Protocol(format!(
                "expected value chunk {i} of {expected} bytes, got tag {tag} chunk {index} of {} bytes",
                payload.len()
            )));
        }
        theirs.extend(payload.chunks_exact(w).map(pack));
    }
    // An honest sender sends its values sorted without repeats; a deviating one only costs
    // us a sort (its values are then looked up all the same).
    if !theirs.windows(2).all(|p| p[0] < p[1]) {
        sort_values(&mut theirs, w);
    }
    Ok(ours.intersect(&theirs))
}

/// `v >> (8·w − bits)`: the top `bits` bits of a value truncated to `w` bytes
/// (`bits ≤ 8·w`, `v < 2^(8·w)`).
#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // at most 26 bits remain
pub(super) fn top_bits(v: u128, w: usize, bits: u32) -> usize {
    (v >> (8 * w as u32 - bits)) as usize
}

/// Sorts values truncated to `w` bytes ascending and drops repeats.
///
/// Three LSD radix passes of 8 bits on the top 24 bits (one counting pass for all three,
/// then three scatters into 256 buckets each: few enough write streams for the TLB), then
/// a comparison sort of each run of equal top bits (about one value per run for
/// pseudorandom values; a run of any length is still sorted in `O(len·log len)`, so
/// structured input costs no more than a plain sort).
pub(super) fn sort_values(t: &mut Vec<u128>, w: usize) {
    const DIGIT: u32 = 8;
    const PASSES: u32 = 3;
    if t.len() < 1 << 12 || w < 3 {
        t.sort_unstable();
        t.dedup();
        return;
    }
    let bits = DIGIT * PASSES;
    let passes = PASSES as usize;
    let mask = (1usize << DIGIT) - 1;
    let digit = |v: u128, p: usize| (top_bits(v, w, bits) >> (DIGIT as usize * p)) & mask;
    let mut counts = vec![[0usize; PASSES as usize]; 1 << DIGIT];
    for &v in t.iter() {
        for p in 0..passes {
            counts[digit(v, p)][p] += 1;
        }
    }
    let mut sums = [0usize; PASSES as usize];
    for c in counts.iter_mut() {
        for (x, s) in c.iter_mut().zip(sums.iter_mut()) {
            let here = *x;
            *x = *s;
            *s += here;
        }
    }
    let mut tmp = vec![0u128; t.len()];
    for p in 0..passes {
        let (from, to) = if p % 2 == 0 {
            (&t[..], &mut tmp[..])
        } else {
            (&tmp[..], &mut t[..])
        };
        for &v in from {
            let d = digit(v, p);
            to[counts[d][p]] = v;
            counts[d][p] += 1;
        }
    }
    // An odd number of passes leaves the result in `tmp`.
    core::mem::swap(t, &mut tmp);
    drop(tmp);
    // Runs of equal top bits, in order; sort inside each.
    let mut i = 0;
    while i < t.len() {
        let k = top_bits(t[i], w, bits);
        let mut j = i + 1;
        while j < t.len() && top_bits(t[j], w, bits) == k {
            j += 1;
        }
        if j - i > 1 {
            t[i..j].sort_unstable();
        }
        i = j;
    }
    t.dedup();
}

/// The indices `j` (ascending) whose `ours[j]`, truncated to `w` bytes, is in `theirs`
/// (sorted ascending, without repeats, values below `2^(8·w)`).
///
/// A directory over the top `⌊log₂ |theirs|⌋` bits gives each value's range of `theirs`
/// (about one entry for an honest sender's pseudorandom values), searched linearly when
/// short and by bisection otherwise, so a sender whose values crowd one range costs
/// `O(log |theirs|)` per lookup, never more.
pub(super) fn intersect(ours: &[Block], theirs: &[u128], w: usize) -> Vec<usize> {
    if theirs.is_empty() || ours.is_empty() {
        return Vec::new();
    }
    let bits = (usize::BITS - 1 - theirs.len().leading_zeros()).clamp(1, 26);
    let bits = bits.min(8 * u32::try_from(w).unwrap_or(16));
    // dir[b] = the number of values whose top bits are below b.
    let mut dir = vec![0u32; (1usize << bits) + 1];
    let mut b = 0usize;
    for (i, &v) in theirs.iter().enumerate() {
        let t = top_bits(v, w, bits);
        while b <= t {
            dir[b] = u32::try_from(i).unwrap_or(u32::MAX);
            b += 1;
        }
    }
    let total = u32::try_from(theirs.len()).unwrap_or(u32::MAX);
    for d in &mut dir[b..] {
        *d = total;
    }
    // In batches: first every value's range and first candidate (independent loads without
    // branches, so the cache misses overlap), then the comparisons.
    const B: usize = 32;
    let last = theirs.len() - 1;
    let mut out = Vec::new();
    let (mut vals, mut lo, mut hi, mut first) = ([0u128; B], [0usize; B], [0usize; B], [0u128; B]);
    for (c, chunk) in ours.chunks(B).enumerate() {
        for (i, &o) in chunk.iter().enumerate() {
            let v = truncate(o, w);
            let t = top_bits(v, w, bits);
            vals[i] = v;
            lo[i] = dir[t] as usize;
            hi[i] = dir[t + 1] as usize;
        }
        for i in 0..chunk.len() {
            first[i] = theirs[lo[i].min(last)];
        }
        for i in 0..chunk.len() {
            let (v, range) = (vals[i], &theirs[lo[i]..hi[i]]);
            let hit = match range.len() {
                0 => false,
                1 => first[i] == v,
                2..=8 => range.contains(&v),
                _ => range.binary_search(&v).is_ok(),
            };
            if hit {
                out.push(c * B + i);
            }
        }
    }
    out
}

#[cfg(test)]
fn intersect_values(ours: Vec<Block>, theirs: &[u128], w: usize) -> Vec<usize> {
    Prepared::new(ours, w).intersect(theirs)
}

/// Reorders `vals` (and `idx` alike) so that group `g = group(v)` occupies
/// `starts[g]..starts[g + 1]`; returns `starts` (`2^GROUP_BITS + 1` entries).
fn partition(vals: &mut [u128], idx: &mut [u32], group: impl Fn(u128) -> usize) -> Vec<usize> {
    const G: usize = 1 << GROUP_BITS;
    let mut starts = vec![0usize; G + 1];
    for &v in vals.iter() {
        starts[group(v) + 1] += 1;
    }
    for g in 0..G {
        starts[g + 1] += starts[g];
    }
    // American flag sort: walk each group's unfilled part and send every element home,
    // carrying the displaced one on.
    let mut head = starts.clone();
    for g in 0..G {
        while head[g] < starts[g + 1] {
            let (mut v, mut i) = (vals[head[g]], idx[head[g]]);
            let mut d = group(v);
            while d != g {
                let p = head[d];
                head[d] += 1;
                core::mem::swap(&mut v, &mut vals[p]);
                core::mem::swap(&mut i, &mut idx[p]);
                d = group(v);
            }
            vals[head[g]] = v;
            idx[head[g]] = i;
            head[g] += 1;
        }
    }
    starts
}

/// Looks up each of `ours` (all in one group) in `theirs` (the sender's values of that
/// group, sorted) through a directory over the bits below the group's, and sets bit
/// `idx[j]` of `hits` for each value found.
fn lookup_group(
    ours: &[u128],
    idx: &[u32],
    theirs: &[u128],
    w: usize,
    dir: &mut Vec<u32>,
    hits: &mut [u64],
) {
    // About half of one of the sender's values per directory entry, within the value's
    // width: most ranges are then empty or hold one or two values, checked without branches.
    let log = usize::BITS - 1 - theirs.len().leading_zeros();
    let bits = (log + 1)
        .clamp(1, 22)
        .min(8 * u32::try_from(w).unwrap_or(16) - GROUP_BITS);
    let mask = (1usize << bits) - 1;
    let sub = |v: u128| top_bits(v, w, GROUP_BITS + bits) & mask;
    // dir[t] = the number of values whose sub-index is below t.
    dir.clear();
    dir.resize((1 << bits) + 1, 0);
    for &v in theirs {
        dir[sub(v) + 1] += 1;
    }
    for t in 0..1usize << bits {
        dir[t + 1] += dir[t];
    }
    let last = theirs.len() - 1;
    for (&v, &i) in ours.iter().zip(idx) {
        let t = sub(v);
        let (lo, hi) = (dir[t] as usize, dir[t + 1] as usize);
        let hit = if hi - lo <= 2 {
            // Both candidates read unconditionally (clamped into the slice), kept by masks.
            let first = theirs[lo.min(last)] == v && lo < hi;
            let second = theirs[(lo + 1).min(last)] == v && lo + 1 < hi;
            first | second
        } else {
            theirs[lo..hi].binary_search(&v).is_ok()
        };
        let i = i as usize;
        hits[i / 64] |= u64::from(hit) << (i % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_core::rand_core::SeedableRng;

    fn plain(ours: &[Block], theirs: &[u128], w: usize) -> Vec<usize> {
        let set: std::collections::HashSet<u128> = theirs.iter().copied().collect();
        (0..ours.len())
            .filter(|&j| set.contains(&truncate(ours[j], w)))
            .collect()
    }

    /// Pseudorandom values with about half of ours in theirs, repeats on our side, at sizes
    /// on both sides of the partitioned path's threshold and every width it takes.
    #[test]
    fn matches_plain_intersection() {
        let mut rng = AesRng::from_seed([7; 16]);
        for w in [1usize, 2, 3, 5, 10, 11, 16] {
            for (nr, ns) in [
                (20_000usize, 30_000usize),
                (70_000, 17_000),
                (16_384, 16_384),
                (100, 50_000),
            ] {
                let theirs_src: Vec<Block> = (0..ns).map(|_| Block::random(&mut rng)).collect();
                let ours: Vec<Block> = (0..nr)
                    .map(|j| match j % 3 {
                        0 => theirs_src[j % ns],
                        1 => ours_repeat(j),
                        _ => Block::random(&mut rng),
                    })
                    .collect();
                let mut theirs: Vec<u128> = theirs_src.iter().map(|&b| truncate(b, w)).collect();
                sort_values(&mut theirs, w);
                let want = plain(&ours, &theirs, w);
                assert!(
                    w < 3 || want.len() >= nr / 3,
                    "w = {w}: too few matches to test"
                );
                assert_eq!(
                    intersect_values(ours, &theirs, w),
                    want,
                    "w = {w}, {nr} vs {ns}"
                );
            }
        }
    }

    /// A value that repeats every few indices (so repeated items on our side are covered).
    fn ours_repeat(j: usize) -> Block {
        Block(0x5555_0000_0000_0000_0000_0000_0000_0000 ^ (j as u128 / 12))
    }

    /// A hostile sender whose values all share one group and one directory entry, and
    /// values at the extremes of the range: still the plain answer.
    #[test]
    fn crowded_and_extreme_values() {
        let w = 10;
        let top = (1u128 << 80) - 1;
        let theirs: Vec<u128> = (0..40_000u128).map(|v| v << 2).chain([top]).collect();
        let mut ours: Vec<Block> = (0..60_000u128).map(|v| Block(v << 1)).collect();
        ours.push(Block(top));
        ours.push(Block(0));
        let want = plain(&ours, &theirs, w);
        assert_eq!(want.len(), 30_002);
        assert_eq!(intersect_values(ours, &theirs, w), want);
    }

    /// Time against the direct lookup at 2^20 (`cargo test -p obliv-psi --lib
    /// intersect_timing -- --ignored --nocapture`).
    #[test]
    #[ignore = "timing, not a check"]
    fn intersect_timing() {
        let mut rng = AesRng::from_seed([9; 16]);
        let n = 1 << 20;
        let w = 10;
        let ours: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
        let mut theirs: Vec<u128> = ours
            .iter()
            .step_by(2)
            .map(|&b| truncate(b, w))
            .chain((0..n / 2).map(|_| truncate(Block::random(&mut rng), w)))
            .collect();
        sort_values(&mut theirs, w);
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let a = intersect(&ours, &theirs, w);
            let direct = t.elapsed();
            let copy = ours.clone();
            let t = std::time::Instant::now();
            let b = intersect_values(copy, &theirs, w);
            let part = t.elapsed();
            assert_eq!(a, b);
            println!("2^20, w = {w}: direct {direct:?}, partitioned {part:?}");
        }
    }
}
