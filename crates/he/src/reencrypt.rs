//! The re-encryption emulation of the HE study: additive work under Paillier, multiplicative
//! work under ElGamal, and a **trusted re-encryption agent** that holds both secret keys and
//! converts a ciphertext from one scheme to the other (decrypt, encode, encrypt).
//!
//! This is the study's emulation, not a secure two-scheme protocol: the agent sees every
//! converted value in the clear and must be trusted by all parties (in a deployment it would
//! be a proxy re-encryption scheme, an HSM or an MPC committee). What it demonstrates is the
//! data flow and cost of mixing the additive and the multiplicative homomorphism:
//!
//! * `(a + b)·(c + d)`: Paillier `E(a)·E(b) = E(a+b)`, `E(c)·E(d) = E(c+d)`; the agent
//!   converts both sums to ElGamal, ElGamal multiplies, the agent converts back.
//! * simple linear regression `y ≈ β₀ + β₁·x` over `n` encrypted points: `Σx`, `Σy` by Paillier
//!   addition; `x²`, `x·y` by conversion and ElGamal multiplication; then
//!   `num = n·Σxy − Σx·Σy` and `den = n·Σx² − (Σx)²` under Paillier (the product `Σx·Σy` again
//!   through ElGamal), and only `num`, `den`, `Σx`, `Σy` are decrypted: `β₁ = num/den`,
//!   `β₀ = (Σy − β₁·Σx)/n`.
//!
//! Multiplicative ElGamal carries positive integers (`1 ≤ v ≤ q`, see
//! [`crate::elgamal::modp`]): a group has no element that absorbs like zero, so every value
//! converted to ElGamal must be positive (a zero or negative factor is refused with
//! [`Error::PlaintextOutOfRange`] rather than silently mis-multiplied), and a product must stay
//! below `q` (≈ 2^2047 for the 2048-bit group). Batches of
//! conversions run on rayon; [`Agent::split`] gives a second agent over the same keys so two
//! agents can serve in parallel.

use crate::bigint::Integer;
use rand_core::CryptoRng;
use rayon::prelude::*;

use crate::elgamal::modp;
use crate::error::{Error, Result};
use crate::paillier;
use crate::par::try_map_init;

/// The message of the [`Error::Overflow`] for a product that exceeds the ElGamal group order.
const PRODUCT_OVERFLOW: &str = "product exceeds the ElGamal group order q";

/// The trusted agent: both secret keys.
#[derive(Debug, Clone)]
pub struct Agent {
    paillier: paillier::SecretKey,
    elgamal: modp::SecretKey,
}

/// Public side: the two public keys that data owners and the evaluator use.
#[derive(Debug, Clone)]
pub struct PublicKeys {
    /// Paillier public key.
    pub paillier: paillier::PublicKey,
    /// Multiplicative ElGamal public key.
    pub elgamal: modp::PublicKey,
}

impl Agent {
    /// An agent with the given keys.
    #[must_use]
    pub fn new(paillier: paillier::SecretKey, elgamal: modp::SecretKey) -> Self {
        Self { paillier, elgamal }
    }

    /// A second agent over the same keys (for two agents working in parallel).
    #[must_use]
    pub fn split(&self) -> Self {
        self.clone()
    }

    /// The public keys.
    #[must_use]
    pub fn public_keys(&self) -> PublicKeys {
        PublicKeys {
            paillier: self.paillier.public_key().clone(),
            elgamal: self.elgamal.public_key().clone(),
        }
    }

    /// Paillier → ElGamal: decrypts a positive value `v` (signed decoding) and encrypts it
    /// under ElGamal.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] for a value that is not in `[1, q]`; errors of the
    /// decryption.
    pub fn to_elgamal<R: CryptoRng + ?Sized>(
        &self,
        c: &paillier::Ciphertext,
        rng: &mut R,
    ) -> Result<modp::Ciphertext> {
        Ok(self.to_elgamal_with_value(c, rng)?.0)
    }

    /// [`Self::to_elgamal`], also returning the converted value (for the pipeline's checks
    /// that products of converted values stay below `q`; the agent sees the value anyway).
    fn to_elgamal_with_value<R: CryptoRng + ?Sized>(
        &self,
        c: &paillier::Ciphertext,
        rng: &mut R,
    ) -> Result<(modp::Ciphertext, Integer)> {
        let v = self
            .paillier
            .public_key()
            .decode_signed(&self.paillier.decrypt(c)?)?;
        let pk = self.elgamal.public_key();
        let q = pk.group().q();
        if v < 1u32 || v > *q {
            return Err(Error::PlaintextOutOfRange);
        }
        let c = pk.encrypt_value(&v, rng)?;
        Ok((c, v))
    }

