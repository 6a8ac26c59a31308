//! Multiplicative ElGamal in the prime-order subgroup of the RFC 3526 MODP groups.
//!
//! `p` is a safe prime (`p = 2q + 1`, `q` prime), `g = 2` generates the subgroup `QR_p` of
//! quadratic residues, of order `q`. Key: `x`, `y = g^x`. `E(m; k) = (g^k, m·y^k)` for
//! `m ∈ QR_p`; `E(a)·E(b) = E(a·b)` component-wise; decryption `m = c₂·(c₁^x)^{−1}`.
//!
//! **Messages must lie in `QR_p`** for IND-CPA security (DDH holds in `QR_p`, not in `Z*_p`,
//! where the Legendre symbol of `m` would leak). [`Group::encode`] maps an integer
//! `1 ≤ v ≤ q` into `QR_p` as `v` or `p − v` (exactly one is a residue since `−1` is a
//! non-residue for `p ≡ 3 mod 4`), and [`Group::decode`] maps back by taking the
//! representative `≤ q`. The encoding is multiplicative up to sign, so a product of encoded
//! values decodes to the integer product as long as that product stays `≤ q`.
//! [`SecretKey::decrypt`] rejects ciphertexts whose components are not in `QR_p`.
//!
//! Exponents: the secret `x` and the ephemeral `k` have 320 bits for the 2048-bit group and
//! 420 for the 3072-bit group — RFC 3526 §8's larger exponent size for each group (short
//! exponents in a safe-prime group; van Oorschot–Wiener, EUROCRYPT 1996). `g^k` and `y^k` use
//! fixed-base tables read by constant-time scans; `c₁^x` is a constant-time fixed-window
//! exponentiation (AVX-512 IFMA or 64-bit Montgomery) over a fixed length per key — 320/420
//! bits, or `|q|` for an imported `x` above that size — never over the actual length of `x`;
//! the products with the message or the
//! shared secret are Montgomery multiplications. The Jacobi symbols of the residue checks are
//! variable time (they run on the message at encryption and on the public ciphertext at
//! decryption).
//!
//! \[RFC3526\] T. Kivinen, M. Kojo, *More Modular Exponential (MODP) Diffie-Hellman groups for
//! Internet Key Exchange (IKE)*, 2003 (groups 14 and 15).

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::bigint::Integer;
use rand_core::CryptoRng;
use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::bigint::monty::Monty;
use crate::bigint::{FixedBaseTable, random_bits, serde_hex, wipe};
use crate::error::{Error, Result};
use crate::ifma::CtPow;
use crate::par::{try_map, try_map_init};

/// RFC 3526 group 14: `p = 2^2048 − 2^1984 − 1 + 2^64·(⌊2^1918·π⌋ + 124476)`.
const P2048: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AACAA68FFFFFFFFFFFFFFFF",
);

/// RFC 3526 group 15: `p = 2^3072 − 2^3008 − 1 + 2^64·(⌊2^2942·π⌋ + 1690314)`.
const P3072: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33",
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7",
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864",
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2",
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF",
);

const WINDOW: u32 = 5;

/// Which RFC 3526 group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum GroupId {
    /// Group 14, 2048-bit modulus.
    Modp2048,
    /// Group 15, 3072-bit modulus.
    Modp3072,
}

