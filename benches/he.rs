//! BENCHMARKS.md §4 (Sidorov et al. 2022, homomorphic cryptosystems compared): key generation,
//! encryption, decryption, addition, subtraction and multiplication for Paillier (by plaintext)
//! and ElGamal (multiplicative on the RFC 3526 groups, additive on Ristretto), over key sizes,
//! and the trusted re-encryption pipeline `(a+b)·(c+d)` and its linear regression.
//!
//! Ids: `he/paillier<bits>/<op>`, `he/elgamal<bits>/<op>`, `he/ec_elgamal/<op>`,
//! `he/pipeline/<case>`. `cargo bench -p obliv-bench --bench he`; `OBLIV_BENCH_SCALE=full`
//! adds Paillier 3072 and 4096 and ElGamal 3072.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use curve25519_dalek::RistrettoPoint;
use obliv_bench::full_scale;
use obliv_he::Integer;
use obliv_he::elgamal::ec::{self, BsgsTable};
use obliv_he::elgamal::modp::{self, GroupId};
use obliv_he::paillier::Keypair;
use obliv_he::reencrypt::{Agent, linear_regression, product_of_sums};

fn paillier(c: &mut Criterion) {
    let bits: &[u32] = if full_scale() {
        &[2048, 3072, 4096]
    } else {
        &[2048]
    };
    let mut g = c.benchmark_group("he");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for &bits in bits {
        g.sample_size(10);
        g.bench_function(format!("paillier{bits}/keygen"), |b| {
            b.iter(|| Keypair::generate(bits).unwrap())
        });
        g.sample_size(20);
        let k = Keypair::generate(bits).unwrap();
        let (pk, sk) = (&k.public, &k.secret);
        pk.precompute();
        sk.precompute();
        let m = Integer::from(123_456_789u32);
        let (a, bb) = (
            pk.encrypt(&m).unwrap(),
            pk.encrypt(&Integer::from(42u32)).unwrap(),
        );
        g.bench_function(format!("paillier{bits}/encrypt"), |b| {
            b.iter(|| pk.encrypt(&m).unwrap())
        });
        g.bench_function(format!("paillier{bits}/decrypt"), |b| {
            b.iter(|| sk.decrypt(&a).unwrap())
        });
        g.bench_function(format!("paillier{bits}/add"), |b| {
            b.iter(|| pk.add(&a, &bb))
        });
        g.bench_function(format!("paillier{bits}/sub"), |b| {
            b.iter(|| pk.sub(&a, &bb).unwrap())
        });
        g.bench_function(format!("paillier{bits}/mul_plain"), |b| {
            b.iter(|| pk.mul_plain(&a, &m).unwrap())
        });
    }
    g.finish();
}

fn elgamal(c: &mut Criterion) {
    let mut rng = rand::rng();
    let mut g = c.benchmark_group("he");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut groups = vec![(GroupId::Modp2048, 2048)];
    if full_scale() {
        groups.push((GroupId::Modp3072, 3072));
    }
    for (id, bits) in groups {
        g.bench_function(format!("elgamal{bits}/keygen"), |b| {
            b.iter(|| modp::SecretKey::generate(id, &mut rng))
        });
        let sk = modp::SecretKey::generate(id, &mut rng);
        let pk = sk.public_key().clone();
        let v = Integer::from(99u32);
        let a = pk.encrypt_value(&Integer::from(1234u32), &mut rng).unwrap();
        let bb = pk.encrypt_value(&Integer::from(5678u32), &mut rng).unwrap();
        g.bench_function(format!("elgamal{bits}/encrypt"), |b| {
            b.iter(|| pk.encrypt_value(&v, &mut rng).unwrap())
        });
        g.bench_function(format!("elgamal{bits}/decrypt"), |b| {
            b.iter(|| sk.decrypt_value(&a).unwrap())
        });
        g.bench_function(format!("elgamal{bits}/mul"), |b| b.iter(|| pk.mul(&a, &bb)));
    }
    // Additive EC ElGamal on Ristretto (messages below 2^20, table of 2^16 baby steps).
    let table = BsgsTable::<RistrettoPoint>::default_32().unwrap();
    g.bench_function("ec_elgamal/keygen", |b| {
        b.iter(|| ec::SecretKey::<RistrettoPoint>::generate(&mut rng))
    });
    let sk = ec::SecretKey::<RistrettoPoint>::generate(&mut rng);
    let pk = sk.public_key().clone();
    let (a, bb) = (pk.encrypt(777_777, &mut rng), pk.encrypt(1, &mut rng));
    g.bench_function("ec_elgamal/encrypt", |b| {
        b.iter(|| pk.encrypt(12_345, &mut rng))
    });
    g.bench_function("ec_elgamal/decrypt", |b| {
        b.iter(|| sk.decrypt(&a, &table).unwrap())
    });
    g.bench_function("ec_elgamal/add", |b| b.iter(|| pk.add(&a, &bb)));
    g.bench_function("ec_elgamal/sub", |b| b.iter(|| pk.sub(&a, &bb)));
    g.bench_function("ec_elgamal/mul_plain", |b| {
        b.iter(|| pk.mul_i64(&a, 12_345))
    });
    g.finish();
}

fn pipeline(c: &mut Criterion) {
    let mut rng = rand::rng();
    let k = Keypair::generate(2048).unwrap();
    let agent = Agent::new(
        k.secret.clone(),
        modp::SecretKey::generate(GroupId::Modp2048, &mut rng),
    );
    let pk = agent.public_keys();
    pk.paillier.precompute();
    let mut g = c.benchmark_group("he");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let e = |v: i64| pk.paillier.encrypt_i64(v).unwrap();
    let (a, b2, c2, d) = (e(3), e(4), e(5), e(6));
    g.bench_function("pipeline/product_of_sums_preencrypted", |b| {
        b.iter(|| product_of_sums(&pk, &agent, &a, &b2, &c2, &d).unwrap())
    });
    g.bench_function("pipeline/product_of_sums_with_encryption", |b| {
        b.iter(|| product_of_sums(&pk, &agent, &e(3), &e(4), &e(5), &e(6)).unwrap())
    });
    let xs: Vec<i64> = (1..=16).collect();
    let ys: Vec<i64> = xs.iter().map(|x| 2 * x + 1).collect();
    let ex = pk.paillier.encrypt_i64_batch(&xs).unwrap();
    let ey = pk.paillier.encrypt_i64_batch(&ys).unwrap();
    let one = [agent.clone()];
    let two = [agent.clone(), agent.split()];
    g.bench_function("pipeline/linear_regression_16_one_agent", |b| {
        b.iter(|| linear_regression(&pk, &one, &ex, &ey).unwrap())
    });
    g.bench_function("pipeline/linear_regression_16_two_agents", |b| {
        b.iter(|| linear_regression(&pk, &two, &ex, &ey).unwrap())
    });
    g.finish();
}

criterion_group!(benches, paillier, elgamal, pipeline);
criterion_main!(benches);
