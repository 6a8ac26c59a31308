//! BENCHMARKS.md §3 (mpc4j-pir, DPF-PIR against IT-PIR): two servers and a client over TCP
//! loopback (cases A, B, C, 10 KB records, batch of 10, 1/4/8/16 concurrent clients), over the
//! simulated link (20 ms added latency, 10 Mbps), and the server time of one answer.
//! Criterion's throughput is the traffic of one query (up + down, both servers) for the
//! latency benches, and queries for the concurrency and batch benches.
//!
//! Ids: `pir/dpf_tcp/<N>x<record>`, `pir/dpf_server/<N>x<record>`, `pir/it_tcp/<N>x<record>`,
//! `pir/dpf_sim_lat20ms/…`, `pir/dpf_sim_10mbps/…`, `pir/concurrency/<clients>`,
//! `pir/batch10/…`. `cargo bench -p obliv-bench --bench pir`; `OBLIV_BENCH_SCALE=full` adds
//! case B with 10 KB records.
#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use obliv_bench::{full_scale, record_traffic};
use obliv_core::AesRng;
use obliv_net::{Channel, LinkModel, SimLink, mem_pair};
use obliv_pir::server::ServerState;
use obliv_pir::{Database, PirClient, PirServer, ServerConfig, ServerHandle, dpf_pir};
use rand_core::SeedableRng;

fn tcp_servers(db: &Database) -> [ServerHandle; 2] {
    [0, 1].map(|_| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        PirServer::new(db.clone(), ServerConfig::default())
            .unwrap()
            .spawn(l)
            .unwrap()
    })
}

/// Bytes on the wire (both directions, both servers) of one call of `f`.
fn traffic<C: Channel>(client: &mut PirClient<C>, f: impl FnOnce(&mut PirClient<C>)) -> u64 {
    let before = client.stats();
    f(client);
    (client.stats() - before).total_bytes()
}

fn tcp(c: &mut Criterion) {
    let mut g = c.benchmark_group("pir");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut rng = AesRng::from_seed([10; 16]);
    let mut cases = vec![(1024usize, 1024usize), (1024, 10240), (65536, 1024)];
    if full_scale() {
        cases.push((65536, 10240));
    } else {
        println!(
            "skipped pir/dpf_tcp/65536x10240: 640 MB per server copy; OBLIV_BENCH_SCALE=full runs it"
        );
    }
    for (n, len) in cases {
        let db = Database::random(n, len, &mut rng).unwrap();
        let shape = format!("{n}x{len}");
        // Server time: one DPF key expanded and the database scanned.
        let q = dpf_pir::query(n, n / 2, &mut rng).unwrap();
        // One answer per iteration (the scan reads `db.size_bytes()` bytes).
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("dpf_server/{shape}"), |b| {
            b.iter(|| dpf_pir::answer(&db, &q.to_server0).unwrap())
        });
        let servers = tcp_servers(&db);
        let mut client =
            PirClient::connect(servers[0].local_addr(), servers[1].local_addr()).unwrap();
        let bytes = traffic(&mut client, |c| {
            c.query(n / 3).unwrap();
        });
        println!("pir/dpf_tcp/{shape}: {bytes} B per query");
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function(format!("dpf_tcp/{shape}"), |b| {
            b.iter(|| client.query(n / 3).unwrap())
        });
        if (n, len) == (65536, 1024) {
            let bytes = traffic(&mut client, |c| {
                c.query_it(777).unwrap();
            });
            println!("pir/it_tcp/{shape}: {bytes} B per query");
            g.throughput(Throughput::Bytes(bytes));
            g.bench_function(format!("it_tcp/{shape}"), |b| {
                b.iter(|| client.query_it(777).unwrap())
            });
            let batch: Vec<usize> = (0..10).map(|i| i * 6007).collect();
            let bytes = traffic(&mut client, |c| {
                c.query_batch(&batch).unwrap();
            });
            // Criterion's throughput is the 10 queries (ms per query); the bytes go beside.
            record_traffic(&format!("pir/batch10/{shape}"), bytes);
            g.throughput(Throughput::Elements(10));
            g.bench_function(format!("batch10/{shape}"), |b| {
                b.iter(|| client.query_batch(&batch).unwrap())
            });
            let per_query = traffic(&mut client, |c| {
                c.query(n / 3).unwrap();
            });
            concurrency(&mut g, &servers, n, per_query);
        }
        drop(client);
        for s in servers {
            let _ = s.shutdown();
        }
    }
    g.finish();
}

/// 1, 4, 8 and 16 clients querying at once; each iteration is one query, so criterion's
/// elements/s is the QPS.
fn concurrency(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    servers: &[ServerHandle; 2],
    n: usize,
    per_query: u64,
) {
    for clients in [1usize, 4, 8, 16] {
        // Throughput is queries (QPS); every query moves the bytes of one DPF-PIR query.
        record_traffic(&format!("pir/concurrency/{clients}"), per_query);
        let mut pool: Vec<_> = (0..clients)
            .map(|_| PirClient::connect(servers[0].local_addr(), servers[1].local_addr()).unwrap())
            .collect();
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("concurrency/{clients}"), |b| {
            b.iter_custom(|iters| {
                let per = iters.div_ceil(clients as u64);
                let t = Instant::now();
                std::thread::scope(|s| {
                    for c in pool.iter_mut() {
                        s.spawn(move || {
                            let mut idx = 0usize;
                            for _ in 0..per {
                                idx = (idx + 7919) % n;
                                c.query(idx).unwrap();
                            }
                        });
                    }
                });
                // Time per query of the whole pool, scaled to the `iters` criterion asked for.
                t.elapsed()
                    .mul_f64(iters as f64 / (per * clients as u64) as f64)
            })
        });
    }
}

/// Case B over the simulated link: 20 ms added one-way latency, and 10 Mbps.
fn sim(c: &mut Criterion) {
    let mut g = c.benchmark_group("pir");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let mut rng = AesRng::from_seed([11; 16]);
    let (n, len) = (65536, 1024);
    let db = Database::random(n, len, &mut rng).unwrap();
    let state = Arc::new(ServerState::new(db, None).unwrap());
    let lat20 = LinkModel {
        bandwidth_bps: 1_000_000_000,
        latency: Duration::from_millis(20),
    };
    for (name, model) in [
        ("dpf_sim_lat20ms", lat20),
        ("dpf_sim_10mbps", LinkModel::mbps_ms(10, 0)),
    ] {
        let mut ends = Vec::new();
        let mut threads = Vec::new();
        for _ in 0..2 {
            let (a, b) = mem_pair();
            ends.push(SimLink::new(a, model));
            let st = Arc::clone(&state);
            let mut server_end = SimLink::new(b, model);
            threads.push(std::thread::spawn(move || {
                let _ = st.serve_channel(&mut server_end, 1 << 20);
            }));
        }
        let c1 = ends.pop().unwrap();
        let c0 = ends.pop().unwrap();
        let mut client = PirClient::new(c0, c1, AesRng::from_seed([12; 16])).unwrap();
        let bytes = traffic(&mut client, |c| {
            c.query(4321).unwrap();
        });
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function(format!("{name}/{n}x{len}"), |b| {
            b.iter(|| client.query(4321).unwrap())
        });
        drop(client);
        for t in threads {
            let _ = t.join();
        }
    }
    g.finish();
}

criterion_group!(benches, tcp, sim);
criterion_main!(benches);
