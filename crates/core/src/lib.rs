//! Primitives that every obliv protocol stands on.
//!
//! - [`Block`]: a 128-bit value, the unit of OT extension, VOLE, GGM trees and DPF keys.
//! - [`aes`]: AES-128 on blocks (AES-NI / VAES picked at run time), the counter-mode
//!   [`Prg`] and the `rand_core` RNG [`AesRng`].
//! - [`hash`]: the correlation-robust, circular and tweakable hashes from fixed-key AES
//!   [GKWW20], and a domain-separated random-oracle hash (BLAKE3).
//! - [`gf128`]: GF(2^128) multiplication (PCLMULQDQ or a constant-time portable kernel),
//!   inversion and inner products.
//! - [`transpose`]: bit-matrix transposition for OT extension.
//! - [`mem`]: large working vectors on transparent huge pages.
//! - [`cpu_time`]: thread and process CPU time, for the figures of benches and examples.
//!
//! Everything here that touches secrets runs in constant time: no branch or memory index
//! depends on block values.
//!
//! [GKWW20]: https://eprint.iacr.org/2019/074
#![deny(unsafe_code)]

pub mod aes;
mod backend;
pub mod block;
pub mod cpu_time;
pub mod error;
pub mod gf128;
pub mod hash;
pub mod mem;
pub mod transpose;

pub use aes::{Aes, AesRng, Prg};
pub use block::Block;
pub use error::Error;
pub use rand_core;
pub use subtle;

/// `⌈log2(n)⌉` for `n ≥ 1` (0 for `n ≤ 1`): the number of bits needed to index `n` items.
pub const fn log2_ceil(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// Bytes of a PSI comparison value that keep the false-positive probability across
/// `n_a · n_b` comparisons below `2^-stat_sec`: `⌈(stat_sec + log2 n_a + log2 n_b) / 8⌉`.
pub const fn psi_compare_bytes(stat_sec: u32, n_a: u64, n_b: u64) -> usize {
    ((stat_sec + log2_ceil(n_a) + log2_ceil(n_b)).div_ceil(8)) as usize
}

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Helpers shared by the unit tests.
#[cfg(test)]
pub(crate) mod test_util {
    /// Drops `v` in place and returns the bytes left where it was (for tests that a value
    /// wipes its secrets when dropped).
    #[allow(unsafe_code)]
    pub(crate) fn bytes_after_drop<T>(v: T) -> Vec<u8> {
        use core::mem::{ManuallyDrop, size_of};
        let mut slot = ManuallyDrop::new(v);
        let p: *mut T = &mut *slot;
        // SAFETY: `slot` holds a valid `T` that is dropped exactly once here and never
        // used as a `T` again (`ManuallyDrop` keeps its storage alive and undropped).
        unsafe { core::ptr::drop_in_place(p) };
        // SAFETY: the storage is still allocated (`slot` lives to the end of this
        // function). Bytes a drop did not write (padding) are read as they were left.
        (0..size_of::<T>())
            .map(|i| unsafe { core::ptr::read_volatile(p.cast::<u8>().add(i)) })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_and_widths() {
        assert_eq!(log2_ceil(0), 0);
        assert_eq!(log2_ceil(1), 0);
        assert_eq!(log2_ceil(2), 1);
        assert_eq!(log2_ceil(3), 2);
        assert_eq!(log2_ceil(1 << 20), 20);
        assert_eq!(log2_ceil((1 << 20) + 1), 21);
        // 40 + 20 + 20 = 80 bits = 10 bytes; 1e7 each: 40 + 24 + 24 = 88 bits = 11 bytes.
        assert_eq!(psi_compare_bytes(40, 1 << 20, 1 << 20), 10);
        assert_eq!(psi_compare_bytes(40, 10_000_000, 10_000_000), 11);
    }
}
