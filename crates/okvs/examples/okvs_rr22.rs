//! The binned GF(2^128) OKVS as the RR22 fast receiver uses it, on one thread: encode `n`
//! keys into a fresh vector, then decode the keys from a uniformly random vector (as the
//! receiver decodes its VOLE output `C`, whose dense part is never zero). Prints the
//! thread CPU time of each step (best and median of `reps`).
//!
//! ```text
//! cargo run --release -p obliv-okvs --example okvs_rr22 -- [log_n [reps]]
//! ```
#![allow(clippy::unwrap_used)] // an example: failures should abort loudly

use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_okvs::{BinnedPaxos, Gf128, Okvs};

/// CPU time of the calling thread in nanoseconds (Linux `schedstat`), 0 elsewhere.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let log_n: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let reps: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
        .max(1);
    let n = 1usize << log_n;
    let mut rng = AesRng::from_seed([7; 16]);
    let keys: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
    let values: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (mut enc, mut dec) = (Vec::new(), Vec::new());
    pool.install(|| {
        for rep in 0..reps {
            let okvs = BinnedPaxos::<Gf128>::new(n, 40, Block(rep as u128)).unwrap();
            let m = okvs.size();
            let c: Vec<Block> = (0..m).map(|_| Block::random(&mut rng)).collect();
            let t0 = thread_cpu_ns();
            let mut p = vec![Block::ZERO; m];
            okvs.encode_into(&keys, &values, &mut p).unwrap();
            let t1 = thread_cpu_ns();
            let out = okvs.decode(&keys, &c).unwrap();
            let t2 = thread_cpu_ns();
            std::hint::black_box((&p, &out));
            #[allow(clippy::cast_precision_loss)] // display
            let ms = |a: u64, b: u64| (b - a) as f64 / 1e6;
            enc.push(ms(t0, t1));
            dec.push(ms(t1, t2));
        }
    });
    let o = BinnedPaxos::<Gf128>::new(n, 40, Block(0)).unwrap();
    println!(
        "{} bins of capacity {}, {} sparse + {} dense columns each",
        o.bins(),
        o.bin_capacity(),
        o.bin_params().sparse,
        o.bin_params().dense
    );
    for v in [&mut enc, &mut dec] {
        v.sort_by(f64::total_cmp);
    }
    println!(
        "n = 2^{log_n}: encode best {:.1} ms median {:.1} ms; decode (random encoding) best {:.1} ms median {:.1} ms",
        enc[0],
        enc[reps / 2],
        dec[0],
        dec[reps / 2]
    );
}
