//! A TCP peer that misbehaves (disconnects mid-frame, announces a huge frame, never answers,
//! never reads) gives a typed error within the timeout: no hang, no panic, no huge allocation.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use obliv_net::{Channel, ConnectOptions, Error, TcpChannel, TcpOptions};

const T: Duration = Duration::from_millis(200);

fn opts() -> TcpOptions {
    TcpOptions {
        read_timeout: Some(T),
        write_timeout: Some(T),
        ..TcpOptions::default()
    }
}

/// Our channel and a raw socket as the hostile peer.
fn hostile_pair() -> (TcpChannel, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let ch = TcpChannel::accept(&l, Some(Duration::from_secs(5)), opts()).unwrap();
    (ch, raw)
}

#[test]
fn disconnect_mid_frame() {
    let (mut ch, mut raw) = hostile_pair();
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

#[test]
fn disconnect_mid_header() {
    let (mut ch, mut raw) = hostile_pair();
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

#[test]
fn disconnect_between_frames() {
    let (mut ch, mut raw) = hostile_pair();
    raw.write_all(&2u64.to_le_bytes()).unwrap();
    raw.write_all(b"hi").unwrap();
    drop(raw);
    assert_eq!(ch.recv().unwrap(), b"hi");
    assert!(matches!(ch.recv(), Err(Error::PeerDisconnected)));
}

#[test]
fn huge_frame_length_is_rejected_before_allocating() {
    let (mut ch, mut raw) = hostile_pair();
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

    // The same with u64::MAX and a typed receive with its own tighter limit.
    let (mut ch, mut raw) = hostile_pair();
    raw.write_all(&u64::MAX.to_le_bytes()).unwrap();
    let e = obliv_net::ChannelExt::recv_pod_vec::<u128>(&mut ch, 4).unwrap_err();
    assert!(
        matches!(
            e,
            Error::FrameTooLarge {
                len: u64::MAX,
                max: 64
            }
        ),
        "{e:?}"
    );
}

#[test]
fn silent_peer_times_out() {
    let (mut ch, raw) = hostile_pair();
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

#[test]
fn peer_silent_mid_frame_times_out_and_breaks() {
    let (mut ch, mut raw) = hostile_pair();
    raw.write_all(&100u64.to_le_bytes()).unwrap();
    raw.write_all(&[0u8; 50]).unwrap();
    let t0 = Instant::now();
    let e = ch.recv().unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(matches!(ch.recv(), Err(Error::Broken)));
    drop(raw);
}

#[test]
fn peer_that_never_reads_gives_write_timeout() {
    let (mut ch, raw) = hostile_pair();
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

#[test]
fn unexpected_length_on_tcp() {
    let (mut ch, mut raw) = hostile_pair();
    raw.write_all(&5u64.to_le_bytes()).unwrap();
    raw.write_all(b"hello").unwrap();
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
}

#[test]
fn peer_dropped_gives_error_on_send_eventually() {
    let (mut ch, raw) = hostile_pair();
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

#[test]
fn connect_gives_up_at_the_deadline() {
    // A port that nobody listens on: bind, read the port, close.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let o = ConnectOptions {
        deadline: Duration::from_millis(300),
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

#[test]
fn connect_retries_until_the_listener_appears() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let server = thread::spawn(move || {
        thread::sleep(Duration::from_millis(150));
        let l = TcpListener::bind(addr).unwrap();
        let mut c = TcpChannel::accept(&l, Some(Duration::from_secs(5)), opts()).unwrap();
        c.recv().unwrap()
    });
    let mut c = TcpChannel::connect(addr, &ConnectOptions::default()).unwrap();
    c.send(b"late").unwrap();
    c.flush().unwrap();
    assert_eq!(server.join().unwrap(), b"late");
}

#[test]
fn accept_times_out() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let t0 = Instant::now();
    let e = TcpChannel::accept(&l, Some(Duration::from_millis(100)), opts()).unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[test]
fn buffered_frames_flush_before_receive_and_on_drop() {
    let (mut a, mut b) = TcpChannel::loopback_pair(opts()).unwrap();
    // Small frames stay buffered; the receive below must flush them or deadlock (timeout).
    a.send(b"ping").unwrap();
    let t = thread::spawn(move || {
        assert_eq!(b.recv().unwrap(), b"ping");
        b.send(b"pong").unwrap();
        // No flush: dropping the channel pushes the frame out.
    });
    assert_eq!(a.recv().unwrap(), b"pong");
    t.join().unwrap();
}
