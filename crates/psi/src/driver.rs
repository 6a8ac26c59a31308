//! The bucket driver: runs one two-party PSI per bucket with one peer, for every protocol of
//! this crate, one bucket after the other or several at a time.
//!
//! A caller with a large set splits both parties' items into buckets by a shared public hash
//! (the `obliv` CLI does) and hands the driver a [`PsiSession`] and an iterator over its
//! buckets, in the same order on both sides. [`run_buckets`] yields every bucket's
//! [`BucketOutput`] in bucket order:
//!
//! - **One worker** runs the buckets on the channel itself, in the calling thread, one
//!   [`PsiSession::run`] after the other: the messages are exactly those of the protocol's
//!   session, bucket after bucket (no framing of the driver's own).
//! - **Several workers** turn the channel into an [`obliv_net::Mux`]. Sub-channel
//!   [`SUB_CONTROL`] carries the set-up: [`PsiSession::split`] makes one child session per
//!   worker (RR22 forks its VOLE, KKRT splits its OPRF, ECDH needs nothing; each checks in a
//!   handshake that the peer splits into as many), then a thread per child on sub-channel
//!   [`worker_sub_id`]`(k)`. Bucket `i` goes to worker `i mod workers`, so both parties pair
//!   their buckets without any coordination message.
//!
//! A caller that must exchange messages of its own with the peer between the set-up and the
//! buckets, or wants the set-up done before it has its buckets, calls [`prepare`] (the
//! split) and then [`Prepared::run`]; [`run_buckets`] is the two in one step.
//!
//! Either way:
//!
//! - **Bounded memory.** At most `workers + 1` buckets are taken from the caller's iterator
//!   and not yet yielded back (one running per worker and one waiting), however long the
//!   input.
//! - **Errors stop everything.** The first error of any worker is yielded (then the iterator
//!   ends), no further bucket is handed out, and each worker, when it stops (after an error
//!   or at the end of the input), sends its peer worker a stop frame: a peer worker waiting
//!   for a bucket that will never come (the other side failed, or has fewer buckets) fails
//!   at once with [`Error::Protocol`] instead of waiting for the sub-channel's timeout.
//!   A worker thread that panics is reported as an error too. Dropping the iterator early
//!   stops the workers the same way and joins them. At the end of the input the workers
//!   stop once every result is in (so exhaust or drop the iterator: a peer with more buckets
//!   learns it then).
//!
//! Security is that of the sessions: each pair of workers runs [`PsiSession::run`] on its
//! buckets, and the children of one split are as independent as the protocol's
//! [`PsiSession::split`] documents. Bucket sizes are announced in every bucket's handshake:
//! they are public, so a caller must make them depend on public data only.
//!
//! With several workers the traffic is the split step (control sub-channel) plus one
//! ordinary session run per bucket, each message framed by the [`obliv_net::Mux`] (4 bytes
//! of sub-channel id per message).

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, FrameSender, Mux, MuxOptions, RecvBuf, Split, Stats, SubChannel};
use rand_core::CryptoRng;
use zeroize::Zeroize;

use crate::error::{Error, Result};
use crate::item::PsiItem;
use crate::session::PsiSession;

/// The sub-channel id of the set-up (the fork step) on the [`Mux`].
pub const SUB_CONTROL: u32 = 0;
/// Most workers of one [`run_buckets`] call (bounds what the split step makes either side
/// compute and the threads it starts).
pub const MAX_WORKERS: usize = 64;
/// What a worker sends its peer worker when it stops (32 bytes; never a valid frame of any
/// protocol here at any point where a worker receives, except with negligible probability:
/// handshakes are 30 bytes and start with their own magic, data frames have a fixed size).
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
    /// The worker that ran it (`0..workers`; 0 with one worker). Buckets of one worker run one
    /// after the other, those of different workers side by side, so a run's round trips on
    /// the critical path are the set-up's plus the largest per-worker sum of
    /// [`Stats::rounds`].
    pub worker: usize,
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
                        "the PSI worker threads stopped without a result".into(),
                    )));
                }
            }
        }
    }
}

