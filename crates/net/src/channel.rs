//! The [`Channel`] trait, its counters ([`Stats`]) and the typed helpers ([`ChannelExt`]).

use std::ops::{Add, AddAssign, Sub};
use std::sync::Arc;
use std::time::Instant;

use bytemuck::Pod;

use crate::error::{Error, Result, len64};

/// Default largest frame a receiver accepts: 1 GiB.
///
/// Large enough for any single message of the protocols in this workspace (they stream in
/// batches), small enough that a hostile length prefix cannot make a party reserve more than
/// that; and since receive buffers are allocated zeroed (`calloc`, pages mapped lazily), memory
/// actually touched grows only with the bytes that really arrive. Per call, the typed receives
/// ([`ChannelExt::recv_pod_vec`], [`Channel::recv_max`]) take a tighter limit.
pub const DEFAULT_MAX_FRAME_LEN: usize = 1 << 30;

/// What a queued frame costs against a queue's byte budget on top of its payload: the
/// read-ahead queue of a [`crate::TcpChannel`] ([`crate::TcpOptions::read_ahead`]) and the
/// queues of a [`crate::Mux`] ([`crate::MuxOptions::max_queued`]) charge every frame its
/// length plus this, so that a peer sending empty frames fills the budget too (each queued
/// frame costs its bookkeeping in memory whatever its length).
pub const QUEUED_FRAME_OVERHEAD: usize = 64;

/// A destination for one received frame, chosen once the frame's length is known.
///
/// [`Channel::recv_frame`] reads the length, checks it against its limit, calls
/// [`RecvBuf::prepare`] and fills the returned slice. This lets a receive land directly in a
/// caller's buffer or in a freshly allocated `Vec<T>` of the right element type, without an
/// intermediate copy.
pub trait RecvBuf {
    /// Returns a buffer of exactly `len` bytes for the frame, or an error (for instance
    /// [`Error::UnexpectedLength`]) if a frame of that length is not acceptable.
    fn prepare(&mut self, len: usize) -> Result<&mut [u8]>;
}

/// Receives into an owned byte vector, reusing its capacity when it suffices: keep one
/// `VecBuf` across receives in a hot loop to avoid an allocation per frame.
#[derive(Debug, Default)]
pub struct VecBuf(pub Vec<u8>);

impl RecvBuf for VecBuf {
    fn prepare(&mut self, len: usize) -> Result<&mut [u8]> {
        if self.0.capacity() >= len {
            self.0.clear();
            self.0.resize(len, 0);
        } else {
            // A fresh zeroed allocation: large buffers are mapped lazily by the OS, so a
            // hostile length costs address space, not memory, until the bytes arrive.
            self.0 = vec![0u8; len];
        }
        Ok(&mut self.0)
    }
}

/// Receives into a caller's slice, which the frame must fill exactly.
#[derive(Debug)]
pub struct ExactBuf<'a>(pub &'a mut [u8]);

impl RecvBuf for ExactBuf<'_> {
    fn prepare(&mut self, len: usize) -> Result<&mut [u8]> {
        if len != self.0.len() {
            return Err(Error::UnexpectedLength {
                expected: len64(self.0.len()),
                got: len64(len),
            });
        }
        Ok(self.0)
    }
}

/// Receives a whole number of `T`s into a freshly allocated `Vec<T>`.
#[derive(Debug)]
struct PodVecBuf<T> {
    v: Vec<T>,
    /// `Some(n)`: the frame must hold exactly `n` elements.
    exact: Option<usize>,
}

impl<T: Pod> RecvBuf for PodVecBuf<T> {
    fn prepare(&mut self, len: usize) -> Result<&mut [u8]> {
        let size = size_of::<T>();
        if size == 0 {
            return Err(Error::UnexpectedLength {
                expected: 0,
                got: len64(len),
            });
        }
        if !len.is_multiple_of(size) {
            return Err(Error::NotMultiple {
                len: len64(len),
                elem_size: size,
            });
        }
        let n = len / size;
        if let Some(e) = self.exact
            && e != n
        {
            return Err(Error::UnexpectedLength {
                expected: len64(e.saturating_mul(size)),
                got: len64(len),
            });
        }
        self.v = bytemuck::allocation::zeroed_vec(n);
        Ok(bytemuck::cast_slice_mut(&mut self.v))
    }
}

