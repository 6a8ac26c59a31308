//! A simulated network link (bandwidth and latency) over any channel.
//!
//! # Model
//!
//! Each direction of the link is a FIFO pipe of `bandwidth` bits per second followed by a
//! propagation delay of `latency` (one way), with an unbounded send buffer. For the `i`-th
//! message of `s_i` payload bytes, handed to [`Channel::send`] at time `t_i`:
//!
//! ```text
//! start_i   = max(t_i, free_{i-1})            the link is busy until the previous one is out
//! free_i    = start_i + 8·s_i / bandwidth     its last bit leaves the sender
//! arrival_i = free_i + latency                its last bit reaches the receiver
//! ```
//!
//! The sender computes `arrival_i` and sends it (8 bytes, nanoseconds since the Unix epoch) as
//! a frame of its own ahead of the message on the inner channel; the receiver's
//! [`Channel::recv_frame`] returns the message no earlier than `arrival_i`. Sends never block
//! (like TCP with a large send buffer); only receivers wait. A transfer of `S` bytes in messages
//! sent back to back thus completes `S·8/bandwidth + latency` after it starts, and a
//! request/response costs at least `2·latency`, as on a real link. Both ends must read the same
//! clock, so the ends live in one process or on one machine (wall clock, `SystemTime`). The
//! timestamp frames are not counted in [`SimLink::stats`]; per-frame protocol headers (TCP/IP,
//! our 8-byte length) are not charged to the bandwidth either.
//!
//! # Deadlines
//!
//! [`Channel::set_deadline`] bounds the wait for the inner channel (the deadline is forwarded
//! to it) and the wait for a message's arrival time. A message that is taken from the inner
//! channel but would arrive only after the deadline is lost (the receive fails at the
//! deadline), so the link answers [`Error::Broken`] to every later receive, as it does when
//! the deadline strikes between a message's two inner frames. An idle timeout between the two
//! frames leaves the link usable: the next receive resumes with the message.
//!
//! # A hostile peer's timestamps
//!
//! The arrival time comes from the peer, so the receiver never waits past what its own copy of
//! the model allows: `arrival_i` is capped at `max(now, arrival_{i-1} − latency) + 8·s_i /
//! bandwidth + latency`, where `now` is when the message came off the inner channel (a sender
//! with the same model never stamps later than that). A peer cannot hold a message back for
//! longer than the link would, however far in the future its stamp lies.

use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::channel::{
    Channel, ExactBuf, FrameReceiver, FrameSender, Interrupter, RecvBuf, Split, Stats,
    StatsRecorder,
};
use crate::deadline::Deadline;
use crate::error::{Error, Result};

/// Parameters of a simulated link, the same in both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkModel {
    /// Bandwidth in bits per second; `0` means unlimited.
    pub bandwidth_bps: u64,
    /// One-way latency (propagation delay).
    pub latency: Duration,
}

impl LinkModel {
    /// A link of `mbps` megabits per second (10^6 bit/s) and `latency_ms` milliseconds one way,
    /// e.g. `LinkModel::mbps_ms(100, 10)` for the "100 Mbps / 10 ms" rows.
    pub fn mbps_ms(mbps: u64, latency_ms: u64) -> Self {
        LinkModel {
            bandwidth_bps: mbps.saturating_mul(1_000_000),
            latency: Duration::from_millis(latency_ms),
        }
    }

