//! Cuckoo insertion and simple hashing throughput in CPU time of this thread (Linux
//! `/proc/thread-self/schedstat`), which stays meaningful on a shared machine.
//!
//! `cargo run --release -p obliv-cuckoo --example cuckoo_speed -- [log2 n]` (default 20).
#![allow(clippy::unwrap_used)] // a harness: any failure should abort the run loudly

use obliv_core::{Block, Prg};
use obliv_cuckoo::{CuckooParams, CuckooTable, SimpleTable};

fn thread_cpu() -> f64 {
    obliv_core::cpu_time::thread().map_or(0.0, |d| d.as_secs_f64())
}

fn main() {
    let log_n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let n = 1usize << log_n;
    let items = Prg::new(Block(1)).blocks(n);
    for (name, params) in [
        ("default 2^-40", CuckooParams::for_items(n).unwrap()),
        ("e = 1.27", CuckooParams::with_factor(n, 1.27).unwrap()),
    ] {
        let c0 = thread_cpu();
        let t = CuckooTable::build_with(&params, &items, Block(2)).unwrap();
        let c = thread_cpu() - c0;
        println!(
            "cuckoo insert ({name:<13}) n=2^{log_n} bins {:>9} (e={:.3}): cpu {:>7.1} ms, {:>5.1} M items/s",
            params.bins,
            params.bins as f64 / n as f64,
            c * 1e3,
            n as f64 / c / 1e6
        );
        let c0 = thread_cpu();
        let s = SimpleTable::build(t.hasher(), &items).unwrap();
        let c = thread_cpu() - c0;
        println!(
            "simple hashing ({name:<12}) n=2^{log_n}: cpu {:>7.1} ms, {:>5.1} M items/s, {} entries, max bin {}",
            c * 1e3,
            n as f64 / c / 1e6,
            s.len(),
            s.max_bin_len()
        );
    }
}
