//! Channels for two- and n-party protocols: in-memory, TCP and a simulated link, with byte and
//! round counters.
//!
//! Protocols in obliv talk to their peer only through the [`Channel`] trait: a blocking,
//! message-framed, ordered connection with explicit [`Channel::flush`] and traffic counters
//! ([`Stats`]: bytes, messages, rounds). Three implementations:
//!
//! - [`mem_pair`]: two ends in one process (tests, benches), zero-copy for owned messages;
//! - [`TcpChannel`]: length-prefixed frames over TCP with connect retries, idle timeouts,
//!   deadlines, `TCP_NODELAY`, buffered writes and a frame-length limit checked before any
//!   allocation; optionally inside TLS 1.3 with mutual authentication ([`tls`], rustls on
//!   *ring*), with the same limits, timeouts and counters;
//! - [`SimLink`]: wraps any channel and delays messages as a link of given bandwidth and
//!   latency would, so WAN figures ("100 Mbps / 10 ms") can be measured in one process.
//!
//! Every receive waits at most an idle timeout (no byte for that long); a total bound on a
//! protocol step, which a peer trickling bytes in cannot stretch, is a deadline:
//! [`Channel::set_deadline`] makes receives fail with [`Error::DeadlineExceeded`] once it has
//! passed, on every channel kind.
//!
//! [`Session`] gives each of `n` parties its rank and a channel to every other party, in memory
//! or over TCP. [`Mux`] runs many sub-channels over one connection, for sub-protocols that run
//! side by side (each on its own thread if need be); [`Split`] divides a channel into a sending
//! and a receiving half. [`run_pair`], [`run_mem`], [`run_tcp`] and [`run_parties`] run the
//! parties of a protocol on threads, for tests and benches.
//!
//! ```
//! use obliv_net::{Channel, ChannelExt, mem_pair};
//!
//! let (mut alice, mut bob) = mem_pair();
//! let t = std::thread::spawn(move || {
//!     let xs: Vec<u64> = bob.recv_pod_vec(1024).unwrap();
//!     bob.send_value(&xs.iter().sum::<u64>()).unwrap();
//! });
//! alice.send_pod(&[1u64, 2, 3]).unwrap();
//! assert_eq!(alice.recv_value::<u64>().unwrap(), 6);
//! assert_eq!(alice.stats().rounds, 1);
//! t.join().unwrap();
//! ```
#![forbid(unsafe_code)]

#[cfg(target_endian = "big")]
compile_error!(
    "obliv-net sends Pod values in memory order, which is little-endian on every supported target"
);

mod channel;
mod deadline;
mod error;
mod mem;
mod mux;
mod run;
mod session;
mod sim;
mod tcp;
pub mod tls;

pub use channel::{
    Channel, ChannelExt, DEFAULT_MAX_FRAME_LEN, ExactBuf, FrameReceiver, FrameSender, Interrupter,
    QUEUED_FRAME_OVERHEAD, RecvBuf, Split, Stats, StatsRecorder, VecBuf,
};
pub use error::{Error, Result};
pub use mem::{
    DEFAULT_MEM_TIMEOUT, MemChannel, MemReceiver, MemSender, mem_pair, mem_pair_with_timeout,
};
pub use mux::{Mux, MuxOptions, SubChannel};
pub use run::{run_mem, run_pair, run_parties, run_tcp};
pub use session::Session;
pub use sim::{LinkModel, SimLink, SimReceiver, SimSender};
pub use tcp::{ConnectOptions, DEFAULT_READ_AHEAD, TcpChannel, TcpOptions, TcpReceiver, TcpSender};
pub use tls::{TlsConfig, TlsCounters, TlsStats};

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
