//! BLAKE3 for many short messages at once: sixteen single-block compressions side by side in
//! the sixteen 32-bit lanes of AVX-512 registers, with a portable one-at-a-time fallback.
//!
//! A BLAKE3 input of at most 64 bytes is one block of one chunk, so its hash (in any mode) is
//! one call of the compression function with the flags `CHUNK_START | CHUNK_END | ROOT` plus
//! the mode flag, the block counter 0 and the block length; the first 32 output bytes are the
//! hash. Hashing items one by one with the `blake3` crate runs that one compression with the
//! rows of one state in SIMD lanes, which leaves most of the work in set-up; here each lane is
//! a different message, which is how BLAKE3 itself gets its speed on long inputs. Outputs are
//! tested equal to the `blake3` crate's.

/// The BLAKE3 initialisation vector (the SHA-256 IV).
pub(crate) const IV: [u32; 8] = [
    0x6A09_E667,
    0xBB67_AE85,
    0x3C6E_F372,
    0xA54F_F53A,
    0x510E_527F,
    0x9B05_688C,
    0x1F83_D9AB,
    0x5BE0_CD19,
];

/// Flag of the first block of a chunk.
pub(crate) const CHUNK_START: u32 = 1;
/// Flag of the last block of a chunk.
pub(crate) const CHUNK_END: u32 = 2;
/// Flag of the root compression.
pub(crate) const ROOT: u32 = 8;
/// Mode flag of `keyed_hash`.
pub(crate) const KEYED_HASH: u32 = 16;
/// Mode flag of the context string in `derive_key`.
pub(crate) const DERIVE_KEY_CONTEXT: u32 = 32;
/// Mode flag of the key material in `derive_key`.
pub(crate) const DERIVE_KEY_MATERIAL: u32 = 64;

/// The message word order of each round after the first (BLAKE3's permutation applied 0..6
/// times).
const SCHEDULE: [[usize; 16]; 7] = {
    const PERM: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
    let mut s = [[0usize; 16]; 7];
    let mut i = 0;
    while i < 16 {
        s[0][i] = i;
        i += 1;
    }
    let mut r = 1;
    while r < 7 {
        let mut i = 0;
        while i < 16 {
            s[r][i] = s[r - 1][PERM[i]];
            i += 1;
        }
        r += 1;
    }
    s
};

/// The 16 message words of a block of at most 64 bytes, zero-padded, little-endian.
#[allow(clippy::cast_possible_truncation)] // callers pass at most 64 bytes
pub(crate) fn block_words(msg: &[u8]) -> [u32; 16] {
    // Word by word rather than through a padded copy: a variable-length copy per message
    // (a `memmove` call) cost more than the compression itself in batch hashing.
    let mut w = [0u32; 16];
    let words = msg.chunks_exact(4);
    let tail = words.remainder();
    let full = msg.len() / 4;
    for (x, c) in w.iter_mut().zip(words) {
        *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
    if !tail.is_empty() {
        // Shifts, not a byte copy (which would become a `memmove` call again).
        w[full] = tail
            .iter()
            .enumerate()
            .fold(0u32, |v, (j, b)| v | (u32::from(*b) << (8 * j)));
    }
    w
}

/// The seven rounds of BLAKE3 on the state `v` with message words `m`: the column steps then
/// the diagonal steps, message words in each round's order. `g` is the quarter-round, on
/// `u32` words (portable) or on 16-lane vectors (AVX-512); one definition serves both.
macro_rules! rounds {
    ($g:ident, $v:ident, $m:ident) => {
        for s in &SCHEDULE {
            $g(&mut $v, 0, 4, 8, 12, $m[s[0]], $m[s[1]]);
            $g(&mut $v, 1, 5, 9, 13, $m[s[2]], $m[s[3]]);
            $g(&mut $v, 2, 6, 10, 14, $m[s[4]], $m[s[5]]);
            $g(&mut $v, 3, 7, 11, 15, $m[s[6]], $m[s[7]]);
            $g(&mut $v, 0, 5, 10, 15, $m[s[8]], $m[s[9]]);
            $g(&mut $v, 1, 6, 11, 12, $m[s[10]], $m[s[11]]);
            $g(&mut $v, 2, 7, 8, 13, $m[s[12]], $m[s[13]]);
            $g(&mut $v, 3, 4, 9, 14, $m[s[14]], $m[s[15]]);
        }
    };
}

#[inline(always)]
fn g(v: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize, x: u32, y: u32) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(12);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
    v[d] = (v[d] ^ v[a]).rotate_right(8);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(7);
}

