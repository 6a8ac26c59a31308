//! A cuckoo table leaves none of its (private) items in memory it frees: `obliv_testkit`
//! records every block freed, checked afterwards for the items' bytes.
//!
//! This binary holds one test, so no other test frees memory while it records.
#![allow(clippy::unwrap_used)]

use obliv_core::{Block, Prg};
use obliv_cuckoo::{CuckooParams, CuckooTable, Error};
use obliv_testkit::{TestAlloc, record_freed};

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::new();

/// Tables built at once, grown item by item past their announced size, and left by a failed
/// insertion free no item unwiped (they kept the items and freed them as they were, on drop
/// and when a vector grew).
#[test]
fn tables_free_no_items() {
    let xs = Prg::new(Block(5)).blocks(300);
    // First use of AES sets up its backend (which allocates and frees scratch of its own).
    drop(CuckooTable::build(&Prg::new(Block(6)).blocks(300), Block(1)).unwrap());

    let ((), freed) = record_freed(|| drop(CuckooTable::build(&xs, Block(1)).unwrap()));
    assert_eq!(freed.count_of(&item_bytes(&xs)), 0, "built table");

    // Sized for 10 items, given 300 one at a time: the item vector is moved several times.
    let p = CuckooParams::with_bins(10, 1000).unwrap();
    let ((), freed) = record_freed(|| {
        let mut t = CuckooTable::new(&p, Block(2)).unwrap();
        for &x in &xs {
            t.insert(x).unwrap();
        }
        drop(t);
    });
    assert_eq!(freed.count_of(&item_bytes(&xs)), 0, "grown table");

    // Too few bins: insertion fails part-way and the items after the failure are taken out.
    let few = &xs[..40];
    let p = CuckooParams::with_bins(40, 40).unwrap();
    let mut failed = false;
    let ((), freed) = record_freed(|| {
        let mut t = CuckooTable::new(&p, Block(3)).unwrap();
        failed = matches!(t.insert_all(few), Err(Error::InsertionFailed { .. }));
        drop(t);
    });
    assert!(failed);
    assert_eq!(freed.count_of(&item_bytes(few)), 0, "failed table");
}

/// The items' bytes, to look for.
fn item_bytes(items: &[Block]) -> Vec<[u8; 16]> {
    items.iter().map(|x| x.to_bytes()).collect()
}
