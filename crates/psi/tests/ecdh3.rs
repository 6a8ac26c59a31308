//! Three-party ECDH-PSI against the plain three-way intersection.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

mod common;
use common::items;

use std::collections::HashSet;

use obliv_core::AesRng;
use obliv_ec::Curve;
use obliv_net::{Channel, Session};
use obliv_psi::ecdh::EcdhConfig;
use obliv_psi::{Error, ecdh3};
use rand_core::SeedableRng;

fn expected(sets: &[Vec<Vec<u8>>; 3], receiver: usize) -> Vec<usize> {
    let others: Vec<HashSet<&Vec<u8>>> = (0..3)
        .filter(|&r| r != receiver)
        .map(|r| sets[r].iter().collect())
        .collect();
    (0..sets[receiver].len())
        .filter(|&j| others.iter().all(|s| s.contains(&sets[receiver][j])))
        .collect()
}

fn run_mesh<C: Channel + 'static>(
    sessions: Vec<Session<C>>,
    sets: &[Vec<Vec<u8>>; 3],
    receiver: usize,
    cfgs: [EcdhConfig; 3],
) -> Vec<Result<Option<Vec<usize>>, Error>> {
    let handles: Vec<_> = sessions
        .into_iter()
        .zip(sets.iter().cloned())
        .zip(cfgs)
        .map(|((mut s, set), cfg)| {
            std::thread::spawn(move || {
                let seed = [u8::try_from(s.rank()).unwrap() + 1; 16];
                ecdh3::run(&mut s, receiver, &set, &cfg, &mut AesRng::from_seed(seed))
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn check(sets: [Vec<Vec<u8>>; 3], receiver: usize, batch: usize) {
    let cfg = EcdhConfig {
        batch_size: batch,
        ..EcdhConfig::default()
    };
    let out = run_mesh(Session::mem_mesh(3), &sets, receiver, [cfg; 3]);
    for (r, o) in out.into_iter().enumerate() {
        let o = o.unwrap();
        if r == receiver {
            assert_eq!(o, Some(expected(&sets, receiver)), "receiver {receiver}");
        } else {
            assert_eq!(o, None);
        }
    }
}

#[test]
fn three_way_intersections() {
    for receiver in 0..3 {
        check(
            [items("x", 0..60), items("x", 30..100), items("x", 20..50)],
            receiver,
            16,
        );
    }
    check([vec![], items("x", 0..10), items("x", 0..10)], 0, 4);
    check([items("x", 0..10), vec![], items("x", 0..10)], 0, 4);
    check(
        [items("a", 0..17), items("b", 0..17), items("c", 0..17)],
        1,
        4,
    );
    let mut dup = items("x", 0..20);
    dup.extend(items("x", 5..10));
    check([dup, items("x", 0..9), items("x", 3..40)], 0, 3);
    check(
        [
            items("m", 0..5000),
            items("m", 2500..7500),
            items("m", 0..5000),
        ],
        2,
        4096,
    );
}

#[test]
fn over_tcp() {
    let listeners: Vec<_> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs: Vec<_> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    let opts = obliv_net::ConnectOptions::default();
    let sessions: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = listeners
            .iter()
            .enumerate()
            .map(|(r, l)| {
                let (addrs, opts) = (addrs.clone(), opts.clone());
                s.spawn(move || Session::tcp_with_listener(r, l, &addrs, &opts).unwrap())
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let sets = [
        items("t", 0..2000),
        items("t", 500..3000),
        items("t", 1000..1500),
    ];
    let cfg = EcdhConfig {
        batch_size: 256,
        ..EcdhConfig::default()
    };
    let out = run_mesh(sessions, &sets, 0, [cfg; 3]);
    assert_eq!(out[0].as_ref().unwrap(), &Some(expected(&sets, 0)));
}

#[test]
fn curve_mismatch_and_broadcast_are_errors() {
    let sets = [items("x", 0..5), items("x", 0..5), items("x", 0..5)];
    let a = EcdhConfig {
        batch_size: 4,
        ..EcdhConfig::default()
    };
    let b = EcdhConfig {
        curve: Curve::P256,
        ..a
    };
    let out = run_mesh(Session::mem_mesh(3), &sets, 0, [a, a, b]);
    assert!(out[2].is_err());
    assert!(out.iter().filter(|o| o.is_err()).count() >= 2);
    let bc = EcdhConfig {
        broadcast: true,
        ..a
    };
    let mut s = Session::mem_mesh(3).into_iter().next().unwrap();
    let r = ecdh3::run(&mut s, 0, &sets[0], &bc, &mut AesRng::from_seed([1; 16]));
    assert!(matches!(r, Err(Error::InvalidParameter(_))));
}
