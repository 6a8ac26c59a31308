//! One prime-order group trait for ECDH-style protocols, with Curve25519 (the X25519-style
//! group [`X25519`], which [`Curve::Curve25519`] names, and [`Ristretto255`]), FourQ,
//! secp256k1, SM2 and P-256 behind it.
//!
//! ECDH-PSI (two- and three-party), the unbalanced ECDH-OPRF PSI and EC ElGamal all need the
//! same few operations from a group `G` of prime order `q`:
//!
//! * `H: {0,1}* → G`, a hash to the group that is indifferentiable from a random oracle
//!   (RFC 9380 `hash_to_curve`, or the RFC 9496 ristretto255 element derivation);
//! * `P ↦ [k]P` for a secret scalar `k ∈ Z_q^*`, and `[k]G` for the fixed generator;
//! * a fixed-length canonical encoding whose decoder rejects everything that is not a
//!   non-identity element of the prime-order group (wrong length, off-curve, non-canonical,
//!   outside the subgroup, identity);
//! * uniformly random non-zero scalars and scalar inversion (`[k^{-1}][k]P = P`, used to
//!   unblind OPRF outputs);
//! * a domain-separated hash of an element to 32 bytes for the final comparison round.
//!
//! [`PrimeGroup`] is that trait. Its batch forms ([`PrimeGroup::hash_and_mul_batch`],
//! [`PrimeGroup::mul_encoded_batch`]) run on rayon and return encodings ready to send; they
//! share one scalar across the whole batch (every ECDH-PSI round is one secret scalar times
//! many points) and amortise the per-point normalisation (one field inversion per chunk
//! instead of one per point, Montgomery's trick).
//!
//! | group | type | suite of `hash_to_point` | encoding |
//! |---|---|---|---|
//! | Curve25519 (u-coordinates; `25519`) | [`X25519`] | `curve25519_XMD:SHA-512_ELL2_RO_` (RFC 9380 §8.5), output `u` | 32 bytes, RFC 7748 u-coordinate (strict; mixed-order points projected, see [`X25519`]) |
//! | Curve25519 (`ristretto255`) | [`Ristretto255`] | `ristretto255_XMD:SHA-512_R255MAP_RO_` (RFC 9380 App. B, RFC 9496 §4.3.4) | 32 bytes (RFC 9496 §4.3.2) |
//! | secp256k1 | [`Secp256k1`] | `secp256k1_XMD:SHA-256_SSWU_RO_` (RFC 9380 §8.7) | 33 bytes, SEC1 compressed |
//! | P-256 | [`P256`] | `P256_XMD:SHA-256_SSWU_RO_` (RFC 9380 §8.2) | 33 bytes, SEC1 compressed |
//! | SM2 | [`Sm2`] | `SM2_XMD:SM3_SSWU_RO_` (defined here, see [`sm2`]) | 33 bytes, SEC1 compressed |
//! | FourQ | [`FourQ`] | `[392]·M(SHA-512(·))`, FourQlib's map (nonuniform; `obliv-fourq`) | 32 bytes |
//!
//! The runtime choice of curve (the CLI picks it by name) is [`Curve`] and [`DynGroup`].
//!
//! ```
//! use obliv_ec::{PrimeGroup, Ristretto255};
//! let mut rng = rand::rng();
//! let (a, b) = (Ristretto255::random_scalar(&mut rng), Ristretto255::random_scalar(&mut rng));
//! let items = [b"alice@example.com".as_slice(), b"bob@example.com".as_slice()];
//! // Party A sends H(x)^a, party B raises it to b; and the other way round.
//! let ha = Ristretto255::hash_and_mul_batch(&items, &a);
//! let hab = Ristretto255::mul_encoded_batch(&ha, &b).unwrap();
//! let hb = Ristretto255::hash_and_mul_batch(&items, &b);
//! let hba = Ristretto255::mul_encoded_batch(&hb, &a).unwrap();
//! assert_eq!(hab, hba);
//! ```
#![deny(unsafe_code)] // allowed only in `ifma25519`, `ifma_weierstrass` (AVX-512) and `wipe`, with SAFETY comments

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod cpu;
mod dynamic;
mod error;
mod fastmul;
mod fourq;
#[cfg(obliv_x86_simd)]
mod ifma25519;
#[cfg(obliv_x86_simd)]
mod ifma_weierstrass;
mod ristretto;
mod scalar25519;
#[cfg(all(test, obliv_x86_simd))]
mod scan_trace;
mod secret;
pub mod sm2;
mod sswu;
mod weierstrass;
#[cfg(obliv_x86_simd)]
mod wipe;
mod x25519;