/// The parameters of one MODP group, with a fixed-base table for `g` (built on first use).
pub struct Group {
    id: GroupId,
    p: Integer,
    q: Integer,
    g: Integer,
    exp_bits: u32,
    g_table: OnceLock<FixedBaseTable>,
    /// Constant-time exponentiation modulo `p` (AVX-512 IFMA or Montgomery) for decryption.
    ct: CtPow,
    /// Montgomery context modulo `p` for constant-time products.
    mont: Monty,
}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Group {
    /// The shared parameters of a group.
    #[must_use]
    pub fn get(id: GroupId) -> &'static Arc<Group> {
        static G14: OnceLock<Arc<Group>> = OnceLock::new();
        static G15: OnceLock<Arc<Group>> = OnceLock::new();
        let (cell, hex, exp_bits) = match id {
            GroupId::Modp2048 => (&G14, P2048, 320),
            GroupId::Modp3072 => (&G15, P3072, 420),
        };
        cell.get_or_init(|| {
            // The constants are valid hexadecimal (checked by the tests).
            let p = Integer::from_str_radix(hex, 16).unwrap_or_default();
            let q = (&p - 1u32) >> 1u32;
            // p is an odd prime: both contexts exist.
            let ct = CtPow::new(&p).expect("odd modulus");
            let mont = Monty::new(&p).expect("odd modulus");
            Arc::new(Group {
                id,
                p,
                q,
                g: Integer::from(2u32),
                exp_bits,
                g_table: OnceLock::new(),
                ct,
                mont,
            })
        })
    }

    /// The modulus `p`.
    #[must_use]
    pub fn p(&self) -> &Integer {
        &self.p
    }
    /// The subgroup order `q = (p − 1)/2`.
    #[must_use]
    pub fn q(&self) -> &Integer {
        &self.q
    }
    /// The generator `g = 2`.
    #[must_use]
    pub fn g(&self) -> &Integer {
        &self.g
    }

    fn g_table(&self) -> &FixedBaseTable {
        self.g_table
            .get_or_init(|| FixedBaseTable::new(&self.g, &self.p, self.exp_bits, WINDOW))
    }

    fn is_qr(&self, x: &Integer) -> bool {
        *x > 0u32 && *x < self.p && x.jacobi(&self.p) == 1
    }

    /// Maps `1 ≤ v ≤ q` into `QR_p`: `v` if it is a residue, else `p − v`.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for `v` outside `[1, q]`.
    pub fn encode(&self, v: &Integer) -> Result<Integer> {
        if *v < 1u32 || *v > self.q {
            return Err(Error::PlaintextOutOfRange);
        }
        Ok(if v.jacobi(&self.p) == 1 {
            v.clone()
        } else {
            &self.p - v
        })
    }

    /// The representative in `[1, q]` of `±m`.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for `m` outside `[1, p)`.
    pub fn decode(&self, m: &Integer) -> Result<Integer> {
        if *m < 1u32 || *m >= self.p {
            return Err(Error::PlaintextOutOfRange);
        }
        Ok(if *m <= self.q { m.clone() } else { &self.p - m })
    }
}

/// A ciphertext `(c₁, c₂) = (g^k, m·y^k)`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ciphertext {
    /// `g^k`.
    #[serde(with = "serde_hex")]
    pub c1: Integer,
    /// `m·y^k`.
    #[serde(with = "serde_hex")]
    pub c2: Integer,
}

impl fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ciphertext").finish_non_exhaustive()
    }
}

/// A public key `y = g^x` with its fixed-base table (built on first use, shared by clones).
#[derive(Clone)]
pub struct PublicKey {
    group: Arc<Group>,
    y: Integer,
    y_table: Arc<OnceLock<FixedBaseTable>>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("group", &self.group.id)
            .finish_non_exhaustive()
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, o: &Self) -> bool {
        self.group.id == o.group.id && self.y == o.y
    }
}

#[derive(Serialize, Deserialize)]
struct PkRepr {
    group: GroupId,
    #[serde(with = "serde_hex")]
    y: Integer,
}

impl Serialize for PublicKey {
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        PkRepr {
            group: self.group.id,
            y: self.y.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PublicKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let r = PkRepr::deserialize(d)?;
        let group = Arc::clone(Group::get(r.group));
        if !group.is_qr(&r.y) || r.y == 1u32 {
            return Err(D::Error::custom("y is not a non-trivial element of QR_p"));
        }
        Ok(PublicKey {
            group,
            y: r.y,
            y_table: Arc::new(OnceLock::new()),
        })
    }
}

impl PublicKey {
    /// The group.
    #[must_use]
    pub fn group(&self) -> &Group {
        &self.group
    }
    /// `y = g^x`.
    #[must_use]
    pub fn y(&self) -> &Integer {
        &self.y
    }

    fn y_table(&self) -> &FixedBaseTable {
        self.y_table.get_or_init(|| {
            FixedBaseTable::new(&self.y, &self.group.p, self.group.exp_bits, WINDOW)
        })
    }

