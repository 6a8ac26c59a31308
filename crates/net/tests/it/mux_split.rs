//! Sub-channels (`Mux`) and split halves over every channel kind.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions

use std::thread;
use std::time::{Duration, Instant};

use obliv_net::{
    Channel, ChannelExt, Error, FrameReceiver, FrameSender, LinkModel, Mux, MuxOptions, SimLink,
    Split, TcpChannel, TcpOptions, mem_pair,
};

/// `k` sub-channels, each on its own pair of threads, each running `rounds` ping-pongs with
/// messages that carry the sub-channel id; checks per-sub counters.
fn concurrent_subs<S: FrameSender + 'static>(ma: Mux<S>, mb: Mux<S>, k: u32, rounds: u64) {
    let mut handles = Vec::new();
    for id in 0..k {
        let mut a = ma.sub(id).unwrap();
        let mut b = mb.sub(id).unwrap();
        handles.push(thread::spawn(move || {
            for r in 0..rounds {
                let v: u64 = b.recv_value().unwrap();
                assert_eq!(v, u64::from(id) * 1000 + r);
                b.send_value(&(v + 1)).unwrap();
            }
            b.stats()
        }));
        handles.push(thread::spawn(move || {
            for r in 0..rounds {
                let v = u64::from(id) * 1000 + r;
                a.send_value(&v).unwrap();
                assert_eq!(a.recv_value::<u64>().unwrap(), v + 1);
            }
            let s = a.stats();
            assert_eq!(s.messages_sent, rounds);
            assert_eq!(s.bytes_received, 8 * rounds);
            assert_eq!(s.rounds, rounds);
            s
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn mux_over_mem() {
    let (a, b) = mem_pair();
    concurrent_subs(Mux::new(a).unwrap(), Mux::new(b).unwrap(), 4, 200);
}

#[test]
fn mux_over_tcp_both_read_modes() {
    for read_ahead in [None, Some(1 << 20)] {
        let o = TcpOptions {
            read_ahead,
            ..TcpOptions::default()
        };
        let (a, b) = TcpChannel::loopback_pair(o).unwrap();
        concurrent_subs(Mux::new(a).unwrap(), Mux::new(b).unwrap(), 4, 200);
    }
}

#[test]
fn mux_over_sim_link() {
    let model = LinkModel {
        bandwidth_bps: 0,
        latency: Duration::from_millis(50),
    };
    let (a, b) = mem_pair();
    let (ma, mb) = (
        Mux::new(SimLink::new(a, model)).unwrap(),
        Mux::new(SimLink::new(b, model)).unwrap(),
    );
    let t0 = Instant::now();
    // Four sub-channels with 5 round trips each, side by side: about 5 · 2 · 50 ms = 500 ms in
    // total, not four times that (2 s one after the other). The upper bound leaves 750 ms for
    // a loaded machine's scheduling delays (ten hops, each through several threads) while
    // still telling the two apart.
    concurrent_subs(ma, mb, 4, 5);
    let dt = t0.elapsed();
    assert!(dt >= Duration::from_millis(500), "{dt:?}");
    assert!(dt < Duration::from_millis(1250), "{dt:?}");
}

#[test]
fn frames_wait_for_their_sub_channel() {
    let (a, b) = mem_pair();
    let (ma, mb) = (Mux::new(a).unwrap(), Mux::new(b).unwrap());
    let mut a7 = ma.sub(7).unwrap();
    for i in 0..10u8 {
        a7.send(&[i; 3]).unwrap();
    }
    thread::sleep(Duration::from_millis(20));
    let mut b7 = mb.sub(7).unwrap();
    for i in 0..10u8 {
        assert_eq!(b7.recv().unwrap(), [i; 3]);
    }
    // An id opens once per side; after a drop it can be opened again.
    assert!(matches!(mb.sub(7), Err(Error::SubChannelInUse { id: 7 })));
    a7.send(b"again").unwrap();
    drop(b7);
    let mut b7 = mb.sub(7).unwrap();
    assert_eq!(b7.id(), 7);
    assert_eq!(b7.recv().unwrap(), b"again");
    // Length checks work per sub-channel and keep it in step.
    a7.send(&[0u8; 10]).unwrap();
    a7.send(b"ok").unwrap();
    assert!(matches!(
        b7.recv_max(9),
        Err(Error::FrameTooLarge { len: 10, max: 9 })
    ));
    assert_eq!(b7.recv().unwrap(), b"ok");
}

#[test]
fn back_pressure_keeps_order_and_loses_nothing() {
    let (a, b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let ma = Mux::new(a).unwrap();
    let mb = Mux::with_options(
        b,
        MuxOptions {
            max_queued: 4096,
            ..MuxOptions::default()
        },
    )
    .unwrap();
    let mut a1 = ma.sub(1).unwrap();
    let t = thread::spawn(move || {
        for i in 0..500u32 {
            a1.send_pod(&[i; 256]).unwrap();
        }
        a1.flush().unwrap();
        a1
    });
    thread::sleep(Duration::from_millis(50));
    let mut b1 = mb.sub(1).unwrap();
    for i in 0..500u32 {
        assert_eq!(b1.recv_pod_exact::<u32>(256).unwrap(), vec![i; 256]);
    }
    drop(t.join().unwrap());
}

#[test]
fn peer_gone_ends_every_sub_channel() {
    for tcp in [false, true] {
        let (ma, mb) = if tcp {
            let (a, b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
            let (ma, mb) = (Mux::new(a).unwrap(), Mux::new(b).unwrap());
            // Type-erase the sender type difference by boxing the subs below.
            (MuxAny::Tcp(ma), MuxAny::Tcp(mb))
        } else {
            let (a, b) = mem_pair();
            (
                MuxAny::Mem(Mux::new(a).unwrap()),
                MuxAny::Mem(Mux::new(b).unwrap()),
            )
        };
        let mut a1 = ma.sub(1);
        let mut b1 = mb.sub(1);
        let mut b2 = mb.sub(2);
        a1.send(b"last words").unwrap();
        a1.flush().unwrap();
        drop(a1);
        drop(ma);
        let t0 = Instant::now();
        assert_eq!(b1.recv().unwrap(), b"last words");
        assert!(matches!(b1.recv(), Err(Error::PeerDisconnected)));
        assert!(matches!(b2.recv(), Err(Error::PeerDisconnected)));
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}

enum MuxAny {
    Mem(Mux<obliv_net::MemSender>),
    Tcp(Mux<obliv_net::TcpSender>),
}

impl MuxAny {
    fn sub(&self, id: u32) -> Box<dyn Channel> {
        match self {
            MuxAny::Mem(m) => Box::new(m.sub(id).unwrap()),
            MuxAny::Tcp(m) => Box::new(m.sub(id).unwrap()),
        }
    }
}

/// Split halves on two threads: both ends stream in both directions at once.
fn split_duplex<C: Split + 'static>(a: C, b: C) {
    const N: u32 = 2000;
    let (at, ar) = a.split();
    let (bt, br) = b.split();
    let send = |mut t: Box<dyn FrameSender>| {
        thread::spawn(move || {
            for i in 0..N {
                t.send(&i.to_le_bytes().repeat(64)).unwrap();
            }
            t.flush().unwrap();
            t
        })
    };
    let recv = |mut r: Box<dyn FrameReceiver>| {
        thread::spawn(move || {
            for i in 0..N {
                assert_eq!(r.recv_max(1 << 20).unwrap(), i.to_le_bytes().repeat(64));
            }
            r
        })
    };
    let hs = [send(Box::new(at)), send(Box::new(bt))];
    let hr = [recv(Box::new(ar)), recv(Box::new(br))];
    // Keep every half alive until all threads are done.
    let senders: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let receivers: Vec<_> = hr.into_iter().map(|h| h.join().unwrap()).collect();
    drop((senders, receivers));
}

#[test]
fn split_halves_work_on_two_threads() {
    let (a, b) = mem_pair();
    split_duplex(a, b);
    for read_ahead in [None, Some(1 << 20)] {
        let o = TcpOptions {
            read_ahead,
            ..TcpOptions::default()
        };
        let (a, b) = TcpChannel::loopback_pair(o).unwrap();
        split_duplex(a, b);
    }
}

/// A peer that speaks garbage to a `Mux` ends every sub-channel with a typed error.
#[test]
fn malformed_mux_traffic_gives_typed_errors() {
    use obliv_net::MemChannel;
    /// Frames the peer sends, and a check of the error they must cause.
    type Case = (Vec<Vec<u8>>, fn(&Error) -> bool);
    let cases: Vec<Case> = vec![
        // An id frame of 3 bytes.
        (vec![vec![1, 0, 0]], |e| {
            matches!(
                e,
                Error::UnexpectedLength {
                    expected: 4,
                    got: 3
                }
            )
        }),
        // An id frame of 5 bytes.
        (vec![vec![1, 0, 0, 0, 0]], |e| {
            matches!(e, Error::FrameTooLarge { len: 5, max: 4 })
        }),
        // An id and no payload before the peer leaves.
        (vec![vec![1, 0, 0, 0]], |e| {
            matches!(e, Error::PeerDisconnected)
        }),
    ];
    for (frames, expected) in cases {
        let (mut raw, b): (MemChannel, MemChannel) = mem_pair();
        let mb = Mux::new(b).unwrap();
        let mut sub = mb.sub(1).unwrap();
        for f in frames {
            raw.send(&f).unwrap();
        }
        drop(raw);
        let e = sub.recv().unwrap_err();
        assert!(expected(&e), "{e:?}");
        // Sub-channels opened later learn the same.
        let e2 = mb.sub(2).unwrap().recv().unwrap_err();
        assert!(expected(&e2), "{e2:?}");
    }
}
