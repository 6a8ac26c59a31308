//! Errors of the `obliv` command and the exit codes they map to.

/// An error of the `obliv` command; [`CliError::exit_code`] tells usage, input, network and
/// protocol failures apart for scripts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// Wrong or inconsistent command-line arguments (exit code 2).
    #[error("usage: {0}")]
    Usage(String),
    /// A problem with an input or output file (exit code 3).
    #[error("input: {0}")]
    Input(String),
    /// The network failed: a peer that does not come up, vanishes or times out (exit code 4).
    #[error("network: {0}")]
    Network(String),
    /// The peer runs another protocol, curve or version, or misbehaves (exit code 5).
    #[error("protocol: {0}")]
    Protocol(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Input(_) => 3,
            CliError::Network(_) => 4,
            CliError::Protocol(_) => 5,
        }
    }
}

/// By the error's kind: a bad parameter of this party is usage (2), a key file or cache
/// input (3), the connection network (4), a peer that runs other settings or breaks the
/// protocol protocol (5); a local computation that failed with negligible probability is
/// reported as protocol (5) too (running again draws fresh randomness).
impl From<obliv_psi::Error> for CliError {
    fn from(e: obliv_psi::Error) -> Self {
        use obliv_psi::ErrorKind;
        if let obliv_psi::Error::Net(n) = e {
            return CliError::from(n);
        }
        let msg = e.to_string();
        match e.kind() {
            ErrorKind::InvalidParameter => CliError::Usage(msg),
            ErrorKind::Storage => CliError::Input(msg),
            ErrorKind::Network => CliError::Network(msg),
            _ => CliError::Protocol(msg),
        }
    }
}

impl From<obliv_net::Error> for CliError {
    /// Unusable TLS files are input errors (3); everything else on the network, TLS refusals
    /// (another CA, expired, another host, plaintext against TLS) included, is a network
    /// error (4).
    fn from(e: obliv_net::Error) -> Self {
        match e {
            obliv_net::Error::TlsConfig { .. } => CliError::Input(e.to_string()),
            e => CliError::Network(e.to_string()),
        }
    }
}
