//! Building blocks under the document benchmarks, at small sizes: fixed-key AES and the AES
//! PRG, hash-to-curve and scalar multiplication on every curve, IKNP random OT, the KKRT16
//! OPRF, silent VOLE, the RR22 OKVS, cuckoo hashing and the DPF. Protocol benches include
//! their base OTs and declare the bytes on the wire as criterion's throughput.
//!
//! Ids: `primitives/<name>/<n>`. `cargo bench -p obliv-bench --bench primitives`;
//! `OBLIV_BENCH_SCALE=full` runs 16× larger sizes.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_bench::{full_scale, skip};
use obliv_core::{Aes, AesRng, Block};
use obliv_cuckoo::CuckooTable;
use obliv_ec::{Curve, DynGroup};
use obliv_net::{Channel, mem_pair};
use obliv_okvs::{BinnedPaxos, Gf128, Okvs};
use obliv_ot::{iknp, kkrt};
use obliv_pir::dpf;
use obliv_vole::{VoleConfig, vole_receive, vole_send};
use rand_core::SeedableRng;

fn scale(n: usize) -> usize {
    if full_scale() { n * 16 } else { n }
}

fn blocks(n: usize, seed: u8) -> Vec<Block> {
    let mut v = vec![Block::ZERO; n];
    AesRng::from_seed([seed; 16]).fill_blocks(&mut v);
    v
}

fn core_and_ec(c: &mut Criterion) {
    let mut g = c.benchmark_group("primitives");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let n = scale(1 << 16);
    let mut buf = blocks(n, 1);
    g.throughput(Throughput::Bytes(16 * n as u64));
    g.bench_with_input(BenchmarkId::new("aes_fixed_key", n), &n, |b, _| {
        b.iter(|| Aes::fixed().encrypt_blocks(&mut buf))
    });
    let mut rng = AesRng::from_seed([2; 16]);
    g.bench_with_input(BenchmarkId::new("aes_prg", n), &n, |b, _| {
        b.iter(|| rng.fill_blocks(&mut buf))
    });
    let m = scale(1024);
    let items: Vec<[u8; 16]> = (0..m as u128).map(u128::to_le_bytes).collect();
    g.throughput(Throughput::Elements(m as u64));
    for curve in Curve::ALL {
        let group = match DynGroup::new(curve) {
            Ok(gr) => gr,
            Err(e) => {
                skip(&format!("primitives/hash_and_mul/{curve}"), &e.to_string());
                continue;
            }
        };
        let sk = group.random_secret(&mut rng).unwrap();
        g.bench_with_input(
            BenchmarkId::new(format!("hash_and_mul/{curve}"), m),
            &m,
            |b, _| b.iter(|| group.hash_and_mul_batch(&items, &sk).unwrap()),
        );
    }
    g.finish();
}

/// Runs `a` and `b` on the two ends of an in-memory channel; returns both results and the
/// bytes on the wire.
fn pair<RA: Send, RB: Send>(
    a: impl FnOnce(&mut obliv_net::MemChannel) -> RA + Send,
    b: impl FnOnce(&mut obliv_net::MemChannel) -> RB + Send,
) -> (RA, RB, u64) {
    let (mut ca, mut cb) = mem_pair();
    std::thread::scope(|s| {
        let t = s.spawn(move || {
            let r = b(&mut cb);
            cb.flush().unwrap();
            (r, cb.stats().bytes_sent)
        });
        let ra = a(&mut ca);
        ca.flush().unwrap();
        let sent = ca.stats().bytes_sent;
        let (rb, sb) = t.join().unwrap();
        (ra, rb, sent + sb)
    })
}

fn ot_vole(c: &mut Criterion) {
    let mut g = c.benchmark_group("primitives");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let n = scale(1 << 18);
    let choices = iknp::random_bits(n, &mut AesRng::from_seed([3; 16]));
    let run_iknp = || {
        pair(
            |ch| {
                let mut rng = AesRng::from_seed([4; 16]);
                let mut s = iknp::Sender::setup(ch, &mut rng).unwrap();
                s.send_random(ch, n).unwrap().len()
            },
            |ch| {
                let mut rng = AesRng::from_seed([5; 16]);
                let mut r = iknp::Receiver::setup(ch, &mut rng).unwrap();
                r.receive_random(ch, &choices).unwrap().len()
            },
        )
    };
    g.throughput(Throughput::Bytes(run_iknp().2));
    g.bench_with_input(BenchmarkId::new("iknp_random_ot", n), &n, |b, _| {
        b.iter(|| black_box(run_iknp()))
    });

    let m = scale(1 << 16);
    let inputs = blocks(m, 6);
    let run_kkrt = || {
        pair(
            |ch| {
                let mut rng = AesRng::from_seed([7; 16]);
                let mut s = kkrt::KkrtSender::setup(ch, &mut rng).unwrap();
                s.send(ch, m).unwrap();
            },
            |ch| {
                let mut rng = AesRng::from_seed([8; 16]);
                let mut r = kkrt::KkrtReceiver::setup(ch, &mut rng).unwrap();
                r.receive(ch, &inputs).unwrap().len()
            },
        )
    };
    g.throughput(Throughput::Bytes(run_kkrt().2));
    g.bench_with_input(BenchmarkId::new("kkrt_oprf", m), &m, |b, _| {
        b.iter(|| black_box(run_kkrt()))
    });

    let v = scale(1 << 18);
    let cfg = VoleConfig::default();
    let run_vole = || {
        pair(
            |ch| {
                vole_send(ch, v, cfg, &mut AesRng::from_seed([9; 16]))
                    .unwrap()
                    .1
                    .len()
            },
            |ch| {
                vole_receive(ch, v, cfg, &mut AesRng::from_seed([10; 16]))
                    .unwrap()
                    .1
                    .len()
            },
        )
    };
    g.throughput(Throughput::Bytes(run_vole().2));
    g.bench_with_input(BenchmarkId::new("silent_vole", v), &v, |b, _| {
        b.iter(|| black_box(run_vole()))
    });
    g.finish();
}

fn structures(c: &mut Criterion) {
    let mut g = c.benchmark_group("primitives");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let n = scale(1 << 16);
    let keys = blocks(n, 11);
    let values = blocks(n, 12);
    g.throughput(Throughput::Elements(n as u64));
    let okvs = BinnedPaxos::<Gf128>::new(n, 40, Block(7)).unwrap();
    g.bench_with_input(BenchmarkId::new("okvs_encode", n), &n, |b, _| {
        b.iter(|| okvs.encode(&keys, &values).unwrap())
    });
    let p = okvs.encode(&keys, &values).unwrap();
    g.bench_with_input(BenchmarkId::new("okvs_decode", n), &n, |b, _| {
        b.iter(|| okvs.decode(&keys, &p).unwrap())
    });
    g.bench_with_input(BenchmarkId::new("cuckoo_build", n), &n, |b, _| {
        b.iter(|| CuckooTable::build(&keys, Block(42)).unwrap())
    });
    let bits = if full_scale() { 24 } else { 20 };
    let mut rng = AesRng::from_seed([13; 16]);
    let (k0, _) = dpf::gen_keys(bits, 3, &mut rng).unwrap();
    let mut out = vec![Block::ZERO; k0.output_blocks()];
    g.throughput(Throughput::Elements(1 << bits));
    g.bench_with_input(
        BenchmarkId::new("dpf_eval_full", 1u64 << bits),
        &bits,
        |b, _| b.iter(|| k0.eval_full_into(&mut out)),
    );
    g.finish();
}

criterion_group!(benches, core_and_ec, ot_vole, structures);
criterion_main!(benches);
