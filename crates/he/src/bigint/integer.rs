//! [`Integer`]: a signed arbitrary-precision integer on 64-bit limbs, with the arithmetic the
//! crate's API needs (ring operations, truncating division, shifts, comparisons, radix and byte
//! conversion) and number-theoretic helpers (gcd, inverse, Jacobi symbol, modular powers,
//! probable-prime test).
//!
//! The generic arithmetic here (schoolbook multiplication, Knuth's Algorithm D) is **variable
//! time**: its running time depends on the operands' lengths in limbs and, for division, on
//! their values. The crate's secret paths (decryption, encryption with secret randomness, the
//! derivation of a secret key's constants) use it on secrets only for additions, subtractions
//! and schoolbook products, whose time depends on the limb counts; reductions, inverses and
//! exponentiations go through the constant-time code (`bigint::monty`, `bigint::ct_mod`,
//! `bigint::ct_pow2_mod`, safegcd's constant-time mode). Every `Integer` wipes its limbs when
//! dropped.
#![allow(clippy::cast_possible_truncation)] // limb arithmetic: truncation to 64 bits intended

use core::cmp::Ordering;
use core::fmt;
use core::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Shl, ShlAssign, Shr,
    ShrAssign, Sub, SubAssign,
};
use core::str::FromStr;

use zeroize::Zeroize;

/// A signed arbitrary-precision integer (sign and magnitude, 64-bit limbs, least significant
/// first, no leading zero limbs).
///
/// Operators work on owned values and references, and with `u32`, `u64`, `i32` and `i64` on
/// the right (`&a * &b`, `x - 1u32`, `y % &m`, `z >> 3`). Division `/` truncates toward zero
/// and `%` takes the sign of the dividend (as in Rust and GMP); [`Integer::modulo`] gives the
/// non-negative residue. Shifts act on the magnitude and keep the sign.
///
/// The limbs are overwritten with zeros when the value is dropped (buffers given up by a
/// reallocation while the value grows are not: the crate sizes secret buffers up front).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Integer {
    neg: bool,
    mag: Vec<u64>,
}

impl Drop for Integer {
    fn drop(&mut self) {
        self.mag.zeroize();
    }
}

impl Zeroize for Integer {
    fn zeroize(&mut self) {
        self.mag.zeroize();
        self.neg = false;
    }
}

/// An error from [`Integer::from_str_radix`] or [`str::parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseIntegerError;

impl fmt::Display for ParseIntegerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid integer literal")
    }
}

impl std::error::Error for ParseIntegerError {}

// ---------------------------------------------------------------------------------------------
// Magnitude helpers on little-endian limb slices.

/// Drops the leading zero limbs. The new length is found by a pass over every limb that does
/// not branch on them (a mask per limb, hidden from the optimiser so that it stays arithmetic),
/// because the limbs may be secret; the length itself is not secret by design (a value whose
/// top limbs are zero is stored shorter, see the crate's README), and test builds tell the
/// constant-time checks so ([`obliv_cpu::ctgrind::declassify`]).
fn trim(v: &mut Vec<u64>) {
    let mut len = 0usize;
    for (i, &w) in v.iter().enumerate() {
        // All ones when w ≠ 0.
        let nonzero =
            core::hint::black_box(0usize.wrapping_sub(((w | w.wrapping_neg()) >> 63) as usize));
        len ^= (len ^ (i + 1)) & nonzero;
    }
    v.truncate(obliv_cpu::ctgrind::declassify(len));
}

/// Whether the magnitude `a` is below `b`, for a secret `a` or `b`: lengths decide when they
/// differ (they are public by design, see [`trim`]); otherwise the borrow of `a − b` over
/// every limb, with no early exit. The verdict is returned (declassified for the
/// constant-time checks: it is the caller's public range check).
pub(crate) fn ct_lt_mag(a: &[u64], b: &[u64]) -> bool {
    if a.len() != b.len() {
        return a.len() < b.len();
    }
    let mut borrow = 0u64;
    for (&x, &y) in a.iter().zip(b) {
        let (d, b1) = x.overflowing_sub(y);
        let (_, b2) = d.overflowing_sub(borrow);
        borrow = u64::from(b1 | b2);
    }
    obliv_cpu::ctgrind::declassify(borrow) == 1
}

pub(crate) fn cmp_mag(a: &[u64], b: &[u64]) -> Ordering {
    if a.len() != b.len() {
        return a.len().cmp(&b.len());
    }
    for (x, y) in a.iter().rev().zip(b.iter().rev()) {
        if x != y {
            return x.cmp(y);
        }
    }
    Ordering::Equal
}

