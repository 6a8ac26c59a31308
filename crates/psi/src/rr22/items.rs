//! Items to OKVS keys and values, the output hash, and the receiver's OKVS encoding with
//! retries.
//!
//! Every item maps to a 128-bit key `k`: injectively for items of up to 15 bytes, by BLAKE3
//! keyed with a key derived from [`DOMAIN_ITEM`] for longer ones, and as it is for a
//! [`HashedItem`](crate::HashedItem) (the caller's own random-oracle key). Its OKVS value is
//! `h(k) = π(k) ⊕ k` (fixed-key AES).

use obliv_core::Block;
use obliv_core::aes::Aes;
use obliv_okvs::{DenseKind, DenseValue, Okvs};
use rand_core::CryptoRng;
use rayon::prelude::*;

use super::{MAX_ATTEMPTS, okvs_err};
use crate::error::{Error, Result};
use crate::item::PsiItem;

/// The domain of the items' keys.
pub(super) const DOMAIN_ITEM: &str = "obliv-psi rr22 v1 item to key";

/// The 128-bit key of an item: items of at most 15 bytes are encoded injectively (the bytes,
/// zero padding, and the length in the last byte, as volePSI feeds 16-byte items to its OKVS
/// and hashes directly); longer items are hashed with BLAKE3 keyed by `key` (a random
/// oracle), with the last byte set to `0xff` so that the two kinds never collide. A
/// collision between long items needs a 120-bit BLAKE3 collision.
///
/// The definition, one item at a time; the protocol runs the batched `item_keys_into`, tested
/// equal to it.
#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // a length below 16
pub(super) fn item_key(key: &[u8; 32], item: &[u8]) -> Block {
    let mut b = [0u8; 16];
    if item.len() < 16 {
        b[..item.len()].copy_from_slice(item);
        b[15] = item.len() as u8;
    } else {
        b.copy_from_slice(&blake3::keyed_hash(key, item).as_bytes()[..16]);
        b[15] = 0xff;
    }
    Block::from_bytes(b)
}

/// The 128-bit key of every item (the encoding of `item_key`: items under 16 bytes injectively
/// with their length in the last byte, longer ones by BLAKE3 keyed by the domain's key with
/// the last byte set to `0xff`), the long ones hashed sixteen at a time in SIMD lanes
/// (`hasher` is BLAKE3 keyed by the same key; equal outputs).
/// Writes them into `out` (`out.len() == items.len()`).
pub(super) fn item_keys_into<T: PsiItem>(
    hasher: &mut obliv_core::hash::RoHasher,
    items: &[T],
    out: &mut [Block],
) {
    let long: Vec<&[u8]> = items
        .iter()
        .map(PsiItem::item_bytes)
        .filter(|it| it.len() >= 16)
        .collect();
    let mut hashed = hasher.hash_blocks(&long).into_iter();
    for (o, it) in out.iter_mut().zip(items) {
        *o = {
            let it = it.item_bytes();
            let mut b = [0u8; 16];
            if it.len() < 16 {
                b[..it.len()].copy_from_slice(it);
                #[allow(clippy::cast_possible_truncation)] // a length below 16
                {
                    b[15] = it.len() as u8;
                }
            } else {
                // One hash per long item, in order: `hashed` has exactly that many.
                b = hashed.next().map_or([0u8; 16], Block::to_bytes);
                b[15] = 0xff;
            }
            Block::from_bytes(b)
        };
    }
}

/// The key of a [`HashedItem`](crate::HashedItem): its 16 bytes as they are.
fn hashed_key(bytes: &[u8]) -> Block {
    let mut b = [0u8; 16];
    let n = bytes.len().min(16);
    b[..n].copy_from_slice(&bytes[..n]);
    Block::from_bytes(b)
}

