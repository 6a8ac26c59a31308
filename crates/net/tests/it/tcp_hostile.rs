//! A TCP peer that misbehaves (disconnects mid-frame, announces a huge frame, never answers,
//! never reads, trickles a frame in byte by byte) gives a typed error within the timeout or the
//! deadline: no hang, no panic, no huge allocation. Each scenario runs in both read modes
//! (read-ahead thread and direct reads).

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use obliv_net::{
    Channel, ChannelExt, ConnectOptions, Error, RecvBuf, TcpChannel, TcpOptions, VecBuf,
};

const T: Duration = Duration::from_millis(200);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Ahead,
    Direct,
}

fn opts(mode: Mode) -> TcpOptions {
    TcpOptions {
        read_timeout: Some(T),
        write_timeout: Some(T),
        read_ahead: match mode {
            Mode::Ahead => Some(1 << 20),
            Mode::Direct => None,
        },
        ..TcpOptions::default()
    }
}

/// Our channel and a raw socket as the hostile peer.
fn hostile_pair(mode: Mode) -> (TcpChannel, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let ch = TcpChannel::accept(&l, Some(Duration::from_secs(5)), opts(mode)).unwrap();
    (ch, raw)
}

/// Generates one `#[test]` per read mode for each scenario function.
macro_rules! both_modes {
    ($($name:ident),* $(,)?) => {
        mod ahead {
            $( #[test] fn $name() { super::$name(super::Mode::Ahead) } )*
        }
        mod direct {
            $( #[test] fn $name() { super::$name(super::Mode::Direct) } )*
        }
    };
}

both_modes!(
    disconnect_mid_frame,
    disconnect_mid_header,
    disconnect_between_frames,
    huge_frame_length_is_rejected_before_allocating,
    silent_peer_times_out,
    peer_silent_mid_frame_times_out,
    peer_that_never_reads_gives_write_timeout,
    unexpected_length,
    peer_dropped_gives_error_on_send_eventually,
    buffered_frames_flush_before_receive_and_on_drop,
    slow_frame_is_not_an_idle_timeout,
    simultaneous_large_sends,
    lowered_limit_applies_before_allocating,
    limit_lowered_while_waiting_for_a_header_applies_to_it,
    exact_receive_reports_the_channel_limit,
    slow_loris_meets_the_deadline,
    deadline_between_frames_leaves_the_channel_usable,
    passed_deadline_fails_at_once_and_consumes_nothing,
    deadline_bounds_a_write_the_peer_never_takes,
    announced_length_is_not_allocated_before_its_bytes,
    large_frames_arrive_intact_into_every_buffer_kind,
);

/// Our channel, with a long idle timeout (so that only a deadline can cut a trickle off), and
/// a raw socket as the hostile peer.
fn patient_pair(mode: Mode) -> (TcpChannel, TcpStream) {
    pair_with_timeout(mode, Duration::from_secs(30))
}

/// Our channel with idle timeouts of `t` (read and write), and a raw socket as the peer.
fn pair_with_timeout(mode: Mode, t: Duration) -> (TcpChannel, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let o = TcpOptions {
        read_timeout: Some(t),
        write_timeout: Some(t),
        ..opts(mode)
    };
    let ch = TcpChannel::accept(&l, Some(Duration::from_secs(5)), o).unwrap();
    (ch, raw)
}

/// A loopback address that nobody listens on: a port reserved on 127.0.0.2 and released. The
/// other tests of this file, which run alongside, bind and connect on 127.0.0.1 only, so none
/// of them can take it meanwhile; a port released on 127.0.0.1 could be picked by another
/// test's `bind(…:0)` (or become a connection's source port) before it is used, about once in
/// 10^4 runs.
fn vacant_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.2:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A peer announces a 1 KiB frame and sends one byte of it every 50 ms, which never trips the
/// idle timeout: a receive with a 500 ms deadline fails at the deadline.
fn slow_loris_meets_the_deadline(mode: Mode) {
    let (mut ch, mut raw) = patient_pair(mode);
    let stop = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stop);
    let w = thread::spawn(move || {
        raw.write_all(&1024u64.to_le_bytes()).unwrap();
        let mut sent = 0;
        while !st.load(Ordering::SeqCst) && sent < 1024 {
            raw.write_all(&[5]).unwrap();
            sent += 1;
            thread::sleep(Duration::from_millis(50));
        }
        (raw, sent)
    });
    let t0 = Instant::now();
    ch.set_deadline(Some(t0 + Duration::from_millis(500)));
    let e = ch.recv().unwrap_err();
    let dt = t0.elapsed();
    stop.store(true, Ordering::SeqCst);
    assert!(
        matches!(e, Error::DeadlineExceeded { set_for } if set_for <= Duration::from_millis(500)),
        "{e:?}"
    );
    assert!(!e.is_timeout() && e.is_deadline_exceeded());
    assert!(dt >= Duration::from_millis(500), "{dt:?}");
    assert!(dt < Duration::from_secs(3), "{dt:?}");
    let (mut raw, sent) = w.join().unwrap();
    assert!(sent < 1024, "the frame must not have completed");
    ch.set_deadline(None);
    match mode {
        // Direct reads consumed part of the frame: the stream is out of step.
        Mode::Direct => assert!(matches!(ch.recv(), Err(Error::Broken))),
        // The reader thread holds the partial frame; the rest completes it.
        Mode::Ahead => {
            raw.write_all(&vec![5u8; 1024 - sent]).unwrap();
            assert_eq!(ch.recv().unwrap(), vec![5u8; 1024]);
        }
    }
}

/// A deadline that passes while the peer is silent between frames leaves the channel usable in
/// both modes, and removing it restores the idle timeout alone.
fn deadline_between_frames_leaves_the_channel_usable(mode: Mode) {
    let (mut ch, mut raw) = patient_pair(mode);
    let t0 = Instant::now();
    ch.set_deadline(Some(t0 + Duration::from_millis(300)));
    let e = ch.recv().unwrap_err();
    assert!(e.is_deadline_exceeded(), "{e:?}");
    let dt = t0.elapsed();
    assert!(
        dt >= Duration::from_millis(300) && dt < Duration::from_secs(3),
        "{dt:?}"
    );
    ch.set_deadline(None);
    raw.write_all(&2u64.to_le_bytes()).unwrap();
    raw.write_all(b"ok").unwrap();
    assert_eq!(ch.recv().unwrap(), b"ok");
    // A deadline far away does not disturb a receive that completes.
    ch.set_deadline(Some(Instant::now() + Duration::from_secs(60)));
    raw.write_all(&3u64.to_le_bytes()).unwrap();
    raw.write_all(b"yes").unwrap();
    assert_eq!(ch.recv().unwrap(), b"yes");
}

/// A receive started after the deadline fails at once, even with a whole frame waiting, and
/// leaves that frame for the next receive.
fn passed_deadline_fails_at_once_and_consumes_nothing(mode: Mode) {
    let (mut ch, mut raw) = patient_pair(mode);
    raw.write_all(&4u64.to_le_bytes()).unwrap();
    raw.write_all(b"kept").unwrap();
    thread::sleep(Duration::from_millis(50));
    ch.set_deadline(Some(Instant::now()));
    let t0 = Instant::now();
    let e = ch.recv().unwrap_err();
    assert!(e.is_deadline_exceeded(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(1));
    ch.set_deadline(None);
    assert_eq!(ch.recv().unwrap(), b"kept");
}

/// A peer that never reads: with a 30 s write timeout, the deadline ends the blocked write.
fn deadline_bounds_a_write_the_peer_never_takes(mode: Mode) {
    let (mut ch, raw) = patient_pair(mode);
    let chunk = vec![0u8; 1 << 20];
    let t0 = Instant::now();
    ch.set_deadline(Some(t0 + Duration::from_millis(500)));
    let mut err = None;
    // Loopback buffers hold a few MiB at most; 256 MiB must block.
    for _ in 0..256 {
        if let Err(e) = ch.send(&chunk) {
            err = Some(e);
            break;
        }
    }
    let e = err.expect("sends to a peer that never reads must fail at the deadline");
    assert!(e.is_deadline_exceeded(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // A write cut off mid-frame leaves the stream out of step.
    assert!(matches!(ch.send(b"x"), Err(Error::Broken)));
    drop(raw);
}

fn lowered_limit_applies_before_allocating(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    ch.set_max_frame_len(1000);
    assert_eq!(ch.max_frame_len(), 1000);
    raw.write_all(&1000u64.to_le_bytes()).unwrap();
    raw.write_all(&[9u8; 1000]).unwrap();
    raw.write_all(&1001u64.to_le_bytes()).unwrap();
    assert_eq!(ch.recv().unwrap(), vec![9u8; 1000]);
    let e = ch.recv().unwrap_err();
    assert!(
        matches!(
            e,
            Error::FrameTooLarge {
                len: 1001,
                max: 1000
            }
        ),
        "{e:?}"
    );
    assert!(matches!(ch.recv(), Err(Error::Broken)));
}

fn disconnect_mid_frame(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&100u64.to_le_bytes()).unwrap();
    raw.write_all(&[1u8; 10]).unwrap();
    drop(raw);
    let t0 = Instant::now();
    let e = ch.recv().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Truncated {
                expected: 100,
                got: 10
            }
        ),
        "{e:?}"
    );
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert!(matches!(ch.recv(), Err(Error::Broken)));
}

fn disconnect_mid_header(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&[1, 2, 3]).unwrap();
    drop(raw);
    let e = ch.recv().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Truncated {
                expected: 8,
                got: 3
            }
        ),
        "{e:?}"
    );
}

