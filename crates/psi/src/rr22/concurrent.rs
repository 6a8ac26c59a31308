//! Concurrent RR22 buckets: one child session per worker thread, each on its own
//! sub-channel of an [`obliv_net::Mux`], fed from the caller's iterator.
//!
//! [`run_buckets`] opens sub-channel [`SUB_CONTROL`] for the set-up, splits a fresh
//! [`Rr22Session`] into `workers` children ([`Rr22Session::split`]: one base OT for the whole
//! call, one VOLE stream per child), and starts a thread per child on sub-channel
//! [`worker_sub_id`]`(k)`. It returns a [`ConcurrentBuckets`] iterator: pulling from it pulls
//! buckets from the caller's iterator, hands bucket `i` to worker `i mod workers` (so both
//! parties pair their buckets without any coordination message), and yields each bucket's
//! [`BucketOutput`] in bucket order.
//!
//! - **Bounded memory.** At most `workers + 1` buckets are taken from the caller's iterator
//!   and not yet yielded back (one running per worker and one waiting), however long the
//!   input.
//! - **Agreement.** The set-up's handshake carries the worker count, variant, bin size and
//!   roles: two parties that differ stop there with [`Error::HandshakeMismatch`]. Every
//!   bucket starts with the usual RR22 hello on its worker's sub-channel (set sizes, and the
//!   child's lineage tag, so crossed sub-channels are a mismatch too).
//! - **Errors stop everything.** The first error of any worker is yielded (then the iterator
//!   ends), no further bucket is handed out, and each worker, when it stops (after an error
//!   or at the end of the input), sends its peer worker a stop frame: a peer worker waiting
//!   for a bucket that will never come (the other side failed, or has fewer buckets) fails
//!   at once with [`Error::Protocol`] instead of waiting for the sub-channel's timeout.
//!   A worker thread that panics is reported as an error too. Dropping the iterator early
//!   stops the workers the same way and joins them. At the end of the input the workers
//!   stop once every result is in (so exhaust or drop the iterator: a peer with more buckets
//!   learns it then).
//! - **Malicious.** [`Variant::Malicious`] sessions cannot be forked (see
//!   [`Rr22Session::split`]); each worker then runs an independent session (its own
//!   SoftSpokenOT base and `Δ`, set up in its first non-empty bucket), after a set-up
//!   handshake that checks the worker count in the same way.
//!
//! Security is that of the sessions: each pair of workers runs [`Rr22Session::run`], and the
//! children of one split share `Δ` exactly as the buckets of one session do (see the fork
//! step's documentation). Bucket sizes are public, as in sequential sessions.
//!
//! The wire format of [`super::run`] and of sequential sessions is unchanged; the driver's
//! traffic is the fork step (control sub-channel) plus one ordinary session run per bucket,
//! each framed by the [`obliv_net::Mux`] (4 bytes of sub-channel id per message).

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, FrameSender, Mux, RecvBuf, Stats, SubChannel};
use rand_core::CryptoRng;
use zeroize::Zeroize;

use super::{Rr22Config, Rr22Session, Variant, code_name, role_code};
use crate::ecdh::Role;
use crate::error::{Error, Result};
use crate::handshake::{self, Hello};

/// The sub-channel id of the set-up (the fork step) on the [`Mux`].
pub const SUB_CONTROL: u32 = 0;
/// Most workers of one [`run_buckets`] call.
pub const MAX_WORKERS: usize = super::fork::MAX_CHILDREN;

/// Flag bit of the set-up hello of independent (malicious) worker sessions.
const FLAG_INDEPENDENT: u8 = 8;
/// What a worker sends its peer worker when it stops (32 bytes; never a valid RR22 frame
/// at any point where a worker receives, except with negligible probability).
const STOP: &[u8; 32] = b"obliv-psi rr22 v1 worker stopped";

/// The sub-channel id of worker `k` (`1 + k`).
pub fn worker_sub_id(k: usize) -> u32 {
    u32::try_from(k).map_or(u32::MAX, |k| k.saturating_add(1))
}

/// One finished bucket.
#[derive(Debug)]
pub struct BucketOutput<B> {
    /// Its position in the caller's iterator (0-based).
    pub index: usize,
    /// The bucket itself, handed back (for mapping result indices to the caller's rows).
    pub bucket: B,
    /// For the receiver, the indices (ascending) of the bucket's items in the intersection;
    /// `None` for the sender.
    pub result: Option<Vec<usize>>,
    /// The bucket's traffic on its worker's sub-channel.
    pub stats: Stats,
}

