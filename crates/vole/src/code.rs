//! Dual-LPN compression codes: the [`LpnCode`] trait and the Expand-Convolute code
//! [`ExConvCode`] of Raghuraman, Rindal and Tanguy [RRT23].
//!
//! A silent VOLE first produces a VOLE on a long *sparse* vector `e` of length `N` (the noise,
//! `t` non-zero entries) and then multiplies every vector by the `k × N` generator matrix `G` of
//! a linear code: `A = G·e`, `B = G·b`, `C = G·c`. Because `G` is linear, `C = B + A·Δ` still
//! holds after compression; by the dual-LPN (syndrome decoding) assumption, `G·e` is
//! pseudorandom when the code has high (pseudo) minimum distance.
//!
//! # The Expand-Convolute code
//!
//! `G = [I_k | B·A]` (systematic, rate `k/N`, here 1/2): the message part of the input is kept,
//! and the parity part `d = x[k..N]` (length `m = N − k`) is first *convolved* (`A`, applied
//! twice with independent coefficients) and then *expanded* (`B`, 7 ones per row):
//!
//! - **Convolution** (the accumulator `A`): for `i = 0, 1, …, m−1` in order,
//!   `d[i+1+p] += c_{i,p}·d[i]` for `p < 24` with pseudorandom bits `c_{i,p}`, then
//!   `d[i+25] = μ·(d[i+25] + d[i])` (indices mod `m`). `A` is lower triangular with a band of
//!   24 random diagonals and one fixed diagonal, i.e. `d ← A^{-1}`-style accumulation as in
//!   libOTe's `ExConvCode::accumulateFixed`, run twice (second pass with the complemented
//!   seed) to avoid a weakness when the expander lands near the end.
//!   `μ` is 1 over GF(2) and a fixed non-zero constant ([`GF128_MIX`]) over GF(2^128): a
//!   binary code applied to GF(2^128) noise splits into 128 binary instances with the same
//!   noise support (the "splitting attack"), which the multiplication by `μ` prevents.
//! - **Expansion** (`B`): `x[i] += Σ_{j<4} d[r_{i,j} + j·⌊m/4⌋] + Σ_{j<3} d[u_{i,j}]` for every
//!   message position `i < k`, with `r` uniform in `[0, ⌊m/4⌋)` (the regular half) and `u`
//!   uniform in `[0, m)` (libOTe's regular expander of weight 7: `⌊7/2⌋ = 3` uniform and 4
//!   regular positions).
//!
//! The output is `x[0..k]`. Parameters are those of libOTe's `MultType::ExConv7x24`
//! (expander weight 7, accumulator 24, rate 1/2), with the relative pseudo-minimum distance
//! 0.15 that libOTe's parameter selection assumes for it; see the crate README for the noise
//! weight this implies. The pseudorandom coefficients come from AES-CTR under seeds derived
//! from a public code seed; this implementation does not reproduce libOTe's bit streams (only
//! the structure and parameters), so its outputs differ from libOTe's.
//!
//! [RRT23]: https://eprint.iacr.org/2023/882

use core::ops::{BitXor, BitXorAssign};

use obliv_core::hash::ro_hash_block;
use obliv_core::{Block, Prg, gf128};

use crate::arch;
use crate::error::Error;

/// The constant μ by which the convolution multiplies over GF(2^128) (libOTe's `mulConst`,
/// 4234123421 in the polynomial basis).
pub const GF128_MIX: Block = Block(4_234_123_421);

/// An element type a binary (or GF(2^128)) linear code can act on.
///
/// Addition is XOR. `select(bit)` is `self` if `bit == 1` and zero if `bit == 0`, computed
/// without a branch; `mix` multiplies by [`GF128_MIX`] where the type is GF(2^128) and is the
/// identity for plain GF(2) vectors.
pub trait CodeElement:
    Copy + Default + Send + Sync + BitXor<Output = Self> + BitXorAssign + 'static
{
    /// `self · bit` for `bit ∈ {0, 1}`, branch-free.
    fn select(self, bit: u32) -> Self;
    /// `self · μ` ([`GF128_MIX`]) for GF(2^128) elements, the identity otherwise.
    fn mix(self) -> Self;
    /// Internal hook for a vectorised convolution: runs rows `start..` of a pass
    /// (coefficients `coeffs[i − start]`, fixed diagonal multiplied by `μ` if `mix`) while
    /// they do not wrap around, and returns the first row it did not run, with the same
    /// results as the scalar rows. The default runs none.
    #[doc(hidden)]
    fn accumulate_fast(x: &mut [Self], start: usize, coeffs: &[u32], mix: bool) -> usize {
        let _ = (x, coeffs, mix);
        start
    }
    /// Whether [`CodeElement::accumulate_fast`] may run rows on this platform.
    #[doc(hidden)]
    fn has_fast_accumulate() -> bool {
        false
    }
}

impl CodeElement for Block {
    #[inline(always)]
    fn select(self, bit: u32) -> Self {
        Block(self.0 & 0u128.wrapping_sub(u128::from(bit)))
    }
    #[inline(always)]
    fn mix(self) -> Self {
        gf128::mul(self, GF128_MIX)
    }
    fn accumulate_fast(x: &mut [Self], start: usize, coeffs: &[u32], mix: bool) -> usize {
        arch::acc_blocks(x, start, coeffs, mix)
    }
    fn has_fast_accumulate() -> bool {
        arch::have_fast_blocks()
    }
}

impl CodeElement for u8 {
    #[inline(always)]
    #[allow(clippy::cast_possible_truncation)] // bit is 0 or 1: the mask is 0x00 or 0xff
    fn select(self, bit: u32) -> Self {
        self & (0u8.wrapping_sub(bit as u8))
    }
    #[inline(always)]
    fn mix(self) -> Self {
        self
    }
    fn accumulate_fast(x: &mut [Self], start: usize, coeffs: &[u32], _mix: bool) -> usize {
        // μ acts on bytes as the identity (`mix` is a no-op for them).
        arch::acc_bytes(x, start, coeffs)
    }
    fn has_fast_accumulate() -> bool {
        arch::have_fast_bytes()
    }
}

impl CodeElement for u64 {
    #[inline(always)]
    fn select(self, bit: u32) -> Self {
        self & 0u64.wrapping_sub(u64::from(bit))
    }
    #[inline(always)]
    fn mix(self) -> Self {
        self
    }
}

