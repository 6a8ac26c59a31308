//! Curve25519 as the prime-order group ristretto255 (RFC 9496) on curve25519-dalek.
//!
//! # Ristretto255 and X25519-style Montgomery arithmetic
//!
//! ECDH-PSI needs a group of prime order: with the cofactor-8 curve a malicious peer could
//! send `H(x) + T` for a small-order `T` and learn `x`-dependent bits from the answer, so an
//! X25519-style design has to clear the cofactor (three doublings) and check subgroup
//! membership of every received point. Ristretto255 gives a prime-order group with a
//! canonical 32-byte encoding whose decoder rejects everything else, at the cost of one
//! inverse square root per encode and per decode — the same cost as the affine conversion an
//! X25519 ladder needs. dalek's variable-base multiplication (its AVX2 backend, picked at run
//! time; its AVX-512 IFMA backend is only compiled in under `-C target-feature=+avx512ifma,+avx512vl`) is
//! faster than its Montgomery ladder (`MontgomeryPoint::mul_clamped`, serial field arithmetic
//! only); the `ec` bench measures both (`25519/x25519_ladder` vs `25519/mul`). With both in
//! eight AVX-512 IFMA lanes (this module's batches, and [`crate::X25519`]'s Montgomery ladder)
//! the multiplications cost the same (4S + 5M per scalar bit either way), but X25519's
//! on-curve test is a Legendre symbol, which its batches share across a chunk, while each
//! Ristretto decoding needs its own square root, so X25519 decodes, multiplies and encodes
//! faster (the `x25519_batch_cpu` example times both; figures in `docs/benchmarks.md`). So [`crate::Curve::Curve25519`] is
//! [`crate::X25519`], and this group is [`crate::Curve::Ristretto255`]: a true prime-order
//! group with addition, whose decoder rejects instead of projecting torsion, and the faster of
//! the two on CPUs without AVX-512 IFMA (dalek's AVX2 backend). The hash is
//! RFC 9380's `ristretto255_XMD:SHA-512_R255MAP_RO_`: `expand_message_xmd(msg, DST, 64)` with
//! SHA-512, then RFC 9496 §4.3.4 element derivation (two Elligator maps and a sum), which is
//! indifferentiable from a random oracle.
//!
//! # Batch paths: eight AVX-512 IFMA lanes, dalek as the fallback
//!
//! The three batch steps — [`PrimeGroup::mul_and_encode_chunk`],
//! [`PrimeGroup::decode_mul_and_encode_chunk`] and [`PrimeGroup::hash_mul_and_encode_chunk`] —
//! run on this crate's eight-lane AVX-512 IFMA kernel (`ifma25519`: GF(2^255 − 19) in radix
//! 2^51 with one point per 64-bit lane, the scalar recoded once per chunk, a constant-time
//! table scan per digit, RFC 9496 decoding and Elligator maps in lanes, and the outputs
//! encoded as `[2]([k/2]P)` with one shared inversion per chunk) when the CPU has
//! `avx512f`, `avx512dq` and `avx512ifma` (checked at run time on every call) and none of them
//! is switched off (`OBLIV_CPU_DISABLE=avx512ifma` or `obliv_cpu::disable`, which read and
//! set the `obliv-cpu` crate's switches); [`Ristretto255::batch_backend`] says which. Every
//! output is byte-identical to the dalek path ([`Ristretto255::mul_and_encode_chunk_dalek`],
//! [`Ristretto255::decode_mul_and_encode_chunk_dalek`]), which the tests check on random and
//! edge inputs. A chunk with an invalid peer encoding is redone on the dalek path, so the
//! errors (and the index they name) are the same too.
//!
//! On the dalek path, [`PrimeGroup::mul_and_encode_chunk`] computes `[k/2]P` for each point
//! and then `double_and_compress_batch`, which encodes `[2][k/2]P = [k]P` for a whole chunk
//! with a single shared inversion. dalek keeps point coordinates private, so the lanes take
//! points from it as the encodings of `2P` from that same batched encoder and multiply them by
//! `k/2`.

