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
//! is the bottleneck (`tests/rr22_concurrent_cost.rs` with `OBLIV_RR22_MBPS`).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Mux, Stats, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, Rr22Config, Variant};

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

type Buckets = Vec<Vec<[u8; 8]>>;

/// The items of `range` split into [`BUCKETS`] buckets by value mod [`BUCKETS`] (both
/// parties use the same rule, so equal items meet in the same bucket).
fn buckets(range: std::ops::Range<u64>) -> Buckets {
    let mut out = vec![Vec::new(); BUCKETS];
    for x in range {
        out[usize::try_from(x % BUCKETS as u64).unwrap()].push(x.to_le_bytes());
    }
    out
}

/// One run: (wall, receiver bytes sent, sender bytes sent, intersection size).
fn one_run(v: Variant, workers: usize, xs: Buckets, ys: Buckets) -> (Duration, u64, u64, usize) {
    let cfg = Rr22Config::new(v);
    let (a, b) = mem_pair();
    let start = Instant::now();
    let sender_cfg = cfg;
    let t = std::thread::spawn(move || {
        let mux = Mux::new(b).unwrap();
        let mut rng = AesRng::from_seed([2; 16]);
        let it = rr22::run_buckets(&mux, Role::Sender, &sender_cfg, workers, ys, &mut rng).unwrap();
        let mut st = it.setup_stats();
        for o in it {
            st += o.unwrap().stats;
        }
        st.bytes_sent
    });
    let mux = Mux::new(a).unwrap();
    let mut rng = AesRng::from_seed([1; 16]);
    let it = rr22::run_buckets(&mux, Role::Receiver, &cfg, workers, xs, &mut rng).unwrap();
    let mut st: Stats = it.setup_stats();
    let mut found = 0;
    for o in it {
        let o = o.unwrap();
        found += o.result.unwrap().len();
        st += o.stats;
    }
    let sent_by_sender = t.join().unwrap();
    (start.elapsed(), st.bytes_sent, sent_by_sender, found)
}

fn bench(c: &mut Criterion) {
    let v = variant();
    let mut g = c.benchmark_group(format!("rr22_buckets_{}", &v.name()[5..]));
    g.sample_size(10);
    for n in sizes() {
        let (xs, ys) = (buckets(0..n), buckets(n / 2..n / 2 + n));
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
