//! SHA-512 on eight messages at a time in AVX-512F, one message per 64-bit lane of
//! `__m512i`, and RFC 9380 §5.3.1 `expand_message_xmd` with SHA-512 on eight messages at a
//! time for the batch hash paths of [`crate::X25519`] (`len_in_bytes = 96`) and
//! [`crate::Ristretto255`] (`len_in_bytes = 64`).
//!
//! # The compression
//!
//! FIPS 180-4 §6.4.2 on eight independent states: word `i` of the eight states (and of the
//! eight message schedules) is vector `i`, lane `l` belongs to message `l`. Every SHA-512
//! operation has a 64-bit lane form in AVX-512F: the rotations `ROTRⁿ` are `vprorq`
//! (`_mm512_ror_epi64`), the three-way XORs of `Σ₀`, `Σ₁`, `σ₀`, `σ₁` and the functions
//! `Ch` and `Maj` are one `vpternlogq` each (truth tables `0x96`, `0xca`, `0xe8`), the
//! additions mod 2⁶⁴ are `vpaddq`. The 80 rounds run as five groups of sixteen, fully
//! unrolled, the sixteen-word schedule window in registers. A lane mask selects which lanes
//! take the new state (`vpaddq` with a write mask in the final feed-forward `H ← H + (a…h)`),
//! so lanes whose message has fewer blocks keep theirs. The instruction sequence does not
//! depend on the data (no branch, no table index on message or state words).
//!
//! # `expand_message_xmd`
//!
//! RFC 9380 §5.3.1 with `H = SHA-512` (`b_in_bytes = 64`, `s_in_bytes = 128`),
//! `ell = ⌈len_in_bytes / 64⌉`, `DST′ = DST ‖ I2OSP(len(DST), 1)`:
//!
//! ```text
//! b₀ = H(Z_pad ‖ msg ‖ I2OSP(len_in_bytes, 2) ‖ I2OSP(0, 1) ‖ DST′)
//! b₁ = H(b₀ ‖ I2OSP(1, 1) ‖ DST′)
//! bᵢ = H((b₀ ⊕ bᵢ₋₁) ‖ I2OSP(i, 1) ‖ DST′),  2 ≤ i ≤ ell
//! uniform_bytes = (b₁ ‖ … ‖ b_ell)[..len_in_bytes]
//! ```
//!
//! `Z_pad` is one whole constant block, so `b₀` starts from the state after it (computed
//! once per call; one compression per message saved, as in the serial paths). The rest of
//! `b₀`'s input is padded per lane (FIPS 180-4 §5.1.2) and compressed block by block; a
//! message of `m` bytes takes `⌈(m + 4 + len(DST) + 17) / 128⌉` blocks after `Z_pad`, and a
//! lane whose message is done is masked out of the later blocks. For `bᵢ` (`i ≥ 1`) the first
//! 64 bytes of the input are the 8-word chaining value already in lanes (SHA-512's words are
//! big-endian, so `b₀`'s state words are its input words as they are), and everything after
//! them — `i`, `DST′`, the padding — is the same in all lanes: broadcast words. A DST of
//! more than 45 bytes makes these inputs two blocks long, one of more than 173 bytes three.
//! DSTs over 255 bytes are first replaced by `SHA-512("H2C-OVERSIZE-DST-" ‖ DST)`
//! (RFC 9380 §5.3.3).
//!
//! Short messages cost three compressions for 96 output bytes and two for 64, per lane. One
//! eight-lane compression is about 30 AVX-512 instructions per round, with no spills, which
//! leaves the hash a small share of the hash-and-multiply step (`x25519_batch_cpu` times
//! it).
//!
//! Constant time: the messages (PSI set elements) enter only the lane data; the branches and
//! the block count depend on message lengths only, which the serial path branches on too.
//! Every output is tested to be byte-identical to the generic RFC 9380 expander.

use super::Ifma;
use core::arch::x86_64::{
    __m512i, __mmask8, _mm512_add_epi64, _mm512_loadu_si512, _mm512_mask_add_epi64,
    _mm512_ror_epi64, _mm512_set1_epi64, _mm512_srli_epi64, _mm512_storeu_si512,
    _mm512_ternarylogic_epi64, _mm512_xor_si512,
};
use sha2::{Digest, Sha512};

