//! SIMD backends for the same-scalar batch and the batch hash: eight points in the lanes of
//! AVX-512 IFMA registers ([`ifma`], radix 2⁴³), eight in AVX-512F registers without IFMA
//! ([`avx512`]) or four in AVX2 registers ([`avx2`]) (both radix 2^25.5, `radix26.rs`), chosen
//! at run time in that order, with the portable serial code as the fallback. Every backend
//! compiles the same point formulas and kernels (`kernels.rs`) over its own lane field, and
//! runs the same tests (`lane_tests.rs`) against the serial code.
#![allow(unsafe_code)]

#[cfg(obliv_x86_simd)]
pub(crate) mod avx2;
#[cfg(obliv_x86_simd)]
pub(crate) mod avx512;
#[cfg(obliv_x86_simd)]
pub(crate) mod ifma;

use crate::field::Fp2;
use crate::point::Point;
use crate::scalar_mul::Recoded;

obliv_cpu::feature_set! {
    /// The eight-lane kernels of [`ifma`].
    pub(crate) mod ifma_set = ["avx512f", "avx512ifma"];
}

obliv_cpu::feature_set! {
    /// The eight-lane kernels of [`avx512`] (AVX-512 without IFMA).
    pub(crate) mod avx512_set = ["avx512f"];
}

obliv_cpu::feature_set! {
    /// The four-lane kernels of [`avx2`].
    pub(crate) mod avx2_set = ["avx2"];
}

/// The lane backend the batch operations use on this CPU, if any: `"avx512ifma"` (every
/// feature of [`ifma_set`], none switched off), `"avx512f"` (of [`avx512_set`]) or `"avx2"`
/// (of [`avx2_set`]).
pub(crate) fn backend() -> Option<&'static str> {
    if ifma_set::detected() {
        Some("avx512ifma")
    } else if avx512_set::detected() {
        Some("avx512f")
    } else if avx2_set::detected() {
        Some("avx2")
    } else {
        None
    }
}

/// Runs `f` on `items` in groups of `N` (the last one padded with `pad`), keeping the results
/// of the real items.
#[cfg(obliv_x86_simd)]
fn in_groups<T: Copy, R: Copy, const N: usize>(
    items: &[T],
    pad: T,
    mut f: impl FnMut(&[T; N]) -> [R; N],
) -> Vec<R> {
    let mut out = Vec::with_capacity(items.len());
    for group in items.chunks(N) {
        let mut lanes = [pad; N];
        lanes[..group.len()].copy_from_slice(group);
        out.extend_from_slice(&f(&lanes)[..group.len()]);
    }
    out
}

/// The per-lane points and validity flags of a decoding kernel, as pairs.
#[cfg(obliv_x86_simd)]
fn zip_lanes<const N: usize>((p, ok): ([Point; N], [bool; N])) -> [(Point, bool); N] {
    core::array::from_fn(|i| (p[i], ok[i]))
}

/// `[k]P_i` (or `[k]([392]P_i)` with `clear_cofactor`) for every point on the lane backend;
/// `None` when the CPU has none.
pub(crate) fn mul_many_recoded(
    rec: &Recoded,
    points: &[Point],
    clear_cofactor: bool,
) -> Option<Vec<Point>> {
    #[cfg(obliv_x86_simd)]
    {
        let pad = Point::generator();
        if ifma_set::detected() {
            // SAFETY: ifma_set::detected() has just confirmed every feature `mul_lanes` of the
            // IFMA backend is compiled with.
            return Some(in_groups(points, pad, |l| unsafe {
                ifma::mul_lanes(rec, l, clear_cofactor)
            }));
        }
        if avx512_set::detected() {
            // SAFETY: avx512_set::detected() has just confirmed every feature `mul_lanes` of the
            // AVX-512F backend is compiled with.
            return Some(in_groups(points, pad, |l| unsafe {
                avx512::mul_lanes(rec, l, clear_cofactor)
            }));
        }
        if avx2_set::detected() {
            // SAFETY: avx2_set::detected() has just confirmed every feature `mul_lanes` of the
            // AVX2 backend is compiled with.
            return Some(in_groups(points, pad, |l| unsafe {
                avx2::mul_lanes(rec, l, clear_cofactor)
            }));
        }
    }
    let _ = (rec, points, clear_cofactor);
    None
}

/// `[392]·M(r_i)` (the hash to the curve after SHA-512) for every field element on the lane
/// backend; `None` when the CPU has none.
pub(crate) fn map_and_clear_many(r: &[Fp2]) -> Option<Vec<Point>> {
    #[cfg(obliv_x86_simd)]
    {
        if ifma_set::detected() {
            // SAFETY: as in `mul_many_recoded`.
            return Some(in_groups(r, Fp2::ZERO, |l| unsafe {
                ifma::map_and_clear_lanes(l)
            }));
        }
        if avx512_set::detected() {
            // SAFETY: as in `mul_many_recoded`.
            return Some(in_groups(r, Fp2::ZERO, |l| unsafe {
                avx512::map_and_clear_lanes(l)
            }));
        }
        if avx2_set::detected() {
            // SAFETY: as in `mul_many_recoded`.
            return Some(in_groups(r, Fp2::ZERO, |l| unsafe {
                avx2::map_and_clear_lanes(l)
            }));
        }
    }
    let _ = r;
    None
}

/// For every 32-byte encoding: on-curve decoding, cofactor clearing and `[k]·` on the lane
/// backend; per encoding the point and whether it decoded (the point of an invalid encoding is
/// meaningless). `None` when the CPU has no lane backend.
pub(crate) fn decode_mul_many(rec: &Recoded, enc: &[[u8; 32]]) -> Option<Vec<(Point, bool)>> {
    #[cfg(obliv_x86_simd)]
    {
        if ifma_set::detected() {
            return Some(in_groups(enc, [0u8; 32], |l| {
                // SAFETY: as in `mul_many_recoded`.
                zip_lanes(unsafe { ifma::decode_mul_lanes(rec, l) })
            }));
        }
        if avx512_set::detected() {
            return Some(in_groups(enc, [0u8; 32], |l| {
                // SAFETY: as in `mul_many_recoded`.
                zip_lanes(unsafe { avx512::decode_mul_lanes(rec, l) })
            }));
        }
        if avx2_set::detected() {
            return Some(in_groups(enc, [0u8; 32], |l| {
                // SAFETY: as in `mul_many_recoded`.
                zip_lanes(unsafe { avx2::decode_mul_lanes(rec, l) })
            }));
        }
    }
    let _ = (rec, enc);
    None
}