/// A message from a worker to the driver.
struct Done<B> {
    out: Result<BucketOutput<B>>,
}

/// The iterator of [`run_buckets`]: yields every bucket's [`BucketOutput`] in bucket order,
/// or the first error (after which it ends). Dropping it stops and joins the workers.
pub struct ConcurrentBuckets<I, B> {
    input: Option<I>,
    jobs: Vec<mpsc::Sender<(usize, B)>>,
    results: mpsc::Receiver<Done<B>>,
    handles: Vec<JoinHandle<()>>,
    /// Set when the driver stops early: workers start no further bucket.
    abort: Arc<AtomicBool>,
    workers: usize,
    dispatched: usize,
    delivered: usize,
    pending: BTreeMap<usize, BucketOutput<B>>,
    finished: bool,
    setup: Stats,
}

impl<I, B> std::fmt::Debug for ConcurrentBuckets<I, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrentBuckets")
            .field("workers", &self.workers)
            .field("dispatched", &self.dispatched)
            .field("delivered", &self.delivered)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl<I, B> ConcurrentBuckets<I, B> {
    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The set-up's traffic (the fork step on [`SUB_CONTROL`]); the buckets' traffic is in
    /// their [`BucketOutput::stats`].
    pub fn setup_stats(&self) -> Stats {
        self.setup
    }

    /// Stops handing out buckets: the workers finish the bucket they run and stop (without
    /// starting the ones already queued).
    fn stop(&mut self) {
        if !self.finished && self.dispatched != self.delivered {
            self.abort.store(true, Ordering::SeqCst);
        }
        self.finished = true;
        self.input = None;
        self.jobs.clear();
    }
}

impl<I, B> Drop for ConcurrentBuckets<I, B> {
    fn drop(&mut self) {
        self.stop();
        for h in self.handles.drain(..) {
            // A worker's panic was already turned into an error; nothing else to report.
            let _ = h.join();
        }
    }
}

impl<I, B> Iterator for ConcurrentBuckets<I, B>
where
    I: Iterator<Item = B>,
{
    type Item = Result<BucketOutput<B>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(out) = self.pending.remove(&self.delivered) {
                self.delivered += 1;
                if self.input.is_none() && self.delivered == self.dispatched {
                    // Every bucket is in: now the workers may stop (and send their stop
                    // frames).
                    self.stop();
                }
                return Some(Ok(out));
            }
            if self.finished {
                return None;
            }
            // Keep every worker busy and one bucket waiting, no more.
            while self.dispatched - self.delivered <= self.workers {
                let Some(bucket) = self.input.as_mut().and_then(Iterator::next) else {
                    // End of input. The queues stay open until every result is in: a worker
                    // that stopped earlier would send its stop frame while another one still
                    // finishes a bucket, and if that send found the connection closed (the
                    // peer done with everything) it would mark the shared sender broken under
                    // the other worker's last flush.
                    self.input = None;
                    break;
                };
                let k = self.dispatched % self.workers;
                // A worker that stopped has reported why; its error comes below.
                if let Some(q) = self.jobs.get(k) {
                    let _ = q.send((self.dispatched, bucket));
                }
                self.dispatched += 1;
            }
            if self.dispatched == self.delivered {
                self.stop();
                return None;
            }
            match self.results.recv() {
                Ok(Done { out: Ok(out) }) => {
                    self.pending.insert(out.index, out);
                }
                Ok(Done { out: Err(e) }) => {
                    self.stop();
                    return Some(Err(e));
                }
                Err(_) => {
                    self.stop();
                    return Some(Err(Error::Protocol(
                        "the RR22 worker threads stopped without a result".into(),
                    )));
                }
            }
        }
    }
}

