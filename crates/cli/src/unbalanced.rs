//! `obliv ub-psi offline|online`: unbalanced PSI between a server with a large set and a client
//! with a small one, over TCP, on CSV files.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_ec::Curve;
use obliv_net::{Channel, ConnectOptions};
use obliv_psi::unbalanced::{self, Cache, ServerKey, ServerSet, UbConfig};

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
    /// Input CSV: the server's set (offline; online only with `server_get_result`), the
    /// client's set (online).
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
    /// Server: most items a client may query in one online phase
    /// ([`UbConfig::max_client_items`]).
    pub max_client_items: usize,
    /// Server: most OPRF evaluations a key answers over its lifetime
    /// ([`UbConfig::max_key_queries`]).
    pub max_key_queries: u64,
    /// Client: most values the server may send for the cache, offline phase and appends
    /// together ([`UbConfig::max_server_items`]).
    pub max_server_items: u64,
}

/// Where the server keeps the summary of its set ([`ServerSet`]: segment sizes and the keyed
/// digest) beside its key file: `<key-file>.set`, written by the offline phase. The online
/// phase answers from it and the key alone, without reading the server's CSV, unless the
/// server learns the result and must map matches onto its rows.
pub fn set_path(key_file: &Path) -> PathBuf {
    let mut p = key_file.as_os_str().to_owned();
    p.push(".set");
    PathBuf::from(p)
}

/// Writes `set` to `path` through a temporary file in the same directory, renamed into place,
/// so a crash leaves the old file or the new one, never a torn one.
fn save_set(path: &Path, set: &ServerSet) -> Result<(), CliError> {
    use std::io::Write;
    let ctx = || format!("writing the server set summary {}", path.display());
    let mut tmp = crate::cleanup::TempOutput::beside(path).map_err(|e| CliError::file(ctx(), e))?;
    tmp.write_all(&set.to_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| CliError::file(ctx(), e))?;
    tmp.persist(path).map_err(|e| CliError::file(ctx(), e))?;
    Ok(())
}

/// Longest server key file accepted: one holds a header, a scalar of at most 255 bytes, a
/// query counter and a tag (under 320 bytes in all).
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// Refuses a `--key-file` that cannot be a key file before it is read whole: a directory, a
/// device or pipe (`/dev/zero` would be read until memory runs out) or a file far longer than
/// any key file.
fn check_key_file(path: &Path) -> Result<(), CliError> {
    let m = std::fs::metadata(path)
        .map_err(|e| CliError::file(format!("--key-file {}", path.display()), e))?;
    if !m.is_file() {
        return Err(CliError::input(format!(
            "--key-file {} is not a regular file (a directory, pipe or device): give the key \
             file of the offline phase, or a new path to create one",
            path.display()
        )));
    }
    if m.len() > MAX_KEY_FILE_BYTES {
        return Err(CliError::input(format!(
            "--key-file {} is not an obliv server key file ({} bytes; a key file has under \
             {MAX_KEY_FILE_BYTES})",
            path.display(),
            m.len()
        )));
    }
    Ok(())
}

/// Reads the summary written by the offline phase ([`set_path`]).
fn load_set(path: &Path) -> Result<ServerSet, CliError> {
    let bytes = std::fs::read(path).map_err(|e| {
        CliError::file(
            format!(
                "reading the server set summary {} (written by the offline phase; run it \
                 again if the key file is older than the summary files)",
                path.display()
            ),
            e,
        )
    })?;
    ServerSet::from_bytes(&bytes).map_err(|e| CliError::file(path.display().to_string(), e))
}

fn need<T: Clone>(v: &Option<T>, name: &str) -> Result<T, CliError> {
    v.clone()
        .ok_or_else(|| CliError::usage(format!("--{name} is required here")))
}

