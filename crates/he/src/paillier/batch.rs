//! Batch versions of every Paillier operation, parallel on the current rayon pool. Each
//! worker thread draws its randomness from its own thread-local CSPRNG. Results keep the
//! order of the inputs; when inputs fail, the error returned is that of the first failing
//! input by index, deterministically, and no partial results are returned (`crate::par`).

use crate::bigint::Integer;
use crate::par::{try_map, try_map_init};
use rayon::prelude::*;

use super::{Ciphertext, EncodedNumber, EncryptedNumber, PublicKey, SecretKey};
use crate::error::{Error, Result};

fn same_len(a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::Decoding("batch operands differ in length"))
    }
}

/// `f(a[i], b[i])` for every `i`, in parallel; [`Error::Decoding`] if the lengths differ, else
/// the first error of `f` by index.
fn pairwise<A: Sync, B: Sync, T: Send>(
    a: &[A],
    b: &[B],
    f: impl Fn(&A, &B) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    same_len(a.len(), b.len())?;
    try_map(a.len(), |i| f(&a[i], &b[i]))
}

impl PublicKey {
    /// [`Self::encrypt`] on every plaintext, in parallel.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] if any plaintext is out of range.
    pub fn encrypt_batch(&self, ms: &[Integer]) -> Result<Vec<Ciphertext>> {
        self.precompute();
        try_map_init(ms.len(), rand::rng, |rng, i| {
            self.encrypt_with_rng(&ms[i], rng)
        })
    }

    /// [`Self::encrypt_i64`] on every value, in parallel.
    ///
    /// # Errors
    /// As [`Self::encrypt_i64`].
    pub fn encrypt_i64_batch(&self, vs: &[i64]) -> Result<Vec<Ciphertext>> {
        self.precompute();
        try_map_init(vs.len(), rand::rng, |rng, i| {
            self.encrypt_with_rng(&self.encode_signed(&Integer::from(vs[i]))?, rng)
        })
    }

    /// Element-wise [`Self::add`].
    ///
    /// # Errors
    /// [`Error::Decoding`] when the slices differ in length.
    pub fn add_batch(&self, a: &[Ciphertext], b: &[Ciphertext]) -> Result<Vec<Ciphertext>> {
        same_len(a.len(), b.len())?;
        Ok(a.par_iter().zip(b).map(|(x, y)| self.add(x, y)).collect())
    }

    /// Element-wise [`Self::sub`].
    ///
    /// # Errors
    /// [`Error::Decoding`] on a length mismatch, or the first error (by input index) of
    /// [`Self::sub`].
    pub fn sub_batch(&self, a: &[Ciphertext], b: &[Ciphertext]) -> Result<Vec<Ciphertext>> {
        pairwise(a, b, |x, y| self.sub(x, y))
    }

    /// Element-wise [`Self::neg`].
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::neg`].
    pub fn neg_batch(&self, a: &[Ciphertext]) -> Result<Vec<Ciphertext>> {
        try_map(a.len(), |i| self.neg(&a[i]))
    }

    /// Element-wise [`Self::add_plain`].
    ///
    /// # Errors
    /// [`Error::Decoding`] on a length mismatch, or the first error (by input index) of
    /// [`Self::add_plain`].
    pub fn add_plain_batch(&self, a: &[Ciphertext], k: &[Integer]) -> Result<Vec<Ciphertext>> {
        pairwise(a, k, |x, k| self.add_plain(x, k))
    }

    /// Element-wise [`Self::mul_plain`].
    ///
    /// # Errors
    /// [`Error::Decoding`] on a length mismatch, or the first error (by input index) of
    /// [`Self::mul_plain`].
    pub fn mul_plain_batch(&self, a: &[Ciphertext], k: &[Integer]) -> Result<Vec<Ciphertext>> {
        pairwise(a, k, |x, k| self.mul_plain(x, k))
    }

    /// Element-wise [`Self::rerandomize`].
    #[must_use]
    pub fn rerandomize_batch(&self, a: &[Ciphertext]) -> Vec<Ciphertext> {
        self.precompute();
        a.par_iter()
            .map_init(rand::rng, |rng, x| self.rerandomize_with_rng(x, rng))
            .collect()
    }

    /// Element-wise [`Self::validate`].
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::validate`].
    pub fn validate_batch(&self, a: &[Ciphertext]) -> Result<()> {
        try_map(a.len(), |i| self.validate(&a[i])).map(drop)
    }

    /// The homomorphic sum of all ciphertexts (a parallel product tree); `E(0)` with `r = 0`
    /// (that is, `1`) for an empty slice.
    #[must_use]
    pub fn sum(&self, a: &[Ciphertext]) -> Ciphertext {
        a.par_iter().cloned().reduce(
            || Ciphertext {
                c: Integer::from(1u32),
            },
            |x, y| self.add(&x, &y),
        )
    }
}

