//! Benchmarks of obliv-ot: base OT (128), IKNP random and correlated OT, SoftSpokenOT random
//! OT (k = 2, 4, 8), KKRT16 OPRF.
//!
//! Both parties run in one process on two threads over the in-memory channel; the time is the
//! wall-clock time of the whole protocol, and the bytes each party sent are printed next to
//! it. Sizes: 2^20 OTs and 2^16 / 2^20 OPRFs by default; `OBLIV_BENCH_SCALE=full` adds 2^24
//! OTs.
#![allow(clippy::unwrap_used)] // a harness: any failure should abort the run loudly

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_core::{AesRng, Block};
use obliv_net::{Channel, mem_pair};
use obliv_ot::{base, iknp, kkrt, softspoken};
use rand_core::SeedableRng;

fn full() -> bool {
    std::env::var("OBLIV_BENCH_SCALE").is_ok_and(|v| v == "full")
}

fn bench_base(c: &mut Criterion) {
    let mut g = c.benchmark_group("base_ot");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    let n = 128;
    let mut printed = false;
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("co15_ristretto", n), |b| {
        b.iter(|| {
            let (mut a, mut r) = mem_pair();
            let t = std::thread::spawn(move || {
                let mut rng = AesRng::from_seed([1; 16]);
                let out = base::send_random(&mut a, n, &mut rng).unwrap();
                (out, a.stats())
            });
            let choices = iknp::random_bits(n, &mut AesRng::from_seed([2; 16]));
            let got = base::receive_random(&mut r, &choices, &mut AesRng::from_seed([3; 16]));
            let (out, st) = t.join().unwrap();
            if !printed {
                printed = true;
                eprintln!(
                    "base_ot/{n}: sender sent {} B, receiver sent {} B",
                    st.bytes_sent,
                    r.stats().bytes_sent
                );
            }
            black_box((out, got.unwrap()))
        })
    });
    g.finish();
}

fn iknp_pair() -> (iknp::Sender, iknp::Receiver) {
    let (s, r) = base::insecure_dealer(iknp::KAPPA, &mut AesRng::from_seed([7; 16]));
    (
        iknp::Sender::new_with_base(&r).unwrap(),
        iknp::Receiver::new_with_base(&s).unwrap(),
    )
}

fn bench_iknp(c: &mut Criterion) {
    let mut g = c.benchmark_group("iknp");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    let mut sizes = vec![1usize << 20];
    if full() {
        sizes.push(1 << 24);
    }
    for &n in &sizes {
        g.throughput(Throughput::Elements(n as u64));
        let choices = iknp::random_bits(n, &mut AesRng::from_seed([4; 16]));
        for kind in ["random", "correlated"] {
            let mut printed = false;
            g.bench_with_input(BenchmarkId::new(kind, n), &n, |b, &n| {
                b.iter(|| {
                    let (mut s, mut r) = iknp_pair();
                    let (mut a, mut bch) = mem_pair();
                    let ch = choices.clone();
                    let t = std::thread::spawn(move || {
                        let out = if kind == "random" {
                            r.receive_random(&mut bch, &ch).unwrap()
                        } else {
                            r.receive_correlated(&mut bch, &ch).unwrap()
                        };
                        (out.len(), bch.stats())
                    });
                    let len = if kind == "random" {
                        s.send_random(&mut a, n).unwrap().len()
                    } else {
                        s.send_correlated(&mut a, n).unwrap().len()
                    };
                    let (rl, st) = t.join().unwrap();
                    if !printed {
                        printed = true;
                        eprintln!("iknp/{kind}/{n}: receiver sent {} B", st.bytes_sent);
                    }
                    black_box((len, rl))
                })
            });
        }
    }
    g.finish();
}

fn bench_softspoken(c: &mut Criterion) {
    let mut g = c.benchmark_group("softspoken");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    let n = 1usize << 20;
    g.throughput(Throughput::Elements(n as u64));
    let choices = iknp::random_bits(n, &mut AesRng::from_seed([4; 16]));
    for k in [2usize, 4, 8] {
        let mut printed = false;
        g.bench_with_input(BenchmarkId::new(format!("random_k{k}"), n), &n, |b, &n| {
            b.iter(|| {
                let (bs, br) = base::insecure_dealer(iknp::KAPPA, &mut AesRng::from_seed([6; 16]));
                let (mut a, mut bch) = mem_pair();
                let ch = choices.clone();
                let t = std::thread::spawn(move || {
                    let mut rng = AesRng::from_seed([1; 16]);
                    let mut r =
                        softspoken::Receiver::new_with_base(&mut bch, &bs, k, &mut rng).unwrap();
                    let out = r.receive_random(&mut bch, &ch).unwrap();
                    (out.len(), bch.stats())
                });
                let mut s = softspoken::Sender::new_with_base(&mut a, &br, k).unwrap();
                let out = s
                    .send_random(&mut a, n, &mut AesRng::from_seed([2; 16]))
                    .unwrap();
                let (rl, st) = t.join().unwrap();
                if !printed {
                    printed = true;
                    eprintln!("softspoken/k{k}/{n}: receiver sent {} B", st.bytes_sent);
                }
                black_box((out.len(), rl))
            })
        });
    }
    g.finish();
}

fn bench_kkrt(c: &mut Criterion) {
    let mut g = c.benchmark_group("kkrt_oprf");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for &n in &[1usize << 16, 1 << 20] {
        g.throughput(Throughput::Elements(n as u64));
        let mut rng = AesRng::from_seed([5; 16]);
        let inputs: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
        let mut printed = false;
        g.bench_with_input(BenchmarkId::new("batch_and_eval", n), &n, |b, &n| {
            b.iter(|| {
                let (bs, br) =
                    base::insecure_dealer(kkrt::CODE_BITS, &mut AesRng::from_seed([8; 16]));
                let mut s = kkrt::KkrtSender::new_with_base(&br, Block(9)).unwrap();
                let mut r = kkrt::KkrtReceiver::new_with_base(&bs, Block(9)).unwrap();
                let (mut a, mut bch) = mem_pair();
                let xs = inputs.clone();
                let t = std::thread::spawn(move || {
                    let out = r.receive(&mut bch, &xs).unwrap();
                    (out, bch.stats())
                });
                let key = s.send(&mut a, n).unwrap();
                // The sender evaluates each instance once (as a PSI sender does ~3 times per item).
                let idx: Vec<usize> = (0..n).collect();
                let mut ev = vec![Block::ZERO; n];
                key.eval_batch(&idx, &inputs, &mut ev).unwrap();
                let (out, st) = t.join().unwrap();
                assert_eq!(out[n - 1], ev[n - 1]);
                if !printed {
                    printed = true;
                    eprintln!("kkrt/{n}: receiver sent {} B", st.bytes_sent);
                }
                black_box(ev)
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_base,
    bench_iknp,
    bench_softspoken,
    bench_kkrt
);
criterion_main!(benches);
