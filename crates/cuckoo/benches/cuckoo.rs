//! Cuckoo insertion and simple hashing throughput at 2^20 items (2^24 with
//! `OBLIV_BENCH_SCALE=full`), default (2^-40) table sizes.
#![allow(clippy::unwrap_used)] // a harness: any failure should abort the run loudly

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::{Block, Prg};
use obliv_cuckoo::{CuckooParams, CuckooTable, SimpleTable};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("cuckoo");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    let mut sizes = vec![1usize << 20];
    if std::env::var("OBLIV_BENCH_SCALE").is_ok_and(|v| v == "full") {
        sizes.push(1 << 24);
    }
    for n in sizes {
        let items = Prg::new(Block(1)).blocks(n);
        g.throughput(Throughput::Elements(n as u64));
        let params = CuckooParams::for_items(n).unwrap();
        eprintln!(
            "cuckoo/{n}: {} bins (e = {:.3})",
            params.bins,
            params.bins as f64 / n as f64
        );
        g.bench_with_input(BenchmarkId::new("insert_default", n), &n, |b, _| {
            b.iter(|| black_box(CuckooTable::build_with(&params, &items, Block(2)).unwrap()))
        });
        let tight = CuckooParams::with_factor(n, 1.27).unwrap();
        g.bench_with_input(BenchmarkId::new("insert_e1.27", n), &n, |b, _| {
            b.iter(|| black_box(CuckooTable::build_with(&tight, &items, Block(2)).unwrap()))
        });
        let t = CuckooTable::build_with(&params, &items, Block(2)).unwrap();
        g.bench_with_input(BenchmarkId::new("simple", n), &n, |b, _| {
            b.iter(|| black_box(SimpleTable::build(t.hasher(), &items).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
