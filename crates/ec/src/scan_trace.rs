//! Test builds only: a per-thread trace of the table entries that the constant-time look-ups
//! of the AVX-512 kernels read (`ifma25519`'s digit selection, `ifma_weierstrass`'s window
//! look-up). Each read entry is noted with a tag naming the table; the trace keeps the number
//! of reads and an order-sensitive digest of the `(tag, entry)` sequence. Equal traces for
//! different scalars show that the sequence of reads does not depend on the secret digits: an
//! early exit changes the count, a secret-indexed read the digest.

use std::cell::Cell;

/// `(reads, digest of the (tag, entry) sequence)`.
pub(crate) type Trace = (u64, u64);

thread_local! {
    static TRACE: Cell<Trace> = const { Cell::new((0, 0xcbf2_9ce4_8422_2325)) };
}

/// Record a read of entry `entry` of the table `tag`.
pub(crate) fn note(tag: u8, entry: usize) {
    TRACE.with(|t| {
        let (n, h) = t.get();
        let h = (h ^ (u64::from(tag) << 32 | entry as u64)).wrapping_mul(0x0100_0000_01b3);
        t.set((n + 1, h));
    });
}

/// The trace since the last call (and a fresh one started).
pub(crate) fn take() -> Trace {
    TRACE.with(|t| t.replace((0, 0xcbf2_9ce4_8422_2325)))
}
