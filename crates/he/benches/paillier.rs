//! Paillier benches: BENCHMARKS.md §2 (2048-bit encryption, 100 per thread, one thread against
//! a rayon pool of every core) and §4 (key generation, encryption, decryption, addition,
//! subtraction, multiplication over key sizes). `OBLIV_BENCH_SCALE=full` adds 3072 and 4096
//! bits to §4. Run: `cargo bench -p obliv-he --bench paillier`.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_he::Integer;
use obliv_he::paillier::Keypair;

fn sizes() -> Vec<u32> {
    if std::env::var("OBLIV_BENCH_SCALE").as_deref() == Ok("full") {
        vec![2048, 3072, 4096]
    } else {
        vec![2048]
    }
}

fn plaintexts(n: usize) -> Vec<Integer> {
    (0..n)
        .map(|i| Integer::from(0x9e37_79b9_u64.wrapping_mul(i as u64 + 1) & 0xffff_ffff))
        .collect()
}

/// §2: prints the table (encryptions, seconds, s/enc, enc/s) and the speed-up, then lets
/// criterion time the same two workloads.
fn section2(c: &mut Criterion) {
    let k = Keypair::generate(2048).unwrap();
    let pk = k.public.clone();
    pk.precompute();
    let cores = rayon::current_num_threads();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let single = plaintexts(100);
    let many = plaintexts(100 * cores);
    let best = |f: &dyn Fn()| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let t1 = best(&|| {
        one.install(|| black_box(pk.encrypt_batch(&single).unwrap()));
    });
    let tp = best(&|| {
        black_box(pk.encrypt_batch(&many).unwrap());
    });
    let (r1, rp) = (100.0 / t1, (100 * cores) as f64 / tp);
    println!("§2 Paillier-2048 encryption (DJN, fixed-base table)");
    println!("| mode | encryptions | seconds | s/enc | enc/s |");
    println!("| 1 thread | 100 | {t1:.4} | {:.6} | {r1:.0} |", t1 / 100.0);
    println!(
        "| pool of {cores} | {} | {tp:.4} | {:.6} | {rp:.0} |",
        100 * cores,
        tp / (100 * cores) as f64
    );
    println!("speed-up {:.2}x", rp / r1);

    let mut g = c.benchmark_group("s2_paillier2048_encrypt");
    g.sample_size(10);
    g.throughput(Throughput::Elements(100));
    g.bench_function("1_thread_100", |b| {
        b.iter(|| one.install(|| pk.encrypt_batch(&single).unwrap()))
    });
    g.throughput(Throughput::Elements((100 * cores) as u64));
    g.bench_function(BenchmarkId::new("pool_100_per_thread", cores), |b| {
        b.iter(|| pk.encrypt_batch(&many).unwrap())
    });
    g.finish();
}

/// §4: single-operation timings, one thread.
fn section4(c: &mut Criterion) {
    for bits in sizes() {
        let mut g = c.benchmark_group(format!("s4_paillier{bits}"));
        g.sample_size(10);
        g.bench_function("keygen", |b| b.iter(|| Keypair::generate(bits).unwrap()));
        g.sample_size(30);
        let k = Keypair::generate(bits).unwrap();
        let (pk, sk) = (&k.public, &k.secret);
        pk.precompute();
        sk.precompute();
        let ms = plaintexts(64);
        let cs: Vec<_> = ms.iter().map(|m| pk.encrypt(m).unwrap()).collect();
        let mut i = 0usize;
        let mut next = || {
            i = (i + 1) % 64;
            i
        };
        g.bench_function("encrypt_public_djn", |b| {
            b.iter(|| pk.encrypt(&ms[next()]).unwrap())
        });
        g.bench_function("encrypt_secret_crt", |b| {
            b.iter(|| sk.encrypt(&ms[next()]).unwrap())
        });
        g.bench_function("decrypt_crt", |b| {
            b.iter(|| sk.decrypt(&cs[next()]).unwrap())
        });
        g.bench_function("add_ct_ct", |b| b.iter(|| pk.add(&cs[next()], &cs[3])));
        g.bench_function("sub_ct_ct", |b| {
            b.iter(|| pk.sub(&cs[next()], &cs[3]).unwrap())
        });
        g.bench_function("add_ct_pt", |b| {
            b.iter(|| pk.add_plain(&cs[next()], &ms[5]).unwrap())
        });
        g.bench_function("mul_ct_pt32", |b| {
            b.iter(|| pk.mul_plain(&cs[next()], &ms[7]).unwrap())
        });
        g.bench_function("neg", |b| b.iter(|| pk.neg(&cs[next()]).unwrap()));
        g.bench_function("rerandomize", |b| b.iter(|| pk.rerandomize(&cs[next()])));
        g.finish();
    }
}

criterion_group!(benches, section2, section4);
criterion_main!(benches);