fn disconnect_between_frames(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&2u64.to_le_bytes()).unwrap();
    raw.write_all(b"hi").unwrap();
    drop(raw);
    assert_eq!(ch.recv().unwrap(), b"hi");
    assert!(matches!(ch.recv(), Err(Error::PeerDisconnected)));
}

fn huge_frame_length_is_rejected_before_allocating(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&(1u64 << 40).to_le_bytes()).unwrap();
    raw.flush().unwrap();
    let e = ch.recv().unwrap_err();
    assert!(
        matches!(e, Error::FrameTooLarge { len, max } if len == 1 << 40 && max == 1 << 30),
        "{e:?}"
    );
    // The stream is out of step now: the channel refuses further use.
    assert!(matches!(ch.recv(), Err(Error::Broken)));
    assert!(matches!(ch.send(b"x"), Err(Error::Broken)));

    // The same with u64::MAX and a typed receive with its own tighter limit (which direct
    // reads apply to the header; the read-ahead thread applies the channel's limit).
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&u64::MAX.to_le_bytes()).unwrap();
    let e = ch.recv_pod_vec::<u128>(4).unwrap_err();
    let want_max = if mode == Mode::Direct { 64 } else { 1 << 30 };
    assert!(
        matches!(e, Error::FrameTooLarge { len: u64::MAX, max } if max == want_max),
        "{e:?}"
    );
}

