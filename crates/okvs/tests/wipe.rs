//! Buffers derived from the keys and values (private inputs) are wiped before they are
//! freed: `obliv_testkit::TestAlloc` looks at every large block freed during encode and decode
//! calls and records those that still hold non-zero bytes.
#![allow(clippy::unwrap_used)] // test code

use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block};
use obliv_okvs::{Binary, BinnedPaxos, DenseType, Gf128, Okvs, Paxos, PaxosParams};
use obliv_testkit::TestAlloc;

/// Blocks smaller than this are not checked (small allocations of the test harness and
/// rayon); the smallest buffers of interest here (bucket lists of the core phase) have 256.
const MIN_SIZE: usize = 256;

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::new();

/// Runs `f`; returns the sizes of the large blocks it freed unwiped.
fn watch(f: impl FnOnce()) -> Vec<usize> {
    obliv_testkit::unwiped_blocks(MIN_SIZE, f).1
}

/// Encodes (plain and randomized) and decodes `n` random keys under watch; appends a line
/// to `failures` for every call that freed an unwiped large block.
fn check<D: obliv_okvs::DenseKind, V: obliv_okvs::DenseValue<D>, O: Okvs<D>>(
    what: &str,
    okvs: &O,
    n: usize,
    failures: &mut Vec<String>,
) {
    let mut rng = AesRng::from_seed([7; 16]);
    let keys: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
    let values: Vec<V> = (0..n).map(|_| V::random(&mut rng)).collect();
    let mut p = vec![V::default(); okvs.size()];
    let mut out = vec![V::default(); n];
    // Once outside the watch, so that lazy one-time allocations (rayon's pool) are done.
    okvs.encode_into(&keys, &values, &mut p).unwrap();
    okvs.decode_into(&keys, &p, &mut out).unwrap();
    let mut report = |call: &str, bad: Vec<usize>| {
        if !bad.is_empty() {
            failures.push(format!("{what} {call}: unwiped blocks of {bad:?} bytes"));
        }
    };
    report(
        "encode",
        watch(|| okvs.encode_into(&keys, &values, &mut p).unwrap()),
    );
    report(
        "randomized encode",
        watch(|| {
            okvs.encode_randomized_into(&keys, &values, &mut p, &mut rng)
                .unwrap();
        }),
    );
    report(
        "decode",
        watch(|| okvs.decode_into(&keys, &p, &mut out).unwrap()),
    );
    assert_eq!(out, values);
}

#[test]
fn scratch_buffers_are_wiped() {
    let mut failures = Vec::new();
    // Small systems leave a gap often enough to exercise the core phase and the dense
    // solve; 5000 keys in bins of 1000 exercise the binned encoder and decoder.
    for seed in 0..8u128 {
        let okvs = Paxos::<Binary>::new(300, 40, Block(seed)).unwrap();
        check::<Binary, u64, _>("Paxos<Binary>", &okvs, 300, &mut failures);
        let okvs = Paxos::<Gf128>::new(300, 40, Block(seed)).unwrap();
        check::<Gf128, Block, _>("Paxos<Gf128>", &okvs, 300, &mut failures);
    }
    // Below the peeling threshold (e = 1.05): a 2-core of tens of rows, solved by the core
    // phase and a large dense elimination.
    for seed in 0..4u128 {
        let p = PaxosParams::with_sizes(300, 315, 120, 0, 40, DenseType::Gf128).unwrap();
        let okvs = Paxos::<Gf128>::with_params(p, Block(seed)).unwrap();
        check::<Gf128, Block, _>("Paxos<Gf128>, large gap", &okvs, 300, &mut failures);
        let p = PaxosParams::with_sizes(300, 330, 128, 0, 40, DenseType::Binary).unwrap();
        let okvs = Paxos::<Binary>::with_params(p, Block(seed)).unwrap();
        check::<Binary, u64, _>("Paxos<Binary>, large gap", &okvs, 300, &mut failures);
    }
    let okvs = Paxos::<Gf128>::new(20_000, 40, Block(1)).unwrap();
    check::<Gf128, Block, _>("Paxos<Gf128>", &okvs, 20_000, &mut failures);
    let okvs = BinnedPaxos::<Binary>::with_bin_size(5000, 1000, 40, Block(2)).unwrap();
    check::<Binary, u64, _>("BinnedPaxos<Binary>", &okvs, 5000, &mut failures);
    let okvs = BinnedPaxos::<Gf128>::with_bin_size(5000, 1000, 40, Block(3)).unwrap();
    check::<Gf128, Block, _>("BinnedPaxos<Gf128>", &okvs, 5000, &mut failures);
    assert!(failures.is_empty(), "{failures:#?}");
}
