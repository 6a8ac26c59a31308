//! ElGamal benches for BENCHMARKS.md §4: additive EC ElGamal on Ristretto (key generation,
//! encryption, decryption of 20-bit messages with the 2^16 baby-step table, addition,
//! subtraction, scalar multiplication, table build), multiplicative ElGamal on the RFC 3526
//! groups (key generation, encryption, decryption, multiplication), and the re-encryption
//! pipeline of the HE study. Run: `cargo bench -p obliv-he --bench elgamal`.
#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use curve25519_dalek::RistrettoPoint;
use obliv_he::Integer;
use obliv_he::elgamal::ec::{self, BsgsTable};
use obliv_he::elgamal::modp::{self, GroupId};
use obliv_he::paillier::Keypair;
use obliv_he::reencrypt::{Agent, linear_regression, product_of_sums};

type G = RistrettoPoint;

fn ec_elgamal(c: &mut Criterion) {
    let mut rng = rand::rng();
    let mut g = c.benchmark_group("s4_ec_elgamal_ristretto");
    g.sample_size(10);
    g.bench_function("bsgs_table_2^16", |b| {
        b.iter(|| BsgsTable::<G>::new(32, 16).unwrap())
    });
    let table = BsgsTable::<G>::default_32().unwrap();
    g.sample_size(50);
    g.bench_function("keygen", |b| {
        b.iter(|| ec::SecretKey::<G>::generate(&mut rng))
    });
    let sk = ec::SecretKey::<G>::generate(&mut rng);
    let pk = sk.public_key().clone();
    let ms: Vec<u64> = (0..64u64).map(|i| (i * 0x9e37_79b9) & 0xf_ffff).collect();
    let cs: Vec<_> = ms.iter().map(|&m| pk.encrypt(m, &mut rng)).collect();
    let mut i = 0usize;
    let mut next = || {
        i = (i + 1) % 64;
        i
    };
    g.bench_function("encrypt", |b| b.iter(|| pk.encrypt(ms[next()], &mut rng)));
    g.bench_function("decrypt_20bit", |b| {
        b.iter(|| sk.decrypt(&cs[next()], &table).unwrap())
    });
    g.bench_function("add", |b| b.iter(|| pk.add(&cs[next()], &cs[1])));
    g.bench_function("sub", |b| b.iter(|| pk.sub(&cs[next()], &cs[1])));
    g.bench_function("mul_scalar", |b| b.iter(|| pk.mul_i64(&cs[next()], 12345)));
    g.finish();
}

fn modp_elgamal(c: &mut Criterion) {
    let mut rng = rand::rng();
    for (id, name) in [(GroupId::Modp2048, "2048"), (GroupId::Modp3072, "3072")] {
        let mut g = c.benchmark_group(format!("s4_modp_elgamal{name}"));
        g.sample_size(20);
        g.bench_function("keygen", |b| {
            b.iter(|| modp::SecretKey::generate(id, &mut rng))
        });
        let sk = modp::SecretKey::generate(id, &mut rng);
        let pk = sk.public_key().clone();
        let a = pk.encrypt_value(&Integer::from(1234u32), &mut rng).unwrap();
        let bb = pk.encrypt_value(&Integer::from(5678u32), &mut rng).unwrap();
        let v = Integer::from(99u32);
        g.bench_function("encrypt", |b| {
            b.iter(|| pk.encrypt_value(&v, &mut rng).unwrap())
        });
        g.bench_function("decrypt", |b| b.iter(|| sk.decrypt_value(&a).unwrap()));
        g.bench_function("mul_ct_ct", |b| b.iter(|| pk.mul(&a, &bb)));
        g.finish();
    }
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
    let mut g = c.benchmark_group("s4_reencryption_pipeline");
    g.sample_size(10);
    let e = |v: i64| pk.paillier.encrypt_i64(v).unwrap();
    let (a, b2, c2, d) = (e(3), e(4), e(5), e(6));
    g.bench_function("product_of_sums_preencrypted", |b| {
        b.iter(|| product_of_sums(&pk, &agent, &a, &b2, &c2, &d).unwrap())
    });
    g.bench_function("product_of_sums_with_encryption", |b| {
        b.iter(|| product_of_sums(&pk, &agent, &e(3), &e(4), &e(5), &e(6)).unwrap())
    });
    let xs: Vec<i64> = (1..=16).collect();
    let ys: Vec<i64> = xs.iter().map(|x| 2 * x + 1).collect();
    let ex = pk.paillier.encrypt_i64_batch(&xs).unwrap();
    let ey = pk.paillier.encrypt_i64_batch(&ys).unwrap();
    let one = [agent.clone()];
    let two = [agent.clone(), agent.split()];
    g.bench_function("linear_regression_16_one_agent", |b| {
        b.iter(|| linear_regression(&pk, &one, &ex, &ey).unwrap())
    });
    g.bench_function("linear_regression_16_two_agents", |b| {
        b.iter(|| linear_regression(&pk, &two, &ex, &ey).unwrap())
    });
    g.finish();
}

criterion_group!(benches, ec_elgamal, modp_elgamal, pipeline);
criterion_main!(benches);