/// The SHA-512 round constants `K₀ … K₇₉` (FIPS 180-4 §4.2.3): the first 64 bits of the
/// fractional parts of the cube roots of the first eighty primes.
const K: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

/// The SHA-512 initial hash value `H⁽⁰⁾` (FIPS 180-4 §5.3.5): the first 64 bits of the
/// fractional parts of the square roots of the first eight primes.
const IV: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// SHA-512's block size in bytes (`s_in_bytes` of RFC 9380).
const BLOCK: usize = 128;

/// Eight SHA-512 states: word `i` of the state of message `l` in lane `l` of vector `i`.
type State8 = [__m512i; 8];

/// Eight 1024-bit message blocks as big-endian 64-bit words: word `i` of block `l` in lane
/// `l` of vector `i`.
type Block8 = [__m512i; 16];

crate::cpu::ifma25519::enable! {
    /// `x` in all eight lanes.
    #[inline]
    fn splat(x: u64) -> __m512i {
        // The lane holds the same 64 bits; the signed type is only the intrinsic's signature.
        _mm512_set1_epi64(i64::from_ne_bytes(x.to_ne_bytes()))
    }

    /// Eight lanes from eight words (lane `l` = `w[l]`).
    #[inline]
    fn load(w: &[u64; 8]) -> __m512i {
        // SAFETY: `w` is 64 readable bytes and `loadu` has no alignment requirement.
        unsafe { _mm512_loadu_si512(w.as_ptr().cast()) }
    }

    /// The eight lanes of `v` (lane `l` at index `l`).
    #[inline]
    fn store(v: __m512i) -> [u64; 8] {
        let mut w = [0u64; 8];
        // SAFETY: `w` is 64 writable bytes and `storeu` has no alignment requirement.
        unsafe { _mm512_storeu_si512(w.as_mut_ptr().cast(), v) };
        w
    }

    /// `x ⊕ y ⊕ z` (`vpternlogq` with truth table `0x96`).
    #[inline]
    fn xor3(x: __m512i, y: __m512i, z: __m512i) -> __m512i {
        _mm512_ternarylogic_epi64::<0x96>(x, y, z)
    }

    /// `Σ₀⁵¹²(x) = ROTR²⁸(x) ⊕ ROTR³⁴(x) ⊕ ROTR³⁹(x)` (FIPS 180-4 (4.10)).
    #[inline]
    fn big_sigma0(x: __m512i) -> __m512i {
        xor3(
            _mm512_ror_epi64::<28>(x),
            _mm512_ror_epi64::<34>(x),
            _mm512_ror_epi64::<39>(x),
        )
    }

    /// `Σ₁⁵¹²(x) = ROTR¹⁴(x) ⊕ ROTR¹⁸(x) ⊕ ROTR⁴¹(x)` (FIPS 180-4 (4.11)).
    #[inline]
    fn big_sigma1(x: __m512i) -> __m512i {
        xor3(
            _mm512_ror_epi64::<14>(x),
            _mm512_ror_epi64::<18>(x),
            _mm512_ror_epi64::<41>(x),
        )
    }

    /// `σ₀⁵¹²(x) = ROTR¹(x) ⊕ ROTR⁸(x) ⊕ SHR⁷(x)` (FIPS 180-4 (4.12)).
    #[inline]
    fn small_sigma0(x: __m512i) -> __m512i {
        xor3(
            _mm512_ror_epi64::<1>(x),
            _mm512_ror_epi64::<8>(x),
            _mm512_srli_epi64::<7>(x),
        )
    }

    /// `σ₁⁵¹²(x) = ROTR¹⁹(x) ⊕ ROTR⁶¹(x) ⊕ SHR⁶(x)` (FIPS 180-4 (4.13)).
    #[inline]
    fn small_sigma1(x: __m512i) -> __m512i {
        xor3(
            _mm512_ror_epi64::<19>(x),
            _mm512_ror_epi64::<61>(x),
            _mm512_srli_epi64::<6>(x),
        )
    }

    /// `Ch(x, y, z) = (x ∧ y) ⊕ (¬x ∧ z)` (FIPS 180-4 (4.8)): bitwise `x ? y : z`, truth table
    /// `0xca`.
    #[inline]
    fn ch(x: __m512i, y: __m512i, z: __m512i) -> __m512i {
        _mm512_ternarylogic_epi64::<0xca>(x, y, z)
    }

    /// `Maj(x, y, z) = (x ∧ y) ⊕ (x ∧ z) ⊕ (y ∧ z)` (FIPS 180-4 (4.9)): bitwise majority,
    /// truth table `0xe8`.
    #[inline]
    fn maj(x: __m512i, y: __m512i, z: __m512i) -> __m512i {
        _mm512_ternarylogic_epi64::<0xe8>(x, y, z)
    }
}

