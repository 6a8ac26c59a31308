//! The ristretto255 same-scalar batch steps (the eight-lane AVX-512 IFMA kernel where the CPU
//! has it, which processes two groups of eight side by side and an odd group alone) against
//! curve25519-dalek point by point: byte-identical outputs for chunk sizes around every
//! group and pair boundary, invalid encodings rejected with the same error and index as
//! dalek's decoder, and the RFC 9496 test vectors.
#![allow(clippy::unwrap_used)]

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use obliv_ec::{Error, PrimeGroup, Ristretto255, SecretScalar};

use crate::common;
use proptest::prelude::*;
use rand::SeedableRng;

/// Sizes around the group (8) and pair (16) boundaries of the lane kernel, and a large one.
const SIZES: [usize; 12] = [0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 1000];

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn points(n: usize, seed: u64) -> Vec<RistrettoPoint> {
    let mut r = rng(seed);
    (0..n).map(|_| RistrettoPoint::random(&mut r)).collect()
}

fn scalar(seed: u64) -> SecretScalar<Scalar> {
    Ristretto255::scalar_from_bytes(&Scalar::random(&mut rng(seed)).to_bytes()).unwrap()
}

/// dalek's `[k]P` encoding, one point at a time.
fn reference(points: &[RistrettoPoint], k: &Scalar) -> Vec<[u8; 32]> {
    points
        .iter()
        .map(|p| (p * k).compress().to_bytes())
        .collect()
}

#[test]
fn decode_mul_encode_matches_dalek_at_every_boundary() {
    for (i, &n) in SIZES.iter().enumerate() {
        let pts = points(n, 10 + i as u64);
        let enc: Vec<[u8; 32]> = pts.iter().map(|p| p.compress().to_bytes()).collect();
        let k = scalar(i as u64);
        let mut out = vec![[0u8; 32]; n];
        Ristretto255::decode_mul_and_encode_chunk(&enc, 0, &k, &mut out).unwrap();
        assert_eq!(out, reference(&pts, k.expose_secret()), "n = {n}");
    }
}

#[test]
fn mul_encode_matches_dalek_at_every_boundary() {
    for (i, &n) in SIZES.iter().enumerate() {
        let mut pts = points(n, 100 + i as u64);
        if n > 12 {
            // The identity inside the second group of a pair.
            pts[11] = <RistrettoPoint as curve25519_dalek::traits::Identity>::identity();
        }
        let k = scalar(50 + i as u64);
        let mut out = vec![[0u8; 32]; n];
        Ristretto255::mul_and_encode_chunk(&pts, &k, &mut out);
        assert_eq!(out, reference(&pts, k.expose_secret()), "n = {n}");
    }
}

#[test]
fn hash_mul_encode_matches_dalek_at_every_boundary() {
    for (i, &n) in SIZES.iter().enumerate() {
        let items: Vec<String> = (0..n).map(|j| format!("item {i}/{j}")).collect();
        let k = scalar(200 + i as u64);
        let mut out = vec![[0u8; 32]; n];
        Ristretto255::hash_mul_and_encode_chunk(&items, &k, &mut out);
        let pts: Vec<RistrettoPoint> = items
            .iter()
            .map(|x| Ristretto255::hash_to_point(x.as_bytes()))
            .collect();
        assert_eq!(out, reference(&pts, k.expose_secret()), "n = {n}");
    }
}

/// A bad encoding at every lane position of a pair of groups and of a lone last group is
/// rejected with the error (and index) of the dalek path.
#[test]
fn invalid_encodings_rejected_like_dalek_in_every_position() {
    let k = scalar(7);
    let mut noncanonical = [0xffu8; 32];
    noncanonical[31] = 0x7f;
    let bad: [[u8; 32]; 4] = [
        [0u8; 32], // the identity (rejected by `decode`)
        {
            let mut b = RistrettoPoint::random(&mut rng(3)).compress().to_bytes();
            b[0] |= 1; // negative s
            b
        },
        noncanonical,
        {
            let mut b = [0u8; 32];
            b[0] = 2; // s = 1: no point
            b
        },
    ];
    for n in [9usize, 16, 21] {
        let good: Vec<[u8; 32]> = points(n, 77)
            .iter()
            .map(|p| p.compress().to_bytes())
            .collect();
        for pos in 0..n {
            let b = &bad[pos % bad.len()];
            let mut enc = good.clone();
            enc[pos] = *b;
            let mut o1 = vec![[0u8; 32]; n];
            let mut o2 = vec![[0u8; 32]; n];
            let e1 =
                Ristretto255::decode_mul_and_encode_chunk(&enc, 1000, &k, &mut o1).unwrap_err();
            let e2 = Ristretto255::decode_mul_and_encode_chunk_dalek(&enc, 1000, &k, &mut o2)
                .unwrap_err();
            assert_eq!(format!("{e1:?}"), format!("{e2:?}"), "n = {n}, pos = {pos}");
            assert!(
                matches!(e1, Error::Batch { index, .. } if index == 1000 + pos),
                "{e1:?}"
            );
        }
    }
}