fn add_mag(a: &[u64], b: &[u64]) -> Vec<u64> {
    let (a, b) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(a.len() + 1);
    let mut carry = 0u64;
    for (i, &x) in a.iter().enumerate() {
        let (s, c1) = x.overflowing_add(b.get(i).copied().unwrap_or(0));
        let (s, c2) = s.overflowing_add(carry);
        out.push(s);
        carry = u64::from(c1) + u64::from(c2);
    }
    // Whether the sum needs one more limb: its length, public by design (see `trim`).
    if obliv_cpu::ctgrind::declassify(carry) != 0 {
        out.push(carry);
    }
    out
}

/// `a − b` for `a ≥ b`.
fn sub_mag(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0u64;
    for (i, &x) in a.iter().enumerate() {
        let (d, b1) = x.overflowing_sub(b.get(i).copied().unwrap_or(0));
        let (d, b2) = d.overflowing_sub(borrow);
        out.push(d);
        borrow = u64::from(b1) + u64::from(b2);
    }
    debug_assert_eq!(borrow, 0);
    trim(&mut out);
    out
}

/// `r += a·b` over `r.len() == a.len()` limbs; returns the carry limb.
#[inline]
pub(crate) fn addmul_1(r: &mut [u64], a: &[u64], b: u64) -> u64 {
    let mut c = 0u64;
    for (ri, &ai) in r.iter_mut().zip(a) {
        let t = u128::from(ai) * u128::from(b) + u128::from(*ri) + u128::from(c);
        *ri = t as u64;
        c = (t >> 64) as u64;
    }
    c
}

/// Schoolbook product of two magnitudes (trimmed).
pub(crate) fn mul_mag(a: &[u64], b: &[u64]) -> Vec<u64> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut out = vec![0u64; a.len() + b.len()];
    for (i, &bi) in b.iter().enumerate() {
        out[i + a.len()] = addmul_1(&mut out[i..i + a.len()], a, bi);
    }
    trim(&mut out);
    out
}

fn divrem_1(u: &[u64], d: u64) -> (Vec<u64>, u64) {
    super::ct_trace::note(super::ct_trace::DIV, u.len(), 1);
    let mut q = vec![0u64; u.len()];
    let mut r = 0u64;
    for i in (0..u.len()).rev() {
        let num = (u128::from(r) << 64) | u128::from(u[i]);
        q[i] = (num / u128::from(d)) as u64;
        r = (num % u128::from(d)) as u64;
    }
    trim(&mut q);
    (q, r)
}

fn shl_mag(a: &[u64], bits: usize) -> Vec<u64> {
    if a.is_empty() {
        return Vec::new();
    }
    let (w, s) = (bits / 64, bits % 64);
    let mut out = vec![0u64; a.len() + w + 1];
    for (i, &x) in a.iter().enumerate() {
        out[i + w] |= x << s;
        if s > 0 {
            out[i + w + 1] |= x >> (64 - s);
        }
    }
    trim(&mut out);
    out
}

fn shr_mag(a: &[u64], bits: usize) -> Vec<u64> {
    let (w, s) = (bits / 64, bits % 64);
    if w >= a.len() {
        return Vec::new();
    }
    let mut out = vec![0u64; a.len() - w];
    for i in 0..out.len() {
        out[i] = a[i + w] >> s;
        if s > 0
            && let Some(&hi) = a.get(i + w + 1)
        {
            out[i] |= hi << (64 - s);
        }
    }
    trim(&mut out);
    out
}

