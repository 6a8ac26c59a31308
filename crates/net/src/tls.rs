//! TLS 1.3 with mutual authentication under [`TcpChannel`](crate::TcpChannel) and
//! [`Session`](crate::Session), on rustls with the *ring* crypto provider.
//!
//! A [`TlsConfig`] holds one party's certificate chain and private key and the certificates it
//! trusts (a CA, or the peers' own certificates pinned as trust anchors). Both ends of every
//! connection present a certificate: the dialling side checks that the accepting side's
//! certificate names the host it dialled (a DNS or IP subject alternative name), and a
//! [`Session`](crate::Session) checks that the dialling side's certificate names the host
//! that party is dialled at — so a party holding a valid certificate for *another* party's
//! host is refused.
//!
//! The framing, limits, timeouts and counters are those of the plaintext channel: TLS sits
//! between the frames and the socket. [`Stats`](crate::Stats) counts the protocol's payload
//! only; [`TlsStats`] counts what TLS adds (handshake, record headers and tags).
//!
//! Refusals are typed: [`Error::CertificateRefused`] (the peer's certificate failed our
//! checks), [`Error::RefusedByPeer`] (the peer rejected ours), [`Error::PlaintextPeer`] (the
//! peer spoke plaintext where TLS is required), [`Error::TlsPeer`] (the reverse) and
//! [`Error::Tls`] (any other TLS failure, e.g. a record that fails authentication).

use std::fmt;
use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{
    AlertDescription, ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig,
    ServerConnection,
};

use crate::deadline::TimedSock;
use crate::error::{Error, Result, len64};

/// First byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;
/// First byte of obliv's plaintext session hello: the low byte of its 8-byte length prefix, 20.
const PLAINTEXT_HELLO: u8 = 20;
/// Raw bytes read from the socket at once.
const RAW_CHUNK: usize = 64 << 10;
/// Plaintext taken into TLS records per write call (and per hold of the connection lock).
const WRITE_CHUNK: usize = 256 << 10;

/// One party's TLS settings: its certificate chain and key, and what it trusts.
///
/// Cheap to clone (the rustls configurations are shared). TLS 1.3 only, ring provider, no
/// session resumption (every connection is a full mutual handshake).
#[derive(Clone)]
pub struct TlsConfig {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    /// The end-entity certificate this party presents.
    own: CertificateDer<'static>,
    /// The trusted certificates (CAs or pinned peer certificates), for [`check_pinned`].
    trusted: Arc<Vec<CertificateDer<'static>>>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig").finish_non_exhaustive()
    }
}

fn config_error(what: &str, e: impl fmt::Display) -> Error {
    Error::TlsConfig {
        reason: format!("{what}: {e}"),
    }
}

