//! Benchmarks of the DPF and of PIR (BENCHMARKS.md §3).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::AesRng;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use obliv_net::{LinkModel, SimLink, mem_pair};
use obliv_pir::server::ServerState;
use obliv_pir::{
    Database, DpfKey, PirClient, PirServer, ServerConfig, ServerHandle, dpf, dpf_pir, it_pir,
};
use rand_core::SeedableRng;

fn bench_dpf(c: &mut Criterion) {
    let mut g = c.benchmark_group("dpf");
    let mut rng = AesRng::from_seed([7; 16]);
    for n in [16u32, 20, 24] {
        let (k0, _) = dpf::gen_keys(n, 3, &mut rng).expect("valid domain");
        let mut out = vec![obliv_core::Block::ZERO; k0.output_blocks()];
        g.throughput(Throughput::Elements(1u64 << n));
        g.bench_with_input(BenchmarkId::new("eval_full", n), &n, |b, _| {
            b.iter(|| k0.eval_full_into(&mut out));
        });
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(BenchmarkId::new("gen", n), &n, |b, &n| {
            b.iter(|| dpf::gen_keys(n, 5, &mut rng).expect("valid domain"));
        });
    }
    g.finish();
}

/// Whether `OBLIV_BENCH_SCALE=full` asks for the large sizes.
fn full_scale() -> bool {
    std::env::var("OBLIV_BENCH_SCALE").is_ok_and(|v| v == "full")
}

/// Server time of one DPF-PIR answer (key expansion plus scan) for cases A and B.
fn bench_server(c: &mut Criterion) {
    let mut g = c.benchmark_group("dpf_pir_server");
    let mut rng = AesRng::from_seed([8; 16]);
    let mut cases = vec![(1024usize, 1024usize), (1024, 10240), (65536, 1024)];
    if full_scale() {
        cases.push((65536, 10240));
    }
    for (n, len) in cases {
        let db = Database::random(n, len, &mut rng).expect("valid shape");
        let q = dpf_pir::query(n, n / 2, &mut rng).expect("index in range");
        g.throughput(Throughput::Bytes(db.size_bytes() as u64));
        let id = format!("N={n},rec={len}");
        g.bench_function(BenchmarkId::new("answer", &id), |b| {
            b.iter(|| dpf_pir::answer(&db, &q.to_server0).expect("well-formed key"));
        });
        let bits = DpfKey::from_bytes(&q.to_server0)
            .expect("well-formed key")
            .eval_full();
        g.bench_function(BenchmarkId::new("scan", &id), |b| {
            b.iter(|| db.xor_selected(&bits).expect("bits cover the database"));
        });
    }
    g.finish();
}

/// IT-PIR server time at N = 65536 (case C).
fn bench_it_server(c: &mut Criterion) {
    let mut g = c.benchmark_group("it_pir_server");
    g.sample_size(10);
    let mut rng = AesRng::from_seed([9; 16]);
    let n = 65536;
    let db = Database::random(n, 1024, &mut rng).expect("valid shape");
    let q = it_pir::query(n, 4321, &mut rng).expect("index in range");
    g.throughput(Throughput::Bytes(db.size_bytes() as u64));
    g.bench_function("answer/N=65536,rec=1024", |b| {
        b.iter(|| it_pir::answer(&db, &q.to_server0).expect("well-formed subset"));
    });
    g.finish();
}

/// Two TCP servers on loopback for `db`.
fn tcp_servers(db: &Database, config: &ServerConfig) -> [ServerHandle; 2] {
    [0, 1].map(|_| {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        PirServer::new(db.clone(), config.clone())
            .expect("valid config")
            .spawn(l)
            .expect("spawn server")
    })
}

/// Prints the traffic of one call of `f` on `client` (criterion has no unit for bytes).
fn report_traffic<C: obliv_net::Channel>(
    label: &str,
    client: &mut PirClient<C>,
    per: u64,
    f: impl FnOnce(&mut PirClient<C>),
) {
    let before = client.stats();
    f(client);
    let s = client.stats() - before;
    eprintln!(
        "traffic {label}: {} B up, {} B down per query ({} B total)",
        s.bytes_sent / per,
        s.bytes_received / per,
        s.total_bytes() / per
    );
}

