//! Unit and property tests for Paillier. A 2048-bit key is generated once per test binary and
//! shared; property tests use a 1024-bit key from the explicitly insecure test constructor.

use std::sync::OnceLock;

use crate::bigint::Integer;
use proptest::prelude::*;

use super::*;

pub(crate) fn key2048() -> &'static Keypair {
    static K: OnceLock<Keypair> = OnceLock::new();
    K.get_or_init(|| Keypair::generate(2048).expect("2048 is allowed"))
}

/// Test-only size: 1024 bits is insecure.
pub(crate) fn key1024() -> &'static Keypair {
    static K: OnceLock<Keypair> = OnceLock::new();
    K.get_or_init(|| Keypair::generate_insecure_for_tests(1024).expect("test size"))
}

#[test]
fn keygen_shape() {
    let k = key2048();
    let (p, q) = k.secret.primes();
    assert_eq!(k.public.bits(), 2048);
    assert_eq!(p.significant_bits(), 1024);
    assert_eq!(q.significant_bits(), 1024);
    assert_eq!(p.mod_u64(4), 3);
    assert_eq!(q.mod_u64(4), 3);
    assert_eq!((p * q), *k.public.n());
    assert_eq!(k.public.randomness_bits(), 224);
    assert!(Keypair::generate(1024).is_err());
    assert!(Keypair::generate(2047).is_err());
    assert!(Keypair::generate_insecure_for_tests(255).is_err());
}

#[test]
fn roundtrip_edges_2048() {
    let k = key2048();
    let n = k.public.n().clone();
    for m in [
        Integer::new(),
        Integer::from(1u32),
        (&n - 1u32),
        (&n >> 1u32),
    ] {
        let c = k.public.encrypt(&m).expect("in range");
        assert_eq!(k.secret.decrypt(&c).expect("valid"), m);
        let c = k.secret.encrypt(&m).expect("in range");
        assert_eq!(k.secret.decrypt(&c).expect("valid"), m);
    }
    assert_eq!(k.public.encrypt(&n), Err(Error::PlaintextOutOfRange));
    assert_eq!(
        k.public.encrypt(&Integer::from(-1)),
        Err(Error::PlaintextOutOfRange)
    );
    assert_eq!(k.secret.encrypt(&n), Err(Error::PlaintextOutOfRange));
}

#[test]
fn encryption_is_randomised_and_rerandomisable() {
    let k = key2048();
    let m = Integer::from(42u32);
    let a = k.public.encrypt(&m).expect("ok");
    let b = k.public.encrypt(&m).expect("ok");
    assert_ne!(a, b);
    let r = k.public.rerandomize(&a);
    assert_ne!(r, a);
    assert_eq!(k.secret.decrypt(&r).expect("ok"), m);
}

#[test]
fn matches_textbook_paillier() {
    // c = g^m · r^n mod n² with a full-size r (what python-phe does) decrypts to m.
    let k = key2048();
    let n = k.public.n();
    let n2 = k.public.n_squared();
    let m = Integer::from(123_456_789u32);
    let r = Integer::from(987_654_321u32);
    let c = ((&m * n) + 1u32) * r.pow_mod(n, n2).expect("odd") % n2;
    assert_eq!(
        k.secret.decrypt(&Ciphertext::from_integer(c)).expect("ok"),
        m
    );
}

#[test]
fn malformed_ciphertexts_are_rejected() {
    let k = key2048();
    let (p, _) = k.secret.primes();
    let n2 = k.public.n_squared().clone();
    for bad in [
        Integer::new(),
        n2.clone(),
        (&n2 + 5u32),
        p.clone(),
        Integer::from(-3),
    ] {
        let c = Ciphertext::from_integer(bad);
        assert!(matches!(
            k.secret.decrypt(&c),
            Err(Error::MalformedCiphertext(_))
        ));
        assert!(k.public.validate(&c).is_err());
    }
    let good = k.public.encrypt(&Integer::from(7u32)).expect("ok");
    assert!(k.public.validate(&good).is_ok());
    // A ciphertext under another key is (with overwhelming probability) garbage, never a panic.
    let other = key1024();
    let c = other.public.encrypt(&Integer::from(7u32)).expect("ok");
    assert_ne!(k.secret.decrypt(&c).ok(), Some(Integer::from(7u32)));
}

#[test]
fn signed_and_overflow() {
    let k = key2048();
    for v in [0i64, 1, -1, i64::MAX, i64::MIN, -123_456] {
        let c = k.public.encrypt_i64(v).expect("ok");
        assert_eq!(k.secret.decrypt_i64(&c).expect("ok"), v);
    }
    // A value in the overflow band is an error, not a wrapped number.
    let band = k.public.n() >> 1u32;
    let c = k.public.encrypt(&band).expect("ok");
    assert!(matches!(k.secret.decrypt_i64(&c), Err(Error::Overflow(_))));
    // i64 overflow of a valid signed value is an error too.
    let big = Integer::from(i64::MAX) + 1u32;
    let c = k.public.encrypt(&big).expect("ok");
    assert!(matches!(k.secret.decrypt_i64(&c), Err(Error::Overflow(_))));
    let too_big = k.public.max_int() + 1u32;
    assert!(k.public.encode_signed(&too_big).is_err());
}

#[test]
fn homomorphic_ops_2048() {
    let k = key2048();
    let (pk, sk) = (&k.public, &k.secret);
    let a = pk.encrypt_i64(1000).expect("ok");
    let b = pk.encrypt_i64(-37).expect("ok");
    assert_eq!(sk.decrypt_i64(&pk.add(&a, &b)).expect("ok"), 963);
    assert_eq!(
        sk.decrypt_i64(&pk.sub(&a, &b).expect("ok")).expect("ok"),
        1037
    );
    assert_eq!(sk.decrypt_i64(&pk.neg(&a).expect("ok")).expect("ok"), -1000);
    assert_eq!(
        sk.decrypt_i64(&pk.mul_plain(&b, &Integer::from(-3)).expect("ok"))
            .expect("ok"),
        111
    );
    assert_eq!(
        sk.decrypt_i64(&pk.mul_plain(&a, &Integer::from(5u32)).expect("ok"))
            .expect("ok"),
        5000
    );
    let k7 = pk.encode_signed(&Integer::from(-7)).expect("ok");
    assert_eq!(
        sk.decrypt_i64(&pk.add_plain(&a, &k7).expect("ok"))
            .expect("ok"),
        993
    );
    assert!(pk.add_plain(&a, pk.n()).is_err());
}

