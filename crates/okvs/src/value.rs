//! Value types stored in an OKVS and the two kinds of dense columns.
//!
//! An OKVS row for key `k` is `(s(k) ‖ δ(k))`: a sparse binary part `s(k)` with three ones
//! and a dense part `δ(k)` of `d` coefficients. Decoding is the inner product
//! `⟨s(k) ‖ δ(k), P⟩`, so a value type needs addition (here always XOR: every supported value
//! type is a vector space over GF(2)) and multiplication by the dense coefficients:
//!
//! - [`Binary`] dense columns: `δ(k) ∈ GF(2)^d`, the multiplication is "keep or drop", so any
//!   [`OkvsValue`] works (`Block`, `u64`, `u128`, `u32`, `[u64; N]`, …). This is the dense
//!   part of PaXoS and of RR22's low-communication mode, where `d = g + λ` (λ = 40 extra
//!   columns let Gaussian elimination pick `g` independent ones except with probability 2^-λ).
//! - [`Gf128`] dense columns: `δ(k) = (x, x², …, x^g)` for a field element `x = H₂(k)` of
//!   GF(2^128), so `d = g` and values must be GF(2^128) elements ([`Block`]). This is RR22's
//!   default ("fast") dense part: the `g × g` system is a generalised Vandermonde matrix,
//!   invertible except with probability about `g²/2^128`.

use core::fmt::Debug;

use obliv_core::Block;
use obliv_core::gf128;
use obliv_core::rand_core::Rng;

/// A value that an OKVS can store: an element of a vector space over GF(2), added by XOR.
///
/// Implemented for [`Block`], `u128`, `u64`, `u32`, `u16`, `u8` and `[u64; N]`.
pub trait OkvsValue: Copy + Default + PartialEq + Debug + Send + Sync + 'static {
    /// `self + other` (bitwise XOR).
    fn xor(self, other: Self) -> Self;
    /// `self · bit` for `bit ∈ {0, 1}`, without a branch on `bit`.
    fn and_bit(self, bit: u64) -> Self;
    /// A uniformly random value.
    fn random<R: Rng + ?Sized>(rng: &mut R) -> Self;
}

macro_rules! impl_okvs_value_int {
    ($($t:ty),*) => {$(
        impl OkvsValue for $t {
            #[inline(always)]
            fn xor(self, other: Self) -> Self {
                self ^ other
            }
            #[inline(always)]
            #[allow(clippy::cast_possible_truncation)] // a 0/1 mask broadcast to every bit
            fn and_bit(self, bit: u64) -> Self {
                self & (0 as $t).wrapping_sub((bit & 1) as $t)
            }
            fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
                let mut b = [0u8; core::mem::size_of::<$t>()];
                rng.fill_bytes(&mut b);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
impl_okvs_value_int!(u8, u16, u32, u64, u128);

impl OkvsValue for Block {
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        self ^ other
    }
    #[inline(always)]
    fn and_bit(self, bit: u64) -> Self {
        Block(self.0 & 0u128.wrapping_sub(u128::from(bit & 1)))
    }
    fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Block::random(rng)
    }
}

impl<const N: usize> OkvsValue for [u64; N]
where
    [u64; N]: Default,
{
    #[inline(always)]
    fn xor(mut self, other: Self) -> Self {
        for (a, b) in self.iter_mut().zip(other) {
            *a ^= b;
        }
        self
    }
    #[inline(always)]
    fn and_bit(mut self, bit: u64) -> Self {
        let m = 0u64.wrapping_sub(bit & 1);
        for a in self.iter_mut() {
            *a &= m;
        }
        self
    }
    fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
        let mut out = [0u64; N];
        for a in out.iter_mut() {
            *a = rng.next_u64();
        }
        out
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Binary {}
    impl Sealed for super::Gf128 {}
}

/// Which dense-column kind an OKVS uses (the run-time mirror of [`DenseKind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DenseType {
    /// `d = g + λ` binary dense columns ([`Binary`]).
    Binary,
    /// `d = g` dense columns over GF(2^128) ([`Gf128`]).
    Gf128,
}

/// The field of the dense coefficients: GF(2) for [`Binary`], GF(2^128) for [`Gf128`].
///
/// Sealed: the solver relies on exactly these two.
pub trait DenseKind: sealed::Sealed + Copy + Debug + Default + Send + Sync + 'static {
    /// The run-time tag.
    const TYPE: DenseType;
    /// A dense coefficient (a bit stored as `u8`, or a GF(2^128) element).
    type Coef: Copy + PartialEq + Debug + Send + Sync;
    /// The additive identity.
    const ZERO: Self::Coef;
    /// `a + b`.
    fn add(a: Self::Coef, b: Self::Coef) -> Self::Coef;
    /// `a · b`.
    fn mul(a: Self::Coef, b: Self::Coef) -> Self::Coef;
    /// `a⁻¹` (`a ≠ 0`).
    fn inv(a: Self::Coef) -> Self::Coef;
    /// Writes the dense row `δ(k)` (length `out.len()`) of a key whose dense hash is `h`.
    fn row(h: Block, out: &mut [Self::Coef]);
}

