//! A framed channel over TCP.
//!
//! Wire format: each frame is an 8-byte little-endian length `L` followed by `L` payload bytes.
//! The receiver checks `L` against its limit *before* allocating anything, so a hostile length
//! (say 2^40) yields [`Error::FrameTooLarge`] instead of an allocation failure.
//!
//! The file is longer than most because it is one transport: the channel, its two halves,
//! the read-ahead thread that feeds the receiving half, and connect/accept share the private
//! reader, socket and frame types defined here, and the timeout, deadline and frame-limit
//! rules have to be read together across them. Its tests are the crate's integration tests
//! (`tests/it/tcp_hostile.rs`, `tests/it/deadlines.rs`, `tests/it/roundtrip.rs` and others).

use std::collections::VecDeque;
use std::fmt::Display;
use std::io::{self, BufReader, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::channel::{
    Channel, DEFAULT_MAX_FRAME_LEN, FrameReceiver, FrameSender, Interrupter, QUEUED_FRAME_OVERHEAD,
    RecvBuf, Split, Stats, StatsRecorder, VecBuf,
};
use crate::deadline::{Deadline, TimedSock, is_timeout_kind, nonzero};
use crate::error::{Error, Result, len64};
use crate::tls::{self, TlsConfig, TlsLink, TlsReader, TlsStats, TlsWriter};

/// Size of the length prefix of a frame.
const HEADER: usize = 8;

/// Default cap of the read-ahead queue: 64 MiB.
pub const DEFAULT_READ_AHEAD: usize = 64 << 20;

/// Settings of an established TCP channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpOptions {
    /// Longest time a receive waits with no byte arriving (`None`: forever). Default 60 s.
    ///
    /// This is an *idle* timeout, applied to each read: a frame that keeps arriving, however
    /// slowly, is not cut off; a peer that goes silent is detected within this time. To bound
    /// a receive in total, set a deadline ([`Channel::set_deadline`]).
    pub read_timeout: Option<Duration>,
    /// Longest time a write may block because the peer does not read (`None`: forever).
    /// Default 60 s.
    pub write_timeout: Option<Duration>,
    /// Largest frame [`Channel::recv`] accepts. Default [`DEFAULT_MAX_FRAME_LEN`] (1 GiB).
    pub max_frame_len: usize,
    /// Disable Nagle's algorithm (`TCP_NODELAY`). Default `true`: frames are batched by our own
    /// write buffer instead, and flushed before every receive.
    pub nodelay: bool,
    /// Capacity of the write buffer; frames that do not fit go out directly. Default 64 KiB.
    pub write_buffer: usize,
    /// Capacity of the read buffer; larger reads bypass it. Default 64 KiB.
    pub read_buffer: usize,
    /// Read ahead on a background thread, queueing up to this many bytes of received frames
    /// (plus one frame; each frame counted as its length plus
    /// [`QUEUED_FRAME_OVERHEAD`](crate::QUEUED_FRAME_OVERHEAD)) before it stops reading.
    /// Default `Some(64 MiB)`; `None` reads in the caller's thread, into the caller's buffer
    /// (see [`TcpChannel`] for frames over 1 MiB).
    ///
    /// Reading ahead means both parties may send large messages at the same time (as
    /// ECDH-PSI does) without the two writes blocking each other on full kernel buffers, and
    /// that receiving overlaps the caller's computation; it costs a thread and one copy for
    /// the receives into a caller's buffer. See [`TcpChannel`] for the differences in error
    /// behaviour.
    pub read_ahead: Option<usize>,
}

impl Default for TcpOptions {
    fn default() -> Self {
        TcpOptions {
            read_timeout: Some(Duration::from_secs(60)),
            write_timeout: Some(Duration::from_secs(60)),
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            nodelay: true,
            write_buffer: 64 << 10,
            read_buffer: 64 << 10,
            read_ahead: Some(DEFAULT_READ_AHEAD),
        }
    }
}

/// How to connect: keep trying until `deadline` has passed, `retry_interval` apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Total time to keep trying (the peer may not be listening yet). Default 30 s.
    pub deadline: Duration,
    /// Pause between failed attempts. Default 50 ms.
    pub retry_interval: Duration,
    /// Timeout of one connection attempt. Default 5 s.
    pub attempt_timeout: Duration,
    /// Settings of the established channel.
    pub tcp: TcpOptions,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            deadline: Duration::from_secs(30),
            retry_interval: Duration::from_millis(50),
            attempt_timeout: Duration::from_secs(5),
            tcp: TcpOptions::default(),
        }
    }
}