use crate::{Error, PrimeGroup, SecretScalar, scalar25519};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use k256::hash2curve::ExpandMsgXmd;
use rand_core::CryptoRng;
use sha2::Sha512;
use zeroize::Zeroizing;

/// The ristretto255 group (RFC 9496) on Curve25519, via curve25519-dalek.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ristretto255;

/// `2^{-1} mod ℓ` as a canonical little-endian scalar: `(ℓ + 1) / 2`.
const INV_TWO: [u8; 32] = [
    0xf7, 0xe9, 0x7a, 0x2e, 0x8d, 0x31, 0x09, 0x2c, 0x6b, 0xce, 0x7b, 0x51, 0xef, 0x7c, 0x6f, 0x0a,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08,
];

/// The eight-lane AVX-512 IFMA backend, if this CPU has it and it is not switched off
/// (`OBLIV_CPU_DISABLE=avx512ifma` or `obliv_cpu::disable(&["avx512ifma"])`); asked on every
/// call.
#[cfg(obliv_x86_simd)]
pub(crate) fn ifma() -> Option<crate::ifma25519::Ifma> {
    crate::ifma25519::Ifma::detect()
}

impl Ristretto255 {
    /// Which backend the batch paths ([`PrimeGroup::mul_and_encode_chunk`],
    /// [`PrimeGroup::decode_mul_and_encode_chunk`]) use on this machine: `"avx512ifma-8way"`
    /// (this crate's eight-lane kernel) or `"dalek"` (curve25519-dalek point by point: on CPUs
    /// without AVX-512 IFMA, in builds with `--cfg obliv_portable`, and when the kernel is
    /// switched off with `OBLIV_CPU_DISABLE=avx512ifma` or `obliv_cpu::disable`).
    pub fn batch_backend() -> &'static str {
        #[cfg(obliv_x86_simd)]
        if ifma().is_some() {
            return "avx512ifma-8way";
        }
        "dalek"
    }

    /// The reference batch path on curve25519-dalek (`[k/2]P` per point, then dalek's
    /// `double_and_compress_batch`), whatever the CPU: the fallback of
    /// [`PrimeGroup::mul_and_encode_chunk`], public so that tests and benches can compare
    /// the two.
    ///
    /// # Panics
    /// If `out.len() != points.len()`.
    pub fn mul_and_encode_chunk_dalek(
        points: &[RistrettoPoint],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) {
        crate::assert_out_len(points.len(), out.len());
        // [k]P = [2]([k/2]P): dalek encodes doubled points in a batch with one inversion.
        let half = SecretScalar(k.0 * Scalar::from_bytes_mod_order(INV_TWO));
        let mut halves: Vec<RistrettoPoint> = points.iter().map(|p| p * half.0).collect();
        // The output, public from here on (for the constant-time checks: the batch
        // inversion's nonzero check).
        obliv_cpu::ctgrind::public(&mut halves[..]);
        let enc = RistrettoPoint::double_and_compress_batch(&halves);
        for (o, e) in out.iter_mut().zip(enc) {
            *o = e.to_bytes();
        }
    }

    /// The reference path of [`PrimeGroup::decode_mul_and_encode_chunk`] (full `decode`
    /// of each encoding, then [`Self::mul_and_encode_chunk_dalek`]).
    ///
    /// # Errors
    /// [`Error::BufferLength`] if `out.len() != encodings.len()`; [`Error::Batch`] naming the
    /// first invalid encoding and why it was rejected.
    pub fn decode_mul_and_encode_chunk_dalek<E: AsRef<[u8]>>(
        encodings: &[E],
        first_index: usize,
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        crate::check_out_len(encodings.len(), out.len())?;
        let pts = encodings
            .iter()
            .enumerate()
            .map(|(i, e)| {
                Self::decode(e.as_ref()).map_err(|source| Error::Batch {
                    index: first_index + i,
                    source: Box::new(source),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Self::mul_and_encode_chunk_dalek(&pts, k, out);
        Ok(())
    }

    /// RFC 9496 §4.3.4 element derivation from 64 uniform bytes (the one-way map), exposed
    /// for the RFC 9496 Appendix A.3 known-answer tests.
    pub fn from_uniform_bytes(bytes: &[u8; 64]) -> RistrettoPoint {
        RistrettoPoint::from_uniform_bytes(bytes)
    }
}

/// RFC 9380 §5.3.1 `expand_message_xmd` with SHA-512 and `len_in_bytes = 64` (so `ell = 1`
/// and the output is `b_1`) for one DST (at most 255 bytes), with the hash state after the
/// 128-byte block `Z_pad` computed once: every message then costs three SHA-512 compressions
/// instead of four for a short message. Same output as the generic expander
/// ([`crate::sswu::expand`] with `ExpandMsgXmd<Sha512>`), which the tests check. The serial
/// reference of the eight-lane expander the batch path uses (the tests compare them).
#[cfg(all(test, obliv_x86_simd))]
struct XmdSha512<'a> {
    /// SHA-512 after absorbing `Z_pad = I2OSP(0, 128)`.
    after_zpad: Sha512,
    dst: &'a [u8],
    /// `I2OSP(len(DST), 1)`.
    dst_len: u8,
}

#[cfg(all(test, obliv_x86_simd))]
impl<'a> XmdSha512<'a> {
    /// The expander for `dst`, which must be 1 to 255 bytes (a constant of this module).
    fn new(dst: &'a [u8]) -> Self {
        use sha2::Digest;
        let mut after_zpad = Sha512::new();
        after_zpad.update([0u8; 128]);
        debug_assert!(!dst.is_empty() && dst.len() <= 255);
        Self {
            after_zpad,
            dst,
            dst_len: u8::try_from(dst.len()).unwrap_or(u8::MAX),
        }
    }

    /// `b_0 = H(Z_pad ‖ msg ‖ I2OSP(64, 2) ‖ I2OSP(0, 1) ‖ DST_prime)`,
    /// `b_1 = H(b_0 ‖ I2OSP(1, 1) ‖ DST_prime)`; returns `b_1`.
    fn expand(&self, msg: &[u8]) -> [u8; 64] {
        use sha2::Digest;
        let mut h = self.after_zpad.clone();
        h.update(msg);
        h.update([0u8, 64, 0]);
        h.update(self.dst);
        h.update([self.dst_len]);
        let b0 = h.finalize();
        let mut h = Sha512::new();
        h.update(b0);
        h.update([1u8]);
        h.update(self.dst);
        h.update([self.dst_len]);
        h.finalize().into()
    }
}

impl PrimeGroup for Ristretto255 {
    const NAME: &'static str = "25519";
    const SUITE_ID: &'static str = "ristretto255_XMD:SHA-512_R255MAP_RO_";
    const DEFAULT_DST: &'static [u8] = b"obliv-ec-v1-ristretto255_XMD:SHA-512_R255MAP_RO_";
    const ENCODED_LEN: usize = 32;

    type ScalarInner = Scalar;
    type Point = RistrettoPoint;
    type Encoded = [u8; 32];

    fn hash_to_point_with_dst(msg: &[u8], dst: &[u8]) -> Result<RistrettoPoint, Error> {
        // The uniform bytes of a (private) item, wiped on return.
        let mut uniform = Zeroizing::new([0u8; 64]);
        crate::sswu::expand::<ExpandMsgXmd<Sha512>>(msg, dst, uniform.as_mut_slice())?;
        Ok(RistrettoPoint::from_uniform_bytes(&uniform))
    }

    fn hash_to_point(msg: &[u8]) -> RistrettoPoint {
        // DEFAULT_DST is non-empty and 64 bytes fit in one expand_message_xmd call, so the
        // only error cases of the expander cannot occur.
        #[allow(clippy::expect_used)]
        Self::hash_to_point_with_dst(msg, Self::DEFAULT_DST).expect("non-empty DST, 64-byte output")
    }

    fn generator() -> RistrettoPoint {
        curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT
    }

    fn identity() -> RistrettoPoint {
        RistrettoPoint::identity()
    }

    fn mul(point: &RistrettoPoint, k: &SecretScalar<Scalar>) -> RistrettoPoint {
        point * k.0
    }

    fn mul_base(k: &SecretScalar<Scalar>) -> RistrettoPoint {
        RistrettoPoint::mul_base(&k.0)
    }

    fn encode(point: &RistrettoPoint) -> [u8; 32] {
        point.compress().to_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<RistrettoPoint, Error> {
        let c = CompressedRistretto::from_slice(bytes).map_err(|_| Error::WrongLength {
            group: Self::NAME,
            expected: 32,
            got: bytes.len(),
        })?;
        let p = c
            .decompress()
            .ok_or(Error::InvalidPoint { group: Self::NAME })?;
        if p == RistrettoPoint::identity() {
            return Err(Error::Identity { group: Self::NAME });
        }
        Ok(p)
    }

    fn random_scalar<R: CryptoRng + ?Sized>(rng: &mut R) -> SecretScalar<Scalar> {
        scalar25519::random(rng)
    }

    fn scalar_invert(k: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
        scalar25519::invert(k)
    }

    fn scalar_mul(a: &SecretScalar<Scalar>, b: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
        scalar25519::mul(a, b)
    }

    fn scalar_to_bytes(k: &SecretScalar<Scalar>) -> Zeroizing<Vec<u8>> {
        scalar25519::to_bytes(k)
    }

    fn scalar_from_bytes(bytes: &[u8]) -> Result<SecretScalar<Scalar>, Error> {
        scalar25519::from_bytes(bytes, Self::NAME)
    }

    fn mul_and_encode_chunk(
        points: &[RistrettoPoint],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) {
        crate::assert_out_len(points.len(), out.len());
        #[cfg(obliv_x86_simd)]
        if let Some(ifma) = ifma() {
            // dalek keeps the coordinates private; its batched encoding of doubled points
            // (one inversion per chunk) hands them over as encodings of 2P, which the lanes
            // decode and multiply by k/2: [k/2]([2]P) = [k]P.
            let half = SecretScalar(k.0 * Scalar::from_bytes_mod_order(INV_TWO));
            // The points may be hashes of private items (the default hash path), and 2P
            // reveals P: the encodings are wiped once the chunk is done.
            let mut compressed = RistrettoPoint::double_and_compress_batch(points);
            let doubled: Zeroizing<Vec<[u8; 32]>> = Zeroizing::new(
                compressed
                    .iter()
                    .map(CompressedRistretto::to_bytes)
                    .collect(),
            );
            zeroize::Zeroize::zeroize(&mut compressed);
            // Encodings of 2P are always valid (identity allowed): this cannot fail, but if
            // it did the reference path below recomputes the whole chunk.
            if ifma.decode_mul_encode(&doubled, &half.0, out, false) {
                return;
            }
        }
        Self::mul_and_encode_chunk_dalek(points, k, out);
    }

    fn hash_mul_and_encode_chunk<T: AsRef<[u8]>>(
        items: &[T],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) {
        crate::assert_out_len(items.len(), out.len());
        #[cfg(obliv_x86_simd)]
        if let Some(ifma) = ifma() {
            // expand_message_xmd (SHA-512, eight items per AVX-512F lane group, from the
            // midstate after Z_pad), then the two Elligator maps, their sum, [k]H and the
            // encoding in lanes: the same RFC 9496 §4.3.4 derivation as `hash_to_point`.
            // The uniform bytes of the (private) items are wiped when the chunk is done.
            let mut uniform = Zeroizing::new(vec![[0u8; 64]; items.len()]);
            ifma.expand_message_xmd_sha512(items, Self::DEFAULT_DST, &mut uniform);
            ifma.uniform_mul_encode(&uniform, &k.0, out);
            return;
        }
        // The hashed items, wiped when the chunk is done.
        let pts: Zeroizing<Vec<RistrettoPoint>> = Zeroizing::new(
            items
                .iter()
                .map(|x| Self::hash_to_point(x.as_ref()))
                .collect(),
        );
        Self::mul_and_encode_chunk_dalek(&pts, k, out);
    }

    fn decode_mul_and_encode_chunk<E: AsRef<[u8]>>(
        encodings: &[E],
        first_index: usize,
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        crate::check_out_len(encodings.len(), out.len())?;
        #[cfg(obliv_x86_simd)]
        if let Some(ifma) = ifma() {
            let encs: Option<Vec<[u8; 32]>> = encodings
                .iter()
                .map(|e| <[u8; 32]>::try_from(e.as_ref()).ok())
                .collect();
            // Same validation as `decode` (canonical, non-negative, on the curve, not the
            // identity), in lanes; a chunk with an invalid encoding goes to the reference
            // path, which reports the first offending index exactly as before.
            if let Some(encs) = encs
                && ifma.decode_mul_encode(&encs, &k.0, out, true)
            {
                return Ok(());
            }
        }
        Self::decode_mul_and_encode_chunk_dalek(encodings, first_index, k, out)
    }
}

#[cfg(test)]
mod tests {
    //! The dispatched batch paths (AVX-512 IFMA lanes on this machine) against the
    //! curve25519-dalek reference path: byte-identical outputs, identical errors.
    use super::*;
    use rand::SeedableRng;

    fn points(n: usize, seed: u64) -> Vec<RistrettoPoint> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n).map(|_| RistrettoPoint::random(&mut rng)).collect()
    }

    fn scalars() -> Vec<SecretScalar<Scalar>> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(99);
        vec![
            SecretScalar(Scalar::ZERO),
            SecretScalar(Scalar::ONE),
            SecretScalar(-Scalar::ONE), // ℓ − 1
            SecretScalar(Scalar::from(2u8)),
            SecretScalar(Scalar::from_bytes_mod_order(INV_TWO)),
            SecretScalar(Scalar::random(&mut rng)),
            SecretScalar(Scalar::random(&mut rng)),
        ]
    }

    #[test]
    fn backend_is_reported() {
        let lanes = crate::cpu::ifma25519::detected();
        if !lanes {
            eprintln!(
                "backend_is_reported: no AVX-512 IFMA lanes here (CPU, OBLIV_CPU_DISABLE or \
                 --cfg obliv_portable): the dispatched batch tests compare the dalek fallback \
                 with the reference path only"
            );
        }
        let want = if lanes { "avx512ifma-8way" } else { "dalek" };
        assert_eq!(Ristretto255::batch_backend(), want);
        assert_eq!(crate::X25519::batch_backend(), want);
    }

    #[test]
    fn mul_and_encode_chunk_matches_dalek() {
        for n in [0usize, 1, 7, 8, 9, 17, 256] {
            let mut pts = points(n, n as u64);
            if n > 3 {
                pts[2] = RistrettoPoint::identity();
            }
            for k in &scalars() {
                let mut fast = vec![[0u8; 32]; n];
                let mut slow = vec![[0u8; 32]; n];
                Ristretto255::mul_and_encode_chunk(&pts, k, &mut fast);
                Ristretto255::mul_and_encode_chunk_dalek(&pts, k, &mut slow);
                assert_eq!(fast, slow, "n = {n}");
                let single: Vec<[u8; 32]> = pts
                    .iter()
                    .map(|p| (p * k.0).compress().to_bytes())
                    .collect();
                assert_eq!(fast, single);
            }
        }
    }

    #[test]
    fn hash_mul_and_encode_chunk_matches_dalek() {
        for n in [0usize, 1, 9, 256] {
            let items: Vec<Vec<u8>> = (0..n).map(|i| format!("item {i}").into_bytes()).collect();
            for k in &scalars() {
                let mut fast = vec![[0u8; 32]; n];
                let mut slow = vec![[0u8; 32]; n];
                Ristretto255::hash_mul_and_encode_chunk(&items, k, &mut fast);
                let pts: Vec<RistrettoPoint> = items
                    .iter()
                    .map(|x| Ristretto255::hash_to_point(x))
                    .collect();
                Ristretto255::mul_and_encode_chunk_dalek(&pts, k, &mut slow);
                assert_eq!(fast, slow, "n = {n}");
            }
        }
    }

    /// The midstate expander against the generic RFC 9380 one, for messages around the
    /// SHA-512 block boundaries.
    #[cfg(obliv_x86_simd)]
    #[test]
    fn xmd_midstate_matches_generic_expander() {
        let xmd = XmdSha512::new(Ristretto255::DEFAULT_DST);
        for len in [0usize, 1, 20, 55, 56, 57, 111, 112, 113, 127, 128, 129, 300] {
            let msg: Vec<u8> = (0..len)
                .map(|i| u8::try_from((i * 7 + len) % 251).unwrap())
                .collect();
            let mut want = [0u8; 64];
            crate::sswu::expand::<ExpandMsgXmd<Sha512>>(&msg, Ristretto255::DEFAULT_DST, &mut want)
                .unwrap();
            assert_eq!(xmd.expand(&msg), want, "len {len}");
        }
    }

    /// The eight-lane expander of the batch path against the serial midstate one, for every
    /// message length from 0 to 300 bytes (groups of eight different lengths crossing the
    /// SHA-512 block boundaries, and a last group of five).
    #[cfg(obliv_x86_simd)]
    #[test]
    fn xmd_lanes_match_serial() {
        let Some(ifma) = crate::ifma25519::lanes_for_test("xmd_lanes_match_serial") else {
            return;
        };
        let xmd = XmdSha512::new(Ristretto255::DEFAULT_DST);
        let msgs: Vec<Vec<u8>> = (0..=300usize)
            .map(|len| {
                (0..len)
                    .map(|i| u8::try_from((i * 5 + len) % 256).unwrap())
                    .collect()
            })
            .collect();
        let mut uniform = vec![[0u8; 64]; msgs.len()];
        ifma.expand_message_xmd_sha512(&msgs, Ristretto255::DEFAULT_DST, &mut uniform);
        for (m, u) in msgs.iter().zip(&uniform) {
            assert_eq!(u, &xmd.expand(m), "len {}", m.len());
        }
    }

    #[test]
    fn decode_mul_and_encode_chunk_matches_dalek() {
        for n in [0usize, 1, 5, 8, 13, 256] {
            let enc: Vec<[u8; 32]> = points(n, 1000 + n as u64)
                .iter()
                .map(|p| p.compress().to_bytes())
                .collect();
            for k in &scalars() {
                let mut fast = vec![[0u8; 32]; n];
                let mut slow = vec![[0u8; 32]; n];
                Ristretto255::decode_mul_and_encode_chunk(&enc, 40, k, &mut fast).unwrap();
                Ristretto255::decode_mul_and_encode_chunk_dalek(&enc, 40, k, &mut slow).unwrap();
                assert_eq!(fast, slow, "n = {n}");
            }
        }
    }

    #[test]
    fn decode_mul_and_encode_chunk_errors_match_dalek() {
        let k = &scalars()[5];
        let good: Vec<Vec<u8>> = points(12, 5)
            .iter()
            .map(|p| p.compress().to_bytes().to_vec())
            .collect();
        let g = good[0].clone();
        let mut negative = g.clone();
        negative[0] |= 1; // a negative s
        let mut noncanonical = vec![0xffu8; 32];
        noncanonical[31] = 0x7f; // 2^255 − 1 ≥ p
        let bad_cases: Vec<Vec<u8>> = vec![
            vec![0u8; 32], // identity
            negative,
            noncanonical,
            vec![1u8; 31], // wrong length
            {
                let mut h = [0u8; 32];
                h[0] = 2; // s = 1: not on the curve in Ristretto's sense
                h.to_vec()
            },
        ];
        for bad in bad_cases {
            let mut batch = good.clone();
            batch[9] = bad.clone();
            let mut o1 = vec![[0u8; 32]; 12];
            let mut o2 = vec![[0u8; 32]; 12];
            let e1 =
                Ristretto255::decode_mul_and_encode_chunk(&batch, 256, k, &mut o1).unwrap_err();
            let e2 = Ristretto255::decode_mul_and_encode_chunk_dalek(&batch, 256, k, &mut o2)
                .unwrap_err();
            assert_eq!(format!("{e1:?}"), format!("{e2:?}"));
            assert!(format!("{e1:?}").contains("265"), "{e1:?}");
        }
    }
}