/// Traffic counters of one channel end.
///
/// Bytes are *payload* bytes: the 8-byte length prefix that TCP frames carry, and the timestamp
/// frames of a [`crate::SimLink`], are not counted, so the figures are the protocol's own
/// communication and agree across channel kinds.
///
/// **Rounds.** `rounds` counts how often the direction of this end's traffic flipped from
/// sending to receiving: it grows by one on each receive that follows a send. It is the number
/// of times this party had to wait for an answer after speaking, i.e. the round trips it
/// initiated. A one-way message is 0 rounds at both ends; a request and its response is 1 round
/// at the requester and 0 at the responder; a protocol of `k` alternating messages started by
/// party A counts `⌊k/2⌋` at A and `⌊(k−1)/2⌋` at B. Several sends in a row (or receives in a
/// row) belong to the same round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stats {
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Messages (frames) sent.
    pub messages_sent: u64,
    /// Messages (frames) received.
    pub messages_received: u64,
    /// Send→receive direction flips (see the type's documentation).
    pub rounds: u64,
}

impl Stats {
    /// Bytes sent plus bytes received.
    pub fn total_bytes(&self) -> u64 {
        self.bytes_sent + self.bytes_received
    }
}

impl std::fmt::Display for Stats {
    /// `"1234 B sent, 5678 B received, 3 rounds (4 + 5 messages)"`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} B sent, {} B received, {} rounds ({} + {} messages)",
            self.bytes_sent,
            self.bytes_received,
            self.rounds,
            self.messages_sent,
            self.messages_received
        )
    }
}

impl Sub for Stats {
    type Output = Stats;
    /// The traffic between two snapshots (`later - earlier`), saturating at zero.
    fn sub(self, rhs: Stats) -> Stats {
        Stats {
            bytes_sent: self.bytes_sent.saturating_sub(rhs.bytes_sent),
            bytes_received: self.bytes_received.saturating_sub(rhs.bytes_received),
            messages_sent: self.messages_sent.saturating_sub(rhs.messages_sent),
            messages_received: self.messages_received.saturating_sub(rhs.messages_received),
            rounds: self.rounds.saturating_sub(rhs.rounds),
        }
    }
}

impl Add for Stats {
    type Output = Stats;
    /// Sum of two channels' counters (for a party's total over a session).
    fn add(self, rhs: Stats) -> Stats {
        Stats {
            bytes_sent: self.bytes_sent + rhs.bytes_sent,
            bytes_received: self.bytes_received + rhs.bytes_received,
            messages_sent: self.messages_sent + rhs.messages_sent,
            messages_received: self.messages_received + rhs.messages_received,
            rounds: self.rounds + rhs.rounds,
        }
    }
}

impl AddAssign for Stats {
    fn add_assign(&mut self, rhs: Stats) {
        *self = *self + rhs;
    }
}

/// Keeps a [`Stats`] up to date; for implementors of [`Channel`].
#[derive(Clone, Debug, Default)]
pub struct StatsRecorder {
    stats: Stats,
    last_was_send: bool,
}

impl StatsRecorder {
    /// Records one sent message of `len` payload bytes.
    pub fn record_send(&mut self, len: usize) {
        self.stats.bytes_sent += len64(len);
        self.stats.messages_sent += 1;
        self.last_was_send = true;
    }

    /// Records one received message of `len` payload bytes (counting a round if the last
    /// operation was a send).
    pub fn record_recv(&mut self, len: usize) {
        self.stats.bytes_received += len64(len);
        self.stats.messages_received += 1;
        if self.last_was_send {
            self.stats.rounds += 1;
        }
        self.last_was_send = false;
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}

/// A reliable, ordered, message-framed, blocking connection to one peer.
///
/// Each [`send`](Channel::send) is one frame that the peer's next receive returns whole: there
/// is no partial message and no coalescing. Sends may be buffered until
/// [`flush`](Channel::flush); every implementation flushes on its own before it blocks in a
/// receive, so a protocol that alternates sending and receiving never needs to flush, but one
/// that sends and then computes for long should flush first so the peer can start.
///
/// Receives never allocate more than their length limit (checked before allocating) and never
/// wait forever: each implementation has a receive timeout that yields [`Error::Timeout`].
/// That timeout is an *idle* timeout on most channels (a frame that trickles in byte by byte is
/// not cut off); a total bound on a protocol step is a deadline,
/// [`set_deadline`](Channel::set_deadline).
///
/// Protocols take `&mut impl Channel` or `&mut dyn Channel`; `&mut C` and `Box<C>` are
/// channels too, so a protocol can lend its channel to a sub-protocol. The typed helpers for
/// [`Pod`] values live in the blanket extension trait [`ChannelExt`], usable on `dyn Channel`.
///
/// Deadlock note: both parties sending large amounts before either receives will stall on TCP
/// once the kernel buffers are full (and then fail with a write timeout); such protocols must
/// interleave, or receive on another thread.
pub trait Channel: Send {
    /// Sends `msg` as one frame (possibly buffered until the next flush or receive).
    fn send(&mut self, msg: &[u8]) -> Result<()>;