/// RFC 9496 Appendix A.2: every one of the invalid encodings is rejected by the batch step
/// wherever it stands in a chunk of 17 (a pair of groups and a lone last one).
#[test]
fn rfc9496_a2_invalid_encodings_rejected_in_batches() {
    let k = scalar(9);
    let good: Vec<[u8; 32]> = points(17, 5)
        .iter()
        .map(|p| p.compress().to_bytes())
        .collect();
    for (i, hex_bad) in common::RFC9496_A2_INVALID.iter().enumerate() {
        let b: [u8; 32] = hex::decode(hex_bad).unwrap().try_into().unwrap();
        assert!(CompressedRistretto(b).decompress().is_none(), "vector {i}");
        for pos in [0usize, 7, 8, 15, 16] {
            let mut enc = good.clone();
            enc[pos] = b;
            let mut out = vec![[0u8; 32]; 17];
            let e = Ristretto255::decode_mul_and_encode_chunk(&enc, 0, &k, &mut out).unwrap_err();
            assert!(
                matches!(e, Error::Batch { index, .. } if index == pos),
                "vector {i} at {pos}: {e:?}"
            );
        }
    }
}

/// RFC 9496 Appendix A.1: the encodings of `[1..16)B` in one chunk (a pair of groups, the
/// second partial) through the batch step with `k = 1` come back unchanged, and `[j]B` from
/// the encoding of `B` with `k = j`.
#[test]
fn rfc9496_a1_multiples_of_the_generator() {
    let want: Vec<[u8; 32]> = [
        "e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76",
        "6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919",
        "94741f5d5d52755ece4f23f044ee27d5d1ea1e2bd196b462166b16152a9d0259",
        "da80862773358b466ffadfe0b3293ab3d9fd53c5ea6c955358f568322daf6a57",
        "e882b131016b52c1d3337080187cf768423efccbb517bb495ab812c4160ff44e",
        "f64746d3c92b13050ed8d80236a7f0007c3b3f962f5ba793d19a601ebb1df403",
        "44f53520926ec81fbd5a387845beb7df85a96a24ece18738bdcfa6a7822a176d",
        "903293d8f2287ebe10e2374dc1a53e0bc887e592699f02d077d5263cdd55601c",
        "02622ace8f7303a31cafc63f8fc48fdc16e1c8c8d234b2f0d6685282a9076031",
        "20706fd788b2720a1ed2a5dad4952b01f413bcf0e7564de8cdc816689e2db95f",
        "bce83f8ba5dd2fa572864c24ba1810f9522bc6004afe95877ac73241cafdab42",
        "e4549ee16b9aa03099ca208c67adafcafa4c3f3e4e5303de6026e3ca8ff84460",
        "aa52e000df2e16f55fb1032fc33bc42742dad6bd5a8fc0be0167436c5948501f",
        "46376b80f409b29dc2b5f6f0c52591990896e5716f41477cd30085ab7f10301e",
        "e0c418f7c8d9c4cdd7395b93ea124f3ad99021bb681dfc3302a9d99a2e53e64e",
    ]
    .iter()
    .map(|x| hex::decode(x).unwrap().try_into().unwrap())
    .collect();
    let scalar_j = |j: u8| {
        let mut b = [0u8; 32];
        b[0] = j;
        Ristretto255::scalar_from_bytes(&b).unwrap()
    };
    let mut out = vec![[0u8; 32]; want.len()];
    Ristretto255::decode_mul_and_encode_chunk(&want, 0, &scalar_j(1), &mut out).unwrap();
    assert_eq!(out, want);
    let g = [want[0]];
    for (j, w) in (1u8..).zip(&want) {
        let mut out = [[0u8; 32]];
        Ristretto255::decode_mul_and_encode_chunk(&g, 0, &scalar_j(j), &mut out).unwrap();
        assert_eq!(out[0], *w, "[{j}]B");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// Random points, random scalar, random size (odd sizes included): the lanes equal dalek.
    #[test]
    fn random_chunks_match_dalek(seed: u64, n in 0usize..40) {
        let pts = points(n, seed);
        let enc: Vec<[u8; 32]> = pts.iter().map(|p| p.compress().to_bytes()).collect();
        let k = scalar(seed ^ 0x5555);
        let mut out = vec![[0u8; 32]; n];
        Ristretto255::decode_mul_and_encode_chunk(&enc, 0, &k, &mut out).unwrap();
        prop_assert_eq!(&out, &reference(&pts, k.expose_secret()));
        let mut out2 = vec![[0u8; 32]; n];
        Ristretto255::mul_and_encode_chunk(&pts, &k, &mut out2);
        prop_assert_eq!(out2, out);
    }

    /// Random 32-byte strings in a chunk: the batch accepts exactly when dalek's decoder
    /// accepts every one, and then agrees with dalek.
    #[test]
    fn random_bytes_rejected_like_dalek(seed: u64, n in 1usize..20) {
        let mut r = rng(seed);
        let mut enc: Vec<[u8; 32]> = points(n, seed).iter().map(|p| p.compress().to_bytes()).collect();
        let pos = usize::try_from(seed % 64).unwrap() % n;
        rand::Rng::fill_bytes(&mut r, &mut enc[pos]);
        let k = scalar(seed);
        let mut o1 = vec![[0u8; 32]; n];
        let mut o2 = vec![[0u8; 32]; n];
        let a = Ristretto255::decode_mul_and_encode_chunk(&enc, 0, &k, &mut o1);
        let b = Ristretto255::decode_mul_and_encode_chunk_dalek(&enc, 0, &k, &mut o2);
        prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
        if a.is_ok() {
            prop_assert_eq!(o1, o2);
        }
    }
}
