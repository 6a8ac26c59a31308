//! Prints the OKVS figures of the README: encode/decode time at 2^20 keys (or
//! `OKVS_BENCH_LOG_N`; bins of `2^OKVS_BIN_LOG` keys, default 2^14) on one thread, measured
//! as the CPU time of that thread (robust on a shared, loaded machine), and wall time on all
//! threads, plus bytes per key and the size for several bin sizes.
//!
//! ```text
//! cargo run --release -p obliv-okvs --example okvs_figures
//! ```
#![allow(clippy::unwrap_used)] // an example: failures should abort loudly

use std::time::Instant;

use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_okvs::{Binary, BinnedPaxos, DenseKind, DenseValue, Gf128, Okvs, Paxos};

/// CPU time of the calling thread in nanoseconds (`obliv_core::cpu_time::thread`), if available.
fn thread_cpu_ns() -> Option<u64> {
    obliv_core::cpu_time::thread().map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of `runs` runs of `f` on a one-thread pool (CPU time of the worker).
fn one_thread_ms(runs: usize, mut f: impl FnMut() + Send) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let v = pool.install(|| {
        (0..runs)
            .map(|_| {
                let (c0, t0) = (thread_cpu_ns(), Instant::now());
                f();
                match (c0, thread_cpu_ns()) {
                    (Some(a), Some(b)) => (b - a) as f64 / 1e6,
                    _ => t0.elapsed().as_secs_f64() * 1e3,
                }
            })
            .collect::<Vec<_>>()
    });
    median(v)
}

/// Median wall-clock milliseconds of `runs` runs of `f` on all threads.
fn all_threads_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let t0 = Instant::now();
                f();
                t0.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

fn run<D, V, O>(name: &str, okvs: &O, n: usize, runs: usize)
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
    let e1 = one_thread_ms(runs, || okvs.encode_into(&keys, &values, &mut enc).unwrap());
    let d1 = one_thread_ms(runs, || okvs.decode_into(&keys, &enc, &mut dec).unwrap());
    let ea = all_threads_ms(runs, || okvs.encode_into(&keys, &values, &mut enc).unwrap());
    let da = all_threads_ms(runs, || okvs.decode_into(&keys, &enc, &mut dec).unwrap());
    assert_eq!(dec, values);
    let mut r = AesRng::from_seed([2; 16]);
    let er = one_thread_ms(runs, || {
        okvs.encode_randomized_into(&keys, &values, &mut enc, &mut r)
            .unwrap()
    });
    let dr = one_thread_ms(runs, || okvs.decode_into(&keys, &enc, &mut dec).unwrap());
    assert_eq!(dec, values);
    let bytes = (okvs.size() * core::mem::size_of::<V>()) as f64 / n as f64;
    println!(
        "| {name} | {:.4} | {bytes:.2} | {e1:.1} | {d1:.1} | {er:.1} | {dr:.1} | {ea:.1} | {da:.1} |",
        okvs.size() as f64 / n as f64
    );
}

fn main() {
    let log_n: u32 = std::env::var("OKVS_BENCH_LOG_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let runs: usize = std::env::var("OKVS_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let n = 1usize << log_n;
    let threads = rayon::current_num_threads();
    println!("n = 2^{log_n}, {runs} runs (median), all threads = {threads}");
    println!();
    println!(
        "| bin size | bins | bin capacity | size/n (GF(2^128) dense) | size/n (binary dense) |"
    );
    println!("|---|---|---|---|---|");
    for lb in [12u32, 14, 16, 18] {
        let g = BinnedPaxos::<Gf128>::with_bin_size(n, 1 << lb, 40, Block(1)).unwrap();
        let b = BinnedPaxos::<Binary>::with_bin_size(n, 1 << lb, 40, Block(1)).unwrap();
        println!(
            "| 2^{lb} | {} | {} | {:.4} | {:.4} |",
            g.bins(),
            g.bin_capacity(),
            g.expansion(),
            b.expansion()
        );
    }
    println!();
    println!(
        "| OKVS | size/n | bytes/key | encode 1 thr | decode 1 thr | randomized encode 1 thr | its decode 1 thr | encode {threads} thr (wall) | decode {threads} thr (wall) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let bin: usize = std::env::var("OKVS_BIN_LOG")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .map_or(obliv_okvs::DEFAULT_BIN_SIZE, |l| 1 << l);
    let b = BinnedPaxos::<Gf128>::with_bin_size(n, bin, 40, Block(1)).unwrap();
    run::<Gf128, Block, _>("binned, GF(2^128) dense, Block", &b, n, runs);
    let b = BinnedPaxos::<Binary>::with_bin_size(n, bin, 40, Block(1)).unwrap();
    run::<Binary, u64, _>("binned, binary dense, u64", &b, n, runs);
    run::<Binary, Block, _>("binned, binary dense, Block", &b, n, runs);
    let p = Paxos::<Gf128>::new(n, 40, Block(2)).unwrap();
    run::<Gf128, Block, _>("unbinned, GF(2^128) dense, Block", &p, n, runs);
    let p = Paxos::<Binary>::new(n, 40, Block(2)).unwrap();
    run::<Binary, u64, _>("unbinned, binary dense, u64", &p, n, runs);
}
