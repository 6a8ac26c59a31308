//! The error type of every channel operation.

use std::io;
use std::time::Duration;

/// Result of a channel operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong on a channel.
///
/// Every variant is reachable by a peer's behaviour (or the lack of it); none is a panic in
/// disguise. After any error other than a [`Error::Timeout`] or [`Error::DeadlineExceeded`]
/// that struck *between* frames, or a length error on an in-memory channel, the byte stream of a
/// TCP channel in direct-read mode is out of step with the peer and the channel reports
/// [`Error::Broken`] from then on (see [`crate::TcpChannel`] for the read-ahead mode).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error that none of the other variants describes.
    #[error("I/O error during {op}: {source}")]
    Io {
        /// The operation that failed (`"read"`, `"write"`, `"accept"`, …).
        op: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Nothing arrived (or nothing could be written) for `after`.
    #[error("timed out after {after:?}")]
    Timeout {
        /// The timeout that expired.
        after: Duration,
    },
    /// The deadline set with [`crate::Channel::set_deadline`] passed before the receive (or a
    /// write that had to wait for the peer) completed, however slowly bytes were still arriving.
    ///
    /// Unlike [`Error::Timeout`] it is not transient: every later receive fails the same way
    /// until the deadline is moved or removed, so [`Error::is_timeout`] is `false` for it.
    #[error("deadline passed (it was set {set_for:?} ahead)")]
    DeadlineExceeded {
        /// How far in the future the deadline lay when it was set.
        set_for: Duration,
    },
    /// The peer closed the connection (or dropped its end) between two frames.
    #[error("peer disconnected")]
    PeerDisconnected,
    /// The peer closed the connection in the middle of a frame.
    #[error("peer disconnected mid-frame: got {got} of {expected} bytes")]
    Truncated {
        /// Bytes the frame (or its header) should have had.
        expected: u64,
        /// Bytes that arrived before the connection closed.
        got: u64,
    },
    /// The peer announced a frame longer than the receiver accepts; nothing was allocated.
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    FrameTooLarge {
        /// The announced length.
        len: u64,
        /// The limit in force for this receive.
        max: u64,
    },
    /// A frame's length differs from the exact length the receiver expected.
    #[error("expected a frame of {expected} bytes, got {got}")]
    UnexpectedLength {
        /// The expected length in bytes.
        expected: u64,
        /// The length that arrived.
        got: u64,
    },
    /// A frame of typed values is not a whole number of elements.
    #[error("frame of {len} bytes is not a multiple of the element size {elem_size}")]
    NotMultiple {
        /// The frame length in bytes.
        len: u64,
        /// The size of one element in bytes.
        elem_size: usize,
    },
    /// Connecting failed on every attempt until the deadline.
    #[error("could not connect to {addr} after {attempts} attempts: {source}")]
    ConnectFailed {
        /// The address we tried.
        addr: String,
        /// How many attempts were made.
        attempts: u32,
        /// The error of the last attempt.
        #[source]
        source: io::Error,
    },
    /// The session handshake with a peer failed.
    #[error("handshake failed: {reason}")]
    Handshake {
        /// What was wrong.
        reason: String,
    },
    /// A party index outside the session, or the party itself.
    #[error("no channel to party {peer} (this is party {rank} of {parties})")]
    NoSuchParty {
        /// The requested peer.
        peer: usize,
        /// This party's rank.
        rank: usize,
        /// Number of parties in the session.
        parties: usize,
    },
    /// A sub-channel id that is already open on this side of a [`crate::Mux`].
    #[error("sub-channel {id} is already open")]
    SubChannelInUse {
        /// The id.
        id: u32,
    },
    /// [`crate::Mux::sub`] was asked for the id the multiplexer keeps for its own credit
    /// messages ([`crate::Mux::CREDIT_ID`]).
    #[error("sub-channel id {id} is reserved for the multiplexer's credit messages")]
    ReservedSubChannel {
        /// The id.
        id: u32,
    },
    /// A [`crate::Mux`] already holds [`crate::MuxOptions::max_sub_channels`] sub-channels
    /// (open ones, and ids the peer sent frames for that are still queued) and `id` would be
    /// one more. From the peer, this stops the demultiplexer and every sub-channel reports it;
    /// from [`crate::Mux::sub`], only that call fails.
    #[error("sub-channel {id} would exceed the limit of {max} sub-channels")]
    TooManySubChannels {
        /// The id that would have been one too many.
        id: u32,
        /// The limit in force.
        max: usize,
    },
    /// The peer sent more to sub-channel `id` of a [`crate::Mux`] than its queue holds
    /// ([`crate::MuxOptions::max_queued_per_sub`]) while this side did not take it: the
    /// demultiplexer stops and every sub-channel reports this error.
    #[error("the peer overfilled sub-channel {id} (more than {max} bytes queued)")]
    SubChannelOverflow {
        /// The sub-channel.
        id: u32,
        /// The limit in force.
        max: usize,
    },
    /// An earlier error left the channel out of step with its peer; it cannot be used any more.
    #[error("channel unusable after an earlier error")]
    Broken,
    /// This party's TLS settings are unusable (a PEM file that does not parse, a key that does
    /// not fit the certificate, no trusted certificate, …).
    #[error("TLS configuration: {reason}")]
    TlsConfig {
        /// What is wrong.
        reason: String,
    },
    /// The peer's certificate failed our checks (unknown CA, expired, not naming the host the
    /// peer is known at, none presented); the connection was refused before any frame.
    #[error("refused the certificate of {peer}: {reason}")]
    CertificateRefused {
        /// The peer (address, and host name if known).
        peer: String,
        /// Why.
        reason: String,
    },
    /// The peer refused our certificate (it sent a TLS alert about it).
    #[error("{peer} refused our certificate: {reason}")]
    RefusedByPeer {
        /// The peer.
        peer: String,
        /// The alert it sent.
        reason: String,
    },
    /// The peer opened an obliv session in plaintext where this party requires TLS.
    #[error(
        "{peer} speaks plaintext, but this party requires TLS: refused (the peer must run with TLS too)"
    )]
    PlaintextPeer {
        /// The peer.
        peer: String,
    },
    /// The peer opened a TLS handshake, but this party runs without TLS.
    #[error(
        "{peer} opened a TLS handshake, but this party runs in plaintext: refused (give this party TLS settings too)"
    )]
    TlsPeer {
        /// The peer.
        peer: String,
    },
    /// Any other TLS failure: a handshake that breaks off, a record that fails authentication
    /// (a byte changed on the way), an alert from the peer.
    #[error("TLS with {peer}: {reason}")]
    Tls {
        /// The peer.
        peer: String,
        /// What failed.
        reason: String,
    },
}

