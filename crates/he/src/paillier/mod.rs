//! Paillier's cryptosystem with `g = n + 1`, in the form used by every fast implementation:
//!
//! * **Keys** — `n = p·q` with `p ≡ q ≡ 3 (mod 4)` of equal size, so that `h = −x² mod n`
//!   generates the subgroup `J_n` of elements of Jacobi symbol `+1` (\[DJN10, §4.2\]); the
//!   public key carries `h_s = hⁿ mod n²`.
//! * **Public-key encryption** (Damgård–Jurik–Nielsen, short exponent):
//!   `c = (1 + m·n) · h_s^r mod n²` with `r` uniform in `[0, 2^ℓ)`, `ℓ = 2κ` for a modulus of
//!   security level `κ` (224 bits for 2048-bit `n`, 256 for 3072, 304 for 4096; see
//!   [`PublicKey::randomness_bits`]). `h_s^r` uses a precomputed fixed-base table, so an
//!   encryption costs about `ℓ/5` multiplications modulo `n²` and no squaring.
//! * **Secret-key encryption**: the same ciphertext distribution, with `h_s^r` computed modulo
//!   `p²` and `q²` from two half-size tables and recombined by CRT.
//! * **Decryption** by CRT (\[Pai99, §7\]): `m_p = L_p(c^{p−1} mod p²) · h_p mod p` with
//!   `L_p(x) = (x − 1)/p`, `h_p = L_p(g^{p−1} mod p²)^{−1} mod p`, the same modulo `q`, and
//!   Garner's recombination. A ciphertext outside `Z*_{n²}` is rejected. Without AVX-512
//!   IFMA, `c^{p−1} mod p²` runs on base-`p` digits (`bigint::padic`: five half-size limb
//!   products per multiplication instead of eight, three and a half per squaring instead of
//!   six), whose second digit is `L_p` itself; with IFMA, modulo `p²` on 52-bit lanes.
//! * **Homomorphic operations**: `E(a)·E(b) = E(a + b)`, `E(a)·E(b)^{−1} = E(a − b)`,
//!   `E(a)·(1 + k·n) = E(a + k)`, `E(a)^k = E(k·a)`, `E(a)^{−1} = E(−a)`,
//!   `E(a)·h_s^r = E(a)` re-randomised; all modulo `n`.
//!
//! ## Security assumptions
//! Semantic security of Paillier rests on the decisional composite residuosity assumption
//! (DCRA). The short-exponent encryption additionally assumes that `h_s^r` with `r` of `2κ`
//! bits is indistinguishable from a uniform element of the subgroup `⟨h_s⟩` of `n`-th residues
//! (the short-exponent assumption used by \[DJN10, §4.2\] and by SecretFlow HEU's ZPaillier,
//! which takes `ℓ = |n|/2`; the best known attack on short exponents costs `2^{ℓ/2}` by
//! Pollard's lambda method, hence `ℓ = 2κ`). Ciphertexts are malleable by design (IND-CPA only).
//!
//! ## Validating keys
//! A public key from elsewhere ([`PublicKey::from_n`], deserialisation, a secret key's import)
//! is checked before use: `n` odd, of 2048 to 8192 bits, not prime and without a prime factor
//! below 4096; `0 < h_s < n²`, `gcd(h_s, n) = 1`, and `h_s mod n` of order more than 2 (which
//! rejects `h_s = 1`, `h_s = n² − 1` and every `h_s ≡ ±1 (mod n)`, the values that make
//! `h_s^r` constant up to sign or move the randomness into the plaintext). What cannot be
//! checked without the factors — that `n` is a product of two large primes and `h_s` an
//! `n`-th residue generating a large subgroup — is the premise of the DJN assumption above:
//! whoever uses a public key trusts the party that generated it (a secret key import checks
//! `h_s^φ(n) = 1 mod n²` as well).
//!
//! ## Constant time
//! Decryption runs in time independent of the secret key and the plaintext: the reductions
//! `c mod p²`, `c mod q²` are Montgomery reductions, the exponentiations by `p − 1`, `q − 1`
//! are fixed-window Montgomery ladders with masked table scans (on base-`p` digits with the
//! ADX or `u128` kernel, or modulo `p²` with AVX-512 IFMA; the choice depends on the CPU
//! only), `L_p` is the second digit or an exact division by multiplication with
//! `p^{−1} mod 2^{64k}`, and Garner's recombination uses Montgomery multiplications and masked
//! modular subtraction. Encryption reads the fixed-base tables for the secret randomness `r`
//! by a full masked scan and multiplies by `1 + m·n` with a Montgomery multiplication.
//! Schoolbook products such as `m_q + q·t` take time that depends on limb counts only.
//!
//! Key setup from the primes (key generation, [`SecretKey::from_primes`], deserialisation)
//! and [`SecretKey::clone`] are constant time as well: the CRT constants are derived without
//! division or variable-time inversion (`h_p = −q⁻¹ mod p` in closed form, the inverses by
//! safegcd with its worst-case step count, the Montgomery constants of `p`, `q`, `p²`, `q²` by
//! doubling with masked subtraction, the CRT tables with Montgomery products), a clone copies
//! the constants, the check `gcd(n, φ(n)) = 1` is a constant-time inversion of `φ` modulo `n`,
//! and the hex text of `p`, `q` is converted digit by digit with masks. Their time depends on
//! the limb counts of `p` and `q` only. Left variable time: the primality tests of key
//! generation and import (Miller–Rabin and trial division; on an accepted prime the trial
//! division's hardware remainders, the 2-adic valuation `s` of `p − 1`, the rejection
//! sampling of the bases and the comparisons of the ladder with `±1`), the validation of the
//! public key, multiplication by a plaintext scalar, the homomorphic operations on public
//! ciphertexts, and the signed decoding of a decrypted value.
//!
//! \[Pai99\] P. Paillier, *Public-Key Cryptosystems Based on Composite Degree Residuosity
//! Classes*, EUROCRYPT 1999. \[DJN10\] I. Damgård, M. Jurik, J. B. Nielsen, *A generalization of
//! Paillier's public-key system with applications to electronic voting*, IJIS 9(6), 2010.

