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
//! an id not opened yet wait in its queue. The id [`Mux::CREDIT_ID`] (`u32::MAX`) is the
//! multiplexer's own: its first message (8 bytes) announces this side's
//! [`MuxOptions::max_queued_per_sub`], and every later one (12 bytes) names a sub-channel and
//! how many bytes this side took from that queue, which lets the peer send more there (see
//! [`Mux`](Mux#flow-control)). All queues together hold at most
//! [`MuxOptions::max_queued`] bytes (plus one frame), each queued frame counted as its length
//! plus [`QUEUED_FRAME_OVERHEAD`](crate::QUEUED_FRAME_OVERHEAD) (so empty frames count too);
//! beyond that the demultiplexer stops reading, which pushes back on the peer. One
//! sub-channel's queue holds at most [`MuxOptions::max_queued_per_sub`] bytes (plus one
//! frame into an empty queue): a sending sub-channel waits for credit rather than send more
//! than the smaller of the two sides' settings ahead of what the peer has taken, and a peer that overfills a queue anyway fails
//! the whole `Mux` with [`Error::SubChannelOverflow`] (see [`Mux`](Mux#flooding)).
//!
//! Sends may stay buffered in the inner channel until some sub-channel flushes, receives or is
//! dropped (each of which flushes the shared connection). A frame that arrives for a sub-channel
//! that is never opened stays queued, counted against `max_queued`.
//!
//! See [`Mux`] for the limits on sub-channels and for deadlines.
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
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};

use crate::channel::{
    Channel, ExactBuf, FrameReceiver, FrameSender, Interrupter, QUEUED_FRAME_OVERHEAD, RecvBuf,
    Split, Stats, StatsRecorder, VecBuf,
};
use crate::deadline::Deadline;
use crate::error::{Error, Result, len64};

/// Settings of a [`Mux`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MuxOptions {
    /// How long a sub-channel's receive waits while the connection delivers nothing: a
    /// receive fails with [`Error::Timeout`] once no frame has arrived for any sub-channel
    /// for this long (frames for other sub-channels, as on a slow link shared by several
    /// workers, keep it waiting; bound the total wait with a deadline). Default 60 s.
    pub recv_timeout: Duration,
    /// Bytes the demultiplexer queues (over all sub-channels) before it stops reading, each
    /// frame counted as its length plus [`QUEUED_FRAME_OVERHEAD`]. Default 64 MiB.
    pub max_queued: usize,
    /// Bytes one sub-channel's queue may hold (counted as for `max_queued`; a frame into an
    /// empty queue is always taken, so one frame of up to the transport's frame limit fits).
    /// Each side announces it to the other, and the smaller of the two is the window of both
    /// sides' sends ([`Mux`](Mux#flow-control)): a send waits for credit rather than have
    /// more than that in flight on its sub-channel, so the two sides may set different
    /// values. A peer that sends more to one sub-channel than this side's value while this
    /// side does not take it breaks the protocol: the demultiplexer stops with [`Error::SubChannelOverflow`], which every
    /// sub-channel reports (see [`Mux`](Mux#flooding)). Default 16 MiB.
    pub max_queued_per_sub: usize,
    /// Most sub-channel ids with a queue at a time (see [`Mux`](Mux#limits-and-deadlines)).
    /// Default 256: the PSI bucket driver uses at most 65 (a control id and one per worker,
    /// up to 64 workers).
    pub max_sub_channels: usize,
}

impl Default for MuxOptions {
    fn default() -> Self {
        MuxOptions {
            recv_timeout: Duration::from_secs(60),
            max_queued: 64 << 20,
            max_queued_per_sub: 16 << 20,
            max_sub_channels: 256,
        }
    }
}

/// A factory of sub-channels over one connection. Cloning it is cheap and gives another
/// handle on the same connection.
///
/// [`Mux::new`] splits a channel ([`Split`]) and starts a demultiplexing thread that reads
/// every incoming frame and queues it for its sub-channel; [`Mux::sub`] opens the sub-channel
/// with a given `u32` id, which the peer opens on its side too. All queues together hold at
/// most [`MuxOptions::max_queued`] bytes (plus one frame), each queued frame counted as its
/// length plus [`QUEUED_FRAME_OVERHEAD`]; beyond that the demultiplexer stops reading, which
/// pushes back on the peer.
///
/// # Limits and deadlines
///
/// At most [`MuxOptions::max_sub_channels`] ids have a queue at a time: the open sub-channels
/// and the ids the peer sent frames for that nobody has taken yet (a sub-channel dropped with
/// its queue empty frees its id's slot). A frame for one id more stops the demultiplexer with
/// [`Error::TooManySubChannels`], which every sub-channel reports once its queue is drained;
/// [`Mux::sub`] past the limit fails with the same error (the connection is not affected).
///
/// Each sub-channel has its own deadline ([`Channel::set_deadline`]), which bounds the wait for
/// its queue; messages are queued whole, so a sub-channel stays usable after its deadline
/// struck. It bounds a send's wait for credit ([`Mux`](Mux#flow-control)), not the write
/// itself (sends share the inner sender, bounded by its write timeout). A deadline set on the inner channel before [`Mux::new`] bounds the whole
/// connection: when it passes, the demultiplexer stops with [`Error::DeadlineExceeded`] (it
/// rides out idle timeouts of the inner channel, not a deadline) and every sub-channel reports
/// that.
///
/// # Flow control
///
/// Each sub-channel has its own credit. A send counts its message (length plus
/// [`QUEUED_FRAME_OVERHEAD`]) as in flight until the peer's sub-channel takes it from its
/// queue, when the peer returns that much credit (a message on [`Mux::CREDIT_ID`], flushed at
/// once). The window is the smaller of the two sides' [`MuxOptions::max_queued_per_sub`]:
/// [`Mux::new`] sends this side's value as its first message (on [`Mux::CREDIT_ID`], 8
/// bytes, flushed at once, without waiting for the peer's), and a second announcement from
/// the peer stops the demultiplexer with [`Error::Handshake`]. A send goes at once when
/// nothing of its sub-channel is in flight, or when the message fits with what is in flight
/// within the window (never before the peer's announcement has arrived); otherwise it first
/// flushes the shared sender, then waits for credit: until the sub-channel's deadline,
/// [`Error::Timeout`] once the connection has delivered nothing for
/// [`MuxOptions::recv_timeout`], or the demultiplexer's error. So a sub-protocol may stream any
/// amount to a peer that is busy elsewhere without overfilling its queue, whatever either
/// side set, and a sub-channel waiting for credit holds up no other. A peer that announces a
/// tiny window only slows this side's sends to one message in flight at a time; a large one
/// does not take this side's window beyond its own setting. Two sides that each send more
/// than the window on one sub-channel before receiving there wait for each other until the
/// timeout; the protocols of this workspace interleave their sends and receives (or send from
/// one side at a time).
///
/// # Flooding
///
/// A peer that ignores the credit can still send frames for a sub-channel that this side does
/// not read, and they pile up in its queue. Each queue is bounded by
/// [`MuxOptions::max_queued_per_sub`] (this party's setting; a frame into an empty queue is
/// always taken): a frame that would take a queue beyond it is a protocol violation by the
/// peer, and the demultiplexer stops with [`Error::SubChannelOverflow`]. Every sub-channel
/// reports that error once its queue is drained, at once if it is waiting already, so a peer
/// flooding one sub-channel cannot leave the others waiting for frames that never come.
/// Messages on the credit id are not queued: one that is neither a credit (12 bytes) nor the
/// window announcement (8 bytes) stops the demultiplexer with [`Error::UnexpectedLength`], and
/// credit for a sub-channel with nothing in flight is ignored.
///
/// Below that, [`MuxOptions::max_queued`] bounds all queues together: when it is reached the
/// demultiplexer stops reading until a sub-channel takes a frame, which pushes back on the
/// peer (and holds up frames for the other sub-channels meanwhile; their receives then end
/// at [`MuxOptions::recv_timeout`] or their deadlines). Memory is thus bounded by
/// `min(max_queued, max_sub_channels × max_queued_per_sub)` plus one frame. A peer that
/// spreads frames over several sub-channels, each under its cap, can thus hold up the others
/// until their timeouts: no more than a peer that stops sending can always do, and with this
/// side's memory still bounded.
///
/// # Dropping
///
/// Dropping the last handle (the `Mux` and its clones, and every [`SubChannel`]) flushes and
/// drops the sender, which tells the peer, and ends the demultiplexer thread promptly: the
/// inner receiver is interrupted ([`FrameReceiver::interrupter`]; TCP and in-memory receivers
/// support it) rather than left waiting until its idle timeout.
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
    /// Wakes the demultiplexer from a receive on the inner channel.
    interrupt: Option<Interrupter>,
}

