//! Figures of the unbalanced PSI (offline and online phase) on this machine, shaped like the
//! SecretFlow comparison (`benches/anchors/secretflow_ub_psi.py`): the server holds
//! `--server-n` random 62-bit ids written in decimal, the client `--client-n`, half of them in
//! the server's set; both parties in one process, over TCP on loopback.
//!
//! ```text
//! cargo run -p obliv-psi --release --example ub_psi_figures -- \
//!     [--server-n 1000000] [--client-n 1000] [--server-get-result] [--online-runs 2]
//! ```
//!
//! Prints one JSON line per phase: wall seconds, bytes on the wire (both directions), and
//! for the offline phase the size of the client's cache file.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)] // a command-line example: fail loudly; sizes parsed from floats

use std::time::Instant;

use obliv_core::{AesRng, Block, Prg};
use obliv_net::{Channel, TcpChannel, TcpOptions};
use obliv_psi::plain_intersection;
use obliv_psi::unbalanced::{
    ServerKey, UbConfig, offline_client, offline_server, online_client, online_server,
};
use rand_core::SeedableRng;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .map(|i| args.get(i + 1).cloned().unwrap_or_default())
}

fn size(name: &str, default: usize) -> usize {
    arg(name).map_or(default, |s| s.parse::<f64>().expect("a number") as usize)
}

fn main() {
    let n_server = size("--server-n", 1_000_000);
    let n_client = size("--client-n", 1000);
    let runs = size("--online-runs", 2);
    let server_get_result = std::env::args().any(|a| a == "--server-get-result");
    let cfg = UbConfig {
        server_get_result,
        ..UbConfig::default()
    };

    // Distinct random ids below 2^62 (collisions among 1e6 draws: probability ~2^-23).
    let mut prg = Prg::new(Block::from(0x5eed_u128));
    let mut ids = |n: usize| -> Vec<Vec<u8>> {
        let mut buf = vec![0u8; 8 * n];
        prg.fill_bytes(&mut buf);
        buf.chunks_exact(8)
            .map(|c| {
                (u64::from_le_bytes(c.try_into().unwrap()) >> 2)
                    .to_string()
                    .into_bytes()
            })
            .collect()
    };
    let server = ids(n_server);
    let mut client: Vec<Vec<u8>> = server[..n_client / 2].to_vec();
    client.extend(ids(n_client - n_client / 2));
    client.reverse();
    let expected = plain_intersection(&client, &server);
    let expected_server = plain_intersection(&server, &client);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ub-cache");
    let key = ServerKey::generate(cfg.curve, &mut AesRng::from_seed([1; 16])).unwrap();
    let threads = rayon::current_num_threads();

    let (mut a, mut b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let t = Instant::now();
    let (cache, set) = std::thread::scope(|s| {
        let srv = s.spawn(|| {
            offline_server(&mut a, &key, &server, &cfg, &mut AesRng::from_seed([2; 16])).unwrap()
        });
        let cache = offline_client(&mut b, &cfg, &path).unwrap();
        (cache, srv.join().unwrap())
    });
    let secs = t.elapsed().as_secs_f64();
    let bytes = a.stats().bytes_sent + b.stats().bytes_sent;
    let disk = std::fs::metadata(&path).unwrap().len();
    println!(
        "{{\"impl\":\"obliv\",\"phase\":\"offline\",\"curve\":\"{}\",\"server_n\":{n_server},\
         \"client_n\":{n_client},\"server_get_result\":{server_get_result},\"seconds\":{secs:.3},\
         \"bytes\":{bytes},\"cache_bytes\":{disk},\"threads\":{threads}}}",
        cfg.curve
    );

    for run in 1..=runs {
        let (mut a, mut b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
        let t = Instant::now();
        let (found, srv) = std::thread::scope(|s| {
            let srv = s.spawn(|| online_server(&mut a, &key, &set, &cfg).unwrap());
            let found = online_client(
                &mut b,
                &client,
                &cache,
                &cfg,
                &mut AesRng::from_seed([3; 16]),
            )
            .unwrap();
            (found, srv.join().unwrap())
        });
        let secs = t.elapsed().as_secs_f64();
        let bytes = a.stats().bytes_sent + b.stats().bytes_sent;
        assert_eq!(found, expected, "the client's intersection");
        if server_get_result {
            assert_eq!(
                srv.as_ref(),
                Some(&expected_server),
                "the server's intersection"
            );
        }
        println!(
            "{{\"impl\":\"obliv\",\"phase\":\"online\",\"run\":{run},\"curve\":\"{}\",\
             \"server_n\":{n_server},\"client_n\":{n_client},\
             \"server_get_result\":{server_get_result},\"seconds\":{secs:.3},\"bytes\":{bytes},\
             \"intersection\":{},\"threads\":{threads}}}",
            cfg.curve,
            found.len()
        );
    }
}
