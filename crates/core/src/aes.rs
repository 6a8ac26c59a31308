//! Fixed-key and keyed AES-128 on [`Block`]s, the PRG built on it, and a `rand_core` RNG.
//!
//! AES comes from the RustCrypto `aes` crate, which picks AES-NI, VAES-256 or VAES-512 at run
//! time (and a constant-time bitsliced software fallback elsewhere). Every function here works
//! on whole slices so the backend can keep 8–32 blocks in flight per call.

use aes::Aes128;
use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
use rand_core::{SeedableRng, TryCryptoRng, TryRng};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::block::Block;

/// The public key of the fixed-key permutation π used by the hashes in [`crate::hash`]
/// (the first 16 bytes of the fractional part of π, as in many MPC libraries' fixed keys;
/// any public constant does, the point is that it is fixed and known to everybody).
pub const FIXED_KEY: Block = Block::from_bytes([
    0x24, 0x3f, 0x6a, 0x88, 0x85, 0xa3, 0x08, 0xd3, 0x13, 0x19, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x44,
]);

/// Number of blocks handled per AES call in the streaming helpers.
const CHUNK: usize = 256;

/// AES-128 with an expanded key, applied to blocks in place or out of place.
///
/// The expanded key schedule is wiped when the value drops (the `aes` crate's `zeroize`
/// feature, on in this workspace; the test `drop_wipes_the_key_schedule` checks it).
///
/// Used both as a keyed PRF/PRP (GGM trees, the PRG) and, with [`FIXED_KEY`], as the public
/// random permutation π of fixed-key-AES hashing (GKWW20, <https://eprint.iacr.org/2019/074>).
#[derive(Clone)]
pub struct Aes {
    cipher: Aes128,
}

impl Aes {
    /// Expands `key`.
    pub fn new(key: Block) -> Self {
        let mut key_bytes = Array::from(key.to_bytes());
        let aes = Aes {
            cipher: Aes128::new(&key_bytes),
        };
        // The key's copy on the stack is wiped (the schedule inside `cipher` on drop).
        key_bytes.as_mut_slice().zeroize();
        aes
    }

    /// The fixed-key permutation π (AES under [`FIXED_KEY`]).
    pub fn fixed() -> &'static Aes {
        static FIXED: std::sync::OnceLock<Aes> = std::sync::OnceLock::new();
        FIXED.get_or_init(|| Aes::new(FIXED_KEY))
    }

    /// Encrypts one block.
    #[inline]
    pub fn encrypt_block(&self, block: Block) -> Block {
        let mut b = Array::from(block.to_bytes());
        self.cipher.encrypt_block(&mut b);
        Block::from_bytes(b.into())
    }

    /// Encrypts every block of `blocks` in place.
    #[inline]
    pub fn encrypt_blocks(&self, blocks: &mut [Block]) {
        let bytes = Block::slice_as_bytes_mut(blocks);
        let (arrays, rest) = Array::slice_as_chunks_mut(bytes);
        debug_assert!(rest.is_empty());
        self.cipher.encrypt_blocks(arrays);
    }

    /// Writes `AES(input[i])` into `output[i]`.
    ///
    /// # Panics
    /// Panics if the slices differ in length (a caller bug).
    #[inline]
    pub fn encrypt_blocks_into(&self, input: &[Block], output: &mut [Block]) {
        output.copy_from_slice(input);
        self.encrypt_blocks(output);
    }
}

impl core::fmt::Debug for Aes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Aes(..)")
    }
}