mod batch;
pub mod encoding;

use std::fmt;
use std::sync::{Arc, OnceLock};

use rand_core::CryptoRng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::bigint::monty::Monty;
use crate::bigint::padic::Padic;
use crate::bigint::prime::{
    ADVERSARIAL_ROUNDS, has_small_factor, is_probable_prime, random_prime_3mod4,
};
use crate::bigint::{self, FixedBaseTable, Integer, random_bits, random_unit, serde_hex, wipe};
use crate::error::{Error, Result};
use crate::ifma::CtPow;

pub use encoding::{EncodedNumber, EncryptedNumber};

/// Window width (bits) of the fixed-base tables.
const WINDOW: u32 = 5;
/// The moduli sizes accepted by the default constructors.
pub const ALLOWED_BITS: [u32; 3] = [2048, 3072, 4096];
/// The smallest modulus accepted by [`PublicKey::from_n`] and the `from_primes` constructors.
const MIN_BITS: u32 = 2048;
/// The largest modulus accepted anywhere.
const MAX_BITS: u32 = 8192;
/// The smallest modulus the explicitly insecure test constructors allow.
const MIN_INSECURE_BITS: u32 = 256;
/// The largest difference in bit length between the two primes of a secret key. Key
/// generation draws both with exactly `|n|/2` bits, as do python-phe (`getprimeover(n/2)`,
/// whose `next_prime` may spill into one more bit) and HEU; a gap of two bits also admits
/// the `⌈|n|/2⌉`/`⌊|n|/2⌋` split of odd sizes. Anything more unbalanced puts one factor
/// within reach of the elliptic-curve method and breaks the equal-size premise of the CRT
/// constants, so it is refused.
const MAX_PRIME_BITS_GAP: u32 = 2;

/// Bits of the DJN randomness `r` for a modulus of `n_bits`: twice the NIST SP 800-57 security
/// level (112 bits for 2048, 128 for 3072, 152 for 4096 — the last interpolated), and 160 for the
/// test-only sizes below 2048.
#[must_use]
pub fn randomness_bits_for(n_bits: u32) -> u32 {
    match n_bits {
        b if b >= 7680 => 384,
        b if b >= 4096 => 304,
        b if b >= 3072 => 256,
        b if b >= 2048 => 224,
        _ => 160,
    }
}

/// A Paillier ciphertext: an element of `Z*_{n²}` for the key it was made under.
///
/// A ciphertext received from a peer should be checked with [`PublicKey::validate`] before
/// homomorphic operations; decryption checks it anyway.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ciphertext {
    #[serde(with = "serde_hex")]
    pub(crate) c: Integer,
}

impl fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ciphertext({} bits)", self.c.significant_bits())
    }
}

impl Ciphertext {
    /// The ciphertext as an integer in `[0, n²)`.
    #[must_use]
    pub fn as_integer(&self) -> &Integer {
        &self.c
    }
    /// A ciphertext from its integer value; check it with [`PublicKey::validate`].
    #[must_use]
    pub fn from_integer(c: Integer) -> Self {
        Self { c }
    }
    /// Big-endian bytes of the ciphertext.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        bigint::to_bytes(&self.c)
    }
    /// A ciphertext from big-endian bytes (length-limited); check it with
    /// [`PublicKey::validate`].
    ///
    /// # Errors
    /// [`Error::Decoding`] when the input is longer than any supported `n²`.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        Ok(Self {
            c: bigint::from_bytes(b)?,
        })
    }
}

struct PkInner {
    n: Integer,
    n2: Integer,
    hs: Integer,
    /// `⌊n/3⌋`: the largest magnitude of a signed plaintext (python-phe's `max_int`).
    max_int: Integer,
    n_bits: u32,
    r_bits: u32,
    /// Montgomery context modulo `n²` (constant-time products with secret factors).
    mont_n2: Monty,
    table: OnceLock<FixedBaseTable>,
}

/// A Paillier public key: the modulus `n` and the DJN base `h_s = hⁿ mod n²`. Cloning is cheap
/// (shared), and the fixed-base table for `h_s` is built on first use and shared by all clones.
#[derive(Clone)]
pub struct PublicKey {
    inner: Arc<PkInner>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("n_bits", &self.inner.n_bits)
            .finish_non_exhaustive()
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.inner.n == other.inner.n && self.inner.hs == other.inner.hs
    }
}
impl Eq for PublicKey {}

#[derive(Serialize, Deserialize)]
struct PublicKeyRepr {
    #[serde(with = "serde_hex")]
    n: Integer,
    #[serde(with = "serde_hex")]
    hs: Integer,
}

impl Serialize for PublicKey {
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        PublicKeyRepr {
            n: self.inner.n.clone(),
            hs: self.inner.hs.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PublicKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let r = PublicKeyRepr::deserialize(d)?;
        Self::from_parts(r.n, r.hs, MIN_BITS).map_err(serde::de::Error::custom)
    }
}

