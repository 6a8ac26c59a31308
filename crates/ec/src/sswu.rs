//! The simplified Shallue–van de Woestijne–Ulas map (RFC 9380 §6.6.2) for short Weierstrass
//! curves `y² = x³ + A·x + B` with `A·B ≠ 0` over `GF(p)`, `p ≡ 3 (mod 4)`, and the
//! `hash_to_field` step (RFC 9380 §5.2) with `expand_message_xmd` (§5.3.1), `m = 1`,
//! `L = 48`, `count = 2`.
//!
//! `expand` is what every suite of this crate uses. The map and `hash_to_field` here are a
//! straight transcription of the RFC, generic over an `ff::PrimeField` with a big-endian
//! `Repr`, kept as the *reference* for the tests: they are checked against the RFC 9380
//! Appendix J.1.1 vectors on P-256 (`Z = −10`), and the fast implementation in
//! `fastmul.rs` (which the groups use) is checked against them on SM2.
//!
//! Constant time: every step is field arithmetic and conditional moves (`subtle`); the one
//! exponentiation has the public exponent `c1 = (p − 3)/4`.

#[cfg(test)]
use ff::PrimeField;
use k256::elliptic_curve::consts::U16;
use k256::hash2curve::{ExpandMsg, Expander};
#[cfg(test)]
use subtle::{Choice, ConstantTimeEq};

#[cfg(test)]
/// Constants of the map for one curve (RFC 9380 §6.6.2 and Appendix F.2.1.2).
pub(crate) struct SswuParams<F> {
    /// Curve coefficient `A`.
    pub(crate) a: F,
    /// Curve coefficient `B`.
    pub(crate) b: F,
    /// The non-square `Z` chosen by the procedure of RFC 9380 Appendix H.2.
    pub(crate) z: F,
    /// `c1 = (p − 3)/4` as little-endian 64-bit limbs.
    pub(crate) c1: [u64; 4],
    /// `c2 = sqrt(−Z)`.
    pub(crate) c2: F,
}

#[cfg(test)]
/// `sgn0` of RFC 9380 §4.1 for `m = 1`: the parity of the canonical representative.
fn sgn0<F: PrimeField>(x: &F) -> Choice {
    x.is_odd()
}

#[cfg(test)]
/// `sqrt_ratio(u, v)` for `p ≡ 3 (mod 4)` (RFC 9380 Appendix F.2.1.2): `(true, sqrt(u/v))`
/// if `u/v` is square, else `(false, sqrt(Z·u/v))`.
fn sqrt_ratio_3mod4<F: PrimeField>(u: F, v: F, p: &SswuParams<F>) -> (Choice, F) {
    let tv1 = v.square(); // 1. tv1 = v^2
    let tv2 = u * v; // 2. tv2 = u * v
    let tv1 = tv1 * tv2; // 3. tv1 = tv1 * tv2
    let y1 = tv1.pow_vartime(p.c1); // 4. y1 = tv1^c1 (public exponent)
    let y1 = y1 * tv2; // 5. y1 = y1 * tv2
    let y2 = y1 * p.c2; // 6. y2 = y1 * c2
    let tv3 = y1.square() * v; // 7-8. tv3 = y1^2 * v
    let is_qr = tv3.ct_eq(&u); // 9. isQR = tv3 == u
    (is_qr, F::conditional_select(&y2, &y1, is_qr)) // 10. y = CMOV(y2, y1, isQR)
}