pub use dynamic::{Curve, DynGroup, SecretKey};
pub use error::Error;
pub use fourq::FourQ;
pub use ristretto::Ristretto255;
pub use secret::SecretScalar;
pub use sm2::Sm2;
pub use weierstrass::{P256, Secp256k1};
pub use x25519::{X25519, X25519Point};

use core::fmt;
use rand_core::CryptoRng;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// Number of points one rayon task processes. Large enough that the batch normalisation
/// (one inversion per chunk) and the task overhead are amortised, small enough that two
/// cores share a batch of a few thousand points evenly.
pub const BATCH_CHUNK: usize = 256;

/// A fixed-length point encoding, `[u8; N]`.
pub trait Encoding:
    Copy + Send + Sync + AsRef<[u8]> + AsMut<[u8]> + Eq + fmt::Debug + 'static
{
    /// The all-zero encoding (a placeholder for output buffers; [`PrimeGroup::decode`]
    /// rejects it in every group).
    fn zeroed() -> Self;
}

impl<const N: usize> Encoding for [u8; N] {
    fn zeroed() -> Self {
        [0u8; N]
    }
}

/// A group of prime order `q` in which the ECDH-style protocols of this workspace run.
///
/// Implementations are zero-sized marker types ([`Ristretto255`], [`FourQ`], [`Secp256k1`],
/// [`P256`], [`Sm2`]). Scalars are [`SecretScalar`]s: never zero, zeroized on drop, printed as
/// `SecretScalar(..)`.
///
/// Security: [`mul`](Self::mul), [`mul_base`](Self::mul_base) and the batch forms are
/// constant time in the scalar (they are the backends' constant-time ladders / windowed
/// methods); [`hash_to_point`](Self::hash_to_point) is constant time in the message
/// content (RFC 9380 maps with no branch on the field element), its running time depends only
/// on the message length.
pub trait PrimeGroup: Copy + Send + Sync + fmt::Debug + 'static {
    /// Short name, as the CLI spells it (`"25519"`, `"secp256k1"`, `"p256"`, `"sm2"`).
    const NAME: &'static str;
    /// RFC 9380 suite identifier of [`hash_to_point`](Self::hash_to_point).
    const SUITE_ID: &'static str;
    /// The domain separation tag [`hash_to_point`](Self::hash_to_point) uses:
    /// `"obliv-ec-v1-" || SUITE_ID`.
    const DEFAULT_DST: &'static [u8];
    /// Length in bytes of [`Self::Encoded`].
    const ENCODED_LEN: usize;
    /// Length in bytes of a canonical scalar encoding.
    const SCALAR_LEN: usize = 32;
    /// Points per rayon task in the batch methods ([`hash_and_mul_batch`](Self::hash_and_mul_batch),
    /// [`mul_encoded_batch`](Self::mul_encoded_batch) and their `_into` forms), hence per
    /// [`hash_mul_and_encode_chunk`](Self::hash_mul_and_encode_chunk) and
    /// [`decode_mul_and_encode_chunk`](Self::decode_mul_and_encode_chunk) call:
    /// [`BATCH_CHUNK`] unless a group amortises more per chunk.
    const CHUNK: usize = BATCH_CHUNK;

    /// The scalar field element type of the backend (wrapped in [`SecretScalar`]).
    type ScalarInner: Clone + zeroize::Zeroize + Send + Sync;
    /// A group element (a backend point). Not secret as such, but the hash of a private
    /// item ([`hash_to_point`](Self::hash_to_point)) reveals the item to a dictionary search:
    /// the batch paths wipe their internal copies ([`zeroize::Zeroize`]) before freeing them.
    type Point: Copy + Send + Sync + PartialEq + fmt::Debug + zeroize::Zeroize;
    /// Its fixed-length canonical encoding.
    type Encoded: Encoding;

    /// RFC 9380 `hash_to_curve(msg)` with the domain separation tag `dst` (any non-empty
    /// string; tags over 255 bytes are hashed as RFC 9380 §5.3.3 says). [`FourQ`] has no
    /// RFC 9380 suite: it prefixes the message with the tag and its 16-bit length instead.
    ///
    /// # Errors
    /// [`Error::HashToCurve`] if `dst` is empty, or for [`FourQ`] longer than 65 535 bytes.
    fn hash_to_point_with_dst(msg: &[u8], dst: &[u8]) -> Result<Self::Point, Error>;

    /// `hash_to_curve(msg)` with [`DEFAULT_DST`](Self::DEFAULT_DST).
    fn hash_to_point(msg: &[u8]) -> Self::Point;

    /// The fixed generator `G`.
    fn generator() -> Self::Point;

    /// The identity element (which [`decode`](Self::decode) rejects).
    fn identity() -> Self::Point;

    /// `[k]P`, constant time in `k`.
    fn mul(point: &Self::Point, k: &SecretScalar<Self::ScalarInner>) -> Self::Point;

    /// `[k]G` for the fixed generator (precomputed tables where the backend has them).
    fn mul_base(k: &SecretScalar<Self::ScalarInner>) -> Self::Point;

    /// Canonical fixed-length encoding. The identity has an encoding too (all zeros for
    /// Ristretto255 and the SEC1 curves), which [`decode`](Self::decode) rejects; it is never
    /// produced by hashing or by multiplying a non-identity point by a non-zero scalar.
    fn encode(point: &Self::Point) -> Self::Encoded;

    /// Decode a canonical encoding of a non-identity element of the prime-order group.
    ///
    /// # Errors
    /// [`Error::WrongLength`], [`Error::InvalidPoint`] (off the curve, non-canonical, not in
    /// the prime-order subgroup) or [`Error::Identity`].
    fn decode(bytes: &[u8]) -> Result<Self::Point, Error>;

    /// A uniformly random non-zero scalar.
    fn random_scalar<R: CryptoRng + ?Sized>(rng: &mut R) -> SecretScalar<Self::ScalarInner>;

    /// `k^{-1} mod q` (constant time; `k` is never zero by construction).
    fn scalar_invert(k: &SecretScalar<Self::ScalarInner>) -> SecretScalar<Self::ScalarInner>;

    /// `a·b mod q`.
    fn scalar_mul(
        a: &SecretScalar<Self::ScalarInner>,
        b: &SecretScalar<Self::ScalarInner>,
    ) -> SecretScalar<Self::ScalarInner>;

    /// Canonical encoding of a scalar (little-endian for Ristretto255 as in RFC 9496,
    /// big-endian for the SEC1 curves), zeroized when dropped.
    fn scalar_to_bytes(k: &SecretScalar<Self::ScalarInner>) -> Zeroizing<Vec<u8>>;

    /// Decode a canonical, non-zero scalar.
    ///
    /// # Errors
    /// [`Error::WrongLength`] or [`Error::InvalidScalar`] (not reduced, or zero).
    fn scalar_from_bytes(bytes: &[u8]) -> Result<SecretScalar<Self::ScalarInner>, Error>;

    /// Multiply a chunk of points by one scalar and write their encodings.
    ///
    /// The default multiplies and encodes point by point; the implementations override it to
    /// share the normalisation of the whole chunk (one inversion, Montgomery's trick).
    ///
    /// # Panics
    /// If `out.len() != points.len()` (a caller bug; the batch methods of this crate always
    /// pass equal lengths).
    fn mul_and_encode_chunk(
        points: &[Self::Point],
        k: &SecretScalar<Self::ScalarInner>,
        out: &mut [Self::Encoded],
    ) {
        assert_out_len(points.len(), out.len());
        for (p, o) in points.iter().zip(out.iter_mut()) {
            *o = Self::encode(&Self::mul(p, k));
        }
    }

    /// Hash each item to the group ([`hash_to_point`](Self::hash_to_point)), multiply by `k`
    /// and write the encodings: the per-chunk step of
    /// [`hash_and_mul_batch`](Self::hash_and_mul_batch).
    ///
    /// The default hashes item by item and calls
    /// [`mul_and_encode_chunk`](Self::mul_and_encode_chunk), then wipes the hashed points (they
    /// reveal the items to a dictionary search); a group may fuse the two (for example run the
    /// map to the curve in SIMD lanes) as long as the output is identical.
    ///
    /// # Panics
    /// If `out.len() != items.len()` (a caller bug; the batch methods of this crate always
    /// pass equal lengths).
    fn hash_mul_and_encode_chunk<T: AsRef<[u8]>>(
        items: &[T],
        k: &SecretScalar<Self::ScalarInner>,
        out: &mut [Self::Encoded],
    ) {
        assert_out_len(items.len(), out.len());
        let pts: Zeroizing<Vec<Self::Point>> = Zeroizing::new(
            items
                .iter()
                .map(|x| Self::hash_to_point(x.as_ref()))
                .collect(),
        );
        Self::mul_and_encode_chunk(&pts, k, out);
    }

    /// Domain-separated hash of an element for the final comparison round:
    /// `SHA-256(len(tag) || tag || encode(P))` with `tag = "obliv-ec-v1-point-hash-" || NAME`.
    fn hash_point(point: &Self::Point) -> [u8; 32] {
        hash_encoded::<Self>(Self::encode(point).as_ref())
    }

    /// `[k]H(x)` for every item, encoded; in parallel on rayon, one scalar for the batch.
    fn hash_and_mul_batch<T: AsRef<[u8]> + Sync>(
        items: &[T],
        k: &SecretScalar<Self::ScalarInner>,
    ) -> Vec<Self::Encoded> {
        let mut out = vec![Self::Encoded::zeroed(); items.len()];
        hash_and_mul_into::<Self, T>(items, k, &mut out);
        out
    }

    /// [`hash_and_mul_batch`](Self::hash_and_mul_batch) into a caller buffer.
    ///
    /// # Errors
    /// [`Error::BufferLength`] if `out.len() != items.len()`.
    fn hash_and_mul_batch_into<T: AsRef<[u8]> + Sync>(
        items: &[T],
        k: &SecretScalar<Self::ScalarInner>,
        out: &mut [Self::Encoded],
    ) -> Result<(), Error> {
        if out.len() != items.len() {
            return Err(Error::BufferLength {
                expected: items.len(),
                got: out.len(),
            });
        }
        hash_and_mul_into::<Self, T>(items, k, out);
        Ok(())
    }

    /// Decode every encoding, multiply by `k` and re-encode; in parallel on rayon.
    ///
    /// # Errors
    /// [`Error::Batch`] naming the first invalid encoding and why it was rejected.
    fn mul_encoded_batch<E: AsRef<[u8]> + Sync>(
        points: &[E],
        k: &SecretScalar<Self::ScalarInner>,
    ) -> Result<Vec<Self::Encoded>, Error> {
        let mut out = vec![Self::Encoded::zeroed(); points.len()];
        Self::mul_encoded_batch_into(points, k, &mut out)?;
        Ok(out)
    }

    /// [`mul_encoded_batch`](Self::mul_encoded_batch) into a caller buffer.
    ///
    /// # Errors
    /// [`Error::BufferLength`] or [`Error::Batch`].
    fn mul_encoded_batch_into<E: AsRef<[u8]> + Sync>(
        points: &[E],
        k: &SecretScalar<Self::ScalarInner>,
        out: &mut [Self::Encoded],
    ) -> Result<(), Error> {
        if out.len() != points.len() {
            return Err(Error::BufferLength {
                expected: points.len(),
                got: out.len(),
            });
        }
        out.par_chunks_mut(Self::CHUNK)
            .zip(points.par_chunks(Self::CHUNK))
            .enumerate()
            .try_for_each(|(c, (o, enc))| {
                Self::decode_mul_and_encode_chunk(enc, c * Self::CHUNK, k, o)
            })
    }

    /// Decode a chunk of peer encodings, multiply each by `k` and write the encodings: the
    /// per-chunk step of [`mul_encoded_batch_into`](Self::mul_encoded_batch_into).
    ///
    /// The default decodes each encoding with [`decode`](Self::decode) (full validation) and
    /// calls [`mul_and_encode_chunk`](Self::mul_and_encode_chunk). A group may override it with
    /// a cheaper validation that gives the same output on every valid encoding (for example
    /// clearing the cofactor instead of a separate subgroup check, with `k` divided by the
    /// cofactor); it must still reject every encoding that [`decode`](Self::decode) rejects as
    /// off the curve, and document what it does with the rest.
    /// `first_index` is the position of `encodings[0]` in the whole batch, for error reports.
    ///
    /// # Errors
    /// [`Error::BufferLength`] if `out.len() != encodings.len()`; [`Error::Batch`] naming the
    /// first invalid encoding and why it was rejected.
    fn decode_mul_and_encode_chunk<E: AsRef<[u8]>>(
        encodings: &[E],
        first_index: usize,
        k: &SecretScalar<Self::ScalarInner>,
        out: &mut [Self::Encoded],
    ) -> Result<(), Error> {
        check_out_len(encodings.len(), out.len())?;
        let pts = encodings
            .iter()
            .enumerate()
            .map(|(i, e)| {
                Self::decode(e.as_ref()).map_err(|source| Error::Batch {
                    index: first_index + i,
                    source: Box::new(source),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Self::mul_and_encode_chunk(&pts, k, out);
        Ok(())
    }
}

/// The precondition of the infallible chunk methods ([`PrimeGroup::mul_and_encode_chunk`],
/// [`PrimeGroup::hash_mul_and_encode_chunk`]): one output per input. A mismatch is a caller
/// bug, and every implementation panics on it alike (rather than truncating, or writing
/// padding lanes past the input, depending on the backend).
#[track_caller]
pub(crate) fn assert_out_len(inputs: usize, out: usize) {
    assert!(
        inputs == out,
        "output buffer holds {out} elements, the input {inputs}"
    );
}

/// The precondition of [`PrimeGroup::decode_mul_and_encode_chunk`] and its reference paths,
/// as an error: one output per encoding.
pub(crate) fn check_out_len(inputs: usize, out: usize) -> Result<(), Error> {
    if inputs == out {
        Ok(())
    } else {
        Err(Error::BufferLength {
            expected: inputs,
            got: out,
        })
    }
}

fn hash_and_mul_into<G: PrimeGroup, T: AsRef<[u8]> + Sync>(
    items: &[T],
    k: &SecretScalar<G::ScalarInner>,
    out: &mut [G::Encoded],
) {
    out.par_chunks_mut(G::CHUNK)
        .zip(items.par_chunks(G::CHUNK))
        .for_each(|(o, it)| G::hash_mul_and_encode_chunk(it, k, o));
}

/// The comparison hash of an encoded element (see [`PrimeGroup::hash_point`]); the bytes are
/// hashed as given, without decoding.
pub fn hash_encoded<G: PrimeGroup>(encoded: &[u8]) -> [u8; 32] {
    const PREFIX: &[u8] = b"obliv-ec-v1-point-hash-";
    let mut h = Sha256::new();
    let tag_len = PREFIX.len() + G::NAME.len();
    // Tags are short compile-time strings: the length always fits in one byte.
    h.update([u8::try_from(tag_len).unwrap_or(u8::MAX)]);
    h.update(PREFIX);
    h.update(G::NAME.as_bytes());
    h.update(encoded);
    h.finalize().into()
}