    /// Encrypts `m ∈ QR_p` (use [`Group::encode`] first).
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] when `m` is not in `QR_p`.
    pub fn encrypt<R: CryptoRng + ?Sized>(&self, m: &Integer, rng: &mut R) -> Result<Ciphertext> {
        if !self.group.is_qr(m) {
            return Err(Error::PlaintextOutOfRange);
        }
        let mut k = random_bits(rng, self.group.exp_bits);
        let c1 = self.group.g_table().pow(&k);
        let yk = self.y_table().pow(&k);
        wipe(&mut k);
        // m ∈ QR_p and y^k < p: a constant-time product modulo p.
        let c2 = self.group.mont.mul_mod_lt(&yk, m);
        Ok(Ciphertext { c1, c2 })
    }

    /// Encodes `1 ≤ v ≤ q` ([`Group::encode`]) and encrypts it.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for `v` outside `[1, q]`.
    pub fn encrypt_value<R: CryptoRng + ?Sized>(
        &self,
        v: &Integer,
        rng: &mut R,
    ) -> Result<Ciphertext> {
        self.encrypt(&self.group.encode(v)?, rng)
    }

    /// `E(a·b) = (a₁·b₁, a₂·b₂) mod p`.
    #[must_use]
    pub fn mul(&self, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        let p = &self.group.p;
        Ciphertext {
            c1: (&a.c1 * &b.c1) % p,
            c2: (&a.c2 * &b.c2) % p,
        }
    }

    /// `E(a·k)` for a plaintext `k ∈ QR_p`.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] when `k` is not in `QR_p`.
    pub fn mul_plain(&self, a: &Ciphertext, k: &Integer) -> Result<Ciphertext> {
        if !self.group.is_qr(k) {
            return Err(Error::PlaintextOutOfRange);
        }
        Ok(Ciphertext {
            c1: a.c1.clone(),
            c2: (&a.c2 * k) % &self.group.p,
        })
    }

    /// A fresh ciphertext of the same message: `a · E(1)`.
    ///
    /// # Errors
    /// Never; kept for symmetry with [`Self::encrypt`].
    pub fn rerandomize<R: CryptoRng + ?Sized>(
        &self,
        a: &Ciphertext,
        rng: &mut R,
    ) -> Result<Ciphertext> {
        Ok(self.mul(a, &self.encrypt(&Integer::from(1u32), rng)?))
    }

    /// [`Self::encrypt_value`] on every value, in parallel.
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::encrypt_value`].
    pub fn encrypt_value_batch(&self, vs: &[Integer]) -> Result<Vec<Ciphertext>> {
        self.y_table();
        self.group.g_table();
        try_map_init(vs.len(), rand::rng, |rng, i| {
            self.encrypt_value(&vs[i], rng)
        })
    }

    /// Element-wise [`Self::rerandomize`], in parallel.
    ///
    /// # Errors
    /// Never; kept for symmetry with [`Self::rerandomize`].
    pub fn rerandomize_batch(&self, a: &[Ciphertext]) -> Result<Vec<Ciphertext>> {
        try_map_init(a.len(), rand::rng, |rng, i| self.rerandomize(&a[i], rng))
    }

    /// Element-wise [`Self::mul_plain`], in parallel.
    ///
    /// # Errors
    /// [`Error::Decoding`] on a length mismatch, or the first error (by input index) of
    /// [`Self::mul_plain`].
    pub fn mul_plain_batch(&self, a: &[Ciphertext], k: &[Integer]) -> Result<Vec<Ciphertext>> {
        if a.len() != k.len() {
            return Err(Error::Decoding("batch operands differ in length"));
        }
        try_map(a.len(), |i| self.mul_plain(&a[i], &k[i]))
    }

    /// Element-wise [`Self::mul`], in parallel.
    ///
    /// # Errors
    /// [`Error::Decoding`] when the slices differ in length.
    pub fn mul_batch(&self, a: &[Ciphertext], b: &[Ciphertext]) -> Result<Vec<Ciphertext>> {
        if a.len() != b.len() {
            return Err(Error::Decoding("batch operands differ in length"));
        }
        Ok(a.par_iter().zip(b).map(|(x, y)| self.mul(x, y)).collect())
    }
}

/// A secret key `x`; zeroized on drop, `Debug` without the value.
pub struct SecretKey {
    pk: PublicKey,
    x: Integer,
    /// The public length over which `x` is raised at decryption ([`nominal_exp_bits`]).
    x_bits: u32,
}

/// The fixed, public exponent length for a secret `x ∈ [1, q)`: the group's short-exponent
/// size (320 or 420 bits) when `x` is below `2^exp_bits` — every generated key — and the
/// length of `q` otherwise (an imported key with a full-size `x`). It depends on which of the
/// two formats the key has, never on the actual bit length of `x`, so the number of squarings
/// in a decryption reveals nothing about `x` beyond its format (for `x` uniform in `[1, q)`,
/// the short format occurs with probability below `2^−1700`).
fn nominal_exp_bits(group: &Group, x: &Integer) -> u32 {
    // The format is public by design (the constant-time checks are told so).
    if obliv_cpu::ctgrind::declassify(x.significant_bits() <= group.exp_bits) {
        group.exp_bits
    } else {
        group.q.significant_bits()
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("group", &self.pk.group.id)
            .finish_non_exhaustive()
    }
}

impl Zeroize for SecretKey {
    fn zeroize(&mut self) {
        wipe(&mut self.x);
    }
}
impl Drop for SecretKey {
    fn drop(&mut self) {
        self.zeroize();
    }
}
impl ZeroizeOnDrop for SecretKey {}

impl Clone for SecretKey {
    fn clone(&self) -> Self {
        Self {
            pk: self.pk.clone(),
            x: self.x.clone(),
            x_bits: self.x_bits,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct SkRepr {
    group: GroupId,
    #[serde(with = "serde_hex")]
    x: Integer,
}
impl Drop for SkRepr {
    fn drop(&mut self) {
        wipe(&mut self.x);
    }
}

impl Serialize for SecretKey {
    fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        SkRepr {
            group: self.pk.group.id,
            x: self.x.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SecretKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let r = SkRepr::deserialize(d)?;
        let group = Group::get(r.group);
        if r.x < 1u32 || r.x >= group.q {
            return Err(D::Error::custom("x out of range"));
        }
        Ok(SecretKey::from_x(Arc::clone(group), r.x.clone()))
    }
}

impl SecretKey {
    /// A fresh key in the given group.
    pub fn generate<R: CryptoRng + ?Sized>(id: GroupId, rng: &mut R) -> Self {
        let group = Arc::clone(Group::get(id));
        loop {
            let x = random_bits(rng, group.exp_bits);
            if x > 0u32 {
                return Self::from_x(group, x);
            }
        }
    }

    fn from_x(group: Arc<Group>, x: Integer) -> Self {
        // The fixed-base table covers exponents of `exp_bits` bits (ignoring higher bits); a
        // deserialised x may have up to |q| bits, raised by the constant-time ladder instead.
        let x_bits = nominal_exp_bits(&group, &x);
        let y = if x_bits == group.exp_bits {
            group.g_table().pow(&x)
        } else {
            group.ct.pow(&group.g, &x, x_bits)
        };
        Self {
            pk: PublicKey {
                group,
                y,
                y_table: Arc::new(OnceLock::new()),
            },
            x,
            x_bits,
        }
    }

    /// The number of exponent bits the decryption ladder runs over (fixed per key format).
    fn decrypt_exp_bits(&self) -> u32 {
        self.x_bits
    }

    /// The public key.
    #[must_use]
    pub fn public_key(&self) -> &PublicKey {
        &self.pk
    }

    /// `m = c₂ · (c₁^x)^{−1} mod p`, an element of `QR_p`.
    ///
    /// # Errors
    /// [`Error::MalformedCiphertext`] when a component is not in `QR_p`.
    pub fn decrypt(&self, c: &Ciphertext) -> Result<Integer> {
        let g = &self.pk.group;
        if !g.is_qr(&c.c1) || !g.is_qr(&c.c2) {
            return Err(Error::MalformedCiphertext("component not in QR_p"));
        }
        // (c₁^{−1})^x: the inverse is of the public c₁ (variable time is harmless there), and
        // the exponentiation by the short secret x is the constant-time one.
        let inv =
            c.c1.invert(&g.p)
                .ok_or(Error::MalformedCiphertext("c1 not invertible"))?;
        // The window count follows the key's nominal exponent length, a public parameter
        // (320/420 bits for generated keys, |q| for an imported full-size x), not the actual
        // length of x.
        let s = g.ct.pow(&inv, &self.x, self.decrypt_exp_bits());
        Ok(g.mont.mul_mod_lt(&s, &c.c2))
    }

    /// Decrypts and decodes ([`Group::decode`]) to the value in `[1, q]`.
    ///
    /// # Errors
    /// As [`Self::decrypt`].
    pub fn decrypt_value(&self, c: &Ciphertext) -> Result<Integer> {
        self.pk.group.decode(&self.decrypt(c)?)
    }

    /// [`Self::decrypt_value`] on every ciphertext, in parallel.
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::decrypt_value`].
    pub fn decrypt_value_batch(&self, cs: &[Ciphertext]) -> Result<Vec<Integer>> {
        try_map(cs.len(), |i| self.decrypt_value(&cs[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bigint::prime::is_probable_prime;
    use proptest::prelude::*;

    fn key() -> &'static SecretKey {
        static K: OnceLock<SecretKey> = OnceLock::new();
        K.get_or_init(|| SecretKey::generate(GroupId::Modp2048, &mut rand::rng()))
    }

    /// Constant time under memcheck (`.ci/ctgrind`, see `obliv_cpu::ctgrind`): `x` is marked
    /// secret before the key is made from it (the public key `g^x` by the fixed-base table)
    /// and used to decrypt; a branch or a memory address that depends on it fails the check.
    /// Declassified by design: the key's format (short or full-size `x`), which sets the
    /// exponent length.
    #[test]
    #[ignore = "run under valgrind by .ci/ctgrind"]
    fn ctgrind_key_setup_and_decryption() {
        use obliv_cpu::ctgrind::{public, secret};
        let k = key();
        let m =
            k.pk.group
                .encode(&Integer::from(123_456u32))
                .expect("in range");
        let c = k.pk.encrypt(&m, &mut rand::rng()).expect("a residue");
        let mut x = k.x.clone();
        secret(x.limbs_mut());
        let marked = SecretKey::from_x(Arc::clone(&k.pk.group), x);
        let mut got = marked.decrypt(&c).expect("well formed");
        public(got.limbs_mut());
        assert_eq!(got, m);
        let mut y = marked.pk.y.clone();
        public(y.limbs_mut());
        assert_eq!(y, k.pk.y);
    }

    #[test]
    fn rfc3526_constants() {
        // Known words of the RFC's hex listing, and the safe-prime property.
        for (id, bits, tail) in [
            (GroupId::Modp2048, 2048, "8AACAA68FFFFFFFFFFFFFFFF"),
            (GroupId::Modp3072, 3072, "A93AD2CAFFFFFFFFFFFFFFFF"),
        ] {
            let g = Group::get(id);
            assert_eq!(g.p.significant_bits(), bits);
            let hex = g.p.to_string_radix(16).to_uppercase();
            assert!(hex.starts_with("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD1"));
            assert!(hex.ends_with(tail));
            let mut rng = rand::rng();
            assert!(is_probable_prime(&g.p, 10, &mut rng));
            assert!(is_probable_prime(&g.q, 10, &mut rng));
            assert_eq!(g.g.jacobi(&g.p), 1);
        }
    }

    #[test]
    fn roundtrip_mul_and_errors() {
        let sk = key();
        let pk = sk.public_key();
        let g = pk.group();
        let mut rng = rand::rng();
        let a = pk
            .encrypt_value(&Integer::from(6u32), &mut rng)
            .expect("ok");
        let b = pk
            .encrypt_value(&Integer::from(7u32), &mut rng)
            .expect("ok");
        assert_eq!(sk.decrypt_value(&pk.mul(&a, &b)).expect("ok"), 42);
        let q = g.q().clone();
        let c = pk.encrypt_value(&q, &mut rng).expect("ok");
        assert_eq!(sk.decrypt_value(&c).expect("ok"), q);
        assert!(pk.encrypt_value(&Integer::new(), &mut rng).is_err());
        assert!(pk.encrypt_value(&(&q + 1u32), &mut rng).is_err());
        // A non-residue is refused by encrypt and by decrypt.
        let nr = g.p() - 1u32;
        assert!(pk.encrypt(&nr, &mut rng).is_err());
        let bad = Ciphertext {
            c1: nr.clone(),
            c2: a.c2.clone(),
        };
        assert!(sk.decrypt(&bad).is_err());
        let bad = Ciphertext {
            c1: Integer::new(),
            c2: a.c2.clone(),
        };
        assert!(sk.decrypt(&bad).is_err());
        let r = pk.rerandomize(&a, &mut rng).expect("ok");
        assert_ne!(r, a);
        assert_eq!(sk.decrypt_value(&r).expect("ok"), 6);
        let m3 = g.encode(&Integer::from(3u32)).expect("ok");
        assert_eq!(
            sk.decrypt_value(&pk.mul_plain(&a, &m3).expect("ok"))
                .expect("ok"),
            18
        );
    }

    #[test]
    fn serde_and_batch() {
        let sk = key();
        let s = serde_json::to_string(sk).expect("ser");
        let sk2: SecretKey = serde_json::from_str(&s).expect("de");
        assert_eq!(sk2.public_key(), sk.public_key());
        let pk: PublicKey =
            serde_json::from_str(&serde_json::to_string(sk.public_key()).expect("ser"))
                .expect("de");
        let vs: Vec<Integer> = (1..20u32).map(Integer::from).collect();
        let cs = pk.encrypt_value_batch(&vs).expect("ok");
        let sq = pk.mul_batch(&cs, &cs).expect("ok");
        let js = serde_json::to_string(&sq).expect("ser");
        let sq: Vec<Ciphertext> = serde_json::from_str(&js).expect("de");
        let want: Vec<Integer> = vs.iter().map(|v| v * v).collect();
        assert_eq!(sk2.decrypt_value_batch(&sq).expect("ok"), want);
        let enc: Vec<Integer> = vs
            .iter()
            .map(|v| pk.group().encode(v).expect("ok"))
            .collect();
        let cubes = pk
            .mul_plain_batch(&pk.rerandomize_batch(&sq).expect("ok"), &enc)
            .expect("ok");
        let want: Vec<Integer> = vs.iter().map(|v| (v * v) * v).collect();
        assert_eq!(sk2.decrypt_value_batch(&cubes).expect("ok"), want);
        assert!(serde_json::from_str::<PublicKey>(r#"{"group":"Modp2048","y":"1"}"#).is_err());
        assert!(!format!("{sk:?}").contains(&sk.x.to_string_radix(16)));
    }

    /// A deserialised secret key may have any `x` in `[1, q)`, not only the 320-bit ones that
    /// `generate` draws: its public key used to be `g^(x mod 2^320)` (the fixed-base table
    /// ignores higher bits), so nothing encrypted to it decrypted.
    #[test]
    fn long_secret_exponent_from_serde_round_trips() {
        let g = Group::get(GroupId::Modp2048);
        let mut rng = rand::rng();
        for x in [
            (Integer::from(1u32) << 400) + 12345u32,
            g.q() - 1u32,
            (Integer::from(1u32) << 320) - 1u32,
            Integer::from(1u32) << 320,
        ] {
            let json = format!(r#"{{"group":"Modp2048","x":"{x:x}"}}"#);
            let sk: SecretKey = serde_json::from_str(&json).expect("x in [1, q)");
            let want = g.g().pow_mod(&x, g.p()).expect("p > 0");
            assert_eq!(sk.public_key().y(), &want);
            let c = sk
                .public_key()
                .encrypt_value(&Integer::from(6u32), &mut rng)
                .expect("ok");
            assert_eq!(sk.decrypt_value(&c), Ok(Integer::from(6u32)));
        }
    }

    /// Decryption raises to `x` over a length fixed by the key's format, not over the actual
    /// length of `x`: it used to run over `max(320, |x|)` bits, so the number of squarings
    /// (and the time) revealed the length of an imported `x` above 320 bits.
    #[test]
    fn decryption_exponent_length_does_not_follow_x() {
        let g = Group::get(GroupId::Modp2048);
        let q_bits = g.q().significant_bits();
        let from_json = |x: &Integer| -> SecretKey {
            serde_json::from_str(&format!(r#"{{"group":"Modp2048","x":"{x:x}"}}"#)).expect("ok")
        };
        let one = Integer::from(1u32);
        // Short keys: a tiny x, a 300-bit x and a generated one share the 320-bit length.
        for x in [Integer::from(3u32), (&one << 299) + 1u32, key().x.clone()] {
            assert_eq!(from_json(&x).decrypt_exp_bits(), 320);
        }
        // Full-size keys: every x above 2^320 runs over |q| bits, whatever its own length.
        for x in [
            &one << 320,
            (&one << 330) + 7u32,
            (&one << 1500) + 1u32,
            g.q() - 1u32,
        ] {
            assert_eq!(
                from_json(&x).decrypt_exp_bits(),
                q_bits,
                "{}",
                x.significant_bits()
            );
        }
        // And decryption stays right in both formats.
        let mut rng = rand::rng();
        for x in [Integer::from(3u32), (&one << 330) + 7u32, g.q() - 1u32] {
            let sk = from_json(&x);
            let c = sk
                .public_key()
                .encrypt_value(&Integer::from(77u32), &mut rng)
                .expect("ok");
            assert_eq!(sk.decrypt_value(&c), Ok(Integer::from(77u32)));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        #[test]
        fn prop_multiplicative(a in 1u64..1 << 40, b in 1u64..1 << 40) {
            let sk = key();
            let pk = sk.public_key();
            let mut rng = rand::rng();
            let ca = pk.encrypt_value(&Integer::from(a), &mut rng).expect("ok");
            let cb = pk.encrypt_value(&Integer::from(b), &mut rng).expect("ok");
            prop_assert_eq!(sk.decrypt_value(&pk.mul(&ca, &cb)).expect("ok"), Integer::from(a) * b);
        }
    }
}
