//! Interoperability with python-phe (PyPI `phe` 1.5.0), from known-answer vectors in
//! `vectors/phe_interop.json` made offline by `vectors/make_phe_vectors.py` (see its header for
//! the three steps). The tests read the file only; no Python runs here.
#![allow(clippy::unwrap_used)]

use obliv_he::Integer;
use obliv_he::paillier::{Ciphertext, EncodedNumber, EncryptedNumber, SecretKey};
use serde_json::Value;

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/phe_interop.json"
);

fn load() -> Value {
    serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap()
}

fn hex(v: &Value) -> Integer {
    Integer::from_str_radix(v.as_str().unwrap(), 16).unwrap()
}

fn f64_of(v: &Value) -> f64 {
    f64::from_bits(v.as_str().unwrap().parse::<u64>().unwrap())
}

fn key(d: &Value) -> SecretKey {
    let sk = SecretKey::from_primes(&hex(&d["p"]), &hex(&d["q"])).unwrap();
    assert_eq!(sk.public_key().n(), &hex(&d["n"]));
    sk
}

#[test]
fn we_decrypt_phe_integers() {
    let d = load();
    let sk = key(&d);
    let pk = sk.public_key();
    let mut sum = Integer::new();
    let mut acc: Option<Ciphertext> = None;
    for e in d["phe_ints"].as_array().unwrap() {
        let c = Ciphertext::from_integer(hex(&e["ciphertext"]));
        pk.validate(&c).unwrap();
        let want: Integer = e["value"].as_str().unwrap().parse().unwrap();
        assert_eq!(e["exponent"], 0);
        assert_eq!(pk.decode_signed(&sk.decrypt(&c).unwrap()).unwrap(), want);
        // Homomorphic sum of their ciphertexts, computed here.
        sum += &want;
        acc = Some(match acc {
            None => c,
            Some(a) => pk.add(&a, &c),
        });
    }
    assert_eq!(
        pk.decode_signed(&sk.decrypt(&acc.unwrap()).unwrap())
            .unwrap(),
        sum
    );
}

#[test]
fn we_decrypt_phe_floats_and_match_their_encoding() {
    let d = load();
    let sk = key(&d);
    let pk = sk.public_key();
    for e in d["phe_floats"].as_array().unwrap() {
        let x = f64_of(&e["float_bits"]);
        let exponent = i32::try_from(e["exponent"].as_i64().unwrap()).unwrap();
        // Same encoding as python-phe's EncodedNumber.encode(pk, x).
        let ours = EncodedNumber::encode_f64(pk, x, None, None).unwrap();
        assert_eq!(ours.encoding, hex(&e["encoding"]), "{x}");
        assert_eq!(ours.exponent, exponent, "{x}");
        // Their ciphertext decrypts here to their decoded value.
        let c = EncryptedNumber {
            ciphertext: Ciphertext::from_integer(hex(&e["ciphertext"])),
            exponent,
        };
        let got = sk.decrypt_f64(&c).unwrap();
        assert_eq!(got.to_bits(), f64_of(&e["decoded_bits"]).to_bits(), "{x}");
        assert_eq!(got, x);
    }
    for e in d["phe_precision"].as_array().unwrap() {
        let x = f64_of(&e["float_bits"]);
        let prec = f64_of(&e["precision_bits"]);
        let ours = EncodedNumber::encode_f64(pk, x, Some(prec), None).unwrap();
        assert_eq!(ours.encoding, hex(&e["encoding"]), "{x} {prec}");
        assert_eq!(i64::from(ours.exponent), e["exponent"].as_i64().unwrap());
    }
}

#[test]
fn phe_decrypts_ours() {
    // "ours" were encrypted by obliv-he (write_ours below) and decrypted by python-phe
    // (make_phe_vectors.py decrypt); both must give the value we meant.
    let d = load();
    let sk = key(&d);
    let ours = d["ours"].as_array().unwrap();
    assert!(ours.len() >= 8, "run the vector steps: ours is missing");
    for o in ours {
        let exponent = i32::try_from(o["exponent"].as_i64().unwrap()).unwrap();
        let c = EncryptedNumber {
            ciphertext: Ciphertext::from_integer(hex(&o["ciphertext"])),
            exponent,
        };
        if o["kind"] == "float" {
            let want = f64_of(&o["intended"]);
            assert_eq!(f64_of(&o["phe_decrypted"]), want);
            assert_eq!(sk.decrypt_f64(&c).unwrap(), want);
        } else {
            let want: Integer = o["intended"].as_str().unwrap().parse().unwrap();
            let theirs: Integer = o["phe_decrypted"].as_str().unwrap().parse().unwrap();
            assert_eq!(theirs, want);
            let pk = sk.public_key();
            assert_eq!(
                pk.decode_signed(&sk.decrypt(&c.ciphertext).unwrap())
                    .unwrap(),
                want
            );
        }
    }
}

/// Step 2 of the vector generation (writes the file): `OBLIV_WRITE_VECTORS=1 cargo test -p
/// obliv-he --test interop -- --ignored write_ours`.
#[test]
#[ignore = "regenerates the test vectors; run by hand with make_phe_vectors.py"]
fn write_ours() {
    // Guard against `--include-ignored` runs: rewriting the file drops python-phe's results.
    if std::env::var("OBLIV_WRITE_VECTORS").as_deref() != Ok("1") {
        eprintln!("set OBLIV_WRITE_VECTORS=1 to regenerate the vectors");
        return;
    }
    let mut d = load();
    let sk = key(&d);
    let pk = sk.public_key().clone();
    let mut ours = Vec::new();
    let hexs = |c: &Ciphertext| c.as_integer().to_string_radix(16);
    for v in [0i64, 7, -7, i64::MAX, i64::MIN, 1_000_000_007] {
        // Alternate public-key (DJN) and secret-key (CRT) encryption.
        let m = pk.encode_signed(&Integer::from(v)).unwrap();
        let c = if v % 2 == 0 {
            pk.encrypt(&m).unwrap()
        } else {
            sk.encrypt(&m).unwrap()
        };
        ours.push(
            serde_json::json!({"kind": "int", "intended": v.to_string(), "exponent": 0,
            "ciphertext": hexs(&c)}),
        );
    }
    // A homomorphic result: 3·(5 + (−2)) − 4 = 5.
    let a = pk.encrypt_i64(5).unwrap();
    let b = pk.encrypt_i64(-2).unwrap();
    let c = pk
        .sub(
            &pk.mul_plain(&pk.add(&a, &b), &Integer::from(3)).unwrap(),
            &pk.encrypt_i64(4).unwrap(),
        )
        .unwrap();
    ours.push(
        serde_json::json!({"kind": "int", "intended": "5", "exponent": 0, "ciphertext": hexs(&c)}),
    );
    for x in [0.5f64, -3.75, std::f64::consts::E, 1e-9] {
        let c = pk.encrypt_f64(x).unwrap();
        ours.push(
            serde_json::json!({"kind": "float", "intended": x.to_bits().to_string(),
            "exponent": c.exponent, "ciphertext": hexs(&c.ciphertext)}),
        );
    }
    let x = pk.encrypt_f64(1.25).unwrap();
    let y = pk.encrypt_f64(-0.125).unwrap();
    let s = pk.add_encrypted(&x, &y).unwrap();
    ours.push(
        serde_json::json!({"kind": "float", "intended": 1.125f64.to_bits().to_string(),
        "exponent": s.exponent, "ciphertext": hexs(&s.ciphertext)}),
    );
    d["ours"] = Value::Array(ours);
    std::fs::write(PATH, serde_json::to_string_pretty(&d).unwrap()).unwrap();
}