impl TlsConfig {
    /// Builds a configuration from PEM text: `cert_chain` (this party's certificate first,
    /// then any intermediates), `key` (PKCS#8, PKCS#1 or SEC1) and `trusted` (one or more
    /// certificates: the CA that issued the peers' certificates, or the peers' certificates
    /// themselves).
    ///
    /// # Errors
    /// [`Error::TlsConfig`] if a PEM block does not parse, a part is missing, or the key does
    /// not fit the certificate.
    pub fn from_pem(cert_chain: &[u8], key: &[u8], trusted: &[u8]) -> Result<Self> {
        let certs = CertificateDer::pem_slice_iter(cert_chain)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| config_error("certificate", e))?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| config_error("private key", e))?;
        let anchors = CertificateDer::pem_slice_iter(trusted)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| config_error("trusted certificates", e))?;
        Self::from_der(certs, key, anchors)
    }

    /// As [`TlsConfig::from_pem`], reading the three PEM files.
    ///
    /// # Errors
    /// [`Error::TlsConfig`] naming the file that cannot be read or parsed.
    pub fn from_pem_files(cert_chain: &Path, key: &Path, trusted: &Path) -> Result<Self> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| config_error(&format!("cannot read {}", p.display()), e))
        };
        let (c, k, t) = (read(cert_chain)?, read(key)?, read(trusted)?);
        let certs = CertificateDer::pem_slice_iter(&c)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| config_error(&cert_chain.display().to_string(), e))?;
        let key = PrivateKeyDer::from_pem_slice(&k)
            .map_err(|e| config_error(&key.display().to_string(), e))?;
        let anchors = CertificateDer::pem_slice_iter(&t)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| config_error(&trusted.display().to_string(), e))?;
        Self::from_der(certs, key, anchors)
    }

    /// Builds a configuration from DER values (see [`TlsConfig::from_pem`]).
    ///
    /// # Errors
    /// [`Error::TlsConfig`] if a part is missing or unusable.
    pub fn from_der(
        cert_chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        trusted: Vec<CertificateDer<'static>>,
    ) -> Result<Self> {
        let own = cert_chain
            .first()
            .cloned()
            .ok_or_else(|| config_error("certificate", "no certificate in the chain"))?;
        if trusted.is_empty() {
            return Err(config_error("trusted certificates", "none given"));
        }
        let mut roots = RootCertStore::empty();
        let pinned = Arc::new(trusted.clone());
        for (i, c) in trusted.into_iter().enumerate() {
            roots
                .add(c)
                .map_err(|e| config_error(&format!("trusted certificate {}", i + 1), e))?;
        }
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::clone(&roots), Arc::clone(&provider))
                .build()
                .map_err(|e| config_error("client verifier", e))?;
        let mut server = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| config_error("protocol versions", e))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(cert_chain.clone(), key.clone_key())
            .map_err(|e| config_error("certificate and key", e))?;
        server.send_tls13_tickets = 0;
        let mut client = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| config_error("protocol versions", e))?
            .with_root_certificates(roots)
            .with_client_auth_cert(cert_chain, key)
            .map_err(|e| config_error("certificate and key", e))?;
        client.resumption = Resumption::disabled();
        Ok(TlsConfig {
            client: Arc::new(client),
            server: Arc::new(server),
            own,
            trusted: pinned,
        })
    }

    /// Checks that this party's own certificate names `host` (a DNS name or an IP address),
    /// so that an operator learns of a wrong certificate before any peer refuses it.
    ///
    /// # Errors
    /// [`Error::TlsConfig`] if it does not.
    pub fn check_own_name(&self, host: &str) -> Result<()> {
        check_name(&self.own, host).map_err(|reason| Error::TlsConfig {
            reason: format!("this party's certificate {reason}"),
        })
    }
}

/// Whether `cert` is valid for `host`; `Err` says why not.
fn check_name(cert: &CertificateDer<'_>, host: &str) -> std::result::Result<(), String> {
    let name = server_name(host).map_err(|e| format!("cannot be checked: {e}"))?;
    let parsed = ParsedCertificate::try_from(cert).map_err(|e| format!("does not parse: {e}"))?;
    rustls::client::verify_server_name(&parsed, &name)
        .map_err(|_| format!("does not name {host:?} (no matching subject alternative name)"))
}

/// A peer certificate `cert` for `host` that chained to a trusted certificate is accepted only
/// if no trusted certificate names `host`, or if it is one of those that do, byte for byte.
///
/// With pinned peer certificates, each trusted certificate is a party's own and is a trust
/// anchor to rustls (webpki does not require an anchor to be a CA), so a party could sign a
/// certificate naming *another* party's host with its own pinned key and pass the chain and
/// name checks. A trusted certificate that names the host is that host's pinned certificate:
/// only it may speak for the host. A CA certificate names no host (no subject alternative
/// name), so certificates issued under a CA are unaffected.
fn check_pinned(
    cert: &CertificateDer<'_>,
    host: &str,
    trusted: &[CertificateDer<'static>],
) -> std::result::Result<(), String> {
    let mut naming = trusted
        .iter()
        .filter(|t| check_name(t, host).is_ok())
        .peekable();
    if naming.peek().is_none() || naming.any(|t| t.as_ref() == cert.as_ref()) {
        return Ok(());
    }
    Err(format!(
        "names {host:?} but is not the certificate pinned for it (a trusted certificate names \
         {host:?}; only that certificate may be presented for it)"
    ))
}

fn server_name(host: &str) -> Result<ServerName<'static>> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(h.to_string()).map_err(|e| Error::TlsConfig {
        reason: format!("{host:?} is not a DNS name or IP address: {e}"),
    })
}

