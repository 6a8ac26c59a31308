//! An n-party session: a full mesh of channels, each party knowing its rank.

use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use crate::channel::{Channel, ChannelExt, Stats};
use crate::error::{Error, Result};
use crate::mem::{MemChannel, mem_pair};
use crate::tcp::{ConnectOptions, TcpChannel, accept_stream};
use crate::tls::{TlsConfig, TlsStats};

/// Magic bytes that open a session handshake.
const MAGIC: [u8; 8] = *b"OBLIVNET";
/// Version of the handshake format.
const VERSION: u32 = 1;
/// How long an accepted connection may take to send its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// One party's view of an n-party session: its `rank` in `0..parties` and a channel to every
/// other party.
///
/// ```
/// use obliv_net::{Channel, Session};
/// let mut parties = Session::mem_mesh(3);
/// let mut p2 = parties.pop().unwrap();
/// let mut p1 = parties.pop().unwrap();
/// p1.channel(2).unwrap().send(b"hi").unwrap();
/// assert_eq!(p2.channel(1).unwrap().recv().unwrap(), b"hi");
/// ```
#[derive(Debug)]
pub struct Session<C> {
    rank: usize,
    channels: Vec<Option<C>>,
}

impl<C: Channel> Session<C> {
    /// Builds a session from its channels: `channels[j]` is the channel to party `j`, `None`
    /// exactly at `rank`.
    pub fn from_channels(rank: usize, channels: Vec<Option<C>>) -> Result<Self> {
        let parties = channels.len();
        let ok = rank < parties
            && channels
                .iter()
                .enumerate()
                .all(|(j, c)| c.is_none() == (j == rank));
        if !ok {
            return Err(Error::NoSuchParty {
                peer: rank,
                rank,
                parties,
            });
        }
        Ok(Session { rank, channels })
    }

    /// This party's rank, in `0..parties()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of parties.
    pub fn parties(&self) -> usize {
        self.channels.len()
    }

    /// The ranks of the other parties, in increasing order.
    pub fn peers(&self) -> impl Iterator<Item = usize> + use<C> {
        let rank = self.rank;
        (0..self.channels.len()).filter(move |&j| j != rank)
    }

    fn no_such(&self, peer: usize) -> Error {
        Error::NoSuchParty {
            peer,
            rank: self.rank,
            parties: self.channels.len(),
        }
    }

    /// The channel to party `peer`.
    pub fn channel(&mut self, peer: usize) -> Result<&mut C> {
        let e = self.no_such(peer);
        self.channels
            .get_mut(peer)
            .and_then(Option::as_mut)
            .ok_or(e)
    }

    /// The channels to two distinct parties at once (say, the next and the previous party of a
    /// ring).
    pub fn channel_pair(&mut self, a: usize, b: usize) -> Result<(&mut C, &mut C)> {
        for p in [a, b] {
            if p == self.rank || p >= self.channels.len() {
                return Err(self.no_such(p));
            }
        }
        if a == b {
            return Err(self.no_such(b));
        }
        let e = self.no_such(a);
        match self.channels.get_disjoint_mut([a, b]) {
            Ok([Some(x), Some(y)]) => Ok((x, y)),
            _ => Err(e),
        }
    }

    /// Every other party's rank with its channel.
    pub fn channels_mut(&mut self) -> impl Iterator<Item = (usize, &mut C)> {
        self.channels
            .iter_mut()
            .enumerate()
            .filter_map(|(j, c)| c.as_mut().map(|c| (j, c)))
    }

    /// Flushes every channel.
    pub fn flush_all(&mut self) -> Result<()> {
        self.channels_mut().try_for_each(|(_, c)| c.flush())
    }

    /// The sum of all channels' counters (rounds summed too; see [`Stats`]).
    pub fn stats(&self) -> Stats {
        self.channels
            .iter()
            .flatten()
            .fold(Stats::default(), |acc, c| acc + c.stats())
    }