/// Runs the buckets on `workers` child sessions of `session` side by side, each on its own
/// thread and sub-channel of `mux` (see the [module documentation](self)). The peer calls
/// `run_concurrent` with a session of the complementary role, the same `workers` and its
/// buckets in the same order.
///
/// Returns an iterator over the buckets' results in bucket order; it pulls from `buckets`
/// as it goes (at most `workers + 1` buckets held at a time).
///
/// `mux` must not use [`SUB_CONTROL`] or the workers' sub-channels ([`worker_sub_id`]) for
/// anything else.
///
/// # Errors
/// Here: [`Error::InvalidParameter`] for `workers` outside `1..=`[`MAX_WORKERS`]; the errors
/// of [`PsiSession::split`] ([`Error::HandshakeMismatch`] if the peer runs another worker
/// count or other parameters; network and set-up errors); [`Error::Net`] if a sub-channel is
/// already open. Later, from the iterator: any error of [`PsiSession::run`] in a worker, or
/// [`Error::Protocol`] if the peer's worker stopped (it failed, or had fewer buckets).
pub fn run_concurrent<P, S, I, B, T, R>(
    mux: &Mux<S>,
    session: P,
    workers: usize,
    buckets: I,
    rng: &mut R,
) -> Result<ConcurrentBuckets<I::IntoIter, B>>
where
    P: PsiSession + 'static,
    S: FrameSender + Send + 'static,
    I: IntoIterator<Item = B>,
    B: AsRef<[T]> + Send + 'static,
    T: PsiItem + Send + Sync + 'static,
    R: CryptoRng + ?Sized,
{
    check_workers(workers)?;
    let mut ctrl = mux.sub(SUB_CONTROL)?;
    let children = split_into(&mut ctrl, session, workers, rng)?;
    let setup = ctrl.stats();
    drop(ctrl);
    spawn_workers(mux, children, setup, buckets, rng)
}

/// The split step on the control channel: `workers` children of `session`, checked to be as
/// many.
fn split_into<P, C, R>(ctrl: &mut C, mut session: P, workers: usize, rng: &mut R) -> Result<Vec<P>>
where
    P: PsiSession,
    C: Channel + ?Sized,
    R: CryptoRng + ?Sized,
{
    let children = session.split(ctrl, workers, rng)?;
    drop(session);
    if children.len() != workers {
        return Err(Error::InvalidParameter(format!(
            "the session split into {} children, not {workers}",
            children.len()
        )));
    }
    Ok(children)
}

/// Starts a worker thread per child session, on sub-channel [`worker_sub_id`]`(k)` of `mux`
/// (`setup`: the split step's traffic, for [`ConcurrentBuckets::setup_stats`]).
fn spawn_workers<P, S, I, B, T, R>(
    mux: &Mux<S>,
    children: Vec<P>,
    setup: Stats,
    buckets: I,
    rng: &mut R,
) -> Result<ConcurrentBuckets<I::IntoIter, B>>
where
    P: PsiSession + 'static,
    S: FrameSender + Send + 'static,
    I: IntoIterator<Item = B>,
    B: AsRef<[T]> + Send + 'static,
    T: PsiItem + Send + Sync + 'static,
    R: CryptoRng + ?Sized,
{
    let workers = children.len();
    let limit = children
        .first()
        .map_or(usize::MAX, PsiSession::max_frame_len);
    let channels = (0..workers)
        .map(|k| {
            let mut ch = mux.sub(worker_sub_id(k))?;
            ch.set_max_frame_len(limit);
            Ok(ch)
        })
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
            .name(format!("obliv-psi-worker-{k}"))
            .spawn(move || worker::<P, S, B, T>(k, session, ch, &rx, &done, &stop, wrng))
            .map_err(|e| Error::Protocol(format!("cannot start a PSI worker thread: {e}")))?;
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

fn check_workers(workers: usize) -> Result<()> {
    if workers == 0 || workers > MAX_WORKERS {
        return Err(Error::InvalidParameter(format!(
            "buckets run on 1..={MAX_WORKERS} workers, not {workers}"
        )));
    }
    Ok(())
}

/// One bucket run by the caller's function in [`Sequential`]: the result and the bucket's
/// traffic.
pub type RunOutput = (Option<Vec<usize>>, Stats);

/// The per-bucket function of a [`Sequential`] driver.
type RunFn<'a, B> = Box<dyn FnMut(&B) -> Result<RunOutput> + 'a>;

/// The one-worker driver: runs each bucket with the caller's function in the calling thread,
/// in order, and stops at the first error. [`run_buckets`] builds one for a [`PsiSession`];
/// [`sequential`] for any other per-bucket protocol (three-party ECDH-PSI, say).
pub struct Sequential<'a, I, B> {
    input: I,
    run: RunFn<'a, B>,
    index: usize,
    failed: bool,
}

