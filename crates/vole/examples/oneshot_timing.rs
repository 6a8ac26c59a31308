//! One-shot GF(2^128) VOLE as RR22 fast uses it: fresh generators (base OT included), one
//! `extend(m)`, thread CPU per party; best and median of `reps`.
//! `cargo run --release -p obliv-vole --example oneshot_timing -- [m [reps [malicious]]]`
//! (default `m` = 1,415,700, the OKVS size of RR22 fast at 2^20).
#![allow(clippy::unwrap_used)]
use std::time::Duration;

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::mem_pair;
use obliv_vole::{Security, VoleConfig, VoleReceiver, VoleSender};

fn thread_cpu() -> Duration {
    obliv_core::cpu_time::thread().unwrap_or_default()
}

fn main() {
    let m: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_415_700);
    let reps: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
        .max(1);
    let security = match std::env::args().nth(3).as_deref() {
        Some("malicious") => Security::Malicious,
        _ => Security::SemiHonest,
    };
    let cfg = VoleConfig::with_security(security);
    let (mut rs, mut ss) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        let (mut c0, mut c1) = mem_pair();
        let s = std::thread::Builder::new()
            .name("vole-send".into())
            .spawn(move || {
                let t0 = thread_cpu();
                let mut rng = AesRng::from_seed([2; 16]);
                let mut s = VoleSender::new(&mut c0, cfg, &mut rng).unwrap();
                let b = s.extend(&mut c0, m, &mut rng).unwrap();
                std::hint::black_box(&b);
                drop(b);
                drop(s);
                thread_cpu() - t0
            })
            .unwrap();
        let t0 = thread_cpu();
        let mut rng = AesRng::from_seed([1; 16]);
        let mut r = VoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
        let (a, c) = r.extend(&mut c1, m, &mut rng).unwrap();
        std::hint::black_box((&a, &c));
        drop((a, c));
        drop(r);
        let rc = thread_cpu() - t0;
        let sc = s.join().unwrap();
        println!(
            "run {rep}: receiver {:.1} ms, sender {:.1} ms",
            rc.as_secs_f64() * 1e3,
            sc.as_secs_f64() * 1e3
        );
        rs.push(rc.as_secs_f64());
        ss.push(sc.as_secs_f64());
    }
    rs.sort_by(f64::total_cmp);
    ss.sort_by(f64::total_cmp);
    println!(
        "m={m}: receiver best {:.1} ms median {:.1} ms; sender best {:.1} ms median {:.1} ms",
        rs[0] * 1e3,
        rs[reps / 2] * 1e3,
        ss[0] * 1e3,
        ss[reps / 2] * 1e3
    );
}
