//! Sub-channels: many independent channels over one connection, for nested or concurrent
//! sub-protocols.
//!
//! [`Mux::new`] splits a channel ([`Split`]) and starts a demultiplexing thread that reads
//! every incoming frame and queues it for its sub-channel. [`Mux::sub`] opens the sub-channel
//! with a given `u32` id; the peer opens the same id on its side. Each sub-channel is a full
//! [`Channel`] with its own counters, and may live on its own thread: a sub-protocol blocked in
//! a receive does not hold up the others.
//!
//! Wire format: each message of sub-channel `id` is two frames of the inner channel, the id
//! (4 bytes, little-endian) and then the payload, written together under one lock. Frames for
//! an id not opened yet wait in its queue. All queues together hold at most
//! [`MuxOptions::max_queued`] bytes (plus one frame); beyond that the demultiplexer stops
//! reading, which pushes back on the peer.
//!
//! Sends may stay buffered in the inner channel until some sub-channel flushes, receives or is
//! dropped (each of which flushes the shared connection). A frame that arrives for a sub-channel
//! that is never opened stays queued, counted against `max_queued`.
//!
//! ```
//! use obliv_net::{Channel, Mux, mem_pair};
//! let (a, b) = mem_pair();
//! let (ma, mb) = (Mux::new(a).unwrap(), Mux::new(b).unwrap());
//! let (mut a1, mut a2) = (ma.sub(1).unwrap(), ma.sub(2).unwrap());
//! let (mut b1, mut b2) = (mb.sub(1).unwrap(), mb.sub(2).unwrap());
//! a2.send(b"second").unwrap();
//! a1.send(b"first").unwrap();
//! assert_eq!(b1.recv().unwrap(), b"first");
//! assert_eq!(b2.recv().unwrap(), b"second");
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::channel::{
    Channel, ExactBuf, FrameReceiver, FrameSender, RecvBuf, Split, Stats, StatsRecorder, VecBuf,
};
use crate::error::{Error, Result, len64};

/// Settings of a [`Mux`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MuxOptions {
    /// How long a sub-channel's receive waits for a message. Default 60 s.
    pub recv_timeout: Duration,
    /// Bytes the demultiplexer queues (over all sub-channels) before it stops reading.
    /// Default 64 MiB.
    pub max_queued: usize,
}

impl Default for MuxOptions {
    fn default() -> Self {
        MuxOptions {
            recv_timeout: Duration::from_secs(60),
            max_queued: 64 << 20,
        }
    }
}

/// A factory of sub-channels over one connection (see the module documentation). Cloning it
/// is cheap and gives another handle on the same connection.
pub struct Mux<S> {
    shared: Arc<Shared<S>>,
}

impl<S> Clone for Mux<S> {
    fn clone(&self) -> Self {
        Mux {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S> fmt::Debug for Mux<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mux").finish_non_exhaustive()
    }
}

/// What the user-side handles share. Dropping the last handle drops the sender (which tells
/// the peer) and tells the demultiplexer to stop.
struct Shared<S> {
    sender: Mutex<SenderState<S>>,
    demux: Arc<DemuxState>,
    opts: MuxOptions,
    max_frame_len: usize,
}

impl<S> Drop for Shared<S> {
    fn drop(&mut self) {
        lock(&self.demux.routes).closed = true;
        self.demux.cv.notify_all();
    }
}

/// What the demultiplexer thread shares with the handles.
#[derive(Default)]
struct DemuxState {
    routes: Mutex<Routes>,
    /// Signalled when queued bytes shrink or the handles are gone.
    cv: Condvar,
}

struct SenderState<S> {
    tx: S,
    broken: bool,
}

#[derive(Default)]
struct Routes {
    /// Queue of each sub-channel id (created by whichever side needs it first).
    queues: HashMap<u32, Route>,
    /// Bytes queued and not yet taken.
    queued: usize,
    /// Why the demultiplexer stopped, once it has.
    ended: Option<Error>,
    /// Every user-side handle is gone.
    closed: bool,
}

impl Routes {
    /// The queue of `id`, created if needed.
    fn route(&mut self, id: u32) -> &mut Route {
        let live = self.ended.is_none();
        self.queues.entry(id).or_insert_with(|| {
            let (tx, rx) = crossbeam_channel::unbounded();
            Route {
                // After the end, new queues are born disconnected.
                tx: live.then_some(tx),
                rx,
                opened: false,
            }
        })
    }
}

struct Route {
    /// `None` once the demultiplexer has stopped, so receivers see the end.
    tx: Option<Sender<Vec<u8>>>,
    rx: Receiver<Vec<u8>>,
    opened: bool,
}

/// Locks a mutex whose data stays consistent even if a holder panicked (counters and queues
/// updated in single steps).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<S: FrameSender + 'static> Mux<S> {
    /// Starts multiplexing over `channel` with default options.
    pub fn new<C: Split<Sender = S>>(channel: C) -> Result<Self> {
        Self::with_options(channel, MuxOptions::default())
    }

