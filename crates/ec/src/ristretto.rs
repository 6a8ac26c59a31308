//! Curve25519 as the prime-order group ristretto255 (RFC 9496) on curve25519-dalek.
//!
//! # Why Ristretto255 and not X25519-style Montgomery arithmetic
//!
//! ECDH-PSI needs a group of prime order: with the cofactor-8 curve a malicious peer could
//! send `H(x) + T` for a small-order `T` and learn `x`-dependent bits from the answer, so an
//! X25519-style design has to clear the cofactor (three doublings) and check subgroup
//! membership of every received point. Ristretto255 gives a prime-order group with a
//! canonical 32-byte encoding whose decoder rejects everything else, at the cost of one
//! inverse square root per encode and per decode — the same cost as the affine conversion an
//! X25519 ladder needs. The variable-base multiplication in dalek runs on its AVX-512 IFMA or
//! AVX2 backend (picked at run time), which is faster than its Montgomery ladder
//! (`MontgomeryPoint::mul_clamped`, serial field arithmetic only); the `ec` bench measures both
//! (`25519/x25519_ladder` vs `25519/mul`). The hash is RFC 9380's `ristretto255_XMD:SHA-512_R255MAP_RO_`:
//! `expand_message_xmd(msg, DST, 64)` with SHA-512, then RFC 9496 §4.3.4 element
//! derivation (two Elligator maps and a sum), which is indifferentiable from a random oracle.
//!
//! # Batch encoding
//!
//! [`PrimeGroup::mul_and_encode_chunk`] computes `[k/2]P` for each point and then
//! `double_and_compress_batch`, which encodes `[2][k/2]P = [k]P` for a whole chunk with a
//! single shared inversion (dalek's batched Ristretto encoding of doubled points).

use crate::{Error, PrimeGroup, SecretScalar};
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

impl Ristretto255 {
    /// RFC 9496 §4.3.4 element derivation from 64 uniform bytes (the one-way map), exposed
    /// for the RFC 9496 Appendix A.3 known-answer tests.
    pub fn from_uniform_bytes(bytes: &[u8; 64]) -> RistrettoPoint {
        RistrettoPoint::from_uniform_bytes(bytes)
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
        let mut uniform = [0u8; 64];
        crate::sswu::expand::<ExpandMsgXmd<Sha512>>(msg, dst, &mut uniform)?;
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
        loop {
            let s = SecretScalar(Scalar::random(rng));
            // Rejection of zero (probability 2^-252): the loop leaks only that a draw was zero.
            if s.0 != Scalar::ZERO {
                return s;
            }
        }
    }

    fn scalar_invert(k: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
        SecretScalar(k.0.invert())
    }

    fn scalar_mul(a: &SecretScalar<Scalar>, b: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
        SecretScalar(a.0 * b.0)
    }

    fn scalar_to_bytes(k: &SecretScalar<Scalar>) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(k.0.to_bytes().to_vec())
    }

    fn scalar_from_bytes(bytes: &[u8]) -> Result<SecretScalar<Scalar>, Error> {
        let arr: Zeroizing<[u8; 32]> =
            Zeroizing::new(bytes.try_into().map_err(|_| Error::WrongLength {
                group: Self::NAME,
                expected: 32,
                got: bytes.len(),
            })?);
        let s: Option<Scalar> = Scalar::from_canonical_bytes(*arr).into();
        let s = SecretScalar(s.ok_or(Error::InvalidScalar { group: Self::NAME })?);
        if s.0 == Scalar::ZERO {
            return Err(Error::InvalidScalar { group: Self::NAME });
        }
        Ok(s)
    }

    fn mul_and_encode_chunk(
        points: &[RistrettoPoint],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) {
        // [k]P = [2]([k/2]P): dalek encodes doubled points in a batch with one inversion.
        let half = SecretScalar(k.0 * Scalar::from_bytes_mod_order(INV_TWO));
        let halves: Vec<RistrettoPoint> = points.iter().map(|p| p * half.0).collect();
        let enc = RistrettoPoint::double_and_compress_batch(&halves);
        for (o, e) in out.iter_mut().zip(enc) {
            *o = e.to_bytes();
        }
    }
}
