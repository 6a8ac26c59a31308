//! obliv-he's Paillier-2048 encryption and CRT decryption (the real `Keypair` operations) with
//! each of its backends — AVX-512 IFMA, 64-bit Montgomery with the BMI2/ADX kernel, the
//! portable `u128` kernel — against the same operations on GMP 6.3 (rug 1.30): decryption with
//! `mpz_powm_sec` (the side-channel-silent exponentiation) and with `mpz_powm` (the
//! variable-time one, which gmpy2 and so python-phe use), and encryption with GMP
//! multiplication and division over the same fixed-base table, or with `mpz_powm_sec`.
//!
//! Everything runs on one thread (a one-thread rayon pool, so `decrypt`'s two CRT halves run
//! one after the other); figures are medians of per-operation thread CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`; also the minimum) and wall time.
//!
//! Usage: `cargo run --release [-- ITERATIONS]` (default 200).
use obliv_he::Integer;
use obliv_he::paillier::{Ciphertext, Keypair};
use rug::Integer as Gmp;
use std::time::Instant;

fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn bench<F: FnMut()>(name: &str, iters: usize, mut f: F) -> f64 {
    for _ in 0..iters.div_ceil(10).max(2) {
        f();
    }
    let mut cpu = Vec::with_capacity(iters);
    let mut wall = Vec::with_capacity(iters);
    for _ in 0..iters {
        let (c0, t0) = (cpu_ns(), Instant::now());
        f();
        wall.push(t0.elapsed().as_secs_f64() * 1e6);
        cpu.push((cpu_ns() - c0) as f64 / 1e3);
    }
    let (c, w) = (median(&mut cpu), median(&mut wall));
    let best = cpu[0];
    println!("{name:66} {c:8.1} {best:8.1} {w:8.1}");
    c
}

fn gmp(x: &Integer) -> Gmp {
    Gmp::from_str_radix(&x.to_string_radix(16), 16).unwrap()
}

/// The old obliv-he GMP fixed-base table (radix 2^5, masked scan of each window).
struct GmpFixedBase {
    m: Gmp,
    windows: u32,
    limbs: usize,
    table: Vec<u64>,
}

impl GmpFixedBase {
    fn new(base: &Gmp, m: &Gmp, exp_bits: u32) -> Self {
        let limbs = m.significant_bits().div_ceil(64) as usize;
        let windows = exp_bits.div_ceil(5);
        let mut table = vec![0u64; windows as usize * 32 * limbs];
        let mut b = Gmp::from(base % m);
        for i in 0..windows as usize {
            let mut cur = Gmp::from(1u32);
            for j in 0..32 {
                let off = (i * 32 + j) * limbs;
                cur.write_digits(
                    &mut table[off..off + cur.significant_digits::<u64>()],
                    rug::integer::Order::Lsf,
                );
                cur *= &b;
                cur %= m;
            }
            for _ in 0..5 {
                b.square_mut();
                b %= m;
            }
        }
        Self {
            m: m.clone(),
            windows,
            limbs,
            table,
        }
    }

    fn pow(&self, e: &Gmp) -> Gmp {
        let mut acc = Gmp::from(1u32);
        let mut sel = vec![0u64; self.limbs];
        for i in 0..self.windows {
            let mut d = 0usize;
            for k in 0..5 {
                d |= usize::from(e.get_bit(i * 5 + k)) << k;
            }
            sel.iter_mut().for_each(|w| *w = 0);
            for j in 0..32 {
                let mask = 0u64.wrapping_sub(u64::from(j == d));
                let off = (i as usize * 32 + j) * self.limbs;
                for (s, t) in sel.iter_mut().zip(&self.table[off..off + self.limbs]) {
                    *s |= t & mask;
                }
            }
            acc *= Gmp::from_digits(&sel, rug::integer::Order::Lsf);
            acc %= &self.m;
        }
        acc
    }
}

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| run(iters));
}

