//! Encode and decode of the RR22 OKVS: binned (GF(2^128) dense, `Block` values: RR22's fast
//! PSI) and unbinned (binary dense, `u64` values: the low-communication mode), on one thread
//! and on all threads.
//!
//! `OKVS_BENCH_LOG_N` sets log2 of the number of keys (default 20, the paper's 2^20).
//! Bytes per key of each encoding are printed once per configuration.
//!
//! ```text
//! cargo bench -p obliv-okvs --bench okvs -- --quick
//! ```
#![allow(missing_docs, clippy::unwrap_used)] // a bench: failures should abort loudly

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_okvs::{Binary, BinnedPaxos, DenseKind, DenseValue, Gf128, Okvs, Paxos};

fn log_n() -> u32 {
    std::env::var("OKVS_BENCH_LOG_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

fn pools() -> Vec<(String, rayon::ThreadPool)> {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut v = vec![(
        "1-thread".to_string(),
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap(),
    )];
    if all > 1 {
        v.push((
            format!("{all}-threads"),
            rayon::ThreadPoolBuilder::new()
                .num_threads(all)
                .build()
                .unwrap(),
        ));
    }
    v
}

fn bench_one<D, V, O>(c: &mut Criterion, name: &str, okvs: &O, n: usize)
where
    D: DenseKind,
    V: DenseValue<D>,
    O: Okvs<D> + Sync,
{
    let mut rng = AesRng::from_seed([1; 16]);
    let keys: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
    let values: Vec<V> = (0..n).map(|_| V::random(&mut rng)).collect();
    let mut enc = vec![V::default(); okvs.size()];
    let mut dec = vec![V::default(); n];
    // A randomized encoding (every free column random, every dense part active): what RR22
    // decodes (the VOLE output), unlike a plain encoding, whose dense parts may be zero.
    let mut rand_enc = vec![V::default(); okvs.size()];
    okvs.encode_randomized_into(&keys, &values, &mut rand_enc, &mut rng)
        .unwrap();
    let mut rand_dec = vec![V::default(); n];
    eprintln!(
        "{name}: n = {n}, size = {} ({:.4}·n), {:.2} bytes per key",
        okvs.size(),
        okvs.size() as f64 / n as f64,
        (okvs.size() * core::mem::size_of::<V>()) as f64 / n as f64
    );
    let mut g = c.benchmark_group(format!("okvs/{name}"));
    g.sample_size(10);
    g.throughput(Throughput::Elements(n as u64));
    for (label, pool) in pools() {
        g.bench_function(BenchmarkId::new("encode", &label), |b| {
            b.iter(|| pool.install(|| okvs.encode_into(&keys, &values, &mut enc).unwrap()))
        });
        g.bench_function(BenchmarkId::new("decode", &label), |b| {
            b.iter(|| pool.install(|| okvs.decode_into(&keys, &enc, &mut dec).unwrap()))
        });
        g.bench_function(BenchmarkId::new("decode_randomized", &label), |b| {
            b.iter(|| pool.install(|| okvs.decode_into(&keys, &rand_enc, &mut rand_dec).unwrap()))
        });
    }
    g.finish();
    assert_eq!(dec, values);
    assert_eq!(rand_dec, values);
}

fn okvs(c: &mut Criterion) {
    let n = 1usize << log_n();
    let binned = BinnedPaxos::<Gf128>::new(n, 40, Block(1)).unwrap();
    bench_one::<Gf128, Block, _>(c, "binned-gf128-block", &binned, n);
    let binned_bin = BinnedPaxos::<Binary>::new(n, 40, Block(1)).unwrap();
    bench_one::<Binary, u64, _>(c, "binned-binary-u64", &binned_bin, n);
    let paxos = Paxos::<Binary>::new(n, 40, Block(2)).unwrap();
    bench_one::<Binary, u64, _>(c, "paxos-binary-u64", &paxos, n);
}

criterion_group!(benches, okvs);
criterion_main!(benches);
