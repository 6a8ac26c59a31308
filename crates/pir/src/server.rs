//! A PIR server over TCP (or any [`Channel`]) and its client.
//!
//! # Wire protocol
//!
//! One request frame, one response frame, repeated on a connection for as long as the client
//! likes. A request is a tag byte and a body:
//!
//! | tag | request | body | response body |
//! |---|---|---|---|
//! | 1 | info | empty | `N` (u64) ‖ record length (u64) ‖ batch buckets (u64, 0: none) ‖ batch seed (16) |
//! | 2 | DPF-PIR | one DPF key ([`crate::dpf_pir`]) | one padded record |
//! | 3 | batch | `B` DPF keys ([`crate::batch`]) | `B` padded records |
//! | 4 | IT-PIR | a column subset ([`crate::it_pir`]) | `rows` padded records |
//!
//! A response starts with a status byte: 0 ok (then the body), 1 error (then a UTF-8 message),
//! 2 busy. Integers are little-endian.
//!
//! # Server
//!
//! [`PirServer`] accepts connections on a [`TcpListener`]; each connection gets a light I/O
//! thread (at most [`ServerConfig::max_connections`]; beyond that a connection is answered
//! "busy" and closed) that reads requests of at most [`ServerConfig::max_query_len`] bytes with
//! an idle timeout, and closes the connection (freeing its slot) when a request is not received
//! whole and answered within [`ServerConfig::request_deadline`], however slowly its bytes
//! trickle in. The work (key expansion and scan) runs on a pool of
//! [`ServerConfig::workers`] threads, by default one per core, fed by a bounded queue of
//! [`ServerConfig::queue_depth`] requests: when the queue is full a connection waits up to
//! [`ServerConfig::queue_timeout`] (back-pressure) and then answers "busy". A worker takes up
//! to [`ServerConfig::coalesce`] queued DPF-PIR queries at once and answers them in a single
//! pass over the database, so concurrent clients share one read of it from memory.
//!
//! # Client
//!
//! [`PirClient`] checks every size in the servers' info message (records, record length,
//! buckets) and the response length every query implies against its [`ClientLimits`] before
//! allocating for it ([`Error::LimitExceeded`] names the field), builds the batch layout only
//! on its first batch query, and gives every request [`ClientLimits::request_deadline`] to be
//! answered by both servers.

use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender, bounded};
use obliv_core::AesRng;
use obliv_net::{Channel, ConnectOptions, Stats, TcpChannel, TcpOptions, TlsConfig};
use zeroize::Zeroizing;

use crate::batch::{self, BatchLayout, BatchParams};
use crate::db::{Database, MAX_RECORD_LEN, MAX_RECORDS};
use crate::error::{Error, Result};
use crate::{dpf_pir, it_pir};

const TAG_INFO: u8 = 1;
const TAG_DPF: u8 = 2;
const TAG_BATCH: u8 = 3;
const TAG_IT: u8 = 4;
const STATUS_OK: u8 = 0;
const STATUS_ERROR: u8 = 1;
const STATUS_BUSY: u8 = 2;

/// Most [`ServerConfig::workers`] (threads spawned when the server starts).
pub const MAX_WORKERS: usize = 1 << 12;

/// Deepest [`ServerConfig::queue_depth`] (the queue is allocated when the server starts).
pub const MAX_QUEUE_DEPTH: usize = 1 << 20;

/// Settings of a [`PirServer`].
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Worker threads that compute answers. Default: the number of cores.
    pub workers: usize,
    /// Requests waiting for a worker before connections are held back. Default 64.
    pub queue_depth: usize,
    /// How long a request may wait for room in the queue before the answer is "busy".
    /// Default 10 s.
    pub queue_timeout: Duration,
    /// Concurrent connections; more are answered "busy" and closed. Default 1024.
    pub max_connections: usize,
    /// Largest request frame accepted. Default 1 MiB (a DPF key for `N = 2^32` is 449 bytes).
    pub max_query_len: usize,
    /// A connection idle for this long is closed, and a response write that the client does
    /// not take for this long fails. Default 60 s.
    pub idle_timeout: Duration,
    /// Total time for each request: from when the connection's thread starts waiting for it
    /// (on accepting the connection, then after each response) until its response is written,
    /// the request must arrive whole, find room in the queue, be computed and be written back;
    /// otherwise the connection is closed and its slot freed. A client that trickles a request
    /// in one byte at a time, or reads the response that slowly, is cut off by this; so is a
    /// connection that sends nothing for this long (when that is shorter than
    /// `idle_timeout`). Default 30 s.
    pub request_deadline: Duration,
    /// Batch layout offered to clients (`None`: no batch queries). Default: batches of 10.
    pub batch: Option<BatchParams>,
    /// Most queued DPF-PIR queries a worker answers together in one pass over the database
    /// ([`dpf_pir::answer_many`]). Default 16; 1 turns coalescing off.
    pub coalesce: usize,
    /// Threads that split the scan of a single DPF-PIR query ([`dpf_pir::answer_parallel`]).
    /// Default 1: concurrency comes from the workers; raise it (to cores / workers, or with
    /// fewer workers) for lower latency at low load when memory bandwidth grows with cores.
    pub scan_threads: usize,
    /// TLS 1.3 on every connection (`None`: plaintext, the default). Clients must open with a
    /// TLS handshake (a plaintext client is refused) and present a certificate issued by one
    /// of the configuration's trusted certificates; any such client may query. Over the
    /// connection limit a TLS server closes the connection without an answer (a "busy" reply
    /// would need a handshake first).
    pub tls: Option<TlsConfig>,
    /// Time for a client's TLS handshake, from the accepted connection. Default 10 s.
    pub handshake_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            workers: thread::available_parallelism().map_or(1, |n| n.get()),
            queue_depth: 64,
            queue_timeout: Duration::from_secs(10),
            max_connections: 1024,
            max_query_len: 1 << 20,
            idle_timeout: Duration::from_secs(60),
            request_deadline: Duration::from_secs(30),
            batch: Some(BatchParams::for_batch(10)),
            coalesce: 16,
            scan_threads: 1,
            tls: None,
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// What a server holds: the database and the batch layout.
#[derive(Debug)]
pub struct ServerState {
    db: Database,
    layout: Option<BatchLayout>,
    scan_threads: usize,
}

