#![allow(missing_docs, clippy::unwrap_used)]
use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_okvs::{Binary, DenseValue};
use std::time::Instant;
fn main() {
    let mut rng = AesRng::from_seed([1; 16]);
    let hs: Vec<Block> = (0..1 << 20).map(|_| Block::random(&mut rng)).collect();
    let p64: Vec<u64> = (0..50).map(|i| i * 77 + 1).collect();
    let mut prep = Vec::new();
    <u64 as DenseValue<Binary>>::prepare_dense(&p64, &mut prep);
    for _ in 0..3 {
        let t = Instant::now();
        let mut acc = 0u64;
        for h in &hs {
            acc ^= <u64 as DenseValue<Binary>>::dense_dot_prepared(*h, &prep, 50);
        }
        println!("prepared d=50: {:?} ({acc})", t.elapsed());
        let t = Instant::now();
        let mut acc = 0u64;
        for h in &hs {
            acc ^= <u64 as DenseValue<Binary>>::dense_dot(*h, &p64);
        }
        println!("plain d=50: {:?} ({acc})", t.elapsed());
    }
}
