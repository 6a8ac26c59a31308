//! Running the parties of a protocol on threads of one process, for tests, examples and
//! benches.

use std::thread;

use crate::channel::Channel;
use crate::error::Result;
use crate::mem::{MemChannel, mem_pair};
use crate::session::Session;
use crate::tcp::{TcpChannel, TcpOptions};

/// Runs `a` and `b` on two threads, each with its end of `pair`, and returns both results.
///
/// Each end is dropped as soon as its party returns, so if one party fails early the other
/// sees [`crate::Error::PeerDisconnected`] instead of waiting for its timeout. A panic in
/// either party is propagated once both have finished.
///
/// ```
/// use obliv_net::{Channel, ChannelExt, mem_pair, run_pair};
/// let (sum, ()) = run_pair(
///     mem_pair(),
///     |c| c.recv_pod_vec::<u64>(10).unwrap().iter().sum::<u64>(),
///     |c| c.send_pod(&[1u64, 2, 3]).unwrap(),
/// );
/// assert_eq!(sum, 6);
/// ```
pub fn run_pair<CA, CB, RA, RB>(
    pair: (CA, CB),
    a: impl FnOnce(&mut CA) -> RA + Send,
    b: impl FnOnce(&mut CB) -> RB + Send,
) -> (RA, RB)
where
    CA: Channel,
    CB: Channel,
    RA: Send,
    RB: Send,
{
    let (mut ca, mut cb) = pair;
    thread::scope(|s| {
        let hb = s.spawn(move || {
            let r = b(&mut cb);
            // Flush what the party sent last before the end drops.
            let _ = cb.flush();
            drop(cb);
            r
        });
        let ra = a(&mut ca);
        let _ = ca.flush();
        drop(ca);
        match hb.join() {
            Ok(rb) => (ra, rb),
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}

/// [`run_pair`] over a fresh in-memory pair.
pub fn run_mem<RA: Send, RB: Send>(
    a: impl FnOnce(&mut MemChannel) -> RA + Send,
    b: impl FnOnce(&mut MemChannel) -> RB + Send,
) -> (RA, RB) {
    run_pair(mem_pair(), a, b)
}

/// [`run_pair`] over a fresh loopback TCP connection with default options.
pub fn run_tcp<RA: Send, RB: Send>(
    a: impl FnOnce(&mut TcpChannel) -> RA + Send,
    b: impl FnOnce(&mut TcpChannel) -> RB + Send,
) -> Result<(RA, RB)> {
    Ok(run_pair(
        TcpChannel::loopback_pair(TcpOptions::default())?,
        a,
        b,
    ))
}

/// Runs `f` for each party of `sessions` on its own thread; returns the results in rank order.
///
/// ```
/// use obliv_net::{Channel, ChannelExt, Session, run_parties};
/// let sums = run_parties(Session::mem_mesh(3), |s| {
///     let me = s.rank() as u64;
///     for (_, c) in s.channels_mut() {
///         c.send_value(&me).unwrap();
///     }
///     let mut sum = 0;
///     for (_, c) in s.channels_mut() {
///         sum += c.recv_value::<u64>().unwrap();
///     }
///     sum
/// });
/// assert_eq!(sums, vec![3, 2, 1]);
/// ```
pub fn run_parties<C, R>(
    sessions: Vec<Session<C>>,
    f: impl Fn(&mut Session<C>) -> R + Sync,
) -> Vec<R>
where
    C: Channel,
    R: Send,
{
    let f = &f;
    thread::scope(|s| {
        let handles: Vec<_> = sessions
            .into_iter()
            .map(|mut sess| {
                s.spawn(move || {
                    let r = f(&mut sess);
                    let _ = sess.flush_all();
                    drop(sess);
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(p) => std::panic::resume_unwind(p),
            })
            .collect()
    })
}
