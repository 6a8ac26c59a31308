//! Both parties of `rr22::run_buckets` in this process: shared by the concurrent-driver
//! figures (`tests/it/rr22_concurrent_cost.rs`, as `common::buckets`) and its criterion bench
//! (`benches/rr22_buckets.rs`, which includes this file by path).
#![allow(clippy::unwrap_used, dead_code)] // test helper

use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Mux, Split, Stats};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, Rr22Config};

/// Buckets of 8-byte items, one vector per bucket.
pub(crate) type Buckets = Vec<Vec<[u8; 8]>>;

/// What one run gives: wall time, the receiver's and the sender's statistics (setup and every
/// bucket), and the size of the intersection the receiver found.
pub(crate) struct PairRun {
    /// Wall time of the whole run (both parties).
    pub(crate) wall: Duration,
    /// The receiver's statistics.
    pub(crate) receiver: Stats,
    /// The sender's statistics.
    pub(crate) sender: Stats,
    /// Items the receiver found in the intersection, over all buckets.
    pub(crate) found: usize,
}

/// Runs the receiver on `a` with buckets `xs` and the sender on `b` (its own thread) with
/// `ys`, `workers` workers each, each over a `Mux` of its end.
pub(crate) fn run_pair<C>(
    (a, b): (C, C),
    cfg: Rr22Config,
    workers: usize,
    xs: Buckets,
    ys: Buckets,
) -> PairRun
where
    C: Split + Send + 'static,
{
    let start = Instant::now();
    let t = std::thread::spawn(move || {
        let mux = Mux::new(b).unwrap();
        let mut rng = AesRng::from_seed([2; 16]);
        let it = rr22::run_buckets(&mux, Role::Sender, &cfg, workers, ys, &mut rng).unwrap();
        let mut st = it.setup_stats();
        for o in it {
            st += o.unwrap().stats;
        }
        st
    });
    let mux = Mux::new(a).unwrap();
    let mut rng = AesRng::from_seed([1; 16]);
    let it = rr22::run_buckets(&mux, Role::Receiver, &cfg, workers, xs, &mut rng).unwrap();
    let mut receiver = it.setup_stats();
    let mut found = 0;
    for o in it {
        let o = o.unwrap();
        found += o.result.unwrap().len();
        receiver += o.stats;
    }
    let sender = t.join().unwrap();
    PairRun {
        wall: start.elapsed(),
        receiver,
        sender,
        found,
    }
}
