//! Hashes built from the fixed-key permutation π, and a random-oracle hash.
//!
//! The fixed-key constructions follow Guo, Katz, Wang and Yu, "Efficient and Secure
//! Multiparty Computation from Fixed-Key Block Ciphers" (IEEE S&P 2020, ePrint 2019/074),
//! [GKWW20, §7], with π = AES-128 under the public [`FIXED_KEY`](crate::aes::FIXED_KEY):
//!
//! | hash | definition | security | used by |
//! |---|---|---|---|
//! | [`cr`] | `π(x) ⊕ x` | correlation robust | hashing OT extension rows when Δ is not reused across calls |
//! | [`ccr`] | `π(σ(x)) ⊕ σ(x)`, `σ(xL‖xR) = (xL⊕xR)‖xL` | circular correlation robust | free-XOR style correlations `x`, `x ⊕ Δ` |
//! | [`tccr`] | `π(π(x) ⊕ i) ⊕ π(x)` | tweakable circular correlation robust | OT extension / KKRT outputs, tweak = OT index |
//!
//! (`xL` is the high 64 bits of `x`, `xR` the low 64 bits.) Each has a batch form that
//! keeps the AES pipeline full; batch forms are the ones protocols should call.
//!
//! [`ro_hash`] is a random-oracle hash (BLAKE3 in key-derivation mode, so every use carries
//! a domain-separation string) for places that need a full random oracle: hashing to seeds,
//! coin tossing, and final PSI comparisons.

use crate::aes::Aes;
use crate::backend::blake3x16 as b3;
use crate::block::Block;

/// Blocks per AES call in the batch hashes (8 KiB: enough to keep VAES pipelines full, small
/// enough to stay in L1 with its copy).
const HASH_CHUNK: usize = 512;

/// The orthomorphism σ(xL‖xR) = (xL ⊕ xR)‖xL of [GKWW20, §7.3].
#[inline]
pub fn sigma(x: Block) -> Block {
    let (lo, hi) = x.to_u64s();
    Block::from_u64s(hi, hi ^ lo)
}

/// Correlation-robust hash `π(x) ⊕ x`.
#[inline]
pub fn cr(x: Block) -> Block {
    Aes::fixed().encrypt_block(x) ^ x
}

/// Circular-correlation-robust hash `π(σ(x)) ⊕ σ(x)`.
#[inline]
pub fn ccr(x: Block) -> Block {
    let s = sigma(x);
    Aes::fixed().encrypt_block(s) ^ s
}

/// Tweakable circular-correlation-robust hash `π(π(x) ⊕ i) ⊕ π(x)`.
#[inline]
pub fn tccr(tweak: Block, x: Block) -> Block {
    let aes = Aes::fixed();
    let px = aes.encrypt_block(x);
    aes.encrypt_block(px ^ tweak) ^ px
}

/// [`cr`] on every block of `xs`, in place.
pub fn cr_in_place(xs: &mut [Block]) {
    let mut buf = [Block::ZERO; HASH_CHUNK];
    for chunk in xs.chunks_mut(HASH_CHUNK) {
        let b = &mut buf[..chunk.len()];
        b.copy_from_slice(chunk);
        Aes::fixed().encrypt_blocks(b);
        Block::xor_slices_in_place(chunk, b);
    }
}

/// [`ccr`] on every block of `xs`, in place.
pub fn ccr_in_place(xs: &mut [Block]) {
    let mut buf = [Block::ZERO; HASH_CHUNK];
    for chunk in xs.chunks_mut(HASH_CHUNK) {
        let b = &mut buf[..chunk.len()];
        for (x, bi) in chunk.iter_mut().zip(b.iter_mut()) {
            *x = sigma(*x);
            *bi = *x;
        }
        Aes::fixed().encrypt_blocks(b);
        Block::xor_slices_in_place(chunk, b);
    }
}

