//! One RR22 run (or several) of one variant, both parties in this process over the in-memory
//! channel, each party on its own named thread (`rr22-recv`, `rr22-send`) with a one-thread
//! rayon pool: prints each run's wall time (both parties), thread CPU time per party and the bytes each party sent,
//! then the best and the median. Made for `perf record -g` (`perf report --comm rr22-recv`).
//!
//! ```text
//! OBLIV_RR22_VARIANT=fast OBLIV_RR22_LOG_N=20 OBLIV_RR22_REPS=5 \
//!     cargo run --release -p obliv-psi --example rr22_profile
//! ```
//!
//! `OBLIV_RR22_VARIANT` = `fast` (default), `lowcomm`, `malicious`; `OBLIV_RR22_N` an exact
//! size or `OBLIV_RR22_LOG_N` a power of two (default 2^20); `OBLIV_RR22_REPS` runs (default 3).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, Rr22Config, Variant};

fn thread_cpu() -> Duration {
    obliv_core::cpu_time::thread().unwrap_or_default()
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// One party on a named thread with a one-thread rayon pool: (CPU, bytes sent, output size).
fn party(
    role: Role,
    mut ch: obliv_net::MemChannel,
    items: Vec<[u8; 8]>,
    cfg: Rr22Config,
) -> std::thread::JoinHandle<(Duration, u64, usize)> {
    let name = match role {
        Role::Receiver => "rr22-recv",
        Role::Sender => "rr22-send",
    };
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .use_current_thread()
                .build()
                .unwrap();
            pool.install(|| {
                let t0 = thread_cpu();
                let seed = if role == Role::Receiver {
                    [1; 16]
                } else {
                    [2; 16]
                };
                let mut rng = AesRng::from_seed(seed);
                let out = rr22::run(&mut ch, role, &items, &cfg, &mut rng).unwrap();
                (
                    thread_cpu() - t0,
                    ch.stats().bytes_sent,
                    out.map_or(0, |o| o.len()),
                )
            })
        })
        .unwrap()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let variant = match std::env::var("OBLIV_RR22_VARIANT").as_deref() {
        Ok("lowcomm") => Variant::LowComm,
        Ok("malicious") => Variant::Malicious,
        _ => Variant::Fast,
    };
    let n = env_usize("OBLIV_RR22_N")
        .or_else(|| env_usize("OBLIV_RR22_LOG_N").map(|l| 1 << l))
        .unwrap_or(1 << 20);
    let reps = env_usize("OBLIV_RR22_REPS").unwrap_or(3).max(1);
    let cfg = Rr22Config::new(variant);
    let x: Vec<[u8; 8]> = (0..n).map(|i| (i as u64).to_le_bytes()).collect();
    let y: Vec<[u8; 8]> = (n / 2..n / 2 + n)
        .map(|i| (i as u64).to_le_bytes())
        .collect();
    let (mut rs, mut ss, mut ws) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let (a, b) = mem_pair();
        let (xs, ys) = (x.clone(), y.clone());
        let t0 = std::time::Instant::now();
        let s = party(Role::Sender, b, ys, cfg);
        let r = party(Role::Receiver, a, xs, cfg);
        let (rc, rb, found) = r.join().unwrap();
        let (sc, sb, _) = s.join().unwrap();
        let wall = t0.elapsed().as_secs_f64();
        assert_eq!(found, n - n / 2, "wrong intersection size");
        #[allow(clippy::cast_precision_loss)] // display only
        let mb = |b: u64| b as f64 / 1e6;
        println!(
            "{} n={n} run {rep}: wall {wall:.3} s; receiver {:.3} s, sender {:.3} s CPU; R->S {:.2} MB, S->R {:.2} MB, total {:.2} MB",
            variant.name(),
            rc.as_secs_f64(),
            sc.as_secs_f64(),
            mb(rb),
            mb(sb),
            mb(rb + sb)
        );
        ws.push(wall);
        rs.push(rc.as_secs_f64());
        ss.push(sc.as_secs_f64());
    }
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "{} n={n}: wall best {:.3} s median {:.3} s; receiver CPU best {:.3} s median {:.3} s; sender CPU best {:.3} s median {:.3} s",
        variant.name(),
        best(&ws),
        median(&mut ws),
        best(&rs),
        median(&mut rs),
        best(&ss),
        median(&mut ss)
    );
}
