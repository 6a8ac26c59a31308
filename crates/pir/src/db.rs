//! The database both servers hold, and the one-pass XOR scan at the heart of every answer.
//!
//! Records are stored contiguously, each padded with zeros to a whole number of 16-byte
//! blocks (the *stride*). [`Database::xor_selected`] XORs together the records whose bit is
//! set in a bit vector, reading the database once, front to back, four records at a time, with
//! masks instead of branches (the bit vector is a secret share; besides, branch mispredictions
//! on pseudorandom bits would cost more than the masking). The inner loop is plain `u64` code
//! that the compiler vectorises; it runs at memory bandwidth (see the README for figures).

use std::path::Path;

use obliv_core::{Block, log2_ceil};
use rand_core::Rng;

use crate::error::{Error, Result};

/// Largest number of records (indices travel as `u32` inside batch layouts).
pub const MAX_RECORDS: usize = 1 << 32;

/// Largest record size in bytes (16 MiB): answers are one record long.
pub const MAX_RECORD_LEN: usize = 1 << 24;

/// Most threads [`Database::xor_selected_parallel`] splits one scan over.
pub const MAX_SCAN_THREADS: usize = 1 << 10;

/// `N` fixed-size records, stored contiguously and padded to 16 bytes each.
#[derive(Clone, PartialEq, Eq)]
pub struct Database {
    records: usize,
    record_len: usize,
    /// Blocks per record: `⌈record_len / 16⌉`.
    stride: usize,
    data: Vec<Block>,
}

impl core::fmt::Debug for Database {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Database")
            .field("records", &self.records)
            .field("record_len", &self.record_len)
            .finish_non_exhaustive()
    }
}

fn check_shape(records: usize, record_len: usize) -> Result<()> {
    if records == 0 || records > MAX_RECORDS {
        return Err(Error::InvalidParameter {
            what: "number of records must be in 1..=2^32",
        });
    }
    if record_len == 0 || record_len > MAX_RECORD_LEN {
        return Err(Error::InvalidParameter {
            what: "record length must be in 1..=2^24 bytes",
        });
    }
    Ok(())
}

/// `records · stride` zero blocks, or [`Error::InvalidParameter`] if that much memory cannot
/// be had (rather than aborting the process).
fn zero_blocks(records: usize, stride: usize) -> Result<Vec<Block>> {
    let too_large = || Error::InvalidParameter {
        what: "database too large to allocate",
    };
    let n = records.checked_mul(stride).ok_or_else(too_large)?;
    let mut data = Vec::new();
    data.try_reserve_exact(n).map_err(|_| too_large())?;
    data.resize(n, Block::ZERO);
    Ok(data)
}

/// The error for a bit vector of fewer than `count` bits.
fn bits_too_short() -> Error {
    Error::InvalidParameter {
        what: "bit vector shorter than the records it selects from",
    }
}

/// The error for an accumulator that is not one padded record long.
fn wrong_accumulator() -> Error {
    Error::InvalidParameter {
        what: "accumulator is not one padded record long",
    }
}

impl Database {
    /// A database of `bytes.len() / record_len` records cut from `bytes`.
    ///
    /// Errors: [`Error::InvalidParameter`] if `bytes` is empty or not a whole number of
    /// records, the shape exceeds [`MAX_RECORDS`] / [`MAX_RECORD_LEN`], or the padded
    /// database cannot be allocated.
    pub fn from_bytes(record_len: usize, bytes: &[u8]) -> Result<Self> {
        if record_len == 0 || !bytes.len().is_multiple_of(record_len) {
            return Err(Error::InvalidParameter {
                what: "database bytes are not a whole number of records",
            });
        }
        let records = bytes.len() / record_len;
        check_shape(records, record_len)?;
        let stride = record_len.div_ceil(16);
        let mut data = zero_blocks(records, stride)?;
        for (dst, src) in data
            .chunks_exact_mut(stride)
            .zip(bytes.chunks_exact(record_len))
        {
            Block::slice_as_bytes_mut(dst)[..record_len].copy_from_slice(src);
        }
        Ok(Database {
            records,
            record_len,
            stride,
            data,
        })
    }