/// Davies–Meyer compression under many keys: `out[i] = AES-128_{keys[i]}(msgs[i]) ⊕ msgs[i]`,
/// bit-identical to `Aes::new(keys[i]).encrypt_block(msgs[i]) ^ msgs[i]`.
///
/// Each block has its own key, so the cost is the AES-128 key schedule. On x86-64 with AES-NI
/// (detected at run time) eight keys are expanded side by side, each round key consumed at once
/// by its block's encryption (no schedule is stored), which hides the latency of the
/// `aeskeygenassist` chain; elsewhere RustCrypto's constant-time AES runs one key at a time.
/// Used as the Davies–Meyer output hash `AES_u(v) ⊕ v` of malicious RR22 (ePrint 2022/320 §4,
/// as in volePSI's malicious mode).
///
/// # Panics
/// Panics if the three slices differ in length (a caller bug).
pub fn davies_meyer_many(keys: &[Block], msgs: &[Block], out: &mut [Block]) {
    assert!(
        keys.len() == msgs.len() && msgs.len() == out.len(),
        "davies_meyer_many: slices of different lengths"
    );
    crate::backend::aes_dm::davies_meyer_many(keys, msgs, out);
}

/// A pseudorandom generator: AES-128 in counter mode under a secret seed.
///
/// Output block `i` is `AES_seed(i)` for a 128-bit counter `i` starting at 0 (or at the
/// counter given to [`Prg::with_counter`]). Secure as long as AES is a PRP; the seed, the
/// counter and the expanded key schedule are zeroized on drop.
pub struct Prg {
    aes: Aes,
    seed: Block,
    counter: u128,
}

impl Prg {
    /// A PRG whose output is determined by `seed`.
    pub fn new(seed: Block) -> Self {
        Prg {
            aes: Aes::new(seed),
            seed,
            counter: 0,
        }
    }

    /// A PRG started at block `counter` of the stream of `seed` (for random access, e.g.
    /// handing disjoint ranges of one stream to several threads).
    pub fn with_counter(seed: Block, counter: u128) -> Self {
        Prg {
            aes: Aes::new(seed),
            seed,
            counter,
        }
    }

    /// The counter of the next block this PRG will output.
    pub fn counter(&self) -> u128 {
        self.counter
    }

    /// Fills `out` with the next `out.len()` blocks of the stream.
    pub fn fill_blocks(&mut self, out: &mut [Block]) {
        for (i, b) in out.iter_mut().enumerate() {
            *b = Block(self.counter.wrapping_add(i as u128));
        }
        self.counter = self.counter.wrapping_add(out.len() as u128);
        self.aes.encrypt_blocks(out);
    }

    /// The next block of the stream.
    pub fn next_block(&mut self) -> Block {
        let b = self.aes.encrypt_block(Block(self.counter));
        self.counter = self.counter.wrapping_add(1);
        b
    }

    /// A vector of the next `n` blocks.
    pub fn blocks(&mut self, n: usize) -> Vec<Block> {
        let mut v = vec![Block::ZERO; n];
        self.fill_blocks(&mut v);
        v
    }

    /// Fills `out` with the next `ceil(out.len() / 16)` blocks of the stream, as bytes (a
    /// trailing partial block is truncated and the whole block is consumed).
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        let mut buf = [Block::ZERO; CHUNK];
        for chunk in out.chunks_mut(CHUNK * 16) {
            let nblocks = chunk.len().div_ceil(16);
            self.fill_blocks(&mut buf[..nblocks]);
            chunk.copy_from_slice(&Block::slice_as_bytes(&buf[..nblocks])[..chunk.len()]);
        }
        buf.zeroize();
    }
}

impl Drop for Prg {
    /// Wipes the seed and the counter; the `aes` field's own drop, which runs next, wipes the
    /// expanded key schedule (the `aes` crate's `zeroize` feature).
    fn drop(&mut self) {
        self.seed.zeroize();
        self.counter.zeroize();
    }
}

impl ZeroizeOnDrop for Prg {}

impl core::fmt::Debug for Prg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Prg(..)")
    }
}

/// Blocks buffered by [`AesRng`] between refills.
const RNG_BUFFER: usize = 64;

