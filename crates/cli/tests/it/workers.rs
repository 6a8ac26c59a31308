//! `obliv psi --workers N` for the two-party protocols (RR22, KKRT, ECDH, all through the one
//! bucket driver): two processes on loopback TCP run their buckets side by side and write
//! exactly the output of the one-worker run; a run killed mid-way resumes from its
//! checkpoint with another worker count; parties that disagree on the worker count stop in
//! the job handshake; counts out of range are refused; a bucket that overflows its public
//! bound stops both parties at once.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{bucket_files, free_ports, gen_data, obliv, ok, on_fresh_ports};

fn parties() -> String {
    let (a, b) = free_ports();
    format!("127.0.0.1:{a},127.0.0.1:{b}")
}

/// Spawns party `rank` of `protocol` on `psi_{rank+1}.csv`, writing `{out}{rank}.csv`.
fn spawn(
    dir: &Path,
    protocol: &str,
    rank: usize,
    parties: &str,
    out: &str,
    extra: &[String],
) -> Child {
    obliv()
        .args(["psi", "--protocol", protocol, "--rank", &rank.to_string()])
        .args(["--parties", parties, "--connect-timeout", "20"])
        .args(["--bucket-load", "375", "--progress", "off"])
        .arg("--input")
        .arg(dir.join(format!("psi_{}.csv", rank + 1)))
        .arg("--output")
        .arg(dir.join(format!("{out}{rank}.csv")))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs both parties with `extra[rank]` (again on new ports if one lost its port); returns
/// their outputs.
fn run_pair(dir: &Path, protocol: &str, out: &str, extra: [&[String]; 2]) -> (Output, Output) {
    on_fresh_ports(|a, b| {
        let p = format!("127.0.0.1:{a},127.0.0.1:{b}");
        let p0 = spawn(dir, protocol, 0, &p, out, extra[0]);
        let p1 = spawn(dir, protocol, 1, &p, out, extra[1]);
        (
            p0.wait_with_output().unwrap(),
            p1.wait_with_output().unwrap(),
        )
    })
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(ToString::to_string).collect()
}

/// The unsigned integer `"name":N` of a JSON report.
fn field(report: &str, name: &str) -> u64 {
    let key = format!("\"{name}\":");
    let at = report
        .find(&key)
        .unwrap_or_else(|| panic!("{name} in {report}"))
        + key.len();
    let digits: String = report[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

fn workers(n: usize) -> Vec<String> {
    args(&["--workers", &n.to_string()])
}

#[test]
fn workers_give_the_one_worker_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 6000);
    for (protocol, w) in [
        ("rr22", 2),
        ("rr22-lowcomm", 3),
        ("rr22-malicious", 2),
        ("kkrt", 3),
        ("ecdh", 2),
    ] {
        let (o0, o1) = run_pair(d, protocol, "ref", [&workers(1), &workers(1)]);
        let one = ok(&o0);
        ok(&o1);
        // One worker: every round trip is on the critical path.
        assert_eq!(
            field(&one, "critical_rounds"),
            field(&one, "rounds"),
            "{one}"
        );
        let reference = std::fs::read(d.join("ref0.csv")).unwrap();
        // gen-data plants half of the rows in common: not vacuous.
        assert_eq!(
            String::from_utf8_lossy(&reference).lines().count(),
            1 + 3000
        );
        let (o0, o1) = run_pair(d, protocol, "par", [&workers(w), &workers(w)]);
        let report = ok(&o0);
        ok(&o1);
        assert!(report.contains("\"buckets\":16"), "{report}");
        // Side by side, the workers' round trips overlap: fewer on the critical path than in
        // all, but at least one worker's share of the 16 buckets (one round trip each).
        let (critical, all) = (field(&report, "critical_rounds"), field(&report, "rounds"));
        assert!(critical < all, "{report}");
        assert!(critical >= 16 / w as u64, "{report}");
        assert_eq!(
            std::fs::read(d.join("par0.csv")).unwrap(),
            reference,
            "{protocol} with {w} workers"
        );
    }
}

#[test]
fn different_worker_counts_stop_at_the_settings_hello() {
    // The settings go first on the connection (before the driver's set-up, whose messages
    // depend on the worker count), so both sides see both counts.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 1000);
    let (o0, o1) = run_pair(d, "rr22", "out", [&workers(2), &workers(3)]);
    for o in [o0, o1] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(5), "{err}");
        assert!(
            err.contains("workers=2") && err.contains("workers=3"),
            "{err}"
        );
    }
    // One worker against two: the one-worker side sends no `workers=` (as before the
    // option existed) and the difference is shown all the same.
    let (o0, o1) = run_pair(d, "rr22", "out", [&workers(1), &workers(2)]);
    for o in [o0, o1] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(5), "{err}");
        assert!(err.contains("workers=2"), "{err}");
    }
}

#[test]
fn worker_counts_out_of_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 100);
    for (protocol, n) in [("ecdh", 0), ("kkrt", 65), ("rr22", 0), ("rr22", 1000)] {
        let o = spawn(d, protocol, 0, &parties(), "out", &workers(n))
            .wait_with_output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{protocol} {n}: {err}");
        assert!(err.contains("--workers"), "{err}");
    }
}

