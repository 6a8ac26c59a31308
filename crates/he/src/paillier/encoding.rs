//! Signed fixed-point encoding with a base-16 exponent, compatible with python-phe's
//! `EncodedNumber` / `EncryptedNumber`: a value `x` is stored as a mantissa `M` and exponent
//! `e` with `x ≈ M · 16^e`, the mantissa as `M mod n` with `|M| ≤ max_int = ⌊n/3⌋`.
//!
//! * Encoding a float without a precision picks `e = ⌊(frexp(x).exp − 53)/4⌋` (every
//!   significant bit kept); with a precision `π`, `e = ⌊log₁₆ π⌋`; `max_exponent` caps `e`.
//!   `M = round_half_even(x · 16^{−e})`, computed exactly.
//! * Adding two encrypted numbers first lowers the larger exponent (`M ← M·16^{Δ}`);
//!   multiplying by a plaintext adds the exponents.
//! * Overflow is detected, never wrapped: encoding rejects `|M| > max_int`, lowering an
//!   exponent rejects a plaintext mantissa that would exceed it, and decoding a mantissa in the
//!   band `(max_int, n − max_int)` is [`Error::Overflow`].

use crate::bigint::Integer;
use serde::{Deserialize, Serialize};

use super::{Ciphertext, PublicKey, SecretKey};
use crate::error::{Error, Result};

/// The encoding base (python-phe's `EncodedNumber.BASE`).
pub const BASE: u32 = 16;
const LOG2_BASE: i32 = 4;
const FLOAT_MANTISSA_BITS: i32 = 53;
/// Exponents are limited to this magnitude, which bounds every `16^e` computed.
const MAX_EXPONENT_MAGNITUDE: i32 = 4096;

/// A plaintext in the fixed-point encoding: `value = signed(encoding) · 16^exponent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedNumber {
    /// The mantissa modulo `n`, in `[0, n)`.
    pub encoding: Integer,
    /// The base-16 exponent.
    pub exponent: i32,
}

/// A ciphertext of an [`EncodedNumber`]'s mantissa together with its (public) exponent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncryptedNumber {
    /// The encrypted mantissa.
    pub ciphertext: Ciphertext,
    /// The base-16 exponent.
    pub exponent: i32,
}

fn pow16(k: u32) -> Integer {
    Integer::from(1u32) << (4 * k)
}

fn check_exponent(e: i32) -> Result<()> {
    // unsigned_abs: `abs` overflows (panics) on i32::MIN.
    if e.unsigned_abs() > MAX_EXPONENT_MAGNITUDE.unsigned_abs() {
        return Err(Error::InvalidNumber("exponent magnitude above 4096"));
    }
    Ok(())
}

/// `round_half_even(a / 2^k)` for any integer `a`, `k ≥ 1`.
fn div_pow2_round_half_even(a: &Integer, k: u32) -> Integer {
    let neg = *a < 0u32;
    let abs = a.abs();
    let mut q = &abs >> k;
    let rem = abs - (&q << k);
    let half = Integer::from(1u32) << (k - 1);
    if rem > half || (rem == half && q.is_odd()) {
        q += 1u32;
    }
    if neg { -q } else { q }
}

/// The exponent of the least significant bit of the smallest subnormal `f64`.
const F64_MIN_LSB_EXPONENT: i64 = -1074;

/// `m · 2^e2` correctly rounded (half to even) to the nearest `f64`.
///
/// The mantissa is rounded once, to the precision the result has: 53 bits, or fewer when the
/// result is subnormal (rounding to 53 bits first and then to the subnormal grid would round
/// twice). After that the scaling by a power of two is exact, or overflows to infinity.
fn int_times_pow2_to_f64(m: &Integer, e2: i64) -> f64 {
    let bits = i64::from(m.significant_bits());
    if bits == 0 {
        return 0.0;
    }
    // Drop enough low bits that at most 53 remain and the last one is not below 2^−1074.
    let shift = (bits - i64::from(FLOAT_MANTISSA_BITS)).max(F64_MIN_LSB_EXPONENT - e2);
    let (mant, e) = if shift <= 0 {
        (m.clone(), e2)
    } else if shift > bits {
        // |m·2^e2| < 2^(bits + e2) = 2^(bits − shift − 1074) ≤ 2^−1075: half the smallest
        // subnormal at most, which rounds (to even) to zero.
        return if m.is_negative() { -0.0 } else { 0.0 };
    } else {
        // shift ≤ bits ≤ u32::MAX.
        let s = u32::try_from(shift).unwrap_or(u32::MAX);
        (div_pow2_round_half_even(m, s), e2 + shift)
    };
    // |mant| ≤ 2^53, exactly representable, and e ≥ −1074 unless mant was exact already.
    let f = mant.to_f64();
    // Beyond ±1200 the result is 0 or ∞ whatever f (1 ≤ |f| ≤ 2^53) is.
    let e = i32::try_from(e.clamp(-1200, 1200)).unwrap_or(0);
    // Scale in two steps so that neither factor over- or underflows on its own; the product
    // f·2^e1 is a normal number, so only the last step rounds (and then exactly, or to ±∞).
    let e1 = e / 2;
    f * 2f64.powi(e1) * 2f64.powi(e - e1)
}