impl ServerState {
    /// A state for `db`, with the batch layout of `batch` if given.
    pub fn new(db: Database, batch: Option<BatchParams>) -> Result<Self> {
        let layout = batch.map(|p| BatchLayout::new(db.len(), p)).transpose()?;
        Ok(ServerState {
            db,
            layout,
            scan_threads: 1,
        })
    }

    /// Splits the scan of each single DPF-PIR query over `threads` threads.
    pub fn with_scan_threads(mut self, threads: usize) -> Self {
        self.scan_threads = threads.max(1);
        self
    }

    /// The database.
    pub fn db(&self) -> &Database {
        &self.db
    }

    /// Computes the response frame to one request frame (never panics on any input).
    pub fn handle(&self, req: &[u8]) -> Vec<u8> {
        let result = match req.split_first() {
            Some((&TAG_INFO, [])) => {
                let mut v = Vec::with_capacity(40);
                v.extend_from_slice(&(self.db.len() as u64).to_le_bytes());
                v.extend_from_slice(&(self.db.record_len() as u64).to_le_bytes());
                let (b, seed) = self
                    .layout
                    .as_ref()
                    .map_or((0, [0; 16]), |l| (l.buckets(), l.params().seed));
                v.extend_from_slice(&(b as u64).to_le_bytes());
                v.extend_from_slice(&seed);
                Ok(v)
            }
            Some((&TAG_DPF, key)) if self.scan_threads > 1 => {
                dpf_pir::answer_parallel(&self.db, key, self.scan_threads)
            }
            Some((&TAG_DPF, key)) => dpf_pir::answer(&self.db, key),
            Some((&TAG_BATCH, keys)) => match &self.layout {
                Some(l) => batch::answer(&self.db, l, keys),
                None => Err(Error::Malformed {
                    what: "this server offers no batch queries",
                }),
            },
            Some((&TAG_IT, subset)) => it_pir::answer(&self.db, subset),
            _ => Err(Error::Malformed {
                what: "unknown request",
            }),
        };
        response_frame(result)
    }

    /// Answers a group of queued requests: the DPF-PIR queries among them together, in one
    /// pass over the database, the others one by one.
    fn handle_jobs(&self, jobs: Vec<Job>) {
        let (dpf, other): (Vec<Job>, Vec<Job>) = jobs
            .into_iter()
            .partition(|j| j.req.first() == Some(&TAG_DPF));
        for j in other {
            let _ = j.reply.send(self.handle(&j.req));
        }
        match dpf.len() {
            0 => {}
            1 => {
                for j in dpf {
                    let _ = j.reply.send(self.handle(&j.req));
                }
            }
            _ => {
                let keys: Vec<&[u8]> = dpf.iter().map(|j| &j.req[1..]).collect();
                let answers = dpf_pir::answer_many(&self.db, &keys);
                for (j, a) in dpf.iter().zip(answers) {
                    let _ = j.reply.send(response_frame(a));
                }
            }
        }
    }

    /// Serves requests on `ch` in this thread until the peer disconnects (then `Ok`) or the
    /// channel fails (a timeout included, or a deadline set on `ch` beforehand, which bounds
    /// the whole session). [`PirServer`] adds a deadline per request
    /// ([`ServerConfig::request_deadline`]); this loop does not.
    pub fn serve_channel<C: Channel + ?Sized>(
        &self,
        ch: &mut C,
        max_query_len: usize,
    ) -> Result<()> {
        loop {
            // The request holds the client's key: wiped once answered.
            let req = Zeroizing::new(match ch.recv_max(max_query_len) {
                Ok(r) => r,
                Err(obliv_net::Error::PeerDisconnected) => return Ok(()),
                Err(e) => return Err(e.into()),
            });
            let resp = self.handle(&req);
            ch.send_vec(resp)?;
            ch.flush()?;
        }
    }
}

/// The response frame for a result: status byte, then the body or the error message.
fn response_frame(r: Result<Vec<u8>>) -> Vec<u8> {
    match r {
        Ok(body) => {
            let mut v = Vec::with_capacity(body.len() + 1);
            v.push(STATUS_OK);
            v.extend_from_slice(&body);
            v
        }
        Err(e) => {
            let mut v = vec![STATUS_ERROR];
            v.extend_from_slice(e.to_string().as_bytes());
            v
        }
    }
}

/// One request for the worker pool.
struct Job {
    /// The request frame (a client's key: wiped when the job is done).
    req: Zeroizing<Vec<u8>>,
    reply: Sender<Vec<u8>>,
}

/// A multi-client PIR server over TCP (see the module documentation).
#[derive(Debug)]
pub struct PirServer {
    state: Arc<ServerState>,
    config: ServerConfig,
}

/// A server running on background threads; [`ServerHandle::shutdown`] stops accepting.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections and waits for the accept loop to end, not for open
    /// connections: each answers the request it has already read and then closes (one waiting
    /// for a request closes when the next one arrives, or at its timeout).
    pub fn shutdown(mut self) -> Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept; failure means it is not listening any more.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(Error::Server("accept thread panicked".into()))),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

impl PirServer {
    /// A server for `db` (builds the batch layout if `config.batch` is set).
    ///
    /// Errors: [`Error::InvalidParameter`] for zero workers, queue depth, limits or request
    /// deadline, and for more than [`MAX_WORKERS`] workers or a queue deeper than
    /// [`MAX_QUEUE_DEPTH`] (both are allocated when the server starts).
    pub fn new(db: Database, config: ServerConfig) -> Result<Self> {
        if config.workers == 0
            || config.queue_depth == 0
            || config.max_connections == 0
            || config.request_deadline.is_zero()
        {
            return Err(Error::InvalidParameter {
                what: "workers, queue depth, connection limit and request deadline must be positive",
            });
        }
        if config.workers > MAX_WORKERS || config.queue_depth > MAX_QUEUE_DEPTH {
            return Err(Error::InvalidParameter {
                what: "at most 2^12 workers and a queue of at most 2^20 requests",
            });
        }
        let state =
            Arc::new(ServerState::new(db, config.batch)?.with_scan_threads(config.scan_threads));
        Ok(PirServer { state, config })
    }

