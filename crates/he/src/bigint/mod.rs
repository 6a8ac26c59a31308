//! Big integers of our own: [`Integer`] (signed, arbitrary precision, variable-time generic
//! arithmetic), the constant-time Montgomery backend (`monty`: portable `u128` and x86-64
//! BMI2/ADX kernels), probable primes (`prime`), and the helpers the schemes share: uniform
//! sampling from a CSPRNG, byte and hex conversion, wiping, serde, and fixed-base tables read
//! with a constant-time scan.

mod integer;
pub(crate) mod monty;
pub(crate) mod prime;
pub(crate) mod safegcd;

pub use integer::{Integer, ParseIntegerError};

use rand_core::CryptoRng;
use zeroize::Zeroize;

use crate::error::{Error, Result};

/// Largest integer (in bits) accepted when decoding a serialised value: 2·8192 bits covers `n²`
/// of the largest supported Paillier modulus with room to spare. Anything longer is rejected
/// before allocation.
pub(crate) const MAX_DECODE_BITS: u32 = 2 * 8192 + 64;

/// A uniformly random integer of at most `bits` bits from `rng`.
pub(crate) fn random_bits<R: CryptoRng + ?Sized>(rng: &mut R, bits: u32) -> Integer {
    let words = bits.div_ceil(64) as usize;
    let mut buf = vec![0u64; words];
    for w in buf.iter_mut() {
        *w = rng.next_u64();
    }
    let extra = bits.div_ceil(64) * 64 - bits;
    if extra > 0
        && let Some(top) = buf.last_mut()
    {
        *top >>= extra;
    }
    let x = Integer::from_limbs(&buf);
    buf.zeroize();
    x
}

/// A uniformly random integer in `[0, bound)` by rejection sampling (`bound > 0`).
pub(crate) fn random_below<R: CryptoRng + ?Sized>(rng: &mut R, bound: &Integer) -> Integer {
    let bits = bound.significant_bits();
    loop {
        let x = random_bits(rng, bits);
        if &x < bound {
            return x;
        }
    }
}

/// A uniformly random unit of `Z_m` (`m > 1`).
pub(crate) fn random_unit<R: CryptoRng + ?Sized>(rng: &mut R, m: &Integer) -> Integer {
    loop {
        let x = random_below(rng, m);
        if !x.is_zero() && x.gcd(m) == 1u32 {
            return x;
        }
    }
}

/// `x` (its magnitude) truncated or zero-padded to `len` limbs.
pub(crate) fn limbs_of(x: &Integer, len: usize) -> Vec<u64> {
    let mut v = vec![0u64; len];
    let src = x.as_limbs();
    let k = src.len().min(len);
    v[..k].copy_from_slice(&src[..k]);
    v
}

/// `a·b mod 2^(64·len)` by a truncated schoolbook product over exactly `len` limbs (time
/// depends on `len` only).
pub(crate) fn mul_low(a: &Integer, b: &Integer, len: usize) -> Integer {
    let mut a = limbs_of(a, len);
    let mut b = limbs_of(b, len);
    let mut r = vec![0u64; len];
    for i in 0..len {
        let _ = integer::addmul_1(&mut r[i..], &a[..len - i], b[i]);
    }
    let out = Integer::from_limbs(&r);
    a.zeroize();
    b.zeroize();
    r.zeroize();
    out
}

/// `x⁻¹ mod 2^(64·len)` for odd `x`, by Newton's iteration `y ← y·(2 − x·y)`, which doubles
/// the number of correct low bits each time; every product is a [`mul_low`] over a public
/// length, so the time depends on `len` only.
pub(crate) fn inverse_mod_word_power(x: &Integer, len: usize) -> Integer {
    debug_assert!(x.is_odd());
    let mut y = Integer::from(1u32);
    let mut bits = 1usize;
    while bits < 64 * len {
        bits *= 2;
        // 2 − x·y modulo 2^(64·len): the complement of x·y − 2 plus one.
        let xy = mul_low(x, &y, len);
        let mut t = limbs_of(&xy, len);
        let mut borrow = 2u64;
        for w in &mut t {
            let (d, b) = w.overflowing_sub(borrow);
            *w = !d;
            borrow = u64::from(b);
        }
        // t = !(x·y − 2) = −(x·y − 2) − 1; add the one back.
        let mut carry = 1u64;
        for w in &mut t {
            let (s, c) = w.overflowing_add(carry);
            *w = s;
            carry = u64::from(c);
        }
        y = mul_low(&y, &Integer::from_limbs(&t), len);
        t.zeroize();
    }
    y
}

