//! Times silent extensions per flavour, for quick figures:
//! `cargo run --release -p obliv-vole --example vole_timing -- 20 [chunk [flavour [reps [sec]]]]`
//! (log2 of n, optionally log2 of the largest chunk, default min(n, 2^21), one of
//! `subfield`, `sub64`, `gf128` or `all`, the number of repetitions, of which the best
//! is printed, and `malicious` for the malicious variants). Each repetition is one streaming `extend_chunks` call of `n` on generators
//! that are already set up. Prints per-party CPU time
//! (Linux thread CPU clock) and the bytes exchanged.
use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, mem_pair};
use obliv_vole::{
    Subfield64VoleReceiver, Subfield64VoleSender, SubfieldVoleReceiver, SubfieldVoleSender,
    VoleConfig, VoleReceiver, VoleSender,
};

/// CPU time of the calling thread (`obliv_core::cpu_time::thread`), zero where unavailable.
fn thread_cpu() -> Duration {
    obliv_core::cpu_time::thread().unwrap_or_default()
}

fn main() {
    let log: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let n = 1usize << log;
    let chunk_log: Option<u32> = std::env::args().nth(2).and_then(|s| s.parse().ok());
    let security = match std::env::args().nth(5).as_deref() {
        Some("malicious") => obliv_vole::Security::Malicious,
        _ => obliv_vole::Security::SemiHonest,
    };
    let cfg = VoleConfig {
        max_chunk: chunk_log.map_or(n.min(obliv_vole::DEFAULT_MAX_CHUNK), |c| 1usize << c),
        security,
    };
    let only: Option<String> = std::env::args().nth(3).filter(|f| f != "all");
    let reps: usize = std::env::args()
        .nth(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    for flavor in ["subfield", "sub64", "gf128"] {
        if only.as_deref().is_some_and(|o| o != flavor) {
            continue;
        }
        let (mut c0, mut c1) = mem_pair();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([1; 16]);
            macro_rules! time {
                ($s:expr) => {{
                    let mut s = $s.expect("setup");
                    s.extend(&mut c0, 1000, &mut rng).expect("warm");
                    let mut best = Duration::MAX;
                    for _ in 0..reps {
                        let t0 = thread_cpu();
                        s.extend_chunks(&mut c0, n, &mut rng, |b| {
                            std::hint::black_box(b);
                            Ok(())
                        })
                        .expect("extend");
                        best = best.min(thread_cpu() - t0);
                    }
                    best
                }};
            }
            match flavor {
                "gf128" => time!(VoleSender::new(&mut c0, cfg, &mut rng)),
                "sub64" => time!(Subfield64VoleSender::new(&mut c0, cfg, &mut rng)),
                _ => time!(SubfieldVoleSender::new(&mut c0, cfg, &mut rng)),
            }
        });
        let mut rng = AesRng::from_seed([2; 16]);
        macro_rules! time {
            ($r:expr) => {{
                let mut r = $r.expect("setup");
                r.extend(&mut c1, 1000, &mut rng).expect("warm");
                let (mut best, mut stats) = ((Duration::MAX, Duration::MAX), None);
                for _ in 0..reps {
                    let before = c1.stats();
                    let (t0, w0) = (thread_cpu(), Instant::now());
                    r.extend_chunks(&mut c1, n, &mut rng, |a, c| {
                        std::hint::black_box((a, c));
                        Ok(())
                    })
                    .expect("extend");
                    let el = (thread_cpu() - t0, w0.elapsed());
                    best = (best.0.min(el.0), best.1.min(el.1));
                    stats = Some(c1.stats() - before);
                }
                (best, stats.expect("at least one repetition"))
            }};
        }
        let (el, stats) = match flavor {
            "gf128" => time!(VoleReceiver::new(&mut c1, cfg, &mut rng)),
            "sub64" => time!(Subfield64VoleReceiver::new(&mut c1, cfg, &mut rng)),
            _ => time!(SubfieldVoleReceiver::new(&mut c1, cfg, &mut rng)),
        };
        let sel = t.join().expect("sender thread");
        let bytes = stats.total_bytes();
        println!(
            "{flavor:8} n=2^{log}: CPU receiver {:?} ({:.2} M/s), sender {:?} ({:.2} M/s); wall {:?}; {} bytes = {:.4} bits/corr",
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
