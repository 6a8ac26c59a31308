//! The public operations on [`Point`] that combine the curve with scalars and hashing.

use rayon::prelude::*;
use subtle::{ConditionallySelectable, CtOption};
use zeroize::Zeroize;

use crate::error::Error;
use crate::hash;
use crate::point::Point;
use crate::scalar::Scalar;
use crate::scalar_mul;

impl Point {
    /// `[k]G` for the generator `G`, constant time, with the precomputed signed radix-16 table
    /// of `G` (built once per process on first use, 24 KiB).
    pub fn mul_base(k: &Scalar) -> Point {
        scalar_mul::mul_base(&k.limbs())
    }

    /// Build the fixed-base table now instead of on the first [`Point::mul_base`].
    pub fn precompute_base_table() {
        scalar_mul::init_base_table();
    }

    /// `[k]P` in constant time with the four-dimensional GLV+GLS method of [CL15] (the
    /// operator `P * k` does the same).
    ///
    /// `P` must lie in the order-`N` subgroup, as every point from this crate's constructors
    /// and from [`Point::decode`] / [`Point::from_bytes`] does: the endomorphisms act as
    /// scalars only there. On a point from [`Point::from_bytes_unchecked_subgroup`] with a
    /// small-order component the result is not `[k]P` and its torsion part depends on the
    /// sub-scalars of `k`; untrusted encodings go through [`Point::decode`] or
    /// [`Point::mul_many_encoded_projecting`].
    ///
    /// [CL15]: https://eprint.iacr.org/2015/565
    pub fn mul(&self, k: &Scalar) -> Point {
        scalar_mul::mul_endo(self, &k.limbs())
    }

    /// `[k]P` by a plain constant-time signed 4-bit fixed window, without endomorphisms: the
    /// slower reference that [`Point::mul`] is tested against.
    pub fn mul_fixed_window(&self, k: &Scalar) -> Point {
        scalar_mul::mul_fixed_window(self, &k.limbs())
    }

    /// `[k]P_i` for every point, with one decomposition and recoding of `k` shared by all
    /// points, in chunks of 64 spread over the rayon thread pool. Constant time per point.
    ///
    /// On CPUs with AVX-512 (detected at run time, [`Point::batch_backend`]) eight points run
    /// through the digit sequence at once, one per vector lane, and four on CPUs with AVX2;
    /// otherwise the portable serial code runs. All give the same points.
    pub fn mul_many(k: &Scalar, points: &[Point]) -> Vec<Point> {
        let rec = scalar_mul::recode_u256(&k.limbs());
        points
            .par_chunks(BATCH)
            .flat_map_iter(|chunk| mul_chunk(&rec, chunk, false, Backend::Auto))
            .collect()
    }

    /// [`Point::mul_many`] followed by encoding: the ECDH-PSI step "raise every received point
    /// to my key and send it back".
    ///
    /// Points are processed in chunks of 64, each normalised with a single field inversion
    /// ([`Point::batch_to_bytes`]).
    pub fn mul_many_to_bytes(k: &Scalar, points: &[Point]) -> Vec<[u8; 32]> {
        mul_many_to_bytes_with(k, points, Backend::Auto)
    }

    /// [`Point::mul_many_to_bytes`] on the portable serial backend whatever the CPU: the
    /// reference the vector backend is tested against, and the baseline of the benches.
    pub fn mul_many_to_bytes_serial(k: &Scalar, points: &[Point]) -> Vec<[u8; 32]> {
        mul_many_to_bytes_with(k, points, Backend::Serial)
    }

