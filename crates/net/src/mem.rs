//! An in-memory channel pair between two threads of one process, for tests and benches.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::channel::{
    Channel, DEFAULT_MAX_FRAME_LEN, FrameReceiver, FrameSender, Interrupter, RecvBuf, Split, Stats,
    StatsRecorder,
};
use crate::deadline::Deadline;
use crate::error::{Error, Result, len64};

/// Default receive timeout of an in-memory channel: 60 s, so that a test whose peer never
/// answers fails instead of hanging, while slow (debug-build) computations between messages
/// still fit.
pub const DEFAULT_MEM_TIMEOUT: Duration = Duration::from_secs(60);

/// One end of an in-memory channel pair (see [`mem_pair`]).
///
/// Messages travel as owned `Vec<u8>`s over an unbounded crossbeam channel: a send never
/// blocks, [`Channel::send_vec`] and [`Channel::recv`] move the buffer without copying, and
/// [`Channel::flush`] has nothing to do. Dropping one end makes the other's receives fail with
/// [`Error::PeerDisconnected`] once the queued messages are consumed. A receive waits at most
/// the timeout and at most until the deadline ([`Channel::set_deadline`]); messages are whole,
/// so the channel stays usable after either.
#[derive(Debug)]
pub struct MemChannel {
    tx: Sender<Vec<u8>>,
    rx: Receiver<Vec<u8>>,
    timeout: Duration,
    deadline: Deadline,
    max_frame_len: usize,
    stats: StatsRecorder,
}

/// Creates a connected pair of in-memory channels with the default receive timeout
/// ([`DEFAULT_MEM_TIMEOUT`]).
///
/// ```
/// use obliv_net::{Channel, mem_pair};
/// let (mut a, mut b) = mem_pair();
/// a.send(b"hello").unwrap();
/// assert_eq!(b.recv().unwrap(), b"hello");
/// ```
pub fn mem_pair() -> (MemChannel, MemChannel) {
    mem_pair_with_timeout(DEFAULT_MEM_TIMEOUT)
}

/// Creates a connected pair of in-memory channels whose receives time out after `timeout`.
pub fn mem_pair_with_timeout(timeout: Duration) -> (MemChannel, MemChannel) {
    let (tx_ab, rx_ab) = crossbeam_channel::unbounded();
    let (tx_ba, rx_ba) = crossbeam_channel::unbounded();
    let mk = |tx, rx| MemChannel {
        tx,
        rx,
        timeout,
        deadline: Deadline::default(),
        max_frame_len: DEFAULT_MAX_FRAME_LEN,
        stats: StatsRecorder::default(),
    };
    (mk(tx_ab, rx_ba), mk(tx_ba, rx_ab))
}

impl MemChannel {
    /// Sets the receive timeout.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Sets the largest frame [`Channel::recv`] accepts.
    pub fn set_max_frame_len(&mut self, max: usize) {
        self.max_frame_len = max;
    }

    fn next(&mut self) -> Result<Vec<u8>> {
        next_message(&self.rx, self.timeout, &self.deadline, None)
    }
}

