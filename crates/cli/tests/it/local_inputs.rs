//! Local inputs that must be refused at once with a typed error (never a panic, never a
//! silently destroyed file), before any peer is needed: one process, no peer running.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use std::path::Path;
use std::process::Output;

use crate::common::{free_ports, obliv};

/// `obliv psi` as party 0 of two (the learner), the peer never started.
fn psi_alone(input: &Path, output: &Path, extra: &[&str]) -> Output {
    let (a, b) = free_ports();
    obliv()
        .args([
            "psi",
            "--protocol",
            "ecdh",
            "--rank",
            "0",
            "--progress",
            "off",
        ])
        .args(["--parties", &format!("127.0.0.1:{a},127.0.0.1:{b}")])
        .args(if extra.contains(&"--connect-timeout") {
            &[][..]
        } else {
            &["--connect-timeout", "3"]
        })
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(output)
        .args(extra)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--output` naming the input file: the receiver used to run the whole job and then rename
/// its matching rows over its input, destroying the other rows. Refused now (exit code 2)
/// before anything is sent, the input untouched; for `ub-psi` too. An output that is a
/// directory or sits in a missing directory is refused before the run too (exit code 3),
/// not after it.
#[test]
fn an_output_that_cannot_take_the_rows_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let body = "id,v\nk1,1\nk2,2\nk3,3\n";
    std::fs::write(&input, body).unwrap();
    // The same file, by another name too (a hard link).
    let link = dir.path().join("link.csv");
    std::fs::hard_link(&input, &link).unwrap();
    for out in [&input, &link] {
        let o = psi_alone(&input, out, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("is the input file"), "{err}");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), body);
    }
    let o = psi_alone(&input, dir.path(), &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("is a directory"), "{err}");
    let o = psi_alone(&input, &dir.path().join("missing/out.csv"), &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("must exist and be writable"), "{err}");
    // The client of the online phase, which writes its matching rows.
    let (a, b) = free_ports();
    let o = obliv()
        .args(["ub-psi", "online", "--role", "client", "--rank", "1"])
        .args(["--parties", &format!("127.0.0.1:{a},127.0.0.1:{b}")])
        .args(["--connect-timeout", "3"])
        .arg("--cache")
        .arg(dir.path().join("cache.bin"))
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(&input)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is the input file"), "{err}");
    assert_eq!(std::fs::read_to_string(&input).unwrap(), body);
}

/// `--report` (psi) and `--cache` (the offline ub-psi client) are written when the run ends:
/// a path that cannot take them used to be found only then (here: after the connect timeout,
/// as a network error, exit code 4; in a real run after all the work). Refused at once now,
/// with the flag named: a missing directory or a directory (exit code 3), the output or input
/// file (exit code 2).
#[test]
fn a_report_or_cache_that_cannot_be_written_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "id\nk1\n").unwrap();
    let out = dir.path().join("out.csv");
    let missing = dir.path().join("missing/report.json");
    for (report, code, says) in [
        (missing.as_path(), 3, "must exist and be writable"),
        (dir.path(), 3, "is a directory"),
        (out.as_path(), 2, "is the output file"),
        (input.as_path(), 2, "is the input file"),
    ] {
        let o = psi_alone(&input, &out, &["--report", report.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{}: {err}", report.display());
        assert!(err.contains("--report") && err.contains(says), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&input).unwrap(), "id\nk1\n");
    let (a, b) = free_ports();
    let o = obliv()
        .args(["ub-psi", "offline", "--role", "client", "--rank", "1"])
        .args(["--parties", &format!("127.0.0.1:{a},127.0.0.1:{b}")])
        .args(["--connect-timeout", "3"])
        .arg("--cache")
        .arg(dir.path().join("missing/cache.bin"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("--cache") && err.contains("must exist"),
        "{err}"
    );
}

/// `--connect-timeout` near `u64::MAX` seconds overflowed `Instant + Duration` in the
/// connecting thread (a panic, reported as a network error, exit code 4): a usage error
/// (exit code 2) at once now, for `psi` and `ub-psi`.
#[test]
fn a_huge_connect_timeout_is_a_usage_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "id\nk1\n").unwrap();
    let out = dir.path().join("out.csv");
    let huge = u64::MAX.to_string();
    let o = psi_alone(&input, &out, &["--connect-timeout", &huge]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("--connect-timeout"), "{err}");
    let (a, b) = free_ports();
    let o = obliv()
        .args(["ub-psi", "offline", "--role", "client", "--rank", "1"])
        .args(["--parties", &format!("127.0.0.1:{a},127.0.0.1:{b}")])
        .args(["--connect-timeout", &huge])
        .arg("--cache")
        .arg(dir.path().join("cache.bin"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// An out-of-range `--bucket-load` was found only after the whole input was read and the
/// peer connected; a usage error (exit code 2) at once now.
#[test]
fn an_out_of_range_bucket_load_is_refused_first() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    // With an input that does not exist: the usage error comes first.
    for load in ["0", "18446744073709551615"] {
        let o = psi_alone(
            &dir.path().join("missing.csv"),
            &out,
            &["--bucket-load", load],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--bucket-load"), "{err}");
    }
}
