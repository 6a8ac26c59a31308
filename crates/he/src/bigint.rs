//! Big-integer helpers on top of GMP (through `rug`): uniform sampling from a CSPRNG, byte and
//! hex conversion, wiping of secret values, serde helpers, and a fixed-base exponentiation table
//! read with a constant-time scan.

use rand_core::CryptoRng;
use rug::integer::Order;
use rug::{Assign, Integer};
use subtle::ConstantTimeEq;

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
    let x = Integer::from_digits(&buf, Order::Lsf);
    buf.iter_mut().for_each(|w| *w = 0);
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
        if x != 0u32 && x.clone().gcd(m) == 1u32 {
            return x;
        }
    }
}

/// Overwrites every limb that `x` has allocated, then sets it to zero. GMP gives no safe way to
/// zero its buffer, but assigning a value of exactly the allocated size writes through all of it
/// (mpz_set copies into the existing allocation when it is large enough).
pub(crate) fn wipe(x: &mut Integer) {
    let cap = u32::try_from(x.capacity()).unwrap_or(0);
    if cap > 0 {
        let ones = (Integer::from(1u32) << cap) - 1u32;
        if ones.capacity() <= x.capacity() {
            x.assign(&ones);
        }
    }
    x.assign(0u32);
}

/// Big-endian bytes of a non-negative integer (no leading zeros; empty for zero).
pub(crate) fn to_bytes(x: &Integer) -> Vec<u8> {
    x.to_digits::<u8>(Order::Msf)
}

/// Integer from big-endian bytes, refusing more than [`MAX_DECODE_BITS`].
pub(crate) fn from_bytes(b: &[u8]) -> Result<Integer> {
    if b.len() as u64 * 8 > u64::from(MAX_DECODE_BITS) {
        return Err(Error::Decoding("integer too long"));
    }
    Ok(Integer::from_digits(b, Order::Msf))
}

