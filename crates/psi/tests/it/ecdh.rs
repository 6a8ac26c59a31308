//! Two-party ECDH-PSI against the plain intersection, over the in-memory channel and TCP.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use crate::common::{Out, items, run_two};

use obliv_core::AesRng;
use obliv_ec::Curve;
use obliv_net::{Channel, ChannelExt, TcpChannel, TcpOptions, mem_pair};
use obliv_psi::ecdh::{self, EcdhConfig, Role};
use obliv_psi::{Error, plain_intersection};
use rand_core::SeedableRng;

fn run_on<C: Channel + 'static>(
    pair: (C, C),
    receiver: Vec<Vec<u8>>,
    sender: Vec<Vec<u8>>,
    cfg: EcdhConfig,
) -> Out {
    run_two(pair, receiver, sender, move |ch, role, items, rng| {
        ecdh::run(ch, role, items, &cfg, rng)
    })
}

fn check(receiver: Vec<Vec<u8>>, sender: Vec<Vec<u8>>, cfg: EcdhConfig) {
    let expect_r = plain_intersection(&receiver, &sender);
    let expect_s = plain_intersection(&sender, &receiver);
    let (r, s) = run_on(mem_pair(), receiver, sender, cfg);
    assert_eq!(r.unwrap(), Some(expect_r));
    assert_eq!(
        s.unwrap(),
        if cfg.broadcast { Some(expect_s) } else { None }
    );
}

fn small(curve: Curve, batch: usize, broadcast: bool) -> EcdhConfig {
    EcdhConfig {
        curve,
        batch_size: batch,
        window: 2,
        broadcast,
        ..EcdhConfig::default()
    }
}

#[test]
fn edge_sizes_and_batch_boundaries() {
    let cfg = small(Curve::Curve25519, 16, true);
    check(vec![], vec![], cfg);
    check(vec![], items("x", 0..5), cfg);
    check(items("x", 0..5), vec![], cfg);
    check(items("x", 0..1), items("x", 0..1), cfg);
    for n in [15, 16, 17, 33] {
        check(items("x", 0..n), items("x", n / 2..n + 7), cfg);
    }
}

#[test]
fn disjoint_identical_unbalanced_duplicates() {
    let cfg = small(Curve::Curve25519, 64, false);
    check(items("a", 0..100), items("b", 0..100), cfg);
    check(items("a", 0..100), items("a", 0..100), cfg);
    check(items("a", 0..1000), items("a", 990..1003), cfg);
    check(items("a", 995..1000), items("a", 0..1000), cfg);
    let mut dup = items("a", 0..50);
    dup.extend(items("a", 10..20));
    let mut other = items("a", 15..60);
    other.extend(items("a", 15..25));
    check(
        dup.clone(),
        other.clone(),
        small(Curve::Curve25519, 7, true),
    );
    check(other, dup, small(Curve::Curve25519, 7, true));
}

#[test]
fn every_curve() {
    for curve in [
        Curve::Curve25519,
        Curve::Ristretto255,
        Curve::Secp256k1,
        Curve::P256,
        Curve::Sm2,
    ] {
        check(
            items("c", 0..40),
            items("c", 20..70),
            small(curve, 16, true),
        );
    }
}

#[test]
fn default_batch_with_many_items() {
    check(
        items("m", 0..10_000),
        items("m", 5_000..15_000),
        EcdhConfig::default(),
    );
}

#[test]
fn over_tcp() {
    let pair = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let (receiver, sender) = (items("t", 0..3000), items("t", 1000..5000));
    let expect = plain_intersection(&receiver, &sender);
    let cfg = EcdhConfig {
        batch_size: 512,
        ..EcdhConfig::default()
    };
    let (r, s) = run_on(pair, receiver, sender, cfg);
    assert_eq!(r.unwrap(), Some(expect));
    assert_eq!(s.unwrap(), None);
}

#[test]
fn handshake_mismatch_is_reported_on_both_sides() {
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let cfg = small(Curve::P256, 16, false);
        ecdh::run(
            &mut b,
            Role::Sender,
            &items("x", 0..4),
            &cfg,
            &mut AesRng::from_seed([2; 16]),
        )
    });
    let cfg = small(Curve::Curve25519, 16, false);
    let r = ecdh::run(
        &mut a,
        Role::Receiver,
        &items("x", 0..4),
        &cfg,
        &mut AesRng::from_seed([1; 16]),
    );
    assert!(
        matches!(r, Err(Error::HandshakeMismatch { field: "curve", .. })),
        "{r:?}"
    );
    assert!(matches!(
        t.join().unwrap(),
        Err(Error::HandshakeMismatch { .. })
    ));

    // Both think they are the receiver.
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        ecdh::run(
            &mut b,
            Role::Receiver,
            &items("x", 0..4),
            &cfg,
            &mut AesRng::from_seed([2; 16]),
        )
    });
    let r = ecdh::run(
        &mut a,
        Role::Receiver,
        &items("x", 0..4),
        &cfg,
        &mut AesRng::from_seed([1; 16]),
    );
    assert!(
        matches!(r, Err(Error::HandshakeMismatch { field: "role", .. })),
        "{r:?}"
    );
    assert!(t.join().unwrap().is_err());
}

/// A hostile sender: completes the handshake honestly (by running a real sender on a
/// scripted channel is overkill), then sends bytes that are not curve points, or a short batch.
#[test]
fn hostile_sender_messages_are_errors() {
    for attack in 0..3 {
        let (mut a, mut b) = mem_pair();
        let t = std::thread::spawn(move || {
            // Play the sender's handshake by replaying what a real sender would send.
            let hello = b.recv().unwrap();
            let mut mine = hello.clone();
            mine[8] = 1; // role: sender
            b.send(&mine).unwrap();
            let _ = b.recv(); // the receiver's first masked batch
            let frame: Vec<u8> = match attack {
                // Tag "masked", batch 0, 4 points of garbage.
                0 => [vec![1u8, 0, 0, 0, 0], vec![0xffu8; 4 * 32]].concat(),
                // A masked batch one point short.
                1 => [vec![1u8, 0, 0, 0, 0], vec![0u8; 3 * 32]].concat(),
                // A frame of an unknown kind.
                _ => vec![9u8, 0, 0, 0, 0],
            };
            b.send(&frame).unwrap();
            b.flush().unwrap();
            // Keep the channel open until the receiver has given up.
            let _ = b.recv_value::<u8>();
        });
        let cfg = small(Curve::Curve25519, 4, false);
        let r = ecdh::run(
            &mut a,
            Role::Receiver,
            &items("x", 0..4),
            &cfg,
            &mut AesRng::from_seed([1; 16]),
        );
        assert!(r.is_err(), "attack {attack} was accepted");
        drop(a);
        t.join().unwrap();
    }
}