/// One SHA-512 round (FIPS 180-4 §6.4.2 step 3) with the variables renamed instead of moved:
/// `T₁ = h + Σ₁(e) + Ch(e, f, g) + Kₜ + Wₜ`, `d ← d + T₁`, `h ← T₁ + Σ₀(a) + Maj(a, b, c)`;
/// the next round takes `(h, a, b, c, d, e, f, g)` as its `(a, …, h)`.
macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $kw:expr) => {
        let t1 = _mm512_add_epi64(
            _mm512_add_epi64($h, big_sigma1($e)),
            _mm512_add_epi64(ch($e, $f, $g), $kw),
        );
        $d = _mm512_add_epi64($d, t1);
        $h = _mm512_add_epi64(t1, _mm512_add_epi64(big_sigma0($a), maj($a, $b, $c)));
    };
}

/// The message schedule (FIPS 180-4 §6.4.2 step 1) in a sixteen-word window:
/// `Wₜ = σ₁(Wₜ₋₂) + Wₜ₋₇ + σ₀(Wₜ₋₁₅) + Wₜ₋₁₆` replaces `Wₜ₋₁₆` at index `t mod 16`.
macro_rules! schedule {
    ($w:ident, $i:expr) => {
        $w[$i] = _mm512_add_epi64(
            _mm512_add_epi64(small_sigma1($w[($i + 14) & 15]), $w[($i + 9) & 15]),
            _mm512_add_epi64(small_sigma0($w[($i + 1) & 15]), $w[$i]),
        );
    };
}

crate::cpu::ifma25519::enable! {
    /// The SHA-512 compression function (FIPS 180-4 §6.4.2) on eight lanes: for every lane in
    /// `mask`, `state ← state + F(state, block)` (word-wise mod 2⁶⁴); the other lanes of `state`
    /// are left as they are.
    fn compress(state: &mut State8, block: &Block8, mask: __mmask8) {
        let mut w = *block;
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
        for j in 0..5 {
            if j > 0 {
                schedule!(w, 0);
                schedule!(w, 1);
                schedule!(w, 2);
                schedule!(w, 3);
                schedule!(w, 4);
                schedule!(w, 5);
                schedule!(w, 6);
                schedule!(w, 7);
                schedule!(w, 8);
                schedule!(w, 9);
                schedule!(w, 10);
                schedule!(w, 11);
                schedule!(w, 12);
                schedule!(w, 13);
                schedule!(w, 14);
                schedule!(w, 15);
            }
            let k = &K[16 * j..16 * j + 16];
            let kw = |i: usize| _mm512_add_epi64(splat(k[i]), w[i]);
            round!(a, b, c, d, e, f, g, h, kw(0));
            round!(h, a, b, c, d, e, f, g, kw(1));
            round!(g, h, a, b, c, d, e, f, kw(2));
            round!(f, g, h, a, b, c, d, e, kw(3));
            round!(e, f, g, h, a, b, c, d, kw(4));
            round!(d, e, f, g, h, a, b, c, kw(5));
            round!(c, d, e, f, g, h, a, b, kw(6));
            round!(b, c, d, e, f, g, h, a, kw(7));
            round!(a, b, c, d, e, f, g, h, kw(8));
            round!(h, a, b, c, d, e, f, g, kw(9));
            round!(g, h, a, b, c, d, e, f, kw(10));
            round!(f, g, h, a, b, c, d, e, kw(11));
            round!(e, f, g, h, a, b, c, d, kw(12));
            round!(d, e, f, g, h, a, b, c, kw(13));
            round!(c, d, e, f, g, h, a, b, kw(14));
            round!(b, c, d, e, f, g, h, a, kw(15));
        }
        for (s, x) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
            *s = _mm512_mask_add_epi64(*s, mask, *s, x);
        }
    }
}

