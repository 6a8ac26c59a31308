//! SIMD backends for the same-scalar batch: eight points in the lanes of AVX-512 IFMA
//! registers ([`ifma`]), chosen at run time, with the portable serial code as the fallback.
#![allow(unsafe_code)]

#[cfg(obliv_x86_simd)]
pub(crate) mod ifma;

use crate::field::Fp2;
use crate::point::Point;
use crate::scalar_mul::Recoded;

obliv_cpu::feature_set! {
    /// The eight-lane kernels of [`ifma`].
    pub(crate) mod ifma_set = ["avx512f", "avx512ifma"];
}

/// Does this CPU run the IFMA backend (every feature of [`ifma_set`], none switched off)?
pub(crate) fn ifma_available() -> bool {
    ifma_set::detected()
}

/// `[k]P_i` (or `[k]([392]P_i)` with `clear_cofactor`) for every point with the IFMA backend,
/// eight at a time (the last group padded with the generator); `None` when the CPU lacks it.
pub(crate) fn mul_many_recoded(
    rec: &Recoded,
    points: &[Point],
    clear_cofactor: bool,
) -> Option<Vec<Point>> {
    #[cfg(obliv_x86_simd)]
    if ifma_available() {
        let mut out = Vec::with_capacity(points.len());
        for group in points.chunks(ifma::LANES) {
            let mut lanes = [Point::generator(); ifma::LANES];
            lanes[..group.len()].copy_from_slice(group);
            // SAFETY: ifma_available() has just confirmed that the CPU supports avx512f and
            // avx512ifma, the target features `mul8` is compiled for.
            let r = unsafe { ifma::mul8(rec, &lanes, clear_cofactor) };
            out.extend_from_slice(&r[..group.len()]);
        }
        return Some(out);
    }
    let _ = (rec, points, clear_cofactor);
    None
}

/// `[392]·M(r_i)` (the hash to the curve after SHA-512) for every field element with the IFMA
/// backend, eight at a time; `None` when the CPU lacks it.
pub(crate) fn map_and_clear_many(r: &[Fp2]) -> Option<Vec<Point>> {
    #[cfg(obliv_x86_simd)]
    if ifma_available() {
        let mut out = Vec::with_capacity(r.len());
        for group in r.chunks(ifma::LANES) {
            let mut lanes = [Fp2::ZERO; ifma::LANES];
            lanes[..group.len()].copy_from_slice(group);
            // SAFETY: ifma_available() has just confirmed that the CPU supports avx512f and
            // avx512ifma, the target features `map_and_clear8` is compiled for.
            let p = unsafe { ifma::map_and_clear8(&lanes) };
            out.extend_from_slice(&p[..group.len()]);
        }
        return Some(out);
    }
    let _ = r;
    None
}

/// For every 32-byte encoding: on-curve decoding, cofactor clearing and `[k]·` with the IFMA
/// backend, eight at a time; per encoding the point and whether it decoded (the point of an
/// invalid encoding is meaningless). `None` when the CPU lacks the backend.
pub(crate) fn decode_mul_many(rec: &Recoded, enc: &[[u8; 32]]) -> Option<Vec<(Point, bool)>> {
    #[cfg(obliv_x86_simd)]
    if ifma_available() {
        let mut out = Vec::with_capacity(enc.len());
        for group in enc.chunks(ifma::LANES) {
            let mut lanes = [[0u8; 32]; ifma::LANES];
            lanes[..group.len()].copy_from_slice(group);
            // SAFETY: ifma_available() has just confirmed that the CPU supports avx512f and
            // avx512ifma, the target features `decode_mul8` is compiled for.
            let (p, ok) = unsafe { ifma::decode_mul8(rec, &lanes) };
            out.extend(p.into_iter().zip(ok).take(group.len()));
        }
        return Some(out);
    }
    let _ = (rec, enc);
    None
}