    /// [`Error::Overflow`] unless `a·b ≤ q`: beyond it the ElGamal product wraps modulo `p`
    /// and converts back to a wrong value (or by chance to an overflow error).
    fn check_product(&self, a: &Integer, b: &Integer) -> Result<()> {
        if a * b > *self.elgamal.public_key().group().q() {
            return Err(Error::Overflow(PRODUCT_OVERFLOW));
        }
        Ok(())
    }

    /// ElGamal → Paillier: decrypts, decodes to `[1, q]` and encrypts under Paillier.
    ///
    /// # Errors
    /// [`Error::Overflow`] when the decoded value exceeds the Paillier signed range; errors of
    /// the decryption.
    pub fn to_paillier<R: CryptoRng + ?Sized>(
        &self,
        c: &modp::Ciphertext,
        rng: &mut R,
    ) -> Result<paillier::Ciphertext> {
        let g = self.elgamal.public_key().group();
        let m = self.elgamal.decrypt(c)?;
        let v = g.decode(&m)?;
        let pk = self.paillier.public_key();
        pk.encrypt_with_rng(&pk.encode_signed(&v)?, rng)
    }

    /// [`Self::to_elgamal`] on a batch, in parallel.
    ///
    /// # Errors
    /// The first error by input index.
    pub fn to_elgamal_batch(&self, cs: &[paillier::Ciphertext]) -> Result<Vec<modp::Ciphertext>> {
        try_map_init(cs.len(), rand::rng, |rng, i| self.to_elgamal(&cs[i], rng))
    }

    /// [`Self::to_paillier`] on a batch, in parallel.
    ///
    /// # Errors
    /// The first error by input index.
    pub fn to_paillier_batch(&self, cs: &[modp::Ciphertext]) -> Result<Vec<paillier::Ciphertext>> {
        try_map_init(cs.len(), rand::rng, |rng, i| self.to_paillier(&cs[i], rng))
    }

    /// Decrypts a Paillier result as a signed integer (the data owner's final step).
    ///
    /// # Errors
    /// Errors of the decryption and decoding.
    pub fn reveal(&self, c: &paillier::Ciphertext) -> Result<Integer> {
        self.paillier
            .public_key()
            .decode_signed(&self.paillier.decrypt(c)?)
    }
}

/// `E((a + b)·(c + d))` under Paillier from Paillier encryptions of `a, b, c, d ≥ 0`, through
/// one conversion each way per factor.
///
/// # Errors
/// Errors of the conversions (e.g. a negative sum).
pub fn product_of_sums(
    pk: &PublicKeys,
    agent: &Agent,
    a: &paillier::Ciphertext,
    b: &paillier::Ciphertext,
    c: &paillier::Ciphertext,
    d: &paillier::Ciphertext,
) -> Result<paillier::Ciphertext> {
    let ab = pk.paillier.add(a, b);
    let cd = pk.paillier.add(c, d);
    let mut rng = rand::rng();
    let (e_ab, v_ab) = agent.to_elgamal_with_value(&ab, &mut rng)?;
    let (e_cd, v_cd) = agent.to_elgamal_with_value(&cd, &mut rng)?;
    agent.check_product(&v_ab, &v_cd)?;
    agent.to_paillier(&pk.elgamal.mul(&e_ab, &e_cd), &mut rng)
}

/// The encrypted sufficient statistics and coefficients of a simple linear regression.
#[derive(Debug, Clone)]
pub struct EncryptedRegression {
    /// `E(n·Σxy − Σx·Σy)`.
    pub numerator: paillier::Ciphertext,
    /// `E(n·Σx² − (Σx)²)`.
    pub denominator: paillier::Ciphertext,
    /// `E(Σx)`.
    pub sum_x: paillier::Ciphertext,
    /// `E(Σy)`.
    pub sum_y: paillier::Ciphertext,
    /// The number of points (public).
    pub n: usize,
}

