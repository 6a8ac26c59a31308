//! RR22 PSI (fast, low-communication, malicious), both parties in one process over the
//! in-memory channel, each party on a one-thread rayon pool (the RR22 paper's single-thread
//! setting).
//!
//! Before the criterion group it prints, per size, the thread CPU time of each party (from
//! `/proc/thread-self/schedstat`, more stable than wall time on a loaded machine) and the
//! bytes each party sent. Sizes: 2^16, plus 2^20 with `OBLIV_BENCH_SCALE=full`
//! (`OBLIV_RR22_LOG_N` picks one size instead, `OBLIV_RR22_N` an exact size such as 1000000).
//! `OBLIV_RR22_VARIANT` = `fast` (default), `lowcomm`, `malicious` or `all`.
//!
//! ```text
//! cargo bench -p obliv-psi --bench rr22 -- --quick
//! OBLIV_BENCH_SCALE=full cargo bench -p obliv-psi --bench rr22 -- --quick
//! OBLIV_RR22_VARIANT=all OBLIV_RR22_N=1000000 cargo bench -p obliv-psi --bench rr22 -- --quick
//! ```
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, Rr22Config, Variant};

fn thread_cpu() -> Option<Duration> {
    obliv_core::cpu_time::thread()
}

fn variants() -> Vec<Variant> {
    match std::env::var("OBLIV_RR22_VARIANT").as_deref() {
        Ok("lowcomm") => vec![Variant::LowComm],
        Ok("malicious") => vec![Variant::Malicious],
        Ok("all") => vec![Variant::Fast, Variant::LowComm, Variant::Malicious],
        _ => vec![Variant::Fast],
    }
}

fn sizes() -> Vec<usize> {
    if let Some(n) = std::env::var("OBLIV_RR22_N")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return vec![n];
    }
    if let Some(l) = std::env::var("OBLIV_RR22_LOG_N")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    {
        return vec![1 << l];
    }
    let mut v = vec![1 << 16];
    if std::env::var("OBLIV_BENCH_SCALE").as_deref() == Ok("full") {
        v.push(1 << 20);
    }
    v
}

fn items(n: usize, offset: usize) -> Vec<[u8; 8]> {
    (offset..offset + n)
        .map(|i| (i as u64).to_le_bytes())
        .collect()
}

/// One run: (receiver CPU, sender CPU, receiver bytes sent, sender bytes sent, wall).
fn one_run(v: Variant, x: &[[u8; 8]], y: &[[u8; 8]]) -> (Duration, Duration, u64, u64, Duration) {
    let cfg = Rr22Config::new(v);
    let (mut a, mut b) = mem_pair();
    let y = y.to_vec();
    let start = Instant::now();
    let t = std::thread::spawn(move || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        pool.install(|| {
            let t0 = thread_cpu().unwrap_or_default();
            let mut rng = AesRng::from_seed([2; 16]);
            rr22::run(&mut b, Role::Sender, &y, &cfg, &mut rng).unwrap();
            (thread_cpu().unwrap_or_default() - t0, b.stats().bytes_sent)
        })
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (rc, rb, n) = pool.install(|| {
        let t0 = thread_cpu().unwrap_or_default();
        let mut rng = AesRng::from_seed([1; 16]);
        let out = rr22::run(&mut a, Role::Receiver, x, &cfg, &mut rng)
            .unwrap()
            .unwrap();
        (
            thread_cpu().unwrap_or_default() - t0,
            a.stats().bytes_sent,
            out.len(),
        )
    });
    let (sc, sb) = t.join().unwrap();
    assert_eq!(n, x.len() / 2);
    (rc, sc, rb, sb, start.elapsed())
}

fn bench(c: &mut Criterion) {
    for v in variants() {
        let mut g = c.benchmark_group(format!("rr22_{}", &v.name()[5..]));
        g.sample_size(10);
        for n in sizes() {
            let x = items(n, 0);
            let y = items(n, n / 2);
            let (rc, sc, rb, sb, wall) = one_run(v, &x, &y);
            #[allow(clippy::cast_precision_loss)] // display only
            let mb = |b: u64| b as f64 / 1e6;
            println!(
                "{} n={n}: receiver CPU {:.3} s, sender CPU {:.3} s, wall {:.3} s; \
                 receiver sent {:.2} MB, sender sent {:.2} MB, total {:.2} MB",
                v.name(),
                rc.as_secs_f64(),
                sc.as_secs_f64(),
                wall.as_secs_f64(),
                mb(rb),
                mb(sb),
                mb(rb + sb)
            );
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::from_parameter(n), &n, |bch, _| {
                bch.iter(|| one_run(v, &x, &y));
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