impl<I, B> std::fmt::Debug for Sequential<'_, I, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sequential")
            .field("index", &self.index)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl<I: Iterator<Item = B>, B> Iterator for Sequential<'_, I, B> {
    type Item = Result<BucketOutput<B>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let bucket = self.input.next()?;
        let index = self.index;
        self.index += 1;
        Some(match (self.run)(&bucket) {
            Ok((result, stats)) => Ok(BucketOutput {
                index,
                bucket,
                result,
                stats,
                worker: 0,
            }),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        })
    }
}

/// The one-worker driver over the caller's per-bucket function `run` (which returns the
/// bucket's result and traffic): the same iterator, order and error behaviour as
/// [`run_buckets`] with one worker.
pub fn sequential<'a, I, B, F>(buckets: I, run: F) -> Sequential<'a, I::IntoIter, B>
where
    I: IntoIterator<Item = B>,
    F: FnMut(&B) -> Result<RunOutput> + 'a,
{
    Sequential {
        input: buckets.into_iter(),
        run: Box::new(run),
        index: 0,
        failed: false,
    }
}

/// The iterator of [`run_buckets`]: every bucket's [`BucketOutput`] in bucket order, or the
/// first error (after which it ends).
#[derive(Debug)]
pub enum Buckets<'a, I, B> {
    /// One worker, on the channel itself.
    Sequential(Sequential<'a, I, B>),
    /// Several workers on sub-channels of a [`Mux`].
    Concurrent(ConcurrentBuckets<I, B>),
}

impl<I, B> Buckets<'_, I, B> {
    /// The set-up's traffic (the split step; nothing with one worker); the buckets' traffic
    /// is in their [`BucketOutput::stats`].
    pub fn setup_stats(&self) -> Stats {
        match self {
            Buckets::Sequential(_) => Stats::default(),
            Buckets::Concurrent(c) => c.setup_stats(),
        }
    }
}

impl<I: Iterator<Item = B>, B> Iterator for Buckets<'_, I, B> {
    type Item = Result<BucketOutput<B>>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Buckets::Sequential(s) => s.next(),
            Buckets::Concurrent(c) => c.next(),
        }
    }
}

/// Runs one PSI per bucket with the peer on `ch`: `session` (a fresh [`PsiSession`] of this
/// party's role) on every bucket of `buckets`, on `workers` workers (see the
/// [module documentation](self)). The peer calls `run_buckets` with a session of the
/// complementary role, the same protocol and `workers`, and its buckets in the same order.
///
/// With one worker the buckets run on `ch` itself, in the thread that pulls from the
/// iterator; with more, `ch` becomes an [`obliv_net::Mux`] (each worker's sub-channel may
/// queue `MuxOptions::default().max_queued` bytes) and [`run_concurrent`] runs them.
///
/// First, `ch`'s frame limit is lowered to the protocol's
/// ([`PsiSession::max_frame_len`]; a tighter limit the caller set stays): a peer announcing a
/// longer frame is refused before any of it is buffered.
///
/// This is [`prepare`] and [`Prepared::run`] in one step, for a caller that has nothing to
/// exchange between the set-up and the buckets.
///
/// # Errors
/// As [`run_concurrent`] (nothing is sent here with one worker).
pub fn run_buckets<'a, P, C, I, B, T, R>(
    ch: C,
    session: P,
    workers: usize,
    buckets: I,
    rng: &mut R,
) -> Result<Buckets<'a, I::IntoIter, B>>
where
    P: PsiSession + 'static,
    C: Split + 'a,
    C::Sender: Send + 'static,
    I: IntoIterator<Item = B>,
    B: AsRef<[T]> + Send + 'static,
    T: PsiItem + Send + Sync + 'static,
    R: CryptoRng + ?Sized,
{
    let mut ch = ch;
    ch.set_max_frame_len(ch.max_frame_len().min(session.max_frame_len()));
    let idle = MuxOptions::default().recv_timeout;
    prepare(ch, session, workers, idle, rng)?.run(buckets, rng)
}