    /// The backend the batch operations use on this CPU: `"avx512ifma"` (eight lanes of 52-bit
    /// multiply-adds), `"avx512f"` (eight lanes of `vpmuludq`: AVX-512 without IFMA, as on
    /// Skylake-class servers), `"avx2"` (four lanes) or `"serial"` (another architecture, a
    /// portable build, or the features switched off with `obliv_cpu::disable` /
    /// `OBLIV_CPU_DISABLE`: `avx512ifma` for the AVX-512F lanes, `avx512f` for the AVX2 lanes
    /// and `avx2` for the serial code).
    pub fn batch_backend() -> &'static str {
        crate::backend::vector::backend().unwrap_or("serial")
    }

    /// The serial code that [`Point::mul`] and the inversion of [`Point::to_bytes`] run on
    /// this CPU: `"avx2"` (a copy compiled with BMI2, ADX and AVX2, with GF(p²) products in
    /// `mulx` assembly), `"mulx"` (the portable code with those products: BMI2 without ADX) or
    /// `"portable"`.
    pub fn serial_backend() -> &'static str {
        crate::backend::serial::x86::serial_backend()
    }

    /// Decode peer encodings, project each onto the order-`N` subgroup and multiply by `k`:
    /// the cheap validation for the ECDH-PSI step "raise every received point to my key".
    ///
    /// For each encoding, in order:
    /// 1. a length other than 32 gives [`Error::InvalidLength`], a non-canonical or off-curve
    ///    encoding [`Error::InvalidEncoding`] (the on-curve decoding of
    ///    [`Point::from_bytes_unchecked_subgroup`], no subgroup check);
    /// 2. the point `P` is multiplied by the cofactor, `Q = [392]P` (8 doublings and 2
    ///    additions), which lies in the order-`N` subgroup for every curve point, because the
    ///    curve group has order `392·N` and its torsion part is killed by 392;
    /// 3. `R = [k']Q` with `k' = k·392⁻¹ mod N` (computed, decomposed and recoded once per call,
    ///    then wiped), by the constant-time CL15 multiplication with one shared recoding;
    /// 4. `R = O` gives [`Error::SmallOrder`], otherwise the encoding of `R` (the chunk is
    ///    normalised with one inversion, [`Point::batch_to_bytes`]).
    ///
    /// Why this is sound: write `P = P_N + T` with `P_N` in the subgroup and `T` of order
    /// dividing 392. Then `R = [k·392⁻¹·392]P_N = [k]P_N`. For a valid point (`T = O`) this is
    /// exactly `[k]P`, the output of [`Point::decode`] followed by [`Point::mul_many_to_bytes`]
    /// (tested byte for byte). For a point with a small-order component the torsion is dropped
    /// before `k` touches it, so the output depends only on `[k]P_N`: nothing about `k` modulo
    /// 2, 7, … leaks, which is what a subgroup check protects against in ECDH. A point whose
    /// prime-order part is the identity (the identity itself, or any of the 391 other
    /// small-order points) is rejected. What differs from the checked path: an encoding of
    /// `P_N + T` with `T ≠ O` is accepted (as `P_N`) instead of rejected, so a caller that
    /// must *detect* such inputs needs [`Point::decode`].
    ///
    /// `k = 0` is accepted and treated like any other scalar: each encoding gets the same
    /// error as for `k ≠ 0` (validity is a property of the encoding, never of `k`), and each
    /// valid one the encoding of `[0]P_N = O` ([`Point::IDENTITY`]`.to_bytes()`), as
    /// [`Point::decode`] followed by [`Point::mul_many_to_bytes`] gives for a valid point. The
    /// small-order test then runs on `[392⁻¹·1]Q` instead (a constant-time selection of the
    /// scalar, no branch on `k`), so a zero key does not turn every point into
    /// [`Error::SmallOrder`].
    ///
    /// Cost per point: decoding + 10 point operations + one multiplication, instead of
    /// decoding + a subgroup check (one more multiplication) + the multiplication, close to
    /// half the time; on a lane backend decoding, cofactor clearing and multiplication all run
    /// in the vector lanes, eight or four points per vector (figures in `docs/benchmarks.md`).
    /// Chunks of 64 run in parallel on rayon. Constant time in `k`; the validity of each point
    /// (public) decides only which error is reported.
    pub fn mul_many_encoded_projecting<E: AsRef<[u8]> + Sync>(
        k: &Scalar,
        encodings: &[E],
    ) -> Vec<Result<[u8; 32], Error>> {
        // For k = 0 the lanes multiply by 1 instead (so that the small-order test below still
        // sees [392⁻¹]Q), and every output is replaced by the identity: both by masks.
        let k_zero = k.is_zero();
        let mut k_eff = Scalar::conditional_select(k, &Scalar::ONE, k_zero);
        let mut kp = k_eff.mul(&Scalar(crate::constants::INV_COFACTOR));
        let mut limbs = kp.limbs();
        let rec = scalar_mul::recode_u256(&limbs);
        limbs.zeroize();
        kp.zeroize();
        k_eff.zeroize();
        encodings
            .par_chunks(BATCH)
            .flat_map_iter(|chunk| {
                let (decoded, mut rs) = decode_mul_chunk(&rec, chunk, Backend::Auto);
                let small: Vec<bool> = rs
                    .iter_mut()
                    .zip(&decoded)
                    .map(|(r, d)| {
                        // O, or the degenerate (0:0:0) of the isogeny formulas, which cannot
                        // arise from a subgroup point but must never reach the batch inversion;
                        // the meaningless result of a rejected encoding is replaced too.
                        let bad = r.is_identity() | r.z.is_zero();
                        let replace = bad | k_zero | subtle::Choice::from(u8::from(d.is_err()));
                        r.conditional_assign(&Point::IDENTITY, replace);
                        // Public: `R = O` only when the input's prime-order part is (k' ≠ 0).
                        bool::from(obliv_cpu::ctgrind::declassify(bad))
                    })
                    .collect();
                let enc = Point::batch_to_bytes(&rs);
                decoded
                    .into_iter()
                    .zip(small)
                    .zip(enc)
                    .map(|((d, s), e)| match d {
                        Err(err) => Err(err),
                        Ok(_) if s => Err(Error::SmallOrder),
                        Ok(_) => Ok(e),
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// `[a]G + [b]P`. **Variable time** in `a`, `b` and `P`: safe only when all three are
    /// public, as in signature verification; never pass a secret scalar.
    pub fn vartime_double_mul_base(a: &Scalar, p: &Point, b: &Scalar) -> Point {
        scalar_mul::double_mul_vartime(&a.limbs(), p, &b.limbs())
    }

    /// Hash bytes to a point of the order-`N` subgroup: FourQlib's constant-time map applied
    /// to `SHA-512(msg)` reduced into GF(p²), then cofactor clearing (see the `hash` module
    /// docs for the exact construction).
    ///
    /// Safe on secret messages (the PSI items): no branch and no memory index depends on the
    /// message contents (the map's two square-root choices are masked selections); the time
    /// depends on the message length only, through the number of SHA-512 blocks.
    pub fn hash_to_curve(msg: &[u8]) -> Point {
        hash::map_and_clear(&hash::hash_to_fp2(msg))
    }

    /// Hash many messages: [`Point::hash_to_curve`] of each, in chunks of 64 on rayon. With
    /// AVX-512 IFMA (AVX2) the map and the cofactor clearing run eight (four) messages at a
    /// time in vector lanes (the same points as the serial code); SHA-512 stays serial.
    ///
    /// The points of secret messages (PSI items) reveal them to a dictionary search: the
    /// returned vector is the caller's to wipe ([`Zeroize`]), and no other copy is left in
    /// freed memory (the per-chunk field elements and lane outputs are wiped once per chunk,
    /// and the output is written in place, never reallocated).
    pub fn hash_to_curve_many<M: AsRef<[u8]> + Sync>(msgs: &[M]) -> Vec<Point> {
        let mut out = vec![Point::IDENTITY; msgs.len()];
        out.par_chunks_mut(BATCH)
            .zip(msgs.par_chunks(BATCH))
            .for_each(|(o, chunk)| {
                let mut r: Vec<_> = chunk
                    .iter()
                    .map(|m| hash::hash_to_fp2(m.as_ref()))
                    .collect();
                let lanes = if use_vector(Backend::Auto) {
                    crate::backend::vector::map_and_clear_many(&r)
                } else {
                    None
                };
                if let Some(mut p) = lanes {
                    o.copy_from_slice(&p);
                    p.zeroize();
                } else {
                    for (o, r) in o.iter_mut().zip(&r) {
                        *o = hash::map_and_clear(r);
                    }
                }
                r.zeroize();
            });
        out
    }

    /// FourQlib's `HashToCurve` on 32 bytes read as `r0 ‖ r1` (16 bytes each, little-endian,
    /// reduced modulo p), then cofactor clearing: the same point FourQlib (and SecretFlow,
    /// which passes the first 32 bytes of `SHA-512(msg)`) produces.
    pub fn hash_to_curve_fourqlib_compat(bytes: &[u8; 32]) -> Point {
        hash::map_and_clear(&hash::fourqlib_bytes_to_fp2(bytes))
    }

    /// Decode from a slice with a typed error: wrong length, non-canonical or off-curve
    /// encoding, or a point outside the prime-order subgroup.
    pub fn decode(bytes: &[u8]) -> Result<Point, Error> {
        let p = decode_on_curve(bytes)?;
        if p.is_torsion_free_vartime() {
            Ok(p)
        } else {
            Err(Error::NotInSubgroup)
        }
    }

    /// Decode many encodings in parallel (each as [`Point::from_bytes`]).
    pub fn from_bytes_many(encodings: &[[u8; 32]]) -> Vec<CtOption<Point>> {
        encodings.par_iter().map(Point::from_bytes).collect()
    }
}

/// Points per rayon task in the batch operations (each normalised with one inversion).
const BATCH: usize = 64;

/// Which backend a batch call uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Backend {
    /// The vector backend when the CPU has it, else serial.
    Auto,
    /// Always the portable serial code.
    Serial,
}

/// Is the vector backend used by default? Yes when the CPU has it (it is several times
/// faster than the serial code; the `fourq` bench compares them) and it is not switched off
/// through `obliv-cpu` (asked on every batch call, which costs a few relaxed loads).
fn vector_by_default() -> bool {
    crate::backend::vector::backend().is_some()
}

fn use_vector(b: Backend) -> bool {
    b == Backend::Auto && vector_by_default()
}

/// `[k]P_i` (or `[k]([392]P_i)`) for one chunk, on the chosen backend.
fn mul_chunk(
    rec: &scalar_mul::Recoded,
    pts: &[Point],
    clear_cofactor: bool,
    backend: Backend,
) -> Vec<Point> {
    if use_vector(backend)
        && let Some(r) = crate::backend::vector::mul_many_recoded(rec, pts, clear_cofactor)
    {
        return r;
    }
    pts.iter()
        .map(|p| {
            let q = if clear_cofactor {
                p.mul_by_cofactor()
            } else {
                *p
            };
            crate::backend::serial::x86::mul_recoded(&q, rec)
        })
        .collect()
}

/// Decode one chunk of peer encodings on the curve and compute `[k]([392]P)` for each: in
/// lanes (decoding included) when the vector backend runs, else serially. Returns the
/// decoding result per encoding and the products (meaningless where decoding failed).
fn decode_mul_chunk<E: AsRef<[u8]>>(
    rec: &scalar_mul::Recoded,
    chunk: &[E],
    backend: Backend,
) -> (Vec<Result<(), Error>>, Vec<Point>) {
    if use_vector(backend) {
        let mut lengths = Vec::with_capacity(chunk.len());
        let arrays: Vec<[u8; 32]> = chunk
            .iter()
            .map(|e| {
                let e = e.as_ref();
                let arr = <[u8; 32]>::try_from(e);
                lengths.push(arr.map(|_| ()).map_err(|_| Error::InvalidLength {
                    expected: 32,
                    got: e.len(),
                }));
                arr.unwrap_or([0u8; 32])
            })
            .collect();
        if let Some(r) = crate::backend::vector::decode_mul_many(rec, &arrays) {
            let (pts, ok): (Vec<Point>, Vec<bool>) = r.into_iter().unzip();
            let decoded = lengths
                .into_iter()
                .zip(ok)
                .map(|(l, ok)| {
                    l.and(if ok {
                        Ok(())
                    } else {
                        Err(Error::InvalidEncoding)
                    })
                })
                .collect();
            return (decoded, pts);
        }
    }
    let decoded: Vec<Result<Point, Error>> =
        chunk.iter().map(|e| decode_on_curve(e.as_ref())).collect();
    // Rejected encodings get a placeholder (their output is discarded).
    let pts: Vec<Point> = decoded
        .iter()
        .map(|d| d.unwrap_or(Point::IDENTITY))
        .collect();
    let rs = mul_chunk(rec, &pts, true, Backend::Serial);
    (decoded.into_iter().map(|d| d.map(|_| ())).collect(), rs)
}

fn mul_many_to_bytes_with(k: &Scalar, points: &[Point], backend: Backend) -> Vec<[u8; 32]> {
    let rec = scalar_mul::recode_u256(&k.limbs());
    points
        .par_chunks(BATCH)
        .flat_map_iter(|chunk| Point::batch_to_bytes(&mul_chunk(&rec, chunk, false, backend)))
        .collect()
}

/// Length check and on-curve decoding ([`Point::from_bytes_unchecked_subgroup`]).
fn decode_on_curve(bytes: &[u8]) -> Result<Point, Error> {
    let arr: &[u8; 32] = bytes.try_into().map_err(|_| Error::InvalidLength {
        expected: 32,
        got: bytes.len(),
    })?;
    Option::<Point>::from(Point::from_bytes_unchecked_subgroup(arr)).ok_or(Error::InvalidEncoding)
}

impl core::ops::Mul<&Scalar> for &Point {
    type Output = Point;
    fn mul(self, k: &Scalar) -> Point {
        Point::mul(self, k)
    }
}

impl core::ops::Mul<&Point> for &Scalar {
    type Output = Point;
    fn mul(self, p: &Point) -> Point {
        Point::mul(p, self)
    }
}

impl core::ops::Mul<Scalar> for Point {
    type Output = Point;
    fn mul(self, k: Scalar) -> Point {
        Point::mul(&self, &k)
    }
}

impl core::ops::Mul<&Scalar> for Point {
    type Output = Point;
    fn mul(self, k: &Scalar) -> Point {
        Point::mul(&self, k)
    }
}

impl core::ops::Mul<Point> for Scalar {
    type Output = Point;
    fn mul(self, p: Point) -> Point {
        Point::mul(&p, &self)
    }
}

impl core::ops::MulAssign<Scalar> for Point {
    fn mul_assign(&mut self, k: Scalar) {
        *self = Point::mul(self, &k);
    }
}

impl core::ops::MulAssign<&Scalar> for Point {
    fn mul_assign(&mut self, k: &Scalar) {
        *self = Point::mul(self, k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constants::{INV_COFACTOR, ORDER};
    use crate::hash::{hash_to_fp2, map_to_curve};
    use proptest::prelude::*;

    /// A few points of small order: `[N]R` for points `R` of the whole curve group, and the
    /// order-2 point `(0, −1)`.
    fn torsion() -> Vec<Point> {
        let mut ts: Vec<Point> = (0u32..6)
            .map(|i| {
                let r = map_to_curve(&hash_to_fp2(&i.to_le_bytes()));
                scalar_mul::mul_vartime_u256(&r, &ORDER)
            })
            .filter(|t| !t.is_identity_vartime())
            .collect();
        let two = Point::from_affine(crate::field::Fp2::ZERO, crate::field::Fp2::ONE.neg());
        assert!(two.is_valid() && two.double().is_identity_vartime());
        ts.push(two);
        assert!(ts.len() >= 4);
        ts
    }

    fn scalar() -> impl Strategy<Value = Scalar> {
        prop_oneof![
            any::<[u8; 64]>().prop_map(|b| Scalar::from_bytes_mod_order_wide(&b)),
            Just(Scalar::ONE),
            Just(-Scalar::ONE),
            Just(Scalar::from_u64(392)),
        ]
    }

    fn scalar_or_edge() -> impl Strategy<Value = Scalar> {
        prop_oneof![scalar(), Just(Scalar::ZERO)]
    }

    #[test]
    fn backend_reported() {
        let want = crate::backend::vector::backend().unwrap_or("serial");
        assert_eq!(Point::batch_backend(), want);
        eprintln!(
            "obliv-fourq on this CPU: batch backend {want}, serial copy {}",
            Point::serial_backend()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        /// The default backend (the lanes of IFMA or AVX2 where the CPU has them) gives byte-identical
        /// output to the serial code, for random and edge scalars (0, 1, N−1, 392) and lengths
        /// that are not multiples of 8 or of the chunk size 64.
        #[test]
        fn vector_equals_serial(
            k in scalar_or_edge(),
            n in prop_oneof![0usize..20, Just(63usize), Just(65usize), Just(131usize)],
            m in any::<u64>(),
        ) {
            let pts: Vec<Point> = (0..n as u64)
                .map(|i| Point::hash_to_curve(&m.wrapping_add(i).to_le_bytes()))
                .collect();
            prop_assert_eq!(
                Point::mul_many_to_bytes(&k, &pts),
                Point::mul_many_to_bytes_serial(&k, &pts)
            );
            let many = Point::mul_many(&k, &pts);
            let rec = scalar_mul::recode_u256(&k.limbs());
            for (p, q) in pts.iter().zip(&many) {
                prop_assert_eq!(*q, scalar_mul::mul_many_recoded(&rec, p));
            }
            // The projecting path's chunk kernel (cofactor clearing in lanes) on points with
            // a small-order component, against the serial kernel.
            let ts = torsion();
            let shifted: Vec<Point> =
                pts.iter().enumerate().map(|(i, p)| p + ts[i % ts.len()]).collect();
            // The whole projecting chunk (decoding in lanes) against the serial one, on
            // valid, shifted, small-order, off-curve and short encodings.
            let mut encs: Vec<Vec<u8>> = shifted.iter().map(|p| p.to_bytes().to_vec()).collect();
            encs.extend(pts.iter().map(|p| p.to_bytes().to_vec()));
            encs.extend(ts.iter().map(|t| t.to_bytes().to_vec()));
            encs.push(vec![2; 32]);
            encs.push(vec![1; 31]);
            let (dv, rv) = decode_mul_chunk(&rec, &encs, Backend::Auto);
            let (ds, rs) = decode_mul_chunk(&rec, &encs, Backend::Serial);
            prop_assert_eq!(&dv, &ds);
            for ((a, b), d) in rv.iter().zip(&rs).zip(&dv) {
                if d.is_ok() {
                    prop_assert_eq!(a, b);
                }
            }
            let v = mul_chunk(&rec, &shifted, true, Backend::Auto);
            let s = mul_chunk(&rec, &shifted, true, Backend::Serial);
            prop_assert_eq!(Point::batch_to_bytes(&v), Point::batch_to_bytes(&s));
        }
    }

    /// Exhaustive over all 392 points of `E[392]` (including the four where the φ/ψ formulas
    /// degenerate): alone each is rejected as small order, added to a subgroup point it is
    /// projected away; on the default backend (vector lanes where the CPU has them) and the
    /// serial one.
    #[test]
    fn projection_exhaustive_on_torsion() {
        let ts = crate::hash::torsion_tests::torsion_points();
        assert_eq!(ts.len(), 392);
        let k = Scalar::from_u64(0xfeed_beef_1234);
        let p = Point::hash_to_curve(b"projection");
        let want = (p * k).to_bytes();
        let alone: Vec<[u8; 32]> = ts.iter().map(Point::to_bytes).collect();
        let shifted: Vec<[u8; 32]> = ts.iter().map(|t| (p + t).to_bytes()).collect();
        for r in Point::mul_many_encoded_projecting(&k, &alone) {
            assert_eq!(r, Err(Error::SmallOrder));
        }
        for r in Point::mul_many_encoded_projecting(&k, &shifted) {
            assert_eq!(r, Ok(want));
        }
        let rec = scalar_mul::recode_u256(&k.mul(&Scalar(INV_COFACTOR)).limbs());
        let (d, r) = decode_mul_chunk(&rec, &shifted, Backend::Serial);
        assert!(d.iter().all(Result::is_ok));
        assert!(r.iter().all(|q| q.to_bytes() == want));
    }

    /// `k = 0`: valid points (with or without a small-order component) give the identity's
    /// encoding, as `decode` + `mul_many_to_bytes` does for valid points; small-order and
    /// malformed encodings get the same errors as for any other scalar.
    #[test]
    fn zero_scalar_gives_identity_and_the_usual_errors() {
        let ts = torsion();
        let pts: Vec<Point> = (0u8..20).map(|i| Point::hash_to_curve(&[i])).collect();
        let mut enc: Vec<Vec<u8>> = pts.iter().map(|p| p.to_bytes().to_vec()).collect();
        enc.extend(
            pts.iter()
                .zip(ts.iter().cycle())
                .map(|(p, t)| (p + t).to_bytes().to_vec()),
        );
        enc.extend(ts.iter().map(|t| t.to_bytes().to_vec()));
        enc.push(Point::IDENTITY.to_bytes().to_vec());
        enc.push(vec![2; 32]);
        enc.push(vec![1; 31]);
        let zero = Point::mul_many_encoded_projecting(&Scalar::ZERO, &enc);
        let one = Point::mul_many_encoded_projecting(&Scalar::ONE, &enc);
        let checked = Point::mul_many_to_bytes(&Scalar::ZERO, &pts);
        assert!(checked.iter().all(|e| *e == Point::IDENTITY.to_bytes()));
        assert_eq!(zero.len(), enc.len());
        for (i, (z, o)) in zero.iter().zip(&one).enumerate() {
            match o {
                Ok(_) => assert_eq!(*z, Ok(Point::IDENTITY.to_bytes()), "encoding {i}"),
                Err(e) => assert_eq!(z, &Err(*e), "encoding {i}"),
            }
        }
        assert!(one[..2 * pts.len()].iter().all(Result::is_ok));
        assert_eq!(
            zero[..pts.len()],
            checked.into_iter().map(Ok).collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn inverse_cofactor() {
        assert_eq!(
            Scalar::from_u64(392).mul(&Scalar(INV_COFACTOR)).limbs(),
            Scalar::ONE.limbs()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Valid points: byte-identical to decode (with the subgroup check) + mul_many_to_bytes.
        #[test]
        fn projecting_equals_checked_path(
            k in scalar(),
            msgs in proptest::collection::vec(any::<[u8; 8]>(), 0..70),
        ) {
            let pts: Vec<Point> = msgs.iter().map(|m| Point::hash_to_curve(m)).collect();
            let enc: Vec<[u8; 32]> = pts.iter().map(Point::to_bytes).collect();
            let checked: Vec<Point> = enc.iter().map(|e| Point::decode(e).unwrap()).collect();
            let want = Point::mul_many_to_bytes(&k, &checked);
            let got: Vec<[u8; 32]> = Point::mul_many_encoded_projecting(&k, &enc)
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
            prop_assert_eq!(got, want);
        }

        /// `P + T` with `T` of small order gives exactly the output of `P`.
        #[test]
        fn torsion_component_is_dropped(k in scalar(), m in any::<[u8; 8]>()) {
            let p = Point::hash_to_curve(&m);
            let mut enc = vec![p.to_bytes()];
            for t in torsion() {
                let q = p + t;
                prop_assert!(!q.is_torsion_free_vartime());
                prop_assert_eq!(Point::decode(&q.to_bytes()), Err(Error::NotInSubgroup));
                enc.push(q.to_bytes());
            }
            let out = Point::mul_many_encoded_projecting(&k, &enc);
            let want = (p * k).to_bytes();
            for r in out {
                prop_assert_eq!(r, Ok(want));
            }
        }
    }

    #[test]
    fn small_order_and_bad_encodings_rejected() {
        let k = Scalar::from_u64(0x1234_5678_9abc);
        let g = Point::generator();
        let mut enc: Vec<Vec<u8>> = vec![Point::IDENTITY.to_bytes().to_vec()];
        let ts = torsion();
        enc.extend(ts.iter().map(|t| t.to_bytes().to_vec()));
        // Off the curve: y = 2 has no x on FourQ (checked by the decoder below).
        let mut off = [0u8; 32];
        off[0] = 2;
        assert!(bool::from(
            Point::from_bytes_unchecked_subgroup(&off).is_none()
        ));
        enc.push(off.to_vec());
        let mut noncanon = [0xffu8; 32];
        noncanon[15] = 0x7f;
        noncanon[31] = 0x00;
        enc.push(noncanon.to_vec());
        enc.push(g.to_bytes()[..31].to_vec());
        enc.push(g.to_bytes().to_vec());
        let out = Point::mul_many_encoded_projecting(&k, &enc);
        for r in &out[..1 + ts.len()] {
            assert_eq!(*r, Err(Error::SmallOrder));
        }
        let n = out.len();
        assert_eq!(out[n - 4], Err(Error::InvalidEncoding));
        assert_eq!(out[n - 3], Err(Error::InvalidEncoding));
        assert_eq!(
            out[n - 2],
            Err(Error::InvalidLength {
                expected: 32,
                got: 31
            })
        );
        assert_eq!(out[n - 1], Ok((g * k).to_bytes()));
        // The same errors (for the same inputs) as the checked decoder, except that the
        // decoder accepts the identity encoding as a point and rejects torsion points as
        // outside the subgroup.
        for e in &enc[enc.len() - 4..enc.len() - 1] {
            assert!(matches!(
                Point::decode(e),
                Err(Error::InvalidEncoding | Error::InvalidLength { .. })
            ));
        }
    }
}