impl PublicKey {
    /// The checks on `n` alone, cheapest first: its size before anything that costs more than
    /// a pass over its limbs (a hostile `n` of millions of bits is refused at once).
    fn check_modulus(n: &Integer, min_bits: u32) -> Result<u32> {
        let n_bits = n.significant_bits();
        if !(min_bits..=MAX_BITS).contains(&n_bits) {
            return Err(Error::UnsupportedKeySize {
                bits: n_bits,
                allowed: "2048..=8192",
            });
        }
        if n.is_negative() {
            return Err(Error::InvalidKey("n is negative"));
        }
        if n.is_even() {
            return Err(Error::InvalidKey("n is even"));
        }
        if has_small_factor(n) {
            return Err(Error::InvalidKey("n has a prime factor below 4096"));
        }
        if is_probable_prime(n, 1, &mut rand::rng()) {
            return Err(Error::InvalidKey("n is prime"));
        }
        Ok(n_bits)
    }

    fn from_parts(n: Integer, hs: Integer, min_bits: u32) -> Result<Self> {
        let n_bits = Self::check_modulus(&n, min_bits)?;
        let n2 = n.square();
        if hs <= 0u32 || hs >= n2 || hs.gcd(&n) != 1u32 {
            return Err(Error::InvalidKey("h_s is not a unit modulo n²"));
        }
        // `h_s mod n` of order 1 or 2 (h_s = 1, n² − 1, any `1 + k·n`, a square root of 1):
        // `h_s^r` would take at most two values modulo n, and encryption would be
        // deterministic up to a sign or add its randomness to the plaintext.
        if hs.modulo(&n).square().modulo(&n) == 1u32 {
            return Err(Error::InvalidKey(
                "h_s has order at most 2 modulo n (encryption would be deterministic)",
            ));
        }
        let max_int = &n / 3u32;
        let mont_n2 = Monty::new_public(&n2).ok_or(Error::InvalidKey("n is even"))?;
        Ok(Self {
            inner: Arc::new(PkInner {
                n,
                n2,
                hs,
                max_int,
                n_bits,
                r_bits: randomness_bits_for(n_bits),
                mont_n2,
                table: OnceLock::new(),
            }),
        })
    }

    /// A public key from the modulus alone (e.g. a python-phe key, which is just `n`): picks
    /// `h = −x² mod n` for a random `x` and sets `h_s = hⁿ mod n²`.
    ///
    /// # Errors
    /// [`Error::UnsupportedKeySize`] below 2048 or above 8192 bits; [`Error::InvalidKey`] for an
    /// even `n`.
    pub fn from_n(n: Integer) -> Result<Self> {
        Self::from_n_with_min(n, MIN_BITS)
    }

    fn from_n_with_min(n: Integer, min_bits: u32) -> Result<Self> {
        // Validate n before the exponentiation by n in `djn_base`, whose cost grows with the
        // cube of n's length.
        Self::check_modulus(&n, min_bits)?;
        let hs = djn_base(&n, &mut rand::rng());
        Self::from_parts(n, hs, min_bits)
    }

    /// The modulus `n`.
    #[must_use]
    pub fn n(&self) -> &Integer {
        &self.inner.n
    }
    /// `n²`, the ciphertext modulus.
    #[must_use]
    pub fn n_squared(&self) -> &Integer {
        &self.inner.n2
    }
    /// The DJN base `h_s = hⁿ mod n²`.
    #[must_use]
    pub fn h_s(&self) -> &Integer {
        &self.inner.hs
    }
    /// Size of `n` in bits.
    #[must_use]
    pub fn bits(&self) -> u32 {
        self.inner.n_bits
    }
    /// `⌊n/3⌋`, the largest magnitude of a signed plaintext; values in `(max_int, n − max_int)`
    /// decode as overflow.
    #[must_use]
    pub fn max_int(&self) -> &Integer {
        &self.inner.max_int
    }
    /// Bits `ℓ` of the encryption randomness `r` (see the module documentation).
    #[must_use]
    pub fn randomness_bits(&self) -> u32 {
        self.inner.r_bits
    }

    fn table(&self) -> &FixedBaseTable {
        self.inner.table.get_or_init(|| {
            FixedBaseTable::new(&self.inner.hs, &self.inner.n2, self.inner.r_bits, WINDOW)
        })
    }

    /// Builds the fixed-base table now rather than at the first encryption, and returns its
    /// size in bytes (`⌈ℓ/5⌉ · 32` entries of `|n²|/8` bytes: 720 KiB for 2048-bit `n`,
    /// 1.2 MiB for 3072, 1.9 MiB for 4096; 900 KiB, 1.5 MiB, 2.4 MiB in the IFMA layout).
    pub fn precompute(&self) -> usize {
        self.table().memory_bytes()
    }

