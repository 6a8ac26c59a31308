//! The state behind [`crate::Channel::set_deadline`], and a socket whose reads honour both the
//! idle timeout and the deadline.

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// A total deadline for the receives of one channel (or none).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Deadline {
    /// When it passes.
    at: Option<Instant>,
    /// How far ahead it lay when it was set (for the error report).
    set_for: Duration,
}

impl Deadline {
    /// The deadline `at` (`None`: no deadline), set now.
    pub(crate) fn new(at: Option<Instant>) -> Self {
        Deadline {
            at,
            set_for: at.map_or(Duration::ZERO, |a| {
                a.saturating_duration_since(Instant::now())
            }),
        }
    }

    /// The instant it passes, if any.
    pub(crate) fn at(&self) -> Option<Instant> {
        self.at
    }

    /// Time left (`Some(ZERO)` once passed), or `None` without a deadline.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        self.at.map(|a| a.saturating_duration_since(Instant::now()))
    }

    /// Whether it has passed.
    pub(crate) fn passed(&self) -> bool {
        self.at.is_some_and(|a| Instant::now() >= a)
    }

    /// The error of a receive it cut off.
    pub(crate) fn error(&self) -> Error {
        Error::DeadlineExceeded {
            set_for: self.set_for,
        }
    }

    /// `Err(DeadlineExceeded)` if it has passed.
    pub(crate) fn check(&self) -> Result<()> {
        if self.passed() {
            Err(self.error())
        } else {
            Ok(())
        }
    }

    /// How long a wait with timeout `timeout` (`None`: forever) may last: the shorter of the
    /// timeout and the time left.
    pub(crate) fn bound(&self, timeout: Option<Duration>) -> Option<Duration> {
        match (timeout, self.remaining()) {
            (Some(t), Some(left)) => Some(t.min(left)),
            (t, None) => t,
            (None, left) => left,
        }
    }

    /// The error for a wait of `waited` (as [`Deadline::bound`] gave it) that ended without
    /// data, where the idle timeout was `timeout`: [`Error::DeadlineExceeded`] if the deadline
    /// has passed, [`Error::Timeout`] if the whole idle timeout elapsed, `None` if the wait was
    /// cut short by the deadline that has not quite passed yet (wait again).
    pub(crate) fn after_wait(&self, waited: Duration, timeout: Option<Duration>) -> Option<Error> {
        if self.passed() {
            return Some(self.error());
        }
        match timeout {
            Some(t) if waited >= t => Some(Error::Timeout { after: t }),
            _ => None,
        }
    }

    /// An I/O error that [`Error::from_io`] turns into [`Error::DeadlineExceeded`].
    pub(crate) fn io_error(&self) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, DeadlinePassed(self.set_for))
    }
}

/// The payload of the I/O error of a socket read cut off by a deadline (how far ahead the
/// deadline lay when it was set).
#[derive(Debug)]
pub(crate) struct DeadlinePassed(pub(crate) Duration);

impl std::fmt::Display for DeadlinePassed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "deadline passed (it was set {:?} ahead)", self.0)
    }
}

impl std::error::Error for DeadlinePassed {}

/// `set_*_timeout` rejects a zero duration; treat it as the smallest positive one.
pub(crate) fn nonzero(t: Option<Duration>) -> Option<Duration> {
    t.map(|d| d.max(Duration::from_micros(1)))
}

/// Whether an I/O error is a socket timeout.
pub(crate) fn is_timeout_kind(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// The reading end of a socket: each read waits at most the idle timeout and at most until
/// the deadline (the socket's read timeout is set to the shorter before each read that needs
/// a different one), and a read after the deadline fails at once. A read cut off by the
/// deadline fails with an I/O error that [`Error::from_io`] maps to
/// [`Error::DeadlineExceeded`]; one cut off by the idle timeout with the socket's own timeout
/// error.
#[derive(Debug)]
pub(crate) struct TimedSock {
    sock: TcpStream,
    idle: Option<Duration>,
    deadline: Deadline,
    /// The read timeout the socket has now.
    applied: Option<Duration>,
}

impl TimedSock {
    /// Reads from `sock` with the idle timeout `idle` (set on the socket now).
    pub(crate) fn new(sock: TcpStream, idle: Option<Duration>) -> io::Result<Self> {
        let applied = nonzero(idle);
        sock.set_read_timeout(applied)?;
        Ok(TimedSock {
            sock,
            idle,
            deadline: Deadline::default(),
            applied,
        })
    }

    /// Changes the idle timeout (applied to the socket now).
    pub(crate) fn set_idle(&mut self, idle: Option<Duration>) -> io::Result<()> {
        self.idle = idle;
        self.apply(nonzero(idle))
    }

    /// Changes the deadline (applied from the next read on).
    pub(crate) fn set_deadline(&mut self, deadline: Deadline) {
        self.deadline = deadline;
    }

    fn apply(&mut self, t: Option<Duration>) -> io::Result<()> {
        if t != self.applied {
            self.sock.set_read_timeout(t)?;
            self.applied = t;
        }
        Ok(())
    }
}

impl Read for TimedSock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let wait = match self.deadline.remaining() {
                None => self.idle,
                Some(left) if left.is_zero() => return Err(self.deadline.io_error()),
                Some(left) => Some(self.idle.map_or(left, |t| t.min(left))),
            };
            self.apply(nonzero(wait))?;
            match (&self.sock).read(buf) {
                Err(e) if is_timeout_kind(&e) && self.deadline.at().is_some() => {
                    if self.deadline.passed() {
                        return Err(self.deadline.io_error());
                    }
                    // Cut short by the deadline's bound, which has not quite passed: wait on.
                    if wait != self.idle {
                        continue;
                    }
                    return Err(e);
                }
                r => return r,
            }
        }
    }
}
