//! GGM-tree punctured PRFs, expanded level by level over many trees at once.
//!
//! Each of the `t` trees lives in its own region of `size_per` blocks of one output buffer:
//! level `l` of a tree occupies the first `count[l]` blocks of its region, with
//! `count[depth] = size_per` and `count[l] = ⌈count[l+1] / 2⌉` (trees are truncated on the
//! right, so `size_per` need not be a power of two). A node `s` has children
//! `G_0(s) = π_0(s) ⊕ s` and `G_1(s) = π_1(s) ⊕ s`, where `π_0, π_1` are AES-128 under two
//! fixed public keys (the length-doubling PRG of [BCG+19, §4] / libOTe's PPRF, from
//! fixed-key AES as a correlation-robust permutation).
//!
//! Expanding a level gathers the parents of *all* trees into one batch buffer, runs the two
//! AES permutations on the whole batch, and scatters the children back (in place: a chunk
//! of parents `[j0, j1)` writes children `[2·j0, 2·j1)`, so descending chunks never overwrite
//! an unread parent). Per tree and level it also returns the XOR of the even (left) and odd
//! (right) children, the values the SPCOT protocol transfers.
//!
//! The receiver of a punctured key runs the same expansion from a zero root. Its nodes on
//! the path to the punctured leaf hold garbage; the sibling of the path at each level is
//! repaired by XOR-ing a correction into it *while it is read* as a parent of the next level,
//! with a constant-time index comparison, so no memory access depends on the secret path.
//!
//! [BCG+19]: https://eprint.iacr.org/2019/1159

use std::sync::OnceLock;

use obliv_core::{Aes, Block};

/// Blocks per AES batch.
const BATCH: usize = 1024;

/// The two fixed public AES keys of the GGM PRG (arbitrary distinct constants: the first
/// 32 bytes of the binary expansion of e).
const GGM_KEYS: [Block; 2] = [
    Block(0x2b7e_1516_28ae_d2a6_abf7_1588_09cf_4f3c),
    Block(0xb7e1_5162_8aed_2a6a_bf71_5880_9cf4_f3c7),
];

fn ggm_aes() -> &'static [Aes; 2] {
    static AES: OnceLock<[Aes; 2]> = OnceLock::new();
    AES.get_or_init(|| [Aes::new(GGM_KEYS[0]), Aes::new(GGM_KEYS[1])])
}

/// The shape of a batch of truncated GGM trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TreeShape {
    /// Number of trees.
    pub(crate) trees: usize,
    /// Leaves per tree.
    pub(crate) size_per: usize,
    /// Depth (levels below the root).
    pub(crate) depth: usize,
    /// Nodes per level, `count[0] = 1`, `count[depth] = size_per`.
    pub(crate) count: Vec<usize>,
}

impl TreeShape {
    /// `trees` trees with `size_per ≥ 2` leaves each.
    pub(crate) fn new(trees: usize, size_per: usize) -> Self {
        debug_assert!(size_per >= 2);
        let depth = obliv_core::log2_ceil(size_per as u64) as usize;
        let mut count = vec![0usize; depth + 1];
        count[depth] = size_per;
        for l in (0..depth).rev() {
            count[l] = count[l + 1].div_ceil(2);
        }
        TreeShape {
            trees,
            size_per,
            depth,
            count,
        }
    }

    /// Total leaves.
    #[cfg(test)]
    pub(crate) fn leaves(&self) -> usize {
        self.trees * self.size_per
    }

    /// Trees expanded together: as many as fit in [`GROUP_BLOCKS`] leaves (at least one).
    pub(crate) fn group_trees(&self) -> usize {
        (GROUP_BLOCKS / self.size_per).max(1)
    }

    /// The same trees, `trees` of them.
    fn with_trees(&self, trees: usize) -> TreeShape {
        TreeShape {
            trees,
            ..self.clone()
        }
    }
}

