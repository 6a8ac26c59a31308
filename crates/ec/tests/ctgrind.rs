//! Constant time under memcheck (`.ci/ctgrind`, see `obliv_cpu::ctgrind`): in every
//! group, a scalar is marked secret (its bytes in memory) and used in the single and batch
//! multiplications the PSI protocols call, so any branch or table address that depends on
//! it is reported. Valgrind emulates no AVX-512: the groups run their AVX2, BMI2 and portable
//! code (dalek's AVX2 backend for the 25519 groups). Natively the tests check the results
//! against the same scalar unmarked.
#![allow(clippy::unwrap_used)] // tests

use obliv_cpu::ctgrind::{public, secret};
use obliv_ec::{FourQ, P256, PrimeGroup, Ristretto255, Secp256k1, Sm2, X25519};

fn check<G: PrimeGroup>() {
    let mut rng = rand::rng();
    let k = G::random_scalar(&mut rng);
    let mut marked = k.clone();
    secret(&mut marked);
    let items: Vec<Vec<u8>> = (0u8..5).map(|i| vec![i; 9]).collect();
    let points: Vec<G::Encoded> = items
        .iter()
        .map(|i| G::encode(&G::hash_to_point(i)))
        .collect();
    let p = G::hash_to_point(b"a public point");
    // Single results are declassified before encoding (the encoders test for the identity).
    let (mut r, mut b) = (G::mul(&p, &marked), G::mul_base(&marked));
    public(&mut r);
    public(&mut b);
    let mut got = vec![G::encode(&r), G::encode(&b)];
    got.extend(G::mul_encoded_batch(&points, &marked).unwrap());
    got.extend(G::hash_and_mul_batch(&items, &marked));
    for e in &mut got {
        public(e.as_mut());
    }
    let mut want = vec![G::encode(&G::mul(&p, &k)), G::encode(&G::mul_base(&k))];
    want.extend(G::mul_encoded_batch(&points, &k).unwrap());
    want.extend(G::hash_and_mul_batch(&items, &k));
    assert_eq!(got, want, "{}", G::NAME);
}

/// One ignored test per group (run under valgrind by `.ci/ctgrind`).
macro_rules! ctgrind_tests {
    ($($name:ident: $group:ty),* $(,)?) => {$(
        #[test]
        #[ignore = "run under valgrind by .ci/ctgrind"]
        fn $name() {
            check::<$group>();
        }
    )*};
}

ctgrind_tests! {
    ctgrind_fourq: FourQ,
    ctgrind_x25519: X25519,
    ctgrind_ristretto255: Ristretto255,
    ctgrind_p256: P256,
    ctgrind_sm2: Sm2,
    ctgrind_secp256k1: Secp256k1,
}