    /// A database of `records` uniformly random records of `record_len` bytes.
    ///
    /// Errors: [`Error::InvalidParameter`] for a shape beyond [`MAX_RECORDS`] /
    /// [`MAX_RECORD_LEN`], or a database that cannot be allocated.
    pub fn random<R: Rng + ?Sized>(records: usize, record_len: usize, rng: &mut R) -> Result<Self> {
        check_shape(records, record_len)?;
        let stride = record_len.div_ceil(16);
        let mut data = zero_blocks(records, stride)?;
        for rec in data.chunks_exact_mut(stride) {
            rng.fill_bytes(&mut Block::slice_as_bytes_mut(rec)[..record_len]);
        }
        Ok(Database {
            records,
            record_len,
            stride,
            data,
        })
    }

    /// Loads a file of fixed-size records (its length must be a multiple of `record_len`).
    pub fn from_file(path: impl AsRef<Path>, record_len: usize) -> Result<Self> {
        let bytes = std::fs::read(path)?;
        Self::from_bytes(record_len, &bytes)
    }

    /// Number of records `N`.
    pub fn len(&self) -> usize {
        self.records
    }

    /// Whether the database has no records (never true: a database holds at least one).
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Record size in bytes.
    pub fn record_len(&self) -> usize {
        self.record_len
    }

    /// Blocks per (padded) record.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Bytes of the whole padded database (what a scan reads).
    pub fn size_bytes(&self) -> usize {
        self.data.len() * 16
    }

    /// `⌈log2 N⌉`: the DPF domain that indexes the records.
    pub fn domain_bits(&self) -> u32 {
        log2_ceil(self.records as u64)
    }

    /// Record `i` (its `record_len` bytes, without padding), or `None` if `i ≥ N`.
    pub fn record(&self, i: usize) -> Option<&[u8]> {
        (i < self.records).then(|| {
            &Block::slice_as_bytes(&self.data[i * self.stride..(i + 1) * self.stride])
                [..self.record_len]
        })
    }

    /// The padded record `i` as blocks, or `None` if `i ≥ N`.
    pub fn record_blocks(&self, i: usize) -> Option<&[Block]> {
        (i < self.records).then(|| &self.data[i * self.stride..(i + 1) * self.stride])
    }

    /// `acc ⊕= ⨁_{i : bit i of bits set} record(first + i)` for `i < count`: one pass over
    /// records `first .. first + count`.
    ///
    /// Errors (checked before anything is read): [`Error::IndexOutOfRange`] if the range
    /// exceeds the database, [`Error::InvalidParameter`] if `acc` is not one stride long or
    /// `bits` has fewer than `count` bits.
    pub fn xor_selected_range(
        &self,
        bits: &[Block],
        first: usize,
        count: usize,
        acc: &mut [Block],
    ) -> Result<()> {
        if acc.len() != self.stride {
            return Err(wrong_accumulator());
        }
        match first.checked_add(count) {
            Some(end) if end <= self.records => {}
            end => {
                return Err(Error::IndexOutOfRange {
                    index: end.map_or(u64::MAX, |e| e as u64),
                    size: self.records as u64,
                });
            }
        }
        if bits.len().saturating_mul(128) < count {
            return Err(bits_too_short());
        }
        // Chunks of about 64 KiB: a streaming read pulls each chunk into L2 with many loads in
        // flight (the read-modify-write of the accumulator alone keeps too few misses
        // outstanding on DRAM), then the masked pass runs from L2.
        // Databases that fit in the cache skip the extra read.
        let chunk = ((64 << 10) / (self.stride * 16)).max(1);
        let streaming = self.size_bytes() > TOUCH_THRESHOLD;
        let mut done = 0;
        while done < count {
            let c = chunk.min(count - done);
            let start = first + done;
            let region = &self.data[start * self.stride..(start + c) * self.stride];
            if streaming {
                touch(region);
            }
            let bit = |i: usize| -> u64 {
                let j = done + i;
                #[allow(clippy::cast_possible_truncation)] // a single bit
                let b = (bits[j >> 7].0 >> (j & 127)) as u64 & 1;
                b
            };
            xor_masked(region, self.stride, c, bit, acc);
            done += c;
        }
        Ok(())
    }

