//! Helpers shared by the end-to-end tests of the `obliv` binary (`cli.rs`, `workers.rs`).
#![allow(clippy::unwrap_used, dead_code)] // test helpers; not every test file uses each one

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

/// The `obliv` binary under test.
pub(crate) fn obliv() -> Command {
    Command::new(env!("CARGO_BIN_EXE_obliv"))
}

/// Two distinct free loopback ports (bound together so they differ, released just before the
/// parties bind them).
pub(crate) fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// Whether a party failed to bind its port: [`free_ports`] releases the ports before the
/// parties bind them, and another test's connections (the tests of a file run in parallel)
/// may take one as their source port in between. Not the code under test: such a run is
/// repeated on new ports ([`on_fresh_ports`]).
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
