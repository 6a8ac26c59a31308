//! Probable primes: trial division by the odd primes below 2^12, then Miller–Rabin with bases
//! drawn from the CSPRNG (FIPS 186-5 §B.3 and Appendix C.1 procedure, our round counts below).
//!
//! Round counts for an error probability of at most 2^−128:
//! * a **random candidate** of at least 1536 bits: 4 rounds (FIPS 186-5 Table B.1: 4 rounds give
//!   2^−128 for 1536-bit and 2^−144 for 2048-bit `p`, `q`; the average-case bound of Damgård,
//!   Landrock and Pomerance applies because the candidate is uniform);
//! * a random candidate below 1536 bits (the 1024-bit primes of Paillier-2048 among them):
//!   64 rounds, the worst-case `4^−t` bound, since Table B.1 stops at 2^−112 (5 rounds) for
//!   1024 bits; the extra rounds run once, on the prime found, so they add little to a search
//!   dominated by rejected composites (one round each);
//! * a number **given to us** (a deserialised or imported key): 64 rounds, as the average-case
//!   bound does not hold for adversarial inputs.

use std::sync::OnceLock;

use rand_core::CryptoRng;

use super::monty::Monty;
use super::{Integer, random_below};

/// Miller–Rabin rounds for numbers that are not uniform random candidates.
pub(crate) const ADVERSARIAL_ROUNDS: u32 = 64;

/// Rounds for a uniform random candidate of `bits` bits (see the module documentation).
pub(crate) fn random_candidate_rounds(bits: u32) -> u32 {
    if bits >= 1536 { 4 } else { ADVERSARIAL_ROUNDS }
}

/// The odd primes below 4096.
fn small_primes() -> &'static [u64] {
    static P: OnceLock<Vec<u64>> = OnceLock::new();
    P.get_or_init(|| {
        const B: usize = 4096;
        let mut sieve = vec![true; B];
        let mut out = Vec::new();
        for i in 2..B {
            if sieve[i] {
                if i > 2 {
                    out.push(i as u64);
                }
                let mut j = i * i;
                while j < B {
                    sieve[j] = false;
                    j += i;
                }
            }
        }
        out
    })
}

/// Products of consecutive small primes that fit a `u64`, with their factors: one multi-limb
/// remainder per group instead of one per prime.
fn prime_groups() -> &'static [(u64, Vec<u64>)] {
    static G: OnceLock<Vec<(u64, Vec<u64>)>> = OnceLock::new();
    G.get_or_init(|| {
        let mut groups = Vec::new();
        let mut prod = 1u64;
        let mut cur = Vec::new();
        for &p in small_primes() {
            match prod.checked_mul(p) {
                Some(x) => {
                    prod = x;
                    cur.push(p);
                }
                None => {
                    groups.push((prod, core::mem::take(&mut cur)));
                    prod = p;
                    cur.push(p);
                }
            }
        }
        if !cur.is_empty() {
            groups.push((prod, cur));
        }
        groups
    })
}

/// Whether `n` has a factor among the odd primes below 4096 (other than itself).
pub(crate) fn has_small_factor(n: &Integer) -> bool {
    for (prod, ps) in prime_groups() {
        let r = n.mod_u64(*prod);
        for &p in ps {
            if r.is_multiple_of(p) && *n != p {
                return true;
            }
        }
    }
    false
}