#[cfg(test)]
/// `map_to_curve_simple_swu(u)` (RFC 9380 Appendix F.2, straight-line version): the affine
/// coordinates `(x, y)` of a point on the curve.
pub(crate) fn map_to_curve<F: PrimeField>(u: &F, p: &SswuParams<F>) -> (F, F) {
    let tv1 = u.square(); // 1. tv1 = u^2
    let tv1 = p.z * tv1; // 2. tv1 = Z * tv1
    let tv2 = tv1.square() + tv1; // 3-4. tv2 = tv1^2 + tv1
    let tv3 = p.b * (tv2 + F::ONE); // 5-6. tv3 = B * (tv2 + 1)
    let tv4 = F::conditional_select(&p.z, &-tv2, !tv2.is_zero()); // 7. CMOV(Z, -tv2, tv2 != 0)
    let tv4 = p.a * tv4; // 8. tv4 = A * tv4
    let tv2 = tv3.square(); // 9. tv2 = tv3^2
    let tv6 = tv4.square(); // 10. tv6 = tv4^2
    let tv5 = p.a * tv6; // 11. tv5 = A * tv6
    let tv2 = (tv2 + tv5) * tv3; // 12-13. tv2 = (tv2 + tv5) * tv3
    let tv6 = tv6 * tv4; // 14. tv6 = tv6 * tv4
    let tv2 = tv2 + p.b * tv6; // 15-16. tv2 = tv2 + B * tv6
    let x = tv1 * tv3; // 17. x = tv1 * tv3
    let (is_gx1_square, y1) = sqrt_ratio_3mod4(tv2, tv6, p); // 18.
    let y = tv1 * u * y1; // 19-20. y = tv1 * u * y1
    let x = F::conditional_select(&x, &tv3, is_gx1_square); // 21.
    let y = F::conditional_select(&y, &y1, is_gx1_square); // 22.
    let e1 = sgn0(u).ct_eq(&sgn0(&y)); // 23. e1 = sgn0(u) == sgn0(y)
    let y = F::conditional_select(&-y, &y, e1); // 24. y = CMOV(-y, y, e1)
    // 25. x = x / tv4. tv4 = A·Z ≠ 0 or A·(−tv2) with tv2 ≠ 0, and A ≠ 0: the inverse exists.
    let inv: Option<F> = tv4.invert().into();
    (x * inv.unwrap_or(F::ZERO), y)
}

#[cfg(test)]
/// Reduce 48 big-endian bytes modulo `p` (the `OS2IP(tv) mod p` of `hash_to_field`):
/// `d0·2^192 + d1` with `d0, d1 < 2^192 < p`, each read through the canonical `Repr`.
fn reduce_be48<F: PrimeField>(bytes: &[u8]) -> F
where
    F::Repr: AsMut<[u8]>,
{
    let load = |part: &[u8]| -> F {
        let mut r = F::Repr::default();
        let buf = r.as_mut();
        let n = buf.len();
        buf[n - 24..].copy_from_slice(part);
        // Any 24-byte value is below 2^192 < p, so the representation is canonical.
        Option::<F>::from(F::from_repr(r)).unwrap_or(F::ZERO)
    };
    let mut two192 = F::Repr::default();
    let buf = two192.as_mut();
    let n = buf.len();
    buf[n - 25] = 1;
    let two192 = Option::<F>::from(F::from_repr(two192)).unwrap_or(F::ZERO);
    load(&bytes[..24]) * two192 + load(&bytes[24..48])
}

/// `expand_message(msg, dst, out.len())` of the expander `X` (e.g. `ExpandMsgXmd<Sm3>`) at
/// the k = 128 security level (RFC 9380 §5.3).
///
/// # Errors
/// If the expander rejects `dst` (empty) or the length.
pub(crate) fn expand<X: ExpandMsg<U16>>(
    msg: &[u8],
    dst: &[u8],
    out: &mut [u8],
) -> Result<(), crate::Error> {
    let len = u16::try_from(out.len())
        .ok()
        .and_then(core::num::NonZero::new)
        .ok_or(crate::Error::HashToCurve("output length"))?;
    let dsts = [dst];
    let mut exp = X::expand_message(&[msg], &dsts, len)
        .map_err(|_| crate::Error::HashToCurve("empty domain separation tag"))?;
    exp.fill_bytes(out)
        .map_err(|_| crate::Error::HashToCurve("expander exhausted"))?;
    Ok(())
}

#[cfg(test)]
/// `hash_to_field(msg, 2)` with the expander `X` (RFC 9380 §5.2) for fields of about 256
/// bits (`L = 48`, k = 128).
///
/// # Errors
/// If the expander rejects `dst` (empty).
pub(crate) fn hash_to_field2<F, X>(msg: &[u8], dst: &[u8]) -> Result<[F; 2], crate::Error>
where
    F: PrimeField,
    F::Repr: AsMut<[u8]>,
    X: ExpandMsg<U16>,
{
    let mut uniform = [0u8; 96];
    expand::<X>(msg, dst, &mut uniform)?;
    Ok([reduce_be48(&uniform[..48]), reduce_be48(&uniform[48..])])
}

#[cfg(test)]
mod tests {
    //! The generic map and hash_to_field, instantiated for P-256 (Z = −10) and checked
    //! against RFC 9380 Appendix J.1.1 (`P256_XMD:SHA-256_SSWU_RO_`), values as copied into
    //! the p256 crate's own tests.
    use super::*;
    use p256::NistP256;
    use p256::elliptic_curve::hazmat::FieldArithmetic;

    type Fe = <NistP256 as FieldArithmetic>::FieldElement;

