//! What binds a client's cache to the server's set: the segment sizes and a keyed digest of
//! the items, in the order the offline phase and the appends streamed them.

use zeroize::Zeroizing;

use crate::error::{Error, Result};

use super::items::ItemList;
use super::key::ServerKey;

const DIGEST_KEY_DOMAIN: &str = "obliv-psi unbalanced v1 set digest key";
const CHAIN_DOMAIN: &str = "obliv-psi unbalanced v1 set digest chain";
const SET_MAGIC: &[u8; 8] = b"OBUBSET1";

/// The server's set as the client's cache knows it: the sizes of the offline set and of each
/// append, and a digest of their items.
///
/// The digest is keyed by a key derived from the server's OPRF key, so it says nothing about
/// the items to anyone without that key: the client, who stores it in its
/// [`Cache`](super::Cache), learns only whether the set an online phase runs on is the one the cache
/// was built from. Each segment `[offset, offset + n)` has the digest
/// `d = BLAKE3_keyed(K, offset ‖ n ‖ (len(item) ‖ item)…)` (lengths and sizes as u64 LE, so
/// the encoding is injective); the set's digest chains them, `D_0 = d_0` and
/// `D_i = BLAKE3_derive(D_{i−1} ‖ d_i)`, so an append extends it without the earlier items.
///
/// An online phase sends the digest of the [`ServerSet`] it is given, and the client refuses
/// (before sending anything) if it is not its cache's: compute it with [`ServerSet::new`] and
/// [`ServerSet::append`] from the items the online phase's result will be mapped back to, so
/// that a set that changed since the offline phase (same size or not) fails the phase rather
/// than selecting the wrong items. [`ServerSet::to_bytes`] lets a server keep it instead of
/// hashing its set before every online phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSet {
    segments: Vec<u64>,
    digest: [u8; 32],
}

impl ServerSet {
    /// The set of `items` under `key`: one segment, as [`offline_server`](super::offline_server)
    /// streams it.
    pub fn new<L: ItemList + ?Sized>(key: &ServerKey, items: &L) -> Self {
        ServerSet {
            segments: vec![items.len() as u64],
            digest: segment_digest(key, 0, items),
        }
    }

    /// The set after `added` is appended to it, as
    /// [`offline_append_server`](super::offline_append_server) streams the items.
    pub fn append<L: ItemList + ?Sized>(&self, key: &ServerKey, added: &L) -> Self {
        let d = segment_digest(key, self.len(), added);
        self.extended(added.len() as u64, &d)
    }

    /// The set after a segment of `n` items with digest `segment` is appended.
    pub(crate) fn extended(&self, n: u64, segment: &[u8; 32]) -> Self {
        let mut segments = self.segments.clone();
        segments.push(n);
        ServerSet {
            segments,
            digest: chain(&self.digest, segment),
        }
    }

    /// Items in the set (all segments).
    pub fn len(&self) -> u64 {
        self.segments.iter().sum()
    }

    /// Whether the set has no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sizes of the offline set and of each append, in order.
    pub fn segments(&self) -> &[u64] {
        &self.segments
    }

    pub(crate) fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// The set's sizes and digest as bytes: `"OBUBSET1"`, the segment count and each segment
    /// size (u64 LE), the digest.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + 8 * self.segments.len() + 32);
        out.extend_from_slice(SET_MAGIC);
        out.extend_from_slice(&(self.segments.len() as u64).to_le_bytes());
        for s in &self.segments {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend_from_slice(&self.digest);
        out
    }

    /// Reads bytes written by [`ServerSet::to_bytes`].
    ///
    /// # Errors
    /// [`Error::Cache`] if they are not a server set.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = || Error::Cache("not an obliv unbalanced-PSI server set".into());
        let rest = bytes.strip_prefix(SET_MAGIC).ok_or_else(bad)?;
        let (count, rest) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
        let count = usize::try_from(u64::from_le_bytes(*count)).map_err(|_| bad())?;
        let expected = count
            .checked_mul(8)
            .and_then(|n| n.checked_add(32))
            .ok_or_else(bad)?;
        if count == 0 || rest.len() != expected {
            return Err(bad());
        }
        let (sizes, digest) = rest.split_at(8 * count);
        let segments: Vec<u64> = sizes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        segments
            .iter()
            .try_fold(0u64, |a, &s| a.checked_add(s))
            .ok_or_else(bad)?;
        Ok(ServerSet {
            segments,
            digest: digest.try_into().map_err(|_| bad())?,
        })
    }
}

