//! A server's answer leaves no expansion of the client's key in memory it frees: a global
//! allocator that copies every block handed back to it while recording, checked afterwards for
//! the key's full-domain evaluation (which, with the other server's, gives the index).
//!
//! This binary holds one test, so no other test frees memory while it records.
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use obliv_core::AesRng;
use obliv_net::Channel;
use obliv_pir::batch::{self, BatchLayout, BatchParams};
use obliv_pir::server::ServerState;
use obliv_pir::{Database, DpfKey, dpf, dpf_pir};
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

/// Blocks of a key's full-domain evaluation, as bytes, to look for.
fn expansion(key: &[u8]) -> Vec<[u8; 16]> {
    let k = DpfKey::from_bytes(key).unwrap();
    k.eval_full().iter().take(8).map(|b| b.to_bytes()).collect()
}

/// Regression: the servers wiped the parsed key (`DpfKey` is zeroized on drop) but freed its
/// full-domain evaluation as it was: the share of the selection vector, which with the other
/// server's gives the index just as the keys do. Also the request frames the server handles.
#[test]
fn answers_free_no_key_expansion() {
    let mut rng = AesRng::from_seed([7; 16]);
    let db = Database::random(1 << 12, 32, &mut rng).unwrap();
    let q = dpf_pir::query(db.len(), 1234, &mut rng).unwrap();
    let needles = expansion(&q.to_server0);
    let needles: Vec<&[u8]> = needles.iter().map(|b| &b[..]).collect();
    let answer = recording(|| dpf_pir::answer(&db, &q.to_server0)).unwrap();
    assert!(!freed_memory_contains(&needles), "answer");
    drop(answer);
    let answer = recording(|| dpf_pir::answer_parallel(&db, &q.to_server0, 2)).unwrap();
    assert!(!freed_memory_contains(&needles), "answer_parallel");
    drop(answer);
    let keys: [&[u8]; 2] = [&q.to_server0, &q.to_server0];
    let answers = recording(|| dpf_pir::answer_many(&db, &keys));
    assert!(!freed_memory_contains(&needles), "answer_many");
    drop(answers);

    // The server's request handling: the frame holds the key itself.
    let st = ServerState::new(db.clone(), None).unwrap();
    let mut frame = vec![2u8];
    frame.extend_from_slice(&q.to_server0);
    let root: &[u8] = &q.to_server0[1..17];
    let resp = recording(|| st.handle(&frame));
    assert!(!freed_memory_contains(&needles), "ServerState::handle");
    drop(resp);
    let (mut client, mut server) = obliv_net::mem_pair();
    client.send(&frame).unwrap();
    client.flush().unwrap();
    drop(client);
    // Handles the request, then fails to send the response to the closed end.
    let _ = recording(|| st.serve_channel(&mut server, 1 << 16));
    assert!(!freed_memory_contains(&[root]), "serve_channel");

    // A batch answer: every bucket's key is expanded.
    let layout = BatchLayout::new(db.len(), BatchParams::for_batch(10)).unwrap();
    let bq = batch::query(&layout, &[5, 77, 3000], &mut rng).unwrap();
    let mut needles = Vec::new();
    let mut off = 0;
    for b in 0..layout.buckets() {
        let len = dpf::key_len(layout.bucket_domain_bits(b));
        needles.extend(expansion(&bq.to_server1[off..off + len]));
        off += len;
    }
    let needles: Vec<&[u8]> = needles.iter().map(|b| &b[..]).collect();
    let answer = recording(|| batch::answer(&db, &layout, &bq.to_server1)).unwrap();
    assert!(!freed_memory_contains(&needles), "batch answer");
    drop(answer);
}