    /// The shared state (database and layout).
    pub fn state(&self) -> &Arc<ServerState> {
        &self.state
    }

    /// Serves on `listener` in this thread, forever (or until an accept error).
    pub fn serve(&self, listener: TcpListener) -> Result<()> {
        self.run(listener, &AtomicBool::new(false))
    }

    /// Serves on `listener` on background threads.
    pub fn spawn(self, listener: TcpListener) -> Result<ServerHandle> {
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = thread::Builder::new()
            .name("obliv-pir-accept".into())
            .spawn(move || self.run(listener, &s))?;
        Ok(ServerHandle {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    fn run(&self, listener: TcpListener, stop: &AtomicBool) -> Result<()> {
        let (tx, rx) = bounded::<Job>(self.config.queue_depth);
        let mut workers = Vec::with_capacity(self.config.workers);
        for i in 0..self.config.workers {
            let rx: Receiver<Job> = rx.clone();
            let state = Arc::clone(&self.state);
            let coalesce = self.config.coalesce.max(1);
            workers.push(
                thread::Builder::new()
                    .name(format!("obliv-pir-worker-{i}"))
                    .spawn(move || {
                        // Ends when every sender (accept loop and connections) is gone.
                        for job in &rx {
                            let mut jobs = vec![job];
                            while jobs.len() < coalesce {
                                match rx.try_recv() {
                                    Ok(j) => jobs.push(j),
                                    Err(_) => break,
                                }
                            }
                            // Answering never panics on any request; should it all the
                            // same, the worker stays in the pool (the jobs' connections get
                            // no reply and close at their request deadline).
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                state.handle_jobs(jobs);
                            }));
                        }
                    })?,
            );
        }
        drop(rx);
        let active = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicBool::new(false));
        for stream in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else {
                // A failed accept (out of file descriptors, say) fails again at once: pause
                // rather than spin a core until the condition clears.
                thread::sleep(Duration::from_millis(10));
                continue;
            };
            let Some(slot) = Slot::take(&active, self.config.max_connections) else {
                if self.config.tls.is_none() {
                    refuse(stream);
                }
                continue;
            };
            let tx = tx.clone();
            let config = self.config.clone();
            let stopped = Arc::clone(&stopped);
            // Out of threads: the connection and its slot are dropped with the closure.
            let _ = spawn_connection(
                thread::Builder::new().name("obliv-pir-conn".into()),
                slot,
                move || {
                    let _ = connection(stream, &tx, &config, &stopped);
                },
            );
        }
        // Open connections answer what they have already read and then close; the workers end
        // when the last of them has. Waiting for them here would hold `shutdown` for as long as
        // any client stays connected (forever, for one that keeps sending requests).
        stopped.store(true, Ordering::SeqCst);
        drop(tx);
        drop(workers);
        Ok(())
    }
}

/// One of the [`ServerConfig::max_connections`] connection slots, given back when dropped
/// (when its connection ends, or with the connection's closure if no thread could be spawned
/// for it).
struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// A slot of `active`, unless `max` are taken.
    fn take(active: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        if active.fetch_add(1, Ordering::SeqCst) >= max {
            active.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Slot(Arc::clone(active)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `serve` on a thread of `builder`, holding `slot` until it returns; if the thread
/// cannot be spawned the slot is given back at once.
fn spawn_connection(
    builder: thread::Builder,
    slot: Slot,
    serve: impl FnOnce() + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    builder.spawn(move || {
        let _slot = slot;
        serve();
    })
}

/// Answers "busy" on a connection over the limit and closes it.
fn refuse(stream: TcpStream) {
    let opts = TcpOptions {
        read_ahead: None,
        ..TcpOptions::default()
    };
    if let Ok(mut ch) = TcpChannel::from_stream(stream, opts) {
        let _ = ch.send(&[STATUS_BUSY]);
        let _ = ch.close();
    }
}

/// Serves one connection: read a request, queue it for the pool, send the reply; each request
/// within [`ServerConfig::request_deadline`] of the start of its wait.
/// Once `stopped` is set (the server was shut down) a request read afterwards is not answered:
/// the connection closes.
fn connection(
    stream: TcpStream,
    jobs: &Sender<Job>,
    config: &ServerConfig,
    stopped: &AtomicBool,
) -> Result<()> {
    let opts = TcpOptions {
        read_timeout: Some(config.idle_timeout),
        write_timeout: Some(config.idle_timeout),
        max_frame_len: config.max_query_len,
        read_ahead: None,
        ..TcpOptions::default()
    };
    let mut ch = match &config.tls {
        Some(tls) => {
            TcpChannel::tls_server_from_stream(stream, tls, config.handshake_timeout, opts)?
        }
        None => TcpChannel::from_stream(stream, opts)?,
    };
    let (reply_tx, reply_rx) = bounded(1);
    loop {
        let end = Instant::now() + config.request_deadline;
        ch.set_deadline(Some(end));
        let req = match ch.recv_max(config.max_query_len) {
            Ok(r) => r,
            Err(obliv_net::Error::PeerDisconnected) => return Ok(()),
            Err(e) => {
                // Best effort (a channel broken mid-frame sends nothing): tell the client why.
                ch.set_deadline(None);
                let mut v = vec![STATUS_ERROR];
                v.extend_from_slice(e.to_string().as_bytes());
                let _ = ch.send(&v);
                let _ = ch.flush();
                return Err(e.into());
            }
        };
        if stopped.load(Ordering::SeqCst) {
            return Ok(());
        }
        let job = Job {
            req: Zeroizing::new(req),
            reply: reply_tx.clone(),
        };
        let left = || end.saturating_duration_since(Instant::now());
        let resp = match jobs.send_timeout(job, config.queue_timeout.min(left())) {
            Ok(()) => match reply_rx.recv_timeout(left()) {
                Ok(r) => r,
                // The answer would come too late: close (the worker's reply is dropped).
                Err(RecvTimeoutError::Timeout) => return Err(deadline_passed(config)),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::Server("worker pool stopped".into()));
                }
            },
            Err(SendTimeoutError::Timeout(_)) if left().is_zero() => {
                return Err(deadline_passed(config));
            }
            Err(SendTimeoutError::Timeout(_)) => vec![STATUS_BUSY],
            Err(SendTimeoutError::Disconnected(_)) => return Ok(()),
        };
        // The write is bounded by what is left of the deadline, too.
        ch.send_vec(resp)?;
        ch.flush()?;
    }
}

/// The error that ends a connection whose request ran out of time before it was answered.
fn deadline_passed(config: &ServerConfig) -> Error {
    Error::Net(obliv_net::Error::DeadlineExceeded {
        set_for: config.request_deadline,
    })
}

/// Serves `db` on `listener` with the default configuration, forever: the entry point for
/// `obliv pir serve`.
pub fn serve(listener: TcpListener, db: Database, config: ServerConfig) -> Result<()> {
    PirServer::new(db, config)?.serve(listener)
}

/// What a server announces about its database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerInfo {
    /// Number of records.
    pub records: usize,
    /// Record length in bytes.
    pub record_len: usize,
    /// Batch parameters, if the server takes batch queries.
    pub batch: Option<BatchParams>,
}