/// The keyed digest of one segment of the server's set (see [`ServerSet`]).
pub(crate) fn segment_digest<L: ItemList + ?Sized>(
    key: &ServerKey,
    offset: u64,
    items: &L,
) -> [u8; 32] {
    let k = Zeroizing::new(blake3::derive_key(
        DIGEST_KEY_DOMAIN,
        key.secret.expose_secret_bytes(),
    ));
    let mut h = blake3::Hasher::new_keyed(&k);
    h.update(&offset.to_le_bytes());
    h.update(&(items.len() as u64).to_le_bytes());
    for i in 0..items.len() {
        let item = items.item(i);
        h.update(&(item.len() as u64).to_le_bytes());
        h.update(item);
    }
    *h.finalize().as_bytes()
}

/// The digest of a set after a segment with digest `segment` is appended to a set with digest
/// `earlier` (the client computes it too, from the digests it is sent).
pub(crate) fn chain(earlier: &[u8; 32], segment: &[u8; 32]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key(CHAIN_DOMAIN);
    h.update(earlier);
    h.update(segment);
    *h.finalize().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_ec::Curve;
    use rand::SeedableRng;

    fn key(seed: u8) -> ServerKey {
        ServerKey::generate(Curve::FourQ, &mut AesRng::from_seed([seed; 16])).unwrap()
    }

    /// A count whose byte length overflows (found by the `unbalanced_files` fuzz target: it
    /// panicked in an overflow-checked build and wrapped to a short length without checks).
    #[test]
    fn a_count_that_overflows_the_length_is_refused() {
        for count in [(1u64 << 61) - 1, u64::MAX / 8, u64::MAX] {
            let mut b = SET_MAGIC.to_vec();
            b.extend_from_slice(&count.to_le_bytes());
            for tail in [0usize, 24, 32, 40] {
                let mut r = b.clone();
                r.resize(b.len() + tail, 0);
                assert!(
                    ServerSet::from_bytes(&r).is_err(),
                    "count {count}, {tail} bytes"
                );
            }
        }
    }

    #[test]
    fn digest_changes_with_any_item_the_order_the_split_and_the_key() {
        let k = key(1);
        let items: Vec<Vec<u8>> = (0..50u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let base = ServerSet::new(&k, &items);
        assert_eq!(base, ServerSet::new(&k, &items));
        assert_eq!(base.len(), 50);
        let mut edited = items.clone();
        edited[17][0] ^= 1;
        assert_ne!(base.digest(), ServerSet::new(&k, &edited).digest());
        let mut swapped = items.clone();
        swapped.swap(3, 4);
        assert_ne!(base.digest(), ServerSet::new(&k, &swapped).digest());
        // Moving a byte from one item to the next keeps the concatenation, not the digest.
        let mut moved = items.clone();
        let b = moved[5].pop().unwrap();
        moved[6].insert(0, b);
        assert_ne!(base.digest(), ServerSet::new(&k, &moved).digest());
        assert_ne!(base.digest(), ServerSet::new(&key(2), &items).digest());
        let split = ServerSet::new(&k, &items[..20]).append(&k, &items[20..]);
        assert_eq!(split.segments(), &[20, 30]);
        assert_ne!(base.digest(), split.digest());
        assert_eq!(
            split,
            ServerSet::new(&k, &items[..20]).append(&k, &items[20..])
        );
    }

    #[test]
    fn bytes_round_trip_and_garbage_is_refused() {
        let k = key(3);
        let set = ServerSet::new(&k, &[b"a".as_slice(), b"b"]).append(&k, &[b"c"]);
        let bytes = set.to_bytes();
        assert_eq!(ServerSet::from_bytes(&bytes).unwrap(), set);
        for cut in 0..bytes.len() {
            assert!(ServerSet::from_bytes(&bytes[..cut]).is_err(), "cut {cut}");
        }
        let mut huge = bytes.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(ServerSet::from_bytes(&huge).is_err());
    }
}
