//! `obliv psi`, `obliv ub-psi` and `obliv pir` over mutual TLS: separate processes,
//! certificates made here (rcgen). The right intersection for every protocol and the right PIR
//! record; another CA, an expired certificate, another host and a plaintext peer refused with
//! exit code 4; plaintext to a non-loopback address only with `--insecure-plaintext`.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use std::net::{IpAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};

use crate::common::{self, obliv};

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

    /// Writes `<tag>.crt`, `<tag>.key` (a certificate for `ip` issued by this CA) and
    /// `<tag>.ca` (the certificate of `trust`) into `dir`; returns the three TLS arguments.
    fn files(&self, dir: &Path, tag: &str, ip: &str, trust: &Ca) -> Vec<String> {
        self.files_valid(dir, tag, ip, trust, true)
    }

    /// As [`Ca::files`]; with `valid` false the certificate expired in 2021.
    fn files_valid(&self, dir: &Path, tag: &str, ip: &str, trust: &Ca, valid: bool) -> Vec<String> {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.subject_alt_names = vec![SanType::IpAddress(ip.parse::<IpAddr>().unwrap())];
        if !valid {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        let path = |ext: &str| dir.join(format!("{tag}.{ext}"));
        std::fs::write(path("crt"), cert.pem()).unwrap();
        std::fs::write(path("key"), key.serialize_pem()).unwrap();
        std::fs::write(path("ca"), trust.cert.pem()).unwrap();
        let s = |p: PathBuf| p.to_string_lossy().into_owned();
        vec![
            "--tls-cert".into(),
            s(path("crt")),
            "--tls-key".into(),
            s(path("key")),
            "--tls-ca".into(),
            s(path("ca")),
        ]
    }
}