/// What TLS added to a connection's traffic, next to the payload that [`crate::Stats`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TlsStats {
    /// Bytes written to the socket (handshake, records, alerts).
    pub wire_bytes_sent: u64,
    /// Bytes read from the socket.
    pub wire_bytes_received: u64,
    /// Bytes of the framed stream that went into TLS records (payload, frame headers and the
    /// session hello).
    pub stream_bytes_sent: u64,
    /// Bytes of the framed stream that came out of TLS records.
    pub stream_bytes_received: u64,
}

impl TlsStats {
    /// Bytes TLS added in both directions: handshake, record headers, tags, alerts.
    pub fn overhead(&self) -> u64 {
        (self.wire_bytes_sent + self.wire_bytes_received)
            .saturating_sub(self.stream_bytes_sent + self.stream_bytes_received)
    }
}

impl std::ops::Add for TlsStats {
    type Output = TlsStats;
    /// Sum of two connections' counters.
    fn add(self, rhs: TlsStats) -> TlsStats {
        TlsStats {
            wire_bytes_sent: self.wire_bytes_sent + rhs.wire_bytes_sent,
            wire_bytes_received: self.wire_bytes_received + rhs.wire_bytes_received,
            stream_bytes_sent: self.stream_bytes_sent + rhs.stream_bytes_sent,
            stream_bytes_received: self.stream_bytes_received + rhs.stream_bytes_received,
        }
    }
}

impl fmt::Display for TlsStats {
    /// `"TLS: 1234 B on the wire sent, 5678 B received, 910 B overhead"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TLS: {} B on the wire sent, {} B received, {} B overhead",
            self.wire_bytes_sent,
            self.wire_bytes_received,
            self.overhead()
        )
    }
}

/// A live view of one TLS connection's [`TlsStats`], which stays valid while the channel is
/// split, wrapped or moved to another thread.
#[derive(Clone, Debug)]
pub struct TlsCounters(pub(crate) Arc<TlsLink>);

impl TlsCounters {
    /// The counters now.
    pub fn stats(&self) -> TlsStats {
        self.0.stats()
    }
}

/// The state shared by the two halves of a TLS connection.
#[derive(Debug)]
pub(crate) struct TlsLink {
    conn: Mutex<Connection>,
    /// The peer, for error messages.
    peer: String,
    /// This party's trusted certificates (see [`check_pinned`]).
    trusted: Arc<Vec<CertificateDer<'static>>>,
    wire_sent: AtomicU64,
    wire_received: AtomicU64,
    stream_sent: AtomicU64,
    stream_received: AtomicU64,
}

impl TlsLink {
    fn new(mut conn: Connection, peer: String, trusted: Arc<Vec<CertificateDer<'static>>>) -> Self {
        conn.set_buffer_limit(Some(2 * WRITE_CHUNK));
        TlsLink {
            conn: Mutex::new(conn),
            peer,
            trusted,
            wire_sent: AtomicU64::new(0),
            wire_received: AtomicU64::new(0),
            stream_sent: AtomicU64::new(0),
            stream_received: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // rustls reports failures as values; a panic elsewhere cannot leave it half-updated in
        // a way that matters more than the error the next call returns.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> TlsStats {
        TlsStats {
            wire_bytes_sent: self.wire_sent.load(Ordering::Relaxed),
            wire_bytes_received: self.wire_received.load(Ordering::Relaxed),
            stream_bytes_sent: self.stream_sent.load(Ordering::Relaxed),
            stream_bytes_received: self.stream_received.load(Ordering::Relaxed),
        }
    }

    /// Checks that the peer's certificate names `host` and, where a trusted certificate names
    /// `host`, that it is that certificate ([`check_pinned`]).
    pub(crate) fn verify_peer_name(&self, host: &str) -> Result<()> {
        let conn = self.lock();
        let cert = conn
            .peer_certificates()
            .and_then(<[_]>::first)
            .ok_or_else(|| Error::CertificateRefused {
                peer: self.peer.clone(),
                reason: "no certificate presented".into(),
            })?;
        check_name(cert, host)
            .and_then(|()| check_pinned(cert, host, &self.trusted))
            .map_err(|reason| Error::CertificateRefused {
                peer: self.peer.clone(),
                reason: format!("certificate {reason}"),
            })
    }

    /// The peer's end-entity certificate.
    pub(crate) fn peer_certificate(&self) -> Option<CertificateDer<'static>> {
        self.lock()
            .peer_certificates()
            .and_then(<[_]>::first)
            .map(|c| c.clone().into_owned())
    }
}

