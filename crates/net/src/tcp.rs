//! A framed channel over TCP.
//!
//! Wire format: each frame is an 8-byte little-endian length `L` followed by `L` payload bytes.
//! The receiver checks `L` against its limit *before* allocating anything, so a hostile length
//! (say 2^40) yields [`Error::FrameTooLarge`] instead of an allocation failure.

use std::fmt::Display;
use std::io::{self, BufReader, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::thread;
use std::time::{Duration, Instant};

use crate::channel::{Channel, DEFAULT_MAX_FRAME_LEN, RecvBuf, Stats, StatsRecorder};
use crate::error::{Error, Result, len64};

/// Size of the length prefix of a frame.
const HEADER: usize = 8;

/// Settings of an established TCP channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpOptions {
    /// Longest time a receive waits with no byte arriving (`None`: forever). Default 60 s.
    ///
    /// This is an *idle* timeout, applied to each read: a frame that keeps arriving, however
    /// slowly, is not cut off; a peer that goes silent is detected within this time.
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
#[derive(Debug)]
pub struct TcpChannel {
    reader: BufReader<TcpStream>,
    wbuf: Vec<u8>,
    opts: TcpOptions,
    stats: StatsRecorder,
    broken: bool,
}

impl TcpChannel {
    /// Wraps a connected stream, applying `opts` (nodelay, timeouts).
    pub fn from_stream(stream: TcpStream, opts: TcpOptions) -> Result<Self> {
        let io = |e| Error::Io {
            op: "configure socket",
            source: e,
        };
        stream.set_nodelay(opts.nodelay).map_err(io)?;
        stream
            .set_read_timeout(nonzero(opts.read_timeout))
            .map_err(io)?;
        stream
            .set_write_timeout(nonzero(opts.write_timeout))
            .map_err(io)?;
        Ok(TcpChannel {
            reader: BufReader::with_capacity(opts.read_buffer.max(HEADER), stream),
            wbuf: Vec::with_capacity(opts.write_buffer),
            opts,
            stats: StatsRecorder::default(),
            broken: false,
        })
    }

    /// Connects to `addr`, retrying every [`ConnectOptions::retry_interval`] until
    /// [`ConnectOptions::deadline`]; fails with [`Error::ConnectFailed`].
    pub fn connect<A: ToSocketAddrs + Display>(addr: A, opts: &ConnectOptions) -> Result<Self> {
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
                            Ok(s) => return Self::from_stream(s, opts.tcp.clone()),
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
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| Error::Io {
            op: "bind",
            source: e,
        })?;
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
        self.stream().peer_addr().map_err(|e| Error::Io {
            op: "peer_addr",
            source: e,
        })
    }

    /// Changes the idle read timeout.
    pub fn set_read_timeout(&mut self, t: Option<Duration>) -> Result<()> {
        self.stream()
            .set_read_timeout(nonzero(t))
            .map_err(|e| Error::Io {
                op: "set_read_timeout",
                source: e,
            })?;
        self.opts.read_timeout = t;
        Ok(())
    }

    /// Sets the largest frame [`Channel::recv`] accepts.
    pub fn set_max_frame_len(&mut self, max: usize) {
        self.opts.max_frame_len = max;
    }

    /// Flushes, then shuts the connection down in both directions.
    pub fn close(mut self) -> Result<()> {
        self.flush()?;
        self.stream()
            .shutdown(Shutdown::Both)
            .map_err(|e| Error::from_io("shutdown", e, None))
    }

    /// Zeroes the counters (after a session handshake, which is not protocol traffic).
    pub(crate) fn reset_stats(&mut self) {
        self.stats = StatsRecorder::default();
    }

    fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    fn check(&self) -> Result<()> {
        if self.broken {
            Err(Error::Broken)
        } else {
            Ok(())
        }
    }

    /// Writes all of `parts`, marking the channel broken on failure.
    fn write_parts(&mut self, parts: &mut [IoSlice<'_>]) -> Result<()> {
        let mut parts = parts;
        let mut s = self.reader.get_ref();
        while !parts.is_empty() {
            match s.write_vectored(parts) {
                Ok(0) => {
                    self.broken = true;
                    return Err(Error::PeerDisconnected);
                }
                Ok(n) => IoSlice::advance_slices(&mut parts, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.broken = true;
                    return Err(Error::from_io("write", e, self.opts.write_timeout));
                }
            }
        }
        Ok(())
    }

    /// Reads exactly `buf.len()` bytes. `Err((got, e))` on failure.
    fn read_full(&mut self, buf: &mut [u8]) -> std::result::Result<(), (usize, io::Error)> {
        let mut got = 0;
        while got < buf.len() {
            match self.reader.read(&mut buf[got..]) {
                Ok(0) => return Err((got, io::ErrorKind::UnexpectedEof.into())),
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err((got, e)),
            }
        }
        Ok(())
    }

    /// Turns a failed read of a `want`-byte piece into an error; `at_boundary` says whether
    /// the piece is a frame header (so that failing before its first byte leaves the stream in
    /// step).
    fn read_error(&mut self, got: usize, want: usize, e: io::Error, at_boundary: bool) -> Error {
        if at_boundary && got == 0 {
            // Nothing of this frame was consumed: a timeout leaves the channel usable.
            let err = Error::from_io("read", e, self.opts.read_timeout);
            if !err.is_timeout() {
                self.broken = true;
            }
            return err;
        }
        self.broken = true;
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::Truncated {
                expected: len64(want),
                got: len64(got),
            }
        } else {
            Error::from_io("read", e, self.opts.read_timeout)
        }
    }
}

