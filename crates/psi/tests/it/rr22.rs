//! RR22 PSI against the plain intersection: sizes, edge cases, TCP, hostile messages.
#![allow(clippy::unwrap_used)]

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, TcpChannel, TcpOptions, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::rr22::{self, Rr22Config};
use obliv_psi::{Error, ErrorKind, plain_intersection};

fn items(range: std::ops::Range<u64>, tag: u8) -> Vec<Vec<u8>> {
    range
        .map(|i| {
            let mut v = i.to_le_bytes().to_vec();
            v.push(tag);
            v
        })
        .collect()
}

fn run_pair<C: Channel + 'static>(
    (mut a, mut b): (C, C),
    x: &[Vec<u8>],
    y: Vec<Vec<u8>>,
    cfg: Rr22Config,
    seed: u8,
) -> Vec<usize> {
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([seed.wrapping_add(1); 16]);
        rr22::run(&mut b, Role::Sender, &y, &cfg, &mut rng)
    });
    let mut rng = AesRng::from_seed([seed; 16]);
    let out = rr22::run(&mut a, Role::Receiver, x, &cfg, &mut rng).unwrap();
    assert!(t.join().unwrap().unwrap().is_none());
    out.unwrap()
}

fn check(x: Vec<Vec<u8>>, y: Vec<Vec<u8>>, seed: u8) {
    let expected = plain_intersection(&x, &y);
    let got = run_pair(mem_pair(), &x, y, Rr22Config::default(), seed);
    assert_eq!(got, expected);
}

#[test]
fn empty_and_single() {
    check(vec![], vec![], 1);
    check(vec![], items(0..10, 0), 2);
    check(items(0..10, 0), vec![], 3);
    check(items(0..1, 0), items(0..1, 0), 4);
    check(items(0..1, 0), items(1..2, 0), 5);
}

#[test]
fn small_sizes_against_plain() {
    // Overlap of about half, several seeds and sizes around a bin boundary.
    for (seed, (nx, ny)) in [
        (100, 100),
        (100, 37),
        (3, 1000),
        (16384, 100),
        (16385, 16383),
    ]
    .into_iter()
    .enumerate()
    {
        let nx = nx as u64;
        let x = items(0..nx, 0);
        let y = items(nx / 2..nx / 2 + ny, 0);
        check(x, y, u8::try_from(seed).unwrap() + 10);
    }
}

#[test]
fn disjoint_and_identical() {
    let x = items(0..500, 0);
    let expected: Vec<usize> = vec![];
    assert_eq!(
        run_pair(mem_pair(), &x, items(0..500, 1), Rr22Config::default(), 20),
        expected
    );
    assert_eq!(
        run_pair(mem_pair(), &x, x.clone(), Rr22Config::default(), 21),
        (0..500).collect::<Vec<_>>()
    );
}

#[test]
fn duplicates() {
    // Receiver duplicates: every index of a common item; sender duplicates sent once.
    let mut x = items(0..50, 0);
    x.extend(items(0..10, 0));
    x.extend(items(100..110, 0));
    let mut y = items(5..60, 0);
    y.extend(items(5..20, 0));
    check(x, y, 30);
}

#[test]
fn large_2_16() {
    let x = items(0..1 << 16, 0);
    let y = items(1 << 15..(1 << 16) + (1 << 15), 0);
    let expected: Vec<usize> = (1 << 15..1 << 16).collect();
    assert_eq!(
        run_pair(mem_pair(), &x, y, Rr22Config::default(), 40),
        expected
    );
}

#[test]
fn over_tcp() {
    let x = items(0..3000, 0);
    let y = items(1000..5000, 0);
    let expected = plain_intersection(&x, &y);
    let pair = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    assert_eq!(run_pair(pair, &x, y, Rr22Config::default(), 50), expected);
}

#[test]
fn bin_size_mismatch_is_rejected() {
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let cfg = Rr22Config {
            bin_size: 1 << 12,
            ..Rr22Config::default()
        };
        let mut rng = AesRng::from_seed([1; 16]);
        rr22::run(&mut b, Role::Sender, &items(0..10, 0), &cfg, &mut rng)
    });
    let mut rng = AesRng::from_seed([2; 16]);
    let err = rr22::run(
        &mut a,
        Role::Receiver,
        &items(0..10, 0),
        &Rr22Config::default(),
        &mut rng,
    )
    .unwrap_err();
    assert!(matches!(err, Error::HandshakeMismatch { .. }), "{err}");
    assert!(t.join().unwrap().is_err());
}