fn silent_peer_times_out(mode: Mode) {
    let (mut ch, raw) = hostile_pair(mode);
    let t0 = Instant::now();
    let e = ch.recv().unwrap_err();
    let dt = t0.elapsed();
    assert!(matches!(e, Error::Timeout { after } if after == T), "{e:?}");
    assert!(dt >= T && dt < Duration::from_secs(3), "{dt:?}");
    // A timeout between frames leaves the channel usable.
    let mut raw = raw;
    raw.write_all(&3u64.to_le_bytes()).unwrap();
    raw.write_all(b"abc").unwrap();
    assert_eq!(ch.recv().unwrap(), b"abc");
}

fn peer_silent_mid_frame_times_out(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&100u64.to_le_bytes()).unwrap();
    raw.write_all(&[0u8; 50]).unwrap();
    let t0 = Instant::now();
    let e = ch.recv().unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(3));
    match mode {
        // Direct reads consumed half a frame: the stream is out of step.
        Mode::Direct => assert!(matches!(ch.recv(), Err(Error::Broken))),
        // The reader thread still holds the half frame; the rest completes it.
        Mode::Ahead => {
            raw.write_all(&[7u8; 50]).unwrap();
            let m = ch.recv().unwrap();
            assert_eq!(m.len(), 100);
            assert_eq!(&m[50..], &[7u8; 50]);
        }
    }
}