/// A rustls failure carried through `io::Error` to [`Error::from_io`], already classified.
#[derive(Debug)]
pub(crate) struct TlsFailure(pub(crate) Error);

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for TlsFailure {}

/// Maps a rustls error to ours: certificate problems on our side, refusals by the peer, and
/// everything else.
fn classify(e: &rustls::Error, peer: &str) -> Error {
    let peer = peer.to_string();
    match e {
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => {
            Error::CertificateRefused {
                peer,
                reason: e.to_string(),
            }
        }
        rustls::Error::AlertReceived(
            a @ (AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::AccessDenied
            | AlertDescription::CertificateRequired),
        ) => Error::RefusedByPeer {
            peer,
            reason: format!("{a:?}"),
        },
        _ => Error::Tls {
            peer,
            reason: e.to_string(),
        },
    }
}

fn tls_io(e: Error) -> io::Error {
    io::Error::other(TlsFailure(e))
}

/// `&TcpStream` with the link's wire counters, for the handshake.
struct Counting<'a> {
    s: &'a TcpStream,
    link: &'a TlsLink,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.s.read(buf)?;
        self.link
            .wire_received
            .fetch_add(len64(n), Ordering::Relaxed);
        Ok(n)
    }
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.s.write(buf)?;
        self.link.wire_sent.fetch_add(len64(n), Ordering::Relaxed);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Sets both socket timeouts to what is left until `end` (at least a microsecond).
fn set_timeouts(s: &TcpStream, end: Instant) -> Result<Duration> {
    let left = end
        .saturating_duration_since(Instant::now())
        .max(Duration::from_micros(1));
    let io = |e| Error::Io {
        op: "configure socket",
        source: e,
    };
    s.set_read_timeout(Some(left)).map_err(io)?;
    s.set_write_timeout(Some(left)).map_err(io)?;
    Ok(left)
}

/// Runs the handshake on `link` until it completes, the peer fails it, or `end` passes.
fn handshake(s: &TcpStream, link: &TlsLink, end: Instant) -> Result<()> {
    loop {
        let left = set_timeouts(s, end)?;
        let mut conn = link.lock();
        if !conn.is_handshaking() && !conn.wants_write() {
            return Ok(());
        }
        let r = conn.complete_io(&mut Counting { s, link });
        let got_any = link.wire_received.load(Ordering::Relaxed) > 0;
        match r {
            Ok(_) => {}
            Err(e) => {
                if let Some(t) = e.get_ref().and_then(|x| x.downcast_ref::<rustls::Error>()) {
                    // Send our alert (best effort) so the peer learns why.
                    let _ = conn.write_tls(&mut Counting { s, link });
                    return Err(classify(t, &link.peer));
                }
                let err = Error::from_io("TLS handshake", e, Some(left));
                return Err(match err {
                    Error::PeerDisconnected | Error::Io { .. } if !got_any => Error::Tls {
                        peer: link.peer.clone(),
                        reason: "the peer closed the connection during the TLS handshake \
                                 without answering (does it run without TLS?)"
                            .into(),
                    },
                    Error::PeerDisconnected => Error::Tls {
                        peer: link.peer.clone(),
                        reason: "the peer closed the connection during the TLS handshake \
                                 (did it refuse our certificate?)"
                            .into(),
                    },
                    other => other,
                });
            }
        }
        if Instant::now() >= end && conn.is_handshaking() {
            return Err(Error::Timeout {
                after: Duration::default(),
            });
        }
    }
}

