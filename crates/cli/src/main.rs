//! `obliv`: private set intersection on CSV files between processes over TCP.
//!
//! ```text
//! obliv psi demo [--protocol ecdh] [--curve 25519] [--size N]
//! obliv psi --protocol ecdh --curve 25519 --rank R --parties HOST:PORT,HOST:PORT
//!           --input FILE --keys COL[,COL…] --output FILE [--receiver R] [--broadcast] [--sort]
//!           [--bucket-size N] [--bucket-load N] [--checkpoint DIR] [--shard I/N]
//!           [--progress auto|bar|log|off] [--workers N]
//! obliv merge --output FILE [--sort --keys COL[,COL…]] PART…
//! obliv ub-psi offline|online --role server|client --rank R --parties HOST:PORT,HOST:PORT
//!           [--input FILE --keys COL[,COL…]] [--cache FILE] [--key-file FILE] [--output FILE]
//!           [--server-get-result]
//! obliv pir serve --listen HOST:PORT (--db FILE | --generate N) [--record-size B]
//! obliv pir query --servers HOST:PORT,HOST:PORT --index I [--out FILE]
//! obliv gen-data --size N --parties 2|3 --overlap 0.5 --out-dir DIR
//! ```
//! Exit codes: 0 success, 2 usage, 3 input/output files, 4 network, 5 protocol, 130
//! interrupted (SIGINT, SIGTERM or SIGHUP; the run's temporary files removed).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use obliv_cli::console;
use obliv_cli::demo::{self, DemoConfig};
use obliv_cli::gen_data;
use obliv_cli::party::{self, PartyConfig, Protocol};
use obliv_cli::{CliError, ExitKind};
use obliv_ec::Curve;
use obliv_net::LinkModel;

#[derive(Parser, Debug)]
#[command(
    name = "obliv",
    version,
    about = "Private set intersection on CSV files over TCP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one party of a PSI (or `psi demo` for all parties in one process).
    Psi(Box<PsiCmd>),
    /// Generate test CSV files (`psi_1.csv` …) with a planted intersection.
    GenData(GenArgs),
    /// Join the outputs of the shards of one job (`psi --shard I/N`) into one file.
    Merge(MergeArgs),
    /// Unbalanced PSI: `offline` once per server set, `online` per client query.
    UbPsi(Box<UbCmd>),
    /// Two-server PIR: `pir serve` runs one server, `pir query` fetches a record.
    #[command(subcommand)]
    Pir(PirCmd),
}

#[derive(Subcommand, Debug)]
enum PirCmd {
    /// Serve a database of fixed-size records over TCP until killed.
    Serve {
        /// Address to listen on, e.g. 127.0.0.1:7100.
        #[arg(long)]
        listen: String,
        /// Database file: records of --record-size bytes, back to back.
        #[arg(long, conflicts_with = "generate")]
        db: Option<PathBuf>,
        /// Generate this many random records instead (both servers must use the same --seed),
        /// 1 to 2^32, held in memory.
        #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(1..=MAX_PIR_RECORDS))]
        generate: Option<usize>,
        /// Bytes per record, 1 to 2^24.
        #[arg(long, default_value_t = 1024, value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(1..=MAX_PIR_RECORD_LEN))]
        record_size: usize,
        /// Seed of a generated database.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// TLS: this server's certificate must name the host clients dial it at; clients
        /// must present a certificate issued by `--tls-ca`.
        #[command(flatten)]
        tls: obliv_cli::tls::TlsArgs,
    },
    /// Fetch record --index from the two servers without either learning which.
    Query {
        /// The two servers' HOST:PORT, comma-separated.
        #[arg(long)]
        servers: String,
        /// Record index, from 0 to the servers' record count less one (below 2^32).
        #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(0..MAX_PIR_RECORDS))]
        index: usize,
        /// Write the record here (default: print its first bytes in hex).
        #[arg(long)]
        out: Option<PathBuf>,
        /// TLS: each server's certificate must name its host in `--servers`.
        #[command(flatten)]
        tls: obliv_cli::tls::TlsArgs,
    },
}

