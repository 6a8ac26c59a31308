//! The checks of `TestAlloc` find what they are for, and nothing where there is nothing.
#![allow(clippy::unwrap_used)]

use obliv_testkit::{
    TestAlloc, freed_copies, largest_allocation, record_freed, unwiped_aligned_blocks,
    unwiped_blocks,
};

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::refusing_above(1 << 30);

const NEEDLE: &[u8] = b"a secret that must not be left in freed memory";

#[test]
fn checks_find_what_is_there_and_only_that() {
    // A freed copy of the needle is found; a wiped one is not.
    let ((), found) = freed_copies(&[b"other needle", NEEDLE], || {
        drop(std::hint::black_box(NEEDLE.to_vec()));
    });
    assert_eq!(found, 1);
    let ((), found) = freed_copies(&[NEEDLE], || {
        let mut v = std::hint::black_box(NEEDLE.to_vec());
        v.iter_mut().for_each(|b| *b = 0);
        drop(std::hint::black_box(v));
    });
    assert_eq!(found, 0);
    // A vector that grows leaves its old block behind: reallocation always moves.
    let (v, found) = freed_copies(&[NEEDLE], || {
        let mut v = Vec::with_capacity(NEEDLE.len());
        v.extend_from_slice(NEEDLE);
        v.reserve(4096);
        v
    });
    assert_eq!(found, 1);
    assert_eq!(&v[..NEEDLE.len()], NEEDLE);
    // The record holds what was freed, wiped or not.
    let ((), freed) = record_freed(|| {
        drop(std::hint::black_box(NEEDLE.to_vec()));
        let mut v = std::hint::black_box(b"wiped secret".to_vec());
        v.iter_mut().for_each(|b| *b = 0);
        drop(std::hint::black_box(v));
    });
    assert!(freed.contains(NEEDLE) && !freed.contains(b"wiped secret"));
    assert_eq!(freed.count_of(&[&NEEDLE[..5], b"absent", &NEEDLE[9..]]), 2);
    // Large unwiped blocks are reported by size; zeroed or small ones are not.
    let ((), sizes) = unwiped_blocks(1000, || {
        drop(std::hint::black_box(vec![1u8; 5000]));
        drop(std::hint::black_box(vec![0u8; 6000]));
        drop(std::hint::black_box(vec![1u8; 999]));
    });
    assert_eq!(sizes, [5000]);
    // Only blocks of the alignment asked for, of any size.
    #[repr(align(64))]
    #[derive(Clone, Copy)]
    struct Lane(#[allow(dead_code)] [u8; 64]);
    let ((), sizes) = unwiped_aligned_blocks(64, || {
        drop(std::hint::black_box(vec![Lane([1; 64]); 2]));
        drop(std::hint::black_box(vec![Lane([0; 64]); 3]));
        drop(std::hint::black_box(vec![1u64; 100]));
    });
    assert_eq!(sizes, [128]);
    // The largest request, allocations and reallocations alike.
    let (v, largest) = largest_allocation(|| {
        let mut v = vec![0u8; 3 << 20];
        v.reserve_exact(5 << 20);
        v
    });
    assert_eq!(largest, (3 << 20) + (5 << 20));
    drop(v);
}
