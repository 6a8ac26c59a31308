//! The eight-lane field against dalek's `FieldElement` (through bytes: `invert`,
//! `sqrt_ratio_i`) and a plain `u128`-limb reference (add, sub, mul, square), on edge
//! values and random inputs; decode / multiply / encode against dalek's Ristretto.
#![allow(clippy::cast_possible_truncation)] // the u128 reference splits words on purpose
use super::*;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use proptest::prelude::*;

/// The lanes' token, or `None` after printing that `test` is skipped.
fn ifma(test: &str) -> Option<Ifma> {
    super::lanes_for_test(test)
}

/// Reference GF(p) on four u64 words (schoolbook, reduction by 2^256 ≡ 38).
fn to_words(b: &[u8; 32]) -> [u64; 4] {
    let mut w = [0u64; 4];
    for (i, c) in b.chunks_exact(8).enumerate() {
        w[i] = u64::from_le_bytes(c.try_into().unwrap());
    }
    w
}

fn from_words(w: [u64; 4]) -> [u8; 32] {
    let mut b = [0u8; 32];
    for (i, x) in w.iter().enumerate() {
        b[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes());
    }
    b
}

const P: [u64; 4] = [
    0xffff_ffff_ffff_ffed,
    0xffff_ffff_ffff_ffff,
    0xffff_ffff_ffff_ffff,
    0x7fff_ffff_ffff_ffff,
];

fn geq(a: &[u64; 4], b: &[u64; 4]) -> bool {
    for i in (0..4).rev() {
        if a[i] != b[i] {
            return a[i] > b[i];
        }
    }
    true
}

fn sub_w(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let mut r = [0u64; 4];
    let mut borrow = 0u128;
    for i in 0..4 {
        let d = u128::from(a[i]).wrapping_sub(u128::from(b[i]) + borrow);
        r[i] = d as u64;
        borrow = (d >> 127) & 1;
    }
    r
}

/// Full reduction of a 512-bit value (8 words) modulo p.
fn reduce512(x: [u64; 8]) -> [u64; 4] {
    // x = lo + 2^256·hi ≡ lo + 38·hi.
    let mut acc = [0u128; 5];
    for i in 0..4 {
        acc[i] += u128::from(x[i]) + 38 * u128::from(x[i + 4]);
    }
    let mut w = [0u64; 5];
    let mut c = 0u128;
    for i in 0..5 {
        let v = acc[i] + c;
        w[i] = v as u64;
        c = v >> 64;
    }
    // w < 2^256 · 39ish: fold w[4] again, twice to be safe.
    let mut r = [w[0], w[1], w[2], w[3]];
    let mut top = u128::from(w[4]);
    for _ in 0..3 {
        let mut c = top * 38;
        for limb in r.iter_mut() {
            let v = u128::from(*limb) + c;
            *limb = v as u64;
            c = v >> 64;
        }
        top = c;
    }
    while geq(&r, &P) {
        r = sub_w(&r, &P);
    }
    r
}

fn ref_mul(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let (a, b) = (to_words(a), to_words(b));
    let mut prod = [0u128; 8];
    let mut out = [0u64; 8];
    for i in 0..4 {
        let mut c = 0u128;
        for j in 0..4 {
            let v = u128::from(a[i]) * u128::from(b[j]) + prod[i + j] + c;
            prod[i + j] = u128::from(v as u64);
            c = v >> 64;
        }
        prod[i + 4] += c;
    }
    for i in 0..8 {
        out[i] = prod[i] as u64;
    }
    from_words(reduce512(out))
}

fn ref_add(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let (a, b) = (to_words(a), to_words(b));
    let mut x = [0u64; 8];
    let mut c = 0u128;
    for i in 0..4 {
        let v = u128::from(a[i]) + u128::from(b[i]) + c;
        x[i] = v as u64;
        c = v >> 64;
    }
    x[4] = c as u64;
    // (a + b) with a, b < 2^256: value = x[0..4] + 2^256 x[4].
    from_words(reduce512(x))
}