impl EncodedNumber {
    /// Encodes a signed integer with exponent 0.
    ///
    /// # Errors
    /// [`Error::Overflow`] when `|v| > max_int`.
    pub fn encode_integer(pk: &PublicKey, v: &Integer) -> Result<Self> {
        Ok(Self {
            encoding: pk.encode_signed(v)?,
            exponent: 0,
        })
    }

    /// Encodes an `i64` with exponent 0.
    ///
    /// # Errors
    /// [`Error::Overflow`] when `|v| > max_int` (only for tiny test keys).
    pub fn encode_i64(pk: &PublicKey, v: i64) -> Result<Self> {
        Self::encode_integer(pk, &Integer::from(v))
    }

    /// Encodes a finite float as python-phe's `EncodedNumber.encode(pk, x, precision,
    /// max_exponent)` does.
    ///
    /// # Errors
    /// [`Error::InvalidNumber`] for a non-finite `x` or a precision that is not a positive
    /// finite number; [`Error::Overflow`] when the mantissa exceeds `max_int`.
    pub fn encode_f64(
        pk: &PublicKey,
        x: f64,
        precision: Option<f64>,
        max_exponent: Option<i32>,
    ) -> Result<Self> {
        if !x.is_finite() {
            return Err(Error::InvalidNumber("not finite"));
        }
        let prec_exponent = match precision {
            None => {
                // frexp: x = f·2^e with 0.5 ≤ |f| < 1 (e = 0 for x = 0).
                let bin_flt_exponent = frexp_exponent(x);
                let bin_lsb_exponent = bin_flt_exponent - FLOAT_MANTISSA_BITS;
                bin_lsb_exponent.div_euclid(LOG2_BASE)
            }
            Some(p) => {
                if !(p.is_finite() && p > 0.0) {
                    return Err(Error::InvalidNumber(
                        "precision must be positive and finite",
                    ));
                }
                let e = (p.ln() / f64::from(BASE).ln()).floor();
                if e.abs() > f64::from(MAX_EXPONENT_MAGNITUDE) {
                    return Err(Error::InvalidNumber("precision exponent out of range"));
                }
                // Bounded by the check above.
                #[allow(clippy::cast_possible_truncation)]
                let e = e as i32;
                e
            }
        };
        let exponent = max_exponent.map_or(prec_exponent, |m| m.min(prec_exponent));
        check_exponent(exponent)?;
        // x = a·2^b exactly, then M = round(a · 2^{b − 4·exponent}).
        let (a, b) = f64_to_int_pow2(x);
        if a == 0 {
            // ±0 has mantissa 0 at every exponent (the shift below would be meaningless).
            return Ok(Self {
                encoding: Integer::new(),
                exponent,
            });
        }
        let shift = i64::from(b) - 4 * i64::from(exponent);
        let mantissa = if shift >= 0 {
            let s = u32::try_from(shift).map_err(|_| Error::Overflow("shift too large"))?;
            if s > pk.bits() + 64 {
                return Err(Error::Overflow("|mantissa| exceeds max_int"));
            }
            Integer::from(a) << s
        } else {
            let s = u32::try_from(-shift).map_err(|_| Error::Overflow("shift too large"))?;
            div_pow2_round_half_even(&Integer::from(a), s)
        };
        Ok(Self {
            encoding: pk.encode_signed(&mantissa)?,
            exponent,
        })
    }

    /// The signed mantissa `M`.
    ///
    /// # Errors
    /// [`Error::Overflow`] when the encoding lies in the overflow band.
    pub fn mantissa(&self, pk: &PublicKey) -> Result<Integer> {
        pk.decode_signed(&self.encoding)
    }

    /// The value as the nearest `f64` (`M · 16^e`).
    ///
    /// # Errors
    /// [`Error::Overflow`] when the encoding lies in the overflow band.
    pub fn decode_f64(&self, pk: &PublicKey) -> Result<f64> {
        let m = self.mantissa(pk)?;
        Ok(int_times_pow2_to_f64(&m, 4 * i64::from(self.exponent)))
    }