/// What a [`PirClient`] agrees to from the servers' info messages: every size a server
/// announces is checked against these before the client allocates anything for it, and a
/// larger one is [`Error::LimitExceeded`] naming the field. Also how long it waits for an
/// answer.
///
/// The batch layout costs the client at most 12 bytes per record (built on the first batch
/// query), and every response frame is read into memory, so the defaults keep a hostile
/// server's announcements to about 768 MiB of layout and 256 MiB per response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientLimits {
    /// Most records (`N`). Default 2^26 (the format allows 2^32).
    pub max_records: usize,
    /// Longest record in bytes. Default 1 MiB (the format allows 16 MiB).
    pub max_record_len: usize,
    /// Most batch buckets. Default `2 · batch::MAX_BATCH` (2^15).
    pub max_buckets: usize,
    /// Longest response a query may imply (one padded record for DPF-PIR, `B` for a batch,
    /// `rows` for IT-PIR). Default 256 MiB.
    pub max_response_len: usize,
    /// Total time for each request, the info request of [`PirClient::with_limits`] included:
    /// from sending it to the two servers until both responses are in, however slowly their
    /// bytes arrive; past it the request fails with the channel's
    /// [`obliv_net::Error::DeadlineExceeded`] (inside [`Error::Net`]). `None`: only the
    /// channels' idle timeouts apply. Default 60 s (a server's own default
    /// [`ServerConfig::request_deadline`] is 30 s).
    pub request_deadline: Option<Duration>,
}

impl Default for ClientLimits {
    fn default() -> Self {
        ClientLimits {
            max_records: 1 << 26,
            max_record_len: 1 << 20,
            max_buckets: batch::MAX_BATCH * 2,
            max_response_len: 1 << 28,
            request_deadline: Some(Duration::from_secs(60)),
        }
    }
}

/// `Err(LimitExceeded)` unless `got ≤ max`.
fn within(field: &'static str, got: u64, max: usize) -> Result<()> {
    if got > max as u64 {
        return Err(Error::LimitExceeded {
            field,
            got,
            max: max as u64,
        });
    }
    Ok(())
}

/// A client of two PIR servers over any pair of channels.
pub struct PirClient<C: Channel> {
    servers: [C; 2],
    info: ServerInfo,
    limits: ClientLimits,
    /// Built on the first batch query.
    layout: Option<BatchLayout>,
    rng: AesRng,
    /// A request failed before both responses were read whole: a server's answer to it may
    /// still be on its way, and would be taken for the answer to the next request (a wrong
    /// record, silently). Every later request fails instead.
    out_of_step: bool,
}

impl<C: Channel> core::fmt::Debug for PirClient<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PirClient")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl PirClient<TcpChannel> {
    fn connect_options() -> ConnectOptions {
        ConnectOptions {
            tcp: TcpOptions {
                read_ahead: None,
                ..TcpOptions::default()
            },
            ..ConnectOptions::default()
        }
    }

    /// Connects to the two servers (retrying for up to 30 s while they start).
    pub fn connect<A: ToSocketAddrs + std::fmt::Display>(addr0: A, addr1: A) -> Result<Self> {
        let opts = Self::connect_options();
        let c0 = TcpChannel::connect(addr0, &opts)?;
        let c1 = TcpChannel::connect(addr1, &opts)?;
        Self::new(c0, c1, AesRng::from_entropy())
    }

    /// Connects to the two servers over TLS 1.3 with mutual authentication: server `b`'s
    /// certificate must be issued by one of `tls`'s trusted certificates and name
    /// `hosts[b]` (a DNS or IP subject alternative name), and this client presents its own.
    ///
    /// # Errors
    /// As [`PirClient::connect`]; a server that is refused, refuses this client or speaks
    /// plaintext gives [`Error::Net`].
    pub fn connect_tls<A: ToSocketAddrs + std::fmt::Display>(
        addrs: [A; 2],
        hosts: [&str; 2],
        tls: &TlsConfig,
    ) -> Result<Self> {
        let opts = Self::connect_options();
        let [a0, a1] = addrs;
        let c0 = TcpChannel::connect_tls(a0, hosts[0], tls, &opts)?;
        let c1 = TcpChannel::connect_tls(a1, hosts[1], tls, &opts)?;
        Self::new(c0, c1, AesRng::from_entropy())
    }
}

impl<C: Channel> PirClient<C> {
    /// A client over connected channels to server 0 and server 1 with the default
    /// [`ClientLimits`]; asks both for their database shape and checks that they agree.
    pub fn new(ch0: C, ch1: C, rng: AesRng) -> Result<Self> {
        Self::with_limits(ch0, ch1, rng, ClientLimits::default())
    }

