//! `obliv ub-psi offline|online`: unbalanced PSI between a server with a large set and a client
//! with a small one, over TCP, on CSV files.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_ec::Curve;
use obliv_net::{Channel, ConnectOptions};
use obliv_psi::unbalanced::{self, Cache, ServerKey, UbConfig};

use crate::bucket::{self, RowSet};
use crate::csvio;
use crate::error::CliError;
use crate::progress::ProgressMode;

/// Which phase to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Once per server set: the server's OPRF values go to the client's cache.
    Offline,
    /// Per query: the client's items against the cache.
    Online,
}

/// Which side this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UbRole {
    /// Holds the large set and the key.
    Server,
    /// Holds the small set and the cache; learns the result.
    Client,
}

/// Settings of one unbalanced-PSI process.
#[derive(Clone, Debug)]
pub struct UbArgs {
    /// Phase.
    pub phase: Phase,
    /// Role.
    pub role: UbRole,
    /// Curve.
    pub curve: Curve,
    /// This process's rank in `parties` (0 or 1).
    pub rank: usize,
    /// Both addresses, in rank order.
    pub parties: Vec<SocketAddr>,
    /// Input CSV (the server's set; the client's set for the online phase).
    pub input: Option<PathBuf>,
    /// Key columns.
    pub keys: Vec<String>,
    /// Client: the cache file.
    pub cache: Option<PathBuf>,
    /// Server: the key file (created by the offline phase if missing).
    pub key_file: Option<PathBuf>,
    /// Online: where to write the matching rows (the client always; the server with
    /// `server_get_result`).
    pub output: Option<PathBuf>,
    /// The server learns the intersection too ([`UbConfig::server_get_result`]); both roles,
    /// both phases.
    pub server_get_result: bool,
    /// How long to wait for the peer.
    pub connect_timeout: Duration,
    /// How long the online phase may take in all ([`crate::deadline`]).
    pub step_timeout: Duration,
    /// TLS on the link (`None`: plaintext); see [`crate::tls`].
    pub tls: Option<crate::tls::TlsSetup>,
}

fn need<T: Clone>(v: &Option<T>, name: &str) -> Result<T, CliError> {
    v.clone()
        .ok_or_else(|| CliError::usage(format!("--{name} is required here")))
}

