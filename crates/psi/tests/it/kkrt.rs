//! KKRT16 PSI against the plain intersection, over the in-memory channel and TCP; sessions
//! with several buckets; hostile peers.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use crate::common::{Out, items, run_two};

use obliv_core::AesRng;
use obliv_net::{Channel, TcpChannel, TcpOptions, mem_pair};
use obliv_psi::ecdh::Role;
use obliv_psi::handshake::{self, Hello};
use obliv_psi::kkrt::{self, KkrtConfig, KkrtPsiReceiver, KkrtPsiSender};
use obliv_psi::{Error, ErrorKind, plain_intersection};
use rand_core::SeedableRng;

fn run_on<C: Channel + 'static>(
    pair: (C, C),
    receiver: Vec<Vec<u8>>,
    sender: Vec<Vec<u8>>,
    cfg: KkrtConfig,
) -> Out {
    run_two(pair, receiver, sender, move |ch, role, items, rng| {
        kkrt::run(ch, role, items, &cfg, rng)
    })
}

fn check(receiver: Vec<Vec<u8>>, sender: Vec<Vec<u8>>) {
    let expect = plain_intersection(&receiver, &sender);
    let (r, s) = run_on(mem_pair(), receiver, sender, KkrtConfig::default());
    assert_eq!(r.unwrap(), Some(expect));
    assert_eq!(s.unwrap(), None);
}

#[test]
fn small_sizes() {
    check(vec![], vec![]);
    check(items("a", 0..5), vec![]);
    check(vec![], items("a", 0..5));
    check(items("a", 0..1), items("a", 0..1));
    check(items("a", 0..1), items("b", 0..1));
    check(items("a", 0..2), items("a", 1..3));
    check(items("a", 0..100), items("a", 50..150));
}

#[test]
fn uneven_disjoint_identical() {
    check(items("x", 0..1000), items("x", 995..1005));
    check(items("x", 0..10), items("x", 5..1005));
    check(items("x", 0..500), items("y", 0..500));
    check(items("x", 0..500), items("x", 0..500));
}

#[test]
fn duplicates_on_both_sides() {
    let mut r = items("d", 0..200);
    r.extend(items("d", 0..50)); // receiver duplicates: every index is reported
    r.extend(items("d", 0..10));
    let mut s = items("d", 100..300);
    s.extend(items("d", 0..20)); // sender duplicates
    s.extend(items("d", 150..160));
    check(r, s);
}

#[test]
fn large_2_16() {
    let n = 1 << 16;
    check(items("L", 0..n), items("L", n / 2..n + n / 2));
}

#[test]
fn over_tcp() {
    let pair = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let (r_items, s_items) = (items("t", 0..3000), items("t", 2000..6000));
    let expect = plain_intersection(&r_items, &s_items);
    let (r, s) = run_on(pair, r_items, s_items, KkrtConfig::default());
    assert_eq!(r.unwrap(), Some(expect));
    assert_eq!(s.unwrap(), None);
}

#[test]
fn many_buckets_one_session() {
    let cfg = KkrtConfig::default();
    type Items = Vec<Vec<u8>>;
    let buckets: Vec<(Items, Items)> = (0..4)
        .map(|k| {
            let p = format!("b{k}-");
            (items(&p, 0..300 + 100 * k), items(&p, 200..700))
        })
        .collect();
    let (mut a, mut b) = mem_pair();
    let sb = buckets.clone();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([4; 16]);
        let mut s = KkrtPsiSender::setup(&mut b, &cfg, &mut rng).unwrap();
        for (_, si) in &sb {
            s.run(&mut b, si, &mut rng).unwrap();
        }
    });
    let mut rng = AesRng::from_seed([3; 16]);
    let mut r = KkrtPsiReceiver::setup(&mut a, &cfg, &mut rng).unwrap();
    for (ri, si) in &buckets {
        assert_eq!(
            r.run(&mut a, ri, &mut rng).unwrap(),
            plain_intersection(ri, si)
        );
    }
    t.join().unwrap();
}

