//! End-to-end: multi-column keys are encoded injectively (issue 21, item 2), so rows whose
//! columns only look alike when joined with a separator do not meet.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use std::process::Stdio;

use crate::common::{free_ports, obliv, ok};

#[test]
fn rows_that_join_alike_are_not_in_the_intersection() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // (`a\x1fb`, `c`) against (`a`, `b\x1fc`): one key each way under the old 0x1F join. An
    // empty field, a quote and a comma in other positions, and one row really in common.
    std::fs::write(
        d.join("a.csv"),
        "id,region,v\na\u{1f}b,c,1\n,\u{1f},2\n\"q\"\"\",\"x,y\",3\nsame,row,4\n",
    )
    .unwrap();
    std::fs::write(
        d.join("b.csv"),
        "id,region,v\na,b\u{1f}c,5\n\u{1f},,6\n\"q\"\"\",\"x,y\",7\nsame,row,8\n",
    )
    .unwrap();
    let (pa, pb) = free_ports();
    let parties = format!("127.0.0.1:{pa},127.0.0.1:{pb}");
    let spawn = |rank: usize, input: &str| {
        obliv()
            .args(["psi", "--protocol", "ecdh", "--curve", "25519"])
            .args(["--rank", &rank.to_string(), "--parties", &parties])
            .args(["--keys", "id,region", "--connect-timeout", "20"])
            .arg("--input")
            .arg(d.join(input))
            .arg("--output")
            .arg(d.join(format!("out{rank}.csv")))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let p0 = spawn(0, "a.csv");
    let p1 = spawn(1, "b.csv");
    let o1 = p1.wait_with_output().unwrap();
    let o0 = p0.wait_with_output().unwrap();
    ok(&o1);
    let report = ok(&o0);
    assert_eq!(
        std::fs::read_to_string(d.join("out0.csv")).unwrap(),
        "id,region,v\n\"q\"\"\",\"x,y\",3\nsame,row,4\n",
        "{report}"
    );
    assert!(report.contains("\"keys_out\":2"), "{report}");
}
