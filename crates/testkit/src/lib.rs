//! Test support shared by the obliv crates (a dev-dependency, not published): [`TestAlloc`], a
//! global allocator for test binaries that finds secrets left in freed memory and records
//! allocation sizes.
//!
//! Install it in an integration-test binary:
//!
//! ```rust,ignore
//! #[global_allocator]
//! static ALLOC: obliv_testkit::TestAlloc = obliv_testkit::TestAlloc::new();
//! ```
//!
//! then ask of the code run in a closure:
//!
//! - [`freed_copies`]: how many freed blocks still held one of the given byte strings
//!   ("needles");
//! - [`record_freed`]: a copy of everything freed, to search for needles known only
//!   afterwards (keys the code under test generated, for example);
//! - [`unwiped_blocks`] and [`unwiped_aligned_blocks`]: the sizes of large (or SIMD-aligned)
//!   freed blocks that were not all zero;
//! - [`largest_allocation`]: the largest single allocation or reallocation.
//!
//! Every function panics when the binary's global allocator is not a [`TestAlloc`], so a test
//! cannot pass by measuring nothing. The scenarios run one at a time (a global lock); frees by
//! other threads during a scenario count too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// The most needles one [`freed_copies`] call looks for.
pub const MAX_NEEDLES: usize = 16;
/// The longest needle, in bytes.
pub const MAX_NEEDLE_LEN: usize = 256;
/// The most block sizes [`unwiped_blocks`] reports (further ones are counted in the last).
const MAX_UNWIPED: usize = 64;

/// Set by every allocation through a [`TestAlloc`]: proof that one is installed.
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Whether a [`freed_copies`] or [`unwiped_blocks`] scenario is running.
static SCANNING: AtomicBool = AtomicBool::new(false);
static NEEDLE_COUNT: AtomicUsize = AtomicUsize::new(0);
static NEEDLE_LENS: [AtomicUsize; MAX_NEEDLES] = [const { AtomicUsize::new(0) }; MAX_NEEDLES];
static NEEDLES: [[AtomicU8; MAX_NEEDLE_LEN]; MAX_NEEDLES] =
    [const { [const { AtomicU8::new(0) }; MAX_NEEDLE_LEN] }; MAX_NEEDLES];
static FOUND: AtomicUsize = AtomicUsize::new(0);
/// The least size and alignment of the blocks an [`unwiped_blocks`] or
/// [`unwiped_aligned_blocks`] scenario checks (`usize::MAX` when none runs).
static MIN_UNWIPED_SIZE: AtomicUsize = AtomicUsize::new(usize::MAX);
static MIN_UNWIPED_ALIGN: AtomicUsize = AtomicUsize::new(usize::MAX);
static UNWIPED_COUNT: AtomicUsize = AtomicUsize::new(0);
static UNWIPED: [AtomicUsize; MAX_UNWIPED] = [const { AtomicUsize::new(0) }; MAX_UNWIPED];
static LARGEST: AtomicUsize = AtomicUsize::new(0);
/// Bytes of freed memory [`record_freed`] keeps.
pub const RECORD_CAP: usize = 4 << 20;
/// Whether a [`record_freed`] scenario is running.
static RECORDING: AtomicBool = AtomicBool::new(false);
static RECORD: Mutex<Record> = Mutex::new(Record {
    buf: [0; RECORD_CAP],
    len: 0,
    overflow: false,
});

/// The freed bytes of a [`record_freed`] scenario.
struct Record {
    buf: [u8; RECORD_CAP],
    len: usize,
    overflow: bool,
}

/// One scenario at a time: the needles, the flags and the records are global.
static SERIAL: Mutex<()> = Mutex::new(());

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The system allocator with checks for tests.
///
/// - Every block is handed out zeroed, so all of its bytes are initialised when it comes back
///   and can be read.
/// - A reallocation always moves the block (allocate, copy, free), so the old copy a growing
///   vector leaves behind is checked like any freed block.
/// - While a [`freed_copies`] or [`unwiped_blocks`] scenario runs, every freed block is
///   checked before it goes back to the system.
/// - The largest request is recorded for [`largest_allocation`], and requests above the limit
///   of [`refusing_above`](Self::refusing_above) fail (the standard library then aborts).
#[derive(Debug)]
pub struct TestAlloc {
    limit: usize,
}

impl TestAlloc {
    /// A checking allocator that grants every request the system grants.
    #[must_use]
    pub const fn new() -> Self {
        TestAlloc { limit: usize::MAX }
    }

    /// As [`new`](Self::new), but every request above `limit` bytes fails, so that a test of
    /// "allocates only for what arrives" aborts at once on a regression instead of touching
    /// gigabytes.
    #[must_use]
    pub const fn refusing_above(limit: usize) -> Self {
        TestAlloc { limit }
    }

    /// Records a request of `size` bytes; whether it may be granted.
    fn admit(&self, size: usize) -> bool {
        INSTALLED.store(true, Ordering::Relaxed);
        LARGEST.fetch_max(size, Ordering::Relaxed);
        size <= self.limit
    }
}

