//! Runs every example's logic (the `run` functions the examples call) and checks the result
//! against the plain computation.

use obliv_examples::{ec_elgamal, paillier_sum, pir, psi_buckets, psi_tcp, psi3, unbalanced};
use obliv_psi::kkrt::{KkrtConfig, KkrtSession};
use obliv_psi::rr22::{Rr22Config, Rr22Session, Variant};

/// Runs `psi_buckets::run` with sessions from `make` on 3000 items per side for each
/// `(buckets, workers)` and checks the plain answer, `user-1500..3000` sorted as strings.
#[allow(clippy::unwrap_used)] // a test helper: failing is the point
fn check_bucketed<P, F>(make: F, cases: &[(usize, usize)])
where
    P: obliv_psi::PsiSession + 'static,
    F: Fn(obliv_psi::Role) -> obliv_psi::Result<P> + Sync + Copy,
{
    let mut want = obliv_examples::ids(1500..3000);
    want.sort();
    for &(buckets, workers) in cases {
        let found = psi_buckets::run(make, 3000, buckets, workers).unwrap();
        assert_eq!(found, want, "{buckets} buckets, {workers} workers");
    }
}

#[test]
fn rr22_in_buckets_over_tcp() {
    check_bucketed(
        |role| Rr22Session::new(role, &Rr22Config::new(Variant::Fast)),
        &[(1, 1), (5, 2)],
    );
}

#[test]
fn kkrt_in_buckets_over_tcp() {
    check_bucketed(
        |role| KkrtSession::new(role, &KkrtConfig::default()),
        &[(1, 1), (4, 3)],
    );
}

#[test]
fn psi_over_tcp() {
    // Receiver user-0..2000, sender user-1000..3000: indices 1000..2000 in common.
    let found = psi_tcp::run(2000).unwrap();
    assert_eq!(found, (1000..2000).collect::<Vec<_>>());
}

/// The sender of [`psi_over_tcp_in_two_processes`], run in a child process of the test binary
/// (ignored in a normal run; the parent starts it with `--ignored` and the address).
#[test]
#[ignore = "the child process of psi_over_tcp_in_two_processes"]
fn psi_tcp_sender_process() {
    let addr = std::env::var("OBLIV_EXAMPLE_RECEIVER")
        .expect("run by psi_over_tcp_in_two_processes, which sets OBLIV_EXAMPLE_RECEIVER");
    let items = obliv_examples::ids(1000..3000);
    psi_tcp::sender(addr.parse().unwrap(), &items).unwrap();
}

#[test]
fn psi_over_tcp_in_two_processes() {
    // The receiver listens here; the sender is this test binary again, in another process.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "psi_tcp_sender_process", "--ignored", "--quiet"])
        .env("OBLIV_EXAMPLE_RECEIVER", addr.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let found = psi_tcp::receiver(&listener, &obliv_examples::ids(0..2000));
    let status = child.wait().unwrap();
    assert!(status.success(), "sender process failed: {status}");
    assert_eq!(found.unwrap(), (1000..2000).collect::<Vec<_>>());
}

#[test]
fn three_party_psi() {
    // Party 0 user-0..800, party 1 user-400..1600, party 2 user-0..600: 400..600.
    let found = psi3::run(800).unwrap();
    assert_eq!(found, (400..600).collect::<Vec<_>>());
}

#[test]
fn unbalanced_psi() {
    // Server user-0..5000, client user-4900..5100: its first 100 items are in common.
    let found = unbalanced::run(5000, 200).unwrap();
    assert_eq!(found, (0..100).collect::<Vec<_>>());
}

#[test]
fn paillier_private_sum() {
    let values = [5200, 6100, -150, 0, 99];
    assert_eq!(
        paillier_sum::run(&values).unwrap(),
        values.iter().sum::<i64>()
    );
}

#[test]
fn ec_elgamal_arithmetic() {
    assert_eq!(
        ec_elgamal::run(1200, 34, 100).unwrap(),
        3 * (1200 + 34) - 100
    );
}

#[test]
fn dpf_pir() {
    let record = pir::run(1024, 256, 777).unwrap();
    assert_eq!(record.len(), 256);
}

#[test]
fn ot_and_vole() {
    assert_eq!(obliv_examples::ot_vole::run(1 << 12).unwrap(), 1 << 12);
}
