//! End-to-end: two PIR servers and clients over real TCP on loopback.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::net::TcpListener;
use std::time::Duration;

use obliv_core::AesRng;
use obliv_net::{Channel, ConnectOptions, TcpChannel, TcpOptions};
use obliv_pir::{Database, Error, PirClient, PirServer, ServerConfig};
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
    // Connection limit: two idle connections fill it, the third is told "busy".
    let _c1 = TcpChannel::connect(s0.local_addr(), &opts).unwrap();
    let _c2 = TcpChannel::connect(s0.local_addr(), &opts).unwrap();
    std::thread::sleep(Duration::from_millis(100));
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
