//! The client's query building leaves no secret in memory it frees: a global allocator that
//! copies every block handed back to it while recording, checked afterwards for the requested
//! indices and for the DPF keys' roots.
//!
//! This binary holds one test, so no other test frees memory while it records.
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use obliv_core::AesRng;
use obliv_pir::batch::{self, BatchLayout, BatchParams};
use obliv_pir::{dpf, dpf_pir};
use rand_core::SeedableRng;

/// Bytes of freed memory kept while recording.
const LOG_CAP: usize = 1 << 20;

struct Log {
    buf: [u8; LOG_CAP],
    len: usize,
    overflow: bool,
}

static RECORDING: AtomicBool = AtomicBool::new(false);
static LOG: Mutex<Log> = Mutex::new(Log {
    buf: [0; LOG_CAP],
    len: 0,
    overflow: false,
});

/// The system allocator, handing out zeroed memory (so every byte of a block is initialised
/// when it comes back) and, while [`RECORDING`] is set, copying each freed block into [`LOG`].
/// Reallocation is the trait's default (allocate, copy, free), so the old block of a growing
/// vector is recorded too.
struct Recorder;

// SAFETY: every call is forwarded to `System` with the same layout; `dealloc` only reads the
// block (all of it initialised, as `alloc` zeroes it) before forwarding it.
unsafe impl GlobalAlloc for Recorder {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is the one for `alloc_zeroed`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if RECORDING.load(Ordering::SeqCst) {
            // SAFETY: `ptr` is a live block of `layout.size()` bytes from `alloc` (zeroed
            // there, so initialised), not freed until the call below.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, layout.size()) };
            // No allocation happens while the lock is held.
            if let Ok(mut log) = LOG.lock() {
                let at = log.len;
                if at + bytes.len() <= LOG_CAP {
                    log.buf[at..at + bytes.len()].copy_from_slice(bytes);
                    log.len += bytes.len();
                } else {
                    log.overflow = true;
                }
            }
        }
        // SAFETY: forwarded unchanged from the caller.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Recorder = Recorder;

/// Runs `f` while recording freed memory; returns its result.
fn recording<T>(f: impl FnOnce() -> T) -> T {
    if let Ok(mut log) = LOG.lock() {
        log.len = 0;
        log.overflow = false;
    }
    RECORDING.store(true, Ordering::SeqCst);
    let r = f();
    RECORDING.store(false, Ordering::SeqCst);
    r
}

/// Whether any of `needles` occurs in the memory freed while recording.
fn freed_memory_contains(needles: &[&[u8]]) -> bool {
    let log = LOG.lock().unwrap();
    assert!(!log.overflow, "log too small");
    let hay = &log.buf[..log.len];
    needles
        .iter()
        .any(|n| hay.windows(n.len()).any(|w| w == *n))
}

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
    let q = recording(|| batch::query(&layout, &indices, &mut rng)).unwrap();
    let mut roots = batch_roots(&layout, &q.to_server0);
    roots.extend(batch_roots(&layout, &q.to_server1));
    let (indices_freed, keys_freed) = (
        freed_memory_contains(&[&pattern]),
        freed_memory_contains(&roots),
    );
    assert!(
        !indices_freed && !keys_freed,
        "freed without zeroizing: indices {indices_freed}, key bytes {keys_freed}"
    );

    // The same for a single DPF-PIR query: its keys go straight into the query.
    let single = recording(|| dpf_pir::query(1 << 16, 4_321, &mut rng)).unwrap();
    let roots: [&[u8]; 2] = [&single.to_server0[1..17], &single.to_server1[1..17]];
    assert!(!freed_memory_contains(&roots));
}
