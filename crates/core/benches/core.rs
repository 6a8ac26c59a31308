//! Throughput of obliv-core's hot paths: AES PRG, fixed-key hashes, many-key Davies–Meyer,
//! GF(2^128), transpose.
//!
//! `cargo bench -p obliv-core --bench core`. Figures are in the crate README.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::{Aes, Block, Prg, aes, gf128, hash, transpose};
use std::hint::black_box;

fn prg_and_aes(c: &mut Criterion) {
    let mut g = c.benchmark_group("core/aes");
    let n = 1 << 16; // 1 MiB of output
    g.throughput(Throughput::Bytes((n * 16) as u64));
    let mut buf = vec![Block::ZERO; n];
    let mut prg = Prg::new(Block(42));
    g.bench_function("prg_fill_1MiB", |b| {
        b.iter(|| prg.fill_blocks(black_box(&mut buf)))
    });
    let aes = Aes::fixed();
    g.bench_function("fixed_key_aes_1MiB", |b| {
        b.iter(|| aes.encrypt_blocks(black_box(&mut buf)))
    });
    g.finish();

    let mut g = c.benchmark_group("core/hash");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("cr_64Ki_blocks", |b| {
        b.iter(|| hash::cr_in_place(black_box(&mut buf)))
    });
    g.bench_function("ccr_64Ki_blocks", |b| {
        b.iter(|| hash::ccr_in_place(black_box(&mut buf)))
    });
    g.bench_function("tccr_64Ki_blocks", |b| {
        b.iter(|| hash::tccr_in_place(7, black_box(&mut buf)))
    });
    g.finish();

    // Davies–Meyer under a fresh key per block (malicious RR22's output hash), one thread.
    let mut g = c.benchmark_group("core/davies_meyer");
    g.throughput(Throughput::Elements(n as u64));
    let keys: Vec<Block> = (0..n as u128)
        .map(|i| Block(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect();
    let msgs: Vec<Block> = (0..n as u128).map(|i| Block(i ^ 0x5555)).collect();
    g.bench_function("davies_meyer_many_64Ki", |b| {
        b.iter(|| aes::davies_meyer_many(black_box(&keys), black_box(&msgs), &mut buf))
    });
    g.bench_function("aes_new_encrypt_64Ki", |b| {
        b.iter(|| {
            for ((o, &k), &m) in buf.iter_mut().zip(black_box(&keys)).zip(black_box(&msgs)) {
                *o = Aes::new(k).encrypt_block(m) ^ m;
            }
        })
    });
    g.finish();
}

fn gf128_ops(c: &mut Criterion) {
    let mut g = c.benchmark_group("core/gf128");
    let n = 1 << 16;
    let a = Prg::new(Block(1)).blocks(n);
    let bv = Prg::new(Block(2)).blocks(n);
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("mul_64Ki", |b| {
        b.iter(|| {
            let mut acc = Block::ONE;
            for x in &a {
                acc = gf128::mul(acc, *x);
            }
            acc
        })
    });
    g.bench_function("inner_product_64Ki", |b| {
        b.iter(|| gf128::inner_product(black_box(&a), black_box(&bv)))
    });
    g.finish();
}

fn transpose_bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("core/transpose");
    for log_n in [16usize, 20] {
        let n = 1 << log_n;
        let mut rows = vec![0u8; 128 * n / 8];
        Prg::new(Block(3)).fill_bytes(&mut rows);
        let mut out = vec![Block::ZERO; n];
        g.throughput(Throughput::Bytes(rows.len() as u64));
        g.bench_with_input(BenchmarkId::new("128xn", n), &n, |b, &n| {
            b.iter(|| transpose::transpose_128_rows(black_box(&rows), n, &mut out))
        });
    }
    g.finish();
}

criterion_group!(benches, prg_and_aes, gf128_ops, transpose_bench);
criterion_main!(benches);
