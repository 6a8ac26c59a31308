//! Times one silent extension per phase-free wall clock, for quick figures:
//! `cargo run --release -p obliv-vole --example vole_timing -- 20 [chunk]` (log2 of n, and
//! optionally log2 of the largest chunk; default min(n, 2^22)). Prints per-party CPU time
//! (Linux thread CPU clock) and the bytes exchanged.
use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, mem_pair};
use obliv_vole::{SubfieldVoleReceiver, SubfieldVoleSender, VoleConfig, VoleReceiver, VoleSender};

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`), zero elsewhere.
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

fn main() {
    let log: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let n = 1usize << log;
    let chunk_log: Option<u32> = std::env::args().nth(2).and_then(|s| s.parse().ok());
    let cfg = VoleConfig {
        max_chunk: chunk_log.map_or(n.min(obliv_vole::DEFAULT_MAX_CHUNK), |c| 1usize << c),
        ..VoleConfig::default()
    };
    for field in [false, true] {
        let (mut c0, mut c1) = mem_pair();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([1; 16]);
            if field {
                let mut s = VoleSender::new(&mut c0, cfg, &mut rng).expect("setup");
                s.extend(&mut c0, 1000, &mut rng).expect("warm");
                let t0 = thread_cpu();
                s.extend(&mut c0, n, &mut rng).expect("extend");
                thread_cpu() - t0
            } else {
                let mut s = SubfieldVoleSender::new(&mut c0, cfg, &mut rng).expect("setup");
                s.extend(&mut c0, 1000, &mut rng).expect("warm");
                let t0 = thread_cpu();
                s.extend(&mut c0, n, &mut rng).expect("extend");
                thread_cpu() - t0
            }
        });
        let mut rng = AesRng::from_seed([2; 16]);
        let (el, before, after);
        if field {
            let mut r = VoleReceiver::new(&mut c1, cfg, &mut rng).expect("setup");
            r.extend(&mut c1, 1000, &mut rng).expect("warm");
            before = c1.stats();
            let (t0, w0) = (thread_cpu(), Instant::now());
            r.extend(&mut c1, n, &mut rng).expect("extend");
            el = (thread_cpu() - t0, w0.elapsed());
            after = c1.stats();
        } else {
            let mut r = SubfieldVoleReceiver::new(&mut c1, cfg, &mut rng).expect("setup");
            r.extend(&mut c1, 1000, &mut rng).expect("warm");
            before = c1.stats();
            let (t0, w0) = (thread_cpu(), Instant::now());
            r.extend(&mut c1, n, &mut rng).expect("extend");
            el = (thread_cpu() - t0, w0.elapsed());
            after = c1.stats();
        }
        let sel = t.join().expect("sender thread");
        let bytes = (after - before).total_bytes();
        println!(
            "{} n=2^{log}: CPU receiver {:?} ({:.2} M/s), sender {:?} ({:.2} M/s); wall {:?}; {} bytes = {:.4} bits/corr",
            if field { "gf128 " } else { "subfield" },
            el.0,
            n as f64 / el.0.as_secs_f64() / 1e6,
            sel,
            n as f64 / sel.as_secs_f64() / 1e6,
            el.1,
            bytes,
            bytes as f64 * 8.0 / n as f64
        );
    }
}