/// Miller–Rabin with `rounds` random bases on top of trial division. Even numbers, 0 and 1 are
/// composite here; 2 is prime.
///
/// Variable time: used on candidates during key generation and on keys being imported, so on
/// the prime that is finally accepted too. The Montgomery setup and the exponentiation by `d`
/// are constant time (for the length of `d`); what depends on the value of an accepted prime
/// is the trial division (hardware remainders, whose latency may depend on the operands), the
/// 2-adic valuation `s` of `n − 1` (always 1 for the `3 mod 4` primes of key generation), the
/// number of rejections while drawing bases below `n − 3`, and the early exits of the
/// comparisons with `±1` in the squaring chain. A rejected candidate is discarded.
pub(crate) fn is_probable_prime<R: CryptoRng + ?Sized>(
    n: &Integer,
    rounds: u32,
    rng: &mut R,
) -> bool {
    if n.is_negative() || *n < 2u32 {
        return false;
    }
    if *n == 2u32 {
        return true;
    }
    if n.is_even() || has_small_factor(n) {
        return false;
    }
    if *n < 4096u32 {
        return true; // no factor below its square root
    }
    let Some(ctx) = Monty::new(n) else {
        return false;
    };
    let n1 = n - 1u32;
    let mut s = 0u32;
    while !n1.get_bit(s) {
        s += 1;
    }
    let d = &n1 >> s;
    let d_bits = d.significant_bits();
    let three = Integer::from(3u32);
    'rounds: for _ in 0..rounds {
        // Base uniform in [2, n − 2].
        let a = random_below(rng, &(n - &three)) + 2u32;
        let mut x = ctx.pow(&a, &d, d_bits);
        if x == 1u32 || x == n1 {
            continue;
        }
        for _ in 1..s {
            x = ctx.mul_mod(&x, &x);
            if x == n1 {
                continue 'rounds;
            }
            if x == 1u32 {
                return false;
            }
        }
        return false;
    }
    true
}

/// A uniformly random prime of exactly `bits` bits (`bits ≥ 16`) with the top two bits set
/// (so a product of two has exactly `2·bits` bits) and `p ≡ 3 (mod 4)`; a fresh candidate is
/// drawn from the CSPRNG for every try.
pub(crate) fn random_prime_3mod4<R: CryptoRng + ?Sized>(rng: &mut R, bits: u32) -> Integer {
    let rounds = random_candidate_rounds(bits);
    loop {
        let mut p = super::random_bits(rng, bits);
        p.set_bit(bits - 1, true);
        p.set_bit(bits - 2, true);
        p.set_bit(0, true);
        p.set_bit(1, true);
        if is_probable_prime(&p, rounds, rng) {
            return p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_numbers() {
        let mut rng = rand::rng();
        let primes = small_primes();
        assert_eq!(primes.len(), 563);
        for n in 0u32..5000 {
            let want = n >= 2 && (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0);
            assert_eq!(
                is_probable_prime(&Integer::from(n), 8, &mut rng),
                want,
                "{n}"
            );
        }
    }

    #[test]
    fn known_primes_and_composites() {
        let mut rng = rand::rng();
        // 2^127 − 1 and 2^521 − 1 are Mersenne primes; 2^128 + 1 is composite.
        let m127 = (Integer::from(1u32) << 127) - 1u32;
        let m521 = (Integer::from(1u32) << 521) - 1u32;
        assert!(is_probable_prime(&m127, 16, &mut rng));
        assert!(is_probable_prime(&m521, 16, &mut rng));
        assert!(!is_probable_prime(
            &((Integer::from(1u32) << 128) + 1u32),
            16,
            &mut rng
        ));
        // Carmichael numbers and a strong pseudoprime to several small bases. The last one,
        // 149491 · 747451 · 34233211, has no factor below 4096 and close to the worst-case
        // quarter of all bases as strong liars (0.249998), so each round passes it with
        // probability 1/4: 16 rounds would call it prime once in 2^32 runs. The adversarial
        // round count (64) is the one meant for such inputs (2^-128).
        for c in [
            561u64,
            41041,
            825_265,
            321_197_185,
            3_825_123_056_546_413_051,
        ] {
            assert!(
                !is_probable_prime(&Integer::from(c), ADVERSARIAL_ROUNDS, &mut rng),
                "{c}"
            );
        }
        // A product of two 200-bit primes.
        let p = random_prime_3mod4(&mut rng, 200);
        let q = random_prime_3mod4(&mut rng, 200);
        assert!(!is_probable_prime(&(&p * &q), 16, &mut rng));
        assert_eq!(p.significant_bits(), 200);
        assert_eq!(p.mod_u64(4), 3);
        assert!(p.get_bit(198));
    }
}
