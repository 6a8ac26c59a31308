//! Per-operation cost of every group measured in CPU time rather than wall time, so that the
//! figures stay meaningful on a machine shared with other jobs (criterion measures wall time).
//!
//! The thread's CPU time comes from its CPU clock (`obliv_core::cpu_time::thread`, Linux).
//! Batch figures are CPU time per point on one rayon thread, i.e. "µs per point per
//! core"; an all-core run scales by the number of idle cores.
//!
//! Run: `cargo run --release -p obliv-ec --example cpu_time [n]` (default n = 4096). With
//! `OBLIV_CPU_DISABLE=avx512ifma` the batches run on the paths of a CPU without AVX-512 IFMA
//! (dalek, `fastmul`, k256).

#![allow(clippy::unwrap_used)] // an example: failing setup aborts the run

use obliv_ec::{FourQ, P256, PrimeGroup, Ristretto255, Secp256k1, Sm2};
use std::hint::black_box;

/// Nanoseconds this thread has spent on a CPU.
fn thread_cpu_ns() -> u64 {
    let t = obliv_core::cpu_time::thread().expect("thread CPU time (Linux)");
    u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
}

/// CPU µs per call of `f`: calls it until the thread has used at least 0.4 s of CPU time
/// (the kernel updates the counter at scheduler ticks, so short runs read as zero).
fn per_op_us(mut f: impl FnMut()) -> f64 {
    let t0 = thread_cpu_ns();
    let mut calls = 0u64;
    while thread_cpu_ns() - t0 < 400_000_000 {
        f();
        calls += 1;
    }
    (thread_cpu_ns() - t0) as f64 / 1e3 / calls as f64
}

fn run<G: PrimeGroup>(n: usize) {
    let mut rng = rand::rng();
    let k = G::random_scalar(&mut rng);
    let p = G::hash_to_point(b"a point");
    let enc = G::encode(&p);
    let items: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("user{i}@example.com").into_bytes())
        .collect();
    let encoded = G::hash_and_mul_batch(&items, &k);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();

    let h = per_op_us(|| {
        let _ = black_box(G::hash_to_point(black_box(b"user@example.com")));
    });
    let m = per_op_us(|| {
        let _ = black_box(G::mul(black_box(&p), &k));
    });
    let mb = per_op_us(|| {
        let _ = black_box(G::mul_base(black_box(&k)));
    });
    let e = per_op_us(|| {
        let _ = black_box(G::encode(black_box(&p)));
    });
    let d = per_op_us(|| {
        let _ = black_box(G::decode(black_box(enc.as_ref())));
    });
    // The batch runs on a one-thread pool and is timed from inside it, so the CPU time read
    // is that of the worker doing the work.
    let nf = n as f64;
    let hm = one.install(|| {
        per_op_us(|| {
            let _ = black_box(G::hash_and_mul_batch(&items, &k));
        })
    }) / nf;
    let me = one.install(|| {
        per_op_us(|| {
            let _ = black_box(G::mul_encoded_batch(&encoded, &k).unwrap());
        })
    }) / nf;
    println!(
        "| {:<9} | {h:>7.1} | {m:>7.1} | {mb:>7.1} | {e:>6.1} | {d:>6.1} | {hm:>9.1} | {me:>9.1} |",
        G::NAME
    );
}

fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(4096);
    println!("CPU µs per operation (batch columns: per point, n = {n}, one thread)");
    println!(
        "| group     | hash    | mul     | mul_base| encode | decode | hash+mul  | mul_enc   |"
    );
    println!(
        "|-----------|---------|---------|---------|--------|--------|-----------|-----------|"
    );
    run::<Ristretto255>(n);
    run::<FourQ>(n);
    run::<Secp256k1>(n);
    run::<P256>(n);
    run::<Sm2>(n);

    // The Curve25519 alternatives weighed against ristretto255 (see the `ristretto` docs).
    use curve25519_dalek::edwards::EdwardsPoint;
    use curve25519_dalek::montgomery::MontgomeryPoint;
    let u = curve25519_dalek::constants::X25519_BASEPOINT;
    let ladder = per_op_us(|| {
        let _ = black_box(black_box(u).mul_clamped(black_box([0x42u8; 32])));
    });
    let ell2 = per_op_us(|| {
        let _ = black_box(EdwardsPoint::hash_to_curve::<sha2::Sha512>(
            &[black_box(b"user@example.com")],
            &[b"obliv-bench-edwards25519_XMD:SHA-512_ELL2_RO_"],
        ));
    });
    let _ = MontgomeryPoint::default();
    println!("x25519 Montgomery ladder (RFC 7748, dalek): {ladder:.1} µs");
    println!("edwards25519_XMD:SHA-512_ELL2_RO_ hash (dalek): {ell2:.1} µs");
}
