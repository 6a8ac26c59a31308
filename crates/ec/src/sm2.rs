//! SM2 (GB/T 32918.5-2017 recommended curve) on the RustCrypto `sm2` crate's arithmetic, with
//! a hash to the curve defined here: suite **`SM2_XMD:SM3_SSWU_RO_`**.
//!
//! SM2 is `y² = x³ − 3x + b` over `GF(p)`, `p = 2^256 − 2^224 − 2^96 + 2^64 − 1`, of prime
//! order `n` (cofactor 1). There is no standard hash-to-curve suite for it, so we define one
//! exactly as RFC 9380 defines `P256_XMD:SHA-256_SSWU_RO_` (§8.2), with SM3 in place of
//! SHA-256:
//!
//! * encoding type `hash_to_curve` (random oracle, §3), `expand_message_xmd` with SM3
//!   (256-bit output, 64-byte blocks; §5.3.1), `L = 48`, `k = 128`, `m = 1`, `h_eff = 1`;
//! * mapping: simplified SWU (§6.6.2) directly on SM2, since `A = −3 ≠ 0` and `B ≠ 0`;
//!   `p ≡ 3 (mod 4)`, so `sqrt_ratio` is Appendix F.2.1.2 with `c1 = (p − 3)/4`,
//!   `c2 = sqrt(−Z) = 3`;
//! * **`Z = −9`**, the output of the procedure `find_z_sswu` of Appendix H.2 run on SM2's
//!   parameters (first `Z` in the order 1, −1, 2, −2, … that is a non-square, `≠ −1`, makes
//!   `g(x) − Z` irreducible, and makes `g(B/(Z·A))` square). The same script returns
//!   `Z = −10` for P-256, the RFC's value. The unit tests re-check the criteria that can be
//!   checked cheaply (non-square, `c2² = −Z`, `g(B/(Z·A))` square).
//!
//! No official test vectors exist. The suite runs on the field arithmetic of `fastmul`
//! (projective SSWU output, one inversion per hash); it is tested against a straight
//! transcription of the RFC over the `sm2` crate's own field (`sswu.rs`, whose code is
//! itself checked against the RFC 9380 P-256 vectors), and for its properties (points on the
//! curve, sign convention `sgn0(y) = sgn0(u)`, the exceptional input `u = 0`, determinism,
//! DST separation).
//!
//! The default domain separation tag is `"obliv-ec-v1-SM2_XMD:SM3_SSWU_RO_"`.

use crate::weierstrass::impl_weierstrass;
use crate::{Error, PrimeGroup, SecretScalar};
use k256::hash2curve::ExpandMsgXmd;
#[cfg(test)]
use sm2::elliptic_curve::hazmat::FieldArithmetic;
use sm2::elliptic_curve::sec1::FromSec1Point;

/// SM2's base field element type in the `sm2` crate (its module is private).
#[cfg(test)]
pub(crate) type Fe = <::sm2::Sm2 as FieldArithmetic>::FieldElement;

/// The SM2 curve (GB/T 32918) via the `sm2` crate, hashed with `SM2_XMD:SM3_SSWU_RO_`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sm2;

/// The point with big-endian affine coordinates `xy` (which the caller guarantees lie on
/// SM2), or the identity for `None`.
fn point_from_xy(xy: crate::fastmul::AffineXy) -> ::sm2::ProjectivePoint {
    let Some((x, y)) = xy else {
        return ::sm2::ProjectivePoint::IDENTITY;
    };
    let sec1 = ::sm2::Sec1Point::from_affine_coordinates(&x.into(), &y.into(), false);
    // SSWU outputs satisfy the curve equation (tested), so decoding succeeds; the check is
    // the sm2 crate's on-curve test, cheap next to the map itself.
    let a: Option<::sm2::AffinePoint> = ::sm2::AffinePoint::from_sec1_point(&sec1).into();
    a.map(Into::into)
        .unwrap_or(::sm2::ProjectivePoint::IDENTITY)
}

/// `hash_to_curve` of `SM2_XMD:SM3_SSWU_RO_` with domain separation tag `dst`:
/// `u = hash_to_field(msg, 2)` with `expand_message_xmd`/SM3, then
/// `P = map_to_curve(u0) + map_to_curve(u1)` (simplified SWU, `Z = −9`; cofactor 1).
///
/// # Errors
/// [`Error::HashToCurve`] if `dst` is empty.
pub fn hash_to_curve_sm2(msg: &[u8], dst: &[u8]) -> Result<::sm2::ProjectivePoint, Error> {
    let xy = crate::fastmul::hash_to_curve::<crate::fastmul::Sm2Params, ExpandMsgXmd<sm3::Sm3>>(
        msg, dst,
    )?;
    Ok(point_from_xy(xy))
}