    /// The value as an exact integer.
    ///
    /// # Errors
    /// [`Error::Overflow`] in the overflow band; [`Error::InvalidNumber`] when the value is
    /// not an integer.
    pub fn decode_integer(&self, pk: &PublicKey) -> Result<Integer> {
        let m = self.mantissa(pk)?;
        check_exponent(self.exponent)?;
        if self.exponent >= 0 {
            Ok(m * pow16(self.exponent.unsigned_abs()))
        } else {
            let d = pow16(self.exponent.unsigned_abs());
            if !m.is_divisible(&d) {
                return Err(Error::InvalidNumber("value is not an integer"));
            }
            Ok(m / &d)
        }
    }

    /// The same value with a smaller exponent `new_exponent ≤ exponent`.
    ///
    /// # Errors
    /// [`Error::InvalidNumber`] when `new_exponent > exponent`; [`Error::Overflow`] when the
    /// scaled mantissa exceeds `max_int`.
    pub fn decrease_exponent_to(&self, pk: &PublicKey, new_exponent: i32) -> Result<Self> {
        if new_exponent > self.exponent {
            return Err(Error::InvalidNumber("new exponent must not be larger"));
        }
        // Both bounded, so 16^Δ has at most 4·8192 bits.
        check_exponent(self.exponent)?;
        check_exponent(new_exponent)?;
        let k = self.exponent.abs_diff(new_exponent);
        let m = self.mantissa(pk)? * pow16(k);
        Ok(Self {
            encoding: pk.encode_signed(&m)?,
            exponent: new_exponent,
        })
    }
}

/// `frexp(x).1`: the `e` with `x = f·2^e`, `0.5 ≤ |f| < 1`; 0 for `x = 0`.
fn frexp_exponent(x: f64) -> i32 {
    if x == 0.0 {
        return 0;
    }
    let bits = x.to_bits();
    let biased = i32::from(u16::try_from((bits >> 52) & 0x7ff).unwrap_or(0));
    if biased == 0 {
        // Subnormal: value = mant · 2^{−1074}; frexp exponent = bitlen(mant) − 1074.
        let mant = bits & ((1u64 << 52) - 1);
        let len = i32::try_from(64 - mant.leading_zeros()).unwrap_or(0);
        len - 1074
    } else {
        biased - 1022
    }
}

/// `x = a·2^b` exactly with an integer `a` (`|a| < 2^53`).
fn f64_to_int_pow2(x: f64) -> (i64, i32) {
    let bits = x.to_bits();
    let sign = if bits >> 63 == 1 { -1i64 } else { 1 };
    let biased = i32::from(u16::try_from((bits >> 52) & 0x7ff).unwrap_or(0));
    let frac = i64::try_from(bits & ((1u64 << 52) - 1)).unwrap_or(0);
    if biased == 0 {
        (sign * frac, -1074)
    } else {
        (sign * (frac | (1i64 << 52)), biased - 1075)
    }
}

impl PublicKey {
    /// Encrypts an encoded number.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for an encoding outside `[0, n)`.
    pub fn encrypt_encoded(&self, x: &EncodedNumber) -> Result<EncryptedNumber> {
        Ok(EncryptedNumber {
            ciphertext: self.encrypt(&x.encoding)?,
            exponent: x.exponent,
        })
    }

    /// Encodes (as [`EncodedNumber::encode_f64`] without precision) and encrypts a float.
    ///
    /// # Errors
    /// As [`EncodedNumber::encode_f64`].
    pub fn encrypt_f64(&self, x: f64) -> Result<EncryptedNumber> {
        self.encrypt_encoded(&EncodedNumber::encode_f64(self, x, None, None)?)
    }

    /// `E(a)` with its exponent lowered to `new_exponent` (`E(M)^{16^Δ}`).
    ///
    /// # Errors
    /// [`Error::InvalidNumber`] when `new_exponent > a.exponent`.
    pub fn decrease_exponent_to(
        &self,
        a: &EncryptedNumber,
        new_exponent: i32,
    ) -> Result<EncryptedNumber> {
        if new_exponent > a.exponent {
            return Err(Error::InvalidNumber("new exponent must not be larger"));
        }
        // The exponent of a received EncryptedNumber is any i32: bound it before 16^Δ.
        check_exponent(a.exponent)?;
        check_exponent(new_exponent)?;
        let factor = pow16(a.exponent.abs_diff(new_exponent));
        Ok(EncryptedNumber {
            ciphertext: self.mul_plain(&a.ciphertext, &factor)?,
            exponent: new_exponent,
        })
    }

