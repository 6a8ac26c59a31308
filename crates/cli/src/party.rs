//! One party of a PSI run: read the CSV keys, connect to the other parties, run the protocol,
//! write the rows of the intersection, and report.
//!
//! Order of a run: in the background, connect to the other parties (TCP, TLS) and, with two
//! parties, compare the settings (a settings hello) and set up the bucket driver
//! ([`driver::prepare`]: the split of the protocol session for `--workers`), while this party
//! validates and hashes its input and splits the keys of this shard into bucket files, then
//! opens the checkpoint (a foreign one is refused here); input and checkpoint errors come
//! before anything that depends on the input is sent. Then the job handshake (with two
//! parties on the driver's control channel): every party sends every other one its settings
//! (which must be equal), its row count and its checkpoint's run id. From the same messages
//! every party takes the same decision: resume (all hold checkpoints of one run with the
//! agreed bucket count; finished-bucket bitmaps are exchanged and ANDed) or start a new run
//! (rank 0 draws the id). Then one PSI per bucket not finished everywhere, each bucket's
//! session taking the agreed plan's bounds, each result recorded durably, and finally the
//! output, assembled from all bucket results.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_ec::Curve;
use obliv_net::{
    Channel, ChannelExt, ConnectOptions, LinkModel, MuxOptions, Session, SimLink, Split, Stats,
    TcpChannel,
};
use obliv_psi::driver::{self, BucketOutput};
use obliv_psi::ecdh::{EcdhConfig, EcdhSession};
use obliv_psi::ecdh3;
use obliv_psi::kkrt::{KkrtConfig, KkrtSession};
use obliv_psi::rr22::{self, Rr22Config, Rr22Session};
use obliv_psi::{HashedItem, PsiSession, Role};
use rand_core::Rng;

use crate::bucket::{self, Shard};
use crate::checkpoint::{BucketResult, Checkpoint, Identity, RunInfo};
use crate::deadline::{self, StepDeadline};
use crate::error::CliError;
use crate::plan::BucketPlan;
use crate::progress::{self, Progress, ProgressMode};
use crate::tls::TlsWatch;

mod hello;
use hello::{JOB_FRAME_LIMIT, agree};

/// The PSI protocols the command knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Two-party ECDH-PSI.
    Ecdh,
    /// Three-party ECDH-PSI (the receiver also learns the size of the other two parties'
    /// intersection).
    Ecdh3pc,
    /// RR22 PSI (OKVS + silent VOLE): `rr22` (fast, semi-honest), `rr22-lowcomm` (semi-honest,
    /// about half the bytes) or `rr22-malicious`.
    Rr22(rr22::Variant),
    /// KKRT16 PSI (OPRF from OT extension + cuckoo hashing); base OTs once per session.
    Kkrt,
}

impl Protocol {
    /// Number of parties the protocol runs between.
    pub fn parties(self) -> usize {
        match self {
            Protocol::Ecdh | Protocol::Rr22(_) | Protocol::Kkrt => 2,
            Protocol::Ecdh3pc => 3,
        }
    }
}

impl std::str::FromStr for Protocol {
    type Err = CliError;
    fn from_str(s: &str) -> Result<Self, CliError> {
        match s {
            "ecdh" => Ok(Protocol::Ecdh),
            "ecdh-3pc" => Ok(Protocol::Ecdh3pc),
            "rr22" => Ok(Protocol::Rr22(rr22::Variant::Fast)),
            "rr22-lowcomm" => Ok(Protocol::Rr22(rr22::Variant::LowComm)),
            "rr22-malicious" => Ok(Protocol::Rr22(rr22::Variant::Malicious)),
            "kkrt" => Ok(Protocol::Kkrt),
            _ => Err(CliError::usage(format!(
                "unknown protocol {s:?} (ecdh, ecdh-3pc, kkrt, rr22, rr22-lowcomm, rr22-malicious)"
            ))),
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Protocol::Ecdh => "ecdh",
            Protocol::Ecdh3pc => "ecdh-3pc",
            // The CLI keeps the name `rr22` for the fast variant.
            Protocol::Rr22(rr22::Variant::Fast) => "rr22",
            Protocol::Rr22(v) => v.name(),
            Protocol::Kkrt => "kkrt",
        })
    }
}

/// Everything one party needs to run.
#[derive(Clone, Debug)]
pub struct PartyConfig {
    /// Protocol.
    pub protocol: Protocol,
    /// Curve of the ECDH protocols.
    pub curve: Curve,
    /// This party's rank (index into `parties`).
    pub rank: usize,
    /// Every party's address, in rank order.
    pub parties: Vec<SocketAddr>,
    /// The `--parties` argument as given: recorded in a checkpoint, where the resolved
    /// addresses may change when a peer restarts (a new pod IP behind the same name).
    pub parties_arg: String,
    /// Input CSV file.
    pub input: PathBuf,
    /// Key columns.
    pub keys: Vec<String>,
    /// Output CSV file (written by the parties that learn the result).
    pub output: PathBuf,
    /// Rank of the party that learns the result.
    pub receiver: usize,
    /// Whether every party learns the result.
    pub broadcast: bool,
    /// Sort the output rows by key.
    pub sort: bool,
    /// Items per streamed batch.
    pub batch_size: usize,
    /// Most keys per bucket this party accepts, padding included: a local memory limit, never
    /// sent. A job whose public plan ([`crate::plan`]) needs larger buckets is refused before
    /// any bucket runs (more shards make them smaller).
    pub bucket_size: usize,
    /// Expected keys per bucket of the larger party ([`DEFAULT_LOAD`](crate::plan::DEFAULT_LOAD) by default): with
    /// the row counts and the shard count, it fixes the bucket count ([`crate::plan`]). Part of
    /// the settings every party must agree on.
    pub bucket_load: u64,
    /// Simulated link (bandwidth, latency) on every channel, if any.
    pub sim: Option<LinkModel>,
    /// How long to wait for the other parties to come up.
    pub connect_timeout: Duration,
    /// How long each protocol step (the job handshake, the driver's set-up, every bucket) may
    /// take in all ([`crate::deadline`]).
    pub step_timeout: Duration,
    /// Run only the buckets of this shard (`0/1`: everything).
    pub shard: Shard,
    /// Checkpoint directory: finished buckets are recorded there and a rerun resumes.
    pub checkpoint: Option<PathBuf>,
    /// How progress is shown on stderr.
    pub progress: ProgressMode,
    /// Bytes of bucket entries (24 per input row) kept in memory; beyond it they are written
    /// to temporary files ([`bucket::DEFAULT_MEMORY_BUDGET`] by default).
    pub memory_budget: usize,
    /// Two-party protocols: buckets run side by side on this many worker threads, each pair
    /// of workers on its own sub-channel of the connection ([`driver::run_buckets`]); 1 runs
    /// them one after the other on the connection itself. Both parties must give the same
    /// value (checked in the job handshake). `1..=`[`driver::MAX_WORKERS`].
    pub workers: usize,
    /// TLS on every link (`None`: plaintext); see [`crate::tls`].
    pub tls: Option<crate::tls::TlsSetup>,
}

