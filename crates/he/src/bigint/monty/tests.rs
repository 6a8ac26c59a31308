use super::*;
use crate::bigint::random_bits;
use rand_core::Rng as RngCore;

/// Plain reference: schoolbook product, Knuth division.
fn reference_mul(a: &Integer, b: &Integer, m: &Integer) -> Integer {
    (a * b).modulo(m)
}

fn reference_pow(b: &Integer, e: &Integer, m: &Integer) -> Integer {
    let mut acc = Integer::from(1u32).modulo(m);
    for i in (0..e.significant_bits()).rev() {
        acc = acc.square().modulo(m);
        if e.get_bit(i) {
            acc = (&acc * b).modulo(m);
        }
    }
    acc
}

fn random_odd_modulus(rng: &mut impl rand_core::CryptoRng, limbs: usize) -> Integer {
    let mut m = random_bits(rng, u32::try_from(64 * limbs).expect("small"));
    m.set_bit(u32::try_from(64 * limbs - 1).expect("small"), true);
    m.set_bit(0, true);
    // One modulus in three has an all-ones top limb, one in three (of two limbs or more) a
    // top limb of 1.
    let mut v = m.as_limbs().to_vec();
    match rng.next_u32() % 3 {
        0 => v[limbs - 1] = u64::MAX,
        1 if limbs > 1 => v[limbs - 1] = 1,
        _ => {}
    }
    v[0] |= 1;
    Integer::from_limbs(&v)
}

fn backends() -> Vec<Backend> {
    #[allow(unused_mut)] // only x86-64 adds the ADX kernel
    let mut v = vec![Backend::Portable];
    #[cfg(obliv_x86_simd)]
    if let Some(k) = Adx::detect() {
        v.push(Backend::Adx(k));
    }
    v
}

#[test]
fn kernels_agree_on_rows() {
    let mut rng = rand::rng();
    for n in 1..=40usize {
        for _ in 0..8 {
            let a: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let r0: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            for b in [0u64, 1, u64::MAX, rng.next_u64()] {
                let mut want = r0.clone();
                let cw = addmul_1(&mut want, &a, b);
                // Reference through Integer arithmetic.
                let full = &Integer::from_limbs(&r0) + &(&Integer::from_limbs(&a) * b);
                let mut w2 = want.clone();
                w2.push(cw);
                assert_eq!(Integer::from_limbs(&w2), full);
                #[cfg(obliv_x86_simd)]
                if let Some(k) = Adx::detect() {
                    let mut got = r0.clone();
                    let cg = k.addmul_1(&mut got, &a, b);
                    assert_eq!((got, cg), (want.clone(), cw), "n = {n}");
                }
                // All-ones rows: maximal carries.
                let ones = vec![u64::MAX; n];
                let mut w = ones.clone();
                let c = addmul_1(&mut w, &ones, u64::MAX);
                #[cfg(obliv_x86_simd)]
                if let Some(k) = Adx::detect() {
                    let mut g = ones.clone();
                    assert_eq!(k.addmul_1(&mut g, &ones, u64::MAX), c);
                    assert_eq!(g, w);
                }
                let _ = c;
            }
        }
    }
}

#[test]
fn montgomery_matches_reference_every_size() {
    let mut rng = rand::rng();
    for limbs in 1..=34usize {
        let m = random_odd_modulus(&mut rng, limbs);
        let m1 = &m - 1u32;
        for backend in backends() {
            let ctx = Monty::with_backend(&m, backend).expect("odd");
            assert_eq!(ctx.limbs(), limbs);
            let mut vals = vec![Integer::new(), Integer::from(1u32), m1.clone()];
            for _ in 0..4 {
                vals.push(random_bits(&mut rng, m.significant_bits()).modulo(&m));
            }
            for a in &vals {
                for b in &vals {
                    assert_eq!(ctx.mul_mod(a, b), reference_mul(a, b, &m), "{limbs}");
                }
                assert_eq!(ctx.sub_mod(a, &m1), (a - &m1).modulo(&m));
            }
            // Wide reduction against Knuth division.
            for wide in 0..3 * limbs as u32 {
                let x = random_bits(&mut rng, 64 * wide + 7);
                assert_eq!(ctx.reduce(&x), x.modulo(&m));
            }
            for e_bits in [1u32, 5, 6, 64, 65, 130] {
                let b = vals[vals.len() - 1].clone();
                let e = random_bits(&mut rng, e_bits);
                assert_eq!(ctx.pow(&b, &e, e_bits), reference_pow(&b, &e, &m));
            }
            for b in &vals[..3] {
                let e = Integer::from(65_537u32);
                assert_eq!(ctx.pow(b, &e, 17), reference_pow(b, &e, &m));
            }
            assert_eq!(ctx.pow(&m1, &Integer::new(), 7), 1u32);
        }
    }
}