/// `set_*_timeout` rejects a zero duration; treat it as the smallest positive one.
fn nonzero(t: Option<Duration>) -> Option<Duration> {
    t.map(|d| d.max(Duration::from_micros(1)))
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
        let header = len64(msg.len()).to_le_bytes();
        if self.wbuf.len() + HEADER + msg.len() <= self.opts.write_buffer {
            self.wbuf.extend_from_slice(&header);
            self.wbuf.extend_from_slice(msg);
        } else {
            let wbuf = std::mem::take(&mut self.wbuf);
            let r = self.write_parts(&mut [
                IoSlice::new(&wbuf),
                IoSlice::new(&header),
                IoSlice::new(msg),
            ]);
            self.wbuf = wbuf;
            self.wbuf.clear();
            r?;
        }
        self.stats.record_send(msg.len());
        Ok(())
    }

    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        self.check()?;
        if !self.wbuf.is_empty() {
            self.flush()?;
        }
        let mut h = [0u8; HEADER];
        if let Err((got, e)) = self.read_full(&mut h) {
            return Err(self.read_error(got, HEADER, e, true));
        }
        let len = u64::from_le_bytes(h);
        if len > len64(max_len) {
            self.broken = true;
            return Err(Error::FrameTooLarge {
                len,
                max: len64(max_len),
            });
        }
        // Lossless: len <= max_len, a usize.
        let n = usize::try_from(len).map_err(|_| Error::FrameTooLarge {
            len,
            max: len64(max_len),
        })?;
        let dst = match buf.prepare(n) {
            Ok(d) if d.len() == n => d,
            Ok(d) => {
                let expected = len64(d.len());
                self.broken = true;
                return Err(Error::UnexpectedLength { expected, got: len });
            }
            Err(e) => {
                self.broken = true;
                return Err(e);
            }
        };
        let mut got = 0;
        while got < n {
            match self.reader.read(&mut dst[got..]) {
                Ok(0) => {
                    self.broken = true;
                    return Err(Error::Truncated {
                        expected: len,
                        got: len64(got),
                    });
                }
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.broken = true;
                    return Err(Error::from_io("read", e, self.opts.read_timeout));
                }
            }
        }
        self.stats.record_recv(n);
        Ok(())
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

    fn stats(&self) -> Stats {
        self.stats.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.opts.max_frame_len
    }
}

impl Drop for TcpChannel {
    fn drop(&mut self) {
        if !self.broken && !self.wbuf.is_empty() {
            // Best effort: errors on drop have nowhere to go.
            let _ = self.flush();
        }
    }
}
