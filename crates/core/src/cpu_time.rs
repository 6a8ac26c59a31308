//! CPU time of this thread and of this process, for the figures of benches and examples.
//!
//! On a shared machine wall-clock time drifts with the load; the CPU time a thread spent
//! running does much less. [`thread`] reads the thread's CPU clock, [`process`] sums Linux's
//! scheduler statistics over the process's threads (`/proc/self/task/*/schedstat`,
//! nanoseconds, updated at every context switch and scheduler tick); both return `None` where
//! they are unavailable (other systems, a restricted `/proc`), so callers can say "not
//! measured" instead of 0.
//!
//! ```
//! let t0 = obliv_core::cpu_time::thread();
//! let x: u64 = (0..1_000_000u64).map(|i| i * i).sum();
//! let t1 = obliv_core::cpu_time::thread();
//! if let (Some(a), Some(b)) = (t0, t1) {
//!     assert!(b >= a, "{x}");
//! }
//! ```

use std::time::Duration;

/// The first field of a `schedstat` file: time spent on a CPU, in nanoseconds.
fn schedstat_ns(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// CPU time the calling thread has used so far.
///
/// On Linux from `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, which includes the time since the
/// last scheduler tick (nanosecond resolution); `/proc/thread-self/schedstat` (updated only at
/// ticks and context switches, so in steps of a few milliseconds) where that call fails.
pub fn thread() -> Option<Duration> {
    #[cfg(target_os = "linux")]
    if let Some(d) = thread_clock() {
        return Some(d);
    }
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    schedstat_ns(&text).map(Duration::from_nanos)
}

/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, or `None` if it fails.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn thread_clock() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` that outlives the call, which only writes
    // into it; CLOCK_THREAD_CPUTIME_ID is a clock every Linux kernel since 2.6 provides.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u32::try_from(ts.tv_nsec).ok()?;
    (rc == 0).then(|| Duration::new(secs, nanos))
}

/// CPU time all threads of this process that are still alive have used so far (threads that
/// have exited are not counted: measure while the workers are alive, e.g. a rayon pool).
pub fn process() -> Option<Duration> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let ns = tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| schedstat_ns(&s))
        .sum();
    Some(Duration::from_nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_first_field() {
        assert_eq!(schedstat_ns("123456 789 10\n"), Some(123_456));
        assert_eq!(schedstat_ns(""), None);
        assert_eq!(schedstat_ns("x 1 2"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn grows_with_work() {
        let a = thread().expect("schedstat on Linux");
        let mut x = 1u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        }
        let b = thread().expect("schedstat on Linux");
        assert!(b > a, "{x}");
        // The thread clock has far finer steps than a scheduler tick (milliseconds): a
        // fraction of a millisecond of work shows.
        let c = thread().expect("clock");
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_micros(300) {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        }
        let d = thread().expect("clock");
        assert!(d > c, "{x}");
        assert!(process().expect("schedstat on Linux") >= b);
    }
}