#[test]
fn split_sessions() {
    let cfg = KkrtConfig::default();
    let (mut a, mut b) = mem_pair();
    let ((mut c1, mut d1), (mut c2, mut d2)) = (mem_pair(), mem_pair());
    let (r0, s0) = (items("q", 0..400), items("q", 300..900));
    let (r1, s1) = (items("z", 0..100), items("z", 50..60));
    let (s0c, s1c) = (s0.clone(), s1.clone());
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([6; 16]);
        let mut s = KkrtPsiSender::setup(&mut b, &cfg, &mut rng).unwrap();
        let (mut x, mut y) = (s.split(), s.split());
        let h = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([7; 16]);
            x.run(&mut d1, &s0c, &mut rng).unwrap();
        });
        y.run(&mut d2, &s1c, &mut rng).unwrap();
        h.join().unwrap();
        s.run(&mut b, &s1c, &mut rng).unwrap();
    });
    let mut rng = AesRng::from_seed([5; 16]);
    let mut r = KkrtPsiReceiver::setup(&mut a, &cfg, &mut rng).unwrap();
    let (mut x, mut y) = (r.split(), r.split());
    let (r0c, s0c) = (r0.clone(), s0.clone());
    let h = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([8; 16]);
        let got = x.run(&mut c1, &r0c, &mut rng).unwrap();
        assert_eq!(got, plain_intersection(&r0c, &s0c));
    });
    assert_eq!(
        y.run(&mut c2, &r1, &mut rng).unwrap(),
        plain_intersection(&r1, &s1)
    );
    h.join().unwrap();
    assert_eq!(
        r.run(&mut a, &r1, &mut rng).unwrap(),
        plain_intersection(&r1, &s1)
    );
    t.join().unwrap();
}

fn bucket_hello(role: u8, n: u64) -> Hello {
    Hello {
        protocol: kkrt::PROTOCOL_ID,
        curve: 0,
        role,
        flags: 0,
        batch: 0,
        n_items: n,
        // The bucket stage (2) above the statistical security parameter (40).
        param: 40 | 2 << 8,
    }
}

/// A sender session whose peer is scripted by `script` (after the genuine setup).
fn sender_against(script: impl FnOnce(&mut obliv_net::MemChannel) + Send + 'static) -> Error {
    let cfg = KkrtConfig::default();
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([9; 16]);
        let r = KkrtPsiReceiver::setup(&mut a, &cfg, &mut rng).unwrap();
        script(&mut a);
        drop(r);
        a
    });
    let mut rng = AesRng::from_seed([10; 16]);
    let mut s = KkrtPsiSender::setup(&mut b, &cfg, &mut rng).unwrap();
    let err = s.run(&mut b, &items("h", 0..100), &mut rng).unwrap_err();
    drop(b);
    let _ = t.join();
    err
}

#[test]
fn hostile_receiver_messages_are_errors() {
    let names = |_: &'static str, v: u8| v.to_string();
    // Announces too many items.
    let e = sender_against(move |a| {
        handshake::exchange(a, &bucket_hello(0, u64::MAX), 1, names).unwrap();
    });
    assert!(e.kind() == ErrorKind::PeerMisbehaved, "{e}");
    // A table message of the wrong length.
    let e = sender_against(move |a| {
        handshake::exchange(a, &bucket_hello(0, 100), 1, names).unwrap();
        a.send(&[0u8; 23]).unwrap();
    });
    assert!(e.kind() == ErrorKind::PeerMisbehaved, "{e}");
    // Too many bins (would make the sender allocate 64 bytes per bin).
    let e = sender_against(move |a| {
        handshake::exchange(a, &bucket_hello(0, 100), 1, names).unwrap();
        let mut m = [0u8; 24];
        m[16..].copy_from_slice(&(1u64 << 40).to_le_bytes());
        a.send(&m).unwrap();
    });
    assert!(e.kind() == ErrorKind::PeerMisbehaved, "{e}");
    // Fewer bins than items.
    let e = sender_against(move |a| {
        handshake::exchange(a, &bucket_hello(0, 100), 1, names).unwrap();
        let mut m = [0u8; 24];
        m[16..].copy_from_slice(&50u64.to_le_bytes());
        a.send(&m).unwrap();
    });
    assert!(e.kind() == ErrorKind::PeerMisbehaved, "{e}");
    // A short OPRF message.
    let e = sender_against(move |a| {
        handshake::exchange(a, &bucket_hello(0, 100), 1, names).unwrap();
        let mut m = [0u8; 24];
        m[16..].copy_from_slice(&200u64.to_le_bytes());
        a.send(&m).unwrap();
        a.send(&[0u8; 64]).unwrap();
    });
    assert!(matches!(e, Error::Net(_)), "{e}");
}