    /// Sends an owned message; the in-memory channel moves it instead of copying.
    fn send_vec(&mut self, msg: Vec<u8>) -> Result<()> {
        self.send(&msg)
    }

    /// Receives the next frame into the buffer that `buf` provides for its length.
    ///
    /// A frame longer than `max_len` (or than the channel's own
    /// [`max_frame_len`](Channel::max_frame_len), which caps every receive) gives
    /// [`Error::FrameTooLarge`] before `buf` is asked for anything. An error from
    /// [`RecvBuf::prepare`] is returned as is. Whether a rejected frame shows in the
    /// counters depends on the implementation.
    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()>;

    /// Receives the next frame as a vector, if it is at most `max_len` bytes long.
    fn recv_max(&mut self, max_len: usize) -> Result<Vec<u8>> {
        let mut b = VecBuf::default();
        self.recv_frame(max_len, &mut b)?;
        Ok(b.0)
    }

    /// Receives the next frame, up to this channel's [`max_frame_len`](Channel::max_frame_len).
    fn recv(&mut self) -> Result<Vec<u8>> {
        let max = self.max_frame_len();
        self.recv_max(max)
    }

    /// Receives the next frame into `buf`, which it must fill exactly; any other length gives
    /// [`Error::UnexpectedLength`].
    fn recv_into(&mut self, buf: &mut [u8]) -> Result<()> {
        let n = buf.len();
        match self.recv_frame(n, &mut ExactBuf(buf)) {
            // Longer than the buffer: the wrong length. A frame that fits the buffer but not
            // the channel's own limit stays `FrameTooLarge`.
            Err(Error::FrameTooLarge { len, .. }) if len > len64(n) => {
                Err(Error::UnexpectedLength {
                    expected: len64(n),
                    got: len,
                })
            }
            r => r,
        }
    }

    /// Pushes buffered frames to the peer.
    fn flush(&mut self) -> Result<()>;

    /// The traffic counters of this end so far.
    fn stats(&self) -> Stats;

    /// The largest frame [`recv`](Channel::recv) accepts.
    fn max_frame_len(&self) -> usize {
        DEFAULT_MAX_FRAME_LEN
    }

    /// Sets a total deadline for receives (`None` removes it).
    ///
    /// From now on every receive that has not completed by `deadline` fails with
    /// [`Error::DeadlineExceeded`], however slowly bytes keep arriving, and so does every
    /// receive started after it (nothing is consumed then). The idle timeout still applies
    /// within the deadline. Whether the channel stays usable after a deadline struck depends on
    /// where: between frames it does (as after a timeout); in the middle of a frame read
    /// directly from a TCP stream the channel is broken, as after any mid-frame error (see
    /// each implementation). Implementations that wrap another channel forward the deadline to
    /// it. Where an implementation also bounds sends by it, it says so.
    ///
    /// Required, without a default, so that no channel ignores a deadline silently.
    fn set_deadline(&mut self, deadline: Option<Instant>);

    /// Sets the largest frame this channel accepts ([`max_frame_len`](Channel::max_frame_len)),
    /// from the next frame on.
    ///
    /// A protocol that knows the longest message its peer may send sets it to that (see
    /// `obliv_psi::PsiSession::max_frame_len`), so that a longer length announced by a hostile
    /// peer is refused with [`Error::FrameTooLarge`] as soon as its header arrives, before any
    /// of its bytes are buffered (a TCP channel's read-ahead thread applies it too). Frames
    /// that already arrived are checked against it when they are received. Implementations
    /// that wrap another channel forward it.
    ///
    /// Required, without a default, so that no channel ignores a limit silently.
    fn set_max_frame_len(&mut self, max: usize);
}

macro_rules! forward_channel {
    () => {
        fn send(&mut self, msg: &[u8]) -> Result<()> {
            (**self).send(msg)
        }
        fn send_vec(&mut self, msg: Vec<u8>) -> Result<()> {
            (**self).send_vec(msg)
        }
        fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
            (**self).recv_frame(max_len, buf)
        }
        fn recv_max(&mut self, max_len: usize) -> Result<Vec<u8>> {
            (**self).recv_max(max_len)
        }
        fn recv(&mut self) -> Result<Vec<u8>> {
            (**self).recv()
        }
        fn recv_into(&mut self, buf: &mut [u8]) -> Result<()> {
            (**self).recv_into(buf)
        }
        fn flush(&mut self) -> Result<()> {
            (**self).flush()
        }
        fn stats(&self) -> Stats {
            (**self).stats()
        }
        fn max_frame_len(&self) -> usize {
            (**self).max_frame_len()
        }
        fn set_deadline(&mut self, deadline: Option<Instant>) {
            (**self).set_deadline(deadline)
        }
        fn set_max_frame_len(&mut self, max: usize) {
            (**self).set_max_frame_len(max)
        }
    };
}