/// A receiver that runs the handshake and VOLE honestly, then sends `frames` instead of the
/// masked OKVS; the sender must fail with a protocol error.
fn hostile_receiver(frames: Vec<Vec<u8>>) -> Error {
    let (mut a, mut b) = mem_pair();
    let y = items(0..1000, 0);
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([3; 16]);
        rr22::run(&mut b, Role::Sender, &y, &Rr22Config::default(), &mut rng)
    });
    // Handshake as an honest receiver of 1000 items.
    let mut hello = Vec::new();
    hello.extend_from_slice(b"OBPS");
    hello.extend_from_slice(&obliv_psi::handshake::WIRE_VERSION.to_le_bytes());
    hello.extend_from_slice(&[10, 0, 0, 0]);
    hello.extend_from_slice(&(1u32 << 14).to_le_bytes());
    hello.extend_from_slice(&1000u64.to_le_bytes());
    hello.extend_from_slice(&40u64.to_le_bytes());
    a.send(&hello).unwrap();
    a.recv().unwrap();
    let m =
        obliv_okvs::BinnedPaxos::<obliv_okvs::Gf128>::new(1000, 40, obliv_core::Block(0)).unwrap();
    let m = obliv_okvs::Okvs::size(&m);
    let mut rng = AesRng::from_seed([4; 16]);
    obliv_vole::vole_receive(&mut a, m, obliv_vole::VoleConfig::default(), &mut rng).unwrap();
    for f in frames {
        a.send(&f).unwrap();
    }
    a.flush().unwrap();
    let err = t.join().unwrap().unwrap_err();
    drop(a);
    err
}

fn frame(tag: u8, index: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![tag];
    f.extend_from_slice(&index.to_le_bytes());
    f.extend_from_slice(payload);
    f
}

#[test]
fn hostile_masked_okvs_is_rejected() {
    // Wrong seed length.
    let e = hostile_receiver(vec![frame(1, 0, &[0; 15])]);
    assert!(
        matches!(e.kind(), ErrorKind::PeerMisbehaved | ErrorKind::Network),
        "{e}"
    );
    // Masked OKVS one block short.
    let e = hostile_receiver(vec![frame(1, 0, &[0; 16]), frame(2, 0, &[0; 16])]);
    assert!(
        matches!(e.kind(), ErrorKind::PeerMisbehaved | ErrorKind::Network),
        "{e}"
    );
    // Wrong tag.
    let e = hostile_receiver(vec![frame(1, 0, &[0; 16]), frame(4, 0, &[0; 64])]);
    assert!(
        matches!(e.kind(), ErrorKind::PeerMisbehaved | ErrorKind::Network),
        "{e}"
    );
}

#[test]
fn hostile_sender_count_is_rejected() {
    // A sender that claims more values than items: the receiver must fail, not allocate.
    let (mut a, mut b) = mem_pair();
    let x = items(0..100, 0);
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([5; 16]);
        rr22::run(&mut a, Role::Receiver, &x, &Rr22Config::default(), &mut rng)
    });
    let mut hello = Vec::new();
    hello.extend_from_slice(b"OBPS");
    hello.extend_from_slice(&obliv_psi::handshake::WIRE_VERSION.to_le_bytes());
    hello.extend_from_slice(&[10, 0, 1, 0]);
    hello.extend_from_slice(&(1u32 << 14).to_le_bytes());
    hello.extend_from_slice(&100u64.to_le_bytes());
    hello.extend_from_slice(&40u64.to_le_bytes());
    b.send(&hello).unwrap();
    b.recv().unwrap();
    let m =
        obliv_okvs::BinnedPaxos::<obliv_okvs::Gf128>::new(100, 40, obliv_core::Block(0)).unwrap();
    let m = obliv_okvs::Okvs::size(&m);
    let mut rng = AesRng::from_seed([6; 16]);
    obliv_vole::vole_send(&mut b, m, obliv_vole::VoleConfig::default(), &mut rng).unwrap();
    // Drain the seed and the masked OKVS.
    for _ in 0..1 + m.div_ceil(1 << 16) {
        b.recv().unwrap();
    }
    b.send(&frame(3, 0, &u64::MAX.to_le_bytes())).unwrap();
    b.flush().unwrap();
    let err = t.join().unwrap().unwrap_err();
    assert!(err.kind() == ErrorKind::PeerMisbehaved, "{err}");
}