impl_weierstrass!(
    Sm2, sm2,
    name: "sm2",
    suite: "SM2_XMD:SM3_SSWU_RO_",
    dst: b"obliv-ec-v1-SM2_XMD:SM3_SSWU_RO_",
    hash: hash_to_curve_sm2,
    fast: crate::fastmul::Sm2Params,
    xmd: ExpandMsgXmd<sm3::Sm3>
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sswu::{SswuParams, hash_to_field2, map_to_curve};
    use ff::{Field, PrimeField};

    fn fe_from_be(bytes: [u8; 32]) -> Fe {
        let mut r = <Fe as PrimeField>::Repr::default();
        r.as_mut_slice().copy_from_slice(&bytes);
        Option::<Fe>::from(Fe::from_repr(r)).unwrap()
    }

    /// SM2 curve coefficient `b` (GB/T 32918.5, big-endian).
    const SM2_B: [u8; 32] = [
        0x28, 0xe9, 0xfa, 0x9e, 0x9d, 0x9f, 0x5e, 0x34, 0x4d, 0x5a, 0x9e, 0x4b, 0xcf, 0x65, 0x09,
        0xa7, 0xf3, 0x97, 0x89, 0xf5, 0x15, 0xab, 0x8f, 0x92, 0xdd, 0xbc, 0xbd, 0x41, 0x4d, 0x94,
        0x0e, 0x93,
    ];

    /// The suite's constants on the sm2 crate's field, for the reference implementation.
    fn params() -> SswuParams<Fe> {
        SswuParams {
            a: -Fe::from(3u64),
            b: fe_from_be(SM2_B),
            z: -Fe::from(9u64),
            c1: [
                0x3fffffffffffffff,
                0xffffffffc0000000,
                0xffffffffffffffff,
                0x3fffffffbfffffff,
            ],
            c2: Fe::from(3u64),
        }
    }

    /// The reference (generic, RFC-transcribed) implementation of the suite.
    fn hash_reference(msg: &[u8], dst: &[u8]) -> ::sm2::ProjectivePoint {
        let [u0, u1] = hash_to_field2::<Fe, ExpandMsgXmd<sm3::Sm3>>(msg, dst).unwrap();
        let p = params();
        let pt = |u: &Fe| {
            let (x, y) = map_to_curve(u, &p);
            let (xb, yb): ([u8; 32], [u8; 32]) = (x.to_repr().into(), y.to_repr().into());
            point_from_xy(Some((xb, yb)))
        };
        pt(&u0) + pt(&u1)
    }

    #[test]
    fn fast_hash_matches_reference() {
        for i in 0..64u32 {
            let msg = format!("message {i}");
            assert_eq!(
                hash_to_curve_sm2(msg.as_bytes(), b"DST").unwrap(),
                hash_reference(msg.as_bytes(), b"DST"),
                "{msg}"
            );
        }
    }

    fn on_curve(x: &Fe, y: &Fe) -> bool {
        let p = params();
        y.square() == x.square() * x + p.a * x + p.b
    }

    #[test]
    fn repr_is_big_endian() {
        let one = Fe::ONE.to_repr();
        assert_eq!(one[31], 1);
        assert!(one[..31].iter().all(|&b| b == 0));
    }

    #[test]
    fn constants_satisfy_rfc9380_criteria() {
        let p = params();
        // Z is a non-square, Z != -1, c2^2 = -Z.
        assert!(bool::from(p.z.sqrt().is_none()));
        assert_ne!(p.z, -Fe::ONE);
        assert_eq!(p.c2.square(), -p.z);
        // g(B / (Z·A)) is square (H.2 criterion 4).
        let x = p.b * (p.z * p.a).invert().unwrap();
        let gx = x.square() * x + p.a * x + p.b;
        assert!(bool::from(gx.sqrt().is_some()));
        // The curve coefficients match the sm2 crate's: its generator satisfies our equation.
        let gen_aff = <::sm2::AffinePoint as group::CurveAffine>::generator();
        let enc = sm2::elliptic_curve::sec1::ToSec1Point::to_sec1_point(&gen_aff, false);
        let gx_b: [u8; 32] = enc.x().unwrap().as_slice().try_into().unwrap();
        let gy_b: [u8; 32] = enc.y().unwrap().as_slice().try_into().unwrap();
        assert!(on_curve(&fe_from_be(gx_b), &fe_from_be(gy_b)));
    }

    #[test]
    fn map_outputs_are_on_curve_with_sign_of_u() {
        let p = params();
        let mut u = Fe::ZERO;
        for i in 0..200u64 {
            let (x, y) = map_to_curve(&u, &p);
            assert!(on_curve(&x, &y), "u #{i}");
            if !bool::from(u.is_zero()) {
                assert_eq!(bool::from(u.is_odd()), bool::from(y.is_odd()));
            }
            u = u.square() + Fe::from(i + 7);
        }
    }

    #[test]
    fn hash_is_deterministic_and_dst_separated() {
        let a = hash_to_curve_sm2(b"abc", b"DST-1").unwrap();
        assert_eq!(a, hash_to_curve_sm2(b"abc", b"DST-1").unwrap());
        assert_ne!(a, hash_to_curve_sm2(b"abc", b"DST-2").unwrap());
        assert_ne!(a, hash_to_curve_sm2(b"abd", b"DST-1").unwrap());
        assert!(hash_to_curve_sm2(b"abc", b"").is_err());
        assert!(!bool::from(group::Group::is_identity(&a)));
    }
}
