//! Memory helpers for the hot paths: large working vectors on transparent huge pages, and a
//! prefetch hint for random reads.
//!
//! The protocols allocate vectors of tens of MiB per run (VOLE outputs, OKVS encodings, item
//! keys). Fresh from the kernel, each 4 KiB page costs a page fault at first touch, a
//! visible share of a one-shot RR22 run (`docs/measurements.md`). With 2 MiB pages the
//! kernel takes 512 times fewer faults for the same memory.

/// The size of a transparent huge page on x86-64 Linux.
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// An empty vector with room for `n` elements whose memory the kernel is asked to back with
/// transparent huge pages (`madvise(MADV_HUGEPAGE)` on Linux; a plain `Vec::with_capacity`
/// elsewhere).
///
/// The advice is given before the memory is first touched, and only on the 2 MiB-aligned
/// interior of the allocation, so no memory outside the vector is affected. It is a hint:
/// the kernel falls back to small pages when THP is off or no huge page is free, and it
/// never changes memory contents. A small vector (under 2 MiB) is an ordinary one.
pub fn huge_vec<T>(n: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    advise_huge(
        v.as_ptr() as usize,
        v.capacity() * core::mem::size_of::<T>(),
    );
    v
}

/// `n` copies of `value` in a [`huge_vec`].
pub fn huge_vec_filled<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = huge_vec(n);
    v.resize(n, value);
    v
}

/// Advises `[start, start + bytes)` (the 2 MiB-aligned part of it) for huge pages.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise_huge(start: usize, bytes: usize) {
    let lo = start.next_multiple_of(HUGE_PAGE);
    let hi = start.saturating_add(bytes) / HUGE_PAGE * HUGE_PAGE;
    if hi > lo {
        // SAFETY: `[lo, hi)` lies inside an allocation that the caller (`huge_vec`) owns
        // exclusively and has not handed out yet; MADV_HUGEPAGE only changes the kernel's
        // paging policy for the range (never the contents or the validity of any memory),
        // and on failure (e.g. THP unavailable) it returns an error that is ignored: nothing
        // changes.
        unsafe {
            libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
        }
    }
}

/// Hints the CPU to bring `slice[i]` into the L2 cache (PREFETCHT1). Never faults and has no
/// effect on the program's results; a no-op off x86-64 and for `i` out of bounds (a hint to
/// an address outside the slice could cost a page walk for nothing).
///
/// For random reads over vectors of tens of MiB (the VOLE expander's taps, the OKVS rows):
/// issued a batch ahead, into L2 — which tracks many more outstanding misses than L1 — the
/// misses overlap. (In obliv-vole's expander T1 beat T0 clearly; NTA was no better than
/// T0 and T2 no better than T1: the `vole` bench compares them.)
#[inline(always)]
pub fn prefetch_l2<T>(slice: &[T], i: usize) {
    #[cfg(obliv_x86_simd)]
    if let Some(x) = slice.get(i) {
        prefetch_t1(core::ptr::from_ref(x).cast::<i8>());
    }
    #[cfg(not(obliv_x86_simd))]
    {
        let _ = (slice, i);
    }
}

/// PREFETCHT1 of the line holding `p`.
#[cfg(obliv_x86_simd)]
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch_t1(p: *const i8) {
    use core::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
    // SAFETY: `_mm_prefetch` needs only SSE, which is part of every x86-64 target (the
    // baseline `x86_64` target enables it), and PREFETCHh is a hint that never faults nor
    // reads memory architecturally, whatever the address.
    unsafe { _mm_prefetch::<_MM_HINT_T1>(p) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_vectors_behave_like_vectors() {
        let v: Vec<u64> = huge_vec(3 << 20);
        assert!(v.is_empty());
        assert!(v.capacity() >= 3 << 20);
        let w = huge_vec_filled(5 << 19, 7u32);
        assert_eq!(w.len(), 5 << 19);
        assert!(w.iter().all(|&x| x == 7));
        let small: Vec<u8> = huge_vec_filled(10, 1);
        assert_eq!(small, [1; 10]);
        assert!(huge_vec::<u128>(0).is_empty());
        // A hint, in or out of bounds, changes nothing.
        prefetch_l2(&w, 3);
        prefetch_l2(&w, w.len() + 1000);
        assert!(w.iter().all(|&x| x == 7));
    }
}
