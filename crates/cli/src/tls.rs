//! The TLS options of the party commands (`--tls-cert`, `--tls-key`, `--tls-ca`,
//! `--insecure-plaintext`) and the session they open. See `docs/deployment.md`.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::thread::JoinHandle;

use obliv_net::{ConnectOptions, Session, TcpChannel, TlsConfig, TlsStats};

use crate::error::CliError;

/// The TLS options, as given on the command line.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TlsArgs {
    /// This party's certificate chain (PEM); it must name this party's host in `--parties`
    /// (a DNS or IP subject alternative name). With `--tls-key` and `--tls-ca`, every link
    /// runs TLS 1.3 with mutual authentication.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// This party's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// The certificates to trust (PEM): the CA that issued the peers' certificates, or the
    /// peers' certificates themselves.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Run in plaintext although `--parties` names a non-loopback address: anyone on the path
    /// can read and change the traffic, and impersonate a party.
    #[arg(long)]
    pub insecure_plaintext: bool,
}

/// The TLS settings of a run: the configuration and the host each party is dialled at.
#[derive(Clone, Debug)]
pub struct TlsSetup {
    /// Certificate, key and trust anchors.
    pub config: TlsConfig,
    /// `hosts[j]`: the host part of party `j`'s address in `--parties`, which party `j`'s
    /// certificate must name.
    pub hosts: Vec<String>,
}

impl TlsArgs {
    /// Checks the options against the parties: all three TLS files or none; without them a
    /// non-loopback party address needs `--insecure-plaintext` (and gets a warning). Reads
    /// the files, and warns if this party's certificate does not name its own host (the peers
    /// will refuse it).
    ///
    /// # Errors
    /// [`ExitKind::Usage`](crate::ExitKind::Usage) for a wrong combination, [`ExitKind::Input`](crate::ExitKind::Input) for unusable files.
    pub fn setup(
        &self,
        parties_arg: &str,
        parties: &[SocketAddr],
        rank: usize,
    ) -> Result<Option<TlsSetup>, CliError> {
        let files = [&self.tls_cert, &self.tls_key, &self.tls_ca];
        let given = files.iter().filter(|f| f.is_some()).count();
        if given == 0 {
            let remote: Vec<String> = parties
                .iter()
                .filter(|a| !a.ip().is_loopback())
                .map(ToString::to_string)
                .collect();
            if !remote.is_empty() {
                if !self.insecure_plaintext {
                    return Err(CliError::usage(format!(
                        "--parties names non-loopback addresses ({}): give --tls-cert, --tls-key \
                         and --tls-ca, or --insecure-plaintext to run in plaintext anyway",
                        remote.join(", ")
                    )));
                }
                crate::console::note(format_args!(
                    "obliv: WARNING: running in plaintext to {} (--insecure-plaintext): the \
                     traffic can be read and changed on the way, and a party impersonated",
                    remote.join(", ")
                ));
            }
            return Ok(None);
        }
        let (Some(cert), Some(key), Some(ca)) = (&self.tls_cert, &self.tls_key, &self.tls_ca)
        else {
            return Err(CliError::usage(
                "give all three of --tls-cert, --tls-key and --tls-ca",
            ));
        };
        if self.insecure_plaintext {
            return Err(CliError::usage(
                "--insecure-plaintext contradicts the --tls-* options",
            ));
        }
        let hosts = hosts(parties_arg);
        if hosts.len() != parties.len() {
            return Err(CliError::usage(format!(
                "cannot take the host names out of --parties {parties_arg:?}"
            )));
        }
        for (flag, path) in [("--tls-cert", cert), ("--tls-key", key), ("--tls-ca", ca)] {
            check_pem_file(flag, path)?;
        }
        let config = TlsConfig::from_pem_files(cert, key, ca)?;
        // A party's own entry may be the address it binds (`0.0.0.0:7000`): nothing to check.
        if let Some(own) = hosts.get(rank)
            && !own
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_unspecified())
            && let Err(e) = config.check_own_name(own)
        {
            crate::console::note(format_args!(
                "obliv: WARNING: {e}: the other parties will refuse it"
            ));
        }
        Ok(Some(TlsSetup { config, hosts }))
    }
}

/// Longest PEM file accepted for `--tls-cert`, `--tls-key` and `--tls-ca`: 16 MiB, far above a
/// certificate chain or a system's whole CA bundle (a few hundred KiB).
pub const MAX_PEM_BYTES: u64 = 16 << 20;

/// Refuses a TLS file that would be read whole into memory without bound: not a regular file
/// (`/dev/zero`, a pipe) or longer than [`MAX_PEM_BYTES`].
fn check_pem_file(flag: &str, path: &std::path::Path) -> Result<(), CliError> {
    let m = std::fs::metadata(path)
        .map_err(|e| CliError::file(format!("{flag} {}", path.display()), e))?;
    if !m.is_file() {
        return Err(CliError::input(format!(
            "{flag} {} is not a regular file (a directory, pipe or device): give a PEM file",
            path.display()
        )));
    }
    if m.len() > MAX_PEM_BYTES {
        return Err(CliError::input(format!(
            "{flag} {} has {} bytes, more than the {MAX_PEM_BYTES} a PEM file may have here",
            path.display(),
            m.len()
        )));
    }
    Ok(())
}

/// The host parts of `host:port,host:port[,…]` (`[v6]:port` gives `v6`).
pub fn hosts(parties_arg: &str) -> Vec<String> {
    parties_arg
        .split(',')
        .map(|a| {
            let a = a.trim();
            let host = a.rsplit_once(':').map_or(a, |(h, _)| h);
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string()
        })
        .collect()
}

