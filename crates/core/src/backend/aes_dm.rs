//! Davies–Meyer compressions `AES-128_{k_i}(m_i) ⊕ m_i` under many different keys.
//!
//! With a fresh key per block the cost is the AES-128 key schedule, not the encryption: one
//! `aeskeygenassist` chain per key is a chain of ten dependent steps, so a one-at-a-time loop
//! is latency-bound. The AES-NI kernel here runs eight independent keys side by side, expands
//! each round key and consumes it at once in the one block's `aesenc` (the schedule is never
//! stored). The portable path is RustCrypto's `aes` one key at a time; the two are tested
//! bit-identical.

use crate::aes::Aes;
use crate::block::Block;

obliv_cpu::feature_set! {
    /// The eight-key AES-NI kernel.
    pub(crate) mod aesni = ["aes", "sse2"];
}

/// `out[i] = AES-128_{keys[i]}(msgs[i]) ⊕ msgs[i]`, AES-NI when available. The slices have
/// equal length (checked by the caller).
pub(crate) fn davies_meyer_many(keys: &[Block], msgs: &[Block], out: &mut [Block]) {
    debug_assert!(keys.len() == msgs.len() && msgs.len() == out.len());
    #[cfg(obliv_x86_simd)]
    if aesni::detected() {
        // SAFETY: `aesni::detected()` confirmed at run time that the CPU supports AES-NI and
        // SSE2, the features `x86::davies_meyer_aesni` is compiled for.
        unsafe { x86::davies_meyer_aesni(keys, msgs, out) };
        return;
    }
    davies_meyer_portable(keys, msgs, out);
}

/// The one-key-at-a-time reference: `Aes::new(k).encrypt_block(m) ^ m`.
pub(crate) fn davies_meyer_portable(keys: &[Block], msgs: &[Block], out: &mut [Block]) {
    for ((o, &k), &m) in out.iter_mut().zip(keys).zip(msgs) {
        *o = Aes::new(k).encrypt_block(m) ^ m;
    }
}

#[cfg(obliv_x86_simd)]
pub(crate) mod x86 {
    use core::arch::x86_64::{
        __m128i, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_aeskeygenassist_si128,
        _mm_loadu_si128, _mm_setzero_si128, _mm_shuffle_epi32, _mm_slli_si128, _mm_storeu_si128,
        _mm_xor_si128,
    };

    use zeroize::Zeroize;

    use crate::block::Block;

    /// Keys processed side by side.
    const LANES: usize = 8;