fn ref_neg(a: &[u8; 32]) -> [u8; 32] {
    let r = reduce512({
        let w = to_words(a);
        [w[0], w[1], w[2], w[3], 0, 0, 0, 0]
    });
    if r == [0; 4] {
        [0; 32]
    } else {
        from_words(sub_w(&P, &r))
    }
}

/// Field elements as F8 inputs: bytes with bit 255 cleared (what `from_bytes` reads).
fn lanes_of(v: &[[u8; 32]]) -> [[u8; 32]; 8] {
    let mut l = [[0u8; 32]; 8];
    for (i, x) in v.iter().take(8).enumerate() {
        l[i] = *x;
        l[i][31] &= 0x7f;
    }
    l
}

crate::cpu::ifma25519::enable! {
    fn lane_ops(a: &[[u8; 32]; 8], b: &[[u8; 32]; 8]) -> [[[u8; 32]; 8]; 6] {
        let (fa, fb) = (F8::from_bytes(a), F8::from_bytes(b));
        [
            fa.add(&fb).to_bytes(),
            fa.sub(&fb).to_bytes(),
            fa.mul(&fb).to_bytes(),
            fa.square().to_bytes(),
            fa.invert().to_bytes(),
            fa.neg().to_bytes(),
        ]
    }
}

fn check_field(_: Ifma, a: &[[u8; 32]; 8], b: &[[u8; 32]; 8]) {
    // SAFETY: the `Ifma` token proves the CPU features.
    let r = unsafe { lane_ops(a, b) };
    for lane in 0..8 {
        let (x, y) = (&a[lane], &b[lane]);
        assert_eq!(r[0][lane], ref_add(x, y), "add lane {lane}");
        assert_eq!(r[1][lane], ref_add(x, &ref_neg(y)), "sub lane {lane}");
        assert_eq!(r[2][lane], ref_mul(x, y), "mul lane {lane}");
        assert_eq!(r[3][lane], ref_mul(x, x), "square lane {lane}");
        assert_eq!(r[5][lane], ref_neg(x), "neg lane {lane}");
        // Inverse: x · x^{-1} = 1 unless x ≡ 0.
        let prod = ref_mul(x, &r[4][lane]);
        let zero = ref_add(x, &[0u8; 32]) == [0u8; 32];
        let mut one = [0u8; 32];
        one[0] = 1;
        assert_eq!(prod, if zero { [0u8; 32] } else { one }, "inv lane {lane}");
    }
}

fn edge_values() -> Vec<[u8; 32]> {
    let mut p = from_words(P);
    let mut v = vec![[0u8; 32], {
        let mut o = [0u8; 32];
        o[0] = 1;
        o
    }];
    for d in 0..=20u8 {
        // p − d for d = 0..20, i.e. p, p−1 (= 2^255−20), …, and 2^255 − 1 (p + 18).
        let mut x = p;
        x[0] = p[0].wrapping_sub(d);
        v.push(x);
    }
    p[0] = 0xff; // 2^255 − 1
    v.push(p);
    v.push([0xff; 32]);
    v.push({
        let mut o = [0u8; 32];
        o[31] = 0x40; // 2^254
        o
    });
    v.push(from_words([u64::MAX >> 13, 0, 0, 0])); // 2^51 − 1 in limb 0
    v
}

#[test]
fn field_edge_values() {
    let Some(ifma) = ifma("field_edge_values") else {
        return;
    };
    let e = edge_values();
    for a in e.chunks(8) {
        for b in e.chunks(8) {
            check_field(ifma, &lanes_of(a), &lanes_of(b));
            let rb: Vec<[u8; 32]> = b.iter().rev().copied().collect();
            check_field(ifma, &lanes_of(a), &lanes_of(&rb));
        }
    }
}

crate::cpu::ifma25519::enable! {
    fn lane_sqrt_ratio(u: &[[u8; 32]; 8], v: &[[u8; 32]; 8]) -> (u8, [[u8; 32]; 8]) {
        let (m, r) = F8::sqrt_ratio_i(&F8::from_bytes(u), &F8::from_bytes(v));
        (m, r.to_bytes())
    }
}