#[test]
fn portable_and_adx_agree_at_key_sizes() {
    let mut rng = rand::rng();
    for bits in [1024u32, 2048, 3072, 4096, 6144, 8192] {
        let mut m = random_bits(&mut rng, bits);
        m.set_bit(bits - 1, true);
        m.set_bit(0, true);
        let ctxs: Vec<Monty> = backends()
            .into_iter()
            .map(|b| Monty::with_backend(&m, b).expect("odd"))
            .collect();
        let b = random_bits(&mut rng, bits).modulo(&m);
        let e = random_bits(&mut rng, 200);
        let want = reference_pow(&b, &e, &m);
        for c in &ctxs {
            assert_eq!(c.pow(&b, &e, 200), want, "{bits} {:?}", c.backend());
            let x = random_bits(&mut rng, bits).modulo(&m);
            assert_eq!(c.mul_mod(&b, &x), reference_mul(&b, &x, &m));
        }
    }
    if adx_available() {
        assert!(Backend::detect().is_adx());
    }
}

#[test]
fn fixed_base_matches_reference() {
    let mut rng = rand::rng();
    for bits in [64u32, 521, 1030, 2048] {
        let mut m = random_bits(&mut rng, bits);
        m.set_bit(bits - 1, true);
        m.set_bit(0, true);
        let b = random_bits(&mut rng, bits).modulo(&m);
        for w in [1u32, 4, 5] {
            let t = MontFixedBase::new(&b, &m, 100, w).expect("odd");
            for _ in 0..4 {
                let e = random_bits(&mut rng, 100);
                assert_eq!(t.pow(&e), reference_pow(&b, &e, &m));
            }
            assert_eq!(t.pow(&Integer::new()), 1u32);
        }
    }
}

/// The constant-time setup gives the constants of the division-based one, for every length.
#[test]
fn secret_setup_matches_public_setup() {
    let mut rng = rand::rng();
    for limbs in 1..=34usize {
        for _ in 0..3 {
            let m = random_odd_modulus(&mut rng, limbs);
            let a = Monty::new(&m).expect("odd");
            let b = Monty::new_public(&m).expect("odd");
            assert_eq!((&a.n, a.n0, &a.one, &a.r2), (&b.n, b.n0, &b.one, &b.r2));
        }
    }
    assert!(Monty::new(&Integer::from(1u32)).is_none());
    assert!(Monty::new(&Integer::from(10u32)).is_none());
    let three = Monty::new(&Integer::from(3u32)).expect("odd");
    assert_eq!(
        three.mul_mod(&Integer::from(2u32), &Integer::from(2u32)),
        1u32
    );
}

/// The setup for a secret modulus (`p`, `p²`, a prime candidate) performs the same operations
/// for every modulus of a length, and no variable-time division.
#[test]
fn secret_setup_trace_depends_on_the_length_only() {
    let mut rng = rand::rng();
    let mut traces = Vec::new();
    for _ in 0..4 {
        let mut m = random_bits(&mut rng, 1024);
        m.set_bit(1023, true);
        m.set_bit(0, true);
        let _ = crate::bigint::ct_trace::take();
        let ctx = Monty::new(&m).expect("odd");
        traces.push(crate::bigint::ct_trace::take());
        drop(ctx);
    }
    assert_eq!(traces[0].2, 0, "variable-time division in the setup");
    assert!(traces.iter().all(|t| *t == traces[0]));
}

/// The ADX row kernels (`mul_rows`, `redc_rows`, `redc_rows_q`; unrolled at `L = 16`, the
/// digit size of Paillier-2048, looped at the other multiples of 4) against the portable
/// kernel, limb for limb, on random and all-ones inputs (every carry maximal).
#[test]
fn adx_rows_match_portable_at_every_kernel_size() {
    #[cfg(obliv_x86_simd)]
    if let Some(k) = Adx::detect() {
        let mut rng = rand::rng();
        for l in [4usize, 12, 16, 20, 32] {
            let mut inputs: Vec<(Vec<u64>, Vec<u64>)> =
                vec![(vec![u64::MAX; l], vec![u64::MAX; l])];
            for _ in 0..32 {
                inputs.push((
                    (0..l).map(|_| rng.next_u64()).collect(),
                    (0..l).map(|_| rng.next_u64()).collect(),
                ));
            }
            // The rows compute the same limbs for any modulus limbs and any `n0`.
            let n: Vec<u64> = (0..l).map(|_| rng.next_u64() | 1).collect();
            let n0 = rng.next_u64();
            for (a, b) in &inputs {
                let mut want = vec![0u64; 2 * l];
                Portable.mul_rows(&mut want, a, b);
                let mut got = vec![u64::MAX; 2 * l];
                k.mul_rows(&mut got, a, b);
                assert_eq!(got, want, "mul_rows, l = {l}");
                let mut t_want = want.clone();
                Portable.redc_rows(&mut t_want, &n, n0);
                let mut t_got = want.clone();
                k.redc_rows(&mut t_got, &n, n0);
                assert_eq!(t_got, t_want, "redc_rows, l = {l}");
                let (mut q_want, mut q_got) = (vec![0u64; l], vec![0u64; l]);
                let mut t_want = want.clone();
                Portable.redc_rows_q(&mut t_want, &n, n0, &mut q_want);
                let mut t_got = want.clone();
                k.redc_rows_q(&mut t_got, &n, n0, &mut q_got);
                assert_eq!((t_got, q_got), (t_want, q_want), "redc_rows_q, l = {l}");
            }
        }
    }
}

