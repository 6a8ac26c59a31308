//! The 128-bit [`Block`]: the unit of OT extension, VOLE, GGM trees and DPF keys.

use core::fmt;
use core::ops::{BitAnd, BitAndAssign, BitXor, BitXorAssign, Not};

use bytemuck::{Pod, Zeroable};
use rand_core::Rng;
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};
use zeroize::DefaultIsZeroes;

/// A 128-bit value, stored as a little-endian `u128`.
///
/// `Block` is `#[repr(transparent)]` over `u128` (16-byte aligned on x86-64), implements
/// [`Pod`] so that slices of blocks can be viewed as bytes without copying
/// ([`Block::slice_as_bytes`]), and combines with `^` and `&` as a vector of 128 bits.
/// Equality through [`ConstantTimeEq::ct_eq`] runs in constant time; the derived `PartialEq`
/// and `Ord` (by the `u128` value) are for public values: sorting, deduplication, tests.
///
/// The byte order is little-endian throughout: byte 0 of [`Block::to_bytes`] holds bits 0..8,
/// and [`Block::lsb`] is bit 0 (the "point-and-permute"/choice bit of OT protocols).
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct Block(pub u128);

impl Block {
    /// The all-zero block.
    pub const ZERO: Block = Block(0);
    /// The all-one block.
    pub const ONES: Block = Block(u128::MAX);
    /// The block with only bit 0 set (the GF(2^128) unit, `1`).
    pub const ONE: Block = Block(1);

    /// Builds a block from 16 little-endian bytes.
    #[inline]
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Block(u128::from_le_bytes(bytes))
    }

    /// The 16 little-endian bytes of the block.
    #[inline]
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_le_bytes()
    }

    /// Builds a block from two 64-bit halves: `lo` holds bits 0..64, `hi` bits 64..128.
    #[inline]
    pub const fn from_u64s(lo: u64, hi: u64) -> Self {
        Block((lo as u128) | ((hi as u128) << 64))
    }

    /// The low (bits 0..64) and high (bits 64..128) halves.
    #[inline]
    #[allow(clippy::cast_possible_truncation)] // taking the halves is the point
    pub const fn to_u64s(self) -> (u64, u64) {
        (self.0 as u64, (self.0 >> 64) as u64)
    }

    /// Bit 0 of the block.
    #[inline]
    pub const fn lsb(self) -> bool {
        self.0 & 1 == 1
    }

    /// Bit `i` (0..128) of the block.
    ///
    /// # Panics
    /// Panics if `i >= 128` (a caller bug, never peer input).
    #[inline]
    pub const fn bit(self, i: usize) -> bool {
        assert!(i < 128, "bit index out of range");
        (self.0 >> i) & 1 == 1
    }

    /// A uniformly random block drawn from `rng`.
    #[inline]
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
        let mut bytes = [0u8; 16];
        rng.fill_bytes(&mut bytes);
        Block::from_bytes(bytes)
    }

    /// `self` if `choice` is 0, else `self ^ other`, in constant time.
    #[inline]
    pub fn xor_if(self, other: Block, choice: Choice) -> Block {
        self ^ Block::conditional_select(&Block::ZERO, &other, choice)
    }

    /// The block with every bit equal to `bit` (all zeros or all ones), in constant time.
    #[inline]
    pub fn broadcast_bit(bit: Choice) -> Block {
        Block(0u128.wrapping_sub(u128::from(bit.unwrap_u8())))
    }

    /// `n` zero blocks in a vector on transparent huge pages ([`crate::mem::huge_vec`]): a
    /// working vector of tens of MiB then costs one page fault per 2 MiB instead of one per
    /// 4 KiB when it is first filled.
    pub fn zeroed_vec(n: usize) -> Vec<Block> {
        crate::mem::huge_vec_filled(n, Block::ZERO)
    }

    /// Reinterprets a vector of blocks as a vector of their `u128` values, reusing the
    /// allocation (`Block` is a transparent `u128`).
    pub fn into_u128_vec(blocks: Vec<Block>) -> Vec<u128> {
        bytemuck::allocation::cast_vec(blocks)
    }

    /// Views a slice of blocks as bytes, without copying.
    #[inline]
    pub fn slice_as_bytes(blocks: &[Block]) -> &[u8] {
        bytemuck::cast_slice(blocks)
    }

    /// Views a mutable slice of blocks as bytes, without copying.
    #[inline]
    pub fn slice_as_bytes_mut(blocks: &mut [Block]) -> &mut [u8] {
        bytemuck::cast_slice_mut(blocks)
    }

    /// Copies bytes into a new vector of blocks.
    ///
    /// Returns `None` if `bytes.len()` is not a multiple of 16.
    pub fn vec_from_bytes(bytes: &[u8]) -> Option<Vec<Block>> {
        if !bytes.len().is_multiple_of(16) {
            return None;
        }
        Some(
            bytes
                .chunks_exact(16)
                .map(|c| {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(c);
                    Block::from_bytes(b)
                })
                .collect(),
        )
    }

    /// XORs `src` into `dst` element by element (`dst[i] ^= src[i]`).
    ///
    /// # Panics
    /// Panics if the slices differ in length (a caller bug).
    #[inline]
    pub fn xor_slices_in_place(dst: &mut [Block], src: &[Block]) {
        assert_eq!(dst.len(), src.len(), "xor of slices of different lengths");
        for (d, s) in dst.iter_mut().zip(src) {
            *d ^= *s;
        }
    }
}