#[test]
fn hostile_sender_messages_are_errors() {
    let cfg = KkrtConfig::default();
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([11; 16]);
        let mut s = KkrtPsiSender::setup(&mut b, &cfg, &mut rng).unwrap();
        let names = |_: &'static str, v: u8| v.to_string();
        handshake::exchange(&mut b, &bucket_hello(1, 100), 0, names).unwrap();
        // Play the OPRF honestly, then send a set frame of the wrong size.
        let _ = b.recv().unwrap(); // table
        let _ = &mut s;
        let _ = b.recv(); // OPRF columns
        b.send(&[0u8; 7]).unwrap();
        b.flush().unwrap();
        b
    });
    let mut rng = AesRng::from_seed([12; 16]);
    let mut r = KkrtPsiReceiver::setup(&mut a, &cfg, &mut rng).unwrap();
    let err = r.run(&mut a, &items("h", 0..100), &mut rng).unwrap_err();
    assert!(err.kind() == ErrorKind::PeerMisbehaved, "{err}");
    drop(t.join().unwrap());
}

/// A failed run ends a standalone session: the two OPRFs may be out of step (here the
/// receiver's OPRF finished the bucket, the peer's stream then broke), so the next run, and
/// a session split from it, are refused before anything is sent, instead of running on
/// OPRF instances that no longer match the peer's.
#[test]
fn a_failed_run_ends_the_standalone_sessions() {
    let cfg = KkrtConfig::default();
    // The receiver: a sender that plays the OPRF, then sends a set frame of the wrong size.
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([13; 16]);
        let s = KkrtPsiSender::setup(&mut b, &cfg, &mut rng).unwrap();
        let names = |_: &'static str, v: u8| v.to_string();
        handshake::exchange(&mut b, &bucket_hello(1, 100), 0, names).unwrap();
        let _ = b.recv().unwrap(); // table
        let _ = b.recv(); // OPRF columns
        b.send(&[0u8; 7]).unwrap();
        b.flush().unwrap();
        drop(s);
        b
    });
    let mut rng = AesRng::from_seed([14; 16]);
    let mut r = KkrtPsiReceiver::setup(&mut a, &cfg, &mut rng).unwrap();
    r.run(&mut a, &items("h", 0..100), &mut rng).unwrap_err();
    drop(t.join().unwrap());
    let (mut a2, b2) = mem_pair();
    drop(b2);
    let e = r.run(&mut a2, &items("h", 0..100), &mut rng).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    let e = r
        .split()
        .run(&mut a2, &items("h", 0..100), &mut rng)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    assert_eq!(a2.stats().bytes_sent, 0);

    // The sender: a receiver that announces fewer bins than items.
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([15; 16]);
        let r = KkrtPsiReceiver::setup(&mut a, &cfg, &mut rng).unwrap();
        let names = |_: &'static str, v: u8| v.to_string();
        handshake::exchange(&mut a, &bucket_hello(0, 100), 1, names).unwrap();
        let mut m = [0u8; 24];
        m[16..].copy_from_slice(&50u64.to_le_bytes());
        a.send(&m).unwrap();
        a.flush().unwrap();
        drop(r);
        a
    });
    let mut rng = AesRng::from_seed([16; 16]);
    let mut s = KkrtPsiSender::setup(&mut b, &cfg, &mut rng).unwrap();
    s.run(&mut b, &items("h", 0..100), &mut rng).unwrap_err();
    drop(t.join().unwrap());
    let (mut b2, a2) = mem_pair();
    drop(a2);
    let e = s.run(&mut b2, &items("h", 0..100), &mut rng).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    let e = s
        .split()
        .run(&mut b2, &items("h", 0..100), &mut rng)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    assert_eq!(b2.stats().bytes_sent, 0);
}