/// The sixteen big-endian words of a 128-byte block.
fn words(block: &[u8; BLOCK]) -> [u64; 16] {
    let mut w = [0u64; 16];
    for (w, b) in w.iter_mut().zip(block.chunks_exact(8)) {
        let mut x = [0u8; 8];
        x.copy_from_slice(b);
        *w = u64::from_be_bytes(x);
    }
    w
}

/// Eight-lane RFC 9380 §5.3.1 `expand_message_xmd` with SHA-512 for one DST and one output
/// length `N` (1 to `255·64` bytes): everything that is the same for every message,
/// computed once.
struct Xmd<const N: usize> {
    /// `I2OSP(N, 2) ‖ I2OSP(0, 1) ‖ DST′ ‖ 0x80`: what follows the message in `b₀`'s input,
    /// with the first padding byte of FIPS 180-4 §5.1.2.
    b0_tail: Vec<u8>,
    /// For each `i = 1 … ell`, the padded input of `bᵢ` as big-endian words (one to three
    /// blocks), words 0–7 (the chaining value, per lane) left zero.
    bi_blocks: Vec<Vec<[u64; 16]>>,
}

impl<const N: usize> Xmd<N> {
    /// `ell = ⌈N / 64⌉`.
    const ELL: usize = N.div_ceil(64);

    /// The precomputation for `dst` (a DST over 255 bytes is replaced by its RFC 9380
    /// §5.3.3 hash).
    fn new(dst: &[u8]) -> Self {
        const { assert!(N > 0 && N.div_ceil(64) <= 255) };
        let hashed;
        let dst = if dst.len() > 255 {
            hashed = Sha512::new()
                .chain_update(b"H2C-OVERSIZE-DST-")
                .chain_update(dst)
                .finalize();
            hashed.as_slice()
        } else {
            dst
        };
        // `dst.len() ≤ 255` and `N ≤ 255·64 < 2^16` (the assertion above).
        let dst_len = u8::try_from(dst.len()).unwrap_or(u8::MAX);
        let n = u16::try_from(N).unwrap_or(u16::MAX);
        let mut dst_prime = dst.to_vec();
        dst_prime.push(dst_len);

        let mut b0_tail = n.to_be_bytes().to_vec();
        b0_tail.push(0);
        b0_tail.extend_from_slice(&dst_prime);
        b0_tail.push(0x80);

        // bᵢ's input: 64 bytes ‖ i ‖ DST′, then 0x80, zeros and the 128-bit bit length.
        let len = 64 + 1 + dst_prime.len();
        let blocks = (len + 1 + 16).div_ceil(BLOCK);
        let bi_blocks = (1..=Self::ELL)
            .map(|i| {
                let mut bytes = vec![0u8; blocks * BLOCK];
                // i ≤ ell ≤ 255 (the assertion above).
                bytes[64] = u8::try_from(i).unwrap_or(u8::MAX);
                bytes[65..len].copy_from_slice(&dst_prime);
                bytes[len] = 0x80;
                let bits = 8 * len as u128;
                bytes[blocks * BLOCK - 16..].copy_from_slice(&bits.to_be_bytes());
                bytes
                    .chunks_exact(BLOCK)
                    .map(|b| {
                        let mut block = [0u8; BLOCK];
                        block.copy_from_slice(b);
                        words(&block)
                    })
                    .collect()
            })
            .collect();
        Self { b0_tail, bi_blocks }
    }

    /// The number of blocks of `b₀`'s input after `Z_pad` for a message of `m` bytes:
    /// message, tail (with `0x80`), 16 length bytes, rounded up to whole blocks.
    fn b0_blocks(&self, m: usize) -> usize {
        (m + self.b0_tail.len() + 16).div_ceil(BLOCK)
    }

