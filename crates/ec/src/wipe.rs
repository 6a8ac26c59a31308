//! Wiping of the lanes' stack scratch (AVX-512 kernels): tables of multiples of secret-derived
//! points, ladder states, hashed field elements. `zeroize` covers the byte and integer buffers;
//! the vector types (`__m512i` arrays) have no `Zeroize` implementation, so the kernels use
//! [`wipe`] on them, once per call (per eight-lane multiplication), not per step.
#![allow(unsafe_code)] // volatile writes of all-zero bit patterns, see `ZeroBits`

/// Types for which the all-zero bit pattern is a valid value: plain vectors of `__m512i` and
/// integers, without references, niches or drop glue.
///
/// # Safety
/// Implement only for `Copy` types made of integers and SIMD vectors (arrays and structs of
/// them), for which `core::mem::zeroed()` is a valid value.
pub(crate) unsafe trait ZeroBits: Copy {}

// SAFETY: a pair of `ZeroBits` values: all zeros is a valid value of each, hence of the pair.
unsafe impl<A: ZeroBits, B: ZeroBits> ZeroBits for (A, B) {}

/// Overwrite `v` with zeros by a volatile write (which the optimiser may not drop as a dead
/// store), followed by a compiler fence so that later code is not moved above it.
#[inline]
pub(crate) fn wipe<T: ZeroBits>(v: &mut T) {
    // SAFETY: `T: ZeroBits`, so the all-zero pattern is a valid `T`; `v` is a valid, aligned,
    // exclusive reference.
    unsafe { core::ptr::write_volatile(v, core::mem::zeroed()) };
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// [`wipe`] for every element of a slice (a table of multiples).
#[inline]
pub(crate) fn wipe_slice<T: ZeroBits>(v: &mut [T]) {
    for x in v.iter_mut() {
        // SAFETY: as in `wipe`.
        unsafe { core::ptr::write_volatile(x, core::mem::zeroed()) };
    }
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    struct Words([u64; 5]);
    // SAFETY: integers only.
    unsafe impl ZeroBits for Words {}

    #[test]
    fn wipe_zeroes_values_and_tables() {
        let mut w = Words([u64::MAX; 5]);
        wipe(&mut w);
        assert_eq!(w.0, [0; 5]);
        let mut t = [Words([7; 5]); 16];
        wipe_slice(&mut t);
        assert!(t.iter().all(|w| w.0 == [0; 5]));
    }
}