/// What a party reports when it is done.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Protocol run.
    pub protocol: String,
    /// Curve used.
    pub curve: String,
    /// This party's rank.
    pub rank: usize,
    /// Data rows of this party's shard (all rows of the input without `--shard`).
    pub rows_in: usize,
    /// Distinct keys read.
    pub keys_in: usize,
    /// Rows written (0 when this party does not learn the result).
    pub rows_out: usize,
    /// Distinct keys in the intersection (when this party learns it).
    pub keys_out: Option<usize>,
    /// Wall time from start to finish, seconds.
    pub seconds: f64,
    /// Traffic of this party. Its `rounds` add up the round trips of every bucket and of the
    /// set-up.
    pub stats: Stats,
    /// Round trips on the critical path: the job handshake's and the worker set-up's, plus the
    /// largest sum over one worker's buckets (with `--workers 1`, equal to `stats.rounds`).
    /// This is the `r` of a link's bound `8·B/bandwidth + r·RTT`.
    pub critical_rounds: u64,
    /// The shard run, `I/N`.
    pub shard: String,
    /// Buckets of the run.
    pub buckets: u64,
    /// Buckets taken from the checkpoint instead of being run again.
    pub buckets_resumed: u64,
}

impl Report {
    /// The report as one JSON object.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"protocol\":\"{}\",\"curve\":\"{}\",\"rank\":{},\"shard\":\"{}\",\"rows_in\":{},\"keys_in\":{},\"rows_out\":{},\"keys_out\":{},\"buckets\":{},\"buckets_resumed\":{},\"seconds\":{:.3},\"bytes_sent\":{},\"bytes_received\":{},\"rounds\":{},\"critical_rounds\":{}}}",
            self.protocol,
            self.curve,
            self.rank,
            self.shard,
            self.rows_in,
            self.keys_in,
            self.rows_out,
            self.keys_out.map_or("null".to_string(), |k| k.to_string()),
            self.buckets,
            self.buckets_resumed,
            self.seconds,
            self.stats.bytes_sent,
            self.stats.bytes_received,
            self.stats.rounds,
            self.critical_rounds
        )
    }
}

/// Resolves `host:port,host:port[,…]`.
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) if an address does not resolve.
pub fn parse_parties(s: &str) -> Result<Vec<SocketAddr>, CliError> {
    s.split(',')
        .map(|a| {
            a.trim()
                .to_socket_addrs()
                .ok()
                .and_then(|mut it| it.next())
                .ok_or_else(|| CliError::usage(format!("cannot resolve party address {a:?}")))
        })
        .collect()
}

/// Runs one party. `listener`, if given, is this party's already-bound socket (the demo binds
/// ephemeral ports first); otherwise the party binds `parties[rank]`.
///
/// # Errors
/// Input and checkpoint errors before anything that depends on the input is sent (the
/// connection and the driver's set-up may already be done: they run while the input is
/// read); then network and protocol errors.
pub fn run(cfg: &PartyConfig, listener: Option<TcpListener>) -> Result<Report, CliError> {
    let start = Instant::now();
    let n = cfg.parties.len();
    if n != cfg.protocol.parties() {
        return Err(CliError::usage(format!(
            "protocol {} needs {} parties in --parties, got {n}",
            cfg.protocol,
            cfg.protocol.parties()
        )));
    }
    if cfg.broadcast && cfg.protocol != Protocol::Ecdh {
        return Err(CliError::usage(format!(
            "--broadcast is not supported by {}",
            cfg.protocol
        )));
    }
    if cfg.rank >= n || cfg.receiver >= n {
        return Err(CliError::usage(format!(
            "--rank and --receiver must be below {n}"
        )));
    }
    if cfg.shard.count == 0 || cfg.shard.index >= cfg.shard.count {
        return Err(CliError::usage(format!("bad shard {}", cfg.shard)));
    }
    if cfg.workers == 0 || cfg.workers > driver::MAX_WORKERS {
        return Err(CliError::usage(format!(
            "--workers must be in 1..={}",
            driver::MAX_WORKERS
        )));
    }
    // Checked by the ECDH protocols only once the input is read and the peer connected (an hour
    // into a run of 1e9 rows): found now.
    let ecdh = matches!(cfg.protocol, Protocol::Ecdh | Protocol::Ecdh3pc);
    if ecdh && !(1..=obliv_psi::ecdh::MAX_BATCH).contains(&cfg.batch_size) {
        return Err(CliError::usage(format!(
            "--batch-size {} is outside 1..={}",
            cfg.batch_size,
            obliv_psi::ecdh::MAX_BATCH
        )));
    }
    deadline::check_connect_timeout(cfg.connect_timeout)?;
    deadline::check_step_timeout(cfg.step_timeout)?;
    if !(crate::plan::MIN_LOAD..=crate::plan::MAX_LOAD).contains(&cfg.bucket_load) {
        return Err(CliError::usage(format!(
            "--bucket-load {} is outside {}..={}",
            cfg.bucket_load,
            crate::plan::MIN_LOAD,
            crate::plan::MAX_LOAD
        )));
    }
    if cfg.workers > 1 && cfg.protocol == Protocol::Ecdh3pc {
        return Err(CliError::usage(
            "--workers is not supported by ecdh-3pc (its buckets run one after the other)",
        ));
    }
    match cfg.sim {
        Some(model) => run_over(cfg, listener, start, move |_, c| SimLink::new(c, model)),
        None => run_over(cfg, listener, start, |_, c| c),
    }
}

