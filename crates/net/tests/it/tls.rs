//! TLS channels and sessions: mutual TLS 1.3 with certificates made here (rcgen), the
//! refusals (another CA, expired, another host, plaintext either way) and a relay that flips
//! one byte of the TLS stream.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use obliv_net::{Channel, ConnectOptions, Error, Session, TcpChannel, TcpOptions, TlsConfig};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType,
    date_time_ymd,
};

/// A test CA.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = p.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// A party's configuration: a certificate for `host` issued by this CA, trusting `trust`.
    fn party(&self, host: &str, trust: &Ca) -> TlsConfig {
        self.party_with(host, trust, false)
    }

    fn party_with(&self, host: &str, trust: &Ca, expired: bool) -> TlsConfig {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.subject_alt_names = vec![match host.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(host.try_into().unwrap()),
        }];
        p.distinguished_name.push(DnType::CommonName, host);
        if expired {
            p.not_before = date_time_ymd(2001, 1, 1);
            p.not_after = date_time_ymd(2002, 1, 1);
        }
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        TlsConfig::from_pem(
            cert.pem().as_bytes(),
            key.serialize_pem().as_bytes(),
            trust.cert.pem().as_bytes(),
        )
        .unwrap()
    }
}

fn copts() -> ConnectOptions {
    ConnectOptions {
        deadline: Duration::from_secs(10),
        ..ConnectOptions::default()
    }
}

/// Binds one loopback listener per host (`127.0.0.x`), ephemeral ports.
fn listeners(hosts: &[&str]) -> (Vec<TcpListener>, Vec<SocketAddr>) {
    let ls: Vec<TcpListener> = hosts
        .iter()
        .map(|h| TcpListener::bind((*h, 0)).unwrap())
        .collect();
    let addrs = ls.iter().map(|l| l.local_addr().unwrap()).collect();
    (ls, addrs)
}

