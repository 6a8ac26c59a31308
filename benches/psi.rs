//! BENCHMARKS.md §1 (SecretFlow PSI white paper): balanced ECDH-PSI for two and three parties,
//! KKRT16 and the three RR22 variants, on the LAN (in-memory channel) and on the simulated
//! 100 Mbps / 10 ms link (and 100 Mbps / 50 ms, the second standard's), and unbalanced ECDH-OPRF PSI split into its offline and online
//! phases.
//!
//! Ids (n per party, 50 % overlap as in `generate_psi.py`):
//! - `psi/ecdh_2pc/<curve>/<lan|wan100m10ms|wan100m50ms>/<n>`, `psi/ecdh_3pc/<curve>/<net>/<n>`:
//!   FourQ and Curve25519 at 2^14 on every network and 2^12 on the LAN; secp256k1, SM2 and P-256 (not
//!   in the document, but SecretFlow offers the first two) at 2^10 on the LAN, as they are
//!   about 20× slower;
//! - `psi/{kkrt,rr22_fast,rr22_lowcomm,rr22_malicious}/<net>/<n>`: 2^16 on every network,
//!   2^12 on the LAN;
//! - `psi/unbalanced_offline/<curve>/<n_server>`, `psi/unbalanced_online/<curve>/<n_client>`:
//!   FourQ (the document's curve), server 2^16 and client 2^10;
//! - `psi/unbalanced_3pc/fourq/<n>`: three-party ECDH-PSI on the document's unbalanced shape,
//!   alice (receiver) and bob `n`, carol `n/1000`, 5 items common to all three; `n` = 2^16
//!   (1e6 and 1e7 at full scale).
//!
//! Criterion's throughput is the bytes on the wire of one run (all parties), so the report
//! shows the traffic beside the time; each bench also prints it.
//!
//! `cargo bench -p obliv-bench --bench psi`; `OBLIV_BENCH_SCALE=full` adds 2^20 and 1e7 per
//! side (one run each, recorded for the report; 1e8 for RR22 fast on the LAN; 2^16 for the
//! slow curves) and prints the sizes it skips.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group,
    criterion_main, measurement::WallTime,
};
use obliv_bench::{SINGLE_RUN_FROM, full_scale, record_single_run, skip};
use obliv_core::AesRng;
use obliv_ec::Curve;
use obliv_net::{Channel, LinkModel, Session, SimLink, mem_pair, run_parties};
use obliv_psi::ecdh::{self, EcdhConfig, Role};
use obliv_psi::kkrt::{self, KkrtConfig};
use obliv_psi::rr22::{self, Rr22Config, Variant};
use obliv_psi::{ecdh3, unbalanced};
use rand_core::SeedableRng;

/// The documents' networks: 100 Mbps with 10 ms one way, and the second standard's 100 Mbps
/// with 50 ms.
const fn wan(ms: u64) -> Option<LinkModel> {
    Some(LinkModel {
        bandwidth_bps: 100_000_000,
        latency: Duration::from_millis(ms),
    })
}

/// The networks of the id (`None`: the in-memory channel, `lan`).
const NETS: [(&str, Option<LinkModel>); 3] = [
    ("lan", None),
    ("wan100m10ms", wan(10)),
    ("wan100m50ms", wan(50)),
];

fn items(range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{i:016}").into_bytes()).collect()
}

/// The sizes run for one protocol: `default`, plus 2^20 and 1e7 at full scale.
fn sizes(default: usize) -> Vec<usize> {
    let mut v = vec![default];
    if full_scale() {
        v.extend([1 << 20, 10_000_000]);
    }
    v
}

/// Benchmarks `run` (which returns the bytes on the wire of one run) as `psi/<id>/<n>`: with
/// criterion below [`SINGLE_RUN_FROM`], else once, recorded for the report.
fn bench_run(g: &mut BenchmarkGroup<'_, WallTime>, id: &str, n: usize, run: impl Fn() -> u64) {
    if n >= SINGLE_RUN_FROM {
        let t = Instant::now();
        let bytes = run();
        let secs = t.elapsed().as_secs_f64();
        record_single_run(&format!("psi/{id}/{n}"), secs, bytes, n as u64);
    } else {
        let bytes = run();
        println!("psi/{id}/{n}: {bytes} B on the wire per run");
        g.throughput(Throughput::Bytes(bytes));
        g.bench_with_input(BenchmarkId::new(id, n), &n, |b, _| b.iter(&run));
    }
}