/// The run, over the channels that `wrap` makes of the connection's (the simulated link's,
/// or the connection's own).
fn run_over<C, W>(
    cfg: &PartyConfig,
    listener: Option<TcpListener>,
    start: Instant,
    wrap: W,
) -> Result<Report, CliError>
where
    C: Split + Send + 'static,
    C::Sender: Send,
    W: FnMut(usize, TcpChannel) -> C + Send + 'static,
{
    // The connection is set up while the input is read (a slow link's TCP and TLS round trips
    // hide behind the input pass), and so is the bucket driver's set-up (the split of the
    // protocol session into one child per worker: RR22's VOLE fork, KKRT's base OTs), which
    // depends on the settings only. Nothing that depends on the input crosses before the
    // input is read and the checkpoint checked: input errors still come first, and the row
    // counts go out only in the job handshake. The checkpoint directory is locked (and a
    // killed run's leftovers removed) before the input is read, as the bucket file of what does
    // not fit the memory budget goes there; its job is checked after.
    let mut opts = ConnectOptions {
        deadline: cfg.connect_timeout,
        ..ConnectOptions::default()
    };
    // A hostile peer's longer frame is refused at its header, before any of it is buffered.
    opts.tcp.max_frame_len = connection_frame_limit(cfg);
    let connecting = crate::tls::session_in_background(
        cfg.rank,
        listener,
        &cfg.parties,
        cfg.tls.as_ref(),
        &opts,
    )?;
    let setting_up = set_up_in_background(cfg, connecting, wrap)?;
    let cp_lock = match &cfg.checkpoint {
        Some(dir) => Some(Checkpoint::lock(dir)?),
        None => None,
    };
    let tmp_root = match &cp_lock {
        // Bucket files of a killed run are cleaned up when the checkpoint is next opened.
        Some(cp) => cp.dir().to_path_buf(),
        None => crate::cleanup::dir_of(&cfg.output).to_path_buf(),
    };
    let mut iopts =
        bucket::IngestOptions::new(cfg.shard, cp_lock.is_some(), &tmp_root, cfg.progress);
    iopts.memory_budget = cfg.memory_budget;
    let (shape, mut files) = bucket::ingest(&cfg.input, &cfg.keys, &iopts)?;
    // A party that writes rows must be able to, before any bucket runs (after the input is
    // read, so that its errors still come first).
    if cfg.rank == cfg.receiver || cfg.broadcast {
        bucket::check_output(&cfg.input, &cfg.output)?;
    }
    let mut checkpoint = match cp_lock {
        Some(lock) => Some(lock.open(&identity(cfg, &shape))?),
        None => None,
    };
    let (link, tls_watch) = setting_up
        .join()
        .map_err(|_| CliError::network("the set-up thread panicked"))??;
    let out = run_buckets(cfg, &shape, &mut files, link, checkpoint.as_mut())?;
    tls_watch.log();
    let rows_out = match &out.selected {
        Some(rows) => bucket::write_rows(
            &cfg.input,
            &shape,
            rows,
            &cfg.output,
            cfg.sort,
            cfg.progress,
        )?,
        None => 0,
    };
    Ok(Report {
        protocol: cfg.protocol.to_string(),
        curve: cfg.curve.to_string(),
        rank: cfg.rank,
        rows_in: usize::try_from(shape.shard_rows).unwrap_or(usize::MAX),
        keys_in: usize::try_from(out.keys_in).unwrap_or(usize::MAX),
        rows_out: usize::try_from(rows_out).unwrap_or(usize::MAX),
        keys_out: out
            .selected
            .as_ref()
            .map(|_| usize::try_from(out.keys_out).unwrap_or(usize::MAX)),
        seconds: start.elapsed().as_secs_f64(),
        stats: out.stats,
        critical_rounds: out.critical_rounds,
        shard: cfg.shard.to_string(),
        buckets: out.buckets,
        buckets_resumed: out.resumed,
    })
}

/// The connection as the job handshake finds it.
enum Link<C: Split> {
    /// Two parties: the bucket driver, its session already split for the workers, and the
    /// traffic of the settings hello before it.
    Two(Box<driver::Prepared<StepDeadline<JobSession>, C>>, Stats),
    /// Three parties (ECDH 3PC, whose buckets run one after the other): the session.
    Three(Session<C>),
}

/// The thread of [`set_up_in_background`]: the link and the TLS counters.
type SetUp<C> = std::thread::JoinHandle<Result<(Link<C>, TlsWatch), CliError>>;

