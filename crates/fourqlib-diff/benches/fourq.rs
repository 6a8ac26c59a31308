//! Criterion benches: obliv-fourq beside FourQlib (through the `fourq` crate, a binding of
//! Microsoft's C library) and curve25519-dalek, in one run.
//!
//! `cargo bench -p obliv-fourqlib-diff --features fourqlib --bench fourq -- --quick` for a short run.
//!
//! Groups: variable-base multiplication (with and without the final encoding, since FourQlib's
//! `ecc_mul` returns affine coordinates), fixed-base multiplication, hash to the curve,
//! decoding, and the same-scalar batch (per point, one core and all cores; the default backend,
//! eight AVX-512 IFMA lanes where the CPU has them, beside the serial one).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use curve25519_dalek::{
    constants::{ED25519_BASEPOINT_POINT, RISTRETTO_BASEPOINT_POINT},
    edwards::CompressedEdwardsY,
    ristretto::{CompressedRistretto, RistrettoPoint},
    scalar::Scalar as DScalar,
};
use obliv_fourq::{Point, Scalar};
use rand::{RngExt, SeedableRng, rngs::StdRng};
use sha2::{Digest, Sha512};
use std::hint::black_box;

fn fourqlib_hash(bytes: &[u8; 32]) -> fourq::point::Point {
    // FourQlib's binding reduces the input in place: hand it a private copy.
    let private: [u8; 32] = black_box(*bytes);
    fourq::point::Point::from_hash(&private)
}

fn setup() -> (
    Scalar,
    Point,
    fourq::point::Point,
    fourq::scalar::Scalar,
    DScalar,
    [u8; 32],
) {
    let mut rng = StdRng::seed_from_u64(7);
    let k = Scalar::random(&mut rng);
    let msg: [u8; 32] = rng.random();
    let p = Point::hash_to_curve_fourqlib_compat(&msg);
    let fp = fourqlib_hash(&msg);
    let fk = fourq::scalar::Scalar::new(k.to_bytes());
    let dk = DScalar::from_bytes_mod_order(rng.random());
    (k, p, fp, fk, dk, msg)
}

fn var_base(c: &mut Criterion) {
    let (k, p, fp, fk, dk, _) = setup();
    let dp = ED25519_BASEPOINT_POINT * DScalar::from(12345u64);
    let rp = RISTRETTO_BASEPOINT_POINT * DScalar::from(12345u64);
    let mut g = c.benchmark_group("variable_base_mul");
    g.bench_function("obliv_fourq", |b| b.iter(|| black_box(&p) * black_box(&k)));
    g.bench_function("obliv_fourq_encoded", |b| {
        b.iter(|| (black_box(&p) * black_box(&k)).to_bytes())
    });
    g.bench_function("obliv_fourq_fixed_window", |b| {
        b.iter(|| black_box(&p).mul_fixed_window(black_box(&k)))
    });
    g.bench_function("fourqlib_encoded", |b| {
        b.iter(|| {
            let r = black_box(fp) * black_box(fk);
            let mut out = [0u8; 32];
            r.encode(&mut out);
            out
        })
    });
    g.bench_function("dalek_edwards", |b| {
        b.iter(|| black_box(dp) * black_box(dk))
    });
    g.bench_function("dalek_ristretto_encoded", |b| {
        b.iter(|| (black_box(rp) * black_box(dk)).compress())
    });
    g.finish();
}

fn fixed_base(c: &mut Criterion) {
    let (k, _, _, _, dk, _) = setup();
    Point::precompute_base_table();
    let mut g = c.benchmark_group("fixed_base_mul");
    g.bench_function("obliv_fourq", |b| b.iter(|| Point::mul_base(black_box(&k))));
    g.bench_function("obliv_fourq_encoded", |b| {
        b.iter(|| Point::mul_base(black_box(&k)).to_bytes())
    });
    g.bench_function("dalek_ristretto_encoded", |b| {
        b.iter(|| RistrettoPoint::mul_base(black_box(&dk)).compress())
    });
    g.finish();
}