/// Takes the next message from `rx`, waiting at most `timeout` and until `deadline`.
/// A receive interrupted through `stop` (see [`FrameReceiver::interrupter`]) fails with
/// [`Error::PeerDisconnected`].
fn next_message(
    rx: &Receiver<Vec<u8>>,
    timeout: Duration,
    deadline: &Deadline,
    stop: Option<&Receiver<()>>,
) -> Result<Vec<u8>> {
    deadline.check()?;
    loop {
        let wait = deadline.bound(Some(timeout)).unwrap_or(timeout);
        let r = match stop {
            None => rx.recv_timeout(wait),
            Some(stop) => crossbeam_channel::select! {
                recv(rx) -> m => m.map_err(|_| RecvTimeoutError::Disconnected),
                // Only ever disconnected, never sent on: the interrupter dropped its sender.
                recv(stop) -> _ => return Err(Error::PeerDisconnected),
                default(wait) => Err(RecvTimeoutError::Timeout),
            },
        };
        match r {
            Ok(m) => return Ok(m),
            Err(RecvTimeoutError::Timeout) => {
                if let Some(e) = deadline.after_wait(wait, Some(timeout)) {
                    return Err(e);
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Err(Error::PeerDisconnected),
        }
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

impl Channel for MemChannel {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        self.send_vec(msg.to_vec())
    }

    fn send_vec(&mut self, msg: Vec<u8>) -> Result<()> {
        let len = msg.len();
        self.tx.send(msg).map_err(|_| Error::PeerDisconnected)?;
        self.stats.record_send(len);
        Ok(())
    }

    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        let m = self.next()?;
        self.stats.record_recv(m.len());
        check_len(m.len(), max_len.min(self.max_frame_len))?;
        let dst = buf.prepare(m.len())?;
        if dst.len() != m.len() {
            return Err(Error::UnexpectedLength {
                expected: len64(dst.len()),
                got: len64(m.len()),
            });
        }
        dst.copy_from_slice(&m);
        Ok(())
    }

    fn recv_max(&mut self, max_len: usize) -> Result<Vec<u8>> {
        let m = self.next()?;
        self.stats.record_recv(m.len());
        check_len(m.len(), max_len.min(self.max_frame_len))?;
        Ok(m)
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn stats(&self) -> Stats {
        self.stats.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    fn set_max_frame_len(&mut self, max: usize) {
        MemChannel::set_max_frame_len(self, max);
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = Deadline::new(deadline);
    }
}

/// The sending half of a [`MemChannel`] (see [`Split`]).
#[derive(Debug)]
pub struct MemSender {
    tx: Sender<Vec<u8>>,
}

/// The receiving half of a [`MemChannel`] (see [`Split`]).
#[derive(Debug)]
pub struct MemReceiver {
    rx: Receiver<Vec<u8>>,
    timeout: Duration,
    deadline: Deadline,
    max_frame_len: usize,
    /// Disconnected once the receiver is interrupted (nothing is ever sent on it).
    stop: Receiver<()>,
    /// The only sender of `stop`, dropped by an [`Interrupter`].
    stop_tx: Arc<Mutex<Option<Sender<()>>>>,
}

impl FrameSender for MemSender {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        self.send_vec(msg.to_vec())
    }

    fn send_vec(&mut self, msg: Vec<u8>) -> Result<()> {
        self.tx.send(msg).map_err(|_| Error::PeerDisconnected)
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
}

impl MemReceiver {
    fn next(&mut self, max_len: usize) -> Result<Vec<u8>> {
        let m = next_message(&self.rx, self.timeout, &self.deadline, Some(&self.stop))?;
        check_len(m.len(), max_len.min(self.max_frame_len))?;
        Ok(m)
    }
}

impl FrameReceiver for MemReceiver {
    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        let m = self.next(max_len)?;
        let dst = buf.prepare(m.len())?;
        if dst.len() != m.len() {
            return Err(Error::UnexpectedLength {
                expected: len64(dst.len()),
                got: len64(m.len()),
            });
        }
        dst.copy_from_slice(&m);
        Ok(())
    }

    fn recv_max(&mut self, max_len: usize) -> Result<Vec<u8>> {
        self.next(max_len)
    }

    fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = Deadline::new(deadline);
    }

    /// Interrupted receives fail with [`Error::PeerDisconnected`].
    fn interrupter(&self) -> Option<Interrupter> {
        let stop_tx = Arc::clone(&self.stop_tx);
        Some(Interrupter::new(move || {
            stop_tx
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
        }))
    }
}

impl Split for MemChannel {
    type Sender = MemSender;
    type Receiver = MemReceiver;

    fn split(self) -> (MemSender, MemReceiver) {
        let (stop_tx, stop) = crossbeam_channel::bounded(0);
        (
            MemSender { tx: self.tx },
            MemReceiver {
                rx: self.rx,
                timeout: self.timeout,
                deadline: self.deadline,
                max_frame_len: self.max_frame_len,
                stop,
                stop_tx: Arc::new(Mutex::new(Some(stop_tx))),
            },
        )
    }
}