/// Quotient and remainder of magnitudes (Knuth, TAOCP vol. 2, §4.3.1, Algorithm D).
pub(crate) fn divrem_mag(u: &[u64], v: &[u64]) -> (Vec<u64>, Vec<u64>) {
    assert!(!v.is_empty(), "division by zero");
    super::ct_trace::note(super::ct_trace::DIV, u.len(), v.len());
    if cmp_mag(u, v) == Ordering::Less {
        return (Vec::new(), u.to_vec());
    }
    if v.len() == 1 {
        let (q, r) = divrem_1(u, v[0]);
        return (q, if r == 0 { Vec::new() } else { vec![r] });
    }
    let n = v.len();
    let m = u.len() - n;
    let s = v[n - 1].leading_zeros();
    let shift = |x: &[u64], extra: usize| -> Vec<u64> {
        let mut out = vec![0u64; x.len() + extra];
        for (i, &w) in x.iter().enumerate() {
            out[i] |= w << s;
            if s > 0 && i + 1 < out.len() {
                out[i + 1] |= w >> (64 - s);
            }
        }
        out
    };
    let vn = shift(v, 0);
    let mut un = shift(u, 1);
    let mut q = vec![0u64; m + 1];
    let (vtop, vsec) = (u128::from(vn[n - 1]), u128::from(vn[n - 2]));
    const B: u128 = 1 << 64;
    for j in (0..=m).rev() {
        let num = (u128::from(un[j + n]) << 64) | u128::from(un[j + n - 1]);
        let mut qhat = num / vtop;
        let mut rhat = num % vtop;
        while qhat >= B || qhat * vsec > ((rhat << 64) | u128::from(un[j + n - 2])) {
            super::ct_trace::note(super::ct_trace::DIV_FIX, j, 0);
            qhat -= 1;
            rhat += vtop;
            if rhat >= B {
                break;
            }
        }
        let mut carry = 0u64;
        let mut borrow = 0u64;
        for i in 0..n {
            let p = qhat * u128::from(vn[i]) + u128::from(carry);
            carry = (p >> 64) as u64;
            let (t, b1) = un[i + j].overflowing_sub(p as u64);
            let (t, b2) = t.overflowing_sub(borrow);
            un[i + j] = t;
            borrow = u64::from(b1) + u64::from(b2);
        }
        let (t, b1) = un[j + n].overflowing_sub(carry);
        let (t, b2) = t.overflowing_sub(borrow);
        un[j + n] = t;
        if b1 || b2 {
            super::ct_trace::note(super::ct_trace::DIV_FIX, j, 1);
            qhat -= 1;
            let mut c = 0u64;
            for i in 0..n {
                let sum = u128::from(un[i + j]) + u128::from(vn[i]) + u128::from(c);
                un[i + j] = sum as u64;
                c = (sum >> 64) as u64;
            }
            un[j + n] = un[j + n].wrapping_add(c);
        }
        q[j] = qhat as u64;
    }
    trim(&mut q);
    let mut r = vec![0u64; n];
    for i in 0..n {
        r[i] = un[i] >> s;
        if s > 0 {
            r[i] |= un[i + 1] << (64 - s);
        }
    }
    un.zeroize();
    trim(&mut r);
    (q, r)
}

// ---------------------------------------------------------------------------------------------

