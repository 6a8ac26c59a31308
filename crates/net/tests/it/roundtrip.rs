//! Round trips, typed helpers and counters on every channel kind.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions
#![allow(clippy::cast_possible_truncation)] // byte patterns wrap on purpose

use std::thread;
use std::time::Duration;

use obliv_net::{
    Channel, ChannelExt, Error, LinkModel, SimLink, Stats, TcpChannel, TcpOptions, mem_pair,
};
use proptest::prelude::*;

/// Messages of the sizes that matter: empty, one byte, around the TCP write buffer (64 KiB),
/// and large.
fn sizes() -> Vec<usize> {
    vec![0, 1, 7, 8, 9, 1000, 65_527, 65_528, 65_536, 65_537, 3 << 20]
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Alice sends every size, Bob echoes each message back; both check contents and counters.
fn echo_all<A, B>(mut a: A, mut b: B)
where
    A: Channel,
    B: Channel + 'static,
{
    let sizes = sizes();
    let n = sizes.len() as u64;
    let total: u64 = sizes.iter().map(|&s| s as u64).sum();
    let t = thread::spawn(move || {
        for _ in 0..n {
            let m = b.recv().unwrap();
            b.send(&m).unwrap();
        }
        b.flush().unwrap();
        b.stats()
    });
    for (k, &s) in sizes.iter().enumerate() {
        let m = pattern(s, k as u8);
        a.send(&m).unwrap();
        assert_eq!(a.recv().unwrap(), m, "size {s}");
    }
    let sa = a.stats();
    let sb = t.join().unwrap();
    let expect_a = Stats {
        bytes_sent: total,
        bytes_received: total,
        messages_sent: n,
        messages_received: n,
        rounds: n,
    };
    assert_eq!(sa, expect_a);
    // Bob always receives first, then answers: a flip send→recv happens n-1 times.
    assert_eq!(
        sb,
        Stats {
            rounds: n - 1,
            ..expect_a
        }
    );
}

#[test]
fn mem_echo() {
    let (a, b) = mem_pair();
    echo_all(a, b);
}

#[test]
fn tcp_echo() {
    let (a, b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    echo_all(a, b);
}

#[test]
fn tcp_echo_direct_reads() {
    let opts = TcpOptions {
        read_ahead: None,
        ..TcpOptions::default()
    };
    let (a, b) = TcpChannel::loopback_pair(opts).unwrap();
    echo_all(a, b);
}

#[test]
fn tcp_echo_tiny_buffers() {
    for read_ahead in [None, Some(0), Some(100)] {
        let opts = TcpOptions {
            write_buffer: 0,
            read_buffer: 1,
            read_ahead,
            ..TcpOptions::default()
        };
        let (a, b) = TcpChannel::loopback_pair(opts).unwrap();
        echo_all(a, b);
    }
}

#[test]
fn sim_echo_over_mem_and_tcp() {
    let fast = LinkModel {
        bandwidth_bps: 0,
        latency: Duration::ZERO,
    };
    let (a, b) = mem_pair();
    echo_all(SimLink::new(a, fast), SimLink::new(b, fast));
    let (a, b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    echo_all(SimLink::new(a, fast), SimLink::new(b, fast));
}

#[test]
fn boxed_dyn_and_borrowed_channels() {
    let (a, b) = mem_pair();
    let mut a: Box<dyn Channel> = Box::new(a);
    let mut b = b;
    {
        // A protocol taking `&mut dyn Channel` and one taking `impl Channel` by borrow.
        fn speak(c: &mut dyn Channel) {
            c.send_value(&7u64).unwrap();
        }
        fn listen(mut c: impl Channel) -> u64 {
            c.recv_value().unwrap()
        }
        speak(a.as_mut());
        assert_eq!(listen(&mut b), 7);
    }
    let (a, b) = mem_pair();
    let a: Box<dyn Channel> = Box::new(a);
    echo_all(a, b);
}

#[test]
fn typed_helpers() {
    for (mut a, mut b) in [
        {
            let (a, b) = mem_pair();
            (
                Box::new(a) as Box<dyn Channel>,
                Box::new(b) as Box<dyn Channel>,
            )
        },
        {
            let (a, b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
            (
                Box::new(a) as Box<dyn Channel>,
                Box::new(b) as Box<dyn Channel>,
            )
        },
        {
            let o = TcpOptions {
                read_ahead: None,
                ..TcpOptions::default()
            };
            let (a, b) = TcpChannel::loopback_pair(o).unwrap();
            (
                Box::new(a) as Box<dyn Channel>,
                Box::new(b) as Box<dyn Channel>,
            )
        },
    ] {
        let blocks: Vec<u128> = (0..1000u128).map(|i| i * 0x0123_4567_89ab_cdef).collect();
        a.send_pod(&blocks).unwrap();
        a.send_value(&0xdead_beef_u64).unwrap();
        a.send(&[5u8; 32]).unwrap();
        a.send_pod(&[1u32, 2, 3]).unwrap();
        a.send_pod(&[1u32, 2, 3]).unwrap();
        a.send_pod::<u16>(&[]).unwrap();
        a.flush().unwrap();
        assert_eq!(b.recv_pod_vec::<u128>(1000).unwrap(), blocks);
        assert_eq!(b.recv_value::<u64>().unwrap(), 0xdead_beef);
        assert_eq!(b.recv_array::<32>().unwrap(), [5u8; 32]);
        let mut out = [0u32; 3];
        b.recv_pod_into(&mut out).unwrap();
        assert_eq!(out, [1, 2, 3]);
        assert_eq!(b.recv_pod_exact::<u32>(3).unwrap(), vec![1, 2, 3]);
        assert_eq!(b.recv_pod_vec::<u16>(0).unwrap(), Vec::<u16>::new());
    }
}

#[test]
fn length_errors_on_mem() {
    let (mut a, mut b) = mem_pair();
    a.send(&[0u8; 10]).unwrap();
    let mut buf = [0u8; 9];
    assert!(matches!(
        b.recv_into(&mut buf),
        Err(Error::UnexpectedLength {
            expected: 9,
            got: 10
        })
    ));
    a.send(&[0u8; 8]).unwrap();
    let mut buf = [0u8; 9];
    assert!(matches!(
        b.recv_into(&mut buf),
        Err(Error::UnexpectedLength {
            expected: 9,
            got: 8
        })
    ));
    a.send(&[0u8; 10]).unwrap();
    assert!(matches!(
        b.recv_pod_vec::<u64>(100),
        Err(Error::NotMultiple {
            len: 10,
            elem_size: 8
        })
    ));
    a.send(&[0u8; 32]).unwrap();
    assert!(matches!(
        b.recv_pod_vec::<u64>(3),
        Err(Error::FrameTooLarge { len: 32, max: 24 })
    ));
    a.send(&[0u8; 32]).unwrap();
    assert!(matches!(
        b.recv_pod_exact::<u64>(3),
        Err(Error::UnexpectedLength {
            expected: 24,
            got: 32
        })
    ));
    a.send(&[0u8; 16]).unwrap();
    assert!(matches!(
        b.recv_pod_exact::<u64>(3),
        Err(Error::UnexpectedLength {
            expected: 24,
            got: 16
        })
    ));
    a.send(&[0u8; 11]).unwrap();
    assert!(matches!(
        b.recv_max(10),
        Err(Error::FrameTooLarge { len: 11, max: 10 })
    ));
    // The in-memory channel stays in step after a rejected frame.
    a.send(b"ok").unwrap();
    assert_eq!(b.recv().unwrap(), b"ok");
}

#[test]
fn mem_timeout_and_disconnect() {
    let (a, mut b) = obliv_net::mem_pair_with_timeout(Duration::from_millis(50));
    let t0 = std::time::Instant::now();
    assert!(
        matches!(b.recv(), Err(Error::Timeout { after }) if after == Duration::from_millis(50))
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
    drop(a);
    assert!(matches!(b.recv(), Err(Error::PeerDisconnected)));
    assert!(matches!(b.send(b"x"), Err(Error::PeerDisconnected)));
}

#[test]
fn rounds_definition() {
    let (mut a, mut b) = mem_pair();
    // a: send send | recv | send | recv recv  → 2 flips send→recv.
    a.send(b"1").unwrap();
    a.send(b"2").unwrap();
    b.recv().unwrap();
    b.recv().unwrap();
    b.send(b"3").unwrap();
    a.recv().unwrap();
    a.send(b"4").unwrap();
    b.recv().unwrap();
    b.send(b"5").unwrap();
    b.send(b"6").unwrap();
    a.recv().unwrap();
    a.recv().unwrap();
    assert_eq!(a.stats().rounds, 2);
    // b: recv recv | send | recv | send send → 1 flip send→recv.
    assert_eq!(b.stats().rounds, 1);
    let s = a.stats();
    assert_eq!((s.messages_sent, s.messages_received), (3, 3));
    assert_eq!((s.bytes_sent, s.bytes_received), (3, 3));
    assert_eq!(s.total_bytes(), 6);
    // Differences of snapshots measure a sub-protocol.
    let before = a.stats();
    a.send(&[0; 100]).unwrap();
    b.recv().unwrap();
    let d = a.stats() - before;
    assert_eq!(
        d,
        Stats {
            bytes_sent: 100,
            messages_sent: 1,
            ..Stats::default()
        }
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any sequence of messages arrives intact and in order, and the counters add up.
    #[test]
    fn prop_mem_sequence(msgs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..20)) {
        let (mut a, mut b) = mem_pair();
        for m in &msgs {
            a.send(m).unwrap();
        }
        for m in &msgs {
            prop_assert_eq!(&b.recv().unwrap(), m);
        }
        let total: usize = msgs.iter().map(Vec::len).sum();
        prop_assert_eq!(b.stats().bytes_received, total as u64);
        prop_assert_eq!(a.stats().messages_sent, msgs.len() as u64);
    }

    /// The same over TCP, including messages that straddle the write buffer.
    #[test]
    fn prop_tcp_sequence(
        msgs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40_000), 0..12),
        wbuf in 0usize..100_000,
        read_ahead in prop::option::of(0usize..100_000),
    ) {
        let opts = TcpOptions { write_buffer: wbuf, read_ahead, ..TcpOptions::default() };
        let (mut a, mut b) = TcpChannel::loopback_pair(opts).unwrap();
        let expect = msgs.clone();
        let t = thread::spawn(move || {
            for m in &msgs {
                a.send(m).unwrap();
            }
            a.flush().unwrap();
        });
        for m in &expect {
            prop_assert_eq!(&b.recv().unwrap(), m);
        }
        t.join().unwrap();
    }

    /// Pod values round-trip bit for bit.
    #[test]
    fn prop_pod_roundtrip(xs in prop::collection::vec(any::<u128>(), 0..200), y in any::<[u8; 24]>()) {
        let (mut a, mut b) = mem_pair();
        a.send_pod(&xs).unwrap();
        a.send_value(&y).unwrap();
        prop_assert_eq!(b.recv_pod_exact::<u128>(xs.len()).unwrap(), xs);
        prop_assert_eq!(b.recv_value::<[u8; 24]>().unwrap(), y);
    }
}
