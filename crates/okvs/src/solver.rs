//! Encoding (solving `H·P = X`) by triangulation, and decoding.
//!
//! # The system
//!
//! Row `i` of `H` is `(s_i ‖ δ_i)`: three ones at the sparse positions of key `i` and the
//! dense row `δ_i`. We want `P` with `⟨H_i, P⟩ = X_i` for every key.
//!
//! # Peeling [PaXoS, RR22 §3]
//!
//! A sparse column touched by exactly one remaining row can be solved last for that row:
//! the row is put on the diagonal with that column as its pivot and removed, lowering the
//! weights of its other columns. Columns are tracked by their weight and the XOR of the
//! indices of their remaining rows, so the one remaining row of a weight-1 column is read
//! off directly, without column lists (the trick of XOR/fuse filters). For `m ≈ 1.23·n` and
//! weight 3 this places all but a handful of rows (the 2-core of the hypergraph is empty or
//! tiny).
//!
//! When no weight-1 column is left, we do as volePSI: take a column of least weight, put its
//! first remaining row on the diagonal and move the others to the *gap*. (This phase builds
//! column lists and weight buckets once; it is rare.)
//!
//! # The gap [RR22, §3.2]
//!
//! Order the pivot rows so that `H = [[A, B, C], [D, E, F]]` with `C` lower triangular
//! (pivot rows, peeling order) and `[D E F]` the `g` gap rows. Multiplying the gap rows by
//! `−F·C⁻¹` cancels their pivot columns; we compute each row of `F·C⁻¹` by repeatedly adding
//! the pivot row of the earliest-peeled pivot column still present (a pivot row only touches
//! columns peeled later, so this terminates). That leaves `g` equations on the dense columns
//! only, `E'·p = x'` with `E' = E − F·C⁻¹·B` (`g × d`), which Gaussian elimination solves
//! (binary: it picks `g` independent columns among `g + λ`; GF(2^128): `g × g` generalised
//! Vandermonde). Rank `< g` is [`Error::SolveFailed`].
//!
//! # Back-substitution
//!
//! Non-pivot sparse columns are 0 (or random, for a randomized encoding), then pivot rows are
//! processed in reverse peeling order: `P[c] = X_r − Σ_{other j ∈ s_r} P[j] − ⟨δ_r, p⟩`.

use obliv_core::Block;
use obliv_core::rand_core::Rng;
use zeroize::{Zeroize, Zeroizing};

use crate::error::Error;
use crate::hash::{BATCH, RowHasher};
use crate::value::{DenseKind, DenseValue};

/// Reusable buffers for one solve (one per thread in the binned form, so bins allocate
/// nothing once the buffers have grown).
#[derive(Default)]
pub(crate) struct Scratch {
    rows: Vec<[u32; 3]>,
    dense: Vec<Block>,
    /// Per column: [remaining weight, XOR of remaining row indices].
    cols: Vec<[u32; 2]>,
    /// The queue of weight-1 columns.
    stack: Vec<u32>,
    /// (row, pivot column) in peeling order.
    order: Vec<(u32, u32)>,
    gap: Vec<u32>,
}

/// The buffers hold hashes of the keys (private inputs): wiped when dropped.
impl Drop for Scratch {
    fn drop(&mut self) {
        self.rows.zeroize();
        self.dense.zeroize();
        self.cols.zeroize();
        self.stack.zeroize();
        self.order.zeroize();
        self.gap.zeroize();
    }
}

/// Makes `v` able to hold `n` elements without reallocating later: a buffer too small is
/// wiped (over its whole capacity) and replaced, so that growing never frees an allocation
/// that still holds key hashes.
fn reserve_wiped<T: Zeroize>(v: &mut Vec<T>, n: usize) {
    if v.capacity() < n {
        v.zeroize();
        *v = Vec::with_capacity(n);
    }
}

/// `v.push(x)`, growing by doubling into a new buffer and wiping the old one (a plain push
/// would free it with its contents, here column indices derived from the keys).
fn push_wiped(v: &mut Vec<u32>, x: u32) {
    if v.len() == v.capacity() {
        let mut grown = Vec::with_capacity((2 * v.capacity()).max(4));
        grown.extend_from_slice(v);
        v.zeroize();
        *v = grown;
    }
    v.push(x);
}

