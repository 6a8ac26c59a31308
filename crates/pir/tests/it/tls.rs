//! PIR over TLS 1.3: two servers and a client with certificates made here (rcgen). The right
//! record; a plaintext client, a client certificate from another CA and a server certificate
//! for another host are each refused before any query.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, TcpListener};

use obliv_core::AesRng;
use obliv_net::TlsConfig;
use obliv_pir::{Database, Error, PirClient, PirServer, ServerConfig};
use rand_core::SeedableRng;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};

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
        let cert = p.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// A configuration with a certificate for `ip` issued by this CA, trusting `trust`.
    fn config(&self, ip: &str, trust: &Ca) -> TlsConfig {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.subject_alt_names = vec![SanType::IpAddress(ip.parse::<IpAddr>().unwrap())];
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        TlsConfig::from_pem(
            cert.pem().as_bytes(),
            key.serialize_pem().as_bytes(),
            trust.cert.pem().as_bytes(),
        )
        .unwrap()
    }
}

/// Two TLS servers on 127.0.0.1 with certificates of `ca`.
fn start(db: &Database, ca: &Ca) -> [obliv_pir::ServerHandle; 2] {
    [0, 1].map(|_| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let config = ServerConfig {
            tls: Some(ca.config("127.0.0.1", ca)),
            ..ServerConfig::default()
        };
        PirServer::new(db.clone(), config)
            .unwrap()
            .spawn(l)
            .unwrap()
    })
}

#[test]
fn queries_over_mutual_tls_and_refusals() {
    let mut rng = AesRng::from_seed([7; 16]);
    let db = Database::random(500, 48, &mut rng).unwrap();
    let ca = Ca::new("PIR CA");
    let [s0, s1] = start(&db, &ca);
    let (a0, a1) = (s0.local_addr(), s1.local_addr());
    let hosts = ["127.0.0.1", "127.0.0.1"];

    let client = ca.config("127.0.0.1", &ca);
    let mut c = PirClient::connect_tls([a0, a1], hosts, &client).unwrap();
    for i in [0, 17, 499] {
        assert_eq!(c.query(i).unwrap(), db.record(i).unwrap());
    }
    let idx = [3, 9, 400];
    for (i, r) in idx.iter().zip(c.query_batch(&idx).unwrap()) {
        assert_eq!(r, db.record(*i).unwrap());
    }
    let rec = obliv_pir::server::query(&a0.to_string(), &a1.to_string(), 123, Some(&client));
    assert_eq!(rec.unwrap(), db.record(123).unwrap());

    // A plaintext client: the server refuses it (the client sees a network error).
    let r = PirClient::connect(a0, a1);
    assert!(matches!(r, Err(Error::Net(_))), "{r:?}");
    // A client certificate from another CA is refused by the servers.
    let other = Ca::new("another CA");
    let r = PirClient::connect_tls([a0, a1], hosts, &other.config("127.0.0.1", &ca));
    assert!(matches!(r, Err(Error::Net(_))), "{r:?}");
    // The servers' certificates name 127.0.0.1: a client dialling them as another host refuses.
    let r = PirClient::connect_tls([a0, a1], ["127.0.0.2", "127.0.0.2"], &client);
    assert!(matches!(r, Err(Error::Net(_))), "{r:?}");
    // The servers still answer afterwards.
    let mut c = PirClient::connect_tls([a0, a1], hosts, &client).unwrap();
    assert_eq!(c.query(42).unwrap(), db.record(42).unwrap());
    drop(c);
    s0.shutdown().unwrap();
    s1.shutdown().unwrap();
}