    /// Time for `bytes` payload bytes to leave the sender: `8·bytes / bandwidth`.
    pub fn transmit_time(&self, bytes: usize) -> Duration {
        if self.bandwidth_bps == 0 {
            return Duration::ZERO;
        }
        let ns = (bytes as u128) * 8 * 1_000_000_000 / u128::from(self.bandwidth_bps);
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Theoretical time to move `bytes` one way in back-to-back messages on an idle link:
    /// `8·bytes / bandwidth + latency`.
    pub fn one_way_time(&self, bytes: usize) -> Duration {
        self.transmit_time(bytes) + self.latency
    }
}

/// A [`Channel`] that delays its inner channel's messages as a link of the given
/// [`LinkModel`] would (see the module documentation for the model). Wrap both ends.
///
/// A deadline ([`Channel::set_deadline`]) is forwarded to the inner channel and also bounds
/// the wait for a message's arrival time. A message taken from the inner channel that would
/// arrive only after the deadline is lost (the receive fails at the deadline), so the link
/// answers [`Error::Broken`] to every later receive; the same holds for a split
/// [`SimReceiver`].
#[derive(Debug)]
pub struct SimLink<C> {
    inner: C,
    model: LinkModel,
    /// When the outgoing link is next free, in nanoseconds since the Unix epoch.
    free_ns: u64,
    stats: StatsRecorder,
    rx: RecvState,
}

/// The receiving side's deadline, and whether a deadline made it lose a message.
#[derive(Clone, Copy, Debug, Default)]
struct RecvState {
    deadline: Deadline,
    broken: bool,
    /// The timestamp of a message whose frame has not been received yet (an idle timeout
    /// struck between the two frames): the next receive takes the message, not a timestamp.
    pending: Option<u64>,
    /// The arrival time granted to the previous message (nanoseconds since the Unix epoch).
    last_arrival: u64,
}

impl<C: Channel> SimLink<C> {
    /// Wraps `inner` (whose peer must be wrapped too, with the same model).
    pub fn new(inner: C, model: LinkModel) -> Self {
        SimLink {
            inner,
            model,
            free_ns: 0,
            stats: StatsRecorder::default(),
            rx: RecvState::default(),
        }
    }

    /// The link's parameters.
    pub fn model(&self) -> LinkModel {
        self.model
    }

    /// The wrapped channel (whose own counters include the timestamp frames).
    pub fn into_inner(self) -> C {
        self.inner
    }
}

/// Nanoseconds since the Unix epoch (saturating; 0 for a clock before 1970).
fn now_ns() -> u64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Sleeps until the wall clock reads `t_ns`.
fn sleep_until(t_ns: u64) {
    loop {
        let now = now_ns();
        if now >= t_ns {
            return;
        }
        thread::sleep(Duration::from_nanos(t_ns - now));
    }
}

/// Stamps a message of `len` bytes sent now on a link that is free from `free_ns` on; returns
/// the arrival time and moves `free_ns`.
fn stamp(model: &LinkModel, free_ns: &mut u64, len: usize) -> [u8; 8] {
    let start = now_ns().max(*free_ns);
    *free_ns = start.saturating_add(duration_ns(model.transmit_time(len)));
    free_ns
        .saturating_add(duration_ns(model.latency))
        .to_le_bytes()
}

/// The arrival time of a message of `len` bytes stamped `stamp` by the peer and taken off the
/// inner channel now: the stamp, but never later than a sender with the same model could
/// have stamped it (see the module documentation).
fn admit(model: &LinkModel, st: &mut RecvState, stamp: u64, len: usize) -> u64 {
    let latency = duration_ns(model.latency);
    let link_free = st.last_arrival.saturating_sub(latency);
    let latest = now_ns()
        .max(link_free)
        .saturating_add(duration_ns(model.transmit_time(len)))
        .saturating_add(latency);
    let arrival = stamp.min(latest);
    st.last_arrival = arrival;
    arrival
}

/// Receives a stamped frame through `recv` and waits until its arrival time, or until the
/// deadline of `st` (see the module documentation); returns its length.
fn recv_stamped(
    mut recv: impl FnMut(usize, &mut dyn RecvBuf) -> Result<()>,
    model: &LinkModel,
    max_len: usize,
    buf: &mut dyn RecvBuf,
    st: &mut RecvState,
) -> Result<usize> {
    if st.broken {
        return Err(Error::Broken);
    }
    st.deadline.check()?;
    let stamp = match st.pending {
        Some(t) => t,
        None => {
            let mut t = [0u8; 8];
            recv(8, &mut ExactBuf(&mut t))?;
            u64::from_le_bytes(t)
        }
    };
    st.pending = Some(stamp);
    let mut len = 0usize;
    let mut counting = CountingBuf {
        inner: buf,
        len: &mut len,
    };
    if let Err(e) = recv(max_len, &mut counting) {
        if e.is_deadline_exceeded() {
            // The timestamp is consumed without its message: lost, as documented.
            st.broken = true;
            st.pending = None;
        } else if !e.is_timeout() {
            // The message was consumed (refused) or the inner channel broke.
            st.pending = None;
        }
        // After an idle timeout nothing of the message was consumed: the next receive
        // resumes with it (`pending`).
        return Err(e);
    }
    st.pending = None;
    let arrival = admit(model, st, stamp, len);
    if let Some(left) = st.deadline.remaining() {
        let wait = Duration::from_nanos(arrival.saturating_sub(now_ns()));
        if wait > left {
            thread::sleep(left);
            st.broken = true;
            return Err(st.deadline.error());
        }
    }
    sleep_until(arrival);
    Ok(len)
}

impl<C: Channel> Channel for SimLink<C> {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        let t = stamp(&self.model, &mut self.free_ns, msg.len());
        self.inner.send(&t)?;
        self.inner.send(msg)?;
        self.stats.record_send(msg.len());
        Ok(())
    }

    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        let inner = &mut self.inner;
        let len = recv_stamped(
            |m, b| inner.recv_frame(m, b),
            &self.model,
            max_len,
            buf,
            &mut self.rx,
        )?;
        self.stats.record_recv(len);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }

    fn stats(&self) -> Stats {
        self.stats.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.inner.max_frame_len()
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.rx.deadline = Deadline::new(deadline);
        self.inner.set_deadline(deadline);
    }

    fn set_max_frame_len(&mut self, max: usize) {
        self.inner.set_max_frame_len(max);
    }
}

