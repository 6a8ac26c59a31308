//! `Channel::set_deadline` on the in-memory channel, its split receiver, `Mux` sub-channels
//! (over memory and over TCP with a peer that trickles a frame in) and the simulated link: a
//! receive fails with `Error::DeadlineExceeded` at the deadline although the idle timeouts are
//! long. TCP's own deadline tests (both read modes) are in `tcp_hostile.rs`.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use obliv_net::{
    Channel, Error, FrameReceiver, LinkModel, Mux, MuxOptions, SimLink, Split, TcpChannel,
    TcpOptions, mem_pair_with_timeout,
};

const LONG: Duration = Duration::from_secs(30);
const DEADLINE: Duration = Duration::from_millis(500);

/// Runs `recv` with the deadline `DEADLINE` from now (which it sets, then receives); checks
/// that it fails with `DeadlineExceeded` at the deadline, well before any idle timeout.
fn fails_at_deadline<T: std::fmt::Debug>(recv: impl FnOnce(Instant) -> obliv_net::Result<T>) {
    let t0 = Instant::now();
    let e = recv(t0 + DEADLINE).unwrap_err();
    let dt = t0.elapsed();
    assert!(
        matches!(e, Error::DeadlineExceeded { set_for } if set_for <= DEADLINE),
        "{e:?}"
    );
    assert!(dt >= DEADLINE, "{dt:?}");
    assert!(dt < Duration::from_secs(3), "{dt:?}");
}

#[test]
fn mem_channel_and_receiver() {
    let (mut a, mut b) = mem_pair_with_timeout(LONG);
    fails_at_deadline(|d| {
        b.set_deadline(Some(d));
        b.recv()
    });
    // Messages are whole: the channel is still usable, and a passed deadline fails at once
    // without taking the message.
    a.send(b"hi").unwrap();
    assert!(b.recv().unwrap_err().is_deadline_exceeded());
    b.set_deadline(None);
    assert_eq!(b.recv().unwrap(), b"hi");
    // The split receiver keeps the channel's deadline and takes its own.
    b.set_deadline(Some(Instant::now()));
    let (_tx, mut rx) = b.split();
    assert!(rx.recv_max(10).unwrap_err().is_deadline_exceeded());
    fails_at_deadline(|d| {
        rx.set_deadline(Some(d));
        rx.recv_max(10)
    });
    a.send(b"ok").unwrap();
    rx.set_deadline(Some(Instant::now() + LONG));
    assert_eq!(rx.recv_max(10).unwrap(), b"ok");
}

#[test]
fn boxed_and_borrowed_channels_forward_the_deadline() {
    let (_a, b) = mem_pair_with_timeout(LONG);
    let mut boxed: Box<dyn Channel> = Box::new(b);
    {
        let r: &mut dyn Channel = &mut boxed;
        fails_at_deadline(|d| {
            r.set_deadline(Some(d));
            r.recv()
        });
    }
    boxed.set_deadline(None);
}

