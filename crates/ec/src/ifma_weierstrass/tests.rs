//! The lanes against the serial `fastmul` path: same outputs on random inputs, chunk
//! sizes around the lane count, special scalars, and rejections at the same index.
use super::*;
use crate::fastmul::{
    P256Params, Secp256k1Params, Sm2Params, hash_to_curve, mul_affine_batch as serial, recode,
};
use k256::hash2curve::ExpandMsgXmd;
use rand::{RngExt, SeedableRng};

fn serial_hash<C: Params, X>(msg: &[u8]) -> AffineXy
where
    X: k256::hash2curve::ExpandMsg<k256::elliptic_curve::consts::U16>,
{
    hash_to_curve::<C, X>(msg, b"DST-lanes").unwrap()
}

/// `n − m` big-endian.
fn n_minus<C: Params>(m: u64) -> [u8; 32] {
    let mut l = C::N;
    l[0] -= m; // the low limbs of both orders exceed 2^32
    be_bytes(&l)
}

fn scalars<C: Params>(rng: &mut rand::rngs::StdRng) -> Vec<[u8; 32]> {
    let mut v = vec![];
    for m in [1u64, 2, 3] {
        v.push(be_bytes(&[m, 0, 0, 0]));
    }
    for m in 1..=64 {
        v.push(n_minus::<C>(m));
    }
    for _ in 0..4 {
        let mut k: [u8; 32] = rng.random();
        k[0] &= 0x7f; // below n
        v.push(k);
    }
    v
}

fn check_curve<C: Params, X>()
where
    X: k256::hash2curve::ExpandMsg<k256::elliptic_curve::consts::U16>,
{
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let ks = scalars::<C>(&mut rng);
    for &n in &[0usize, 1, 7, 8, 9, 1000] {
        let msgs: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("item {i} of {n}").into_bytes())
            .collect();
        let mut pts: Vec<AffineXy> = msgs.iter().map(|m| serial_hash::<C, X>(m)).collect();
        if n > 3 {
            pts[2] = None; // an identity input
        }
        let kset: Vec<&[u8; 32]> = match n {
            9 => ks.iter().collect(),
            1000 => ks.iter().skip(ks.len() - 1).collect(),
            _ => ks.iter().skip(ks.len() - 3).collect(),
        };
        for k in kset {
            let mut want = vec![[0u8; 33]; n];
            serial::<C>(&pts, &recode(k), &mut want);
            let mut got = vec![[1u8; 33]; n];
            assert!(mul_affine_batch::<C>(&pts, k, &mut got));
            assert_eq!(got, want, "mul n={n}");

            // Hash lanes = serial hash then serial multiplication.
            let hpts: Vec<AffineXy> = msgs.iter().map(|m| serial_hash::<C, X>(m)).collect();
            serial::<C>(&hpts, &recode(k), &mut want);
            let mut got = vec![[1u8; 33]; n];
            assert!(hash_mul_batch::<C, X, _>(&msgs, b"DST-lanes", k, &mut got));
            assert_eq!(got, want, "hash n={n}");

            // Decode lanes on the serial hash encodings.
            let mut encs = vec![[0u8; 33]; n];
            serial::<C>(&hpts, &recode(&be_bytes(&[1, 0, 0, 0])), &mut encs);
            let mut want = vec![[0u8; 33]; n];
            serial::<C>(&hpts, &recode(k), &mut want);
            let mut got = vec![[1u8; 33]; n];
            assert_eq!(decode_mul_batch::<C, _>(&encs, k, &mut got), Some(Ok(())));
            assert_eq!(got, want, "decode n={n}");
        }
    }
    // Rejections: the first bad index, whichever check fails.
    let msgs: Vec<Vec<u8>> = (0..20).map(|i| vec![i]).collect();
    let hpts: Vec<AffineXy> = msgs.iter().map(|m| serial_hash::<C, X>(m)).collect();
    let mut encs = vec![[0u8; 33]; 20];
    serial::<C>(&hpts, &recode(&be_bytes(&[1, 0, 0, 0])), &mut encs);
    let k = be_bytes(&[5, 0, 0, 0]);
    let mut out = vec![[0u8; 33]; 20];
    // An x with no point: try x+1, x+2, ... until off the curve.
    let mut off = encs[13];
    loop {
        off[32] = off[32].wrapping_add(1);
        let mut tmp = vec![[0u8; 33]; 1];
        if decode_mul_batch::<C, _>(&[off], &k, &mut tmp) == Some(Err(0)) {
            break;
        }
    }
    let mut e = encs.clone();
    e[13] = off;
    assert_eq!(decode_mul_batch::<C, _>(&e, &k, &mut out), Some(Err(13)));
    let mut e2 = e.clone();
    e2[17][0] = 0x04;
    assert_eq!(decode_mul_batch::<C, _>(&e2, &k, &mut out), Some(Err(13)));
    e2[5] = [0u8; 33];
    assert_eq!(decode_mul_batch::<C, _>(&e2, &k, &mut out), Some(Err(5)));
    let mut e3 = encs.clone();
    e3[9][1..].copy_from_slice(&be_bytes(&C::P)); // x = p
    assert_eq!(decode_mul_batch::<C, _>(&e3, &k, &mut out), Some(Err(9)));
    let short: Vec<&[u8]> = encs
        .iter()
        .enumerate()
        .map(|(i, x)| if i == 4 { &x[..32] } else { &x[..] })
        .collect();
    assert_eq!(decode_mul_batch::<C, _>(&short, &k, &mut out), Some(Err(4)));
}