/// A split whose handshake fails ends the session: the peer may have split its OPRF while
/// this side did not, so later children (or runs) would not correlate with the peer's.
#[test]
fn a_failed_split_ends_the_session() {
    use obliv_psi::PsiSession;
    use obliv_psi::kkrt::KkrtSession;
    let cfg = KkrtConfig::default();
    let (mut a, mut b) = mem_pair();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([17; 16]);
        let mut s = KkrtSession::new(Role::Sender, &cfg).unwrap();
        // Splits into 3 children where the receiver splits into 2.
        s.split(&mut b, 3, &mut rng).unwrap_err();
        b
    });
    let mut rng = AesRng::from_seed([18; 16]);
    let mut r = KkrtSession::new(Role::Receiver, &cfg).unwrap();
    let e = r.split(&mut a, 2, &mut rng).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Mismatch, "{e}");
    drop(t.join().unwrap());
    let (mut a2, b2) = mem_pair();
    drop(b2);
    let e = r.run(&mut a2, &items("h", 0..10), &mut rng).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    let e = r.split(&mut a2, 2, &mut rng).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    assert_eq!(a2.stats().bytes_sent, 0);
}

#[test]
fn role_and_protocol_mismatch() {
    let (mut a, mut b) = mem_pair();
    let cfg = KkrtConfig::default();
    let t = std::thread::spawn(move || {
        kkrt::run(
            &mut b,
            Role::Receiver,
            &items("a", 0..3),
            &cfg,
            &mut AesRng::from_seed([1; 16]),
        )
    });
    let r = kkrt::run(
        &mut a,
        Role::Receiver,
        &items("a", 0..3),
        &cfg,
        &mut AesRng::from_seed([2; 16]),
    );
    assert!(matches!(
        r,
        Err(Error::HandshakeMismatch { field: "role", .. })
    ));
    assert!(t.join().unwrap().is_err());
    let bad = KkrtConfig {
        cuckoo_factor: Some(0.9),
        ..cfg
    };
    let (mut a, _b) = mem_pair();
    let r = kkrt::run(
        &mut a,
        Role::Sender,
        &items("a", 0..3),
        &bad,
        &mut AesRng::from_seed([2; 16]),
    );
    assert!(matches!(r, Err(Error::InvalidParameter(_))));
}

/// CPU time of the calling thread in seconds (`/proc/thread-self/schedstat`, Linux).
fn thread_cpu() -> f64 {
    obliv_core::cpu_time::thread().map_or(0.0, |d| d.as_secs_f64())
}

