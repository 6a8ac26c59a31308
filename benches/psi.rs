//! BENCHMARKS.md §1 (SecretFlow PSI white paper): balanced ECDH-PSI for two and three parties
//! on FourQ and Curve25519, on the LAN (in-memory channel) and on the simulated 100 Mbps /
//! 10 ms link, and unbalanced ECDH-OPRF PSI split into its offline and online phases.
//!
//! Ids: `psi/ecdh_2pc/<curve>/<lan|wan100m10ms>/<n>`, `psi/ecdh_3pc/…/<n>` (n per party,
//! 50 % overlap as in `generate_psi.py`), `psi/unbalanced_offline/<curve>/<n_server>`,
//! `psi/unbalanced_online/<curve>/<n_client>`. Criterion's throughput is the bytes on the wire
//! of one run (all parties), so its "thrpt" line divided by the time gives the traffic.
//!
//! `cargo bench -p obliv-bench --bench psi`; `OBLIV_BENCH_SCALE=full` adds 2^20 and 1e7 per
//! side (one run each, recorded for the report; 1e8 for RR22 on the LAN) and prints the sizes
//! it skips. KKRT16 and RR22 fast: `psi/kkrt/…`, `psi/rr22_fast/…` (2^16 by default); RR22
//! low-comm and malicious are not implemented in obliv-psi yet.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use obliv_bench::{SINGLE_RUN_FROM, full_scale, record_single_run, skip};
use obliv_core::AesRng;
use obliv_ec::{Curve, DynGroup};
use obliv_net::{Channel, LinkModel, Session, SimLink, mem_pair, run_parties};
use obliv_psi::ecdh::{self, EcdhConfig, Role};
use obliv_psi::kkrt::{self, KkrtConfig};
use obliv_psi::rr22::{self, Rr22Config};
use obliv_psi::{ecdh3, unbalanced};
use rand_core::SeedableRng;

/// The documents' network: 100 Mbps, 10 ms one way.
const WAN: LinkModel = LinkModel {
    bandwidth_bps: 100_000_000,
    latency: Duration::from_millis(10),
};

fn items(range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{i:016}").into_bytes()).collect()
}

/// The curves of the document that obliv-ec can run here (FourQ until obliv-ec wires it in
/// is reported as skipped).
fn curves() -> Vec<Curve> {
    [Curve::FourQ, Curve::Curve25519]
        .into_iter()
        .filter(|&c| match DynGroup::new(c) {
            Ok(_) => true,
            Err(e) => {
                skip(&format!("psi/*/{c}"), &format!("obliv-ec: {e}"));
                false
            }
        })
        .collect()
}

fn sizes(default: usize) -> Vec<usize> {
    let mut v = vec![default];
    if full_scale() {
        v.extend([1 << 20, 10_000_000]);
        skip(
            "psi/*/1e8, 1e9",
            "1e8 and 1e9 per side take hours per run on 2 cores; projected linearly from 1e7",
        );
    }
    v
}

/// A two-party protocol of the document.
#[derive(Clone, Copy, Debug)]
enum Proto {
    Ecdh(EcdhConfig),
    Kkrt(KkrtConfig),
    Rr22(Rr22Config),
}

/// One two-party run; returns the bytes sent by both parties together.
fn run_2pc(r: &[Vec<u8>], s: &[Vec<u8>], proto: Proto, wan: bool) -> u64 {
    let (a, b) = mem_pair();
    let go = |ch: &mut dyn Channel, role: Role, set: &[Vec<u8>], seed: u8| {
        let mut rng = AesRng::from_seed([seed; 16]);
        let out = match proto {
            Proto::Ecdh(cfg) => ecdh::run(ch, role, set, &cfg, &mut rng),
            Proto::Kkrt(cfg) => kkrt::run(ch, role, set, &cfg, &mut rng),
            Proto::Rr22(cfg) => rr22::run(ch, role, set, &cfg, &mut rng),
        }
        .unwrap();
        ch.flush().unwrap();
        (out, ch.stats().bytes_sent)
    };
    let ((out, br), (_, bs)) = if wan {
        let (mut a, mut b) = (SimLink::new(a, WAN), SimLink::new(b, WAN));
        std::thread::scope(|sc| {
            let t = sc.spawn(|| go(&mut b, Role::Sender, s, 2));
            let x = go(&mut a, Role::Receiver, r, 1);
            (x, t.join().unwrap())
        })
    } else {
        let (mut a, mut b) = (a, b);
        std::thread::scope(|sc| {
            let t = sc.spawn(|| go(&mut b, Role::Sender, s, 2));
            let x = go(&mut a, Role::Receiver, r, 1);
            (x, t.join().unwrap())
        })
    };
    assert_eq!(
        out.map(|v| v.len()),
        Some(r.len() / 2),
        "wrong intersection"
    );
    br + bs
}

