//! What a session saves per bucket: CPU time and bytes of one one-shot `rr22::run` against one
//! later `Rr22Session::run` of the same size (the base OTs / base correlations of the silent
//! VOLE are not repeated). A measurement, so `#[ignore]`d:
//!
//! ```text
//! OBLIV_RR22_N=65536 OBLIV_RR22_REPS=5 cargo test -p obliv-psi --test it rr22_session_cost:: -- --ignored --nocapture
//! ```
//!
//! Each party runs on its own one-thread rayon pool; the CPU time is that thread's
//! (`/proc/thread-self/schedstat`), the median over the repetitions.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, Rr22Config, Rr22Session, Variant};

fn thread_cpu() -> Duration {
    obliv_core::cpu_time::thread().unwrap_or_default()
}

fn items(n: usize, offset: usize, rep: usize) -> Vec<[u8; 9]> {
    (offset..offset + n)
        .map(|i| {
            let mut b = [0u8; 9];
            b[..8].copy_from_slice(&(i as u64).to_le_bytes());
            b[8] = u8::try_from(rep % 256).unwrap();
            b
        })
        .collect()
}

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
}

/// Per repetition: (receiver CPU, sender CPU, bytes both ways).
type Sample = (Duration, Duration, u64);

/// `reps` one-shot runs of `n` items.
fn one_shot(v: Variant, n: usize, reps: usize) -> Vec<Sample> {
    (0..reps)
        .map(|rep| {
            let cfg = Rr22Config::new(v);
            let (mut a, mut b) = mem_pair();
            let y = items(n, n / 2, rep);
            let t = std::thread::spawn(move || {
                pool().install(|| {
                    let t0 = thread_cpu();
                    let mut rng = AesRng::from_seed([2; 16]);
                    rr22::run(&mut b, Role::Sender, &y, &cfg, &mut rng).unwrap();
                    thread_cpu() - t0
                })
            });
            let x = items(n, 0, rep);
            let (rc, out) = pool().install(|| {
                let t0 = thread_cpu();
                let mut rng = AesRng::from_seed([1; 16]);
                let out = rr22::run(&mut a, Role::Receiver, &x, &cfg, &mut rng).unwrap();
                (thread_cpu() - t0, out.unwrap())
            });
            assert_eq!(out.len(), n - n / 2);
            let sc = t.join().unwrap();
            let s = a.stats();
            (rc, sc, s.bytes_sent + s.bytes_received)
        })
        .collect()
}

/// One session with `reps + 1` buckets of `n` items; the samples of buckets `2..=reps + 1`.
fn session(v: Variant, n: usize, reps: usize) -> Vec<Sample> {
    let cfg = Rr22Config::new(v);
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        pool().install(|| {
            let mut rng = AesRng::from_seed([2; 16]);
            let mut s = Rr22Session::new(Role::Sender, &cfg).unwrap();
            (0..=reps)
                .map(|rep| {
                    let y = items(n, n / 2, rep);
                    let t0 = thread_cpu();
                    s.run(&mut b, &y, &mut rng).unwrap();
                    thread_cpu() - t0
                })
                .collect::<Vec<_>>()
        })
    });
    let rs: Vec<(Duration, u64)> = pool().install(|| {
        let mut rng = AesRng::from_seed([1; 16]);
        let mut s = Rr22Session::new(Role::Receiver, &cfg).unwrap();
        (0..=reps)
            .map(|rep| {
                let x = items(n, 0, rep);
                let before = a.stats();
                let t0 = thread_cpu();
                let out = s.run(&mut a, &x, &mut rng).unwrap().unwrap();
                let cpu = thread_cpu() - t0;
                assert_eq!(out.len(), n - n / 2);
                let after = a.stats();
                let bytes = after.bytes_sent + after.bytes_received
                    - before.bytes_sent
                    - before.bytes_received;
                (cpu, bytes)
            })
            .collect()
    });
    let ss = t.join().unwrap();
    rs.iter()
        .zip(&ss)
        .skip(1)
        .map(|(&(rc, bytes), &sc)| (rc, sc, bytes))
        .collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn base_setup_saved_per_bucket() {
    let n: usize = std::env::var("OBLIV_RR22_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 16);
    let reps: usize = std::env::var("OBLIV_RR22_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    println!(
        "| variant | n | one-shot run R/S CPU | session.run R/S CPU | saved R/S CPU | one-shot bytes | session.run bytes |"
    );
    println!("|---|---|---|---|---|---|---|");
    for v in [Variant::Fast, Variant::LowComm, Variant::Malicious] {
        let one = one_shot(v, n, reps);
        let ses = session(v, n, reps);
        let (r1, s1) = (
            median(one.iter().map(|s| s.0).collect()),
            median(one.iter().map(|s| s.1).collect()),
        );
        let (r2, s2) = (
            median(ses.iter().map(|s| s.0).collect()),
            median(ses.iter().map(|s| s.1).collect()),
        );
        let (b1, b2) = (one[0].2, ses[0].2);
        println!(
            "| {} | {n} | {:.1} / {:.1} ms | {:.1} / {:.1} ms | {:.1} / {:.1} ms | {b1} | {b2} |",
            v.name(),
            ms(r1),
            ms(s1),
            ms(r2),
            ms(s2),
            ms(r1.saturating_sub(r2)),
            ms(s1.saturating_sub(s2)),
        );
        // Bytes are deterministic: the base setup is not repeated.
        assert!(b2 < b1, "{}: {b2} ≥ {b1}", v.name());
    }
}
