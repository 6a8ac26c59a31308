//! The binned OKVS (volePSI's `Baxos`): keys hashed into bins of about 2^14, each bin an
//! independent [`Paxos`](crate::Paxos) of one fixed capacity, solved in parallel.
//!
//! Binning keeps each bin's working set (rows, column weights, the bin's slice of the
//! encoding: ≈ 0.5 MiB at 2^14 keys) in the L2 cache, which makes peeling several times
//! faster than on one large system, and gives independent tasks for rayon. The price is the
//! bin capacity: every bin is sized for the most loaded bin (see
//! [`bin_capacity`](crate::params::bin_capacity)), so the total size is
//! `bins · (e·c + d)` instead of `e·n + d`: at 2^20 keys about 1.35·n in bins of 2^14 and
//! 1.28·n in bins of 2^16 (which encode about 1.5× slower: a bin no longer fits in L2).
//!
//! Failure probability: bin overflow `≤ 2^-(λ+1)` plus all bins' encodings
//! `≤ bins · 2^-(λ+1+⌈log2 bins⌉) ≤ 2^-(λ+1)`, in total `≤ 2^-λ`.

use core::marker::PhantomData;

use obliv_core::rand_core::{Rng, SeedableRng};
use obliv_core::{AesRng, Block};
use rayon::prelude::*;
use zeroize::{Zeroize, Zeroizing};

use crate::error::Error;
use crate::hash::{BATCH, NARROW_LIMIT, RowHasher};
use crate::params::{MAX_SSP, PaxosParams, bin_capacity, ceil_log2};
use crate::paxos::DECODE_CHUNK;
use crate::solver::{self, Scratch};
use crate::value::{DenseKind, DenseValue, Gf128};
use crate::{Okvs, check_len};

/// The default number of keys per bin (volePSI's `RsPsi` uses `1 << 14`).
pub const DEFAULT_BIN_SIZE: usize = 1 << 14;

/// Dense tables of all bins up to this many bytes are used in key order when decoding
/// (they stay in the L1 cache together); larger ones (binary dense columns) key by key
/// grouped by bin.
const SMALL_TABLES: usize = 16 << 10;

/// How many keys ahead the binned encoder prefetches the keys and values it gathers.
const GATHER_AHEAD: usize = 16;

/// A buffer of keys or values (private inputs), overwritten with zeros when dropped.
struct Wiped<T: Copy + Default>(Vec<T>);

impl<T: Copy + Default> Drop for Wiped<T> {
    fn drop(&mut self) {
        let v = &mut self.0;
        v.resize(v.capacity(), T::default());
        v.fill(T::default());
        core::hint::black_box(&v);
    }
}

/// Per-bin dense tables for decoding.
struct Prepared<'a, V> {
    active: &'a [bool],
    tables: &'a [V],
    stride: usize,
}

/// The RR22 OKVS in its binned, parallel form.
///
/// ```
/// use obliv_okvs::{BinnedPaxos, Gf128, Okvs};
/// use obliv_core::Block;
///
/// let keys: Vec<Block> = (0..50_000u128).map(|i| Block(i * 0x9e37_79b9)).collect();
/// let values: Vec<Block> = keys.iter().map(|k| Block(k.0.rotate_left(17))).collect();
/// let okvs = BinnedPaxos::<Gf128>::new(keys.len(), 40, Block(7)).unwrap();
/// let p = okvs.encode(&keys, &values).unwrap();
/// assert_eq!(okvs.decode(&keys, &p).unwrap(), values);
/// ```
#[derive(Clone, Debug)]
pub struct BinnedPaxos<D: DenseKind = Gf128> {
    items: usize,
    bins: usize,
    capacity: usize,
    ssp: u32,
    seed: Block,
    bin_params: PaxosParams,
    hasher: RowHasher,
    _dense: PhantomData<D>,
}

impl<D: DenseKind> BinnedPaxos<D> {
    /// A binned OKVS for up to `items` keys in bins of about [`DEFAULT_BIN_SIZE`] keys,
    /// failing to encode with probability at most `2^-ssp`.
    ///
    /// # Errors
    /// As [`with_bin_size`](Self::with_bin_size).
    pub fn new(items: usize, ssp: u32, seed: Block) -> Result<Self, Error> {
        Self::with_bin_size(items, DEFAULT_BIN_SIZE, ssp, seed)
    }