/// Runs RR22 on many buckets at once: `workers` child sessions of one fresh session (one
/// base OT), each on its own thread and sub-channel of `mux`, bucket `i` on worker
/// `i mod workers` (see the [module documentation](self)). The peer calls `run_buckets` with
/// the same `cfg` and `workers`, the complementary role and its buckets in the same order.
///
/// Returns an iterator over the buckets' results in bucket order; it pulls from `buckets`
/// as it goes (at most `workers + 1` buckets held at a time).
///
/// `mux` must not use [`SUB_CONTROL`] or the workers' sub-channels ([`worker_sub_id`]) for
/// anything else. Items are anything `AsRef<[u8]>`, as for [`Rr22Session::run`].
///
/// # Errors
/// Here: [`Error::InvalidParameter`] for `workers` outside `1..=`[`MAX_WORKERS`] or a bad
/// `cfg`; [`Error::HandshakeMismatch`] if the peer runs another worker count, variant or bin
/// size; network, base-OT and VOLE errors of the set-up; [`Error::Net`] if a sub-channel is
/// already open. Later, from the iterator: any error of [`Rr22Session::run`] in a worker, or
/// [`Error::Protocol`] if the peer's worker stopped (it failed, or had fewer buckets).
pub fn run_buckets<S, I, B, T, R>(
    mux: &Mux<S>,
    role: Role,
    cfg: &Rr22Config,
    workers: usize,
    buckets: I,
    rng: &mut R,
) -> Result<ConcurrentBuckets<I::IntoIter, B>>
where
    S: FrameSender + Send + 'static,
    I: IntoIterator<Item = B>,
    B: AsRef<[T]> + Send + 'static,
    T: AsRef<[u8]> + Send + Sync + 'static,
    R: CryptoRng + ?Sized,
{
    if workers == 0 || workers > MAX_WORKERS {
        return Err(Error::InvalidParameter(format!(
            "RR22 runs on 1..={MAX_WORKERS} workers, not {workers}"
        )));
    }
    let mut root = Rr22Session::new(role, cfg)?;
    let mut ctrl = mux.sub(SUB_CONTROL)?;
    let children = if cfg.variant == Variant::Malicious {
        agree_independent(&mut ctrl, &root, workers)?;
        (0..workers)
            .map(|_| Rr22Session::new(role, cfg))
            .collect::<Result<Vec<_>>>()?
    } else {
        root.split(&mut ctrl, workers, rng)?
    };
    drop(root);
    let setup = ctrl.stats();
    drop(ctrl);
    let channels = (0..workers)
        .map(|k| mux.sub(worker_sub_id(k)))
        .collect::<obliv_net::Result<Vec<_>>>()?;
    let (done_tx, results) = mpsc::channel();
    let mut jobs = Vec::with_capacity(workers);
    let mut handles = Vec::with_capacity(workers);
    let abort = Arc::new(AtomicBool::new(false));
    for (k, (session, ch)) in children.into_iter().zip(channels).enumerate() {
        let (tx, rx) = mpsc::channel::<(usize, B)>();
        let mut seed = [0u8; 16];
        rng.fill_bytes(&mut seed);
        let wrng = AesRng::from_seed(seed);
        seed.zeroize();
        let (done, stop) = (done_tx.clone(), Arc::clone(&abort));
        let h = std::thread::Builder::new()
            .name(format!("obliv-rr22-worker-{k}"))
            .spawn(move || worker::<S, B, T>(k, session, ch, &rx, &done, &stop, wrng))
            .map_err(|e| Error::Protocol(format!("cannot start an RR22 worker thread: {e}")))?;
        jobs.push(tx);
        handles.push(h);
    }
    Ok(ConcurrentBuckets {
        input: Some(buckets.into_iter()),
        jobs,
        results,
        handles,
        abort,
        workers,
        dispatched: 0,
        delivered: 0,
        pending: BTreeMap::new(),
        finished: false,
        setup,
    })
}

/// The set-up of independent worker sessions: a hello with the worker count.
fn agree_independent<C: Channel + ?Sized>(
    ch: &mut C,
    root: &Rr22Session,
    workers: usize,
) -> Result<()> {
    let role = root.role();
    let ours = Hello {
        protocol: root.config().variant.protocol_id(),
        curve: 0,
        role: role_code(role),
        flags: FLAG_INDEPENDENT,
        batch: root.hello_batch(),
        n_items: workers as u64,
        param: root.hello_param(),
    };
    let other = match role {
        Role::Receiver => Role::Sender,
        Role::Sender => Role::Receiver,
    };
    let theirs = handshake::exchange(ch, &ours, role_code(other), code_name)?;
    if theirs.n_items != ours.n_items {
        return Err(Error::HandshakeMismatch {
            field: "workers",
            ours: workers.to_string(),
            theirs: theirs.n_items.to_string(),
        });
    }
    Ok(())
}