/// End-to-end latency over TCP loopback: cases A and B, 10 KB records, IT-PIR, batch of 10.
fn bench_e2e(c: &mut Criterion) {
    let mut g = c.benchmark_group("e2e_tcp");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    let mut rng = AesRng::from_seed([10; 16]);
    let mut cases = vec![(1024usize, 1024usize), (1024, 10240), (65536, 1024)];
    if full_scale() {
        cases.push((65536, 10240));
    }
    for (n, len) in cases {
        let db = Database::random(n, len, &mut rng).expect("valid shape");
        let servers = tcp_servers(&db, &ServerConfig::default());
        let mut client =
            PirClient::connect(servers[0].local_addr(), servers[1].local_addr()).expect("connect");
        let id = format!("N={n},rec={len}");
        report_traffic(&format!("dpf {id}"), &mut client, 1, |c| {
            c.query(n / 3).expect("query");
        });
        g.bench_function(BenchmarkId::new("dpf_query", &id), |b| {
            b.iter(|| client.query(n / 3).expect("query"));
        });
        if n == 65536 && len == 1024 {
            let batch: Vec<usize> = (0..10).map(|i| i * 6007).collect();
            report_traffic(&format!("batch10 {id}"), &mut client, 10, |c| {
                c.query_batch(&batch).expect("batch");
            });
            g.throughput(Throughput::Elements(10));
            g.bench_function(BenchmarkId::new("batch10", &id), |b| {
                b.iter(|| client.query_batch(&batch).expect("batch"));
            });
            g.throughput(Throughput::Elements(1));
            report_traffic(&format!("it {id}"), &mut client, 1, |c| {
                c.query_it(777).expect("it query");
            });
            g.bench_function(BenchmarkId::new("it_query", &id), |b| {
                b.iter(|| client.query_it(777).expect("it query"));
            });
        }
    }
    g.finish();
}

/// Case B over the simulated link: 20 ms added one-way latency, and 10 Mbps.
fn bench_sim(c: &mut Criterion) {
    let mut g = c.benchmark_group("e2e_sim");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    let mut rng = AesRng::from_seed([11; 16]);
    let n = 65536;
    let db = Database::random(n, 1024, &mut rng).expect("valid shape");
    let state = Arc::new(ServerState::new(db, None).expect("state"));
    let models = [
        (
            "lat20ms",
            LinkModel {
                bandwidth_bps: 1_000_000_000,
                latency: Duration::from_millis(20),
            },
        ),
        ("bw10Mbps", LinkModel::mbps_ms(10, 0)),
    ];
    for (name, model) in models {
        let mut client_ends = Vec::new();
        let mut threads = Vec::new();
        for _ in 0..2 {
            let (a, b) = mem_pair();
            client_ends.push(SimLink::new(a, model));
            let st = Arc::clone(&state);
            let mut server_end = SimLink::new(b, model);
            threads.push(std::thread::spawn(move || {
                let _ = st.serve_channel(&mut server_end, 1 << 20);
            }));
        }
        let c1 = client_ends.pop().expect("two ends");
        let c0 = client_ends.pop().expect("two ends");
        let mut client = PirClient::new(c0, c1, AesRng::from_seed([12; 16])).expect("client");
        g.bench_function(BenchmarkId::new("dpf_query_B", name), |b| {
            b.iter(|| client.query(4321).expect("query"));
        });
        if name == "bw10Mbps" {
            g.bench_function(BenchmarkId::new("it_query_B", name), |b| {
                b.iter(|| client.query_it(4321).expect("query"));
            });
        }
        drop(client);
        for t in threads {
            let _ = t.join();
        }
    }
    g.finish();
}

/// Queries per second with 1/4/8/16 concurrent clients against the TCP servers (each
/// iteration is one query; criterion's elements/s is the QPS, latency = clients / QPS).
fn bench_concurrency(c: &mut Criterion) {
    let mut g = c.benchmark_group("concurrency");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    let n = if full_scale() { 65536 } else { 16384 };
    let mut rng = AesRng::from_seed([13; 16]);
    let db = Database::random(n, 1024, &mut rng).expect("valid shape");
    let servers = tcp_servers(&db, &ServerConfig::default());
    for clients in [1usize, 4, 8, 16] {
        let mut pool: Vec<_> = (0..clients)
            .map(|_| {
                PirClient::connect(servers[0].local_addr(), servers[1].local_addr())
                    .expect("connect")
            })
            .collect();
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new(format!("qps_N={n}"), clients), |b| {
            b.iter_custom(|iters| {
                let per = iters.div_ceil(clients as u64);
                let t = Instant::now();
                std::thread::scope(|s| {
                    for c in pool.iter_mut() {
                        s.spawn(move || {
                            let mut idx = 0usize;
                            for _ in 0..per {
                                idx = (idx + 7919) % n;
                                c.query(idx).expect("query");
                            }
                        });
                    }
                });
                t.elapsed() * u32::try_from(iters).unwrap_or(u32::MAX)
                    / u32::try_from(per * clients as u64).unwrap_or(u32::MAX)
            });
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_dpf,
    bench_server,
    bench_it_server,
    bench_e2e,
    bench_sim,
    bench_concurrency
);
criterion_main!(benches);