#[test]
fn field_random() {
    let Some(ifma) = ifma("field_random") else {
        return;
    };
    proptest!(ProptestConfig::with_cases(64), |(
        a in proptest::array::uniform8(any::<[u8; 32]>()),
        b in proptest::array::uniform8(any::<[u8; 32]>()),
    )| {
        check_field(ifma, &lanes_of(&a), &lanes_of(&b));
    });
}

/// `sqrt_ratio_i` against dalek's through the Ristretto decoder: a random 32-byte
/// string decodes in lanes exactly when dalek accepts it, to the same point.
#[test]
fn decode_matches_dalek() {
    let Some(_ifma) = ifma("decode_matches_dalek") else {
        return;
    };
    proptest!(ProptestConfig::with_cases(64), |(
        enc in proptest::array::uniform8(any::<[u8; 32]>()),
        seed: u64,
    )| {
        // Half the lanes: valid encodings of random points.
        let mut lanes = enc;
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
        for l in lanes.iter_mut().step_by(2) {
            *l = RistrettoPoint::random(&mut rng).compress().to_bytes();
        }
        // SAFETY: the `Ifma` token above proves the CPU features.
        let (valid, p) = unsafe { decode_n(&[lanes]) };
        let (valid, p) = (valid[0], p[0]);
        // SAFETY: as above.
        let re = unsafe { encode8(&p) };
        for (lane, b) in lanes.iter().enumerate() {
            let d = CompressedRistretto(*b).decompress();
            prop_assert_eq!(valid >> lane & 1 == 1, d.is_some(), "lane {}", lane);
            if d.is_some() {
                prop_assert_eq!(re[lane], *b);
            }
        }
    });
}

#[test]
fn sqrt_ratio_matches_dalek() {
    let Some(_ifma) = ifma("sqrt_ratio_matches_dalek") else {
        return;
    };
    proptest!(ProptestConfig::with_cases(64), |(
        u in proptest::array::uniform8(any::<[u8; 32]>()),
        v in proptest::array::uniform8(any::<[u8; 32]>()),
    )| {
        let (u, v) = (lanes_of(&u), lanes_of(&v));
        // SAFETY: the `Ifma` token above proves the CPU features.
        let (mask, r) = unsafe { lane_sqrt_ratio(&u, &v) };
        for lane in 0..8 {
            // r² · v = u or i·u (when u/v is a non-square), r non-negative.
            let r2v = ref_mul(&ref_mul(&r[lane], &r[lane]), &v[lane]);
            let uu = ref_add(&u[lane], &[0u8; 32]);
            let iu = ref_mul(&uu, &from_words_limbs(SQRT_M1));
            let zero_v = ref_add(&v[lane], &[0u8; 32]) == [0u8; 32];
            if mask >> lane & 1 == 1 {
                prop_assert!(r2v == uu || zero_v && uu == [0u8; 32]);
            } else if !zero_v {
                prop_assert_eq!(r2v, iu);
            }
            prop_assert_eq!(r[lane][0] & 1, 0);
        }
    });
}

fn from_words_limbs(l: [u64; 5]) -> [u8; 32] {
    field::bytes_from_canonical_limbs(l)
}

fn dalek_batch(points: &[RistrettoPoint], k: &Scalar) -> Vec<[u8; 32]> {
    points
        .iter()
        .map(|p| (p * k).compress().to_bytes())
        .collect()
}

fn lane_batch(ifma: Ifma, points: &[RistrettoPoint], k: &Scalar) -> Vec<[u8; 32]> {
    let enc: Vec<[u8; 32]> = points.iter().map(|p| p.compress().to_bytes()).collect();
    let mut out = vec![[0u8; 32]; points.len()];
    assert!(ifma.decode_mul_encode(&enc, k, &mut out, false));
    out
}

#[test]
fn radix16_recomposes() {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(7);
    let ell_minus_one = -Scalar::ONE;
    for k in [
        Scalar::ZERO,
        Scalar::ONE,
        ell_minus_one,
        Scalar::random(&mut rng),
    ] {
        let d = radix16(&k);
        let mut acc = Scalar::ZERO;
        for &x in d.iter().rev() {
            acc = acc * Scalar::from(16u8)
                + Scalar::from(x.unsigned_abs()) * if x < 0 { -Scalar::ONE } else { Scalar::ONE };
            assert!((-8..=8).contains(&x));
        }
        assert_eq!(acc, k);
    }
}