    /// [`PirClient::new`] with the sizes this client agrees to.
    ///
    /// Errors: [`Error::LimitExceeded`] (naming the field) if a server announces more
    /// records, longer records or more buckets than `limits` allow; [`Error::Malformed`] for
    /// values outside the format or servers that disagree.
    pub fn with_limits(ch0: C, ch1: C, rng: AesRng, limits: ClientLimits) -> Result<Self> {
        let mut servers = [ch0, ch1];
        let mut infos = [None, None];
        for (s, info) in servers.iter_mut().zip(&mut infos) {
            let body = exchange(s, &[TAG_INFO], 1 + 40, limits.request_deadline)?;
            if body.len() != 40 {
                return Err(Error::WrongLength {
                    expected: 40,
                    got: body.len(),
                });
            }
            let u = |i: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&body[8 * i..8 * i + 8]);
                u64::from_le_bytes(b)
            };
            let (records, record_len, buckets) = (u(0), u(1), u(2));
            within("records", records, limits.max_records)?;
            within("record length", record_len, limits.max_record_len)?;
            within("batch buckets", buckets, limits.max_buckets)?;
            if records == 0
                || records > MAX_RECORDS as u64
                || record_len == 0
                || record_len > MAX_RECORD_LEN as u64
                || buckets > (batch::MAX_BATCH * 2) as u64
            {
                return Err(Error::Malformed {
                    what: "server info out of range",
                });
            }
            let mut seed = [0u8; 16];
            seed.copy_from_slice(&body[24..40]);
            // Bounds checked above: all three fit in usize.
            let to_usize = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
            *info = Some(ServerInfo {
                records: to_usize(records),
                record_len: to_usize(record_len),
                batch: (buckets > 0).then_some(BatchParams {
                    buckets: to_usize(buckets),
                    seed,
                }),
            });
        }
        let [Some(i0), Some(i1)] = infos else {
            return Err(Error::Malformed {
                what: "missing server info",
            });
        };
        if i0 != i1 {
            return Err(Error::Malformed {
                what: "the two servers hold differently shaped databases",
            });
        }
        Ok(PirClient {
            servers,
            info: i0,
            limits,
            layout: None,
            rng,
            out_of_step: false,
        })
    }

    /// The sizes this client agreed to.
    pub fn limits(&self) -> ClientLimits {
        self.limits
    }

    /// The servers' database shape.
    pub fn info(&self) -> ServerInfo {
        self.info
    }

    /// Traffic so far, summed over both servers.
    pub fn stats(&self) -> Stats {
        self.servers[0].stats() + self.servers[1].stats()
    }

    fn padded(&self) -> usize {
        self.info.record_len.div_ceil(16) * 16
    }

    /// Sends one request to each server, then reads both responses.
    ///
    /// Both response frames are always read before either status is looked at, so a server
    /// that answers "busy" or an error does not leave the other's answer to be read as the
    /// answer to the next request. If a frame cannot be read whole (a timeout, a deadline, a
    /// broken connection) the client is out of step with that server for good, and this and
    /// every later request fail with [`obliv_net::Error::Broken`] rather than pair an answer
    /// with the wrong query.
    fn both(&mut self, tag: u8, m0: &[u8], m1: &[u8], resp_len: usize) -> Result<[Vec<u8>; 2]> {
        if self.out_of_step {
            return Err(Error::Net(obliv_net::Error::Broken));
        }
        within(
            "response length",
            resp_len as u64,
            self.limits.max_response_len,
        )?;
        let end = self.limits.request_deadline.map(|d| Instant::now() + d);
        for s in &mut self.servers {
            s.set_deadline(end);
        }
        let r = self.both_within(tag, m0, m1, resp_len);
        for s in &mut self.servers {
            s.set_deadline(None);
        }
        match r {
            Ok([f0, f1]) => {
                let a0 = response_status(f0);
                let a1 = response_status(f1);
                Ok([a0?, a1?])
            }
            Err(e) => {
                self.out_of_step = true;
                Err(e)
            }
        }
    }

    /// Sends the requests and reads both raw response frames (status byte included).
    fn both_within(
        &mut self,
        tag: u8,
        m0: &[u8],
        m1: &[u8],
        resp_len: usize,
    ) -> Result<[Vec<u8>; 2]> {
        for (s, m) in self.servers.iter_mut().zip([m0, m1]) {
            let mut req = Vec::with_capacity(m.len() + 1);
            req.push(tag);
            req.extend_from_slice(m);
            s.send_vec(req)?;
            s.flush()?;
        }
        let max = resp_len.saturating_add(1);
        let f0 = response_frame_of(&mut self.servers[0], max)?;
        let f1 = response_frame_of(&mut self.servers[1], max)?;
        Ok([f0, f1])
    }

    /// Retrieves record `index` with DPF-PIR.
    pub fn query(&mut self, index: usize) -> Result<Vec<u8>> {
        let q = dpf_pir::query(self.info.records, index, &mut self.rng)?;
        let p = self.padded();
        let [a0, a1] = self.both(TAG_DPF, &q.to_server0, &q.to_server1, p)?;
        dpf_pir::reconstruct(self.info.record_len, &a0, &a1)
    }

    /// Retrieves several records with batch PIR, in batches of at most
    /// [`BatchParams::capacity`] indices of the servers' layout (one round each), so that a
    /// batch has no placement with probability at most `2^-40` (see [`crate::batch`]); how
    /// the indices are cut depends on their number only. A batch with no placement (that
    /// `2^-40` event) is split in two, which the servers see.
    pub fn query_batch(&mut self, indices: &[usize]) -> Result<Vec<Vec<u8>>> {
        let Some(params) = self.info.batch else {
            return Err(Error::InvalidParameter {
                what: "the servers offer no batch queries",
            });
        };
        let layout = match self.layout.take() {
            Some(l) => l,
            None => BatchLayout::new(self.info.records, params)?,
        };
        let r = self.batches_with(&layout, indices, params.capacity());
        self.layout = Some(layout);
        r
    }

    /// [`batch_with`](Self::batch_with) on consecutive batches of at most `capacity` indices.
    fn batches_with(
        &mut self,
        layout: &BatchLayout,
        indices: &[usize],
        capacity: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity(indices.len());
        for batch in indices.chunks(capacity.max(1)) {
            out.extend(self.batch_with(layout, batch)?);
        }
        Ok(out)
    }

    fn batch_with(&mut self, layout: &BatchLayout, indices: &[usize]) -> Result<Vec<Vec<u8>>> {
        if indices.is_empty() {
            return Ok(Vec::new());
        }
        let q = match batch::query(layout, indices, &mut self.rng) {
            Ok(q) => q,
            Err(Error::CuckooFailure { .. }) if indices.len() > 1 => {
                let (a, b) = indices.split_at(indices.len() / 2);
                let mut r = self.batch_with(layout, a)?;
                r.extend(self.batch_with(layout, b)?);
                return Ok(r);
            }
            Err(e) => return Err(e),
        };
        let len = self.padded().saturating_mul(layout.buckets());
        let [a0, a1] = self.both(TAG_BATCH, &q.to_server0, &q.to_server1, len)?;
        batch::reconstruct(self.info.record_len, layout.buckets(), &q, &a0, &a1)
    }

    /// Retrieves record `index` with the IT-PIR baseline.
    pub fn query_it(&mut self, index: usize) -> Result<Vec<u8>> {
        let q = it_pir::query(self.info.records, index, &mut self.rng)?;
        let (rows, _) = it_pir::shape(self.info.records);
        let len = rows.saturating_mul(self.padded());
        let [a0, a1] = self.both(TAG_IT, &q.to_server0, &q.to_server1, len)?;
        it_pir::reconstruct(self.info.records, self.info.record_len, &q, &a0, &a1)
    }
}

