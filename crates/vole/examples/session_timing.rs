//! GF(2^128) VOLE in a session of many extensions of `m` (one generator pair, as a bucketed
//! RR22 run uses it): thread CPU per party of each extension after the first, with `extend`
//! (fresh output vectors each time) or `extend_into` (the same vectors every time).
//! `cargo run --release -p obliv-vole --example session_timing -- [m [extensions [into]]]`
//! (default `m` = 1,415,700, the OKVS size of RR22 fast at 2^20 items per bucket).
#![allow(clippy::unwrap_used)]
use std::time::Duration;

use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_net::mem_pair;
use obliv_vole::{VoleConfig, VoleReceiver, VoleSender};

fn thread_cpu() -> Duration {
    obliv_core::cpu_time::thread().unwrap_or_default()
}

fn ms(d: &[Duration]) -> String {
    d.iter()
        .map(|d| format!("{:.1}", d.as_secs_f64() * 1e3))
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let m: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_415_700);
    let reps: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
        .max(2);
    let into = std::env::args().nth(3).as_deref() == Some("into");
    let cfg = VoleConfig::default();
    let (mut c0, mut c1) = mem_pair();
    let s = std::thread::Builder::new()
        .name("vole-send".into())
        .spawn(move || {
            let mut rng = AesRng::from_seed([2; 16]);
            let mut s = VoleSender::new(&mut c0, cfg, &mut rng).unwrap();
            let mut b: Vec<Block> = Vec::new();
            let mut times = Vec::new();
            for _ in 0..reps {
                let t0 = thread_cpu();
                if into {
                    s.extend_into(&mut c0, m, &mut rng, &mut b).unwrap();
                } else {
                    b = s.extend(&mut c0, m, &mut rng).unwrap();
                }
                std::hint::black_box(&b);
                times.push(thread_cpu() - t0);
            }
            times
        })
        .unwrap();
    let mut rng = AesRng::from_seed([1; 16]);
    let mut r = VoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
    let (mut a, mut c): (Vec<Block>, Vec<Block>) = (Vec::new(), Vec::new());
    let mut times = Vec::new();
    for _ in 0..reps {
        let t0 = thread_cpu();
        if into {
            r.extend_into(&mut c1, m, &mut rng, &mut a, &mut c).unwrap();
        } else {
            (a, c) = r.extend(&mut c1, m, &mut rng).unwrap();
        }
        std::hint::black_box((&a, &c));
        times.push(thread_cpu() - t0);
    }
    let st = s.join().unwrap();
    let best = |t: &[Duration]| t[1..].iter().min().copied().unwrap_or_default();
    println!(
        "{} m={m}: receiver {} ms (best after the first {:.1}); sender {} ms (best after the first {:.1})",
        if into { "extend_into" } else { "extend" },
        ms(&times),
        best(&times).as_secs_f64() * 1e3,
        ms(&st),
        best(&st).as_secs_f64() * 1e3
    );
}