#[test]
fn mul_matches_dalek_edge_scalars() {
    let Some(ifma) = ifma("mul_matches_dalek_edge_scalars") else {
        return;
    };
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(1);
    let mut pts: Vec<RistrettoPoint> = (0..13).map(|_| RistrettoPoint::random(&mut rng)).collect();
    pts.push(curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT);
    pts.push(<RistrettoPoint as curve25519_dalek::traits::Identity>::identity());
    let ks = [
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(2u8),
        Scalar::from(8u8),
        -Scalar::from(8u8),
        Scalar::random(&mut rng),
    ];
    for k in &ks {
        assert_eq!(lane_batch(ifma, &pts, k), dalek_batch(&pts, k));
    }
}

/// The lane element derivation + multiplication against dalek's
/// `from_uniform_bytes` and `*`, for random strings and the all-0 / all-1 strings.
#[test]
fn uniform_matches_dalek() {
    let Some(ifma) = ifma("uniform_matches_dalek") else {
        return;
    };
    proptest!(ProptestConfig::with_cases(16), |(
        seed: u64,
        n in 0usize..19,
        k_small in 0u8..3,
    )| {
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
        let mut uniform: Vec<[u8; 64]> = (0..n)
            .map(|_| {
                let mut b = [0u8; 64];
                rand::Rng::fill_bytes(&mut rng, &mut b);
                b
            })
            .collect();
        if n > 2 {
            uniform[0] = [0u8; 64];
            uniform[1] = [0xffu8; 64];
        }
        let k = match k_small {
            0 => Scalar::ONE,
            1 => -Scalar::ONE,
            _ => Scalar::random(&mut rng),
        };
        let mut out = vec![[0u8; 32]; n];
        ifma.uniform_mul_encode(&uniform, &k, &mut out);
        let want: Vec<[u8; 32]> = uniform
            .iter()
            .map(|b| (RistrettoPoint::from_uniform_bytes(b) * k).compress().to_bytes())
            .collect();
        prop_assert_eq!(out, want);
    });
}

/// RFC 9496 Appendix A.3 (element derivation; the last four are the edge cases with
/// non-canonical field inputs) through the lane hash path with `k = 1`.
#[test]
fn rfc9496_a3_in_lanes() {
    let Some(ifma) = ifma("rfc9496_a3_in_lanes") else {
        return;
    };
    let v = [
        (
            "5d1be09e3d0c82fc538112490e35701979d99e06ca3e2b5b54bffe8b4dc772c14d98b696a1bbfb5ca32c436cc61c16563790306c79eaca7705668b47dffe5bb6",
            "3066f82a1a747d45120d1740f14358531a8f04bbffe6a819f86dfe50f44a0a46",
        ),
        (
            "f116b34b8f17ceb56e8732a60d913dd10cce47a6d53bee9204be8b44f6678b270102a56902e2488c46120e9276cfe54638286b9e4b3cdb470b542d46c2068d38",
            "f26e5b6f7d362d2d2a94c5d0e7602cb4773c95a2e5c31a64f133189fa76ed61b",
        ),
        (
            "8422e1bbdaab52938b81fd602effb6f89110e1e57208ad12d9ad767e2e25510c27140775f9337088b982d83d7fcf0b2fa1edffe51952cbe7365e95c86eaf325c",
            "006ccd2a9e6867e6a2c5cea83d3302cc9de128dd2a9a57dd8ee7b9d7ffe02826",
        ),
        (
            "2cdc11eaeb95daf01189417cdddbf95952993aa9cb9c640eb5058d09702c74622c9965a697a3b345ec24ee56335b556e677b30e6f90ac77d781064f866a3c982",
            "80bd07262511cdde4863f8a7434cef696750681cb9510eea557088f76d9e5065",
        ),
        (
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff1200000000000000000000000000000000000000000000000000000000000000",
            "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
        ),
        (
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
        ),
        (
            "0000000000000000000000000000000000000000000000000000000000000080ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
        ),
        (
            "00000000000000000000000000000000000000000000000000000000000000001200000000000000000000000000000000000000000000000000000000000080",
            "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
        ),
    ];
    // Nine inputs (one repeated) so that the second group of lanes is partial.
    let mut uniform: Vec<[u8; 64]> = v
        .iter()
        .map(|(i, _)| hex::decode(i).unwrap().try_into().unwrap())
        .collect();
    uniform.push(uniform[0]);
    let mut out = vec![[0u8; 32]; uniform.len()];
    ifma.uniform_mul_encode(&uniform, &Scalar::ONE, &mut out);
    for (o, (_, want)) in out.iter().zip(v.iter().chain([&v[0]])) {
        assert_eq!(hex::encode(o), *want);
    }
}