    /// Checks that `ct` is in `Z*_{n²}`: `0 < c < n²` and `gcd(c, n) = 1`.
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`] otherwise.
    pub fn validate(&self, ct: &Ciphertext) -> Result<()> {
        if ct.c <= 0u32 || ct.c >= self.inner.n2 {
            return Err(Error::MalformedCiphertext("not in [1, n²)"));
        }
        if ct.c.gcd(&self.inner.n) != 1u32 {
            return Err(Error::MalformedCiphertext("not a unit modulo n²"));
        }
        Ok(())
    }

    /// `0 ≤ m < n`, without branching on the (secret) plaintext's limbs.
    fn check_plaintext(&self, m: &Integer) -> Result<()> {
        if !m.ct_in_range(&self.inner.n) {
            return Err(Error::PlaintextOutOfRange);
        }
        Ok(())
    }

    /// `1 + m·n mod n²` = `g^m` for `g = n + 1`, `0 ≤ m < n`.
    fn g_pow(&self, m: &Integer) -> Integer {
        m * &self.inner.n + 1u32
    }

    /// `h_s^r mod n²` for a fresh `r` of `ℓ` bits.
    fn noise<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Integer {
        let mut r = random_bits(rng, self.inner.r_bits);
        let x = self.table().pow(&r);
        wipe(&mut r);
        x
    }

    /// Encrypts `0 ≤ m < n` with the thread-local CSPRNG.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for `m` outside `[0, n)`.
    pub fn encrypt(&self, m: &Integer) -> Result<Ciphertext> {
        self.encrypt_with_rng(m, &mut rand::rng())
    }

    /// Encrypts `0 ≤ m < n`: `c = (1 + m·n) · h_s^r mod n²`.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for `m` outside `[0, n)`.
    pub fn encrypt_with_rng<R: CryptoRng + ?Sized>(
        &self,
        m: &Integer,
        rng: &mut R,
    ) -> Result<Ciphertext> {
        self.check_plaintext(m)?;
        // (1 + m·n) < n² and h_s^r < n²: one constant-time product modulo n².
        let c = self
            .inner
            .mont_n2
            .mul_mod_lt(&self.g_pow(m), &self.noise(rng));
        Ok(Ciphertext { c })
    }

    /// Encrypts a signed integer, represented as `v mod n` (python-phe's convention).
    ///
    /// # Errors
    /// Never for 64-bit values and moduli of at least 256 bits; the `Result` is kept for
    /// symmetry.
    pub fn encrypt_i64(&self, v: i64) -> Result<Ciphertext> {
        self.encrypt(&self.encode_signed(&Integer::from(v))?)
    }

    /// `v mod n` for `|v| ≤ max_int`.
    ///
    /// # Errors
    /// [`Error::Overflow`] when `|v| > max_int`.
    pub fn encode_signed(&self, v: &Integer) -> Result<Integer> {
        if v.abs() > self.inner.max_int {
            return Err(Error::Overflow("|value| exceeds max_int = n/3"));
        }
        Ok(if v.is_negative() {
            v + &self.inner.n
        } else {
            v.clone()
        })
    }

    /// The signed value of a plaintext `m ∈ [0, n)`: `m` if `m ≤ max_int`, `m − n` if
    /// `m ≥ n − max_int`.
    ///
    /// # Errors
    /// [`Error::Overflow`] in the band between, which only an overflowing computation reaches.
    pub fn decode_signed(&self, m: &Integer) -> Result<Integer> {
        self.check_plaintext(m)?;
        if *m <= self.inner.max_int {
            Ok(m.clone())
        } else if &self.inner.n - m <= self.inner.max_int {
            Ok(m - &self.inner.n)
        } else {
            Err(Error::Overflow(
                "plaintext in the overflow band (max_int, n - max_int)",
            ))
        }
    }

    /// `E(a + b) = a·b mod n²`.
    #[must_use]
    pub fn add(&self, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        Ciphertext {
            c: (&a.c * &b.c).modulo(&self.inner.n2),
        }
    }

    /// `E(−a) = a^{−1} mod n²`.
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`] when `a` is not invertible modulo `n²`.
    pub fn neg(&self, a: &Ciphertext) -> Result<Ciphertext> {
        let c =
            a.c.invert(&self.inner.n2)
                .ok_or(Error::MalformedCiphertext("not a unit modulo n²"))?;
        Ok(Ciphertext { c })
    }

    /// `E(a − b) = a · b^{−1} mod n²`.
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`] when `b` is not invertible modulo `n²`.
    pub fn sub(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext> {
        Ok(self.add(a, &self.neg(b)?))
    }

    /// `E(a + k) = a · (1 + k·n) mod n²` for a plaintext `0 ≤ k < n`.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for `k` outside `[0, n)`.
    pub fn add_plain(&self, a: &Ciphertext, k: &Integer) -> Result<Ciphertext> {
        self.check_plaintext(k)?;
        Ok(Ciphertext {
            c: (self.g_pow(k) * &a.c).modulo(&self.inner.n2),
        })
    }

    /// `E(k·a) = a^k mod n²` for any integer `k` (taken modulo `n`; a negative `k`, or one
    /// above `n/2`, is applied as `(a^{−1})^{|k|}` so the exponent stays short).
    ///
    /// Variable time in `k`: use it where the scalar is public or the evaluator's own value
    /// and timing is not observable by others.
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`] when `a` is not a unit and an inverse is needed.
    pub fn mul_plain(&self, a: &Ciphertext, k: &Integer) -> Result<Ciphertext> {
        let k = k.modulo(&self.inner.n);
        let half = &self.inner.n >> 1u32;
        let (base, e) = if k > half {
            (self.neg(a)?.c, &self.inner.n - &k)
        } else {
            (a.c.modulo(&self.inner.n2), k)
        };
        let c = self.inner.mont_n2.pow(&base, &e, e.significant_bits());
        Ok(Ciphertext { c })
    }

    /// A fresh encryption of the same plaintext: `a · h_s^r mod n²`.
    #[must_use]
    pub fn rerandomize(&self, a: &Ciphertext) -> Ciphertext {
        self.rerandomize_with_rng(a, &mut rand::rng())
    }

    /// [`Self::rerandomize`] with an explicit RNG.
    #[must_use]
    pub fn rerandomize_with_rng<R: CryptoRng + ?Sized>(
        &self,
        a: &Ciphertext,
        rng: &mut R,
    ) -> Ciphertext {
        let c = self
            .inner
            .mont_n2
            .mul_mod_lt(&a.c.modulo(&self.inner.n2), &self.noise(rng));
        Ciphertext { c }
    }
}

/// `(−x²)ⁿ mod n²` for a random unit `x` of `Z_n` (DJN's `h_s`).
fn djn_base<R: CryptoRng + ?Sized>(n: &Integer, rng: &mut R) -> Integer {
    let x = random_unit(rng, n);
    let h = n - x.square().modulo(n);
    let n2 = n.square();
    // n is odd and positive, so the modulus is valid and h (a unit) needs no inverse.
    h.pow_mod(n, &n2).unwrap_or_default()
}