/// Dials side: TLS client handshake on a connected stream; `host` must be named by the peer's
/// certificate.
pub(crate) fn client_handshake(
    s: &TcpStream,
    host: &str,
    cfg: &TlsConfig,
    end: Instant,
) -> Result<Arc<TlsLink>> {
    let peer = peer_label(s, Some(host));
    let name = server_name(host)?;
    let conn = ClientConnection::new(Arc::clone(&cfg.client), name).map_err(|e| Error::Tls {
        peer: peer.clone(),
        reason: e.to_string(),
    })?;
    let link = Arc::new(TlsLink::new(
        Connection::Client(conn),
        peer,
        Arc::clone(&cfg.trusted),
    ));
    handshake(s, &link, end)?;
    // rustls checked the chain and the name; the pin is ours.
    link.verify_peer_name(host)?;
    Ok(link)
}

/// Accepting side: checks that the client opens a TLS handshake (a plaintext obliv hello gives
/// [`Error::PlaintextPeer`]), then runs the server handshake, which requires a client
/// certificate issued by a trusted CA.
pub(crate) fn server_handshake(
    s: &TcpStream,
    cfg: &TlsConfig,
    end: Instant,
) -> Result<Arc<TlsLink>> {
    let peer = peer_label(s, None);
    let left = set_timeouts(s, end)?;
    let mut first = [0u8; 1];
    let n = loop {
        match s.peek(&mut first) {
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::from_io("TLS handshake", e, Some(left))),
        }
    };
    match (n, first[0]) {
        (0, _) => return Err(Error::PeerDisconnected),
        (_, TLS_HANDSHAKE) => {}
        (_, PLAINTEXT_HELLO) => return Err(Error::PlaintextPeer { peer }),
        (_, b) => {
            return Err(Error::Tls {
                peer,
                reason: format!("not a TLS client (first byte {b:#04x})"),
            });
        }
    }
    let conn = ServerConnection::new(Arc::clone(&cfg.server)).map_err(|e| Error::Tls {
        peer: peer.clone(),
        reason: e.to_string(),
    })?;
    let link = Arc::new(TlsLink::new(
        Connection::Server(conn),
        peer,
        Arc::clone(&cfg.trusted),
    ));
    handshake(s, &link, end)?;
    Ok(link)
}

fn peer_label(s: &TcpStream, host: Option<&str>) -> String {
    match (s.peer_addr(), host) {
        (Ok(a), Some(h)) if a.ip().to_string() != h => format!("{h} ({a})"),
        (Ok(a), _) => a.to_string(),
        (Err(_), Some(h)) => h.to_string(),
        (Err(_), None) => "unknown peer".into(),
    }
}

/// The sending half: encrypts plaintext into records and writes them out.
#[derive(Debug)]
pub(crate) struct TlsWriter {
    link: Arc<TlsLink>,
    sock: TcpStream,
    out: Vec<u8>,
}

impl TlsWriter {
    pub(crate) fn new(link: Arc<TlsLink>, sock: TcpStream) -> Self {
        TlsWriter {
            link,
            sock,
            out: Vec::new(),
        }
    }

    /// Writes what rustls has queued (records, alerts) to the socket.
    fn push_out(&mut self) -> io::Result<()> {
        let mut s = &self.sock;
        s.write_all(&self.out)?;
        self.link
            .wire_sent
            .fetch_add(len64(self.out.len()), Ordering::Relaxed);
        self.out.clear();
        Ok(())
    }

    /// Queues a `close_notify` and writes it out (best effort, on drop).
    pub(crate) fn close_notify(&mut self) {
        {
            let mut c = self.link.lock();
            c.send_close_notify();
            while c.wants_write() {
                if c.write_tls(&mut self.out).is_err() {
                    break;
                }
            }
        }
        let _ = self.push_out();
    }
}