impl fmt::Debug for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Block({:032x})", self.0)
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl From<u128> for Block {
    #[inline]
    fn from(v: u128) -> Self {
        Block(v)
    }
}

impl From<Block> for u128 {
    #[inline]
    fn from(b: Block) -> Self {
        b.0
    }
}

impl From<[u8; 16]> for Block {
    #[inline]
    fn from(b: [u8; 16]) -> Self {
        Block::from_bytes(b)
    }
}

impl From<Block> for [u8; 16] {
    #[inline]
    fn from(b: Block) -> Self {
        b.to_bytes()
    }
}

impl BitXor for Block {
    type Output = Block;
    #[inline]
    fn bitxor(self, rhs: Block) -> Block {
        Block(self.0 ^ rhs.0)
    }
}

impl BitXorAssign for Block {
    #[inline]
    fn bitxor_assign(&mut self, rhs: Block) {
        self.0 ^= rhs.0;
    }
}

impl BitAnd for Block {
    type Output = Block;
    #[inline]
    fn bitand(self, rhs: Block) -> Block {
        Block(self.0 & rhs.0)
    }
}

impl BitAndAssign for Block {
    #[inline]
    fn bitand_assign(&mut self, rhs: Block) {
        self.0 &= rhs.0;
    }
}

impl Not for Block {
    type Output = Block;
    #[inline]
    fn not(self) -> Block {
        Block(!self.0)
    }
}

impl ConstantTimeEq for Block {
    #[inline]
    fn ct_eq(&self, other: &Self) -> Choice {
        self.0.ct_eq(&other.0)
    }
}

impl ConditionallySelectable for Block {
    #[inline]
    fn conditional_select(a: &Self, b: &Self, choice: Choice) -> Self {
        Block(u128::conditional_select(&a.0, &b.0, choice))
    }
}

impl DefaultIsZeroes for Block {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn bytes_round_trip(bytes in any::<[u8; 16]>()) {
            prop_assert_eq!(Block::from_bytes(bytes).to_bytes(), bytes);
        }

        #[test]
        fn halves_round_trip(lo in any::<u64>(), hi in any::<u64>()) {
            prop_assert_eq!(Block::from_u64s(lo, hi).to_u64s(), (lo, hi));
        }

        #[test]
        fn xor_is_a_group(a in any::<u128>(), b in any::<u128>()) {
            let (a, b) = (Block(a), Block(b));
            prop_assert_eq!(a ^ b ^ b, a);
            prop_assert_eq!(a ^ b, b ^ a);
            prop_assert_eq!(a ^ Block::ZERO, a);
        }

        #[test]
        fn ct_eq_agrees_with_eq(a in any::<u128>(), b in any::<u128>()) {
            prop_assert_eq!(bool::from(Block(a).ct_eq(&Block(b))), a == b);
            prop_assert!(bool::from(Block(a).ct_eq(&Block(a))));
        }

        #[test]
        fn xor_if_and_broadcast(a in any::<u128>(), b in any::<u128>(), c in any::<bool>()) {
            let choice = Choice::from(u8::from(c));
            let expected = if c { Block(a ^ b) } else { Block(a) };
            prop_assert_eq!(Block(a).xor_if(Block(b), choice), expected);
            prop_assert_eq!(Block::broadcast_bit(choice), if c { Block::ONES } else { Block::ZERO });
        }
    }

    #[test]
    fn zeroed_and_reinterpreted_vectors() {
        let z = Block::zeroed_vec(100_000);
        assert_eq!(z.len(), 100_000);
        assert!(z.iter().all(|&b| b == Block::ZERO));
        let v = vec![Block(1), Block(u128::MAX), Block(7 << 100)];
        let ptr = v.as_ptr() as usize;
        let u = Block::into_u128_vec(v);
        assert_eq!(u, [1, u128::MAX, 7 << 100]);
        assert_eq!(u.as_ptr() as usize, ptr, "the allocation is reused");
        assert!(Block::zeroed_vec(0).is_empty());
    }

    #[test]
    fn little_endian_layout() {
        let b = Block::from_bytes([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80]);
        assert!(b.lsb());
        assert!(b.bit(127));
        assert!(!b.bit(1));
        let blocks = [b, Block::ZERO];
        assert_eq!(Block::slice_as_bytes(&blocks)[0], 1);
        assert_eq!(Block::slice_as_bytes(&blocks)[15], 0x80);
        assert_eq!(
            Block::vec_from_bytes(Block::slice_as_bytes(&blocks)),
            Some(blocks.to_vec())
        );
        assert_eq!(Block::vec_from_bytes(&[0u8; 15]), None);
    }
}
