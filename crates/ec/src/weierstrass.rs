//! secp256k1 (k256) and P-256 (p256): short Weierstrass curves of prime order with the
//! RFC 9380 SSWU hash-to-curve suites of their RustCrypto crates, and the macro that wraps
//! any RustCrypto `primeorder`-style curve (also used for SM2).
//!
//! Encoding: SEC1 compressed points (33 bytes, tag `02`/`03` then `x`). Both curves have
//! cofactor 1, so every point on the curve lies in the prime-order group, and decoding (a
//! square root for `y`) rejects `x` with no point, `x ≥ p`, and any other tag. The identity
//! has no SEC1 compressed form; [`crate::PrimeGroup::encode`] writes it as 33 zero bytes,
//! which [`crate::PrimeGroup::decode`] rejects with [`crate::Error::Identity`].
//!
//! Batch: multiplications stay in projective coordinates and a chunk is normalised to
//! affine with one field inversion (`group::Curve::batch_normalize`, Montgomery's trick).

use crate::{Error, PrimeGroup, SecretScalar};
use k256::hash2curve::{ExpandMsgXmd, hash_from_bytes};
use sha2::Sha256;

/// Implements [`PrimeGroup`] for a RustCrypto short-Weierstrass curve of prime order.
macro_rules! impl_weierstrass {
    (@chunk $krate:ident) => {
            fn mul_and_encode_chunk(
        points: &[Self::Point],
        k: &SecretScalar<$krate::Scalar>,
        out: &mut [[u8; 33]],
    ) {
        $crate::assert_out_len(points.len(), out.len());
        let prod: Vec<Self::Point> = points.iter().map(|p| p * &k.0).collect();
        let mut aff = vec![<$krate::AffinePoint as Default>::default(); prod.len()];
        <$krate::ProjectivePoint as group::Curve>::batch_normalize(&prod, &mut aff);
        for (o, a) in out.iter_mut().zip(&aff) {
            *o = $crate::weierstrass::encode_affine::<$krate::AffinePoint>(a);
        }
    }
    };
    (@coords $krate:ident, $points:expr) => {{
        // The crate normalises the inputs (one inversion).
        let mut aff = vec![<$krate::AffinePoint as Default>::default(); $points.len()];
        <$krate::ProjectivePoint as group::Curve>::batch_normalize($points, &mut aff);
        aff.iter()
            .map(|a| {
                let s = $krate::elliptic_curve::sec1::ToSec1Point::to_sec1_point(a, false);
                match (s.x(), s.y()) {
                    (Some(x), Some(y)) => {
                        let mut xb = [0u8; 32];
                        let mut yb = [0u8; 32];
                        xb.copy_from_slice(x.as_slice());
                        yb.copy_from_slice(y.as_slice());
                        Some((xb, yb))
                    }
                    _ => None,
                }
            })
            .collect::<Vec<$crate::fastmul::AffineXy>>()
    }};
    (@decode $fast:ty $(, $fastmul:ident)?) => {
        fn decode_mul_and_encode_chunk<E: AsRef<[u8]>>(
            encodings: &[E],
            first_index: usize,
            k: &SecretScalar<Self::ScalarInner>,
            out: &mut [[u8; 33]],
        ) -> Result<(), Error> {
            $crate::check_out_len(encodings.len(), out.len())?;
            #[cfg(obliv_x86_simd)]
            {
                let mut repr = ff::PrimeField::to_repr(&k.0);
                let r = $crate::ifma_weierstrass::decode_mul_batch::<$fast, E>(
                    encodings,
                    repr.as_slice(),
                    out,
                );
                zeroize::Zeroize::zeroize(repr.as_mut_slice());
                match r {
                    Some(Ok(())) => return Ok(()),
                    // The lanes found the first rejected encoding: the serial decoder gives the
                    // same error (the lanes check the length, the tag, x < p and the square
                    // root, which is all SEC1 decoding checks on a cofactor-1 curve).
                    Some(Err(i)) => {
                        if let Some(Err(source)) = encodings.get(i).map(|e| Self::decode(e.as_ref()))
                        {
                            return Err(Error::Batch {
                                index: first_index + i,
                                source: Box::new(source),
                            });
                        }
                    }
                    None => {}
                }
            }
            $(
                $crate::weierstrass::impl_weierstrass!(
                    @decode_serial $fastmul $fast, encodings, first_index, k, out
                );
            )?
            // No lanes (or, should a faster path and the decoder ever disagree, the decoder's
            // verdict): the crate's decoding and `mul_and_encode_chunk`.
            $crate::weierstrass::decode_chunk_serial::<Self, E>(encodings, first_index, k, out)
        }
    };
    // The `a = −3` curves without lanes: decoding, multiplication and encoding in `fastmul`
    // (one shared inversion); a rejected encoding gets the decoder's error.
    (@decode_serial fastmul $fast:ty, $encodings:ident, $first_index:ident, $k:ident, $out:ident) => {
        let digits = $crate::fastmul::recode_scalar(&$k.0);
        match $crate::fastmul::decode_mul_batch::<$fast, E>($encodings, &digits, $out) {
            Ok(()) => return Ok(()),
            Err(i) => {
                if let Some(Err(source)) = $encodings.get(i).map(|e| Self::decode(e.as_ref())) {
                    return Err(Error::Batch {
                        index: $first_index + i,
                        source: Box::new(source),
                    });
                }
            }
        }
    };
    (@chunk $krate:ident $fast:ty, mul_only) => {
        fn mul_and_encode_chunk(
            points: &[Self::Point],
            k: &SecretScalar<$krate::Scalar>,
            out: &mut [[u8; 33]],
        ) {
            $crate::assert_out_len(points.len(), out.len());
            // Eight IFMA lanes (`ifma_weierstrass`) with the scalar recoded once; without
            // them the crate's own multiplication and one normalisation for the chunk.
            #[cfg(obliv_x86_simd)]
            if $crate::ifma_weierstrass::available() {
                let coords = $crate::weierstrass::impl_weierstrass!(@coords $krate, points);
                let mut repr = ff::PrimeField::to_repr(&k.0);
                let done = $crate::ifma_weierstrass::mul_affine_batch::<$fast>(
                    &coords,
                    repr.as_slice(),
                    out,
                );
                zeroize::Zeroize::zeroize(repr.as_mut_slice());
                if done {
                    return;
                }
            }
            let mut prod: Vec<Self::Point> = points.iter().map(|p| p * &k.0).collect();
            // The products are this call's output, public from here on (for the constant-time
            // checks: the normalisation's nonzero check and the encoding's identity test).
            obliv_cpu::ctgrind::public(&mut prod[..]);
            let mut aff = vec![<$krate::AffinePoint as Default>::default(); prod.len()];
            <$krate::ProjectivePoint as group::Curve>::batch_normalize(&prod, &mut aff);
            for (o, a) in out.iter_mut().zip(&aff) {
                *o = $crate::weierstrass::encode_affine::<$krate::AffinePoint>(a);
            }
        }

        $crate::weierstrass::impl_weierstrass!(@decode $fast);
    };
    (@chunk $krate:ident $fast:ty, $xmd:ty) => {
        fn mul_and_encode_chunk(
            points: &[Self::Point],
            k: &SecretScalar<$krate::Scalar>,
            out: &mut [[u8; 33]],
        ) {
            $crate::assert_out_len(points.len(), out.len());
            // The multiplication and the output normalisation run in eight IFMA lanes
            // (`ifma_weierstrass`) or, without them, in `fastmul`, with the scalar recoded once.
            let coords = $crate::weierstrass::impl_weierstrass!(@coords $krate, points);
            let mut repr = ff::PrimeField::to_repr(&k.0);
            #[cfg(obliv_x86_simd)]
            let done =
                $crate::ifma_weierstrass::mul_affine_batch::<$fast>(&coords, repr.as_slice(), out);
            #[cfg(not(obliv_x86_simd))]
            let done = false;
            if !done {
                let digits = $crate::fastmul::recode(repr.as_slice());
                $crate::fastmul::mul_affine_batch::<$fast>(&coords, &digits, out);
            }
            zeroize::Zeroize::zeroize(repr.as_mut_slice());
        }

        fn hash_mul_and_encode_chunk<T: AsRef<[u8]>>(
            items: &[T],
            k: &SecretScalar<$krate::Scalar>,
            out: &mut [[u8; 33]],
        ) {
            $crate::assert_out_len(items.len(), out.len());
            #[cfg(obliv_x86_simd)]
            {
                let mut repr = ff::PrimeField::to_repr(&k.0);
                let done = $crate::ifma_weierstrass::hash_mul_batch::<$fast, $xmd, T>(
                    items,
                    Self::DEFAULT_DST,
                    repr.as_slice(),
                    out,
                );
                zeroize::Zeroize::zeroize(repr.as_mut_slice());
                if done {
                    return;
                }
            }
            // No lanes: `fastmul`, the hashes kept projective up to one shared inversion.
            let digits = $crate::fastmul::recode_scalar(&k.0);
            // DEFAULT_DST is a non-empty constant, the only input on which the expander can
            // fail.
            #[allow(clippy::expect_used)]
            $crate::fastmul::hash_mul_batch::<$fast, $xmd, T>(
                items,
                Self::DEFAULT_DST,
                &digits,
                out,
            )
            .expect("non-empty DST");
        }

        $crate::weierstrass::impl_weierstrass!(@decode $fast, fastmul);
    };
    (
        $group:ident, $krate:ident, name: $name:expr, suite: $suite:expr, dst: $dst:expr,
        hash: $hash:path $(, fast: $fast:ty, xmd: $($xmd:tt)+)?
    ) => {
        impl PrimeGroup for $group {
            const NAME: &'static str = $name;
            const SUITE_ID: &'static str = $suite;
            const DEFAULT_DST: &'static [u8] = $dst;
            const ENCODED_LEN: usize = 33;

            type ScalarInner = $krate::Scalar;
            type Point = $krate::ProjectivePoint;
            type Encoded = [u8; 33];

            fn hash_to_point_with_dst(msg: &[u8], dst: &[u8]) -> Result<Self::Point, Error> {
                $hash(msg, dst)
            }

            fn hash_to_point(msg: &[u8]) -> Self::Point {
                // DEFAULT_DST is a non-empty constant, the only input on which the
                // expander can fail.
                #[allow(clippy::expect_used)]
                Self::hash_to_point_with_dst(msg, Self::DEFAULT_DST).expect("non-empty DST")
            }

            fn generator() -> Self::Point {
                <$krate::ProjectivePoint as group::Group>::generator()
            }

            fn identity() -> Self::Point {
                <$krate::ProjectivePoint as group::Group>::identity()
            }

            fn mul(point: &Self::Point, k: &SecretScalar<$krate::Scalar>) -> Self::Point {
                point * &k.0
            }

            fn mul_base(k: &SecretScalar<$krate::Scalar>) -> Self::Point {
                <$krate::ProjectivePoint as group::Group>::mul_by_generator(&k.0)
            }

            fn encode(point: &Self::Point) -> [u8; 33] {
                let a = <$krate::ProjectivePoint as group::Curve>::to_affine(point);
                $crate::weierstrass::encode_affine::<$krate::AffinePoint>(&a)
            }

            fn decode(bytes: &[u8]) -> Result<Self::Point, Error> {
                let repr: [u8; 33] = bytes.try_into().map_err(|_| Error::WrongLength {
                    group: Self::NAME,
                    expected: 33,
                    got: bytes.len(),
                })?;
                if repr == [0u8; 33] {
                    return Err(Error::Identity { group: Self::NAME });
                }
                // Only the SEC1 compressed tags: `from_bytes` would also take the all-zero
                // identity, handled above.
                if repr[0] != 0x02 && repr[0] != 0x03 {
                    return Err(Error::InvalidPoint { group: Self::NAME });
                }
                let a: Option<$krate::AffinePoint> =
                    <$krate::AffinePoint as group::GroupEncoding>::from_bytes(&repr.into()).into();
                let a = a.ok_or(Error::InvalidPoint { group: Self::NAME })?;
                Ok(a.into())
            }

            fn random_scalar<R: rand_core::CryptoRng + ?Sized>(
                rng: &mut R,
            ) -> SecretScalar<$krate::Scalar> {
                loop {
                    let s = SecretScalar(<$krate::Scalar as ff::Field>::random(&mut *rng));
                    // Rejection of zero (probability < 2^-255) leaks only that a draw was zero.
                    if !bool::from(ff::Field::is_zero(&s.0)) {
                        return s;
                    }
                }
            }

            fn scalar_invert(k: &SecretScalar<$krate::Scalar>) -> SecretScalar<$krate::Scalar> {
                // Scalars of this crate are never zero (see `random_scalar` and
                // `scalar_from_bytes`), so the inverse exists; 0 would map to 0.
                let inv: Option<$krate::Scalar> = ff::Field::invert(&k.0).into();
                SecretScalar(inv.unwrap_or(<$krate::Scalar as ff::Field>::ZERO))
            }

            fn scalar_mul(
                a: &SecretScalar<$krate::Scalar>,
                b: &SecretScalar<$krate::Scalar>,
            ) -> SecretScalar<$krate::Scalar> {
                SecretScalar(a.0 * b.0)
            }

            fn scalar_to_bytes(k: &SecretScalar<$krate::Scalar>) -> zeroize::Zeroizing<Vec<u8>> {
                let mut repr = ff::PrimeField::to_repr(&k.0);
                let v = zeroize::Zeroizing::new(repr.to_vec());
                zeroize::Zeroize::zeroize(repr.as_mut_slice());
                v
            }

            fn scalar_from_bytes(bytes: &[u8]) -> Result<SecretScalar<$krate::Scalar>, Error> {
                if bytes.len() != 32 {
                    return Err(Error::WrongLength {
                        group: Self::NAME,
                        expected: 32,
                        got: bytes.len(),
                    });
                }
                let mut repr = <$krate::Scalar as ff::PrimeField>::Repr::default();
                repr.as_mut_slice().copy_from_slice(bytes);
                let s: Option<$krate::Scalar> = ff::PrimeField::from_repr(repr).into();
                zeroize::Zeroize::zeroize(repr.as_mut_slice());
                let s = SecretScalar(s.ok_or(Error::InvalidScalar { group: Self::NAME })?);
                if bool::from(ff::Field::is_zero(&s.0)) {
                    return Err(Error::InvalidScalar { group: Self::NAME });
                }
                Ok(s)
            }

            $crate::weierstrass::impl_weierstrass!(@chunk $krate $($fast, $($xmd)+)?);
        }
    };
}
pub(crate) use impl_weierstrass;

