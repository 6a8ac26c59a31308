//! Times the ExConv7x24 encoder alone (thread CPU time, best of `reps`):
//! `cargo run --release -p obliv-vole --example code_timing -- 20 5` (log2 of k, reps).
#![allow(missing_docs, clippy::unwrap_used)]
use std::time::Duration;

use obliv_core::{Block, Prg};
use obliv_vole::{CodeField, ExConvCode, LpnCode};

fn cpu() -> Duration {
    obliv_core::cpu_time::thread().unwrap_or_default()
}

fn main() {
    let log: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let reps: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let k = 1usize << log;
    let n = 2 * k;
    let x = Prg::new(Block(1)).blocks(n);
    for field in [CodeField::Gf2, CodeField::Gf128] {
        let code = ExConvCode::new(k, n, field);
        let mut best = Duration::MAX;
        for _ in 0..reps {
            let mut v = x.clone();
            let t = cpu();
            code.dual_encode(&mut v);
            best = best.min(cpu() - t);
            std::hint::black_box(&v);
        }
        println!("{field:?} blocks: {best:?}");
    }
    let code = ExConvCode::new(k, n, CodeField::Gf2);
    let bits: Vec<u8> = x.iter().map(|b| u8::from(b.lsb())).collect();
    let words: Vec<u64> = x.iter().map(|b| b.to_u64s().0).collect();
    let mut best = Duration::MAX;
    for _ in 0..reps {
        let (mut a, mut c) = (bits.clone(), x.clone());
        let t = cpu();
        code.dual_encode2(&mut a, &mut c);
        best = best.min(cpu() - t);
        std::hint::black_box((&a, &c));
    }
    println!("bits+blocks: {best:?}");
    let mut best = Duration::MAX;
    for _ in 0..reps {
        let (mut a, mut c) = (words.clone(), x.clone());
        let t = cpu();
        code.dual_encode2(&mut a, &mut c);
        best = best.min(cpu() - t);
        std::hint::black_box((&a, &c));
    }
    println!("u64+blocks: {best:?}");
}