    fn fe(hex_be: &str) -> Fe {
        let mut r = <Fe as PrimeField>::Repr::default();
        r.as_mut_slice()
            .copy_from_slice(&hex::decode(hex_be).unwrap());
        Option::from(Fe::from_repr(r)).unwrap()
    }

    fn params() -> SswuParams<Fe> {
        SswuParams {
            a: -Fe::from(3u64),
            b: fe("5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b"),
            z: -Fe::from(10u64),
            c1: [
                0xffffffffffffffff,
                0x3fffffff,
                0x4000000000000000,
                0x3fffffffc0000000,
            ],
            c2: fe("da538e3be1d89b99c978fc675180aab27b8d1ff84c55d5b62ccd3427e433c47f"),
        }
    }

    fn hx(f: &Fe) -> String {
        hex::encode(f.to_repr())
    }

    #[test]
    fn c2_is_sqrt_minus_z() {
        let p = params();
        assert_eq!(p.c2.square(), -p.z);
    }

    #[test]
    fn rfc9380_j_1_1_p256() {
        const DST: &[u8] = b"QUUX-V01-CS02-with-P256_XMD:SHA-256_SSWU_RO_";
        // (msg, u0, u1, Q0.x, Q0.y, Q1.x, Q1.y)
        let vectors: [(&[u8], [&str; 6]); 3] = [
            (
                b"",
                [
                    "ad5342c66a6dd0ff080df1da0ea1c04b96e0330dd89406465eeba11582515009",
                    "8c0f1d43204bd6f6ea70ae8013070a1518b43873bcd850aafa0a9e220e2eea5a",
                    "ab640a12220d3ff283510ff3f4b1953d09fad35795140b1c5d64f313967934d5",
                    "dccb558863804a881d4fff3455716c836cef230e5209594ddd33d85c565b19b1",
                    "51cce63c50d972a6e51c61334f0f4875c9ac1cd2d3238412f84e31da7d980ef5",
                    "b45d1a36d00ad90e5ec7840a60a4de411917fbe7c82c3949a6e699e5a1b66aac",
                ],
            ),
            (
                b"abc",
                [
                    "afe47f2ea2b10465cc26ac403194dfb68b7f5ee865cda61e9f3e07a537220af1",
                    "379a27833b0bfe6f7bdca08e1e83c760bf9a338ab335542704edcd69ce9e46e0",
                    "5219ad0ddef3cc49b714145e91b2f7de6ce0a7a7dc7406c7726c7e373c58cb48",
                    "7950144e52d30acbec7b624c203b1996c99617d0b61c2442354301b191d93ecf",
                    "019b7cb4efcfeaf39f738fe638e31d375ad6837f58a852d032ff60c69ee3875f",
                    "589a62d2b22357fed5449bc38065b760095ebe6aeac84b01156ee4252715446e",
                ],
            ),
            (
                b"abcdef0123456789",
                [
                    "0fad9d125a9477d55cf9357105b0eb3a5c4259809bf87180aa01d651f53d312c",
                    "b68597377392cd3419d8fcc7d7660948c8403b19ea78bbca4b133c9d2196c0fb",
                    "a17bdf2965eb88074bc01157e644ed409dac97cfcf0c61c998ed0fa45e79e4a2",
                    "4f1bc80c70d411a3cc1d67aeae6e726f0f311639fee560c7f5a664554e3c9c2e",
                    "7da48bb67225c1a17d452c983798113f47e438e4202219dd0715f8419b274d66",
                    "b765696b2913e36db3016c47edb99e24b1da30e761a8a3215dc0ec4d8f96e6f9",
                ],
            ),
        ];
        let p = params();
        for (msg, v) in vectors {
            let [u0, u1] =
                hash_to_field2::<Fe, k256::hash2curve::ExpandMsgXmd<sha2::Sha256>>(msg, DST)
                    .unwrap();
            assert_eq!(hx(&u0), v[0]);
            assert_eq!(hx(&u1), v[1]);
            let (x0, y0) = map_to_curve(&u0, &p);
            let (x1, y1) = map_to_curve(&u1, &p);
            assert_eq!((hx(&x0), hx(&y0)), (v[2].to_string(), v[3].to_string()));
            assert_eq!((hx(&x1), hx(&y1)), (v[4].to_string(), v[5].to_string()));
        }
    }

    #[test]
    fn exceptional_input_zero_maps_onto_curve() {
        // u = 0 takes the tv2 == 0 branch (x = B/(Z·A)); the output must still be on E.
        let p = params();
        let (x, y) = map_to_curve(&Fe::ZERO, &p);
        assert_eq!(y.square(), x.square() * x + p.a * x + p.b);
    }
}