/// A sub-channel's idle timeout is the connection's: frames for another sub-channel (a slow
/// link shared by several workers) keep it waiting past the timeout, and it strikes once the
/// whole connection has been quiet that long. (The frames come every 50 ms, a tenth of the
/// timeout: a loaded machine may delay one by 450 ms before the connection counts as quiet.)
#[test]
fn mux_idle_timeout_counts_the_whole_connection() {
    let (a, b) = mem_pair_with_timeout(LONG);
    let t = Duration::from_millis(500);
    let opts = MuxOptions {
        recv_timeout: t,
        ..MuxOptions::default()
    };
    let (ma, mb) = (
        Mux::with_options(a, opts.clone()).unwrap(),
        Mux::with_options(b, opts).unwrap(),
    );
    let (mut a1, mut a2) = (ma.sub(1).unwrap(), ma.sub(2).unwrap());
    let (mut b1, mut b2) = (mb.sub(1).unwrap(), mb.sub(2).unwrap());
    let chatter = thread::spawn(move || {
        for _ in 0..40 {
            a2.send(b"noise").unwrap();
            a2.flush().unwrap();
            thread::sleep(Duration::from_millis(50));
        }
        a1.send(b"late").unwrap();
        a1.flush().unwrap();
        (a1, a2)
    });
    // About 2 s of traffic for sub-channel 2, then the message: more than three idle timeouts
    // after the receive began, and received all the same.
    let t0 = Instant::now();
    assert_eq!(b1.recv().unwrap(), b"late");
    assert!(t0.elapsed() >= 3 * t, "{:?}", t0.elapsed());
    let (_a1, _a2) = chatter.join().unwrap();
    for _ in 0..40 {
        assert_eq!(b2.recv().unwrap(), b"noise");
    }
    // A quiet connection: the timeout strikes after about `t`.
    let t0 = Instant::now();
    let e = b1.recv().unwrap_err();
    let dt = t0.elapsed();
    assert!(e.is_timeout(), "{e:?}");
    assert!(dt >= t && dt < 4 * t, "{dt:?}");
}

/// A sub-channel's deadline bounds its own wait while the connection stays busy with another
/// sub-channel's traffic, and leaves the others alone.
#[test]
fn mux_sub_channel_over_mem() {
    let (a, b) = mem_pair_with_timeout(LONG);
    let opts = MuxOptions {
        recv_timeout: LONG,
        ..MuxOptions::default()
    };
    let (ma, mb) = (
        Mux::with_options(a, opts.clone()).unwrap(),
        Mux::with_options(b, opts).unwrap(),
    );
    let (mut a2, mut b1, mut b2) = (ma.sub(2).unwrap(), mb.sub(1).unwrap(), mb.sub(2).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stop);
    let chatter = thread::spawn(move || {
        while !st.load(Ordering::SeqCst) {
            a2.send(b"noise").unwrap();
            a2.flush().unwrap();
            thread::sleep(Duration::from_millis(50));
        }
        a2
    });
    fails_at_deadline(|d| {
        b1.set_deadline(Some(d));
        b1.recv()
    });
    stop.store(true, Ordering::SeqCst);
    let _a2 = chatter.join().unwrap();
    assert_eq!(b2.recv().unwrap(), b"noise");
    // Still usable after its deadline.
    let mut a1 = ma.sub(1).unwrap();
    a1.send(b"late").unwrap();
    a1.flush().unwrap();
    b1.set_deadline(None);
    assert_eq!(b1.recv().unwrap(), b"late");
}

/// Over TCP, a peer that trickles a sub-channel frame in one byte every 50 ms: the
/// sub-channel's deadline ends the wait (in both read modes of the inner channel).
#[test]
fn mux_sub_channel_over_tcp_with_a_trickling_peer() {
    for read_ahead in [Some(1 << 20), None] {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let o = TcpOptions {
            read_timeout: Some(LONG),
            read_ahead,
            ..TcpOptions::default()
        };
        let ch = TcpChannel::accept(&l, Some(Duration::from_secs(5)), o).unwrap();
        let mux = Mux::with_options(
            ch,
            MuxOptions {
                recv_timeout: LONG,
                ..MuxOptions::default()
            },
        )
        .unwrap();
        let mut sub = mux.sub(1).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = Arc::clone(&stop);
        let w = thread::spawn(move || {
            raw.write_all(&4u64.to_le_bytes()).unwrap();
            raw.write_all(&1u32.to_le_bytes()).unwrap();
            raw.write_all(&1024u64.to_le_bytes()).unwrap();
            while !st.load(Ordering::SeqCst) {
                if raw.write_all(&[0]).is_err() {
                    break;
                }
                thread::sleep(Duration::from_millis(50));
            }
        });
        fails_at_deadline(|d| {
            sub.set_deadline(Some(d));
            sub.recv()
        });
        stop.store(true, Ordering::SeqCst);
        w.join().unwrap();
    }
}

