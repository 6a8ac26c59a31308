//! One party of a PSI run: read the CSV keys, connect to the other parties, run the protocol,
//! write the rows of the intersection, and report.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_ec::Curve;
use obliv_net::{Channel, ChannelExt, ConnectOptions, LinkModel, Session, SimLink, Stats};
use obliv_psi::ecdh::{self, EcdhConfig, Role};
use obliv_psi::ecdh3;
use obliv_psi::kkrt::{KkrtConfig, KkrtPsiReceiver, KkrtPsiSender};
use obliv_psi::rr22::{self, Rr22Config};

use crate::bucket;
use crate::error::CliError;

/// The PSI protocols the command knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Two-party ECDH-PSI.
    Ecdh,
    /// Three-party ECDH-PSI (the receiver also learns the size of the other two parties'
    /// intersection).
    Ecdh3pc,
    /// RR22 PSI, fast semi-honest variant (OKVS + silent VOLE).
    Rr22,
    /// KKRT16 PSI (OPRF from OT extension + cuckoo hashing); base OTs once per session.
    Kkrt,
}

impl Protocol {
    /// Number of parties the protocol runs between.
    pub fn parties(self) -> usize {
        match self {
            Protocol::Ecdh | Protocol::Rr22 | Protocol::Kkrt => 2,
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
            "rr22" => Ok(Protocol::Rr22),
            "kkrt" => Ok(Protocol::Kkrt),
            "rr22-lowcomm" | "rr22-malicious" => Err(CliError::Usage(format!(
                "protocol {s:?} is not available in this build of obliv (available: ecdh, ecdh-3pc, kkrt, rr22)"
            ))),
            _ => Err(CliError::Usage(format!(
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
            Protocol::Rr22 => "rr22",
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
    /// Rows per bucket (inputs are split into buckets so memory stays bounded).
    pub bucket_size: usize,
    /// Simulated link (bandwidth, latency) on every channel, if any.
    pub sim: Option<LinkModel>,
    /// How long to wait for the other parties to come up.
    pub connect_timeout: Duration,
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
    /// Data rows read.
    pub rows_in: usize,
    /// Distinct keys read.
    pub keys_in: usize,
    /// Rows written (0 when this party does not learn the result).
    pub rows_out: usize,
    /// Distinct keys in the intersection (when this party learns it).
    pub keys_out: Option<usize>,
    /// Wall time from start to finish, seconds.
    pub seconds: f64,
    /// Traffic of this party.
    pub stats: Stats,
}

impl Report {
    /// The report as one JSON object.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"protocol\":\"{}\",\"curve\":\"{}\",\"rank\":{},\"rows_in\":{},\"keys_in\":{},\"rows_out\":{},\"keys_out\":{},\"seconds\":{:.3},\"bytes_sent\":{},\"bytes_received\":{}}}",
            self.protocol,
            self.curve,
            self.rank,
            self.rows_in,
            self.keys_in,
            self.rows_out,
            self.keys_out.map_or("null".to_string(), |k| k.to_string()),
            self.seconds,
            self.stats.bytes_sent,
            self.stats.bytes_received
        )
    }
}

/// Resolves `host:port,host:port[,…]`.
///
/// # Errors
/// [`CliError::Usage`] if an address does not resolve.
pub fn parse_parties(s: &str) -> Result<Vec<SocketAddr>, CliError> {
    s.split(',')
        .map(|a| {
            a.trim()
                .to_socket_addrs()
                .ok()
                .and_then(|mut it| it.next())
                .ok_or_else(|| CliError::Usage(format!("cannot resolve party address {a:?}")))
        })
        .collect()
}

/// Runs one party. `listener`, if given, is this party's already-bound socket (the demo binds
/// ephemeral ports first); otherwise the party binds `parties[rank]`.
///
/// # Errors
/// Input errors before any network traffic; then network and protocol errors.
pub fn run(cfg: &PartyConfig, listener: Option<TcpListener>) -> Result<Report, CliError> {
    let start = Instant::now();
    let n = cfg.parties.len();
    if n != cfg.protocol.parties() {
        return Err(CliError::Usage(format!(
            "protocol {} needs {} parties in --parties, got {n}",
            cfg.protocol,
            cfg.protocol.parties()
        )));
    }
    if cfg.broadcast && cfg.protocol != Protocol::Ecdh {
        return Err(CliError::Usage(format!(
            "--broadcast is not supported by {}",
            cfg.protocol
        )));
    }
    if cfg.rank >= n || cfg.receiver >= n {
        return Err(CliError::Usage(format!(
            "--rank and --receiver must be below {n}"
        )));
    }
    // All local work first: input errors surface before any network traffic.
    let shape = bucket::scan(&cfg.input, &cfg.keys)?;
    let own_buckets = bucket::local_buckets(shape.rows, cfg.bucket_size);
    let tmp_root = cfg
        .output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let files = bucket::BucketFiles::split(&cfg.input, &shape, own_buckets, tmp_root)?;
    let opts = ConnectOptions {
        deadline: cfg.connect_timeout,
        ..ConnectOptions::default()
    };
    let session = match listener {
        Some(l) => Session::tcp_with_listener(cfg.rank, &l, &cfg.parties, &opts)?,
        None => Session::tcp(cfg.rank, &cfg.parties, &opts)?,
    };
    let out = match cfg.sim {
        Some(model) => run_buckets(
            cfg,
            &shape,
            &files,
            session.map(|_, c| SimLink::new(c, model)),
        )?,
        None => run_buckets(cfg, &shape, &files, session)?,
    };
    let rows_out = match &out.selected {
        Some(rows) => bucket::write_rows(&cfg.input, &shape, rows, &cfg.output, cfg.sort)?,
        None => 0,
    };
    Ok(Report {
        protocol: cfg.protocol.to_string(),
        curve: cfg.curve.to_string(),
        rank: cfg.rank,
        rows_in: usize::try_from(shape.rows).unwrap_or(usize::MAX),
        keys_in: out.keys_in,
        rows_out: usize::try_from(rows_out).unwrap_or(usize::MAX),
        keys_out: out.selected.as_ref().map(|_| out.keys_out),
        seconds: start.elapsed().as_secs_f64(),
        stats: out.stats,
    })
}

/// What the bucket loop produced.
struct Outcome {
    /// The rows in the intersection, for the parties that learn it.
    selected: Option<bucket::RowSet>,
    keys_in: usize,
    keys_out: usize,
    stats: Stats,
}

/// Agrees on the bucket count with every peer, then runs one PSI per bucket.
fn run_buckets<C: Channel>(
    cfg: &PartyConfig,
    shape: &bucket::InputShape,
    files: &bucket::BucketFiles,
    mut session: Session<C>,
) -> Result<Outcome, CliError> {
    let mut total = files.len();
    let peers: Vec<usize> = session.peers().collect();
    for &p in &peers {
        session
            .channel(p)?
            .send(&(files.len() as u64).to_le_bytes())?;
    }
    for &p in &peers {
        let ch = session.channel(p)?;
        ch.flush()?;
        let b: [u8; 8] = ch.recv_array()?;
        let theirs = u64::from_le_bytes(b);
        if !theirs.is_power_of_two() || theirs > 1 << 30 {
            return Err(CliError::Protocol(format!(
                "peer announced {theirs} buckets"
            )));
        }
        total = total.max(usize::try_from(theirs).unwrap_or(1 << 30));
    }
    let mut rng = AesRng::from_entropy();
    let ecfg = EcdhConfig {
        curve: cfg.curve,
        batch_size: cfg.batch_size,
        broadcast: cfg.broadcast,
        ..EcdhConfig::default()
    };
    let receiver = cfg.rank == cfg.receiver;
    let role = if receiver {
        Role::Receiver
    } else {
        Role::Sender
    };
    // KKRT: base OTs once per session, then one OPRF batch per bucket.
    let mut kkrt_session = match cfg.protocol {
        Protocol::Kkrt => {
            let ch = session.channel(1 - cfg.rank)?;
            let kcfg = KkrtConfig::default();
            Some(if receiver {
                KkrtSession::Receiver(KkrtPsiReceiver::setup(ch, &kcfg, &mut rng)?)
            } else {
                KkrtSession::Sender(KkrtPsiSender::setup(ch, &kcfg, &mut rng)?)
            })
        }
        _ => None,
    };
    let mut selected: Option<bucket::RowSet> = None;
    let (mut keys_in, mut keys_out) = (0, 0);
    for b in 0..total {
        let bucket = files.load(b, total)?;
        keys_in += bucket.distinct.len();
        let out = match cfg.protocol {
            Protocol::Ecdh => {
                let ch = session.channel(1 - cfg.rank)?;
                ecdh::run(ch, role, &bucket.distinct, &ecfg, &mut rng)?
            }
            Protocol::Ecdh3pc => ecdh3::run(
                &mut session,
                cfg.receiver,
                &bucket.distinct,
                &ecfg,
                &mut rng,
            )?,
            Protocol::Rr22 => {
                let ch = session.channel(1 - cfg.rank)?;
                rr22::run(ch, role, &bucket.distinct, &Rr22Config::default(), &mut rng)?
            }
            Protocol::Kkrt => {
                let ch = session.channel(1 - cfg.rank)?;
                match kkrt_session.as_mut() {
                    Some(KkrtSession::Receiver(r)) => {
                        Some(r.run(ch, &bucket.distinct, &mut rng)?)
                    }
                    Some(KkrtSession::Sender(s)) => {
                        s.run(ch, &bucket.distinct, &mut rng)?;
                        None
                    }
                    None => return Err(CliError::Protocol("KKRT session missing".into())),
                }
            }
        };
        if let Some(idx) = out {
            keys_out += idx.len();
            let mut hit = vec![false; bucket.distinct.len()];
            for i in idx {
                hit[i] = true;
            }
            let rows = selected.get_or_insert_with(|| bucket::RowSet::new(shape.rows));
            for &(row, k) in &bucket.rows {
                if hit[k as usize] {
                    rows.insert(row);
                }
            }
        }
    }
    Ok(Outcome {
        selected,
        keys_in,
        keys_out,
        stats: session.stats(),
    })
}

/// A KKRT session of either role.
enum KkrtSession {
    Receiver(KkrtPsiReceiver),
    Sender(KkrtPsiSender),
}