#[test]
fn lanes_match_serial_sm2() {
    if !lanes_for_test("lanes_match_serial_sm2") {
        return;
    }
    check_curve::<Sm2Params, ExpandMsgXmd<sm3::Sm3>>();
}

#[test]
fn lanes_match_serial_p256() {
    if !lanes_for_test("lanes_match_serial_p256") {
        return;
    }
    check_curve::<P256Params, ExpandMsgXmd<sha2::Sha256>>();
}

fn k256_xy(p: &k256::ProjectivePoint) -> AffineXy {
    use k256::elliptic_curve::sec1::ToSec1Point;
    let s = group::Curve::to_affine(p).to_sec1_point(false);
    match (s.x(), s.y()) {
        (Some(x), Some(y)) => Some((
            x.as_slice().try_into().unwrap(),
            y.as_slice().try_into().unwrap(),
        )),
        _ => None,
    }
}

fn k256_enc(p: &k256::ProjectivePoint) -> [u8; 33] {
    let b = group::GroupEncoding::to_bytes(&group::Curve::to_affine(p));
    b.as_slice().try_into().unwrap()
}

#[test]
fn lanes_match_k256() {
    use ff::PrimeField;
    use k256::hash2curve::hash_from_bytes;
    if !lanes_for_test("lanes_match_k256") {
        return;
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let ks = scalars::<Secp256k1Params>(&mut rng);
    for &n in &[0usize, 1, 7, 8, 9, 1000] {
        let mut pts: Vec<k256::ProjectivePoint> = (0..n)
            .map(|i| {
                hash_from_bytes::<k256::Secp256k1, ExpandMsgXmd<sha2::Sha256>>(
                    &[format!("k256 item {i}").as_bytes()],
                    &[b"DST"],
                )
                .unwrap()
            })
            .collect();
        let encs: Vec<[u8; 33]> = pts.iter().map(k256_enc).collect();
        if n > 3 {
            pts[2] = k256::ProjectivePoint::IDENTITY;
        }
        let coords: Vec<AffineXy> = pts.iter().map(k256_xy).collect();
        let kset: Vec<&[u8; 32]> = match n {
            9 => ks.iter().collect(),
            1000 => ks.iter().skip(ks.len() - 1).collect(),
            _ => ks.iter().skip(ks.len() - 3).collect(),
        };
        for k in kset {
            let s = Option::<k256::Scalar>::from(k256::Scalar::from_repr((*k).into())).unwrap();
            let want: Vec<[u8; 33]> = pts.iter().map(|p| k256_enc(&(p * &s))).collect();
            let mut got = vec![[1u8; 33]; n];
            assert!(mul_affine_batch::<Secp256k1Params>(&coords, k, &mut got));
            assert_eq!(got, want, "mul n={n}");
            let want: Vec<[u8; 33]> = encs
                .iter()
                .map(|e| {
                    let p = Option::<k256::AffinePoint>::from(
                        <k256::AffinePoint as group::GroupEncoding>::from_bytes(&(*e).into()),
                    )
                    .unwrap();
                    k256_enc(&(k256::ProjectivePoint::from(p) * s))
                })
                .collect();
            let mut got = vec![[1u8; 33]; n];
            assert_eq!(
                decode_mul_batch::<Secp256k1Params, _>(&encs, k, &mut got),
                Some(Ok(()))
            );
            assert_eq!(got, want, "decode n={n}");
        }
    }
}

#[test]
fn recoding_reconstructs_the_scalar() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    for k in scalars::<Sm2Params>(&mut rng) {
        let r = Recoded::new::<Sm2Params>(&k);
        // Σ d_i 32^i as a big integer (i128 limbs would overflow: use u64 limbs mod 2^256).
        let mut acc = [0u64; 4];
        for i in (0..DIGITS).rev() {
            // acc = acc·32 + d_i
            let mut c = 0u64;
            for limb in &mut acc {
                let t = (u128::from(*limb) << 5) | u128::from(c);
                *limb = t as u64;
                c = (t >> 64) as u64;
            }
            let d = 2 * u64::from(r.idx[i]) + 1;
            let add = if r.neg[i] == 1 { d.wrapping_neg() } else { d };
            let ext = if r.neg[i] == 1 { u64::MAX } else { 0 };
            let mut c = 0u64;
            for (j, limb) in acc.iter_mut().enumerate() {
                let a = if j == 0 { add } else { ext };
                let t = u128::from(*limb) + u128::from(a) + u128::from(c);
                *limb = t as u64;
                c = (t >> 64) as u64;
            }
        }
        let kl = le_limbs(&k);
        let want = if kl[0] & 1 == 1 {
            kl
        } else {
            le_limbs(&n_minus::<Sm2Params>(0))
                .iter()
                .zip(kl)
                .fold((vec![], 0u64), |(mut v, b), (n, x)| {
                    let t = u128::from(*n)
                        .wrapping_sub(u128::from(x))
                        .wrapping_sub(u128::from(b));
                    v.push(t as u64);
                    (v, (t >> 127) as u64)
                })
                .0
                .try_into()
                .unwrap()
        };
        assert_eq!(acc, want);
        assert_eq!(r.negate, u8::from(kl[0] & 1 == 0));
        assert!(r.idx.iter().all(|&i| i < 16));
    }
}