/// Runs the phase; returns a one-line JSON report.
///
/// # Errors
/// Usage and input errors before any network traffic, then network and protocol errors.
pub fn run(a: &UbArgs) -> Result<String, CliError> {
    let start = Instant::now();
    if a.parties.len() != 2 || a.rank > 1 {
        return Err(CliError::usage(
            "unbalanced PSI runs between 2 parties (--rank 0 or 1)",
        ));
    }
    let cfg = UbConfig {
        curve: a.curve,
        server_get_result: a.server_get_result,
        ..UbConfig::default()
    };
    // The party that learns the result needs somewhere to write it, checked before any work.
    let learns = a.phase == Phase::Online && (a.role == UbRole::Client || a.server_get_result);
    if learns {
        need(&a.output, "output")?;
    }
    let mut rng = AesRng::from_entropy();
    // Everything local first: inputs, key, cache.
    let keyed = match (a.role, a.phase) {
        (UbRole::Client, Phase::Offline) => None,
        _ => Some(csvio::read_keys(&need(&a.input, "input")?, &a.keys)?),
    };
    let key = match a.role {
        UbRole::Server => {
            let path = need(&a.key_file, "key-file")?;
            Some(if path.exists() {
                ServerKey::load(&path).map_err(|e| CliError::file("", e))?
            } else if a.phase == Phase::Offline {
                let k = ServerKey::generate(a.curve, &mut rng)?;
                k.save(&path).map_err(|e| CliError::file("", e))?;
                k
            } else {
                return Err(CliError::input(format!(
                    "key file {} does not exist: run the offline phase first",
                    path.display()
                )));
            })
        }
        UbRole::Client => None,
    };
    let cache = match (a.role, a.phase) {
        (UbRole::Client, Phase::Online) => {
            Some(Cache::open(&need(&a.cache, "cache")?).map_err(|e| CliError::file("", e))?)
        }
        _ => None,
    };
    let mut opts = ConnectOptions {
        deadline: a.connect_timeout,
        ..ConnectOptions::default()
    };
    // A hostile peer's longer frame is refused at its header, before any of it is buffered.
    opts.tcp.max_frame_len = cfg.max_frame_len();
    let mut session = crate::tls::session(a.rank, None, &a.parties, a.tls.as_ref(), &opts)?;
    let ch = session.channel(1 - a.rank)?;
    // Frames longer than the protocol's are refused before they are buffered.
    ch.set_max_frame_len(ch.max_frame_len().min(cfg.max_frame_len()));
    if a.phase == Phase::Online {
        // The online phase is one step: it must end within the step timeout, however slowly
        // the peer sends (a network error, exit code 4, when it passes).
        ch.set_deadline(std::time::Instant::now().checked_add(a.step_timeout));
    }
    let mut matched = None;
    match (a.role, a.phase, &key, &keyed) {
        (UbRole::Server, Phase::Offline, Some(k), Some(kd)) => {
            unbalanced::offline_server(ch, k, &kd.distinct, &cfg, &mut rng)?;
        }
        (UbRole::Server, Phase::Online, Some(k), Some(kd)) => {
            // With `server_get_result`, indices into the server's distinct keys, which
            // `read_keys` lists in the same order as in the offline phase (first appearance).
            // The digest of the keys read now: the client refuses the phase if they are not
            // the keys its cache was built from (a file edited since the offline phase).
            let set = unbalanced::ServerSet::new(k, &kd.distinct);
            matched = unbalanced::online_server(ch, k, &set, &cfg)?;
        }
        (UbRole::Client, Phase::Offline, _, _) => {
            unbalanced::offline_client(ch, &cfg, &need(&a.cache, "cache")?)?;
        }
        (UbRole::Client, Phase::Online, _, Some(kd)) => {
            let c = cache
                .as_ref()
                .ok_or_else(|| CliError::usage("--cache is required"))?;
            matched = Some(unbalanced::online_client(
                ch,
                &kd.distinct,
                c,
                &cfg,
                &mut rng,
            )?);
        }
        _ => return Err(CliError::usage("inconsistent role and phase")),
    }
    let stats = ch.stats();
    let mut rows_out = 0;
    if let (Some(idx), Some(kd)) = (&matched, &keyed) {
        let mut sel = vec![false; kd.distinct.len()];
        for &i in idx {
            if let Some(s) = sel.get_mut(i) {
                *s = true;
            }
        }
        // The rows whose key matched, written by the one row writer of every subcommand.
        let mut rows = RowSet::new(kd.rows() as u64);
        for (row, &k) in kd.row_key.iter().enumerate() {
            if sel.get(k as usize).copied().unwrap_or(false) {
                rows.insert(row as u64);
            }
        }
        let input = need(&a.input, "input")?;
        rows_out = bucket::write_rows(
            &input,
            &kd.shape,
            &rows,
            &need(&a.output, "output")?,
            false,
            ProgressMode::Off,
        )?;
    }
    Ok(format!(
        "{{\"protocol\":\"ub-psi-{}\",\"role\":\"{}\",\"curve\":\"{}\",\"rows_in\":{},\"keys_in\":{},\"rows_out\":{},\"keys_out\":{},\"seconds\":{:.3},\"bytes_sent\":{},\"bytes_received\":{}}}",
        match a.phase {
            Phase::Offline => "offline",
            Phase::Online => "online",
        },
        match a.role {
            UbRole::Server => "server",
            UbRole::Client => "client",
        },
        a.curve,
        keyed.as_ref().map_or(0, csvio::KeyedInput::rows),
        keyed.as_ref().map_or(0, |k| k.distinct.len()),
        rows_out,
        matched
            .as_ref()
            .map_or("null".to_string(), |m| m.len().to_string()),
        start.elapsed().as_secs_f64(),
        stats.bytes_sent,
        stats.bytes_received
    ))
}
