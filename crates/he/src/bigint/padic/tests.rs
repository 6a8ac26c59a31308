use super::*;
use crate::bigint::monty::Monty;
use crate::bigint::{random_below, random_bits};

fn backends() -> Vec<Backend> {
    #[allow(unused_mut)] // only x86-64 adds the ADX kernel
    let mut v = vec![Backend::Portable];
    #[cfg(obliv_x86_simd)]
    if let Some(k) = super::super::monty::Adx::detect() {
        v.push(Backend::Adx(k));
    } else {
        eprintln!("skipped: the BMI2 + ADX kernel (this CPU lacks it)");
    }
    v
}

/// An odd `p` of `limbs` limbs; its top limb is all ones, `2^63`, one, or random (the
/// edges of the bounds the normalisations rely on: `p` close to `R`, or far below it).
fn random_modulus(rng: &mut impl rand_core::CryptoRng, limbs: usize, shape: usize) -> Integer {
    let mut v = limbs_of(
        &random_bits(rng, u32::try_from(64 * limbs).expect("small")),
        limbs,
    );
    match shape % 4 {
        0 => v[limbs - 1] = u64::MAX,
        1 => v[limbs - 1] = 1 << 63,
        2 => v[limbs - 1] = 1,
        _ => v[limbs - 1] |= 1,
    }
    v[0] |= 1;
    Integer::from_limbs(&v)
}

#[test]
fn rejects_even_and_tiny_moduli() {
    for m in [0u32, 1, 2, 10] {
        assert!(Padic::new(&Integer::from(m)).is_none(), "{m}");
    }
    assert!(Padic::new(&Integer::from(3u32)).is_some());
}

/// `base^e mod p²` on digits against Montgomery arithmetic modulo `p²`, every kernel, several
/// sizes and exponent lengths, edge bases included.
#[test]
fn pow_matches_montgomery_modulo_the_square() {
    let mut rng = rand::rng();
    for (shape, limbs) in [1usize, 2, 3, 4, 7, 8, 16].into_iter().enumerate() {
        let p = random_modulus(&mut rng, limbs, shape);
        let p2 = p.square();
        let mont = Monty::new(&p2).expect("odd");
        let mut bases = vec![
            Integer::new(),
            Integer::from(1u32),
            &p2 - 1u32,
            p.clone(),
            &p - 1u32,
            &p * 3u32 + 1u32,
        ];
        for _ in 0..4 {
            bases.push(random_below(&mut rng, &p2));
        }
        for backend in backends() {
            let ctx = Padic::with_backend(&p, backend).expect("normalised");
            for e_bits in [1u32, 5, 6, 64, 64 * limbs as u32] {
                for b in &bases {
                    let mut e = random_bits(&mut rng, e_bits);
                    e.set_bit(e_bits - 1, true);
                    let (a, d) = ctx.pow_digits(b, &e, e_bits);
                    assert!(a < p && d < p, "digits reduced");
                    let got = &a + &(&d * &p);
                    assert_eq!(got, mont.pow(b, &e, e_bits), "{limbs} {e_bits} {b}");
                }
            }
            // e = 0 gives 1 = (1, 0).
            let (a, d) = ctx.pow_digits(&bases[6], &Integer::new(), 8);
            assert_eq!((a, d), (Integer::from(1u32), Integer::new()));
        }
    }
}

/// The Fermat quotient: for a unit `c`, `c^{p−1} mod p² = 1 + L·p`, i.e. the digits `(1, L)`.
#[test]
fn fermat_power_has_first_digit_one() {
    let mut rng = rand::rng();
    let p = crate::bigint::prime::random_prime_3mod4(&mut rng, 256);
    let ctx = Padic::new(&p).expect("a 256-bit prime fills four limbs");
    let p2 = p.square();
    let pm1 = &p - 1u32;
    for _ in 0..5 {
        let c = random_below(&mut rng, &p2);
        if c.modulo(&p).is_zero() {
            continue;
        }
        let (a, l) = ctx.pow_digits(&c, &pm1, pm1.significant_bits());
        assert_eq!(a, Integer::from(1u32));
        let x = Monty::new(&p2)
            .expect("odd")
            .pow(&c, &pm1, pm1.significant_bits());
        assert_eq!(l, (x - 1u32).div_rem(&p).0);
    }
}