    /// As [`new`](Self::new) with `⌈items / bin_size⌉` bins.
    ///
    /// # Errors
    /// [`Error::InvalidParams`] if `bin_size` or `ssp` is 0 or the parameters are
    /// impossible; [`Error::UnsupportedSsp`] if `ssp` cannot be delivered (each bin runs at
    /// `ssp + 1 + ⌈log2 bins⌉`, which must be within the limits of
    /// [`PaxosParams::new`]), with the largest `ssp` that can.
    pub fn with_bin_size(
        items: usize,
        bin_size: usize,
        ssp: u32,
        seed: Block,
    ) -> Result<Self, Error> {
        if bin_size == 0 {
            return Err(Error::InvalidParams {
                what: "the bin size must be positive",
            });
        }
        let bins = items.div_ceil(bin_size).max(1);
        if bins > u32::MAX as usize {
            return Err(Error::InvalidParams {
                what: "too many bins",
            });
        }
        // Every bin holds at least the mean load, and its sparse size is at least its
        // capacity: reject bins too large for the narrow hash before the capacity search
        // (whose cost grows with the mean load).
        if bins > 1 && (items / bins) as u64 >= NARROW_LIMIT {
            return Err(Error::InvalidParams {
                what: "bins of more than about 2^23 keys are not supported",
            });
        }
        if ssp == 0 {
            return Err(Error::InvalidParams {
                what: "the statistical security parameter must be positive",
            });
        }
        let (capacity, bin_params) = match Self::bin_layout(items, bins, ssp) {
            Err(Error::UnsupportedSsp { .. }) => {
                return Err(Error::UnsupportedSsp {
                    ssp,
                    max: Self::max_ssp_for(items, bins, ssp),
                });
            }
            r => r?,
        };
        if bins > 1 && bin_params.sparse as u64 >= NARROW_LIMIT {
            return Err(Error::InvalidParams {
                what: "bins of more than about 2^23 keys are not supported",
            });
        }
        if bins.checked_mul(bin_params.size()).is_none() {
            return Err(Error::InvalidParams {
                what: "the encoding would not fit in memory",
            });
        }
        Ok(BinnedPaxos {
            items,
            bins,
            capacity,
            ssp,
            seed,
            bin_params,
            hasher: RowHasher::new(seed, bin_params.sparse),
            _dense: PhantomData,
        })
    }

    /// The capacity and per-bin parameters for `bins` bins at overall security `ssp ≥ 1`.
    fn bin_layout(items: usize, bins: usize, ssp: u32) -> Result<(usize, PaxosParams), Error> {
        if bins == 1 {
            return Ok((items, PaxosParams::new(items, ssp, D::TYPE)?));
        }
        let cap = bin_capacity(items, bins, ssp.saturating_add(1));
        let bin_ssp = ssp.saturating_add(1 + ceil_log2(bins));
        Ok((cap, PaxosParams::new(cap, bin_ssp, D::TYPE)?))
    }

