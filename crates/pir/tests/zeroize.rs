//! The client's query building leaves no secret in memory it frees: `obliv_testkit` records
//! every block freed, checked afterwards for the requested indices and for the DPF keys'
//! roots.
//!
//! This binary holds one test, so no other test frees memory while it records.
#![allow(clippy::unwrap_used)]

use obliv_core::AesRng;
use obliv_pir::batch::{self, BatchLayout, BatchParams};
use obliv_pir::{dpf, dpf_pir};
use obliv_testkit::{TestAlloc, record_freed};
use rand_core::SeedableRng;

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::new();

/// The roots (bytes 1..17) of the keys concatenated in a batch message.
fn batch_roots<'a>(layout: &BatchLayout, msg: &'a [u8]) -> Vec<&'a [u8]> {
    let mut off = 0;
    (0..layout.buckets())
        .map(|b| {
            let len = dpf::key_len(layout.bucket_domain_bits(b));
            let root = &msg[off + 1..off + 17];
            off += len;
            root
        })
        .collect()
}

/// The batch query frees its copies of the indices, their buckets and positions, and the
/// serialised keys only after zeroizing them (they were left in freed vectors: the sorted
/// indices, and every key's bytes in the temporary of its serialisation).
#[test]
fn queries_free_no_secrets() {
    let layout = BatchLayout::new(1 << 16, BatchParams::for_batch(10)).unwrap();
    // Sorted and distinct: the query's own sorted copy of them is exactly these bytes.
    let indices: Vec<usize> = vec![4_321, 23_456, 34_567, 61_234];
    let pattern: Vec<u8> = indices.iter().flat_map(|i| i.to_le_bytes()).collect();
    let mut rng = AesRng::from_seed([3; 16]);
    let (q, freed) = record_freed(|| batch::query(&layout, &indices, &mut rng));
    let q = q.unwrap();
    let mut roots = batch_roots(&layout, &q.to_server0);
    roots.extend(batch_roots(&layout, &q.to_server1));
    let (indices_freed, keys_freed) = (freed.contains(&pattern), freed.count_of(&roots) > 0);
    assert!(
        !indices_freed && !keys_freed,
        "freed without zeroizing: indices {indices_freed}, key bytes {keys_freed}"
    );

    // The same for a single DPF-PIR query: its keys go straight into the query.
    let (single, freed) = record_freed(|| dpf_pir::query(1 << 16, 4_321, &mut rng));
    let single = single.unwrap();
    let roots: [&[u8]; 2] = [&single.to_server0[1..17], &single.to_server1[1..17]];
    assert_eq!(freed.count_of(&roots), 0);
}