/// A two-party protocol of the document.
#[derive(Clone, Copy, Debug)]
enum Proto {
    Ecdh(EcdhConfig),
    Kkrt(KkrtConfig),
    Rr22(Rr22Config),
}

/// One two-party run; returns the bytes sent by both parties together.
fn run_2pc(r: &[Vec<u8>], s: &[Vec<u8>], proto: Proto, link: Option<LinkModel>) -> u64 {
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
    let ((out, br), (_, bs)) = if let Some(m) = link {
        let (mut a, mut b) = (SimLink::new(a, m), SimLink::new(b, m));
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

/// One party of a three-party run (receiver rank 0, alice in the document): (its output,
/// bytes sent).
fn party_3pc<C: Channel>(
    s: &mut Session<C>,
    sets: &[Vec<Vec<u8>>; 3],
    cfg: &EcdhConfig,
) -> (Option<Vec<usize>>, u64) {
    let rank = s.rank();
    let mut rng = AesRng::from_seed([u8::try_from(rank).unwrap_or(0) + 1; 16]);
    let out = ecdh3::run(s, 0, &sets[rank], cfg, &mut rng).unwrap();
    s.flush_all().unwrap();
    (out, s.stats().bytes_sent)
}

/// One three-party run; every party holds `sets[rank]`, rank 0 receives. Returns the
/// receiver's output (indices into `sets[0]`) and the bytes on the wire (all parties).
fn run_3pc(
    sets: &[Vec<Vec<u8>>; 3],
    cfg: EcdhConfig,
    link: Option<LinkModel>,
) -> (Vec<usize>, u64) {
    let mut res = if let Some(m) = link {
        let mesh = Session::mem_mesh(3)
            .into_iter()
            .map(|s| s.map(|_, c| SimLink::new(c, m)))
            .collect();
        run_parties(mesh, |s| party_3pc(s, sets, &cfg))
    } else {
        run_parties(Session::mem_mesh(3), |s| party_3pc(s, sets, &cfg))
    };
    assert!(
        res[1].0.is_none() && res[2].0.is_none(),
        "only the receiver learns the result"
    );
    let bytes = res.iter().map(|r| r.1).sum();
    (res[0].0.take().expect("the receiver has a result"), bytes)
}

fn group(c: &mut Criterion) -> BenchmarkGroup<'_, WallTime> {
    let mut g = c.benchmark_group("psi");
    // Protocol runs take 10 ms to 1 s: ten samples of one run each, a short window.
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g
}

/// Two- and three-party ECDH-PSI on every curve.
fn ecdh_psi(c: &mut Criterion) {
    let mut g = group(c);
    if full_scale() {
        skip(
            "psi/ecdh_*/1e8, 1e9",
            "1e8 and 1e9 per side take hours per run on 2 cores; the report projects from 1e7",
        );
        skip(
            "psi/ecdh_*/{secp256k1,sm2,p256}/1e6 and above",
            "about 20x slower than FourQ (2^16 per side takes 10-20 s); run 2^16 only",
        );
    }
    for curve in Curve::ALL {
        let cfg = EcdhConfig {
            curve,
            ..EcdhConfig::default()
        };
        // FourQ and Curve25519 are the document's curves; the others run small, LAN only.
        let doc_curve = matches!(curve, Curve::FourQ | Curve::Curve25519);
        let (nets, ns) = if doc_curve {
            (&NETS[..], sizes(1 << 14))
        } else if full_scale() {
            (&NETS[..1], vec![1 << 10, 1 << 16])
        } else {
            (&NETS[..1], vec![1 << 10])
        };
        for &(net, link) in nets {
            // A smaller size on the LAN gives the scaling plot a slope; the 50 ms link (the
            // second standard's, at 1e9 only) runs the default size only.
            let small = (doc_curve && link.is_none()).then_some(1 << 12);
            let ns = if net == "wan100m50ms" {
                &ns[..1]
            } else {
                &ns[..]
            };
            for n in small.into_iter().chain(ns.iter().copied()) {
                // Two parties: receiver holds [0, n), sender [n/2, 3n/2): 50 % in common.
                let (r, s) = (items(0..n), items(n / 2..n + n / 2));
                bench_run(&mut g, &format!("ecdh_2pc/{curve}/{net}"), n, || {
                    run_2pc(&r, &s, Proto::Ecdh(cfg), link)
                });
                drop((r, s));
                // Three parties: P and Q share [0, n), the receiver holds half of it and half
                // new items, so the final intersection is 50 % of the receiver's set.
                let sets = [items(n / 2..n + n / 2), items(0..n), items(0..n)];
                bench_run(&mut g, &format!("ecdh_3pc/{curve}/{net}"), n, || {
                    let (out, bytes) = run_3pc(&sets, cfg, link);
                    assert_eq!(out.len(), n / 2, "wrong intersection");
                    bytes
                });
            }
        }
    }
    g.finish();
}

/// KKRT16 and RR22 fast, low-communication and malicious.
fn oprf_psi(c: &mut Criterion) {
    let mut g = group(c);
    let protos = [
        // The cuckoo factor of SecretFlow's KKRT, whose published figures these rows
        // reproduce (the library default is the 2^-40 factor, about 18 % more OPRF bytes).
        (
            "kkrt",
            Proto::Kkrt(KkrtConfig {
                cuckoo_factor: Some(1.27),
                ..KkrtConfig::default()
            }),
        ),
        ("rr22_fast", Proto::Rr22(Rr22Config::new(Variant::Fast))),
        (
            "rr22_lowcomm",
            Proto::Rr22(Rr22Config::new(Variant::LowComm)),
        ),
        (
            "rr22_malicious",
            Proto::Rr22(Rr22Config::new(Variant::Malicious)),
        ),
    ];
    if full_scale() {
        skip(
            "psi/{kkrt,rr22_*}/1e8 (except rr22_fast on the LAN), 1e9",
            "hours per run on 2 cores; the report projects from 1e7",
        );
    }
    for (name, proto) in protos {
        for (net, link) in NETS {
            let mut ns = if net == "wan100m50ms" {
                vec![1 << 16]
            } else {
                sizes(1 << 16)
            };
            if link.is_none() {
                // A smaller size on the LAN gives the scaling plot a slope.
                ns.insert(0, 1 << 12);
            }
            if full_scale() && name == "rr22_fast" && link.is_none() {
                ns.push(100_000_000);
            }
            for n in ns {
                let (r, s) = (items(0..n), items(n / 2..n + n / 2));
                bench_run(&mut g, &format!("{name}/{net}"), n, || {
                    run_2pc(&r, &s, proto, link)
                });
            }
        }
    }
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
            a.flush().unwrap();
            a.stats().bytes_sent
        });
        let cache = unbalanced::offline_client(&mut b, &cfg, path).unwrap();
        b.flush().unwrap();
        let bytes = b.stats().bytes_sent + t.join().unwrap();
        (cache, bytes)
    })
}