/// Keys `k = item_key(item)` (or, for items the caller hashed already,
/// [`PsiItem::PRE_HASHED`], the item's 128-bit key as it is) and values `h(k) = π(k) ⊕ k`,
/// in parallel, each written once into a zeroed allocation ([`Block::zeroed_vec`]).
pub(super) fn keys_and_values<T: PsiItem + Sync>(items: &[T]) -> (Vec<Block>, Vec<Block>) {
    let mut keys = Block::zeroed_vec(items.len());
    if T::PRE_HASHED {
        keys.par_chunks_mut(4096)
            .zip(items.par_chunks(4096))
            .for_each(|(out, chunk)| {
                for (o, it) in out.iter_mut().zip(chunk) {
                    *o = hashed_key(it.item_bytes());
                }
            });
    } else {
        // BLAKE3 keyed by the derived key of the domain string: the same random oracle
        // family as `obliv_core::hash::ro_hash`, with the key derivation done once instead
        // of per item.
        let key = blake3::derive_key(DOMAIN_ITEM, &[]);
        keys.par_chunks_mut(4096)
            .zip(items.par_chunks(4096))
            .for_each_init(
                || obliv_core::hash::RoHasher::keyed(&key),
                |h, (out, chunk)| item_keys_into(h, chunk, out),
            );
    }
    let mut values = Block::zeroed_vec(items.len());
    values
        .par_chunks_mut(1024)
        .zip(keys.par_chunks(1024))
        .for_each(|(v, k)| {
            v.copy_from_slice(k);
            obliv_core::hash::cr_in_place(v);
        });
    (keys, values)
}

/// `z[i] ← H_out(k[i], z[i]) = π(π(z) ⊕ k) ⊕ π(z)`, the tweakable circular-correlation-robust
/// hash of [GKWW20] (fixed-key AES) with the item key as tweak, in parallel batches.
/// (volePSI's semi-honest mode uses the untweaked `π(z) ⊕ z`; both are modelled as random
/// oracles in the RR22 proof.)
///
/// [GKWW20]: https://eprint.iacr.org/2019/074
pub(super) fn out_hash(keys: &[Block], z: &mut [Block]) {
    z.par_chunks_mut(1024)
        .zip(keys.par_chunks(1024))
        .for_each(|(z, k)| {
            let aes = Aes::fixed();
            aes.encrypt_blocks(z);
            let mut t: Vec<Block> = z.iter().zip(k).map(|(&p, &k)| p ^ k).collect();
            aes.encrypt_blocks(&mut t);
            for (z, t) in z.iter_mut().zip(&t) {
                *z ^= *t;
            }
        });
}

/// Solves `out = Encode({keys[i] ↦ values[i]})` with the OKVS `make(seed)` for a fresh random
/// seed, retrying on the `2^-λ` failures; returns the seed and the OKVS. If the first
/// failure may come from repeated keys, the keys are deduplicated (values recomputed by
/// `values_of`) and encoding retried.
pub(super) fn encode_with_retry<D, O, V, R>(
    make: impl Fn(Block) -> Result<O>,
    keys: &[Block],
    values: &[V],
    values_of: impl Fn(&[Block]) -> Vec<V>,
    out: &mut [V],
    rng: &mut R,
) -> Result<(Block, O)>
where
    D: DenseKind,
    O: Okvs<D>,
    V: DenseValue<D>,
    R: CryptoRng + ?Sized,
{
    let mut deduped: Option<(Vec<Block>, Vec<V>)> = None;
    let mut last = None;
    for _ in 0..MAX_ATTEMPTS {
        let s = Block::random(rng);
        let o = make(s)?;
        let (k, v) = deduped
            .as_ref()
            .map_or((keys, values), |(k, v)| (&k[..], &v[..]));
        match o.encode_into(k, v, out) {
            Ok(()) => return Ok((s, o)),
            // Repeated keys make the system singular (or are reported as such): on the first
            // failure, drop repeats (rare failures of distinct keys just retry).
            Err(e)
                if deduped.is_none()
                    && (e.is_retryable()
                        || matches!(e, obliv_okvs::Error::DuplicateKey { .. })) =>
            {
                let mut uk = keys.to_vec();
                uk.par_sort_unstable();
                uk.dedup();
                let uv = values_of(&uk);
                deduped = Some((uk, uv));
                last = Some(e);
            }
            Err(e) if e.is_retryable() => last = Some(e),
            Err(e) => return Err(okvs_err(e)),
        }
    }
    // Every attempt failed with a retryable error (probability `2^-λ` each).
    Err(Error::Okvs(last.unwrap_or(
        obliv_okvs::Error::SolveFailed { gap: 0, rank: 0 },
    )))
}
