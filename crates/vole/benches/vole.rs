//! Benchmarks of obliv-vole: silent subfield (bits, 64-bit) / GF(2^128) VOLE end to end (both parties, one
//! thread each, in-memory channel), and the ExConv7x24 encoder alone.
//!
//! The protocol benches report **CPU time per core**: the thread CPU time of the busier party
//! (Linux the thread's CPU clock (`obliv_core::cpu_time`); wall time elsewhere), so figures stay meaningful on a
//! shared machine. The encoder bench reports wall time.
//!
//! `cargo bench -p obliv-vole --bench vole` (2^20 outputs);
//! `OBLIV_BENCH_SCALE=full cargo bench -p obliv-vole --bench vole` (2^24).
//! Communication (bytes per correlation, both directions) is printed once per size.
#![allow(missing_docs, clippy::unwrap_used)] // a bench: panics are failures

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block, Prg};
use obliv_net::{Channel, mem_pair};
use obliv_vole::{
    BlockPair, CodeField, ExConvCode, LpnCode, Security, Subfield64VoleReceiver,
    Subfield64VoleSender, SubfieldVoleReceiver, SubfieldVoleSender, VoleConfig, VoleReceiver,
    VoleSender,
};

fn log_n() -> u32 {
    if std::env::var("OBLIV_BENCH_SCALE").as_deref() == Ok("full") {
        24
    } else {
        20
    }
}

/// CPU time of the calling thread, if the OS tells us.
fn thread_cpu() -> Option<Duration> {
    obliv_core::cpu_time::thread()
}

/// Which generator a bench runs.
#[derive(Clone, Copy)]
enum Flavor {
    Subfield,
    Subfield64,
    Gf128,
}

/// `iters` extensions of `n` in chunks, black-boxing every chunk; returns the CPU time.
macro_rules! timed {
    ($gen:expr, $ch:expr, $rng:expr, $n:expr, $iters:expr, $sink:expr) => {{
        let t0 = thread_cpu();
        for _ in 0..$iters {
            $gen.extend_chunks($ch, $n, $rng, $sink).unwrap();
        }
        t0.zip(thread_cpu()).map(|(a, b)| b - a)
    }};
}

/// Runs `iters` extensions of `n` on fresh generators after one untimed extension of `n`
/// (steady state: bootstrapped pools, allocated working buffers); returns the CPU time of
/// the busier party over the timed extensions (wall time if CPU time is unavailable) and
/// the bytes exchanged per extension.
fn run(flavor: Flavor, security: Security, n: usize, iters: u64) -> (Duration, u64) {
    let cfg = VoleConfig {
        security,
        max_chunk: n.min(obliv_vole::DEFAULT_MAX_CHUNK),
    };
    let (mut c0, mut c1) = mem_pair();
    let barrier = Arc::new(Barrier::new(2));
    let b2 = barrier.clone();
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([1; 16]);
        let sink = |b: &[Block]| {
            std::hint::black_box(b);
            Ok(())
        };
        match flavor {
            Flavor::Gf128 => {
                let mut s = VoleSender::new(&mut c0, cfg, &mut rng).unwrap();
                s.extend_chunks(&mut c0, n, &mut rng, sink).unwrap(); // steady state
                b2.wait();
                timed!(s, &mut c0, &mut rng, n, iters, sink)
            }
            Flavor::Subfield => {
                let mut s = SubfieldVoleSender::new(&mut c0, cfg, &mut rng).unwrap();
                s.extend_chunks(&mut c0, n, &mut rng, sink).unwrap();
                b2.wait();
                timed!(s, &mut c0, &mut rng, n, iters, sink)
            }
            Flavor::Subfield64 => {
                let mut s = Subfield64VoleSender::new(&mut c0, cfg, &mut rng).unwrap();
                s.extend_chunks(&mut c0, n, &mut rng, sink).unwrap();
                b2.wait();
                timed!(s, &mut c0, &mut rng, n, iters, sink)
            }
        }
    });
    let mut rng = AesRng::from_seed([2; 16]);
    let start = Instant::now();
    let before;
    let receiver_cpu = match flavor {
        Flavor::Gf128 => {
            let mut r = VoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
            r.extend_chunks(&mut c1, n, &mut rng, |_, _| Ok(()))
                .unwrap();
            barrier.wait();
            before = c1.stats();
            timed!(
                r,
                &mut c1,
                &mut rng,
                n,
                iters,
                |a: &[Block], c: &[Block]| {
                    std::hint::black_box((a, c));
                    Ok(())
                }
            )
        }
        Flavor::Subfield => {
            let mut r = SubfieldVoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
            r.extend_chunks(&mut c1, n, &mut rng, |_, _| Ok(()))
                .unwrap();
            barrier.wait();
            before = c1.stats();
            timed!(r, &mut c1, &mut rng, n, iters, |a: &[u8], c: &[Block]| {
                std::hint::black_box((a, c));
                Ok(())
            })
        }
        Flavor::Subfield64 => {
            let mut r = Subfield64VoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
            r.extend_chunks(&mut c1, n, &mut rng, |_, _| Ok(()))
                .unwrap();
            barrier.wait();
            before = c1.stats();
            timed!(r, &mut c1, &mut rng, n, iters, |a: &[u64], c: &[Block]| {
                std::hint::black_box((a, c));
                Ok(())
            })
        }
    };
    let elapsed = start.elapsed();
    let sender_cpu = sender.join().unwrap();
    let bytes = (c1.stats() - before).total_bytes() / iters.max(1);
    let time = match (sender_cpu, receiver_cpu) {
        (Some(s), Some(r)) => s.max(r),
        _ => elapsed,
    };
    (time, bytes)
}