/// Binary dense columns: coefficient `j` of the dense row is bit `j` of `H₂(k)` (`d ≤ 128`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Binary;

/// GF(2^128) dense columns: the dense row is `(x, x², …, x^d)` with `x = H₂(k)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gf128;

impl DenseKind for Binary {
    const TYPE: DenseType = DenseType::Binary;
    type Coef = u8;
    const ZERO: u8 = 0;
    #[inline]
    fn add(a: u8, b: u8) -> u8 {
        a ^ b
    }
    #[inline]
    fn mul(a: u8, b: u8) -> u8 {
        a & b
    }
    #[inline]
    fn inv(a: u8) -> u8 {
        a
    }
    fn row(h: Block, out: &mut [u8]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = u8::from(h.bit(j));
        }
    }
}

impl DenseKind for Gf128 {
    const TYPE: DenseType = DenseType::Gf128;
    type Coef = Block;
    const ZERO: Block = Block::ZERO;
    #[inline]
    fn add(a: Block, b: Block) -> Block {
        a ^ b
    }
    #[inline]
    fn mul(a: Block, b: Block) -> Block {
        gf128::mul(a, b)
    }
    #[inline]
    fn inv(a: Block) -> Block {
        gf128::invert(a)
    }
    fn row(h: Block, out: &mut [Block]) {
        let mut x = h;
        for o in out.iter_mut() {
            *o = x;
            x = gf128::mul(x, h);
        }
    }
}

/// A value type that can be multiplied by the dense coefficients of `D`.
///
/// Every [`OkvsValue`] works with [`Binary`]; only [`Block`] (GF(2^128)) works with
/// [`Gf128`].
pub trait DenseValue<D: DenseKind>: OkvsValue {
    /// `self · c`.
    fn scale(self, c: D::Coef) -> Self;
    /// The dense part of a decode: `Σ_j δ_j(k) · p[j]` for the key with dense hash `h`
    /// (`δ` as in [`DenseKind::row`], `p.len()` = the dense size).
    fn dense_dot(h: Block, p: &[Self]) -> Self;
    /// Precomputes from the dense part `p` of an encoding a table for
    /// [`dense_dot_prepared`](Self::dense_dot_prepared), appended to `out` (for binary dense
    /// columns: the 16 sums of each group of four columns, "four Russians").
    fn prepare_dense(p: &[Self], out: &mut Vec<Self>);
    /// `dense_dot(h, p)` from `prepare_dense(p)`; `d = p.len()`.
    fn dense_dot_prepared(h: Block, prepared: &[Self], d: usize) -> Self;
    /// `out[i] = dense_dot_prepared(h[i], prepared, d)` for a batch of keys (`out.len() =
    /// h.len()`); GF(2^128) dense columns run the keys' independent multiplications side by
    /// side instead of one Horner chain at a time.
    fn dense_dot_prepared_batch(h: &[Block], prepared: &[Self], d: usize, out: &mut [Self]) {
        for (o, h) in out.iter_mut().zip(h) {
            *o = Self::dense_dot_prepared(*h, prepared, d);
        }
    }
    /// `out[i] += dense_dot_prepared(h[i], t_{bins[i]}, d)` for a batch of keys from any
    /// bins, where bin `b`'s prepared table is `tables[b·stride..(b + 1)·stride]` (the
    /// lengths of `h`, `bins` and `out` are equal). Used when all the tables fit in the L1
    /// cache together, so that the keys need not be grouped by bin first.
    fn dense_dot_binned_batch(
        h: &[Block],
        bins: &[u32],
        tables: &[Self],
        stride: usize,
        d: usize,
        out: &mut [Self],
    ) {
        for ((o, h), &b) in out.iter_mut().zip(h).zip(bins) {
            let b = b as usize;
            let t = &tables[b * stride..(b + 1) * stride];
            *o = o.xor(Self::dense_dot_prepared(*h, t, d));
        }
    }
}