/// A deadline set on the inner channel before the `Mux` bounds the whole connection: the
/// demultiplexer stops on it (it does not ride it out as it does idle timeouts), and the
/// sub-channels report it instead of waiting for their own long timeout.
#[test]
fn inner_deadline_stops_the_demultiplexer() {
    let (_a, mut b) = mem_pair_with_timeout(Duration::from_millis(100));
    let t0 = Instant::now();
    b.set_deadline(Some(t0 + DEADLINE));
    let mux = Mux::with_options(
        b,
        MuxOptions {
            recv_timeout: LONG,
            ..MuxOptions::default()
        },
    )
    .unwrap();
    let mut sub = mux.sub(1).unwrap();
    let e = sub.recv().unwrap_err();
    let dt = t0.elapsed();
    assert!(e.is_deadline_exceeded(), "{e:?}");
    assert!(dt >= DEADLINE && dt < Duration::from_secs(3), "{dt:?}");
    assert!(
        mux.sub(2)
            .unwrap()
            .recv()
            .unwrap_err()
            .is_deadline_exceeded()
    );
}

/// The simulated link bounds both the inner wait and the wait for a message's arrival time; a
/// message that would arrive after the deadline is lost, so the link is broken afterwards.
#[test]
fn sim_link() {
    let (a, b) = mem_pair_with_timeout(LONG);
    let slow = LinkModel {
        bandwidth_bps: 0,
        latency: Duration::from_secs(5),
    };
    let (mut sa, mut sb) = (SimLink::new(a, slow), SimLink::new(b, slow));
    // Nothing sent: the inner channel's deadline.
    fails_at_deadline(|d| {
        sb.set_deadline(Some(d));
        sb.recv()
    });
    sb.set_deadline(None);
    // A message still in flight at the deadline.
    sa.send(b"slow").unwrap();
    fails_at_deadline(|d| {
        sb.set_deadline(Some(d));
        sb.recv()
    });
    sb.set_deadline(None);
    assert!(matches!(sb.recv(), Err(Error::Broken)));
    // Split receivers do the same.
    let (a, b) = mem_pair_with_timeout(LONG);
    let (_sa, sb) = (SimLink::new(a, slow), SimLink::new(b, slow));
    let (_tx, mut rx) = sb.split();
    fails_at_deadline(|d| {
        rx.set_deadline(Some(d));
        rx.recv_max(10)
    });
}

/// A peer that never reads: one sub-channel's send blocks in the shared sender (for the write
/// timeout, 20 s here). Another sub-channel's receive with a deadline used to wait for that
/// send (it flushes the shared sender first) and so overran its deadline by the write timeout;
/// now it fails at its deadline.
#[test]
fn mux_receive_deadline_holds_while_another_sub_channel_is_stuck_sending() {
    let l = TcpListener::bind("127.0.0.2:0").unwrap();
    let raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let o = TcpOptions {
        read_timeout: Some(LONG),
        write_timeout: Some(Duration::from_secs(20)),
        ..TcpOptions::default()
    };
    let ch = TcpChannel::accept(&l, Some(Duration::from_secs(5)), o).unwrap();
    let mux = Mux::with_options(
        ch,
        MuxOptions {
            recv_timeout: LONG,
            ..MuxOptions::default()
        },
    )
    .unwrap();
    let (mut s1, mut s2) = (mux.sub(1).unwrap(), mux.sub(2).unwrap());
    let stuck = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stuck);
    let sender = thread::spawn(move || {
        let chunk = vec![0u8; 1 << 20];
        loop {
            st.store(true, Ordering::SeqCst);
            if s1.send(&chunk).is_err() {
                return;
            }
        }
    });
    // Let the kernel buffers fill so the sender blocks in a write, holding the sender.
    while !stuck.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(10));
    }
    thread::sleep(Duration::from_millis(500));
    fails_at_deadline(|d| {
        s2.set_deadline(Some(d));
        s2.recv()
    });
    drop(raw);
    sender.join().unwrap();
}