/// Two GF(2^128) vectors encoded as one (the receiver's `A` and `C`), element by element side
/// by side in one 32-byte cell, so that each of the encoder's random reads fetches both from
/// one cache line. The code acts on each half as it would on a [`Block`].
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(32))]
pub struct BlockPair(pub [Block; 2]);

impl zeroize::DefaultIsZeroes for BlockPair {}

impl BitXor for BlockPair {
    type Output = BlockPair;
    #[inline(always)]
    fn bitxor(self, rhs: BlockPair) -> BlockPair {
        BlockPair([self.0[0] ^ rhs.0[0], self.0[1] ^ rhs.0[1]])
    }
}

impl BitXorAssign for BlockPair {
    #[inline(always)]
    fn bitxor_assign(&mut self, rhs: BlockPair) {
        self.0[0] ^= rhs.0[0];
        self.0[1] ^= rhs.0[1];
    }
}

impl CodeElement for BlockPair {
    #[inline(always)]
    fn select(self, bit: u32) -> Self {
        BlockPair([self.0[0].select(bit), self.0[1].select(bit)])
    }
    #[inline(always)]
    fn mix(self) -> Self {
        BlockPair([self.0[0].mix(), self.0[1].mix()])
    }
    fn accumulate_fast(x: &mut [Self], start: usize, coeffs: &[u32], mix: bool) -> usize {
        arch::acc_pairs(x, start, coeffs, mix)
    }
    fn has_fast_accumulate() -> bool {
        arch::have_fast_blocks()
    }
}

/// The `A` half of a receiver's message part kept apart from its parity pairs
/// ([`ExConvCode::dual_encode_split`]): a GF(2^128) element, or the low 64 bits of one
/// (`embed64`, the 64-bit subfield VOLE, whose `A` halves have degree below 64).
pub(crate) trait SplitA: Copy {
    /// `self += v` (for `u64`: the low half of `v`, whose high half is zero here).
    fn add(&mut self, v: Block);
}

impl SplitA for Block {
    #[inline(always)]
    fn add(&mut self, v: Block) {
        *self ^= v;
    }
}

impl SplitA for u64 {
    #[inline(always)]
    fn add(&mut self, v: Block) {
        *self ^= v.to_u64s().0;
    }
}

/// The field the code is linear over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeField {
    /// GF(2): the code is applied coordinate-wise to GF(2) vectors and to blocks viewed as
    /// 128 parallel GF(2) vectors (subfield VOLE, correlated OT).
    Gf2,
    /// GF(2^128): the convolution multiplies by [`GF128_MIX`] (full-field VOLE).
    Gf128,
}

/// A linear compression code for dual LPN (syndrome decoding): maps a noise vector of
/// length [`code_len`](LpnCode::code_len) `N` to `G·x` of length
/// [`message_len`](LpnCode::message_len) `k`, written into `x[..k]`.
///
/// Implementations must be linear over their field: `E(a ⊕ b) = E(a) ⊕ E(b)`.
pub trait LpnCode {
    /// `k`: the number of outputs.
    fn message_len(&self) -> usize;
    /// `N`: the length of the noise vector.
    fn code_len(&self) -> usize;
    /// The field the code is linear over.
    fn field(&self) -> CodeField;
    /// Replaces `x[..k]` by `G·x` (the rest of `x` is scratch).
    ///
    /// # Panics
    /// Panics if `x.len() != code_len()` (a caller bug).
    fn dual_encode<E: CodeElement>(&self, x: &mut [E]);
    /// [`dual_encode`](LpnCode::dual_encode) on two vectors at once (sharing the work of
    /// generating the code), e.g. the receiver's `A` and `C`.
    ///
    /// # Panics
    /// Panics if either length differs from `code_len()`.
    fn dual_encode2<E: CodeElement, F: CodeElement>(&self, x: &mut [E], y: &mut [F]);
}

/// Expander weight of ExConv7x24.
pub const EXPANDER_WEIGHT: usize = 7;
/// Accumulator (convolution band) width of ExConv7x24.
pub const ACCUMULATOR_WIDTH: usize = 24;
/// The code's assumed relative pseudo-minimum distance (libOTe's estimate for ExConv7x24).
pub const PSEUDO_MIN_DISTANCE: f64 = 0.15;

/// The longest parity part `n − k` of an [`ExConvCode`]: the expander maps 32 random bits
/// to each tap index, which reaches every position only up to `2^32` positions.
pub const MAX_PARITY_LEN: usize = (u32::MAX as usize).saturating_add(1);

/// libOTe's default ExConv code seed `block(9996754675674599, 56756745976768754)`.
const DEFAULT_SEED: Block = Block::from_u64s(56_756_745_976_768_754, 9_996_754_675_674_599);

/// The Expand-Convolute code ExConv7x24 (see the module documentation).
#[derive(Clone, Debug)]
pub struct ExConvCode {
    k: usize,
    n: usize,
    field: CodeField,
    acc_seeds: [Block; 2],
    expander_seed: Block,
}

impl ExConvCode {
    /// The code with `k` outputs and noise length `n` (`n ≥ k + 26`, usually `n ≈ 2k`) over
    /// `field`, with the default public seed.
    ///
    /// For parameters that come from a peer or a configuration, use
    /// [`ExConvCode::try_new`], which returns an error instead of panicking.
    ///
    /// # Panics
    /// Panics if the parameters are invalid (see [`ExConvCode::try_new`]): a caller bug, the
    /// protocol layer always picks `n ≥ 2k` within the limits.
    pub fn new(k: usize, n: usize, field: CodeField) -> Self {
        Self::with_seed(k, n, field, DEFAULT_SEED)
    }

    /// As [`ExConvCode::new`] with an explicit public seed.
    ///
    /// # Panics
    /// As [`ExConvCode::new`].
    pub fn with_seed(k: usize, n: usize, field: CodeField, seed: Block) -> Self {
        match Self::try_with_seed(k, n, field, seed) {
            Ok(code) => code,
            Err(e) => panic!("{e}"),
        }
    }