#[derive(Args, Debug)]
struct UbCmd {
    /// `offline` or `online`.
    phase: String,
    /// `server` (large set, key) or `client` (small set, cache, learns the result).
    #[arg(long)]
    role: String,
    /// Curve (fourq, 25519, secp256k1, p256, sm2, ristretto255).
    #[arg(long, default_value = "fourq")]
    curve: String,
    /// This process's rank (0 or 1).
    #[arg(long)]
    rank: usize,
    /// Both HOST:PORT, comma-separated, in rank order.
    #[arg(long)]
    parties: String,
    /// Input CSV (server: its set, offline, and online only with `--server-get-result`, to
    /// write its matching rows; client: its query set, online).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Key column(s), comma-separated.
    #[arg(long, value_delimiter = ',')]
    keys: Vec<String>,
    /// Client: the cache file the offline phase writes and the online phase reads.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Server: the key file (created by the offline phase if missing, reused afterwards).
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Output CSV of the matching rows: the client's in the online phase, and the server's
    /// too with `--server-get-result`.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The server learns the intersection too (SecretFlow's `server_get_result`). Both roles
    /// must pass it in both phases: the offline phase stores the positions it needs.
    #[arg(long)]
    server_get_result: bool,
    /// Seconds to wait for the peer to come up and read its input (the connection is set up
    /// while the input is read; the server reads its CSV at about a minute per 1e8 rows), and
    /// for a silent peer if that is longer than the 60 s idle timeout: a client facing a large
    /// set passes more than the default.
    #[arg(long, default_value_t = 60)]
    connect_timeout: u64,
    /// Online phase: seconds it may take in all, however slowly the peer sends (exit code 4
    /// when it passes). The offline phase has only the idle timeouts.
    #[arg(long, default_value_t = obliv_cli::deadline::DEFAULT_STEP_TIMEOUT.as_secs())]
    step_timeout: u64,
    /// Server, online: most items a client may query in one online phase (refused before
    /// anything is answered).
    #[arg(long, default_value_t = obliv_psi::unbalanced::UbConfig::default().max_client_items)]
    max_client_items: usize,
    /// Server: most OPRF evaluations one key answers over its lifetime, summed over every
    /// online phase and recorded in the key file (the offline phase must run again with a new
    /// key once it is spent; a lower bound also follows from the OPRF width and the set size).
    #[arg(long, default_value_t = obliv_psi::unbalanced::UbConfig::default().max_key_queries)]
    max_key_queries: u64,
    /// Client: most values the server may send for the cache (refused before any value
    /// arrives, so a hostile server cannot fill this disk: 12 bytes per value, 17 with
    /// `--server-get-result`).
    #[arg(long, default_value_t = obliv_psi::unbalanced::UbConfig::default().max_server_items)]
    max_server_items: u64,
    #[command(flatten)]
    tls: obliv_cli::tls::TlsArgs,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct PsiCmd {
    #[command(subcommand)]
    demo: Option<PsiSub>,
    #[command(flatten)]
    party: PartyArgs,
}

#[derive(Subcommand, Debug)]
enum PsiSub {
    /// Both parties in one command on generated data over loopback TCP.
    Demo(DemoArgs),
}

/// Most records of a PIR database ([`obliv_pir::db::MAX_RECORDS`]).
const MAX_PIR_RECORDS: u64 = obliv_pir::db::MAX_RECORDS as u64;

/// Longest PIR record in bytes ([`obliv_pir::db::MAX_RECORD_LEN`]).
const MAX_PIR_RECORD_LEN: u64 = obliv_pir::db::MAX_RECORD_LEN as u64;

/// Slowest simulated link accepted (bits per second; `0` is an unlimited bandwidth): below it
/// the smallest run takes hours, until the step timeout ends it.
const MIN_SIM_BANDWIDTH: u64 = 1_000;

/// Longest simulated one-way latency accepted: a real link's is under a second (a
/// geostationary satellite hop: 0.25 s); longer ones only hang the run until the step timeout.
const MAX_SIM_LATENCY: Duration = Duration::from_secs(10);

#[derive(Args, Debug)]
struct LinkArgs {
    /// Simulated bandwidth, e.g. 100mbit or 1gbit: at least 1kbit (0: unlimited).
    #[arg(long)]
    sim_bandwidth: Option<String>,
    /// Simulated one-way latency, e.g. 10ms: at most 10s.
    #[arg(long)]
    sim_latency: Option<String>,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Protocol.
    #[arg(long, default_value = "ecdh")]
    protocol: String,
    /// Curve: fourq, 25519, sm2, secp256k1, p256, ristretto255.
    #[arg(long, default_value = "fourq")]
    curve: String,
    /// Rows per party (half of them common), 1 to 100000000 (1e8): the CSV files are written
    /// to a temporary directory. Larger jobs run `obliv gen-data` and one `obliv psi` process
    /// per party.
    #[arg(long, default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..=demo::MAX_SIZE))]
    size: u64,
    /// Keep the generated files and outputs in this directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    #[command(flatten)]
    link: LinkArgs,
}

#[derive(Args, Debug)]
struct PartyArgs {
    /// Protocol: ecdh, ecdh-3pc, kkrt, rr22, rr22-lowcomm, rr22-malicious. On a link below
    /// 1 Gbit/s rr22-lowcomm is the fastest semi-honest one (half of rr22's bytes in the
    /// larger direction); at 1 Gbit/s and on a LAN rr22 and rr22-lowcomm are as fast; kkrt
    /// sends three to four times the bytes.
    #[arg(long)]
    protocol: Option<String>,
    /// Curve of the ECDH protocols.
    #[arg(long, default_value = "fourq")]
    curve: String,
    /// This party's rank.
    #[arg(long)]
    rank: Option<usize>,
    /// Every party's HOST:PORT, comma-separated, in rank order.
    #[arg(long)]
    parties: Option<String>,
    /// Input CSV file (with a header row).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Key column(s), comma-separated.
    #[arg(long, value_delimiter = ',')]
    keys: Vec<String>,
    /// Output CSV file (rows of the input whose key is in the intersection).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Rank of the party that learns the result.
    #[arg(long, default_value_t = 0)]
    receiver: usize,
    /// Every party learns the result.
    #[arg(long)]
    broadcast: bool,
    /// Sort output rows by key.
    #[arg(long)]
    sort: bool,
    /// Items per streamed batch.
    #[arg(long, default_value_t = 4096)]
    batch_size: usize,
    /// Most keys per bucket this party accepts (padding included): a local memory limit,
    /// never sent. The bucket count follows from public data only (both row counts, the
    /// shard count and --bucket-load); a job that needs larger buckets is refused.
    #[arg(long, default_value_t = 1 << 22)]
    bucket_size: usize,
    /// Expected keys per bucket of the larger party: with the row counts, the shard count and
    /// --workers it fixes the bucket count (more than one worker asks for about four buckets
    /// per worker, down to 65536 keys each). Every party must give the same value. Below
    /// 65536 the padding of buckets to their public bound costs more than a few percent.
    #[arg(long, default_value_t = obliv_cli::plan::DEFAULT_LOAD)]
    bucket_load: u64,
    /// Write the report as JSON to this file too (mode 0600, put in place once complete).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Seconds to wait for the other parties to come up and read their input (the connection
    /// is set up while the input is read), and for a silent peer if that is longer than the
    /// 60 s idle timeout.
    #[arg(long, default_value_t = 60)]
    connect_timeout: u64,
    /// Seconds each protocol step may take in all (the job handshake, the set-up, every
    /// bucket), however slowly a peer sends: exit code 4 when one passes.
    #[arg(long, default_value_t = obliv_cli::deadline::DEFAULT_STEP_TIMEOUT.as_secs())]
    step_timeout: u64,
    /// Record every finished bucket in this directory; the same command run again after a
    /// crash resumes from the buckets all parties finished (one directory per party and shard).
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Run only shard I of N (`I/N`, 0 <= I < N): the keys whose public hash falls in it. The
    /// N shards' outputs together are the full result (`obliv merge`).
    #[arg(long, default_value = "0/1")]
    shard: String,
    /// Progress on stderr: `auto` (a bar on a terminal, log lines otherwise), `bar`, `log`, `off`.
    #[arg(long, default_value = "auto")]
    progress: String,
    /// MiB of memory for the input's keys (24 bytes per row); rows beyond it go to an
    /// anonymous temporary file (unlinked at once) in the output's directory (or the
    /// checkpoint directory).
    #[arg(long, default_value_t = 1024)]
    memory_mib: usize,
    /// Two-party protocols: run this many buckets side by side, each on its own worker thread
    /// and sub-channel (both parties must give the same value). The default 1 runs them one
    /// after the other. On a WAN link use 8: the workers' round trips and transfers overlap,
    /// and the plan gives each worker about four buckets (down to 2^16 keys per bucket), which
    /// brings a run close to its link's bound (bytes/bandwidth plus round trips); figures in
    /// docs/benchmarks.md.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    #[command(flatten)]
    link: LinkArgs,
    #[command(flatten)]
    tls: obliv_cli::tls::TlsArgs,
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// The shards' output files, in shard order.
    #[arg(required = true)]
    parts: Vec<PathBuf>,
    /// The merged output file.
    #[arg(long)]
    output: PathBuf,
    /// Merge parts written with --sort by key (the result equals the unsharded --sort run).
    #[arg(long)]
    sort: bool,
    /// Key column(s) the parts are sorted by (with --sort).
    #[arg(long, value_delimiter = ',')]
    keys: Vec<String>,
}

#[derive(Args, Debug)]
struct GenArgs {
    /// Rows per file, 0 to 10000000000 (1e10, about 250 GB per file; 0 writes the header
    /// only).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=gen_data::MAX_ROWS))]
    size: u64,
    /// Number of files (2 or 3).
    #[arg(long, default_value_t = 2)]
    parties: usize,
    /// Fraction of rows common to all files.
    #[arg(long, default_value_t = 0.5)]
    overlap: f64,
    /// Output directory.
    #[arg(long)]
    out_dir: PathBuf,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn parse_curve(s: &str) -> Result<Curve, CliError> {
    s.parse::<Curve>()
        .map_err(|e| CliError::with_source(ExitKind::Usage, format!("--curve {s:?}"), e))
}

/// `100mbit`, `1gbit`, `500kbit`, or plain bits per second: `0` (unlimited) or at least
/// [`MIN_SIM_BANDWIDTH`].
fn parse_bandwidth(s: &str) -> Result<u64, CliError> {
    let l = s.trim().to_ascii_lowercase();
    let (num, mult) = [
        ("gbit", 1_000_000_000u64),
        ("mbit", 1_000_000),
        ("kbit", 1_000),
        ("bit", 1),
    ]
    .iter()
    .find_map(|(suf, m)| l.strip_suffix(suf).map(|n| (n.to_string(), *m)))
    .unwrap_or((l.clone(), 1));
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| CliError::usage(format!("bad bandwidth {s:?} (e.g. 100mbit)")))
        .and_then(|bps| {
            if bps == 0 || bps >= MIN_SIM_BANDWIDTH {
                Ok(bps)
            } else {
                Err(CliError::usage(format!(
                    "--sim-bandwidth {s:?} is below {MIN_SIM_BANDWIDTH} bit/s (1kbit): a run \
                     would take hours"
                )))
            }
        })
}

/// `10ms`, `1s`, `250us`: at most [`MAX_SIM_LATENCY`].
fn parse_latency(s: &str) -> Result<Duration, CliError> {
    let latency = parse_duration(s)?;
    if latency > MAX_SIM_LATENCY {
        return Err(CliError::usage(format!(
            "--sim-latency {s:?} is above {}s: a real link's one-way latency is under a second",
            MAX_SIM_LATENCY.as_secs()
        )));
    }
    Ok(latency)
}

/// `10ms`, `1s`, `250us`.
fn parse_duration(s: &str) -> Result<Duration, CliError> {
    let l = s.trim().to_ascii_lowercase();
    let bad = || CliError::usage(format!("bad latency {s:?} (e.g. 10ms)"));
    if let Some(n) = l.strip_suffix("ms") {
        n.trim()
            .parse()
            .map(Duration::from_millis)
            .map_err(|_| bad())
    } else if let Some(n) = l.strip_suffix("us") {
        n.trim()
            .parse()
            .map(Duration::from_micros)
            .map_err(|_| bad())
    } else if let Some(n) = l.strip_suffix('s') {
        n.trim().parse().map(Duration::from_secs).map_err(|_| bad())
    } else {
        Err(bad())
    }
}

fn link(args: &LinkArgs) -> Result<Option<LinkModel>, CliError> {
    match (&args.sim_bandwidth, &args.sim_latency) {
        (None, None) => Ok(None),
        (b, l) => Ok(Some(LinkModel {
            bandwidth_bps: b.as_deref().map(parse_bandwidth).transpose()?.unwrap_or(0),
            latency: l
                .as_deref()
                .map(parse_latency)
                .transpose()?
                .unwrap_or_default(),
        })),
    }
}

fn required<T>(v: Option<T>, name: &str) -> Result<T, CliError> {
    v.ok_or_else(|| CliError::usage(format!("--{name} is required (see `obliv psi --help`)")))
}

fn run_demo(a: &DemoArgs) -> Result<(), CliError> {
    let cfg = DemoConfig {
        protocol: a.protocol.parse::<Protocol>()?,
        curve: parse_curve(&a.curve)?,
        size: a.size,
        sim: link(&a.link)?,
        dir: a.dir.clone(),
    };
    console::out(format_args!(
        "obliv psi demo: {} on {}, {} rows per party (half in common), {} parties over loopback TCP{}",
        cfg.protocol,
        cfg.curve,
        cfg.size,
        cfg.protocol.parties(),
        cfg.sim.map_or(String::new(), |m| format!(
            ", simulated link {} bit/s, {:?} one way",
            m.bandwidth_bps, m.latency
        ))
    ))?;
    console::out(format_args!("backends: {}", demo::backends()))?;
    let out = demo::run(&cfg)?;
    for r in &out.reports {
        console::out(format_args!(
            "  party {}: {} rows in, {:.2} s, sent {:.2} MB, received {:.2} MB{}",
            r.rank,
            r.rows_in,
            r.seconds,
            mb(r.stats.bytes_sent),
            mb(r.stats.bytes_received),
            r.keys_out
                .map_or(String::new(), |k| format!(", intersection {k} keys"))
        ))?;
    }
    console::out(format_args!(
        "intersection: {} items (expected {}), wall time {:.2} s, total traffic {:.2} MB",
        out.reports[0].keys_out.unwrap_or(0),
        out.expected,
        out.seconds,
        mb(out.reports.iter().map(|r| r.stats.bytes_sent).sum())
    ))
}

#[allow(clippy::cast_precision_loss)] // a human-readable figure
fn mb(b: u64) -> f64 {
    b as f64 / 1e6
}

fn run_party(a: &PartyArgs) -> Result<(), CliError> {
    let parties_arg = required(a.parties.as_deref(), "parties")?;
    let cfg = PartyConfig {
        protocol: required(a.protocol.as_deref(), "protocol")?.parse()?,
        curve: parse_curve(&a.curve)?,
        rank: required(a.rank, "rank")?,
        parties: party::parse_parties(parties_arg)?,
        parties_arg: parties_arg.to_string(),
        input: required(a.input.clone(), "input")?,
        keys: if a.keys.is_empty() {
            vec!["id".into()]
        } else {
            a.keys.clone()
        },
        output: required(a.output.clone(), "output")?,
        receiver: a.receiver,
        broadcast: a.broadcast,
        sort: a.sort,
        batch_size: a.batch_size,
        bucket_size: a.bucket_size,
        bucket_load: a.bucket_load,
        sim: link(&a.link)?,
        connect_timeout: Duration::from_secs(a.connect_timeout),
        step_timeout: Duration::from_secs(a.step_timeout),
        shard: a.shard.parse()?,
        checkpoint: a.checkpoint.clone(),
        progress: a.progress.parse()?,
        memory_budget: a.memory_mib.saturating_mul(1 << 20),
        workers: a.workers,
        tls: a.tls.setup(
            parties_arg,
            &party::parse_parties(parties_arg)?,
            a.rank.unwrap_or(0),
        )?,
    };
    // The report is written after the run: a path it cannot take is found now.
    if let Some(path) = &a.report {
        obliv_cli::bucket::check_writable(
            "--report",
            path,
            &[
                ("the input file", &cfg.input),
                ("the output file", &cfg.output),
            ],
        )?;
    }
    let report = party::run(&cfg, None)?;
    if let Some(path) = &a.report {
        // Mode 0600 like the output: the report carries the intersection size.
        write_private(path, (report.to_json() + "\n").as_bytes())?;
    }
    console::out(format_args!("{}", report.to_json()))
}

fn run_ub(u: &UbCmd) -> Result<(), CliError> {
    use obliv_cli::unbalanced::{self, Phase, UbArgs, UbRole};
    let args = UbArgs {
        phase: match u.phase.as_str() {
            "offline" => Phase::Offline,
            "online" => Phase::Online,
            p => {
                return Err(CliError::usage(format!(
                    "phase must be offline or online, not {p:?}"
                )));
            }
        },
        role: match u.role.as_str() {
            "server" => UbRole::Server,
            "client" => UbRole::Client,
            r => {
                return Err(CliError::usage(format!(
                    "--role must be server or client, not {r:?}"
                )));
            }
        },
        curve: parse_curve(&u.curve)?,
        rank: u.rank,
        parties: party::parse_parties(&u.parties)?,
        input: u.input.clone(),
        keys: if u.keys.is_empty() {
            vec!["id".into()]
        } else {
            u.keys.clone()
        },
        cache: u.cache.clone(),
        key_file: u.key_file.clone(),
        output: u.output.clone(),
        server_get_result: u.server_get_result,
        connect_timeout: Duration::from_secs(u.connect_timeout),
        step_timeout: Duration::from_secs(u.step_timeout),
        max_client_items: u.max_client_items,
        max_key_queries: u.max_key_queries,
        max_server_items: u.max_server_items,
        tls: u
            .tls
            .setup(&u.parties, &party::parse_parties(&u.parties)?, u.rank)?,
    };
    let summary = unbalanced::run(&args)?;
    console::out(format_args!("{summary}"))
}

fn run_pir(cmd: &PirCmd) -> Result<(), CliError> {
    use obliv_pir::{Database, ServerConfig, server};
    use rand_core::SeedableRng;
    let pir_err = |e: obliv_pir::Error| CliError::with_source(ExitKind::Protocol, "", e);
    match cmd {
        PirCmd::Serve {
            listen,
            db,
            generate,
            record_size,
            seed,
            tls,
        } => {
            let database = match (db, generate) {
                (Some(path), None) => {
                    check_pir_db(path, *record_size)?;
                    Database::from_file(path, *record_size)
                        .map_err(|e| CliError::file(path.display().to_string(), e))?
                }
                (None, Some(n)) => {
                    let mut seed_bytes = [0u8; 16];
                    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
                    let mut rng = obliv_core::AesRng::from_seed(seed_bytes);
                    // A shape the library refuses (one that cannot be allocated) is this
                    // command's parameters, not a peer's doing.
                    Database::random(*n, *record_size, &mut rng).map_err(|e| {
                        CliError::with_source(
                            ExitKind::Usage,
                            format!("--generate {n} --record-size {record_size}"),
                            e,
                        )
                    })?
                }
                _ => {
                    return Err(CliError::usage("give exactly one of --db and --generate"));
                }
            };
            let addr = obliv_cli::party::parse_parties(listen)?;
            let tls = tls.setup(listen, &addr, 0)?;
            let listener = std::net::TcpListener::bind(listen.as_str()).map_err(|e| {
                CliError::with_source(ExitKind::Network, format!("cannot listen on {listen}"), e)
            })?;
            console::note(format_args!(
                "obliv pir: serving on {listen}{}",
                if tls.is_some() {
                    " over TLS 1.3 (clients must present a certificate of --tls-ca)"
                } else {
                    " in plaintext"
                }
            ));
            let config = ServerConfig {
                tls: tls.map(|t| t.config),
                ..ServerConfig::default()
            };
            server::serve(listener, database, config).map_err(pir_err)
        }
        PirCmd::Query {
            servers,
            index,
            out,
            tls,
        } => {
            let addrs: Vec<&str> = servers.split(',').map(str::trim).collect();
            let [a0, a1] = addrs[..] else {
                return Err(CliError::usage("--servers takes two HOST:PORT"));
            };
            let resolved = obliv_cli::party::parse_parties(servers)?;
            // A path the record cannot be written to is found before the servers are asked.
            if let Some(path) = out {
                obliv_cli::bucket::check_writable("--out", path, &[])?;
            }
            // The client has no address of its own in the list: no own-name check (rank 2).
            let tls = tls.setup(servers, &resolved, 2)?;
            let record = server::query(a0, a1, *index, tls.as_ref().map(|t| &t.config)).map_err(
                |e| match e {
                    obliv_pir::Error::Net(n) => CliError::with_source(ExitKind::Network, "", n),
                    // The servers hold fewer records: this command's --index is wrong.
                    e @ obliv_pir::Error::IndexOutOfRange { .. } => {
                        CliError::with_source(ExitKind::Usage, "--index", e)
                    }
                    other => CliError::with_source(ExitKind::Protocol, "", other),
                },
            )?;
            match out {
                Some(path) => write_private(path, &record)?,
                None => {
                    let hex: String = record.iter().take(32).map(|b| format!("{b:02x}")).collect();
                    console::out(format_args!(
                        "record {index}: {} bytes, starts {hex}",
                        record.len()
                    ))?;
                }
            }
            Ok(())
        }
    }
}

/// Refuses a `pir serve --db` file that would be read whole into memory without bound (a
/// device such as `/dev/zero`, a pipe) or that holds more than the most records a database
/// may have, before it is read.
fn check_pir_db(path: &std::path::Path, record_size: usize) -> Result<(), CliError> {
    let m = std::fs::metadata(path)
        .map_err(|e| CliError::file(format!("--db {}", path.display()), e))?;
    if !m.is_file() {
        return Err(CliError::input(format!(
            "--db {} is not a regular file (a directory, pipe or device): give a file of \
             records",
            path.display()
        )));
    }
    let most = MAX_PIR_RECORDS.saturating_mul(u64::try_from(record_size).unwrap_or(u64::MAX));
    if m.len() > most {
        return Err(CliError::input(format!(
            "--db {} has {} bytes: more than {MAX_PIR_RECORDS} records of --record-size \
             {record_size}",
            path.display(),
            m.len()
        )));
    }
    Ok(())
}

/// Writes `bytes` to `path` as the outputs of `psi` are written: a temporary file of mode 0600
/// beside it, renamed over it once complete (the record queried is private).
fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write;
    let err = |e: std::io::Error| CliError::file(format!("cannot write {}", path.display()), e);
    let mut tmp = obliv_cli::cleanup::TempOutput::beside(path).map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    tmp.persist(path).map_err(err)?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = obliv_cli::cleanup::install() {
        console::note(format_args!(
            "obliv: warning: no interrupt handler ({e}): an interrupted run may leave .tmp* files"
        ));
    }
    let result = match &cli.command {
        Command::Psi(psi) => match &psi.demo {
            Some(PsiSub::Demo(d)) => run_demo(d),
            None => run_party(&psi.party),
        },
        Command::UbPsi(u) => run_ub(u),
        Command::Merge(m) => {
            let keys = if m.keys.is_empty() {
                vec!["id".into()]
            } else {
                m.keys.clone()
            };
            obliv_cli::merge::merge(&m.parts, &keys, m.sort, &m.output).and_then(|rows| {
                console::out(format_args!("{rows} rows from {} parts", m.parts.len()))
            })
        }
        Command::Pir(p) => run_pir(p),
        Command::GenData(g) => gen_data::generate(g.size, g.parties, g.overlap, &g.out_dir, g.seed)
            .and_then(|paths| {
                paths
                    .iter()
                    .try_for_each(|p| console::out(format_args!("{}", p.display())))
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            console::note(format_args!("obliv: {e}"));
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(1))
        }
    }
}
