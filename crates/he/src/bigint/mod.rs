//! Big integers of our own: [`Integer`] (signed, arbitrary precision, variable-time generic
//! arithmetic), the constant-time Montgomery backend (`monty`: portable `u128` and x86-64
//! BMI2/ADX kernels), exponentiation modulo `p²` on base-`p` digits (`padic`), probable
//! primes (`prime`), and the helpers the schemes share: uniform
//! sampling from a CSPRNG, byte and hex conversion, wiping, serde, and fixed-base tables read
//! with a constant-time scan.

mod integer;
pub(crate) mod monty;
pub(crate) mod padic;
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
    ct_trace::note(ct_trace::MUL_LOW, len, 0);
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

/// `acc ← 2·acc + bit mod m` for `acc < m` (`m.len()` limbs, top limb non-zero), by a shift
/// and one masked subtraction (`t`: scratch of `m.len()` limbs). Branch-free.
#[inline(always)]
fn ct_double_add_mod(acc: &mut [u64], bit: u64, m: &[u64], t: &mut [u64]) {
    let mut c = bit;
    for w in acc.iter_mut() {
        let nw = (*w << 1) | c;
        c = *w >> 63;
        *w = nw;
    }
    let mut borrow = 0u64;
    for ((d, &a), &n) in t.iter_mut().zip(acc.iter()).zip(m) {
        let (x, b1) = a.overflowing_sub(n);
        let (x, b2) = x.overflowing_sub(borrow);
        *d = x;
        borrow = u64::from(b1 | b2);
    }
    // The value c·2^(64·len) + acc is at least m iff it carried out or the subtraction did not
    // borrow; then it is below 2m and one subtraction suffices.
    let take = ct_mask(c | (borrow ^ 1));
    for (a, &d) in acc.iter_mut().zip(t.iter()) {
        *a = (*a & !take) | (d & take);
    }
}

/// `x mod m` as `m.len()` limbs, for any `x` (its magnitude) and a modulus `m > 0` given by its
/// trimmed limbs, by binary long division (one doubling and one masked subtraction per bit of
/// `x`): the time depends on the limb counts of `x` and `m` only. For one-off reductions by a
/// secret modulus (key setup), where the variable-time division must not be used.
pub(crate) fn ct_mod(x: &Integer, m: &[u64]) -> Vec<u64> {
    let l = m.len();
    let xs = x.as_limbs();
    ct_trace::note(ct_trace::CT_MOD, xs.len(), l);
    let mut acc = vec![0u64; l];
    let mut t = vec![0u64; l];
    for i in (0..xs.len() * 64).rev() {
        let bit = (xs[i / 64] >> (i % 64)) & 1;
        ct_double_add_mod(&mut acc, bit, m, &mut t);
    }
    t.zeroize();
    acc
}

/// `2^k mod m` as `m.len()` limbs for a modulus `m > 1` given by its trimmed limbs: `k`
/// doublings of 1, each with one masked subtraction, so the time depends on `k` and the limb
/// count of `m` only (the Montgomery constants `R mod m`, `R² mod m` of a secret modulus).
pub(crate) fn ct_pow2_mod(k: u32, m: &[u64]) -> Vec<u64> {
    let l = m.len();
    ct_trace::note(ct_trace::CT_POW2, k as usize, l);
    let mut acc = vec![0u64; l];
    let mut t = vec![0u64; l];
    // 1 < m: 1 is reduced.
    acc[0] = 1;
    for _ in 0..k {
        ct_double_add_mod(&mut acc, 0, m, &mut t);
    }
    t.zeroize();
    acc
}

/// A per-thread trace of the operations the arithmetic performs (test builds only; other
/// builds compile [`ct_trace::note`] to nothing): how many were noted and an order-sensitive
/// digest of their kinds and public lengths, and the number of variable-time ones. The constant-time routines note one event per
/// call with the lengths they run over; the variable-time ones (division, the early-exit
/// safegcd) also note their data-dependent steps. Equal traces for two different secrets of
/// the same size show that the sequence of operations does not depend on them.
pub(crate) mod ct_trace {
    /// [`super::ct_mod`].
    pub(crate) const CT_MOD: u64 = 1;
    /// [`super::ct_pow2_mod`].
    pub(crate) const CT_POW2: u64 = 2;
    /// A Montgomery reduction (every modular product of `monty`).
    pub(crate) const REDC: u64 = 3;
    /// A batch of 62 divsteps of safegcd.
    pub(crate) const DIVSTEPS: u64 = 4;
    /// A variable-time division (Knuth's Algorithm D or by one limb).
    pub(crate) const DIV: u64 = 5;
    /// A data-dependent correction step inside a division.
    pub(crate) const DIV_FIX: u64 = 6;
    /// A truncated product [`super::mul_low`].
    pub(crate) const MUL_LOW: u64 = 7;