/// Overwrites the limbs of `x` with zeros and sets it to zero (dropping does the same).
pub(crate) fn wipe(x: &mut Integer) {
    x.zeroize();
}

/// Big-endian bytes of a non-negative integer (no leading zeros; empty for zero).
pub(crate) fn to_bytes(x: &Integer) -> Vec<u8> {
    x.to_be_bytes()
}

/// Integer from big-endian bytes, refusing more than [`MAX_DECODE_BITS`].
pub(crate) fn from_bytes(b: &[u8]) -> Result<Integer> {
    if b.len() as u64 * 8 > u64::from(MAX_DECODE_BITS) {
        return Err(Error::Decoding("integer too long"));
    }
    Ok(Integer::from_be_bytes(b))
}

/// serde as a lowercase hexadecimal string (no prefix), with a length limit on input.
pub(crate) mod serde_hex {
    use super::Integer;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(crate) fn serialize<S: Serializer>(x: &Integer, s: S) -> Result<S::Ok, S::Error> {
        if x.is_negative() {
            return Err(serde::ser::Error::custom("negative integer"));
        }
        // The value may be secret (p, q, x): the temporary text is wiped after use.
        let mut hex = x.to_string_radix(16);
        let r = s.serialize_str(&hex);
        zeroize::Zeroize::zeroize(&mut hex);
        r
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Integer, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        if s.is_empty() || s.len() as u64 * 4 > u64::from(super::MAX_DECODE_BITS) {
            return Err(D::Error::custom("hex integer empty or too long"));
        }
        if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(D::Error::custom("not a hex integer"));
        }
        Integer::from_str_radix(&s, 16).map_err(D::Error::custom)
    }
}

/// Fixed-base exponentiation `base^e mod m` (odd `m`) for exponents of at most `exp_bits`
/// bits, by the radix-`2^w` fixed-base method (Brickell–Gordon–McCurley–Wilson; HAC Algorithm
/// 14.109 with all windows precomputed): the table holds `base^(j·2^(w·i))` for every window `i`
/// and digit `j < 2^w`, so an exponentiation is one multiplication per window and no squaring.
///
/// Every look-up reads all `2^w` entries of its window and keeps one by masking, so the memory
/// access pattern does not depend on the (secret) exponent.
///
/// On CPUs with AVX-512 IFMA, moduli up to 8318 bits use [`crate::ifma::IfmaFixedBase`]
/// (52-bit limbs); otherwise [`monty::MontFixedBase`] (64-bit Montgomery, ADX or portable).
pub(crate) enum FixedBaseTable {
    /// 64-bit Montgomery.
    Mont(monty::MontFixedBase),
    /// IFMA, moduli up to 2078 bits.
    #[cfg(obliv_x86_simd)]
    Ifma5(Box<crate::ifma::IfmaFixedBase<5>>),
    /// IFMA, moduli up to 4158 bits.
    #[cfg(obliv_x86_simd)]
    Ifma10(Box<crate::ifma::IfmaFixedBase<10>>),
    /// IFMA, moduli up to 6238 bits (`n²` of 3072-bit keys).
    #[cfg(obliv_x86_simd)]
    Ifma15(Box<crate::ifma::IfmaFixedBase<15>>),
    /// IFMA, moduli up to 8318 bits (`n²` of 4096-bit keys).
    #[cfg(obliv_x86_simd)]
    Ifma20(Box<crate::ifma::IfmaFixedBase<20>>),
}

impl FixedBaseTable {
    /// Builds the table (`windows · 2^w` modular multiplications), on IFMA when available.
    /// `modulus` must be odd and greater than 1 (every caller's is).
    pub(crate) fn new(base: &Integer, modulus: &Integer, exp_bits: u32, window: u32) -> Self {
        #[cfg(obliv_x86_simd)]
        {
            let bits = modulus.significant_bits();
            if bits + 2 <= 52 * 40 {
                if let Some(t) =
                    crate::ifma::IfmaFixedBase::<5>::new(base, modulus, exp_bits, window)
                {
                    return Self::Ifma5(Box::new(t));
                }
            } else if bits + 2 <= 52 * 80 {
                if let Some(t) =
                    crate::ifma::IfmaFixedBase::<10>::new(base, modulus, exp_bits, window)
                {
                    return Self::Ifma10(Box::new(t));
                }
            } else if bits + 2 <= 52 * 120 {
                if let Some(t) =
                    crate::ifma::IfmaFixedBase::<15>::new(base, modulus, exp_bits, window)
                {
                    return Self::Ifma15(Box::new(t));
                }
            } else if bits + 2 <= 52 * 160
                && let Some(t) =
                    crate::ifma::IfmaFixedBase::<20>::new(base, modulus, exp_bits, window)
            {
                return Self::Ifma20(Box::new(t));
            }
        }
        Self::new_mont(base, modulus, exp_bits, window)
    }