fn peer_that_never_reads_gives_write_timeout(mode: Mode) {
    let (mut ch, raw) = hostile_pair(mode);
    let chunk = vec![0u8; 1 << 20];
    let t0 = Instant::now();
    let mut err = None;
    // Loopback buffers hold a few MiB at most; 256 MiB must block.
    for _ in 0..256 {
        if let Err(e) = ch.send(&chunk) {
            err = Some(e);
            break;
        }
    }
    let e = err.expect("sends to a peer that never reads must eventually time out");
    assert!(e.is_timeout(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    drop(raw);
}

fn unexpected_length(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&5u64.to_le_bytes()).unwrap();
    raw.write_all(b"hello").unwrap();
    raw.write_all(&2u64.to_le_bytes()).unwrap();
    raw.write_all(b"ok").unwrap();
    let mut buf = [0u8; 4];
    let e = ch.recv_into(&mut buf).unwrap_err();
    assert!(
        matches!(
            e,
            Error::UnexpectedLength {
                expected: 4,
                got: 5
            }
        ),
        "{e:?}"
    );
    match mode {
        Mode::Direct => assert!(matches!(ch.recv(), Err(Error::Broken))),
        // Whole frames are consumed in read-ahead mode: the channel stays in step.
        Mode::Ahead => assert_eq!(ch.recv().unwrap(), b"ok"),
    }
}

fn peer_dropped_gives_error_on_send_eventually(mode: Mode) {
    let (mut ch, raw) = hostile_pair(mode);
    drop(raw);
    let mut res = Ok(());
    for _ in 0..64 {
        res = ch.send(&[0u8; 1 << 16]).and_then(|()| ch.flush());
        if res.is_err() {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    let e = res.unwrap_err();
    assert!(matches!(e, Error::PeerDisconnected), "{e:?}");
}

fn buffered_frames_flush_before_receive_and_on_drop(mode: Mode) {
    // An idle timeout far beyond the thread's start-up on a loaded machine (`T` is not).
    let o = TcpOptions {
        read_timeout: Some(Duration::from_secs(10)),
        write_timeout: Some(Duration::from_secs(10)),
        ..opts(mode)
    };
    let (mut a, mut b) = TcpChannel::loopback_pair(o).unwrap();
    // Small frames stay buffered; the receive below must flush them or time out.
    a.send(b"ping").unwrap();
    let t = thread::spawn(move || {
        assert_eq!(b.recv().unwrap(), b"ping");
        b.send(b"pong").unwrap();
        // No flush: dropping the channel pushes the frame out.
    });
    assert_eq!(a.recv().unwrap(), b"pong");
    t.join().unwrap();
}

/// A frame that trickles in slower than the timeout per frame, but faster than the timeout per
/// byte, arrives whole: the timeout is an idle timeout. (A 1 s timeout and gaps of a quarter
/// of it, 1.5 s in all: each gap leaves 750 ms for a loaded machine's scheduling.)
fn slow_frame_is_not_an_idle_timeout(mode: Mode) {
    let idle = Duration::from_secs(1);
    let (mut ch, mut raw) = pair_with_timeout(mode, idle);
    let w = thread::spawn(move || {
        raw.write_all(&6u64.to_le_bytes()).unwrap();
        for b in b"trickl" {
            thread::sleep(idle / 4);
            raw.write_all(&[*b]).unwrap();
        }
        raw
    });
    assert_eq!(ch.recv().unwrap(), b"trickl");
    drop(w.join().unwrap());
}

/// Both ends send 16 MiB before either receives. Read-ahead absorbs it; direct reads would
/// block both writers on full kernel buffers (and fail with a write timeout).
fn simultaneous_large_sends(mode: Mode) {
    let o = match mode {
        // Read-ahead must absorb it however slowly a loaded machine runs the reader threads:
        // long timeouts. (Without read-ahead, both writers block for good: `T` strikes.)
        Mode::Ahead => TcpOptions {
            read_ahead: Some(64 << 20),
            read_timeout: Some(Duration::from_secs(10)),
            write_timeout: Some(Duration::from_secs(10)),
            ..opts(mode)
        },
        Mode::Direct => opts(mode),
    };
    let (mut a, mut b) = TcpChannel::loopback_pair(o).unwrap();
    let big = vec![3u8; 16 << 20];
    let big2 = big.clone();
    let t = thread::spawn(move || {
        let r = b.send(&big2).and_then(|()| b.recv());
        (r, b)
    });
    let ra = a.send(&big).and_then(|()| a.recv());
    let (rb, b) = t.join().unwrap();
    match mode {
        Mode::Ahead => {
            assert_eq!(ra.unwrap().len(), 16 << 20);
            assert_eq!(rb.unwrap().len(), 16 << 20);
        }
        Mode::Direct => {
            assert!(ra.is_err() || rb.is_err(), "direct mode cannot absorb this");
        }
    }
    drop((a, b));
}

#[test]
fn connect_gives_up_at_the_deadline() {
    let addr = vacant_addr();
    // About a dozen attempts fit the deadline: three even when the machine is loaded.
    let o = ConnectOptions {
        deadline: Duration::from_millis(600),
        retry_interval: Duration::from_millis(50),
        ..ConnectOptions::default()
    };
    let t0 = Instant::now();
    let e = TcpChannel::connect(addr, &o).unwrap_err();
    let dt = t0.elapsed();
    assert!(
        matches!(&e, Error::ConnectFailed { attempts, .. } if *attempts >= 3),
        "{e:?}"
    );
    assert!(dt < Duration::from_secs(3), "{dt:?}");
}

/// The limit is lowered while the channel (its read-ahead thread) already waits for the next
/// header; the peer then announces a frame below the old limit and above the new one and sends
/// none of it. The frame is refused at once, by the new limit, instead of being waited for.
fn limit_lowered_while_waiting_for_a_header_applies_to_it(mode: Mode) {
    // A 30 s idle timeout: waiting for the frame would take that long (and then time out),
    // which the bound below tells apart from a refusal at once with room for a loaded machine.
    let (mut ch, mut raw) = patient_pair(mode);
    // Let the read-ahead thread start waiting for a header under the default limit.
    thread::sleep(Duration::from_millis(100));
    ch.set_max_frame_len(1000);
    raw.write_all(&(1u64 << 29).to_le_bytes()).unwrap();
    raw.flush().unwrap();
    let t0 = Instant::now();
    let e = ch.recv().unwrap_err();
    assert!(
        matches!(
            e,
            Error::FrameTooLarge {
                len: 536_870_912,
                max: 1000
            }
        ),
        "{e:?}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "waited {:?} for the frame",
        t0.elapsed()
    );
    drop(raw);
}

/// An exact-length receive of a frame that fits the buffer but not the channel's limit
/// reports the limit (`FrameTooLarge`); one longer than the buffer is the wrong length.
fn exact_receive_reports_the_channel_limit(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    ch.set_max_frame_len(1000);
    raw.write_all(&2000u64.to_le_bytes()).unwrap();
    raw.write_all(&[1u8; 2000]).unwrap();
    let e = ch.recv_into(&mut [0u8; 2000]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::FrameTooLarge {
                len: 2000,
                max: 1000
            }
        ),
        "{e:?}"
    );
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&20u64.to_le_bytes()).unwrap();
    raw.write_all(&[1u8; 20]).unwrap();
    let e = ch.recv_into(&mut [0u8; 10]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::UnexpectedLength {
                expected: 10,
                got: 20
            }
        ),
        "{e:?}"
    );
}

