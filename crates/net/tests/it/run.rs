//! The thread runners for protocol tests.

use std::time::{Duration, Instant};

use obliv_net::{Channel, ChannelExt, Error, Session, run_mem, run_pair, run_parties, run_tcp};

#[test]
fn both_results_come_back() {
    let (a, b) = run_mem(
        |c| {
            c.send_value(&21u64).unwrap();
            c.recv_value::<u64>().unwrap()
        },
        |c| {
            let v: u64 = c.recv_value().unwrap();
            c.send_value(&(2 * v)).unwrap();
            c.stats()
        },
    );
    assert_eq!(a, 42);
    assert_eq!(b.messages_received, 1);
    let (x, y) = run_tcp(
        |c| c.send(b"over tcp").map(|()| c.stats().bytes_sent),
        |c| c.recv(),
    )
    .unwrap();
    assert_eq!(x.unwrap(), 8);
    assert_eq!(y.unwrap(), b"over tcp");
}

#[test]
fn a_party_that_gives_up_frees_the_other() {
    // `b` returns at once; `a` must learn of it well before its 60 s timeout.
    let t0 = Instant::now();
    let (ra, ()) = run_mem(|c| c.recv(), |_| ());
    assert!(matches!(ra, Err(Error::PeerDisconnected)));
    let (ra, ()) = run_tcp(|c| c.recv(), |_| ()).unwrap();
    assert!(matches!(ra, Err(Error::PeerDisconnected)));
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
#[should_panic(expected = "party b failed")]
fn panics_propagate() {
    run_pair(
        obliv_net::mem_pair(),
        |c| {
            let _ = c.recv();
        },
        |_| panic!("party b failed"),
    );
}

#[test]
fn parties_in_rank_order() {
    let out = run_parties(Session::mem_mesh(4), |s| (s.rank(), s.parties()));
    assert_eq!(out, vec![(0, 4), (1, 4), (2, 4), (3, 4)]);
}
