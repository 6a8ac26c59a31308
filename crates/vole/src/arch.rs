//! Architecture hooks: software prefetch for the encoder's random reads.
//!
//! The only `unsafe` of the crate lives here.
#![allow(unsafe_code)]

/// Hints the CPU to bring `slice[i]` into the L1 cache. Never faults and has no effect on
/// the program's results; a no-op off x86-64.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = slice.as_ptr().wrapping_add(i).cast::<i8>();
        // SAFETY: `_mm_prefetch` needs only SSE, which is part of every x86-64 target (the
        // baseline `x86_64` target enables it), and PREFETCHh is a hint that never faults nor
        // reads memory architecturally, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (slice, i);
    }
}
