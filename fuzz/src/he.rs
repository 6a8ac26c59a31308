//! obliv-he's key and ciphertext decoders: Paillier (big-endian bytes and JSON), EC ElGamal
//! on ristretto255 and MODP ElGamal (JSON).

use std::sync::OnceLock;

use curve25519_dalek::RistrettoPoint;
use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_he::elgamal::{ec, modp};
use obliv_he::paillier;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A fixed 2048-bit Paillier key pair (generated once from a fixed seed).
pub fn paillier_keys() -> &'static paillier::Keypair {
    static K: OnceLock<paillier::Keypair> = OnceLock::new();
    K.get_or_init(|| {
        let mut rng = AesRng::from_seed([8; 16]);
        paillier::Keypair::generate_with_rng(2048, &mut rng).expect("paillier key")
    })
}

/// A fixed EC ElGamal key pair on ristretto255.
pub fn ec_keys() -> &'static ec::SecretKey<RistrettoPoint> {
    static K: OnceLock<ec::SecretKey<RistrettoPoint>> = OnceLock::new();
    K.get_or_init(|| ec::SecretKey::generate(&mut AesRng::from_seed([9; 16])))
}

/// A fixed MODP ElGamal key pair (group 14).
pub fn modp_keys() -> &'static modp::SecretKey {
    static K: OnceLock<modp::SecretKey> = OnceLock::new();
    K.get_or_init(|| {
        modp::SecretKey::generate(modp::GroupId::Modp2048, &mut AesRng::from_seed([10; 16]))
    })
}

/// Decodes JSON; if it decodes, its encoding decodes to an equal value and re-encodes to the
/// same JSON (the encoding of a decoded value is canonical).
fn json_round_trip<T: Serialize + DeserializeOwned>(
    bytes: &[u8],
    eq: impl Fn(&T, &T) -> bool,
) -> Option<T> {
    let v: T = serde_json::from_slice(bytes).ok()?;
    let enc = serde_json::to_vec(&v).expect("encode");
    let back: T = serde_json::from_slice(&enc).expect("a value's own encoding decodes");
    assert!(eq(&v, &back), "decode(encode(x)) != x");
    assert_eq!(serde_json::to_vec(&back).expect("encode"), enc);
    Some(v)
}

/// Body of the Paillier target. Input: `kind ‖ bytes`; `kind` mod 4: 0 a ciphertext as bytes
/// (checked against the fixed key and decrypted), 1 a public key, 2 a secret key, 3 a
/// ciphertext, the last three in JSON.
pub fn fuzz_paillier(data: &[u8]) {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    let keys = paillier_keys();
    let ct = match kind % 4 {
        0 => {
            let Ok(c) = paillier::Ciphertext::from_bytes(bytes) else {
                return;
            };
            let again = paillier::Ciphertext::from_bytes(&c.to_bytes()).expect("own bytes");
            assert_eq!(again, c);
            c
        }
        1 => {
            json_round_trip::<paillier::PublicKey>(bytes, |a, b| a == b);
            return;
        }
        2 => {
            if let Some(sk) = json_round_trip::<paillier::SecretKey>(bytes, |a, b| {
                a.public_key() == b.public_key() && a.primes() == b.primes()
            }) {
                // A secret key that decodes works: it decrypts what its public key encrypts.
                let mut rng = AesRng::from_seed([11; 16]);
                let m = obliv_he::Integer::from(12345u32);
                let c = sk
                    .public_key()
                    .encrypt_with_rng(&m, &mut rng)
                    .expect("encrypt");
                assert_eq!(sk.decrypt(&c).expect("decrypt"), m);
            }
            return;
        }
        _ => match json_round_trip::<paillier::Ciphertext>(bytes, |a, b| a == b) {
            Some(c) => c,
            None => return,
        },
    };
    let pk = &keys.public;
    if pk.validate(&ct).is_ok() {
        // A valid ciphertext decrypts, and homomorphic operations on it succeed.
        keys.secret
            .decrypt(&ct)
            .expect("a validated ciphertext decrypts");
        let _ = pk.add(&ct, &ct);
        let _ = pk.neg(&ct);
    } else {
        let _ = keys.secret.decrypt(&ct);
    }
}

/// Body of the ElGamal target. Input: `kind ‖ JSON`; `kind` mod 6: EC ElGamal (ristretto255)
/// public key, ciphertext (decrypted to a point and, within range, to a value), secret key;
/// MODP ElGamal public key, ciphertext (decrypted), secret key.
pub fn fuzz_elgamal(data: &[u8]) {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    match kind % 6 {
        0 => {
            json_round_trip::<ec::PublicKey<RistrettoPoint>>(bytes, |a, b| a == b);
        }
        1 => {
            if let Some(c) = json_round_trip::<ec::Ciphertext<RistrettoPoint>>(bytes, |a, b| a == b)
            {
                let _ = ec_keys().decrypt_point(&c);
            }
        }
        2 => {
            json_round_trip::<ec::SecretKey<RistrettoPoint>>(bytes, |a, b| {
                a.public_key() == b.public_key()
            });
        }
        3 => {
            json_round_trip::<modp::PublicKey>(bytes, |a, b| a == b);
        }
        4 => {
            if let Some(c) = json_round_trip::<modp::Ciphertext>(bytes, |a, b| a == b) {
                let _ = modp_keys().decrypt(&c);
            }
        }
        _ => {
            json_round_trip::<modp::SecretKey>(bytes, |a, b| a.public_key() == b.public_key());
        }
    }
}