    /// Starts multiplexing over `channel`.
    pub fn with_options<C: Split<Sender = S>>(channel: C, opts: MuxOptions) -> Result<Self> {
        let (tx, rx) = channel.split();
        let demux_state = Arc::new(DemuxState::default());
        let shared = Arc::new(Shared {
            sender: Mutex::new(SenderState { tx, broken: false }),
            demux: Arc::clone(&demux_state),
            max_frame_len: rx.max_frame_len(),
            opts: opts.clone(),
        });
        let max_frame_len = shared.max_frame_len;
        thread::Builder::new()
            .name("obliv-net-mux".into())
            .spawn(move || demux(rx, &demux_state, &opts, max_frame_len))
            .map_err(|e| Error::Io {
                op: "spawn demultiplexer thread",
                source: e,
            })?;
        Ok(Mux { shared })
    }

    /// Opens sub-channel `id`. Each id can be opened once on each side.
    pub fn sub(&self, id: u32) -> Result<SubChannel<S>> {
        let mut routes = lock(&self.shared.demux.routes);
        let route = routes.route(id);
        if route.opened {
            return Err(Error::SubChannelInUse { id });
        }
        route.opened = true;
        let rx = route.rx.clone();
        Ok(SubChannel {
            id,
            shared: Arc::clone(&self.shared),
            rx,
            stats: StatsRecorder::default(),
        })
    }
}

/// Body of the demultiplexer thread: routes frames until the connection ends or every handle
/// is gone.
fn demux<R: FrameReceiver>(mut rx: R, st: &DemuxState, opts: &MuxOptions, max_frame_len: usize) {
    let err = loop {
        let mut id = [0u8; 4];
        match recv_patiently(&mut rx, st, 4, &mut ExactBuf(&mut id)) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => break e,
        }
        let mut payload = VecBuf::default();
        match recv_patiently(&mut rx, st, max_frame_len, &mut payload) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => break e,
        }
        let v = payload.0;
        let mut routes = lock(&st.routes);
        routes.queued += v.len();
        if let Some(tx) = &routes.route(u32::from_le_bytes(id)).tx {
            // The route holds the receiving end too, so this cannot fail.
            let _ = tx.send(v);
        }
        while routes.queued > opts.max_queued && !routes.closed {
            routes = st.cv.wait(routes).unwrap_or_else(PoisonError::into_inner);
        }
        if routes.closed {
            return;
        }
    };
    let mut routes = lock(&st.routes);
    routes.ended = Some(err);
    for r in routes.queues.values_mut() {
        r.tx = None;
    }
}