    /// `acc ⊕= ⨁ record(indices[i])` over the `i` whose bit is set in `bits` (the bucket scan
    /// of batch PIR: the records of a bucket are listed by index).
    ///
    /// Errors (checked before anything is read): [`Error::IndexOutOfRange`] for an index
    /// `≥ N`, [`Error::InvalidParameter`] if `bits` has fewer bits than there are indices or
    /// `acc` is not one stride long.
    pub fn xor_selected_indices(
        &self,
        bits: &[Block],
        indices: &[u32],
        acc: &mut [Block],
    ) -> Result<()> {
        if acc.len() != self.stride {
            return Err(wrong_accumulator());
        }
        if bits.len().saturating_mul(128) < indices.len() {
            return Err(bits_too_short());
        }
        if let Some(&bad) = indices.iter().find(|&&i| i as usize >= self.records) {
            return Err(Error::IndexOutOfRange {
                index: u64::from(bad),
                size: self.records as u64,
            });
        }
        // Every index is below N (checked above).
        let rec = |i: u32| {
            let i = i as usize;
            cast_u64(&self.data[i * self.stride..(i + 1) * self.stride])
        };
        let acc64: &mut [u64] = bytemuck_u64_mut(acc);
        let mut quads = indices.chunks_exact(4);
        let mut base = 0usize;
        for q in quads.by_ref() {
            let m = |k: usize| mask((bits[(base + k) >> 7].0 >> ((base + k) & 127)) & 1);
            let r = |k: usize| rec(q[k]);
            xor4(acc64, [r(0), r(1), r(2), r(3)], [m(0), m(1), m(2), m(3)]);
            base += 4;
        }
        for (k, &ix) in quads.remainder().iter().enumerate() {
            let i = base + k;
            let m = mask((bits[i >> 7].0 >> (i & 127)) & 1);
            xor1(acc64, rec(ix), m);
        }
        Ok(())
    }

    /// XOR of the records selected by the full bit vector `bits` (bit `i` selects record `i`),
    /// as a fresh padded record.
    ///
    /// Errors: [`Error::InvalidParameter`] if `bits` has fewer than `N` bits.
    pub fn xor_selected(&self, bits: &[Block]) -> Result<Vec<Block>> {
        let mut acc = vec![Block::ZERO; self.stride];
        self.xor_selected_range(bits, 0, self.records, &mut acc)?;
        Ok(acc)
    }

    /// The answers to several queries in one pass over the database: `result[q]` is
    /// [`xor_selected`](Self::xor_selected)`(bits[q])`.
    ///
    /// The database is read in chunks of about 64 KiB; each chunk is scanned for every query
    /// while it sits in the L2 cache, so `m` concurrent queries cost one read of the
    /// database from memory instead of `m` (the server coalesces queued queries this way).
    ///
    /// Errors: [`Error::InvalidParameter`] if a bit vector has fewer than `N` bits.
    pub fn xor_selected_multi(&self, bits: &[&[Block]]) -> Result<Vec<Vec<Block>>> {
        if bits
            .iter()
            .any(|b| b.len().saturating_mul(128) < self.records)
        {
            return Err(bits_too_short());
        }
        let mut accs = vec![vec![Block::ZERO; self.stride]; bits.len()];
        // A multiple of 128 records' bits is not needed: bits are addressed per record.
        let chunk = ((64 << 10) / (self.stride * 16)).max(1);
        let streaming = self.size_bytes() > TOUCH_THRESHOLD;
        let mut first = 0;
        while first < self.records {
            let count = chunk.min(self.records - first);
            let region = &self.data[first * self.stride..(first + count) * self.stride];
            if streaming {
                touch(region);
            }
            for (b, acc) in bits.iter().zip(accs.iter_mut()) {
                let bit = |i: usize| -> u64 {
                    let j = first + i;
                    #[allow(clippy::cast_possible_truncation)] // a single bit
                    let x = (b[j >> 7].0 >> (j & 127)) as u64 & 1;
                    x
                };
                xor_masked(region, self.stride, count, bit, acc);
            }
            first += count;
        }
        Ok(accs)
    }