/// Joins the connecting thread and sets up the bucket driver in a thread of its own (while
/// the caller reads its input): the channels wrapped by `wrap`, then, for a two-party
/// protocol, [`driver::prepare`] on the peer's channel with this job's session (its bounds
/// set once the plan is agreed, [`driver::Prepared::set_job_limits`]). The set-up gets
/// `--step-timeout` as every step does; the driver's receives wait as long as
/// `--connect-timeout` (if that is longer than their default) for a peer still reading its
/// input, as the connection's own receives do.
fn set_up_in_background<C, W>(
    cfg: &PartyConfig,
    connecting: std::thread::JoinHandle<Result<Session<TcpChannel>, CliError>>,
    wrap: W,
) -> Result<SetUp<C>, CliError>
where
    C: Split + Send + 'static,
    C::Sender: Send,
    W: FnMut(usize, TcpChannel) -> C + Send + 'static,
{
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name("obliv-set-up".into())
        .spawn(move || {
            let session = crate::tls::join_session(connecting)?;
            let watch = TlsWatch::new(&session);
            let session = session.map(wrap);
            if cfg.protocol == Protocol::Ecdh3pc {
                return Ok((Link::Three(session), watch));
            }
            let mut ch = peer_channel(session, 1 - cfg.rank)?;
            ch.set_deadline(Instant::now().checked_add(cfg.step_timeout));
            let agreed = hello::agree_settings(&cfg, &mut ch);
            ch.set_deadline(None);
            agreed?;
            let settings = ch.stats();
            let s = StepDeadline::new(JobSession::new(&cfg)?, cfg.step_timeout);
            let idle = MuxOptions::default().recv_timeout.max(cfg.connect_timeout);
            let mut rng = AesRng::from_entropy();
            let prepared = driver::prepare(ch, s, cfg.workers, idle, &mut rng)?;
            Ok((Link::Two(Box::new(prepared), settings), watch))
        })
        .map_err(|e| CliError::network(format!("cannot start the set-up thread: {e}")))
}

/// This party's role in a two-party protocol.
fn role_of(cfg: &PartyConfig) -> Role {
    if cfg.rank == cfg.receiver {
        Role::Receiver
    } else {
        Role::Sender
    }
}

/// The session of a two-party job, whichever its protocol (one type for the driver's set-up,
/// which runs before the bucket plan is known).
#[derive(Debug)]
enum JobSession {
    Ecdh(EcdhSession),
    Kkrt(Box<KkrtSession>),
    Rr22(Box<Rr22Session>),
}

impl JobSession {
    /// The session of `cfg`'s protocol, with the job's bounds still unknown: no peer items
    /// and the base statistical parameter, until [`PsiSession::set_job_limits`] sets the
    /// plan's (before any run; the split does not depend on them).
    fn new(cfg: &PartyConfig) -> Result<Self, CliError> {
        let (role, lambda) = (role_of(cfg), obliv_psi::STAT_SECURITY);
        Ok(match cfg.protocol {
            Protocol::Ecdh => {
                JobSession::Ecdh(EcdhSession::new(role, &ecdh_config(cfg, 0, lambda))?)
            }
            Protocol::Kkrt => {
                let kcfg = KkrtConfig {
                    max_peer_items: 0,
                    stat_security: lambda,
                    ..KkrtConfig::default()
                };
                JobSession::Kkrt(Box::new(KkrtSession::new(role, &kcfg)?))
            }
            Protocol::Rr22(variant) => {
                let rcfg = Rr22Config {
                    max_peer_items: 0,
                    stat_security: lambda,
                    ..Rr22Config::new(variant)
                };
                JobSession::Rr22(Box::new(Rr22Session::new(role, &rcfg)?))
            }
            Protocol::Ecdh3pc => {
                return Err(CliError::usage("ecdh-3pc is not a two-party protocol"));
            }
        })
    }
}

impl PsiSession for JobSession {
    fn protocol(&self) -> &'static str {
        match self {
            JobSession::Ecdh(s) => s.protocol(),
            JobSession::Kkrt(s) => s.protocol(),
            JobSession::Rr22(s) => PsiSession::protocol(&**s),
        }
    }

    fn role(&self) -> Role {
        match self {
            JobSession::Ecdh(s) => PsiSession::role(s),
            JobSession::Kkrt(s) => PsiSession::role(&**s),
            JobSession::Rr22(s) => PsiSession::role(&**s),
        }
    }

    fn max_frame_len(&self) -> usize {
        match self {
            JobSession::Ecdh(s) => s.max_frame_len(),
            JobSession::Kkrt(s) => s.max_frame_len(),
            JobSession::Rr22(s) => s.max_frame_len(),
        }
    }

    fn set_job_limits(
        &mut self,
        max_peer_items: usize,
        stat_security: u32,
    ) -> obliv_psi::Result<()> {
        match self {
            JobSession::Ecdh(s) => s.set_job_limits(max_peer_items, stat_security),
            JobSession::Kkrt(s) => s.set_job_limits(max_peer_items, stat_security),
            JobSession::Rr22(s) => s.set_job_limits(max_peer_items, stat_security),
        }
    }

    fn run<Ch, T, R>(
        &mut self,
        ch: &mut Ch,
        items: &[T],
        rng: &mut R,
    ) -> obliv_psi::Result<Option<Vec<usize>>>
    where
        Ch: Channel + ?Sized,
        T: obliv_psi::PsiItem + Sync,
        R: rand_core::CryptoRng + ?Sized,
    {
        match self {
            JobSession::Ecdh(s) => s.run(ch, items, rng),
            JobSession::Kkrt(s) => s.run(ch, items, rng),
            JobSession::Rr22(s) => PsiSession::run(&mut **s, ch, items, rng),
        }
    }

    fn split<Ch, R>(&mut self, ch: &mut Ch, n: usize, rng: &mut R) -> obliv_psi::Result<Vec<Self>>
    where
        Ch: Channel + ?Sized,
        R: rand_core::CryptoRng + ?Sized,
    {
        Ok(match self {
            JobSession::Ecdh(s) => s
                .split(ch, n, rng)?
                .into_iter()
                .map(JobSession::Ecdh)
                .collect(),
            JobSession::Kkrt(s) => s
                .split(ch, n, rng)?
                .into_iter()
                .map(|k| JobSession::Kkrt(Box::new(k)))
                .collect(),
            JobSession::Rr22(s) => PsiSession::split(&mut **s, ch, n, rng)?
                .into_iter()
                .map(|r| JobSession::Rr22(Box::new(r)))
                .collect(),
        })
    }
}