impl Integer {
    /// Zero.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            neg: false,
            mag: Vec::new(),
        }
    }

    fn from_parts(neg: bool, mut mag: Vec<u64>) -> Self {
        trim(&mut mag);
        let neg = neg && !mag.is_empty();
        Self { neg, mag }
    }

    /// `0 ≤ self < m` for `m > 0`, in time that depends on the limb counts only (a range check
    /// of a secret value, such as a plaintext).
    pub(crate) fn ct_in_range(&self, m: &Self) -> bool {
        !self.neg && ct_lt_mag(&self.mag, &m.mag)
    }

    /// The limbs, writable, for the constant-time checks' marking of secrets (tests only).
    #[cfg(test)]
    pub(crate) fn limbs_mut(&mut self) -> &mut [u64] {
        &mut self.mag
    }

    /// The non-negative integer with these little-endian 64-bit limbs.
    #[must_use]
    pub fn from_limbs(limbs: &[u64]) -> Self {
        Self::from_parts(false, limbs.to_vec())
    }

    /// The magnitude's little-endian 64-bit limbs, without leading zero limbs (empty for 0).
    #[must_use]
    pub fn as_limbs(&self) -> &[u64] {
        &self.mag
    }

    /// The magnitude as exactly `len` little-endian limbs (zero-padded), or `None` when it
    /// does not fit.
    #[must_use]
    pub fn to_limbs_padded(&self, len: usize) -> Option<Vec<u64>> {
        if self.mag.len() > len {
            return None;
        }
        let mut v = vec![0u64; len];
        v[..self.mag.len()].copy_from_slice(&self.mag);
        Some(v)
    }

    /// The non-negative integer with these big-endian bytes.
    #[must_use]
    pub fn from_be_bytes(b: &[u8]) -> Self {
        let mut mag = vec![0u64; b.len().div_ceil(8)];
        for (i, &byte) in b.iter().rev().enumerate() {
            mag[i / 8] |= u64::from(byte) << (8 * (i % 8));
        }
        Self::from_parts(false, mag)
    }

    /// Big-endian bytes of the magnitude, without leading zeros (empty for 0).
    #[must_use]
    pub fn to_be_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.mag.len() * 8);
        for w in self.mag.iter().rev() {
            out.extend_from_slice(&w.to_be_bytes());
        }
        let lead = out.iter().take_while(|&&b| b == 0).count();
        out.drain(..lead);
        out
    }

    /// Whether the value is zero.
    #[must_use]
    pub fn is_zero(&self) -> bool {
        self.mag.is_empty()
    }
    /// Whether the value is below zero.
    #[must_use]
    pub fn is_negative(&self) -> bool {
        self.neg
    }
    /// Whether the value is even.
    #[must_use]
    pub fn is_even(&self) -> bool {
        self.mag.first().is_none_or(|w| w & 1 == 0)
    }
    /// Whether the value is odd.
    #[must_use]
    pub fn is_odd(&self) -> bool {
        !self.is_even()
    }

    /// Bits of the magnitude (0 for 0).
    #[must_use]
    pub fn significant_bits(&self) -> u32 {
        match self.mag.last() {
            None => 0,
            Some(top) => {
                u32::try_from(self.mag.len() * 64).unwrap_or(u32::MAX) - top.leading_zeros()
            }
        }
    }

    /// Bit `i` of the magnitude.
    #[must_use]
    pub fn get_bit(&self, i: u32) -> bool {
        let i = i as usize;
        self.mag
            .get(i / 64)
            .is_some_and(|w| (w >> (i % 64)) & 1 == 1)
    }

    /// Sets or clears bit `i` of the magnitude.
    pub fn set_bit(&mut self, i: u32, value: bool) {
        let i = i as usize;
        if value {
            if self.mag.len() <= i / 64 {
                self.mag.resize(i / 64 + 1, 0);
            }
            self.mag[i / 64] |= 1 << (i % 64);
        } else if let Some(w) = self.mag.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
            trim(&mut self.mag);
            if self.mag.is_empty() {
                self.neg = false;
            }
        }
    }

    /// `|self|`.
    #[must_use]
    pub fn abs(&self) -> Self {
        Self {
            neg: false,
            mag: self.mag.clone(),
        }
    }

    /// `self²`.
    #[must_use]
    pub fn square(&self) -> Self {
        self * self
    }

    /// The value as an `i64`, if it fits.
    #[must_use]
    pub fn to_i64(&self) -> Option<i64> {
        match self.mag.len() {
            0 => Some(0),
            1 if !self.neg => i64::try_from(self.mag[0]).ok(),
            1 => {
                let m = self.mag[0];
                if m <= 1 << 63 {
                    Some(0i64.wrapping_sub_unsigned(m))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// The value as a `u64`, if it fits.
    #[must_use]
    pub fn to_u64(&self) -> Option<u64> {
        match (self.neg, self.mag.len()) {
            (_, 0) => Some(0),
            (false, 1) => Some(self.mag[0]),
            _ => None,
        }
    }

    /// The value as an `f64`: exact up to `2^53` in magnitude, otherwise rounded (the top 64
    /// bits are converted, then scaled).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn to_f64(&self) -> f64 {
        let bits = self.significant_bits();
        let v = if bits <= 64 {
            self.mag.first().copied().unwrap_or(0) as f64
        } else {
            let shift = bits - 64;
            let top = shr_mag(&self.mag, shift as usize);
            let e = i32::try_from(shift).unwrap_or(i32::MAX);
            top[0] as f64 * 2f64.powi(e)
        };
        if self.neg { -v } else { v }
    }

    /// Truncating division with remainder: `(q, r)` with `self = q·d + r`, `|r| < |d|` and `r`
    /// of the sign of `self`.
    ///
    /// # Panics
    /// When `d` is zero.
    #[must_use]
    pub fn div_rem(&self, d: &Self) -> (Self, Self) {
        let (q, r) = divrem_mag(&self.mag, &d.mag);
        (
            Self::from_parts(self.neg != d.neg, q),
            Self::from_parts(self.neg, r),
        )
    }

    /// The residue in `[0, |m|)`.
    ///
    /// # Panics
    /// When `m` is zero.
    #[must_use]
    pub fn modulo(&self, m: &Self) -> Self {
        let (_, r) = divrem_mag(&self.mag, &m.mag);
        let r = Self::from_parts(false, r);
        if self.neg && !r.is_zero() {
            Self::from_parts(false, sub_mag(&m.mag, &r.mag))
        } else {
            r
        }
    }

    /// `self mod m` for a single-limb `m > 0`.
    #[must_use]
    pub fn mod_u64(&self, m: u64) -> u64 {
        let mut r = 0u64;
        for &w in self.mag.iter().rev() {
            r = (((u128::from(r) << 64) | u128::from(w)) % u128::from(m)) as u64;
        }
        if self.neg && r != 0 { m - r } else { r }
    }

    /// Whether `d` divides `self` (`d ≠ 0`).
    #[must_use]
    pub fn is_divisible(&self, d: &Self) -> bool {
        divrem_mag(&self.mag, &d.mag).1.is_empty()
    }

    /// The greatest common divisor of the magnitudes (variable time). With an odd operand this
    /// is Bernstein–Yang's safegcd; with two even ones, Euclid's algorithm.
    #[must_use]
    pub fn gcd(&self, other: &Self) -> Self {
        let (a, b) = (self.abs(), other.abs());
        if b.is_odd() && b != 1u32 {
            return super::safegcd::gcd_odd(&a, &b);
        }
        if a.is_odd() && a != 1u32 {
            return super::safegcd::gcd_odd(&b, &a);
        }
        Self::gcd_euclid(a, b)
    }

    /// Euclid's algorithm on the magnitudes (variable time).
    pub(crate) fn gcd_euclid(mut a: Self, mut b: Self) -> Self {
        while !b.is_zero() {
            let r = Self::from_parts(false, divrem_mag(&a.mag, &b.mag).1);
            a = core::mem::replace(&mut b, r);
        }
        a
    }

    /// `self^{−1} mod m` in `[0, m)` for `m > 1`, or `None` when it does not exist. Variable
    /// time: for odd `m`, Bernstein–Yang's safegcd stopped as soon as the gcd is known; for even
    /// `m`, the extended Euclidean algorithm.
    #[must_use]
    pub fn invert(&self, m: &Self) -> Option<Self> {
        if m.neg || cmp_mag(&m.mag, &[1]) != Ordering::Greater {
            return None;
        }
        if m.is_odd() {
            return super::safegcd::invert_odd(self, m, super::safegcd::Mode::VarTime);
        }
        self.invert_euclid(m)
    }

    /// `self^{−1} mod m` for odd `m > 1` in time that depends on the length of `m` only (safegcd
    /// with its worst-case step count), for secret values; `None` when `m` is even, not above 1,
    /// or when the inverse does not exist (the only fact about the value the time reveals).
    #[must_use]
    pub(crate) fn invert_secret(&self, m: &Self) -> Option<Self> {
        // The verdict on the (secret) modulus is public: it is an odd prime for every caller.
        if obliv_cpu::ctgrind::declassify(
            m.neg | m.is_even() | (cmp_mag(&m.mag, &[1]) != Ordering::Greater),
        ) {
            return None;
        }
        super::safegcd::invert_odd(self, m, super::safegcd::Mode::ConstantTime)
    }

    /// The extended Euclidean algorithm (variable time), for `m > 1`.
    pub(crate) fn invert_euclid(&self, m: &Self) -> Option<Self> {
        let (mut r0, mut r1) = (m.clone(), self.modulo(m));
        let (mut t0, mut t1) = (Self::new(), Self::from(1u32));
        while !r1.is_zero() {
            let (q, r) = r0.div_rem(&r1);
            r0 = core::mem::replace(&mut r1, r);
            let t = &t0 - &(&q * &t1);
            t0 = core::mem::replace(&mut t1, t);
        }
        if r0 != 1u32 {
            return None;
        }
        Some(t0.modulo(m))
    }

    /// The Jacobi symbol `(self / n)` for odd `n > 0` (variable time); 0 for other `n`.
    #[must_use]
    pub fn jacobi(&self, n: &Self) -> i32 {
        if n.neg || n.is_even() {
            return 0;
        }
        let mut a = self.modulo(n);
        let mut n = n.clone();
        let mut t = 1i32;
        while !a.is_zero() {
            let tz = a.mag[0].trailing_zeros();
            let tz = if a.mag[0] == 0 { 64 } else { tz };
            if tz > 0 {
                a = &a >> tz;
                let r = n.mag[0] & 7;
                if tz % 2 == 1 && (r == 3 || r == 5) {
                    t = -t;
                }
                continue;
            }
            core::mem::swap(&mut a, &mut n);
            if a.mag[0] & 3 == 3 && n.mag[0] & 3 == 3 {
                t = -t;
            }
            a = a.modulo(&n);
        }
        if n == 1u32 { t } else { 0 }
    }

    /// `self^e mod m` for `e ≥ 0`, `m > 0`, or `None` when `m` is zero or negative, or `e` is
    /// negative and `self` has no inverse modulo `m`. Odd moduli use the constant-time
    /// Montgomery exponentiation (fixed window over all bits of `e`); even ones square and
    /// multiply with divisions (variable time). The modulus is treated as public: the base's
    /// reduction and the Montgomery setup use the variable-time division.
    #[must_use]
    pub fn pow_mod(&self, e: &Self, m: &Self) -> Option<Self> {
        if m.neg || m.is_zero() {
            return None;
        }
        let base = if e.neg {
            self.invert(m)?
        } else {
            self.modulo(m)
        };
        let e = e.abs();
        if m.is_odd() {
            if let Some(ctx) = super::monty::Monty::new_public(m) {
                return Some(ctx.pow(&base, &e, e.significant_bits()));
            }
            return Some(Self::new()); // m = 1
        }
        let mut acc = Self::from(1u32).modulo(m);
        for i in (0..e.significant_bits()).rev() {
            acc = acc.square().modulo(m);
            if e.get_bit(i) {
                acc = (&acc * &base).modulo(m);
            }
        }
        Some(acc)
    }

    /// Parses an optional sign and digits in `radix` (2 to 36, either case).
    ///
    /// # Errors
    /// [`ParseIntegerError`] for an empty string, another character, or a bad radix.
    pub fn from_str_radix(s: &str, radix: u32) -> Result<Self, ParseIntegerError> {
        if !(2..=36).contains(&radix) {
            return Err(ParseIntegerError);
        }
        let (neg, digits) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        if digits.is_empty() {
            return Err(ParseIntegerError);
        }
        // Digits per chunk so that radix^chunk fits a u64.
        let mut chunk = 1usize;
        let mut big = u64::from(radix);
        while let Some(b) = big.checked_mul(u64::from(radix)) {
            big = b;
            chunk += 1;
        }
        let mut mag: Vec<u64> = Vec::with_capacity(digits.len() / chunk + 1);
        for part in digits.as_bytes().chunks(chunk) {
            let mut val = 0u64;
            let mut scale = 1u64;
            for &c in part {
                let d = char::from(c).to_digit(radix).ok_or(ParseIntegerError)?;
                val = val * u64::from(radix) + u64::from(d);
                scale = scale.wrapping_mul(u64::from(radix));
            }
            // mag = mag·radix^len + val (scale wraps to 0 only for a full chunk of radix 2^k,
            // where it is exactly 2^64; handled through the u128 arithmetic below).
            let scale = if part.len() == chunk { big } else { scale };
            let mut carry = u128::from(val);
            for w in mag.iter_mut() {
                let t = u128::from(*w) * u128::from(scale) + carry;
                *w = t as u64;
                carry = t >> 64;
            }
            if carry != 0 {
                mag.push(carry as u64);
            }
        }
        Ok(Self::from_parts(neg, mag))
    }

    /// The value in `radix` (2 to 36, lowercase), with a leading `-` when negative.
    ///
    /// # Panics
    /// For a radix outside 2 to 36.
    #[must_use]
    pub fn to_string_radix(&self, radix: u32) -> String {
        assert!((2..=36).contains(&radix), "radix out of range");
        if self.mag.is_empty() {
            return "0".into();
        }
        let mut chunk = 1usize;
        let mut big = u64::from(radix);
        while let Some(b) = big.checked_mul(u64::from(radix)) {
            big = b;
            chunk += 1;
        }
        let mut digits: Vec<u8> = Vec::new();
        let mut cur = self.mag.clone();
        while !cur.is_empty() {
            let (q, mut r) = divrem_1(&cur, big);
            for _ in 0..chunk {
                let d = (r % u64::from(radix)) as u32;
                r /= u64::from(radix);
                digits.push(char::from_digit(d, radix).map_or(b'?', |c| c as u8));
                if q.is_empty() && r == 0 {
                    break;
                }
            }
            cur = q;
        }
        while digits.len() > 1 && digits.last() == Some(&b'0') {
            digits.pop();
        }
        if self.neg {
            digits.push(b'-');
        }
        digits.reverse();
        String::from_utf8(digits).unwrap_or_default()
    }

    fn add_ref(a: &Self, b: &Self) -> Self {
        if a.neg == b.neg {
            return Self::from_parts(a.neg, add_mag(&a.mag, &b.mag));
        }
        match cmp_mag(&a.mag, &b.mag) {
            Ordering::Equal => Self::new(),
            Ordering::Greater => Self::from_parts(a.neg, sub_mag(&a.mag, &b.mag)),
            Ordering::Less => Self::from_parts(b.neg, sub_mag(&b.mag, &a.mag)),
        }
    }

    fn sub_ref(a: &Self, b: &Self) -> Self {
        let nb = Self {
            neg: !b.neg && !b.mag.is_empty(),
            mag: b.mag.clone(),
        };
        Self::add_ref(a, &nb)
    }

    fn mul_ref(a: &Self, b: &Self) -> Self {
        Self::from_parts(a.neg != b.neg, mul_mag(&a.mag, &b.mag))
    }

    fn div_ref(a: &Self, b: &Self) -> Self {
        a.div_rem(b).0
    }

    fn rem_ref(a: &Self, b: &Self) -> Self {
        a.div_rem(b).1
    }
}

// ---------------------------------------------------------------------------------------------
// Conversions.

macro_rules! from_unsigned {
    ($($t:ty),*) => {$(
        impl From<$t> for Integer {
            fn from(v: $t) -> Self {
                Self::from_parts(false, vec![u64::from(v)])
            }
        }
    )*};
}
from_unsigned!(u8, u16, u32, u64);

macro_rules! from_signed {
    ($($t:ty),*) => {$(
        impl From<$t> for Integer {
            fn from(v: $t) -> Self {
                Self::from_parts(v < 0, vec![i64::from(v).unsigned_abs()])
            }
        }
    )*};
}
from_signed!(i8, i16, i32, i64);

impl From<usize> for Integer {
    fn from(v: usize) -> Self {
        Self::from_parts(false, vec![v as u64])
    }
}

impl From<u128> for Integer {
    fn from(v: u128) -> Self {
        Self::from_parts(false, vec![v as u64, (v >> 64) as u64])
    }
}

impl From<&Integer> for Integer {
    fn from(v: &Integer) -> Self {
        v.clone()
    }
}

impl FromStr for Integer {
    type Err = ParseIntegerError;
    /// Decimal, with an optional sign.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_str_radix(s, 10)
    }
}

impl fmt::Display for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_radix(10))
    }
}

