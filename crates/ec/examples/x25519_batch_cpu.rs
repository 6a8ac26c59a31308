//! CPU time per point of the X25519-style same-scalar batch steps on one thread (and the
//! ristretto255 ones, for a side-by-side figure on the same machine), repeated, best and
//! median reported: the figures of the crate README.
//!
//! The thread's CPU time comes from its CPU clock (`obliv_core::cpu_time::thread`, Linux).
//!
//! Run: `cargo run --release -p obliv-ec --example x25519_batch_cpu [chunks] [repeats] [group]
//! [step] [chunk]` (defaults 64 chunks, 7 repeats, both groups, all steps, and each
//! group's own [`PrimeGroup::CHUNK`] points per call, which its batch API uses; `group`
//! is `x25519` or `ristretto255`, `step` one of `decode`, `hash`, `mul`, `batch`: for `perf stat` of one
//! step of one group). With `OBLIV_CPU_DISABLE=avx512ifma` both groups run on dalek, as on a CPU
//! without AVX-512 IFMA (the header line names the backends).

#![allow(clippy::unwrap_used)] // an example: failing setup aborts the run

use obliv_ec::{PrimeGroup, Ristretto255, X25519};
use std::hint::black_box;

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

/// The three batch steps of `G`, printed with `label`.
fn run<G: PrimeGroup<Encoded = [u8; 32]>>(
    label: &str,
    calls: usize,
    repeats: usize,
    step: &str,
    chunk: Option<usize>,
) {
    let chunk = chunk.unwrap_or(G::CHUNK);
    let mut rng = rand::rng();
    let k = G::random_scalar(&mut rng);
    let items: Vec<Vec<u8>> = (0..chunk)
        .map(|i| format!("user{i}@example.com").into_bytes())
        .collect();
    let points: Vec<G::Point> = items.iter().map(|x| G::hash_to_point(x)).collect();
    let encoded: Vec<[u8; 32]> = points.iter().map(G::encode).collect();
    let mut out = vec![[0u8; 32]; chunk];
    let on = |s: &str| step == "all" || step == s;
    if on("decode") {
        let (b, m) = measure(repeats, calls, chunk, || {
            G::decode_mul_and_encode_chunk(black_box(&encoded), 0, &k, &mut out).unwrap();
        });
        println!("{label:13} decode_mul_encode  {b:6.2} / {m:6.2}   ({chunk}-point chunks)");
    }
    if on("hash") {
        let (b, m) = measure(repeats, calls, chunk, || {
            G::hash_mul_and_encode_chunk(black_box(&items), &k, &mut out);
        });
        println!("{label:13} hash_mul_encode    {b:6.2} / {m:6.2}");
    }
    if on("mul") {
        let (b, m) = measure(repeats, calls, chunk, || {
            G::mul_and_encode_chunk(black_box(&points), &k, &mut out);
        });
        println!("{label:13} mul_encode         {b:6.2} / {m:6.2}");
    }
    if on("batch") {
        // The public batch API (`mul_encoded_batch_into`, the group's own chunking) on a
        // one-thread rayon pool; the CPU time is the pool thread's.
        let n = 8 * G::CHUNK;
        let many: Vec<[u8; 32]> = (0..n).map(|i| encoded[i % chunk]).collect();
        let mut out = vec![[0u8; 32]; n];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (b, m) = pool.install(|| {
            measure(repeats, (calls * chunk).div_ceil(n).max(1), n, || {
                G::mul_encoded_batch_into(black_box(&many), &k, &mut out).unwrap();
            })
        });
        println!("{label:13} mul_encoded_batch  {b:6.2} / {m:6.2}   (public API, 1 thread)");
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let repeats: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(7);
    let group = args.next().unwrap_or_else(|| "both".into());
    let step = args.next().unwrap_or_else(|| "all".into());
    let chunk: Option<usize> = args.next().and_then(|s| s.parse().ok());
    println!(
        "same-scalar batch, CPU µs per point, one thread, {calls} chunks × {repeats} repeats \
         (best / median); backends x25519 {}, ristretto255 {}",
        X25519::batch_backend(),
        Ristretto255::batch_backend()
    );
    if group != "ristretto255" {
        run::<X25519>("x25519", calls, repeats, &step, chunk);
    }
    if group != "x25519" {
        run::<Ristretto255>("ristretto255", calls, repeats, &step, chunk);
    }
}