/// [`tccr`] on every block of `xs`, in place, with tweak `first_tweak + i` for block `i`
/// (the usual choice: the tweak is the global OT index).
pub fn tccr_in_place(first_tweak: u128, xs: &mut [Block]) {
    let aes = Aes::fixed();
    let mut buf = [Block::ZERO; HASH_CHUNK];
    for (c, chunk) in xs.chunks_mut(HASH_CHUNK).enumerate() {
        let base = first_tweak.wrapping_add((c * HASH_CHUNK) as u128);
        aes.encrypt_blocks(chunk); // chunk = π(x)
        let b = &mut buf[..chunk.len()];
        for (i, (bi, px)) in b.iter_mut().zip(chunk.iter()).enumerate() {
            *bi = *px ^ Block(base.wrapping_add(i as u128));
        }
        aes.encrypt_blocks(b); // b = π(π(x) ⊕ i)
        Block::xor_slices_in_place(chunk, b);
    }
}

/// A random-oracle hash of `input` under the domain-separation string `domain`, 32 bytes.
///
/// BLAKE3 in key-derivation mode: `domain` should be a hard-coded, globally unique,
/// application-specific string (e.g. `"obliv-psi rr22 v1 coin toss"`).
pub fn ro_hash(domain: &str, input: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key(domain);
    h.update(input);
    *h.finalize().as_bytes()
}

/// A random-oracle hash with arbitrary-length output (BLAKE3 XOF), domain-separated.
pub fn ro_hash_xof(domain: &str, input: &[u8], out: &mut [u8]) {
    let mut h = blake3::Hasher::new_derive_key(domain);
    h.update(input);
    h.finalize_xof().fill(out);
}

/// A random-oracle hash to one block (the first 16 bytes of [`ro_hash`]).
pub fn ro_hash_block(domain: &str, input: &[u8]) -> Block {
    let h = ro_hash(domain, input);
    let mut b = [0u8; 16];
    b.copy_from_slice(&h[..16]);
    Block::from_bytes(b)
}

/// [`ro_hash`] and [`ro_hash_block`] for many inputs under one domain (or BLAKE3's keyed
/// hash under one key), without setting up the domain again for every input.
///
/// [`RoHasher::new`] runs BLAKE3's key derivation for the domain once; each call then hashes
/// one input, so the outputs equal `ro_hash(domain, input)` exactly. Inputs of at most 64
/// bytes (one BLAKE3 block) take a direct single-block path, and
/// [`hash_blocks`](Self::hash_blocks) hashes sixteen of them at a time in SIMD lanes: in one
/// pass of sixteen AVX-512 lanes where the CPU has AVX-512F/BW, else in two passes of eight
/// AVX2 lanes where it has AVX2. Keep one per thread (for example with rayon's `map_init`).
///
/// `Debug` prints no key material (a [`RoHasher::keyed`] key may be secret), and the key is
/// wiped on drop: the key words of the single-block path and BLAKE3's own hasher state (the
/// `blake3` crate's `zeroize` feature).
#[derive(Clone)]
pub struct RoHasher {
    state: blake3::Hasher,
    /// Key words and mode flag of the single-block path.
    short: Option<([u32; 8], u32)>,
}

impl core::fmt::Debug for RoHasher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RoHasher")
            .field("single_block_path", &self.short.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for RoHasher {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.state);
        if let Some((key, _)) = &mut self.short {
            zeroize::Zeroize::zeroize(key);
        }
    }
}

/// Inputs up to this length are one BLAKE3 block.
const SHORT: usize = 64;

impl RoHasher {
    /// A hasher for `domain`: `ro_hash(domain, ·)`, BLAKE3 in key-derivation mode.
    #[allow(clippy::cast_possible_truncation)] // the domain is at most 64 bytes on that path
    pub fn new(domain: &str) -> Self {
        let short = (domain.len() <= SHORT).then(|| {
            let context_key = b3::compress(
                &b3::IV,
                &b3::block_words(domain.as_bytes()),
                domain.len() as u32,
                b3::DERIVE_KEY_CONTEXT | b3::CHUNK_START | b3::CHUNK_END | b3::ROOT,
            );
            (context_key, b3::DERIVE_KEY_MATERIAL)
        });
        Self {
            state: blake3::Hasher::new_derive_key(domain),
            short,
        }
    }

