//! Additive (exponential) ElGamal on any prime-order group implementing the RustCrypto
//! `group` traits.
//!
//! * Key: `x ← Z_ℓ`, `Y = x·G`.
//! * `E(m; r) = (C₁, C₂) = (r·G, m·G + r·Y)`; `E(a) + E(b) = E(a + b)`,
//!   `E(a) − E(b) = E(a − b)`, `k·E(a) = E(k·a)`, `E(a) + E(0)` re-randomises.
//! * Decryption: `M = C₂ − x·C₁ = m·G`, then `m` from a baby-step giant-step [`BsgsTable`]
//!   built once per group and shared (`Arc`) between keys and threads.
//!
//! IND-CPA under DDH in the group. The scalar multiplications by the secret `x` and the
//! randomness `r` are the group's constant-time ones; the discrete-log search takes time that
//! depends on `m` (inherent to lifted ElGamal), so decryption time leaks the message's size.
//!
//! Groups plug in through [`ElGamalGroup`], which adds a fixed-base table type to
//! `group::Group + GroupEncoding`; [`curve25519_dalek::RistrettoPoint`] implements it with
//! dalek's constant-time basepoint tables, and [`impl_elgamal_group_generic!`](crate::impl_elgamal_group_generic) implements it
//! without tables for any other point type that has the `group` traits.
//!
//! # `ElGamalGroup` and `obliv_ec::PrimeGroup`
//!
//! The workspace has two group traits on purpose. `obliv_ec::PrimeGroup` is the trait of the
//! ECDH protocols: hash to the group, multiply by a secret scalar, encode, decode, in batches
//! over byte buffers, with a run-time choice of curve (`obliv_ec::DynGroup`); it offers no
//! point addition, and one of its groups (`obliv_ec::X25519`, x-only) has none. EC ElGamal
//! needs exactly what it leaves out: adding and negating points and ciphertexts, arithmetic in
//! the scalar field (`ff::PrimeField`) and a table for fixed-base multiplication. So
//! [`ElGamalGroup`] builds on the RustCrypto `group` traits, which the point types of
//! curve25519-dalek, k256, p256 and `obliv-fourq` implement directly, and obliv-he depends on
//! no other obliv crate.
//!
//! An `obliv-ec` user bridges the two through the point type, not the trait:
//! `<obliv_ec::Ristretto255 as PrimeGroup>::Point` *is* [`curve25519_dalek::RistrettoPoint`],
//! so points from `Ristretto255::hash_to_point` or `Ristretto255::decode` (the 32-byte RFC 9496
//! encoding, the same bytes as [`GroupEncoding::to_bytes`] here) go into
//! [`PublicKey::from_point`], [`PublicKey::encrypt`] or a ciphertext unchanged, and back. The
//! other `obliv-ec` groups' point types (`k256`/`p256`/`sm2` `ProjectivePoint`,
//! `obliv_fourq::Point`) have the `group` traits but no [`ElGamalGroup`] implementation here:
//! by Rust's orphan rule only obliv-he or the point's own crate can add one (with
//! [`impl_elgamal_group_generic!`](crate::impl_elgamal_group_generic)), so another crate uses them through a newtype that
//! implements `Group + GroupEncoding` and then the macro.
//!
//! ```
//! use curve25519_dalek::RistrettoPoint; // = <obliv_ec::Ristretto255 as PrimeGroup>::Point
//! use group::{Group, GroupEncoding};
//! use obliv_he::elgamal::ec::{BsgsTable, PublicKey, SecretKey};
//!
//! let mut rng = rand::rng();
//! let sk = SecretKey::<RistrettoPoint>::generate(&mut rng);
//! // A public key that arrived as 32 bytes, e.g. from `obliv_ec::Ristretto255::encode`.
//! let bytes = sk.public_key().point().to_bytes();
//! let y = Option::<RistrettoPoint>::from(RistrettoPoint::from_bytes(&bytes)).unwrap();
//! let pk = PublicKey::from_point(y);
//! let c = pk.add(&pk.encrypt(20, &mut rng), &pk.encrypt(22, &mut rng));
//! let table = BsgsTable::<RistrettoPoint>::default_32()?; // build once, share
//! assert_eq!(sk.decrypt(&c, &table)?, 42);
//! assert!(!bool::from(y.is_identity()));
//! # Ok::<(), obliv_he::Error>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::Arc;

use curve25519_dalek::ristretto::{RistrettoBasepointTable, RistrettoPoint};
use ff::{Field, PrimeField};
use group::{Group, GroupEncoding};
use rand_core::CryptoRng;
use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::{Error, Result};
use crate::par::try_map;

