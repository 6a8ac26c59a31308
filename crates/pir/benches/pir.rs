//! Benchmarks of the DPF and of PIR (BENCHMARKS.md §3).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::AesRng;
use obliv_pir::{Database, DpfKey, dpf, dpf_pir};
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

/// Whether `OBLIV_BENCH_SCALE=full` asks for the large sizes.
fn full_scale() -> bool {
    std::env::var("OBLIV_BENCH_SCALE").is_ok_and(|v| v == "full")
}

/// Server time of one DPF-PIR answer (key expansion plus scan) for cases A and B.
fn bench_server(c: &mut Criterion) {
    let mut g = c.benchmark_group("dpf_pir_server");
    let mut rng = AesRng::from_seed([8; 16]);
    let mut cases = vec![(1024usize, 1024usize), (1024, 10240), (65536, 1024)];
    if full_scale() {
        cases.push((65536, 10240));
    }
    for (n, len) in cases {
        let db = Database::random(n, len, &mut rng).expect("valid shape");
        let q = dpf_pir::query(n, n / 2, &mut rng).expect("index in range");
        g.throughput(Throughput::Bytes(db.size_bytes() as u64));
        let id = format!("N={n},rec={len}");
        g.bench_function(BenchmarkId::new("answer", &id), |b| {
            b.iter(|| dpf_pir::answer(&db, &q.to_server0).expect("well-formed key"));
        });
        let bits = DpfKey::from_bytes(&q.to_server0)
            .expect("well-formed key")
            .eval_full();
        g.bench_function(BenchmarkId::new("scan", &id), |b| {
            b.iter(|| db.xor_selected(&bits));
        });
    }
    g.finish();
}

criterion_group!(benches, bench_dpf, bench_server);
criterion_main!(benches);