/// The set-up of [`run_buckets`] on its own, for a caller that runs it before it has its
/// buckets (even before it knows their sizes; the split does not depend on them) and
/// exchanges its own messages with the peer between the set-up and the buckets: the `obliv`
/// CLI splits the session while it reads its input, then agrees on the bucket plan on
/// [`Prepared::control`], then sets the plan's bounds with [`Prepared::set_job_limits`] and
/// runs the buckets with [`Prepared::run`]. The peer calls `prepare` at the same point with
/// a session of the complementary role and the same `workers`.
///
/// With one worker nothing happens here (the session sets itself up in its first run);
/// with more, `ch` becomes an [`obliv_net::Mux`] whose receives wait at most `idle` while
/// the connection delivers nothing ([`MuxOptions::recv_timeout`]; a caller whose peer may
/// take long between the set-up and the buckets passes at least that pause), and the
/// session is split on its [`SUB_CONTROL`] sub-channel.
///
/// Frame limits: `ch`'s limit (which the caller sets to the longest frame it accepts at
/// all, its own messages' included) stays the connection's; each worker's sub-channel gets
/// the protocol's ([`PsiSession::max_frame_len`]), and the control sub-channel the protocol's
/// during the split (the caller may set another on [`Prepared::control`] for its own
/// messages).
///
/// # Errors
/// [`Error::InvalidParameter`] for `workers` outside `1..=`[`MAX_WORKERS`]; the errors of
/// [`PsiSession::split`] ([`Error::HandshakeMismatch`] if the peer runs another worker count
/// or other parameters; network and set-up errors); [`Error::Net`] if the multiplexer cannot
/// start.
pub fn prepare<P, C, R>(
    ch: C,
    session: P,
    workers: usize,
    idle: std::time::Duration,
    rng: &mut R,
) -> Result<Prepared<P, C>>
where
    P: PsiSession,
    C: Split,
    C::Sender: Send + 'static,
    R: CryptoRng + ?Sized,
{
    check_workers(workers)?;
    if workers == 1 {
        return Ok(Prepared {
            stage: Stage::One { ch, session },
        });
    }
    let opts = MuxOptions {
        recv_timeout: idle,
        // Each worker's sub-channel holds at most `max_queued_per_sub` plus one message: the
        // peer's sends wait for credit beyond that (obliv-net's Mux flow control).
        max_queued: MuxOptions::default().max_queued.saturating_mul(workers),
        ..MuxOptions::default()
    };
    let mux = Mux::with_options(ch, opts)?;
    let mut control = mux.sub(SUB_CONTROL)?;
    let connection_limit = control.max_frame_len();
    control.set_max_frame_len(session.max_frame_len());
    let children = split_into(&mut control, session, workers, rng)?;
    control.set_max_frame_len(connection_limit);
    let setup = control.stats();
    Ok(Prepared {
        stage: Stage::Many {
            mux,
            control,
            children,
            setup,
        },
    })
}

/// A bucket driver whose set-up ([`prepare`]) is done and whose buckets have not started.
pub struct Prepared<P, C: Split> {
    stage: Stage<P, C>,
}

/// What [`Prepared`] holds: the channel and the session (one worker), or the multiplexer,
/// its control sub-channel and the children of the split (several).
enum Stage<P, C: Split> {
    One {
        ch: C,
        session: P,
    },
    Many {
        mux: Mux<C::Sender>,
        control: SubChannel<C::Sender>,
        children: Vec<P>,
        setup: Stats,
    },
}

impl<P, C: Split> std::fmt::Debug for Prepared<P, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let workers = match &self.stage {
            Stage::One { .. } => 1,
            Stage::Many { children, .. } => children.len(),
        };
        f.debug_struct("Prepared")
            .field("workers", &workers)
            .finish_non_exhaustive()
    }
}