/// Overwrites values derived from the keys or values (private inputs) with zeros, once the
/// buffer is no longer needed (`V` is any [`OkvsValue`](crate::OkvsValue), which need not
/// implement `Zeroize`: the writes are kept by [`core::hint::black_box`]).
pub(crate) fn wipe_values<V: Copy + Default>(v: &mut [V]) {
    v.fill(V::default());
    core::hint::black_box(v);
}

impl core::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Scratch(..)")
    }
}

/// How many rows (column-weight pass) or queued columns (peeling) ahead the solver
/// prefetches.
const PEEL_AHEAD: usize = 16;

#[inline(always)]
fn ix(x: u32) -> usize {
    x as usize
}

#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // row indices are < params.items ≤ u32::MAX − 1
fn ux(x: usize) -> u32 {
    x as u32
}

/// Solves for `keys → values` into `out` (`out.len() = m + d`).
///
/// Preconditions (checked by the callers): `keys.len() = values.len() ≤ u32::MAX − 1`,
/// `out.len() = sparse + dense`, `sparse ≥ 3`, and `hasher` built for `sparse`.
///
/// Errors carry key positions local to `keys`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve<D, V, R>(
    sparse_size: usize,
    dense_size: usize,
    hasher: &RowHasher,
    keys: &[Block],
    values: &[V],
    out: &mut [V],
    mut rng: Option<&mut R>,
    s: &mut Scratch,
) -> Result<(), Error>
where
    D: DenseKind,
    V: DenseValue<D>,
    R: Rng + ?Sized,
{
    let n = keys.len();
    let m = sparse_size;
    debug_assert_eq!(values.len(), n);
    debug_assert_eq!(out.len(), m + dense_size);

    // Every buffer is sized for this solve up front (see `reserve_wiped`); the queue holds
    // at most the initial weight-1 columns plus three columns per peeled row.
    reserve_wiped(&mut s.rows, n);
    reserve_wiped(&mut s.dense, n);
    reserve_wiped(&mut s.cols, m);
    reserve_wiped(&mut s.stack, m + 3 * n);
    reserve_wiped(&mut s.order, n);
    reserve_wiped(&mut s.gap, n);
    // Rows and column weights.
    s.rows.clear();
    s.rows.resize(n, [0; 3]);
    s.dense.clear();
    s.dense.resize(n, Block::ZERO);
    hasher.hash_all(keys, &mut s.rows, &mut s.dense);
    s.cols.clear();
    s.cols.resize(m, [0, 0]);
    for (r, row) in s.rows.iter().enumerate() {
        // Random updates over the whole system when it is large (unbinned): prefetched.
        if let Some(ahead) = s.rows.get(r + PEEL_AHEAD) {
            for &c in ahead {
                obliv_core::mem::prefetch_l2(&s.cols, ix(c));
            }
        }
        for &c in row {
            let e = &mut s.cols[ix(c)];
            e[0] += 1;
            e[1] ^= ux(r);
        }
    }

    // Peel weight-1 columns.
    s.stack.clear();
    s.stack.extend(
        s.cols
            .iter()
            .enumerate()
            .filter(|(_, e)| e[0] == 1)
            .map(|(c, _)| ux(c)),
    );
    s.order.clear();
    s.gap.clear();
    // First in, first out: the column taken next was queued long before, so consecutive
    // steps do not depend on each other and their cache misses (rows and column weights
    // are random reads over the whole system) overlap; a stack would make every step wait
    // for the column the previous one just pushed.
    let mut head = 0;
    while head < s.stack.len() {
        // Hints two steps ahead: the column weight of a queued column, then (once that is
        // near) the row it names now (it may change before its turn: only a hint).
        if let Some(&ca) = s.stack.get(head + 2 * PEEL_AHEAD) {
            obliv_core::mem::prefetch_l2(&s.cols, ix(ca));
        }
        if let Some(&cb) = s.stack.get(head + PEEL_AHEAD) {
            let rb = s.cols[ix(cb)][1];
            obliv_core::mem::prefetch_l2(&s.rows, ix(rb));
        }
        let c = s.stack[head];
        head += 1;
        let e = s.cols[ix(c)];
        if e[0] != 1 {
            continue;
        }
        let r = e[1];
        s.order.push((r, c));
        for &c2 in &s.rows[ix(r)] {
            let e2 = &mut s.cols[ix(c2)];
            e2[0] -= 1;
            e2[1] ^= r;
            if e2[0] == 1 {
                s.stack.push(c2);
            }
        }
    }
    if s.order.len() < n {
        core_phase(s, n);
    }

    let (sparse, dense_out) = out.split_at_mut(m);
    // Non-pivot sparse columns: zero or random.
    match rng.as_deref_mut() {
        Some(rng) => {
            for v in sparse.iter_mut() {
                *v = V::random(rng);
            }
            for &(_, c) in &s.order {
                sparse[ix(c)] = V::default();
            }
        }
        None => sparse.fill(V::default()),
    }
    dense_out.fill(V::default());
    let dense_active = !s.gap.is_empty() || rng.is_some();
    if dense_active {
        solve_dense::<D, V, R>(s, keys, values, sparse, dense_out, rng)?;
    }

    // Back-substitution in reverse peeling order.
    let rows = &s.rows;
    if dense_active {
        let d = dense_out.len();
        let mut prep = Vec::new();
        V::prepare_dense(dense_out, &mut prep);
        // `prep` (sums of the dense part of the solution, which is not masked yet) and
        // `rhs` (values of the keys): wiped below, once.
        // The dense part of every row does not depend on the sparse solution: computed for
        // all rows first, in batches (`values[r] ⊕ ⟨δ_r, p⟩`).
        let mut rhs = vec![V::default(); n];
        V::dense_dot_prepared_batch(&s.dense, &prep, d, &mut rhs);
        for (x, v) in rhs.iter_mut().zip(values) {
            *x = x.xor(*v);
        }
        for &(r, c) in s.order.iter().rev() {
            let [a, b, e] = rows[ix(r)];
            let y = rhs[ix(r)]
                .xor(sparse[ix(a)])
                .xor(sparse[ix(b)])
                .xor(sparse[ix(e)]);
            sparse[ix(c)] = y;
        }
        wipe_values(&mut rhs);
        wipe_values(&mut prep);
    } else {
        for &(r, c) in s.order.iter().rev() {
            let [a, b, e] = rows[ix(r)];
            let y = values[ix(r)]
                .xor(sparse[ix(a)])
                .xor(sparse[ix(b)])
                .xor(sparse[ix(e)]);
            sparse[ix(c)] = y;
        }
    }
    Ok(())
}

