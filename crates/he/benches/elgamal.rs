//! ElGamal benches for BENCHMARKS.md §4: additive EC ElGamal on Ristretto (key generation,
//! encryption, decryption of 20-bit messages with the 2^16 baby-step table, addition,
//! subtraction, scalar multiplication, table build), multiplicative ElGamal on the RFC 3526
//! groups (key generation, encryption, decryption, multiplication). Run:
//! `cargo bench -p obliv-he --bench elgamal`. The re-encryption pipeline of the HE study is
//! the workspace bench `cargo bench -p obliv-bench --bench he -- pipeline`.
#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use curve25519_dalek::RistrettoPoint;
use obliv_he::Integer;
use obliv_he::elgamal::ec::{self, BsgsTable};
use obliv_he::elgamal::modp::{self, GroupId};

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

criterion_group!(benches, ec_elgamal, modp_elgamal);
criterion_main!(benches);
