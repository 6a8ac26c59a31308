//! Helpers shared by the end-to-end tests of the `obliv` binary (`cli.rs`, `workers.rs`).
#![allow(clippy::unwrap_used, dead_code)] // test helpers; not every test file uses each one

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

/// The `obliv` binary under test, started through `OBLIV_TEST_RUNNER` when that is set (a
/// program and its arguments, split at spaces, e.g. `valgrind --error-exitcode=1 -q`: the
/// memcheck stage of `.ci/memcheck` runs the end-to-end tests this way).
pub(crate) fn obliv() -> Command {
    let bin = env!("CARGO_BIN_EXE_obliv");
    match std::env::var("OBLIV_TEST_RUNNER") {
        Ok(runner) if !runner.trim().is_empty() => {
            let mut words = runner.split_whitespace();
            let mut c = Command::new(words.next().unwrap());
            c.args(words).arg(bin);
            c
        }
        _ => Command::new(bin),
    }
}

/// Two distinct free loopback ports, released just before the parties bind them.
///
/// They are taken below the kernel's ephemeral port range (Linux:
/// `/proc/sys/net/ipv4/ip_local_port_range`), from which it picks the source port of every
/// outgoing connection: a port released here cannot be taken by another test's connection
/// before the party binds it (the race [`on_fresh_ports`] otherwise has to repeat a run for).
/// Ports are handed out in turn from a per-process starting point, so the tests of one binary
/// never get the same port. Where the range leaves no room below it, the kernel's own choice
/// (port 0) is used.
pub(crate) fn free_ports() -> (u16, u16) {
    (free_port(), free_port())
}

fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOWEST: u32 = 10_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = ephemeral_low.saturating_sub(LOWEST);
    if span < 1000 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        return l.local_addr().unwrap().port();
    }
    let start = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let k = (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        let port = u16::try_from(LOWEST + k).unwrap();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port below {ephemeral_low}");
}

/// Whether a party failed to bind its port: [`free_ports`] releases the ports before the
/// parties bind them, and another process may take one in between (on a machine whose
/// ephemeral range leaves no room below it, another test's connections too). Not the code
/// under test: such a run is repeated on new ports ([`on_fresh_ports`]).
pub(crate) fn lost_its_port(o: &Output) -> bool {
    let err = String::from_utf8_lossy(&o.stderr);
    err.contains("Address already in use") || err.contains("os error 98")
}

/// Runs `pair` (both parties on the two ports it is given, from [`free_ports`]) and repeats
/// it on new ports, at most three times in all, while a party lost its port
/// ([`lost_its_port`]).
pub(crate) fn on_fresh_ports(
    mut pair: impl FnMut(u16, u16) -> (Output, Output),
) -> (Output, Output) {
    let mut tries = 0;
    loop {
        tries += 1;
        let (a, b) = free_ports();
        let (o0, o1) = pair(a, b);
        if tries < 3 && (lost_its_port(&o0) || lost_its_port(&o1)) {
            eprintln!("a party lost its port {a} or {b} to another process: again on new ports");
            continue;
        }
        return (o0, o1);
    }
}

/// `obliv gen-data --size N --out-dir DIR`: `psi_1.csv`, `psi_2.csv`, … in `dir`.
pub(crate) fn gen_data(dir: &Path, size: u32) {
    let g = obliv()
        .args(["gen-data", "--size", &size.to_string(), "--out-dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(g.status.success());
}

/// Asserts the process succeeded (printing its stderr if not) and returns its stdout.
pub(crate) fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// Number of bucket checkpoint files (`b<number>`) in `dir`.
pub(crate) fn bucket_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |it| {
        it.flatten()
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.strip_prefix('b')
                    .is_some_and(|r| r.parse::<u32>().is_ok())
            })
            .count()
    })
}