/// Removes row `r` from the weight/XOR tracking, filing changed columns in `buckets`.
#[inline]
fn remove_row(
    r: u32,
    rows: &[[u32; 3]],
    cols: &mut [[u32; 2]],
    buckets: &mut [Vec<u32>],
    cur: &mut usize,
) {
    for &c in &rows[ix(r)] {
        let e = &mut cols[ix(c)];
        e[0] -= 1;
        e[1] ^= r;
        let w = ix(e[0]);
        if w > 0 {
            push_wiped(&mut buckets[w], c);
            *cur = (*cur).min(w);
        }
    }
}

/// Finishes triangulation once no weight-1 column is left: least-weight column first, its
/// first remaining row on the diagonal, the others to the gap.
fn core_phase(s: &mut Scratch, n: usize) {
    let m = s.cols.len();
    // Every buffer here is derived from the keys' hashes: wiped when dropped.
    let mut assigned = Zeroizing::new(vec![false; n]);
    for &(r, _) in &s.order {
        assigned[ix(r)] = true;
    }
    // Column lists over the remaining rows (CSR).
    let mut start = Zeroizing::new(vec![0u32; m + 1]);
    for (r, row) in s.rows.iter().enumerate() {
        if !assigned[r] {
            for &c in row {
                start[ix(c) + 1] += 1;
            }
        }
    }
    for c in 0..m {
        start[c + 1] += start[c];
    }
    let mut fill = Zeroizing::new(start[..m].to_vec());
    let mut list = Zeroizing::new(vec![0u32; ix(start[m])]);
    for (r, row) in s.rows.iter().enumerate() {
        if !assigned[r] {
            for &c in row {
                list[ix(fill[ix(c)])] = ux(r);
                fill[ix(c)] += 1;
            }
        }
    }
    drop(fill);
    // Buckets of columns by current weight (lazy: stale entries are skipped).
    let max_w = s.cols.iter().map(|e| ix(e[0])).max().unwrap_or(0);
    let mut buckets: Zeroizing<Vec<Vec<u32>>> = Zeroizing::new(vec![Vec::new(); max_w + 1]);
    for (c, e) in s.cols.iter().enumerate() {
        if e[0] > 0 {
            push_wiped(&mut buckets[ix(e[0])], ux(c));
        }
    }
    let mut cur = 1usize;
    loop {
        while cur < buckets.len() && buckets[cur].is_empty() {
            cur += 1;
        }
        if cur >= buckets.len() {
            break;
        }
        let Some(c) = buckets[cur].pop() else {
            continue;
        };
        let w = ix(s.cols[ix(c)][0]);
        if w != cur {
            continue; // stale entry
        }
        if w == 1 {
            let r = s.cols[ix(c)][1];
            s.order.push((r, c));
            assigned[ix(r)] = true;
            remove_row(r, &s.rows, &mut s.cols, &mut buckets, &mut cur);
        } else {
            let mut first = true;
            for &r in &list[ix(start[ix(c)])..ix(start[ix(c) + 1])] {
                if assigned[ix(r)] {
                    continue;
                }
                if first {
                    s.order.push((r, c));
                    first = false;
                } else {
                    s.gap.push(r);
                }
                assigned[ix(r)] = true;
                remove_row(r, &s.rows, &mut s.cols, &mut buckets, &mut cur);
            }
        }
    }
    debug_assert_eq!(s.order.len() + s.gap.len(), n);
}

