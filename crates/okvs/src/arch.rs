//! A software prefetch hint for the random reads of decoding and of the binned encoder's
//! gathers: the only `unsafe` of the crate.
#![allow(unsafe_code)]

/// Hints the CPU to bring `slice[i]` into the L2 cache (PREFETCHT1). Never faults and has no
/// effect on the program's results; a no-op off x86-64 or for `i` out of bounds.
///
/// Random reads over an encoding of tens of MiB miss every cache; issued a batch ahead,
/// into L2 (which tracks many more misses than L1), they overlap.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
        if let Some(x) = slice.get(i) {
            let p = core::ptr::from_ref(x).cast::<i8>();
            // SAFETY: `_mm_prefetch` needs only SSE, part of every x86-64 target (the
            // baseline `x86_64` target enables it); PREFETCHh is a hint that never faults nor
            // reads memory architecturally, and `p` points into `slice` anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(p) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (slice, i);
    }
}