impl fmt::Debug for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::LowerHex for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_radix(16))
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison.

impl Ord for Integer {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => cmp_mag(&self.mag, &other.mag),
            (true, true) => cmp_mag(&other.mag, &self.mag),
        }
    }
}

impl PartialOrd for Integer {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Integer {
    /// Compares with the small value `(−1)^neg · mag` without allocating.
    fn cmp_small(&self, neg: bool, mag: u64) -> Ordering {
        let m = [mag];
        let other: &[u64] = if mag == 0 { &[] } else { &m };
        match (self.neg, neg && mag != 0) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => cmp_mag(&self.mag, other),
            (true, true) => cmp_mag(other, &self.mag),
        }
    }
}

macro_rules! cmp_prim {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for Integer {
            fn eq(&self, o: &$t) -> bool {
                #[allow(unused_comparisons)]
                let neg = *o < 0;
                self.cmp_small(neg, i128::from(*o).unsigned_abs() as u64) == Ordering::Equal
            }
        }
        impl PartialEq<Integer> for $t {
            fn eq(&self, o: &Integer) -> bool {
                o == self
            }
        }
        impl PartialOrd<$t> for Integer {
            fn partial_cmp(&self, o: &$t) -> Option<Ordering> {
                #[allow(unused_comparisons)]
                let neg = *o < 0;
                Some(self.cmp_small(neg, i128::from(*o).unsigned_abs() as u64))
            }
        }
    )*};
}
cmp_prim!(u32, u64, i32, i64);