/// One party of a three-party run (receiver rank 0): (result size, bytes sent).
fn party_3pc<C: Channel>(
    s: &mut Session<C>,
    sets: &[Vec<Vec<u8>>; 3],
    cfg: &EcdhConfig,
) -> (Option<usize>, u64) {
    let rank = s.rank();
    let mut rng = AesRng::from_seed([u8::try_from(rank).unwrap_or(0) + 1; 16]);
    let out = ecdh3::run(s, 0, &sets[rank], cfg, &mut rng).unwrap();
    s.flush_all().unwrap();
    (out.map(|v| v.len()), s.stats().bytes_sent)
}

/// One three-party run; every party holds `sets[rank]`. Returns the bytes on the wire.
fn run_3pc(sets: &[Vec<Vec<u8>>; 3], cfg: EcdhConfig, wan: bool) -> u64 {
    let res = if wan {
        let mesh = Session::mem_mesh(3)
            .into_iter()
            .map(|s| s.map(|_, c| SimLink::new(c, WAN)))
            .collect();
        run_parties(mesh, |s| party_3pc(s, sets, &cfg))
    } else {
        run_parties(Session::mem_mesh(3), |s| party_3pc(s, sets, &cfg))
    };
    assert_eq!(res[0].0, Some(sets[0].len() / 2), "wrong intersection");
    res.iter().map(|r| r.1).sum()
}

fn balanced(c: &mut Criterion) {
    let mut g = c.benchmark_group("psi");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for curve in curves() {
        let cfg = EcdhConfig {
            curve,
            ..EcdhConfig::default()
        };
        for (net, wan) in [("lan", false), ("wan100m10ms", true)] {
            for n in sizes(1 << 14) {
                // Two parties: receiver holds [0, n), sender [n/2, 3n/2): 50 % in common.
                let (r, s) = (items(0..n), items(n / 2..n + n / 2));
                let id = format!("ecdh_2pc/{curve}/{net}");
                if n >= SINGLE_RUN_FROM {
                    let t = Instant::now();
                    let bytes = run_2pc(&r, &s, Proto::Ecdh(cfg), wan);
                    let secs = t.elapsed().as_secs_f64();
                    record_single_run(&format!("psi/{id}/{n}"), secs, bytes, n as u64);
                } else {
                    let bytes = run_2pc(&r, &s, Proto::Ecdh(cfg), wan);
                    println!("psi/{id}/{n}: {bytes} B on the wire per run");
                    g.throughput(Throughput::Bytes(bytes));
                    g.bench_with_input(BenchmarkId::new(id, n), &n, |b, _| {
                        b.iter(|| run_2pc(&r, &s, Proto::Ecdh(cfg), wan))
                    });
                }
                drop((r, s));
                // Three parties: P and Q share [0, n), the receiver holds half of it and half
                // new items, so the final intersection is 50 % of the receiver's set.
                let sets = [items(n / 2..n + n / 2), items(0..n), items(0..n)];
                let id = format!("ecdh_3pc/{curve}/{net}");
                if n >= SINGLE_RUN_FROM {
                    let t = Instant::now();
                    let bytes = run_3pc(&sets, cfg, wan);
                    let secs = t.elapsed().as_secs_f64();
                    record_single_run(&format!("psi/{id}/{n}"), secs, bytes, n as u64);
                } else {
                    let bytes = run_3pc(&sets, cfg, wan);
                    println!("psi/{id}/{n}: {bytes} B on the wire per run");
                    g.throughput(Throughput::Bytes(bytes));
                    g.bench_with_input(BenchmarkId::new(id, n), &n, |b, _| {
                        b.iter(|| run_3pc(&sets, cfg, wan))
                    });
                }
            }
        }
    }
    let protos = [
        ("kkrt", Proto::Kkrt(KkrtConfig::default())),
        ("rr22_fast", Proto::Rr22(Rr22Config::default())),
    ];
    for (name, proto) in protos {
        for (net, wan) in [("lan", false), ("wan100m10ms", true)] {
            let mut ns = sizes(1 << 16);
            if full_scale() && name == "rr22_fast" && !wan {
                ns.push(100_000_000);
            }
            for n in ns {
                let (r, s) = (items(0..n), items(n / 2..n + n / 2));
                let id = format!("{name}/{net}");
                if n >= SINGLE_RUN_FROM {
                    let t = Instant::now();
                    let bytes = run_2pc(&r, &s, proto, wan);
                    let secs = t.elapsed().as_secs_f64();
                    record_single_run(&format!("psi/{id}/{n}"), secs, bytes, n as u64);
                } else {
                    let bytes = run_2pc(&r, &s, proto, wan);
                    println!("psi/{id}/{n}: {bytes} B on the wire per run");
                    g.throughput(Throughput::Bytes(bytes));
                    g.bench_with_input(BenchmarkId::new(id, n), &n, |b, _| {
                        b.iter(|| run_2pc(&r, &s, proto, wan))
                    });
                }
            }
        }
    }
    skip(
        "psi/rr22_lowcomm, psi/rr22_malicious",
        "obliv-psi implements only the RR22 fast variant so far",
    );
    g.finish();
}

