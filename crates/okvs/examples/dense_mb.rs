#![allow(missing_docs, clippy::unwrap_used)]
use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_okvs::{Binary, BinnedPaxos, Okvs, OkvsValue};
use std::time::Instant;
fn main() {
    let mut rng = AesRng::from_seed([1; 16]);
    let n = 1 << 20;
    let keys: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
    let values: Vec<u64> = (0..n).map(|_| u64::random(&mut rng)).collect();
    let okvs = BinnedPaxos::<Binary>::new(n, 40, Block(1)).unwrap();
    let plain = okvs.encode(&keys, &values).unwrap();
    let rand = okvs.encode_randomized(&keys, &values, &mut rng).unwrap();
    let mut rand_sparse_only = plain.clone();
    let mut dense_only = plain.clone();
    let size = okvs.bin_params().size();
    let m = okvs.bin_params().sparse;
    for b in 0..okvs.bins() {
        for j in 0..m {
            rand_sparse_only[b * size + j] = rand[b * size + j];
        }
        for j in m..size {
            dense_only[b * size + j] = 1 + j as u64;
        }
    }
    let mut out = vec![0u64; n];
    for _ in 0..3 {
        for (name, p) in [
            ("plain", &plain),
            ("randomized", &rand),
            ("rand sparse, zero dense", &rand_sparse_only),
            ("plain sparse, dense", &dense_only),
        ] {
            let t = Instant::now();
            okvs.decode_into(&keys, p, &mut out).unwrap();
            println!("{name}: {:?}", t.elapsed());
        }
    }
}