/// Whether the protocol takes a curve (the others ignore `--curve`).
fn uses_curve(p: Protocol) -> bool {
    matches!(p, Protocol::Ecdh | Protocol::Ecdh3pc)
}

/// What a checkpoint must match: everything that changes a bucket's result.
fn identity(cfg: &PartyConfig, shape: &bucket::InputShape) -> Identity {
    let digest: String = shape
        .digest
        .unwrap_or_default()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Identity::default()
        .with("protocol", cfg.protocol)
        .with(
            "curve",
            if uses_curve(cfg.protocol) {
                cfg.curve.to_string()
            } else {
                "-".into()
            },
        )
        .with("rank", cfg.rank)
        .with("receiver", cfg.receiver)
        .with("broadcast", cfg.broadcast)
        .with("parties", &cfg.parties_arg)
        .with("keys", format!("{:?}", cfg.keys))
        .with("bucket_load", cfg.bucket_load)
        .with("shard", cfg.shard)
        .with("input_bytes", shape.bytes)
        .with("input_rows", shape.rows)
        .with("input_blake3", digest)
}

/// What the bucket loop produced.
struct Outcome {
    /// The rows in the intersection, for the parties that learn it.
    selected: Option<bucket::RowSet>,
    keys_in: u64,
    keys_out: u64,
    stats: Stats,
    /// Round trips on the critical path ([`Report::critical_rounds`]).
    critical_rounds: u64,
    buckets: u64,
    resumed: u64,
}