impl<V: OkvsValue> DenseValue<Binary> for V {
    #[inline(always)]
    fn scale(self, c: u8) -> Self {
        self.and_bit(u64::from(c))
    }
    #[inline(always)]
    fn dense_dot(h: Block, p: &[Self]) -> Self {
        let mut acc = V::default();
        let (lo, hi) = h.to_u64s();
        for (j, v) in p.iter().take(64).enumerate() {
            acc = acc.xor(v.and_bit(lo >> j));
        }
        for (j, v) in p.iter().skip(64).take(64).enumerate() {
            acc = acc.xor(v.and_bit(hi >> j));
        }
        acc
    }
    fn prepare_dense(p: &[Self], out: &mut Vec<Self>) {
        // Room for the whole table first: growing would free a partial copy unwiped.
        out.reserve(p.len().div_ceil(4) * 16);
        for group in p.chunks(4) {
            let base = out.len();
            out.push(V::default());
            for nib in 1usize..16 {
                let low = nib.trailing_zeros() as usize;
                let v = group.get(low).copied().unwrap_or_default();
                let prev = out[base + (nib & (nib - 1))];
                out.push(prev.xor(v));
            }
        }
    }
    #[inline(always)]
    #[allow(clippy::cast_possible_truncation)] // a 4-bit index
    fn dense_dot_prepared(h: Block, prepared: &[Self], d: usize) -> Self {
        let (tables, _) = prepared.as_chunks::<16>();
        let groups = d.div_ceil(4).min(tables.len());
        let (lo, hi) = h.to_u64s();
        let (t_lo, t_hi) = tables[..groups].split_at(groups.min(16));
        let mut acc = V::default();
        let mut x = lo;
        for t in t_lo {
            acc = acc.xor(t[(x & 15) as usize]);
            x >>= 4;
        }
        let mut x = hi;
        for t in t_hi {
            acc = acc.xor(t[(x & 15) as usize]);
            x >>= 4;
        }
        acc
    }
}