/// A cryptographically secure `rand_core` RNG on top of [`Prg`], buffering 1 KiB of output.
///
/// Buffered bytes are wiped as they are handed out, so values drawn earlier (keys, Δ, seeds)
/// do not stay in the RNG's memory for its lifetime.
///
/// Seed it with [`AesRng::from_seed`] (16 bytes) for reproducible streams, or with
/// [`AesRng::from_entropy`] for a fresh key from the operating system.
pub struct AesRng {
    prg: Prg,
    buffer: [Block; RNG_BUFFER],
    /// Next unread byte of `buffer` (`RNG_BUFFER * 16` means empty).
    pos: usize,
}

impl AesRng {
    /// An RNG seeded from the operating system's entropy source.
    ///
    /// # Panics
    /// Panics if the operating system cannot supply randomness, as `rand::rng()` does; no
    /// cryptographic work can go on safely without it.
    pub fn from_entropy() -> Self {
        let mut seed = [0u8; 16];
        rand::rngs::SysRng
            .try_fill_bytes(&mut seed)
            .expect("the operating system's random source failed");
        let rng = AesRng::from_seed(seed);
        seed.zeroize();
        rng
    }

    /// A new RNG seeded from this one (for handing independent streams to threads).
    pub fn fork(&mut self) -> AesRng {
        let mut seed = [0u8; 16];
        self.fill(&mut seed);
        let rng = AesRng::from_seed(seed);
        seed.zeroize();
        rng
    }

    /// A uniformly random block.
    pub fn random_block(&mut self) -> Block {
        let mut b = [0u8; 16];
        self.fill(&mut b);
        let out = Block::from_bytes(b);
        b.zeroize();
        out
    }

    /// Fills `out` with random blocks, straight from the PRG (no buffering).
    pub fn fill_blocks(&mut self, out: &mut [Block]) {
        self.prg.fill_blocks(out);
    }

    fn fill(&mut self, dst: &mut [u8]) {
        let total = RNG_BUFFER * 16;
        let mut written = 0;
        while written < dst.len() {
            if self.pos == total {
                if dst.len() - written >= total {
                    // Large request: bypass the buffer.
                    let whole = (dst.len() - written) / 16 * 16;
                    self.prg.fill_bytes(&mut dst[written..written + whole]);
                    written += whole;
                    continue;
                }
                self.prg.fill_blocks(&mut self.buffer);
                self.pos = 0;
            }
            let take = (total - self.pos).min(dst.len() - written);
            let bytes = &mut Block::slice_as_bytes_mut(&mut self.buffer)[self.pos..self.pos + take];
            dst[written..written + take].copy_from_slice(bytes);
            // Handed out: not kept.
            bytes.zeroize();
            self.pos += take;
            written += take;
        }
    }
}

impl TryRng for AesRng {
    type Error = core::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut b = [0u8; 4];
        self.fill(&mut b);
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut b = [0u8; 8];
        self.fill(&mut b);
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.fill(dst);
        Ok(())
    }
}

impl TryCryptoRng for AesRng {}

impl SeedableRng for AesRng {
    type Seed = [u8; 16];

    fn from_seed(seed: Self::Seed) -> Self {
        AesRng {
            prg: Prg::new(Block::from_bytes(seed)),
            buffer: [Block::ZERO; RNG_BUFFER],
            pos: RNG_BUFFER * 16,
        }
    }
}

impl Drop for AesRng {
    fn drop(&mut self) {
        self.buffer.zeroize();
    }
}

impl ZeroizeOnDrop for AesRng {}

impl core::fmt::Debug for AesRng {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("AesRng(..)")
    }
}

#[cfg(test)]
mod tests {
    /// After `drop_in_place`, every byte of an [`Aes`] and of a [`Prg`] is zero: the round
    /// keys (wiped by the `aes` crate's `zeroize` feature), the seed and the counter. (Without
    /// the feature the round keys stay and this fails.)
    #[test]
    fn drop_wipes_the_key_schedule() {
        use crate::test_util::bytes_after_drop;

        let key = Block(0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100);
        let live = Aes::new(key);
        assert!(bytes_after_drop(live).iter().all(|&b| b == 0));
        let mut prg = Prg::new(key);
        prg.next_block();
        assert!(bytes_after_drop(prg).iter().all(|&b| b == 0));
    }