/// `a == b` for non-negative integers without an early exit on the first differing limb
/// (both are padded to the longer length, which is public).
fn ct_eq_int(a: &Integer, b: &Integer) -> subtle::Choice {
    use subtle::ConstantTimeEq;
    let len = a.as_limbs().len().max(b.as_limbs().len());
    let (mut x, mut y) = (bigint::limbs_of(a, len), bigint::limbs_of(b, len));
    let eq = x.as_slice().ct_eq(y.as_slice());
    x.zeroize();
    y.zeroize();
    eq
}

#[derive(Clone)]
struct CrtTables {
    p: FixedBaseTable,
    q: FixedBaseTable,
}

/// A Paillier secret key: the primes `p`, `q` and the CRT constants derived from them.
/// Zeroized on drop (every limb buffer it owns is overwritten); `Debug` prints no value.
pub struct SecretKey {
    pk: PublicKey,
    p: Integer,
    q: Integer,
    crt: CrtConstants,
    tables: OnceLock<CrtTables>,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("n_bits", &self.pk.bits())
            .finish_non_exhaustive()
    }
}

impl Zeroize for SecretKey {
    fn zeroize(&mut self) {
        wipe(&mut self.p);
        wipe(&mut self.q);
        self.crt.zeroize();
        // The CRT tables hold powers of h_s modulo p² and q², which reveal p and q: they are
        // wiped here and again when dropped. The Montgomery contexts (moduli p, q, p², q²)
        // wipe themselves when dropped.
        if let Some(t) = self.tables.get_mut() {
            t.p.wipe();
            t.q.wipe();
        }
        self.tables = OnceLock::new();
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.zeroize();
    }
}
impl ZeroizeOnDrop for SecretKey {}

impl Clone for SecretKey {
    /// Copies the primes and every derived constant (nothing is recomputed); the copy is
    /// zeroized on drop like the original. The CRT tables, when built, are copied too.
    fn clone(&self) -> Self {
        let tables = OnceLock::new();
        if let Some(t) = self.tables.get() {
            let _ = tables.set(CrtTables {
                p: t.p.clone(),
                q: t.q.clone(),
            });
        }
        Self {
            pk: self.pk.clone(),
            p: self.p.clone(),
            q: self.q.clone(),
            crt: self.crt.clone(),
            tables,
        }
    }
}

/// The CRT constants of a secret key, derived from `p` and `q` by [`derive_constants`];
/// zeroized on drop (the Montgomery and exponentiation contexts wipe themselves).
#[derive(Clone)]
struct CrtConstants {
    p2: Integer,
    q2: Integer,
    p_minus_1: Integer,
    q_minus_1: Integer,
    /// `L_p(g^{p−1} mod p²)^{−1} mod p`.
    hp: Integer,
    /// `L_q(g^{q−1} mod q²)^{−1} mod q`.
    hq: Integer,
    /// `q^{−1} mod p`.
    q_inv_p: Integer,
    /// `(q²)^{−1} mod p²`.
    q2_inv_p2: Integer,
    /// `p^{−1} mod 2^(64·k)` for the `k` limbs of `p`: `L_p` as an exact division.
    p_inv_word: Integer,
    q_inv_word: Integer,
    /// Constant-time exponentiation modulo `p²` and `q²` (AVX-512 IFMA or 64-bit Montgomery).
    ct_p: CtPow,
    ct_q: CtPow,
    /// Decryption's `c^{p−1} mod p²` on base-`p` digits, where that is the faster path: no
    /// IFMA, and a prime that fills its top limb (every key of a size multiple of 128 bits).
    digits_p: Option<Padic>,
    digits_q: Option<Padic>,
    /// Montgomery contexts for the constant-time reductions and products.
    mont_p: Monty,
    mont_q: Monty,
    mont_p2: Monty,
    mont_q2: Monty,
}

impl Zeroize for CrtConstants {
    fn zeroize(&mut self) {
        for x in [
            &mut self.p2,
            &mut self.q2,
            &mut self.p_minus_1,
            &mut self.q_minus_1,
            &mut self.hp,
            &mut self.hq,
            &mut self.q_inv_p,
            &mut self.q2_inv_p2,
            &mut self.p_inv_word,
            &mut self.q_inv_word,
        ] {
            wipe(x);
        }
    }
}

impl Drop for CrtConstants {
    fn drop(&mut self) {
        self.zeroize();
    }
}

