//! The simulated link against bandwidth/latency theory.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions

use std::thread;
use std::time::{Duration, Instant};

use obliv_net::{Channel, LinkModel, SimLink, TcpChannel, TcpOptions, mem_pair};

/// Sends `total` bytes in `msgs` back-to-back messages and returns the time from the first
/// send until the receiver holds the last byte.
fn one_way<A, B>(a: A, b: B, model: LinkModel, total: usize, msgs: usize) -> Duration
where
    A: Channel + 'static,
    B: Channel + 'static,
{
    let mut a = SimLink::new(a, model);
    let mut b = SimLink::new(b, model);
    let per = total / msgs;
    let rx = thread::spawn(move || {
        let mut got = 0;
        for _ in 0..msgs {
            got += b.recv().unwrap().len();
        }
        (Instant::now(), got, b.stats())
    });
    let chunk = vec![0xa5u8; per];
    let t0 = Instant::now();
    for _ in 0..msgs {
        a.send(&chunk).unwrap();
    }
    a.flush().unwrap();
    let (t1, got, stats) = rx.join().unwrap();
    assert_eq!(got, per * msgs);
    // Timestamp frames are not counted.
    assert_eq!(stats.messages_received, msgs as u64);
    assert_eq!(stats.bytes_received, (per * msgs) as u64);
    t1 - t0
}

fn check_within(elapsed: Duration, theory: Duration, rel: f64, slack: Duration) {
    assert!(elapsed >= theory, "{elapsed:?} < theory {theory:?}");
    let hi = theory.mul_f64(1.0 + rel) + slack;
    assert!(elapsed <= hi, "{elapsed:?} > {hi:?} (theory {theory:?})");
}

/// 10 MB at 100 Mbps / 10 ms: theory 0.8 s + 10 ms = 0.81 s; measured within 10 % (plus a
/// few ms of scheduling slack on a loaded machine).
#[test]
fn ten_megabytes_at_100mbps_10ms_mem() {
    let model = LinkModel::mbps_ms(100, 10);
    let total = 10_000_000;
    let theory = model.one_way_time(total);
    assert_eq!(theory, Duration::from_millis(810));
    let (a, b) = mem_pair();
    let dt = one_way(a, b, model, total, 10);
    check_within(dt, theory, 0.10, Duration::from_millis(20));
}

#[test]
fn ten_megabytes_at_100mbps_10ms_tcp() {
    let model = LinkModel::mbps_ms(100, 10);
    let total = 10_000_000;
    let (a, b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let dt = one_way(a, b, model, total, 100);
    check_within(
        dt,
        model.one_way_time(total),
        0.10,
        Duration::from_millis(20),
    );
}

/// Ping-pong on a latency-only link: each round trip costs two one-way latencies. Every one of
/// the ten hops waits for a thread to wake up, so the latency is large enough (50 ms) that a
/// loaded machine's scheduling delays (100 ms in all) still leave the bound below three
/// latencies per round trip (750 ms).
#[test]
fn round_trips_cost_twice_the_latency() {
    let model = LinkModel {
        bandwidth_bps: 0,
        latency: Duration::from_millis(50),
    };
    let (a, b) = mem_pair();
    let mut a = SimLink::new(a, model);
    let mut b = SimLink::new(b, model);
    let n = 5;
    let t = thread::spawn(move || {
        for _ in 0..n {
            let m = b.recv().unwrap();
            b.send(&m).unwrap();
        }
    });
    let t0 = Instant::now();
    for _ in 0..n {
        a.send(b"x").unwrap();
        a.recv().unwrap();
    }
    let dt = t0.elapsed();
    t.join().unwrap();
    check_within(
        dt,
        Duration::from_millis(500),
        0.10,
        Duration::from_millis(100),
    );
    assert_eq!(a.stats().rounds, n);
}

/// A message sent while the link is busy queues behind the previous one; one sent after the
/// link went idle does not pay for the earlier traffic. Each check waits for one wake-up:
/// 50 ms of slack for a loaded machine, less than the 100 ms transfer that a wrong queueing
/// would add.
#[test]
fn queueing_and_idle_link() {
    // 8 Mbit/s: 1000 bytes take 1 ms.
    let model = LinkModel {
        bandwidth_bps: 8_000_000,
        latency: Duration::from_millis(20),
    };
    assert_eq!(model.transmit_time(1000), Duration::from_millis(1));
    let slack = Duration::from_millis(50);
    let (a, b) = mem_pair();
    let mut a = SimLink::new(a, model);
    let mut b = SimLink::new(b, model);
    let t0 = Instant::now();
    a.send(&[0u8; 100_000]).unwrap(); // 100 ms on the wire
    a.send(&[0u8; 1]).unwrap(); // queues behind it
    b.recv().unwrap();
    let first = t0.elapsed();
    b.recv().unwrap();
    let second = t0.elapsed();
    check_within(first, Duration::from_millis(120), 0.10, slack);
    check_within(second, Duration::from_millis(120), 0.10, slack);
    // After the link went idle, a tiny message costs only the latency.
    thread::sleep(Duration::from_millis(20));
    let t1 = Instant::now();
    a.send(&[0u8; 1]).unwrap();
    b.recv().unwrap();
    check_within(t1.elapsed(), Duration::from_millis(20), 0.10, slack);
}

/// Nanoseconds since the Unix epoch, as `SimLink` stamps them.
fn wall_ns() -> u64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    u64::try_from(d.as_nanos()).unwrap()
}