/// A prime-order group usable for EC ElGamal: `group::Group + GroupEncoding` plus a table of
/// precomputed multiples of a fixed point (for `r·G`, `m·G` and `r·Y`).
pub trait ElGamalGroup: Group + GroupEncoding
where
    Self::Scalar: Zeroize,
{
    /// Precomputed multiples of one point.
    type Table: Send + Sync;
    /// Precomputes the table for `base`.
    fn table(base: &Self) -> Self::Table;
    /// The table of the generator, built once per program.
    fn generator_table() -> &'static Self::Table;
    /// `s·base` from `base`'s table, in constant time.
    fn mul_table(table: &Self::Table, s: &Self::Scalar) -> Self;
}

impl ElGamalGroup for RistrettoPoint {
    type Table = RistrettoBasepointTable;
    fn table(base: &Self) -> Self::Table {
        RistrettoBasepointTable::create(base)
    }
    fn generator_table() -> &'static Self::Table {
        curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE
    }
    fn mul_table(table: &Self::Table, s: &Self::Scalar) -> Self {
        table * s
    }
}

/// Implements [`ElGamalGroup`] for a group type without precomputation (the "table" is the
/// point itself and `mul_table` the group's scalar multiplication).
///
/// Rust's orphan rule applies: outside obliv-he, invoke it only on a point type of the
/// invoking crate (for example a newtype around another crate's point that implements
/// `group::Group + GroupEncoding`).
#[macro_export]
macro_rules! impl_elgamal_group_generic {
    ($t:ty) => {
        impl $crate::elgamal::ec::ElGamalGroup for $t {
            type Table = $t;
            fn table(base: &Self) -> Self::Table {
                *base
            }
            fn generator_table() -> &'static Self::Table {
                static G: ::std::sync::OnceLock<$t> = ::std::sync::OnceLock::new();
                G.get_or_init(<$t as $crate::elgamal::ec::__group::Group>::generator)
            }
            fn mul_table(table: &Self::Table, s: &Self::Scalar) -> Self {
                *table * s
            }
        }
    };
}

#[doc(hidden)]
pub use group as __group;

/// `v` as a scalar (negative values map to `−|v|`).
fn scalar_from_i64<S: PrimeField>(v: i64) -> S {
    let s = S::from(v.unsigned_abs());
    if v < 0 { -s } else { s }
}

fn hash_key<R: AsRef<[u8]>>(r: &R) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(r.as_ref())
}

/// Baby-step giant-step table for discrete logarithms `m` of `M = m·G` with
/// `0 ≤ m < 2^range_bits` (`range_bits ≤ 48`).
///
/// It stores the `2^baby_bits` baby steps `j·G` (their encodings, indexed by a 64-bit hash);
/// a look-up walks at most `2^(range_bits − baby_bits)` giant steps `M − i·2^baby_bits·G`.
/// Memory: `2^baby_bits · (|encoding| + ~24)` bytes — about 3.5 MiB for Ristretto with the
/// default `baby_bits = 16`, 56 MiB for `baby_bits = 20` ([`Self::memory_bytes`] gives the
/// figure for a table). Build it once and share it: it is `Send + Sync` and usually held in
/// an `Arc`.
pub struct BsgsTable<G: Group + GroupEncoding> {
    baby_bits: u32,
    range_bits: u32,
    index: HashMap<u64, u32>,
    baby: Vec<G::Repr>,
    giant: G,
}

impl<G: Group + GroupEncoding> fmt::Debug for BsgsTable<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BsgsTable")
            .field("baby_bits", &self.baby_bits)
            .field("range_bits", &self.range_bits)
            .finish_non_exhaustive()
    }
}

impl<G: Group + GroupEncoding> BsgsTable<G> {
    /// Builds a table for `m < 2^range_bits` with `2^baby_bits` baby steps (in parallel).
    ///
    /// # Errors
    /// [`Error::InvalidNumber`] unless `1 ≤ baby_bits ≤ 26`, `baby_bits ≤ range_bits ≤ 48`.
    pub fn new(range_bits: u32, baby_bits: u32) -> Result<Arc<Self>> {
        if !(1..=26).contains(&baby_bits) || !(baby_bits..=48).contains(&range_bits) {
            return Err(Error::InvalidNumber(
                "need 1 <= baby_bits <= 26, baby_bits <= range_bits <= 48",
            ));
        }
        let n = 1usize << baby_bits;
        let chunk = 1usize << 10;
        let g = G::generator();
        let mut baby: Vec<G::Repr> = vec![G::Repr::default(); n];
        baby.par_chunks_mut(chunk).enumerate().for_each(|(c, out)| {
            let start = u64::try_from(c * chunk).unwrap_or(0);
            let mut p = g * G::Scalar::from(start);
            for o in out.iter_mut() {
                *o = p.to_bytes();
                p += g;
            }
        });
        let mut index = HashMap::with_capacity(n);
        for (j, r) in (0u32..).zip(baby.iter()) {
            index.entry(hash_key(r)).or_insert(j);
        }
        let giant = g * G::Scalar::from(1u64 << baby_bits);
        Ok(Arc::new(Self {
            baby_bits,
            range_bits,
            index,
            baby,
            giant,
        }))
    }