impl<S> Drop for Shared<S> {
    fn drop(&mut self) {
        lock(&self.demux.routes).closed = true;
        self.demux.cv.notify_all();
        // The demultiplexer may be blocked in a receive; without this it would notice only
        // at the inner channel's next idle timeout.
        if let Some(i) = &self.interrupt {
            i.interrupt();
        }
    }
}

/// What the demultiplexer thread shares with the handles.
#[derive(Default)]
struct DemuxState {
    routes: Mutex<Routes>,
    /// Signalled when queued bytes shrink or the handles are gone.
    cv: Condvar,
    /// When the connection last delivered a frame, for any sub-channel.
    progress: Progress,
    /// What this side's sends may have in flight, per sub-channel.
    credit_state: Mutex<Credit>,
    /// Signalled when credit or the peer's window arrives, or the demultiplexer stops.
    credit: Condvar,
}

/// The sending side of the flow control ([`Mux`](Mux#flow-control)).
#[derive(Default)]
struct Credit {
    /// Per sub-channel id, the bytes this side sent there that the peer has not yet taken
    /// from its queue (charged as [`charge`] does).
    in_flight: HashMap<u32, usize>,
    /// The peer's [`MuxOptions::max_queued_per_sub`], once its announcement has arrived.
    peer_window: Option<usize>,
}

/// The time of the connection's last received frame, as nanoseconds since `epoch`.
struct Progress {
    epoch: Instant,
    last_ns: AtomicU64,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            epoch: Instant::now(),
            last_ns: AtomicU64::new(0),
        }
    }
}

impl Progress {
    /// Records a frame received now.
    fn mark(&self) {
        let ns = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_ns.store(ns, Ordering::Relaxed);
    }

    /// How long ago the connection last delivered a frame (since the Mux was made, if never).
    fn idle(&self) -> Duration {
        self.epoch
            .elapsed()
            .saturating_sub(Duration::from_nanos(self.last_ns.load(Ordering::Relaxed)))
    }
}

struct SenderState<S> {
    tx: S,
    /// A send or flush failed: the stream may be out of step, nothing more goes out.
    broken: bool,
    /// A credit message found the peer gone (see [`SubChannel::return_credit`]): sends fail
    /// with [`Error::PeerDisconnected`], and a flush with nothing of this side's own unflushed
    /// succeeds, as it did before the credit was written.
    peer_gone: bool,
    /// Messages were written since the last successful flush.
    unflushed: bool,
}

