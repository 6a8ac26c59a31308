//! Parallel maps over batches whose error is deterministic: the error of the first failing
//! input by index, however rayon schedules the work.
//!
//! Collecting a parallel iterator of `Result`s into a `Result` (rayon's `FromParallelIterator`)
//! returns whichever error a worker reaches first in time, so with two invalid inputs the
//! caller could see either, depending on the load. Here every item records its index: a
//! failure lowers a shared "first failing index", items above it are skipped (their work is
//! not done), and the error returned is the one at the lowest failing index. Results of items
//! computed before the failure was known are dropped (an [`Integer`](crate::Integer) wipes
//! its limbs when dropped), never returned.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::error::{Error, Result};

/// `f(state, i)` for every `i < n`, in parallel, with one `init()` state per rayon work unit
/// (as in `map_init`); the results in index order, or the error of the smallest failing `i`.
pub(crate) fn try_map_init<S, T, Init, F>(n: usize, init: Init, f: F) -> Result<Vec<T>>
where
    T: Send,
    Init: Fn() -> S + Sync + Send,
    F: Fn(&mut S, usize) -> Result<T> + Sync + Send,
{
    // `first` is the smallest failing index seen so far (read without the lock to skip later
    // items); `failure` holds the (index, error) pair, replaced under the lock only by a
    // smaller index, so the smallest failing index wins whatever the order of completion.
    let first = AtomicUsize::new(usize::MAX);
    let failure: Mutex<Option<(usize, Error)>> = Mutex::new(None);
    let slots: Vec<Option<T>> = (0..n)
        .into_par_iter()
        .map_init(init, |state, i| {
            if i > first.load(Ordering::Acquire) {
                return None;
            }
            match f(state, i) {
                Ok(v) => Some(v),
                Err(e) => {
                    let mut g = failure.lock().unwrap_or_else(|p| p.into_inner());
                    if g.as_ref().is_none_or(|(j, _)| i < *j) {
                        *g = Some((i, e));
                    }
                    first.fetch_min(i, Ordering::Release);
                    None
                }
            }
        })
        .collect();
    let failure = failure.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some((_, e)) = failure {
        return Err(e);
    }
    // No failure: no item was skipped, so every slot is filled.
    slots
        .into_iter()
        .collect::<Option<Vec<T>>>()
        .ok_or(Error::Decoding("batch item not computed"))
}

/// [`try_map_init`] without per-worker state.
pub(crate) fn try_map<T, F>(n: usize, f: F) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(usize) -> Result<T> + Sync + Send,
{
    try_map_init(n, || (), |(), i| f(i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The slow failure at index 0 wins over the fast ones after it, on any pool.
    #[test]
    fn first_error_by_index_wins() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .expect("pool");
        for _ in 0..3 {
            let r: Result<Vec<usize>> = pool.install(|| {
                try_map(32, |i| {
                    if i == 0 {
                        std::thread::sleep(Duration::from_millis(30));
                        Err(Error::PlaintextOutOfRange)
                    } else if i % 2 == 1 {
                        Err(Error::KeyMismatch)
                    } else {
                        Ok(i)
                    }
                })
            });
            assert_eq!(r, Err(Error::PlaintextOutOfRange));
        }
        let ok: Result<Vec<usize>> = try_map(100, Ok);
        assert_eq!(ok, Ok((0..100).collect()));
        let empty: Result<Vec<usize>> = try_map(0, |_| Err(Error::KeyMismatch));
        assert_eq!(empty, Ok(vec![]));
    }

    /// Items past a known failure are skipped.
    #[test]
    fn later_items_are_skipped_after_a_failure() {
        use std::sync::atomic::AtomicUsize;
        let done = AtomicUsize::new(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let r: Result<Vec<()>> = pool.install(|| {
            try_map(1000, |i| {
                done.fetch_add(1, Ordering::Relaxed);
                if i == 0 {
                    Err(Error::KeyMismatch)
                } else {
                    Ok(())
                }
            })
        });
        assert_eq!(r, Err(Error::KeyMismatch));
        assert_eq!(done.load(Ordering::Relaxed), 1);
    }
}