/// Solves the gap rows on the dense columns (see the module documentation), writing the
/// dense part of the solution. With `rng`, dense columns not needed as pivots are random.
fn solve_dense<D, V, R>(
    s: &Scratch,
    keys: &[Block],
    values: &[V],
    sparse: &[V],
    dense_out: &mut [V],
    rng: Option<&mut R>,
) -> Result<(), Error>
where
    D: DenseKind,
    V: DenseValue<D>,
    R: Rng + ?Sized,
{
    let g = s.gap.len();
    let d = dense_out.len();
    if g > d {
        return Err(Error::SolveFailed { gap: g, rank: d });
    }
    let mut e = vec![D::ZERO; g * d];
    let mut rhs = vec![V::default(); g];
    let res = solve_dense_in::<D, V, R>(s, keys, values, sparse, dense_out, rng, &mut e, &mut rhs);
    // The dense rows of gap keys (hashes of the keys) and sums of their values: wiped.
    e.fill(D::ZERO);
    rhs.fill(V::default());
    core::hint::black_box((&e, &rhs));
    res
}

/// [`solve_dense`] with its `g × d` matrix and right-hand side in `e` and `rhs`.
#[allow(clippy::too_many_arguments)]
fn solve_dense_in<D, V, R>(
    s: &Scratch,
    keys: &[Block],
    values: &[V],
    sparse: &[V],
    dense_out: &mut [V],
    rng: Option<&mut R>,
    e: &mut [D::Coef],
    rhs: &mut [V],
) -> Result<(), Error>
where
    D: DenseKind,
    V: DenseValue<D>,
    R: Rng + ?Sized,
{
    let g = s.gap.len();
    let d = dense_out.len();
    if g > 0 {
        let m = sparse.len();
        // Derived from the keys' hashes and values: wiped when dropped (also on an error).
        let mut pivot_of = Zeroizing::new(vec![u32::MAX; m]);
        for (j, &(_, c)) in s.order.iter().enumerate() {
            pivot_of[ix(c)] = ux(j);
        }
        let mut tmp = vec![D::ZERO; d];
        // The pivots still to add, sorted in decreasing order (the earliest is last); a
        // plain vector so that it can be wiped.
        // Every pivot is in it at most once: sized for all of them, it never reallocates
        // (which would free an unwiped copy).
        let mut set: Zeroizing<Vec<u32>> = Zeroizing::new(Vec::with_capacity(s.order.len()));
        for (i, &gr) in s.gap.iter().enumerate() {
            let erow = &mut e[i * d..(i + 1) * d];
            D::row(s.dense[ix(gr)], erow);
            let mut x = values[ix(gr)];
            let toggle = |c: u32, x: &mut V, set: &mut Vec<u32>| {
                let p = pivot_of[ix(c)];
                if p == u32::MAX {
                    *x = x.xor(sparse[ix(c)]);
                } else {
                    match set.binary_search_by(|q| p.cmp(q)) {
                        Ok(at) => {
                            set.remove(at);
                        }
                        Err(at) => set.insert(at, p),
                    }
                }
            };
            for &c in &s.rows[ix(gr)] {
                toggle(c, &mut x, &mut set);
            }
            let mut used = 0usize;
            let mut last = 0u32;
            while let Some(&j) = set.last() {
                let (r, _) = s.order[ix(j)];
                used += 1;
                last = r;
                x = x.xor(values[ix(r)]);
                D::row(s.dense[ix(r)], &mut tmp);
                for (a, b) in erow.iter_mut().zip(&tmp) {
                    *a = D::add(*a, *b);
                }
                // Adding the pivot row removes `j` itself and only adds later pivots.
                for &c in &s.rows[ix(r)] {
                    toggle(c, &mut x, &mut set);
                }
            }
            if used == 1 && keys[ix(last)] == keys[ix(gr)] {
                let (a, b) = (ix(last).min(ix(gr)), ix(last).max(ix(gr)));
                tmp.fill(D::ZERO);
                core::hint::black_box(&tmp);
                return Err(Error::DuplicateKey {
                    first: a,
                    second: b,
                });
            }
            rhs[i] = x;
        }
        // A dense row of a key: wiped.
        tmp.fill(D::ZERO);
        core::hint::black_box(&tmp);
    }

    // Reduced row echelon form of E' (g × d), the same operations on the right-hand side.
    // The pivot columns depend on the keys' dense rows: wiped when dropped.
    let mut pivots: Zeroizing<Vec<usize>> = Zeroizing::new(Vec::with_capacity(g));
    for col in 0..d {
        let rank = pivots.len();
        if rank == g {
            break;
        }
        let Some(p) = (rank..g).find(|&i| e[i * d + col] != D::ZERO) else {
            continue;
        };
        if p != rank {
            for k in 0..d {
                e.swap(p * d + k, rank * d + k);
            }
            rhs.swap(p, rank);
        }
        let inv = D::inv(e[rank * d + col]);
        for k in 0..d {
            e[rank * d + k] = D::mul(e[rank * d + k], inv);
        }
        rhs[rank] = rhs[rank].scale(inv);
        for i in 0..g {
            if i == rank {
                continue;
            }
            let f = e[i * d + col];
            if f == D::ZERO {
                continue;
            }
            for k in 0..d {
                e[i * d + k] = D::add(e[i * d + k], D::mul(f, e[rank * d + k]));
            }
            let t = rhs[rank].scale(f);
            rhs[i] = rhs[i].xor(t);
        }
        pivots.push(col);
    }
    if pivots.len() < g {
        return Err(Error::SolveFailed {
            gap: g,
            rank: pivots.len(),
        });
    }
    let mut is_pivot = Zeroizing::new(vec![false; d]);
    for &p in pivots.iter() {
        is_pivot[p] = true;
    }
    if let Some(rng) = rng {
        for (col, v) in dense_out.iter_mut().enumerate() {
            if !is_pivot[col] {
                *v = V::random(rng);
            }
        }
    }
    for (i, &pc) in pivots.iter().enumerate() {
        let mut x = rhs[i];
        for col in 0..d {
            if !is_pivot[col] {
                x = x.xor(dense_out[col].scale(e[i * d + col]));
            }
        }
        dense_out[pc] = x;
    }
    Ok(())
}

