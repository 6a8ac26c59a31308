//! The concurrent RR22 bucket driver (`rr22::run_buckets`): both parties in one process over
//! an in-memory `obliv_net::Mux`, `n` items per side split into 4 buckets by value, for 1 and
//! 2 workers per party. Each worker runs its buckets on its own thread and sub-channel; the
//! output is checked against the known intersection (half of each side).
//!
//! Before the criterion group it prints, per worker count, one run's wall time and the bytes
//! each party's sub-channels carried (the Mux's 4-byte sub-channel ids are framing and not
//! counted, as the other channels do not count their length prefixes).
//!
//! Sizes: 2^16 per side, plus 2^20 with `OBLIV_BENCH_SCALE=full` (`OBLIV_RR22_N` picks an
//! exact size instead). `OBLIV_RR22_VARIANT` = `fast` (default) or `lowcomm`.
//!
//! ```text
//! cargo bench -p obliv-psi --bench rr22_buckets -- --quick
//! ```
//!
//! On this 2-core machine in memory, one worker already keeps both cores busy (the rayon pool
//! inside each bucket), so the second worker shows its gain only where the link, not the CPU,
//! is the bottleneck (`tests/it/rr22_concurrent_cost.rs` with `OBLIV_RR22_MBPS`).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_net::mem_pair;
use obliv_psi::rr22::{Rr22Config, Variant};

#[path = "../tests/common/buckets.rs"]
mod buckets;
use buckets::Buckets;

/// Buckets per run.
const BUCKETS: usize = 4;

fn variant() -> Variant {
    match std::env::var("OBLIV_RR22_VARIANT").as_deref() {
        Ok("lowcomm") => Variant::LowComm,
        _ => Variant::Fast,
    }
}

fn sizes() -> Vec<u64> {
    if let Some(n) = std::env::var("OBLIV_RR22_N")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return vec![n];
    }
    let mut v = vec![1 << 16];
    if std::env::var("OBLIV_BENCH_SCALE").as_deref() == Ok("full") {
        v.push(1 << 20);
    }
    v
}

/// The items of `range` split into [`BUCKETS`] buckets by value mod [`BUCKETS`] (both
/// parties use the same rule, so equal items meet in the same bucket).
fn split(range: std::ops::Range<u64>) -> Buckets {
    let mut out = vec![Vec::new(); BUCKETS];
    for x in range {
        out[usize::try_from(x % BUCKETS as u64).unwrap()].push(x.to_le_bytes());
    }
    out
}

/// One run: (wall, receiver bytes sent, sender bytes sent, intersection size).
fn one_run(v: Variant, workers: usize, xs: Buckets, ys: Buckets) -> (Duration, u64, u64, usize) {
    let r = buckets::run_pair(mem_pair(), Rr22Config::new(v), workers, xs, ys);
    (r.wall, r.receiver.bytes_sent, r.sender.bytes_sent, r.found)
}

fn bench(c: &mut Criterion) {
    let v = variant();
    let mut g = c.benchmark_group(format!("rr22_buckets_{}", &v.name()[5..]));
    g.sample_size(10);
    for n in sizes() {
        let (xs, ys) = (split(0..n), split(n / 2..n / 2 + n));
        for workers in [1usize, 2] {
            let (wall, rb, sb, found) = one_run(v, workers, xs.clone(), ys.clone());
            assert_eq!(found as u64, n / 2);
            #[allow(clippy::cast_precision_loss)] // display only
            let mb = |b: u64| b as f64 / 1e6;
            println!(
                "{} n={n} in {BUCKETS} buckets, {workers} worker(s): wall {:.3} s; \
                 receiver sent {:.2} MB, sender sent {:.2} MB",
                v.name(),
                wall.as_secs_f64(),
                mb(rb),
                mb(sb)
            );
            g.throughput(Throughput::Elements(n));
            g.bench_with_input(
                BenchmarkId::new(format!("w{workers}"), n),
                &workers,
                |bch, &w| {
                    bch.iter(|| {
                        let (_, _, _, found) = one_run(v, w, xs.clone(), ys.clone());
                        assert_eq!(found as u64, n / 2);
                    });
                },
            );
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