/// `host:port` for each host, on free ports.
fn parties(hosts: &[&str]) -> String {
    let ls: Vec<TcpListener> = hosts
        .iter()
        .map(|h| TcpListener::bind((*h, 0)).unwrap())
        .collect();
    ls.iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Each of `n` parties holds 1000 ids: `0..500`, common to all, and 500 of its own.
fn write_inputs(dir: &Path, n: usize) {
    for i in 0..n {
        let mut s = String::from("id,v\n");
        for k in 0..1000 {
            // ids 0..500 are common to all; the rest are private to the party.
            let id = if k < 500 { k } else { 10_000 * (i + 1) + k };
            s.push_str(&format!("{id},{i}\n"));
        }
        std::fs::write(dir.join(format!("in{i}.csv")), s).unwrap();
    }
}

/// Runs one process per party; `extra[i]` are party `i`'s extra arguments.
fn run(dir: &Path, protocol: &str, parties: &str, extra: &[Vec<String>]) -> Vec<Output> {
    let kids: Vec<_> = extra
        .iter()
        .enumerate()
        .map(|(rank, x)| {
            obliv()
                .args(["psi", "--protocol", protocol, "--curve", "25519"])
                .args(["--rank", &rank.to_string(), "--parties", parties])
                .args(["--connect-timeout", "20", "--progress", "off"])
                .arg("--input")
                .arg(dir.join(format!("in{rank}.csv")))
                .arg("--output")
                .arg(dir.join(format!("out{rank}.csv")))
                .args(x)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    kids.into_iter()
        .map(|k| k.wait_with_output().unwrap())
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn every_protocol_over_mutual_tls() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("test CA");
    let hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3"];
    let args: Vec<Vec<String>> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| ca.files(d, &format!("p{i}"), h, &ca))
        .collect();
    for (protocol, n) in [
        ("ecdh", 2),
        ("kkrt", 2),
        ("rr22", 2),
        ("rr22-lowcomm", 2),
        ("rr22-malicious", 2),
        ("ecdh-3pc", 3),
    ] {
        write_inputs(d, n);
        let outs = run(d, protocol, &parties(&hosts[..n]), &args[..n]);
        for (rank, o) in outs.iter().enumerate() {
            assert!(o.status.success(), "{protocol} party {rank}: {}", stderr(o));
            let e = stderr(o);
            assert!(e.contains("TLS 1.3, mutual authentication"), "{e}");
            assert!(e.contains("B overhead"), "{e}");
        }
        let out = std::fs::read_to_string(d.join("out0.csv")).unwrap();
        assert_eq!(out.lines().count(), 1 + 500, "{protocol}");
    }
}

/// Party 0 is honest; party 1 has `bad`. Both must exit with 4 (network), party 0 saying
/// `expect`, and no output may be written.
fn refused(bad: Vec<String>, good: Vec<String>, expect: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_inputs(d, 2);
    let outs = run(
        d,
        "rr22",
        &parties(&["127.0.0.1", "127.0.0.2"]),
        &[good, bad],
    );
    for (rank, o) in outs.iter().enumerate() {
        assert_eq!(o.status.code(), Some(4), "party {rank}: {}", stderr(o));
    }
    let e0 = stderr(&outs[0]);
    assert!(e0.contains(expect), "{e0}");
    assert!(!d.join("out0.csv").exists());
}

#[test]
fn refusals_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("test CA");
    let other = Ca::new("another CA");
    let good = ca.files(d, "good", "127.0.0.1", &ca);
    refused(
        other.files(d, "other-ca", "127.0.0.2", &ca),
        good.clone(),
        "refused the certificate",
    );
    // Issued by the right CA for the right host, but expired.
    refused(
        ca.files_valid(d, "expired", "127.0.0.2", &ca, false),
        good.clone(),
        "refused the certificate",
    );
    // A valid certificate, but for another host than party 1's.
    refused(
        ca.files(d, "other-host", "127.0.0.3", &ca),
        good.clone(),
        "does not name \"127.0.0.2\"",
    );
    refused(Vec::new(), good, "speaks plaintext");
}

#[test]
fn plaintext_across_hosts_needs_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_inputs(d, 2);
    let o = obliv()
        .args(["psi", "--protocol", "rr22", "--rank", "0"])
        .args(["--parties", "127.0.0.1:1,192.0.2.1:1"])
        .arg("--input")
        .arg(d.join("in0.csv"))
        .arg("--output")
        .arg(d.join("out0.csv"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--insecure-plaintext"),
        "{}",
        stderr(&o)
    );
}

/// The cost of TLS: RR22 fast and KKRT at 1e6 rows per side, two processes on loopback, TLS
/// against plaintext, alternating. Minutes, so not in the default run:
/// `cargo test -p obliv-cli --test it -- --ignored --nocapture tls::tls_cost` (the test
/// profile builds the binary with opt-level 3).
#[test]
#[ignore = "minutes: run by hand to measure the cost of TLS"]
fn tls_cost_1e6() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    common::gen_data(d, 1_000_000);
    std::fs::rename(d.join("psi_1.csv"), d.join("in0.csv")).unwrap();
    std::fs::rename(d.join("psi_2.csv"), d.join("in1.csv")).unwrap();
    let ca = Ca::new("test CA");
    let tls = vec![
        ca.files(d, "p0", "127.0.0.1", &ca),
        ca.files(d, "p1", "127.0.0.1", &ca),
    ];
    let plain = vec![Vec::new(), Vec::new()];
    let seconds = |o: &Output| -> f64 {
        let out = common::ok(o);
        let s = out.split("\"seconds\":").nth(1).unwrap();
        s.split(',').next().unwrap().parse().unwrap()
    };
    for protocol in ["rr22", "kkrt"] {
        let mut t = [Vec::new(), Vec::new()];
        for _ in 0..2 {
            for (k, args) in [&plain, &tls].into_iter().enumerate() {
                let outs = run(d, protocol, &parties(&["127.0.0.1", "127.0.0.1"]), args);
                t[k].push(seconds(&outs[0]).max(seconds(&outs[1])));
                if k == 1 {
                    eprintln!("{protocol} TLS party 0: {}", stderr(&outs[0]).trim());
                }
            }
        }
        let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let (p, s) = (best(&t[0]), best(&t[1]));
        println!(
            "{protocol} 1e6: plaintext {:?} s, TLS {:?} s; best {p:.2} s vs {s:.2} s: {:+.1} %",
            t[0],
            t[1],
            100.0 * (s / p - 1.0)
        );
    }
}