#[test]
fn batches_match_single() {
    let k = key1024();
    let (pk, sk) = (&k.public, &k.secret);
    let vs: Vec<i64> = (-20..20).map(|i| i * 1_000_003).collect();
    let cs = pk.encrypt_i64_batch(&vs).expect("ok");
    assert_eq!(sk.decrypt_i64_batch(&cs).expect("ok"), vs);
    let ms: Vec<Integer> = (0..40u32).map(Integer::from).collect();
    let ds = sk.encrypt_batch(&ms).expect("ok");
    assert_eq!(sk.decrypt_batch(&ds).expect("ok"), ms);
    let sums = pk.add_batch(&cs, &ds).expect("ok");
    let diffs = pk.sub_batch(&cs, &ds).expect("ok");
    let negs = pk.neg_batch(&cs).expect("ok");
    let prods = pk.mul_plain_batch(&cs, &ms).expect("ok");
    let plus = pk.add_plain_batch(&cs, &ms).expect("ok");
    let rr = pk.rerandomize_batch(&cs);
    pk.validate_batch(&rr).expect("valid");
    for i in 0..40 {
        let v = vs[i];
        let m = i64::try_from(i).expect("small");
        assert_eq!(sk.decrypt_i64(&sums[i]).expect("ok"), v + m);
        assert_eq!(sk.decrypt_i64(&diffs[i]).expect("ok"), v - m);
        assert_eq!(sk.decrypt_i64(&negs[i]).expect("ok"), -v);
        assert_eq!(sk.decrypt_i64(&prods[i]).expect("ok"), v * m);
        assert_eq!(sk.decrypt_i64(&plus[i]).expect("ok"), v + m);
        assert_eq!(sk.decrypt_i64(&rr[i]).expect("ok"), v);
    }
    assert_eq!(
        sk.decrypt_i64(&pk.sum(&cs)).expect("ok"),
        vs.iter().sum::<i64>()
    );
    assert!(pk.add_batch(&cs, &ds[1..]).is_err());
}