    /// A hasher for BLAKE3's keyed hash under `key`: `blake3::keyed_hash(key, ·)`.
    pub fn keyed(key: &[u8; 32]) -> Self {
        let mut words = [0u32; 8];
        for (w, c) in words.iter_mut().zip(key.chunks_exact(4)) {
            *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Self {
            state: blake3::Hasher::new_keyed(key),
            short: Some((words, b3::KEYED_HASH)),
        }
    }

    /// The hash of `input`: `ro_hash(domain, input)` (or the keyed hash).
    pub fn hash(&mut self, input: &[u8]) -> [u8; 32] {
        self.state.update(input);
        let out = *self.state.finalize().as_bytes();
        self.state.reset();
        out
    }

    /// The first 16 bytes of [`hash`](Self::hash), as a block: `ro_hash_block(domain, input)`.
    pub fn hash_block(&mut self, input: &[u8]) -> Block {
        if let Some((key, mode)) = &self.short
            && input.len() <= SHORT
        {
            return Block::from_bytes(b3::hash_short(key, *mode, input));
        }
        let h = self.hash(input);
        let mut b = [0u8; 16];
        b.copy_from_slice(&h[..16]);
        Block::from_bytes(b)
    }

    /// [`hash_block`](Self::hash_block) of every input, sixteen short inputs at a time in SIMD
    /// lanes (AVX-512, else AVX2, else one at a time).
    pub fn hash_blocks<T: AsRef<[u8]>>(&mut self, inputs: &[T]) -> Vec<Block> {
        let mut out = Vec::with_capacity(inputs.len());
        let Some((key, mode)) = self.short else {
            out.extend(inputs.iter().map(|t| self.hash_block(t.as_ref())));
            return out;
        };
        let mut groups = inputs.chunks_exact(16);
        for group in &mut groups {
            if group.iter().all(|t| t.as_ref().len() <= SHORT) {
                let msgs: [&[u8]; 16] = core::array::from_fn(|l| group[l].as_ref());
                out.extend(
                    b3::hash_short16(&key, mode, msgs)
                        .into_iter()
                        .map(Block::from_bytes),
                );
            } else {
                out.extend(group.iter().map(|t| self.hash_block(t.as_ref())));
            }
        }
        for t in groups.remainder() {
            out.push(self.hash_block(t.as_ref()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `RoHasher` derived `Debug`, which printed the key words of a keyed
    /// hasher (`{:?}` in a log line leaked the key).
    #[test]
    fn ro_hasher_debug_hides_the_key() {
        let shown = format!("{:?}", RoHasher::keyed(&[0xab; 32]));
        assert!(!shown.contains(&0xabab_abab_u32.to_string()), "{shown}");
        assert!(!shown.to_lowercase().contains("abab"), "{shown}");
        assert!(shown.starts_with("RoHasher"));
    }

    /// Regression: the `blake3::Hasher` inside a keyed `RoHasher` kept the key (its key words
    /// and chaining value) after the drop wiped the single-block path's copy.
    #[test]
    fn ro_hasher_drop_wipes_the_key() {
        let mut key = [0u8; 32];
        for (k, i) in key.iter_mut().zip(0u8..) {
            *k = 0x80 ^ i.wrapping_mul(37);
        }
        let mut h = RoHasher::keyed(&key);
        let _ = h.hash(b"an input longer than one block, so the blake3 hasher ran ......");
        let left = crate::test_util::bytes_after_drop(h);
        let found = left.windows(16).any(|w| w == &key[..16] || w == &key[16..]);
        assert!(!found, "key bytes left after drop");
    }

    #[test]
    fn ro_hasher_matches_one_shot_forms() {
        let mut h = RoHasher::new("obliv-core test domain");
        for msg in [&b""[..], b"a", b"hello world", &[7u8; 5000]] {
            assert_eq!(h.hash(msg), ro_hash("obliv-core test domain", msg));
            assert_eq!(
                h.hash_block(msg),
                ro_hash_block("obliv-core test domain", msg)
            );
        }
        assert_ne!(h.hash(b"a"), ro_hash("another domain", b"a"));
    }

    #[test]
    #[allow(clippy::cast_possible_truncation)] // test bytes
    fn ro_hasher_batches_match_one_shot_forms() {
        let msgs: Vec<Vec<u8>> = (0..100usize)
            .map(|i| (0..(i * 7) % 90).map(|j| (i + j) as u8).collect())
            .collect();
        let short: Vec<Vec<u8>> = msgs.iter().map(|m| m[..m.len().min(64)].to_vec()).collect();
        let key = [9u8; 32];
        for batch in [&msgs, &short] {
            let got = RoHasher::new("obliv-core test domain").hash_blocks(batch);
            let want: Vec<Block> = batch
                .iter()
                .map(|m| ro_hash_block("obliv-core test domain", m))
                .collect();
            assert_eq!(got, want);
            let got = RoHasher::keyed(&key).hash_blocks(batch);
            let want: Vec<Block> = batch
                .iter()
                .map(|m| {
                    let h = blake3::keyed_hash(&key, m);
                    Block::from_bytes(h.as_bytes()[..16].try_into().unwrap())
                })
                .collect();
            assert_eq!(got, want);
        }
        // A domain longer than one block takes the general path and still matches.
        let long = "d".repeat(100);
        assert_eq!(
            RoHasher::new(&long).hash_blocks(&short),
            short
                .iter()
                .map(|m| ro_hash_block(&long, m))
                .collect::<Vec<_>>()
        );
    }
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn batch_forms_match_single(xs in proptest::collection::vec(any::<u128>(), 0..300), t in any::<u64>()) {
            let xs: Vec<Block> = xs.into_iter().map(Block).collect();
            let mut a = xs.clone();
            cr_in_place(&mut a);
            prop_assert_eq!(a, xs.iter().map(|&x| cr(x)).collect::<Vec<_>>());
            let mut b = xs.clone();
            ccr_in_place(&mut b);
            prop_assert_eq!(b, xs.iter().map(|&x| ccr(x)).collect::<Vec<_>>());
            let mut c = xs.clone();
            tccr_in_place(u128::from(t), &mut c);
            let expect: Vec<Block> = xs.iter().enumerate().map(|(i, &x)| tccr(Block(u128::from(t) + i as u128), x)).collect();
            prop_assert_eq!(c, expect);
        }

        #[test]
        fn sigma_is_an_orthomorphism(x in any::<u128>(), y in any::<u128>()) {
            // σ is linear, and both σ and σ(x) ⊕ x are permutations (σ(x) = x only at 0).
            let (x, y) = (Block(x), Block(y));
            prop_assert_eq!(sigma(x ^ y), sigma(x) ^ sigma(y));
            prop_assert_eq!(sigma(x) ^ x == Block::ZERO, x == Block::ZERO);
            prop_assert_eq!(sigma(x) == Block::ZERO, x == Block::ZERO);
        }
    }

    #[test]
    fn definitions_hold() {
        let x = Block(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);
        let pi = Aes::fixed();
        assert_eq!(cr(x), pi.encrypt_block(x) ^ x);
        assert_eq!(sigma(Block::from_u64s(1, 2)), Block::from_u64s(2, 3));
        assert_eq!(
            tccr(Block(5), x),
            pi.encrypt_block(pi.encrypt_block(x) ^ Block(5)) ^ pi.encrypt_block(x)
        );
        assert_ne!(tccr(Block(5), x), tccr(Block(6), x));
    }

    #[test]
    fn ro_hash_is_domain_separated() {
        assert_ne!(ro_hash("a", b"x"), ro_hash("b", b"x"));
        assert_eq!(ro_hash("a", b"x"), ro_hash("a", b"x"));
        let mut long = [0u8; 100];
        ro_hash_xof("a", b"x", &mut long);
        assert_eq!(&long[..32], &ro_hash("a", b"x"));
        assert_eq!(
            ro_hash_block("a", b"x").to_bytes(),
            ro_hash("a", b"x")[..16]
        );
    }
}