/// The sending half of a split [`SimLink`].
#[derive(Debug)]
pub struct SimSender<S> {
    inner: S,
    model: LinkModel,
    free_ns: u64,
}

/// The receiving half of a split [`SimLink`].
#[derive(Debug)]
pub struct SimReceiver<R> {
    inner: R,
    model: LinkModel,
    st: RecvState,
}

impl<S: FrameSender> FrameSender for SimSender<S> {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        let t = stamp(&self.model, &mut self.free_ns, msg.len());
        self.inner.send(&t)?;
        self.inner.send(msg)
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
}

impl<R: FrameReceiver> FrameReceiver for SimReceiver<R> {
    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        let inner = &mut self.inner;
        recv_stamped(
            |m, b| inner.recv_frame(m, b),
            &self.model,
            max_len,
            buf,
            &mut self.st,
        )
        .map(|_| ())
    }

    fn max_frame_len(&self) -> usize {
        self.inner.max_frame_len()
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.st.deadline = Deadline::new(deadline);
        self.inner.set_deadline(deadline);
    }

    fn interrupter(&self) -> Option<Interrupter> {
        self.inner.interrupter()
    }
}

impl<C: Split> Split for SimLink<C> {
    type Sender = SimSender<C::Sender>;
    type Receiver = SimReceiver<C::Receiver>;

    fn split(self) -> (Self::Sender, Self::Receiver) {
        let (s, r) = self.inner.split();
        (
            SimSender {
                inner: s,
                model: self.model,
                free_ns: self.free_ns,
            },
            SimReceiver {
                inner: r,
                model: self.model,
                st: self.rx,
            },
        )
    }
}

/// Passes a receive through, remembering its length.
struct CountingBuf<'a> {
    inner: &'a mut dyn RecvBuf,
    len: &'a mut usize,
}

impl RecvBuf for CountingBuf<'_> {
    fn prepare(&mut self, len: usize) -> Result<&mut [u8]> {
        *self.len = len;
        self.inner.prepare(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_arithmetic() {
        let m = LinkModel::mbps_ms(100, 10);
        assert_eq!(m.bandwidth_bps, 100_000_000);
        // 10 MB · 8 / 100 Mbit/s = 0.8 s.
        assert_eq!(m.transmit_time(10_000_000), Duration::from_millis(800));
        assert_eq!(m.one_way_time(10_000_000), Duration::from_millis(810));
        // 1 Gbit/s: one byte is 8 ns.
        assert_eq!(
            LinkModel::mbps_ms(1000, 0).transmit_time(1),
            Duration::from_nanos(8)
        );
        let unlimited = LinkModel {
            bandwidth_bps: 0,
            latency: Duration::from_millis(1),
        };
        assert_eq!(unlimited.transmit_time(usize::MAX), Duration::ZERO);
    }

    #[test]
    fn stamps_queue_behind_a_busy_link() {
        let m = LinkModel {
            bandwidth_bps: 8_000, // 1000 bytes per second
            latency: Duration::from_secs(1),
        };
        let mut free = 0;
        let t1 = u64::from_le_bytes(stamp(&m, &mut free, 1000));
        let t2 = u64::from_le_bytes(stamp(&m, &mut free, 1000));
        // The second message starts when the first has left: one second later.
        assert_eq!(t2 - t1, 1_000_000_000);
        assert_eq!(free + 1_000_000_000, t2);
    }
}