/// Opens the session of party `rank`: over TLS when `tls` is set, in plaintext otherwise;
/// binds `parties[rank]` unless `listener` is given. Logs the transport on stderr.
///
/// # Errors
/// [`ExitKind::Network`](crate::ExitKind::Network) for every failure to set the session up, refusals included.
pub fn session(
    rank: usize,
    listener: Option<TcpListener>,
    parties: &[SocketAddr],
    tls: Option<&TlsSetup>,
    opts: &ConnectOptions,
) -> Result<Session<TcpChannel>, CliError> {
    let s = match (tls, listener) {
        (Some(t), Some(l)) => {
            Session::tls_with_listener(rank, &l, parties, &t.hosts, &t.config, opts)?
        }
        (Some(t), None) => Session::tls(rank, parties, &t.hosts, &t.config, opts)?,
        (None, Some(l)) => Session::tcp_with_listener(rank, &l, parties, opts)?,
        (None, None) => Session::tcp(rank, parties, opts)?,
    };
    if let Some(t) = tls {
        let peers: Vec<String> = s
            .peers()
            .map(|j| format!("party {j} ({})", t.hosts[j]))
            .collect();
        crate::console::note(format_args!(
            "obliv: TLS 1.3, mutual authentication: certificates of {} verified",
            peers.join(", ")
        ));
    }
    Ok(s)
}

/// [`session`] in a thread of its own, so that the connection (TCP, and TLS if set) is set
/// up while the caller reads its input; join the handle for the session. Nothing but the
/// connection set-up crosses the network in that thread. If the caller gives up (an input
/// error), the thread is left to end at `opts.deadline`, or with the process.
///
/// A party that is done with its input then waits, connected, for its peers to finish
/// theirs: so that it waits as long as it would have waited for them to come up, the idle
/// read timeout (`opts.tcp.read_timeout`) is raised to the connect timeout
/// (`opts.deadline`) where that is longer.
///
/// # Errors
/// [`ExitKind::Network`](crate::ExitKind::Network) if the thread cannot be started.
pub fn session_in_background(
    rank: usize,
    listener: Option<TcpListener>,
    parties: &[SocketAddr],
    tls: Option<&TlsSetup>,
    opts: &ConnectOptions,
) -> Result<JoinHandle<Result<Session<TcpChannel>, CliError>>, CliError> {
    let (parties, tls, mut opts) = (parties.to_vec(), tls.cloned(), opts.clone());
    if let Some(idle) = opts.tcp.read_timeout {
        opts.tcp.read_timeout = Some(idle.max(opts.deadline));
    }
    std::thread::Builder::new()
        .name("obliv-connect".into())
        .spawn(move || session(rank, listener, &parties, tls.as_ref(), &opts))
        .map_err(|e| CliError::network(format!("cannot start the connecting thread: {e}")))
}

/// Waits for the session that [`session_in_background`] sets up.
///
/// # Errors
/// Those of [`session`].
pub fn join_session(
    handle: JoinHandle<Result<Session<TcpChannel>, CliError>>,
) -> Result<Session<TcpChannel>, CliError> {
    handle
        .join()
        .map_err(|_| CliError::network("the connecting thread panicked"))?
}

/// Follows what TLS adds to a session's traffic after the session has moved on.
#[derive(Debug)]
pub struct TlsWatch(Vec<obliv_net::TlsCounters>);

impl TlsWatch {
    /// Watches every TLS channel of `s`.
    pub fn new(s: &Session<TcpChannel>) -> Self {
        TlsWatch(s.tls_counters())
    }

    /// The sum over the channels (`None` for a plaintext session).
    pub fn stats(&self) -> Option<TlsStats> {
        if self.0.is_empty() {
            return None;
        }
        Some(
            self.0
                .iter()
                .fold(TlsStats::default(), |acc, c| acc + c.stats()),
        )
    }

    /// Logs the sum on stderr (nothing for a plaintext session).
    pub fn log(&self) {
        if let Some(t) = self.stats() {
            crate::console::note(format_args!("obliv: {t} (payload counted in the report)"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_parts() {
        assert_eq!(
            hosts("a.example:7000, 10.0.0.2:7001,[::1]:7002"),
            ["a.example", "10.0.0.2", "::1"]
        );
    }

    #[test]
    fn plaintext_to_remote_needs_the_flag() {
        let remote: Vec<SocketAddr> = vec![
            "127.0.0.1:1".parse().unwrap_or_else(|_| unreachable!()),
            "10.1.2.3:1".parse().unwrap_or_else(|_| unreachable!()),
        ];
        let none = TlsArgs::default();
        assert!(matches!(
            none.setup("127.0.0.1:1,10.1.2.3:1", &remote, 0),
            Err(e) if e.kind() == crate::error::ExitKind::Usage
        ));
        let insecure = TlsArgs {
            insecure_plaintext: true,
            ..TlsArgs::default()
        };
        assert!(matches!(
            insecure.setup("127.0.0.1:1,10.1.2.3:1", &remote, 0),
            Ok(None)
        ));
        let partial = TlsArgs {
            tls_cert: Some("c.pem".into()),
            ..TlsArgs::default()
        };
        assert!(matches!(
            partial.setup("127.0.0.1:1,10.1.2.3:1", &remote, 0),
            Err(e) if e.kind() == crate::error::ExitKind::Usage
        ));
        let local = &remote[..1];
        assert!(matches!(none.setup("127.0.0.1:1", local, 0), Ok(None)));
    }
}