// ---------------------------------------------------------------------------------------------
// Operators.

macro_rules! binop {
    ($Tr:ident, $m:ident, $TrA:ident, $ma:ident, $f:path) => {
        impl $Tr<&Integer> for &Integer {
            type Output = Integer;
            fn $m(self, o: &Integer) -> Integer {
                $f(self, o)
            }
        }
        impl $Tr<Integer> for &Integer {
            type Output = Integer;
            fn $m(self, o: Integer) -> Integer {
                $f(self, &o)
            }
        }
        impl $Tr<&Integer> for Integer {
            type Output = Integer;
            fn $m(self, o: &Integer) -> Integer {
                $f(&self, o)
            }
        }
        impl $Tr<Integer> for Integer {
            type Output = Integer;
            fn $m(self, o: Integer) -> Integer {
                $f(&self, &o)
            }
        }
        impl $TrA<&Integer> for Integer {
            fn $ma(&mut self, o: &Integer) {
                *self = $f(self, o);
            }
        }
        impl $TrA<Integer> for Integer {
            fn $ma(&mut self, o: Integer) {
                *self = $f(self, &o);
            }
        }
        binop!(@prim $Tr, $m, $TrA, $ma, $f, u32, u64, i32, i64);
    };
    (@prim $Tr:ident, $m:ident, $TrA:ident, $ma:ident, $f:path, $($t:ty),*) => {$(
        impl $Tr<$t> for &Integer {
            type Output = Integer;
            fn $m(self, o: $t) -> Integer {
                $f(self, &Integer::from(o))
            }
        }
        impl $Tr<$t> for Integer {
            type Output = Integer;
            fn $m(self, o: $t) -> Integer {
                $f(&self, &Integer::from(o))
            }
        }
        impl $Tr<&Integer> for $t {
            type Output = Integer;
            fn $m(self, o: &Integer) -> Integer {
                $f(&Integer::from(self), o)
            }
        }
        impl $Tr<Integer> for $t {
            type Output = Integer;
            fn $m(self, o: Integer) -> Integer {
                $f(&Integer::from(self), &o)
            }
        }
        impl $TrA<$t> for Integer {
            fn $ma(&mut self, o: $t) {
                *self = $f(self, &Integer::from(o));
            }
        }
    )*};
}