/// The ADX square (`sqr_rows`: triangle and diagonal in assembly for `L` a multiple of 4)
/// against the portable kernel and an `Integer` square, and its Montgomery square against
/// `mont_mul(a, a)` and the portable one, on random and edge inputs.
#[test]
fn adx_square_matches_portable_and_mul() {
    #[cfg(obliv_x86_simd)]
    if let Some(k) = Adx::detect() {
        let mut rng = rand::rng();
        for l in [1usize, 3, 4, 5, 8, 16, 32, 33, 48, 64] {
            // Raw squares of any L-limb value, including all-ones (every carry maximal).
            let mut raw: Vec<Vec<u64>> = vec![vec![0; l], vec![u64::MAX; l]];
            let mut one = vec![0; l];
            one[0] = 1;
            raw.push(one);
            for _ in 0..16 {
                raw.push((0..l).map(|_| rng.next_u64()).collect());
            }
            for a in &raw {
                let mut want = vec![0u64; 2 * l];
                Portable.sqr_rows(&mut want, a);
                let sq = Integer::from_limbs(a).square();
                assert_eq!(Integer::from_limbs(&want), sq, "portable, l = {l}");
                // Garbage in `t` on entry must not matter.
                let mut got = vec![u64::MAX; 2 * l];
                k.sqr_rows(&mut got, a);
                assert_eq!(got, want, "l = {l}");
            }
            for _ in 0..3 {
                let m = random_odd_modulus(&mut rng, l);
                let ctx = Monty::with_backend(&m, Backend::Adx(k)).expect("odd");
                let port = Monty::with_backend(&m, Backend::Portable).expect("odd");
                let mut vals = vec![Integer::new(), Integer::from(1u32), &m - 1u32];
                // All-ones low limbs, below N.
                for j in 1..=l {
                    let v = (Integer::from(1u32) << (64 * j as u32)) - 1u32;
                    if v < m {
                        vals.push(v);
                    }
                }
                for _ in 0..8 {
                    vals.push(random_bits(&mut rng, m.significant_bits()).modulo(&m));
                }
                let mut t = vec![0u64; 2 * l];
                let (mut s_adx, mut s_port, mut p_adx) = (vec![0; l], vec![0; l], vec![0; l]);
                for v in &vals {
                    let a = limbs_of(v, l);
                    ctx.mont_sqr(k, &mut s_adx, &a, &mut t);
                    port.mont_sqr(Portable, &mut s_port, &a, &mut t);
                    ctx.mont_mul(k, &mut p_adx, &a, &a, &mut t);
                    assert_eq!(s_adx, s_port, "l = {l}");
                    assert_eq!(s_adx, p_adx, "l = {l}");
                }
            }
        }
        return;
    }
    println!("skipped: the CPU lacks BMI2 + ADX (or the build is portable)");
}

