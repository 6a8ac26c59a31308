//! The same-scalar batch of ristretto255 (every ECDH-PSI round): one secret scalar times a
//! chunk of 256 points, on one thread, on the eight-lane AVX-512 IFMA path and on the
//! curve25519-dalek reference path, in **CPU time** of the benchmarking thread (read from
//! its CPU clock, `obliv_core::cpu_time::thread`), so that other jobs on a shared machine do not inflate the
//! figures; criterion reports it as time per chunk and elements per second).
//!
//! * `decode_mul_encode/*`: peer encodings in, encodings out
//!   (`PrimeGroup::decode_mul_and_encode_chunk`, the step of `mul_encoded_batch`);
//! * `mul_encode/*`: points in (e.g. fresh hashes), encodings out
//!   (`PrimeGroup::mul_and_encode_chunk`, the step of `hash_and_mul_batch`);
//! * `hash_mul_encode/*`: items in, `[k]H(x)` encodings out
//!   (`PrimeGroup::hash_mul_and_encode_chunk`, the step of `hash_and_mul_batch`; the lanes
//!   run the Elligator maps too, dalek hashes point by point);
//! * `hash`: dalek's ristretto255 hash to the group alone, for scale.
//!
//! The group `x25519_batch_cpu_time[..]` measures the same three steps for [`X25519`] (the
//! eight-lane Montgomery ladder) against its serial dalek path, for the side-by-side figure.
//!
//! Run: `cargo bench -p obliv-ec --bench ristretto_batch -- --quick`.

#![allow(clippy::unwrap_used)] // a bench: failing setup aborts the run

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use curve25519_dalek::ristretto::RistrettoPoint;
use obliv_ec::{PrimeGroup, Ristretto255, X25519};
use std::hint::black_box;
use std::time::Duration;

const CHUNK: usize = 256;

/// Nanoseconds the calling thread has spent on a CPU (Linux).
fn thread_cpu() -> Duration {
    obliv_core::cpu_time::thread().expect("thread CPU time (Linux)")
}

/// Criterion `iter_custom` body that returns CPU time instead of wall time.
fn cpu_iters(iters: u64, mut f: impl FnMut()) -> Duration {
    let t0 = thread_cpu();
    for _ in 0..iters {
        f();
    }
    thread_cpu() - t0
}

fn bench(c: &mut Criterion) {
    let mut rng = rand::rng();
    let k = Ristretto255::random_scalar(&mut rng);
    let points: Vec<RistrettoPoint> = (0..CHUNK)
        .map(|i| Ristretto255::hash_to_point(format!("user{i}@example.com").as_bytes()))
        .collect();
    let encoded: Vec<[u8; 32]> = points.iter().map(Ristretto255::encode).collect();
    let mut out = vec![[0u8; 32]; CHUNK];

    let mut g = c.benchmark_group(format!(
        "25519_batch_cpu_time[{}]",
        Ristretto255::batch_backend()
    ));
    g.throughput(Throughput::Elements(CHUNK as u64));
    g.bench_function("decode_mul_encode/dispatch", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                Ristretto255::decode_mul_and_encode_chunk(black_box(&encoded), 0, &k, &mut out)
                    .unwrap();
            })
        })
    });
    g.bench_function("decode_mul_encode/dalek", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                Ristretto255::decode_mul_and_encode_chunk_dalek(
                    black_box(&encoded),
                    0,
                    &k,
                    &mut out,
                )
                .unwrap();
            })
        })
    });
    g.bench_function("mul_encode/dispatch", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                Ristretto255::mul_and_encode_chunk(black_box(&points), &k, &mut out);
            })
        })
    });
    g.bench_function("mul_encode/dalek", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                Ristretto255::mul_and_encode_chunk_dalek(black_box(&points), &k, &mut out);
            })
        })
    });
    let items: Vec<Vec<u8>> = (0..CHUNK)
        .map(|i| format!("user{i}@example.com").into_bytes())
        .collect();
    g.bench_function("hash_mul_encode/dispatch", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                Ristretto255::hash_mul_and_encode_chunk(black_box(&items), &k, &mut out);
            })
        })
    });
    g.bench_function("hash_mul_encode/dalek", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                let pts: Vec<RistrettoPoint> = items
                    .iter()
                    .map(|x| Ristretto255::hash_to_point(black_box(x)))
                    .collect();
                Ristretto255::mul_and_encode_chunk_dalek(&pts, &k, &mut out);
            })
        })
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("hash", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                black_box(Ristretto255::hash_to_point(black_box(b"user@example.com")));
            })
        })
    });
    g.finish();
}

/// The X25519-style group's three batch steps, lanes (`dispatch`) against dalek (`serial`).
fn bench_x25519(c: &mut Criterion) {
    let mut rng = rand::rng();
    let k = X25519::random_scalar(&mut rng);
    let items: Vec<Vec<u8>> = (0..CHUNK)
        .map(|i| format!("user{i}@example.com").into_bytes())
        .collect();
    let points: Vec<_> = items.iter().map(|x| X25519::hash_to_point(x)).collect();
    let encoded: Vec<[u8; 32]> = points.iter().map(X25519::encode).collect();
    let mut out = vec![[0u8; 32]; CHUNK];
    let mut g = c.benchmark_group(format!(
        "x25519_batch_cpu_time[{}]",
        X25519::batch_backend()
    ));
    g.throughput(Throughput::Elements(CHUNK as u64));
    g.bench_function("decode_mul_encode/dispatch", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                X25519::decode_mul_and_encode_chunk(black_box(&encoded), 0, &k, &mut out).unwrap();
            })
        })
    });
    g.bench_function("decode_mul_encode/serial", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                X25519::decode_mul_and_encode_chunk_serial(black_box(&encoded), 0, &k, &mut out)
                    .unwrap();
            })
        })
    });
    g.bench_function("mul_encode/dispatch", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                X25519::mul_and_encode_chunk(black_box(&points), &k, &mut out);
            })
        })
    });
    g.bench_function("hash_mul_encode/dispatch", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                X25519::hash_mul_and_encode_chunk(black_box(&items), &k, &mut out);
            })
        })
    });
    g.bench_function("hash_mul_encode/serial", |b| {
        b.iter_custom(|n| {
            cpu_iters(n, || {
                X25519::hash_mul_and_encode_chunk_serial(black_box(&items), &k, &mut out);
            })
        })
    });
    g.finish();
}

criterion_group!(ristretto_batch, bench, bench_x25519);
criterion_main!(ristretto_batch);