#[test]
fn serde_roundtrip() {
    let k = key1024();
    // The insecure 1024-bit key is refused by deserialisation (2048-bit minimum)...
    let s = serde_json::to_string(&k.public).expect("ser");
    assert!(serde_json::from_str::<PublicKey>(&s).is_err());
    // ...the 2048-bit one round-trips.
    let k = key2048();
    let s = serde_json::to_string(&k.public).expect("ser");
    let pk: PublicKey = serde_json::from_str(&s).expect("de");
    assert_eq!(pk, k.public);
    let s = serde_json::to_string(&k.secret).expect("ser");
    let sk: SecretKey = serde_json::from_str(&s).expect("de");
    assert_eq!(sk.public_key(), &k.public);
    let c = pk.encrypt_i64(-99).expect("ok");
    let s = serde_json::to_string(&c).expect("ser");
    let c2: Ciphertext = serde_json::from_str(&s).expect("de");
    assert_eq!(c2, c);
    assert_eq!(sk.decrypt_i64(&c2).expect("ok"), -99);
    assert_eq!(Ciphertext::from_bytes(&c.to_bytes()).expect("ok"), c);
    // Malformed inputs are errors.
    assert!(serde_json::from_str::<Ciphertext>(r#"{"c":"xyz"}"#).is_err());
    assert!(
        serde_json::from_str::<Ciphertext>(&format!(r#"{{"c":"{}"}}"#, "f".repeat(5000))).is_err()
    );
    assert!(serde_json::from_str::<PublicKey>(r#"{"n":"10","hs":"3"}"#).is_err());
    // Debug shows no secret.
    let dbg = format!("{:?}", k.secret);
    let (p, _) = k.secret.primes();
    assert!(!dbg.contains(&p.to_string()) && !dbg.contains(&p.to_string_radix(16)));
}

/// Public keys from parts (deserialisation, `from_n`, a secret key's import) are refused for
/// the degenerate `n` and `h_s` that make encryption insecure or deterministic.
#[test]
fn public_key_validation_rejects_degenerate_values() {
    let k = key2048();
    let n = k.public.n();
    let n2 = k.public.n_squared();
    let (p, q) = k.secret.primes();
    let one = Integer::from(1usize);
    let invalid = |n: &Integer, hs: Integer, what: &str| match PublicKey::from_parts(
        n.clone(),
        hs,
        MIN_INSECURE_BITS,
    ) {
        Err(Error::InvalidKey(m)) => assert!(m.contains(what), "{m} (expected {what})"),
        other => panic!("expected InvalidKey({what}), got {other:?}"),
    };
    // A square root of 1 modulo n other than ±1: x ≡ 1 (mod p), x ≡ −1 (mod q).
    let t = ((q - 2u32) * p.invert(q).expect("p is a unit mod q")).modulo(q);
    let root = &one + &(p * &t);
    for hs in [
        one.clone(),
        n2 - 1u32,
        n - 1u32,
        n + 1u32,
        &one + &(n * &Integer::from(12345usize)),
        root,
    ] {
        invalid(n, hs, "order at most 2");
    }
    for hs in [Integer::from(0usize), n2.clone(), n2 + 1u32, p.clone()] {
        invalid(n, hs, "not a unit");
    }
    let hs = k.public.h_s().clone();
    invalid(&(n + 1u32), hs.clone(), "even");
    invalid(
        &(n * &Integer::from(3usize)),
        hs.clone(),
        "factor below 4096",
    );
    invalid(p, Integer::from(5usize), "prime");
    // The real key passes, also through serde.
    assert!(PublicKey::from_parts(n.clone(), hs.clone(), MIN_BITS).is_ok());
    let json = |hs: &Integer| format!(r#"{{"n":"{n:x}","hs":"{hs:x}"}}"#);
    assert!(serde_json::from_str::<PublicKey>(&json(&hs)).is_ok());
    assert!(serde_json::from_str::<PublicKey>(&json(&one)).is_err());
    // A secret key import also checks that h_s is an n-th residue: 2 passes the public
    // checks but is not one.
    let two = Integer::from(2usize);
    assert!(PublicKey::from_parts(n.clone(), two.clone(), MIN_BITS).is_ok());
    assert!(matches!(
        SecretKey::from_primes_inner(p, q, Some(two), MIN_BITS),
        Err(Error::InvalidKey(m)) if m.contains("n-th residue")
    ));
    assert!(SecretKey::from_primes_inner(p, q, Some(hs), MIN_BITS).is_ok());
}

#[test]
fn from_primes_rejects_bad_input() {
    let k = key2048();
    let (p, q) = k.secret.primes();
    let sk = SecretKey::from_primes(p, q).expect("valid");
    let c = k.public.encrypt_i64(5).expect("ok");
    assert_eq!(sk.decrypt_i64(&c).expect("ok"), 5);
    assert!(SecretKey::from_primes(p, p).is_err());
    // An odd composite in place of q (not `q + 2`, which is itself prime for about one
    // random key in 250).
    let composite = q * 3u32;
    assert!(matches!(
        SecretKey::from_primes(p, &composite),
        Err(Error::InvalidKey(m)) if m.contains("not prime")
    ));
    let k1 = key1024();
    let (p1, q1) = k1.secret.primes();
    assert!(SecretKey::from_primes(p1, q1).is_err());
    assert!(SecretKey::from_primes_insecure_for_tests(p1, q1).is_ok());
}

#[test]
fn encoded_batches() {
    let k = key1024();
    let (pk, sk) = (&k.public, &k.secret);
    let xs = [1.5f64, -2.25, 1e-3, 12345.678];
    let ys = [0.5f64, 4.0, -1e-3, 0.0];
    let cx = pk.encrypt_f64_batch(&xs).expect("ok");
    let cy = pk.encrypt_f64_batch(&ys).expect("ok");
    assert_eq!(sk.decrypt_f64_batch(&cx).expect("ok"), xs);
    let sums = sk
        .decrypt_f64_batch(&pk.add_encrypted_batch(&cx, &cy).expect("ok"))
        .expect("ok");
    let diffs = sk
        .decrypt_f64_batch(&pk.sub_encrypted_batch(&cx, &cy).expect("ok"))
        .expect("ok");
    let ey: Vec<EncodedNumber> = ys
        .iter()
        .map(|&y| EncodedNumber::encode_f64(pk, y, None, None).expect("ok"))
        .collect();
    let plus = sk
        .decrypt_f64_batch(&pk.add_encoded_batch(&cx, &ey).expect("ok"))
        .expect("ok");
    let prods = sk
        .decrypt_f64_batch(&pk.mul_encoded_batch(&cx, &ey).expect("ok"))
        .expect("ok");
    for i in 0..xs.len() {
        assert!((sums[i] - (xs[i] + ys[i])).abs() < 1e-9);
        assert!((plus[i] - (xs[i] + ys[i])).abs() < 1e-9);
        assert!((diffs[i] - (xs[i] - ys[i])).abs() < 1e-9);
        assert!((prods[i] - xs[i] * ys[i]).abs() < 1e-9);
    }
    assert!(pk.add_encrypted_batch(&cx, &cy[1..]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Arbitrary bytes as a ciphertext: an error or some plaintext, never a panic.
    #[test]
    fn prop_garbage_ciphertexts_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let k = key1024();
        let c = Ciphertext::from_bytes(&bytes).expect("short");
        let v = k.public.validate(&c);
        let d = k.secret.decrypt(&c);
        prop_assert_eq!(v.is_ok(), d.is_ok());
        let _ = k.secret.decrypt_i64(&c);
        let _ = k.public.neg(&c);
        let _ = k.public.mul_plain(&c, &Integer::from(-5));
    }

    #[test]
    fn prop_homomorphic_laws(a in any::<i32>(), b in any::<i32>(), k in any::<i32>()) {
        let key = key1024();
        let (pk, sk) = (&key.public, &key.secret);
        let (a, b, k) = (i64::from(a), i64::from(b), i64::from(k));
        let ca = pk.encrypt_i64(a).expect("ok");
        let cb = sk.encrypt(&pk.encode_signed(&Integer::from(b)).expect("ok")).expect("ok");
        prop_assert_eq!(sk.decrypt_i64(&ca).expect("ok"), a);
        prop_assert_eq!(sk.decrypt_i64(&pk.add(&ca, &cb)).expect("ok"), a + b);
        prop_assert_eq!(sk.decrypt_i64(&pk.sub(&ca, &cb).expect("ok")).expect("ok"), a - b);
        prop_assert_eq!(sk.decrypt_i64(&pk.mul_plain(&ca, &Integer::from(k)).expect("ok")).expect("ok"), a * k);
        prop_assert_eq!(sk.decrypt_i64(&pk.neg(&cb).expect("ok")).expect("ok"), -b);
        prop_assert_eq!(sk.decrypt_i64(&pk.rerandomize(&ca)).expect("ok"), a);
    }

    #[test]
    fn prop_roundtrip_any_plaintext(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        let key = key1024();
        let m = Integer::from_be_bytes(&bytes) % key.public.n();
        let c = key.public.encrypt(&m).expect("in range");
        prop_assert_eq!(key.secret.decrypt(&c).expect("ok"), m);
    }

    #[test]
    fn prop_float_encoding(x in -1e12f64..1e12f64, y in -1e6f64..1e6f64) {
        let key = key1024();
        let (pk, sk) = (&key.public, &key.secret);
        let e = EncodedNumber::encode_f64(pk, x, None, None).expect("ok");
        prop_assert_eq!(e.decode_f64(pk).expect("ok"), x);
        let cx = pk.encrypt_f64(x).expect("ok");
        let cy = pk.encrypt_f64(y).expect("ok");
        let s = sk.decrypt_f64(&pk.add_encrypted(&cx, &cy).expect("ok")).expect("ok");
        prop_assert!((s - (x + y)).abs() <= 1e-9 * (x.abs() + y.abs() + 1.0));
        let d = sk.decrypt_f64(&pk.sub_encrypted(&cx, &cy).expect("ok")).expect("ok");
        prop_assert!((d - (x - y)).abs() <= 1e-9 * (x.abs() + y.abs() + 1.0));
        let ey = EncodedNumber::encode_f64(pk, y, Some(1e-6), None).expect("ok");
        let p = sk.decrypt_f64(&pk.mul_encoded(&cx, &ey).expect("ok")).expect("ok");
        let want = x * ey.decode_f64(pk).expect("ok");
        prop_assert!((p - want).abs() <= 1e-9 * want.abs() + 1e-9);
        let q = sk.decrypt_f64(&pk.add_encoded(&cx, &ey).expect("ok")).expect("ok");
        prop_assert!((q - (x + ey.decode_f64(pk).expect("ok"))).abs() <= 1e-6 * (x.abs() + 1.0));
    }
}

#[test]
fn float_encoding_overflow_detected() {
    let k = key1024();
    let pk = &k.public;
    // 2^1023 with exponent 0 needs a 1024-bit mantissa, above max_int ≈ n/3 < 2^1022.
    let big = 2f64.powi(1023);
    assert!(matches!(
        EncodedNumber::encode_f64(pk, big, None, Some(0)),
        Err(Error::Overflow(_))
    ));
    assert!(EncodedNumber::encode_f64(pk, f64::NAN, None, None).is_err());
    assert!(EncodedNumber::encode_f64(pk, 1.0, Some(-1.0), None).is_err());
    // Lowering an exponent far enough overflows the mantissa: an error, not a wrap.
    let e = EncodedNumber::encode_f64(pk, 1.0, None, None).expect("ok");
    assert!(matches!(
        e.decrease_exponent_to(pk, e.exponent - 300),
        Err(Error::Overflow(_))
    ));
    // Precision rounding: 0.1 at precision 1e-3 has exponent floor(log16(1e-3)) = -3.
    let e = EncodedNumber::encode_f64(pk, 0.1, Some(1e-3), None).expect("ok");
    assert_eq!(e.exponent, -3);
    assert_eq!(e.mantissa(pk).expect("ok"), 410); // round(0.1 · 4096) = 410
}

/// `2^k − 1`.
fn mersenne(k: u32) -> Integer {
    (Integer::from(1u32) << k) - 1u32
}

/// A hostile modulus of 65537 bits given to `from_n` (e.g. a python-phe public key from a
/// peer) is refused at once: it used to be raised to its own power modulo n² (the DJN base)
/// before its size was checked, minutes of CPU.
#[test]
fn from_n_refuses_huge_modulus_before_any_exponentiation() {
    let start = std::time::Instant::now();
    let n = (Integer::from(1u32) << 65536) + 1u32;
    assert!(matches!(
        PublicKey::from_n(n),
        Err(Error::UnsupportedKeySize { bits: 65537, .. })
    ));
    // Other cheap rejections come before the exponentiation too.
    let p = mersenne(2203); // a Mersenne prime of 2203 bits
    assert!(matches!(PublicKey::from_n(p), Err(Error::InvalidKey(m)) if m.contains("prime")));
    assert!(matches!(
        PublicKey::from_n(-mersenne(2203)),
        Err(Error::InvalidKey(_))
    ));
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

/// Over-long primes in a secret key (from `from_primes` or deserialisation) are refused by
/// size before the 64-round primality tests: two Mersenne primes of 11213 and 9941 bits (a
/// 21154-bit n) used to cost 128 Miller–Rabin rounds on ten-thousand-bit numbers first.
#[test]
fn from_primes_refuses_huge_primes_before_primality_tests() {
    let start = std::time::Instant::now();
    let (p, q) = (mersenne(11213), mersenne(9941));
    assert!(matches!(
        SecretKey::from_primes(&p, &q),
        Err(Error::UnsupportedKeySize { .. })
    ));
    let json = format!(r#"{{"p":"{p:x}","q":"{q:x}","hs":"2"}}"#);
    assert!(serde_json::from_str::<SecretKey>(&json).is_err());
    // Unbalanced: a tiny prime times a large one is refused by size, too.
    assert!(SecretKey::from_primes(&Integer::from(3u32), &p).is_err());
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

/// Decoding rounds once, to the precision of the result: a value in the subnormal range used
/// to be rounded to 53 bits first and then again (2.5 + 2^−60 units of 2^−1074 became 2, not
/// 3), and a binary exponent below −1100 was clamped to −1100 (2^52·16^−287 = 2^−1096, which
/// is 0 in f64, came out as 2^−1048).
#[test]
fn decode_f64_is_correctly_rounded_near_underflow() {
    let pk = &key1024().public;
    let enc = |m: Integer, exponent: i32| EncodedNumber {
        encoding: pk.encode_signed(&m).expect("small"),
        exponent,
    };
    let one = Integer::from(1u32);
    // (2^61 + 2^59 + 1)·2^−1134 = (2 + 1/2 + 2^−60)·2^−1074 → 3·2^−1074.
    let m = ((&one << 61) + (&one << 59) + 1u32) << 2;
    assert_eq!(enc(m.clone(), -284).decode_f64(pk), Ok(f64::from_bits(3)));
    assert_eq!(enc(-m, -284).decode_f64(pk), Ok(-f64::from_bits(3)));
    // Exactly 2.5 units rounds to even (2), 3.5 to 4.
    let m = (&one << 61) + (&one << 59);
    assert_eq!(enc(m << 2, -284).decode_f64(pk), Ok(f64::from_bits(2)));
    let m = (Integer::from(7u32) << 59) << 2;
    assert_eq!(enc(m, -284).decode_f64(pk), Ok(f64::from_bits(4)));
    // Far below the smallest subnormal: zero, not a clamped power of two.
    assert_eq!(enc(&one << 52, -287).decode_f64(pk), Ok(0.0));
    assert_eq!(enc(&one << 52, -2000).decode_f64(pk), Ok(0.0));
    assert_eq!(enc(one.clone(), i32::MIN).decode_f64(pk), Ok(0.0));
    // Half the smallest subnormal rounds to zero, a bit more to the smallest subnormal.
    assert_eq!(enc(one.clone(), -269).decode_f64(pk), Ok(0.0)); // 2^−1076
    assert_eq!(
        enc(Integer::from(3u32), -269).decode_f64(pk),
        Ok(f64::from_bits(1))
    );
    // The normal range and overflow are unchanged.
    assert_eq!(enc(Integer::from(5u32), -1).decode_f64(pk), Ok(5.0 / 16.0));
    assert_eq!(enc(one.clone(), 300).decode_f64(pk), Ok(f64::INFINITY));
    assert_eq!(enc(one, i32::MAX).decode_f64(pk), Ok(f64::INFINITY));
    // Every subnormal and the boundary values survive encode → decode.
    for x in [
        f64::from_bits(1),
        f64::from_bits(12345),
        f64::MIN_POSITIVE,
        f64::MAX,
    ] {
        let e = EncodedNumber::encode_f64(pk, x, None, None).expect("ok");
        assert_eq!(e.decode_f64(pk), Ok(x));
        let e = EncodedNumber::encode_f64(pk, -x, None, None).expect("ok");
        assert_eq!(e.decode_f64(pk), Ok(-x));
    }
}

/// Zero encodes at any allowed exponent: a `max_exponent` of −600 used to turn the shift of
/// the zero mantissa into an overflow error.
#[test]
fn encode_zero_at_low_max_exponent() {
    let pk = &key1024().public;
    for x in [0.0, -0.0] {
        let e = EncodedNumber::encode_f64(pk, x, None, Some(-600)).expect("zero fits");
        assert_eq!(e.exponent, -600);
        assert_eq!(e.encoding, 0u32);
        assert_eq!(e.decode_f64(pk), Ok(0.0));
        let e = EncodedNumber::encode_f64(pk, x, Some(1e-300), Some(-4096)).expect("zero fits");
        assert_eq!(e.exponent, -4096);
    }
}

/// The exponent of an `EncryptedNumber` from a peer is any i32: aligning or multiplying with
/// it used to overflow (`4·Δ`, `a.exponent + x.exponent`: a panic) or compute 16^Δ for a Δ of
/// billions. Now an `InvalidNumber` error.
#[test]
fn hostile_exponents_are_errors() {
    let pk = &key1024().public;
    let ok = pk.encrypt_f64(1.5).expect("ok");
    let json = format!(
        r#"{{"ciphertext":{},"exponent":2147483647}}"#,
        serde_json::to_string(&ok.ciphertext).expect("ser")
    );
    let hostile: EncryptedNumber = serde_json::from_str(&json).expect("decodes");
    let low = EncryptedNumber {
        exponent: -4096,
        ..ok.clone()
    };
    let min = EncryptedNumber {
        exponent: i32::MIN,
        ..ok.clone()
    };
    for (a, b) in [
        (&hostile, &ok),
        (&ok, &hostile),
        (&hostile, &low),
        (&ok, &min),
    ] {
        assert!(matches!(
            pk.add_encrypted(a, b),
            Err(Error::InvalidNumber(_))
        ));
        assert!(matches!(
            pk.sub_encrypted(a, b),
            Err(Error::InvalidNumber(_))
        ));
    }
    assert!(matches!(
        pk.decrease_exponent_to(&hostile, 0),
        Err(Error::InvalidNumber(_))
    ));
    let x = EncodedNumber::encode_i64(pk, 3).expect("ok");
    let big_x = EncodedNumber {
        exponent: i32::MAX,
        ..x.clone()
    };
    assert!(matches!(
        pk.add_encoded(&ok, &big_x),
        Err(Error::InvalidNumber(_))
    ));
    assert!(matches!(
        pk.add_encoded(&hostile, &x),
        Err(Error::InvalidNumber(_))
    ));
    assert!(matches!(
        pk.mul_encoded(
            &hostile,
            &EncodedNumber {
                exponent: 1,
                ..x.clone()
            }
        ),
        Err(Error::InvalidNumber(_))
    ));
    assert!(matches!(
        pk.mul_encoded(
            &min,
            &EncodedNumber {
                exponent: -1,
                ..x.clone()
            }
        ),
        Err(Error::InvalidNumber(_))
    ));
    assert!(matches!(
        big_x.decrease_exponent_to(pk, 0),
        Err(Error::InvalidNumber(_))
    ));
    // In range, the same operations work.
    let sum = pk
        .add_encrypted(&ok, &pk.encrypt_f64(2.25).expect("ok"))
        .expect("ok");
    assert_eq!(key1024().secret.decrypt_f64(&sum), Ok(3.75));
}

/// A secret key whose primes are badly unbalanced (a 64-bit `p` and a 1984-bit `q`: a
/// 2048-bit `n` that the elliptic-curve method factors at once) is refused, by `from_primes`
/// and by deserialisation; it used to be accepted because only the length of `p·q` was
/// checked.
#[test]
fn unbalanced_primes_are_refused() {
    use crate::bigint::prime::random_prime_3mod4;
    let mut rng = rand::rng();
    let p = random_prime_3mod4(&mut rng, 64);
    let q = random_prime_3mod4(&mut rng, 1984);
    let n = &p * &q;
    assert_eq!(n.significant_bits(), 2048);
    let unbalanced = |r: Result<SecretKey>| {
        assert!(
            matches!(&r, Err(Error::InvalidKey(m)) if m.contains("unbalanced")),
            "{r:?}"
        );
    };
    unbalanced(SecretKey::from_primes(&p, &q));
    unbalanced(SecretKey::from_primes(&q, &p));
    unbalanced(SecretKey::from_primes_insecure_for_tests(&p, &q));
    let hs = djn_base(&n, &mut rng);
    unbalanced(SecretKey::from_primes_inner(
        &p,
        &q,
        Some(hs.clone()),
        MIN_BITS,
    ));
    let json = format!(r#"{{"p":"{p:x}","q":"{q:x}","hs":"{hs:x}"}}"#);
    let err = serde_json::from_str::<SecretKey>(&json).expect_err("unbalanced");
    assert!(err.to_string().contains("unbalanced"), "{err}");
    // A gap of a few bits is refused too; the limit is two bits.
    let p = random_prime_3mod4(&mut rng, 1021);
    let q = random_prime_3mod4(&mut rng, 1027);
    unbalanced(SecretKey::from_primes(&p, &q));
}

/// Balanced primes whose lengths differ by one or two bits (python-phe's `next_prime` can
/// spill into one more bit) are still accepted.
#[test]
fn nearly_balanced_primes_are_accepted() {
    use crate::bigint::prime::random_prime_3mod4;
    let mut rng = rand::rng();
    let p = random_prime_3mod4(&mut rng, 1023);
    let q = random_prime_3mod4(&mut rng, 1025);
    let sk = SecretKey::from_primes(&p, &q).expect("a 2-bit gap is allowed");
    let c = sk.public_key().encrypt_i64(-7).expect("ok");
    assert_eq!(sk.decrypt_i64(&c), Ok(-7));
}

/// A serialised secret key carries `n`; on input it is optional, but a present `n` must be
/// `p·q` (it used to be ignored, so a key file pairing the primes with another modulus was
/// loaded as if it were consistent).
#[test]
fn secret_key_json_modulus_must_be_p_times_q() {
    let k = key2048();
    let (p, q) = k.secret.primes();
    let n = k.public.n();
    let hs = k.public.h_s();
    let s = serde_json::to_string(&k.secret).expect("ser");
    assert!(s.contains(&format!(r#""n":"{n:x}""#)));
    let with_n = |n: &Integer| format!(r#"{{"p":"{p:x}","q":"{q:x}","hs":"{hs:x}","n":"{n:x}"}}"#);
    let sk: SecretKey = serde_json::from_str(&with_n(n)).expect("consistent");
    assert_eq!(sk.public_key(), &k.public);
    let without_n = format!(r#"{{"p":"{p:x}","q":"{q:x}","hs":"{hs:x}"}}"#);
    let sk: SecretKey = serde_json::from_str(&without_n).expect("n is optional");
    assert_eq!(sk.public_key(), &k.public);
    for bad in [n + 2u32, key1024().public.n().clone(), n * 3u32] {
        let err = serde_json::from_str::<SecretKey>(&with_n(&bad)).expect_err("n != p·q");
        assert!(err.to_string().contains("n is not p·q"), "{err}");
    }
    assert!(matches!(
        SecretKey::from_parts_checked(p, q, Some(hs.clone()), Some(&(n + 2u32)), MIN_BITS),
        Err(Error::InvalidKey(m)) if m.contains("n is not p·q")
    ));
}

/// With several invalid inputs, a batch reports the error of the first one by index, however
/// the work is scheduled. Index 0 holds a valid ciphertext of a plaintext in the overflow
/// band (found only after a full decryption), every later index an out-of-range ciphertext
/// (found at once): the batch used to return whichever error a worker hit first in time,
/// usually a `MalformedCiphertext` from a later index.
#[test]
fn batch_errors_are_the_first_by_index() {
    let k = key2048();
    let (pk, sk) = (&k.public, &k.secret);
    let band = pk.encrypt(&(pk.n() >> 1u32)).expect("in range");
    let mut cs = vec![band];
    cs.extend((0..63).map(|_| Ciphertext::from_integer(Integer::new())));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("pool");
    for _ in 0..5 {
        let r = pool.install(|| sk.decrypt_i64_batch(&cs));
        assert!(matches!(r, Err(Error::Overflow(_))), "{r:?}");
    }
    // Two kinds among valid inputs: a non-unit at index 3, an out-of-range value at 5.
    let (p, _) = sk.primes();
    let mut cs: Vec<Ciphertext> = (0..8)
        .map(|i| pk.encrypt(&Integer::from(i as u32)).expect("ok"))
        .collect();
    cs[3] = Ciphertext::from_integer(p.clone());
    cs[5] = Ciphertext::from_integer(pk.n_squared().clone());
    for _ in 0..5 {
        let r = pool.install(|| sk.decrypt_batch(&cs));
        assert_eq!(r, Err(Error::MalformedCiphertext("not a unit modulo n²")));
        let r = pool.install(|| pk.validate_batch(&cs));
        assert_eq!(r, Err(Error::MalformedCiphertext("not a unit modulo n²")));
    }
    // Plaintexts: an overflowing value first, an out-of-range one after it.
    let big = pk.n() + 1u32;
    let ms = [Integer::from(1u32), big.clone(), Integer::from(-1), big];
    let r = pool.install(|| pk.encrypt_batch(&ms));
    assert_eq!(r, Err(Error::PlaintextOutOfRange));
}

/// The CRT fixed-base tables are residues modulo `p²` and `q²` (each entry gives `p` as
/// `gcd(h_s^e − entry, n)`): zeroizing the key wipes them, as dropping them does, where they
/// used to be freed with their contents.
#[test]
fn zeroize_wipes_the_crt_tables() {
    let k = key1024();
    let mut sk = k.secret.clone();
    sk.precompute();
    let mut tables = sk.tables.take().expect("built");
    assert!(!tables.p.is_wiped() && !tables.q.is_wiped());
    tables.p.wipe();
    tables.q.wipe();
    assert!(tables.p.is_wiped() && tables.q.is_wiped());
    sk.precompute();
    sk.zeroize();
    assert!(sk.tables.get().is_none());
    assert!(sk.p.is_zero() && sk.q.is_zero());
}

/// The CRT constants as the earlier variable-time derivation computed them: `g^{p−1} mod p²`
/// by exponentiation, `L_p` by division, inverses by the extended Euclidean algorithm.
fn reference_constants(p: &Integer, q: &Integer) -> [Integer; 4] {
    let n = p * q;
    let g = &n + 1u32;
    let h = |prime: &Integer| {
        let x = g
            .pow_mod(&(prime - 1u32), &prime.square())
            .expect("modulus positive");
        ((x - 1u32) / prime).invert_euclid(prime).expect("unit")
    };
    [
        h(p),
        h(q),
        q.invert_euclid(p).expect("unit"),
        q.square().invert_euclid(&p.square()).expect("unit"),
    ]
}

/// Random primes for the derivation tests: `bits` bits, not necessarily `3 mod 4`, and of
/// lengths that differ (the import path accepts a gap of two bits).
fn test_prime(bits: u32) -> Integer {
    let mut rng = rand::rng();
    loop {
        let mut p = bigint::random_bits(&mut rng, bits);
        p.set_bit(bits - 1, true);
        p.set_bit(0, true);
        if is_probable_prime(&p, 16, &mut rng) {
            return p;
        }
    }
}

#[test]
fn ct_crt_constants_match_the_variable_time_derivation() {
    for (pb, qb) in [
        (128u32, 128u32),
        (130, 128),
        (256, 257),
        (512, 512),
        (511, 513),
    ] {
        for _ in 0..3 {
            let (p, q) = (test_prime(pb), test_prime(qb));
            if p == q {
                continue;
            }
            let c = derive_constants(&p, &q);
            let [hp, hq, q_inv_p, q2_inv_p2] = reference_constants(&p, &q);
            assert_eq!(c.hp, hp, "h_p, {pb}/{qb} bits");
            assert_eq!(c.hq, hq, "h_q, {pb}/{qb} bits");
            assert_eq!(c.q_inv_p, q_inv_p);
            assert_eq!(c.q2_inv_p2, q2_inv_p2);
            assert_eq!(c.p2, p.square());
            assert_eq!(c.q_minus_1, &q - 1u32);
            for (x, inv) in [(&p, &c.p_inv_word), (&q, &c.q_inv_word)] {
                let k = x.as_limbs().len();
                assert_eq!(bigint::mul_low(x, inv, k), 1u32);
            }
            // The contexts compute modulo the right moduli.
            let a = bigint::random_bits(&mut rand::rng(), 2 * pb + 2 * qb);
            for (m, ctx) in [(&p, &c.mont_p), (&q, &c.mont_q), (&c.p2, &c.mont_p2)] {
                assert_eq!(ctx.reduce(&a), a.modulo(m));
            }
            let e = bigint::random_bits(&mut rand::rng(), pb);
            assert_eq!(
                c.ct_p.pow(&a.modulo(&c.p2), &e, pb),
                a.pow_mod(&e, &c.p2).expect("positive")
            );
        }
    }
}

/// The derivation of the CRT constants and the CRT tables perform the same sequence of
/// operations (kinds and lengths, see `bigint::ct_trace`) for different primes of the same
/// size, and no variable-time division.
#[test]
fn crt_derivation_trace_does_not_depend_on_the_primes() {
    let mut traces = Vec::new();
    for _ in 0..3 {
        let k = Keypair::generate_insecure_for_tests(1024).expect("test size");
        let (p, q) = k.secret.primes();
        let _ = bigint::ct_trace::take();
        let c = derive_constants(p, q);
        let derive = bigint::ct_trace::take();
        drop(c);
        let sk = SecretKey::derive(k.public.clone(), p.clone(), q.clone());
        let _ = bigint::ct_trace::take();
        let _ = sk.precompute();
        // The 64-bit Montgomery table as well (the one used without IFMA).
        let hs_p2 = sk.crt.mont_p2.reduce(k.public.h_s());
        let t = FixedBaseTable::new_mont(&hs_p2, &sk.crt.p2, k.public.randomness_bits(), WINDOW);
        drop(t);
        let tables = bigint::ct_trace::take();
        assert_eq!(derive.2, 0, "variable-time divisions in the derivation");
        assert_eq!(tables.2, 0, "variable-time divisions in the CRT tables");
        traces.push((derive, tables));
    }
    assert!(traces[0].0.0 > 0 && traces[0].1.0 > 0);
    assert_eq!(traces[0], traces[1]);
    assert_eq!(traces[0], traces[2]);
}

/// Serialising a secret key converts `p` and `q` to hex without a division.
#[test]
fn secret_key_hex_encoding_is_division_free() {
    let k = key2048();
    let _ = bigint::ct_trace::take();
    let json = serde_json::to_string(&k.secret).expect("serialise");
    let t = bigint::ct_trace::take();
    assert_eq!(t.2, 0, "variable-time divisions in the hex encoding");
    let back: SecretKey = serde_json::from_str(&json).expect("deserialise");
    assert_eq!(back.primes(), k.secret.primes());
}

#[test]
fn decrypts_after_import_and_clone() {
    let k = key2048();
    let (p, q) = k.secret.primes();
    let m = bigint::random_below(&mut rand::rng(), k.public.n());
    let ct = k.public.encrypt(&m).expect("in range");
    // Imported from the primes (fresh h_s), in either order, and from JSON.
    let imported = SecretKey::from_primes(p, q).expect("valid");
    let swapped = SecretKey::from_primes(q, p).expect("valid");
    let json = serde_json::to_string(&k.secret).expect("serialise");
    let parsed: SecretKey = serde_json::from_str(&json).expect("deserialise");
    for sk in [&imported, &swapped, &parsed] {
        assert_eq!(sk.decrypt(&ct).expect("valid"), m);
        let own = sk.encrypt(&m).expect("in range");
        assert_eq!(k.secret.decrypt(&own).expect("valid"), m);
    }
    // Clones, before and after the CRT tables are built; a clone outlives its original.
    let clone = parsed.clone();
    let _ = parsed.precompute();
    let clone_with_tables = parsed.clone();
    drop(parsed);
    for sk in [&clone, &clone_with_tables] {
        assert_eq!(sk.decrypt(&ct).expect("valid"), m);
        assert_eq!(
            sk.decrypt(&sk.encrypt(&m).expect("in range")).expect("ok"),
            m
        );
    }
    assert!(clone_with_tables.tables.get().is_some());
}

/// Cloning copies the derived constants rather than deriving them again.
#[test]
fn clone_copies_the_constants() {
    let sk = key1024().secret.clone();
    let _ = bigint::ct_trace::take();
    let c = sk.clone();
    let t = bigint::ct_trace::take();
    assert_eq!(t.0, 0, "clone performed arithmetic");
    assert_eq!(c.crt.hp, sk.crt.hp);
    assert_eq!(c.crt.q2_inv_p2, sk.crt.q2_inv_p2);
}

/// Decryption on base-`p` digits and modulo `p²` (IFMA or Montgomery) give the same
/// plaintexts, whichever path this CPU would pick; the digits are chosen exactly when the
/// exponentiation modulo `p²` would be the 64-bit Montgomery backend.
#[test]
fn digit_and_square_decryption_paths_agree() {
    let mut rng = rand::rng();
    for bits in [512u32, 1024, 1030] {
        let k = Keypair::generate_insecure_for_tests(bits).expect("test size");
        assert_eq!(
            k.secret.crt.digits_p.is_some(),
            k.secret.crt.ct_p.is_montgomery()
        );
        assert_eq!(
            k.secret.crt.digits_q.is_some(),
            k.secret.crt.ct_q.is_montgomery()
        );
        let (p, q) = k.secret.primes();
        let mut digits = k.secret.clone();
        digits.crt.digits_p = Padic::new(p);
        digits.crt.digits_q = Padic::new(q);
        let mut square = k.secret.clone();
        square.crt.digits_p = None;
        square.crt.digits_q = None;
        let n = k.public.n().clone();
        for m in [
            Integer::new(),
            Integer::from(1u32),
            &n - 1u32,
            bigint::random_below(&mut rng, &n),
            bigint::random_below(&mut rng, &n),
        ] {
            let ct = k.public.encrypt(&m).expect("in range");
            assert_eq!(digits.decrypt(&ct).expect("unit"), m, "{bits}");
            assert_eq!(square.decrypt(&ct).expect("unit"), m, "{bits}");
        }
    }
}

/// Constant time under memcheck (`.ci/ctgrind`, see `obliv_cpu::ctgrind`): the primes are
/// marked secret before the CRT constants are derived from them, so the derivation and every
/// decryption (on base-`p` digits and modulo `p²`) are checked for branches and addresses that
/// depend on `p`, `q` or anything computed from them. Natively it checks the plaintexts only.
#[test]
#[ignore = "run under valgrind by .ci/ctgrind"]
fn ctgrind_crt_derivation_and_decryption() {
    use obliv_cpu::ctgrind::{public, secret};
    let k = Keypair::generate_insecure_for_tests(1024).expect("test size");
    let (p, q) = k.secret.primes();
    let (p, q) = (p.clone(), q.clone());
    let n = k.public.n().clone();
    let m = bigint::random_below(&mut rand::rng(), &n);
    let ct = k.public.encrypt(&m).expect("in range");
    for digits in [true, false] {
        let (mut p, mut q) = (p.clone(), q.clone());
        secret(p.limbs_mut());
        secret(q.limbs_mut());
        let mut key = SecretKey::derive(k.public.clone(), p, q);
        if !digits {
            key.crt.digits_p = None;
            key.crt.digits_q = None;
        }
        let mut got = key.decrypt(&ct).expect("a unit");
        public(got.limbs_mut());
        assert_eq!(got, m, "digits: {digits}");
    }
}

/// Constant time under memcheck (`.ci/ctgrind`): a plaintext and the encryption randomness
/// `r` marked secret go through the range check, `g^m`, the fixed-base table's `h_s^r` and
/// the product; a branch or a memory address that depends on them fails it. Declassified:
/// the range check's verdict and the limb counts.
#[test]
#[ignore = "run under valgrind by .ci/ctgrind"]
fn ctgrind_public_key_encryption() {
    use obliv_cpu::ctgrind::{public, secret};
    let k = key1024();
    let pk = &k.public;
    let mut rng = rand::rng();
    let (m0, r0) = (
        bigint::random_below(&mut rng, pk.n()),
        random_bits(&mut rng, pk.inner.r_bits),
    );
    let (mut m, mut r) = (m0.clone(), r0.clone());
    secret(m.limbs_mut());
    secret(r.limbs_mut());
    pk.check_plaintext(&m).expect("in range");
    let mut c = pk
        .inner
        .mont_n2
        .mul_mod_lt(&pk.g_pow(&m), &pk.table().pow(&r));
    public(c.limbs_mut());
    let want = pk
        .inner
        .mont_n2
        .mul_mod_lt(&pk.g_pow(&m0), &pk.table().pow(&r0));
    assert_eq!(c, want);
    assert_eq!(k.secret.decrypt(&Ciphertext { c }).expect("a unit"), m0);
}

/// An RNG whose every output is marked secret for memcheck (`obliv_cpu::ctgrind`): the
/// randomness a secret-key encryption draws inside.
struct SecretRng<R>(R);

impl<R: rand_core::TryRng> rand_core::TryRng for SecretRng<R> {
    type Error = R::Error;
    fn try_next_u32(&mut self) -> core::result::Result<u32, Self::Error> {
        let mut v = self.0.try_next_u32()?;
        obliv_cpu::ctgrind::secret(&mut v);
        Ok(v)
    }
    fn try_next_u64(&mut self) -> core::result::Result<u64, Self::Error> {
        let mut v = self.0.try_next_u64()?;
        obliv_cpu::ctgrind::secret(&mut v);
        Ok(v)
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> core::result::Result<(), Self::Error> {
        self.0.try_fill_bytes(dst)?;
        obliv_cpu::ctgrind::secret(dst);
        Ok(())
    }
}

impl<R: rand_core::TryCryptoRng> rand_core::TryCryptoRng for SecretRng<R> {}

/// Constant time under memcheck (`.ci/ctgrind`): secret-key encryption (the CRT tables
/// modulo `p²` and `q²` and Garner's recombination) with `p`, `q`, the plaintext and the
/// randomness marked secret.
#[test]
#[ignore = "run under valgrind by .ci/ctgrind"]
fn ctgrind_secret_key_encryption() {
    use obliv_cpu::ctgrind::{public, secret};
    let k = key1024();
    let (p, q) = k.secret.primes();
    let (mut p, mut q) = (p.clone(), q.clone());
    secret(p.limbs_mut());
    secret(q.limbs_mut());
    let key = SecretKey::derive(k.public.clone(), p, q);
    let m0 = bigint::random_below(&mut rand::rng(), k.public.n());
    let mut m = m0.clone();
    secret(m.limbs_mut());
    let mut rng = SecretRng(rand_core::UnwrapErr(rand::rng()));
    let mut c = key.encrypt_with_rng(&m, &mut rng).expect("in range").c;
    public(c.limbs_mut());
    assert_eq!(k.secret.decrypt(&Ciphertext { c }).expect("a unit"), m0);
}