/// Agrees on the bucket plan (and on where to resume) with every peer, then runs one PSI per
/// bucket that is not finished on every side (two-party protocols with `workers > 1`:
/// several at a time), each bucket padded to the plan's public bound.
fn run_buckets<C>(
    cfg: &PartyConfig,
    shape: &bucket::InputShape,
    files: &mut bucket::Buckets,
    mut link: Link<C>,
    mut cp: Option<&mut Checkpoint>,
) -> Result<Outcome, CliError>
where
    C: Split + Send + 'static,
    C::Sender: Send,
{
    let deadline = Instant::now().checked_add(cfg.step_timeout);
    let plan = match &mut link {
        Link::Three(session) => {
            deadline::set_on_session(session, deadline);
            let plan = agree(cfg, shape.rows, session, cp.as_deref_mut());
            deadline::set_on_session(session, None);
            plan?
        }
        Link::Two(prepared, _) => {
            // The job handshake on the driver's control channel, after its set-up.
            let mut channels: Vec<Option<&mut dyn Channel>> = vec![None, None];
            let ch = prepared.control();
            ch.set_deadline(deadline);
            if let Some(slot) = channels.get_mut(1 - cfg.rank.min(1)) {
                *slot = Some(ch);
            }
            let mut session = Session::from_channels(cfg.rank, channels)?;
            let plan = agree(cfg, shape.rows, &mut session, cp.as_deref_mut());
            drop(session);
            prepared.control().set_deadline(None);
            plan?
        }
    };
    let total = plan.buckets;
    let pad_to = usize::try_from(plan.bound(cfg.rank))
        .map_err(|_| CliError::usage(format!("buckets of {} keys", plan.bound(cfg.rank))))?;
    // The most items any peer may announce in a bucket: its public bound.
    let peer_limit = (0..cfg.protocol.parties())
        .filter(|&p| p != cfg.rank)
        .map(|p| plan.bound(p))
        .max()
        .unwrap_or(0);
    let peer_limit = usize::try_from(peer_limit).unwrap_or(usize::MAX);
    // Every run of the job (all buckets of all shards) gets the statistical parameter that
    // keeps the whole job's failure probability at 2^-40; both sides derive it from the
    // agreed plan, and every bucket's handshake checks it again.
    let lambda = obliv_psi::job_stat_security(plan.runs());
    if cfg.protocol == Protocol::Rr22(rr22::Variant::LowComm) {
        // The low-communication variant's privacy bound adds up over the sender's keys of the
        // whole job (n_s·2^-64 per run): refused here, on both sides alike, before any bucket.
        let sender = 1 - cfg.receiver.min(1);
        let cap = rr22::lowcomm::max_sender_items(lambda) as u64;
        if plan.bound(sender) > cap {
            return Err(CliError::usage(format!(
                "rr22-lowcomm keeps its 2^-40 bound only up to {cap} sender keys per bucket for \
                 this job ({} buckets, statistical parameter {lambda}); the sender's buckets \
                 hold {}: use --protocol rr22",
                plan.runs(),
                plan.bound(sender)
            )));
        }
    }
    let total_usize =
        usize::try_from(total).map_err(|_| CliError::protocol(format!("{total} buckets")))?;
    let learns = cfg.rank == cfg.receiver || cfg.broadcast;
    let mut selected = learns.then(|| bucket::RowSet::new(shape.rows));
    let (mut keys_in, mut keys_out, mut resumed, mut resumed_rows) = (0u64, 0u64, 0u64, 0u64);
    // Buckets every party finished earlier: their results come from the checkpoint.
    if let Some(cp) = cp.as_deref() {
        for b in (0..total).filter(|&b| cp.is_finished(b)) {
            let r = cp.read_bucket(b)?;
            keys_in += r.keys_in;
            keys_out += r.keys_out;
            resumed_rows += r.rows_in;
            resumed += 1;
            if let (Some(rows), Some(sel)) = (&r.rows, selected.as_mut()) {
                for &row in rows {
                    sel.insert(row);
                }
            }
        }
    }
    let todo: Vec<u64> = (0..total)
        .filter(|&b| !cp.as_deref().is_some_and(|c| c.is_finished(b)))
        .collect();
    let mut rng = AesRng::from_entropy();
    let step = cfg.step_timeout;
    let ecfg = ecdh_config(cfg, peer_limit, lambda);
    let mut bar = Progress::new(
        cfg.progress,
        "psi",
        "rows",
        shape.shard_rows.saturating_sub(resumed_rows),
    );
    // Records one finished bucket: its rows in the result, its tally, durably in the
    // checkpoint (only now, with its result in hand), and on the progress bar.
    let mut record = |out: BucketOutput<PsiBucket>| -> Result<(), CliError> {
        let b = todo
            .get(out.index)
            .copied()
            .ok_or_else(|| CliError::protocol(format!("bucket {} out of range", out.index)))?;
        bar.set_label(format!("psi bucket {}/{total}", b + 1));
        // Only the real keys: the dummies after them never match.
        let (bucket, n_keys) = (&out.bucket.bucket, out.bucket.real);
        let mut result = BucketResult {
            rows_in: bucket.rows_len() as u64,
            keys_in: n_keys as u64,
            keys_out: 0,
            rows: None,
        };
        if let Some(idx) = out.result {
            let mut hit = vec![false; n_keys];
            let mut matched: Vec<u64> = Vec::new();
            for i in idx {
                if let Some(h) = hit.get_mut(i).filter(|h| !**h) {
                    *h = true;
                    result.keys_out += 1;
                    matched.extend_from_slice(bucket.rows_of(i));
                }
            }
            let sel = selected.get_or_insert_with(|| bucket::RowSet::new(shape.rows));
            for &row in &matched {
                sel.insert(row);
            }
            result.rows = Some(matched);
        }
        keys_in += result.keys_in;
        keys_out += result.keys_out;
        if let Some(cp) = cp.as_deref_mut() {
            cp.save(b, &result)?;
        }
        bar.inc(result.rows_in);
        Ok(())
    };
    // A reader thread prepares the next bucket (gathering and grouping its keys) while the
    // protocol runs on the current one; the rendezvous queue keeps at most one ahead.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Result<bucket::Bucket, CliError>>(0);
    let order = todo.clone();
    let reader = move || {
        for b in order {
            let r = files.take(usize::try_from(b).unwrap_or(0), total_usize);
            let failed = r.is_err();
            // The loop below stopped (an error): nothing more to prepare.
            if tx.send(r).is_err() || failed {
                break;
            }
        }
    };
    // The job handshake's traffic; the buckets' is added as they finish.
    // With two parties: the settings hello, then the driver's set-up and the job handshake
    // (on its control channel). The set-up's round trips overlap the input pass, but they
    // are round trips of the run all the same, and counted as such.
    let mut stats = match &mut link {
        Link::Three(session) => session.stats(),
        Link::Two(prepared, settings) => *settings + prepared.control().stats(),
    };
    // Round trips on the critical path: the handshake's and the set-up's, then each worker's
    // buckets one after the other (workers run side by side).
    let mut critical_rounds = stats.rounds;
    let mut worker_rounds: Vec<u64> = Vec::new();
    std::thread::scope(|scope| -> Result<(), CliError> {
        // Owned here, so an early return drops it and the reader's `send` fails instead of
        // blocking the scope's join.
        let rx = rx;
        scope.spawn(reader);
        // The driver's input: the reader's buckets in `todo` order, until the reader fails
        // (its error is returned after the driver ends).
        let failed: std::cell::RefCell<Option<CliError>> = std::cell::RefCell::new(None);
        let mut dummies = AesRng::from_entropy();
        let input = todo.iter().map_while(|&b| match rx.recv() {
            Ok(Ok(bucket)) => match PsiBucket::padded(bucket, pad_to, b, &mut dummies) {
                Ok(padded) => Some(padded),
                Err(e) => {
                    *failed.borrow_mut() = Some(e);
                    None
                }
            },
            Ok(Err(e)) => {
                *failed.borrow_mut() = Some(e);
                None
            }
            Err(_) => {
                *failed.borrow_mut() = Some(CliError::input("the bucket reader stopped"));
                None
            }
        });
        let mut each = |out: obliv_psi::Result<BucketOutput<PsiBucket>>| -> Result<(), CliError> {
            let out = out?;
            stats += out.stats;
            if worker_rounds.len() <= out.worker {
                worker_rounds.resize(out.worker + 1, 0);
            }
            worker_rounds[out.worker] += out.stats.rounds;
            record(out)
        };
        match link {
            Link::Three(mut session) => {
                // Three parties: one bucket after the other on the whole session, each channel
                // refusing frames longer than the protocol's before buffering them.
                let limit = ecdh3::max_frame_len(&ecfg);
                for (_, ch) in session.channels_mut() {
                    ch.set_max_frame_len(ch.max_frame_len().min(limit));
                }
                let runs = driver::sequential(input, |b: &PsiBucket| {
                    let before = session.stats();
                    deadline::set_on_session(&mut session, Instant::now().checked_add(step));
                    // ECDH 3PC hashes its items itself (to the curve), from their bytes.
                    let keys: Vec<[u8; 16]> = b.keys.iter().map(|k| k.0).collect();
                    let r = ecdh3::run_with_limit(
                        &mut session,
                        cfg.receiver,
                        &keys,
                        &ecfg,
                        peer_limit,
                        &mut rng,
                    );
                    deadline::set_on_session(&mut session, None);
                    let r = r?;
                    Ok((r, session.stats() - before))
                });
                runs.into_iter().try_for_each(&mut each)?;
            }
            Link::Two(mut prepared, _) if !todo.is_empty() => {
                // The children of the split take the plan's bounds now; their set-up traffic
                // is already in `stats` (the control channel's).
                prepared.set_job_limits(peer_limit, lambda)?;
                drive(prepared.run(input, &mut rng)?, &mut each)?;
            }
            // Every bucket was finished on every side: the set-up is dropped unused.
            Link::Two(..) => {}
        }
        if let Some(e) = failed.take() {
            return Err(e);
        }
        drop(rx);
        Ok(())
    })?;
    bar.set_label("psi");
    bar.finish();
    critical_rounds += worker_rounds.iter().copied().max().unwrap_or(0);
    Ok(Outcome {
        selected,
        keys_in,
        keys_out,
        stats,
        critical_rounds,
        buckets: total,
        resumed,
    })
}

