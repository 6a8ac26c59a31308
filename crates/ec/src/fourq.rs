//! FourQ (Costello–Longa, ASIACRYPT 2015, <https://eprint.iacr.org/2015/565>) from the
//! `obliv-fourq` crate behind [`PrimeGroup`].
//!
//! * Group: the order-`N` subgroup (`N` ≈ 2^246) of FourQ; encodings are 32 bytes (FourQlib's
//!   compressed `y` with the sign of `x`); [`PrimeGroup::decode`] rejects wrong lengths,
//!   non-canonical and off-curve encodings, points outside the subgroup and the identity.
//! * Multiplication: `obliv-fourq`'s constant-time four-dimensional GLV+GLS method; the batch
//!   path is its `mul_many_to_bytes`, which decomposes and recodes the scalar once for all
//!   points.
//! * Hash: `obliv-fourq`'s `hash_to_curve`, i.e. `[392]·M(SHA-512(m))` with FourQlib's
//!   constant-time map `M`, applied to the injective encoding
//!   `m = I2OSP(len(DST), 2) ‖ DST ‖ msg`. This is a *single* map evaluation, a nonuniform
//!   encoding in RFC 9380's terms (no RFC 9380 suite exists for FourQ), the construction
//!   FourQlib and SecretFlow use for ECDH-PSI: what the protocol needs is that `H(x)` has no
//!   known discrete logarithm. We name it `FourQ_SHA-512_FourQlibMap_NU_` (our identifier).
//! * Scalars: little-endian 32-byte canonical encodings below `N`.

use crate::{Error, PrimeGroup, SecretScalar};
use obliv_fourq::{Point, Scalar};
use rand_core::CryptoRng;
use zeroize::Zeroizing;

/// The FourQ group (order-`N` subgroup), via `obliv-fourq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FourQ;

impl PrimeGroup for FourQ {
    const NAME: &'static str = "fourq";
    const SUITE_ID: &'static str = "FourQ_SHA-512_FourQlibMap_NU_";
    const DEFAULT_DST: &'static [u8] = b"obliv-ec-v1-FourQ_SHA-512_FourQlibMap_NU_";
    const ENCODED_LEN: usize = 32;

    type ScalarInner = Scalar;
    type Point = Point;
    type Encoded = [u8; 32];

    fn hash_to_point_with_dst(msg: &[u8], dst: &[u8]) -> Result<Point, Error> {
        if dst.is_empty() {
            return Err(Error::HashToCurve("empty domain separation tag"));
        }
        let len = u16::try_from(dst.len())
            .map_err(|_| Error::HashToCurve("domain separation tag over 65535 bytes"))?;
        let mut m = Vec::with_capacity(2 + dst.len() + msg.len());
        m.extend_from_slice(&len.to_be_bytes());
        m.extend_from_slice(dst);
        m.extend_from_slice(msg);
        Ok(Point::hash_to_curve(&m))
    }

    fn hash_to_point(msg: &[u8]) -> Point {
        // DEFAULT_DST is a short non-empty constant: the only error cases cannot occur.
        #[allow(clippy::expect_used)]
        Self::hash_to_point_with_dst(msg, Self::DEFAULT_DST).expect("valid constant DST")
    }

    fn generator() -> Point {
        Point::generator()
    }

    fn identity() -> Point {
        Point::identity()
    }

    fn mul(point: &Point, k: &SecretScalar<Scalar>) -> Point {
        point.mul(&k.0)
    }

    fn mul_base(k: &SecretScalar<Scalar>) -> Point {
        Point::mul_base(&k.0)
    }

    fn encode(point: &Point) -> [u8; 32] {
        point.to_bytes()
    }

    fn decode(bytes: &[u8]) -> Result<Point, Error> {
        let p = Point::decode(bytes).map_err(|e| match e {
            obliv_fourq::Error::InvalidLength { expected, got } => Error::WrongLength {
                group: Self::NAME,
                expected,
                got,
            },
            _ => Error::InvalidPoint { group: Self::NAME },
        })?;
        if bool::from(p.is_identity()) {
            return Err(Error::Identity { group: Self::NAME });
        }
        Ok(p)
    }

    fn random_scalar<R: CryptoRng + ?Sized>(rng: &mut R) -> SecretScalar<Scalar> {
        loop {
            let s = SecretScalar(Scalar::random(rng));
            // Rejection of zero (probability 2^-246) leaks only that a draw was zero.
            if !bool::from(s.0.is_zero()) {
                return s;
            }
        }
    }

    fn scalar_invert(k: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
        // Scalars of this crate are never zero, so the inverse exists.
        let inv: Option<Scalar> = k.0.invert().into();
        SecretScalar(inv.unwrap_or(Scalar::ZERO))
    }

    fn scalar_mul(a: &SecretScalar<Scalar>, b: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
        SecretScalar(a.0.mul(&b.0))
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
        let s: Option<Scalar> = Scalar::from_canonical_bytes(&arr).into();
        let s = SecretScalar(s.ok_or(Error::InvalidScalar { group: Self::NAME })?);
        if bool::from(s.0.is_zero()) {
            return Err(Error::InvalidScalar { group: Self::NAME });
        }
        Ok(s)
    }

    fn mul_and_encode_chunk(points: &[Point], k: &SecretScalar<Scalar>, out: &mut [[u8; 32]]) {
        for (o, e) in out.iter_mut().zip(Point::mul_many_to_bytes(&k.0, points)) {
            *o = e;
        }
    }
}
