//! End-to-end: two PIR servers and clients over real TCP on loopback.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use obliv_core::AesRng;
use obliv_net::{Channel, ConnectOptions, TcpChannel, TcpOptions};
use obliv_pir::{ClientLimits, Database, Error, PirClient, PirServer, ServerConfig};
use rand_core::{Rng, SeedableRng};

fn start(db: &Database, config: ServerConfig) -> [obliv_pir::ServerHandle; 2] {
    [0, 1].map(|_| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        PirServer::new(db.clone(), config.clone())
            .unwrap()
            .spawn(l)
            .unwrap()
    })
}

#[test]
fn tcp_round_trip_single_batch_it() {
    let mut rng = AesRng::from_seed([1; 16]);
    let db = Database::random(2000, 100, &mut rng).unwrap();
    let [s0, s1] = start(&db, ServerConfig::default());
    let mut c = PirClient::connect(s0.local_addr(), s1.local_addr()).unwrap();
    for _ in 0..5 {
        let i = (rng.next_u64() % 2000) as usize;
        assert_eq!(c.query(i).unwrap(), db.record(i).unwrap());
        assert_eq!(c.query_it(i).unwrap(), db.record(i).unwrap());
    }
    let idx: Vec<usize> = (0..10).map(|_| (rng.next_u64() % 2000) as usize).collect();
    for (i, r) in idx.iter().zip(c.query_batch(&idx).unwrap()) {
        assert_eq!(r, db.record(*i).unwrap());
    }
    let rec = obliv_pir::server::query(
        &s0.local_addr().to_string(),
        &s1.local_addr().to_string(),
        1999,
        None,
    )
    .unwrap();
    assert_eq!(rec, db.record(1999).unwrap());
    drop(c);
    s0.shutdown().unwrap();
    s1.shutdown().unwrap();
}

#[test]
fn concurrent_clients() {
    let mut rng = AesRng::from_seed([2; 16]);
    let db = Database::random(5000, 64, &mut rng).unwrap();
    let config = ServerConfig {
        workers: 2,
        queue_depth: 2,
        scan_threads: 2,
        ..ServerConfig::default()
    };
    let [s0, s1] = start(&db, config);
    let (a0, a1) = (s0.local_addr(), s1.local_addr());
    std::thread::scope(|s| {
        for t in 0..8u8 {
            let db = &db;
            s.spawn(move || {
                let mut c = PirClient::connect(a0, a1).unwrap();
                let mut rng = AesRng::from_seed([t; 16]);
                for _ in 0..10 {
                    let i = (rng.next_u64() % 5000) as usize;
                    assert_eq!(c.query(i).unwrap(), db.record(i).unwrap());
                }
            });
        }
    });
}