/// Reads one response frame of at most `max` bytes and strips the status.
fn response<C: Channel + ?Sized>(ch: &mut C, max: usize) -> Result<Vec<u8>> {
    response_status(response_frame_of(ch, max)?)
}

/// Reads one whole response frame of at most `max` bytes (status byte included).
fn response_frame_of<C: Channel + ?Sized>(ch: &mut C, max: usize) -> Result<Vec<u8>> {
    match ch.recv_max(max.max(4096)) {
        Ok(r) => Ok(r),
        Err(obliv_net::Error::FrameTooLarge { .. }) => Err(Error::Malformed {
            what: "response longer than expected",
        }),
        Err(e) => Err(e.into()),
    }
}

/// The body of a response frame, or the error its status announces.
fn response_status(mut r: Vec<u8>) -> Result<Vec<u8>> {
    match r.first() {
        Some(&STATUS_OK) => {
            r.remove(0);
            Ok(r)
        }
        Some(&STATUS_BUSY) => Err(Error::Busy),
        Some(&STATUS_ERROR) => Err(Error::Server(String::from_utf8_lossy(&r[1..]).into_owned())),
        _ => Err(Error::Malformed {
            what: "unknown response status",
        }),
    }
}

/// Sends `req` and reads the response, within `deadline` from now if given.
fn exchange<C: Channel + ?Sized>(
    ch: &mut C,
    req: &[u8],
    max: usize,
    deadline: Option<Duration>,
) -> Result<Vec<u8>> {
    ch.set_deadline(deadline.map(|d| Instant::now() + d));
    let r = ch
        .send(req)
        .and_then(|()| ch.flush())
        .map_err(Error::from)
        .and_then(|()| response(ch, max));
    ch.set_deadline(None);
    r
}

/// Retrieves record `index` from the servers at `addr0` and `addr1`: the entry point for
/// `obliv pir query`. With `tls`, over TLS as [`PirClient::connect_tls`], server `b`'s
/// certificate naming the host part of its address.
pub fn query(addr0: &str, addr1: &str, index: usize, tls: Option<&TlsConfig>) -> Result<Vec<u8>> {
    match tls {
        Some(t) => {
            let (h0, h1) = (host_of(addr0), host_of(addr1));
            PirClient::connect_tls([addr0, addr1], [h0, h1], t)?.query(index)
        }
        None => PirClient::connect(addr0, addr1)?.query(index),
    }
}