    use super::*;
    use rand_core::Rng;

    /// Regression: bytes handed out by `AesRng` stayed in its 1 KiB buffer until the next
    /// refill, so a Δ or a seed drawn from a long-lived RNG stayed in memory with it.
    #[test]
    fn rng_wipes_the_bytes_it_hands_out() {
        let mut rng = AesRng::from_seed([3u8; 16]);
        let mut twin = AesRng::from_seed([3u8; 16]);
        let first = rng.random_block();
        assert_eq!(first, twin.random_block());
        let mut more = [0u8; 21];
        rng.fill_bytes(&mut more);
        let used = 16 + more.len();
        let bytes = Block::slice_as_bytes(&rng.buffer);
        assert!(
            bytes[..used].iter().all(|&b| b == 0),
            "handed-out bytes kept"
        );
        assert!(
            bytes[used..].iter().any(|&b| b != 0),
            "unread bytes still buffered"
        );
        // The stream itself is unchanged.
        let mut twin_more = [0u8; 21];
        twin.fill_bytes(&mut twin_more);
        assert_eq!(more, twin_more);
        assert_eq!(rng.next_u64(), twin.next_u64());
    }

    /// FIPS-197 Appendix C.1 (AES-128).
    #[test]
    fn fips197_known_answer() {
        let key =
            Block::from_bytes(*b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f");
        let pt =
            Block::from_bytes(*b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff");
        let ct = [
            0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
            0xc5, 0x5a,
        ];
        let aes = Aes::new(key);
        assert_eq!(aes.encrypt_block(pt).to_bytes(), ct);
        let mut many = vec![pt; 37];
        aes.encrypt_blocks(&mut many);
        assert!(many.iter().all(|b| b.to_bytes() == ct));
    }

    #[test]
    fn prg_is_counter_mode_and_resumable() {
        let seed = Block(0x1234_5678_9abc_def0_0fed_cba9_8765_4321);
        let aes = Aes::new(seed);
        let mut prg = Prg::new(seed);
        let out = prg.blocks(300);
        for (i, b) in out.iter().enumerate() {
            assert_eq!(*b, aes.encrypt_block(Block(i as u128)));
        }
        let mut mid = Prg::with_counter(seed, 100);
        assert_eq!(mid.blocks(200), out[100..].to_vec());
        let mut bytes = vec![0u8; 300 * 16 - 5];
        Prg::new(seed).fill_bytes(&mut bytes);
        assert_eq!(&bytes[..], &Block::slice_as_bytes(&out)[..bytes.len()]);
        assert_ne!(
            Prg::new(Block(1)).next_block(),
            Prg::new(Block(2)).next_block()
        );
    }

    #[test]
    fn rng_streams_agree_however_they_are_read() {
        let mut a = AesRng::from_seed([7u8; 16]);
        let mut b = AesRng::from_seed([7u8; 16]);
        let mut big = vec![0u8; 5000];
        a.fill_bytes(&mut big);
        let mut pieces = Vec::new();
        while pieces.len() < big.len() {
            let n = (pieces.len() % 37 + 1).min(big.len() - pieces.len());
            let mut p = vec![0u8; n];
            b.fill_bytes(&mut p);
            pieces.extend_from_slice(&p);
        }
        assert_eq!(big, pieces);
        let mut c = AesRng::from_seed([8u8; 16]);
        assert_ne!(c.next_u64(), AesRng::from_seed([7u8; 16]).next_u64());
        assert_ne!(
            AesRng::from_entropy().random_block(),
            AesRng::from_entropy().random_block()
        );
    }
}