/// Derives the CRT constants of the odd primes `p ≠ q` in a time that depends on their limb
/// counts only:
///
/// * `p²`, `q²`, `p − 1`, `q − 1`: schoolbook products and a borrow chain over all limbs;
/// * the Montgomery and IFMA contexts modulo `p`, `q`, `p²`, `q²`: `R mod m` and `R² mod m`
///   by doubling with masked subtraction ([`bigint::ct_pow2_mod`]);
/// * `q⁻¹ mod p`, `p⁻¹ mod q`, `(q²)⁻¹ mod p²`: safegcd with its worst-case step count, the
///   input reduced by binary long division ([`bigint::ct_mod`]);
/// * `h_p = L_p(g^{p−1} mod p²)⁻¹ mod p` in closed form: `g^{p−1} = (1 + n)^{p−1} ≡
///   1 + (p−1)·n (mod p²)`, so `L_p(g^{p−1}) = (p−1)·q ≡ −q (mod p)` and `h_p = −q⁻¹ mod p`,
///   a masked subtraction from zero (no exponentiation, no division by `p`); `h_q` likewise;
/// * `p⁻¹ mod 2^(64k)` for the exact division `L_p`: Newton's iteration over `k` limbs.
fn derive_constants(p: &Integer, q: &Integer) -> CrtConstants {
    // p and q are distinct odd primes > 2 (checked by every caller), so every context and
    // inverse exists: the `expect`s cannot fire and the inverses' fallback is unreachable.
    let ctx = |m: &Integer| Monty::new(m).expect("odd modulus > 1");
    let ct = |m: &Integer| CtPow::new(m).expect("odd modulus > 1");
    let inv = |x: &Integer, m: &Integer| x.invert_secret(m).unwrap_or_default();
    let p2 = p.square();
    let q2 = q.square();
    let mont_p = ctx(p);
    let mont_q = ctx(q);
    let q_inv_p = inv(q, p);
    let mut p_inv_q = inv(p, q);
    let zero = Integer::new();
    let hp = mont_p.sub_mod(&zero, &q_inv_p);
    let hq = mont_q.sub_mod(&zero, &p_inv_q);
    wipe(&mut p_inv_q);
    let q2_inv_p2 = inv(&q2, &p2);
    let word_inv = |x: &Integer| bigint::inverse_mod_word_power(x, x.as_limbs().len());
    let (ct_p, ct_q) = (ct(&p2), ct(&q2));
    let digits = |x: &Integer, sq: &CtPow| sq.is_montgomery().then(|| Padic::new(x)).flatten();
    CrtConstants {
        p_minus_1: p - 1u32,
        q_minus_1: q - 1u32,
        hp,
        hq,
        q_inv_p,
        q2_inv_p2,
        p_inv_word: word_inv(p),
        q_inv_word: word_inv(q),
        digits_p: digits(p, &ct_p),
        digits_q: digits(q, &ct_q),
        ct_p,
        ct_q,
        mont_p2: ctx(&p2),
        mont_q2: ctx(&q2),
        mont_p,
        mont_q,
        p2,
        q2,
    }
}

/// The serialised secret key: `p`, `q`, `h_s` and the public modulus `n`. `n` is redundant
/// (`p·q`); it is written so that a reader can check the public key it pairs with, and it is
/// optional on input, but when present it must equal `p·q`.
#[derive(Serialize, Deserialize)]
struct SecretKeyRepr {
    #[serde(with = "serde_hex")]
    p: Integer,
    #[serde(with = "serde_hex")]
    q: Integer,
    #[serde(with = "serde_hex")]
    hs: Integer,
    #[serde(
        default,
        with = "serde_hex_opt",
        skip_serializing_if = "Option::is_none"
    )]
    n: Option<Integer>,
}

impl Drop for SecretKeyRepr {
    fn drop(&mut self) {
        wipe(&mut self.p);
        wipe(&mut self.q);
    }
}

