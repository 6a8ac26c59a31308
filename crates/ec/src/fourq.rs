//! FourQ (Costello–Longa, ASIACRYPT 2015, <https://eprint.iacr.org/2015/565>) from the
//! `obliv-fourq` crate behind [`PrimeGroup`].
//!
//! * Group: the order-`N` subgroup (`N` ≈ 2^246) of FourQ; encodings are 32 bytes (FourQlib's
//!   compressed `y` with the sign of `x`); [`PrimeGroup::decode`] rejects wrong lengths,
//!   non-canonical and off-curve encodings, points outside the subgroup and the identity.
//! * Multiplication: `obliv-fourq`'s constant-time four-dimensional GLV+GLS method; the batch
//!   path is its `mul_many_to_bytes`, which decomposes and recodes the scalar once for all
//!   points. Received points in the batch path ([`PrimeGroup::mul_encoded_batch`]) are
//!   validated by cofactor projection rather than a subgroup check (see
//!   `FourQ::decode_mul_and_encode_chunk`).
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
        // A copy of the (private) message, wiped on return.
        let mut m = Zeroizing::new(Vec::with_capacity(2 + dst.len() + msg.len()));
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

    /// Hashes the chunk with `obliv-fourq`'s batch hash (the map and the cofactor clearing
    /// eight messages per AVX-512 IFMA vector where the CPU has it), then multiplies and
    /// encodes it with one recoding; the same encodings as the default (tested).
    fn hash_and_mul_batch<T: AsRef<[u8]> + Sync>(
        items: &[T],
        k: &SecretScalar<Scalar>,
    ) -> Vec<[u8; 32]> {
        let mut out = vec![[0u8; 32]; items.len()];
        hash_and_mul_into(items, k, &mut out);
        out
    }

    fn hash_and_mul_batch_into<T: AsRef<[u8]> + Sync>(
        items: &[T],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        if out.len() != items.len() {
            return Err(Error::BufferLength {
                expected: items.len(),
                got: out.len(),
            });
        }
        hash_and_mul_into(items, k, out);
        Ok(())
    }

    /// Peer points validated by cofactor projection instead of a subgroup check
    /// ([`Point::mul_many_encoded_projecting`]): on-curve decoding, `Q = [392]P`, then
    /// `[k·392⁻¹]Q` with the scalar divided by the cofactor once per chunk (inside
    /// `obliv-fourq`, wiped after recoding). Every valid encoding gives exactly the output of
    /// [`decode`](PrimeGroup::decode) + [`mul_and_encode_chunk`](PrimeGroup::mul_and_encode_chunk);
    /// wrong lengths, non-canonical and off-curve encodings get the same errors as `decode`;
    /// the identity and the other small-order points get [`Error::Identity`] (their
    /// prime-order part is the identity). A point `P + T` with a small-order `T ≠ O` is
    /// accepted and gives `[k]P`: the torsion is dropped before the secret scalar touches it,
    /// so nothing about `k` modulo a small order leaks. Saves the subgroup check (one
    /// variable-base multiplication per point).
    fn decode_mul_and_encode_chunk<E: AsRef<[u8]>>(
        encodings: &[E],
        first_index: usize,
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        crate::check_out_len(encodings.len(), out.len())?;
        let slices: Vec<&[u8]> = encodings.iter().map(AsRef::as_ref).collect();
        let results = Point::mul_many_encoded_projecting(&k.0, &slices);
        for (i, (o, r)) in out.iter_mut().zip(results).enumerate() {
            *o = r.map_err(|e| Error::Batch {
                index: first_index + i,
                source: Box::new(match e {
                    obliv_fourq::Error::InvalidLength { expected, got } => Error::WrongLength {
                        group: Self::NAME,
                        expected,
                        got,
                    },
                    obliv_fourq::Error::SmallOrder => Error::Identity { group: Self::NAME },
                    _ => Error::InvalidPoint { group: Self::NAME },
                }),
            })?;
        }
        Ok(())
    }

    fn mul_and_encode_chunk(points: &[Point], k: &SecretScalar<Scalar>, out: &mut [[u8; 32]]) {
        crate::assert_out_len(points.len(), out.len());
        for (o, e) in out.iter_mut().zip(Point::mul_many_to_bytes(&k.0, points)) {
            *o = e;
        }
    }
}