fn hash(c: &mut Criterion) {
    let (_, _, _, _, _, msg) = setup();
    let mut g = c.benchmark_group("hash_to_curve");
    g.bench_function("obliv_fourq_sha512_wide", |b| {
        b.iter(|| Point::hash_to_curve(black_box(&msg)))
    });
    g.bench_function("obliv_fourq_fourqlib_compat_encoded", |b| {
        b.iter(|| Point::hash_to_curve_fourqlib_compat(black_box(&msg)).to_bytes())
    });
    g.bench_function("fourqlib_encoded", |b| {
        b.iter(|| {
            let mut out = [0u8; 32];
            fourqlib_hash(black_box(&msg)).encode(&mut out);
            out
        })
    });
    g.bench_function("dalek_ristretto_sha512", |b| {
        b.iter(|| {
            let h: [u8; 64] = Sha512::digest(black_box(&msg)).into();
            RistrettoPoint::from_uniform_bytes(&h)
        })
    });
    g.finish();
}

fn decode(c: &mut Criterion) {
    let (_, p, _, _, dk, _) = setup();
    let enc = p.to_bytes();
    let denc = (ED25519_BASEPOINT_POINT * dk).compress();
    let renc = RistrettoPoint::mul_base(&dk).compress();
    let mut g = c.benchmark_group("decode");
    g.bench_function("obliv_fourq_with_subgroup_check", |b| {
        b.iter(|| Point::from_bytes(black_box(&enc)).is_some())
    });
    g.bench_function("obliv_fourq_curve_only", |b| {
        b.iter(|| Point::from_bytes_unchecked_subgroup(black_box(&enc)).is_some())
    });
    g.bench_function("fourqlib_curve_only", |b| {
        b.iter(|| fourq::point::Point::decode(black_box(&enc)))
    });
    g.bench_function("dalek_edwards", |b| {
        b.iter(|| CompressedEdwardsY(black_box(denc.0)).decompress())
    });
    g.bench_function("dalek_ristretto", |b| {
        b.iter(|| CompressedRistretto(black_box(renc.0)).decompress())
    });
    g.finish();
}

fn batch(c: &mut Criterion) {
    let (k, _, _, _, _, _) = setup();
    let n: usize = std::env::var("OBLIV_BENCH_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let points: Vec<Point> = (0..n as u64)
        .map(|i| Point::hash_to_curve(&i.to_le_bytes()))
        .collect();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("thread pool");
    let mut g = c.benchmark_group("same_scalar_batch");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_with_input(BenchmarkId::new("mul_many_1_core", n), &points, |b, pts| {
        b.iter(|| one.install(|| Point::mul_many(black_box(&k), pts)))
    });
    g.bench_with_input(
        BenchmarkId::new("mul_many_all_cores", n),
        &points,
        |b, pts| b.iter(|| Point::mul_many(black_box(&k), pts)),
    );
    g.bench_with_input(
        BenchmarkId::new("mul_many_to_bytes_serial_1_core", n),
        &points,
        |b, pts| b.iter(|| one.install(|| Point::mul_many_to_bytes_serial(black_box(&k), pts))),
    );
    g.bench_with_input(
        BenchmarkId::new("mul_many_to_bytes_1_core", n),
        &points,
        |b, pts| b.iter(|| one.install(|| Point::mul_many_to_bytes(black_box(&k), pts))),
    );
    let encs: Vec<[u8; 32]> = points.iter().map(Point::to_bytes).collect();
    g.bench_with_input(
        BenchmarkId::new("decode_checked_then_mul_many_to_bytes_1_core", n),
        &encs,
        |b, e| {
            b.iter(|| {
                one.install(|| {
                    let d: Vec<Point> = e.iter().filter_map(|x| Point::decode(x).ok()).collect();
                    Point::mul_many_to_bytes(black_box(&k), &d)
                })
            })
        },
    );
    g.bench_with_input(
        BenchmarkId::new("mul_many_encoded_projecting_1_core", n),
        &encs,
        |b, e| b.iter(|| one.install(|| Point::mul_many_encoded_projecting(black_box(&k), e))),
    );
    let msgs: Vec<[u8; 8]> = (0..n as u64).map(|i| i.to_le_bytes()).collect();
    g.bench_with_input(
        BenchmarkId::new("hash_to_curve_many_1_core", n),
        &msgs,
        |b, m| b.iter(|| one.install(|| Point::hash_to_curve_many(black_box(m)))),
    );
    g.finish();
}

criterion_group!(all, var_base, fixed_base, hash, decode, batch);
criterion_main!(all);
