//! Figures for `rr22::run_buckets`, run by hand and alone (the process's CPU time is measured):
//! `cargo test -p obliv-psi --test it rr22_concurrent_cost:: -- --ignored --nocapture`. Both
//! parties in this process over an in-memory `Mux`, `OBLIV_RR22_N` items per side (default
//! 2^20) split into `OBLIV_RR22_BUCKETS` buckets (default 4), for 1, 2 and 3 workers: wall
//! time, the process's CPU time (both parties, from `/proc/self/stat`), and the bytes each
//! party sent. Repeated `OBLIV_RR22_REPS` times (default 3), workers interleaved; best wall
//! time shown. With `OBLIV_RR22_MBPS` and `OBLIV_RR22_LATENCY_MS` the channel is a simulated
//! link of that bandwidth and one-way latency (`obliv_net::SimLink`).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use obliv_net::{LinkModel, SimLink, Split, mem_pair};
use obliv_psi::rr22::{Rr22Config, Variant};

use crate::common::buckets::{self, Buckets};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// User + system CPU time of this process so far (all threads, live and exited).
fn process_cpu() -> Duration {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which is in parentheses): utime and stime are the
    // 12th and 13th of them, in clock ticks (100 per second on Linux).
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    Duration::from_millis((f[0] + f[1]) * 10)
}

fn items(range: std::ops::Range<u64>) -> Vec<[u8; 8]> {
    range.map(u64::to_le_bytes).collect()
}

/// One run: returns (wall, CPU, receiver bytes sent, sender bytes sent, intersection size).
fn run(
    variant: Variant,
    n: u64,
    buckets: u64,
    workers: usize,
) -> (Duration, Duration, u64, u64, usize) {
    // Bucket i holds the items ≡ i (mod buckets): X = 0..n, Y = n/2..3n/2.
    let split = |r: std::ops::Range<u64>| -> Vec<Vec<[u8; 8]>> {
        (0..buckets)
            .map(|b| {
                items(r.clone())
                    .into_iter()
                    .filter(|x| u64::from_le_bytes(*x) % buckets == b)
                    .collect()
            })
            .collect()
    };
    let (xs, ys) = (split(0..n), split(n / 2..n / 2 + n));
    let cfg = Rr22Config::new(variant);
    let (a, b) = mem_pair();
    match link() {
        Some(m) => go(
            (SimLink::new(a, m), SimLink::new(b, m)),
            cfg,
            workers,
            xs,
            ys,
        ),
        None => go((a, b), cfg, workers, xs, ys),
    }
}

fn link() -> Option<LinkModel> {
    let mbps = std::env::var("OBLIV_RR22_MBPS").ok()?.parse().ok()?;
    Some(LinkModel::mbps_ms(
        mbps,
        env("OBLIV_RR22_LATENCY_MS", 0) as u64,
    ))
}

fn go<C>(
    ends: (C, C),
    cfg: Rr22Config,
    workers: usize,
    xs: Buckets,
    ys: Buckets,
) -> (Duration, Duration, u64, u64, usize)
where
    C: Split + Send + 'static,
{
    let cpu0 = process_cpu();
    let r = buckets::run_pair(ends, cfg, workers, xs, ys);
    (
        r.wall,
        process_cpu() - cpu0,
        r.receiver.bytes_sent,
        r.sender.bytes_sent,
        r.found,
    )
}

#[test]
#[ignore = "figures, run by hand"]
fn concurrency_figures() {
    let n = env("OBLIV_RR22_N", 1 << 20) as u64;
    let buckets = env("OBLIV_RR22_BUCKETS", 4) as u64;
    let reps = env("OBLIV_RR22_REPS", 3);
    let variant = match std::env::var("OBLIV_RR22_VARIANT").as_deref() {
        Ok("lowcomm") => Variant::LowComm,
        _ => Variant::Fast,
    };
    println!(
        "{} n = {n} per side in {buckets} buckets, rayon threads {}, link {:?}",
        variant.name(),
        rayon::current_num_threads(),
        link()
    );
    let mut best = [(Duration::MAX, Duration::ZERO, 0, 0); 3];
    for _ in 0..reps {
        for w in 1..=3 {
            let (wall, cpu, r, s, found) = run(variant, n, buckets, w);
            assert_eq!(found as u64, n / 2);
            println!(
                "  workers {w}: wall {:.3} s, CPU {:.2} s (both parties), R sent {:.2} MB, S sent {:.2} MB",
                wall.as_secs_f64(),
                cpu.as_secs_f64(),
                r as f64 / 1e6,
                s as f64 / 1e6
            );
            if wall < best[w - 1].0 {
                best[w - 1] = (wall, cpu, r, s);
            }
        }
    }
    for (i, (wall, cpu, r, s)) in best.iter().enumerate() {
        println!(
            "best, workers {}: wall {:.3} s, CPU {:.2} s, bytes {:.2} + {:.2} MB",
            i + 1,
            wall.as_secs_f64(),
            cpu.as_secs_f64(),
            *r as f64 / 1e6,
            *s as f64 / 1e6
        );
    }
}