#[test]
fn hostile_requests_and_limits() {
    let mut rng = AesRng::from_seed([3; 16]);
    let db = Database::random(100, 16, &mut rng).unwrap();
    let config = ServerConfig {
        max_query_len: 1000,
        max_connections: 2,
        // Long enough that the two idle connections below still hold their slots when the third
        // arrives on a loaded machine.
        idle_timeout: Duration::from_millis(1500),
        ..ServerConfig::default()
    };
    let [s0, _s1] = start(&db, config);
    let opts = ConnectOptions {
        tcp: TcpOptions {
            read_ahead: None,
            ..TcpOptions::default()
        },
        ..ConnectOptions::default()
    };
    let mut ch = TcpChannel::connect(s0.local_addr(), &opts).unwrap();
    // A garbage key: an error response, the connection stays up.
    ch.send(&[2, 1, 2, 3]).unwrap();
    assert_eq!(ch.recv().unwrap()[0], 1);
    // An oversized request: the server reads no further and closes the connection.
    ch.send(&vec![2u8; 5000]).unwrap();
    assert!(matches!(ch.recv(), Err(obliv_net::Error::PeerDisconnected)));
    // Connection limit: two idle connections fill it, the third is told "busy". The server
    // frees the slot of the connection it just closed right after closing it, so a connection
    // made at once may still find that slot taken: each of the two shows that it holds a slot
    // by an answered info request (a refused one reads "busy" and is made again).
    let hold_a_slot = || {
        let t0 = Instant::now();
        loop {
            let mut c = TcpChannel::connect(s0.local_addr(), &opts).unwrap();
            c.send(&[1]).unwrap();
            match c.recv().unwrap()[0] {
                0 => return c,
                2 if t0.elapsed() < Duration::from_secs(5) => {
                    thread::sleep(Duration::from_millis(50));
                }
                s => panic!("status {s} after {:?}", t0.elapsed()),
            }
        }
    };
    let _c1 = hold_a_slot();
    let _c2 = hold_a_slot();
    let mut c3 = TcpChannel::connect(s0.local_addr(), &opts).unwrap();
    assert_eq!(c3.recv().unwrap(), vec![2]);
    // Idle connections are closed after the timeout.
    std::thread::sleep(Duration::from_millis(2500));
    let mut c4 = TcpChannel::connect(s0.local_addr(), &opts).unwrap();
    c4.send(&[1]).unwrap();
    assert_eq!(c4.recv().unwrap()[0], 0);
    // A client against mismatched servers is refused.
    let other = Database::random(101, 16, &mut rng).unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let s2 = PirServer::new(other, ServerConfig::default())
        .unwrap()
        .spawn(l)
        .unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let s3 = PirServer::new(db.clone(), ServerConfig::default())
        .unwrap()
        .spawn(l)
        .unwrap();
    assert!(matches!(
        PirClient::connect(s2.local_addr(), s3.local_addr()),
        Err(Error::Malformed { .. })
    ));
}

/// A raw connection that announces a 1000-byte request and sends one byte of it every 50 ms
/// (about 50 s for all of it) until told to stop or the server closes it; returns how long it
/// was served, counted from before the connection (the server's deadline starts after it, so
/// a late start of the thread does not shorten the count).
fn slow_loris(addr: std::net::SocketAddr, stop: Arc<AtomicBool>) -> thread::JoinHandle<Duration> {
    let t0 = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    thread::spawn(move || {
        let mut closed = s.write_all(&1000u64.to_le_bytes()).is_err();
        let mut r = s.try_clone().unwrap();
        r.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut buf = [0u8; 64];
        while !closed && !stop.load(Ordering::SeqCst) {
            closed = s.write_all(&[2]).is_err()
                || match r.read(&mut buf) {
                    Ok(_) => true, // EOF (or an error frame before it)
                    Err(e) => !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                };
        }
        t0.elapsed()
    })
}

/// A client that trickles its request in (never idle for the idle timeout) is disconnected at
/// the request deadline and its connection slot is free again.
#[test]
fn slow_loris_client_is_cut_off_at_the_request_deadline() {
    let mut rng = AesRng::from_seed([4; 16]);
    let db = Database::random(100, 16, &mut rng).unwrap();
    let deadline = Duration::from_secs(1);
    let config = ServerConfig {
        max_connections: 1,
        idle_timeout: Duration::from_secs(30),
        request_deadline: deadline,
        ..ServerConfig::default()
    };
    let [s0, _s1] = start(&db, config);
    let stop = Arc::new(AtomicBool::new(false));
    let loris = slow_loris(s0.local_addr(), Arc::clone(&stop));
    // It holds the only slot meanwhile.
    thread::sleep(Duration::from_millis(200));
    let opts = ConnectOptions {
        tcp: TcpOptions {
            read_ahead: None,
            ..TcpOptions::default()
        },
        ..ConnectOptions::default()
    };
    let mut busy = TcpChannel::connect(s0.local_addr(), &opts).unwrap();
    assert_eq!(busy.recv().unwrap(), vec![2], "the slot is taken");
    // Closed at the deadline, not after the 30 s idle timeout (10 s: the safety stop).
    let watchdog = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            thread::sleep(Duration::from_secs(10));
            stop.store(true, Ordering::SeqCst);
        })
    };
    let served = loris.join().unwrap();
    assert!(!stop.load(Ordering::SeqCst), "not disconnected within 10 s");
    assert!(
        served >= deadline - Duration::from_millis(250),
        "{served:?}"
    );
    assert!(served < Duration::from_secs(5), "{served:?}");
    // The slot is free again (the server's thread releases it right after closing).
    let t0 = Instant::now();
    loop {
        let mut c = TcpChannel::connect(s0.local_addr(), &opts).unwrap();
        c.send(&[1]).unwrap();
        match c.recv().unwrap()[0] {
            0 => break,
            2 if t0.elapsed() < Duration::from_secs(5) => {
                thread::sleep(Duration::from_millis(50));
            }
            s => panic!("status {s} after {:?}", t0.elapsed()),
        }
    }
    stop.store(true, Ordering::SeqCst);
    drop(watchdog);
}