/// The sequence of operations depends on the limb count and exponent length only.
#[test]
fn trace_depends_on_lengths_only() {
    let mut rng = rand::rng();
    let mut traces = Vec::new();
    for _ in 0..3 {
        let p = random_modulus(&mut rng, 4, 0);
        let ctx = Padic::new(&p).expect("normalised");
        let b = random_below(&mut rng, &p.square());
        let e = random_bits(&mut rng, 200);
        let _ = crate::bigint::ct_trace::take();
        let _ = ctx.pow_digits(&b, &e, 256);
        traces.push(crate::bigint::ct_trace::take());
    }
    assert!(traces[0].0 > 0);
    assert!(traces.windows(2).all(|w| w[0] == w[1]), "{traces:?}");
    assert_eq!(traces[0].2, 0, "no variable-time step");
}

/// Times `c^(p−1) mod p²` for a 1024-bit `p`, on digits and by Montgomery arithmetic modulo
/// `p²` (alternated; the best of several rounds): `cargo test --release -p obliv-he --lib
/// digits_timing -- --ignored --nocapture`.
#[test]
#[ignore = "timing, not a check"]
fn digits_timing() {
    let mut rng = rand::rng();
    let p = crate::bigint::prime::random_prime_3mod4(&mut rng, 1024);
    let p2 = p.square();
    let mont = Monty::new(&p2).expect("odd");
    let ctx = Padic::new(&p).expect("odd");
    let c = random_below(&mut rng, &p2);
    let e = &p - 1u32;
    let (mut best_m, mut best_d) = (f64::MAX, f64::MAX);
    for _ in 0..9 {
        let t = std::time::Instant::now();
        for _ in 0..20 {
            std::hint::black_box(mont.pow(&c, &e, 1024));
        }
        best_m = best_m.min(t.elapsed().as_secs_f64() / 20.0);
        let t = std::time::Instant::now();
        for _ in 0..20 {
            std::hint::black_box(ctx.pow_digits(&c, &e, 1024));
        }
        best_d = best_d.min(t.elapsed().as_secs_f64() / 20.0);
    }
    eprintln!(
        "c^(p-1) mod p^2, 1024-bit p: Montgomery modulo p^2 {:.1} us, digits {:.1} us ({:.2}x)",
        best_m * 1e6,
        best_d * 1e6,
        best_m / best_d
    );
}

/// Times the row kernels at 16 and 32 limbs (nanoseconds per limb product):
/// `cargo test --release -p obliv-he --lib kernel_timing -- --ignored --nocapture`.
#[test]
#[ignore = "timing, not a check"]
fn kernel_timing() {
    #[cfg(obliv_x86_simd)]
    {
        use super::super::monty::Adx;
        let Some(kern) = Adx::detect() else { return };
        let mut rng = rand::rng();
        for k in [16usize, 32] {
            let p = random_modulus(&mut rng, k, 3);
            let pl = limbs_of(&p, k);
            let a = limbs_of(&random_below(&mut rng, &p), k);
            let b = limbs_of(&random_below(&mut rng, &p), k);
            let mut t = vec![0u64; 2 * k];
            let n = 200_000;
            let time = |f: &mut dyn FnMut()| {
                let mut best = f64::MAX;
                for _ in 0..5 {
                    let s = std::time::Instant::now();
                    for _ in 0..n {
                        f();
                    }
                    best = best.min(s.elapsed().as_secs_f64() / n as f64 * 1e9);
                }
                best
            };
            let m = time(&mut || {
                kern.mul_rows(&mut t, &a, &b);
                std::hint::black_box(&t);
            });
            let s = time(&mut || {
                kern.sqr_rows(&mut t, &a);
                std::hint::black_box(&t);
            });
            let r = time(&mut || {
                t[..k].copy_from_slice(&a);
                t[k..].copy_from_slice(&b);
                kern.redc_rows(&mut t, &pl, 12345);
                std::hint::black_box(&t);
            });
            eprintln!(
                "k={k}: mul_rows {m:.0} ns ({:.2} ns/product), sqr_rows {s:.0} ns, redc_rows {r:.0} ns ({:.2} ns/product)",
                m / (k * k) as f64,
                r / (k * k) as f64
            );
        }
    }
}
