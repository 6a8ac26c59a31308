//! Option values that used to make `obliv` hang, fill the disk or memory, or fail with the
//! wrong exit code: each is refused at once now with a typed error (exit code 2 for a usage
//! error, 3 for an unusable file), before anything is written or read. Every run here has a
//! time limit: the old behaviour (a run that never ends) fails the test instead of hanging it.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{free_ports, obliv};

/// The longest any refused command here may take.
const LIMIT: Duration = Duration::from_secs(10);

/// Runs `cmd` with its temporary directory in `tmp` (so a killed run leaves nothing behind
/// elsewhere); kills it and fails the test if it is still running after [`LIMIT`].
fn run_limited(cmd: &mut Command, tmp: &Path) -> Output {
    let mut child = cmd
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > LIMIT {
            child.kill().unwrap();
            let o = child.wait_with_output().unwrap();
            panic!(
                "still running after {LIMIT:?}: {cmd:?}\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts `o` exited with `code`, without a panic, and says `what` on stderr.
fn refused(o: &Output, code: i32, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(what), "expected {what:?} in: {err}");
}

/// `psi demo --size N` had no bound: `u64::MAX` wrote CSV files into the temporary directory
/// until the disk was full, and `0` ran an empty demo. Both, and one row above 10^8, are usage
/// errors (exit code 2) now, with nothing written.
#[test]
fn psi_demo_size_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    for size in ["0", "100000001", &u64::MAX.to_string()] {
        let o = run_limited(obliv().args(["psi", "demo", "--size", size]), tmp.path());
        refused(&o, 2, "--size");
        assert!(
            std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
            "--size {size} wrote files"
        );
    }
    // The bound is in the help text.
    let help = obliv().args(["psi", "demo", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("100000000") && help.contains("gen-data"),
        "{help}"
    );
}

/// `gen-data --size` had no bound: `u64::MAX` wrote until the disk was full. Above 10^10 rows
/// per file it is a usage error now (nothing written); `0` still writes header-only files.
#[test]
fn gen_data_size_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("data");
    for size in ["10000000001", &u64::MAX.to_string()] {
        let o = run_limited(
            obliv()
                .args(["gen-data", "--size", size, "--out-dir"])
                .arg(&out),
            tmp.path(),
        );
        refused(&o, 2, "--size");
        assert!(
            !out.join("psi_1.csv").exists(),
            "--size {size} wrote a file"
        );
    }
    let o = run_limited(
        obliv()
            .args(["gen-data", "--size", "0", "--out-dir"])
            .arg(&out),
        tmp.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(out.join("psi_1.csv")).unwrap(),
        "id\n"
    );
}

/// A simulated one-way latency of `u64::MAX` seconds (or any above 10 s) and a bandwidth of a
/// few bits per second made the demo sleep until its 30-minute step timeout; usage errors
/// (exit code 2) at once now. An unlimited bandwidth (`0`) is still accepted.
#[test]
fn sim_link_values_that_would_hang_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = |flag: &str, value: &str| {
        run_limited(
            obliv().args(["psi", "demo", "--size", "10", flag, value]),
            tmp.path(),
        )
    };
    for latency in [format!("{}s", u64::MAX), "11s".into(), "10001ms".into()] {
        refused(&demo("--sim-latency", &latency), 2, "--sim-latency");
    }
    for bandwidth in ["1", "999bit"] {
        refused(&demo("--sim-bandwidth", bandwidth), 2, "--sim-bandwidth");
    }
    let o = demo("--sim-bandwidth", "0");
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `--step-timeout 0` let every run fail with a network error (exit code 4), but only after
/// the input was read and the peers connected; a usage error (exit code 2) first now, before
/// even a missing input is looked at, for `psi` and `ub-psi`.
#[test]
fn a_zero_step_timeout_is_refused_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = free_ports();
    let parties = format!("127.0.0.1:{a},127.0.0.1:{b}");
    let missing = tmp.path().join("missing.csv");
    let o = run_limited(
        obliv()
            .args([
                "psi",
                "--protocol",
                "ecdh",
                "--rank",
                "0",
                "--parties",
                &parties,
            ])
            .args(["--connect-timeout", "2", "--step-timeout", "0", "--input"])
            .arg(&missing)
            .arg("--output")
            .arg(tmp.path().join("out.csv")),
        tmp.path(),
    );
    refused(&o, 2, "--step-timeout");
    let o = run_limited(
        obliv()
            .args(["ub-psi", "online", "--role", "client", "--rank", "1"])
            .args([
                "--parties",
                &parties,
                "--connect-timeout",
                "2",
                "--step-timeout",
                "0",
            ])
            .arg("--input")
            .arg(&missing)
            .arg("--cache")
            .arg(tmp.path().join("cache.bin"))
            .arg("--output")
            .arg(tmp.path().join("out.csv")),
        tmp.path(),
    );
    refused(&o, 2, "--step-timeout");
}