/// A [`Channel`] over a TCP stream: length-prefixed frames, buffered writes, timeouts.
///
/// Writes collect in a buffer of [`TcpOptions::write_buffer`] bytes and go out when it fills,
/// on [`Channel::flush`], before every receive, and (best effort) on drop; a large frame is
/// written with one vectored write together with what is buffered.
///
/// Reads happen in one of two modes ([`TcpOptions::read_ahead`]):
///
/// - **read-ahead** (default): a background thread reads whole frames (up to
///   [`TcpOptions::max_frame_len`] each) into a queue capped at the configured size. A frame
///   over the per-call limit is consumed and rejected with [`Error::FrameTooLarge`] and the
///   channel stays usable; a frame over the channel's limit ends the reader
///   ([`Error::FrameTooLarge`], then [`Error::Broken`]). A receive times out when no byte
///   arrives for [`TcpOptions::read_timeout`]; the channel stays usable after a timeout.
/// - **direct**: the caller's thread reads into the caller's buffer; for a frame over 1 MiB
///   the buffer is asked for only once the first half of the frame has arrived (staged in a
///   buffer that grows with the bytes, doubling from 1 MiB), so an announced length costs at
///   most about twice what the peer really sent, never the length itself. Any error in the
///   middle of a frame, and any length error, leaves the stream out of step, so the channel
///   answers [`Error::Broken`] from then on; a timeout before the first byte of a frame does
///   not.
///
/// In both modes the channel's `max_frame_len` caps every receive; a per-call limit can only
/// tighten it. Dropping the channel flushes and shuts the connection down. [`Split::split`]
/// divides it into a [`TcpSender`] and a [`TcpReceiver`] for use from two threads.
///
/// **Deadlines** ([`Channel::set_deadline`]) bound receives in total, on top of the idle
/// timeout: a receive fails with [`Error::DeadlineExceeded`] when the deadline passes, however
/// slowly bytes keep arriving, and so does every receive started after it. With read-ahead the
/// wait for the queue is bounded by the deadline and the channel stays usable (the reader
/// thread keeps the partial frame; a later receive, after the deadline is moved or removed,
/// gets it whole). With direct reads each socket read waits at most for what is left of the
/// deadline; a deadline that strikes in the middle of a frame breaks the channel (like any
/// mid-frame error), one that strikes between frames leaves it usable. Sends too: a socket
/// write that has to wait for the peer past the deadline fails with
/// [`Error::DeadlineExceeded`] and breaks the channel, as a write timeout does (writes that
/// the kernel takes at once still succeed; the best-effort flush on drop ignores the
/// deadline). With TLS the same holds for each socket read and write under the records.
#[derive(Debug)]
pub struct TcpChannel {
    tx: TcpSender,
    rx: TcpReceiver,
    opts: TcpOptions,
    stats: StatsRecorder,
    /// The TLS connection under the frames, if any (see [`crate::tls`]).
    tls: Option<Arc<TlsLink>>,
}

/// The sending half of a [`TcpChannel`] (see [`Split`]). Dropping it flushes and shuts the
/// connection down for writing, so the peer sees the end of the stream.
#[derive(Debug)]
pub struct TcpSender {
    stream: TcpStream,
    /// Frames go through TLS records when set.
    tls: Option<TlsWriter>,
    wbuf: Vec<u8>,
    capacity: usize,
    write_timeout: Option<Duration>,
    deadline: Deadline,
    /// The write timeout the socket has now.
    applied_write: Option<Duration>,
    broken: bool,
}

/// The receiving half of a [`TcpChannel`] (see [`Split`]).
#[derive(Debug)]
pub struct TcpReceiver {
    /// A handle on the socket for shutting reads down on drop.
    stream: TcpStream,
    reader: Reader,
    read_timeout: Option<Duration>,
    deadline: Deadline,
    max_frame_len: usize,
    broken: bool,
}

impl TcpSender {
    fn check(&self) -> Result<()> {
        if self.broken {
            Err(Error::Broken)
        } else {
            Ok(())
        }
    }

    /// Sets the deadline for writes that wait for the peer (see [`TcpChannel`]; `None`
    /// removes it). A sender split from a channel starts with the channel's deadline.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = Deadline::new(deadline);
    }

    /// Writes all of `parts`, marking the sender broken on failure. Each socket write waits at
    /// most the write timeout and what is left of the deadline.
    fn write_parts(&mut self, parts: &mut [IoSlice<'_>]) -> Result<()> {
        let mut parts = parts;
        while !parts.is_empty() {
            let wait = nonzero(self.deadline.bound(self.write_timeout));
            if wait != self.applied_write {
                if let Err(e) = self.stream.set_write_timeout(wait) {
                    self.broken = true;
                    return Err(Error::Io {
                        op: "set_write_timeout",
                        source: e,
                    });
                }
                self.applied_write = wait;
            }
            let r = match &mut self.tls {
                Some(t) => t.write_vectored(parts),
                None => (&self.stream).write_vectored(parts),
            };
            match r {
                Ok(0) => {
                    self.broken = true;
                    return Err(Error::PeerDisconnected);
                }
                Ok(n) => IoSlice::advance_slices(&mut parts, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The wait was the deadline's (a TLS write may have written part of a record,
                // so it is not retried even if the clock has not quite reached the deadline).
                Err(e)
                    if is_timeout_kind(&e)
                        && (self.deadline.passed() || wait != nonzero(self.write_timeout)) =>
                {
                    self.broken = true;
                    return Err(self.deadline.error());
                }
                Err(e) => {
                    self.broken = true;
                    return Err(Error::from_io("write", e, self.write_timeout));
                }
            }
        }
        Ok(())
    }
}

impl FrameSender for TcpSender {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        self.check()?;
        let header = len64(msg.len()).to_le_bytes();
        if self.wbuf.len() + HEADER + msg.len() <= self.capacity {
            self.wbuf.extend_from_slice(&header);
            self.wbuf.extend_from_slice(msg);
            return Ok(());
        }
        let wbuf = std::mem::take(&mut self.wbuf);
        let r = self.write_parts(&mut [
            IoSlice::new(&wbuf),
            IoSlice::new(&header),
            IoSlice::new(msg),
        ]);
        self.wbuf = wbuf;
        self.wbuf.clear();
        r
    }

    fn flush(&mut self) -> Result<()> {
        self.check()?;
        if self.wbuf.is_empty() {
            return Ok(());
        }
        let wbuf = std::mem::take(&mut self.wbuf);
        let r = self.write_parts(&mut [IoSlice::new(&wbuf)]);
        self.wbuf = wbuf;
        self.wbuf.clear();
        r
    }
}