    /// [`xor_selected`](Self::xor_selected) split over `threads` scoped threads (at most
    /// [`MAX_SCAN_THREADS`], and at most one per 1024 records), each scanning a contiguous
    /// slice of the database (for one query's latency on an idle machine).
    ///
    /// Errors: [`Error::InvalidParameter`] if `bits` has fewer than `N` bits, [`Error::Io`]
    /// if a thread cannot be spawned.
    pub fn xor_selected_parallel(&self, bits: &[Block], threads: usize) -> Result<Vec<Block>> {
        if bits.len().saturating_mul(128) < self.records {
            return Err(bits_too_short());
        }
        let threads = threads
            .min(MAX_SCAN_THREADS)
            .clamp(1, self.records.div_ceil(1024).max(1));
        if threads == 1 {
            return self.xor_selected(bits);
        }
        // Split on multiples of 128 records so each part starts on a bit-vector block.
        let per = self.records.div_ceil(threads).div_ceil(128) * 128;
        let parts: Result<Vec<Vec<Block>>> = std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(threads);
            for t in 0..threads {
                let part = move || -> Result<Vec<Block>> {
                    let first = (t * per).min(self.records);
                    let count = per.min(self.records - first);
                    let mut acc = vec![Block::ZERO; self.stride];
                    if count > 0 {
                        self.xor_selected_range(&bits[first / 128..], first, count, &mut acc)?;
                    }
                    Ok(acc)
                };
                // Threads already running are joined when the scope ends.
                handles.push(std::thread::Builder::new().spawn_scoped(s, part)?);
            }
            handles
                .into_iter()
                .map(|h| match h.join() {
                    Ok(v) => v,
                    Err(p) => std::panic::resume_unwind(p),
                })
                .collect()
        });
        let mut acc = vec![Block::ZERO; self.stride];
        for p in &parts? {
            Block::xor_slices_in_place(&mut acc, p);
        }
        Ok(acc)
    }
}

/// All ones if `bit` is 1, else 0.
#[inline(always)]
fn mask<T: Into<u128>>(bit: T) -> u64 {
    #[allow(clippy::cast_possible_truncation)] // a single bit
    let b = (bit.into() & 1) as u64;
    0u64.wrapping_sub(b)
}

fn cast_u64(b: &[Block]) -> &[u64] {
    bytemuck::cast_slice(b)
}

fn bytemuck_u64_mut(b: &mut [Block]) -> &mut [u64] {
    bytemuck::cast_slice_mut(b)
}

/// The scan kernel: `acc ⊕= ⨁_{i<count} mask(bit(i)) & region[i]` over records of
/// `stride` blocks, four records per step.
#[inline]
fn xor_masked(
    region: &[Block],
    stride: usize,
    count: usize,
    bit: impl Fn(usize) -> u64,
    acc: &mut [Block],
) {
    let acc64 = bytemuck_u64_mut(acc);
    let words = stride * 2;
    let data = cast_u64(region);
    let mut quads = data[..count * words].chunks_exact(4 * words);
    let mut i = 0usize;
    for q in quads.by_ref() {
        let (r0, rest) = q.split_at(words);
        let (r1, rest) = rest.split_at(words);
        let (r2, r3) = rest.split_at(words);
        let m = [
            0u64.wrapping_sub(bit(i)),
            0u64.wrapping_sub(bit(i + 1)),
            0u64.wrapping_sub(bit(i + 2)),
            0u64.wrapping_sub(bit(i + 3)),
        ];
        xor4(acc64, [r0, r1, r2, r3], m);
        i += 4;
    }
    for r in quads.remainder().chunks_exact(words) {
        xor1(acc64, r, 0u64.wrapping_sub(bit(i)));
        i += 1;
    }
}

/// Scans of more bytes than this read each chunk with [`touch`] first (a database this large
/// is unlikely to sit in the cache).
const TOUCH_THRESHOLD: usize = 32 << 20;

/// Reads `region` once, eight independent streams of 64-bit loads, so the hardware keeps
/// many cache misses in flight; the result is discarded (`black_box` keeps the loads).
#[inline]
fn touch(region: &[Block]) {
    let mut a = [0u64; 8];
    for c in cast_u64(region).chunks_exact(8) {
        for k in 0..8 {
            a[k] ^= c[k];
        }
    }
    std::hint::black_box(a);
}

/// `acc ⊕= (r0 & m0) ⊕ (r1 & m1) ⊕ (r2 & m2) ⊕ (r3 & m3)`, vectorised by the compiler.
#[inline(always)]
fn xor4(acc: &mut [u64], r: [&[u64]; 4], m: [u64; 4]) {
    let n = acc.len();
    let (r0, r1, r2, r3) = (&r[0][..n], &r[1][..n], &r[2][..n], &r[3][..n]);
    for k in 0..n {
        acc[k] ^= (r0[k] & m[0]) ^ (r1[k] & m[1]) ^ (r2[k] & m[2]) ^ (r3[k] & m[3]);
    }
}

