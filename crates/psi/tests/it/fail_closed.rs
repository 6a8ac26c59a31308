//! A session that failed stays failed: after an error every later call of the session
//! (run or split) is refused before anything is sent, whatever the protocol.
#![allow(clippy::unwrap_used)]

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::{Channel, mem_pair};
use obliv_psi::ecdh::{EcdhConfig, EcdhSession, Role};
use obliv_psi::rr22::{Rr22Config, Rr22Session, Variant};
use obliv_psi::{ErrorKind, PsiSession};

/// Runs `session` once against a peer whose first message is not a handshake (the run
/// fails), then checks that `split` is refused on a fresh channel without sending a byte.
fn split_after_failure<P: PsiSession>(mut session: P) {
    let mut rng = AesRng::from_seed([1; 16]);
    let (mut a, mut b) = mem_pair();
    b.send(b"not a handshake").unwrap();
    b.flush().unwrap();
    let items: Vec<Vec<u8>> = vec![b"x".to_vec(), b"y".to_vec()];
    let e = session.run(&mut a, &items, &mut rng).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PeerMisbehaved, "{e}");
    let (mut a2, b2) = mem_pair();
    drop(b2);
    let Err(e) = session.split(&mut a2, 2, &mut rng) else {
        panic!("{}: a failed session was split", session.protocol());
    };
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    assert_eq!(a2.stats().bytes_sent, 0, "{}", session.protocol());
}

/// ECDH: a failed session is not split into fresh children.
#[test]
fn failed_ecdh_session_is_not_split() {
    for role in [Role::Receiver, Role::Sender] {
        split_after_failure(EcdhSession::new(role, &EcdhConfig::default()).unwrap());
    }
}

/// RR22 malicious: a failed session is not split into fresh children (a cheating peer
/// caught by a check must not get a new attempt from the same session), nor is a session
/// whose split handshake failed used again.
#[test]
fn failed_malicious_rr22_session_is_not_split() {
    let cfg = Rr22Config::new(Variant::Malicious);
    for role in [Role::Receiver, Role::Sender] {
        split_after_failure(Rr22Session::new(role, &cfg).unwrap());
    }
    // A split whose handshake fails (the peer splits into another number of children).
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([2; 16]);
        let mut s = Rr22Session::new(Role::Sender, &cfg).unwrap();
        PsiSession::split(&mut s, &mut b, 3, &mut rng).unwrap_err();
        b
    });
    let mut rng = AesRng::from_seed([3; 16]);
    let mut r = Rr22Session::new(Role::Receiver, &cfg).unwrap();
    let e = PsiSession::split(&mut r, &mut a, 2, &mut rng).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Mismatch, "{e}");
    drop(t.join().unwrap());
    let (mut a2, b2) = mem_pair();
    drop(b2);
    let items: Vec<Vec<u8>> = vec![b"x".to_vec()];
    let e = r.run(&mut a2, &items, &mut rng).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    assert_eq!(a2.stats().bytes_sent, 0);
}