impl Drop for TcpSender {
    fn drop(&mut self) {
        // The last frames go out even after a deadline (bounded by the write timeout).
        self.deadline = Deadline::default();
        if !self.broken && !self.wbuf.is_empty() {
            // Best effort: errors on drop have nowhere to go.
            let _ = self.flush();
        }
        if !self.broken
            && let Some(t) = &mut self.tls
        {
            t.close_notify();
        }
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

impl TcpReceiver {
    fn check(&self) -> Result<()> {
        if self.broken {
            Err(Error::Broken)
        } else {
            Ok(())
        }
    }

    /// Direct mode: reads the next frame into `buf`; returns its length.
    fn recv_direct(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<usize> {
        let timeout = self.read_timeout;
        let Reader::Direct(r) = &mut self.reader else {
            return Err(Error::Broken);
        };
        let mut h = [0u8; HEADER];
        if let Err((got, e)) = read_full(r, &mut h, None) {
            let err = piece_error(got, len64(HEADER), e, timeout);
            // Nothing of this frame consumed: a timeout or deadline leaves the channel usable.
            if !(got == 0 && (err.is_timeout() || err.is_deadline_exceeded())) {
                self.broken = true;
            }
            return Err(err);
        }
        // From here on, any failure leaves the stream out of step.
        self.broken = true;
        let len = u64::from_le_bytes(h);
        let too_large = Error::FrameTooLarge {
            len,
            max: len64(max_len),
        };
        if len > len64(max_len) {
            return Err(too_large);
        }
        let n = usize::try_from(len).map_err(|_| too_large)?;
        // A large frame's first half lands in a staging buffer that grows as its bytes arrive
        // (doubling from `GROW_FIRST`, as the read-ahead thread does); the caller's buffer is
        // prepared only once that half is in, so an announced length costs at most twice
        // what the peer really sent (plus `GROW_FIRST`), never the announced length up front.
        let staged = if n > GROW_FIRST { n / 2 } else { 0 };
        let mut stage = Vec::new();
        while stage.len() < staged {
            let got = stage.len();
            let step = (staged - got).min(got.max(GROW_FIRST));
            stage.resize(got + step, 0);
            read_full(r, &mut stage[got..], None)
                .map_err(|(k, e)| piece_error(got + k, len, e, timeout))?;
        }
        let dst = buf.prepare(n)?;
        if dst.len() != n {
            return Err(Error::UnexpectedLength {
                expected: len64(dst.len()),
                got: len,
            });
        }
        dst[..staged].copy_from_slice(&stage);
        drop(stage);
        read_full(r, &mut dst[staged..], None)
            .map_err(|(got, e)| piece_error(staged + got, len, e, timeout))?;
        self.broken = false;
        Ok(n)
    }

    /// Read-ahead mode: takes the next whole frame from the queue, waiting at most the idle
    /// timeout (while no byte arrives) and until the deadline.
    fn next_ahead(&mut self) -> Result<Frame> {
        let timeout = self.read_timeout;
        let deadline = self.deadline;
        let Reader::Ahead(ra) = &mut self.reader else {
            return Err(Error::Broken);
        };
        if let Some(f) = ra.pending.pop_front() {
            ra.release(charge(f.len));
            return Ok(f);
        }
        let mut seen = ra.shared.progress.load(Ordering::Relaxed);
        loop {
            let wait = deadline.bound(timeout);
            let r = match wait {
                Some(t) => ra.rx.recv_timeout(t),
                None => ra.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match r {
                Ok(Ok(batch)) => {
                    ra.pending.extend(batch);
                    if let Some(f) = ra.pending.pop_front() {
                        ra.release(charge(f.len));
                        return Ok(f);
                    }
                }
                Ok(Err(e)) => {
                    if !matches!(e, Error::PeerDisconnected) {
                        self.broken = true;
                    }
                    return Err(e);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if deadline.passed() {
                        return Err(deadline.error());
                    }
                    let now = ra.shared.progress.load(Ordering::Relaxed);
                    if now != seen {
                        // Bytes are arriving, only slowly: an idle timeout does not apply.
                        seen = now;
                        continue;
                    }
                    if wait != timeout {
                        // Cut short by the deadline, which has not quite passed: wait on.
                        continue;
                    }
                    return Err(Error::Timeout {
                        after: timeout.unwrap_or_default(),
                    });
                }
                // The reader ended after reporting a clean end of stream.
                Err(RecvTimeoutError::Disconnected) => return Err(Error::PeerDisconnected),
            }
        }
    }

    /// Receives one frame into `buf`; returns its length.
    fn recv_frame_len(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<usize> {
        self.check()?;
        self.deadline.check()?;
        let max_len = max_len.min(self.max_frame_len);
        if let Reader::Direct(_) = self.reader {
            return self.recv_direct(max_len, buf);
        }
        let f = self.next_ahead()?;
        let r = copy_frame(f.bytes(), max_len, buf);
        self.recycle(f);
        r
    }

    /// Read-ahead mode: hands a frame's buffer back to the reader thread for reuse.
    fn recycle(&self, f: Frame) {
        if let Reader::Ahead(ra) = &self.reader
            && f.buf.len() <= RECYCLE_MAX
        {
            // A full pool just drops the buffer.
            let _ = ra.pool.try_send(f.buf);
        }
    }
}

impl FrameReceiver for TcpReceiver {
    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        self.recv_frame_len(max_len, buf).map(|_| ())
    }

    fn recv_max(&mut self, max_len: usize) -> Result<Vec<u8>> {
        if let Reader::Direct(_) = self.reader {
            let mut b = VecBuf::default();
            self.recv_frame_len(max_len, &mut b)?;
            return Ok(b.0);
        }
        self.check()?;
        self.deadline.check()?;
        let f = self.next_ahead()?;
        let r = check_len(f.len, max_len.min(self.max_frame_len)).map(|()| f.bytes().to_vec());
        self.recycle(f);
        r
    }

    fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = Deadline::new(deadline);
        if let Reader::Direct(r) = &mut self.reader {
            r.get_mut().timed().set_deadline(self.deadline);
        }
    }

    /// Shuts the socket down for reading: a blocked read (the caller's, or the read-ahead
    /// thread's) sees the end of the stream, and receives fail with
    /// [`Error::PeerDisconnected`] (or [`Error::Truncated`] in the middle of a frame).
    fn interrupter(&self) -> Option<Interrupter> {
        let s = self.stream.try_clone().ok()?;
        Some(Interrupter::new(move || {
            let _ = s.shutdown(Shutdown::Read);
        }))
    }
}

impl Drop for TcpReceiver {
    fn drop(&mut self) {
        if let Reader::Ahead(ra) = &self.reader {
            ra.shared.lock().1 = true;
            ra.shared.cv.notify_all();
        }
        // Wakes the reader thread, which holds a clone of the socket.
        let _ = self.stream.shutdown(Shutdown::Read);
    }
}

#[derive(Debug)]
enum Reader {
    Direct(BufReader<Wire>),
    Ahead(ReadAhead),
}

/// The byte stream under the frames: the socket itself, or the plaintext of a TLS connection.
#[derive(Debug)]
enum Wire {
    Plain(TimedSock),
    Tls(TlsReader),
}

impl Wire {
    /// The socket, whose reads honour the idle timeout and the deadline.
    fn timed(&mut self) -> &mut TimedSock {
        match self {
            Wire::Plain(s) => s,
            Wire::Tls(t) => t.sock_mut(),
        }
    }
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(s) => s.read(buf),
            Wire::Tls(t) => t.read(buf),
        }
    }
}

/// The consumer side of a read-ahead thread.
#[derive(Debug)]
struct ReadAhead {
    rx: Receiver<Result<Batch>>,
    /// Frames of the last batch not yet taken.
    pending: VecDeque<Frame>,
    /// Emptied buffers going back to the reader thread.
    pool: Sender<Vec<u8>>,
    shared: Arc<Shared>,
}

/// A received frame: its bytes are `buf[..len]`. The buffer may be longer (a recycled one),
/// and is initialised throughout.
#[derive(Debug)]
struct Frame {
    buf: Vec<u8>,
    len: usize,
}

impl Frame {
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Copies a received frame into the buffer `buf` provides, after the length check.
fn copy_frame(bytes: &[u8], max_len: usize, buf: &mut dyn RecvBuf) -> Result<usize> {
    check_len(bytes.len(), max_len)?;
    let dst = buf.prepare(bytes.len())?;
    if dst.len() != bytes.len() {
        return Err(Error::UnexpectedLength {
            expected: len64(dst.len()),
            got: len64(bytes.len()),
        });
    }
    dst.copy_from_slice(bytes);
    Ok(bytes.len())
}

/// Buffers up to this size are recycled between the reader thread and the consumer, so that
/// large frames do not cost fresh pages (page faults, zeroing) each time.
const RECYCLE_MAX: usize = 8 << 20;

/// How many emptied buffers wait for reuse at most.
const POOL_SIZE: usize = 8;

/// State shared with the read-ahead thread.
#[derive(Debug, Default)]
struct Shared {
    /// Bytes queued and not yet taken, and whether the consumer is gone.
    queue: Mutex<(usize, bool)>,
    /// Signalled when the queue shrinks or the consumer leaves.
    cv: Condvar,
    /// Bytes read from the socket so far (for the idle timeout).
    progress: AtomicU64,
    /// The channel's frame limit, which the reader applies before allocating.
    max_frame: AtomicUsize,
}

/// What a queued frame of `len` bytes counts against the read-ahead budget.
fn charge(len: usize) -> usize {
    len.saturating_add(QUEUED_FRAME_OVERHEAD)
}

impl ReadAhead {
    /// Returns `n` bytes to the queue budget and wakes the reader if it waits for room.
    fn release(&self, n: usize) {
        let mut q = self.shared.lock();
        q.0 = q.0.saturating_sub(n);
        drop(q);
        self.shared.cv.notify_one();
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, bool)> {
        // A panic while holding this lock cannot corrupt a pair of integers.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Reads exactly `buf.len()` bytes. `Err((got, e))` on failure.
fn read_full(
    r: &mut impl Read,
    buf: &mut [u8],
    progress: Option<&AtomicU64>,
) -> std::result::Result<(), (usize, io::Error)> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => return Err((got, io::ErrorKind::UnexpectedEof.into())),
            Ok(k) => {
                got += k;
                if let Some(p) = progress {
                    p.fetch_add(len64(k), Ordering::Relaxed);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((got, e)),
        }
    }
    Ok(())
}

/// The error for a failed read of a `want`-byte piece of which `got` bytes arrived.
fn piece_error(got: usize, want: u64, e: io::Error, timeout: Option<Duration>) -> Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        if got == 0 && want == len64(HEADER) {
            Error::PeerDisconnected
        } else {
            Error::Truncated {
                expected: want,
                got: len64(got),
            }
        }
    } else {
        Error::from_io("read", e, timeout)
    }
}

/// Body of the read-ahead thread: reads frames until an error or until the consumer leaves.
fn read_ahead_loop(
    mut r: BufReader<Wire>,
    tx: &Sender<Result<Batch>>,
    pool: &Receiver<Vec<u8>>,
    shared: &Shared,
    cap: usize,
) -> Result<()> {
    loop {
        {
            let mut q = shared.lock();
            while q.0 > cap && !q.1 {
                q = shared.cv.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
            if q.1 {
                return Ok(());
            }
        }
        // One frame, waiting for it; then every further frame that already sits whole in the
        // read buffer, so that a burst of small frames costs one hand-over, not one each.
        let first = read_frame(&mut r, pool, shared)?;
        let mut bytes = charge(first.len);
        let mut batch = vec![first];
        let mut failed = None;
        while bytes < BATCH_BYTES && next_frame_buffered(&r) {
            match read_frame(&mut r, pool, shared) {
                Ok(f) => {
                    bytes = bytes.saturating_add(charge(f.len));
                    batch.push(f);
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        shared.lock().0 += bytes;
        if tx.send(Ok(batch)).is_err() {
            return Ok(());
        }
        if let Some(e) = failed {
            return Err(e);
        }
    }
}

/// Frames handed from the read-ahead thread to the consumer in one go.
type Batch = Vec<Frame>;

/// A batch stops growing at this many bytes.
const BATCH_BYTES: usize = 1 << 20;

/// Whether the read buffer already holds the next frame whole (so reading it cannot block).
fn next_frame_buffered(r: &BufReader<Wire>) -> bool {
    let b = r.buffer();
    match b.first_chunk::<HEADER>() {
        Some(h) => u64::from_le_bytes(*h) <= len64(b.len() - HEADER),
        None => false,
    }
}

/// Reads one frame, checking its length against the channel's limit before allocating.
fn read_frame(r: &mut BufReader<Wire>, pool: &Receiver<Vec<u8>>, shared: &Shared) -> Result<Frame> {
    let mut h = [0u8; HEADER];
    read_full(r, &mut h, Some(&shared.progress))
        .map_err(|(got, e)| piece_error(got, len64(HEADER), e, None))?;
    // Read after the header arrived: a limit lowered while this thread waited for it applies.
    let max_frame = shared.max_frame.load(Ordering::Relaxed);
    let len = u64::from_le_bytes(h);
    let too_large = Error::FrameTooLarge {
        len,
        max: len64(max_frame),
    };
    if len > len64(max_frame) {
        return Err(too_large);
    }
    let n = usize::try_from(len).map_err(|_| too_large)?;
    // A recycled buffer if one is large enough. Otherwise the buffer grows with the bytes that
    // actually arrive (doubling from `GROW_FIRST`), so that an announced length costs nothing
    // before its bytes come: at most twice what the peer really sent, plus `GROW_FIRST`.
    let mut buf = match pool.try_recv() {
        Ok(b) if b.len() >= n => b,
        _ => Vec::new(),
    };
    if buf.len() >= n {
        read_full(r, &mut buf[..n], Some(&shared.progress))
            .map_err(|(got, e)| piece_error(got, len, e, None))?;
        return Ok(Frame { buf, len: n });
    }
    let mut got = 0;
    while got < n {
        let step = (n - got).min(got.max(GROW_FIRST));
        buf.resize(got + step, 0);
        read_full(r, &mut buf[got..], Some(&shared.progress))
            .map_err(|(k, e)| piece_error(got + k, len, e, None))?;
        got += step;
    }
    Ok(Frame { buf, len: n })
}

/// The read-ahead thread's first allocation for a frame that no recycled buffer holds; larger
/// frames get a buffer that doubles as their bytes arrive.
const GROW_FIRST: usize = 1 << 20;

impl TcpChannel {
    /// Wraps a connected stream, applying `opts` (nodelay, timeouts, read mode).
    pub fn from_stream(stream: TcpStream, opts: TcpOptions) -> Result<Self> {
        Self::from_parts(stream, None, opts)
    }

    /// Runs the client side of a TLS 1.3 handshake on a connected stream (both ends present a
    /// certificate; the peer's must name `host`), then wraps it as [`TcpChannel::from_stream`]
    /// does. The handshake must end within `handshake_timeout`.
    ///
    /// # Errors
    /// [`Error::CertificateRefused`], [`Error::RefusedByPeer`], [`Error::Tls`] or
    /// [`Error::Timeout`] if the handshake fails.
    pub fn tls_client_from_stream(
        stream: TcpStream,
        host: &str,
        tls: &TlsConfig,
        handshake_timeout: Duration,
        opts: TcpOptions,
    ) -> Result<Self> {
        let link = tls::client_handshake(&stream, host, tls, Instant::now() + handshake_timeout)?;
        Self::from_parts(stream, Some(link), opts)
    }

    /// Runs the server side of a TLS 1.3 handshake on an accepted stream: the client must
    /// open with a TLS handshake ([`Error::PlaintextPeer`] if it speaks obliv's plaintext
    /// session hello instead) and present a certificate issued by a trusted CA. Which name
    /// that certificate must carry is for the caller to check
    /// ([`TcpChannel::verify_peer_name`]); [`crate::Session`] does.
    ///
    /// # Errors
    /// As [`TcpChannel::tls_client_from_stream`], and [`Error::PlaintextPeer`].
    pub fn tls_server_from_stream(
        stream: TcpStream,
        tls: &TlsConfig,
        handshake_timeout: Duration,
        opts: TcpOptions,
    ) -> Result<Self> {
        let link = tls::server_handshake(&stream, tls, Instant::now() + handshake_timeout)?;
        Self::from_parts(stream, Some(link), opts)
    }

    /// Connects to `addr` as [`TcpChannel::connect`] does, then runs the TLS client handshake
    /// (see [`TcpChannel::tls_client_from_stream`]) within what is left of the deadline.
    ///
    /// # Errors
    /// As [`TcpChannel::connect`] and [`TcpChannel::tls_client_from_stream`].
    pub fn connect_tls<A: ToSocketAddrs + Display>(
        addr: A,
        host: &str,
        tls: &TlsConfig,
        opts: &ConnectOptions,
    ) -> Result<Self> {
        let start = Instant::now();
        let stream = connect_stream(addr, opts)?;
        let left = opts
            .deadline
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(1));
        Self::tls_client_from_stream(stream, host, tls, left, opts.tcp.clone())
    }

    /// Accepts one connection as [`TcpChannel::accept`] does and runs the TLS server
    /// handshake on it (see [`TcpChannel::tls_server_from_stream`]), both within `timeout`.
    ///
    /// # Errors
    /// As [`TcpChannel::accept`] and [`TcpChannel::tls_server_from_stream`].
    pub fn accept_tls(
        listener: &TcpListener,
        timeout: Duration,
        tls: &TlsConfig,
        opts: TcpOptions,
    ) -> Result<Self> {
        let start = Instant::now();
        let (s, _) = accept_stream(listener, Some(timeout))?;
        let left = timeout
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(1));
        Self::tls_server_from_stream(s, tls, left, opts)
    }

    /// Whether the frames travel inside TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// What TLS added to the traffic (handshake included); `None` for a plaintext channel.
    pub fn tls_stats(&self) -> Option<TlsStats> {
        self.tls.as_ref().map(|l| l.stats())
    }

    /// A live view of [`TcpChannel::tls_stats`] that outlives moving or splitting the channel.
    pub fn tls_counters(&self) -> Option<crate::tls::TlsCounters> {
        self.tls
            .as_ref()
            .map(|l| crate::tls::TlsCounters(Arc::clone(l)))
    }

    /// The peer's certificate (DER), on a TLS channel.
    pub fn peer_certificate(&self) -> Option<rustls::pki_types::CertificateDer<'static>> {
        self.tls.as_ref().and_then(|l| l.peer_certificate())
    }

    /// Checks that the peer's certificate names `host` (a DNS name or IP address).
    ///
    /// # Errors
    /// [`Error::CertificateRefused`] if it does not, [`Error::PlaintextPeer`] on a plaintext
    /// channel.
    pub fn verify_peer_name(&self, host: &str) -> Result<()> {
        match &self.tls {
            Some(l) => l.verify_peer_name(host),
            None => Err(Error::PlaintextPeer {
                peer: self
                    .peer_addr()
                    .map_or_else(|_| host.to_string(), |a| a.to_string()),
            }),
        }
    }

    fn from_parts(stream: TcpStream, link: Option<Arc<TlsLink>>, opts: TcpOptions) -> Result<Self> {
        let io = |e| Error::Io {
            op: "configure socket",
            source: e,
        };
        stream.set_nodelay(opts.nodelay).map_err(io)?;
        let applied_write = nonzero(opts.write_timeout);
        stream.set_write_timeout(applied_write).map_err(io)?;
        let cap = opts.read_buffer.max(HEADER);
        // The read timeout is the idle timeout in direct mode; the read-ahead thread blocks in
        // read until data, EOF, or our shutdown on drop.
        let idle = match opts.read_ahead {
            None => opts.read_timeout,
            Some(_) => None,
        };
        let wire = |stream: &TcpStream| -> Result<Wire> {
            let s = TimedSock::new(stream.try_clone().map_err(io)?, idle).map_err(io)?;
            Ok(match &link {
                Some(l) => Wire::Tls(
                    TlsReader::new(Arc::clone(l), s)
                        .map_err(|e| Error::from_io("TLS read", e, opts.read_timeout))?,
                ),
                None => Wire::Plain(s),
            })
        };
        let reader = match opts.read_ahead {
            None => Reader::Direct(BufReader::with_capacity(cap, wire(&stream)?)),
            Some(limit) => {
                let r = BufReader::with_capacity(cap, wire(&stream)?);
                let (tx, rx) = crossbeam_channel::unbounded();
                let (pool_tx, pool_rx) = crossbeam_channel::bounded(POOL_SIZE);
                let shared = Arc::new(Shared {
                    max_frame: AtomicUsize::new(opts.max_frame_len),
                    ..Shared::default()
                });
                let sh = Arc::clone(&shared);
                thread::Builder::new()
                    .name("obliv-net-reader".into())
                    .spawn(move || {
                        if let Err(e) = read_ahead_loop(r, &tx, &pool_rx, &sh, limit) {
                            // The consumer may be gone already; then nobody needs to know.
                            let _ = tx.send(Err(e));
                        }
                    })
                    .map_err(|e| Error::Io {
                        op: "spawn reader thread",
                        source: e,
                    })?;
                Reader::Ahead(ReadAhead {
                    rx,
                    pending: VecDeque::new(),
                    pool: pool_tx,
                    shared,
                })
            }
        };
        let rx = TcpReceiver {
            stream: stream.try_clone().map_err(io)?,
            reader,
            read_timeout: opts.read_timeout,
            deadline: Deadline::default(),
            max_frame_len: opts.max_frame_len,
            broken: false,
        };
        let tls = match &link {
            Some(l) => Some(TlsWriter::new(
                Arc::clone(l),
                stream.try_clone().map_err(io)?,
            )),
            None => None,
        };
        let tx = TcpSender {
            stream,
            tls,
            wbuf: Vec::with_capacity(opts.write_buffer),
            capacity: opts.write_buffer,
            write_timeout: opts.write_timeout,
            deadline: Deadline::default(),
            applied_write,
            broken: false,
        };
        Ok(TcpChannel {
            tx,
            rx,
            opts,
            stats: StatsRecorder::default(),
            tls: link,
        })
    }

    /// Connects to `addr`, retrying every [`ConnectOptions::retry_interval`] until
    /// [`ConnectOptions::deadline`]; fails with [`Error::ConnectFailed`].
    pub fn connect<A: ToSocketAddrs + Display>(addr: A, opts: &ConnectOptions) -> Result<Self> {
        Self::from_stream(connect_stream(addr, opts)?, opts.tcp.clone())
    }

    /// Binds a listener on `addr` (`"127.0.0.1:0"` for an ephemeral loopback port), for
    /// [`TcpChannel::accept`].
    pub fn listen<A: ToSocketAddrs>(addr: A) -> Result<TcpListener> {
        TcpListener::bind(addr).map_err(|e| Error::Io {
            op: "bind",
            source: e,
        })
    }

    /// Accepts one connection on `listener`, waiting at most `timeout` (`None`: forever).
    pub fn accept(
        listener: &TcpListener,
        timeout: Option<Duration>,
        opts: TcpOptions,
    ) -> Result<Self> {
        let (s, _) = accept_stream(listener, timeout)?;
        Self::from_stream(s, opts)
    }

    /// A connected pair over loopback (`127.0.0.1`, ephemeral port), for tests and benches.
    pub fn loopback_pair(opts: TcpOptions) -> Result<(Self, Self)> {
        let listener = Self::listen("127.0.0.1:0")?;
        let addr = local_addr(&listener)?;
        let copts = ConnectOptions {
            tcp: opts.clone(),
            ..ConnectOptions::default()
        };
        let a = Self::connect(addr, &copts)?;
        let b = Self::accept(&listener, Some(copts.deadline), opts)?;
        Ok((a, b))
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr> {
        self.tx.stream.peer_addr().map_err(|e| Error::Io {
            op: "peer_addr",
            source: e,
        })
    }

    /// Changes the idle read timeout.
    pub fn set_read_timeout(&mut self, t: Option<Duration>) -> Result<()> {
        if let Reader::Direct(r) = &mut self.rx.reader {
            r.get_mut().timed().set_idle(t).map_err(|e| Error::Io {
                op: "set_read_timeout",
                source: e,
            })?;
        }
        self.rx.read_timeout = t;
        self.opts.read_timeout = t;
        Ok(())
    }

    /// Sets the largest frame this channel accepts (from the next frame header on).
    pub fn set_max_frame_len(&mut self, max: usize) {
        self.opts.max_frame_len = max;
        self.rx.max_frame_len = max;
        if let Reader::Ahead(ra) = &self.rx.reader {
            ra.shared.max_frame.store(max, Ordering::Relaxed);
        }
    }

    /// The options in force.
    pub fn options(&self) -> &TcpOptions {
        &self.opts
    }

    /// Flushes, then shuts the connection down in both directions.
    pub fn close(mut self) -> Result<()> {
        self.flush()?;
        self.tx
            .stream
            .shutdown(Shutdown::Both)
            .map_err(|e| Error::from_io("shutdown", e, None))
    }

    /// Zeroes the counters (after a session handshake, which is not protocol traffic).
    pub(crate) fn reset_stats(&mut self) {
        self.stats = StatsRecorder::default();
    }

    fn check(&self) -> Result<()> {
        if self.tx.broken || self.rx.broken {
            Err(Error::Broken)
        } else {
            Ok(())
        }
    }
}

/// Connects to `addr`, retrying every [`ConnectOptions::retry_interval`] until
/// [`ConnectOptions::deadline`].
fn connect_stream<A: ToSocketAddrs + Display>(addr: A, opts: &ConnectOptions) -> Result<TcpStream> {
    let start = Instant::now();
    let end = start + opts.deadline;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let last = match addr.to_socket_addrs() {
            Ok(addrs) => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address resolved");
                for a in addrs {
                    let left = end.saturating_duration_since(Instant::now());
                    let t = opts.attempt_timeout.min(left).max(Duration::from_millis(1));
                    match TcpStream::connect_timeout(&a, t) {
                        Ok(s) => return Ok(s),
                        Err(e) => last = e,
                    }
                }
                last
            }
            Err(e) => e,
        };
        let now = Instant::now();
        if now + opts.retry_interval >= end {
            return Err(Error::ConnectFailed {
                addr: addr.to_string(),
                attempts,
                source: last,
            });
        }
        thread::sleep(opts.retry_interval);
    }
}

fn local_addr(l: &TcpListener) -> Result<SocketAddr> {
    l.local_addr().map_err(|e| Error::Io {
        op: "local_addr",
        source: e,
    })
}

/// Accepts one connection, polling a non-blocking listener until `timeout` passes.
pub(crate) fn accept_stream(
    listener: &TcpListener,
    timeout: Option<Duration>,
) -> Result<(TcpStream, SocketAddr)> {
    let io = |e| Error::Io {
        op: "accept",
        source: e,
    };
    let Some(t) = timeout else {
        listener.set_nonblocking(false).map_err(io)?;
        return listener.accept().map_err(io);
    };
    let end = Instant::now() + t;
    listener.set_nonblocking(true).map_err(io)?;
    let r = loop {
        match listener.accept() {
            Ok((s, a)) => break s.set_nonblocking(false).map(|()| (s, a)).map_err(io),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let now = Instant::now();
                if now >= end {
                    break Err(Error::Timeout { after: t });
                }
                thread::sleep((end - now).min(Duration::from_millis(1)));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(io(e)),
        }
    };
    // Best effort: a later blocking accept re-sets the mode anyway.
    let _ = listener.set_nonblocking(false);
    r
}

impl Channel for TcpChannel {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        self.check()?;
        self.tx.send(msg)?;
        self.stats.record_send(msg.len());
        Ok(())
    }

    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        self.check()?;
        self.rx.deadline.check()?;
        self.tx.flush()?;
        let r = self.rx.recv_frame_len(max_len, buf);
        match r {
            Ok(n) => {
                self.stats.record_recv(n);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn recv_max(&mut self, max_len: usize) -> Result<Vec<u8>> {
        self.check()?;
        self.rx.deadline.check()?;
        self.tx.flush()?;
        let v = self.rx.recv_max(max_len)?;
        self.stats.record_recv(v.len());
        Ok(v)
    }

    fn flush(&mut self) -> Result<()> {
        self.check()?;
        self.tx.flush()
    }

    fn stats(&self) -> Stats {
        self.stats.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.opts.max_frame_len
    }

    fn set_max_frame_len(&mut self, max: usize) {
        TcpChannel::set_max_frame_len(self, max);
    }

    /// Bounds receives and the writes that wait for the peer (see [`TcpChannel`]).
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.rx.set_deadline(deadline);
        self.tx.set_deadline(deadline);
    }
}

impl Split for TcpChannel {
    type Sender = TcpSender;
    type Receiver = TcpReceiver;

    fn split(self) -> (TcpSender, TcpReceiver) {
        (self.tx, self.rx)
    }
}

fn check_len(len: usize, max_len: usize) -> Result<()> {
    if len > max_len {
        return Err(Error::FrameTooLarge {
            len: len64(len),
            max: len64(max_len),
        });
    }
    Ok(())
}
