//! Modular exponentiation and multiplication at 2048 and 4096 bits with crypto-bigint 0.7
//! (constant-time Montgomery, fixed-size `Uint`), num-bigint 0.4 and rug 1.30 (GMP 6.3).
//! Prints microseconds per operation.
use crypto_bigint::{
    Odd, U1024, U2048, U4096, Uint,
    modular::{FixedMontyForm, FixedMontyParams},
};
use std::time::Instant;

fn bytes(n: usize, seed: &mut u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed >> 24) as u8
        })
        .collect()
}

fn time<F: FnMut()>(name: &str, iters: u32, mut f: F) {
    f();
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    let dt = t.elapsed().as_secs_f64() / iters as f64;
    println!("{name:60} {:10.1} us", dt * 1e6);
}

fn cb<const L: usize, const E: usize>(label: &str, m: &[u8], b: &[u8], e: &[u8], iters: u32) {
    let m = Uint::<L>::from_be_slice(m);
    let modulus = Odd::new(m).unwrap();
    let params = FixedMontyParams::new(modulus);
    let base = FixedMontyForm::new(&Uint::<L>::from_be_slice(b), &params);
    let ex = Uint::<E>::from_be_slice(e);
    time(&format!("crypto-bigint {label} pow (ct)"), iters, || {
        std::hint::black_box(base.pow(&ex));
    });
    time(&format!("crypto-bigint {label} pow_vartime"), iters, || {
        std::hint::black_box(base.pow_vartime(&ex));
    });
    let x = base.clone();
    time(
        &format!("crypto-bigint {label} mont mul"),
        iters * 1000,
        || {
            std::hint::black_box(x.mul(&base));
        },
    );
}

fn nb(label: &str, m: &[u8], b: &[u8], e: &[u8], iters: u32) {
    let m = num_bigint::BigUint::from_bytes_be(m);
    let b = num_bigint::BigUint::from_bytes_be(b) % &m;
    let e = num_bigint::BigUint::from_bytes_be(e);
    time(&format!("num-bigint {label} modpow"), iters, || {
        std::hint::black_box(b.modpow(&e, &m));
    });
    time(&format!("num-bigint {label} mulmod"), iters * 100, || {
        std::hint::black_box((&b * &b) % &m);
    });
}

fn rg(label: &str, m: &[u8], b: &[u8], e: &[u8], iters: u32) {
    use rug::{Integer, integer::Order};
    let m = Integer::from_digits(m, Order::Msf);
    let b = Integer::from_digits(b, Order::Msf) % &m;
    let e = Integer::from_digits(e, Order::Msf);
    time(&format!("rug {label} pow_mod"), iters, || {
        std::hint::black_box(b.clone().pow_mod(&e, &m).unwrap());
    });
    time(&format!("rug {label} secure_pow_mod"), iters, || {
        std::hint::black_box(b.clone().secure_pow_mod(&e, &m));
    });
    time(&format!("rug {label} mulmod"), iters * 100, || {
        let mut x = Integer::from(&b * &b);
        x %= &m;
        std::hint::black_box(x);
    });
}

fn main() {
    let mut s = 0x1234_5678_9abc_def1u64;
    for (bits, ebits) in [
        (2048usize, 2048usize),
        (2048, 1024),
        (4096, 4096),
        (4096, 256),
    ] {
        let mut m = bytes(bits / 8, &mut s);
        m[0] |= 0x80;
        *m.last_mut().unwrap() |= 1;
        let mut b = bytes(bits / 8, &mut s);
        b[0] &= 0x7f;
        let e = bytes(ebits / 8, &mut s);
        let label = format!("mod {bits} exp {ebits}");
        let it = if bits == 4096 && ebits == 4096 { 5 } else { 30 };
        match (bits, ebits) {
            (2048, 2048) => cb::<{ U2048::LIMBS }, { U2048::LIMBS }>(&label, &m, &b, &e, it),
            (2048, 1024) => cb::<{ U2048::LIMBS }, { U1024::LIMBS }>(&label, &m, &b, &e, it),
            (4096, 4096) => cb::<{ U4096::LIMBS }, { U4096::LIMBS }>(&label, &m, &b, &e, it),
            (4096, 256) => cb::<{ U4096::LIMBS }, 4>(&label, &m, &b, &e, it),
            _ => unreachable!(),
        }
        nb(&label, &m, &b, &e, it);
        if std::env::var("NORUG").is_err() {
            rg(&label, &m, &b, &e, it);
        }
    }
}
