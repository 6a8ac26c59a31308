//! Unbalanced ECDH-OPRF PSI on FourQ over the in-memory channel, phase by phase: the offline
//! phase (server set → client cache), the online phase (client query → intersection), each
//! with and without `server_get_result`. Wall time for both parties on this machine's cores;
//! bytes on the wire printed once per shape.
//!
//! `cargo bench -p obliv-psi --bench unbalanced` (server 2^14, client 2^10);
//! `OBLIV_BENCH_SCALE=full` adds server 1e6 / client 1e3 and 1e7 / 1e4. Whole runs at the
//! issue's sizes with SecretFlow beside them: `examples/ub_psi_figures.rs`.

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use obliv_core::AesRng;
use obliv_net::{Channel, mem_pair};
use obliv_psi::unbalanced::{
    Cache, ServerKey, ServerSet, UbConfig, offline_client, offline_server, online_client,
    online_server,
};
use rand_core::SeedableRng;

fn items(range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{i:012}").into_bytes()).collect()
}

/// One offline phase; returns the cache and the bytes on the wire.
fn offline(
    key: &ServerKey,
    server: &[Vec<u8>],
    cfg: UbConfig,
    path: &std::path::Path,
) -> (Cache, u64) {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|s| {
        let t = s.spawn(move || {
            offline_server(&mut a, key, server, &cfg, &mut AesRng::from_seed([2; 16]))
                .expect("server");
            a.stats().bytes_sent
        });
        let cache = offline_client(&mut b, &cfg, path).expect("client");
        let bytes = b.stats().bytes_sent + t.join().expect("server thread");
        (cache, bytes)
    })
}

/// One online phase; returns the bytes on the wire.
fn online(
    key: &ServerKey,
    set: &ServerSet,
    client: &[Vec<u8>],
    cache: &Cache,
    cfg: UbConfig,
) -> u64 {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|s| {
        let t = s.spawn(move || {
            let r = online_server(&mut a, key, set, &cfg).expect("server");
            assert_eq!(
                r.map(|v| v.len()),
                cfg.server_get_result.then_some(client.len() / 2)
            );
            a.stats().bytes_sent
        });
        let found = online_client(&mut b, client, cache, &cfg, &mut AesRng::from_seed([3; 16]))
            .expect("client");
        assert_eq!(found.len(), client.len() / 2, "wrong intersection");
        b.stats().bytes_sent + t.join().expect("server thread")
    })
}

fn unbalanced(c: &mut Criterion) {
    let full = std::env::var("OBLIV_BENCH_SCALE").is_ok_and(|v| v == "full");
    let mut g = c.benchmark_group("psi/unbalanced");
    g.sample_size(10).sampling_mode(SamplingMode::Flat);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut shapes = vec![(1usize << 14, 1usize << 10)];
    if full {
        shapes.extend([(1_000_000, 1000), (10_000_000, 10_000)]);
    }
    for server_get_result in [false, true] {
        let cfg = UbConfig {
            server_get_result,
            ..UbConfig::default()
        };
        let tag = if server_get_result {
            "/server_get_result"
        } else {
            ""
        };
        let key = ServerKey::generate(cfg.curve, &mut AesRng::from_seed([1; 16])).expect("key");
        for &(ns, nc) in &shapes {
            let server = items(0..ns);
            let client = items(ns - nc / 2..ns + nc - nc / 2);
            let path = dir.path().join(format!("cache-{ns}-{server_get_result}"));
            let (cache, bytes) = offline(&key, &server, cfg, &path);
            let disk = std::fs::metadata(&path).expect("cache").len();
            println!("psi/unbalanced/offline{tag}/{ns}: {bytes} B on the wire, cache {disk} B");
            g.throughput(Throughput::Elements(ns as u64));
            let scratch = dir.path().join("scratch");
            g.bench_with_input(
                BenchmarkId::new(format!("offline{tag}"), ns),
                &ns,
                |b, _| b.iter(|| offline(&key, &server, cfg, &scratch).1),
            );
            // The server keeps its set's digest from the offline phase (not timed online).
            let set = ServerSet::new(&key, &server);
            let bytes = online(&key, &set, &client, &cache, cfg);
            println!("psi/unbalanced/online{tag}/{nc} (server {ns}): {bytes} B on the wire");
            g.throughput(Throughput::Elements(nc as u64));
            g.bench_with_input(
                BenchmarkId::new(format!("online{tag}/server_{ns}"), nc),
                &nc,
                |b, _| b.iter(|| online(&key, &set, &client, &cache, cfg)),
            );
        }
    }
    g.finish();
}

criterion_group!(benches, unbalanced);
criterion_main!(benches);