/// Online: the client's query against the cache. Returns the bytes on the wire.
fn ub_online(
    key: &unbalanced::ServerKey,
    set: &unbalanced::ServerSet,
    client: &[Vec<u8>],
    cache: &unbalanced::Cache,
    cfg: unbalanced::UbConfig,
) -> u64 {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|sc| {
        let t = sc.spawn(move || {
            unbalanced::online_server(&mut a, key, set, &cfg).unwrap();
            a.flush().unwrap();
            a.stats().bytes_sent
        });
        let mut rng = AesRng::from_seed([6; 16]);
        let found = unbalanced::online_client(&mut b, client, cache, &cfg, &mut rng).unwrap();
        assert_eq!(found.len(), client.len() / 2, "wrong intersection");
        b.flush().unwrap();
        b.stats().bytes_sent + t.join().unwrap()
    })
}

fn unbalanced_psi(c: &mut Criterion) {
    let mut g = group(c);
    let dir = tempfile::tempdir().unwrap();
    let mut shapes = vec![(1usize << 16, 1usize << 10)];
    if full_scale() {
        shapes.push((1_000_000, 1000));
        shapes.push((10_000_000, 100_000));
        skip(
            "psi/unbalanced_*/1e8, 1e9 server",
            "the offline phase at 1e8/1e9 takes hours on 2 cores; the report projects from 1e7",
        );
    }
    skip(
        "psi/unbalanced_*/{25519,secp256k1,sm2,p256}",
        "the document runs unbalanced PSI on FourQ only (obliv-psi takes any curve)",
    );
    let curve = Curve::FourQ;
    let cfg = unbalanced::UbConfig {
        curve,
        ..unbalanced::UbConfig::default()
    };
    let mut rng = AesRng::from_seed([4; 16]);
    let key = unbalanced::ServerKey::generate(curve, &mut rng).unwrap();
    for (ns, nc) in shapes {
        let server = items(0..ns);
        // Half of the client's items are in the server's set.
        let client = items(ns - nc / 2..ns + nc - nc / 2);
        let path = dir.path().join(format!("cache-{curve}-{ns}"));
        let scratch = dir.path().join(format!("scratch-{curve}-{ns}"));
        bench_run(&mut g, &format!("unbalanced_offline/{curve}"), ns, || {
            ub_offline(&key, &server, cfg, &scratch).1
        });
        let (cache, _) = ub_offline(&key, &server, cfg, &path);
        // The server keeps its set's digest from the offline phase (not timed online).
        let set = unbalanced::ServerSet::new(&key, &server);
        println!("psi/unbalanced_online/{curve}/{nc}: server set {ns}");
        bench_run(&mut g, &format!("unbalanced_online/{curve}"), nc, || {
            ub_online(&key, &set, &client, &cache, cfg)
        });
    }
    g.finish();
}