/// The window look-up of the lanes reads all sixteen table entries, in the same order, for
/// every digit: the trace of every entry read ([`crate::scan_trace`]) over a whole batch
/// (multiplication, hash-and-multiply and decode-and-multiply, two lane groups) is the same
/// for every scalar (edge values and random ones), and has `16 × DIGITS` reads per
/// eight-lane multiplication.
#[test]
fn window_lookup_trace_is_independent_of_the_scalar() {
    fn check<C: Params, X>()
    where
        X: k256::hash2curve::ExpandMsg<k256::elliptic_curve::consts::U16>,
    {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let msgs: Vec<Vec<u8>> = (0..9u8).map(|i| vec![i; 3]).collect();
        let pts: Vec<AffineXy> = msgs.iter().map(|m| serial_hash::<C, X>(m)).collect();
        let mut encs = vec![[0u8; 33]; pts.len()];
        serial::<C>(&pts, &recode(&be_bytes(&[1, 0, 0, 0])), &mut encs);
        let mut out = vec![[0u8; 33]; pts.len()];
        let _ = crate::scan_trace::take();
        let mut first = None;
        let ks = scalars::<C>(&mut rng);
        // 1, 2, 3, n − 1 … n − 5 and four random scalars.
        for k in ks.iter().take(8).chain(ks.iter().rev().take(4)) {
            assert!(mul_affine_batch::<C>(&pts, k, &mut out));
            let mul = crate::scan_trace::take();
            assert!(hash_mul_batch::<C, X, _>(&msgs, b"DST-lanes", k, &mut out));
            let hash = crate::scan_trace::take();
            assert_eq!(decode_mul_batch::<C, _>(&encs, k, &mut out), Some(Ok(())));
            let decode = crate::scan_trace::take();
            // Two groups of eight lanes, DIGITS look-ups of 16 entries each.
            let reads = 2 * 16 * DIGITS as u64;
            assert_eq!((mul.0, hash.0, decode.0), (reads, reads, reads));
            let traces = (mul, hash, decode);
            match first {
                None => first = Some(traces),
                Some(f) => assert_eq!(f, traces, "the trace depends on the scalar"),
            }
        }
    }
    if !lanes_for_test("window_lookup_trace_is_independent_of_the_scalar") {
        return;
    }
    check::<P256Params, ExpandMsgXmd<sha2::Sha256>>();
    check::<Sm2Params, ExpandMsgXmd<sm3::Sm3>>();
}