/// The BLAKE3 compression function with block counter 0: the first eight output words.
pub(crate) fn compress(cv: &[u32; 8], m: &[u32; 16], len: u32, flags: u32) -> [u32; 8] {
    let mut v = [
        cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7], IV[0], IV[1], IV[2], IV[3], 0, 0,
        len, flags,
    ];
    rounds!(g, v, m);
    let mut out = [0u32; 8];
    for i in 0..8 {
        out[i] = v[i] ^ v[i + 8];
    }
    out
}

/// The first 16 bytes of the BLAKE3 hash of a message of at most 64 bytes, in the mode given
/// by `key` (the key words, or the IV for plain hashing) and `mode` (the mode flag).
#[allow(clippy::cast_possible_truncation)] // len ≤ 64
pub(crate) fn hash_short(key: &[u32; 8], mode: u32, msg: &[u8]) -> [u8; 16] {
    let out = compress(
        key,
        &block_words(msg),
        msg.len() as u32,
        mode | CHUNK_START | CHUNK_END | ROOT,
    );
    let mut b = [0u8; 16];
    for (i, w) in out[..4].iter().enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    b
}

obliv_cpu::feature_set! {
    /// The sixteen-lane kernel.
    pub(crate) mod avx512 = ["avx512f", "avx512bw"];
}

/// [`hash_short`] of sixteen messages of at most 64 bytes each, in AVX-512 lanes when the CPU
/// has AVX-512F.
pub(crate) fn hash_short16(key: &[u32; 8], mode: u32, msgs: [&[u8]; 16]) -> [[u8; 16]; 16] {
    #[cfg(obliv_x86_simd)]
    if avx512::detected() {
        // SAFETY: AVX-512F and AVX-512BW were confirmed at run time, the features the kernel
        // is compiled for; every message is at most 64 bytes (checked by the callers, asserted
        // inside).
        return unsafe { x86::hash_short16_avx512(key, mode, msgs) };
    }
    msgs.map(|m| hash_short(key, mode, m))
}

#[cfg(obliv_x86_simd)]
mod x86 {
    use core::arch::x86_64::*;

    use super::{CHUNK_END, CHUNK_START, IV, ROOT, SCHEDULE};

