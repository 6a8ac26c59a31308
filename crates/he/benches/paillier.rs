//! Paillier hot paths, BENCHMARKS.md §4 (key generation, encryption, decryption, addition,
//! subtraction, multiplication over key sizes). `OBLIV_BENCH_SCALE=full` adds 3072 and 4096
//! bits. Run: `cargo bench -p obliv-he --bench paillier`. §2 (2048-bit encryption on one
//! thread against a pool of every core) is the workspace bench
//! `cargo bench -p obliv-bench --bench paillier`.
#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use obliv_he::Integer;
use obliv_he::paillier::Keypair;

fn sizes() -> Vec<u32> {
    if std::env::var("OBLIV_BENCH_SCALE").as_deref() == Ok("full") {
        vec![2048, 3072, 4096]
    } else {
        vec![2048]
    }
}

fn plaintexts(n: usize) -> Vec<Integer> {
    (0..n)
        .map(|i| Integer::from(0x9e37_79b9_u64.wrapping_mul(i as u64 + 1) & 0xffff_ffff))
        .collect()
}

/// §4: single-operation timings, one thread.
fn section4(c: &mut Criterion) {
    for bits in sizes() {
        let mut g = c.benchmark_group(format!("s4_paillier{bits}"));
        g.sample_size(10);
        g.bench_function("keygen", |b| b.iter(|| Keypair::generate(bits).unwrap()));
        g.sample_size(30);
        let k = Keypair::generate(bits).unwrap();
        let (pk, sk) = (&k.public, &k.secret);
        pk.precompute();
        sk.precompute();
        let ms = plaintexts(64);
        let cs: Vec<_> = ms.iter().map(|m| pk.encrypt(m).unwrap()).collect();
        let mut i = 0usize;
        let mut next = || {
            i = (i + 1) % 64;
            i
        };
        g.bench_function("encrypt_public_djn", |b| {
            b.iter(|| pk.encrypt(&ms[next()]).unwrap())
        });
        g.bench_function("encrypt_secret_crt", |b| {
            b.iter(|| sk.encrypt(&ms[next()]).unwrap())
        });
        g.bench_function("decrypt_crt", |b| {
            b.iter(|| sk.decrypt(&cs[next()]).unwrap())
        });
        g.bench_function("add_ct_ct", |b| b.iter(|| pk.add(&cs[next()], &cs[3])));
        g.bench_function("sub_ct_ct", |b| {
            b.iter(|| pk.sub(&cs[next()], &cs[3]).unwrap())
        });
        g.bench_function("add_ct_pt", |b| {
            b.iter(|| pk.add_plain(&cs[next()], &ms[5]).unwrap())
        });
        g.bench_function("mul_ct_pt32", |b| {
            b.iter(|| pk.mul_plain(&cs[next()], &ms[7]).unwrap())
        });
        g.bench_function("neg", |b| b.iter(|| pk.neg(&cs[next()]).unwrap()));
        g.bench_function("rerandomize", |b| b.iter(|| pk.rerandomize(&cs[next()])));
        g.finish();
    }
}

criterion_group!(benches, section4);
criterion_main!(benches);