/// `acc ⊕= r & m`.
#[inline(always)]
fn xor1(acc: &mut [u64], r: &[u64], m: u64) {
    for (a, x) in acc.iter_mut().zip(r) {
        *a ^= x & m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use rand_core::SeedableRng;

    fn db(records: usize) -> Database {
        Database::random(records, 20, &mut AesRng::from_seed([40; 16])).unwrap()
    }

    /// `record_blocks` beyond the last record is `None`, like `record` (it panicked).
    #[test]
    fn record_blocks_out_of_range_is_none() {
        let d = db(100);
        assert_eq!(d.record_blocks(99).map(<[Block]>::len), Some(2));
        assert_eq!(
            &Block::slice_as_bytes(d.record_blocks(99).unwrap())[..20],
            d.record(99).unwrap()
        );
        for i in [100, 101, usize::MAX / 2, usize::MAX] {
            assert!(d.record_blocks(i).is_none(), "{i}");
            assert!(d.record(i).is_none(), "{i}");
        }
    }

    /// Every scan checks its arguments and returns an error instead of panicking (they
    /// asserted, or indexed out of bounds, on an index beyond the database, a short bit
    /// vector or a wrong accumulator).
    #[test]
    fn scans_refuse_bad_arguments() {
        let d = db(100);
        let one = [Block(u128::MAX)];
        let mut acc = vec![Block::ZERO; 2];
        assert!(matches!(
            d.xor_selected_indices(&one, &[3, 100], &mut acc),
            Err(Error::IndexOutOfRange {
                index: 100,
                size: 100
            })
        ));
        assert!(matches!(
            d.xor_selected_indices(&one, &[u32::MAX], &mut acc),
            Err(Error::IndexOutOfRange { .. })
        ));
        assert!(matches!(
            d.xor_selected_indices(&[], &[1], &mut acc),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            d.xor_selected_indices(&one, &[1], &mut acc[..1]),
            Err(Error::InvalidParameter { .. })
        ));
        assert_eq!(acc, [Block::ZERO; 2], "nothing was added on an error");
        assert!(matches!(
            d.xor_selected_range(&one, 0, 1, &mut acc[..1]),
            Err(Error::InvalidParameter { .. })
        ));
        for (first, count) in [(0, 101), (100, 1), (usize::MAX, 2), (1, usize::MAX)] {
            assert!(
                matches!(
                    d.xor_selected_range(&one, first, count, &mut acc),
                    Err(Error::IndexOutOfRange { .. })
                ),
                "{first} {count}"
            );
        }
        assert!(matches!(
            d.xor_selected_range(&[], 0, 1, &mut acc),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            d.xor_selected(&[]),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            d.xor_selected_multi(&[&one, &[]]),
            Err(Error::InvalidParameter { .. })
        ));
        let big = db(5000);
        assert!(matches!(
            big.xor_selected_parallel(&one, 4),
            Err(Error::InvalidParameter { .. })
        ));
        // The well-formed calls agree with each other.
        let bits: Vec<Block> = (0..40).map(|i| Block(0x1234_5678_9abc_def1 * i)).collect();
        let whole = big.xor_selected(&bits).unwrap();
        assert_eq!(big.xor_selected_parallel(&bits, usize::MAX).unwrap(), whole);
        assert_eq!(big.xor_selected_multi(&[&bits]).unwrap(), vec![whole]);
        let indices: Vec<u32> = (0..5000).collect();
        let mut acc = vec![Block::ZERO; 2];
        big.xor_selected_indices(&bits, &indices, &mut acc).unwrap();
        assert_eq!(acc, big.xor_selected(&bits).unwrap());
    }

    /// A database too large to allocate is an error (the process aborted on the allocation).
    #[test]
    fn unallocatable_database_is_an_error() {
        let mut rng = AesRng::from_seed([41; 16]);
        assert!(matches!(
            Database::random(MAX_RECORDS, MAX_RECORD_LEN, &mut rng),
            Err(Error::InvalidParameter { .. })
        ));
    }
}