#[test]
fn identity_rejected_when_asked() {
    let Some(ifma) = ifma("identity_rejected_when_asked") else {
        return;
    };
    let mut out = [[0u8; 32]; 3];
    let g = curve25519_dalek::constants::RISTRETTO_BASEPOINT_COMPRESSED.to_bytes();
    let d = Scalar::ONE;
    assert!(ifma.decode_mul_encode(&[g, [0; 32], g], &d, &mut out, false));
    assert_eq!(out[1], [0u8; 32]);
    assert!(!ifma.decode_mul_encode(&[g, [0; 32], g], &d, &mut out, true));
}

#[test]
fn mul_matches_dalek() {
    let Some(ifma) = ifma("mul_matches_dalek") else {
        return;
    };
    proptest!(ProptestConfig::with_cases(24), |(seed: u64, n in 0usize..20)| {
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
        let pts: Vec<RistrettoPoint> =
            (0..n).map(|_| RistrettoPoint::random(&mut rng)).collect();
        let k = Scalar::random(&mut rng);
        prop_assert_eq!(lane_batch(ifma, &pts, &k), dalek_batch(&pts, &k));
    });
}

/// The digit selection of the lanes reads all eight table entries of every coordinate, in the
/// same order, for every digit: the trace of every entry read ([`crate::scan_trace`]) over the
/// decode-and-multiply and the hash (uniform bytes) and multiply paths, two lane groups, is the
/// same for every scalar (edge values, every single digit value, random), with
/// `64 × 4 × 8` reads per eight-lane multiplication.
#[test]
fn digit_selection_trace_is_independent_of_the_scalar() {
    let Some(ifma) = ifma("digit_selection_trace_is_independent_of_the_scalar") else {
        return;
    };
    let enc: Vec<[u8; 32]> = (0u8..9)
        .map(|i| {
            RistrettoPoint::from_uniform_bytes(&[i; 64])
                .compress()
                .to_bytes()
        })
        .collect();
    let uniform: Vec<[u8; 64]> = (0u8..9).map(|i| [i.wrapping_mul(37); 64]).collect();
    let mut ks = vec![Scalar::ONE, -Scalar::ONE, Scalar::from(2u8)];
    // [k/2] with k/2 = d for each digit value d in −8…8 (the top digit) and 16^j·d.
    for d in 1u8..=8 {
        ks.push(Scalar::from(2 * u64::from(d)));
        ks.push(-Scalar::from(2 * u64::from(d)));
        ks.push(Scalar::from((2 * u64::from(d)) << 60));
    }
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3);
    for _ in 0..4 {
        ks.push(Scalar::random(&mut rng));
    }
    let mut out = vec![[0u8; 32]; 9];
    let _ = crate::scan_trace::take();
    let mut first = None;
    for k in &ks {
        assert!(ifma.decode_mul_encode(&enc, k, &mut out, false));
        let decode = crate::scan_trace::take();
        ifma.uniform_mul_encode(&uniform, k, &mut out);
        let hash = crate::scan_trace::take();
        let reads = 2 * 64 * 4 * 8;
        assert_eq!((decode.0, hash.0), (reads, reads));
        match first {
            None => first = Some((decode, hash)),
            Some(f) => assert_eq!(f, (decode, hash), "the trace depends on the scalar"),
        }
    }
}