    /// The code with `k` outputs and noise length `n` over `field`, with the default public
    /// seed, or an error for parameters that do not define a valid code.
    ///
    /// # Errors
    /// [`Error::InvalidCode`] if `n < k + 26` (the convolution band would wrap onto itself;
    /// also when `k + 26` overflows) or if the parity part `n − k` exceeds
    /// [`MAX_PARITY_LEN`] (the expander draws its indices from 32 random bits, so a longer
    /// parity part would leave most of it unreachable).
    pub fn try_new(k: usize, n: usize, field: CodeField) -> Result<Self, Error> {
        Self::try_with_seed(k, n, field, DEFAULT_SEED)
    }

    /// As [`ExConvCode::try_new`] with an explicit public seed.
    ///
    /// # Errors
    /// As [`ExConvCode::try_new`].
    pub fn try_with_seed(k: usize, n: usize, field: CodeField, seed: Block) -> Result<Self, Error> {
        if k.checked_add(ACCUMULATOR_WIDTH + 2)
            .is_none_or(|min| n < min)
        {
            return Err(Error::InvalidCode {
                k,
                n,
                reason: "ExConv code needs n >= k + 26",
            });
        }
        if n - k > MAX_PARITY_LEN {
            return Err(Error::InvalidCode {
                k,
                n,
                reason: "ExConv code needs n - k <= 2^32",
            });
        }
        let s = seed.to_bytes();
        let acc = ro_hash_block("obliv-vole exconv accumulator v1", &s);
        Ok(ExConvCode {
            k,
            n,
            field,
            acc_seeds: [acc, !acc],
            expander_seed: ro_hash_block("obliv-vole exconv expander v1", &s),
        })
    }

    fn mixing(&self) -> bool {
        self.field == CodeField::Gf128
    }

    /// One convolution pass over `x` (and `y` with the same coefficients, if given).
    #[inline(never)]
    fn accumulate<E: CodeElement, F: CodeElement>(
        &self,
        seed: Block,
        x: &mut [E],
        mut y: Option<&mut [F]>,
    ) {
        let size = x.len();
        let mix = self.mixing();
        let mut prg = Prg::new(seed);
        let mut coeff_blocks = [Block::ZERO; 256];
        let mut used = 1024;
        let main = size.saturating_sub(ACCUMULATOR_WIDTH + 2);
        let fast = y.is_none();
        let mut i = 0;
        while i < size {
            if used == 1024 {
                prg.fill_blocks(&mut coeff_blocks);
                used = 0;
                if fast {
                    let coeffs = bytemuck::cast_slice::<Block, u32>(&coeff_blocks);
                    let done = E::accumulate_fast(x, i, coeffs, mix) - i;
                    used += done;
                    i += done;
                    if used == 1024 {
                        continue;
                    }
                }
            }
            let c = bytemuck::cast_slice::<Block, u32>(&coeff_blocks)[used];
            used += 1;
            if i < main {
                match y.as_deref_mut() {
                    Some(y) => acc_row2(x, y, i, c, mix),
                    None => acc_row(x, i, c, mix),
                }
            } else {
                acc_row_wrap(x, i, c, mix);
                if let Some(y) = y.as_deref_mut() {
                    acc_row_wrap(y, i, c, mix);
                }
            }
            i += 1;
        }
    }

    /// `msg[i] += Σ parity[expander taps of row i]`.
    ///
    /// The taps are random reads from the whole parity vector (16–64 MiB), so the loop is
    /// bound by memory latency: the taps of row `i + PREFETCH_ROWS` are prefetched while row
    /// `i` is summed, from a ring of precomputed indices two refills long.
    #[inline(never)]
    fn expand<E: CodeElement, F: CodeElement>(
        &self,
        parity: &[E],
        msg: &mut [E],
        mut second: Option<(&[F], &mut [F])>,
    ) {
        const W: usize = EXPANDER_WEIGHT;
        const ROWS: usize = EXPAND_REFILL_ROWS;
        let m = parity.len();
        let k = msg.len();
        let mut taps = ExpanderIndices::new(self.expander_seed, m);
        // Ring of 2·ROWS rows of indices: row g lives at (g mod 2·ROWS)·W.
        let mut ring = [0usize; 2 * ROWS * W];
        taps.refill(&mut ring[..ROWS * W]);
        for base in (0..k).step_by(ROWS) {
            let slot = (base / ROWS) % 2;
            if base + ROWS < k {
                let next = 1 - slot;
                taps.refill(&mut ring[next * ROWS * W..(next + 1) * ROWS * W]);
            }
            let rows = ROWS.min(k - base);
            for r in 0..rows {
                let g = base + r;
                let ahead = ((g + PREFETCH_ROWS) % (2 * ROWS)) * W;
                for &ix in &ring[ahead..ahead + W] {
                    obliv_core::mem::prefetch_l2(parity, ix);
                    if let Some((p2, _)) = second.as_ref() {
                        obliv_core::mem::prefetch_l2(p2, ix);
                    }
                }
                let at = (g % (2 * ROWS)) * W;
                let idx: &[usize; W] = ring[at..at + W]
                    .try_into()
                    .unwrap_or_else(|_| unreachable!("slice of length W"));
                let mut acc = msg[g];
                for &ix in idx {
                    acc ^= parity[ix];
                }
                msg[g] = acc;
                if let Some((p2, m2)) = second.as_mut() {
                    let mut acc = m2[g];
                    for &ix in idx {
                        acc ^= p2[ix];
                    }
                    m2[g] = acc;
                }
            }
        }
    }
}

impl ExConvCode {
    /// [`LpnCode::dual_encode`] of the pairs `(A, C)` whose message part (the first `k`
    /// elements) is kept apart from the parity part: `msg_a[i]`, `msg_c[i]` are the halves
    /// of element `i < k`, `parity[j]` is element `k + j`. Replaces `msg_a`, `msg_c` by the
    /// halves of the encoding (the same values as encoding the joined vector of pairs); the
    /// parity is scratch. Lets the receiver write its message part straight into its output
    /// vectors (no pairs of length `N` and no copy out).
    ///
    /// # Panics
    /// Panics if `msg_a.len() != k`, `msg_c.len() != k` or `parity.len() != N − k`.
    pub(crate) fn dual_encode_split<A: SplitA>(
        &self,
        msg_a: &mut [A],
        msg_c: &mut [Block],
        parity: &mut [BlockPair],
    ) {
        assert_eq!(
            msg_a.len(),
            self.k,
            "dual_encode_split: wrong message length"
        );
        assert_eq!(
            msg_c.len(),
            self.k,
            "dual_encode_split: wrong message length"
        );
        assert_eq!(
            parity.len(),
            self.n - self.k,
            "dual_encode_split: wrong parity length"
        );
        for seed in self.acc_seeds {
            self.accumulate::<BlockPair, BlockPair>(seed, parity, None);
        }
        self.expand_split(parity, msg_a, msg_c);
    }