/// `[k]H(x)` for every item, chunk by chunk on rayon: the messages are prefixed with the
/// default DST as in [`FourQ::hash_to_point_with_dst`], hashed with
/// [`Point::hash_to_curve_many`] and multiplied with [`Point::mul_many_to_bytes`]. The
/// prefixed copies of the (private) items and their points are wiped once per chunk.
fn hash_and_mul_into<T: AsRef<[u8]> + Sync>(
    items: &[T],
    k: &SecretScalar<Scalar>,
    out: &mut [[u8; 32]],
) {
    use rayon::prelude::*;
    let dst = FourQ::DEFAULT_DST;
    // DEFAULT_DST is a short constant: its length fits in two bytes.
    let len = u16::try_from(dst.len()).unwrap_or(u16::MAX).to_be_bytes();
    out.par_chunks_mut(crate::BATCH_CHUNK)
        .zip(items.par_chunks(crate::BATCH_CHUNK))
        .for_each(|(o, it)| {
            let msgs: Zeroizing<Vec<Vec<u8>>> = Zeroizing::new(
                it.iter()
                    .map(|x| {
                        let x = x.as_ref();
                        let mut m = Vec::with_capacity(2 + dst.len() + x.len());
                        m.extend_from_slice(&len);
                        m.extend_from_slice(dst);
                        m.extend_from_slice(x);
                        m
                    })
                    .collect(),
            );
            let pts = Zeroizing::new(Point::hash_to_curve_many(&msgs[..]));
            for (oi, e) in o.iter_mut().zip(Point::mul_many_to_bytes(&k.0, &pts)) {
                *oi = e;
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order-2 point `(0, −1)`: `y = p − 1`, sign 0.
    fn order_two() -> [u8; 32] {
        let mut e = [0u8; 32];
        e[0] = 0xfe;
        e[1..15].fill(0xff);
        e[15] = 0x7f;
        e
    }

    #[test]
    fn batch_hash_matches_single() {
        let mut rng = rand::rng();
        let k = FourQ::random_scalar(&mut rng);
        let items: Vec<Vec<u8>> = (0u32..300).map(|i| vec![7; (i % 40) as usize]).collect();
        let want: Vec<[u8; 32]> = items
            .iter()
            .map(|m| FourQ::encode(&FourQ::mul(&FourQ::hash_to_point(m), &k)))
            .collect();
        assert_eq!(FourQ::hash_and_mul_batch(&items, &k), want);
        let mut out = vec![[0u8; 32]; items.len()];
        FourQ::hash_and_mul_batch_into(&items, &k, &mut out).unwrap();
        assert_eq!(out, want);
        let mut short = vec![[0u8; 32]; 3];
        assert!(matches!(
            FourQ::hash_and_mul_batch_into(&items, &k, &mut short),
            Err(Error::BufferLength { .. })
        ));
    }

    #[test]
    fn batch_projection_matches_decode_and_rejects_small_order() {
        let mut rng = rand::rng();
        let k = FourQ::random_scalar(&mut rng);
        let items: Vec<[u8; 4]> = (0u32..300).map(|i| i.to_le_bytes()).collect();
        let enc: Vec<[u8; 32]> = items
            .iter()
            .map(|m| FourQ::encode(&FourQ::hash_to_point(m)))
            .collect();
        // Valid points: the same bytes as decode + mul_and_encode_chunk (the default hook).
        let got = FourQ::mul_encoded_batch(&enc, &k).unwrap();
        let pts: Vec<Point> = enc.iter().map(|e| FourQ::decode(e).unwrap()).collect();
        let mut want = vec![[0u8; 32]; pts.len()];
        FourQ::mul_and_encode_chunk(&pts, &k, &mut want);
        assert_eq!(got, want);

        // A point plus the order-2 point: decode rejects it, the batch maps it to [k]P.
        let t = Option::<Point>::from(Point::from_bytes_unchecked_subgroup(&order_two())).unwrap();
        assert!(FourQ::decode(&order_two()).is_err());
        let shifted = (pts[3] + t).to_bytes();
        assert!(matches!(
            FourQ::decode(&shifted),
            Err(Error::InvalidPoint { .. })
        ));
        assert_eq!(FourQ::mul_encoded_batch(&[shifted], &k).unwrap()[0], got[3]);

        // Small order and the identity: Error::Identity, at the right index.
        let mut bad = enc.clone();
        bad[260] = order_two();
        match FourQ::mul_encoded_batch(&bad, &k) {
            Err(Error::Batch { index, source }) => {
                assert_eq!(index, 260);
                assert!(matches!(*source, Error::Identity { .. }));
            }
            other => panic!("{other:?}"),
        }
        let id = FourQ::encode(&FourQ::identity());
        assert!(matches!(FourQ::decode(&id), Err(Error::Identity { .. })));
        assert!(matches!(
            FourQ::mul_encoded_batch(&[id], &k),
            Err(Error::Batch { index: 0, source }) if matches!(*source, Error::Identity { .. })
        ));
        // Off the curve (y = 2) and a wrong length: the same errors as decode.
        let mut off = [0u8; 32];
        off[0] = 2;
        assert!(matches!(
            FourQ::decode(&off),
            Err(Error::InvalidPoint { .. })
        ));
        assert!(matches!(
            FourQ::mul_encoded_batch(&[off], &k),
            Err(Error::Batch { index: 0, source }) if matches!(*source, Error::InvalidPoint { .. })
        ));
        let short = vec![enc[0][..31].to_vec()];
        assert!(matches!(
            FourQ::mul_encoded_batch(&short, &k),
            Err(Error::Batch { index: 0, source }) if matches!(*source, Error::WrongLength { got: 31, .. })
        ));
    }
}