    /// `E(a + b)` on encrypted numbers, aligning exponents to the smaller one.
    ///
    /// # Errors
    /// As [`Self::decrease_exponent_to`].
    pub fn add_encrypted(
        &self,
        a: &EncryptedNumber,
        b: &EncryptedNumber,
    ) -> Result<EncryptedNumber> {
        let e = a.exponent.min(b.exponent);
        let a = self.decrease_exponent_to(a, e)?;
        let b = self.decrease_exponent_to(b, e)?;
        Ok(EncryptedNumber {
            ciphertext: self.add(&a.ciphertext, &b.ciphertext),
            exponent: e,
        })
    }

    /// `E(a − b)` on encrypted numbers.
    ///
    /// # Errors
    /// As [`Self::decrease_exponent_to`]; [`Error::MalformedCiphertext`] for a non-unit `b`.
    pub fn sub_encrypted(
        &self,
        a: &EncryptedNumber,
        b: &EncryptedNumber,
    ) -> Result<EncryptedNumber> {
        let nb = EncryptedNumber {
            ciphertext: self.neg(&b.ciphertext)?,
            exponent: b.exponent,
        };
        self.add_encrypted(a, &nb)
    }

    /// `E(a + x)` for a plaintext encoded number `x`.
    ///
    /// # Errors
    /// [`Error::Overflow`] when lowering `x`'s exponent overflows its mantissa.
    pub fn add_encoded(&self, a: &EncryptedNumber, x: &EncodedNumber) -> Result<EncryptedNumber> {
        let e = a.exponent.min(x.exponent);
        let a = self.decrease_exponent_to(a, e)?;
        let x = x.decrease_exponent_to(self, e)?;
        Ok(EncryptedNumber {
            ciphertext: self.add_plain(&a.ciphertext, &x.encoding)?,
            exponent: e,
        })
    }

    /// `E(a · x)` for a plaintext encoded number `x` (exponents add).
    ///
    /// # Errors
    /// [`Error::Overflow`] for an encoding in the overflow band, [`Error::InvalidNumber`] when
    /// the exponent sum leaves the allowed range.
    pub fn mul_encoded(&self, a: &EncryptedNumber, x: &EncodedNumber) -> Result<EncryptedNumber> {
        let exponent = a
            .exponent
            .checked_add(x.exponent)
            .ok_or(Error::InvalidNumber("exponent magnitude above 4096"))?;
        check_exponent(exponent)?;
        let k = x.mantissa(self)?;
        Ok(EncryptedNumber {
            ciphertext: self.mul_plain(&a.ciphertext, &k)?,
            exponent,
        })
    }
}

impl SecretKey {
    /// Decrypts an encrypted number to its encoding.
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`].
    pub fn decrypt_encoded(&self, a: &EncryptedNumber) -> Result<EncodedNumber> {
        let encoding = self.decrypt(&a.ciphertext)?;
        Ok(EncodedNumber {
            encoding,
            exponent: a.exponent,
        })
    }

    /// Decrypts and decodes to the nearest `f64`.
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`]; [`Error::Overflow`] when the result overflowed.
    pub fn decrypt_f64(&self, a: &EncryptedNumber) -> Result<f64> {
        self.decrypt_encoded(a)?.decode_f64(self.public_key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_and_split_are_exact() {
        for x in [
            1.0f64,
            0.5,
            3.75,
            -2.5e-300,
            1e300,
            f64::MIN_POSITIVE / 8.0,
            0.1,
        ] {
            let (a, b) = f64_to_int_pow2(x);
            assert_eq!(int_times_pow2_to_f64(&Integer::from(a), i64::from(b)), x);
        }
        for (x, e) in [
            (1.0f64, 1),
            (0.5, 0),
            (3.75, 2),
            (-0.1, -3),
            (f64::MIN_POSITIVE, -1021),
        ] {
            assert_eq!(frexp_exponent(x), e, "{x}");
        }
        assert_eq!(frexp_exponent(f64::MIN_POSITIVE / 8.0), -1024);
        assert_eq!(frexp_exponent(0.0), 0);
    }

    #[test]
    fn round_half_even() {
        let r = |a: i64, k| div_pow2_round_half_even(&Integer::from(a), k);
        assert_eq!(r(5, 1), 2); // 2.5 → 2
        assert_eq!(r(7, 1), 4); // 3.5 → 4
        assert_eq!(r(-5, 1), -2);
        assert_eq!(r(-7, 1), -4);
        assert_eq!(r(9, 2), 2); // 2.25 → 2
        assert_eq!(r(11, 2), 3); // 2.75 → 3
    }
}