impl PublicKey {
    /// [`Self::encrypt_f64`] on every value, in parallel.
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::encrypt_f64`].
    pub fn encrypt_f64_batch(&self, xs: &[f64]) -> Result<Vec<EncryptedNumber>> {
        self.precompute();
        try_map(xs.len(), |i| self.encrypt_f64(xs[i]))
    }

    /// Element-wise [`Self::add_encrypted`].
    ///
    /// # Errors
    /// [`Error::Decoding`] on a length mismatch, or the first error (by input index) of
    /// [`Self::add_encrypted`].
    pub fn add_encrypted_batch(
        &self,
        a: &[EncryptedNumber],
        b: &[EncryptedNumber],
    ) -> Result<Vec<EncryptedNumber>> {
        pairwise(a, b, |x, y| self.add_encrypted(x, y))
    }

    /// Element-wise [`Self::sub_encrypted`].
    ///
    /// # Errors
    /// [`Error::Decoding`] on a length mismatch, or the first error (by input index) of
    /// [`Self::sub_encrypted`].
    pub fn sub_encrypted_batch(
        &self,
        a: &[EncryptedNumber],
        b: &[EncryptedNumber],
    ) -> Result<Vec<EncryptedNumber>> {
        pairwise(a, b, |x, y| self.sub_encrypted(x, y))
    }

    /// Element-wise [`Self::add_encoded`].
    ///
    /// # Errors
    /// [`Error::Decoding`] on a length mismatch, or the first error (by input index) of
    /// [`Self::add_encoded`].
    pub fn add_encoded_batch(
        &self,
        a: &[EncryptedNumber],
        x: &[EncodedNumber],
    ) -> Result<Vec<EncryptedNumber>> {
        pairwise(a, x, |c, x| self.add_encoded(c, x))
    }

    /// Element-wise [`Self::mul_encoded`].
    ///
    /// # Errors
    /// [`Error::Decoding`] on a length mismatch, or the first error (by input index) of
    /// [`Self::mul_encoded`].
    pub fn mul_encoded_batch(
        &self,
        a: &[EncryptedNumber],
        x: &[EncodedNumber],
    ) -> Result<Vec<EncryptedNumber>> {
        pairwise(a, x, |c, x| self.mul_encoded(c, x))
    }
}

impl SecretKey {
    /// [`Self::decrypt_f64`] on every encrypted number, in parallel.
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::decrypt_f64`].
    pub fn decrypt_f64_batch(&self, cs: &[EncryptedNumber]) -> Result<Vec<f64>> {
        try_map(cs.len(), |i| self.decrypt_f64(&cs[i]))
    }

    /// [`Self::encrypt`] on every plaintext, in parallel.
    ///
    /// # Errors
    /// [`Error::PlaintextOutOfRange`] if any plaintext is out of range.
    pub fn encrypt_batch(&self, ms: &[Integer]) -> Result<Vec<Ciphertext>> {
        self.precompute();
        try_map_init(ms.len(), rand::rng, |rng, i| {
            self.encrypt_with_rng(&ms[i], rng)
        })
    }

    /// [`Self::decrypt`] on every ciphertext, in parallel.
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::decrypt`].
    pub fn decrypt_batch(&self, cs: &[Ciphertext]) -> Result<Vec<Integer>> {
        try_map(cs.len(), |i| self.decrypt(&cs[i]))
    }

    /// [`Self::decrypt_i64`] on every ciphertext, in parallel.
    ///
    /// # Errors
    /// The first error (by input index) of [`Self::decrypt_i64`].
    pub fn decrypt_i64_batch(&self, cs: &[Ciphertext]) -> Result<Vec<i64>> {
        try_map(cs.len(), |i| self.decrypt_i64(&cs[i]))
    }
}