/// A client whose request deadline passes while a server trickles its answer in fails with
/// the deadline error instead of waiting for the idle timeout.
#[test]
fn client_request_deadline_cuts_off_a_trickling_server() {
    let fake = |l: TcpListener| {
        thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut req = [0u8; 9];
            if s.read_exact(&mut req).is_err() {
                return;
            }
            // An info response of 41 bytes, one byte every 50 ms.
            let _ = s.write_all(&41u64.to_le_bytes());
            for _ in 0..41 {
                if s.write_all(&[0]).is_err() {
                    break;
                }
                thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let (l0, l1) = (
        TcpListener::bind("127.0.0.1:0").unwrap(),
        TcpListener::bind("127.0.0.1:0").unwrap(),
    );
    let opts = ConnectOptions {
        tcp: TcpOptions {
            read_ahead: None,
            read_timeout: Some(Duration::from_secs(30)),
            ..TcpOptions::default()
        },
        ..ConnectOptions::default()
    };
    let c0 = TcpChannel::connect(l0.local_addr().unwrap(), &opts).unwrap();
    let c1 = TcpChannel::connect(l1.local_addr().unwrap(), &opts).unwrap();
    let (f0, _f1) = (fake(l0), fake(l1));
    let limits = ClientLimits {
        request_deadline: Some(Duration::from_millis(500)),
        ..ClientLimits::default()
    };
    let t0 = Instant::now();
    let e = PirClient::with_limits(c0, c1, AesRng::from_seed([5; 16]), limits).unwrap_err();
    let dt = t0.elapsed();
    assert!(
        matches!(e, Error::Net(ref n) if n.is_deadline_exceeded()),
        "{e:?}"
    );
    assert!(
        dt >= Duration::from_millis(500) && dt < Duration::from_secs(3),
        "{dt:?}"
    );
    f0.join().unwrap();
}

/// `shutdown` returns while a client is still connected (it used to wait for every
/// connection to close: up to the request deadline for an idle one, forever for a client
/// that keeps querying), and a request sent after it is not answered.
#[test]
fn shutdown_does_not_wait_for_open_connections() {
    let mut rng = AesRng::from_seed([5; 16]);
    let db = Database::random(100, 16, &mut rng).unwrap();
    let config = ServerConfig {
        idle_timeout: Duration::from_secs(120),
        request_deadline: Duration::from_secs(120),
        ..ServerConfig::default()
    };
    let [s0, s1] = start(&db, config);
    let mut c = PirClient::connect(s0.local_addr(), s1.local_addr()).unwrap();
    assert_eq!(c.query(5).unwrap(), db.record(5).unwrap());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let t = thread::spawn(move || {
        let r = s0.shutdown().and_then(|()| s1.shutdown());
        let _ = done_tx.send(());
        r
    });
    let returned = done_rx.recv_timeout(Duration::from_secs(20));
    // The open connections close on their next request: the client sees an error, not a hang.
    let r = c.query(6);
    assert!(
        returned.is_ok(),
        "shutdown still waiting for the open connection"
    );
    t.join().unwrap().unwrap();
    assert!(r.is_err(), "{r:?}");
}