    /// [`ExConvCode::expand`] from parity pairs into a split message part.
    #[inline(never)]
    fn expand_split<A: SplitA>(&self, parity: &[BlockPair], msg_a: &mut [A], msg_c: &mut [Block]) {
        const W: usize = EXPANDER_WEIGHT;
        const ROWS: usize = EXPAND_REFILL_ROWS;
        let m = parity.len();
        let k = msg_c.len();
        let mut taps = ExpanderIndices::new(self.expander_seed, m);
        let mut ring = [0usize; 2 * ROWS * W];
        taps.refill(&mut ring[..ROWS * W]);
        for base in (0..k).step_by(ROWS) {
            let slot = (base / ROWS) % 2;
            if base + ROWS < k {
                let next = 1 - slot;
                taps.refill(&mut ring[next * ROWS * W..(next + 1) * ROWS * W]);
            }
            let rows = ROWS.min(k - base);
            for r in 0..rows {
                let g = base + r;
                let ahead = ((g + PREFETCH_ROWS) % (2 * ROWS)) * W;
                for &ix in &ring[ahead..ahead + W] {
                    obliv_core::mem::prefetch_l2(parity, ix);
                }
                let at = (g % (2 * ROWS)) * W;
                let idx: &[usize; W] = ring[at..at + W]
                    .try_into()
                    .unwrap_or_else(|_| unreachable!("slice of length W"));
                let mut acc = BlockPair::default();
                for &ix in idx {
                    acc ^= parity[ix];
                }
                msg_a[g].add(acc.0[0]);
                msg_c[g] ^= acc.0[1];
            }
        }
    }
}

/// Rows of expander indices per PRG refill (7 words of 32 bits per row: 28 AES blocks).
const EXPAND_REFILL_ROWS: usize = 64;
/// How many rows ahead the expander prefetches its taps.
const PREFETCH_ROWS: usize = 16;

/// The expander's tap indices, row by row: from 7 pseudorandom 32-bit words per row, 4
/// regular taps `bounded(w_j, ⌊m/4⌋) + j·⌊m/4⌋` and 3 uniform taps `bounded(w_j, m)`.
struct ExpanderIndices {
    prg: Prg,
    m: usize,
    step: usize,
    rnd: [Block; EXPANDER_WEIGHT * EXPAND_REFILL_ROWS / 4],
}

impl ExpanderIndices {
    fn new(seed: Block, m: usize) -> Self {
        let reg = EXPANDER_WEIGHT - EXPANDER_WEIGHT / 2; // 4 regular taps
        ExpanderIndices {
            prg: Prg::new(seed),
            m,
            step: m / reg,
            rnd: [Block::ZERO; EXPANDER_WEIGHT * EXPAND_REFILL_ROWS / 4],
        }
    }

    /// The next [`EXPAND_REFILL_ROWS`] rows of indices into `out`.
    fn refill(&mut self, out: &mut [usize]) {
        let reg = EXPANDER_WEIGHT - EXPANDER_WEIGHT / 2;
        self.prg.fill_blocks(&mut self.rnd);
        let words: &[u32] = bytemuck::cast_slice(&self.rnd);
        for (o, w) in out
            .chunks_exact_mut(EXPANDER_WEIGHT)
            .zip(words.chunks_exact(EXPANDER_WEIGHT))
        {
            for j in 0..reg {
                o[j] = bounded(w[j], self.step) + j * self.step;
            }
            for j in reg..EXPANDER_WEIGHT {
                o[j] = bounded(w[j], self.m);
            }
        }
    }
}

/// An index in `[0, bound)` from 32 random bits (Lemire's multiply-shift). For
/// `bound ≤ 2^32` each index has probability within `bound / 2^32` (relative) of uniform,
/// which only perturbs the distribution of the *public* code slightly; for larger bounds
/// (codes beyond 2^32 parity rows, never used here) the low bits would be unreachable.
#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // (r·bound) >> 32 < bound ≤ usize::MAX
fn bounded(r: u32, bound: usize) -> usize {
    ((u64::from(r) * bound as u64) >> 32) as usize
}

/// Convolution row `i` without wrap-around (`i + 25 < x.len()`). Loops over the set
/// coefficient bits only: the code is public, so branching on its coefficients leaks nothing.
#[inline(always)]
fn acc_row<E: CodeElement>(x: &mut [E], i: usize, c: u32, mix: bool) {
    let xi = x[i];
    let band: &mut [E; ACCUMULATOR_WIDTH + 1] = (&mut x[i + 1..i + 2 + ACCUMULATOR_WIDTH])
        .try_into()
        .unwrap_or_else(|_| unreachable!("slice of length 25"));
    let mut bits = c & ((1 << ACCUMULATOR_WIDTH) - 1);
    while bits != 0 {
        let p = bits.trailing_zeros() as usize;
        band[p] ^= xi;
        bits &= bits - 1;
    }
    let last = band[ACCUMULATOR_WIDTH] ^ xi;
    band[ACCUMULATOR_WIDTH] = if mix { last.mix() } else { last };
}

/// [`acc_row`] on two vectors with the same coefficients.
#[inline(always)]
fn acc_row2<E: CodeElement, F: CodeElement>(x: &mut [E], y: &mut [F], i: usize, c: u32, mix: bool) {
    let (xi, yi) = (x[i], y[i]);
    let bx: &mut [E; ACCUMULATOR_WIDTH + 1] = (&mut x[i + 1..i + 2 + ACCUMULATOR_WIDTH])
        .try_into()
        .unwrap_or_else(|_| unreachable!("slice of length 25"));
    let by: &mut [F; ACCUMULATOR_WIDTH + 1] = (&mut y[i + 1..i + 2 + ACCUMULATOR_WIDTH])
        .try_into()
        .unwrap_or_else(|_| unreachable!("slice of length 25"));
    let mut bits = c & ((1 << ACCUMULATOR_WIDTH) - 1);
    while bits != 0 {
        let p = bits.trailing_zeros() as usize;
        bx[p] ^= xi;
        by[p] ^= yi;
        bits &= bits - 1;
    }
    let lx = bx[ACCUMULATOR_WIDTH] ^ xi;
    let ly = by[ACCUMULATOR_WIDTH] ^ yi;
    if mix {
        bx[ACCUMULATOR_WIDTH] = lx.mix();
        by[ACCUMULATOR_WIDTH] = ly.mix();
    } else {
        bx[ACCUMULATOR_WIDTH] = lx;
        by[ACCUMULATOR_WIDTH] = ly;
    }
}

