//! End-to-end tests of the `obliv` binary: two processes on loopback TCP, CSV in and out.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use std::collections::HashSet;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::{bucket_files, free_ports, gen_data, obliv, ok, on_fresh_ports};

/// Runs both parties as separate processes; returns their outputs.
fn run_pair(dir: &Path, a: &str, b: &str, keys: &str, extra: &[&str]) -> (Output, Output) {
    on_fresh_ports(|pa, pb| run_pair_on(dir, [a, b], keys, extra, [pa, pb]))
}

/// [`run_pair`] on the given ports.
fn run_pair_on(
    dir: &Path,
    inputs: [&str; 2],
    keys: &str,
    extra: &[&str],
    ports: [u16; 2],
) -> (Output, Output) {
    let parties = format!("127.0.0.1:{},127.0.0.1:{}", ports[0], ports[1]);
    let spawn = |rank: usize, input: &str| {
        let mut c = obliv();
        c.args([
            "psi",
            "--protocol",
            "ecdh",
            "--curve",
            "25519",
            "--rank",
            &rank.to_string(),
        ])
        .args([
            "--parties",
            &parties,
            "--keys",
            keys,
            "--connect-timeout",
            "20",
        ])
        .arg("--input")
        .arg(dir.join(input))
        .arg("--output")
        .arg(dir.join(format!("out{rank}.csv")))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let p0 = spawn(0, inputs[0]);
    let p1 = spawn(1, inputs[1]);
    let o1 = p1.wait_with_output().unwrap();
    let o0 = p0.wait_with_output().unwrap();
    (o0, o1)
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn two_processes_multi_column_keys_duplicates_quotes_unicode() {
    let dir = tempfile::tempdir().unwrap();
    let a = "name,city,score\n\
             \"Müller, Jan\",Köln,1\n\
             ada,London,2\n\
             ada,London,3\n\
             bob,Paris,4\n\
             \"quote \"\"x\"\"\",東京,5\n\
             carol,Berlin,6\n";
    let b = "city,name,other\n\
             London,ada,x\n\
             Köln,\"Müller, Jan\",y\n\
             東京,\"quote \"\"x\"\"\",z\n\
             Paris,bobby,w\n\
             London,ada,again\n";
    std::fs::write(dir.path().join("a.csv"), a).unwrap();
    std::fs::write(dir.path().join("b.csv"), b).unwrap();
    let (o0, o1) = run_pair(dir.path(), "a.csv", "b.csv", "name,city", &["--broadcast"]);
    assert!(
        o0.status.success(),
        "{}",
        String::from_utf8_lossy(&o0.stderr)
    );
    assert!(
        o1.status.success(),
        "{}",
        String::from_utf8_lossy(&o1.stderr)
    );
    let out0 = lines(&dir.path().join("out0.csv"));
    assert_eq!(
        out0,
        vec![
            "name,city,score",
            "\"Müller, Jan\",Köln,1",
            "ada,London,2",
            "ada,London,3",
            "\"quote \"\"x\"\"\",東京,5"
        ]
    );
    let out1: HashSet<String> = lines(&dir.path().join("out1.csv")).into_iter().collect();
    assert_eq!(out1.len(), 5, "{out1:?}"); // header + 4 rows (ada twice)
    assert!(out1.contains("London,ada,again"));
    let report = String::from_utf8_lossy(&o0.stdout);
    assert!(
        report.contains("\"rows_in\":6") && report.contains("\"keys_out\":3"),
        "{report}"
    );
}

#[test]
fn generated_data_matches_plain_join() {
    let dir = tempfile::tempdir().unwrap();
    let g = obliv()
        .args(["gen-data", "--size", "3000", "--parties", "2", "--out-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(g.status.success());
    let (o0, o1) = run_pair(dir.path(), "psi_1.csv", "psi_2.csv", "id", &["--sort"]);
    assert!(o0.status.success() && o1.status.success());
    let a: HashSet<String> = lines(&dir.path().join("psi_1.csv"))
        .into_iter()
        .skip(1)
        .collect();
    let b: HashSet<String> = lines(&dir.path().join("psi_2.csv"))
        .into_iter()
        .skip(1)
        .collect();
    let mut expect: Vec<String> = a.intersection(&b).cloned().collect();
    expect.sort();
    let out = lines(&dir.path().join("out0.csv"));
    assert_eq!(out[0], "id");
    assert_eq!(out[1..].to_vec(), expect);
    assert_eq!(expect.len(), 1500);
    assert!(
        !dir.path().join("out1.csv").exists(),
        "the sender must not write a result"
    );
}

#[test]
fn input_errors_come_before_the_network_with_exit_code_3() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("empty.csv", "", "id"),
        ("ragged.csv", "id,x\n1,2\n3\n", "id"),
        ("nokey.csv", "a,b\n1,2\n", "id"),
        ("utf8.csv", "id\n\u{0}\n", "id"),
    ];
    for (name, body, key) in cases {
        let path = dir.path().join(name);
        if name == "utf8.csv" {
            std::fs::write(&path, b"id\nab\xff\xfe\n").unwrap();
        } else {
            std::fs::write(&path, body).unwrap();
        }
        let o = obliv()
            .args(["psi", "--protocol", "ecdh", "--rank", "0", "--keys", key])
            .args([
                "--parties",
                "127.0.0.1:1,127.0.0.1:2",
                "--output",
                "/dev/null",
            ])
            .arg("--input")
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{name}: {err}");
        if name == "ragged.csv" {
            assert!(err.contains("line 3"), "{err}");
        }
    }
    let o = obliv()
        .args(["psi", "--protocol", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_party_with_a_bad_input_stops_its_peer_at_once() {
    // The connection is opened while the input is read; the party whose input is bad stops
    // with an input error (exit code 3) before anything that depends on its input is sent, and its peer,
    // already connected, sees the connection close (exit code 4) instead of waiting out its
    // connect timeout (20 s here). The bad row is the last of a million, so that the
    // connection is up before it is found.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.csv"), "id\n1\n2\n").unwrap();
    let mut ragged = String::from("id,x\n");
    for i in 0..1_000_000 {
        ragged.push_str(&format!("{i},{i}\n"));
    }
    ragged.push_str("7\n");
    std::fs::write(dir.path().join("ragged.csv"), ragged).unwrap();
    let started = std::time::Instant::now();
    let (o0, o1) = run_pair(dir.path(), "good.csv", "ragged.csv", "id", &[]);
    let (e0, e1) = (
        String::from_utf8_lossy(&o0.stderr),
        String::from_utf8_lossy(&o1.stderr),
    );
    assert_eq!(o1.status.code(), Some(3), "{e1}");
    assert!(e1.contains("line 1000002"), "{e1}");
    assert_eq!(o0.status.code(), Some(4), "{e0}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "the good party waited {:?}",
        started.elapsed()
    );
}

#[test]
fn peer_that_never_comes_up_is_a_network_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.csv"), "id\n1\n").unwrap();
    let (pa, pb) = free_ports();
    // Rank 1 dials rank 0, which never starts.
    let o = obliv()
        .args([
            "psi",
            "--protocol",
            "ecdh",
            "--rank",
            "1",
            "--connect-timeout",
            "1",
        ])
        .arg("--parties")
        .arg(format!("127.0.0.1:{pa},127.0.0.1:{pb}"))
        .arg("--input")
        .arg(dir.path().join("a.csv"))
        .arg("--output")
        .arg(dir.path().join("o.csv"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn curve_mismatch_is_a_protocol_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.csv"), "id\n1\n2\n").unwrap();
    let (pa, pb) = free_ports();
    let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
    let spawn = |rank: usize, curve: &str| {
        obliv()
            .args([
                "psi",
                "--protocol",
                "ecdh",
                "--curve",
                curve,
                "--rank",
                &rank.to_string(),
            ])
            .args(["--parties", &parties, "--connect-timeout", "20"])
            .arg("--input")
            .arg(dir.path().join("a.csv"))
            .arg("--output")
            .arg(dir.path().join(format!("o{rank}.csv")))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let p0 = spawn(0, "25519");
    let p1 = spawn(1, "p256");
    let (o0, o1) = (
        p0.wait_with_output().unwrap(),
        p1.wait_with_output().unwrap(),
    );
    assert_eq!(o0.status.code(), Some(5));
    assert_eq!(o1.status.code(), Some(5));
    assert!(
        !dir.path().join("o0.csv").exists(),
        "no partial output on failure"
    );
}

#[test]
fn demos_run_two_and_three_parties() {
    for (protocol, extra) in [
        ("ecdh", vec![]),
        ("ecdh-3pc", vec![]),
        (
            "ecdh",
            vec!["--sim-bandwidth", "100mbit", "--sim-latency", "1ms"],
        ),
    ] {
        let o = obliv()
            .args(["psi", "demo", "--protocol", protocol, "--size", "600"])
            .args(&extra)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{protocol}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            out.contains("intersection: 300 items (expected 300)"),
            "{out}"
        );
    }
}

/// SIGINT during `psi demo` (here while it generates its inputs) removes the demo's directory
/// of inputs and outputs and exits with status 130; without the handler the default action
/// killed the process and left the directory behind.
#[cfg(unix)]
#[test]
fn interrupted_demo_removes_its_files() {
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let mut child = obliv()
        .args(["psi", "demo", "--size", "2000000"])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the demo's directory exists with a file in it.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let has_file = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .any(|d| std::fs::read_dir(d.path()).is_ok_and(|mut r| r.next().is_some()));
        if has_file {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the demo ended before it was interrupted: {status}");
        }
        assert!(Instant::now() < deadline, "the demo wrote no file");
        std::thread::sleep(Duration::from_millis(5));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|d| d.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A closed stdout (`obliv … | head` after `head` exited) is an error with exit code 3, not a
/// panic; the files the command writes are written all the same.
#[test]
fn closed_stdout_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = obliv()
        .args(["gen-data", "--size", "10", "--parties", "2", "--out-dir"])
        .arg(dir.path())
        .stdout(writer)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("writing to stdout"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(dir.path().join("psi_1.csv").exists());
}

#[test]
fn unbalanced_offline_then_online_twice() {
    for server_gets_result in [false, true] {
        unbalanced_run(server_gets_result);
    }
}

/// The unbalanced-PSI limits of `UbConfig` are command-line flags: each refuses a job just
/// above it, on the side that sets it, and an otherwise identical job at the limit runs.
#[test]
fn unbalanced_limits_are_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("server.csv"),
        (0..50).fold(String::from("id\n"), |s, i| s + &format!("u{i}\n")),
    )
    .unwrap();
    std::fs::write(d.join("client.csv"), "id\nu5\nx1\nu49\n").unwrap();
    let run = |phase: &str, server: &[&str], client: &[&str]| {
        let (pa, pb) = free_ports();
        let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
        let common = |role: &str, rank: &str| {
            let mut c = obliv();
            c.args(["ub-psi", phase, "--role", role, "--rank", rank])
                .args(["--parties", &parties, "--connect-timeout", "10"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c
        };
        let mut s = common("server", "0");
        s.args(server)
            .arg("--input")
            .arg(d.join("server.csv"))
            .arg("--key-file")
            .arg(d.join("server.key"));
        let mut c = common("client", "1");
        c.args(client)
            .arg("--cache")
            .arg(d.join("cache.bin"))
            .arg("--input")
            .arg(d.join("client.csv"))
            .arg("--output")
            .arg(d.join("out.csv"));
        let (s, c) = (s.spawn().unwrap(), c.spawn().unwrap());
        (s.wait_with_output().unwrap(), c.wait_with_output().unwrap())
    };
    let ok = |o: &std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let refused = |o: &std::process::Output, what: &str| {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "expected a refusal naming {what}");
        assert!(err.contains(what), "{err}");
    };
    // The client's cache limit: 49 values refused, 50 taken.
    let (_, co) = run("offline", &[], &["--max-server-items", "49"]);
    refused(&co, "max_server_items");
    let (so, co) = run("offline", &[], &["--max-server-items", "50"]);
    ok(&so);
    ok(&co);
    // The server's per-phase limit: the client's 3 distinct items against 2.
    let (so, _) = run("online", &["--max-client-items", "2"], &[]);
    refused(&so, "max_client_items");
    // The key's lifetime budget: 3 queries fit in 5 once, not twice.
    let (so, co) = run("online", &["--max-key-queries", "5"], &[]);
    ok(&so);
    ok(&co);
    assert_eq!(lines(&d.join("out.csv")), vec!["id", "u5", "u49"]);
    let (so, _) = run("online", &["--max-key-queries", "5"], &[]);
    refused(&so, "max_key_queries");
}

fn unbalanced_run(server_gets_result: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("server.csv"),
        (0..3000).fold(String::from("id\n"), |s, i| s + &format!("u{i}\n")),
    )
    .unwrap();
    std::fs::write(d.join("client.csv"), "id,v\nu5,a\nx1,b\nu2999,c\nu5,d\n").unwrap();
    let flag: &[&str] = if server_gets_result {
        &["--server-get-result"]
    } else {
        &[]
    };
    let run_both = |phase: &str, extra: &[&str]| {
        let (pa, pb) = free_ports();
        let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
        let mut s = obliv();
        s.args([
            "ub-psi",
            phase,
            "--role",
            "server",
            "--rank",
            "0",
            "--parties",
            &parties,
        ])
        .args(flag)
        .args(extra)
        .arg("--input")
        .arg(d.join("server.csv"))
        .arg("--key-file")
        .arg(d.join("server.key"))
        .arg("--output")
        .arg(d.join("server_out.csv"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut c = obliv();
        c.args([
            "ub-psi",
            phase,
            "--role",
            "client",
            "--rank",
            "1",
            "--parties",
            &parties,
        ])
        .args(flag)
        .args(extra)
        .arg("--cache")
        .arg(d.join("cache.bin"))
        .arg("--input")
        .arg(d.join("client.csv"))
        .arg("--output")
        .arg(d.join("out.csv"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let (s, c) = (s.spawn().unwrap(), c.spawn().unwrap());
        (s.wait_with_output().unwrap(), c.wait_with_output().unwrap())
    };
    let run = |phase: &str| {
        let (so, co) = run_both(phase, &[]);
        assert!(
            so.status.success(),
            "{}",
            String::from_utf8_lossy(&so.stderr)
        );
        assert!(
            co.status.success(),
            "{}",
            String::from_utf8_lossy(&co.stderr)
        );
        String::from_utf8_lossy(&co.stdout).to_string()
    };
    run("offline");
    for _ in 0..2 {
        let report = run("online");
        assert!(report.contains("\"keys_out\":2"), "{report}");
        assert_eq!(
            lines(&d.join("out.csv")),
            vec!["id,v", "u5,a", "u2999,c", "u5,d"]
        );
        assert_eq!(
            d.join("server_out.csv").exists(),
            server_gets_result,
            "the server writes rows only when it learns the result"
        );
        if server_gets_result {
            assert_eq!(lines(&d.join("server_out.csv")), vec!["id", "u5", "u2999"]);
        }
    }
    if !server_gets_result {
        // The server answers from its key and the set summary of the offline phase: its
        // online phase does not read its CSV, so its cost follows the client's set.
        std::fs::remove_file(d.join("server.csv")).unwrap();
        let (so, co) = run_both("online", &[]);
        assert!(
            so.status.success(),
            "{}",
            String::from_utf8_lossy(&so.stderr)
        );
        assert!(
            co.status.success(),
            "{}",
            String::from_utf8_lossy(&co.stderr)
        );
        let server_report = String::from_utf8_lossy(&so.stdout);
        assert!(server_report.contains("\"rows_in\":0"), "{server_report}");
        assert!(
            server_report.contains("\"keys_in\":3000"),
            "{server_report}"
        );
        assert!(String::from_utf8_lossy(&co.stdout).contains("\"keys_out\":2"));
        assert_eq!(
            lines(&d.join("out.csv")),
            vec!["id,v", "u5,a", "u2999,c", "u5,d"]
        );
        // Without its summary the server stops before the network (exit 3).
        let summary = d.join("server.key.set");
        assert!(summary.exists(), "the offline phase writes the set summary");
        std::fs::remove_file(&summary).unwrap();
        let (so, _) = run_both("online", &["--connect-timeout", "2"]);
        let err = String::from_utf8_lossy(&so.stderr);
        assert_eq!(so.status.code(), Some(3), "{err}");
        assert!(err.contains("set summary"), "{err}");
        return;
    }
    // The server's file edited after the offline phase, same number of rows: the client
    // refuses the cache (exit 3, before it sends a point) rather than let the server map the
    // matches onto rows the cache was not built from.
    std::fs::write(
        d.join("server.csv"),
        (0..3000).fold(String::from("id\n"), |s, i| {
            s + &if i == 7 {
                "edited\n".to_string()
            } else {
                format!("u{i}\n")
            }
        }),
    )
    .unwrap();
    let (so, co) = run_both("online", &[]);
    let err = String::from_utf8_lossy(&co.stderr);
    assert_eq!(co.status.code(), Some(3), "{err}");
    assert!(err.contains("changed since the offline phase"), "{err}");
    assert!(!so.status.success(), "the server's phase must fail too");
}

#[test]
fn pir_serve_and_query_return_the_record() {
    use rand_core::SeedableRng;
    let (pa, pb) = free_ports();
    let serve = |port: u16| {
        obliv()
            .args(["pir", "serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--generate", "1000", "--record-size", "100", "--seed", "5"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut s0, mut s1) = (serve(pa), serve(pb));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rec.bin");
    let mut ok = false;
    for _ in 0..100 {
        let o = obliv()
            .args([
                "pir",
                "query",
                "--servers",
                &format!("127.0.0.1:{pa},127.0.0.1:{pb}"),
            ])
            .args(["--index", "321", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        if o.status.success() {
            ok = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    s0.kill().unwrap();
    s1.kill().unwrap();
    let _ = (s0.wait(), s1.wait());
    assert!(ok, "the query never succeeded");
    let mut seed = [0u8; 16];
    seed[..8].copy_from_slice(&5u64.to_le_bytes());
    let db =
        obliv_pir::Database::random(1000, 100, &mut obliv_core::AesRng::from_seed(seed)).unwrap();
    let expect = db.record(321).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), expect[..100].to_vec());
    // The record queried is private: readable by its owner only (it was 0644 by the umask).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn buckets_of_different_local_counts_meet() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("big.csv"),
        (0..3000).fold(String::from("id\n"), |s, i| s + &format!("k{i}\n")),
    )
    .unwrap();
    std::fs::write(
        d.join("small.csv"),
        (0..100).fold(String::from("id\n"), |s, i| s + &format!("k{}\n", i * 37)),
    )
    .unwrap();
    // The larger party's 3000 rows at 375 keys per bucket make 8 buckets for both; the small
    // party pads each of its buckets to the public bound.
    let (o0, o1) = run_pair(
        d,
        "small.csv",
        "big.csv",
        "id",
        &["--bucket-load", "375", "--broadcast"],
    );
    assert!(
        o0.status.success(),
        "{}",
        String::from_utf8_lossy(&o0.stderr)
    );
    assert!(
        o1.status.success(),
        "{}",
        String::from_utf8_lossy(&o1.stderr)
    );
    let expect: Vec<String> = (0..100)
        .filter(|i| i * 37 < 3000)
        .map(|i| format!("k{}", i * 37))
        .collect();
    assert_eq!(lines(&d.join("out0.csv"))[1..].to_vec(), expect);
    let mut big_out = lines(&d.join("out1.csv"))[1..].to_vec();
    big_out.sort_by_key(|k| k[1..].parse::<u32>().unwrap());
    assert_eq!(big_out, expect);
}

#[test]
fn rr22_variants_and_kkrt_between_two_processes() {
    for protocol in ["rr22", "rr22-lowcomm", "rr22-malicious", "kkrt"] {
        fast_protocol_between_two_processes(protocol);
    }
}

fn fast_protocol_between_two_processes(protocol: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let g = obliv()
        .args(["gen-data", "--size", "5000", "--out-dir"])
        .arg(d)
        .output()
        .unwrap();
    assert!(g.status.success());
    let (pa, pb) = free_ports();
    let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
    let spawn = |rank: usize| {
        obliv()
            .args([
                "psi",
                "--protocol",
                protocol,
                "--rank",
                &rank.to_string(),
                "--parties",
                &parties,
            ])
            .args(["--bucket-load", "1250"])
            .arg("--input")
            .arg(d.join(format!("psi_{}.csv", rank + 1)))
            .arg("--output")
            .arg(d.join(format!("out{rank}.csv")))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (p0, p1) = (spawn(0), spawn(1));
    let (o0, o1) = (
        p0.wait_with_output().unwrap(),
        p1.wait_with_output().unwrap(),
    );
    assert!(
        o0.status.success(),
        "{}",
        String::from_utf8_lossy(&o0.stderr)
    );
    assert!(
        o1.status.success(),
        "{}",
        String::from_utf8_lossy(&o1.stderr)
    );
    assert_eq!(lines(&d.join("out0.csv")).len(), 1 + 2500);
}

/// Spawns one ECDH party (Curve25519) with piped output.
fn spawn_party(
    dir: &Path,
    rank: usize,
    parties: &str,
    input: &str,
    output: &str,
    extra: &[&str],
) -> std::process::Child {
    obliv()
        .args(["psi", "--protocol", "ecdh", "--curve", "25519"])
        .args(["--rank", &rank.to_string(), "--parties", parties])
        .args(["--connect-timeout", "20"])
        .arg("--input")
        .arg(dir.join(input))
        .arg("--output")
        .arg(dir.join(output))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn killed_run_resumes_from_checkpoint_with_identical_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 6000);
    // The reference: an uninterrupted run without checkpoint.
    let (o0, o1) = run_pair(d, "psi_1.csv", "psi_2.csv", "id", &["--bucket-load", "375"]);
    ok(&o0);
    ok(&o1);
    let reference = std::fs::read(d.join("out0.csv")).unwrap();
    // The same job with checkpoints, receiver killed once its first bucket is recorded. The
    // simulated latency makes each bucket take a few round trips of 20 ms.
    let (pa, pb) = free_ports();
    let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
    let args = |rank: usize| -> Vec<String> {
        [
            "--bucket-load",
            "375",
            "--sim-latency",
            "20ms",
            "--checkpoint",
            &d.join(format!("ck{rank}")).to_string_lossy(),
        ]
        .iter()
        .map(ToString::to_string)
        .collect()
    };
    let run = |rank: usize| {
        let a = args(rank);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        spawn_party(
            d,
            rank,
            &parties,
            &format!("psi_{}.csv", rank + 1),
            &format!("res{rank}.csv"),
            &a,
        )
    };
    let (mut p0, p1) = (run(0), run(1));
    let start = std::time::Instant::now();
    while bucket_files(&d.join("ck0")) == 0 {
        assert!(p0.try_wait().unwrap().is_none(), "finished before the kill");
        assert!(
            start.elapsed().as_secs() < 30,
            "no bucket was ever recorded"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    p0.kill().unwrap();
    let _ = p0.wait();
    let o1 = p1.wait_with_output().unwrap();
    assert!(!o1.status.success(), "the peer must notice the kill");
    assert!(!d.join("res0.csv").exists(), "no output from a killed run");
    let finished = bucket_files(&d.join("ck0"));
    assert!(finished < 16, "{finished} buckets: the kill came too late");
    // The same commands again: both resume and the output equals the uninterrupted run's.
    let (p0, p1) = (run(0), run(1));
    let (o0, o1) = (
        p0.wait_with_output().unwrap(),
        p1.wait_with_output().unwrap(),
    );
    let report = ok(&o0);
    ok(&o1);
    assert!(report.contains("\"buckets\":16"), "{report}");
    let resumed: u64 = report
        .split("\"buckets_resumed\":")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!((1..16).contains(&resumed), "{report}");
    assert!(
        String::from_utf8_lossy(&o0.stderr).contains("resuming"),
        "{}",
        String::from_utf8_lossy(&o0.stderr)
    );
    assert_eq!(std::fs::read(d.join("res0.csv")).unwrap(), reference);
    // Once more: every bucket comes from the checkpoints, the output is the same.
    std::fs::remove_file(d.join("res0.csv")).unwrap();
    let (p0, p1) = (run(0), run(1));
    let report = ok(&p0.wait_with_output().unwrap());
    ok(&p1.wait_with_output().unwrap());
    assert!(report.contains("\"buckets_resumed\":16"), "{report}");
    assert_eq!(std::fs::read(d.join("res0.csv")).unwrap(), reference);

    // A checkpoint of another job (here: another input) is refused before any traffic.
    let o = spawn_party(
        d,
        0,
        &parties,
        "psi_2.csv",
        "other.csv",
        &[
            "--bucket-load",
            "375",
            "--checkpoint",
            &d.join("ck0").to_string_lossy(),
        ],
    )
    .wait_with_output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("belongs to another job") && err.contains("input"),
        "{err}"
    );
    // So is another parameter (the bucket load changes every bucket's contents).
    let o = spawn_party(
        d,
        0,
        &parties,
        "psi_1.csv",
        "other.csv",
        &[
            "--bucket-load",
            "700",
            "--checkpoint",
            &d.join("ck0").to_string_lossy(),
        ],
    )
    .wait_with_output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("bucket_load differs"), "{err}");
}

#[test]
fn shards_merge_to_the_unsharded_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 3000);
    let base = ["--sort", "--bucket-load", "375"];
    let (o0, o1) = run_pair(d, "psi_1.csv", "psi_2.csv", "id", &base);
    ok(&o0);
    ok(&o1);
    let full = std::fs::read(d.join("out0.csv")).unwrap();
    let n = 3;
    let mut rows_in = 0;
    let mut parts = Vec::new();
    for i in 0..n {
        let shard = format!("{i}/{n}");
        let mut extra = base.to_vec();
        extra.extend(["--shard", &shard]);
        let (o0, o1) = run_pair(d, "psi_1.csv", "psi_2.csv", "id", &extra);
        let report = ok(&o0);
        ok(&o1);
        assert!(
            report.contains(&format!("\"shard\":\"{shard}\"")),
            "{report}"
        );
        rows_in += report
            .split("\"rows_in\":")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|r| r.parse::<u64>().ok())
            .unwrap();
        let part = d.join(format!("part{i}.csv"));
        std::fs::rename(d.join("out0.csv"), &part).unwrap();
        parts.push(part);
    }
    assert_eq!(rows_in, 3000, "the shards split the input");
    // Merged by key, the parts are byte for byte the unsharded --sort output.
    let m = obliv()
        .args(["merge", "--sort", "--keys", "id", "--output"])
        .arg(d.join("merged.csv"))
        .args(&parts)
        .output()
        .unwrap();
    ok(&m);
    assert_eq!(std::fs::read(d.join("merged.csv")).unwrap(), full);
    // Plain concatenation (one header, then every part's rows) holds the same rows.
    let mut concat: Vec<String> = parts
        .iter()
        .flat_map(|p| lines(p).into_iter().skip(1))
        .collect();
    let mut expect = lines(&d.join("merged.csv"))[1..].to_vec();
    assert!(parts.iter().all(|p| lines(p).len() > 1), "an empty shard");
    concat.sort();
    expect.sort();
    assert_eq!(concat, expect);
    // Two parties on different shards refuse each other (protocol error) before any bucket.
    let (pa, pb) = free_ports();
    let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
    let p0 = spawn_party(d, 0, &parties, "psi_1.csv", "x0.csv", &["--shard", "0/2"]);
    let p1 = spawn_party(d, 1, &parties, "psi_2.csv", "x1.csv", &["--shard", "1/2"]);
    for o in [
        p0.wait_with_output().unwrap(),
        p1.wait_with_output().unwrap(),
    ] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(5), "{err}");
        assert!(
            err.contains("shard=0/2") && err.contains("shard=1/2"),
            "{err}"
        );
    }
    let o = obliv()
        .args(["psi", "--protocol", "ecdh", "--rank", "0", "--shard", "2/2"])
        .args([
            "--parties",
            &parties,
            "--input",
            "a.csv",
            "--output",
            "b.csv",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--shard \"2/2\""), "{err}");
}

#[test]
fn progress_goes_to_stderr_never_into_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 2000);
    for mode in ["bar", "log"] {
        let (o0, o1) = run_pair(
            d,
            "psi_1.csv",
            "psi_2.csv",
            "id",
            &["--bucket-load", "250", "--progress", mode],
        );
        let report = ok(&o0);
        ok(&o1);
        let err = String::from_utf8_lossy(&o0.stderr);
        let out = std::fs::read_to_string(d.join("out0.csv")).unwrap();
        assert!(!out.contains('\r') && !out.contains("psi") && !out.contains("rows"));
        assert_eq!(out.lines().count(), 1 + 1000);
        assert_eq!(report.lines().count(), 1, "stdout is the JSON report only");
        assert!(report.starts_with('{') && !report.contains('\r'));
        match mode {
            "bar" => assert!(err.contains("\rpsi ") && err.contains("ETA"), "{err}"),
            _ => assert!(
                err.contains("obliv: psi") && err.contains("done") && !err.contains('\r'),
                "{err}"
            ),
        }
    }
    // Off: nothing on stderr at all.
    let (o0, _) = run_pair(d, "psi_1.csv", "psi_2.csv", "id", &["--progress", "off"]);
    ok(&o0);
    assert!(
        o0.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o0.stderr)
    );
}

#[test]
fn three_parties_resume_from_the_buckets_all_of_them_finished() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let g = obliv()
        .args(["gen-data", "--size", "2000", "--parties", "3", "--out-dir"])
        .arg(d)
        .output()
        .unwrap();
    assert!(g.status.success());
    let ports: Vec<u16> = {
        let ls: Vec<TcpListener> = (0..3)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
    };
    let parties = ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let run_all = || -> Vec<String> {
        let children: Vec<_> = (0..3)
            .map(|r| {
                obliv()
                    .args(["psi", "--protocol", "ecdh-3pc", "--curve", "25519"])
                    .args(["--rank", &r.to_string(), "--parties", &parties])
                    .args(["--bucket-load", "250", "--connect-timeout", "20"])
                    .arg("--input")
                    .arg(d.join(format!("psi_{}.csv", r + 1)))
                    .arg("--output")
                    .arg(d.join(format!("o{r}.csv")))
                    .arg("--checkpoint")
                    .arg(d.join(format!("ck{r}")))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        children
            .into_iter()
            .map(|c| ok(&c.wait_with_output().unwrap()))
            .collect()
    };
    let first = run_all();
    assert!(
        first[0].contains("\"buckets\":8,\"buckets_resumed\":0"),
        "{first:?}"
    );
    let full = std::fs::read(d.join("o0.csv")).unwrap();
    assert_eq!(full.iter().filter(|&&b| b == b'\n').count(), 1 + 1000);
    // Party 1 lost bucket 3, party 2 bucket 5: all three run exactly those two again.
    std::fs::remove_file(d.join("ck1").join("b3")).unwrap();
    std::fs::remove_file(d.join("ck2").join("b5")).unwrap();
    let second = run_all();
    for r in &second {
        assert!(r.contains("\"buckets_resumed\":6"), "{r}");
    }
    assert_eq!(std::fs::read(d.join("o0.csv")).unwrap(), full);
}

/// The number after `"field":` in a JSON report.
fn report_u64(report: &str, field: &str) -> u64 {
    report
        .split(&format!("\"{field}\":"))
        .nth(1)
        .and_then(|r| r.split([',', '}']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {report}"))
}

#[test]
fn bucket_plan_follows_public_data_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = |name: &str, keys: &mut dyn Iterator<Item = String>| {
        let body = keys.fold(String::from("id\n"), |s, k| s + &k + "\n");
        std::fs::write(d.join(name), body).unwrap();
    };
    file("a.csv", &mut (0..2000).map(|i| format!("k{i}")));
    // Three inputs of party 1 with the same row count: keys that spread differently over the
    // buckets (other keys, so other public hashes), and only ten distinct keys in 2000 rows.
    file("b1.csv", &mut (0..2000).map(|i| format!("k{}", i * 3)));
    file("b2.csv", &mut (0..2000).map(|i| format!("other-{i}")));
    file("b3.csv", &mut (0..2000).map(|i| format!("k{}", i % 10)));
    let mut received = Vec::new();
    for b in ["b1.csv", "b2.csv", "b3.csv"] {
        let (o0, o1) = run_pair(d, "a.csv", b, "id", &["--bucket-load", "250"]);
        let report = ok(&o0);
        ok(&o1);
        assert_eq!(report_u64(&report, "buckets"), 8, "{report}");
        received.push(report_u64(&report, "bytes_received"));
    }
    // Every bucket is padded to the public bound: what party 0 receives is a function of the
    // two row counts only, not of how party 1's keys fall into the buckets or how many of
    // them are distinct.
    assert_eq!(
        received[0], received[1],
        "traffic depends on the key distribution"
    );
    assert_eq!(
        received[0], received[2],
        "traffic depends on the distinct key count"
    );

    // A peer cannot choose the split: a huge bucket count by a small --bucket-size is only a
    // local memory limit (that party refuses the job, exit 2) ...
    let (pa, pb) = free_ports();
    let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
    let p0 = spawn_party(d, 0, &parties, "a.csv", "o0.csv", &[]);
    let p1 = spawn_party(d, 1, &parties, "b1.csv", "o1.csv", &["--bucket-size", "1"]);
    let (o0, o1) = (
        p0.wait_with_output().unwrap(),
        p1.wait_with_output().unwrap(),
    );
    let err1 = String::from_utf8_lossy(&o1.stderr);
    assert_eq!(o1.status.code(), Some(2), "{err1}");
    assert!(err1.contains("--bucket-size"), "{err1}");
    assert!(!o0.status.success());
    assert!(!String::from_utf8_lossy(&o0.stdout).contains("\"buckets\":"));
    // ... and another --bucket-load is a settings mismatch that both refuse (exit 5).
    let (pa, pb) = free_ports();
    let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
    let p0 = spawn_party(d, 0, &parties, "a.csv", "o0.csv", &[]);
    let p1 = spawn_party(d, 1, &parties, "b1.csv", "o1.csv", &["--bucket-load", "64"]);
    let (o0, o1) = (
        p0.wait_with_output().unwrap(),
        p1.wait_with_output().unwrap(),
    );
    for o in [&o0, &o1] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(5), "{err}");
        assert!(err.contains("bucket_load="), "{err}");
    }
}

/// Relays `from` to `to`, the first `free` bytes at once and then one byte every 200 ms.
fn trickle(mut from: std::net::TcpStream, mut to: std::net::TcpStream, free: usize) {
    use std::io::{Read, Write};
    let mut sent = 0usize;
    let mut buf = [0u8; 4096];
    loop {
        let want = if sent < free {
            (free - sent).min(buf.len())
        } else {
            1
        };
        let n = match from.read(&mut buf[..want]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
        sent += n;
        if sent >= free {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

#[test]
fn a_peer_that_trickles_is_cut_off_by_the_step_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 200);
    // Party 1 reaches party 0 through a relay that passes the session hello (one 20-byte
    // frame with its 8-byte length) and then trickles one byte every 200 ms: never idle for
    // the 60 s idle timeout, yet far too slow for a 2 s step.
    let (p0, p1) = free_ports();
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_port = relay.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (down, _) = relay.accept().unwrap();
        let up = loop {
            match std::net::TcpStream::connect(("127.0.0.1", p0)) {
                Ok(s) => break s,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        };
        let (down2, up2) = (down.try_clone().unwrap(), up.try_clone().unwrap());
        std::thread::spawn(move || trickle(up2, down2, usize::MAX));
        trickle(down, up, 28);
    });
    let start = std::time::Instant::now();
    let a = spawn_party(
        d,
        0,
        &format!("127.0.0.1:{p0},127.0.0.1:{p1}"),
        "psi_1.csv",
        "o0.csv",
        &["--step-timeout", "2"],
    );
    let b = spawn_party(
        d,
        1,
        &format!("127.0.0.1:{relay_port},127.0.0.1:{p1}"),
        "psi_2.csv",
        "o1.csv",
        &["--step-timeout", "2"],
    );
    let o0 = a.wait_with_output().unwrap();
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&o0.stderr);
    assert_eq!(o0.status.code(), Some(4), "{err}");
    assert!(err.contains("deadline"), "{err}");
    assert!(took.as_secs() < 30, "cut off only after {took:?}: {err}");
    let o1 = b.wait_with_output().unwrap();
    assert!(!o1.status.success());
}