/// The ECDH parameters (two and three parties) of this job.
fn ecdh_config(cfg: &PartyConfig, peer_limit: usize, lambda: u32) -> EcdhConfig {
    EcdhConfig {
        curve: cfg.curve,
        batch_size: cfg.batch_size,
        broadcast: cfg.broadcast,
        max_peer_items: peer_limit,
        stat_security: lambda,
        ..EcdhConfig::default()
    }
}

/// The longest frame this party accepts from the start of the connection: the protocol's
/// longest frame ([`obliv_psi::PsiSession::max_frame_len`] and the like), or
/// [`JOB_FRAME_LIMIT`] for the job handshake if that is longer. The bucket driver lowers the
/// limit to the protocol's once the job handshake is done.
fn connection_frame_limit(cfg: &PartyConfig) -> usize {
    let ecfg = ecdh_config(cfg, 0, obliv_psi::STAT_SECURITY);
    let protocol = match cfg.protocol {
        Protocol::Ecdh => obliv_psi::ecdh::max_frame_len(&ecfg),
        Protocol::Ecdh3pc => ecdh3::max_frame_len(&ecfg),
        Protocol::Kkrt => obliv_psi::kkrt::MAX_FRAME_LEN,
        Protocol::Rr22(_) => rr22::MAX_FRAME_LEN,
    };
    protocol.max(JOB_FRAME_LIMIT)
}

/// Runs the driver's buckets through `each`.
fn drive<I>(
    buckets: driver::Buckets<'_, I, PsiBucket>,
    each: &mut dyn FnMut(obliv_psi::Result<BucketOutput<PsiBucket>>) -> Result<(), CliError>,
) -> Result<(), CliError>
where
    I: Iterator<Item = PsiBucket>,
{
    for out in buckets {
        each(out)?;
    }
    Ok(())
}

/// The channel to `peer`, taken out of a two-party session.
fn peer_channel<C: Channel>(session: Session<C>, peer: usize) -> Result<C, CliError> {
    session
        .into_channels()
        .into_iter()
        .nth(peer)
        .flatten()
        .ok_or_else(|| CliError::protocol("no channel to the peer"))
}

/// A bucket for the driver: its distinct keys as owned 16-byte values (workers run on other
/// threads) followed by random dummies up to the public bound, and the bucket itself for
/// mapping results to rows.
///
/// The keys are the public hash of the key columns ([`bucket::key_hash`], BLAKE3 under the
/// CLI's domain), so they go to the protocols as [`HashedItem`]s: RR22 takes them as its OKVS
/// keys without hashing them a second time (ECDH and KKRT hash them to their own domain as
/// they hash any item). A dummy, 16 uniform bytes, is as good a random-oracle key as a hash.
struct PsiBucket {
    bucket: bucket::Bucket,
    /// The real keys, then the dummies.
    keys: Vec<HashedItem>,
    /// How many of `keys` are real.
    real: usize,
}

impl PsiBucket {
    /// Bucket `index` padded with dummies to `pad_to` keys.
    ///
    /// A dummy is 16 uniformly random bytes of this party's own generator: it equals a key
    /// hash or another party's dummy with probability 2^-128 per pair, so it never shows in
    /// an intersection, and the protocols hide which positions are real.
    ///
    /// # Errors
    /// [`ExitKind::Input`](crate::ExitKind::Input) if the bucket holds more distinct keys than `pad_to` (an overflow
    /// of the public bound, probability below 2^-40 for the job).
    fn padded(
        mut bucket: bucket::Bucket,
        pad_to: usize,
        index: u64,
        rng: &mut AesRng,
    ) -> Result<Self, CliError> {
        let real = bucket.distinct_len();
        if real > pad_to {
            return Err(CliError::input(format!(
                "bucket {index} holds {real} distinct keys, more than the public bound of \
                 {pad_to} that every bucket is padded to (an event of probability below 2^-40 \
                 for any fixed input; the peer learns only that the job stopped)"
            )));
        }
        // The bucket's keys move here (its rows stay, looked up by key number).
        let mut keys = bucket.take_keys();
        keys.resize(pad_to, [0u8; 16]);
        for d in &mut keys[real..] {
            rng.fill_bytes(d);
        }
        let keys = keys.into_iter().map(HashedItem).collect();
        Ok(PsiBucket { bucket, keys, real })
    }
}