/// [`serde_hex`] for an optional field.
mod serde_hex_opt {
    use super::{Integer, serde_hex};
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        x: &Option<Integer>,
        s: S,
    ) -> core::result::Result<S::Ok, S::Error> {
        match x {
            Some(x) => serde_hex::serialize(x, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> core::result::Result<Option<Integer>, D::Error> {
        serde_hex::deserialize(d).map(Some)
    }
}

impl Serialize for SecretKey {
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        SecretKeyRepr {
            p: self.p.clone(),
            q: self.q.clone(),
            hs: self.pk.inner.hs.clone(),
            n: Some(self.pk.inner.n.clone()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SecretKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let r = SecretKeyRepr::deserialize(d)?;
        Self::from_parts_checked(&r.p, &r.q, Some(r.hs.clone()), r.n.as_ref(), MIN_BITS)
            .map_err(serde::de::Error::custom)
    }
}

/// A Paillier key pair.
#[derive(Debug, Clone)]
pub struct Keypair {
    /// The public key.
    pub public: PublicKey,
    /// The secret key (also holds a copy of the public key).
    pub secret: SecretKey,
}

impl Keypair {
    /// Generates a key pair with an `n` of `bits` ∈ {2048, 3072, 4096} bits using the
    /// thread-local CSPRNG.
    ///
    /// # Errors
    /// [`Error::UnsupportedKeySize`] for any other size.
    pub fn generate(bits: u32) -> Result<Self> {
        Self::generate_with_rng(bits, &mut rand::rng())
    }

    /// [`Self::generate`] with an explicit RNG.
    ///
    /// # Errors
    /// [`Error::UnsupportedKeySize`] for a size not in [`ALLOWED_BITS`].
    pub fn generate_with_rng<R: CryptoRng + ?Sized>(bits: u32, rng: &mut R) -> Result<Self> {
        if !ALLOWED_BITS.contains(&bits) {
            return Err(Error::UnsupportedKeySize {
                bits,
                allowed: "2048, 3072, 4096",
            });
        }
        Ok(Self::generate_unchecked(bits, rng))
    }

    /// **Insecure**: a key of any even size from 256 bits, for fast tests only. Keys below 2048
    /// bits are factorable; never use this for data.
    ///
    /// # Errors
    /// [`Error::UnsupportedKeySize`] for odd sizes or sizes outside `256..=8192`.
    pub fn generate_insecure_for_tests(bits: u32) -> Result<Self> {
        if !bits.is_multiple_of(2) || !(MIN_INSECURE_BITS..=MAX_BITS).contains(&bits) {
            return Err(Error::UnsupportedKeySize {
                bits,
                allowed: "even sizes 256..=8192",
            });
        }
        Ok(Self::generate_unchecked(bits, &mut rand::rng()))
    }

    fn generate_unchecked<R: CryptoRng + ?Sized>(bits: u32, rng: &mut R) -> Self {
        loop {
            let p = random_prime_3mod4(rng, bits / 2);
            let q = random_prime_3mod4(rng, bits / 2);
            if bool::from(ct_eq_int(&p, &q)) {
                continue;
            }
            let n = &p * &q;
            let hs = djn_base(&n, rng);
            // The size is in range, n is odd and h_s a unit by construction.
            match PublicKey::from_parts(n, hs, MIN_INSECURE_BITS) {
                Ok(pk) => {
                    let secret = SecretKey::derive(pk.clone(), p, q);
                    return Self { public: pk, secret };
                }
                Err(_) => continue,
            }
        }
    }
}

impl SecretKey {
    /// A secret key from its primes (e.g. python-phe's `PaillierPrivateKey.p`, `.q`), with a
    /// fresh DJN base. `p` and `q` need not be `≡ 3 (mod 4)`; they must be distinct probable
    /// primes whose lengths differ by at most two bits, with `n = p·q` of 2048 to 8192 bits and
    /// `gcd(n, (p−1)(q−1)) = 1`.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] or [`Error::UnsupportedKeySize`] when a condition fails.
    pub fn from_primes(p: &Integer, q: &Integer) -> Result<Self> {
        Self::from_primes_inner(p, q, None, MIN_BITS)
    }

    /// **Insecure**: [`Self::from_primes`] accepting moduli down to 256 bits, for tests only.
    ///
    /// # Errors
    /// As [`Self::from_primes`].
    pub fn from_primes_insecure_for_tests(p: &Integer, q: &Integer) -> Result<Self> {
        Self::from_primes_inner(p, q, None, MIN_INSECURE_BITS)
    }

    fn from_primes_inner(
        p: &Integer,
        q: &Integer,
        hs: Option<Integer>,
        min_bits: u32,
    ) -> Result<Self> {
        Self::from_parts_checked(p, q, hs, None, min_bits)
    }

    /// Every secret-key import: the primes, an optional `h_s` (a fresh one when `None`) and an
    /// optional claimed modulus `n`, which must then equal `p·q`.
    fn from_parts_checked(
        p: &Integer,
        q: &Integer,
        hs: Option<Integer>,
        claimed_n: Option<&Integer>,
        min_bits: u32,
    ) -> Result<Self> {
        if bool::from(ct_eq_int(p, q)) || *p <= 2u32 || *q <= 2u32 {
            return Err(Error::InvalidKey("p and q must be distinct odd primes"));
        }
        // Sizes first: the primality tests below cost 64 exponentiations each, cubic in the
        // length, so over-long (hostile, deserialised) primes are refused before them.
        let (p_bits, q_bits) = (p.significant_bits(), q.significant_bits());
        let n_bits = p_bits.saturating_add(q_bits);
        if n_bits > MAX_BITS.saturating_add(1) || n_bits < min_bits {
            return Err(Error::UnsupportedKeySize {
                bits: n_bits,
                allowed: "2048..=8192",
            });
        }
        if p_bits.abs_diff(q_bits) > MAX_PRIME_BITS_GAP {
            return Err(Error::InvalidKey(
                "p and q differ in length by more than 2 bits (unbalanced modulus)",
            ));
        }
        // A claimed modulus of the right size is compared with p·q before the primality tests.
        if let Some(n) = claimed_n
            && (n.significant_bits() > MAX_BITS || *n != p * q)
        {
            return Err(Error::InvalidKey("n is not p·q"));
        }
        let mut rng = rand::rng();
        if p.is_even()
            || q.is_even()
            || !is_probable_prime(p, ADVERSARIAL_ROUNDS, &mut rng)
            || !is_probable_prime(q, ADVERSARIAL_ROUNDS, &mut rng)
        {
            return Err(Error::InvalidKey("p or q is not prime"));
        }
        let n = p * q;
        let phi = (p - 1u32) * (q - 1u32);
        // gcd(n, φ) = 1 iff φ is a unit modulo the odd public n: the constant-time safegcd
        // reveals only that verdict (the variable-time gcd would follow φ).
        if phi.invert_secret(&n).is_none() {
            return Err(Error::InvalidKey("gcd(n, phi(n)) != 1"));
        }
        let pk = match hs {
            // With the factors known, check what the public key alone cannot show: `h_s` is
            // an n-th residue (`h_s^φ(n) = 1 mod n²`), so ciphertexts hide the plaintext.
            Some(hs) if hs.pow_mod(&phi, &n.square()).is_none_or(|x| x != 1u32) => {
                return Err(Error::InvalidKey("h_s is not an n-th residue modulo n²"));
            }
            Some(hs) => PublicKey::from_parts(n, hs, min_bits)?,
            None => PublicKey::from_n_with_min(n, min_bits)?,
        };
        Ok(Self::derive(pk, p.clone(), q.clone()))
    }

    /// Derives the CRT constants; `p ≠ q` odd primes with `p·q = pk.n`. Every step takes a
    /// time that depends on the limb counts of `p` and `q` only (see [`derive_constants`]).
    fn derive(pk: PublicKey, p: Integer, q: Integer) -> Self {
        let crt = derive_constants(&p, &q);
        Self {
            pk,
            p,
            q,
            crt,
            tables: OnceLock::new(),
        }
    }

    /// The public key.
    #[must_use]
    pub fn public_key(&self) -> &PublicKey {
        &self.pk
    }

    /// The prime factors `(p, q)` of `n`; handle with care.
    #[must_use]
    pub fn primes(&self) -> (&Integer, &Integer) {
        (&self.p, &self.q)
    }

    fn tables(&self) -> &CrtTables {
        self.tables.get_or_init(|| {
            let r_bits = self.pk.inner.r_bits;
            let hs = &self.pk.inner.hs;
            CrtTables {
                p: FixedBaseTable::new(&self.crt.mont_p2.reduce(hs), &self.crt.p2, r_bits, WINDOW),
                q: FixedBaseTable::new(&self.crt.mont_q2.reduce(hs), &self.crt.q2, r_bits, WINDOW),
            }
        })
    }

    /// Builds the CRT fixed-base tables now; returns their size in bytes.
    pub fn precompute(&self) -> usize {
        let t = self.tables();
        t.p.memory_bytes() + t.q.memory_bytes()
    }

    /// Encrypts `0 ≤ m < n` with the secret key (same ciphertext distribution as
    /// [`PublicKey::encrypt`], `h_s^r` computed modulo `p²` and `q²` and recombined by CRT).
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for `m` outside `[0, n)`.
    pub fn encrypt(&self, m: &Integer) -> Result<Ciphertext> {
        self.encrypt_with_rng(m, &mut rand::rng())
    }

    /// [`Self::encrypt`] with an explicit RNG.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for `m` outside `[0, n)`.
    pub fn encrypt_with_rng<R: CryptoRng + ?Sized>(
        &self,
        m: &Integer,
        rng: &mut R,
    ) -> Result<Ciphertext> {
        self.pk.check_plaintext(m)?;
        let t = self.tables();
        let mut r = random_bits(rng, self.pk.inner.r_bits);
        let xp = t.p.pow(&r);
        let xq = t.q.pow(&r);
        wipe(&mut r);
        // Garner: x = x_q + q²·((x_p − x_q)·(q²)^{−1} mod p²), with constant-time reductions,
        // subtraction and products modulo p².
        let xq_p2 = self.crt.mont_p2.reduce(&xq);
        let d = self.crt.mont_p2.sub_mod(&xp, &xq_p2);
        let d = self.crt.mont_p2.mul_mod_lt(&d, &self.crt.q2_inv_p2);
        let x = &self.crt.q2 * &d + &xq;
        let c = self.pk.inner.mont_n2.mul_mod_lt(&self.pk.g_pow(m), &x);
        Ok(Ciphertext { c })
    }

    /// Decrypts to `m ∈ [0, n)` by CRT, in constant time (see the module documentation).
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`] when `ct` is not in `Z*_{n²}`.
    pub fn decrypt(&self, ct: &Ciphertext) -> Result<Integer> {
        if ct.c <= 0u32 || ct.c >= self.pk.inner.n2 {
            return Err(Error::MalformedCiphertext("not in [1, n²)"));
        }
        let cp = self.crt.mont_p2.reduce(&ct.c);
        let cq = self.crt.mont_q2.reduce(&ct.c);
        // c is a unit modulo n² iff p ∤ c and q ∤ c (only the verdict is revealed).
        if self.crt.mont_p.reduce(&cp).is_zero() || self.crt.mont_q.reduce(&cq).is_zero() {
            return Err(Error::MalformedCiphertext("not a unit modulo n²"));
        }
        // The two half-size exponentiations are independent: on an idle pool they run on two
        // cores (rayon::join costs about a microsecond; inside a batch it just queues work).
        let (mp, mq) = rayon::join(
            || {
                self.half(
                    &self.crt.ct_p,
                    self.crt.digits_p.as_ref(),
                    &self.crt.mont_p,
                    &cp,
                    &self.crt.p_minus_1,
                    &self.crt.p_inv_word,
                    &self.crt.hp,
                )
            },
            || {
                self.half(
                    &self.crt.ct_q,
                    self.crt.digits_q.as_ref(),
                    &self.crt.mont_q,
                    &cq,
                    &self.crt.q_minus_1,
                    &self.crt.q_inv_word,
                    &self.crt.hq,
                )
            },
        );
        Ok(self.recombine(&mp, &mq))
    }

    /// `L_p(c^{p−1} mod p²)·h_p mod p` for `c < p²` a unit, with `L_p(x) = (x − 1)/p`.
    ///
    /// On base-`p` digits, `c^{p−1} mod p² = 1 + L·p` is the pair `(1, L)` and `L_p` is its
    /// second digit. Modulo `p²` (IFMA or Montgomery), `L_p` is computed as
    /// `(x − 1)·p^{−1} mod 2^(64k)` (exact, as `p` divides `x − 1` and the quotient is below `p`).
    #[allow(clippy::too_many_arguments)] // one prime's constants, named at the two call sites
    fn half(
        &self,
        ct: &CtPow,
        digits: Option<&Padic>,
        mont_p: &Monty,
        c: &Integer,
        pm1: &Integer,
        p_inv_word: &Integer,
        hp: &Integer,
    ) -> Integer {
        // Every bit of p's limbs, so that the number of windows follows the limb count of p
        // and not its bit length (the exponent's top bits are then zero).
        let bits = u32::try_from(64 * pm1.as_limbs().len()).unwrap_or(u32::MAX);
        let l = if let Some(d) = digits {
            let (mut one, l) = d.pow_digits(c, pm1, bits);
            debug_assert!(one == 1u32, "c^(p−1) ≡ 1 (mod p) for a unit c");
            wipe(&mut one);
            l
        } else {
            let x = ct.pow(c, pm1, bits);
            bigint::mul_low(&(x - 1u32), p_inv_word, mont_p.limbs())
        };
        mont_p.mul_mod_lt(&l, hp)
    }

    /// Garner: `m = m_q + q·((m_p − m_q)·q^{−1} mod p)`, constant time modulo `p`.
    fn recombine(&self, mp: &Integer, mq: &Integer) -> Integer {
        let mq_p = self.crt.mont_p.reduce(mq);
        let d = self.crt.mont_p.sub_mod(mp, &mq_p);
        let t = self.crt.mont_p.mul_mod_lt(&d, &self.crt.q_inv_p);
        &self.q * &t + mq
    }

    /// Decrypts and decodes a signed value (see [`PublicKey::decode_signed`]) that must fit
    /// an `i64`.
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`]; [`Error::Overflow`] in the overflow band or beyond `i64`.
    pub fn decrypt_i64(&self, ct: &Ciphertext) -> Result<i64> {
        let v = self.pk.decode_signed(&self.decrypt(ct)?)?;
        v.to_i64().ok_or(Error::Overflow("value does not fit i64"))
    }
}

#[cfg(test)]
pub(crate) mod tests;