#[test]
fn killed_concurrent_run_resumes_from_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 6000);
    let (o0, o1) = run_pair(d, "rr22", "ref", [&workers(1), &workers(1)]);
    ok(&o0);
    ok(&o1);
    let reference = std::fs::read(d.join("ref0.csv")).unwrap();
    let p = parties();
    let ck = |rank: usize, w: usize| {
        let mut a = args(&[
            "--sim-latency",
            "20ms",
            "--checkpoint",
            &d.join(format!("ck{rank}")).to_string_lossy(),
        ]);
        a.extend(workers(w));
        a
    };
    // Two workers, the receiver killed once a bucket is recorded.
    let (mut p0, p1) = (
        spawn(d, "rr22", 0, &p, "res", &ck(0, 2)),
        spawn(d, "rr22", 1, &p, "res", &ck(1, 2)),
    );
    let start = Instant::now();
    while bucket_files(&d.join("ck0")) == 0 {
        assert!(p0.try_wait().unwrap().is_none(), "finished before the kill");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no bucket recorded"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    p0.kill().unwrap();
    let _ = p0.wait();
    let o1 = p1.wait_with_output().unwrap();
    assert!(!o1.status.success(), "the peer must notice the kill");
    assert!(bucket_files(&d.join("ck0")) < 16, "the kill came too late");
    // Again with three workers: the finished buckets come from the checkpoints (the worker
    // count is not part of a bucket's result), the output is the uninterrupted run's (same
    // addresses: they are part of the checkpoint's job).
    let (p0, p1) = (
        spawn(d, "rr22", 0, &p, "res", &ck(0, 3)),
        spawn(d, "rr22", 1, &p, "res", &ck(1, 3)),
    );
    let report = ok(&p0.wait_with_output().unwrap());
    ok(&p1.wait_with_output().unwrap());
    let resumed: u64 = report
        .split("\"buckets_resumed\":")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!((1..16).contains(&resumed), "{report}");
    assert_eq!(std::fs::read(d.join("res0.csv")).unwrap(), reference);
}

/// Writes `psi_{file}.csv` with an `id` column and the given keys.
fn write_keys(dir: &Path, file: usize, keys: &[String]) {
    let mut csv = String::from("id\n");
    for k in keys {
        csv.push_str(k);
        csv.push('\n');
    }
    std::fs::write(dir.join(format!("psi_{file}.csv")), csv).unwrap();
}

/// A bucket that holds more distinct keys than the public bound, in a run of two workers: the
/// party that finds it stops with exit code 3 naming the bucket, its peer stops too with a
/// typed error, both by themselves and long before the step timeout (the overflowing worker
/// must stop the other worker and the peer, not leave them waiting), and neither writes an
/// output. The input is made to overflow: the bucket hash is public and keyless, so keys of
/// one bucket are found by trying candidates.
#[test]
fn an_overflowing_bucket_stops_both_parties_of_a_two_worker_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows = 4000usize;
    let plan = obliv_cli::plan::BucketPlan::new(&[rows as u64; 2], 1, 375, 2).unwrap();
    let buckets = usize::try_from(plan.buckets).unwrap();
    let bound = usize::try_from(plan.bound(0)).unwrap();
    assert!(buckets >= 4 && bound < rows / 2, "{plan:?}");
    // Party 0: `bound + 1` keys of the last bucket (a later bucket of the second worker), the
    // rest anywhere.
    let target = buckets - 1;
    let in_target = |k: &str| {
        let mut enc = Vec::new();
        obliv_cli::csvio::push_key_field(&mut enc, k.as_bytes());
        obliv_cli::bucket::bucket_of(&enc, buckets) == target
    };
    let mut keys: Vec<String> = (0u64..)
        .map(|i| format!("over{i}"))
        .filter(|k| in_target(k))
        .take(bound + 1)
        .collect();
    keys.extend((0..rows - keys.len()).map(|i| format!("any{i}")));
    write_keys(d, 1, &keys);
    let theirs: Vec<String> = (0..rows).map(|i| format!("any{}", 2 * i)).collect();
    write_keys(d, 2, &theirs);

    let extra = args(&["--workers", "2", "--step-timeout", "120"]);
    let start = Instant::now();
    let (o0, o1) = run_pair(d, "rr22", "out", [&extra, &extra]);
    let seconds = start.elapsed().as_secs_f64();
    let (e0, e1) = (
        String::from_utf8_lossy(&o0.stderr),
        String::from_utf8_lossy(&o1.stderr),
    );
    assert_eq!(o0.status.code(), Some(3), "{e0}");
    assert!(
        e0.contains(&format!("bucket {target} holds")) && e0.contains("public bound"),
        "{e0}"
    );
    // The peer hears of it as a protocol error (exit code 5): its worker's sub-channel closed.
    assert_eq!(o1.status.code(), Some(5), "{e1}");
    for e in [&e0, &e1] {
        assert!(!e.contains("panicked"), "{e}");
    }
    assert!(
        seconds < 60.0,
        "{seconds:.1} s: a party waited for the step timeout\n{e0}\n{e1}"
    );
    for rank in 0..2 {
        assert!(
            !d.join(format!("out{rank}.csv")).exists(),
            "output {rank} left"
        );
    }
}