    /// Transforms every channel, e.g. to wrap each in a [`crate::SimLink`].
    pub fn map<D: Channel>(self, mut f: impl FnMut(usize, C) -> D) -> Session<D> {
        Session {
            rank: self.rank,
            channels: self
                .channels
                .into_iter()
                .enumerate()
                .map(|(j, c)| c.map(|c| f(j, c)))
                .collect(),
        }
    }

    /// The channels, indexed by peer (`None` at this party's rank).
    pub fn into_channels(self) -> Vec<Option<C>> {
        self.channels
    }
}

impl Session<MemChannel> {
    /// The `n` parties of an in-memory session, in rank order (one per thread, usually).
    pub fn mem_mesh(n: usize) -> Vec<Session<MemChannel>> {
        let mut grid: Vec<Vec<Option<MemChannel>>> =
            (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
        #[allow(clippy::needless_range_loop)] // grid[i][j] and grid[j][i] both change
        for i in 0..n {
            for j in i + 1..n {
                let (a, b) = mem_pair();
                grid[i][j] = Some(a);
                grid[j][i] = Some(b);
            }
        }
        grid.into_iter()
            .enumerate()
            .map(|(rank, channels)| Session { rank, channels })
            .collect()
    }
}

fn hello(rank: usize, parties: usize) -> [u8; 20] {
    let mut m = [0u8; 20];
    m[..8].copy_from_slice(&MAGIC);
    m[8..12].copy_from_slice(&VERSION.to_le_bytes());
    m[12..16].copy_from_slice(&u32::try_from(rank).unwrap_or(u32::MAX).to_le_bytes());
    m[16..20].copy_from_slice(&u32::try_from(parties).unwrap_or(u32::MAX).to_le_bytes());
    m
}

/// Parses a handshake message; returns the sender's rank.
fn parse_hello(m: &[u8; 20], parties: usize) -> Result<usize> {
    let word = |i: usize| u32::from_le_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]]);
    let fail = |reason: String| Err(Error::Handshake { reason });
    if m[..8] != MAGIC {
        return fail("bad magic".into());
    }
    if word(8) != VERSION {
        return fail(format!("version {} (we speak {VERSION})", word(8)));
    }
    let n = usize::try_from(word(16)).unwrap_or(usize::MAX);
    if n != parties {
        return fail(format!("peer expects {n} parties, we have {parties}"));
    }
    Ok(usize::try_from(word(12)).unwrap_or(usize::MAX))
}

impl Session<TcpChannel> {
    /// Joins a TCP session as party `rank` of `addrs.len()`, listening on `listener` (bound to
    /// `addrs[rank]`, or to an ephemeral port whose address the others know as `addrs[rank]`).
    ///
    /// Party `i` connects to every lower rank `j < i` (retrying until
    /// [`ConnectOptions::deadline`] while `j` is not yet listening) and accepts a connection
    /// from every higher rank. The connecting side sends `"OBLIVNET" ‖ version ‖ rank ‖
    /// parties` (little-endian `u32`s), the accepting side checks it and answers the same with
    /// its own rank, and the connector checks that the answer comes from the rank it dialled.
    /// Incoming connections that fail the handshake (a stray client, a wrong party count, a
    /// duplicate rank) are dropped and accepting goes on; the whole set-up fails with
    /// [`Error::Timeout`] or [`Error::ConnectFailed`] if it is not done by the deadline.
    pub fn tcp_with_listener(
        rank: usize,
        listener: &TcpListener,
        addrs: &[SocketAddr],
        opts: &ConnectOptions,
    ) -> Result<Self> {
        Self::mesh(rank, listener, addrs, opts, None)
    }