/// The trait's default `decode_mul_and_encode_chunk`: decode each encoding with full
/// validation, then multiply the chunk.
pub(crate) fn decode_chunk_serial<G: PrimeGroup, E: AsRef<[u8]>>(
    encodings: &[E],
    first_index: usize,
    k: &SecretScalar<G::ScalarInner>,
    out: &mut [G::Encoded],
) -> Result<(), Error> {
    let pts = encodings
        .iter()
        .enumerate()
        .map(|(i, e)| {
            G::decode(e.as_ref()).map_err(|source| Error::Batch {
                index: first_index + i,
                source: Box::new(source),
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    G::mul_and_encode_chunk(&pts, k, out);
    Ok(())
}

/// SEC1 compressed encoding of an affine point; the identity as 33 zero bytes (which is also
/// what `GroupEncoding::to_bytes` writes into its fixed-width buffer).
pub(crate) fn encode_affine<A>(a: &A) -> [u8; 33]
where
    A: group::GroupEncoding,
{
    let repr = a.to_bytes();
    let mut out = [0u8; 33];
    out.copy_from_slice(repr.as_ref());
    out
}

/// secp256k1 (SEC 2) via k256, hashed with RFC 9380 `secp256k1_XMD:SHA-256_SSWU_RO_`
/// (SSWU on a 3-isogenous curve, then the isogeny map; RFC 9380 §8.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Secp256k1;

/// NIST P-256 via p256, hashed with RFC 9380 `P256_XMD:SHA-256_SSWU_RO_` (RFC 9380 §8.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct P256;

fn hash_k256(msg: &[u8], dst: &[u8]) -> Result<k256::ProjectivePoint, Error> {
    hash_from_bytes::<k256::Secp256k1, ExpandMsgXmd<Sha256>>(&[msg], &[dst])
        .map_err(|_| Error::HashToCurve("empty domain separation tag"))
}

/// P-256's suite on the field arithmetic of `fastmul` (the same RFC 9380 algorithm as the
/// p256 crate's `hash2curve`, about twice as fast here; checked against RFC 9380 J.1.1).
fn hash_p256(msg: &[u8], dst: &[u8]) -> Result<p256::ProjectivePoint, Error> {
    use p256::elliptic_curve::sec1::FromSec1Point;
    let xy = crate::fastmul::hash_to_curve::<crate::fastmul::P256Params, ExpandMsgXmd<Sha256>>(
        msg, dst,
    )?;
    let Some((x, y)) = xy else {
        return Ok(p256::ProjectivePoint::IDENTITY);
    };
    let sec1 = p256::Sec1Point::from_affine_coordinates(&x.into(), &y.into(), false);
    // The SSWU output lies on the curve, so this decodes.
    let a: Option<p256::AffinePoint> = p256::AffinePoint::from_sec1_point(&sec1).into();
    Ok(a.map(Into::into).unwrap_or(p256::ProjectivePoint::IDENTITY))
}

impl_weierstrass!(
    Secp256k1, k256,
    name: "secp256k1",
    suite: "secp256k1_XMD:SHA-256_SSWU_RO_",
    dst: b"obliv-ec-v1-secp256k1_XMD:SHA-256_SSWU_RO_",
    hash: hash_k256,
    fast: crate::fastmul::Secp256k1Params,
    xmd: mul_only
);

impl_weierstrass!(
    P256, p256,
    name: "p256",
    suite: "P256_XMD:SHA-256_SSWU_RO_",
    dst: b"obliv-ec-v1-P256_XMD:SHA-256_SSWU_RO_",
    hash: hash_p256,
    fast: crate::fastmul::P256Params,
    xmd: ExpandMsgXmd<Sha256>
);