/// Runs a session: party `i` with `cfgs[i]` (`None`: plaintext), listening on `ls[i]`,
/// dialling `addrs`; returns every party's result of `f` or its error.
fn run_session<T: Send + 'static>(
    ls: Vec<TcpListener>,
    addrs: &[SocketAddr],
    hosts: &[&str],
    cfgs: Vec<Option<TlsConfig>>,
    f: impl Fn(Session<TcpChannel>) -> T + Send + Sync + Copy + 'static,
) -> Vec<Result<T, Error>> {
    let hosts: Vec<String> = hosts.iter().map(|h| (*h).to_string()).collect();
    let handles: Vec<_> = ls
        .into_iter()
        .zip(cfgs)
        .enumerate()
        .map(|(rank, (l, cfg))| {
            let addrs = addrs.to_vec();
            let hosts = hosts.clone();
            thread::spawn(move || {
                let s = match cfg {
                    Some(c) => Session::tls_with_listener(rank, &l, &addrs, &hosts, &c, &copts()),
                    None => Session::tcp_with_listener(rank, &l, &addrs, &copts()),
                };
                s.map(f)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Every party sends every other a 200 kB message of its rank and checks what comes back.
fn exchange(mut s: Session<TcpChannel>) -> (u64, u64) {
    let me = u8::try_from(s.rank()).unwrap();
    for (_, c) in s.channels_mut() {
        assert!(c.is_tls());
        c.send(&vec![me; 200_000]).unwrap();
    }
    s.flush_all().unwrap();
    for (j, c) in s.channels_mut() {
        let m = c.recv().unwrap();
        assert_eq!(m.len(), 200_000);
        assert!(m.iter().all(|&b| usize::from(b) == j));
    }
    let tls = s.tls_stats().unwrap();
    (s.stats().bytes_sent, tls.overhead())
}

#[test]
fn channel_pair_both_read_modes() {
    let ca = Ca::new("test CA");
    let server = ca.party("localhost", &ca);
    let client = ca.party("client.example", &ca);
    for read_ahead in [None, Some(1 << 20)] {
        let opts = TcpOptions {
            read_ahead,
            max_frame_len: 4 << 20,
            ..TcpOptions::default()
        };
        let l = TcpChannel::listen("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (sc, so) = (server.clone(), opts.clone());
        let t = thread::spawn(move || {
            let mut c = TcpChannel::accept_tls(&l, Duration::from_secs(10), &sc, so).unwrap();
            c.verify_peer_name("client.example").unwrap();
            assert!(matches!(
                c.verify_peer_name("localhost"),
                Err(Error::CertificateRefused { .. })
            ));
            for _ in 0..3 {
                let m = c.recv().unwrap();
                c.send(&m).unwrap();
            }
            // A frame over the limit is refused before allocation.
            assert!(matches!(c.recv(), Err(Error::FrameTooLarge { .. })));
            c.stats()
        });
        let o = ConnectOptions {
            tcp: opts,
            ..copts()
        };
        let mut c = TcpChannel::connect_tls(addr, "localhost", &client, &o).unwrap();
        assert!(c.peer_certificate().is_some());
        let big: Vec<u8> = (0..3_000_000u32).map(|i| i.to_le_bytes()[0]).collect();
        for m in [&b"hi"[..], &[][..], &big[..]] {
            c.send(m).unwrap();
            assert_eq!(c.recv().unwrap(), m);
        }
        // The peer stops reading at the header, so this write may fail: either is fine.
        let _ = c.send(&vec![0u8; 5 << 20]).and_then(|()| c.flush());
        let server_stats = t.join().unwrap();
        let st = c.stats();
        assert!([2 + 3_000_000, 2 + 3_000_000 + (5 << 20)].contains(&st.bytes_sent));
        assert_eq!(st.bytes_received, 2 + 3_000_000);
        assert_eq!(server_stats.bytes_received, 2 + 3_000_000);
        let tls = c.tls_stats().unwrap();
        // Handshake plus about 22 bytes per 16 KiB record.
        assert!(tls.overhead() > 1000, "{tls}");
        assert!(tls.overhead() < 20_000, "{tls}");
    }
}

#[test]
fn two_and_three_party_sessions() {
    let ca = Ca::new("test CA");
    for hosts in [
        &["127.0.0.1", "127.0.0.2"][..],
        &["127.0.0.1", "127.0.0.2", "127.0.0.3"],
    ] {
        let (ls, addrs) = listeners(hosts);
        let cfgs = hosts.iter().map(|h| Some(ca.party(h, &ca))).collect();
        for r in run_session(ls, &addrs, hosts, cfgs, exchange) {
            let (sent, overhead) = r.unwrap();
            assert_eq!(sent, 200_000 * (hosts.len() as u64 - 1));
            assert!(overhead > 0);
        }
    }
}

/// A self-signed certificate naming the IP address `host`, and its key (a pinned party's).
fn self_signed(host: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.subject_alt_names = vec![SanType::IpAddress(host.parse().unwrap())];
    let cert = p.self_signed(&key).unwrap();
    (cert, key)
}

#[test]
fn pinned_peer_certificates_instead_of_a_ca() {
    // Each party's certificate is self-signed; each trusts the other's certificate itself.
    let make = |host: &str| {
        let (cert, key) = self_signed(host);
        (cert.pem(), key.serialize_pem())
    };
    let hosts = ["127.0.0.1", "127.0.0.2"];
    let (a, b) = (make(hosts[0]), make(hosts[1]));
    let cfg = |own: &(String, String), peer: &(String, String)| {
        TlsConfig::from_pem(own.0.as_bytes(), own.1.as_bytes(), peer.0.as_bytes()).unwrap()
    };
    let (ls, addrs) = listeners(&hosts);
    let cfgs = vec![Some(cfg(&a, &b)), Some(cfg(&b, &a))];
    for r in run_session(ls, &addrs, &hosts, cfgs, exchange) {
        r.unwrap();
    }
}

/// Runs a two-party session in which party 1 has `bad`; both parties must fail with a refusal,
/// and party 0 with `expect0`.
fn refused(bad: Option<TlsConfig>, good: Option<TlsConfig>, expect: fn(&Error) -> bool) {
    let hosts = ["127.0.0.1", "127.0.0.2"];
    let (ls, addrs) = listeners(&hosts);
    let r = run_session(ls, &addrs, &hosts, vec![good, bad], |_| ());
    let e0 = r[0].as_ref().unwrap_err();
    let e1 = r[1].as_ref().unwrap_err();
    assert!(expect(e0), "party 0: {e0}");
    assert!(!e1.is_timeout(), "party 1: {e1}");
    assert!(
        matches!(
            e1,
            Error::RefusedByPeer { .. } | Error::Tls { .. } | Error::Handshake { .. }
        ) || e1.is_refusal(),
        "party 1: {e1}"
    );
}

#[test]
fn certificate_from_another_ca_is_refused() {
    let ca = Ca::new("test CA");
    let other = Ca::new("another CA");
    refused(
        Some(other.party("127.0.0.2", &ca)),
        Some(ca.party("127.0.0.1", &ca)),
        |e| matches!(e, Error::CertificateRefused { .. }),
    );
}

#[test]
fn expired_certificate_is_refused() {
    let ca = Ca::new("test CA");
    refused(
        Some(ca.party_with("127.0.0.2", &ca, true)),
        Some(ca.party("127.0.0.1", &ca)),
        |e| matches!(e, Error::CertificateRefused { reason, .. } if reason.contains("xpired")),
    );
}

#[test]
fn certificate_for_another_host_is_refused() {
    // Party 1 holds a valid certificate, but for 127.0.0.3 (say, a third party's host).
    let ca = Ca::new("test CA");
    refused(
        Some(ca.party("127.0.0.3", &ca)),
        Some(ca.party("127.0.0.1", &ca)),
        |e| matches!(e, Error::CertificateRefused { reason, .. } if reason.contains("127.0.0.2")),
    );
}

#[test]
fn accepting_party_with_wrong_host_certificate_is_refused_by_the_dialler() {
    let ca = Ca::new("test CA");
    let hosts = ["127.0.0.1", "127.0.0.2"];
    let (ls, addrs) = listeners(&hosts);
    let cfgs = vec![
        Some(ca.party("127.0.0.3", &ca)),
        Some(ca.party("127.0.0.2", &ca)),
    ];
    let r = run_session(ls, &addrs, &hosts, cfgs, |_| ());
    let e1 = r[1].as_ref().unwrap_err();
    assert!(matches!(e1, Error::CertificateRefused { .. }), "{e1}");
    let e0 = r[0].as_ref().unwrap_err();
    assert!(e0.is_refusal(), "{e0}");
}

#[test]
fn plaintext_peer_is_refused() {
    let ca = Ca::new("test CA");
    // A plaintext party dials a TLS party.
    refused(None, Some(ca.party("127.0.0.1", &ca)), |e| {
        matches!(e, Error::PlaintextPeer { .. })
    });
    // A TLS party dials a plaintext party: the plaintext party says so, and the TLS party
    // learns that the peer hung up without answering the handshake.
    let hosts = ["127.0.0.1", "127.0.0.2"];
    let (ls, addrs) = listeners(&hosts);
    let r = run_session(
        ls,
        &addrs,
        &hosts,
        vec![None, Some(ca.party("127.0.0.2", &ca))],
        |_| (),
    );
    let e0 = r[0].as_ref().unwrap_err();
    assert!(matches!(e0, Error::TlsPeer { .. }), "{e0}");
    let e1 = r[1].as_ref().unwrap_err();
    assert!(
        matches!(e1, Error::Tls { reason, .. } if reason.contains("without TLS")),
        "{e1}"
    );
}

/// Forwards `from` to `to` and back; flips one byte at offset `at` of the client→server
/// direction.
fn flipping_relay(listener: TcpListener, to: SocketAddr, at: usize) {
    let (a, _) = listener.accept().unwrap();
    let b = TcpStream::connect(to).unwrap();
    let pump = |mut r: TcpStream, mut w: TcpStream, flip: Option<usize>| {
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut seen = 0usize;
            loop {
                let n = match r.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if let Some(at) = flip
                    && (seen..seen + n).contains(&at)
                {
                    buf[at - seen] ^= 0x01;
                }
                seen += n;
                if w.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = w.shutdown(Shutdown::Write);
            let _ = r.shutdown(Shutdown::Read);
        })
    };
    let up = pump(a.try_clone().unwrap(), b.try_clone().unwrap(), Some(at));
    let down = pump(b, a, None);
    up.join().unwrap();
    down.join().unwrap();
}

#[test]
fn flipped_byte_fails_both_sides() {
    let ca = Ca::new("test CA");
    let hosts = ["127.0.0.1", "127.0.0.1"];
    // Offsets past the handshake (about 2 kB from the dialler): the flip hits a record.
    for at in [20_000, 150_000] {
        let (mut ls, mut addrs) = listeners(&hosts);
        // Party 1 dials party 0 through the relay.
        let relay = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = addrs[0];
        addrs[0] = relay.local_addr().unwrap();
        let r = thread::spawn(move || flipping_relay(relay, to, at));
        let cfgs = vec![Some(ca.party(hosts[0], &ca)), Some(ca.party(hosts[1], &ca))];
        let l1 = ls.pop().unwrap();
        let l0 = ls.pop().unwrap();
        let res = run_session(vec![l0, l1], &addrs, &hosts, cfgs, |mut s| {
            // Ping-pong of checked messages until something fails.
            let me = s.rank();
            let peer = 1 - me;
            let c = s.channel(peer).unwrap();
            for i in 0..20u8 {
                let msg = vec![i; 30_000];
                if me == 1 {
                    c.send(&msg)?;
                    let back = c.recv()?;
                    assert_eq!(back, msg, "wrong data delivered");
                } else {
                    let m = c.recv()?;
                    assert_eq!(m, msg, "wrong data delivered");
                    c.send(&m)?;
                    c.flush()?;
                }
            }
            Ok::<(), Error>(())
        });
        for (rank, r) in res.into_iter().enumerate() {
            let failed = match r {
                Err(_) | Ok(Err(_)) => true,
                Ok(Ok(())) => false,
            };
            assert!(
                failed,
                "flip at {at}: party {rank} finished without an error"
            );
        }
        r.join().unwrap();
    }
}

/// Forwards `listener`'s first connection to `to` and back; once `trickle` is set, the
/// client→server direction passes one byte every 50 ms.
fn trickling_relay(listener: TcpListener, to: SocketAddr, trickle: Arc<AtomicBool>) {
    let (a, _) = listener.accept().unwrap();
    let b = TcpStream::connect(to).unwrap();
    let pump = |mut r: TcpStream, mut w: TcpStream, trickle: Option<Arc<AtomicBool>>| {
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = match r.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let slow = trickle.as_ref().is_some_and(|t| t.load(Ordering::SeqCst));
                let ok = if slow {
                    buf[..n].iter().all(|b| {
                        thread::sleep(Duration::from_millis(50));
                        w.write_all(&[*b]).is_ok()
                    })
                } else {
                    w.write_all(&buf[..n]).is_ok()
                };
                if !ok {
                    break;
                }
            }
            let _ = w.shutdown(Shutdown::Write);
            let _ = r.shutdown(Shutdown::Read);
        })
    };
    let up = pump(
        a.try_clone().unwrap(),
        b.try_clone().unwrap(),
        Some(trickle),
    );
    let down = pump(b, a, None);
    up.join().unwrap();
    down.join().unwrap();
}

/// A TLS record that trickles in one byte every 50 ms (each socket read makes progress, no
/// plaintext comes out) is cut off by the deadline in both read modes.
#[test]
fn trickled_tls_record_meets_the_deadline() {
    let ca = Ca::new("test CA");
    let server = ca.party("localhost", &ca);
    let client = ca.party("client.example", &ca);
    for read_ahead in [None, Some(1 << 20)] {
        let opts = TcpOptions {
            read_ahead,
            read_timeout: Some(Duration::from_secs(30)),
            ..TcpOptions::default()
        };
        let l = TcpChannel::listen("127.0.0.1:0").unwrap();
        let relay = TcpListener::bind("127.0.0.1:0").unwrap();
        let (to, via) = (l.local_addr().unwrap(), relay.local_addr().unwrap());
        let trickle = Arc::new(AtomicBool::new(false));
        let tr = Arc::clone(&trickle);
        let r = thread::spawn(move || trickling_relay(relay, to, tr));
        let (sc, so) = (server.clone(), opts.clone());
        let t = thread::spawn(move || {
            TcpChannel::accept_tls(&l, Duration::from_secs(10), &sc, so).unwrap()
        });
        let o = ConnectOptions {
            tcp: opts,
            ..copts()
        };
        let mut c = TcpChannel::connect_tls(via, "localhost", &client, &o).unwrap();
        let mut s = t.join().unwrap();
        // The handshake is through; from now on the client's bytes trickle.
        trickle.store(true, Ordering::SeqCst);
        c.send(&[1u8; 1000]).unwrap();
        c.flush().unwrap();
        let t0 = Instant::now();
        s.set_deadline(Some(t0 + Duration::from_millis(500)));
        let e = s.recv().unwrap_err();
        let dt = t0.elapsed();
        assert!(e.is_deadline_exceeded(), "{read_ahead:?}: {e:?}");
        assert!(dt >= Duration::from_millis(500), "{dt:?}");
        assert!(dt < Duration::from_secs(3), "{read_ahead:?}: {dt:?}");
        drop((c, s));
        r.join().unwrap();
    }
}

/// Three parties with pinned self-signed certificates: C signs a certificate naming B's host
/// with its own (trusted) key. A must refuse it both when C dials A claiming to be B and when
/// A dials B's host and C answers (webpki took C's pinned certificate as an anchor that may
/// issue, and the name matched).
#[test]
fn a_pinned_party_cannot_sign_for_another_pinned_host() {
    let make = self_signed;
    let (a, a_key) = make("127.0.0.1");
    let (b, _) = make("127.0.0.2");
    let (c, c_key) = make("127.0.0.3");
    let forged_key = KeyPair::generate().unwrap();
    let mut fp = CertificateParams::new(Vec::<String>::new()).unwrap();
    fp.subject_alt_names = vec![SanType::IpAddress("127.0.0.2".parse().unwrap())];
    let forged = fp.signed_by(&forged_key, &c, &c_key).unwrap();
    let a_cfg = TlsConfig::from_pem(
        a.pem().as_bytes(),
        a_key.serialize_pem().as_bytes(),
        format!("{}{}", b.pem(), c.pem()).as_bytes(),
    )
    .unwrap();
    let attacker = TlsConfig::from_pem(
        format!("{}{}", forged.pem(), c.pem()).as_bytes(),
        forged_key.serialize_pem().as_bytes(),
        a.pem().as_bytes(),
    )
    .unwrap();
    let refused = |e: &Error| matches!(e, Error::CertificateRefused { reason, .. } if reason.contains("pinned"));

    // C dials A and claims B's host.
    let l = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let a_side = a_cfg.clone();
    let t = thread::spawn(move || {
        let ch =
            TcpChannel::accept_tls(&l, Duration::from_secs(20), &a_side, TcpOptions::default())
                .unwrap();
        ch.verify_peer_name("127.0.0.2")
    });
    let _c = TcpChannel::connect_tls(addr, "127.0.0.1", &attacker, &copts());
    let e = t.join().unwrap().unwrap_err();
    assert!(refused(&e), "{e}");

    // A dials B's host and C answers.
    let l = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let t = thread::spawn(move || {
        let _ = TcpChannel::accept_tls(
            &l,
            Duration::from_secs(20),
            &attacker,
            TcpOptions::default(),
        );
    });
    let e = TcpChannel::connect_tls(addr, "127.0.0.2", &a_cfg, &copts()).unwrap_err();
    assert!(refused(&e), "{e}");
    t.join().unwrap();
}