    /// Joins a session as [`Session::tcp_with_listener`] does, with every channel inside TLS 1.3
    /// with mutual authentication (see [`crate::tls`]).
    ///
    /// `hosts[j]` is the name (DNS name or IP address) party `j` is known at, the host part
    /// of its address as the operators wrote it; party `j`'s certificate must name it. A
    /// dialling party checks the accepting party's certificate during the handshake; the
    /// accepting party checks the dialling party's certificate against the host of the rank
    /// it claims in its hello, so a party with a valid certificate for another party's host
    /// is refused.
    ///
    /// A peer whose certificate fails the checks, or that refuses ours, or that speaks
    /// plaintext, ends the set-up with the matching error ([`Error::is_refusal`]) before any
    /// frame of the protocol; connections that are neither TLS nor obliv (a port scanner)
    /// are dropped and accepting goes on.
    ///
    /// # Errors
    /// As [`Session::tcp_with_listener`], [`Error::NoSuchParty`] if `hosts` and `addrs` differ
    /// in length, and the refusals above.
    pub fn tls_with_listener(
        rank: usize,
        listener: &TcpListener,
        addrs: &[SocketAddr],
        hosts: &[String],
        tls: &TlsConfig,
        opts: &ConnectOptions,
    ) -> Result<Self> {
        if hosts.len() != addrs.len() {
            return Err(Error::NoSuchParty {
                peer: hosts.len(),
                rank,
                parties: addrs.len(),
            });
        }
        Self::mesh(rank, listener, addrs, opts, Some((tls, hosts)))
    }

    /// Joins a TLS session as party `rank`, listening on `addrs[rank]` (see
    /// [`Session::tls_with_listener`]).
    ///
    /// # Errors
    /// As [`Session::tls_with_listener`].
    pub fn tls(
        rank: usize,
        addrs: &[SocketAddr],
        hosts: &[String],
        tls: &TlsConfig,
        opts: &ConnectOptions,
    ) -> Result<Self> {
        let listener = bind(rank, addrs)?;
        Self::tls_with_listener(rank, &listener, addrs, hosts, tls, opts)
    }

    /// What TLS added to the traffic of every channel (`None` for a plaintext session).
    pub fn tls_stats(&self) -> Option<TlsStats> {
        self.channels
            .iter()
            .flatten()
            .map(TcpChannel::tls_stats)
            .try_fold(TlsStats::default(), |acc, s| s.map(|s| acc + s))
            .filter(|_| self.channels.len() > 1)
    }

    /// Live views of every TLS channel's counters (empty for a plaintext session).
    pub fn tls_counters(&self) -> Vec<crate::tls::TlsCounters> {
        self.channels
            .iter()
            .flatten()
            .filter_map(TcpChannel::tls_counters)
            .collect()
    }

