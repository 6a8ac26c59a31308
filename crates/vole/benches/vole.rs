//! Benchmarks of obliv-vole: the ExConv7x24 encoder.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::{Block, Prg};
use obliv_vole::{CodeField, ExConvCode, LpnCode};

fn scale() -> usize {
    if std::env::var("OBLIV_BENCH_SCALE").as_deref() == Ok("full") {
        24
    } else {
        20
    }
}

fn bench_code(c: &mut Criterion) {
    let mut g = c.benchmark_group("exconv7x24_dual_encode");
    g.sample_size(10);
    let k = 1usize << scale();
    let n = 2 * k;
    g.throughput(Throughput::Elements(k as u64));
    let x = Prg::new(Block(1)).blocks(n);
    for field in [CodeField::Gf2, CodeField::Gf128] {
        let code = ExConvCode::new(k, n, field);
        g.bench_with_input(
            BenchmarkId::new(format!("{field:?}_blocks"), k),
            &x,
            |b, x| {
                b.iter_batched_ref(
                    || x.clone(),
                    |v| code.dual_encode(v),
                    criterion::BatchSize::LargeInput,
                )
            },
        );
    }
    let code = ExConvCode::new(k, n, CodeField::Gf2);
    let bits: Vec<u8> = x.iter().map(|b| u8::from(b.lsb())).collect();
    g.bench_with_input(
        BenchmarkId::new("Gf2_bits_and_blocks", k),
        &(bits, x),
        |b, (bits, x)| {
            b.iter_batched_ref(
                || (bits.clone(), x.clone()),
                |(a, c)| code.dual_encode2(a, c),
                criterion::BatchSize::LargeInput,
            )
        },
    );
    g.finish();
}

criterion_group!(benches, bench_code);
criterion_main!(benches);