/// Figures at `OBLIV_KKRT_N` items per side (default 2^20), half of them common: CPU time of
/// each party's thread, bytes each way, and the process's peak RSS (both parties).
/// `cargo test -p obliv-psi --test it -- --ignored --nocapture kkrt::measure`
#[test]
#[ignore]
fn measure() {
    let n: usize = std::env::var("OBLIV_KKRT_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 20);
    let (r_items, s_items) = (items("m", 0..n), items("m", n / 2..n + n / 2));
    // The factor of the published KKRT16 / SecretFlow figures these are compared with.
    let cfg = KkrtConfig {
        cuckoo_factor: Some(1.27),
        ..KkrtConfig::default()
    };
    let (mut a, mut b) = mem_pair();
    let wall = std::time::Instant::now();
    let t = std::thread::spawn(move || {
        let c0 = thread_cpu();
        let out = kkrt::run(
            &mut b,
            Role::Sender,
            &s_items,
            &cfg,
            &mut AesRng::from_seed([2; 16]),
        );
        (out, thread_cpu() - c0, b.stats().bytes_sent)
    });
    let c0 = thread_cpu();
    let got = kkrt::run(
        &mut a,
        Role::Receiver,
        &r_items,
        &cfg,
        &mut AesRng::from_seed([1; 16]),
    )
    .unwrap()
    .unwrap();
    let r_cpu = thread_cpu() - c0;
    let (s_out, s_cpu, s_bytes) = t.join().unwrap();
    assert!(s_out.unwrap().is_none());
    let wall = wall.elapsed().as_secs_f64();
    assert_eq!(got, (n / 2..n).collect::<Vec<_>>());
    let hwm = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or("VmHWM: ?")
        .to_string();
    println!(
        "kkrt16 n={n}: receiver cpu {r_cpu:.3} s, sender cpu {s_cpu:.3} s, wall {wall:.3} s; \
         receiver sent {} B, sender sent {s_bytes} B; process {hwm} (both parties, inputs included)",
        a.stats().bytes_sent
    );
}

fn proc_status(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .map_or_else(
            || format!("{key} ?"),
            |l| l.split_whitespace().collect::<Vec<_>>().join(" "),
        )
}

/// One party in its own process over TCP, for per-party CPU time and peak memory:
/// `OBLIV_KKRT_PARTY=receiver` (listens on `OBLIV_KKRT_PORT`, default 47811) and
/// `OBLIV_KKRT_PARTY=sender` (connects), each running
/// `cargo test -p obliv-psi --test it -- --ignored --nocapture kkrt::party`, `OBLIV_KKRT_N` items
/// per side (default 2^20), half of them common.
#[test]
#[ignore]
fn party() {
    let Ok(role) = std::env::var("OBLIV_KKRT_PARTY") else {
        return;
    };
    let n: usize = std::env::var("OBLIV_KKRT_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 20);
    let port: u16 = std::env::var("OBLIV_KKRT_PORT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(47811);
    // The factor of the published KKRT16 / SecretFlow figures these are compared with.
    let cfg = KkrtConfig {
        cuckoo_factor: Some(1.27),
        ..KkrtConfig::default()
    };
    let (role, mine, stream) = if role == "receiver" {
        let l = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        (Role::Receiver, items("m", 0..n), l.accept().unwrap().0)
    } else {
        let mine = items("m", n / 2..n + n / 2);
        let mut s = None;
        for _ in 0..600 {
            if let Ok(c) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                s = Some(c);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        (Role::Sender, mine, s.unwrap())
    };
    let base = proc_status("VmRSS");
    let mut ch = TcpChannel::from_stream(stream, TcpOptions::default()).unwrap();
    let c0 = thread_cpu();
    let out = kkrt::run(&mut ch, role, &mine, &cfg, &mut AesRng::from_seed([1; 16])).unwrap();
    let cpu = thread_cpu() - c0;
    if let Some(out) = &out {
        assert_eq!(out, &(n / 2..n).collect::<Vec<_>>());
    }
    println!(
        "kkrt16 {role:?} n={n}: cpu {cpu:.3} s, sent {} B, received {} B; before the run {base}, peak {}",
        ch.stats().bytes_sent,
        ch.stats().bytes_received,
        proc_status("VmHWM")
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]

    /// Random small sets (with duplicates and any overlap) give the plain intersection.
    #[test]
    fn matches_plain_intersection(
        r in proptest::collection::vec(0u16..300, 0..120),
        s in proptest::collection::vec(0u16..300, 0..120),
    ) {
        let enc = |v: &[u16]| v.iter().map(|x| x.to_le_bytes().to_vec()).collect::<Vec<_>>();
        let (r, s) = (enc(&r), enc(&s));
        let expect = plain_intersection(&r, &s);
        let (got, none) = run_on(mem_pair(), r, s, KkrtConfig::default());
        proptest::prop_assert_eq!(got.unwrap(), Some(expect));
        proptest::prop_assert_eq!(none.unwrap(), None);
    }
}
