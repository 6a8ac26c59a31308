//! CPU time per point of the three ristretto255 same-scalar batch steps on one thread, repeated,
//! best and median reported: the figures of the ristretto255 rows in the crate README.
//!
//! The thread's CPU time comes from its CPU clock (`obliv_core::cpu_time::thread`, Linux),
//! so other jobs on a shared machine inflate the figures much less than wall time would.
//!
//! Run: `cargo run --release -p obliv-ec --example ristretto_batch_cpu [chunks] [repeats]`
//! (defaults 64 chunks of 256 points, 7 repeats).

#![allow(clippy::unwrap_used)] // an example: failing setup aborts the run

use curve25519_dalek::ristretto::RistrettoPoint;
use obliv_ec::{PrimeGroup, Ristretto255};
use std::hint::black_box;

const CHUNK: usize = 256;

/// Nanoseconds this thread has spent on a CPU.
fn thread_cpu_ns() -> u64 {
    let t = obliv_core::cpu_time::thread().expect("thread CPU time (Linux)");
    u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
}

/// Best and median CPU µs per point of `f` (which handles `per_call` points), over `repeats`
/// runs of `calls` calls each.
fn measure(repeats: usize, calls: usize, per_call: usize, mut f: impl FnMut()) -> (f64, f64) {
    f(); // warm-up
    let mut v: Vec<f64> = (0..repeats)
        .map(|_| {
            let t0 = thread_cpu_ns();
            for _ in 0..calls {
                f();
            }
            (thread_cpu_ns() - t0) as f64 / 1e3 / (calls * per_call) as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let repeats: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(7);
    let mut rng = rand::rng();
    let k = Ristretto255::random_scalar(&mut rng);
    let items: Vec<Vec<u8>> = (0..CHUNK)
        .map(|i| format!("user{i}@example.com").into_bytes())
        .collect();
    let points: Vec<RistrettoPoint> = items
        .iter()
        .map(|x| Ristretto255::hash_to_point(x))
        .collect();
    let encoded: Vec<[u8; 32]> = points.iter().map(Ristretto255::encode).collect();
    let mut out = vec![[0u8; 32]; CHUNK];
    println!(
        "ristretto255 batch, backend {}, CPU µs per point, one thread, chunks of {CHUNK}, \
         {calls} chunks × {repeats} repeats (best / median)",
        Ristretto255::batch_backend()
    );
    let (b, m) = measure(repeats, calls, CHUNK, || {
        Ristretto255::decode_mul_and_encode_chunk(black_box(&encoded), 0, &k, &mut out).unwrap();
    });
    println!("decode_mul_encode  {b:6.2} / {m:6.2}");
    let (b, m) = measure(repeats, calls, CHUNK, || {
        Ristretto255::hash_mul_and_encode_chunk(black_box(&items), &k, &mut out);
    });
    println!("hash_mul_encode    {b:6.2} / {m:6.2}");
    let (b, m) = measure(repeats, calls, CHUNK, || {
        Ristretto255::mul_and_encode_chunk(black_box(&points), &k, &mut out);
    });
    println!("mul_encode         {b:6.2} / {m:6.2}");
    let (b, m) = measure(repeats, calls * CHUNK / 8, 1, || {
        black_box(Ristretto255::hash_to_point(black_box(b"user@example.com")));
    });
    println!("hash (dalek, one)  {b:6.2} / {m:6.2}");
}
