//! Variable-base `[k]P` + encode beside FourQlib and curve25519-dalek, interleaved in one run:
//! best of 61 rounds of 200 calls each (wall clock; the minimum is the unpreempted round).
//!
//! `cargo run -p obliv-fourqlib-diff --features fourqlib --release --example fourq_varbase`

use curve25519_dalek::{constants::RISTRETTO_BASEPOINT_POINT, scalar::Scalar as DScalar};
use obliv_fourq::{Point, Scalar};
use rand::{RngExt, SeedableRng, rngs::StdRng};
use std::hint::black_box;
use std::time::Instant;

fn round<F: FnMut()>(iters: u32, f: &mut F) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(iters)
}

fn main() {
    let mut rng = StdRng::seed_from_u64(1);
    let k = Scalar::random(&mut rng);
    let msg: [u8; 32] = rng.random();
    let p = Point::hash_to_curve_fourqlib_compat(&msg);
    let fp = fourq::point::Point::from_hash(&msg);
    let fk = fourq::scalar::Scalar::new(k.to_bytes());
    let dk = DScalar::from_bytes_mod_order(rng.random());
    let rp = RISTRETTO_BASEPOINT_POINT * DScalar::from(12345u64);
    let mut ours = || {
        black_box((black_box(&p) * black_box(&k)).to_bytes());
    };
    let mut flib = || {
        let mut out = [0u8; 32];
        (black_box(fp) * black_box(fk)).encode(&mut out);
        black_box(out);
    };
    let mut dalek = || {
        black_box((black_box(rp) * black_box(dk)).compress());
    };
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..61 {
        a.push(round(200, &mut ours));
        b.push(round(200, &mut flib));
        c.push(round(200, &mut dalek));
    }
    for v in [&mut a, &mut b, &mut c] {
        v.sort_by(|x, y| x.total_cmp(y));
    }
    println!(
        "obliv-fourq [k]P + encode   {:>7.2} µs (median {:.2})",
        a[0], a[30]
    );
    println!(
        "FourQlib ecc_mul + encode   {:>7.2} µs (median {:.2})",
        b[0], b[30]
    );
    println!(
        "dalek [k]P + compress       {:>7.2} µs (median {:.2})",
        c[0], c[30]
    );
    println!(
        "dalek / ours  {:.3}x   ours / FourQlib  {:.3}",
        c[0] / a[0],
        a[0] / b[0]
    );
}
