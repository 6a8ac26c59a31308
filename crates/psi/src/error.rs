//! The error type of obliv-psi, and the kinds that callers act on.
//!
//! Every error has an [`ErrorKind`] ([`Error::kind`]): a caller (the `obliv` CLI derives its
//! exit codes from it) tells a bad parameter of its own from a network failure, a peer that
//! runs other settings, and a peer that broke the protocol ([`ErrorKind::PeerMisbehaved`],
//! in the manner of rustls's `PeerMisbehaved`), without reading messages.

/// What a peer did wrong: a message that cannot come from an honest peer of this version.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerMisbehaved {
    /// The peer announced a count above what this party agreed to accept.
    #[error("the peer announced {announced} for {field}, more than the {max} this party accepts")]
    TooLarge {
        /// The field of the peer's message.
        field: &'static str,
        /// What the peer announced.
        announced: u64,
        /// The largest value this party accepts.
        max: u64,
    },
    /// A message of the wrong kind, order or size, or with values out of range.
    #[error("{0}")]
    Malformed(String),
    /// A check of a maliciously secure protocol failed (a consistency check, a commitment
    /// that does not open): the peer cheated, and its messages were discarded.
    #[error("check failed, the peer is cheating: {0}")]
    CheckFailed(String),
}

/// What went wrong in a PSI run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The channel failed (peer gone, timeout, oversized frame, …).
    #[error("network: {0}")]
    Net(#[from] obliv_net::Error),
    /// A group operation failed; for points received from the peer this means the peer sent
    /// something that is not a valid group element.
    #[error("group: {0}")]
    Group(#[from] obliv_ec::Error),
    /// The two sides' handshakes disagree (protocol, version, curve, parameters or roles).
    #[error("handshake mismatch on {field}: we have {ours}, the peer has {theirs}")]
    HandshakeMismatch {
        /// Which field differs.
        field: &'static str,
        /// Our value.
        ours: String,
        /// The peer's value.
        theirs: String,
    },
    /// The peer broke the protocol (see [`PeerMisbehaved`]).
    #[error("the peer misbehaved: {0}")]
    PeerMisbehaved(#[from] PeerMisbehaved),
    /// The peer sent a message that does not fit the protocol at this point (a
    /// [`ErrorKind::PeerMisbehaved`] without a finer description).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// The OT layer failed (base OT, OT extension or the KKRT OPRF).
    #[error("OT: {0}")]
    Ot(#[from] obliv_ot::Error),
    /// The VOLE layer failed.
    #[error("VOLE: {0}")]
    Vole(#[from] obliv_vole::Error),
    /// The OKVS could not encode (after every retry) or was given inconsistent input.
    #[error("OKVS: {0}")]
    Okvs(#[from] obliv_okvs::Error),
    /// A file (key file, cache) could not be read or written.
    #[error("i/o on {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A key file or cache is malformed, tampered with, or does not belong to this run.
    #[error("cache or key file: {0}")]
    Cache(String),
    /// A caller-supplied parameter is out of range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
}

/// The kind of an [`Error`]: what the caller can do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A parameter of this party's own call is out of range, or the call went to a session
    /// (or an OT / VOLE generator inside it) that an earlier error ended: fix the call, or
    /// open a new session.
    InvalidParameter,
    /// The connection failed, timed out or closed: retry, or check the peer is up.
    Network,
    /// The peer runs another protocol, version, curve or set of parameters.
    Mismatch,
    /// The peer sent something no honest peer of this version sends.
    PeerMisbehaved,
    /// A local file (key file, cache) is unreadable, malformed or of another run.
    Storage,
    /// A local computation failed with negligible probability (an OKVS that does not solve
    /// after every retry); running again draws fresh randomness.
    Internal,
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Net(e) => net_kind(e),
            Error::Group(e) => match e {
                obliv_ec::Error::HashToCurve(_)
                | obliv_ec::Error::UnknownCurve(_)
                | obliv_ec::Error::Unavailable(_)
                | obliv_ec::Error::CurveMismatch { .. }
                | obliv_ec::Error::BufferLength { .. } => ErrorKind::InvalidParameter,
                // Points and scalars that fail to decode come from the peer's messages.
                _ => ErrorKind::PeerMisbehaved,
            },
            Error::HandshakeMismatch { .. } => ErrorKind::Mismatch,
            Error::PeerMisbehaved(_) | Error::Protocol(_) => ErrorKind::PeerMisbehaved,
            Error::Ot(e) => ot_kind(e),
            Error::Vole(e) => match e {
                obliv_vole::Error::Net(n) => net_kind(n),
                obliv_vole::Error::BaseOt(o) => ot_kind(o),
                obliv_vole::Error::ConsistencyCheck => ErrorKind::PeerMisbehaved,
                // An earlier call on the generator failed (that error was the one to act
                // on): the call went to a spent generator, not a fault of the peer now.
                obliv_vole::Error::TooLarge { .. }
                | obliv_vole::Error::Aborted
                | obliv_vole::Error::InvalidCode { .. } => ErrorKind::InvalidParameter,
                _ => ErrorKind::Internal,
            },
            Error::Okvs(e) => match e {
                obliv_okvs::Error::SolveFailed { .. } | obliv_okvs::Error::BinOverflow { .. } => {
                    ErrorKind::Internal
                }
                _ => ErrorKind::InvalidParameter,
            },
            Error::Io { .. } | Error::Cache(_) => ErrorKind::Storage,
            Error::InvalidParameter(_) => ErrorKind::InvalidParameter,
        }
    }
}

/// The kind of a channel error: sizes and lengths that break the framing come from the peer;
/// everything else is the connection.
fn net_kind(e: &obliv_net::Error) -> ErrorKind {
    match e {
        obliv_net::Error::FrameTooLarge { .. }
        | obliv_net::Error::UnexpectedLength { .. }
        | obliv_net::Error::NotMultiple { .. } => ErrorKind::PeerMisbehaved,
        _ => ErrorKind::Network,
    }
}

fn ot_kind(e: &obliv_ot::Error) -> ErrorKind {
    match e {
        obliv_ot::Error::Net(n) => net_kind(n),
        // `Aborted`: an earlier call on the session failed, and that error was the one to act
        // on; this call went to a spent session, not a fault of the peer now.
        obliv_ot::Error::InvalidArgument(_) | obliv_ot::Error::Aborted => {
            ErrorKind::InvalidParameter
        }
        obliv_ot::Error::Core(_) => ErrorKind::Internal,
        _ => ErrorKind::PeerMisbehaved,
    }
}

/// `Result` with [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    /// An `Aborted` of the OT or VOLE layer means an earlier call on that session failed:
    /// the caller reused a spent session, not a peer misbehaving now (nor a local failure of
    /// negligible probability).
    #[test]
    fn aborted_sessions_are_the_callers_to_replace() {
        let cases: Vec<Error> = vec![
            obliv_ot::Error::Aborted.into(),
            obliv_vole::Error::Aborted.into(),
            obliv_vole::Error::BaseOt(obliv_ot::Error::Aborted).into(),
            obliv_vole::Error::InvalidCode {
                k: 0,
                n: 1,
                reason: "k = 0",
            }
            .into(),
        ];
        for e in cases {
            assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
        }
    }

    #[test]
    fn kinds_follow_the_cause() {
        let cases: Vec<(Error, ErrorKind)> = vec![
            (
                obliv_net::Error::PeerDisconnected.into(),
                ErrorKind::Network,
            ),
            (
                obliv_net::Error::FrameTooLarge { len: 9, max: 8 }.into(),
                ErrorKind::PeerMisbehaved,
            ),
            (
                obliv_vole::Error::ConsistencyCheck.into(),
                ErrorKind::PeerMisbehaved,
            ),
            (
                obliv_vole::Error::Net(obliv_net::Error::PeerDisconnected).into(),
                ErrorKind::Network,
            ),
            (
                obliv_ot::Error::ConsistencyCheck.into(),
                ErrorKind::PeerMisbehaved,
            ),
            (
                Error::HandshakeMismatch {
                    field: "curve",
                    ours: "a".into(),
                    theirs: "b".into(),
                },
                ErrorKind::Mismatch,
            ),
            (
                PeerMisbehaved::CheckFailed("x".into()).into(),
                ErrorKind::PeerMisbehaved,
            ),
            (
                Error::InvalidParameter("x".into()),
                ErrorKind::InvalidParameter,
            ),
            (Error::Cache("x".into()), ErrorKind::Storage),
        ];
        for (e, k) in cases {
            assert_eq!(e.kind(), k, "{e}");
        }
    }
}
