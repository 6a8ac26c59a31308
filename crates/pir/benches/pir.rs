//! Benchmarks of the DPF and of PIR (BENCHMARKS.md §3).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::AesRng;
use obliv_pir::dpf;
use rand_core::SeedableRng;

fn bench_dpf(c: &mut Criterion) {
    let mut g = c.benchmark_group("dpf");
    let mut rng = AesRng::from_seed([7; 16]);
    for n in [16u32, 20, 24] {
        let (k0, _) = dpf::gen_keys(n, 3, &mut rng).expect("valid domain");
        let mut out = vec![obliv_core::Block::ZERO; k0.output_blocks()];
        g.throughput(Throughput::Elements(1u64 << n));
        g.bench_with_input(BenchmarkId::new("eval_full", n), &n, |b, _| {
            b.iter(|| k0.eval_full_into(&mut out));
        });
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(BenchmarkId::new("gen", n), &n, |b, &n| {
            b.iter(|| dpf::gen_keys(n, 5, &mut rng).expect("valid domain"));
        });
    }
    g.finish();
}

criterion_group!(benches, bench_dpf);
criterion_main!(benches);
