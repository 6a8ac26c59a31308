//! The points of hashed secret messages (the PSI items) are not left in freed memory.
//!
//! `H(x)` reveals `x` to a dictionary search, so [`Point::hash_to_curve_many`] must not free
//! a copy of any point it computes (per-chunk vectors, lane outputs, a growing output vector)
//! without wiping it; only the returned vector, the caller's, holds them.
//!
//! This binary installs `obliv_testkit::TestAlloc`, which, while a scenario runs, looks for a known
//! secret (a "needle": the in-memory bytes of one hashed point) in every block of memory
//! before it is freed, and in the old block of every reallocation (which it always moves, so a
//! buffer that grows leaves its old copy behind for the check).
#![allow(clippy::unwrap_used)] // test code

use obliv_fourq::Point;
use obliv_testkit::TestAlloc;

/// The in-memory size of a point.
const POINT_BYTES: usize = 160;

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::new();

/// Runs `f` and returns how many freed blocks held `needle`; what `f` returns is dropped
/// after the count (it is the caller's).
fn freed_copies<R>(needle: &[u8], f: impl FnOnce() -> R) -> usize {
    obliv_testkit::freed_copies(&[needle], f).1
}

/// The in-memory bytes of a point (five pairs of 64-bit limbs: no padding).
fn point_bytes(p: &Point) -> Vec<u8> {
    const { assert!(size_of::<Point>() == POINT_BYTES) };
    // SAFETY: `Point` is `Copy` and made of `u64` limbs only (160 bytes, asserted), so every
    // byte of the value is initialised; the slice borrows `p` for the copy only.
    unsafe { std::slice::from_raw_parts((p as *const Point).cast::<u8>(), size_of::<Point>()) }
        .to_vec()
}

/// Regression: `hash_to_curve_many` collected the per-chunk vectors of points (and the
/// field elements the map starts from) through rayon, which freed them unwiped, together with
/// the smaller copies of the output vector it grew.
///
/// Every backend this CPU has, in turn: the lanes (AVX-512 IFMA, AVX-512F, AVX2), then the serial
/// code, switched off one after the other with `obliv_cpu::disable` (for the whole process:
/// this binary has this one test).
#[test]
fn hash_to_curve_many_leaves_no_freed_point() {
    // Several chunks of 64, the last one partial.
    let msgs: Vec<Vec<u8>> = (0u32..200)
        .map(|i| format!("private item {i}").into_bytes())
        .collect();
    let mut failures = Vec::new();
    for switch_off in ["avx512ifma", "avx512f", "avx2", ""] {
        let backend = Point::batch_backend();
        let points = Point::hash_to_curve_many(&msgs);
        for i in [0usize, 70, 199] {
            assert_eq!(points[i], Point::hash_to_curve(&msgs[i]));
            let needle = point_bytes(&points[i]);
            let found = freed_copies(&needle, || Point::hash_to_curve_many(&msgs));
            if found != 0 {
                failures.push(format!("{backend}: point {i} freed unwiped {found} times"));
            }
        }
        if !switch_off.is_empty() {
            obliv_cpu::disable(&[switch_off]).unwrap();
        }
    }
    assert_eq!(Point::batch_backend(), "serial");
    assert!(failures.is_empty(), "{failures:#?}");
}