/// The host part of `host:port` (`[v6]:port` gives `v6`).
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_net::mem_pair;
    use rand_core::SeedableRng;

    #[test]
    fn handle_rejects_garbage() {
        let mut rng = AesRng::from_seed([17; 16]);
        let st = ServerState::new(Database::random(100, 10, &mut rng).unwrap(), None).unwrap();
        for req in [
            &[][..],
            &[9],
            &[TAG_INFO, 0],
            &[TAG_DPF, 1, 2, 3],
            &[TAG_BATCH],
            &[TAG_IT, 0],
        ] {
            assert_eq!(st.handle(req)[0], STATUS_ERROR, "{req:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Well-formed requests with bytes changed, cut or extended get an answer or an
        /// error message, never a panic.
        #[test]
        fn prop_handle_mutated_requests(
            kind in 0usize..3,
            flips in proptest::collection::vec((proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()), 0..4),
            cut in proptest::prelude::any::<usize>(),
            extend in 0usize..3,
        ) {
            static ST: std::sync::OnceLock<ServerState> = std::sync::OnceLock::new();
            let st = ST.get_or_init(|| {
                let mut rng = AesRng::from_seed([27; 16]);
                let db = Database::random(300, 20, &mut rng).unwrap();
                ServerState::new(db, Some(BatchParams::for_batch(4))).unwrap()
            });
            let mut rng = AesRng::from_seed([28; 16]);
            let mut req = match kind {
                0 => [&[TAG_DPF][..], &dpf_pir::query(300, 7, &mut rng).unwrap().to_server0].concat(),
                1 => {
                    let layout = BatchLayout::new(300, BatchParams::for_batch(4)).unwrap();
                    let q = batch::query(&layout, &[1, 299], &mut rng).unwrap();
                    [&[TAG_BATCH][..], &q.to_server1].concat()
                }
                _ => [&[TAG_IT][..], &it_pir::query(300, 7, &mut rng).unwrap().to_server0].concat(),
            };
            for (at, x) in flips {
                let i = at % req.len();
                req[i] ^= x;
            }
            if cut % 4 == 0 {
                req.truncate(cut % (req.len() + 1));
            }
            req.extend(std::iter::repeat_n(0, extend));
            let resp = st.handle(&req);
            proptest::prop_assert!(matches!(resp.first(), Some(&(STATUS_OK | STATUS_ERROR))));
        }
    }

    /// A client whose two servers have already answered the info request with this shape.
    fn client_of_info(
        records: u64,
        record_len: u64,
        buckets: u64,
        limits: ClientLimits,
    ) -> Result<PirClient<obliv_net::MemChannel>> {
        let mut ends = Vec::new();
        let mut servers = Vec::new();
        for _ in 0..2 {
            let (c, mut s) = mem_pair();
            let mut frame = vec![STATUS_OK];
            for x in [records, record_len, buckets] {
                frame.extend_from_slice(&x.to_le_bytes());
            }
            frame.extend_from_slice(&[7; 16]);
            s.send(&frame)?;
            ends.push(c);
            servers.push(s);
        }
        let (c1, c0) = (ends.pop(), ends.pop());
        let (Some(c0), Some(c1)) = (c0, c1) else {
            unreachable!("two ends");
        };
        let r = PirClient::with_limits(c0, c1, AesRng::from_seed([20; 16]), limits);
        drop(servers);
        r
    }

    fn limit_field<T: core::fmt::Debug>(r: Result<T>) -> &'static str {
        match r {
            Err(Error::LimitExceeded { field, got, max }) => {
                assert!(got > max);
                field
            }
            other => panic!("expected LimitExceeded, got {other:?}"),
        }
    }

    #[test]
    fn client_bounds_every_size_the_servers_announce() {
        let d = ClientLimits::default();
        // 2^32 records (the format's maximum): ~48 GiB of batch layout, refused.
        assert_eq!(limit_field(client_of_info(1 << 32, 16, 15, d)), "records");
        assert_eq!(
            limit_field(client_of_info(1000, 1 << 24, 15, d)),
            "record length"
        );
        let few = ClientLimits {
            max_buckets: 100,
            ..d
        };
        assert_eq!(
            limit_field(client_of_info(1000, 16, 1 << 15, few)),
            "batch buckets"
        );
        // A client that agreed to 2^32 records connects without building anything, and a
        // query whose response would exceed its limit is refused before it is sent.
        let big = ClientLimits {
            max_records: 1 << 32,
            max_response_len: 1 << 16,
            ..d
        };
        let t = std::time::Instant::now();
        let mut c = client_of_info(1 << 32, 16, 15, big).unwrap();
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(limit_field(c.query_it(5)), "response length");
        assert_eq!(
            c.stats().bytes_sent,
            2,
            "only the two info requests were sent"
        );
    }

    /// Regression: the client sent all its indices as one batch into the servers' buckets, so
    /// with Angel et al.'s 15 buckets about one batch of ten in 1 800 had no placement and
    /// was split, which the servers see. It now sends batches of at most the layout's
    /// capacity at 2^-40: three for 15 buckets, so four requests for ten indices.
    #[test]
    fn client_cuts_batches_to_the_layouts_capacity() {
        let mut rng = AesRng::from_seed([40; 16]);
        let db = Database::random(1000, 24, &mut rng).unwrap();
        let params = BatchParams::angel(10);
        let st = Arc::new(ServerState::new(db, Some(params)).unwrap());
        let (c0, mut s0) = mem_pair();
        let (c1, mut s1) = mem_pair();
        let (st0, st1) = (Arc::clone(&st), Arc::clone(&st));
        let t0 = thread::spawn(move || st0.serve_channel(&mut s0, 1 << 16));
        let t1 = thread::spawn(move || st1.serve_channel(&mut s1, 1 << 16));
        let mut client = PirClient::new(c0, c1, AesRng::from_seed([41; 16])).unwrap();
        let idx: Vec<usize> = (0..10).map(|i| i * 97 + 5).collect();
        let before = client.stats().bytes_sent;
        let recs = client.query_batch(&idx).unwrap();
        for (i, r) in idx.iter().zip(&recs) {
            assert_eq!(r.as_slice(), st.db().record(*i).unwrap());
        }
        let layout = BatchLayout::new(1000, params).unwrap();
        assert_eq!(params.capacity(), 3);
        let request = 2 * (layout.query_len() as u64 + 1);
        assert_eq!(client.stats().bytes_sent - before, 4 * request);
        drop(client);
        t0.join().unwrap().unwrap();
        t1.join().unwrap().unwrap();
    }

    #[test]
    fn client_over_memory_channels() {
        let mut rng = AesRng::from_seed([18; 16]);
        let db = Database::random(300, 50, &mut rng).unwrap();
        let st = Arc::new(ServerState::new(db, Some(BatchParams::for_batch(4))).unwrap());
        let (c0, mut s0) = mem_pair();
        let (c1, mut s1) = mem_pair();
        let (st0, st1) = (Arc::clone(&st), Arc::clone(&st));
        let t0 = thread::spawn(move || st0.serve_channel(&mut s0, 1 << 16));
        let t1 = thread::spawn(move || st1.serve_channel(&mut s1, 1 << 16));
        let mut client = PirClient::new(c0, c1, AesRng::from_seed([19; 16])).unwrap();
        assert_eq!(client.info().records, 300);
        for i in [0, 7, 299] {
            assert_eq!(client.query(i).unwrap(), st.db().record(i).unwrap());
            assert_eq!(client.query_it(i).unwrap(), st.db().record(i).unwrap());
        }
        let idx = [5, 9, 5, 100, 250, 3, 1, 2];
        let recs = client.query_batch(&idx).unwrap();
        for (i, r) in idx.iter().zip(&recs) {
            assert_eq!(r.as_slice(), st.db().record(*i).unwrap());
        }
        assert!(matches!(
            client.query(300),
            Err(Error::IndexOutOfRange { .. })
        ));
        drop(client);
        t0.join().unwrap().unwrap();
        t1.join().unwrap().unwrap();
    }

    /// A server over a memory channel that answers with `state`, except that its first DPF
    /// request gets `first` (after `gate` lets it go, if given).
    fn scripted_server(
        st: Arc<ServerState>,
        mut ch: obliv_net::MemChannel,
        first: Vec<u8>,
        gate: Option<std::sync::mpsc::Receiver<()>>,
    ) -> thread::JoinHandle<()> {
        thread::spawn(move || {
            let mut first = Some(first);
            while let Ok(req) = ch.recv() {
                let resp = match (req.first(), first.take()) {
                    (Some(&TAG_DPF), Some(f)) => {
                        if let Some(g) = &gate {
                            let _ = g.recv();
                        }
                        f
                    }
                    (_, f) => {
                        first = first.or(f);
                        st.handle(&req)
                    }
                };
                if ch.send(&resp).and_then(|()| ch.flush()).is_err() {
                    return;
                }
            }
        })
    }

    /// Server 0 answers the first query "busy" while server 1 answers it: server 1's answer
    /// must not be taken for its answer to the next query (that gave a wrong record, silently).
    #[test]
    fn busy_answer_from_one_server_does_not_shift_the_other() {
        let mut rng = AesRng::from_seed([21; 16]);
        let st =
            Arc::new(ServerState::new(Database::random(300, 32, &mut rng).unwrap(), None).unwrap());
        let (c0, s0) = mem_pair();
        let (c1, mut s1) = mem_pair();
        let t0 = scripted_server(Arc::clone(&st), s0, vec![STATUS_BUSY], None);
        let st1 = Arc::clone(&st);
        let t1 = thread::spawn(move || st1.serve_channel(&mut s1, 1 << 16));
        let mut client = PirClient::new(c0, c1, AesRng::from_seed([22; 16])).unwrap();
        assert!(matches!(client.query(3), Err(Error::Busy)));
        for i in [200, 7] {
            assert_eq!(client.query(i).unwrap(), st.db().record(i).unwrap());
        }
        drop(client);
        t0.join().unwrap();
        t1.join().unwrap().unwrap();
    }

    /// Server 1 answers the first query only after the client's deadline has passed: the
    /// late answer must not be taken for the answer to the next query; the client refuses
    /// every later query instead.
    #[test]
    fn late_answer_after_a_deadline_is_not_paired_with_the_next_query() {
        let mut rng = AesRng::from_seed([23; 16]);
        let st =
            Arc::new(ServerState::new(Database::random(300, 32, &mut rng).unwrap(), None).unwrap());
        let (c0, mut s0) = mem_pair();
        let (c1, s1) = mem_pair();
        let st0 = Arc::clone(&st);
        let t0 = thread::spawn(move || st0.serve_channel(&mut s0, 1 << 16));
        // Server 1's (honest) answer to the first query, held back until released.
        let mut qrng = AesRng::from_seed([24; 16]);
        let q = dpf_pir::query(300, 3, &mut qrng).unwrap();
        let late = response_frame(dpf_pir::answer(st.db(), &q.to_server1));
        let (go, gate) = std::sync::mpsc::channel();
        let t1 = scripted_server(Arc::clone(&st), s1, late, Some(gate));
        let limits = ClientLimits {
            request_deadline: Some(Duration::from_millis(300)),
            ..ClientLimits::default()
        };
        let mut client =
            PirClient::with_limits(c0, c1, AesRng::from_seed([25; 16]), limits).unwrap();
        let r = client.query(3);
        assert!(
            matches!(
                r,
                Err(Error::Net(obliv_net::Error::DeadlineExceeded { .. }))
            ),
            "{r:?}"
        );
        go.send(()).unwrap();
        let r = client.query(200);
        assert!(
            matches!(r, Err(Error::Net(obliv_net::Error::Broken))),
            "{r:?}"
        );
        drop(client);
        t0.join().unwrap().unwrap();
        t1.join().unwrap();
    }

    /// A connection whose thread cannot be spawned gives its slot back (it was kept for
    /// good, so enough failed spawns left the server answering "busy" to everyone).
    #[test]
    fn failed_connection_spawn_frees_its_slot() {
        let active = Arc::new(AtomicUsize::new(0));
        let slot = Slot::take(&active, 1).unwrap();
        assert!(Slot::take(&active, 1).is_none(), "the limit holds");
        // A stack no system grants: the spawn fails.
        let builder = thread::Builder::new().stack_size(1 << 62);
        assert!(spawn_connection(builder, slot, || {}).is_err());
        assert_eq!(active.load(Ordering::SeqCst), 0);
        let slot = Slot::take(&active, 1).unwrap();
        spawn_connection(thread::Builder::new(), slot, || {})
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(active.load(Ordering::SeqCst), 0);
    }

    /// A queue depth or worker count the server cannot allocate is refused by `new` (it
    /// was accepted, and starting the server then panicked or aborted on the allocation).
    #[test]
    fn new_refuses_unallocatable_pool_sizes() {
        let mut rng = AesRng::from_seed([26; 16]);
        let db = Database::random(10, 16, &mut rng).unwrap();
        for config in [
            ServerConfig {
                queue_depth: usize::MAX,
                ..ServerConfig::default()
            },
            ServerConfig {
                queue_depth: 1 << 40,
                ..ServerConfig::default()
            },
            ServerConfig {
                workers: usize::MAX,
                ..ServerConfig::default()
            },
        ] {
            assert!(matches!(
                PirServer::new(db.clone(), config),
                Err(Error::InvalidParameter { .. })
            ));
        }
        let ok = ServerConfig {
            workers: MAX_WORKERS,
            queue_depth: MAX_QUEUE_DEPTH,
            ..ServerConfig::default()
        };
        assert!(PirServer::new(db, ok).is_ok());
    }
}
