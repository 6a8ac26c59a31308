//! Criterion benches of obliv-ec, one group per curve: hash to curve, variable-base
//! multiplication, fixed-base multiplication, encode, decode, and the batch paths
//! (`hash_and_mul_batch`, `mul_encoded_batch`) on one thread and on all cores, reported as
//! elements per second.
//!
//! `OBLIV_BENCH_N` sets the batch size (default 4096).
//! Run: `cargo bench -p obliv-ec --bench ec -- --quick`.

#![allow(clippy::unwrap_used)] // a bench: failing setup aborts the run

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_ec::{FourQ, P256, PrimeGroup, Ristretto255, Secp256k1, Sm2, X25519};
use std::hint::black_box;

fn batch_n() -> usize {
    std::env::var("OBLIV_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4096)
}

fn bench_group<G: PrimeGroup>(c: &mut Criterion) {
    let mut rng = rand::rng();
    let k = G::random_scalar(&mut rng);
    let p = G::hash_to_point(b"a point");
    let enc = G::encode(&p);

    let mut g = c.benchmark_group(G::NAME);
    g.throughput(Throughput::Elements(1));
    g.bench_function("hash_to_point", |b| {
        b.iter(|| G::hash_to_point(black_box(b"user@example.com")))
    });
    g.bench_function("mul", |b| b.iter(|| G::mul(black_box(&p), &k)));
    g.bench_function("mul_base", |b| b.iter(|| G::mul_base(black_box(&k))));
    g.bench_function("encode", |b| b.iter(|| G::encode(black_box(&p))));
    g.bench_function("decode", |b| b.iter(|| G::decode(black_box(enc.as_ref()))));
    g.bench_function("scalar_invert", |b| {
        b.iter(|| G::scalar_invert(black_box(&k)))
    });

    let n = batch_n();
    let items: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("user{i}@example.com").into_bytes())
        .collect();
    let encoded = G::hash_and_mul_batch(&items, &k);
    g.throughput(Throughput::Elements(n as u64));
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    for threads in [1, cores] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        g.bench_with_input(
            BenchmarkId::new("hash_and_mul_batch", format!("{n}x{threads}t")),
            &items,
            |b, items| b.iter(|| pool.install(|| G::hash_and_mul_batch(items, &k))),
        );
        g.bench_with_input(
            BenchmarkId::new("mul_encoded_batch", format!("{n}x{threads}t")),
            &encoded,
            |b, encoded| b.iter(|| pool.install(|| G::mul_encoded_batch(encoded, &k).unwrap())),
        );
        if threads == cores {
            break;
        }
    }
    g.finish();
}

/// The alternatives considered for Curve25519: the X25519 Montgomery ladder (RFC 7748) and
/// the Edwards-form RFC 9380 hash (`edwards25519_XMD:SHA-512_ELL2_RO_`), for comparison with
/// the ristretto255 figures above.
fn bench_25519_alternatives(c: &mut Criterion) {
    use curve25519_dalek::edwards::EdwardsPoint;
    use curve25519_dalek::montgomery::MontgomeryPoint;
    let mut g = c.benchmark_group("25519-alternatives");
    let u = MontgomeryPoint(curve25519_dalek::constants::X25519_BASEPOINT.to_bytes());
    let key = [0x42u8; 32];
    g.bench_function("x25519_ladder", |b| {
        b.iter(|| black_box(u).mul_clamped(black_box(key)))
    });
    g.bench_function("edwards_hash_to_curve_ell2", |b| {
        b.iter(|| {
            EdwardsPoint::hash_to_curve::<sha2::Sha512>(
                &[black_box(b"user@example.com")],
                &[b"obliv-bench-edwards25519_XMD:SHA-512_ELL2_RO_"],
            )
        })
    });
    let e = EdwardsPoint::mul_base(&curve25519_dalek::Scalar::from(12345u64));
    let s = curve25519_dalek::Scalar::from(0x1234_5678_9abc_def0u64);
    g.bench_function("edwards_mul_and_compress", |b| {
        b.iter(|| (black_box(e) * s).compress())
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_group::<Ristretto255>(c);
    bench_25519_alternatives(c);
    bench_group::<X25519>(c);
    bench_group::<FourQ>(c);
    bench_group::<Secp256k1>(c);
    bench_group::<P256>(c);
    bench_group::<Sm2>(c);
}

criterion_group!(ec, benches);
criterion_main!(ec);