    crate::backend::aes_dm::aesni::enable! {
        /// One step of the AES-128 key expansion (FIPS-197 §5.2): `w[4i..4i+4]` from the previous
        /// round key `k`, with `SubWord(RotWord(w[4i-1])) ⊕ Rcon` from `aeskeygenassist`.
        #[inline]
        fn expand<const RCON: i32>(k: __m128i) -> __m128i {
            let t = _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<RCON>(k));
            let k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
            let k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
            let k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
            _mm_xor_si128(k, t)
        }
    }

    crate::backend::aes_dm::aesni::enable! {
        /// Eight Davies–Meyer compressions: each key's schedule is expanded round by round and
        /// used at once; the eight chains are independent, so their latencies overlap.
        #[inline]
        fn dm_x8(k: &mut [__m128i; LANES], m: &[__m128i; LANES]) -> [__m128i; LANES] {
            let mut s = [_mm_setzero_si128(); LANES];
            for i in 0..LANES {
                s[i] = _mm_xor_si128(m[i], k[i]);
            }
            macro_rules! round {
                ($rc:literal) => {
                    for i in 0..LANES {
                        k[i] = expand::<$rc>(k[i]);
                        s[i] = _mm_aesenc_si128(s[i], k[i]);
                    }
                };
            }
            round!(0x01);
            round!(0x02);
            round!(0x04);
            round!(0x08);
            round!(0x10);
            round!(0x20);
            round!(0x40);
            round!(0x80);
            round!(0x1b);
            for i in 0..LANES {
                k[i] = expand::<0x36>(k[i]);
                s[i] = _mm_xor_si128(_mm_aesenclast_si128(s[i], k[i]), m[i]);
            }
            s
        }
    }

    crate::backend::sse2::enable! {
        /// Loads eight blocks.
        #[inline]
        fn load8(b: &[Block; LANES]) -> [__m128i; LANES] {
            let mut r = [_mm_setzero_si128(); LANES];
            for (r, b) in r.iter_mut().zip(b) {
                // SAFETY: `b` is a valid, readable 16-byte `Block` (`repr(transparent)` over
                // `u128`, little-endian bytes = the AES byte order of `Block::to_bytes`); the
                // unaligned load has no alignment requirement.
                *r = unsafe { _mm_loadu_si128(core::ptr::from_ref(b).cast::<__m128i>()) };
            }
            r
        }
    }

    crate::backend::sse2::enable! {
        /// Stores eight blocks.
        #[inline]
        fn store8(v: &[__m128i; LANES], out: &mut [Block; LANES]) {
            for (o, v) in out.iter_mut().zip(v) {
                // SAFETY: `o` is a valid, writable 16-byte `Block` (any bit pattern is a valid
                // `u128`); the unaligned store has no alignment requirement.
                unsafe { _mm_storeu_si128(core::ptr::from_mut(o).cast::<__m128i>(), *v) };
            }
        }
    }

    crate::backend::aes_dm::aesni::enable! {
        /// `out[i] = AES-128_{keys[i]}(msgs[i]) ⊕ msgs[i]`, eight keys at a time (the tail padded
        /// with zero blocks whose outputs are dropped).
        pub(crate) fn davies_meyer_aesni(keys: &[Block], msgs: &[Block], out: &mut [Block]) {
            let n = keys.len().min(msgs.len()).min(out.len());
            let whole = n / LANES * LANES;
            for ((k, m), o) in keys[..whole]
                .chunks_exact(LANES)
                .zip(msgs[..whole].chunks_exact(LANES))
                .zip(out[..whole].chunks_exact_mut(LANES))
            {
                // The `chunks_exact` pieces have exactly `LANES` elements.
                let (Ok(k), Ok(m), Ok(o)) = (
                    <&[Block; LANES]>::try_from(k),
                    <&[Block; LANES]>::try_from(m),
                    <&mut [Block; LANES]>::try_from(o),
                ) else {
                    continue;
                };
                let mut kv = load8(k);
                let r = dm_x8(&mut kv, &load8(m));
                store8(&r, o);
                // `kv` ends as the last round keys, from which the keys can be recomputed.
                kv.zeroize();
            }
            let rest = n - whole;
            if rest > 0 {
                let mut k = [Block::ZERO; LANES];
                let mut m = [Block::ZERO; LANES];
                let mut o = [Block::ZERO; LANES];
                k[..rest].copy_from_slice(&keys[whole..n]);
                m[..rest].copy_from_slice(&msgs[whole..n]);
                let mut kv = load8(&k);
                let r = dm_x8(&mut kv, &load8(&m));
                store8(&r, &mut o);
                out[whole..n].copy_from_slice(&o[..rest]);
                kv.zeroize();
                k.zeroize();
                m.zeroize();
                o.zeroize();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// FIPS-197 Appendix C.1 (AES-128): key 00..0f, plaintext 00112233..ff.
    #[test]
    fn fips197_c1_every_path() {
        let key = Block::from_bytes([
            0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d,
            0x0e, 0x0f,
        ]);
        let pt = Block::from_bytes([
            0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff,
        ]);
        let ct = Block::from_bytes([
            0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
            0xc5, 0x5a,
        ]);
        let expect = ct ^ pt;
        for n in [1usize, 8, 9, 17] {
            let keys = vec![key; n];
            let msgs = vec![pt; n];
            let mut out = vec![Block::ZERO; n];
            davies_meyer_portable(&keys, &msgs, &mut out);
            assert!(out.iter().all(|&o| o == expect));
            let mut out = vec![Block::ZERO; n];
            davies_meyer_many(&keys, &msgs, &mut out);
            assert!(out.iter().all(|&o| o == expect));
            #[cfg(obliv_x86_simd)]
            if aesni::detected() {
                let mut out = vec![Block::ZERO; n];
                // SAFETY: AES-NI and SSE2 were confirmed at run time just above.
                unsafe { x86::davies_meyer_aesni(&keys, &msgs, &mut out) };
                assert!(out.iter().all(|&o| o == expect));
            }
        }
    }

    proptest! {
        /// Every path equals the portable one, for every length 0..100 (odd tails included).
        #[test]
        fn paths_agree(raw in proptest::collection::vec(any::<(u128, u128)>(), 0..100)) {
            let keys: Vec<Block> = raw.iter().map(|&(k, _)| Block(k)).collect();
            let msgs: Vec<Block> = raw.iter().map(|&(_, m)| Block(m)).collect();
            let mut want = vec![Block::ZERO; raw.len()];
            davies_meyer_portable(&keys, &msgs, &mut want);
            let mut got = vec![Block::ZERO; raw.len()];
            davies_meyer_many(&keys, &msgs, &mut got);
            prop_assert_eq!(&got, &want);
            #[cfg(obliv_x86_simd)]
            if aesni::detected() {
                let mut got = vec![Block::ZERO; raw.len()];
                // SAFETY: AES-NI and SSE2 were confirmed at run time just above.
                unsafe { x86::davies_meyer_aesni(&keys, &msgs, &mut got) };
                prop_assert_eq!(&got, &want);
            }
        }
    }
}