/// Runs the phase; returns a one-line JSON report.
///
/// # Errors
/// Usage errors before any network traffic, input errors before any data of the job is sent
/// (the connection is set up meanwhile), then network and protocol errors.
pub fn run(a: &UbArgs) -> Result<String, CliError> {
    let start = Instant::now();
    if a.parties.len() != 2 || a.rank > 1 {
        return Err(CliError::usage(
            "unbalanced PSI runs between 2 parties (--rank 0 or 1)",
        ));
    }
    crate::deadline::check_connect_timeout(a.connect_timeout)?;
    crate::deadline::check_step_timeout(a.step_timeout)?;
    let cfg = UbConfig {
        curve: a.curve,
        server_get_result: a.server_get_result,
        max_client_items: a.max_client_items,
        max_key_queries: a.max_key_queries,
        max_server_items: a.max_server_items,
        ..UbConfig::default()
    };
    // The party that learns the result needs somewhere to write it, checked before any work.
    let learns = a.phase == Phase::Online && (a.role == UbRole::Client || a.server_get_result);
    if learns {
        need(&a.output, "output")?;
    }
    let mut rng = AesRng::from_entropy();
    // The connection (TCP, and TLS if set) is set up while the local work below runs; nothing
    // of the job crosses it before that work is done, so input errors still come first. A
    // client facing a server that reads a large CSV thus waits connected, not dialling
    // against its connect timeout.
    let mut opts = ConnectOptions {
        deadline: a.connect_timeout,
        ..ConnectOptions::default()
    };
    // A hostile peer's longer frame is refused at its header, before any of it is buffered.
    opts.tcp.max_frame_len = cfg.max_frame_len();
    let connecting =
        crate::tls::session_in_background(a.rank, None, &a.parties, a.tls.as_ref(), &opts)?;
    // Everything local: inputs, key, cache. The server's online phase reads its CSV
    // only when it learns the result (to write its matching rows); otherwise the key and
    // the set summary of the offline phase are all it needs, so its cost follows the
    // client's set, not its own.
    let keyed = match (a.role, a.phase) {
        (UbRole::Client, Phase::Offline) => None,
        (UbRole::Server, Phase::Online) if !a.server_get_result => None,
        // The offline server sends its distinct keys only: no row index.
        (UbRole::Server, Phase::Offline) => Some(csvio::read_distinct_keys(
            &need(&a.input, "input")?,
            &a.keys,
        )?),
        _ => Some(csvio::read_keys(&need(&a.input, "input")?, &a.keys)?),
    };
    if let (true, Some(input), Some(output)) = (learns, &a.input, &a.output) {
        // The output is renamed over its path when the phase ends: it must not be a file the
        // phase reads or keeps (the client's cache, the server's key and set summary).
        let set = a.key_file.as_deref().map(set_path);
        let mut keep: Vec<(&str, &Path)> = vec![("the input file", input)];
        if let Some(cache) = &a.cache {
            keep.push(("the cache file", cache));
        }
        if let Some(key_file) = &a.key_file {
            keep.push(("the key file", key_file));
        }
        if let Some(set) = &set {
            keep.push(("the key file's set summary", set));
        }
        bucket::check_writable("--output", output, &keep)?;
    }
    // The offline client writes its cache when the phase ends: a path it cannot take is
    // found before the server's set is streamed.
    if let (UbRole::Client, Phase::Offline, Some(cache)) = (a.role, a.phase, &a.cache) {
        let mut keep: Vec<(&str, &Path)> = Vec::new();
        if let Some(input) = &a.input {
            keep.push(("the input file", input));
        }
        if let Some(key_file) = &a.key_file {
            keep.push(("the key file", key_file));
        }
        bucket::check_writable("--cache", cache, &keep)?;
    }
    let key = match a.role {
        UbRole::Server => {
            let path = need(&a.key_file, "key-file")?;
            Some(if path.exists() {
                check_key_file(&path)?;
                let k = ServerKey::load(&path).map_err(|e| CliError::file("", e))?;
                // Found here, before the peer is waited for, with the file named.
                if k.curve() != a.curve {
                    return Err(CliError::input(format!(
                        "key file {} is for curve {}, not --curve {}: run with --curve {} (the \
                         curve its offline phase ran with), or give another --key-file",
                        path.display(),
                        k.curve(),
                        a.curve,
                        k.curve()
                    )));
                }
                k
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
    let set_summary = match (a.role, a.phase, &keyed) {
        (UbRole::Server, Phase::Online, None) => {
            Some(load_set(&set_path(&need(&a.key_file, "key-file")?))?)
        }
        _ => None,
    };
    let cache = match (a.role, a.phase) {
        (UbRole::Client, Phase::Online) => {
            Some(Cache::open(&need(&a.cache, "cache")?).map_err(|e| CliError::file("", e))?)
        }
        _ => None,
    };
    let mut session = crate::tls::join_session(connecting)?;
    let ch = session.channel(1 - a.rank)?;
    // Frames longer than the protocol's are refused before they are buffered.
    ch.set_max_frame_len(ch.max_frame_len().min(cfg.max_frame_len()));
    if a.phase == Phase::Online {
        // The online phase is one step: it must end within the step timeout, however slowly
        // the peer sends (a network error, exit code 4, when it passes).
        ch.set_deadline(std::time::Instant::now().checked_add(a.step_timeout));
    }
    let mut matched = None;
    // The number of distinct keys the server's set holds (the report's `keys_in`).
    let mut set_len = 0;
    match (a.role, a.phase, &key, &keyed) {
        (UbRole::Server, Phase::Offline, Some(k), Some(kd)) => {
            let set = unbalanced::offline_server(ch, k, &kd.distinct, &cfg, &mut rng)?;
            save_set(&set_path(&need(&a.key_file, "key-file")?), &set)?;
            set_len = set.len();
        }
        (UbRole::Server, Phase::Online, Some(k), Some(kd)) => {
            // With `server_get_result`, indices into the server's distinct keys, which
            // `read_keys` lists in the same order as in the offline phase (first appearance).
            // The digest of the keys read now: the client refuses the phase if they are not
            // the keys its cache was built from (a file edited since the offline phase).
            let set = unbalanced::ServerSet::new(k, &kd.distinct);
            set_len = set.len();
            matched = unbalanced::online_server(ch, k, &set, &cfg)?;
        }
        (UbRole::Server, Phase::Online, Some(k), None) => {
            // The set of the offline phase, as its summary says: the client checks it against
            // its cache. The server's CSV is not read, so editing it after the offline phase
            // changes nothing until the offline phase runs again.
            let set = set_summary.as_ref().ok_or_else(|| {
                CliError::usage("the server's online phase needs its set summary")
            })?;
            set_len = set.len();
            matched = unbalanced::online_server(ch, k, set, &cfg)?;
        }
        (UbRole::Client, Phase::Offline, _, _) => {
            unbalanced::offline_client(ch, &cfg, &need(&a.cache, "cache")?)?;
        }
        (UbRole::Client, Phase::Online, _, Some(kd)) => {
            let c = cache
                .as_ref()
                .ok_or_else(|| CliError::usage("--cache is required"))?;
            // The client's set is small (its cost is the online phase's): a slice of views.
            let items: Vec<&[u8]> = kd.distinct.iter().collect();
            matched = Some(unbalanced::online_client(ch, &items, c, &cfg, &mut rng)?);
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
        "{{\"protocol\":\"ub-psi-{}\",\"role\":\"{}\",\"curve\":\"{}\",\"rows_in\":{},\"keys_in\":{},\"rows_out\":{},\"keys_out\":{},\"seconds\":{:.3},\"bytes_sent\":{},\"bytes_received\":{},\"rounds\":{}}}",
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
        keyed.as_ref().map_or(set_len, |k| k.distinct.len() as u64),
        rows_out,
        matched
            .as_ref()
            .map_or("null".to_string(), |m| m.len().to_string()),
        start.elapsed().as_secs_f64(),
        stats.bytes_sent,
        stats.bytes_received,
        stats.rounds
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path, curve: Curve) -> UbArgs {
        // Two loopback ports that nobody listens on: the peer never comes.
        let ports: Vec<SocketAddr> = (0..2)
            .map(|_| {
                std::net::TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap()
            })
            .collect();
        UbArgs {
            phase: Phase::Online,
            role: UbRole::Server,
            curve,
            rank: 0,
            parties: ports,
            input: None,
            keys: vec!["id".into()],
            cache: None,
            key_file: Some(dir.join("server.key")),
            output: None,
            server_get_result: false,
            connect_timeout: Duration::from_secs(2),
            step_timeout: Duration::from_secs(60),
            tls: None,
            max_client_items: UbConfig::default().max_client_items,
            max_key_queries: UbConfig::default().max_key_queries,
            max_server_items: UbConfig::default().max_server_items,
        }
    }

    /// A server key of another curve than `--curve` was found only once the client had
    /// connected (or after the connect timeout), as "invalid parameter: the key is for
    /// another curve" without the file; refused at once now, naming the file and the curve.
    #[test]
    fn a_key_file_of_another_curve_is_refused_before_the_peer_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let key = ServerKey::generate(Curve::FourQ, &mut AesRng::from_entropy()).unwrap();
        key.save(&dir.path().join("server.key")).unwrap();
        let mut items = csvio::KeyArena::default();
        items.push(b"k1");
        save_set(
            &set_path(&dir.path().join("server.key")),
            &ServerSet::new(&key, &items),
        )
        .unwrap();
        let e = run(&args(dir.path(), Curve::Curve25519)).unwrap_err();
        assert_eq!(e.exit_code(), 3, "{e}");
        assert!(e.to_string().contains("server.key is for curve"), "{e}");
    }

    /// `--output` naming the client's cache (or the server's key file) replaced it with the
    /// matching rows when the phase ended: the cache of a whole offline phase, or the
    /// server's key, lost. Refused now, before the peer is waited for.
    #[test]
    fn an_output_that_is_the_cache_or_the_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let input = d.join("in.csv");
        std::fs::write(&input, "id\nk1\n").unwrap();
        let cache = d.join("cache.bin");
        std::fs::write(&cache, b"cache").unwrap();
        let key_file = d.join("server.key");
        std::fs::write(&key_file, b"key").unwrap();
        for (role, output) in [
            (UbRole::Client, cache.clone()),
            (UbRole::Server, key_file.clone()),
            (UbRole::Server, set_path(&key_file)),
        ] {
            let mut a = args(d, Curve::FourQ);
            a.role = role;
            a.rank = usize::from(role == UbRole::Client);
            a.server_get_result = true;
            a.input = Some(input.clone());
            a.cache = Some(cache.clone());
            a.key_file = Some(key_file.clone());
            a.output = Some(output.clone());
            let e = run(&a).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(e.to_string().contains("--output"), "{e}");
        }
        assert_eq!(std::fs::read(&cache).unwrap(), b"cache");
        assert_eq!(std::fs::read(&key_file).unwrap(), b"key");
    }
}