/// Decodes `keys` against the encoding `p` (`p.len() = m + d`), writing into `out`;
/// `prepared` is `prepare_dense(p[m..])`, or `None` if the dense part is zero.
pub(crate) fn decode<D, V>(
    hasher: &RowHasher,
    m: usize,
    keys: &[Block],
    p: &[V],
    prepared: Option<&[V]>,
    out: &mut [V],
) where
    D: DenseKind,
    V: DenseValue<D>,
{
    let sparse = &p[..m];
    let d = p.len() - m;
    let mut rows = [[0u32; 3]; BATCH];
    let mut dh = [Block::ZERO; BATCH];
    let mut dd = [V::default(); BATCH];
    for (k, o) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
        let rows = &mut rows[..k.len()];
        let dh = &mut dh[..k.len()];
        hasher.hash_batch(k, rows, dh);
        // The batch's 3 random reads per key, issued before any is waited for.
        for r in rows.iter() {
            for &x in r {
                obliv_core::mem::prefetch_l2(sparse, ix(x));
            }
        }
        if let Some(prep) = prepared {
            let dd = &mut dd[..k.len()];
            V::dense_dot_prepared_batch(dh, prep, d, dd);
            for ((o, [a, b, c]), e) in o.iter_mut().zip(rows.iter()).zip(dd.iter()) {
                *o = sparse[ix(*a)]
                    .xor(sparse[ix(*b)])
                    .xor(sparse[ix(*c)])
                    .xor(*e);
            }
        } else {
            for (o, [a, b, c]) in o.iter_mut().zip(rows.iter()) {
                *o = sparse[ix(*a)].xor(sparse[ix(*b)]).xor(sparse[ix(*c)]);
            }
        }
    }
    // The last batch's hashes of the keys and dense products: wiped, once per call.
    rows.zeroize();
    dh.zeroize();
    wipe_values(&mut dd);
}

