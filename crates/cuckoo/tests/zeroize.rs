//! A cuckoo table leaves none of its (private) items in memory it frees: a global allocator
//! that copies every block handed back to it while recording, checked afterwards for the
//! items' bytes.
//!
//! This binary holds one test, so no other test frees memory while it records.
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use obliv_core::{Block, Prg};
use obliv_cuckoo::{CuckooParams, CuckooTable, Error};

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

/// Runs `f` while recording freed memory.
fn recording(f: impl FnOnce()) {
    if let Ok(mut log) = LOG.lock() {
        log.len = 0;
        log.overflow = false;
    }
    RECORDING.store(true, Ordering::SeqCst);
    f();
    RECORDING.store(false, Ordering::SeqCst);
}

/// How many of `items` occur in the memory freed while recording.
fn items_in_freed_memory(items: &[Block]) -> usize {
    let log = LOG.lock().unwrap();
    assert!(!log.overflow, "log too small ({} bytes)", log.len);
    let hay = &log.buf[..log.len];
    items
        .iter()
        .filter(|x| hay.windows(16).any(|w| w == x.to_bytes()))
        .count()
}

/// Tables built at once, grown item by item past their announced size, and left by a failed
/// insertion free no item unwiped (they kept the items and freed them as they were, on drop
/// and when a vector grew).
#[test]
fn tables_free_no_items() {
    let xs = Prg::new(Block(5)).blocks(300);
    // First use of AES sets up its backend (which allocates and frees scratch of its own).
    drop(CuckooTable::build(&Prg::new(Block(6)).blocks(300), Block(1)).unwrap());

    recording(|| drop(CuckooTable::build(&xs, Block(1)).unwrap()));
    assert_eq!(items_in_freed_memory(&xs), 0, "built table");

    // Sized for 10 items, given 300 one at a time: the item vector is moved several times.
    let p = CuckooParams::with_bins(10, 1000).unwrap();
    recording(|| {
        let mut t = CuckooTable::new(&p, Block(2)).unwrap();
        for &x in &xs {
            t.insert(x).unwrap();
        }
        drop(t);
    });
    assert_eq!(items_in_freed_memory(&xs), 0, "grown table");

    // Too few bins: insertion fails part-way and the items after the failure are taken out.
    let few = &xs[..40];
    let p = CuckooParams::with_bins(40, 40).unwrap();
    let mut failed = false;
    recording(|| {
        let mut t = CuckooTable::new(&p, Block(3)).unwrap();
        failed = matches!(t.insert_all(few), Err(Error::InsertionFailed { .. }));
        drop(t);
    });
    assert!(failed);
    assert_eq!(items_in_freed_memory(few), 0, "failed table");
}
