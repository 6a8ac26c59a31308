#![allow(missing_docs, clippy::unwrap_used)]
use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_okvs::{Binary, DenseValue, Gf128};
use std::time::Instant;
fn main() {
    let mut rng = AesRng::from_seed([1; 16]);
    let hs: Vec<Block> = (0..1 << 20).map(|_| Block::random(&mut rng)).collect();
    let p64: Vec<u64> = (0..41).map(|i| i * 77 + 1).collect();
    let pb: Vec<Block> = (0..3).map(|_| Block::random(&mut rng)).collect();
    for _ in 0..3 {
        let t = Instant::now();
        let mut acc = 0u64;
        for h in &hs {
            acc ^= <u64 as DenseValue<Binary>>::dense_dot(*h, &p64);
        }
        println!("binary u64 d=41: {:?} ({acc})", t.elapsed());
        let t = Instant::now();
        let mut acc = Block::ZERO;
        for h in &hs {
            acc ^= <Block as DenseValue<Gf128>>::dense_dot(*h, &pb);
        }
        println!("gf128 d=3: {:?} ({acc:?})", t.elapsed());
        let t = Instant::now();
        let mut acc = Block::ZERO;
        for h in &hs {
            acc = obliv_core::gf128::mul(acc ^ *h, *h);
        }
        println!("gf128 mul chain: {:?} ({acc:?})", t.elapsed());
        let t = Instant::now();
        let mut acc = Block::ZERO;
        for h in &hs {
            acc ^= obliv_core::gf128::mul(*h, pb[0]);
        }
        println!("gf128 mul independent: {:?} ({acc:?})", t.elapsed());
        let t = Instant::now();
        let mut acc = 0u128;
        for h in &hs {
            acc ^= h.0.wrapping_mul(pb[0].0 | 1);
        }
        println!("u128 wrapping mul independent: {:?} ({acc:?})", t.elapsed());
    }
}