    /// The 64-bit Montgomery table regardless of the CPU.
    pub(crate) fn new_mont(base: &Integer, modulus: &Integer, exp_bits: u32, window: u32) -> Self {
        // Callers pass odd moduli > 1 (n², p², q², MODP primes); a degenerate one would be a
        // bug, reported as an empty-window table over the modulus 3 rather than a panic.
        let t = monty::MontFixedBase::new(base, modulus, exp_bits, window).or_else(|| {
            monty::MontFixedBase::new(&Integer::new(), &Integer::from(3u32), exp_bits, window)
        });
        match t {
            Some(t) => Self::Mont(t),
            None => unreachable!("3 is an odd modulus"),
        }
    }

    /// Whether the IFMA variant is in use.
    #[cfg(all(test, obliv_x86_simd))]
    pub(crate) fn is_ifma(&self) -> bool {
        !matches!(self, Self::Mont(_))
    }

    /// Overwrites the entries with zeros; dropping a table does this too (entries modulo a
    /// secret `p²` reveal `p`).
    pub(crate) fn wipe(&mut self) {
        match self {
            Self::Mont(t) => t.wipe(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma5(t) => t.wipe(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma10(t) => t.wipe(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma15(t) => t.wipe(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma20(t) => t.wipe(),
        }
    }

    /// Whether every entry is zero.
    #[cfg(test)]
    pub(crate) fn is_wiped(&self) -> bool {
        match self {
            Self::Mont(t) => t.is_wiped(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma5(t) => t.is_wiped(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma10(t) => t.is_wiped(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma15(t) => t.is_wiped(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma20(t) => t.is_wiped(),
        }
    }

    /// The number of bytes the table occupies.
    pub(crate) fn memory_bytes(&self) -> usize {
        match self {
            Self::Mont(t) => t.memory_bytes(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma5(t) => t.memory_bytes(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma10(t) => t.memory_bytes(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma15(t) => t.memory_bytes(),
            #[cfg(obliv_x86_simd)]
            Self::Ifma20(t) => t.memory_bytes(),
        }
    }

    /// `base^e mod m` for `0 ≤ e < 2^exp_bits` (higher bits of `e` are ignored).
    pub(crate) fn pow(&self, e: &Integer) -> Integer {
        match self {
            Self::Mont(t) => t.pow(e),
            #[cfg(obliv_x86_simd)]
            Self::Ifma5(t) => t.pow(e),
            #[cfg(obliv_x86_simd)]
            Self::Ifma10(t) => t.pow(e),
            #[cfg(obliv_x86_simd)]
            Self::Ifma15(t) => t.pow(e),
            #[cfg(obliv_x86_simd)]
            Self::Ifma20(t) => t.pow(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_base_matches_pow_mod() {
        let mut rng = rand::rng();
        for (bits, w, mont) in [
            (521u32, 1u32, false),
            (521, 4, false),
            (521, 5, true),
            (521, 6, false),
            (2048, 5, false),
            (2048, 5, true),
            (4096, 5, false),
            (4096, 3, true),
            (6144, 5, false),
            (8192, 4, false),
            (8400, 4, true),
        ] {
            let mut m = random_bits(&mut rng, bits);
            m.set_bit(0, true);
            let b = random_below(&mut rng, &m);
            let t = if mont {
                FixedBaseTable::new_mont(&b, &m, 130, w)
            } else {
                FixedBaseTable::new(&b, &m, 130, w)
            };
            assert!(t.memory_bytes() > 0);
            #[cfg(obliv_x86_simd)]
            if crate::ifma::available() && bits + 2 <= 52 * 160 {
                assert_eq!(t.is_ifma(), !mont);
            }
            for _ in 0..10 {
                let e = random_bits(&mut rng, 130);
                let want = b.pow_mod(&e, &m).expect("modulus positive");
                assert_eq!(t.pow(&e), want);
            }
            assert_eq!(t.pow(&Integer::new()), 1u32);
        }
    }

    #[test]
    fn wipe_zeroes_and_bytes_roundtrip() {
        let mut x = Integer::from(0xdead_beef_u64) << 300;
        wipe(&mut x);
        assert_eq!(x, 0u32);
        let y = Integer::from(0x0102_0304u32);
        assert_eq!(to_bytes(&y), vec![1, 2, 3, 4]);
        assert_eq!(from_bytes(&[1, 2, 3, 4]).expect("short"), y);
        assert!(from_bytes(&vec![1u8; 4096]).is_err());
    }
}
