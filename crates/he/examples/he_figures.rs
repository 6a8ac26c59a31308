//! Prints the figures of the crate README: per-operation cost of every scheme, as thread CPU
//! time (from `/proc/thread-self/schedstat`, robust on a shared, loaded machine) and wall time,
//! one JSON line per (scheme, bits, op), plus the §2 single-thread / pool table.
//!
//! `cargo run --release -p obliv-he --example he_figures [-- 2048 3072 4096 | elgamal | s2]`;
//! the matching python-phe / HEU figures come from `benches/anchors.py`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use curve25519_dalek::RistrettoPoint;
use obliv_he::Integer;
use obliv_he::elgamal::ec::{self, BsgsTable};
use obliv_he::elgamal::modp::{self, GroupId};
use obliv_he::paillier::Keypair;

/// Nanoseconds this thread has spent on a CPU (falls back to 0 where unavailable).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn emit(scheme: &str, bits: u32, op: &str, n: u32, mut f: impl FnMut(u32)) {
    f(0);
    let (c0, w0) = (cpu_ns(), Instant::now());
    for i in 0..n {
        f(i);
    }
    let wall = w0.elapsed().as_secs_f64() / f64::from(n);
    let cpu = (cpu_ns() - c0) as f64 * 1e-9 / f64::from(n);
    println!(
        "{{\"lib\":\"obliv-he\",\"scheme\":\"{scheme}\",\"bits\":{bits},\"op\":\"{op}\",\"cpu_s_per_op\":{cpu:.9},\"wall_s_per_op\":{wall:.9}}}"
    );
}

fn paillier(bits: u32) {
    let t = Instant::now();
    let k = Keypair::generate(bits).unwrap();
    let _ = t;
    let keygens = if bits <= 2048 { 5 } else { 2 };
    emit("paillier", bits, "keygen", keygens, |_| {
        black_box(Keypair::generate(bits).unwrap());
    });
    let (pk, sk) = (&k.public, &k.secret);
    pk.precompute();
    sk.precompute();
    let ms: Vec<Integer> = (0..64u64)
        .map(|i| Integer::from((i * 0x9e37_79b9) & 0xffff_ffff))
        .collect();
    let cs: Vec<_> = ms.iter().map(|m| pk.encrypt(m).unwrap()).collect();
    let ix = |i: u32| (i % 64) as usize;
    emit("paillier", bits, "encrypt", 200, |i| {
        black_box(pk.encrypt(&ms[ix(i)]).unwrap());
    });
    emit("paillier", bits, "encrypt_secret_crt", 200, |i| {
        black_box(sk.encrypt(&ms[ix(i)]).unwrap());
    });
    emit("paillier", bits, "decrypt", 50, |i| {
        black_box(sk.decrypt(&cs[ix(i)]).unwrap());
    });
    emit("paillier", bits, "add_ct_ct", 2000, |i| {
        black_box(pk.add(&cs[ix(i)], &cs[ix(i + 1)]));
    });
    emit("paillier", bits, "sub_ct_ct", 500, |i| {
        black_box(pk.sub(&cs[ix(i)], &cs[ix(i + 1)]).unwrap());
    });
    emit("paillier", bits, "add_ct_pt", 2000, |i| {
        black_box(pk.add_plain(&cs[ix(i)], &ms[ix(i + 1)]).unwrap());
    });
    emit("paillier", bits, "mul_ct_pt", 500, |i| {
        black_box(pk.mul_plain(&cs[ix(i)], &ms[ix(i + 1)]).unwrap());
    });
    emit("paillier", bits, "neg", 500, |i| {
        black_box(pk.neg(&cs[ix(i)]).unwrap());
    });
    emit("paillier", bits, "rerandomize", 200, |i| {
        black_box(pk.rerandomize(&cs[ix(i)]));
    });
}

/// Nanoseconds all threads of this process have spent on a CPU.
fn process_cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|t| t.ok())
                .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
                .filter_map(|s| {
                    s.split_whitespace()
                        .next()
                        .and_then(|v| v.parse::<u64>().ok())
                })
                .sum()
        })
        .unwrap_or(0)
}