impl AsRef<[HashedItem]> for PsiBucket {
    fn as_ref(&self) -> &[HashedItem] {
        &self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::hello::JobHello;
    use super::*;

    fn cfg(rank: usize) -> PartyConfig {
        PartyConfig {
            protocol: Protocol::Ecdh,
            curve: Curve::Curve25519,
            rank,
            parties: Vec::new(),
            parties_arg: String::new(),
            input: PathBuf::new(),
            keys: vec!["id".into()],
            output: PathBuf::new(),
            receiver: 0,
            broadcast: false,
            sort: false,
            batch_size: 4096,
            bucket_size: 1 << 22,
            bucket_load: 500,
            sim: None,
            connect_timeout: Duration::from_secs(5),
            step_timeout: Duration::from_secs(60),
            shard: Shard::default(),
            checkpoint: None,
            progress: ProgressMode::Off,
            memory_budget: bucket::DEFAULT_MEMORY_BUDGET,
            workers: 1,
            tls: None,
        }
    }

    fn result() -> BucketResult {
        BucketResult {
            rows_in: 1,
            keys_in: 1,
            keys_out: 0,
            rows: None,
        }
    }

    /// Runs `agree` for both parties on an in-memory pair, each with its checkpoint and its
    /// row count (at the test load of 500 keys per bucket, 2,000 rows make 4 buckets); returns
    /// the bucket count each computed.
    fn agree_pair(cps: [&mut Checkpoint; 2], own: [u64; 2]) -> [u64; 2] {
        let mut sessions = Session::mem_mesh(2);
        let s1 = sessions.pop().unwrap();
        let s0 = sessions.pop().unwrap();
        let [c0, c1] = cps;
        std::thread::scope(|t| {
            let h = t.spawn(move || {
                let mut s1 = s1;
                agree(&cfg(1), own[1], &mut s1, Some(c1)).unwrap().buckets
            });
            let mut s0 = s0;
            let a = agree(&cfg(0), own[0], &mut s0, Some(c0)).unwrap().buckets;
            [a, h.join().unwrap()]
        })
    }

    /// A `--batch-size` the ECDH protocols refuse was found only after the whole input was read
    /// and the peers connected; refused at once now, before the input is opened.
    #[test]
    fn a_bad_batch_size_is_refused_before_the_input_is_read() {
        for (protocol, parties) in [(Protocol::Ecdh, 2), (Protocol::Ecdh3pc, 3)] {
            for batch_size in [0, obliv_psi::ecdh::MAX_BATCH + 1] {
                let mut c = cfg(0);
                c.protocol = protocol;
                c.parties = vec!["127.0.0.1:1".parse().unwrap(); parties];
                c.input = PathBuf::from("/nonexistent/input.csv");
                c.batch_size = batch_size;
                let e = run(&c, None).unwrap_err();
                assert_eq!(e.exit_code(), 2, "{e}");
                assert!(e.to_string().contains("--batch-size"), "{e}");
            }
        }
    }

    #[test]
    fn parties_resume_from_the_buckets_all_of_them_finished() {
        let dir = tempfile::tempdir().unwrap();
        let id = |r: usize| Identity::default().with("rank", r);
        let mut a = Checkpoint::open(&dir.path().join("a"), &id(0)).unwrap();
        let mut b = Checkpoint::open(&dir.path().join("b"), &id(1)).unwrap();
        // Fresh: both start the same new run; the larger party's rows set the bucket count.
        assert_eq!(agree_pair([&mut a, &mut b], [2000, 4000]), [8, 8]);
        let run = a.run().unwrap();
        assert_eq!(b.run(), Some(run));
        assert_eq!(run.buckets, 8);
        for x in [0, 1, 2] {
            a.save(x, &result()).unwrap();
        }
        for x in [0, 2, 3] {
            b.save(x, &result()).unwrap();
        }
        // Resume: only the buckets finished on both sides count.
        assert_eq!(agree_pair([&mut a, &mut b], [2000, 4000]), [8, 8]);
        assert_eq!(a.run(), Some(run));
        for cp in [&a, &b] {
            let done: Vec<u64> = (0..8).filter(|&x| cp.is_finished(x)).collect();
            assert_eq!(done, vec![0, 2]);
        }
        // A party whose checkpoint is of another run (here: started afresh): both start over.
        let mut c = Checkpoint::open(&dir.path().join("c"), &id(1)).unwrap();
        assert_eq!(agree_pair([&mut a, &mut c], [2000, 1000]), [4, 4]);
        assert_ne!(a.run(), Some(run));
        assert_eq!(a.run(), c.run());
        assert_eq!(a.finished_count(), 0);
        assert!(!dir.path().join("a").join("b0").exists());
    }

    #[test]
    fn buckets_are_padded_with_fresh_dummies_and_overflow_is_an_error() {
        let mut rng = AesRng::from_entropy();
        let real: Vec<[u8; 16]> = (0u8..5).map(|i| [i; 16]).collect();
        let b =
            PsiBucket::padded(bucket::Bucket::with_keys(real.clone()), 64, 0, &mut rng).unwrap();
        assert_eq!((b.keys.len(), b.real), (64, 5));
        assert!(b.keys[..5].iter().zip(&real).all(|(k, r)| k.0 == *r));
        let mut all = b.keys.clone();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 64, "dummies repeat or equal a real key");
        // Exactly full is fine; one key more than the bound is refused (exit code 3).
        assert!(PsiBucket::padded(bucket::Bucket::with_keys(real.clone()), 5, 1, &mut rng).is_ok());
        let Err(e) = PsiBucket::padded(bucket::Bucket::with_keys(real), 4, 2, &mut rng) else {
            panic!("an overflowing bucket was padded");
        };
        assert_eq!(e.exit_code(), 3, "{e}");
        assert!(e.to_string().contains("bucket 2"), "{e}");
    }

    #[test]
    fn a_peer_that_overstates_its_rows_is_refused() {
        let run = |own: u64, theirs: u64| {
            let mut sessions = Session::mem_mesh(2);
            let mut s1 = sessions.pop().unwrap();
            let mut s0 = sessions.pop().unwrap();
            std::thread::scope(|t| {
                let h = t.spawn(move || agree(&cfg(1), theirs, &mut s1, None).map(|p| p.buckets));
                let a = agree(&cfg(0), own, &mut s0, None).map(|p| p.buckets);
                (a, h.join().unwrap())
            })
        };
        // Unbalanced but honest: accepted on both sides.
        let (a, b) = run(1_000, 10_000_000);
        assert_eq!((a.unwrap(), b.unwrap()), (1 << 14, 1 << 14));
        // 2^40 rows claimed against 1000: party 0 would pad to far more than 16x its rows.
        let (a, _) = run(1_000, 1 << 40);
        assert_eq!(a.unwrap_err().exit_code(), 2);
    }

    #[test]
    fn job_hello_round_trips_and_rejects_garbage() {
        let h = JobHello {
            params: "protocol=ecdh shard=0/1".into(),
            rows: 16,
            checkpoint: true,
            run: Some(RunInfo {
                id: [3; 16],
                buckets: 16,
            }),
        };
        let bytes = h.encode();
        assert_eq!(JobHello::decode(&bytes).unwrap(), h);
        for cut in 0..bytes.len() {
            assert!(JobHello::decode(&bytes[..cut]).is_err());
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(JobHello::decode(&long).is_err());
        let mut huge = bytes;
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(JobHello::decode(&huge).unwrap_err().exit_code(), 5);
    }
}