/// Fits `y ≈ β₀ + β₁·x` on Paillier-encrypted non-negative points, with the agents converting
/// for every product; `agents` (one or more) share the conversions of a batch round-robin, in
/// parallel.
///
/// # Errors
/// [`Error::Decoding`] for mismatched or empty inputs or no agent; errors of the conversions.
pub fn linear_regression(
    pk: &PublicKeys,
    agents: &[Agent],
    xs: &[paillier::Ciphertext],
    ys: &[paillier::Ciphertext],
) -> Result<EncryptedRegression> {
    if xs.len() != ys.len() || xs.is_empty() || agents.is_empty() {
        return Err(Error::Decoding(
            "need equal, non-empty x and y, and an agent",
        ));
    }
    let n = xs.len();
    let pp = &pk.paillier;
    // Convert every x and y once, spreading the work over the agents.
    let conv = |cs: &[paillier::Ciphertext]| -> Result<Vec<(modp::Ciphertext, Integer)>> {
        try_map_init(cs.len(), rand::rng, |rng, i| {
            agents[i % agents.len()].to_elgamal_with_value(&cs[i], rng)
        })
    };
    let (ex, vx): (Vec<_>, Vec<_>) = conv(xs)?.into_iter().unzip();
    let (ey, vy): (Vec<_>, Vec<_>) = conv(ys)?.into_iter().unzip();
    // x² and x·y go through ElGamal: each must stay below q.
    for (x, y) in vx.iter().zip(&vy) {
        agents[0].check_product(x, x)?;
        agents[0].check_product(x, y)?;
    }
    let xx: Vec<modp::Ciphertext> = ex.par_iter().map(|a| pk.elgamal.mul(a, a)).collect();
    let xy = pk.elgamal.mul_batch(&ex, &ey)?;
    let back = |cs: &[modp::Ciphertext]| -> Result<Vec<paillier::Ciphertext>> {
        try_map_init(cs.len(), rand::rng, |rng, i| {
            agents[i % agents.len()].to_paillier(&cs[i], rng)
        })
    };
    let sum_xx = pp.sum(&back(&xx)?);
    let sum_xy = pp.sum(&back(&xy)?);
    let sum_x = pp.sum(xs);
    let sum_y = pp.sum(ys);
    let nn = Integer::from(n);
    // Σx·Σy and (Σx)² need one more multiplication each, through the agent.
    let mut rng = rand::rng();
    let a0 = &agents[0];
    let (e_sx, v_sx) = a0.to_elgamal_with_value(&sum_x, &mut rng)?;
    let (e_sy, v_sy) = a0.to_elgamal_with_value(&sum_y, &mut rng)?;
    a0.check_product(&v_sx, &v_sy)?;
    a0.check_product(&v_sx, &v_sx)?;
    let sx_sy = a0.to_paillier(&pk.elgamal.mul(&e_sx, &e_sy), &mut rng)?;
    let sx_sx = a0.to_paillier(&pk.elgamal.mul(&e_sx, &e_sx), &mut rng)?;
    let numerator = pp.sub(&pp.mul_plain(&sum_xy, &nn)?, &sx_sy)?;
    let denominator = pp.sub(&pp.mul_plain(&sum_xx, &nn)?, &sx_sx)?;
    Ok(EncryptedRegression {
        numerator,
        denominator,
        sum_x,
        sum_y,
        n,
    })
}

