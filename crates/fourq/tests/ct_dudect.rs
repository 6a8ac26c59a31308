//! A dudect-style timing test (Reparaz, Balasch, Verbauwhede, "Dude, is my code constant
//! time?", DATE 2017): time variable-base, fixed-base and same-scalar batch multiplication
//! (on the default backend, AVX-512 IFMA lanes where available) on two classes of
//! scalars — class 0 of low Hamming weight (a single set bit at a random position, or zero),
//! class 1 uniformly random — interleaved in random order, and apply Welch's t-test to the
//! two timing distributions (after cropping the slowest 10 % of each, which is where
//! interrupts land). `|t| > 10` is dudect's "definitely not constant time".
//!
//! Ignored by default (it takes a while and wants a quiet machine):
//! `cargo test -p obliv-fourq --release --test ct_dudect -- --ignored --nocapture`
//! (`OBLIV_DUDECT_SAMPLES` sets the number of measurements per operation, default 20000).

use obliv_fourq::{Point, Scalar};
use rand::{RngExt, SeedableRng, rngs::StdRng};
use std::hint::black_box;
use std::time::Instant;

fn welch_t(a: &[f64], b: &[f64]) -> f64 {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64], m: f64| {
        v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() as f64 - 1.0)
    };
    let (ma, mb) = (mean(a), mean(b));
    let (va, vb) = (var(a, ma), var(b, mb));
    (ma - mb) / (va / a.len() as f64 + vb / b.len() as f64).sqrt()
}

fn crop(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|x, y| x.partial_cmp(y).expect("timings are finite"));
    let keep = v.len() * 9 / 10;
    v.truncate(keep);
    v
}

fn low_weight_scalar(rng: &mut StdRng) -> Scalar {
    let mut b = [0u8; 32];
    let bit: usize = rng.random_range(0..246);
    if rng.random_range(0..8) != 0 {
        b[bit / 8] = 1 << (bit % 8);
    }
    Scalar::from_bytes_mod_order(&b)
}

fn run(name: &str, op: &dyn Fn(&Scalar) -> Point) -> f64 {
    let n: usize = std::env::var("OBLIV_DUDECT_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let mut rng = StdRng::seed_from_u64(0xd0d0);
    let inputs: Vec<(u8, Scalar)> = (0..n)
        .map(|_| {
            let class: u8 = rng.random_range(0..2);
            let s = if class == 0 {
                low_weight_scalar(&mut rng)
            } else {
                Scalar::random(&mut rng)
            };
            (class, s)
        })
        .collect();
    let (mut t0, mut t1) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        black_box(op(&inputs[0].1)); // warm up
    }
    for (class, s) in &inputs {
        let start = Instant::now();
        black_box(op(black_box(s)));
        let dt = start.elapsed().as_nanos() as f64;
        if *class == 0 {
            t0.push(dt)
        } else {
            t1.push(dt)
        }
    }
    let t = welch_t(&crop(t0), &crop(t1));
    println!("{name}: {n} samples, Welch t = {t:.2}");
    t
}

#[test]
#[ignore = "timing test: run alone, in release, on a quiet machine"]
fn scalar_multiplication_timing_does_not_depend_on_the_scalar() {
    let p = Point::hash_to_curve(b"dudect");
    Point::precompute_base_table();
    let t_var = run("variable-base (CL15)", &|k| p * k);
    let t_base = run("fixed-base", &|k| Point::mul_base(k));
    let t_fw = run("fixed-window", &|k| p.mul_fixed_window(k));
    // The same-scalar batch on the default backend (eight IFMA lanes where available).
    let pts: Vec<Point> = (0..8u8).map(|i| Point::hash_to_curve(&[i])).collect();
    let t_batch = run(
        &format!("same-scalar batch of 8 ({})", Point::batch_backend()),
        &|k| Point::mul_many(k, &pts)[0],
    );
    for t in [t_var, t_base, t_fw, t_batch] {
        assert!(t.abs() < 10.0, "timing leak: |t| = {:.2}", t.abs());
    }
}