    /// The default table: messages below `2^32`, `2^16` baby steps.
    ///
    /// # Errors
    /// Never; the `Result` mirrors [`Self::new`].
    pub fn default_32() -> Result<Arc<Self>> {
        Self::new(32, 16)
    }

    /// Messages must be below `2^range_bits`.
    #[must_use]
    pub fn range_bits(&self) -> u32 {
        self.range_bits
    }

    /// Approximate heap size in bytes (baby-step encodings plus the hash index).
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        let enc = core::mem::size_of::<G::Repr>();
        // hashbrown: 12-byte (u64, u32) buckets padded to 16, one control byte, load ≤ 7/8.
        let idx = self.index.capacity() * (16 + 1);
        self.baby.len() * enc + idx
    }

    fn lookup(&self, p: &G) -> Option<u64> {
        let r = p.to_bytes();
        let &j = self.index.get(&hash_key(&r))?;
        (self.baby[j as usize].as_ref() == r.as_ref()).then_some(u64::from(j))
    }

    /// `v` with `M = v·G` and `|v| < 2^range_bits`, searching `M` and `−M` side by side.
    ///
    /// # Errors
    /// [`Error::DlogOutOfRange`] when there is none.
    pub fn solve_signed(&self, point: &G) -> Result<i64> {
        let giants = 1u64 << (self.range_bits - self.baby_bits);
        let (mut p, mut n) = (*point, -*point);
        for i in 0..giants {
            // range_bits ≤ 48, so both values fit an i64.
            if let Some(j) = self.lookup(&p) {
                return i64::try_from((i << self.baby_bits) | j)
                    .map_err(|_| Error::Overflow("i64"));
            }
            if let Some(j) = self.lookup(&n) {
                return i64::try_from((i << self.baby_bits) | j)
                    .map(|v| -v)
                    .map_err(|_| Error::Overflow("i64"));
            }
            p -= self.giant;
            n -= self.giant;
        }
        Err(Error::DlogOutOfRange {
            bits: self.range_bits,
        })
    }

    /// `m` with `M = m·G` and `0 ≤ m < 2^range_bits`.
    ///
    /// # Errors
    /// [`Error::DlogOutOfRange`] when there is none (wrong key, or a message out of range).
    pub fn solve(&self, point: &G) -> Result<u64> {
        let giants = 1u64 << (self.range_bits - self.baby_bits);
        let mut p = *point;
        for i in 0..giants {
            if let Some(j) = self.lookup(&p) {
                return Ok((i << self.baby_bits) | j);
            }
            p -= self.giant;
        }
        Err(Error::DlogOutOfRange {
            bits: self.range_bits,
        })
    }
}

/// An EC ElGamal public key `Y = x·G`, with a fixed-base table for `Y` and `G`.
pub struct PublicKey<G: ElGamalGroup>
where
    G::Scalar: Zeroize,
{
    y: G,
    /// The generator's table (static) and `Y`'s.
    g_table: &'static G::Table,
    y_table: Arc<G::Table>,
}

impl<G: ElGamalGroup> Clone for PublicKey<G>
where
    G::Scalar: Zeroize,
{
    fn clone(&self) -> Self {
        Self {
            y: self.y,
            g_table: self.g_table,
            y_table: Arc::clone(&self.y_table),
        }
    }
}

impl<G: ElGamalGroup> fmt::Debug for PublicKey<G>
where
    G::Scalar: Zeroize,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey").field("y", &self.y).finish()
    }
}

impl<G: ElGamalGroup> PartialEq for PublicKey<G>
where
    G::Scalar: Zeroize,
{
    fn eq(&self, other: &Self) -> bool {
        self.y == other.y
    }
}