/// The prepared dense table of `dense`, or `None` if it is all zero (then it contributes
/// nothing and decoding skips it).
pub(crate) fn prepare<D: DenseKind, V: DenseValue<D>>(dense: &[V]) -> Option<Vec<V>> {
    if dense.iter().all(|v| *v == V::default()) {
        return None;
    }
    let mut t = Vec::new();
    V::prepare_dense(dense, &mut t);
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_wiped_keeps_order() {
        let mut v = Vec::new();
        for i in 0..100u32 {
            push_wiped(&mut v, i);
        }
        assert_eq!(v, (0..100).collect::<Vec<u32>>());
    }

    #[test]
    fn reserve_wiped_grows_once() {
        let mut v: Vec<u32> = vec![7; 10];
        reserve_wiped(&mut v, 5);
        assert_eq!(v, vec![7; 10], "large enough: untouched");
        reserve_wiped(&mut v, 100);
        assert!(v.is_empty() && v.capacity() >= 100);
        let cap = v.capacity();
        v.resize(100, 1);
        assert_eq!(v.capacity(), cap, "no reallocation once reserved");
    }

    /// The solver reserves every buffer before filling it, so a scratch reused for a larger
    /// system never reallocates (and frees unwiped key hashes) while solving.
    #[test]
    fn scratch_reserved_before_use() {
        use crate::value::Gf128;
        let mut s = Scratch::default();
        for n in [10usize, 1000, 5000] {
            let m = n * 2 + 10;
            let hasher = RowHasher::new(Block(3), m);
            let keys: Vec<Block> = (0..n as u128)
                .map(|i| Block(i * 0x1234_5678_9abc))
                .collect();
            let values = keys.clone();
            let mut out = vec![Block::ZERO; m + 4];
            solve::<Gf128, Block, obliv_core::AesRng>(
                m, 4, &hasher, &keys, &values, &mut out, None, &mut s,
            )
            .unwrap();
            assert!(s.rows.capacity() >= n && s.dense.capacity() >= n);
            assert!(
                s.stack.capacity() >= m + 3 * n,
                "{} {}",
                s.stack.capacity(),
                m + 3 * n
            );
            assert!(s.order.capacity() >= n && s.gap.capacity() >= n);
        }
    }
}
