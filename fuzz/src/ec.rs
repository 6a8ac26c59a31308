//! Every point decoder: obliv-ec's six groups (one decode, the batch decode-and-multiply path
//! the protocols use on peer points, and the runtime `DynGroup`) and obliv-fourq's own
//! decoders.

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_ec::{
    Curve, DynGroup, Encoding, FourQ, P256, PrimeGroup, Ristretto255, Secp256k1, Sm2, X25519,
};

/// Checks one group on `bytes`, read as a sequence of encodings (the trailing partial one
/// dropped): each encoding alone, and all of them through the batch path.
fn check_group<G: PrimeGroup>(bytes: &[u8]) {
    let encs: Vec<&[u8]> = bytes.chunks_exact(G::ENCODED_LEN).collect();
    // A wrong-length input is an error, never a panic.
    assert!(G::decode(bytes).is_err() || bytes.len() == G::ENCODED_LEN);
    let mut decoded = Vec::with_capacity(encs.len());
    for e in &encs {
        let r = G::decode(e);
        if let Ok(p) = &r {
            let enc = G::encode(p);
            // X25519's decode projects onto the prime-order subgroup (its encodings of other
            // points are accepted); every other group takes canonical encodings of
            // subgroup points only, which re-encode to the same bytes.
            if G::NAME != X25519::NAME {
                assert_eq!(enc.as_ref(), *e, "{} re-encodes differently", G::NAME);
            }
            assert_eq!(G::decode(enc.as_ref()).ok(), Some(*p), "{}", G::NAME);
        }
        decoded.push(r.is_ok());
    }
    if encs.is_empty() {
        return;
    }
    // The batch path on the same encodings: with every encoding valid it gives `decode` then
    // `mul`; otherwise it fails at the first encoding `decode` refuses. FourQ's batch path
    // clears the cofactor instead of checking the subgroup (documented): it also accepts
    // on-curve points with a torsion part, so it fails at the first one off the curve or of
    // small order.
    let on_curve = |e: &[u8]| {
        <[u8; 32]>::try_from(e).is_ok_and(|a| {
            bool::from(obliv_fourq::Point::from_bytes_unchecked_subgroup(&a).is_some())
        })
    };
    let fourq = G::NAME == FourQ::NAME;
    let k = G::random_scalar(&mut AesRng::from_seed([12; 16]));
    let mut out = vec![G::Encoded::zeroed(); encs.len()];
    let batch = G::decode_mul_and_encode_chunk(&encs, 0, &k, &mut out);
    let first_bad = decoded.iter().position(|ok| !ok);
    match batch {
        Ok(()) => {
            if fourq {
                assert!(
                    encs.iter().all(|e| on_curve(e)),
                    "FourQ batch took an off-curve point"
                );
            } else {
                assert_eq!(
                    first_bad,
                    None,
                    "{}: batch took a point decode refuses",
                    G::NAME
                );
            }
            for ((e, o), ok) in encs.iter().zip(&out).zip(&decoded) {
                if *ok {
                    let p = G::decode(e).expect("decoded above");
                    let want = G::encode(&G::mul(&p, &k));
                    assert_eq!(want.as_ref(), o.as_ref(), "{}", G::NAME);
                }
            }
        }
        Err(obliv_ec::Error::Batch { index, .. }) => {
            assert!(index < encs.len());
            assert!(!decoded[index], "{}: batch refused a valid point", G::NAME);
            if fourq {
                assert!(encs[..index].iter().all(|e| on_curve(e)));
            } else {
                assert_eq!(Some(index), first_bad, "{}", G::NAME);
            }
        }
        Err(e) => panic!("{}: batch error without an index: {e}", G::NAME),
    }
}

/// Body of the point target. Input: `curve ‖ bytes`.
pub fn fuzz(data: &[u8]) {
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    match which % 8 {
        0 => check_group::<FourQ>(bytes),
        1 => check_group::<X25519>(bytes),
        2 => check_group::<Ristretto255>(bytes),
        3 => check_group::<Sm2>(bytes),
        4 => check_group::<Secp256k1>(bytes),
        5 => check_group::<P256>(bytes),
        6 => {
            // obliv-fourq alone: its checked and unchecked decoders.
            let r = obliv_fourq::Point::decode(bytes);
            if let Ok(p) = &r {
                assert_eq!(&p.to_bytes()[..], bytes);
            }
            if let Ok(a) = <[u8; 32]>::try_from(bytes) {
                let strict = obliv_fourq::Point::from_bytes(&a);
                let loose = obliv_fourq::Point::from_bytes_unchecked_subgroup(&a);
                if bool::from(strict.is_some()) {
                    assert!(bool::from(loose.is_some()));
                    assert!(r.is_ok());
                    assert_eq!(strict.unwrap().to_bytes(), a);
                }
                if bool::from(loose.is_some()) {
                    assert_eq!(loose.unwrap().to_bytes(), a);
                }
                let many = obliv_fourq::Point::from_bytes_many(&[a, a]);
                assert_eq!(bool::from(many[0].is_some()), bool::from(strict.is_some()));
            }
        }
        _ => {
            // The runtime group on a flat buffer of encodings, as the protocols hand it
            // their peer's frames.
            let curve = Curve::ALL[usize::from(bytes.first().copied().unwrap_or(0)) % 6];
            let g = DynGroup::new(curve).expect("group");
            let flat = bytes.get(1..).unwrap_or(&[]);
            let k = g
                .random_secret(&mut AesRng::from_seed([13; 16]))
                .expect("secret");
            let r = g.mul_encoded_batch(flat, &k);
            if let Ok(out) = &r {
                assert_eq!(out.len(), flat.len());
            } else {
                assert!(!flat.is_empty() || r.is_ok());
            }
            let h = g.hash_encoded_batch(flat);
            if let Ok(h) = h {
                assert_eq!(h.len() * g.encoded_len(), flat.len());
            }
            let _ = g.secret_from_bytes(flat);
        }
    }
}