/// An EC ElGamal ciphertext `(C₁, C₂)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ciphertext<G: Group> {
    /// `r·G`.
    pub c1: G,
    /// `m·G + r·Y`.
    pub c2: G,
}

fn point_from_hex<G: GroupEncoding>(s: &str) -> Result<G> {
    let mut repr = G::Repr::default();
    let buf = repr.as_mut();
    if s.len() != 2 * buf.len() || !s.is_ascii() {
        return Err(Error::Decoding("point encoding has the wrong length"));
    }
    // `u8::from_str_radix` alone also takes a sign ("+f"): a second spelling of a byte.
    if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::Decoding("point encoding is not hex"));
    }
    for (i, b) in buf.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
            .map_err(|_| Error::Decoding("point encoding is not hex"))?;
    }
    Option::from(G::from_bytes(&repr)).ok_or(Error::Decoding("not a valid group element"))
}

fn point_to_hex<G: GroupEncoding>(p: &G) -> String {
    p.to_bytes()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl<G: Group + GroupEncoding> Serialize for Ciphertext<G> {
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        [point_to_hex(&self.c1), point_to_hex(&self.c2)].serialize(s)
    }
}

impl<'de, G: Group + GroupEncoding> Deserialize<'de> for Ciphertext<G> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let [a, b] = <[String; 2]>::deserialize(d)?;
        Ok(Self {
            c1: point_from_hex(&a).map_err(D::Error::custom)?,
            c2: point_from_hex(&b).map_err(D::Error::custom)?,
        })
    }
}

impl<G: ElGamalGroup> Serialize for PublicKey<G>
where
    G::Scalar: Zeroize,
{
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        point_to_hex(&self.y).serialize(s)
    }
}

impl<'de, G: ElGamalGroup> Deserialize<'de> for PublicKey<G>
where
    G::Scalar: Zeroize,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let y: G = point_from_hex(&String::deserialize(d)?).map_err(D::Error::custom)?;
        if bool::from(y.is_identity()) {
            return Err(D::Error::custom("public key is the identity"));
        }
        Ok(Self::from_point(y))
    }
}