impl<C: Channel + ?Sized> Channel for &mut C {
    forward_channel!();
}

impl<C: Channel + ?Sized> Channel for Box<C> {
    forward_channel!();
}

/// The sending half of a split channel (see [`Split`]).
pub trait FrameSender: Send {
    /// Sends `msg` as one frame (possibly buffered until [`flush`](FrameSender::flush)).
    fn send(&mut self, msg: &[u8]) -> Result<()>;

    /// Sends an owned message (moved, not copied, where the transport allows).
    fn send_vec(&mut self, msg: Vec<u8>) -> Result<()> {
        self.send(&msg)
    }

    /// Pushes buffered frames to the peer. A split sender is not flushed by receives on its
    /// receiver: flush before waiting for an answer.
    fn flush(&mut self) -> Result<()>;
}

/// The receiving half of a split channel (see [`Split`]).
pub trait FrameReceiver: Send {
    /// As [`Channel::recv_frame`].
    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()>;

    /// As [`Channel::recv_max`].
    fn recv_max(&mut self, max_len: usize) -> Result<Vec<u8>> {
        let mut b = VecBuf::default();
        self.recv_frame(max_len, &mut b)?;
        Ok(b.0)
    }

    /// The largest frame this receiver accepts at all.
    fn max_frame_len(&self) -> usize {
        DEFAULT_MAX_FRAME_LEN
    }

    /// As [`Channel::set_deadline`]. A split receiver starts with the deadline its channel
    /// had.
    fn set_deadline(&mut self, deadline: Option<Instant>);

    /// A handle that, from another thread, makes a receive blocked on this receiver return
    /// promptly with an error (and every later receive too), instead of at its idle timeout.
    /// [`crate::Mux`] uses it to end its demultiplexer when its last handle is dropped.
    ///
    /// The default is `None`: the receiver cannot be interrupted, and a blocked receive ends
    /// at its timeout.
    fn interrupter(&self) -> Option<Interrupter> {
        None
    }
}

/// Ends the receives of a [`FrameReceiver`] from another thread (see
/// [`FrameReceiver::interrupter`]). Cloning it is cheap; interrupting twice does no harm.
#[derive(Clone)]
pub struct Interrupter(Arc<dyn Fn() + Send + Sync>);

impl Interrupter {
    /// An interrupter that runs `f` (which must return promptly and may run more than once).
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Self {
        Interrupter(Arc::new(f))
    }

    /// Makes the receiver's current and later receives fail promptly.
    pub fn interrupt(&self) {
        (self.0)();
    }
}

impl std::fmt::Debug for Interrupter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupter").finish_non_exhaustive()
    }
}

/// A channel that divides into a sending and a receiving half, to be used from two threads
/// (one streaming data out while the other takes the answers in), or to build a [`crate::Mux`].
///
/// The halves do not count traffic; [`crate::Mux`] sub-channels do.
pub trait Split: Channel + Sized {
    /// The sending half.
    type Sender: FrameSender + 'static;
    /// The receiving half.
    type Receiver: FrameReceiver + 'static;

    /// Divides the channel; frames buffered for sending stay in the sender.
    fn split(self) -> (Self::Sender, Self::Receiver);
}

/// Typed helpers over [`Channel`] for plain-old-data values (`u64`, `[u8; N]`, a 128-bit
/// `Block`, …), implemented for every channel including `dyn Channel`.
///
/// Wire format: the values' in-memory bytes, which are little-endian on every supported target
/// (big-endian targets are rejected at compile time), so `u64`s and blocks interoperate between
/// machines. One call is one frame.
pub trait ChannelExt: Channel {
    /// Sends a slice of values as one frame.
    fn send_pod<T: Pod>(&mut self, values: &[T]) -> Result<()> {
        self.send(pod_bytes(values))
    }

    /// Sends one value as one frame.
    fn send_value<T: Pod>(&mut self, value: &T) -> Result<()> {
        self.send(bytemuck::bytes_of(value))
    }

    /// Receives a frame of at most `max_len` values of `T`.
    fn recv_pod_vec<T: Pod>(&mut self, max_len: usize) -> Result<Vec<T>> {
        let mut b = PodVecBuf {
            v: Vec::new(),
            exact: None,
        };
        self.recv_frame(max_len.saturating_mul(size_of::<T>()), &mut b)?;
        Ok(b.v)
    }

