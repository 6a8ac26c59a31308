//! n-party sessions over memory and TCP.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use obliv_net::{Channel, ChannelExt, ConnectOptions, Error, Session};

/// Every party sends its rank to every other party, then sums what it receives; each party
/// also checks the per-peer counters.
fn all_to_all<C: Channel>(s: &mut Session<C>) -> u64 {
    let me = s.rank() as u64;
    for (_, c) in s.channels_mut() {
        c.send_value(&me).unwrap();
    }
    s.flush_all().unwrap();
    let mut sum = 0;
    for (j, c) in s.channels_mut() {
        let v: u64 = c.recv_value().unwrap();
        assert_eq!(v, j as u64);
        sum += v;
    }
    let st = s.stats();
    let others = (s.parties() - 1) as u64;
    assert_eq!(st.messages_sent, others);
    assert_eq!(st.bytes_received, 8 * others);
    sum
}

fn expected_sum(n: usize, rank: usize) -> u64 {
    (0..n as u64).sum::<u64>() - rank as u64
}

#[test]
fn mem_mesh_all_to_all() {
    for n in [1, 2, 3, 5] {
        let parties = Session::mem_mesh(n);
        let handles: Vec<_> = parties
            .into_iter()
            .map(|mut s| {
                thread::spawn(move || {
                    let r = s.rank();
                    assert_eq!(s.peers().count(), n - 1);
                    (r, all_to_all(&mut s))
                })
            })
            .collect();
        for h in handles {
            let (r, sum) = h.join().unwrap();
            assert_eq!(sum, expected_sum(n, r));
        }
    }
}

#[test]
fn session_accessors() {
    let mut parties = Session::mem_mesh(3);
    let s = &mut parties[1];
    assert_eq!((s.rank(), s.parties()), (1, 3));
    assert_eq!(s.peers().collect::<Vec<_>>(), vec![0, 2]);
    assert!(matches!(
        s.channel(1),
        Err(Error::NoSuchParty {
            peer: 1,
            rank: 1,
            parties: 3
        })
    ));
    assert!(s.channel(3).is_err());
    assert!(s.channel_pair(0, 0).is_err());
    assert!(s.channel_pair(0, 1).is_err());
    let (c0, c2) = s.channel_pair(0, 2).unwrap();
    c0.send(b"to 0").unwrap();
    c2.send(b"to 2").unwrap();
    assert_eq!(parties[0].channel(1).unwrap().recv().unwrap(), b"to 0");
    assert_eq!(parties[2].channel(1).unwrap().recv().unwrap(), b"to 2");
}

fn tcp_mesh(n: usize, stray: bool) {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    if stray {
        // A stranger connects to party 0 first and sends garbage; the session must ignore it.
        let mut s = TcpStream::connect(addrs[0]).unwrap();
        s.write_all(&[0xffu8; 28]).unwrap();
        // And one that speaks the format but claims a wrong party count.
        let mut s2 = TcpStream::connect(addrs[0]).unwrap();
        let mut hello = Vec::new();
        hello.extend_from_slice(&20u64.to_le_bytes());
        hello.extend_from_slice(b"OBLIVNET");
        hello.extend_from_slice(&1u32.to_le_bytes());
        hello.extend_from_slice(&1u32.to_le_bytes());
        hello.extend_from_slice(&99u32.to_le_bytes());
        s2.write_all(&hello).unwrap();
        std::mem::forget((s, s2));
    }
    let opts = ConnectOptions {
        deadline: Duration::from_secs(20),
        ..ConnectOptions::default()
    };
    let handles: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(rank, l)| {
            let addrs = addrs.clone();
            let opts = opts.clone();
            thread::spawn(move || {
                let mut s = Session::tcp_with_listener(rank, &l, &addrs, &opts).unwrap();
                assert_eq!(s.rank(), rank);
                // Handshake traffic is not counted.
                assert_eq!(s.stats().total_bytes(), 0);
                (rank, all_to_all(&mut s))
            })
        })
        .collect();
    for h in handles {
        let (r, sum) = h.join().unwrap();
        assert_eq!(sum, expected_sum(n, r));
    }
}

#[test]
fn tcp_mesh_2_3_4() {
    for n in [2, 3, 4] {
        tcp_mesh(n, false);
    }
}

#[test]
fn tcp_mesh_ignores_strangers() {
    tcp_mesh(3, true);
}

#[test]
fn tcp_session_times_out_when_a_party_is_missing() {
    // Party 0 waits for party 1, which never comes.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addrs = vec![l.local_addr().unwrap(), "127.0.0.1:9".parse().unwrap()];
    let opts = ConnectOptions {
        deadline: Duration::from_millis(200),
        ..ConnectOptions::default()
    };
    let e = Session::tcp_with_listener(0, &l, &addrs, &opts).unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
}

#[test]
fn session_map_wraps_channels() {
    use obliv_net::{LinkModel, SimLink};
    let model = LinkModel::mbps_ms(1000, 1);
    let handles: Vec<_> = Session::mem_mesh(3)
        .into_iter()
        .map(|s| {
            thread::spawn(move || {
                let mut s = s.map(|_, c| SimLink::new(c, model));
                (s.rank(), all_to_all(&mut s))
            })
        })
        .collect();
    for h in handles {
        let (r, sum) = h.join().unwrap();
        assert_eq!(sum, expected_sum(3, r));
    }
}

#[test]
fn tcp_session_binding_its_own_addresses() {
    // Reserve three loopback ports, release them, and let each party bind its own. They are
    // on 127.0.0.2: the other tests of this file, which run alongside, bind 127.0.0.1 only,
    // so none of them can take a port between its release and the party's bind.
    let addrs: Vec<SocketAddr> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.2:0").unwrap())
        .collect::<Vec<_>>()
        .iter()
        .map(|l| l.local_addr().unwrap())
        .collect();
    assert!(matches!(
        Session::tcp(3, &addrs, &ConnectOptions::default()),
        Err(Error::NoSuchParty { peer: 3, .. })
    ));
    let handles: Vec<_> = (0..3)
        .map(|rank| {
            let addrs = addrs.clone();
            thread::spawn(move || {
                let mut s = Session::tcp(rank, &addrs, &ConnectOptions::default()).unwrap();
                (rank, all_to_all(&mut s))
            })
        })
        .collect();
    for h in handles {
        let (r, sum) = h.join().unwrap();
        assert_eq!(sum, expected_sum(3, r));
    }
}

/// A client that trickles a hello into party 0's listener (a byte every 300 ms, each within
/// the idle timeout) must not hold the set-up past its deadline: the hello gets a total bound.
#[test]
fn trickling_stranger_cannot_stretch_the_set_up_past_its_deadline() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addrs = vec![l.local_addr().unwrap(), "127.0.0.1:9".parse().unwrap()];
    let addr = addrs[0];
    let trickler = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        // A hello frame's header, then its 20 bytes one at a time (6 s in all).
        s.write_all(&20u64.to_le_bytes()).unwrap();
        for _ in 0..20 {
            if s.write_all(&[0u8]).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(300));
        }
    });
    let opts = ConnectOptions {
        deadline: Duration::from_secs(2),
        ..ConnectOptions::default()
    };
    let t0 = std::time::Instant::now();
    let e = Session::tcp_with_listener(0, &l, &addrs, &opts).unwrap_err();
    let took = t0.elapsed();
    assert!(e.is_timeout(), "{e:?}");
    assert!(took < Duration::from_secs(4), "set-up held for {took:?}");
    drop(l);
    trickler.join().unwrap();
}