/// `obliv ub-psi` offline and online over mutual TLS, with the server learning the result.
#[test]
fn unbalanced_psi_over_mutual_tls() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("test CA");
    let tls = [
        ca.files(d, "tls-server", "127.0.0.1", &ca),
        ca.files(d, "tls-client", "127.0.0.2", &ca),
    ];
    std::fs::write(
        d.join("server.csv"),
        (0..2000).fold(String::from("id\n"), |s, i| s + &format!("u{i}\n")),
    )
    .unwrap();
    std::fs::write(d.join("client.csv"), "id\nu3\nx\nu1999\n").unwrap();
    for phase in ["offline", "online"] {
        let p = parties(&["127.0.0.1", "127.0.0.2"]);
        let spawn = |role: &str, rank: usize, extra: &[&str]| {
            obliv()
                .args(["ub-psi", phase, "--role", role, "--rank", &rank.to_string()])
                .args(["--parties", &p, "--server-get-result"])
                .args(extra)
                .args(&tls[rank])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let path = |f: &str| d.join(f).to_string_lossy().into_owned();
        let s = spawn(
            "server",
            0,
            &[
                "--input",
                &path("server.csv"),
                "--key-file",
                &path("server.key"),
                "--output",
                &path("server_out.csv"),
            ],
        );
        let c = spawn(
            "client",
            1,
            &[
                "--input",
                &path("client.csv"),
                "--cache",
                &path("cache.bin"),
                "--output",
                &path("out.csv"),
            ],
        );
        for o in [s.wait_with_output().unwrap(), c.wait_with_output().unwrap()] {
            assert!(o.status.success(), "{phase}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("TLS 1.3, mutual authentication"),
                "{}",
                stderr(&o)
            );
        }
    }
    let lines = |f: &str| -> Vec<String> {
        std::fs::read_to_string(d.join(f))
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    };
    assert_eq!(lines("out.csv"), ["id", "u3", "u1999"]);
    assert_eq!(lines("server_out.csv"), ["id", "u3", "u1999"]);
}

/// `obliv pir serve` and `obliv pir query` over TLS: the record comes back; a plaintext query
/// and a query whose certificate another CA issued are refused with exit 4.
#[test]
fn pir_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("PIR CA");
    let servers = parties(&["127.0.0.1", "127.0.0.1"]);
    let addrs: Vec<String> = servers.split(',').map(String::from).collect();
    let mut kids: Vec<_> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            obliv()
                .args(["pir", "serve", "--listen", a])
                .args(["--generate", "300", "--record-size", "40", "--seed", "9"])
                .args(ca.files(d, &format!("s{i}"), "127.0.0.1", &ca))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let query = |tls: &[String], out: &str| {
        obliv()
            .args([
                "pir",
                "query",
                "--servers",
                &servers,
                "--index",
                "77",
                "--out",
            ])
            .arg(d.join(out))
            .args(tls)
            .output()
            .unwrap()
    };
    let client = ca.files(d, "client", "127.0.0.1", &ca);
    // The servers may still be starting: retry the good query for a while.
    let mut good = query(&client, "rec.bin");
    for _ in 0..100 {
        if good.status.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        good = query(&client, "rec.bin");
    }
    let plain = query(&[], "plain.bin");
    let other = Ca::new("another CA");
    let foreign = query(&other.files(d, "foreign", "127.0.0.1", &ca), "foreign.bin");
    for k in &mut kids {
        k.kill().unwrap();
        let _ = k.wait();
    }
    assert!(good.status.success(), "{}", stderr(&good));
    assert_eq!(std::fs::read(d.join("rec.bin")).unwrap().len(), 40);
    for (what, o) in [("plaintext", &plain), ("another CA", &foreign)] {
        assert_eq!(o.status.code(), Some(4), "{what}: {}", stderr(o));
    }
    assert!(!d.join("plain.bin").exists() && !d.join("foreign.bin").exists());
}
