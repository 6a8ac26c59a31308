//! BENCHMARKS.md §2 (python-phe on many cores): Paillier-2048 encryption, 100 per thread, on
//! one thread and on a rayon pool of every core, with the speed-up. Criterion's throughput is
//! the number of encryptions, so its "thrpt" line is encryptions per second.
//!
//! Ids: `paillier/encrypt2048/1_thread` (100 encryptions), `paillier/encrypt2048/all_cores`
//! (100 × cores). `cargo bench -p obliv-bench --bench paillier` (same sizes at every scale).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use obliv_he::Integer;
use obliv_he::paillier::Keypair;

fn plaintexts(n: usize) -> Vec<Integer> {
    (0..n)
        .map(|i| Integer::from(0x9e37_79b9_u64.wrapping_mul(i as u64 + 1) & 0xffff_ffff))
        .collect()
}

fn section2(c: &mut Criterion) {
    let k = Keypair::generate(2048).unwrap();
    let pk = k.public.clone();
    pk.precompute();
    let cores = rayon::current_num_threads();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let single = plaintexts(100);
    let many = plaintexts(100 * cores);

    // The document's table, printed once (best of three).
    let best = |f: &dyn Fn()| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let t1 = best(&|| {
        one.install(|| pk.encrypt_batch(&single).unwrap());
    });
    let tp = best(&|| {
        pk.encrypt_batch(&many).unwrap();
    });
    let (r1, rp) = (100.0 / t1, (100 * cores) as f64 / tp);
    println!("§2 Paillier-2048 encryption | mode | encryptions | seconds | s/enc | enc/s |");
    println!("| 1 thread | 100 | {t1:.4} | {:.6} | {r1:.0} |", t1 / 100.0);
    println!(
        "| pool of {cores} threads | {} | {tp:.4} | {:.6} | {rp:.0} |",
        100 * cores,
        tp / (100 * cores) as f64
    );
    println!("speed-up {:.2}x on {cores} cores", rp / r1);

    let mut g = c.benchmark_group("paillier");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(100));
    g.bench_function("encrypt2048/1_thread", |b| {
        b.iter(|| one.install(|| pk.encrypt_batch(&single).unwrap()))
    });
    g.throughput(Throughput::Elements((100 * cores) as u64));
    g.bench_function("encrypt2048/all_cores", |b| {
        b.iter(|| pk.encrypt_batch(&many).unwrap())
    });
    g.finish();
}

criterion_group!(benches, section2);
criterion_main!(benches);