impl<S: FrameSender> SenderState<S> {
    /// Writes one message with `f` (id and payload frames).
    fn send(&mut self, f: impl FnOnce(&mut S) -> Result<()>) -> Result<()> {
        if self.broken {
            return Err(Error::Broken);
        }
        if self.peer_gone {
            return Err(Error::PeerDisconnected);
        }
        match f(&mut self.tx) {
            Ok(()) => {
                self.unflushed = true;
                Ok(())
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// Flushes what was written.
    fn flush(&mut self) -> Result<()> {
        if self.broken {
            return Err(Error::Broken);
        }
        if self.peer_gone {
            return if self.unflushed {
                Err(Error::PeerDisconnected)
            } else {
                Ok(())
            };
        }
        match self.tx.flush() {
            Ok(()) => {
                self.unflushed = false;
                Ok(())
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// Writes and flushes a message of the multiplexer's own on [`CREDIT_ID`]: a credit
    /// (see [`SubChannel::return_credit`]) or this side's window announcement. Best effort: a
    /// peer that has gone marks the sender `peer_gone`, any other failure breaks it.
    fn control(&mut self, payload: &[u8]) {
        if self.broken || self.peer_gone {
            return;
        }
        let sent = self
            .tx
            .send(&CREDIT_ID.to_le_bytes())
            .and_then(|()| self.tx.send(payload))
            .and_then(|()| self.tx.flush());
        match sent {
            Ok(()) => self.unflushed = false,
            // The peer has gone (a transport marks itself broken after such an error).
            Err(Error::PeerDisconnected | Error::Broken) => self.peer_gone = true,
            Err(_) => self.broken = true,
        }
    }
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
    /// The queue of `id`, created if needed and if fewer than `max` ids have one.
    fn route(&mut self, id: u32, max: usize) -> Result<&mut Route> {
        let live = self.ended.is_none();
        let n = self.queues.len();
        match self.queues.entry(id) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(_) if n >= max => Err(Error::TooManySubChannels { id, max }),
            Entry::Vacant(e) => {
                let (tx, rx) = crossbeam_channel::unbounded();
                Ok(e.insert(Route {
                    // After the end, new queues are born disconnected.
                    tx: live.then_some(tx),
                    rx,
                    opened: false,
                    queued: 0,
                }))
            }
        }
    }
}

/// The id frame of a credit message (see [`Mux`](Mux#flow-control)).
pub(crate) const CREDIT_ID: u32 = u32::MAX;

/// Length of a credit message's payload: the sub-channel id and the bytes taken.
const CREDIT_LEN: usize = 12;

/// Length of the window announcement's payload: the sender's
/// [`MuxOptions::max_queued_per_sub`] (see [`Mux`](Mux#flow-control)).
const WINDOW_LEN: usize = 8;

/// What a queued frame of `len` bytes counts against [`MuxOptions::max_queued`].
fn charge(len: usize) -> usize {
    len.saturating_add(QUEUED_FRAME_OVERHEAD)
}

struct Route {
    /// `None` once the demultiplexer has stopped, so receivers see the end.
    tx: Option<Sender<Vec<u8>>>,
    rx: Receiver<Vec<u8>>,
    opened: bool,
    /// Bytes charged for this queue's frames (see [`MuxOptions::max_queued_per_sub`]).
    queued: usize,
}

/// Locks a mutex whose data stays consistent even if a holder panicked (counters and queues
/// updated in single steps).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<S: FrameSender + 'static> Mux<S> {
    /// The sub-channel id the multiplexer keeps for its credit messages (see
    /// [`Mux`](Mux#flow-control)); [`Mux::sub`] refuses it.
    pub const CREDIT_ID: u32 = CREDIT_ID;

    /// Starts multiplexing over `channel` with default options.
    pub fn new<C: Split<Sender = S>>(channel: C) -> Result<Self> {
        Self::with_options(channel, MuxOptions::default())
    }

    /// Starts multiplexing over `channel`.
    pub fn with_options<C: Split<Sender = S>>(channel: C, opts: MuxOptions) -> Result<Self> {
        let (tx, rx) = channel.split();
        let demux_state = Arc::new(DemuxState::default());
        let shared = Arc::new(Shared {
            sender: Mutex::new(SenderState {
                tx,
                broken: false,
                peer_gone: false,
                unflushed: false,
            }),
            demux: Arc::clone(&demux_state),
            max_frame_len: rx.max_frame_len(),
            opts: opts.clone(),
            interrupt: rx.interrupter(),
        });
        let max_frame_len = shared.max_frame_len;
        // The first message of this side: how much one sub-channel's queue here holds, which
        // is the peer's sending window (never above its own setting).
        lock(&shared.sender).control(&len64(opts.max_queued_per_sub).to_le_bytes());
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
    ///
    /// # Errors
    /// [`Error::SubChannelInUse`] if `id` is open already; [`Error::TooManySubChannels`] if
    /// [`MuxOptions::max_sub_channels`] ids have a queue already and `id` is not one of them.
    pub fn sub(&self, id: u32) -> Result<SubChannel<S>> {
        if id == Self::CREDIT_ID {
            return Err(Error::ReservedSubChannel { id });
        }
        let mut routes = lock(&self.shared.demux.routes);
        let route = routes.route(id, self.shared.opts.max_sub_channels)?;
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
            deadline: Deadline::default(),
            max_frame_len: self.shared.max_frame_len,
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
        st.progress.mark();
        let id = u32::from_le_bytes(id);
        if id == CREDIT_ID {
            match take_control(st, &v) {
                Ok(()) => continue,
                Err(e) => break e,
            }
        }
        let mut routes = lock(&st.routes);
        let route = match routes.route(id, opts.max_sub_channels) {
            Ok(r) => r,
            Err(e) => break e,
        };
        let cost = charge(v.len());
        if route.queued > 0 && route.queued.saturating_add(cost) > opts.max_queued_per_sub {
            break Error::SubChannelOverflow {
                id,
                max: opts.max_queued_per_sub,
            };
        }
        route.queued = route.queued.saturating_add(cost);
        if let Some(tx) = &route.tx {
            // The route holds the receiving end too, so this cannot fail.
            let _ = tx.send(v);
        }
        routes.queued = routes.queued.saturating_add(cost);
        while routes.queued > opts.max_queued && !routes.closed {
            routes = st.cv.wait(routes).unwrap_or_else(PoisonError::into_inner);
        }
        if routes.closed {
            return;
        }
    };
    {
        let mut routes = lock(&st.routes);
        routes.ended = Some(err);
        for r in routes.queues.values_mut() {
            r.tx = None;
        }
    }
    // Senders waiting for credit see the end (they take `credit_state`, then `routes`).
    let _credit = lock(&st.credit_state);
    st.credit.notify_all();
}

/// Applies a message of the peer's multiplexer ([`CREDIT_ID`]).
///
/// A credit message (12 bytes) is the sub-channel id (4 bytes) and the bytes the peer took
/// from that queue (8 bytes), both little-endian. Credit for an id this side has nothing in
/// flight on is ignored (so a peer cannot make this side keep entries), and credit beyond what
/// is in flight only empties the account.
///
/// The window announcement (8 bytes, little-endian) is the peer's
/// [`MuxOptions::max_queued_per_sub`], sent once, first; a second one is a protocol error
/// ([`Error::Handshake`]). Any other length stops the demultiplexer with
/// [`Error::UnexpectedLength`].
fn take_control(st: &DemuxState, payload: &[u8]) -> Result<()> {
    let mut credit = lock(&st.credit_state);
    if let Ok(window) = <[u8; WINDOW_LEN]>::try_from(payload) {
        if credit.peer_window.is_some() {
            return Err(Error::Handshake {
                reason: "the peer's multiplexer announced its window twice".into(),
            });
        }
        let window = usize::try_from(u64::from_le_bytes(window)).unwrap_or(usize::MAX);
        credit.peer_window = Some(window);
        st.credit.notify_all();
        return Ok(());
    }
    if payload.len() != CREDIT_LEN {
        return Err(Error::UnexpectedLength {
            expected: len64(CREDIT_LEN),
            got: len64(payload.len()),
        });
    }
    let (id, taken) = payload.split_at(4);
    let id = u32::from_le_bytes(id.try_into().unwrap_or_default());
    let taken = u64::from_le_bytes(taken.try_into().unwrap_or_default());
    let taken = usize::try_from(taken).unwrap_or(usize::MAX);
    if let Some(n) = credit.in_flight.get_mut(&id) {
        *n = n.saturating_sub(taken);
        st.credit.notify_all();
    }
    Ok(())
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

/// One sub-channel of a [`Mux`]: a [`Channel`] with its own queue, counters and deadline (see
/// [`Mux`](Mux#limits-and-deadlines)).
pub struct SubChannel<S: FrameSender> {
    id: u32,
    shared: Arc<Shared<S>>,
    rx: Receiver<Vec<u8>>,
    stats: StatsRecorder,
    deadline: Deadline,
    /// This sub-channel's frame limit: at most the transport's, which the demultiplexer
    /// applies before queueing.
    max_frame_len: usize,
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

    fn sender(&self) -> MutexGuard<'_, SenderState<S>> {
        lock(&self.shared.sender)
    }

    /// Flushes the shared sender before a receive waits. Another sub-channel's send may hold
    /// the sender for up to the write timeout (a peer that does not read); with a deadline
    /// set, the wait for the sender ends at the deadline.
    fn flush_before_wait(&self) -> Result<()> {
        if self.deadline.at().is_none() {
            return self.sender().flush();
        }
        let mut tries = 0u32;
        loop {
            match self.shared.sender.try_lock() {
                Ok(mut g) => return g.flush(),
                Err(TryLockError::Poisoned(p)) => return p.into_inner().flush(),
                Err(TryLockError::WouldBlock) => {
                    self.deadline.check()?;
                    tries = tries.saturating_add(1);
                    if tries < 64 {
                        thread::yield_now();
                    } else {
                        thread::sleep(Duration::from_micros(200));
                    }
                }
            }
        }
    }

    /// Tells the peer that `cost` bytes of this sub-channel's queue were taken, and flushes,
    /// so that a sender waiting for room goes on at once (see [`Mux`](Mux#flow-control)).
    /// Best effort: the message taken is delivered whatever becomes of its credit. A peer
    /// that has sent its last message and gone is the common case at the end of a protocol:
    /// the credit write then fails, and the sender is marked `peer_gone` rather than broken,
    /// so that this side's later flushes with nothing of its own unflushed still succeed (as
    /// they did before the credit) and its sends report [`Error::PeerDisconnected`]. Any other
    /// failure breaks the sender, as a failed send does.
    fn return_credit(&self, cost: usize) {
        let mut credit = [0u8; CREDIT_LEN];
        credit[..4].copy_from_slice(&self.id.to_le_bytes());
        credit[4..].copy_from_slice(&len64(cost).to_le_bytes());
        self.sender().control(&credit);
    }

    /// Waits until the peer's queue of this sub-channel has room for a message of `len`
    /// bytes (nothing of this sub-channel in flight, or in flight plus this message within
    /// the window: the smaller of this side's and the peer's announced
    /// [`MuxOptions::max_queued_per_sub`]; no room until the announcement has arrived), then
    /// counts the message as in flight. Before
    /// waiting it flushes the shared sender: what the peer needs in order to take its queue
    /// (this side's messages and credit) must reach it. The wait ends with this sub-channel's
    /// deadline, with [`Error::Timeout`] once the connection has delivered nothing for
    /// [`MuxOptions::recv_timeout`], or with the demultiplexer's error.
    fn wait_for_credit(&self, len: usize) -> Result<()> {
        let st = &self.shared.demux;
        let own = self.shared.opts.max_queued_per_sub;
        let cost = charge(len);
        let timeout = self.shared.opts.recv_timeout;
        let started = Instant::now();
        let mut flushed = false;
        let mut credit = lock(&st.credit_state);
        loop {
            let now = credit.in_flight.get(&self.id).copied().unwrap_or(0);
            let fits = credit
                .peer_window
                .is_some_and(|peer| now.saturating_add(cost) <= own.min(peer));
            if now == 0 || fits {
                credit.in_flight.insert(self.id, now.saturating_add(cost));
                return Ok(());
            }
            if let Some(e) = &lock(&st.routes).ended {
                return Err(e.clone_lossy());
            }
            if !flushed {
                drop(credit);
                self.sender().flush()?;
                flushed = true;
                credit = lock(&st.credit_state);
                continue;
            }
            self.deadline.check()?;
            let wait = self.deadline.bound(Some(timeout)).unwrap_or(timeout);
            let (guard, result) = st
                .credit
                .wait_timeout(credit, wait)
                .unwrap_or_else(PoisonError::into_inner);
            credit = guard;
            if result.timed_out() {
                let idle = st.progress.idle().min(started.elapsed());
                if let Some(e) = self.deadline.after_wait(idle, Some(timeout)) {
                    return Err(e);
                }
            }
        }
    }

    fn next(&mut self, max_len: usize) -> Result<Vec<u8>> {
        self.deadline.check()?;
        // A message already queued is taken without touching the sender (the credit it
        // returns flushes anyway); only a receive that waits flushes first. A queue that is
        // drained and cut off reports why below, whatever became of the sender.
        let mut ready = match self.rx.try_recv() {
            Ok(v) => Some(v),
            Err(TryRecvError::Empty) => {
                self.flush_before_wait()?;
                None
            }
            Err(TryRecvError::Disconnected) => None,
        };
        let t = self.shared.opts.recv_timeout;
        let started = Instant::now();
        let mut wait_for = t;
        loop {
            let wait = self.deadline.bound(Some(wait_for)).unwrap_or(wait_for);
            let got = match ready.take() {
                Some(v) => Ok(v),
                None => self.rx.recv_timeout(wait),
            };
            match got {
                Ok(v) => {
                    let cost = charge(v.len());
                    {
                        let mut routes = lock(&self.shared.demux.routes);
                        routes.queued = routes.queued.saturating_sub(cost);
                        if let Some(r) = routes.queues.get_mut(&self.id) {
                            r.queued = r.queued.saturating_sub(cost);
                        }
                    }
                    self.shared.demux.cv.notify_all();
                    self.return_credit(cost);
                    self.stats.record_recv(v.len());
                    let max = max_len.min(self.max_frame_len);
                    if v.len() > max {
                        return Err(Error::FrameTooLarge {
                            len: len64(v.len()),
                            max: len64(max),
                        });
                    }
                    return Ok(v);
                }
                Err(RecvTimeoutError::Timeout) => {
                    // The idle timeout is the connection's: while frames keep arriving for
                    // other sub-channels (a busy link shared by workers), this one waits on,
                    // until nothing has arrived for `t` during this receive.
                    let idle = self.shared.demux.progress.idle().min(started.elapsed());
                    if let Some(e) = self.deadline.after_wait(idle, Some(t)) {
                        return Err(e);
                    }
                    wait_for = t.saturating_sub(idle).max(Duration::from_millis(1));
                }
                // The demultiplexer stopped and this queue is drained: report why.
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(lock(&self.shared.demux.routes)
                        .ended
                        .as_ref()
                        .map_or(Error::PeerDisconnected, Error::clone_lossy));
                }
            }
        }
    }
}

impl<S: FrameSender> Channel for SubChannel<S> {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        self.wait_for_credit(msg.len())?;
        let id = self.id.to_le_bytes();
        self.sender().send(|s| {
            s.send(&id)?;
            s.send(msg)
        })?;
        self.stats.record_send(msg.len());
        Ok(())
    }

    fn send_vec(&mut self, msg: Vec<u8>) -> Result<()> {
        self.wait_for_credit(msg.len())?;
        let id = self.id.to_le_bytes();
        let len = msg.len();
        self.sender().send(|s| {
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
        self.sender().flush()
    }

    fn stats(&self) -> Stats {
        self.stats.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    /// Sets this sub-channel's limit, never above the transport's (fixed when the [`Mux`] was
    /// made; the demultiplexer refuses longer frames before queueing them).
    fn set_max_frame_len(&mut self, max: usize) {
        self.max_frame_len = max.min(self.shared.max_frame_len);
    }

    /// Bounds this sub-channel's receives only (see [`Mux`](Mux#limits-and-deadlines)).
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = Deadline::new(deadline);
    }
}

impl<S: FrameSender> Drop for SubChannel<S> {
    fn drop(&mut self) {
        // Push out what this sub-protocol sent last (best effort: nowhere to report errors).
        let _ = self.sender().flush();
        // Reopening the id later is allowed; queued frames stay for that. An empty queue is
        // removed, so that the id no longer counts against `max_sub_channels`.
        let mut routes = lock(&self.shared.demux.routes);
        if let Some(r) = routes.queues.get_mut(&self.id) {
            if r.rx.is_empty() {
                routes.queues.remove(&self.id);
            } else {
                r.opened = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::time::Instant;

    use super::*;
    use crate::{TcpChannel, TcpOptions, mem_pair, mem_pair_with_timeout};

    /// The number of ids with a queue, and the bytes charged, of `mux`.
    fn load<S>(mux: &Mux<S>) -> (usize, usize) {
        let r = lock(&mux.shared.demux.routes);
        (r.queues.len(), r.queued)
    }

    /// A peer that sends one message to each of 10,000 ids: past the cap the demultiplexer
    /// stops with the typed error, which the open sub-channels report after their queued
    /// messages; no more than the cap of queues ever exists.
    #[test]
    fn a_peer_opening_ten_thousand_ids_is_stopped_at_the_cap() {
        let (mut raw, b) = mem_pair();
        let opts = MuxOptions {
            recv_timeout: Duration::from_secs(10),
            ..MuxOptions::default()
        };
        let max = opts.max_sub_channels;
        let mux = Mux::with_options(b, opts).unwrap();
        let mut s0 = mux.sub(0).unwrap();
        for id in 0..10_000u32 {
            // Once the demultiplexer has stopped at the cap it drops its end, and sends fail.
            if raw.send(&id.to_le_bytes()).is_err() || raw.send(b"x").is_err() {
                assert!(
                    id >= u32::try_from(max).unwrap(),
                    "stopped early, at id {id}"
                );
                break;
            }
        }
        assert_eq!(s0.recv().unwrap(), b"x");
        let e = s0.recv().unwrap_err();
        let want = u32::try_from(max).unwrap();
        assert!(
            matches!(e, Error::TooManySubChannels { id, max: m } if id == want && m == max),
            "{e:?}"
        );
        let (queues, _) = load(&mux);
        assert_eq!(queues, max, "one queue per id up to the cap, none beyond");
        // An id the peer reached still delivers its message, then the same error.
        let mut s5 = mux.sub(5).unwrap();
        assert_eq!(s5.recv().unwrap(), b"x");
        assert!(matches!(s5.recv(), Err(Error::TooManySubChannels { .. })));
        // Opening one more id locally respects the cap too.
        assert!(matches!(
            mux.sub(9_999),
            Err(Error::TooManySubChannels { id: 9_999, .. })
        ));
        // A dropped sub-channel with an empty queue frees its slot.
        drop(s5);
        assert_eq!(load(&mux).0, max - 1);
        assert!(mux.sub(9_999).is_ok());
    }

    /// Drops `mux` (and a sub-channel of it) and waits for the demultiplexer thread to end,
    /// which releases its share of the state; the inner channel's idle timeout is 60 s, so
    /// only an interrupted receive ends it within the 5 s allowed.
    fn demux_ends_promptly_on_drop<S: FrameSender + 'static>(mux: Mux<S>) {
        let demux = Arc::clone(&mux.shared.demux);
        let sub = mux.sub(3).unwrap();
        let clone = mux.clone();
        thread::sleep(Duration::from_millis(50));
        let t0 = Instant::now();
        drop((mux, sub, clone));
        while Arc::strong_count(&demux) > 1 {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "the demultiplexer thread still runs {:?} after the drop",
                t0.elapsed()
            );
            thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn dropping_the_mux_ends_its_thread_promptly_in_memory() {
        let (a, b) = mem_pair_with_timeout(Duration::from_secs(60));
        demux_ends_promptly_on_drop(Mux::new(a).unwrap());
        drop(b);
    }

    #[test]
    fn dropping_the_mux_ends_its_thread_promptly_over_tcp() {
        for read_ahead in [Some(1 << 20), None] {
            let o = TcpOptions {
                read_timeout: Some(Duration::from_secs(60)),
                read_ahead,
                ..TcpOptions::default()
            };
            let (a, mut b) = TcpChannel::loopback_pair(o).unwrap();
            demux_ends_promptly_on_drop(Mux::new(a).unwrap());
            // The peer sees the window announcement, then the end of the stream.
            assert_eq!(b.recv().unwrap(), u32::MAX.to_le_bytes());
            assert_eq!(b.recv().unwrap().len(), WINDOW_LEN);
            assert!(matches!(b.recv(), Err(Error::PeerDisconnected)));
        }
    }

    #[test]
    fn dropping_the_mux_ends_its_thread_promptly_over_a_sim_link() {
        let (a, b) = mem_pair_with_timeout(Duration::from_secs(60));
        let model = crate::LinkModel::mbps_ms(1000, 1);
        demux_ends_promptly_on_drop(Mux::new(crate::SimLink::new(a, model)).unwrap());
        drop(b);
    }

    /// A peer floods sub-channel 1, which this side does not read, with more than its queue
    /// holds (and more than all queues together hold, `max_queued`): the demultiplexer stops
    /// with the typed error as soon as sub-channel 1's queue is full, so sub-channel 2, waiting
    /// for a message that comes after the flood, gets that error at once instead of waiting
    /// until its timeout; sub-channel 1 still gets what was queued, then the error. Memory
    /// stays within the per-sub-channel bound.
    #[test]
    fn a_peer_flooding_one_sub_channel_fails_the_others_promptly() {
        let (mut raw, b) = mem_pair();
        let opts = MuxOptions {
            recv_timeout: Duration::from_secs(10),
            ..MuxOptions::default()
        };
        let per_sub = opts.max_queued_per_sub;
        let mux = Mux::with_options(b, opts).unwrap();
        let mut s1 = mux.sub(1).unwrap();
        let mut s2 = mux.sub(2).unwrap();
        let waiter = thread::spawn(move || {
            let t0 = Instant::now();
            let r = s2.recv();
            (r, t0.elapsed())
        });
        thread::sleep(Duration::from_millis(50));
        let chunk = vec![9u8; 1 << 20];
        for _ in 0..70 {
            if raw.send(&1u32.to_le_bytes()).is_err() || raw.send(&chunk).is_err() {
                break;
            }
        }
        let _ = raw.send(&2u32.to_le_bytes());
        let _ = raw.send(b"after the flood");
        let (r, waited) = waiter.join().unwrap();
        let e = r.unwrap_err();
        assert!(
            matches!(e, Error::SubChannelOverflow { id: 1, max } if max == per_sub),
            "{e:?} after {waited:?}"
        );
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        let (_, queued) = load(&mux);
        assert!(queued <= per_sub, "{queued}");
        let mut got = 0;
        let e = loop {
            match s1.recv() {
                Ok(m) => {
                    assert_eq!(m, chunk);
                    got += 1;
                }
                Err(e) => break e,
            }
        };
        assert!(
            matches!(e, Error::SubChannelOverflow { id: 1, .. }),
            "{e:?}"
        );
        assert_eq!(got, per_sub / ((1 << 20) + QUEUED_FRAME_OVERHEAD));
        assert_eq!(load(&mux).1, 0);
    }

    /// A sub-channel whose consumer keeps up receives far more than its queue's bound; one
    /// frame larger than the bound is taken into an empty queue.
    #[test]
    fn the_per_sub_channel_bound_holds_only_what_waits() {
        let (a, b) = mem_pair();
        let small = MuxOptions {
            max_queued_per_sub: 4096,
            ..MuxOptions::default()
        };
        let (ma, mb) = (Mux::new(a).unwrap(), Mux::with_options(b, small).unwrap());
        let (mut a1, mut b1) = (ma.sub(1).unwrap(), mb.sub(1).unwrap());
        for i in 0..1000u32 {
            let m = i.to_le_bytes().repeat(250);
            a1.send(&m).unwrap();
            assert_eq!(b1.recv().unwrap(), m);
        }
        a1.send(&[5u8; 100_000]).unwrap();
        assert_eq!(b1.recv().unwrap().len(), 100_000);
    }

    /// A sender that streams far more than the peer's queue holds while the peer is busy
    /// waits for credit instead of overfilling the queue (which fails the whole Mux): the
    /// receiver, once it reads, gets every message, and its queue never held more than the
    /// bound plus one message.
    #[test]
    fn a_streaming_sender_waits_for_room_in_the_peers_queue() {
        let (a, b) = mem_pair();
        let opts = MuxOptions {
            max_queued_per_sub: 64 << 10,
            ..MuxOptions::default()
        };
        let window = opts.max_queued_per_sub;
        let (ma, mb) = (
            Mux::with_options(a, opts.clone()).unwrap(),
            Mux::with_options(b, opts).unwrap(),
        );
        let (mut a1, mut b1) = (ma.sub(1).unwrap(), mb.sub(1).unwrap());
        let message = |i: u32| i.to_le_bytes().repeat(2048);
        let sender = thread::spawn(move || {
            for i in 0..100u32 {
                a1.send(&message(i))?;
            }
            a1.flush()?;
            Ok::<_, Error>(a1)
        });
        // The receiver is busy: the sender fills the queue up to the bound and waits.
        thread::sleep(Duration::from_millis(300));
        let (_, queued) = load(&mb);
        assert!(queued <= window, "{queued} queued, bound {window}");
        assert!(
            queued > window / 2,
            "{queued} queued: the sender stopped early"
        );
        assert!(!sender.is_finished());
        for i in 0..100u32 {
            assert_eq!(b1.recv().unwrap(), message(i));
        }
        let mut a1 = sender.join().unwrap().unwrap();
        // A message larger than the bound goes once nothing is in flight: the second waits
        // until the first is taken.
        let sender = thread::spawn(move || {
            a1.send(&[1u8; 200 << 10])?;
            a1.send(&[2u8; 200 << 10])?;
            a1.flush()
        });
        thread::sleep(Duration::from_millis(100));
        assert!(!sender.is_finished());
        assert_eq!(b1.recv().unwrap(), vec![1u8; 200 << 10]);
        assert_eq!(b1.recv().unwrap(), vec![2u8; 200 << 10]);
        sender.join().unwrap().unwrap();
    }

    /// Two sides with different `max_queued_per_sub` both keep to the smaller: the side with
    /// the larger setting, streaming while its peer is busy, stops at the peer's bound instead
    /// of overfilling its queue (which failed the whole Mux before the windows were
    /// announced), and the side with the smaller setting keeps to its own.
    #[test]
    fn each_side_keeps_to_the_smaller_window() {
        let (a, b) = mem_pair();
        let (large, small) = (1 << 20, 64 << 10);
        let with = |per_sub| MuxOptions {
            max_queued_per_sub: per_sub,
            ..MuxOptions::default()
        };
        let (ma, mb) = (
            Mux::with_options(a, with(large)).unwrap(),
            Mux::with_options(b, with(small)).unwrap(),
        );
        let message = |i: u32| i.to_le_bytes().repeat(2048);
        for (from, to) in [(&ma, &mb), (&mb, &ma)] {
            let (mut tx, mut rx) = (from.sub(1).unwrap(), to.sub(1).unwrap());
            let sender = thread::spawn(move || {
                for i in 0..100u32 {
                    tx.send(&message(i))?;
                }
                tx.flush()
            });
            thread::sleep(Duration::from_millis(300));
            let (_, queued) = load(to);
            assert!(queued <= small, "{queued} queued, smaller bound {small}");
            assert!(
                queued > small / 2,
                "{queued} queued: the sender stopped early"
            );
            assert!(!sender.is_finished());
            for i in 0..100u32 {
                assert_eq!(rx.recv().unwrap(), message(i), "message {i}");
            }
            sender.join().unwrap().unwrap();
        }
    }

    /// The first message of a Mux announces its `max_queued_per_sub` on the credit id; the
    /// peer's announcement is taken once, and a second one stops the demultiplexer with a
    /// typed error.
    #[test]
    fn the_window_is_announced_first_and_only_once() {
        let (mut raw, b) = mem_pair();
        let opts = MuxOptions {
            max_queued_per_sub: 12_345,
            ..MuxOptions::default()
        };
        let mux = Mux::with_options(b, opts).unwrap();
        assert_eq!(raw.recv().unwrap(), u32::MAX.to_le_bytes());
        assert_eq!(raw.recv().unwrap(), 12_345u64.to_le_bytes());
        raw.send(&u32::MAX.to_le_bytes()).unwrap();
        raw.send(&(1u64 << 20).to_le_bytes()).unwrap();
        raw.flush().unwrap();
        let mut s1 = mux.sub(1).unwrap();
        // Within the smaller window (this side's): both go without credit.
        s1.send(&[1u8; 4000]).unwrap();
        s1.send(&[2u8; 4000]).unwrap();
        s1.flush().unwrap();
        for byte in [1u8, 2] {
            assert_eq!(raw.recv().unwrap(), 1u32.to_le_bytes());
            assert_eq!(raw.recv().unwrap(), vec![byte; 4000]);
        }
        raw.send(&u32::MAX.to_le_bytes()).unwrap();
        raw.send(&7u64.to_le_bytes()).unwrap();
        raw.flush().unwrap();
        let e = s1.recv().unwrap_err();
        assert!(matches!(e, Error::Handshake { .. }), "{e:?}");
    }

    /// Until the peer's announcement arrives, a sub-channel sends only with nothing in
    /// flight: the second message waits, here until the idle timeout, and goes at once when
    /// the announcement comes.
    #[test]
    fn sends_beyond_the_first_wait_for_the_peers_window() {
        let (mut raw, b) = mem_pair();
        let opts = MuxOptions {
            recv_timeout: Duration::from_millis(300),
            ..MuxOptions::default()
        };
        let mux = Mux::with_options(b, opts).unwrap();
        let mut s1 = mux.sub(1).unwrap();
        s1.send(b"first").unwrap();
        let t0 = Instant::now();
        let e = s1.send(b"second").unwrap_err();
        assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
        assert!(
            t0.elapsed() >= Duration::from_millis(250),
            "{:?}",
            t0.elapsed()
        );
        let mut s2 = mux.sub(2).unwrap();
        s2.send(b"one").unwrap();
        let waiter = thread::spawn(move || s2.send(b"two").map(|()| s2));
        thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished());
        raw.send(&u32::MAX.to_le_bytes()).unwrap();
        raw.send(&(1u64 << 20).to_le_bytes()).unwrap();
        raw.flush().unwrap();
        let mut s2 = waiter.join().unwrap().unwrap();
        s2.flush().unwrap();
        let mut got = Vec::new();
        while let Ok(m) = raw.recv() {
            got.push(m);
            if got.len() == 8 {
                break;
            }
        }
        assert_eq!(
            got[..2],
            [
                u32::MAX.to_le_bytes().to_vec(),
                (16u64 << 20).to_le_bytes().to_vec()
            ][..]
        );
        assert_eq!(
            got[2..],
            [
                1u32.to_le_bytes().to_vec(),
                b"first".to_vec(),
                2u32.to_le_bytes().to_vec(),
                b"one".to_vec(),
                2u32.to_le_bytes().to_vec(),
                b"two".to_vec(),
            ][..]
        );
    }

    /// Credit is kept per sub-channel: a sender waiting for room on one sub-channel does not
    /// hold up another sub-channel of the same connection.
    #[test]
    fn waiting_for_credit_on_one_sub_channel_leaves_the_others_going() {
        let (a, b) = mem_pair();
        let opts = MuxOptions {
            max_queued_per_sub: 16 << 10,
            ..MuxOptions::default()
        };
        let (ma, mb) = (
            Mux::with_options(a, opts.clone()).unwrap(),
            Mux::with_options(b, opts).unwrap(),
        );
        let (mut a1, mut b1) = (ma.sub(1).unwrap(), mb.sub(1).unwrap());
        let (mut a2, mut b2) = (ma.sub(2).unwrap(), mb.sub(2).unwrap());
        let stuck = thread::spawn(move || {
            for _ in 0..64 {
                a1.send(&[7u8; 4096])?;
            }
            Ok::<_, Error>(a1)
        });
        thread::sleep(Duration::from_millis(100));
        for i in 0..200u32 {
            a2.send(&i.to_le_bytes()).unwrap();
            assert_eq!(b2.recv().unwrap(), i.to_le_bytes());
        }
        assert!(!stuck.is_finished());
        for _ in 0..64 {
            assert_eq!(b1.recv().unwrap(), [7u8; 4096]);
        }
        stuck.join().unwrap().unwrap();
    }

    /// The credit id is the multiplexer's own, and a malformed credit message from the peer
    /// stops the demultiplexer with a typed error.
    #[test]
    fn the_credit_id_is_reserved_and_checked() {
        let (mut raw, b) = mem_pair();
        let mux = Mux::new(b).unwrap();
        assert!(matches!(
            mux.sub(Mux::<crate::mem::MemSender>::CREDIT_ID),
            Err(Error::ReservedSubChannel { id: u32::MAX })
        ));
        let mut s1 = mux.sub(1).unwrap();
        raw.send(&u32::MAX.to_le_bytes()).unwrap();
        raw.send(&[0u8; 5]).unwrap();
        raw.flush().unwrap();
        let e = s1.recv().unwrap_err();
        assert!(
            matches!(
                e,
                Error::UnexpectedLength {
                    expected: 12,
                    got: 5
                }
            ),
            "{e:?}"
        );
    }

    /// A peer that sends its last messages and goes is the normal end of a protocol: this
    /// side still takes every message (the credit for them finds the peer gone), a flush with
    /// nothing of its own pending succeeds, and then the receive and a send report the
    /// disconnection, over TCP (whose sender breaks on the failed credit write) and in memory.
    #[test]
    fn credit_to_a_peer_that_has_gone_does_not_fail_this_side() {
        fn check<S: FrameSender + 'static>(ma: Mux<S>, mut b1: SubChannel<S>) {
            let mut a1 = ma.sub(1).unwrap();
            for i in 0..20u32 {
                a1.send(&i.to_le_bytes().repeat(1000)).unwrap();
            }
            a1.flush().unwrap();
            drop(a1);
            drop(ma);
            thread::sleep(Duration::from_millis(100));
            for i in 0..20u32 {
                assert_eq!(
                    b1.recv().unwrap(),
                    i.to_le_bytes().repeat(1000),
                    "message {i}"
                );
                b1.flush().unwrap();
            }
            let e = b1.recv().unwrap_err();
            assert!(matches!(e, Error::PeerDisconnected), "{e:?}");
            b1.flush().unwrap();
            let e = b1.send(b"too late").unwrap_err();
            assert!(
                matches!(e, Error::PeerDisconnected | Error::Broken),
                "{e:?}"
            );
        }
        let (a, b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
        let mb = Mux::new(b).unwrap();
        check(Mux::new(a).unwrap(), mb.sub(1).unwrap());
        let (a, b) = mem_pair();
        let mb = Mux::new(b).unwrap();
        check(Mux::new(a).unwrap(), mb.sub(1).unwrap());
    }

    /// Locally, the cap counts open sub-channels; closing one frees its slot.
    #[test]
    fn local_opens_respect_the_cap() {
        let (a, _b) = mem_pair();
        let mux = Mux::with_options(
            a,
            MuxOptions {
                max_sub_channels: 3,
                ..MuxOptions::default()
            },
        )
        .unwrap();
        let subs: Vec<_> = (10..13).map(|id| mux.sub(id).unwrap()).collect();
        assert!(matches!(
            mux.sub(13),
            Err(Error::TooManySubChannels { id: 13, max: 3 })
        ));
        assert!(matches!(
            mux.sub(11),
            Err(Error::SubChannelInUse { id: 11 })
        ));
        drop(subs);
        assert!(mux.sub(13).is_ok());
    }

    /// A peer that sends 10^6 empty frames to an id nobody opens: each costs
    /// `QUEUED_FRAME_OVERHEAD`, so `max_queued` stops the demultiplexer (and, with the
    /// read-ahead queue and the kernel buffers full, the peer's writes block) instead of the
    /// queue growing by a million entries.
    #[test]
    fn a_million_empty_frames_are_stopped_by_max_queued() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let o = TcpOptions {
            read_ahead: Some(64 << 10),
            ..TcpOptions::default()
        };
        let ch = TcpChannel::accept(&l, Some(Duration::from_secs(5)), o).unwrap();
        let max_queued = 64 << 10;
        let mux = Mux::with_options(
            ch,
            MuxOptions {
                max_queued,
                ..MuxOptions::default()
            },
        )
        .unwrap();
        const FRAMES: usize = 1_000_000;
        // id frame (8 + 4 bytes) and an empty payload frame (8 bytes), per message.
        let mut msg = Vec::with_capacity(20);
        msg.extend_from_slice(&4u64.to_le_bytes());
        msg.extend_from_slice(&7u32.to_le_bytes());
        msg.extend_from_slice(&0u64.to_le_bytes());
        let chunk: Vec<u8> = msg.iter().copied().cycle().take(20 * 1000).collect();
        raw.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        let writer = thread::spawn(move || {
            let mut sent = 0;
            while sent < FRAMES {
                if raw.write_all(&chunk).is_err() {
                    return (sent, raw);
                }
                sent += 1000;
            }
            (sent, raw)
        });
        let t0 = Instant::now();
        let (sent, raw) = writer.join().unwrap();
        assert!(
            sent < FRAMES,
            "the peer's writes must block ({sent} messages went out in {:?})",
            t0.elapsed()
        );
        let (queues, queued) = load(&mux);
        assert_eq!(queues, 1);
        assert!(queued <= max_queued + QUEUED_FRAME_OVERHEAD, "{queued}");
        assert!(queued > max_queued / 2, "{queued}");
        // The queued messages are still there for whoever opens the id.
        let mut s = mux.sub(7).unwrap();
        assert_eq!(s.recv().unwrap(), b"");
        drop((s, raw));
    }
}