    fn mesh(
        rank: usize,
        listener: &TcpListener,
        addrs: &[SocketAddr],
        opts: &ConnectOptions,
        tls: Option<(&TlsConfig, &[String])>,
    ) -> Result<Self> {
        let parties = addrs.len();
        if rank >= parties {
            return Err(Error::NoSuchParty {
                peer: rank,
                rank,
                parties,
            });
        }
        let end = Instant::now() + opts.deadline;
        let mut channels: Vec<Option<TcpChannel>> = (0..parties).map(|_| None).collect();
        for (j, addr) in addrs.iter().enumerate().take(rank) {
            let left = end.saturating_duration_since(Instant::now());
            let o = ConnectOptions {
                deadline: left,
                ..opts.clone()
            };
            let mut c = match tls {
                Some((cfg, hosts)) => TcpChannel::connect_tls(addr, &hosts[j], cfg, &o)?,
                None => TcpChannel::connect(addr, &o)?,
            };
            // The answer comes once party j reaches its accept loop, within the deadline.
            let left = end.saturating_duration_since(Instant::now());
            c.set_read_timeout(Some(left.min(opts.tcp.read_timeout.unwrap_or(left))))?;
            // A total bound too: a peer trickling its answer in must not stretch the set-up
            // past the deadline (reported as the set-up's timeout).
            c.set_deadline(Some(end));
            let set_up_timeout = |e: Error| {
                if e.is_deadline_exceeded() {
                    Error::Timeout {
                        after: opts.deadline,
                    }
                } else {
                    e
                }
            };
            c.send(&hello(rank, parties)).map_err(set_up_timeout)?;
            let reply: [u8; 20] = c
                .recv_array()
                .map_err(set_up_timeout)
                .map_err(|e| match e {
                    Error::PeerDisconnected if tls.is_none() => Error::Handshake {
                        reason: format!(
                            "party {j} at {addr} closed the connection without answering \
                         (does it require TLS?)"
                        ),
                    },
                    Error::PeerDisconnected => Error::RefusedByPeer {
                        peer: format!("party {j} at {addr}"),
                        reason:
                            "it closed the connection after the TLS handshake (our certificate \
                             does not name the host of our rank, or it takes us for another \
                             session)"
                                .into(),
                    },
                    e => e,
                })?;
            c.set_read_timeout(opts.tcp.read_timeout)?;
            c.set_deadline(None);
            let r = parse_hello(&reply, parties)?;
            if r != j {
                return Err(Error::Handshake {
                    reason: format!("dialled party {j} at {addr}, answered by party {r}"),
                });
            }
            c.reset_stats();
            channels[j] = Some(c);
        }
        let mut missing = parties - rank - 1;
        while missing > 0 {
            let left = end.saturating_duration_since(Instant::now());
            let (s, from) = accept_stream(listener, Some(left))?;
            // A stray client must not hold us long: real parties send their hello at once.
            let left = end.saturating_duration_since(Instant::now());
            let mut c = match tls {
                Some((cfg, _)) => {
                    match TcpChannel::tls_server_from_stream(
                        s,
                        cfg,
                        left.min(HELLO_TIMEOUT),
                        opts.tcp.clone(),
                    ) {
                        Ok(c) => c,
                        Err(e) if e.is_refusal() => return Err(e),
                        // Not one of ours: drop it and keep accepting.
                        Err(_) => continue,
                    }
                }
                None => TcpChannel::from_stream(s, opts.tcp.clone())?,
            };
            c.set_read_timeout(Some(left.min(HELLO_TIMEOUT)))?;
            // The idle timeout alone would let a client that trickles its hello in byte by
            // byte hold the set-up for many times `HELLO_TIMEOUT`, past the deadline.
            c.set_deadline(Some(Instant::now() + left.min(HELLO_TIMEOUT)));
            let r = c.recv_array::<20>().and_then(|m| parse_hello(&m, parties));
            if tls.is_none()
                && let Err(
                    Error::FrameTooLarge { len, .. } | Error::UnexpectedLength { got: len, .. },
                ) = r
                && len & 0xffff == 0x0316
            {
                // The record header of a TLS ClientHello read as a frame length.
                return Err(Error::TlsPeer {
                    peer: from.to_string(),
                });
            }
            if let (Ok(r), Some((_, hosts))) = (&r, tls)
                && let Some(host) = hosts.get(*r)
            {
                // The certificate must be that of the party the peer claims to be.
                c.verify_peer_name(host)?;
            }
            match r {
                Ok(r) if r > rank && r < parties && channels[r].is_none() => {
                    c.set_deadline(None);
                    c.send(&hello(rank, parties))?;
                    c.flush()?;
                    c.set_read_timeout(opts.tcp.read_timeout)?;
                    c.reset_stats();
                    channels[r] = Some(c);
                    missing -= 1;
                }
                // Not one of ours: drop it and keep accepting.
                _ => {}
            }
        }
        Ok(Session { rank, channels })
    }

    /// Joins a TCP session as party `rank`, listening on `addrs[rank]` (see
    /// [`Session::tcp_with_listener`]).
    pub fn tcp(rank: usize, addrs: &[SocketAddr], opts: &ConnectOptions) -> Result<Self> {
        let listener = bind(rank, addrs)?;
        Self::tcp_with_listener(rank, &listener, addrs, opts)
    }
}

/// Binds `addrs[rank]`.
fn bind(rank: usize, addrs: &[SocketAddr]) -> Result<TcpListener> {
    let addr = addrs.get(rank).ok_or(Error::NoSuchParty {
        peer: rank,
        rank,
        parties: addrs.len(),
    })?;
    TcpListener::bind(addr).map_err(|e| Error::Io {
        op: "bind",
        source: e,
    })
}