    /// Block `j` (counted after `Z_pad`) of the padded `b₀` input for message `msg`:
    /// `msg ‖ tail ‖ 0…0 ‖ bit length`, the length (including `Z_pad`) in the last block.
    fn b0_block(&self, msg: &[u8], j: usize) -> [u8; BLOCK] {
        let mut out = [0u8; BLOCK];
        let (m, tail) = (msg.len(), &self.b0_tail);
        let (start, end) = (j * BLOCK, (j + 1) * BLOCK);
        if start < m {
            let hi = end.min(m);
            out[..hi - start].copy_from_slice(&msg[start..hi]);
        }
        let (lo, hi) = (start.max(m), end.min(m + tail.len()));
        if lo < hi {
            out[lo - start..hi - start].copy_from_slice(&tail[lo - m..hi - m]);
        }
        if j + 1 == self.b0_blocks(m) {
            // FIPS 180-4 §5.1.2: the message length in bits as a 128-bit big-endian integer
            // (the 0x80 byte is the last byte of the tail, so it is not counted).
            let bits = 8 * (BLOCK + m + tail.len() - 1) as u128;
            out[BLOCK - 16..].copy_from_slice(&bits.to_be_bytes());
        }
        out
    }

    crate::cpu::ifma25519::enable! {
        /// `expand_message_xmd(msgs[l], DST, N)` for up to eight messages, written to `out[l]`
        /// (`out.len()` must equal `msgs.len()`, at most 8). `zpad` is the SHA-512 state after
        /// the block `Z_pad`.
        fn expand8<T: AsRef<[u8]>>(&self, zpad: &State8, msgs: &[T], out: &mut [[u8; N]]) {
            debug_assert!(msgs.len() <= 8 && out.len() == msgs.len());
            let mut nblocks = [0usize; 8];
            for (n, m) in nblocks.iter_mut().zip(msgs) {
                *n = self.b0_blocks(m.as_ref().len());
            }
            // b₀: the blocks after Z_pad, each lane masked out once its message is done.
            let mut b0 = *zpad;
            let most = nblocks.iter().copied().max().unwrap_or(0);
            for j in 0..most {
                let mut cols = [[0u64; 8]; 16];
                let mut mask: __mmask8 = 0;
                for (l, (m, &n)) in msgs.iter().zip(&nblocks).enumerate() {
                    if j < n {
                        mask |= 1 << l;
                        for (col, w) in cols.iter_mut().zip(words(&self.b0_block(m.as_ref(), j))) {
                            col[l] = w;
                        }
                    }
                }
                compress(&mut b0, &cols.map(|c| load(&c)), mask);
            }
            // bᵢ = H((b₀ ⊕ bᵢ₋₁) ‖ i ‖ DST′), b₀ itself for i = 1.
            let mut prev = b0;
            for (i, blocks) in self.bi_blocks.iter().enumerate() {
                let mut chain = b0;
                if i > 0 {
                    for (c, p) in chain.iter_mut().zip(&prev) {
                        *c = _mm512_xor_si512(*c, *p);
                    }
                }
                let mut st = IV.map(|x| splat(x));
                for (j, block) in blocks.iter().enumerate() {
                    let mut v = block.map(|x| splat(x));
                    if j == 0 {
                        v[..8].copy_from_slice(&chain);
                    }
                    compress(&mut st, &v, 0xff);
                }
                // Output bytes 64·i … 64·i + 63 (the last bᵢ cut at N).
                let lo = 64 * i;
                let hi = (lo + 64).min(N);
                let cols = st.map(|v| store(v));
                for (l, o) in out.iter_mut().enumerate() {
                    let mut bytes = [0u8; 64];
                    for (b, col) in bytes.chunks_exact_mut(8).zip(&cols) {
                        b.copy_from_slice(&col[l].to_be_bytes());
                    }
                    o[lo..hi].copy_from_slice(&bytes[..hi - lo]);
                }
                prev = st;
            }
        }
    }
}