    /// The largest λ below `ssp` that [`bin_layout`](Self::bin_layout) accepts (0 if none),
    /// by bisection: the dense size grows with λ (both the bin capacity and the per-bin λ
    /// do), so the accepted λ form an interval `1..=max`.
    fn max_ssp_for(items: usize, bins: usize, ssp: u32) -> u32 {
        let ok = |l: u32| Self::bin_layout(items, bins, l).is_ok();
        // Invariant: `lo` is accepted (or 0), everything from `hi` on is refused.
        let (mut lo, mut hi) = (0u32, ssp.min(MAX_SSP + 1));
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if ok(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The number of bins.
    pub fn bins(&self) -> usize {
        self.bins
    }

    /// The capacity (maximum keys) of every bin.
    pub fn bin_capacity(&self) -> usize {
        self.capacity
    }

    /// The parameters of each bin's OKVS (sized for [`bin_capacity`](Self::bin_capacity)
    /// keys at `λ + 1 + ⌈log2 bins⌉`).
    pub fn bin_params(&self) -> &PaxosParams {
        &self.bin_params
    }

    /// The statistical security parameter λ of the whole.
    pub fn ssp(&self) -> u32 {
        self.ssp
    }

    /// The seed the hash functions are derived from.
    pub fn seed(&self) -> Block {
        self.seed
    }

    /// The expansion `size / items`.
    pub fn expansion(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // a ratio for display
        let r = self.size() as f64 / self.items.max(1) as f64;
        r
    }

    fn encode_impl<V, R>(
        &self,
        keys: &[Block],
        values: &[V],
        out: &mut [V],
        rng: Option<&mut R>,
    ) -> Result<(), Error>
    where
        V: DenseValue<D>,
        R: Rng + ?Sized,
    {
        if keys.len() > self.items {
            return Err(Error::TooManyItems {
                capacity: self.items,
                got: keys.len(),
            });
        }
        check_len("values", keys.len(), values.len())?;
        check_len("encoding", self.size(), out.len())?;
        let (m, d) = (self.bin_params.sparse, self.bin_params.dense);
        if self.bins == 1 {
            let mut scratch = Scratch::default();
            return solver::solve::<D, V, R>(
                m,
                d,
                &self.hasher,
                keys,
                values,
                out,
                rng,
                &mut scratch,
            );
        }

        // 1. The bin of every key.
        let n = keys.len();
        if u32::try_from(n).is_err() {
            return Err(Error::TooManyItems {
                capacity: u32::MAX as usize,
                got: n,
            });
        }
        // The bins, loads and order of the keys are derived from the keys (private inputs):
        // every buffer below is wiped when dropped, also on an error.
        let mut bin_of = Zeroizing::new(vec![0u32; n]);
        keys.par_chunks(DECODE_CHUNK)
            .zip(bin_of.par_chunks_mut(DECODE_CHUNK))
            .for_each(|(k, b)| {
                for (k, b) in k.chunks(BATCH).zip(b.chunks_mut(BATCH)) {
                    self.hasher.bin_batch(k, self.bins as u64, b);
                }
            });

        // 2. Counting sort of the key indices by bin.
        let mut start = Zeroizing::new(vec![0usize; self.bins + 1]);
        for &b in bin_of.iter() {
            start[b as usize + 1] += 1;
        }
        for b in 0..self.bins {
            let load = start[b + 1];
            if load > self.capacity {
                return Err(Error::BinOverflow {
                    bin: b,
                    load,
                    capacity: self.capacity,
                });
            }
            start[b + 1] += start[b];
        }
        let mut fill = Zeroizing::new(start.to_vec());
        // Key indices as u32 (checked above): half the memory (and first-touch page faults)
        // of usize indices.
        let mut perm = Zeroizing::new(vec![0u32; n]);
        for (i, &b) in bin_of.iter().enumerate() {
            #[allow(clippy::cast_possible_truncation)] // i < n ≤ u32::MAX (checked above)
            let i = i as u32;
            perm[fill[b as usize]] = i;
            fill[b as usize] += 1;
        }
        drop(fill);
        drop(bin_of);

        // 3. Per-bin RNG seeds for a randomized encoding, drawn up front (secret: wiped).
        let seeds: Option<Zeroizing<Vec<[u8; 16]>>> = rng.map(|r| {
            Zeroizing::new(
                (0..self.bins)
                    .map(|_| {
                        let mut s = [0u8; 16];
                        r.fill_bytes(&mut s);
                        s
                    })
                    .collect(),
            )
        });

        // 4. Solve every bin.
        let size = self.bin_params.size();
        out.par_chunks_mut(size).enumerate().try_for_each_init(
            // Sized for a full bin: the buffers never grow (which would free unwiped copies).
            || {
                (
                    Scratch::default(),
                    Wiped(Vec::with_capacity(self.capacity)),
                    Wiped(Vec::with_capacity(self.capacity)),
                )
            },
            |(scratch, kbuf, vbuf), (b, chunk)| {
                let idx = &perm[start[b]..start[b + 1]];
                let (kbuf, vbuf) = (&mut kbuf.0, &mut vbuf.0);
                // Gathers from all over the inputs, prefetched GATHER_AHEAD keys ahead.
                kbuf.clear();
                vbuf.clear();
                for (j, &i) in idx.iter().enumerate() {
                    if let Some(&a) = idx.get(j + GATHER_AHEAD) {
                        obliv_core::mem::prefetch_l2(keys, a as usize);
                        obliv_core::mem::prefetch_l2(values, a as usize);
                    }
                    kbuf.push(keys[i as usize]);
                    vbuf.push(values[i as usize]);
                }
                let res = match &seeds {
                    Some(s) => {
                        let mut r = AesRng::from_seed(s[b]);
                        solver::solve::<D, V, AesRng>(
                            m,
                            d,
                            &self.hasher,
                            kbuf,
                            vbuf,
                            chunk,
                            Some(&mut r),
                            scratch,
                        )
                    }
                    None => solver::solve::<D, V, AesRng>(
                        m,
                        d,
                        &self.hasher,
                        kbuf,
                        vbuf,
                        chunk,
                        None,
                        scratch,
                    ),
                };
                res.map_err(|e| match e {
                    Error::DuplicateKey { first, second } => Error::DuplicateKey {
                        first: idx[first].min(idx[second]) as usize,
                        second: idx[first].max(idx[second]) as usize,
                    },
                    e => e,
                })
            },
        )
    }

    /// Decodes one chunk of keys: the sparse part key by key, then the dense part grouped
    /// by bin, so that each bin's dense table stays in L1 while its keys are processed
    /// (interleaving bins would thrash it against the random sparse reads).
    fn decode_chunk<V: DenseValue<D>>(
        &self,
        keys: &[Block],
        okvs: &[V],
        prep: &Prepared<'_, V>,
        out: &mut [V],
    ) {
        let d = self.bin_params.dense;
        let size = self.bin_params.size();
        let n = keys.len();
        // Bins, order and hashes of the keys (private inputs): wiped when dropped.
        let mut bins = Zeroizing::new(vec![0u32; n]);
        let mut dh = Wiped(vec![Block::ZERO; n]);
        let dh = &mut dh.0;
        let mut rows = [[0u32; 3]; BATCH];
        for (((k, o), bb), hh) in keys
            .chunks(BATCH)
            .zip(out.chunks_mut(BATCH))
            .zip(bins.chunks_mut(BATCH))
            .zip(dh.chunks_mut(BATCH))
        {
            let rows = &mut rows[..k.len()];
            self.hasher
                .hash_batch_binned(k, self.bins as u64, bb, rows, hh);
            // The batch's 3 random reads per key, issued before any is waited for.
            for (b, r) in bb.iter().zip(rows.iter()) {
                let base = *b as usize * size;
                for &x in r {
                    obliv_core::mem::prefetch_l2(okvs, base + x as usize);
                }
            }
            for ((o, b), [x, y, z]) in o.iter_mut().zip(bb.iter()).zip(rows.iter()) {
                let base = *b as usize * size;
                *o = okvs[base + *x as usize]
                    .xor(okvs[base + *y as usize])
                    .xor(okvs[base + *z as usize]);
            }
        }
        rows.zeroize();
        if !prep.active.iter().any(|a| *a) {
            return;
        }
        if core::mem::size_of_val(prep.tables) <= SMALL_TABLES {
            // All bins' tables fit in L1 (GF(2^128): d blocks per bin): keys in any order.
            V::dense_dot_binned_batch(dh, &bins, prep.tables, prep.stride, d, out);
            return;
        }
        // Counting sort of the chunk's keys by bin.
        let mut start = Zeroizing::new(vec![0usize; self.bins + 1]);
        for &b in bins.iter() {
            start[b as usize + 1] += 1;
        }
        for b in 0..self.bins {
            start[b + 1] += start[b];
        }
        let mut order = Zeroizing::new(vec![0usize; n]);
        for (i, &b) in bins.iter().enumerate() {
            order[start[b as usize]] = i;
            start[b as usize] += 1;
        }
        let mut begin = 0;
        let (mut hb, mut eb) = ([Block::ZERO; BATCH], [V::default(); BATCH]);
        for (b, &end) in start[..self.bins].iter().enumerate() {
            if prep.active[b] {
                let t = &prep.tables[b * prep.stride..(b + 1) * prep.stride];
                for group in order[begin..end].chunks(BATCH) {
                    let (hb, eb) = (&mut hb[..group.len()], &mut eb[..group.len()]);
                    for (h, &i) in hb.iter_mut().zip(group) {
                        *h = dh[i];
                    }
                    V::dense_dot_prepared_batch(hb, t, d, eb);
                    for (e, &i) in eb.iter().zip(group) {
                        out[i] = out[i].xor(*e);
                    }
                }
            }
            begin = end;
        }
        // Hashes of the keys and dense products (private inputs): wiped.
        hb.zeroize();
        solver::wipe_values(&mut eb);
    }
}

impl<D: DenseKind> Okvs<D> for BinnedPaxos<D> {
    fn size(&self) -> usize {
        self.bins * self.bin_params.size()
    }

    fn items(&self) -> usize {
        self.items
    }

    fn encode_into<V: DenseValue<D>>(
        &self,
        keys: &[Block],
        values: &[V],
        out: &mut [V],
    ) -> Result<(), Error> {
        self.encode_impl::<V, AesRng>(keys, values, out, None)
    }

    fn encode_randomized_into<V: DenseValue<D>, R: Rng + ?Sized>(
        &self,
        keys: &[Block],
        values: &[V],
        out: &mut [V],
        rng: &mut R,
    ) -> Result<(), Error> {
        self.encode_impl(keys, values, out, Some(rng))
    }

    fn decode_into<V: DenseValue<D>>(
        &self,
        keys: &[Block],
        okvs: &[V],
        out: &mut [V],
    ) -> Result<(), Error> {
        check_len("encoding", self.size(), okvs.len())?;
        check_len("output", keys.len(), out.len())?;
        let m = self.bin_params.sparse;
        if self.bins == 1 {
            let mut table = solver::prepare::<D, V>(&okvs[m..]);
            let prep = table.as_deref();
            if keys.len() <= DECODE_CHUNK {
                solver::decode::<D, V>(&self.hasher, m, keys, okvs, prep, out);
            } else {
                keys.par_chunks(DECODE_CHUNK)
                    .zip(out.par_chunks_mut(DECODE_CHUNK))
                    .for_each(|(k, o)| {
                        solver::decode::<D, V>(&self.hasher, m, k, okvs, prep, o);
                    });
            }
            if let Some(t) = table.as_deref_mut() {
                solver::wipe_values(t);
            }
            return Ok(());
        }
        // Per bin: the prepared dense table (fixed stride), or nothing if the bin's dense
        // part is zero.
        let size = self.bin_params.size();
        let mut active = Vec::with_capacity(self.bins);
        // Room for every bin's table at once (the length of a table of zeros): growing would
        // free a partial copy unwiped.
        let mut tables = Vec::new();
        let mut probe = Vec::new();
        V::prepare_dense(&vec![V::default(); self.bin_params.dense], &mut probe);
        tables.reserve_exact(probe.len() * self.bins);
        let mut stride = 0;
        for p in okvs.chunks(size) {
            let dense = &p[m..];
            let is_active = dense.iter().any(|v| *v != V::default());
            active.push(is_active);
            let before = tables.len();
            V::prepare_dense(dense, &mut tables);
            stride = tables.len() - before;
        }
        let prepared = Prepared {
            active: &active,
            tables: &tables,
            stride,
        };
        keys.par_chunks(DECODE_CHUNK)
            .zip(out.par_chunks_mut(DECODE_CHUNK))
            .for_each(|(k, o)| self.decode_chunk(k, okvs, &prepared, o));
        // Derived from the encoding, which may be secret to the caller: wiped.
        solver::wipe_values(&mut tables);
        solver::wipe_values(&mut active);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes derived from a peer's count: oversized bins are refused at once (the capacity
    /// search used to run once per key of a bin before the size check, for hours here).
    #[test]
    fn huge_bins_refused_quickly() {
        let t = std::time::Instant::now();
        let r = BinnedPaxos::<Gf128>::with_bin_size(1 << 40, 1 << 38, 40, Block(1));
        assert!(matches!(r, Err(Error::InvalidParams { .. })), "{r:?}");
        let r = BinnedPaxos::<Gf128>::with_bin_size(1 << 26, 1 << 24, 40, Block(1));
        assert!(matches!(r, Err(Error::InvalidParams { .. })), "{r:?}");
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        // Just below the limit still works (bins of about 2^23 keys).
        assert!(BinnedPaxos::<Gf128>::with_bin_size(1 << 24, 1 << 22, 40, Block(1)).is_ok());
    }
}