/// serde as a lowercase hexadecimal string (no prefix), with a length limit on input.
pub(crate) mod serde_hex {
    use rug::Integer;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(crate) fn serialize<S: Serializer>(x: &Integer, s: S) -> Result<S::Ok, S::Error> {
        if *x < 0 {
            return Err(serde::ser::Error::custom("negative integer"));
        }
        s.serialize_str(&x.to_string_radix(16))
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

/// Fixed-base exponentiation `base^e mod m` for exponents of at most `exp_bits` bits, by the
/// radix-`2^w` fixed-base method (Brickell–Gordon–McCurley–Wilson; HAC Algorithm 14.109 with
/// all windows precomputed): the table holds `base^(j·2^(w·i))` for every window `i` and digit
/// `j < 2^w`, so an exponentiation is one multiplication per window and no squaring.
///
/// Entries are stored as fixed-length limb vectors and every look-up reads all `2^w` entries
/// of its window and keeps one by masking, so the memory access pattern does not depend on the
/// (secret) exponent.
///
/// On CPUs with AVX-512 IFMA, moduli up to 8318 bits use [`crate::ifma::IfmaFixedBase`]
/// instead (the same method in Montgomery form with 52-bit limbs), which is about twice as fast.
pub(crate) enum FixedBaseTable {
    /// GMP multiplication and division.
    Gmp(GmpFixedBase),
    /// IFMA, moduli up to 2078 bits.
    #[cfg(target_arch = "x86_64")]
    Ifma5(Box<crate::ifma::IfmaFixedBase<5>>),
    /// IFMA, moduli up to 4158 bits.
    #[cfg(target_arch = "x86_64")]
    Ifma10(Box<crate::ifma::IfmaFixedBase<10>>),
    /// IFMA, moduli up to 6238 bits (`n²` of 3072-bit keys).
    #[cfg(target_arch = "x86_64")]
    Ifma15(Box<crate::ifma::IfmaFixedBase<15>>),
    /// IFMA, moduli up to 8318 bits (`n²` of 4096-bit keys).
    #[cfg(target_arch = "x86_64")]
    Ifma20(Box<crate::ifma::IfmaFixedBase<20>>),
}

impl FixedBaseTable {
    /// Builds the table (`windows · 2^w` modular multiplications), on IFMA when available.
    pub(crate) fn new(base: &Integer, modulus: &Integer, exp_bits: u32, window: u32) -> Self {
        #[cfg(target_arch = "x86_64")]
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
        Self::Gmp(GmpFixedBase::new(base, modulus, exp_bits, window))
    }

    /// The GMP table regardless of the CPU (for tests comparing the two).
    #[cfg(test)]
    pub(crate) fn new_gmp(base: &Integer, modulus: &Integer, exp_bits: u32, window: u32) -> Self {
        Self::Gmp(GmpFixedBase::new(base, modulus, exp_bits, window))
    }

    /// Whether the IFMA variant is in use.
    #[cfg(test)]
    pub(crate) fn is_ifma(&self) -> bool {
        !matches!(self, Self::Gmp(_))
    }

    /// The number of bytes the table occupies.
    pub(crate) fn memory_bytes(&self) -> usize {
        match self {
            Self::Gmp(t) => t.memory_bytes(),
            #[cfg(target_arch = "x86_64")]
            Self::Ifma5(t) => t.memory_bytes(),
            #[cfg(target_arch = "x86_64")]
            Self::Ifma10(t) => t.memory_bytes(),
            #[cfg(target_arch = "x86_64")]
            Self::Ifma15(t) => t.memory_bytes(),
            #[cfg(target_arch = "x86_64")]
            Self::Ifma20(t) => t.memory_bytes(),
        }
    }

    /// `base^e mod m` for `0 ≤ e < 2^exp_bits` (higher bits of `e` are ignored).
    pub(crate) fn pow(&self, e: &Integer) -> Integer {
        match self {
            Self::Gmp(t) => t.pow(e),
            #[cfg(target_arch = "x86_64")]
            Self::Ifma5(t) => t.pow(e),
            #[cfg(target_arch = "x86_64")]
            Self::Ifma10(t) => t.pow(e),
            #[cfg(target_arch = "x86_64")]
            Self::Ifma15(t) => t.pow(e),
            #[cfg(target_arch = "x86_64")]
            Self::Ifma20(t) => t.pow(e),
        }
    }
}

/// The GMP variant of [`FixedBaseTable`].
pub(crate) struct GmpFixedBase {
    modulus: Integer,
    window: u32,
    windows: u32,
    limbs: usize,
    /// `windows · 2^window · limbs` words, window-major.
    table: Vec<u64>,
}

impl GmpFixedBase {
    /// Builds the table (`windows · 2^w` modular multiplications).
    pub(crate) fn new(base: &Integer, modulus: &Integer, exp_bits: u32, window: u32) -> Self {
        let limbs = modulus.significant_bits().div_ceil(64) as usize;
        let windows = exp_bits.div_ceil(window);
        let per = 1usize << window;
        let mut table = vec![0u64; windows as usize * per * limbs];
        let mut b = Integer::from(base % modulus);
        for i in 0..windows as usize {
            let mut cur = Integer::from(1u32);
            for j in 0..per {
                let off = (i * per + j) * limbs;
                cur.write_digits(
                    &mut table[off..off + cur.significant_digits::<u64>()],
                    Order::Lsf,
                );
                if j + 1 < per {
                    cur *= &b;
                    cur %= modulus;
                }
            }
            // b ← b^(2^w)
            for _ in 0..window {
                b.square_mut();
                b %= modulus;
            }
        }
        Self {
            modulus: modulus.clone(),
            window,
            windows,
            limbs,
            table,
        }
    }

    /// The number of bytes the table occupies.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.table.len() * 8
    }

    /// `base^e mod m` for `0 ≤ e < 2^exp_bits` (higher bits of `e` are ignored).
    pub(crate) fn pow(&self, e: &Integer) -> Integer {
        let per = 1usize << self.window;
        let mut acc = Integer::from(1u32);
        let mut sel = vec![0u64; self.limbs];
        for i in 0..self.windows {
            let mut digit = 0u32;
            for k in 0..self.window {
                digit |= u32::from(e.get_bit(i * self.window + k)) << k;
            }
            sel.iter_mut().for_each(|w| *w = 0);
            let base = i as usize * per * self.limbs;
            for (j, d) in (0..per).zip(0u32..) {
                let mask = 0u64.wrapping_sub(u64::from(d.ct_eq(&digit).unwrap_u8()));
                let entry = &self.table[base + j * self.limbs..base + (j + 1) * self.limbs];
                for (s, t) in sel.iter_mut().zip(entry) {
                    *s |= t & mask;
                }
            }
            let factor = Integer::from_digits(&sel, Order::Lsf);
            acc *= &factor;
            acc %= &self.modulus;
        }
        sel.iter_mut().for_each(|w| *w = 0);
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_base_matches_pow_mod() {
        let mut rng = rand::rng();
        for (bits, w, gmp) in [
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
            let m = random_bits(&mut rng, bits) | 1u32;
            let b = random_below(&mut rng, &m);
            let t = if gmp {
                FixedBaseTable::new_gmp(&b, &m, 130, w)
            } else {
                FixedBaseTable::new(&b, &m, 130, w)
            };
            assert!(t.memory_bytes() > 0);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx512ifma") {
                assert_eq!(t.is_ifma(), !gmp);
            }
            for _ in 0..10 {
                let e = random_bits(&mut rng, 130);
                let want = b.clone().pow_mod(&e, &m).expect("modulus positive");
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
