//! What the protocols accept as items: any bytes, or keys the caller has hashed already.
//!
//! Every protocol maps each item to a key of its own domain (RR22: a 128-bit OKVS key;
//! ECDH: a curve point; KKRT: a 128-bit block) by a random-oracle hash. A caller that has
//! hashed its items to 128-bit keys already (the `obliv` CLI hashes every CSV key once, to
//! pick its bucket) hands them over as [`HashedItem`]s, and RR22 then uses each key as its
//! OKVS key directly instead of hashing it a second time. ECDH, ECDH3, KKRT and unbalanced
//! PSI hash a [`HashedItem`]'s 16 bytes as they hash any item: their results and messages
//! are those of the same 16 bytes passed as a byte string.
//!
//! # The caller's obligation
//!
//! A [`HashedItem`] must be the output of a collision-resistant, domain-separated hash of
//! the original item that both parties compute the same way (for instance the first 16
//! bytes of BLAKE3 `derive_key` with a context string of the application): distinct
//! original items with equal keys are matched as one, and two parties whose keys come from
//! different hashes find nothing in common. The protocol cannot check either.
//!
//! One run's items are all of one type, so a run never mixes hashed and unhashed items; an
//! RR22 session whose peer passes the other kind stops at the run's handshake with
//! [`Error::HandshakeMismatch`](crate::Error::HandshakeMismatch) on the field `options`
//! (the keys would not match).

use obliv_core::Block;

mod sealed {
    /// The item types: byte strings and [`super::HashedItem`].
    pub trait Sealed {}
    impl<T: AsRef<[u8]> + ?Sized> Sealed for T {}
    impl Sealed for super::HashedItem {}
}

/// An item of a PSI run: anything `AsRef<[u8]>` (the protocol hashes it), or a
/// [`HashedItem`] (a 128-bit key the caller derived already; see the
/// [module documentation](self)). Sealed: those are the two kinds.
pub trait PsiItem: sealed::Sealed {
    /// Whether items of this type are 128-bit keys hashed by the caller ([`HashedItem`]).
    /// A property of the type, so one run never mixes the two kinds.
    const PRE_HASHED: bool = false;

    /// The item's bytes, as the protocols that hash every item see them (the key's 16
    /// bytes for a [`HashedItem`]).
    fn item_bytes(&self) -> &[u8];
}

impl<T: AsRef<[u8]> + ?Sized> PsiItem for T {
    fn item_bytes(&self) -> &[u8] {
        self.as_ref()
    }
}

/// An item that is already a 128-bit random-oracle key: the caller hashed the original item
/// with a collision-resistant, domain-separated hash that the peer computes the same way
/// (see the [module documentation](self)). RR22 uses the key as its OKVS key as it is; the
/// other protocols hash its 16 bytes like any item.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct HashedItem(pub [u8; 16]);

impl HashedItem {
    /// The key `b` (its 16 little-endian bytes, [`Block::to_bytes`]).
    pub fn from_block(b: Block) -> Self {
        HashedItem(b.to_bytes())
    }

    /// The key as a block ([`Block::from_bytes`] of its 16 bytes).
    pub fn to_block(self) -> Block {
        Block::from_bytes(self.0)
    }
}

impl From<[u8; 16]> for HashedItem {
    fn from(bytes: [u8; 16]) -> Self {
        HashedItem(bytes)
    }
}

impl From<Block> for HashedItem {
    fn from(b: Block) -> Self {
        HashedItem::from_block(b)
    }
}

impl core::fmt::Debug for HashedItem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "HashedItem(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

impl PsiItem for HashedItem {
    const PRE_HASHED: bool = true;

    fn item_bytes(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_bytes() {
        let h = HashedItem::from_block(Block(0x0102));
        assert_eq!(h.to_block(), Block(0x0102));
        assert_eq!(h.item_bytes(), &Block(0x0102).to_bytes()[..]);
        const {
            assert!(HashedItem::PRE_HASHED);
            assert!(!<Vec<u8>>::PRE_HASHED);
            assert!(!<&[u8]>::PRE_HASHED);
        }
        assert_eq!(b"abc".item_bytes(), b"abc");
        assert_eq!(HashedItem::from([7; 16]).0, [7; 16]);
    }
}