    /// Receives a frame of exactly `n` values of `T`.
    fn recv_pod_exact<T: Pod>(&mut self, n: usize) -> Result<Vec<T>> {
        let max = n.saturating_mul(size_of::<T>());
        let mut b = PodVecBuf {
            v: Vec::new(),
            exact: Some(n),
        };
        match self.recv_frame(max, &mut b) {
            Ok(()) => Ok(b.v),
            Err(Error::FrameTooLarge { len, max }) => Err(Error::UnexpectedLength {
                expected: max,
                got: len,
            }),
            Err(e) => Err(e),
        }
    }

    /// Receives a frame that fills `out` exactly.
    fn recv_pod_into<T: Pod>(&mut self, out: &mut [T]) -> Result<()> {
        if size_of::<T>() == 0 {
            return self.recv_into(&mut []);
        }
        self.recv_into(bytemuck::cast_slice_mut(out))
    }

    /// Receives one value.
    fn recv_value<T: Pod>(&mut self) -> Result<T> {
        let mut v = T::zeroed();
        self.recv_into(bytemuck::bytes_of_mut(&mut v))?;
        Ok(v)
    }

    /// Receives a fixed-size byte array.
    fn recv_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        self.recv_into(&mut a)?;
        Ok(a)
    }
}

impl<C: Channel + ?Sized> ChannelExt for C {}

/// The bytes of a slice of values (empty for a zero-sized type, where bytemuck's cast refuses).
fn pod_bytes<T: Pod>(values: &[T]) -> &[u8] {
    if size_of::<T>() == 0 {
        &[]
    } else {
        bytemuck::cast_slice(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_arithmetic() {
        let a = Stats {
            bytes_sent: 10,
            bytes_received: 20,
            messages_sent: 1,
            messages_received: 2,
            rounds: 3,
        };
        let b = Stats {
            bytes_sent: 4,
            bytes_received: 5,
            messages_sent: 1,
            messages_received: 1,
            rounds: 1,
        };
        assert_eq!((a + b) - b, a);
        assert_eq!(b - a, Stats::default(), "subtraction saturates");
        let mut c = a;
        c += b;
        assert_eq!(c, a + b);
        assert_eq!(a.total_bytes(), 30);
        assert_eq!(
            a.to_string(),
            "10 B sent, 20 B received, 3 rounds (1 + 2 messages)"
        );
    }

    #[test]
    fn recorder_counts_send_to_recv_flips() {
        let mut r = StatsRecorder::default();
        r.record_recv(1); // a receive first is no flip
        r.record_send(2);
        r.record_send(3);
        r.record_recv(4); // flip
        r.record_recv(5);
        r.record_send(6);
        r.record_recv(7); // flip
        let s = r.stats();
        assert_eq!(s.rounds, 2);
        assert_eq!((s.bytes_sent, s.bytes_received), (11, 17));
        assert_eq!((s.messages_sent, s.messages_received), (3, 4));
    }

    #[test]
    fn pod_buffer_checks_lengths() {
        let mut b = PodVecBuf::<u32> {
            v: Vec::new(),
            exact: None,
        };
        assert!(matches!(
            b.prepare(6),
            Err(Error::NotMultiple {
                len: 6,
                elem_size: 4
            })
        ));
        assert_eq!(b.prepare(8).map(|s| s.len()).ok(), Some(8));
        assert_eq!(b.v.len(), 2);
        let mut e = PodVecBuf::<u32> {
            v: Vec::new(),
            exact: Some(3),
        };
        assert!(matches!(
            e.prepare(8),
            Err(Error::UnexpectedLength {
                expected: 12,
                got: 8
            })
        ));
        let mut z = PodVecBuf::<()> {
            v: Vec::new(),
            exact: None,
        };
        assert!(z.prepare(0).is_err());
        let mut v = VecBuf(Vec::with_capacity(100));
        let p = v.0.as_ptr();
        assert_eq!(v.prepare(50).map(|s| s.len()).ok(), Some(50));
        assert_eq!(v.0.as_ptr(), p, "capacity reused");
        assert_eq!(v.prepare(0).map(|s| s.len()).ok(), Some(0));
        assert_eq!(v.prepare(200).map(|s| s.len()).ok(), Some(200));
        let mut arr = [0u8; 3];
        assert!(ExactBuf(&mut arr).prepare(2).is_err());
        assert_eq!(ExactBuf(&mut arr).prepare(3).map(|s| s.len()).ok(), Some(3));
    }
}
