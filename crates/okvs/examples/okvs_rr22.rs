//! The OKVS as the RR22 receiver uses it, on one thread: encode `n` keys into a fresh
//! vector, then decode the keys from a randomized encoding (every free column random, the
//! dense part active, as in the receiver's VOLE output `C`). Prints the thread CPU time of
//! each step (best and median of `reps`). Binned GF(2^128) with `Block` values (RR22 fast),
//! or with `lowcomm` one unbinned OKVS with binary dense columns and `u64` values.
//!
//! ```text
//! cargo run --release -p obliv-okvs --example okvs_rr22 -- [log_n [reps [lowcomm]]]
//! ```
#![allow(clippy::unwrap_used)] // an example: failures should abort loudly

use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_okvs::{Binary, BinnedPaxos, DenseKind, DenseValue, Gf128, Okvs, Paxos};

/// CPU time of the calling thread in nanoseconds (`obliv_core::cpu_time::thread`), 0 where unavailable.
fn thread_cpu_ns() -> u64 {
    obliv_core::cpu_time::thread().map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `reps` runs of encode (into a fresh vector) and decode (from a random vector) of the
/// OKVS `make(rep)`: the CPU milliseconds of each.
fn time<D: DenseKind, V: DenseValue<D>, O: Okvs<D>>(
    reps: usize,
    keys: &[Block],
    values: &[V],
    make: impl Fn(usize) -> O,
) -> (Vec<f64>, Vec<f64>) {
    let mut rng = AesRng::from_seed([8; 16]);
    let (mut enc, mut dec) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        let okvs = make(rep);
        let m = okvs.size();
        let mut c = vec![V::default(); m];
        okvs.encode_randomized_into(keys, values, &mut c, &mut rng)
            .unwrap();
        let t0 = thread_cpu_ns();
        let mut p = vec![V::default(); m];
        okvs.encode_into(keys, values, &mut p).unwrap();
        let t1 = thread_cpu_ns();
        let out = okvs.decode(keys, &c).unwrap();
        let t2 = thread_cpu_ns();
        std::hint::black_box((&p, &out));
        #[allow(clippy::cast_precision_loss)] // display
        let ms = |a: u64, b: u64| (b - a) as f64 / 1e6;
        enc.push(ms(t0, t1));
        dec.push(ms(t1, t2));
    }
    (enc, dec)
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
    let lowcomm = std::env::args().nth(3).as_deref() == Some("lowcomm");
    let (mut enc, mut dec) = if lowcomm {
        // The low-communication receiver: one unbinned OKVS, binary dense columns, u64.
        let values: Vec<u64> = values.iter().map(|v| v.to_u64s().0).collect();
        pool.install(|| {
            time(reps, &keys, &values, |r| {
                Paxos::<Binary>::new(n, 40, Block(r as u128)).unwrap()
            })
        })
    } else {
        pool.install(|| {
            time(reps, &keys, &values, |r| {
                BinnedPaxos::<Gf128>::new(n, 40, Block(r as u128)).unwrap()
            })
        })
    };
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