/// Convolution row `i` with indices taken mod `x.len()`.
#[inline(never)]
fn acc_row_wrap<E: CodeElement>(x: &mut [E], i: usize, c: u32, mix: bool) {
    let size = x.len();
    let xi = x[i];
    for p in 0..ACCUMULATOR_WIDTH {
        let j = (i + 1 + p) % size;
        x[j] ^= xi.select((c >> p) & 1);
    }
    let j = (i + 1 + ACCUMULATOR_WIDTH) % size;
    let last = x[j] ^ xi;
    x[j] = if mix { last.mix() } else { last };
}

impl LpnCode for ExConvCode {
    fn message_len(&self) -> usize {
        self.k
    }

    fn code_len(&self) -> usize {
        self.n
    }

    fn field(&self) -> CodeField {
        self.field
    }

    fn dual_encode<E: CodeElement>(&self, x: &mut [E]) {
        assert_eq!(x.len(), self.n, "dual_encode: wrong input length");
        let (msg, parity) = x.split_at_mut(self.k);
        for seed in self.acc_seeds {
            self.accumulate::<E, E>(seed, parity, None);
        }
        self.expand::<E, E>(parity, msg, None);
    }

    fn dual_encode2<E: CodeElement, F: CodeElement>(&self, x: &mut [E], y: &mut [F]) {
        assert_eq!(x.len(), self.n, "dual_encode2: wrong input length");
        assert_eq!(y.len(), self.n, "dual_encode2: wrong input length");
        let (msg, parity) = x.split_at_mut(self.k);
        let (msg2, parity2) = y.split_at_mut(self.k);
        // With a vectorised kernel for both, the passes run separately; with one for only
        // one of them (e.g. `u64`, which has none), the joint scalar pass is no slower than
        // a scalar pass plus a vectorised one.
        let apart = E::has_fast_accumulate() && F::has_fast_accumulate();
        for seed in self.acc_seeds {
            if apart {
                self.accumulate::<E, E>(seed, parity, None);
                self.accumulate::<F, F>(seed, parity2, None);
            } else {
                self.accumulate(seed, parity, Some(&mut *parity2));
            }
        }
        self.expand(parity, msg, Some((&*parity2, msg2)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The code's matrix, column by column: `G·e_j` for every unit vector `e_j`.
    fn columns(code: &ExConvCode) -> Vec<Vec<u8>> {
        (0..code.code_len())
            .map(|j| {
                let mut x = vec![0u8; code.code_len()];
                x[j] = 1;
                code.dual_encode(&mut x);
                x.truncate(code.message_len());
                x
            })
            .collect()
    }

    /// A message length near `usize::MAX` is refused with the documented panic (`k + 26`
    /// used to overflow: an arithmetic-overflow panic, or, without overflow checks, a code
    /// with `k > n` that failed later).
    #[test]
    #[should_panic(expected = "ExConv code needs n >= k + 26")]
    fn huge_message_length_is_refused() {
        let _ = ExConvCode::new(usize::MAX - 3, 100, CodeField::Gf2);
    }

    /// Parameters from a peer or a configuration: every invalid combination is a typed error
    /// from `try_new`, never a panic, and the limits are exact.
    #[test]
    fn try_new_refuses_invalid_parameters() {
        for (k, n) in [
            (usize::MAX - 3, 100),
            (usize::MAX, usize::MAX),
            (100, 125),
            (0, 25),
            (0, 0),
            (10, 5),
        ] {
            for field in [CodeField::Gf2, CodeField::Gf128] {
                let r = ExConvCode::try_new(k, n, field);
                assert!(
                    matches!(r, Err(Error::InvalidCode { k: kk, n: nn, .. }) if kk == k && nn == n),
                    "k = {k}, n = {n}: {r:?}"
                );
            }
        }
        // The smallest valid noise length, and an empty message.
        let code = ExConvCode::try_new(100, 126, CodeField::Gf2).unwrap();
        assert_eq!((code.message_len(), code.code_len()), (100, 126));
        assert!(ExConvCode::try_new(0, 26, CodeField::Gf128).is_ok());
        let mut x = vec![0u8; 26];
        ExConvCode::try_new(0, 26, CodeField::Gf2)
            .unwrap()
            .dual_encode(&mut x);
        // The parity part may reach 2^32 positions (the expander's index range), no more.
        if usize::BITS > 32 {
            assert!(ExConvCode::try_new(5, MAX_PARITY_LEN + 5, CodeField::Gf2).is_ok());
            let r = ExConvCode::try_new(5, MAX_PARITY_LEN + 6, CodeField::Gf2);
            assert!(matches!(r, Err(Error::InvalidCode { .. })), "{r:?}");
            let r = ExConvCode::try_with_seed(0, usize::MAX, CodeField::Gf2, Block(1));
            assert!(matches!(r, Err(Error::InvalidCode { .. })), "{r:?}");
        }
    }

    /// The panicking constructor keeps its documented panic for the new limit too.
    #[test]
    #[cfg(target_pointer_width = "64")]
    #[should_panic(expected = "n - k <= 2^32")]
    fn huge_parity_part_panics_in_new() {
        let _ = ExConvCode::new(0, usize::MAX, CodeField::Gf2);
    }

    #[test]
    fn systematic_and_structured() {
        let code = ExConvCode::new(100, 200, CodeField::Gf2);
        let cols = columns(&code);
        // The first k columns are the identity.
        for (j, col) in cols.iter().take(100).enumerate() {
            for (i, &v) in col.iter().enumerate() {
                assert_eq!(v, u8::from(i == j));
            }
        }
        // Parity columns are dense-ish: the convolution spreads each input far.
        let avg: f64 = cols[100..]
            .iter()
            .map(|c| c.iter().map(|&v| f64::from(v)).sum::<f64>())
            .sum::<f64>()
            / 100.0;
        assert!(avg > 20.0, "average parity column weight {avg}");
        // Deterministic in the seed, different for another seed.
        let again = ExConvCode::new(100, 200, CodeField::Gf2);
        assert_eq!(columns(&again), cols);
        let other = ExConvCode::with_seed(100, 200, CodeField::Gf2, Block(5));
        assert_ne!(columns(&other), cols);
    }

    #[test]
    fn bit_block_and_word_encodings_agree() {
        // A block is 128 parallel GF(2) vectors: encoding the blocks must equal encoding
        // each bit slice.
        let (k, n) = (300, 613);
        let code = ExConvCode::new(k, n, CodeField::Gf2);
        let mut prg = Prg::new(Block(77));
        let x: Vec<Block> = prg.blocks(n);
        let mut xb = x.clone();
        code.dual_encode(&mut xb);
        for bit in [0usize, 1, 63, 64, 127] {
            let mut xs: Vec<u8> = x.iter().map(|b| u8::from(b.bit(bit))).collect();
            code.dual_encode(&mut xs);
            for i in 0..k {
                assert_eq!(xs[i], u8::from(xb[i].bit(bit)));
            }
        }
        let mut xw: Vec<u64> = x.iter().map(|b| b.to_u64s().0).collect();
        code.dual_encode(&mut xw);
        for i in 0..k {
            assert_eq!(xw[i], xb[i].to_u64s().0);
        }
        // dual_encode2 equals two dual_encode calls.
        let mut bits: Vec<u8> = x.iter().map(|b| u8::from(b.lsb())).collect();
        let mut blocks = x.clone();
        code.dual_encode2(&mut bits, &mut blocks);
        assert_eq!(&blocks[..k], &xb[..k]);
        for i in 0..k {
            assert_eq!(bits[i], u8::from(xb[i].lsb()));
        }
    }

    #[test]
    fn pair_encoding_equals_two_encodings() {
        let (k, n) = (200, 450);
        for field in [CodeField::Gf2, CodeField::Gf128] {
            let code = ExConvCode::new(k, n, field);
            let mut prg = Prg::new(Block(11));
            let (x, y) = (prg.blocks(n), prg.blocks(n));
            let mut pairs: Vec<BlockPair> =
                x.iter().zip(&y).map(|(a, b)| BlockPair([*a, *b])).collect();
            let (mut ex, mut ey) = (x.clone(), y.clone());
            code.dual_encode(&mut ex);
            code.dual_encode(&mut ey);
            code.dual_encode(&mut pairs);
            for i in 0..k {
                assert_eq!(pairs[i], BlockPair([ex[i], ey[i]]));
            }
        }
    }

    #[test]
    fn split_encoding_equals_pair_encoding() {
        for (k, n) in [(1usize, 27usize), (200, 450), (1000, 2053), (4099, 8198)] {
            for field in [CodeField::Gf2, CodeField::Gf128] {
                let code = ExConvCode::new(k, n, field);
                let mut prg = Prg::new(Block(k as u128));
                let pairs: Vec<BlockPair> = (0..n)
                    .map(|_| BlockPair([prg.next_block(), prg.next_block()]))
                    .collect();
                let mut joined = pairs.clone();
                code.dual_encode(&mut joined);
                let mut a: Vec<Block> = pairs[..k].iter().map(|p| p.0[0]).collect();
                let mut c: Vec<Block> = pairs[..k].iter().map(|p| p.0[1]).collect();
                let mut parity = pairs[k..].to_vec();
                code.dual_encode_split(&mut a, &mut c, &mut parity);
                for i in 0..k {
                    assert_eq!(BlockPair([a[i], c[i]]), joined[i], "k {k} i {i}");
                }
                // The u64 form (A halves of degree < 64, binary code: they stay below 64)
                // keeps the low halves.
                if field == CodeField::Gf128 {
                    continue;
                }
                let low: Vec<BlockPair> = pairs
                    .iter()
                    .map(|p| BlockPair([Block(u128::from(p.0[0].to_u64s().0)), p.0[1]]))
                    .collect();
                let mut joined = low.clone();
                code.dual_encode(&mut joined);
                let mut a: Vec<u64> = low[..k].iter().map(|p| p.0[0].to_u64s().0).collect();
                let mut c: Vec<Block> = low[..k].iter().map(|p| p.0[1]).collect();
                let mut parity = low[k..].to_vec();
                code.dual_encode_split(&mut a, &mut c, &mut parity);
                for i in 0..k {
                    assert_eq!(Block(u128::from(a[i])), joined[i].0[0]);
                    assert_eq!(c[i], joined[i].0[1]);
                }
            }
        }
    }

    #[test]
    fn gf128_code_is_gf128_linear_and_mixes() {
        let (k, n) = (128, 300);
        let code = ExConvCode::new(k, n, CodeField::Gf128);
        let mut prg = Prg::new(Block(3));
        let x = prg.blocks(n);
        let s = Block(0x1234_5678_9abc_def0_1122_3344_5566_7788);
        let mut ex = x.clone();
        code.dual_encode(&mut ex);
        let mut sx: Vec<Block> = x.iter().map(|v| gf128::mul(*v, s)).collect();
        code.dual_encode(&mut sx);
        for i in 0..k {
            assert_eq!(sx[i], gf128::mul(ex[i], s));
        }
        // Not the binary code: GF(2^128) encoding differs from GF(2) encoding.
        let mut bin = x.clone();
        ExConvCode::new(k, n, CodeField::Gf2).dual_encode(&mut bin);
        assert_ne!(&bin[..k], &ex[..k]);
    }

    /// A digest of the encodings of fixed inputs (blocks over GF(2) and GF(2^128), bytes,
    /// words, block pairs and the two-vector form), to keep the code itself fixed while its
    /// implementation is optimised. Source: this implementation as of the first release
    /// (commit 7b85541); any change here changes the protocol's outputs.
    fn encoding_digest(k: usize, n: usize) -> Block {
        let mut prg = Prg::new(Block(0xC0DE));
        let x = prg.blocks(n);
        let y = prg.blocks(n);
        let mut out: Vec<u8> = Vec::new();
        for field in [CodeField::Gf2, CodeField::Gf128] {
            let code = ExConvCode::new(k, n, field);
            let mut v = x.clone();
            code.dual_encode(&mut v);
            out.extend_from_slice(Block::slice_as_bytes(&v[..k]));
            let mut pairs: Vec<BlockPair> =
                x.iter().zip(&y).map(|(a, b)| BlockPair([*a, *b])).collect();
            code.dual_encode(&mut pairs);
            for p in &pairs[..k] {
                out.extend_from_slice(&p.0[0].to_bytes());
                out.extend_from_slice(&p.0[1].to_bytes());
            }
        }
        let code = ExConvCode::new(k, n, CodeField::Gf2);
        let mut bits: Vec<u8> = y.iter().map(|b| u8::from(b.lsb())).collect();
        let mut words: Vec<u64> = y.iter().map(|b| b.to_u64s().1).collect();
        let mut c = x.clone();
        code.dual_encode2(&mut bits, &mut c);
        out.extend_from_slice(&bits[..k]);
        out.extend_from_slice(Block::slice_as_bytes(&c[..k]));
        let mut c = y.clone();
        code.dual_encode2(&mut words, &mut c);
        for w in &words[..k] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(Block::slice_as_bytes(&c[..k]));
        let mut bytes: Vec<u8> = x.iter().map(|b| b.to_bytes()[3]).collect();
        code.dual_encode(&mut bytes);
        out.extend_from_slice(&bytes[..k]);
        ro_hash_block("obliv-vole exconv regression", &out)
    }

    #[test]
    fn encoding_regression() {
        for (k, n, digest) in [
            (1, 27, 0xdc9b_2323_0794_ebc5_98a2_9695_4318_7216),
            (100, 227, 0x234d_a8ec_b3f0_99a9_ec6a_9e63_afb9_b5fb),
            (1000, 2053, 0x156b_4b22_6f2d_7262_89f0_8af3_d08a_46f3),
            (4099, 8198, 0x87ae_9117_1677_8110_2231_a4a8_17de_99a5),
            (70_000, 140_001, 0x9657_dabc_ca6d_a9ea_83cd_6b3a_037f_7b10),
        ] {
            assert_eq!(encoding_digest(k, n), Block(digest), "k = {k}, n = {n}");
        }
    }

    /// The vectorised convolution rows equal the scalar rows, at every start and length
    /// around the kernels' window sizes (and run at all where the CPU has them).
    #[test]
    fn fast_convolution_rows_match_scalar() {
        for (what, has) in [
            ("blocks and pairs", crate::arch::have_fast_blocks()),
            ("bytes", crate::arch::have_fast_bytes()),
        ] {
            if !has {
                eprintln!(
                    "fast_convolution_rows_match_scalar: no vectorised kernel for {what} on this CPU (or switched off): only the fallback is checked"
                );
            }
        }
        fn check<E: CodeElement + PartialEq + core::fmt::Debug>(
            x0: &[E],
            coeffs: &[u32],
            min_window: usize,
            mix: bool,
        ) {
            for start in [0usize, 1, 3, 4, 17, 64] {
                for len in [0usize, 3, 4, 5, 63, 64, 65, 128, 200] {
                    if start + len > coeffs.len() || start >= x0.len() {
                        continue;
                    }
                    let mut fast = x0.to_vec();
                    let done = E::accumulate_fast(&mut fast, start, &coeffs[..len], mix);
                    assert!(done >= start && done <= start + len);
                    assert!(done + ACCUMULATOR_WIDTH + 2 <= x0.len() || done == start);
                    let mut slow = x0.to_vec();
                    for (r, &c) in coeffs[..done - start].iter().enumerate() {
                        acc_row(&mut slow, start + r, c, mix);
                    }
                    assert_eq!(fast, slow, "start {start} len {len} done {done}");
                    if E::has_fast_accumulate() && start + len + min_window <= x0.len() {
                        assert!(done > start || len < 64, "kernel ran no row");
                    }
                }
            }
        }
        let mut prg = Prg::new(Block(99));
        let coeff_blocks = prg.blocks(64);
        let coeffs: Vec<u32> = bytemuck::cast_slice::<Block, u32>(&coeff_blocks).to_vec();
        for size in [30usize, 36, 37, 40, 100, 191, 192, 193, 300, 500] {
            let blocks = prg.blocks(size);
            let pairs: Vec<BlockPair> = blocks
                .iter()
                .zip(prg.blocks(size))
                .map(|(a, b)| BlockPair([*a, b]))
                .collect();
            for mix in [false, true] {
                check(&blocks, &coeffs, 36, mix);
                check(&pairs, &coeffs, 36, mix);
            }
            let bytes: Vec<u8> = blocks.iter().map(|b| b.to_bytes()[0]).collect();
            check(&bytes, &coeffs, 192, false);
        }
    }

    /// Prints which of the kernels `all` test `test` skips because this CPU lacks them.
    fn say_skipped<K: core::fmt::Debug + PartialEq>(test: &str, all: &[K], have: &[K]) {
        for k in all.iter().filter(|k| !have.contains(k)) {
            eprintln!("{test}: {k:?} kernel not on this CPU (or switched off): skipped");
        }
    }

    /// Every block kernel this CPU has (not only the fastest, which the test above runs)
    /// equals the scalar rows, lane for lane, on blocks and on both halves of block pairs.
    #[test]
    fn every_block_kernel_matches_scalar() {
        use crate::arch::{BlockKernel, acc_blocks_with, acc_pairs_with, block_kernels};
        let have: Vec<_> = block_kernels().collect();
        say_skipped(
            "every_block_kernel_matches_scalar",
            &[BlockKernel::Avx512, BlockKernel::Avx2],
            &have,
        );
        /// `fast` (rows `start..done` of `x0` by a kernel) against the scalar rows; the
        /// kernel stops only near the end of the vector or with under 4 rows left.
        fn check_rows<E: CodeElement + PartialEq + core::fmt::Debug>(
            x0: &[E],
            fast: &[E],
            start: usize,
            c: &[u32],
            done: usize,
            mix: bool,
            what: &str,
        ) {
            let size = x0.len();
            assert!(done >= start && done <= start + c.len(), "{what}");
            assert!(
                done + ACCUMULATOR_WIDTH + 2 <= size || done == start,
                "{what}"
            );
            if start + c.len() + 36 <= size {
                assert!(done + 4 > start + c.len(), "stopped early: {what}");
            }
            let mut slow = x0.to_vec();
            for (r, &cr) in c[..done - start].iter().enumerate() {
                acc_row(&mut slow, start + r, cr, mix);
            }
            assert_eq!(fast, &slow[..], "{what}");
        }
        let mut prg = Prg::new(Block(7));
        let coeff_blocks = prg.blocks(256);
        let coeffs: Vec<u32> = bytemuck::cast_slice::<Block, u32>(&coeff_blocks).to_vec();
        for &kernel in &have {
            for size in [29usize, 30, 31, 32, 33, 36, 57, 100, 191, 1100] {
                let blocks = prg.blocks(size);
                let pairs: Vec<BlockPair> = blocks
                    .iter()
                    .zip(prg.blocks(size))
                    .map(|(a, b)| BlockPair([*a, b]))
                    .collect();
                for mix in [false, true] {
                    for start in [0usize, 1, 2, 5, 64] {
                        for len in [0usize, 1, 2, 3, 4, 64, 65, 1024] {
                            if start + len > coeffs.len() || start >= size {
                                continue;
                            }
                            let c = &coeffs[start..start + len];
                            let what =
                                format!("{kernel:?} size {size} start {start} len {len} mix {mix}");
                            let mut fast = blocks.clone();
                            let done = acc_blocks_with(kernel, &mut fast, start, c, mix);
                            check_rows(&blocks, &fast, start, c, done, mix, &what);
                            let mut fast = pairs.clone();
                            let done = acc_pairs_with(kernel, &mut fast, start, c, mix);
                            check_rows(&pairs, &fast, start, c, done, mix, &what);
                        }
                    }
                }
            }
        }
    }

    /// Every byte kernel this CPU has equals the scalar rows, byte for byte.
    #[test]
    fn every_byte_kernel_matches_scalar() {
        use crate::arch::{ByteKernel, acc_bytes_with, byte_kernels};
        let have: Vec<_> = byte_kernels().collect();
        say_skipped(
            "every_byte_kernel_matches_scalar",
            &[ByteKernel::Avx512, ByteKernel::Avx2],
            &have,
        );
        let mut prg = Prg::new(Block(8));
        let coeff_blocks = prg.blocks(512);
        let coeffs: Vec<u32> = bytemuck::cast_slice::<Block, u32>(&coeff_blocks).to_vec();
        for &kernel in &have {
            for size in [95usize, 96, 97, 127, 128, 160, 191, 192, 193, 300, 2100] {
                // Bytes of every value, not only bits.
                let x0: Vec<u8> = prg.blocks(size).iter().map(|b| b.to_bytes()[5]).collect();
                for start in [0usize, 1, 31, 32, 33, 64] {
                    for len in [0usize, 31, 32, 33, 63, 64, 65, 128, 1024, 2048] {
                        if start + len > coeffs.len() || start >= size {
                            continue;
                        }
                        let c = &coeffs[start..start + len];
                        let what = format!("{kernel:?} size {size} start {start} len {len}");
                        let mut fast = x0.clone();
                        let done = acc_bytes_with(kernel, &mut fast, start, c);
                        assert!(done >= start && done <= start + len, "{what}");
                        assert!(
                            done + ACCUMULATOR_WIDTH + 2 <= size || done == start,
                            "{what}"
                        );
                        if start + len + 192 <= size {
                            assert!(done + 64 > start + len, "stopped early: {what}");
                        }
                        let mut slow = x0.clone();
                        for (r, &cr) in c[..done - start].iter().enumerate() {
                            acc_row(&mut slow, start + r, cr, false);
                        }
                        assert_eq!(fast, slow, "{what}");
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn encoding_is_linear_blocks(
            k in 1usize..200,
            extra in 26usize..300,
            seed in any::<u128>(),
            gf128 in any::<bool>(),
        ) {
            let n = k + k.max(extra);
            let field = if gf128 { CodeField::Gf128 } else { CodeField::Gf2 };
            let code = ExConvCode::new(k, n, field);
            let mut prg = Prg::new(Block(seed));
            let a = prg.blocks(n);
            let b = prg.blocks(n);
            let mut ab: Vec<Block> = a.iter().zip(&b).map(|(x, y)| *x ^ *y).collect();
            let (mut ea, mut eb) = (a.clone(), b.clone());
            code.dual_encode(&mut ea);
            code.dual_encode(&mut eb);
            code.dual_encode(&mut ab);
            for i in 0..k {
                prop_assert_eq!(ab[i], ea[i] ^ eb[i]);
            }
        }

        #[test]
        fn encoding_is_linear_bits_and_words(
            k in 1usize..200,
            extra in 26usize..300,
            a in proptest::collection::vec(any::<u64>(), 600),
            b in proptest::collection::vec(any::<u64>(), 600),
        ) {
            let n = k + k.max(extra);
            let code = ExConvCode::new(k, n, CodeField::Gf2);
            let (a, b) = (&a[..n], &b[..n]);
            let mut ab: Vec<u64> = a.iter().zip(b).map(|(x, y)| x ^ y).collect();
            let (mut ea, mut eb) = (a.to_vec(), b.to_vec());
            code.dual_encode(&mut ea);
            code.dual_encode(&mut eb);
            code.dual_encode(&mut ab);
            prop_assert_eq!(&ab[..k], &ea.iter().zip(&eb).map(|(x, y)| x ^ y).collect::<Vec<_>>()[..k]);
            let mut abits: Vec<u8> = a.iter().map(|v| (v & 1) as u8).collect();
            let mut bbits: Vec<u8> = b.iter().map(|v| (v & 1) as u8).collect();
            let mut abbits: Vec<u8> = abits.iter().zip(&bbits).map(|(x, y)| x ^ y).collect();
            code.dual_encode(&mut abits);
            code.dual_encode(&mut bbits);
            code.dual_encode(&mut abbits);
            for i in 0..k {
                prop_assert_eq!(abbits[i], abits[i] ^ bbits[i]);
                prop_assert!(abbits[i] <= 1);
            }
        }
    }
}
