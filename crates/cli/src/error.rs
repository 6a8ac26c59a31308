//! Errors of the `obliv` command and the exit codes they map to.
//!
//! A [`CliError`] is an [`ExitKind`] (which fixes the exit code), a human-readable context
//! (which file, which option, which peer) and, where a library or the operating system
//! failed, that error as its [`source`](std::error::Error::source). The kind of a library
//! error derives from the library's own classification ([`obliv_psi::Error::kind`], the
//! [`obliv_net::Error`] variants), never from its message.

use std::fmt;

/// What failed, for scripts: each kind is one process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExitKind {
    /// Wrong or inconsistent command-line arguments (exit code 2).
    Usage,
    /// A problem with an input or output file (exit code 3).
    Input,
    /// The network failed: a peer that does not come up, vanishes or times out (exit code 4).
    Network,
    /// The peer runs another protocol, curve or version, or misbehaves (exit code 5).
    Protocol,
}

impl ExitKind {
    /// The process exit code of this kind.
    pub fn code(self) -> i32 {
        match self {
            ExitKind::Usage => 2,
            ExitKind::Input => 3,
            ExitKind::Network => 4,
            ExitKind::Protocol => 5,
        }
    }

    /// The word that starts the message (`usage: …`).
    fn word(self) -> &'static str {
        match self {
            ExitKind::Usage => "usage",
            ExitKind::Input => "input",
            ExitKind::Network => "network",
            ExitKind::Protocol => "protocol",
        }
    }
}

/// The boxed error a [`CliError`] keeps as its source.
type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error of the `obliv` command; [`CliError::exit_code`] tells usage, input, network and
/// protocol failures apart for scripts. It reads `KIND: CONTEXT: SOURCE` (`input: cannot open
/// a.csv: No such file or directory (os error 2)`).
#[derive(Debug)]
pub struct CliError {
    kind: ExitKind,
    context: String,
    source: Option<Source>,
}

impl CliError {
    /// An error of `kind` described by `context` alone.
    pub fn new(kind: ExitKind, context: impl Into<String>) -> Self {
        CliError {
            kind,
            context: context.into(),
            source: None,
        }
    }

    /// An error of `kind`: `context` (what was being done) failed with `source`.
    pub fn with_source(
        kind: ExitKind,
        context: impl Into<String>,
        source: impl Into<Source>,
    ) -> Self {
        CliError {
            kind,
            context: context.into(),
            source: Some(source.into()),
        }
    }

    /// Wrong or inconsistent arguments (exit code 2).
    pub fn usage(context: impl Into<String>) -> Self {
        CliError::new(ExitKind::Usage, context)
    }

    /// A problem with an input or output file (exit code 3).
    pub fn input(context: impl Into<String>) -> Self {
        CliError::new(ExitKind::Input, context)
    }

    /// A file operation that failed: `context` names the file and what was done with it
    /// (exit code 3).
    pub fn file(context: impl Into<String>, source: impl Into<Source>) -> Self {
        CliError::with_source(ExitKind::Input, context, source)
    }

    /// The network failed (exit code 4).
    pub fn network(context: impl Into<String>) -> Self {
        CliError::new(ExitKind::Network, context)
    }

    /// The peer runs other settings or breaks the protocol (exit code 5).
    pub fn protocol(context: impl Into<String>) -> Self {
        CliError::new(ExitKind::Protocol, context)
    }

    /// What failed.
    pub fn kind(&self) -> ExitKind {
        self.kind
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        self.kind.code()
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.word(), self.context)?;
        match &self.source {
            Some(s) if self.context.is_empty() => write!(f, "{s}"),
            Some(s) => write!(f, ": {s}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
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
        let kind = match e.kind() {
            ErrorKind::InvalidParameter => ExitKind::Usage,
            ErrorKind::Storage => ExitKind::Input,
            ErrorKind::Network => ExitKind::Network,
            _ => ExitKind::Protocol,
        };
        CliError::with_source(kind, "", e)
    }
}

impl From<obliv_net::Error> for CliError {
    /// Unusable TLS files are input errors (3); everything else on the network, TLS refusals
    /// (another CA, expired, another host, plaintext against TLS) included, is a network
    /// error (4).
    fn from(e: obliv_net::Error) -> Self {
        let kind = match e {
            obliv_net::Error::TlsConfig { .. } => ExitKind::Input,
            _ => ExitKind::Network,
        };
        CliError::with_source(kind, "", e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_codes() {
        let e = CliError::usage("--shard \"2/2\"");
        assert_eq!(e.to_string(), "usage: --shard \"2/2\"");
        assert_eq!(e.exit_code(), 2);
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = CliError::file("cannot open a.csv", io);
        assert_eq!(e.to_string(), "input: cannot open a.csv: gone");
        assert_eq!(e.kind(), ExitKind::Input);
        assert!(std::error::Error::source(&e).is_some());
        let e = CliError::from(obliv_net::Error::PeerDisconnected);
        assert_eq!(e.exit_code(), 4);
        assert_eq!(
            e.to_string(),
            format!("network: {}", obliv_net::Error::PeerDisconnected)
        );
    }
}