fn section2() {
    let k = Keypair::generate(2048).unwrap();
    let pk = k.public;
    pk.precompute();
    let cores = rayon::current_num_threads();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let m1: Vec<Integer> = (0..100u32).map(Integer::from).collect();
    let mp: Vec<Integer> = (0..100 * u32::try_from(cores).unwrap())
        .map(Integer::from)
        .collect();
    // Best wall time of 5 runs, and the process CPU time (all threads) of that run.
    let best = |f: &dyn Fn()| {
        (0..5)
            .map(|_| {
                let (c, t) = (process_cpu_ns(), Instant::now());
                f();
                (
                    t.elapsed().as_secs_f64(),
                    (process_cpu_ns() - c) as f64 * 1e-9,
                )
            })
            .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (t1, c1) = best(&|| {
        one.install(|| black_box(pk.encrypt_batch(&m1).unwrap()));
    });
    let (tp, cp) = best(&|| {
        black_box(pk.encrypt_batch(&mp).unwrap());
    });
    let n = (100 * cores) as f64;
    println!("| mode | encryptions | seconds | s/enc | enc/s |");
    println!("|---|---|---|---|---|");
    println!(
        "| 1 thread | 100 | {t1:.4} | {:.6} | {:.0} |",
        t1 / 100.0,
        100.0 / t1
    );
    println!(
        "| rayon pool, {cores} threads | {} | {tp:.4} | {:.6} | {:.0} |",
        100 * cores,
        tp / n,
        n / tp
    );
    println!("speed-up: {:.2}x", (n / tp) / (100.0 / t1));
    println!(
        "process CPU per encryption: {:.1} us (1 thread), {:.1} us (pool); CPU used during the pool run: {:.2} cores",
        c1 / 100.0 * 1e6,
        cp / n * 1e6,
        cp / tp
    );
}

fn elgamal() {
    let mut rng = rand::rng();
    let t = Instant::now();
    let table = BsgsTable::<RistrettoPoint>::default_32().unwrap();
    println!(
        "{{\"lib\":\"obliv-he\",\"scheme\":\"ec-elgamal-ristretto\",\"op\":\"bsgs_table_build_2^16\",\"wall_s\":{:.4},\"bytes\":{}}}",
        t.elapsed().as_secs_f64(),
        table.memory_bytes()
    );
    emit("ec-elgamal-ristretto", 256, "keygen", 200, |_| {
        black_box(ec::SecretKey::<RistrettoPoint>::generate(&mut rand::rng()));
    });
    let sk = ec::SecretKey::<RistrettoPoint>::generate(&mut rng);
    let pk = sk.public_key().clone();
    let ms: Vec<u64> = (0..64u64).map(|i| (i * 0x9e37_79b9) & 0xf_ffff).collect();
    let cs: Vec<_> = ms.iter().map(|&m| pk.encrypt(m, &mut rng)).collect();
    let ix = |i: u32| (i % 64) as usize;
    emit("ec-elgamal-ristretto", 256, "encrypt", 500, |i| {
        black_box(pk.encrypt(ms[ix(i)], &mut rand::rng()));
    });
    emit("ec-elgamal-ristretto", 256, "decrypt_20bit", 200, |i| {
        black_box(sk.decrypt(&cs[ix(i)], &table).unwrap());
    });
    emit("ec-elgamal-ristretto", 256, "add_ct_ct", 5000, |i| {
        black_box(pk.add(&cs[ix(i)], &cs[ix(i + 1)]));
    });
    emit("ec-elgamal-ristretto", 256, "sub_ct_ct", 5000, |i| {
        black_box(pk.sub(&cs[ix(i)], &cs[ix(i + 1)]));
    });
    emit("ec-elgamal-ristretto", 256, "mul_ct_pt", 500, |i| {
        black_box(pk.mul_i64(&cs[ix(i)], 0x9_8765));
    });
    for (id, bits) in [(GroupId::Modp2048, 2048), (GroupId::Modp3072, 3072)] {
        emit("modp-elgamal", bits, "keygen", 20, |_| {
            black_box(modp::SecretKey::generate(id, &mut rand::rng()));
        });
        let sk = modp::SecretKey::generate(id, &mut rng);
        let pk = sk.public_key().clone();
        let cs: Vec<_> = (1..=64u32)
            .map(|v| pk.encrypt_value(&Integer::from(v), &mut rng).unwrap())
            .collect();
        emit("modp-elgamal", bits, "encrypt", 100, |i| {
            black_box(
                pk.encrypt_value(&Integer::from(i + 1), &mut rand::rng())
                    .unwrap(),
            );
        });
        emit("modp-elgamal", bits, "decrypt", 50, |i| {
            black_box(sk.decrypt_value(&cs[ix(i)]).unwrap());
        });
        emit("modp-elgamal", bits, "mul_ct_ct", 2000, |i| {
            black_box(pk.mul(&cs[ix(i)], &cs[ix(i + 1)]));
        });
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `-- s2` prints only the §2 table; `-- elgamal` only the ElGamal figures.
    if args.iter().any(|a| a == "s2") {
        section2();
        return;
    }
    let only_elgamal = args.iter().any(|a| a == "elgamal");
    let sizes: Vec<u32> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sizes = if only_elgamal {
        vec![]
    } else if sizes.is_empty() {
        vec![2048]
    } else {
        sizes
    };
    // Per-operation figures on one thread: inside a 1-thread pool, so that rayon::join in
    // decryption runs both CRT halves on this thread and its CPU time counts them both.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    one.install(|| {
        for &bits in &sizes {
            paillier(bits);
        }
        elgamal();
    });
    if only_elgamal {
        return;
    }
    // Latency of one decryption on the whole pool (the CRT halves on two cores).
    let k = Keypair::generate(2048).unwrap();
    let c = k.public.encrypt(&Integer::from(12345u32)).unwrap();
    emit("paillier", 2048, "decrypt_latency_pool_wall", 50, |_| {
        black_box(k.secret.decrypt(&c).unwrap());
    });
    println!("§2: Paillier-2048 encryption, 100 per thread");
    section2();
}