/// `pir serve` reported its own bad `--generate` and `--record-size` (zero, beyond the
/// library's 2^32 records of 2^24 bytes, a database too large to allocate) as protocol
/// errors (exit code 5, "the peer misbehaves"); usage errors (exit code 2) now.
#[test]
fn pir_serve_parameters_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, _) = free_ports();
    let listen = format!("127.0.0.1:{port}");
    for (generate, record_size, says) in [
        ("0", "16", "--generate"),
        ("4", "0", "--record-size"),
        ("4", "16777217", "--record-size"),
        ("4294967296", "16777216", "too large"),
    ] {
        let o = run_limited(
            obliv().args(["pir", "serve", "--listen", &listen]).args([
                "--generate",
                generate,
                "--record-size",
                record_size,
            ]),
            tmp.path(),
        );
        refused(&o, 2, says);
    }
}

/// `pir query --index` beyond the servers' records was a protocol error (exit code 5); a
/// usage error (exit code 2) now, and an index no database can hold (2^32 and above) is
/// refused before the servers are asked.
#[test]
fn pir_query_index_out_of_range_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (pa, pb) = free_ports();
    let servers = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
    // No server runs: the index is refused first.
    let o = run_limited(
        obliv().args([
            "pir",
            "query",
            "--servers",
            &servers,
            "--index",
            "4294967296",
        ]),
        tmp.path(),
    );
    refused(&o, 2, "--index");
    let serve = |port: u16| {
        obliv()
            .args(["pir", "serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--generate", "10", "--record-size", "16"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut s0, mut s1) = (serve(pa), serve(pb));
    // The client retries while the servers start.
    let o = run_limited(
        obliv().args(["pir", "query", "--servers", &servers, "--index", "10"]),
        tmp.path(),
    );
    s0.kill().unwrap();
    s1.kill().unwrap();
    let _ = (s0.wait(), s1.wait());
    refused(&o, 2, "out of range");
}

/// Files that are read whole into memory — `pir serve --db`, the `ub-psi` server's
/// `--key-file`, the `--tls-*` PEM files — were read whatever they were: `/dev/zero` until
/// memory ran out, a named pipe without a writer forever. Anything but a regular file is an
/// input error (exit code 3) now, before it is opened. (A pipe stands in for `/dev/zero`
/// here: the old code hung on it instead of filling this machine's memory.)
#[cfg(unix)]
#[test]
fn files_read_whole_must_be_regular_files() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let input = tmp.path().join("in.csv");
    std::fs::write(&input, "id\nk1\n").unwrap();
    let (a, b) = free_ports();
    let parties = format!("127.0.0.1:{a},127.0.0.1:{b}");

    let o = run_limited(
        obliv()
            .args(["pir", "serve", "--listen", &format!("127.0.0.1:{a}")])
            .arg("--db")
            .arg(&fifo),
        tmp.path(),
    );
    refused(&o, 3, "not a regular file");

    let o = run_limited(
        obliv()
            .args(["ub-psi", "offline", "--role", "server", "--rank", "0"])
            .args(["--parties", &parties, "--connect-timeout", "2"])
            .arg("--input")
            .arg(&input)
            .arg("--key-file")
            .arg(&fifo),
        tmp.path(),
    );
    refused(&o, 3, "--key-file");

    for flag in ["--tls-cert", "--tls-key", "--tls-ca"] {
        // The other two are the regular input file: only `flag` is unusable.
        let mut cmd = obliv();
        cmd.args([
            "psi",
            "--protocol",
            "ecdh",
            "--rank",
            "0",
            "--parties",
            &parties,
        ])
        .args(["--connect-timeout", "2", "--input"])
        .arg(&input)
        .arg("--output")
        .arg(tmp.path().join("out.csv"));
        for f in ["--tls-cert", "--tls-key", "--tls-ca"] {
            cmd.arg(f).arg(if f == flag { &fifo } else { &input });
        }
        let o = run_limited(&mut cmd, tmp.path());
        refused(&o, 3, flag);
    }
}