impl<G: ElGamalGroup> PublicKey<G>
where
    G::Scalar: Zeroize,
{
    /// A public key from its point `Y` (builds the tables).
    pub fn from_point(y: G) -> Self {
        Self {
            y,
            g_table: G::generator_table(),
            y_table: Arc::new(G::table(&y)),
        }
    }

    /// The point `Y = x·G`.
    #[must_use]
    pub fn point(&self) -> &G {
        &self.y
    }

    /// `E(m)` for a scalar message `m`, with randomness from `rng`.
    pub fn encrypt_scalar<R: CryptoRng + ?Sized>(
        &self,
        m: &G::Scalar,
        rng: &mut R,
    ) -> Ciphertext<G> {
        let mut r = G::Scalar::random(rng);
        let c1 = G::mul_table(self.g_table, &r);
        let c2 = G::mul_table(self.g_table, m) + G::mul_table(&self.y_table, &r);
        r.zeroize();
        Ciphertext { c1, c2 }
    }

    /// `E(m)` for an unsigned message (decryptable when `m < 2^range_bits` of the table).
    pub fn encrypt<R: CryptoRng + ?Sized>(&self, m: u64, rng: &mut R) -> Ciphertext<G> {
        self.encrypt_scalar(&G::Scalar::from(m), rng)
    }

    /// `E(v)` for a signed message (decrypt with [`SecretKey::decrypt_i64`]).
    pub fn encrypt_i64<R: CryptoRng + ?Sized>(&self, v: i64, rng: &mut R) -> Ciphertext<G> {
        self.encrypt_scalar(&scalar_from_i64(v), rng)
    }

    /// `E(a + b)`.
    #[must_use]
    pub fn add(&self, a: &Ciphertext<G>, b: &Ciphertext<G>) -> Ciphertext<G> {
        Ciphertext {
            c1: a.c1 + b.c1,
            c2: a.c2 + b.c2,
        }
    }

    /// `E(a − b)`.
    #[must_use]
    pub fn sub(&self, a: &Ciphertext<G>, b: &Ciphertext<G>) -> Ciphertext<G> {
        Ciphertext {
            c1: a.c1 - b.c1,
            c2: a.c2 - b.c2,
        }
    }

    /// `E(−a)`.
    #[must_use]
    pub fn neg(&self, a: &Ciphertext<G>) -> Ciphertext<G> {
        Ciphertext {
            c1: -a.c1,
            c2: -a.c2,
        }
    }

    /// `E(a + k)` for a public plaintext `k`.
    #[must_use]
    pub fn add_plain(&self, a: &Ciphertext<G>, k: i64) -> Ciphertext<G> {
        let kg = G::mul_table(self.g_table, &scalar_from_i64(k));
        Ciphertext {
            c1: a.c1,
            c2: a.c2 + kg,
        }
    }

    /// `E(k·a)` for a scalar `k`.
    #[must_use]
    pub fn mul_scalar(&self, a: &Ciphertext<G>, k: &G::Scalar) -> Ciphertext<G> {
        Ciphertext {
            c1: a.c1 * k,
            c2: a.c2 * k,
        }
    }

    /// `E(k·a)` for a signed integer `k`.
    #[must_use]
    pub fn mul_i64(&self, a: &Ciphertext<G>, k: i64) -> Ciphertext<G> {
        self.mul_scalar(a, &scalar_from_i64(k))
    }

    /// A fresh ciphertext of the same message: `a + E(0)`.
    pub fn rerandomize<R: CryptoRng + ?Sized>(
        &self,
        a: &Ciphertext<G>,
        rng: &mut R,
    ) -> Ciphertext<G> {
        let mut r = G::Scalar::random(rng);
        let c = Ciphertext {
            c1: a.c1 + G::mul_table(self.g_table, &r),
            c2: a.c2 + G::mul_table(&self.y_table, &r),
        };
        r.zeroize();
        c
    }

    /// [`Self::encrypt`] for every message, in parallel.
    #[must_use]
    pub fn encrypt_batch(&self, ms: &[u64]) -> Vec<Ciphertext<G>> {
        ms.par_iter()
            .map_init(rand::rng, |rng, &m| self.encrypt(m, rng))
            .collect()
    }

    /// Element-wise [`Self::add`], in parallel.
    ///
    /// # Errors
    /// [`Error::Decoding`] when the slices differ in length.
    pub fn add_batch(
        &self,
        a: &[Ciphertext<G>],
        b: &[Ciphertext<G>],
    ) -> Result<Vec<Ciphertext<G>>> {
        if a.len() != b.len() {
            return Err(Error::Decoding("batch operands differ in length"));
        }
        Ok(a.par_iter().zip(b).map(|(x, y)| self.add(x, y)).collect())
    }

    /// Element-wise [`Self::sub`], in parallel.
    ///
    /// # Errors
    /// [`Error::Decoding`] when the slices differ in length.
    pub fn sub_batch(
        &self,
        a: &[Ciphertext<G>],
        b: &[Ciphertext<G>],
    ) -> Result<Vec<Ciphertext<G>>> {
        if a.len() != b.len() {
            return Err(Error::Decoding("batch operands differ in length"));
        }
        Ok(a.par_iter().zip(b).map(|(x, y)| self.sub(x, y)).collect())
    }

    /// Element-wise [`Self::neg`], in parallel.
    #[must_use]
    pub fn neg_batch(&self, a: &[Ciphertext<G>]) -> Vec<Ciphertext<G>> {
        a.par_iter().map(|x| self.neg(x)).collect()
    }

    /// Element-wise [`Self::add_plain`], in parallel.
    ///
    /// # Errors
    /// [`Error::Decoding`] when the slices differ in length.
    pub fn add_plain_batch(&self, a: &[Ciphertext<G>], k: &[i64]) -> Result<Vec<Ciphertext<G>>> {
        if a.len() != k.len() {
            return Err(Error::Decoding("batch operands differ in length"));
        }
        Ok(a.par_iter()
            .zip(k)
            .map(|(x, &k)| self.add_plain(x, k))
            .collect())
    }

    /// [`Self::encrypt_i64`] for every value, in parallel.
    #[must_use]
    pub fn encrypt_i64_batch(&self, vs: &[i64]) -> Vec<Ciphertext<G>> {
        vs.par_iter()
            .map_init(rand::rng, |rng, &v| self.encrypt_i64(v, rng))
            .collect()
    }

    /// [`Self::rerandomize`] for every ciphertext, in parallel.
    #[must_use]
    pub fn rerandomize_batch(&self, a: &[Ciphertext<G>]) -> Vec<Ciphertext<G>> {
        a.par_iter()
            .map_init(rand::rng, |rng, x| self.rerandomize(x, rng))
            .collect()
    }

    /// Element-wise [`Self::mul_i64`], in parallel.
    ///
    /// # Errors
    /// [`Error::Decoding`] when the slices differ in length.
    pub fn mul_i64_batch(&self, a: &[Ciphertext<G>], k: &[i64]) -> Result<Vec<Ciphertext<G>>> {
        if a.len() != k.len() {
            return Err(Error::Decoding("batch operands differ in length"));
        }
        Ok(a.par_iter()
            .zip(k)
            .map(|(x, &k)| self.mul_i64(x, k))
            .collect())
    }
}