fn bench_vole(c: &mut Criterion) {
    let n = 1usize << log_n();
    let mut g = c.benchmark_group("silent_vole");
    g.sample_size(10);
    g.throughput(Throughput::Elements(n as u64));
    for (name, flavor, security) in [
        (
            "subfield_semi_honest",
            Flavor::Subfield,
            Security::SemiHonest,
        ),
        ("subfield_malicious", Flavor::Subfield, Security::Malicious),
        (
            "subfield64_semi_honest",
            Flavor::Subfield64,
            Security::SemiHonest,
        ),
        (
            "subfield64_malicious",
            Flavor::Subfield64,
            Security::Malicious,
        ),
        ("gf128_semi_honest", Flavor::Gf128, Security::SemiHonest),
        ("gf128_malicious", Flavor::Gf128, Security::Malicious),
    ] {
        let (_, bytes) = run(flavor, security, n, 1);
        eprintln!(
            "{name} n=2^{}: {bytes} bytes, {:.4} bits per correlation",
            log_n(),
            bytes as f64 * 8.0 / n as f64
        );
        g.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter_custom(|iters| run(flavor, security, n, iters).0)
        });
    }
    g.finish();
}

/// One RR22-style one-shot GF(2^128) VOLE: fresh generators on both sides (base OT and
/// IKNP included), one `extend(m)`, generators dropped; returns the busier party's CPU
/// time (the receiver's). Fresh working buffers each time, so this measures the page
/// faults and first touches that steady-state extensions avoid.
fn oneshot(security: Security, m: usize) -> Duration {
    let cfg = VoleConfig::with_security(security);
    let (mut c0, mut c1) = mem_pair();
    let sender = std::thread::spawn(move || {
        let t0 = thread_cpu();
        let mut rng = AesRng::from_seed([1; 16]);
        let mut s = VoleSender::new(&mut c0, cfg, &mut rng).unwrap();
        std::hint::black_box(s.extend(&mut c0, m, &mut rng).unwrap());
        drop(s);
        t0.zip(thread_cpu()).map(|(a, b)| b - a)
    });
    let (t0, w0) = (thread_cpu(), Instant::now());
    let mut rng = AesRng::from_seed([2; 16]);
    let mut r = VoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
    std::hint::black_box(r.extend(&mut c1, m, &mut rng).unwrap());
    drop(r);
    let receiver = t0.zip(thread_cpu()).map(|(a, b)| b - a);
    let wall = w0.elapsed();
    match (sender.join().unwrap(), receiver) {
        (Some(s), Some(r)) => s.max(r),
        _ => wall,
    }
}

fn bench_oneshot(c: &mut Criterion) {
    // The OKVS size of RR22 fast at 2^20 items (bins of 2^14): the VOLE length it asks for.
    let m = if log_n() == 20 {
        1_415_700
    } else {
        1usize << log_n()
    };
    let mut g = c.benchmark_group("oneshot_gf128_vole");
    g.sample_size(10);
    g.throughput(Throughput::Elements(m as u64));
    for (name, security) in [
        ("semi_honest", Security::SemiHonest),
        ("malicious", Security::Malicious),
    ] {
        g.bench_function(BenchmarkId::new(name, m), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| oneshot(security, m)).sum())
        });
    }
    g.finish();
}

fn bench_code(c: &mut Criterion) {
    let mut g = c.benchmark_group("exconv7x24_dual_encode");
    g.sample_size(10);
    let k = 1usize << log_n();
    let n = 2 * k;
    g.throughput(Throughput::Elements(k as u64));
    let x = Prg::new(Block(1)).blocks(n);
    for field in [CodeField::Gf2, CodeField::Gf128] {
        let code = ExConvCode::new(k, n, field);
        g.bench_with_input(
            BenchmarkId::new(format!("{field:?}_blocks"), k),
            &x,
            |b, x| {
                b.iter_batched_ref(
                    || x.clone(),
                    |v| code.dual_encode(v),
                    criterion::BatchSize::LargeInput,
                )
            },
        );
    }
    // The GF(2^128) receiver's (A, C) pairs.
    let pairs: Vec<BlockPair> = x.chunks_exact(2).map(|p| BlockPair([p[0], p[1]])).collect();
    let code = ExConvCode::new(k / 2, n / 2, CodeField::Gf128);
    g.bench_with_input(BenchmarkId::new("Gf128_pairs", k / 2), &pairs, |b, x| {
        b.iter_batched_ref(
            || x.clone(),
            |v| code.dual_encode(v),
            criterion::BatchSize::LargeInput,
        )
    });
    let code = ExConvCode::new(k, n, CodeField::Gf2);
    let bits: Vec<u8> = x.iter().map(|b| u8::from(b.lsb())).collect();
    g.bench_with_input(
        BenchmarkId::new("Gf2_bits_and_blocks", k),
        &(bits, x),
        |b, (bits, x)| {
            b.iter_batched_ref(
                || (bits.clone(), x.clone()),
                |(a, c)| code.dual_encode2(a, c),
                criterion::BatchSize::LargeInput,
            )
        },
    );
    g.finish();
}

criterion_group!(benches, bench_vole, bench_oneshot, bench_code);
criterion_main!(benches);