    #[inline(always)]
    unsafe fn add(a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: only called from the `avx512f` kernel below.
        unsafe { _mm512_add_epi32(a, b) }
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn g(
        v: &mut [__m512i; 16],
        a: usize,
        b: usize,
        c: usize,
        d: usize,
        x: __m512i,
        y: __m512i,
    ) {
        // SAFETY: only called from the `avx512f` kernel below.
        unsafe {
            v[a] = add(add(v[a], v[b]), x);
            v[d] = _mm512_ror_epi32::<16>(_mm512_xor_si512(v[d], v[a]));
            v[c] = add(v[c], v[d]);
            v[b] = _mm512_ror_epi32::<12>(_mm512_xor_si512(v[b], v[c]));
            v[a] = add(add(v[a], v[b]), y);
            v[d] = _mm512_ror_epi32::<8>(_mm512_xor_si512(v[d], v[a]));
            v[c] = add(v[c], v[d]);
            v[b] = _mm512_ror_epi32::<7>(_mm512_xor_si512(v[b], v[c]));
        }
    }

    super::avx512::enable! {
        /// Sixteen single-block BLAKE3 compressions, lane `l` hashing `msgs[l]`.
        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // lengths ≤ 64; bit patterns
        pub(super) unsafe fn hash_short16_avx512(
            key: &[u32; 8],
            mode: u32,
            msgs: [&[u8]; 16],
        ) -> [[u8; 16]; 16] {
            // Each message as one zero-padded 64-byte row by a masked load (no copy call inside
            // this AVX-512 function: a `memcpy` per message cost more than the compression), then
            // transposed: words[w] holds word w of every lane.
            let mut rows = [[0u32; 16]; 16];
            let mut lens = [0u32; 16];
            for (l, msg) in msgs.iter().enumerate() {
                assert!(msg.len() <= 64, "a single-block message");
                let mask: u64 = if msg.len() == 64 {
                    u64::MAX
                } else {
                    (1u64 << msg.len()) - 1
                };
                // SAFETY: AVX-512F/BW are enabled for this function; the mask selects exactly the
                // `msg.len()` bytes of the slice (masked-out bytes are neither read nor faulted on),
                // and the store writes the 64 bytes of `rows[l]`.
                unsafe {
                    let v = _mm512_maskz_loadu_epi8(mask, msg.as_ptr().cast());
                    _mm512_storeu_si512(rows[l].as_mut_ptr().cast(), v);
                }
                lens[l] = msg.len() as u32;
            }
            let mut words = [[0u32; 16]; 16];
            for (l, row) in rows.iter().enumerate() {
                for (i, x) in row.iter().enumerate() {
                    words[i][l] = *x;
                }
            }
            // SAFETY: AVX-512F is enabled for this function; every load reads a 64-byte array.
            unsafe {
                let mut m = [_mm512_setzero_si512(); 16];
                for (v, w) in m.iter_mut().zip(&words) {
                    *v = _mm512_loadu_si512(w.as_ptr().cast());
                }
                let splat = |x: u32| _mm512_set1_epi32(x as i32);
                let mut v = [
                    splat(key[0]),
                    splat(key[1]),
                    splat(key[2]),
                    splat(key[3]),
                    splat(key[4]),
                    splat(key[5]),
                    splat(key[6]),
                    splat(key[7]),
                    splat(IV[0]),
                    splat(IV[1]),
                    splat(IV[2]),
                    splat(IV[3]),
                    _mm512_setzero_si512(),
                    _mm512_setzero_si512(),
                    _mm512_loadu_si512(lens.as_ptr().cast()),
                    splat(mode | CHUNK_START | CHUNK_END | ROOT),
                ];
                rounds!(g, v, m);
                let mut outw = [[0u32; 16]; 4];
                for (i, o) in outw.iter_mut().enumerate() {
                    _mm512_storeu_si512(o.as_mut_ptr().cast(), _mm512_xor_si512(v[i], v[i + 8]));
                }
                let mut out = [[0u8; 16]; 16];
                for (l, o) in out.iter_mut().enumerate() {
                    for (i, w) in outw.iter().enumerate() {
                        o[4 * i..4 * i + 4].copy_from_slice(&w[l].to_le_bytes());
                    }
                }
                out
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test bytes and lengths
mod tests {
    use super::*;

    fn key_words(k: &[u8; 32]) -> [u32; 8] {
        let mut w = [0u32; 8];
        for (i, c) in k.chunks_exact(4).enumerate() {
            w[i] = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        w
    }

    #[test]
    fn single_block_modes_match_the_blake3_crate() {
        let key = [7u8; 32];
        for len in 0..=64usize {
            let msg: Vec<u8> = (0..len).map(|i| (i * 31 + len) as u8).collect();
            assert_eq!(
                hash_short(&IV, 0, &msg),
                blake3::hash(&msg).as_bytes()[..16]
            );
            assert_eq!(
                hash_short(&key_words(&key), KEYED_HASH, &msg),
                blake3::keyed_hash(&key, &msg).as_bytes()[..16]
            );
        }
        // derive_key: the context string hashed in context mode gives the key of the material.
        let ctx = "obliv-core blake3x16 test context";
        let ck = compress(
            &IV,
            &block_words(ctx.as_bytes()),
            ctx.len() as u32,
            DERIVE_KEY_CONTEXT | CHUNK_START | CHUNK_END | ROOT,
        );
        assert_eq!(
            hash_short(&ck, DERIVE_KEY_MATERIAL, b"material"),
            blake3::derive_key(ctx, b"material")[..16]
        );
    }

    #[test]
    fn sixteen_lanes_match_one_at_a_time() {
        let key = key_words(&[0x5a; 32]);
        let msgs: Vec<Vec<u8>> = (0..16)
            .map(|l| (0..(l * 4 + 1)).map(|i| (i ^ l) as u8).collect())
            .collect();
        let refs: [&[u8]; 16] = core::array::from_fn(|l| msgs[l].as_slice());
        let lanes = hash_short16(&key, KEYED_HASH, refs);
        for l in 0..16 {
            assert_eq!(lanes[l], hash_short(&key, KEYED_HASH, &msgs[l]));
        }
    }
}