/// The limb-chain helpers and REDC's recorded multiplier, every kernel against integer
/// arithmetic, at every length up to 40 limbs, with random and all-ones operands and both
/// carry-ins.
#[test]
fn chain_helpers_and_redc_multiplier_match_integers() {
    let mut rng = rand::rng();
    let big = |v: &[u64]| Integer::from_limbs(v);
    let pow2 = |limbs: usize| Integer::from(1u32) << u32::try_from(64 * limbs).expect("small");
    for n in 1..=40usize {
        for round in 0..6 {
            let draw = |rng: &mut rand::rngs::ThreadRng| -> Vec<u64> {
                if round == 0 {
                    vec![u64::MAX; n]
                } else {
                    (0..n).map(|_| rng.next_u64()).collect()
                }
            };
            let (a, b, c) = (draw(&mut rng), draw(&mut rng), draw(&mut rng));
            let cin = u64::from(round % 2 == 1);
            for backend in backends() {
                let run = |f: &mut dyn FnMut(&dyn KernelOps)| match backend {
                    Backend::Portable => f(&Portable),
                    #[cfg(obliv_x86_simd)]
                    Backend::Adx(k) => f(&k),
                };
                run(&mut |k| {
                    // t = 2t + u + cin
                    let mut t = a.clone();
                    let over = k.double_add_n(&mut t, &b, cin);
                    let want = &(&big(&a) * 2u32 + &big(&b)) + cin;
                    assert_eq!(&big(&t) + &(&pow2(n) * over), want, "double_add {n}");
                    // t = t + u + w + cin
                    let mut t = a.clone();
                    let over = k.add2_n(&mut t, &b, &c, cin);
                    let want = &(&big(&a) + &big(&b) + &big(&c)) + cin;
                    assert_eq!(&big(&t) + &(&pow2(n) * over), want, "add2 {n}");
                    // out = a + b, d = out − c (as out + !c + 1)
                    let nc: Vec<u64> = c.iter().map(|&w| !w).collect();
                    let (mut out, mut d) = (vec![0; n], vec![0; n]);
                    let (c1, c2) = k.add_sub_n(&mut out, &mut d, &a, &b, &nc);
                    assert_eq!(
                        &big(&out) + &(&pow2(n) * c1),
                        &big(&a) + &big(&b),
                        "add {n}"
                    );
                    assert_eq!(c2 == 1, big(&out) >= big(&c), "no-borrow flag {n}");
                    let diff = (&big(&out) + &pow2(n) - &big(&c)).modulo(&pow2(n));
                    assert_eq!(big(&d), diff, "sub {n}");
                    // r = a − b
                    let mut r = vec![0; n];
                    let borrow = k.sub_n(&mut r, &a, &b);
                    assert_eq!(borrow == 1, big(&a) < big(&b), "borrow {n}");
                    assert_eq!(big(&r), (&big(&a) + &pow2(n) - &big(&b)).modulo(&pow2(n)));
                });
                // REDC's multiplier: q = t·(−N⁻¹) mod R, and the rows match redc_rows.
                let m = random_odd_modulus(&mut rng, n);
                let ml = limbs_of(&m, n);
                let ctx = Monty::new(&m).expect("odd");
                let t0: Vec<u64> = (0..2 * n).map(|_| rng.next_u64()).collect();
                let (mut t1, mut t2, mut q) = (t0.clone(), t0.clone(), vec![0u64; n]);
                let n0 = ctx.n0;
                match backend {
                    Backend::Portable => {
                        Portable.redc_rows_q(&mut t1, &ml, n0, &mut q);
                        Portable.redc_rows(&mut t2, &ml, n0);
                    }
                    #[cfg(obliv_x86_simd)]
                    Backend::Adx(k) => {
                        k.redc_rows_q(&mut t1, &ml, n0, &mut q);
                        k.redc_rows(&mut t2, &ml, n0);
                    }
                }
                assert_eq!(t1, t2, "redc_rows_q rows {n}");
                let low = big(&t0[..n]);
                let want =
                    (&(&pow2(n) - &low.modulo(&pow2(n))) * &bigint_inv(&m, n)).modulo(&pow2(n));
                assert_eq!(big(&q), want, "multiplier {n}");
            }
        }
    }
}

/// The object-safe view of a kernel's chain helpers, for running one test body on each.
trait KernelOps {
    fn double_add_n(&self, t: &mut [u64], u: &[u64], cin: u64) -> u64;
    fn add2_n(&self, t: &mut [u64], u: &[u64], w: &[u64], cin: u64) -> u64;
    fn add_sub_n(
        &self,
        o: &mut [u64],
        d: &mut [u64],
        a: &[u64],
        b: &[u64],
        nm: &[u64],
    ) -> (u64, u64);
    fn sub_n(&self, r: &mut [u64], a: &[u64], b: &[u64]) -> u64;
}

impl<K: Kernel> KernelOps for K {
    fn double_add_n(&self, t: &mut [u64], u: &[u64], cin: u64) -> u64 {
        Kernel::double_add_n(*self, t, u, cin)
    }
    fn add2_n(&self, t: &mut [u64], u: &[u64], w: &[u64], cin: u64) -> u64 {
        Kernel::add2_n(*self, t, u, w, cin)
    }
    fn add_sub_n(
        &self,
        o: &mut [u64],
        d: &mut [u64],
        a: &[u64],
        b: &[u64],
        nm: &[u64],
    ) -> (u64, u64) {
        Kernel::add_sub_n(*self, o, d, a, b, nm)
    }
    fn sub_n(&self, r: &mut [u64], a: &[u64], b: &[u64]) -> u64 {
        Kernel::sub_n(*self, r, a, b)
    }
}

/// `m⁻¹ mod 2^(64n)`.
fn bigint_inv(m: &Integer, n: usize) -> Integer {
    crate::bigint::inverse_mod_word_power(m, n)
}