#[test]
fn connect_retries_until_the_listener_appears() {
    let addr = vacant_addr();
    let server = thread::spawn(move || {
        thread::sleep(Duration::from_millis(150));
        let l = TcpListener::bind(addr).unwrap();
        let mut c =
            TcpChannel::accept(&l, Some(Duration::from_secs(5)), opts(Mode::Ahead)).unwrap();
        c.recv().unwrap()
    });
    let mut c = TcpChannel::connect(addr, &ConnectOptions::default()).unwrap();
    c.send(b"late").unwrap();
    c.flush().unwrap();
    assert_eq!(server.join().unwrap(), b"late");
}

#[test]
fn accept_times_out() {
    let l = TcpChannel::listen("127.0.0.1:0").unwrap();
    let t0 = Instant::now();
    let e =
        TcpChannel::accept(&l, Some(Duration::from_millis(100)), opts(Mode::Direct)).unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(2));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Whatever bytes a peer sends before closing, receiving ends in a typed error (after
    /// zero or more well-formed frames), never a panic or a hang; every frame honours the
    /// limit.
    #[test]
    fn arbitrary_streams_end_in_typed_errors(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000),
        small_lengths in proptest::prelude::any::<bool>(),
        direct in proptest::prelude::any::<bool>(),
    ) {
        let mode = if direct { Mode::Direct } else { Mode::Ahead };
        let (mut ch, mut raw) = hostile_pair(mode);
        ch.set_max_frame_len(1000);
        let mut bytes = bytes;
        if small_lengths && bytes.len() >= 8 {
            // Make the first header plausible so that some frames parse.
            let first = (bytes.len() as u64) % 64;
            bytes[..8].copy_from_slice(&first.to_le_bytes());
        }
        raw.write_all(&bytes).unwrap();
        drop(raw);
        let t0 = Instant::now();
        let mut frames = 0;
        let err = loop {
            match ch.recv() {
                Ok(m) => {
                    proptest::prop_assert!(m.len() <= 1000);
                    frames += 1;
                    proptest::prop_assert!(frames <= bytes.len() / 8 + 1);
                }
                Err(e) => break e,
            }
        };
        proptest::prop_assert!(
            matches!(
                err,
                Error::PeerDisconnected | Error::Truncated { .. } | Error::FrameTooLarge { .. }
            ),
            "{:?}",
            err
        );
        proptest::prop_assert!(t0.elapsed() < Duration::from_secs(5));
    }
}

