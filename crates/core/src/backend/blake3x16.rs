//! BLAKE3 for many short messages at once: sixteen single-block compressions side by side in
//! the sixteen 32-bit lanes of AVX-512 registers, or eight at a time in the eight lanes of AVX2
//! registers on CPUs without AVX-512, with a portable one-at-a-time fallback.
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
/// `u32` words (portable), on 16-lane vectors (AVX-512) or on 8-lane vectors (AVX2); one
/// definition serves all three.
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

obliv_cpu::feature_set! {
    /// The eight-lane kernel, for CPUs with AVX2 but not AVX-512.
    pub(crate) mod avx2 = ["avx2"];
}

/// [`hash_short`] of sixteen messages of at most 64 bytes each: in the sixteen AVX-512 lanes
/// when the CPU has AVX-512F/BW, else in two passes of eight AVX2 lanes when it has AVX2, else
/// one message at a time.
pub(crate) fn hash_short16(key: &[u32; 8], mode: u32, msgs: [&[u8]; 16]) -> [[u8; 16]; 16] {
    #[cfg(obliv_x86_simd)]
    if avx512::detected() {
        // SAFETY: AVX-512F and AVX-512BW were confirmed at run time, the features the kernel
        // is compiled for; every message is at most 64 bytes (checked by the callers, asserted
        // inside).
        return unsafe { x86::hash_short16_avx512(key, mode, msgs) };
    }
    #[cfg(obliv_x86_simd)]
    if avx2::detected() {
        let lo: [&[u8]; 8] = core::array::from_fn(|l| msgs[l]);
        let hi: [&[u8]; 8] = core::array::from_fn(|l| msgs[8 + l]);
        // SAFETY: AVX2 was confirmed at run time, the feature the kernel is compiled for;
        // every message is at most 64 bytes (checked by the callers, asserted inside).
        let (a, b) = unsafe {
            (
                x86::hash_short8_avx2(key, mode, lo),
                x86::hash_short8_avx2(key, mode, hi),
            )
        };
        return core::array::from_fn(|l| if l < 8 { a[l] } else { b[l - 8] });
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

    /// `a + b` in each 32-bit lane.
    #[inline(always)]
    unsafe fn add8(a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: only called from the `avx2` kernel below.
        unsafe { _mm256_add_epi32(a, b) }
    }

    /// `a ^ b`.
    #[inline(always)]
    unsafe fn xor8(a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: only called from the `avx2` kernel below.
        unsafe { _mm256_xor_si256(a, b) }
    }

    /// Each 32-bit lane rotated right by 16 bits: a byte shuffle (AVX2 has no rotate).
    #[inline(always)]
    unsafe fn rot16(x: __m256i) -> __m256i {
        // SAFETY: only called from the `avx2` kernel below.
        unsafe {
            _mm256_shuffle_epi8(
                x,
                _mm256_set_epi8(
                    13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2, 13, 12, 15, 14, 9, 8, 11,
                    10, 5, 4, 7, 6, 1, 0, 3, 2,
                ),
            )
        }
    }

    /// Each 32-bit lane rotated right by 12 bits: two shifts and an or.
    #[inline(always)]
    unsafe fn rot12(x: __m256i) -> __m256i {
        // SAFETY: only called from the `avx2` kernel below.
        unsafe { _mm256_or_si256(_mm256_srli_epi32::<12>(x), _mm256_slli_epi32::<20>(x)) }
    }

    /// Each 32-bit lane rotated right by 8 bits: a byte shuffle.
    #[inline(always)]
    unsafe fn rot8(x: __m256i) -> __m256i {
        // SAFETY: only called from the `avx2` kernel below.
        unsafe {
            _mm256_shuffle_epi8(
                x,
                _mm256_set_epi8(
                    12, 15, 14, 13, 8, 11, 10, 9, 4, 7, 6, 5, 0, 3, 2, 1, 12, 15, 14, 13, 8, 11,
                    10, 9, 4, 7, 6, 5, 0, 3, 2, 1,
                ),
            )
        }
    }

    /// Each 32-bit lane rotated right by 7 bits: two shifts and an or.
    #[inline(always)]
    unsafe fn rot7(x: __m256i) -> __m256i {
        // SAFETY: only called from the `avx2` kernel below.
        unsafe { _mm256_or_si256(_mm256_srli_epi32::<7>(x), _mm256_slli_epi32::<25>(x)) }
    }

    /// The quarter-round on eight lanes.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn g8(
        v: &mut [__m256i; 16],
        a: usize,
        b: usize,
        c: usize,
        d: usize,
        x: __m256i,
        y: __m256i,
    ) {
        // SAFETY: only called from the `avx2` kernel below.
        unsafe {
            v[a] = add8(add8(v[a], v[b]), x);
            v[d] = rot16(xor8(v[d], v[a]));
            v[c] = add8(v[c], v[d]);
            v[b] = rot12(xor8(v[b], v[c]));
            v[a] = add8(add8(v[a], v[b]), y);
            v[d] = rot8(xor8(v[d], v[a]));
            v[c] = add8(v[c], v[d]);
            v[b] = rot7(xor8(v[b], v[c]));
        }
    }

    /// Transposes eight vectors of eight 32-bit words: word `w` of `r[l]` becomes word `l` of
    /// the result's vector `w` (the blake3 crate's `transpose_vecs`).
    #[inline(always)]
    unsafe fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
        // SAFETY: only called from the `avx2` kernel below.
        unsafe {
            // Pairs of rows interleaved by words, then by word pairs: each 128-bit half holds
            // one word of four rows (words 0–3 in the low halves, 4–7 in the high halves).
            let ab0 = _mm256_unpacklo_epi32(r[0], r[1]);
            let ab2 = _mm256_unpackhi_epi32(r[0], r[1]);
            let cd0 = _mm256_unpacklo_epi32(r[2], r[3]);
            let cd2 = _mm256_unpackhi_epi32(r[2], r[3]);
            let ef0 = _mm256_unpacklo_epi32(r[4], r[5]);
            let ef2 = _mm256_unpackhi_epi32(r[4], r[5]);
            let gh0 = _mm256_unpacklo_epi32(r[6], r[7]);
            let gh2 = _mm256_unpackhi_epi32(r[6], r[7]);
            let abcd0 = _mm256_unpacklo_epi64(ab0, cd0);
            let abcd1 = _mm256_unpackhi_epi64(ab0, cd0);
            let abcd2 = _mm256_unpacklo_epi64(ab2, cd2);
            let abcd3 = _mm256_unpackhi_epi64(ab2, cd2);
            let efgh0 = _mm256_unpacklo_epi64(ef0, gh0);
            let efgh1 = _mm256_unpackhi_epi64(ef0, gh0);
            let efgh2 = _mm256_unpacklo_epi64(ef2, gh2);
            let efgh3 = _mm256_unpackhi_epi64(ef2, gh2);
            [
                _mm256_permute2x128_si256::<0x20>(abcd0, efgh0),
                _mm256_permute2x128_si256::<0x20>(abcd1, efgh1),
                _mm256_permute2x128_si256::<0x20>(abcd2, efgh2),
                _mm256_permute2x128_si256::<0x20>(abcd3, efgh3),
                _mm256_permute2x128_si256::<0x31>(abcd0, efgh0),
                _mm256_permute2x128_si256::<0x31>(abcd1, efgh1),
                _mm256_permute2x128_si256::<0x31>(abcd2, efgh2),
                _mm256_permute2x128_si256::<0x31>(abcd3, efgh3),
            ]
        }
    }

    super::avx2::enable! {
        /// Eight single-block BLAKE3 compressions, lane `l` hashing `msgs[l]`: the AVX2 form of
        /// [`hash_short16_avx512`] for CPUs without AVX-512.
        // Casts: lengths ≤ 64, and key words reinterpreted bit for bit.
        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
        pub(super) unsafe fn hash_short8_avx2(
            key: &[u32; 8],
            mode: u32,
            msgs: [&[u8]; 8],
        ) -> [[u8; 16]; 8] {
            // Each message as its 16 zero-padded block words (the portable `block_words`: AVX2
            // has only word-granular masked loads, and masked loads plus merging in the partial
            // last word measured slower than this), as two vectors of eight words each, then
            // transposed in registers below.
            let mut lo = [_mm256_setzero_si256(); 8];
            let mut hi = [_mm256_setzero_si256(); 8];
            let mut lens = [0i32; 8];
            for (l, msg) in msgs.iter().enumerate() {
                assert!(msg.len() <= 64, "a single-block message");
                let w = super::block_words(msg);
                // SAFETY: AVX2 is enabled for this function; the loads read words 0–7 and
                // 8–15 of the 16-word array `w`.
                unsafe {
                    lo[l] = _mm256_loadu_si256(w.as_ptr().cast());
                    hi[l] = _mm256_loadu_si256(w[8..].as_ptr().cast());
                }
                lens[l] = msg.len() as i32;
            }
            // SAFETY: AVX2 is enabled for this function; every load and store is of a local
            // array of the vector's size.
            unsafe {
                // m[w] holds message word w of every lane.
                let m0 = transpose8(lo);
                let m1 = transpose8(hi);
                let m: [__m256i; 16] =
                    core::array::from_fn(|w| if w < 8 { m0[w] } else { m1[w - 8] });
                let splat = |x: u32| _mm256_set1_epi32(x as i32);
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
                    _mm256_setzero_si256(),
                    _mm256_setzero_si256(),
                    _mm256_loadu_si256(lens.as_ptr().cast()),
                    splat(mode | CHUNK_START | CHUNK_END | ROOT),
                ];
                rounds!(g8, v, m);
                // Output words 0–3 of every lane, transposed back so that each 128-bit half
                // holds the 16 output bytes of one lane: the low halves lanes 0–3, the high
                // halves lanes 4–7.
                let o: [__m256i; 4] = core::array::from_fn(|i| xor8(v[i], v[i + 8]));
                let w01lo = _mm256_unpacklo_epi32(o[0], o[1]);
                let w01hi = _mm256_unpackhi_epi32(o[0], o[1]);
                let w23lo = _mm256_unpacklo_epi32(o[2], o[3]);
                let w23hi = _mm256_unpackhi_epi32(o[2], o[3]);
                let lanes = [
                    _mm256_unpacklo_epi64(w01lo, w23lo), // lanes 0 and 4
                    _mm256_unpackhi_epi64(w01lo, w23lo), // lanes 1 and 5
                    _mm256_unpacklo_epi64(w01hi, w23hi), // lanes 2 and 6
                    _mm256_unpackhi_epi64(w01hi, w23hi), // lanes 3 and 7
                ];
                let mut out = [[0u8; 16]; 8];
                for (l, x) in lanes.iter().enumerate() {
                    _mm_storeu_si128(out[l].as_mut_ptr().cast(), _mm256_castsi256_si128(*x));
                    _mm_storeu_si128(
                        out[l + 4].as_mut_ptr().cast(),
                        _mm256_extracti128_si256::<1>(*x),
                    );
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

    /// A splitmix64 stream: reproducible random test keys and messages.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }

        fn key(&mut self) -> [u32; 8] {
            core::array::from_fn(|_| self.next() as u32)
        }
    }

    /// Every mode the tests above use, under random keys: plain hashing, keyed hashing, and
    /// both halves of `derive_key` (a context string, then key material under its key).
    fn modes(rng: &mut Rng) -> Vec<([u32; 8], u32)> {
        let ctx = rng.bytes(40);
        let ck = compress(
            &IV,
            &block_words(&ctx),
            ctx.len() as u32,
            DERIVE_KEY_CONTEXT | CHUNK_START | CHUNK_END | ROOT,
        );
        vec![
            (IV, 0),
            (rng.key(), KEYED_HASH),
            (IV, DERIVE_KEY_CONTEXT),
            (ck, DERIVE_KEY_MATERIAL),
        ]
    }

    /// Checks an `N`-lane kernel lane for lane against [`hash_short`]: random keys, every mode,
    /// and over 65 calls every length 0..=64 in every lane, lengths mixed within each call
    /// (lane `l` of call `c` hashes `(c + 7l) mod 65` bytes). Each message is a slice of a
    /// larger random buffer at a varying offset, so a kernel that read past a message's end or
    /// relied on alignment would get a different hash.
    fn check_lanes<const N: usize>(kernel: impl Fn(&[u32; 8], u32, [&[u8]; N]) -> [[u8; 16]; N]) {
        let mut rng = Rng(0x0b11_7c03_e000_0000 ^ N as u64);
        for _ in 0..4 {
            for (key, mode) in modes(&mut rng) {
                for c in 0..65 {
                    let buf = rng.bytes(N * 80);
                    let lens: [usize; N] = core::array::from_fn(|l| (c + 7 * l) % 65);
                    let msgs: [&[u8]; N] = core::array::from_fn(|l| {
                        let start = 80 * l + (c + l) % 13;
                        &buf[start..start + lens[l]]
                    });
                    let got = kernel(&key, mode, msgs);
                    for l in 0..N {
                        assert_eq!(
                            got[l],
                            hash_short(&key, mode, msgs[l]),
                            "lane {l} of {N}, {} bytes, mode {mode}",
                            lens[l]
                        );
                    }
                }
            }
        }
    }

    /// Prints that `test` is skipped because the kernel's feature set is missing on this CPU or
    /// switched off (`OBLIV_CPU_DISABLE`), or x86 SIMD is compiled out.
    fn skipped(test: &str, features: &[&str]) {
        eprintln!(
            "{test}: skipped, the kernel's CPU features ({}) are not available here (missing \
             on this CPU, switched off by OBLIV_CPU_DISABLE, or x86 SIMD compiled out)",
            features.join(", ")
        );
    }

    #[test]
    fn avx2_lanes_match_hash_short() {
        if avx2::detected() {
            // SAFETY: AVX2 was detected; every test message is at most 64 bytes.
            #[cfg(obliv_x86_simd)]
            check_lanes(|k, m, msgs| unsafe { x86::hash_short8_avx2(k, m, msgs) });
        } else {
            skipped("avx2_lanes_match_hash_short", avx2::FEATURES);
        }
    }

    #[test]
    fn avx512_lanes_match_hash_short() {
        if avx512::detected() {
            // SAFETY: AVX-512F/BW were detected; every test message is at most 64 bytes.
            #[cfg(obliv_x86_simd)]
            check_lanes(|k, m, msgs| unsafe { x86::hash_short16_avx512(k, m, msgs) });
        } else {
            skipped("avx512_lanes_match_hash_short", avx512::FEATURES);
        }
    }

    #[test]
    fn dispatch_matches_hash_short() {
        // Whichever kernel `hash_short16` picks here (AVX-512, AVX2 or none).
        check_lanes(hash_short16);
    }

    /// Both kernels on messages that end exactly at the end of a readable page, before an
    /// inaccessible one: reading any byte past a message's end would fault (the AVX-512
    /// kernel's masked loads must leave the masked-out bytes alone).
    #[test]
    #[cfg(all(obliv_x86_simd, target_os = "linux"))]
    fn lanes_do_not_read_past_the_message() {
        const PAGE: usize = 4096;
        // SAFETY: a fresh anonymous private mapping of two pages, the second made
        // inaccessible; only the first is read, through `page`, and both are unmapped below.
        let base = unsafe {
            let p = libc::mmap(
                core::ptr::null_mut(),
                2 * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            assert_eq!(
                libc::mprotect(p.cast::<u8>().add(PAGE).cast(), PAGE, libc::PROT_NONE),
                0
            );
            p.cast::<u8>()
        };
        // SAFETY: the first page is mapped readable and writable, and nothing else refers to it.
        let page = unsafe { core::slice::from_raw_parts_mut(base, PAGE) };
        let mut rng = Rng(7);
        page.copy_from_slice(&rng.bytes(PAGE));
        let key = rng.key();
        for len in 0..=64 {
            let msg = &page[PAGE - len..];
            let want = hash_short(&key, KEYED_HASH, msg);
            if avx2::detected() {
                // SAFETY: AVX2 was detected; the message is at most 64 bytes.
                let got = unsafe { x86::hash_short8_avx2(&key, KEYED_HASH, [msg; 8]) };
                assert!(got.iter().all(|h| *h == want), "AVX2, {len} bytes");
            }
            if avx512::detected() {
                // SAFETY: AVX-512F/BW were detected; the message is at most 64 bytes.
                let got = unsafe { x86::hash_short16_avx512(&key, KEYED_HASH, [msg; 16]) };
                assert!(got.iter().all(|h| *h == want), "AVX-512, {len} bytes");
            }
        }
        // SAFETY: the mapping made above, no longer referred to.
        assert_eq!(unsafe { libc::munmap(base.cast(), 2 * PAGE) }, 0);
    }
}