/// Offline: the server streams its OPRF values, the client builds the cache. Returns the
/// bytes on the wire.
fn ub_offline(
    key: &unbalanced::ServerKey,
    server: &[Vec<u8>],
    cfg: unbalanced::UbConfig,
    path: &std::path::Path,
) -> (unbalanced::Cache, u64) {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|sc| {
        let t = sc.spawn(move || {
            let mut rng = AesRng::from_seed([5; 16]);
            unbalanced::offline_server(&mut a, key, server, &cfg, &mut rng).unwrap();
            a.stats().bytes_sent
        });
        let cache = unbalanced::offline_client(&mut b, &cfg, path).unwrap();
        let bytes = b.stats().bytes_sent + t.join().unwrap();
        (cache, bytes)
    })
}

/// Online: the client's query against the cache. Returns the bytes on the wire.
fn ub_online(
    key: &unbalanced::ServerKey,
    n_server: usize,
    client: &[Vec<u8>],
    cache: &unbalanced::Cache,
    cfg: unbalanced::UbConfig,
) -> u64 {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|sc| {
        let t = sc.spawn(move || {
            unbalanced::online_server(&mut a, key, n_server, &cfg).unwrap();
            a.stats().bytes_sent
        });
        let mut rng = AesRng::from_seed([6; 16]);
        let found = unbalanced::online_client(&mut b, client, cache, &cfg, &mut rng).unwrap();
        assert_eq!(found.len(), client.len() / 2, "wrong intersection");
        b.stats().bytes_sent + t.join().unwrap()
    })
}

fn unbalanced_psi(c: &mut Criterion) {
    let mut g = c.benchmark_group("psi");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let dir = tempfile::tempdir().unwrap();
    let mut shapes = vec![(1usize << 16, 1usize << 10)];
    if full_scale() {
        shapes.push((1_000_000, 1000));
        shapes.push((10_000_000, 100_000));
        skip(
            "psi/unbalanced_*/1e8, 1e9 server",
            "the offline phase at 1e8/1e9 takes hours on 2 cores; projected linearly from 1e7",
        );
    }
    for curve in curves() {
        let cfg = unbalanced::UbConfig {
            curve,
            ..unbalanced::UbConfig::default()
        };
        let mut rng = AesRng::from_seed([4; 16]);
        let key = unbalanced::ServerKey::generate(curve, &mut rng).unwrap();
        for &(ns, nc) in &shapes {
            let server = items(0..ns);
            // Half of the client's items are in the server's set.
            let client = items(ns - nc / 2..ns + nc - nc / 2);
            let path = dir.path().join(format!("cache-{curve}-{ns}"));
            let off = format!("unbalanced_offline/{curve}");
            let on = format!("unbalanced_online/{curve}");
            if ns >= SINGLE_RUN_FROM {
                let t = Instant::now();
                let (cache, bytes) = ub_offline(&key, &server, cfg, &path);
                let secs = t.elapsed().as_secs_f64();
                record_single_run(&format!("psi/{off}/{ns}"), secs, bytes, ns as u64);
                let t = Instant::now();
                let bytes = ub_online(&key, ns, &client, &cache, cfg);
                let secs = t.elapsed().as_secs_f64();
                record_single_run(&format!("psi/{on}/{nc}"), secs, bytes, nc as u64);
                continue;
            }
            let (cache, bytes) = ub_offline(&key, &server, cfg, &path);
            println!("psi/{off}/{ns}: {bytes} B on the wire per run");
            g.throughput(Throughput::Bytes(bytes));
            let scratch = dir.path().join(format!("scratch-{curve}-{ns}"));
            g.bench_with_input(BenchmarkId::new(off, ns), &ns, |b, _| {
                b.iter(|| ub_offline(&key, &server, cfg, &scratch).1)
            });
            let bytes = ub_online(&key, ns, &client, &cache, cfg);
            println!("psi/{on}/{nc} (server {ns}): {bytes} B on the wire per run");
            g.throughput(Throughput::Bytes(bytes));
            g.bench_with_input(BenchmarkId::new(on, nc), &nc, |b, _| {
                b.iter(|| ub_online(&key, ns, &client, &cache, cfg))
            });
        }
    }
    skip(
        "psi/unbalanced_3pc",
        "three-party unbalanced PSI is not implemented in obliv-psi",
    );
    g.finish();
}

criterion_group!(benches, balanced, unbalanced_psi);
criterion_main!(benches);