/// A peer that stamps its message with an arrival time far in the future (`u64::MAX`, or an
/// hour ahead) cannot make the receiver sleep until then: the wait is capped by what the
/// receiver's own model allows (here 20 ms of latency).
#[test]
fn a_far_future_timestamp_does_not_hold_the_receiver() {
    let model = LinkModel {
        bandwidth_bps: 0,
        latency: Duration::from_millis(20),
    };
    for stamp in [u64::MAX, wall_ns() + 3_600_000_000_000] {
        let (mut raw, b) = obliv_net::mem_pair_with_timeout(Duration::from_secs(5));
        let mut sb = SimLink::new(b, model);
        raw.send(&stamp.to_le_bytes()).unwrap();
        raw.send(b"held").unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        // On a thread: before the fix the receive slept for the stamp's distance (centuries).
        thread::spawn(move || {
            let t0 = Instant::now();
            let r = sb.recv();
            let _ = done_tx.send((r, t0.elapsed()));
        });
        let (r, dt) = done_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the receive must not wait for the peer's timestamp");
        assert_eq!(r.unwrap(), b"held");
        assert!(dt >= Duration::from_millis(20), "{dt:?}");
    }
}

/// An idle timeout that strikes between a message's timestamp frame and the message itself
/// leaves the link in step: the next receive returns the message (it used to take the message
/// as the next timestamp, then the next timestamp as the message). Also for a split receiver.
#[test]
fn a_timeout_between_timestamp_and_message_keeps_the_link_in_step() {
    use obliv_net::{FrameReceiver, MemChannel, Split};
    fn check(raw: &mut MemChannel, mut recv: impl FnMut() -> obliv_net::Result<Vec<u8>>) {
        raw.send(&wall_ns().to_le_bytes()).unwrap();
        // The message is late: the receive times out after its timestamp.
        assert!(recv().unwrap_err().is_timeout());
        raw.send(b"hello").unwrap();
        assert_eq!(recv().unwrap(), b"hello");
        raw.send(&wall_ns().to_le_bytes()).unwrap();
        raw.send(b"next").unwrap();
        assert_eq!(recv().unwrap(), b"next");
    }
    let model = LinkModel {
        bandwidth_bps: 0,
        latency: Duration::ZERO,
    };
    let (mut raw, b) = obliv_net::mem_pair_with_timeout(Duration::from_millis(100));
    let mut sb = SimLink::new(b, model);
    check(&mut raw, || sb.recv());
    let (mut raw, b) = obliv_net::mem_pair_with_timeout(Duration::from_millis(100));
    let (_tx, mut rb) = SimLink::new(b, model).split();
    check(&mut raw, || rb.recv_max(1 << 10));
}