/// A receive buffer that records the lengths it was asked for.
#[derive(Default)]
struct Recording {
    asked: Vec<usize>,
    inner: VecBuf,
}

impl RecvBuf for Recording {
    fn prepare(&mut self, len: usize) -> obliv_net::Result<&mut [u8]> {
        self.asked.push(len);
        self.inner.prepare(len)
    }
}

/// A peer announces a 512 MiB frame (within the channel's 1 GiB limit), sends 1000 bytes of it
/// and stalls: the receive times out without the receive buffer being asked for the announced
/// length (in direct mode it used to be prepared, i.e. allocated, as soon as the header
/// arrived).
fn announced_length_is_not_allocated_before_its_bytes(mode: Mode) {
    let (mut ch, mut raw) = hostile_pair(mode);
    raw.write_all(&(512u64 << 20).to_le_bytes()).unwrap();
    raw.write_all(&[1u8; 1000]).unwrap();
    let mut buf = Recording::default();
    let t0 = Instant::now();
    let e = ch.recv_frame(usize::MAX, &mut buf).unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(buf.asked.is_empty(), "buffer prepared for {:?}", buf.asked);
    assert!(buf.inner.0.capacity() < 64 << 20);
    drop(raw);
}

/// Frames around and well above the point where direct reads start to stage a frame's first
/// half arrive intact, whatever the buffer (fresh vector, exact slice, typed vector).
fn large_frames_arrive_intact_into_every_buffer_kind(mode: Mode) {
    let (mut ch, raw) = patient_pair(mode);
    let sizes = [
        (1 << 20) - 1,
        1 << 20,
        (1 << 20) + 1,
        (3 << 20) + 7,
        9 << 20,
    ];
    let frames: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&n| (0..n).map(|i| (i % 253) as u8).collect())
        .collect();
    let expect = frames.clone();
    let writer = thread::spawn(move || {
        let mut raw = raw;
        for _ in 0..3 {
            for f in &frames {
                raw.write_all(&(f.len() as u64).to_le_bytes()).unwrap();
                // In pieces, so that reads see partial frames.
                for c in f.chunks(100_003) {
                    raw.write_all(c).unwrap();
                }
            }
        }
        raw
    });
    for f in &expect {
        assert_eq!(&ch.recv().unwrap(), f);
    }
    for f in &expect {
        let mut out = vec![0u8; f.len()];
        ch.recv_into(&mut out).unwrap();
        assert_eq!(&out, f);
    }
    for f in &expect {
        if f.len() % 4 == 0 {
            let v: Vec<u32> = ch.recv_pod_vec(usize::MAX).unwrap();
            assert_eq!(bytemuck_bytes(&v), &f[..]);
        } else {
            assert_eq!(&ch.recv().unwrap(), f);
        }
    }
    drop(writer.join().unwrap());
}

fn bytemuck_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