/// An EC ElGamal secret key `x`; zeroized on drop, `Debug` without the value.
pub struct SecretKey<G: ElGamalGroup>
where
    G::Scalar: Zeroize,
{
    x: G::Scalar,
    pk: PublicKey<G>,
}

impl<G: ElGamalGroup> fmt::Debug for SecretKey<G>
where
    G::Scalar: Zeroize,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey").finish_non_exhaustive()
    }
}

impl<G: ElGamalGroup> Drop for SecretKey<G>
where
    G::Scalar: Zeroize,
{
    fn drop(&mut self) {
        self.x.zeroize();
    }
}
impl<G: ElGamalGroup> ZeroizeOnDrop for SecretKey<G> where G::Scalar: Zeroize {}

impl<G: ElGamalGroup> Clone for SecretKey<G>
where
    G::Scalar: Zeroize,
{
    fn clone(&self) -> Self {
        Self {
            x: self.x,
            pk: self.pk.clone(),
        }
    }
}

impl<G: ElGamalGroup> Serialize for SecretKey<G>
where
    G::Scalar: Zeroize,
{
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        let mut repr = self.x.to_repr();
        let mut hex = String::with_capacity(2 * repr.as_ref().len());
        for b in repr.as_ref() {
            hex.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
            hex.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
        }
        repr.as_mut().zeroize();
        let r = hex.serialize(s);
        hex.zeroize();
        r
    }
}

impl<'de, G: ElGamalGroup> Deserialize<'de> for SecretKey<G>
where
    G::Scalar: Zeroize,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let mut s = String::deserialize(d)?;
        let mut repr = <G::Scalar as PrimeField>::Repr::default();
        let ok = s.len() == 2 * repr.as_ref().len() && s.is_ascii();
        // Digits only: `u8::from_str_radix` also takes a sign ("+1").
        let hex = s.bytes().all(|c| c.is_ascii_hexdigit());
        let mut res = Err(D::Error::custom("secret key has the wrong length"));
        if ok {
            let mut good = hex;
            for (i, b) in repr.as_mut().iter_mut().enumerate() {
                match u8::from_str_radix(&s[2 * i..2 * i + 2], 16) {
                    Ok(v) => *b = v,
                    Err(_) => good = false,
                }
            }
            res = if good {
                Option::<G::Scalar>::from(G::Scalar::from_repr(repr))
                    .filter(|x| !bool::from(x.is_zero()))
                    .map(Self::from_scalar)
                    .ok_or_else(|| D::Error::custom("not a non-zero scalar"))
            } else {
                Err(D::Error::custom("secret key is not hex"))
            };
        }
        repr.as_mut().zeroize();
        s.zeroize();
        res
    }
}