impl EncryptedRegression {
    /// Decrypts the statistics and returns `(β₀, β₁)`.
    ///
    /// # Errors
    /// Decryption errors; [`Error::InvalidNumber`] when all `x` are equal (`den = 0`).
    pub fn reveal(&self, agent: &Agent) -> Result<(f64, f64)> {
        let num = agent.reveal(&self.numerator)?;
        let den = agent.reveal(&self.denominator)?;
        if den == 0u32 {
            return Err(Error::InvalidNumber("all x are equal"));
        }
        let sx = agent.reveal(&self.sum_x)?.to_f64();
        let sy = agent.reveal(&self.sum_y)?.to_f64();
        let b1 = num.to_f64() / den.to_f64();
        #[allow(clippy::cast_precision_loss)]
        let n = self.n as f64;
        Ok(((sy - b1 * sx) / n, b1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elgamal::modp::GroupId;
    use crate::paillier::tests::key2048;

    fn agent() -> Agent {
        Agent::new(
            key2048().secret.clone(),
            modp::SecretKey::generate(GroupId::Modp2048, &mut rand::rng()),
        )
    }

    #[test]
    fn product_of_sums_matches_plain() {
        let agent = agent();
        let pk = agent.public_keys();
        for (a, b, c, d) in [
            (3i64, 4, 5, 6),
            (0, 1, 7, 9),
            (1 << 40, 5, 1 << 30, 0),
            (1, 0, 0, 1),
        ] {
            let e = |v| pk.paillier.encrypt_i64(v).expect("ok");
            let r = product_of_sums(&pk, &agent, &e(a), &e(b), &e(c), &e(d)).expect("ok");
            let want = Integer::from(a + b) * Integer::from(c + d);
            assert_eq!(agent.reveal(&r).expect("ok"), want, "{a} {b} {c} {d}");
        }
        // A negative or zero sum cannot go through multiplicative ElGamal: an error.
        let neg = pk.paillier.encrypt_i64(-5).expect("ok");
        let one = pk.paillier.encrypt_i64(1).expect("ok");
        let zero = pk.paillier.encrypt_i64(0).expect("ok");
        assert_eq!(
            product_of_sums(&pk, &agent, &neg, &one, &one, &one).err(),
            Some(Error::PlaintextOutOfRange)
        );
        assert_eq!(
            product_of_sums(&pk, &agent, &zero, &zero, &one, &one).err(),
            Some(Error::PlaintextOutOfRange)
        );
    }

    /// A product of sums above the ElGamal group order q wrapped modulo p and came back as a
    /// wrong value (or, by chance, as a Paillier overflow): now a typed error, while products
    /// up to q still work.
    #[test]
    fn product_above_q_is_an_overflow_error() {
        let agent = agent();
        let pk = agent.public_keys();
        let e = |v: &Integer| pk.paillier.encrypt(v).expect("in range");
        let one = Integer::from(1u32);
        let zero = Integer::new();
        let big = &one << 1100;
        assert_eq!(
            product_of_sums(&pk, &agent, &e(&big), &e(&zero), &e(&big), &e(&zero)).err(),
            Some(Error::Overflow(PRODUCT_OVERFLOW))
        );
        let half = &one << 1000;
        let r = product_of_sums(&pk, &agent, &e(&half), &e(&zero), &e(&half), &e(&one))
            .expect("below q");
        assert_eq!(agent.reveal(&r), Ok(&half * &(&half + 1u32)));
        // The regression's x² of a 1100-bit x as well.
        let xs = [e(&big), e(&one)];
        let ys = [e(&one), e(&one)];
        assert_eq!(
            linear_regression(&pk, std::slice::from_ref(&agent), &xs, &ys).err(),
            Some(Error::Overflow(PRODUCT_OVERFLOW))
        );
    }

    #[test]
    fn linear_regression_matches_plain() {
        let a1 = agent();
        let a2 = a1.split();
        let pk = a1.public_keys();
        let xs: Vec<i64> = vec![1, 2, 3, 4, 5, 6, 7, 8];
        let ys: Vec<i64> = vec![3, 5, 8, 9, 11, 14, 15, 17]; // about 1 + 2x
        // Pre-encrypted inputs, as the data owners would send them.
        let ex = pk.paillier.encrypt_i64_batch(&xs).expect("ok");
        let ey = pk.paillier.encrypt_i64_batch(&ys).expect("ok");
        let reg = linear_regression(&pk, &[a1.clone(), a2], &ex, &ey).expect("ok");
        let (b0, b1) = reg.reveal(&a1).expect("ok");
        // Plain least squares.
        let n = 8.0;
        let sx: f64 = xs.iter().map(|&v| v as f64).sum();
        let sy: f64 = ys.iter().map(|&v| v as f64).sum();
        let sxx: f64 = xs.iter().map(|&v| (v * v) as f64).sum();
        let sxy: f64 = xs.iter().zip(&ys).map(|(&x, &y)| (x * y) as f64).sum();
        let want_b1 = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        let want_b0 = (sy - want_b1 * sx) / n;
        assert!((b1 - want_b1).abs() < 1e-12, "{b1} vs {want_b1}");
        assert!((b0 - want_b0).abs() < 1e-12, "{b0} vs {want_b0}");
        // Exact integer statistics too.
        // n·Σxy − Σx·Σy = 8·453 − 36·82.
        assert_eq!(a1.reveal(&reg.numerator).expect("ok"), 8 * 453 - 36 * 82);
        assert!(linear_regression(&pk, &[], &ex, &ey).is_err());
    }
}