impl Write for TlsWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        // At most WRITE_CHUNK bytes of plaintext per call, so the lock is held briefly and
        // the record buffer stays bounded.
        let mut take = Vec::with_capacity(bufs.len());
        let mut budget = WRITE_CHUNK;
        for b in bufs {
            if budget == 0 {
                break;
            }
            let k = b.len().min(budget);
            take.push(IoSlice::new(&b[..k]));
            budget -= k;
        }
        let n = {
            let mut c = self.link.lock();
            let n = c.writer().write_vectored(&take)?;
            while c.wants_write() {
                c.write_tls(&mut self.out)?;
            }
            n
        };
        self.push_out()?;
        self.link.stream_sent.fetch_add(len64(n), Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The receiving half: reads records from the socket and yields their plaintext.
///
/// Raw bytes are read in chunks of 64 KiB without holding the connection lock (so a blocking
/// read never stalls the sender); each chunk is decrypted under the lock into a plaintext
/// buffer of about the same size, so memory stays bounded whatever the peer sends.
#[derive(Debug)]
pub(crate) struct TlsReader {
    link: Arc<TlsLink>,
    /// Each raw read is bounded by the idle timeout and the deadline.
    sock: TimedSock,
    raw: Vec<u8>,
    plain: Vec<u8>,
    pos: usize,
    /// `Some(true)`: clean end (close_notify); `Some(false)`: TCP end without close_notify.
    end: Option<bool>,
}

impl TlsReader {
    /// The receiving half; plaintext that arrived with the end of the handshake is taken
    /// over.
    pub(crate) fn new(link: Arc<TlsLink>, sock: TimedSock) -> io::Result<Self> {
        let mut r = TlsReader {
            link,
            sock,
            raw: vec![0u8; RAW_CHUNK],
            plain: Vec::new(),
            pos: 0,
            end: None,
        };
        r.feed_buffered()?;
        Ok(r)
    }

    /// The socket under the records.
    pub(crate) fn sock_mut(&mut self) -> &mut TimedSock {
        &mut self.sock
    }

    /// Processes what rustls already holds and collects its plaintext.
    fn feed_buffered(&mut self) -> io::Result<()> {
        let mut c = self.link.lock();
        if let Err(e) = c.process_new_packets() {
            return Err(tls_io(classify(&e, &self.link.peer)));
        }
        collect(&mut c, &mut self.plain, &mut self.end)
    }

    /// Feeds `raw[..n]` (`n == 0`: end of stream) to rustls and collects the plaintext.
    fn feed(&mut self, n: usize) -> io::Result<()> {
        let mut c = self.link.lock();
        let mut rest = &self.raw[..n];
        loop {
            if n == 0 {
                // Tells rustls the stream ended.
                c.read_tls(&mut rest)?;
            } else if rest.is_empty() {
                break;
            } else {
                c.read_tls(&mut rest)?;
            }
            if let Err(e) = c.process_new_packets() {
                return Err(tls_io(classify(&e, &self.link.peer)));
            }
            collect(&mut c, &mut self.plain, &mut self.end)?;
            if n == 0 || self.end.is_some() {
                break;
            }
        }
        Ok(())
    }
}

/// Moves the plaintext rustls holds to `plain`, noting the end of the stream in `end`.
fn collect(c: &mut Connection, plain: &mut Vec<u8>, end: &mut Option<bool>) -> io::Result<()> {
    match c.reader().read_to_end(plain) {
        Ok(_) => *end = Some(true),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => *end = Some(false),
        Err(e) => return Err(e),
    }
    Ok(())
}

impl Read for TlsReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.pos < self.plain.len() {
                let k = buf.len().min(self.plain.len() - self.pos);
                buf[..k].copy_from_slice(&self.plain[self.pos..self.pos + k]);
                self.pos += k;
                if self.pos == self.plain.len() {
                    self.plain.clear();
                    self.pos = 0;
                }
                self.link
                    .stream_received
                    .fetch_add(len64(k), Ordering::Relaxed);
                return Ok(k);
            }
            match self.end {
                Some(true) => return Ok(0),
                Some(false) => return Err(io::ErrorKind::UnexpectedEof.into()),
                None => {}
            }
            let n = self.sock.read(&mut self.raw)?;
            self.link
                .wire_received
                .fetch_add(len64(n), Ordering::Relaxed);
            self.feed(n)?;
            if n == 0 && self.end.is_none() {
                self.end = Some(false);
            }
        }
    }
}