impl DenseValue<Gf128> for Block {
    #[inline(always)]
    fn scale(self, c: Block) -> Self {
        gf128::mul(self, c)
    }
    /// Horner: `Σ_{j=1}^{d} p_j·x^j = x·(p₁ + x·(p₂ + … + x·p_d))`, `d` multiplications.
    #[inline(always)]
    fn dense_dot(h: Block, p: &[Self]) -> Self {
        let mut acc = Block::ZERO;
        for v in p.iter().rev() {
            acc = gf128::mul(acc ^ *v, h);
        }
        acc
    }
    fn prepare_dense(p: &[Self], out: &mut Vec<Self>) {
        out.extend_from_slice(p);
    }
    #[inline(always)]
    fn dense_dot_prepared(h: Block, prepared: &[Self], d: usize) -> Self {
        <Block as DenseValue<Gf128>>::dense_dot(h, &prepared[..d])
    }
    /// Horner for up to 64 keys at once: each step is one [`gf128::mul_slices`] over the
    /// batch (independent products, pipelined), the same result as key by key.
    fn dense_dot_prepared_batch(h: &[Block], prepared: &[Self], d: usize, out: &mut [Self]) {
        let p = &prepared[..d];
        let mut t = [Block::ZERO; 64];
        for (hc, oc) in h.chunks(64).zip(out.chunks_mut(64)) {
            let t = &mut t[..hc.len()];
            oc.fill(Block::ZERO);
            for v in p.iter().rev() {
                for a in oc.iter_mut() {
                    *a ^= *v;
                }
                gf128::mul_slices(oc, hc, t);
                oc.copy_from_slice(t);
            }
        }
    }
    /// Horner for up to 64 keys at once, each with the coefficients of its own bin.
    fn dense_dot_binned_batch(
        h: &[Block],
        bins: &[u32],
        tables: &[Self],
        stride: usize,
        d: usize,
        out: &mut [Self],
    ) {
        let (mut acc, mut t) = ([Block::ZERO; 64], [Block::ZERO; 64]);
        for ((hc, bc), oc) in h.chunks(64).zip(bins.chunks(64)).zip(out.chunks_mut(64)) {
            // Horner with the running value alternating between the two buffers.
            let (mut x, mut y) = (&mut acc[..hc.len()], &mut t[..hc.len()]);
            x.fill(Block::ZERO);
            for j in (0..d).rev() {
                for (a, &b) in x.iter_mut().zip(bc) {
                    *a ^= tables[b as usize * stride + j];
                }
                gf128::mul_slices(x, hc, y);
                core::mem::swap(&mut x, &mut y);
            }
            for (o, a) in oc.iter_mut().zip(x.iter()) {
                *o ^= *a;
            }
        }
        // Products with the keys' hashes: wiped.
        acc.fill(Block::ZERO);
        t.fill(Block::ZERO);
        core::hint::black_box((&acc, &t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_core::rand_core::SeedableRng;

    #[test]
    fn and_bit_masks() {
        assert_eq!(0xdead_beefu64.and_bit(1), 0xdead_beef);
        assert_eq!(0xdead_beefu64.and_bit(0), 0);
        assert_eq!(Block(7).and_bit(1), Block(7));
        assert_eq!(Block(7).and_bit(0), Block::ZERO);
        assert_eq!([1u64, 2].and_bit(0), [0, 0]);
        assert_eq!([1u64, 2].xor([3, 3]), [2, 1]);
    }

    /// `dense_dot` equals the inner product with the row of `DenseKind::row`.
    #[test]
    fn dense_dot_matches_row() {
        let mut rng = AesRng::from_seed([3; 16]);
        for d in [1usize, 3, 40, 64, 65, 100, 128] {
            let h = Block::random(&mut rng);
            let p: Vec<Block> = (0..d).map(|_| Block::random(&mut rng)).collect();
            let mut row = vec![0u8; d];
            Binary::row(h, &mut row);
            let want = p.iter().zip(&row).fold(Block::ZERO, |a, (v, &c)| {
                a ^ DenseValue::<Binary>::scale(*v, c)
            });
            assert_eq!(<Block as DenseValue<Binary>>::dense_dot(h, &p), want);
            let mut prep = Vec::new();
            <Block as DenseValue<Binary>>::prepare_dense(&p, &mut prep);
            assert_eq!(prep.len(), d.div_ceil(4) * 16);
            assert_eq!(
                <Block as DenseValue<Binary>>::dense_dot_prepared(h, &prep, d),
                want
            );
            let p64: Vec<u64> = p.iter().map(|b| b.to_u64s().0).collect();
            let mut prep = Vec::new();
            <u64 as DenseValue<Binary>>::prepare_dense(&p64, &mut prep);
            assert_eq!(
                <u64 as DenseValue<Binary>>::dense_dot_prepared(h, &prep, d),
                want.to_u64s().0
            );
        }
        for d in [1usize, 2, 3, 7] {
            let h = Block::random(&mut rng);
            let p: Vec<Block> = (0..d).map(|_| Block::random(&mut rng)).collect();
            let mut row = vec![Block::ZERO; d];
            Gf128::row(h, &mut row);
            let want = gf128::inner_product(&p, &row);
            assert_eq!(<Block as DenseValue<Gf128>>::dense_dot(h, &p), want);
            let mut prep = Vec::new();
            <Block as DenseValue<Gf128>>::prepare_dense(&p, &mut prep);
            assert_eq!(
                <Block as DenseValue<Gf128>>::dense_dot_prepared(h, &prep, d),
                want
            );
            // The binned batch (two bins' tables, keys interleaved) equals the one-key form.
            let p2: Vec<Block> = (0..d).map(|_| Block::random(&mut rng)).collect();
            let mut tables = Vec::new();
            <Block as DenseValue<Gf128>>::prepare_dense(&p, &mut tables);
            let stride = tables.len();
            <Block as DenseValue<Gf128>>::prepare_dense(&p2, &mut tables);
            let hs: Vec<Block> = (0..150).map(|_| Block::random(&mut rng)).collect();
            let bins: Vec<u32> = (0..150u32).map(|i| (i * 7 / 3) % 2).collect();
            let init: Vec<Block> = (0..150).map(|_| Block::random(&mut rng)).collect();
            let mut got = init.clone();
            <Block as DenseValue<Gf128>>::dense_dot_binned_batch(
                &hs, &bins, &tables, stride, d, &mut got,
            );
            for i in 0..hs.len() {
                let pb = if bins[i] == 0 { &p } else { &p2 };
                let want = init[i] ^ <Block as DenseValue<Gf128>>::dense_dot(hs[i], pb);
                assert_eq!(got[i], want);
            }
            // The batched form equals the one-key form, across a 64-key boundary.
            let hs: Vec<Block> = (0..100).map(|_| Block::random(&mut rng)).collect();
            let mut got = vec![Block::ZERO; hs.len()];
            <Block as DenseValue<Gf128>>::dense_dot_prepared_batch(&hs, &prep, d, &mut got);
            for (g, h) in got.iter().zip(&hs) {
                assert_eq!(*g, <Block as DenseValue<Gf128>>::dense_dot(*h, &p));
            }
            assert_eq!(row[0], h);
            if d > 1 {
                assert_eq!(row[1], gf128::mul(h, h));
            }
        }
    }
}