impl<G: ElGamalGroup> SecretKey<G>
where
    G::Scalar: Zeroize,
{
    /// A fresh key pair.
    pub fn generate<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        loop {
            let x = G::Scalar::random(&mut *rng);
            if !bool::from(x.is_zero()) {
                return Self::from_scalar(x);
            }
        }
    }

    fn from_scalar(x: G::Scalar) -> Self {
        let y = G::generator() * x;
        Self {
            x,
            pk: PublicKey::from_point(y),
        }
    }

    /// The public key.
    #[must_use]
    pub fn public_key(&self) -> &PublicKey<G> {
        &self.pk
    }

    /// `M = C₂ − x·C₁ = m·G`.
    #[must_use]
    pub fn decrypt_point(&self, c: &Ciphertext<G>) -> G {
        c.c2 - c.c1 * self.x
    }

    /// `m ∈ [0, 2^range_bits)` by baby-step giant-step.
    ///
    /// # Errors
    /// [`Error::DlogOutOfRange`] for a message outside the table's range (or a wrong key).
    pub fn decrypt(&self, c: &Ciphertext<G>, table: &BsgsTable<G>) -> Result<u64> {
        table.solve(&self.decrypt_point(c))
    }

    /// A signed message `v` with `|v| < 2^range_bits` (the table walks `M` and `−M` together,
    /// so small magnitudes of either sign are found in the first giant steps).
    ///
    /// # Errors
    /// [`Error::DlogOutOfRange`] outside that range.
    pub fn decrypt_i64(&self, c: &Ciphertext<G>, table: &BsgsTable<G>) -> Result<i64> {
        table.solve_signed(&self.decrypt_point(c))
    }

    /// [`Self::decrypt_i64`] on every ciphertext, in parallel.
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::decrypt_i64`].
    pub fn decrypt_i64_batch(
        &self,
        cs: &[Ciphertext<G>],
        table: &BsgsTable<G>,
    ) -> Result<Vec<i64>> {
        try_map(cs.len(), |i| self.decrypt_i64(&cs[i], table))
    }

    /// [`Self::decrypt`] on every ciphertext, in parallel.
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::decrypt`].
    pub fn decrypt_batch(&self, cs: &[Ciphertext<G>], table: &BsgsTable<G>) -> Result<Vec<u64>> {
        try_map(cs.len(), |i| self.decrypt(&cs[i], table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::OnceLock;

    type G = RistrettoPoint;

    fn table() -> &'static Arc<BsgsTable<G>> {
        static T: OnceLock<Arc<BsgsTable<G>>> = OnceLock::new();
        T.get_or_init(|| BsgsTable::default_32().expect("valid"))
    }

    fn key() -> &'static SecretKey<G> {
        static K: OnceLock<SecretKey<G>> = OnceLock::new();
        K.get_or_init(|| SecretKey::generate(&mut rand::rng()))
    }

    #[test]
    fn roundtrip_and_range() {
        let (sk, t) = (key(), table());
        let pk = sk.public_key();
        let mut rng = rand::rng();
        for m in [0u64, 1, 65_535, 65_536, 1 << 20, (1 << 32) - 1] {
            assert_eq!(
                sk.decrypt(&pk.encrypt(m, &mut rng), t).expect("in range"),
                m
            );
        }
        assert_eq!(
            sk.decrypt(&pk.encrypt(1 << 32, &mut rng), t),
            Err(Error::DlogOutOfRange { bits: 32 })
        );
        for v in [0i64, -1, 1, -(1 << 31), (1 << 32) - 1, -(1 << 32) + 1] {
            assert_eq!(
                sk.decrypt_i64(&pk.encrypt_i64(v, &mut rng), t).expect("ok"),
                v
            );
        }
        // Wrong key: not a small discrete log.
        let other = SecretKey::<G>::generate(&mut rng);
        assert!(other.decrypt(&pk.encrypt(5, &mut rng), t).is_err());
        assert!(t.memory_bytes() > 65_536 * 32);
    }

    #[test]
    fn serde_and_debug() {
        let sk = key();
        let s = serde_json::to_string(sk).expect("ser");
        let sk2: SecretKey<G> = serde_json::from_str(&s).expect("de");
        assert_eq!(sk2.public_key(), sk.public_key());
        let pk: PublicKey<G> =
            serde_json::from_str(&serde_json::to_string(sk.public_key()).expect("ser"))
                .expect("de");
        let c = pk.encrypt(77, &mut rand::rng());
        let c2: Ciphertext<G> =
            serde_json::from_str(&serde_json::to_string(&c).expect("ser")).expect("de");
        assert_eq!(c, c2);
        assert_eq!(sk.decrypt(&c2, table()).expect("ok"), 77);
        assert!(serde_json::from_str::<Ciphertext<G>>(r#"["00","11"]"#).is_err());
        assert!(
            serde_json::from_str::<Ciphertext<G>>(&format!(
                r#"["{}","{}"]"#,
                "ff".repeat(32),
                "00".repeat(32)
            ))
            .is_err()
        );
        assert!(!format!("{sk:?}").contains(&s[1..10]));
    }

    #[test]
    fn batches() {
        let (sk, t) = (key(), table());
        let pk = sk.public_key();
        let ms: Vec<u64> = (0..64).map(|i| i * 1000).collect();
        let cs = pk.encrypt_batch(&ms);
        assert_eq!(sk.decrypt_batch(&cs, t).expect("ok"), ms);
        let sums = pk.add_batch(&cs, &cs).expect("ok");
        let zeros = pk.sub_batch(&cs, &cs).expect("ok");
        let ks: Vec<i64> = (0..64).collect();
        let prods = pk.mul_i64_batch(&cs, &ks).expect("ok");
        for i in 0..64 {
            assert_eq!(sk.decrypt(&sums[i], t).expect("ok"), 2 * ms[i]);
            assert_eq!(sk.decrypt(&zeros[i], t).expect("ok"), 0);
            assert_eq!(sk.decrypt(&prods[i], t).expect("ok"), ms[i] * (i as u64));
        }
        assert!(pk.add_batch(&cs, &cs[1..]).is_err());
        let vs: Vec<i64> = (-32..32).map(|i| i * 77).collect();
        let es = pk.encrypt_i64_batch(&vs);
        let ns = pk.neg_batch(&es);
        let ps = pk
            .add_plain_batch(&pk.rerandomize_batch(&es), &vs)
            .expect("ok");
        let neg: Vec<i64> = vs.iter().map(|v| -v).collect();
        let dbl: Vec<i64> = vs.iter().map(|v| 2 * v).collect();
        assert_eq!(sk.decrypt_i64_batch(&ns, t).expect("ok"), neg);
        assert_eq!(sk.decrypt_i64_batch(&ps, t).expect("ok"), dbl);
    }

    // The generic path (no precomputed tables) on another curve: secp256k1.
    crate::impl_elgamal_group_generic!(k256::ProjectivePoint);

    #[test]
    fn generic_group_secp256k1() {
        let mut rng = rand::rng();
        let t = BsgsTable::<k256::ProjectivePoint>::new(20, 10).expect("valid");
        let sk = SecretKey::<k256::ProjectivePoint>::generate(&mut rng);
        let pk = sk.public_key();
        let a = pk.encrypt_i64(-300, &mut rng);
        let b = pk.encrypt(1000, &mut rng);
        assert_eq!(sk.decrypt(&pk.add(&a, &b), &t).expect("ok"), 700);
        assert_eq!(sk.decrypt_i64(&pk.mul_i64(&a, 3), &t).expect("ok"), -900);
        assert!(sk.decrypt(&pk.encrypt(1 << 20, &mut rng), &t).is_err());
        let s = serde_json::to_string(&pk.encrypt(5, &mut rng)).expect("ser");
        let c: Ciphertext<k256::ProjectivePoint> = serde_json::from_str(&s).expect("de");
        assert_eq!(sk.decrypt(&c, &t).expect("ok"), 5);
    }

    /// Hex with a sign in a byte ("+0" for "00") used to decode, through `u8::from_str_radix`,
    /// to the same point or scalar as its digits-only spelling.
    #[test]
    fn signed_hex_bytes_are_refused() {
        let zero = "00".repeat(32);
        let plus = format!("+0{}", "00".repeat(31));
        let ok: Ciphertext<G> =
            serde_json::from_str(&format!(r#"["{zero}","{zero}"]"#)).expect("identity points");
        assert_eq!(ok.c1, G::identity());
        assert!(serde_json::from_str::<Ciphertext<G>>(&format!(r#"["{plus}","{zero}"]"#)).is_err());
        let y = point_to_hex(key().public_key().point());
        let y_plus = format!("+{}", &y[1..]);
        if y.starts_with('0') {
            assert!(serde_json::from_str::<PublicKey<G>>(&format!(r#""{y_plus}""#)).is_err());
        }
        assert!(point_from_hex::<G>(&y_plus).is_err());
        // The scalar 1 (little-endian "01 00 …") as "+1 00 …".
        let one = format!("01{}", "00".repeat(31));
        assert!(serde_json::from_str::<SecretKey<G>>(&format!(r#""{one}""#)).is_ok());
        let one_plus = format!("+1{}", "00".repeat(31));
        assert!(serde_json::from_str::<SecretKey<G>>(&format!(r#""{one_plus}""#)).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn prop_laws(a in -(1i64 << 20)..(1 << 20), b in -(1i64 << 20)..(1 << 20), k in -1000i64..1000) {
            let (sk, t) = (key(), table());
            let pk = sk.public_key();
            let mut rng = rand::rng();
            let ca = pk.encrypt_i64(a, &mut rng);
            let cb = pk.encrypt_i64(b, &mut rng);
            prop_assert_eq!(sk.decrypt_i64(&pk.add(&ca, &cb), t).expect("ok"), a + b);
            prop_assert_eq!(sk.decrypt_i64(&pk.sub(&ca, &cb), t).expect("ok"), a - b);
            prop_assert_eq!(sk.decrypt_i64(&pk.neg(&ca), t).expect("ok"), -a);
            prop_assert_eq!(sk.decrypt_i64(&pk.mul_i64(&ca, k), t).expect("ok"), a * k);
            prop_assert_eq!(sk.decrypt_i64(&pk.add_plain(&ca, k), t).expect("ok"), a + k);
            let r = pk.rerandomize(&ca, &mut rng);
            prop_assert_ne!(r, ca);
            prop_assert_eq!(sk.decrypt_i64(&r, t).expect("ok"), a);
        }
    }
}