/// Leaves of the trees expanded together, level by level (512 KiB of blocks): a group's
/// levels stay in the L2 cache while it is expanded, so that only its final leaves go out
/// to memory, once, instead of every level of all trees passing through memory.
const GROUP_BLOCKS: usize = 1 << 15;

/// All-ones if `a == b`, else zero, without a branch.
#[inline(always)]
pub(crate) fn eq_mask(a: usize, b: usize) -> u128 {
    let x = (a ^ b) as u64;
    // (x | -x) has its top bit set iff x != 0.
    let ne = (x | x.wrapping_neg()) >> 63;
    u128::from(ne).wrapping_sub(1)
}

/// Scratch space for [`expand_level`].
pub(crate) struct Scratch {
    left: Vec<Block>,
    right: Vec<Block>,
    pending: Vec<(usize, usize, usize, usize)>,
}

impl Scratch {
    pub(crate) fn new() -> Self {
        Scratch {
            left: vec![Block::ZERO; BATCH],
            right: vec![Block::ZERO; BATCH],
            pending: Vec::new(),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.left.zeroize();
        self.right.zeroize();
    }
}

/// Expands level `l` to level `l + 1` of every tree in `out`, returning in `sums[tree]` the
/// XOR of the left and of the right children. If `fixes` is given, `fixes[tree] = (c, d)`
/// XORs `d` into parent `c` of that tree as it is read (constant time in `c`).
pub(crate) fn expand_level(
    shape: &TreeShape,
    l: usize,
    out: &mut [Block],
    fixes: Option<&[(usize, Block)]>,
    sums: &mut [[Block; 2]],
    s: &mut Scratch,
) {
    let n_par = shape.count[l];
    let n_child = shape.count[l + 1];
    for v in sums.iter_mut() {
        *v = [Block::ZERO; 2];
    }
    s.pending.clear();
    let mut fill = 0;
    for tree in 0..shape.trees {
        let base = tree * shape.size_per;
        let mut end = n_par;
        while end > 0 {
            let take = end.min(BATCH - fill);
            let j0 = end - take;
            let region = &out[base..base + n_par];
            let (c, d) = fixes.map_or((usize::MAX, Block::ZERO), |f| f[tree]);
            for (q, j) in (j0..end).enumerate() {
                let p = Block(region[j].0 ^ (d.0 & eq_mask(j, c)));
                s.left[fill + q] = p;
                s.right[fill + q] = p;
            }
            s.pending.push((tree, j0, take, fill));
            fill += take;
            end = j0;
            if fill == BATCH {
                flush(shape, n_child, out, fixes, sums, s, fill);
                fill = 0;
            }
        }
    }
    if fill > 0 {
        flush(shape, n_child, out, fixes, sums, s, fill);
    }
}

fn flush(
    shape: &TreeShape,
    n_child: usize,
    out: &mut [Block],
    fixes: Option<&[(usize, Block)]>,
    sums: &mut [[Block; 2]],
    s: &mut Scratch,
    fill: usize,
) {
    let [a0, a1] = ggm_aes();
    a0.encrypt_blocks(&mut s.left[..fill]);
    a1.encrypt_blocks(&mut s.right[..fill]);
    for &(tree, j0, len, off) in &s.pending {
        let base = tree * shape.size_per;
        let region = &mut out[base..base + n_child];
        let (c, d) = fixes.map_or((usize::MAX, Block::ZERO), |f| f[tree]);
        let (mut sl, mut sr) = (Block::ZERO, Block::ZERO);
        // Descending, so that the children of parent j (at 2j, 2j+1 >= j) only overwrite
        // parents that are already done; the parent is re-read (with its fix) from `region`.
        for q in (0..len).rev() {
            let j = j0 + q;
            let p = Block(region[j].0 ^ (d.0 & eq_mask(j, c)));
            let l = s.left[off + q] ^ p;
            region[2 * j] = l;
            sl ^= l;
            if 2 * j + 1 < n_child {
                let r = s.right[off + q] ^ p;
                region[2 * j + 1] = r;
                sr ^= r;
            }
        }
        sums[tree][0] ^= sl;
        sums[tree][1] ^= sr;
    }
    s.pending.clear();
}

/// Full expansion from the given roots (the sender), group by group of
/// [`TreeShape::group_trees`] trees in a scratch buffer that stays in the cache: the leaves
/// of trees `t0..` are handed to `sink(t0, leaves)` (tree `t0 + i` at `i·size_per`), in
/// order; returns the level sums `sums[tree * depth + (l − 1)]` for levels `l = 1..=depth`.
/// The scratch buffer is zeroized at the end.
pub(crate) fn expand_full_with(
    shape: &TreeShape,
    roots: &[Block],
    mut sink: impl FnMut(usize, &[Block]),
) -> Vec<[Block; 2]> {
    debug_assert_eq!(roots.len(), shape.trees);
    let g = shape.group_trees().min(shape.trees);
    let mut scratch = Scratch::new();
    let mut work = vec![Block::ZERO; g * shape.size_per];
    let mut level = vec![[Block::ZERO; 2]; g];
    let mut all = vec![[Block::ZERO; 2]; shape.trees * shape.depth];
    for t0 in (0..shape.trees).step_by(g.max(1)) {
        let t1 = (t0 + g).min(shape.trees);
        let sub = shape.with_trees(t1 - t0);
        let work = &mut work[..(t1 - t0) * shape.size_per];
        for (i, r) in roots[t0..t1].iter().enumerate() {
            work[i * shape.size_per] = *r;
        }
        let level = &mut level[..t1 - t0];
        for l in 0..shape.depth {
            expand_level(&sub, l, work, None, level, &mut scratch);
            for (i, v) in level.iter().enumerate() {
                all[(t0 + i) * shape.depth + l] = *v;
            }
        }
        sink(t0, work);
    }
    use zeroize::Zeroize;
    work.zeroize();
    level.iter_mut().for_each(|s| s.zeroize());
    all
}

/// [`expand_full_with`] into `out` (all leaves, tree `i` at `i·size_per`).
#[cfg(test)]
pub(crate) fn expand_full(
    shape: &TreeShape,
    roots: &[Block],
    out: &mut [Block],
) -> Vec<[Block; 2]> {
    debug_assert_eq!(out.len(), shape.leaves());
    expand_full_with(shape, roots, |t0, leaves| {
        let at = t0 * shape.size_per;
        out[at..at + leaves.len()].copy_from_slice(leaves);
    })
}

/// Punctured expansion (the receiver), group by group of [`TreeShape::group_trees`] trees.
/// `alpha[tree]` is the punctured leaf and `keys[tree * depth + (l − 1)]` the XOR of all
/// level-`l` nodes on the side opposite to the path (the parity of `¬α_l`).
///
/// For each group of trees `t0..t1`, `sink(t0, leaves, fixes, totals)` receives the group's
/// leaves (`(t1 − t0)·size_per` blocks in a scratch buffer, tree `t0 + i` at
/// `i·size_per`) while they are still in the cache: the punctured leaf holds garbage and the
/// sibling of the path at the last level is still to be fixed: `fixes[i] = (c, d)` means
/// leaf `c` of tree `t0 + i` must be XOR-ed with `d`, and `totals[i]` is the XOR of all its
/// leaves after that fix (garbage leaf included). The scratch buffer is zeroized at the end.
pub(crate) fn expand_punctured_with(
    shape: &TreeShape,
    alpha: &[usize],
    keys: &[Block],
    mut sink: impl FnMut(usize, &mut [Block], &[(usize, Block)], &[Block]),
) {
    debug_assert_eq!(alpha.len(), shape.trees);
    debug_assert_eq!(keys.len(), shape.trees * shape.depth);
    let g = shape.group_trees().min(shape.trees);
    let mut scratch = Scratch::new();
    let mut work = vec![Block::ZERO; g * shape.size_per];
    let mut level = vec![[Block::ZERO; 2]; g];
    let mut fixes = vec![(usize::MAX, Block::ZERO); g];
    let mut totals = vec![Block::ZERO; g];
    for t0 in (0..shape.trees).step_by(g.max(1)) {
        let t1 = (t0 + g).min(shape.trees);
        let gt = t1 - t0;
        let sub = shape.with_trees(gt);
        let work = &mut work[..gt * shape.size_per];
        let (level, fixes, totals) = (&mut level[..gt], &mut fixes[..gt], &mut totals[..gt]);
        for i in 0..gt {
            work[i * shape.size_per] = Block::ZERO;
            fixes[i] = (usize::MAX, Block::ZERO);
        }
        for l in 0..shape.depth {
            let f = if l == 0 { None } else { Some(&fixes[..]) };
            expand_level(&sub, l, work, f, level, &mut scratch);
            let shift = shape.depth - l;
            for i in 0..gt {
                let tree = t0 + i;
                let a = alpha[tree];
                let path = a >> shift; // path node at level l
                let bit = (a >> (shift - 1)) & 1; // α_{l+1}
                let sib_bit = bit ^ 1;
                let sib = 2 * path + sib_bit;
                // S_{¬α}: select in constant time.
                let m = 0u128.wrapping_sub(sib_bit as u128);
                let s = Block((level[i][0].0 & !m) | (level[i][1].0 & m));
                let d = keys[tree * shape.depth + l] ^ s;
                fixes[i] = (sib, d);
                if l + 1 == shape.depth {
                    totals[i] = level[i][0] ^ level[i][1] ^ d;
                }
            }
        }
        sink(t0, work, fixes, totals);
    }
    use zeroize::Zeroize;
    work.zeroize();
    level.iter_mut().for_each(|s| s.zeroize());
    // The fix positions are the siblings of the punctured path (they give α away).
    fixes.iter_mut().for_each(|f| {
        f.0.zeroize();
        f.1.zeroize();
    });
    totals.zeroize();
}

/// [`expand_punctured_with`] into `out` (all leaves, tree `i` at `i·size_per`): returns
/// `(c, d)` per tree (leaf `c` must be XOR-ed with `d`) and the totals, as described there.
#[cfg(test)]
pub(crate) fn expand_punctured(
    shape: &TreeShape,
    alpha: &[usize],
    keys: &[Block],
    out: &mut [Block],
) -> (Vec<(usize, Block)>, Vec<Block>) {
    debug_assert_eq!(out.len(), shape.leaves());
    let mut all_fixes = vec![(usize::MAX, Block::ZERO); shape.trees];
    let mut all_totals = vec![Block::ZERO; shape.trees];
    expand_punctured_with(shape, alpha, keys, |t0, leaves, fixes, totals| {
        let at = t0 * shape.size_per;
        out[at..at + leaves.len()].copy_from_slice(leaves);
        all_fixes[t0..t0 + fixes.len()].copy_from_slice(fixes);
        all_totals[t0..t0 + totals.len()].copy_from_slice(totals);
    });
    (all_fixes, all_totals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::Prg;

    /// The plain recursive definition of a tree's leaves.
    fn leaves_reference(root: Block, size_per: usize) -> Vec<Block> {
        let depth = obliv_core::log2_ceil(size_per as u64) as usize;
        let [a0, a1] = ggm_aes();
        let mut level = vec![root];
        for _ in 0..depth {
            let mut next = Vec::new();
            for s in &level {
                next.push(a0.encrypt_block(*s) ^ *s);
                next.push(a1.encrypt_block(*s) ^ *s);
            }
            level = next;
        }
        level.truncate(size_per);
        level
    }

    #[test]
    fn masks() {
        assert_eq!(eq_mask(5, 5), u128::MAX);
        assert_eq!(eq_mask(5, 4), 0);
        assert_eq!(eq_mask(0, usize::MAX), 0);
        assert_eq!(eq_mask(usize::MAX, usize::MAX), u128::MAX);
    }

    #[test]
    fn full_and_punctured_expansion_match_reference() {
        for (trees, size_per) in [(1, 2), (3, 5), (5, 64), (7, 100), (2, 1500), (130, 33)] {
            let shape = TreeShape::new(trees, size_per);
            let mut prg = Prg::new(Block(size_per as u128));
            let roots = prg.blocks(trees);
            let mut out = vec![Block::ZERO; shape.leaves()];
            let sums = expand_full(&shape, &roots, &mut out);
            for (tree, root) in roots.iter().enumerate() {
                let reference = leaves_reference(*root, size_per);
                assert_eq!(&out[tree * size_per..(tree + 1) * size_per], &reference[..]);
            }
            // Receiver: puncture at alpha, receive the opposite-side sums.
            let alpha: Vec<usize> = (0..trees).map(|i| (i * 7919 + 3) % size_per).collect();
            let mut keys = vec![Block::ZERO; trees * shape.depth];
            for tree in 0..trees {
                for l in 1..=shape.depth {
                    let bit = (alpha[tree] >> (shape.depth - l)) & 1;
                    keys[tree * shape.depth + l - 1] = sums[tree * shape.depth + l - 1][bit ^ 1];
                }
            }
            let mut rout = vec![Block::ZERO; shape.leaves()];
            let (fixes, totals) = expand_punctured(&shape, &alpha, &keys, &mut rout);
            for tree in 0..trees {
                let region = &mut rout[tree * size_per..(tree + 1) * size_per];
                let (c, d) = fixes[tree];
                if c < size_per {
                    region[c] ^= d;
                }
                let total = region.iter().fold(Block::ZERO, |a, b| a ^ *b);
                assert_eq!(total, totals[tree]);
                for j in 0..size_per {
                    if j != alpha[tree] {
                        assert_eq!(region[j], out[tree * size_per + j], "tree {tree} leaf {j}");
                    }
                }
            }
        }
    }

    /// Constant time under memcheck (`.ci/ctgrind`, see `obliv_cpu::ctgrind`): the punctured
    /// leaves `α` (the noise positions) and the received sums are marked secret before the
    /// receiver's expansion, so a branch or a memory address that depends on them fails it;
    /// natively the leaves are checked against the full expansion.
    #[test]
    #[ignore = "run under valgrind by .ci/ctgrind"]
    fn ctgrind_punctured_expansion_does_not_depend_on_alpha() {
        use obliv_cpu::ctgrind::{public, secret};
        for (trees, size_per) in [(3, 5), (5, 64), (2, 1500)] {
            let shape = TreeShape::new(trees, size_per);
            let mut prg = Prg::new(Block(size_per as u128 + 1));
            let roots = prg.blocks(trees);
            let mut out = vec![Block::ZERO; shape.leaves()];
            let sums = expand_full(&shape, &roots, &mut out);
            let mut alpha: Vec<usize> = (0..trees).map(|i| (i * 31 + 7) % size_per).collect();
            let mut keys = vec![Block::ZERO; trees * shape.depth];
            for tree in 0..trees {
                for l in 1..=shape.depth {
                    let bit = (alpha[tree] >> (shape.depth - l)) & 1;
                    keys[tree * shape.depth + l - 1] = sums[tree * shape.depth + l - 1][bit ^ 1];
                }
            }
            let want_alpha = alpha.clone();
            secret(&mut alpha[..]);
            secret(&mut keys[..]);
            let mut rout = vec![Block::ZERO; shape.leaves()];
            let (mut fixes, _) = expand_punctured(&shape, &alpha, &keys, &mut rout);
            public(&mut rout[..]);
            public(&mut fixes[..]);
            for tree in 0..trees {
                let region = &mut rout[tree * size_per..(tree + 1) * size_per];
                let (c, d) = fixes[tree];
                if c < size_per {
                    region[c] ^= d;
                }
                for j in (0..size_per).filter(|&j| j != want_alpha[tree]) {
                    assert_eq!(region[j], out[tree * size_per + j], "tree {tree} leaf {j}");
                }
            }
        }
    }
}