impl<P: PsiSession, C: Split> Prepared<P, C>
where
    C::Sender: Send + 'static,
{
    /// The number of workers.
    pub fn workers(&self) -> usize {
        match &self.stage {
            Stage::One { .. } => 1,
            Stage::Many { children, .. } => children.len(),
        }
    }

    /// The channel for the caller's own messages with the peer before the buckets: the
    /// channel itself with one worker, the [`SUB_CONTROL`] sub-channel with several (closed
    /// when the buckets start).
    pub fn control(&mut self) -> &mut dyn Channel {
        match &mut self.stage {
            Stage::One { ch, .. } => ch,
            Stage::Many { control, .. } => control,
        }
    }

    /// The set-up's traffic (the split step; nothing with one worker), without the caller's
    /// messages on [`control`](Self::control).
    pub fn setup_stats(&self) -> Stats {
        match &self.stage {
            Stage::One { .. } => Stats::default(),
            Stage::Many { setup, .. } => *setup,
        }
    }

    /// Sets the job's bounds on the session or on every child of the split
    /// ([`PsiSession::set_job_limits`]); the peer sets the same `stat_security`.
    ///
    /// # Errors
    /// Those of [`PsiSession::set_job_limits`].
    pub fn set_job_limits(&mut self, max_peer_items: usize, stat_security: u32) -> Result<()> {
        match &mut self.stage {
            Stage::One { session, .. } => session.set_job_limits(max_peer_items, stat_security),
            Stage::Many { children, .. } => children
                .iter_mut()
                .try_for_each(|c| c.set_job_limits(max_peer_items, stat_security)),
        }
    }

    /// Runs the buckets as [`run_buckets`] does after its set-up: returns an iterator over
    /// their results in bucket order, pulling from `buckets` as it goes. With one worker the
    /// channel's frame limit is lowered to the protocol's first.
    ///
    /// # Errors
    /// [`Error::Net`] if a worker's sub-channel is already open, or a worker thread cannot
    /// start; later, from the iterator, as [`run_concurrent`]'s.
    pub fn run<'a, I, B, T, R>(self, buckets: I, rng: &mut R) -> Result<Buckets<'a, I::IntoIter, B>>
    where
        P: 'static,
        C: 'a,
        I: IntoIterator<Item = B>,
        B: AsRef<[T]> + Send + 'static,
        T: PsiItem + Send + Sync + 'static,
        R: CryptoRng + ?Sized,
    {
        match self.stage {
            Stage::One {
                mut ch,
                mut session,
            } => {
                ch.set_max_frame_len(ch.max_frame_len().min(session.max_frame_len()));
                let mut seed = [0u8; 16];
                rng.fill_bytes(&mut seed);
                let mut rng = AesRng::from_seed(seed);
                seed.zeroize();
                Ok(Buckets::Sequential(sequential(buckets, move |b: &B| {
                    let before = ch.stats();
                    let result = session.run(&mut ch, b.as_ref(), &mut rng)?;
                    Ok((result, ch.stats() - before))
                })))
            }
            Stage::Many {
                mux,
                control,
                children,
                setup,
            } => {
                drop(control);
                spawn_workers(&mux, children, setup, buckets, rng).map(Buckets::Concurrent)
            }
        }
    }
}

/// The body of worker `k`: runs the buckets of its queue until the queue closes, a bucket
/// fails or the driver aborts, then sends its peer worker [`STOP`].
fn worker<P, S, B, T>(
    k: usize,
    mut session: P,
    ch: SubChannel<S>,
    jobs: &mpsc::Receiver<(usize, B)>,
    done: &mpsc::Sender<Done<B>>,
    abort: &AtomicBool,
    mut rng: AesRng,
) where
    P: PsiSession,
    S: FrameSender,
    B: AsRef<[T]>,
    T: PsiItem + Sync,
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
                "PSI worker {k} panicked on bucket {index}"
            )))
        });
        let out = match r {
            Ok(result) => Ok(BucketOutput {
                index,
                bucket,
                result,
                stats: ch.stats() - before,
                worker: k,
            }),
            Err(_) if ch.stopped => Err(Error::Protocol(format!(
                "bucket {index}: the peer's worker {k} stopped (it failed, or has fewer \
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

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.inner.set_deadline(deadline)
    }
    fn set_max_frame_len(&mut self, max: usize) {
        self.inner.set_max_frame_len(max)
    }
}
