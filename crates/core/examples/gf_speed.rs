//! Quick timing of GF(2^128) multiplication: `cargo run --release -p obliv-core --example gf_speed`.
use obliv_core::{Block, Prg, gf128};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let n = 1 << 22;
    let a = Prg::new(Block(1)).blocks(n);
    let b = Prg::new(Block(2)).blocks(n);
    let mut out = b.clone(); // touched already: no page faults in the timed loop
    let t = Instant::now();
    for ((o, x), y) in out.iter_mut().zip(&a).zip(&b) {
        *o = gf128::mul(*x, *y);
    }
    black_box(&out);
    println!(
        "independent mul: {:.2} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
    let t = Instant::now();
    let mut acc = Block::ONE;
    for x in &a {
        acc = gf128::mul(acc, *x);
    }
    black_box(acc);
    println!(
        "dependent mul:   {:.2} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
    let t = Instant::now();
    gf128::mul_slices(&a, &b, &mut out);
    black_box(&out);
    println!(
        "mul_slices:      {:.2} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
    let t = Instant::now();
    black_box(gf128::inner_product(&a, &b));
    println!(
        "inner product:   {:.2} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
}