binop!(Add, add, AddAssign, add_assign, Integer::add_ref);
binop!(Sub, sub, SubAssign, sub_assign, Integer::sub_ref);
binop!(Mul, mul, MulAssign, mul_assign, Integer::mul_ref);
binop!(Div, div, DivAssign, div_assign, Integer::div_ref);
binop!(Rem, rem, RemAssign, rem_assign, Integer::rem_ref);

impl Neg for Integer {
    type Output = Integer;
    fn neg(mut self) -> Integer {
        self.neg = !self.neg && !self.mag.is_empty();
        self
    }
}

impl Neg for &Integer {
    type Output = Integer;
    fn neg(self) -> Integer {
        -self.clone()
    }
}

impl Shl<u32> for &Integer {
    type Output = Integer;
    fn shl(self, k: u32) -> Integer {
        Integer::from_parts(self.neg, shl_mag(&self.mag, k as usize))
    }
}
impl Shl<u32> for Integer {
    type Output = Integer;
    fn shl(self, k: u32) -> Integer {
        &self << k
    }
}
impl Shr<u32> for &Integer {
    type Output = Integer;
    fn shr(self, k: u32) -> Integer {
        Integer::from_parts(self.neg, shr_mag(&self.mag, k as usize))
    }
}
impl Shr<u32> for Integer {
    type Output = Integer;
    fn shr(self, k: u32) -> Integer {
        &self >> k
    }
}
impl ShlAssign<u32> for Integer {
    fn shl_assign(&mut self, k: u32) {
        *self = &*self << k;
    }
}
impl ShrAssign<u32> for Integer {
    fn shr_assign(&mut self, k: u32) {
        *self = &*self >> k;
    }
}

impl core::iter::Sum for Integer {
    fn sum<I: Iterator<Item = Integer>>(iter: I) -> Self {
        iter.fold(Integer::new(), |a, b| a + b)
    }
}

impl<'a> core::iter::Sum<&'a Integer> for Integer {
    fn sum<I: Iterator<Item = &'a Integer>>(iter: I) -> Self {
        iter.fold(Integer::new(), |a, b| a + b)
    }
}

// ---------------------------------------------------------------------------------------------
// serde: lowercase hexadecimal string (`-` prefix when negative), the crate's wire format.

impl serde::Serialize for Integer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string_radix(16))
    }
}

impl<'de> serde::Deserialize<'de> for Integer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        if s.len() as u64 * 4 > u64::from(super::MAX_DECODE_BITS) {
            return Err(D::Error::custom("hex integer too long"));
        }
        Self::from_str_radix(&s, 16).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests;