impl Ifma {
    /// RFC 9380 §5.3.1 `expand_message_xmd(msg, DST, N)` with SHA-512 for every message of
    /// `msgs`, eight at a time in AVX-512F lanes (module documentation), written to `out`
    /// (`out.len()` must equal `msgs.len()`; extra elements of either are ignored).
    /// `N` is 1 to `255·64` (checked at compile time); `dst` should be 1 to 255 bytes, a
    /// longer one is replaced by `SHA-512("H2C-OVERSIZE-DST-" ‖ dst)` (RFC 9380 §5.3.3).
    /// Byte-identical to the serial expanders.
    pub(crate) fn expand_message_xmd_sha512<T: AsRef<[u8]>, const N: usize>(
        self,
        msgs: &[T],
        dst: &[u8],
        out: &mut [[u8; N]],
    ) {
        let xmd = Xmd::<N>::new(dst);
        // SAFETY: an `Ifma` value exists only after `cpu::ifma25519::detected()`, which checks
        // every feature the `cpu::ifma25519::enable!` functions below are compiled with.
        unsafe {
            // The state after Z_pad = I2OSP(0, 128), one block, the same in every lane.
            let mut zpad = IV.map(|x| splat(x));
            compress(&mut zpad, &[splat(0); 16], 0xff);
            for (m, o) in msgs.chunks(8).zip(out.chunks_mut(8)) {
                let k = m.len().min(o.len());
                xmd.expand8(&zpad, &m[..k], &mut o[..k]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The lanes against the serial references: the compression against `sha2`'s, the
    //! expander against the generic RFC 9380 one (`hash2curve`'s `ExpandMsgXmd<Sha512>`).
    use super::*;
    use k256::hash2curve::ExpandMsgXmd;
    use rand::{RngExt, SeedableRng};

    /// Eight random blocks and states through [`compress`] (all lanes, and a lane mask)
    /// against `sha2::block_api::compress512`, lane by lane.
    #[test]
    fn compress_matches_sha2() {
        let Some(_ifma) = super::super::lanes_for_test("compress_matches_sha2") else {
            return;
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for round in 0..64 {
            let states: [[u64; 8]; 8] = core::array::from_fn(|_| rng.random());
            let blocks: [[u8; BLOCK]; 8] = core::array::from_fn(|_| {
                let mut b = [0u8; BLOCK];
                rng.fill(&mut b[..]);
                b
            });
            let mask: u8 = if round < 32 { 0xff } else { rng.random() };
            let want: Vec<[u64; 8]> = states
                .iter()
                .zip(&blocks)
                .enumerate()
                .map(|(l, (s, b))| {
                    let mut s = *s;
                    if mask >> l & 1 == 1 {
                        sha2::block_api::compress512(&mut s, &[*b]);
                    }
                    s
                })
                .collect();
            let rows: [[u64; 8]; 8] =
                core::array::from_fn(|i| core::array::from_fn(|l| states[l][i]));
            let wrows: [[u64; 8]; 16] =
                core::array::from_fn(|i| core::array::from_fn(|l| words(&blocks[l])[i]));
            // SAFETY: the `Ifma` token above proves the CPU features.
            let got = unsafe {
                let mut st = rows.map(|r| load(&r));
                compress(&mut st, &wrows.map(|r| load(&r)), mask);
                st.map(|v| store(v))
            };
            for (l, want) in want.iter().enumerate() {
                let got: [u64; 8] = core::array::from_fn(|i| got[i][l]);
                assert_eq!(&got, want, "round {round} lane {l}");
            }
        }
    }

    /// The generic RFC 9380 expander for one message.
    fn reference<const N: usize>(msg: &[u8], dst: &[u8]) -> [u8; N] {
        let mut out = [0u8; N];
        crate::sswu::expand::<ExpandMsgXmd<Sha512>>(msg, dst, &mut out).unwrap();
        out
    }

    /// Messages of 0 to 300 bytes (every length, so every block boundary, eight different
    /// lengths per group) in groups of 1 to 8, DSTs of 1, 44, 45, 46, 100, 173, 174, 255
    /// and 300 (oversize) bytes (one, two and three blocks for `bᵢ`), `N` = 64 and 96.
    #[test]
    fn expand_matches_generic_expander() {
        let Some(ifma) = super::super::lanes_for_test("expand_matches_generic_expander") else {
            return;
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let msgs: Vec<Vec<u8>> = (0..=300usize)
            .map(|len| {
                let mut m = vec![0u8; len];
                rng.fill(&mut m[..]);
                m
            })
            .collect();
        for dst_len in [1usize, 44, 45, 46, 100, 173, 174, 255, 300] {
            let dst: Vec<u8> = (0..dst_len)
                .map(|i| u8::try_from(i % 251).unwrap())
                .collect();
            // The bᵢ inputs take the intended number of blocks (300 bytes: hashed to 64).
            let blocks = match dst_len {
                0..=45 => 1,
                46..=173 | 256.. => 2,
                _ => 3,
            };
            assert_eq!(Xmd::<96>::new(&dst).bi_blocks[1].len(), blocks);
            let want64: Vec<[u8; 64]> = msgs.iter().map(|m| reference(m, &dst)).collect();
            let want96: Vec<[u8; 96]> = msgs.iter().map(|m| reference(m, &dst)).collect();
            // The whole list: groups of eight consecutive lengths and a last group of 5.
            let mut got64 = vec![[0u8; 64]; msgs.len()];
            ifma.expand_message_xmd_sha512(&msgs, &dst, &mut got64);
            assert_eq!(got64, want64, "dst {dst_len}");
            let mut got96 = vec![[0u8; 96]; msgs.len()];
            ifma.expand_message_xmd_sha512(&msgs, &dst, &mut got96);
            assert_eq!(got96, want96, "dst {dst_len}");
            // Groups of 1 to 8 items with scattered lengths.
            for n in 1..=8usize {
                let pick: Vec<usize> = (0..n).map(|_| rng.random_range(0..=300)).collect();
                let sub: Vec<&[u8]> = pick.iter().map(|&i| msgs[i].as_slice()).collect();
                let mut got = vec![[0u8; 96]; n];
                ifma.expand_message_xmd_sha512(&sub, &dst, &mut got);
                for (g, &i) in got.iter().zip(&pick) {
                    assert_eq!(g, &want96[i], "dst {dst_len}, n {n}, len {i}");
                }
            }
        }
    }

    /// Other output lengths (`ell` = 1, 2, 3, 4, cut inside a block) and the RFC 9380
    /// Appendix K.3 `expand_message_xmd(SHA-512)` vectors (`len_in_bytes = 0x20`, `0x80`).
    #[test]
    fn expand_other_lengths_and_rfc9380_vectors() {
        let Some(ifma) = super::super::lanes_for_test("expand_other_lengths_and_rfc9380_vectors")
        else {
            return;
        };
        let dst = b"QUUX-V01-CS02-with-expander-SHA512-256";
        let msgs: Vec<&[u8]> = vec![b"", b"abc", b"abcdef0123456789"];
        let mut o32 = vec![[0u8; 32]; 3];
        ifma.expand_message_xmd_sha512(&msgs, dst, &mut o32);
        let mut o128 = vec![[0u8; 128]; 3];
        ifma.expand_message_xmd_sha512(&msgs, dst, &mut o128);
        let mut o200 = vec![[0u8; 200]; 3];
        ifma.expand_message_xmd_sha512(&msgs, dst, &mut o200);
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(o32[i], reference::<32>(m, dst));
            assert_eq!(o128[i], reference::<128>(m, dst));
            assert_eq!(o200[i], reference::<200>(m, dst));
        }
        assert_eq!(
            hex::encode(o32[0]),
            "6b9a7312411d92f921c6f68ca0b6380730a1a4d982c507211a90964c394179ba"
        );
        assert_eq!(
            hex::encode(o32[1]),
            "0da749f12fbe5483eb066a5f595055679b976e93abe9be6f0f6318bce7aca8dc"
        );
        assert_eq!(
            hex::encode(o128[0]),
            "41b037d1734a5f8df225dd8c7de38f851efdb45c372887be655212d07251b921\
             b052b62eaed99b46f72f2ef4cc96bfaf254ebbbec091e1a3b9e4fb5e5b619d2e\
             0c5414800a1d882b62bb5cd1778f098b8eb6cb399d5d9d18f5d5842cf5d13d7e\
             b00a7cff859b605da678b318bd0e65ebff70bec88c753b159a805d2c89c55961"
        );
    }
}