    /// A trace: operations noted, the digest of their sequence, and how many of them were
    /// variable-time ([`DIV`], [`DIV_FIX`]).
    #[cfg(test)]
    pub(crate) type Trace = (u64, u64, u64);

    #[cfg(test)]
    thread_local! {
        static TRACE: core::cell::Cell<Trace> = const { core::cell::Cell::new((0, 0, 0)) };
    }

    /// Records one operation of kind `op` over public lengths `a`, `b`.
    #[inline(always)]
    pub(crate) fn note(op: u64, a: usize, b: usize) {
        #[cfg(test)]
        TRACE.with(|t| {
            let (n, mut h, v) = t.get();
            for x in [op, a as u64, b as u64] {
                h = (h ^ x.wrapping_add(1)).wrapping_mul(0x0100_0000_01b3);
            }
            t.set((n + 1, h, v + u64::from(op == DIV || op == DIV_FIX)));
        });
        #[cfg(not(test))]
        let _ = (op, a, b);
    }

    /// The trace since the last call (and a fresh one started).
    #[cfg(test)]
    pub(crate) fn take() -> Trace {
        TRACE.with(|t| t.replace((0, 0, 0)))
    }
}

/// All ones when `bit` is 1, zero when it is 0, hidden from the optimiser: a mask it can
/// prove to be 0 or all ones lets it turn `(a & m) | (b & !m)` into a branch or two loops
/// chosen by a jump, which the constant-time checks under memcheck caught it doing
/// (`obliv_cpu::ctgrind`). Every mask over secret data is made here.
#[inline(always)]
pub(crate) fn ct_mask(bit: u64) -> u64 {
    core::hint::black_box(0u64.wrapping_sub(bit))
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

/// serde as a lowercase hexadecimal string (no prefix, no leading zeros), with a length limit
/// on input. The values may be secret (`p`, `q`, `x`): both directions convert every digit
/// with masks, without a branch or a table look-up on its value, so their time depends on the
/// number of digits only (a value's length in hex digits is visible, as in any encoding
/// without padding).
pub(crate) mod serde_hex {
    use super::Integer;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};
    use zeroize::Zeroize;

    /// The lowercase hex digit of `d < 16`, branch-free.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    fn hex_digit(d: u64) -> u8 {
        let d = d as i32;
        // Above 9: add the distance from '0' + 10 to 'a' (0x27).
        (d + 0x30 + (((9 - d) >> 31) & 0x27)) as u8
    }

    /// The value of a hex digit (either case) and an all-ones mask iff `c` is one, branch-free.
    #[allow(clippy::cast_sign_loss)]
    fn hex_value(c: u8) -> (u64, u64) {
        let d = i32::from(c) - 0x30;
        let digit = !((d >> 31) | ((9 - d) >> 31));
        let l = i32::from(c | 0x20) - 0x61;
        let letter = !((l >> 31) | ((5 - l) >> 31));
        let v = (d & digit) | ((l + 10) & letter);
        (v as u64, i64::from(digit | letter) as u64)
    }

    /// The hex text of the magnitude of `x` (`"0"` for zero).
    pub(crate) fn encode(x: &Integer) -> String {
        let limbs = x.as_limbs();
        let mut digits: Vec<u8> = Vec::with_capacity(limbs.len() * 16);
        for w in limbs.iter().rev() {
            for k in (0..16).rev() {
                digits.push(hex_digit((w >> (4 * k)) & 0xf));
            }
        }
        // Leading zeros: at most 15 in the top limb (limbs are trimmed), plus all for zero.
        let lead = (x.significant_bits() as usize).div_ceil(4);
        let out = String::from_utf8_lossy(&digits[digits.len() - lead..]).into_owned();
        digits.zeroize();
        if out.is_empty() { "0".into() } else { out }
    }

    /// The integer of a non-empty string of hex digits (either case), or `None`.
    pub(crate) fn decode(s: &str) -> Option<Integer> {
        let b = s.as_bytes();
        if b.is_empty() {
            return None;
        }
        let mut mag = vec![0u64; b.len().div_ceil(16)];
        let mut valid = u64::MAX;
        for (i, &c) in b.iter().rev().enumerate() {
            let (v, ok) = hex_value(c);
            valid &= ok;
            mag[i / 16] |= (v & ok) << (4 * (i % 16));
        }
        let out = Integer::from_limbs(&mag);
        mag.zeroize();
        // Only the verdict on the whole string is a branch.
        (valid == u64::MAX).then_some(out)
    }

    pub(crate) fn serialize<S: Serializer>(x: &Integer, s: S) -> Result<S::Ok, S::Error> {
        if x.is_negative() {
            return Err(serde::ser::Error::custom("negative integer"));
        }
        // The temporary text is wiped after use.
        let mut hex = encode(x);
        let r = s.serialize_str(&hex);
        hex.zeroize();
        r
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Integer, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        if s.is_empty() || s.len() as u64 * 4 > u64::from(super::MAX_DECODE_BITS) {
            return Err(D::Error::custom("hex integer empty or too long"));
        }
        let out = decode(&s).ok_or_else(|| D::Error::custom("not a hex integer"));
        if let std::borrow::Cow::Owned(mut owned) = s {
            owned.zeroize();
        }
        out
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
#[derive(Clone)]
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
    /// `modulus` must be odd and greater than 1 (every caller's is). The modulus may be
    /// secret (`p²`, `q²`): the setup and every entry use constant-time Montgomery arithmetic.
    pub(crate) fn new(base: &Integer, modulus: &Integer, exp_bits: u32, window: u32) -> Self {
        #[cfg(obliv_x86_simd)]
        {
            // The size class follows the limb count of the (possibly secret) modulus, not its
            // bit length.
            let bits = u32::try_from(64 * modulus.as_limbs().len()).unwrap_or(u32::MAX);
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
    fn ct_mod_and_pow2_match_division() {
        let mut rng = rand::rng();
        for (xb, mb) in [
            (1u32, 2u32),
            (64, 64),
            (65, 64),
            (200, 63),
            (1024, 512),
            (2050, 1025),
            (130, 700),
        ] {
            for _ in 0..8 {
                let x = random_bits(&mut rng, xb);
                let mut m = random_bits(&mut rng, mb);
                m.set_bit(mb - 1, true);
                m.set_bit(0, true);
                let want = x.modulo(&m);
                assert_eq!(Integer::from_limbs(&ct_mod(&x, m.as_limbs())), want);
                let k = xb + mb;
                let want = (Integer::from(1u32) << k).modulo(&m);
                assert_eq!(Integer::from_limbs(&ct_pow2_mod(k, m.as_limbs())), want);
            }
        }
        // The largest modulus of a length and values near it.
        let m = Integer::from_limbs(&[u64::MAX; 4]);
        for x in [&m - 1u32, m.clone(), &m + 1u32, m.square(), Integer::new()] {
            assert_eq!(Integer::from_limbs(&ct_mod(&x, m.as_limbs())), x.modulo(&m));
        }
    }

    /// The reduction runs the same operations for any value and modulus of given lengths.
    #[test]
    fn ct_mod_trace_depends_on_lengths_only() {
        let mut rng = rand::rng();
        let mut traces = Vec::new();
        for _ in 0..4 {
            let mut m = random_bits(&mut rng, 1024);
            m.set_bit(1023, true);
            m.set_bit(0, true);
            let mut x = random_bits(&mut rng, 2048);
            x.set_bit(2047, true);
            let _ = ct_trace::take();
            let _ = ct_mod(&x, m.as_limbs());
            let _ = ct_pow2_mod(2048, m.as_limbs());
            traces.push(ct_trace::take());
        }
        assert_eq!(traces[0].2, 0);
        assert!(traces.iter().all(|t| *t == traces[0]));
    }

    #[test]
    fn hex_codec_matches_radix_conversion() {
        let mut rng = rand::rng();
        for bits in [0u32, 1, 4, 63, 64, 65, 1000, 4096] {
            let x = random_bits(&mut rng, bits);
            let hex = serde_hex::encode(&x);
            assert_eq!(hex, x.to_string_radix(16));
            assert_eq!(serde_hex::decode(&hex), Some(x.clone()));
            assert_eq!(serde_hex::decode(&hex.to_uppercase()), Some(x.clone()));
            assert_eq!(serde_hex::decode(&format!("000{hex}")), Some(x));
        }
        assert_eq!(serde_hex::encode(&Integer::new()), "0");
        assert_eq!(
            serde_hex::decode("0123456789abcdefABCDEF"),
            Integer::from_str_radix("0123456789abcdefABCDEF", 16).ok()
        );
        for bad in ["", "g", "12 3", "-1", "0x1", "1/", ":", "@", "`", "G", "é"] {
            assert_eq!(serde_hex::decode(bad), None, "{bad:?}");
        }
        // Every byte: accepted exactly when it is a hex digit, with its value.
        for c in 0u8..=255 {
            let s = [c];
            let s = std::str::from_utf8(&s).unwrap_or("\u{fffd}");
            let want = c
                .is_ascii_hexdigit()
                .then(|| Integer::from(char::from(c).to_digit(16).unwrap_or(0)));
            assert_eq!(serde_hex::decode(s), want, "{c:#x}");
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