/// `after − before`, field by field.
fn diff(after: Stats, before: Stats) -> Stats {
    Stats {
        bytes_sent: after.bytes_sent - before.bytes_sent,
        bytes_received: after.bytes_received - before.bytes_received,
        messages_sent: after.messages_sent - before.messages_sent,
        messages_received: after.messages_received - before.messages_received,
        rounds: after.rounds - before.rounds,
    }
}

/// The body of worker `k`: runs the buckets of its queue until the queue closes, a bucket
/// fails or the driver aborts, then sends its peer worker [`STOP`].
fn worker<S, B, T>(
    k: usize,
    mut session: Rr22Session,
    ch: SubChannel<S>,
    jobs: &mpsc::Receiver<(usize, B)>,
    done: &mpsc::Sender<Done<B>>,
    abort: &AtomicBool,
    mut rng: AesRng,
) where
    S: FrameSender,
    B: AsRef<[T]>,
    T: AsRef<[u8]> + Sync,
{
    let mut ch = Watch {
        inner: ch,
        stopped: false,
    };
    while let Ok((index, bucket)) = jobs.recv() {
        if abort.load(Ordering::SeqCst) {
            break;
        }
        let before = ch.stats();
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
            session.run(&mut ch, bucket.as_ref(), &mut rng)
        }))
        .unwrap_or_else(|_| {
            Err(Error::Protocol(format!(
                "RR22 worker {k} panicked on bucket {index}"
            )))
        });
        let out = match r {
            Ok(result) => Ok(BucketOutput {
                index,
                bucket,
                result,
                stats: diff(ch.stats(), before),
            }),
            Err(_) if ch.stopped => Err(Error::Protocol(format!(
                "bucket {index}: the peer's RR22 worker {k} stopped (it failed, or has fewer \
                 buckets)"
            ))),
            Err(e) => Err(e),
        };
        let failed = out.is_err();
        if done.send(Done { out }).is_err() || failed {
            break;
        }
    }
    // No more buckets from this side: a peer worker still waiting for one fails at once.
    // (Best effort: if the connection is gone, the peer sees that instead.)
    let _ = ch.inner.send(STOP);
    let _ = ch.inner.flush();
}

/// A channel that turns the peer worker's [`STOP`] frame into an error (and remembers it).
struct Watch<C> {
    inner: C,
    stopped: bool,
}

impl<C: Channel> Watch<C> {
    fn check(&mut self, v: Vec<u8>) -> obliv_net::Result<Vec<u8>> {
        if v.as_slice() == STOP.as_slice() {
            self.stopped = true;
            return Err(obliv_net::Error::PeerDisconnected);
        }
        Ok(v)
    }
}

impl<C: Channel> Channel for Watch<C> {
    fn send(&mut self, msg: &[u8]) -> obliv_net::Result<()> {
        self.inner.send(msg)
    }

    fn send_vec(&mut self, msg: Vec<u8>) -> obliv_net::Result<()> {
        self.inner.send_vec(msg)
    }

    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> obliv_net::Result<()> {
        let v = self.inner.recv_max(max_len.max(STOP.len()))?;
        let v = self.check(v)?;
        if v.len() > max_len {
            return Err(obliv_net::Error::FrameTooLarge {
                len: v.len() as u64,
                max: max_len as u64,
            });
        }
        let dst = buf.prepare(v.len())?;
        if dst.len() != v.len() {
            return Err(obliv_net::Error::UnexpectedLength {
                expected: dst.len() as u64,
                got: v.len() as u64,
            });
        }
        dst.copy_from_slice(&v);
        Ok(())
    }

    fn recv_max(&mut self, max_len: usize) -> obliv_net::Result<Vec<u8>> {
        let v = self.inner.recv_max(max_len.max(STOP.len()))?;
        let v = self.check(v)?;
        if v.len() > max_len {
            return Err(obliv_net::Error::FrameTooLarge {
                len: v.len() as u64,
                max: max_len as u64,
            });
        }
        Ok(v)
    }

    fn flush(&mut self) -> obliv_net::Result<()> {
        self.inner.flush()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.inner.max_frame_len()
    }
}