/// Receives one frame, riding out idle timeouts of the inner receiver; `Ok(false)` if every
/// handle is gone meanwhile.
fn recv_patiently<R: FrameReceiver>(
    rx: &mut R,
    st: &DemuxState,
    max_len: usize,
    buf: &mut dyn RecvBuf,
) -> Result<bool> {
    loop {
        match rx.recv_frame(max_len, buf) {
            Err(e) if e.is_timeout() => {
                if lock(&st.routes).closed {
                    return Ok(false);
                }
            }
            Err(e) => return Err(e),
            Ok(()) => return Ok(true),
        }
    }
}

/// One sub-channel of a [`Mux`]: a [`Channel`] with its own queue and counters.
pub struct SubChannel<S: FrameSender> {
    id: u32,
    shared: Arc<Shared<S>>,
    rx: Receiver<Vec<u8>>,
    stats: StatsRecorder,
}

impl<S: FrameSender> fmt::Debug for SubChannel<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubChannel")
            .field("id", &self.id)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<S: FrameSender> SubChannel<S> {
    /// This sub-channel's id.
    pub fn id(&self) -> u32 {
        self.id
    }

    fn with_sender<T>(&self, f: impl FnOnce(&mut S) -> Result<T>) -> Result<T> {
        let mut st = lock(&self.shared.sender);
        if st.broken {
            return Err(Error::Broken);
        }
        let r = f(&mut st.tx);
        if r.is_err() {
            st.broken = true;
        }
        r
    }

    fn next(&mut self, max_len: usize) -> Result<Vec<u8>> {
        self.with_sender(|s| s.flush())?;
        let t = self.shared.opts.recv_timeout;
        match self.rx.recv_timeout(t) {
            Ok(v) => {
                {
                    let mut routes = lock(&self.shared.demux.routes);
                    routes.queued = routes.queued.saturating_sub(v.len());
                }
                self.shared.demux.cv.notify_all();
                self.stats.record_recv(v.len());
                let max = max_len.min(self.shared.max_frame_len);
                if v.len() > max {
                    return Err(Error::FrameTooLarge {
                        len: len64(v.len()),
                        max: len64(max),
                    });
                }
                Ok(v)
            }
            Err(RecvTimeoutError::Timeout) => Err(Error::Timeout { after: t }),
            // The demultiplexer stopped and this queue is drained: report why.
            Err(RecvTimeoutError::Disconnected) => Err(lock(&self.shared.demux.routes)
                .ended
                .as_ref()
                .map_or(Error::PeerDisconnected, Error::clone_lossy)),
        }
    }
}

impl<S: FrameSender> Channel for SubChannel<S> {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        let id = self.id.to_le_bytes();
        self.with_sender(|s| {
            s.send(&id)?;
            s.send(msg)
        })?;
        self.stats.record_send(msg.len());
        Ok(())
    }

    fn send_vec(&mut self, msg: Vec<u8>) -> Result<()> {
        let id = self.id.to_le_bytes();
        let len = msg.len();
        self.with_sender(|s| {
            s.send(&id)?;
            s.send_vec(msg)
        })?;
        self.stats.record_send(len);
        Ok(())
    }

    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        let v = self.next(max_len)?;
        let dst = buf.prepare(v.len())?;
        if dst.len() != v.len() {
            return Err(Error::UnexpectedLength {
                expected: len64(dst.len()),
                got: len64(v.len()),
            });
        }
        dst.copy_from_slice(&v);
        Ok(())
    }

    fn recv_max(&mut self, max_len: usize) -> Result<Vec<u8>> {
        self.next(max_len)
    }

    fn flush(&mut self) -> Result<()> {
        self.with_sender(|s| s.flush())
    }

    fn stats(&self) -> Stats {
        self.stats.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.shared.max_frame_len
    }
}

impl<S: FrameSender> Drop for SubChannel<S> {
    fn drop(&mut self) {
        // Push out what this sub-protocol sent last (best effort: nowhere to report errors).
        let _ = self.with_sender(|s| s.flush());
        // Reopening the id later is allowed; queued frames stay for that.
        if let Some(r) = lock(&self.shared.demux.routes).queues.get_mut(&self.id) {
            r.opened = false;
        }
    }
}