impl Default for TestAlloc {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether the `size` bytes at `p` contain needle `k`.
///
/// # Safety
/// `p` must point to `size` initialised bytes of one live allocation.
unsafe fn contains_needle(p: *const u8, size: usize, k: usize) -> bool {
    let len = NEEDLE_LENS[k].load(Ordering::Relaxed);
    if len == 0 || size < len {
        return false;
    }
    let needle = &NEEDLES[k];
    let first = needle[0].load(Ordering::Relaxed);
    (0..=size - len).any(|i| {
        // SAFETY: `i + j < size` for every read, inside the block (the caller's contract).
        let at = |j: usize| unsafe { p.add(i + j).read() };
        at(0) == first && (1..len).all(|j| at(j) == needle[j].load(Ordering::Relaxed))
    })
}

/// Checks a block about to be freed against the running scenario.
///
/// # Safety
/// `p` must point to `layout.size()` initialised bytes of one live allocation.
unsafe fn check_freed(p: *const u8, layout: Layout) {
    let size = layout.size();
    if RECORDING.load(Ordering::Relaxed) {
        // SAFETY: forwarded contract.
        let bytes = unsafe { core::slice::from_raw_parts(p, size) };
        // Nothing allocates while the lock is held (a `record_freed` caller copies the record
        // out only after recording stopped), so this cannot deadlock.
        if let Ok(mut r) = RECORD.lock() {
            let at = r.len;
            if at + size <= RECORD_CAP {
                r.buf[at..at + size].copy_from_slice(bytes);
                r.len += size;
            } else {
                r.overflow = true;
            }
        }
    }
    if !SCANNING.load(Ordering::Relaxed) {
        return;
    }
    let needles = NEEDLE_COUNT.load(Ordering::Relaxed);
    // SAFETY: forwarded contract.
    if (0..needles).any(|k| unsafe { contains_needle(p, size, k) }) {
        FOUND.fetch_add(1, Ordering::Relaxed);
    }
    if size >= MIN_UNWIPED_SIZE.load(Ordering::Relaxed)
        && layout.align() >= MIN_UNWIPED_ALIGN.load(Ordering::Relaxed)
    {
        // SAFETY: forwarded contract.
        let bytes = unsafe { core::slice::from_raw_parts(p, size) };
        if bytes.iter().any(|&b| b != 0) {
            let i = UNWIPED_COUNT.fetch_add(1, Ordering::Relaxed);
            UNWIPED[i.min(MAX_UNWIPED - 1)].store(size, Ordering::Relaxed);
        }
    }
}

// SAFETY: every block comes from `System.alloc_zeroed` with the caller's layout (or is null,
// which `GlobalAlloc` permits for a refused request) and goes back to `System.dealloc` with
// the same layout; `realloc` is an allocation, a copy of `min(old, new)` bytes and a
// deallocation, which is what `GlobalAlloc::realloc` promises. Freed blocks are only read,
// and every byte of them is initialised (zeroed at allocation).
unsafe impl GlobalAlloc for TestAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.admit(layout.size()) {
            return core::ptr::null_mut();
        }
        // SAFETY: the caller's contract for `alloc` is the one for `alloc_zeroed`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract; `alloc` hands out zeroed memory.
        unsafe { self.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live block of `layout.size()` initialised bytes until freed.
        unsafe {
            check_freed(ptr, layout);
            System.dealloc(ptr, layout);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `new_size` is non-zero and, rounded up to the alignment, fits `isize` (the
        // caller's contract for `realloc`), so the layout is valid.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a forwarded allocation; on success the old block (live, `layout.size()`
        // initialised bytes) is copied into the new one, checked and freed.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

/// Takes the scenario lock and checks that a [`TestAlloc`] is installed.
fn scenario() -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // An allocation through the global allocator sets `INSTALLED` if it is a `TestAlloc`.
    drop(std::hint::black_box(Box::new(0u64)));
    assert!(
        INSTALLED.load(Ordering::Relaxed),
        "install obliv_testkit::TestAlloc as this test binary's #[global_allocator]"
    );
    guard
}

/// Runs `f` and returns its result and the number of blocks freed meanwhile (including the
/// old blocks of reallocations) that held at least one of `needles`.
///
/// # Panics
/// If there are more than [`MAX_NEEDLES`] needles, one is empty or longer than
/// [`MAX_NEEDLE_LEN`], or no [`TestAlloc`] is installed.
pub fn freed_copies<T>(needles: &[&[u8]], f: impl FnOnce() -> T) -> (T, usize) {
    assert!(
        needles.len() <= MAX_NEEDLES,
        "at most {MAX_NEEDLES} needles"
    );
    let _guard = scenario();
    for (k, needle) in needles.iter().enumerate() {
        assert!(
            !needle.is_empty() && needle.len() <= MAX_NEEDLE_LEN,
            "needle {k}: {} bytes, not in 1..={MAX_NEEDLE_LEN}",
            needle.len()
        );
        for (slot, &b) in NEEDLES[k].iter().zip(*needle) {
            slot.store(b, Ordering::Relaxed);
        }
        NEEDLE_LENS[k].store(needle.len(), Ordering::Relaxed);
    }
    NEEDLE_COUNT.store(needles.len(), Ordering::Relaxed);
    FOUND.store(0, Ordering::Relaxed);
    SCANNING.store(true, Ordering::SeqCst);
    let out = f();
    SCANNING.store(false, Ordering::SeqCst);
    NEEDLE_COUNT.store(0, Ordering::Relaxed);
    (out, FOUND.load(Ordering::Relaxed))
}

/// The bytes freed during a [`record_freed`] scenario, one block after another.
#[derive(Debug)]
pub struct Freed {
    bytes: Vec<u8>,
}

impl Freed {
    /// Whether `needle` (non-empty) occurs in the freed bytes. A match may straddle two
    /// blocks, which only errs towards reporting a copy.
    ///
    /// # Panics
    /// If `needle` is empty.
    #[must_use]
    pub fn contains(&self, needle: &[u8]) -> bool {
        assert!(!needle.is_empty(), "empty needle");
        self.bytes.windows(needle.len()).any(|w| w == needle)
    }

    /// How many of `needles` occur in the freed bytes.
    #[must_use]
    pub fn count_of<N: AsRef<[u8]>>(&self, needles: &[N]) -> usize {
        needles.iter().filter(|n| self.contains(n.as_ref())).count()
    }

    /// The number of bytes freed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing was freed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Runs `f` and returns its result and a copy of every block freed meanwhile (including the
/// old blocks of reallocations), to search for secrets known only once `f` has run.
///
/// # Panics
/// If more than [`RECORD_CAP`] bytes were freed (use [`freed_copies`], which has no limit,
/// with needles known in advance) or no [`TestAlloc`] is installed.
pub fn record_freed<T>(f: impl FnOnce() -> T) -> (T, Freed) {
    let _guard = scenario();
    {
        let mut r = RECORD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        r.len = 0;
        r.overflow = false;
    }
    RECORDING.store(true, Ordering::SeqCst);
    let out = f();
    RECORDING.store(false, Ordering::SeqCst);
    let r = RECORD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    assert!(
        !r.overflow,
        "more than {RECORD_CAP} bytes freed: record a smaller scenario"
    );
    let bytes = r.buf[..r.len].to_vec();
    drop(r);
    (out, Freed { bytes })
}

/// Runs `f` and returns its result and the sizes of the blocks of at least `min_size` bytes
/// freed meanwhile that were not all zero (at most 64 sizes; the last one stands for any
/// further blocks). A small `min_size` also catches the test harness's own allocations.
///
/// # Panics
/// If `min_size` is 0 or no [`TestAlloc`] is installed.
pub fn unwiped_blocks<T>(min_size: usize, f: impl FnOnce() -> T) -> (T, Vec<usize>) {
    assert!(min_size > 0, "min_size must be positive");
    unwiped_where(min_size, 1, f)
}

/// As [`unwiped_blocks`], for the blocks allocated with an alignment of at least `min_align`
/// bytes, whatever their size: vectors of SIMD lanes (64-byte aligned for AVX-512), which
/// ordinary allocations do not share.
///
/// # Panics
/// If no [`TestAlloc`] is installed.
pub fn unwiped_aligned_blocks<T>(min_align: usize, f: impl FnOnce() -> T) -> (T, Vec<usize>) {
    unwiped_where(1, min_align, f)
}

/// The scenario of [`unwiped_blocks`] and [`unwiped_aligned_blocks`].
fn unwiped_where<T>(min_size: usize, min_align: usize, f: impl FnOnce() -> T) -> (T, Vec<usize>) {
    let _guard = scenario();
    UNWIPED_COUNT.store(0, Ordering::Relaxed);
    MIN_UNWIPED_ALIGN.store(min_align, Ordering::Relaxed);
    MIN_UNWIPED_SIZE.store(min_size, Ordering::Relaxed);
    SCANNING.store(true, Ordering::SeqCst);
    let out = f();
    SCANNING.store(false, Ordering::SeqCst);
    MIN_UNWIPED_SIZE.store(usize::MAX, Ordering::Relaxed);
    MIN_UNWIPED_ALIGN.store(usize::MAX, Ordering::Relaxed);
    let n = UNWIPED_COUNT.load(Ordering::Relaxed).min(MAX_UNWIPED);
    let sizes = UNWIPED[..n]
        .iter()
        .map(|s| s.load(Ordering::Relaxed))
        .collect();
    (out, sizes)
}

/// Runs `f` and returns its result and the largest single allocation or reallocation (in
/// bytes) requested meanwhile, by any thread.
///
/// # Panics
/// If no [`TestAlloc`] is installed.
pub fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let _guard = scenario();
    LARGEST.store(0, Ordering::SeqCst);
    let out = f();
    (out, LARGEST.load(Ordering::SeqCst))
}