/// The three sets of the document's three-party unbalanced run (`1亿&1亿&10万=5`: alice,
/// bob, carol): alice (rank 0, the receiver) and bob hold `n` items, carol `n / 1000`, and
/// `k` items are common to all three (5 at 1e8 and at every smaller size, 50 at 1e9, as in
/// the document); the sets are otherwise disjoint. Returns the sets and the plain
/// intersection (indices into alice's set).
fn ub3_sets(n: usize) -> ([Vec<Vec<u8>>; 3], Vec<usize>) {
    let (m, k) = (n / 1000, (n / 20_000_000).max(5));
    let alice = items(0..n);
    let bob: Vec<Vec<u8>> = items(0..k).into_iter().chain(items(n..2 * n - k)).collect();
    let carol: Vec<Vec<u8>> = items(0..k)
        .into_iter()
        .chain(items(2 * n..2 * n + m - k))
        .collect();
    // The plain three-way intersection: carol's small set first, then bob's, then alice's.
    let small: std::collections::HashSet<&[u8]> = carol.iter().map(Vec::as_slice).collect();
    let both: std::collections::HashSet<&[u8]> = bob
        .iter()
        .map(Vec::as_slice)
        .filter(|x| small.contains(x))
        .collect();
    let expect: Vec<usize> = (0..n).filter(|&i| both.contains(&alice[i][..])).collect();
    assert_eq!(expect.len(), k);
    ([alice, bob, carol], expect)
}

/// Three-party unbalanced ECDH-PSI (`ECDH_PSI_3PC`, FourQ, receiver alice) on the document's
/// shape `n & n & n/1000` with a handful of common items: `psi/unbalanced_3pc/fourq/<n>`,
/// `n` the size of the two large sets.
///
/// `ecdh3::run` takes the receiver's rank and makes the lower other rank `P` (bob, `n`) and
/// the higher `Q` (carol, `n/1000`); with the document's receiver alice holding a large set,
/// the exponentiations are: bob `2n + m` (his own set, carol's, alice's on the chain), carol
/// `2n + m` (her own, bob's, alice's on the chain, each of alice's hashed), alice `n + |W|`
/// (her own set; `W` = bob ∩ carol, 5 here): about `5n`, all on the two large sets; carol's
/// `m = n/1000` items cost almost nothing. The traffic is about `n` × (32 B bob → carol,
/// 32 B alice → bob, 32 B bob → carol, and carol's two truncated hashes to alice). A small
/// receiver would save alice's `n` (about a fifth); we keep the document's roles.
fn unbalanced_3pc(c: &mut Criterion) {
    let mut g = group(c);
    let mut ns = vec![1usize << 16];
    if full_scale() {
        ns.extend([1_000_000, 10_000_000]);
        skip(
            "psi/unbalanced_3pc/fourq/1e8, 1e9",
            "hours per run on 2 cores; the report projects from 1e7",
        );
    }
    let cfg = EcdhConfig {
        curve: Curve::FourQ,
        ..EcdhConfig::default()
    };
    for n in ns {
        let (sets, expect) = ub3_sets(n);
        println!(
            "psi/unbalanced_3pc/fourq/{n}: alice (receiver) {n}, bob {n}, carol {}, {} in common",
            sets[2].len(),
            expect.len()
        );
        bench_run(&mut g, "unbalanced_3pc/fourq", n, || {
            let (out, bytes) = run_3pc(&sets, cfg, None);
            assert_eq!(out, expect, "wrong intersection");
            bytes
        });
    }
    g.finish();
}

criterion_group!(benches, ecdh_psi, oprf_psi, unbalanced_psi, unbalanced_3pc);
criterion_main!(benches);