impl Error {
    /// Maps an I/O error of a stream operation to the matching variant: timeouts become
    /// [`Error::Timeout`], resets and broken pipes [`Error::PeerDisconnected`].
    pub(crate) fn from_io(op: &'static str, e: io::Error, timeout: Option<Duration>) -> Self {
        if let Some(t) = e
            .get_ref()
            .and_then(|x| x.downcast_ref::<crate::tls::TlsFailure>())
        {
            return t.0.clone_lossy();
        }
        if let Some(d) = e
            .get_ref()
            .and_then(|x| x.downcast_ref::<crate::deadline::DeadlinePassed>())
        {
            return Error::DeadlineExceeded { set_for: d.0 };
        }
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout {
                after: timeout.unwrap_or_default(),
            },
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::NotConnected => Error::PeerDisconnected,
            _ => Error::Io { op, source: e },
        }
    }

    /// A copy for reporting one failure to several receivers; an I/O error keeps its kind
    /// and message.
    pub(crate) fn clone_lossy(&self) -> Error {
        let io = |e: &io::Error| io::Error::new(e.kind(), e.to_string());
        match self {
            Error::Io { op, source } => Error::Io {
                op,
                source: io(source),
            },
            Error::Timeout { after } => Error::Timeout { after: *after },
            Error::DeadlineExceeded { set_for } => Error::DeadlineExceeded { set_for: *set_for },
            Error::PeerDisconnected => Error::PeerDisconnected,
            Error::Truncated { expected, got } => Error::Truncated {
                expected: *expected,
                got: *got,
            },
            Error::FrameTooLarge { len, max } => Error::FrameTooLarge {
                len: *len,
                max: *max,
            },
            Error::UnexpectedLength { expected, got } => Error::UnexpectedLength {
                expected: *expected,
                got: *got,
            },
            Error::NotMultiple { len, elem_size } => Error::NotMultiple {
                len: *len,
                elem_size: *elem_size,
            },
            Error::ConnectFailed {
                addr,
                attempts,
                source,
            } => Error::ConnectFailed {
                addr: addr.clone(),
                attempts: *attempts,
                source: io(source),
            },
            Error::Handshake { reason } => Error::Handshake {
                reason: reason.clone(),
            },
            Error::NoSuchParty {
                peer,
                rank,
                parties,
            } => Error::NoSuchParty {
                peer: *peer,
                rank: *rank,
                parties: *parties,
            },
            Error::SubChannelInUse { id } => Error::SubChannelInUse { id: *id },
            Error::ReservedSubChannel { id } => Error::ReservedSubChannel { id: *id },
            Error::TooManySubChannels { id, max } => {
                Error::TooManySubChannels { id: *id, max: *max }
            }
            Error::SubChannelOverflow { id, max } => {
                Error::SubChannelOverflow { id: *id, max: *max }
            }
            Error::Broken => Error::Broken,
            Error::TlsConfig { reason } => Error::TlsConfig {
                reason: reason.clone(),
            },
            Error::CertificateRefused { peer, reason } => Error::CertificateRefused {
                peer: peer.clone(),
                reason: reason.clone(),
            },
            Error::RefusedByPeer { peer, reason } => Error::RefusedByPeer {
                peer: peer.clone(),
                reason: reason.clone(),
            },
            Error::PlaintextPeer { peer } => Error::PlaintextPeer { peer: peer.clone() },
            Error::TlsPeer { peer } => Error::TlsPeer { peer: peer.clone() },
            Error::Tls { peer, reason } => Error::Tls {
                peer: peer.clone(),
                reason: reason.clone(),
            },
        }
    }

    /// Whether this is a [`Error::Timeout`]: nothing arrived for a while, and trying again
    /// may succeed.
    ///
    /// `false` for [`Error::DeadlineExceeded`], which a retry cannot cure (the
    /// [`crate::Mux`] demultiplexer rides out timeouts of its inner channel but stops on a
    /// deadline); see [`Error::is_deadline_exceeded`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. })
    }

    /// Whether this is a [`Error::DeadlineExceeded`].
    pub fn is_deadline_exceeded(&self) -> bool {
        matches!(self, Error::DeadlineExceeded { .. })
    }

    /// Whether a peer was refused, or refused us, at connection set-up: a certificate that
    /// fails the checks on either side, or one side in plaintext and the other in TLS.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Error::CertificateRefused { .. }
                | Error::RefusedByPeer { .. }
                | Error::PlaintextPeer { .. }
                | Error::TlsPeer { .. }
        )
    }
}

/// Widens a length to `u64` for error reports (lossless on every supported target).
pub(crate) fn len64(n: usize) -> u64 {
    n as u64
}