fn run(iters: usize) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(str::to_owned)
        })
        .unwrap_or_default();
    println!("{cpu}; {iters} iterations per row, one thread; microseconds per operation");
    println!(
        "{:66} {:>8} {:>8} {:>8}",
        "", "cpu med", "cpu min", "wall med"
    );
    let keys = Keypair::generate(2048).unwrap();
    let (pk, sk) = (&keys.public, &keys.secret);
    let m = Integer::from_str_radix("123456789abcdef0123456789abcdef", 16).unwrap();
    let c = pk.encrypt(&m).unwrap();

    // --- GMP, the same operations -------------------------------------------------------------
    let (p, q) = sk.primes();
    let (p, q) = (gmp(p), gmp(q));
    let (n, n2, hs) = (gmp(pk.n()), gmp(pk.n_squared()), gmp(pk.h_s()));
    let (p2, q2) = (Gmp::from(p.square_ref()), Gmp::from(q.square_ref()));
    let (pm1, qm1) = (Gmp::from(&p - 1u32), Gmp::from(&q - 1u32));
    let hfn = |pr: &Gmp, pr2: &Gmp, pm1: &Gmp| {
        let g = Gmp::from(&n + 1u32);
        let x = g.pow_mod(pm1, pr2).unwrap();
        Gmp::from((x - 1u32) / pr).invert(pr).unwrap()
    };
    let (hp, hq) = (hfn(&p, &p2, &pm1), hfn(&q, &q2, &qm1));
    let q_inv_p = q.clone().invert(&p).unwrap();
    let cg = gmp(c.as_integer());
    // `sec`: mpz_powm_sec (side-channel silent); otherwise mpz_powm, the variable-time
    // sliding window that gmpy2 and so python-phe call.
    let gmp_decrypt_with = |c: &Gmp, sec: bool| -> Gmp {
        let half = |pr: &Gmp, pr2: &Gmp, pm1: &Gmp, h: &Gmp| {
            let x = if sec {
                Gmp::from(c % pr2).secure_pow_mod(pm1, pr2)
            } else {
                Gmp::from(c % pr2).pow_mod(pm1, pr2).unwrap()
            };
            let mut l = (x - 1u32) / pr;
            l *= h;
            l %= pr;
            l
        };
        let (mp, mq) = (half(&p, &p2, &pm1, &hp), half(&q, &q2, &qm1, &hq));
        let mut d = mp - &mq;
        d *= &q_inv_p;
        d = d.modulo(&p);
        d * &q + mq
    };
    let gmp_decrypt = |c: &Gmp| gmp_decrypt_with(c, true);
    assert_eq!(gmp_decrypt_with(&cg, false), gmp(&m));
    assert_eq!(gmp_decrypt(&cg), gmp(&m));
    let r_bits = pk.randomness_bits();
    let table = GmpFixedBase::new(&hs, &n2, r_bits);
    let mut state = rug::rand::RandState::new();
    let mg = gmp(&m);
    let gmp_encrypt = |state: &mut rug::rand::RandState, powm: bool| -> Gmp {
        let r = Gmp::from(Gmp::random_bits(r_bits, state));
        let noise = if powm {
            hs.clone().secure_pow_mod(&r, &n2)
        } else {
            table.pow(&r)
        };
        let mut x = Gmp::from(&mg * &n) + 1u32;
        x *= noise;
        x %= &n2;
        x
    };
    let e1 = gmp_encrypt(&mut state, false);
    assert_eq!(
        sk.decrypt(&Ciphertext::from_integer(
            Integer::from_str_radix(&e1.to_string_radix(16), 16).unwrap()
        ))
        .unwrap(),
        m
    );
    let x = Gmp::from(&cg % &p2);
    bench(
        "GMP mpz_powm_sec, 2048-bit modulus p², 1023-bit exponent p-1",
        iters,
        || {
            std::hint::black_box(x.clone().secure_pow_mod(&pm1, &p2));
        },
    );
    let gd = bench(
        "GMP Paillier-2048 CRT decryption (mpz_powm_sec)",
        iters,
        || {
            std::hint::black_box(gmp_decrypt(&cg));
        },
    );
    let gv = bench(
        "GMP Paillier-2048 CRT decryption (mpz_powm, variable time)",
        iters,
        || {
            std::hint::black_box(gmp_decrypt_with(&cg, false));
        },
    );
    let ge = bench(
        "GMP Paillier-2048 DJN encryption (fixed-base table, mul + mod)",
        iters,
        || {
            std::hint::black_box(gmp_encrypt(&mut state, false));
        },
    );
    bench(
        "GMP Paillier-2048 DJN encryption (mpz_powm_sec, 224-bit r)",
        iters,
        || {
            std::hint::black_box(gmp_encrypt(&mut state, true));
        },
    );

    // --- obliv-he, each backend -----------------------------------------------------------------
    let xo = Integer::from_str_radix(&x.to_string_radix(16), 16).unwrap();
    let p2o = Integer::from_str_radix(&p2.to_string_radix(16), 16).unwrap();
    let pm1o = Integer::from_str_radix(&pm1.to_string_radix(16), 16).unwrap();
    for (label, ifma, adx) in [
        ("IFMA", true, true),
        ("no IFMA, ADX kernel", false, true),
        ("no IFMA, portable u128 kernel", false, false),
    ] {
        obliv_he::__bench::set_ifma(ifma);
        obliv_he::__bench::set_adx(adx);
        // Rebuild the keys so that their contexts and tables pick up the switches.
        let sk2: obliv_he::paillier::SecretKey = serde_json_like_roundtrip(sk);
        let pk2 = sk2.public_key().clone();
        pk2.precompute();
        sk2.precompute();
        assert_eq!(sk2.decrypt(&c).unwrap(), m);
        if !ifma {
            bench(
                &format!("obliv-he Integer::pow_mod, p², p-1 ({label})"),
                iters,
                || {
                    std::hint::black_box(xo.pow_mod(&pm1o, &p2o).unwrap());
                },
            );
        }
        let d = bench(
            &format!("obliv-he Keypair decrypt ({label})"),
            iters,
            || {
                std::hint::black_box(sk2.decrypt(&c).unwrap());
            },
        );
        let e = bench(
            &format!("obliv-he Keypair public-key encrypt ({label})"),
            iters,
            || {
                std::hint::black_box(pk2.encrypt(&m).unwrap());
            },
        );
        bench(
            &format!("obliv-he Keypair secret-key encrypt ({label})"),
            iters,
            || {
                std::hint::black_box(sk2.encrypt(&m).unwrap());
            },
        );
        bench(
            &format!("obliv-he Keypair::generate(2048) ({label})"),
            iters.div_ceil(20).max(5),
            || {
                std::hint::black_box(Keypair::generate(2048).unwrap());
            },
        );
        println!(
            "  -> {label}: decryption {:.2}x GMP mpz_powm_sec, {:.2}x GMP mpz_powm, public-key encryption {:.2}x GMP (>1 = faster)",
            gd / d,
            gv / d,
            ge / e
        );
    }
    obliv_he::__bench::set_ifma(true);
    obliv_he::__bench::set_adx(true);
}

/// A fresh secret key with the same primes and `h_s` (rebuilds every context and table).
fn serde_json_like_roundtrip(sk: &obliv_he::paillier::SecretKey) -> obliv_he::paillier::SecretKey {
    serde_json::from_str(&serde_json::to_string(sk).unwrap()).unwrap()
}
