//! `obliv_cpu::disable(&["avx512ifma"])` takes effect at once, in a running process: the batch
//! paths of every group switch to their fallbacks (dalek, `fastmul`, k256) and give the same
//! bytes as before. Its own test binary (one test), since switching off is for the whole
//! process. On a CPU without AVX-512 IFMA both halves run the fallbacks.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use obliv_ec::{FourQ, P256, PrimeGroup, Ristretto255, Secp256k1, Sm2, X25519};
use rand::SeedableRng;

/// `hash_and_mul_batch` and `mul_encoded_batch` of `G` on a fixed input (more than one
/// chunk, not a multiple of the lane count).
fn batches<G: PrimeGroup>() -> (Vec<G::Encoded>, Vec<G::Encoded>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let k = G::random_scalar(&mut rng);
    let items: Vec<String> = (0..1100).map(|i| format!("item {i}")).collect();
    let hashed = G::hash_and_mul_batch(&items, &k);
    let multiplied = G::mul_encoded_batch(&hashed, &k).unwrap();
    (hashed, multiplied)
}

#[test]
fn disable_switches_every_batch_to_its_fallback() {
    let lanes = X25519::batch_backend() == "avx512ifma-8way";
    if !lanes {
        eprintln!(
            "disable_switches_every_batch_to_its_fallback: no AVX-512 IFMA lanes here; \
             both halves run the fallbacks"
        );
    }
    assert_eq!(Ristretto255::batch_backend(), X25519::batch_backend());
    let before = (
        batches::<X25519>(),
        batches::<Ristretto255>(),
        batches::<P256>(),
        batches::<Sm2>(),
        batches::<Secp256k1>(),
        batches::<FourQ>(),
    );
    obliv_cpu::disable(&["avx512ifma"]).unwrap();
    assert!(obliv_cpu::disabled_features().contains(&"avx512ifma"));
    assert_eq!(X25519::batch_backend(), "dalek");
    assert_eq!(Ristretto255::batch_backend(), "dalek");
    let after = (
        batches::<X25519>(),
        batches::<Ristretto255>(),
        batches::<P256>(),
        batches::<Sm2>(),
        batches::<Secp256k1>(),
        batches::<FourQ>(),
    );
    assert!(before.0 == after.0, "X25519");
    assert!(before.1 == after.1, "ristretto255");
    assert!(before.2 == after.2, "P-256");
    assert!(before.3 == after.3, "SM2");
    assert!(before.4 == after.4, "secp256k1");
    assert!(before.5 == after.5, "FourQ");
}
