//! The server's shuffle: a keyed pseudorandom permutation of `[0, n)` that the server can
//! recompute from its key file alone, position by position, without storing it.
//!
//! The offline phase streams, at position `j` of a segment, the OPRF value of the server item
//! `π(j)`; when the client later returns the positions of its matches (`server_get_result`),
//! the server maps each back with the same `π`. `π` is an 8-round Feistel network on
//! `2h`-bit strings (`2^{2h} ≥ n`, so `2^{2h} < 4n`) whose round function is AES-128 under a
//! key derived from the OPRF key, restricted to `[0, n)` by cycle walking [BR02, §3]
//! (Black–Rogaway, "Ciphers with arbitrary finite domains", CT-RSA 2002): expected at most
//! four Feistel evaluations per position. Eight rounds of a PRF make a strong PRP for
//! `2h`-bit strings (Luby–Rackoff needs four; Patarin's bounds for small domains favour more).
//!
//! Each segment (the initial set, then each appended batch) has its own permutation keyed by
//! `(offset, len)`, so an append never moves an item that was sent before.

use obliv_core::{Aes, Block};

/// Feistel rounds.
const ROUNDS: u64 = 8;

/// A keyed permutation of `[0, n)`.
pub(crate) struct Shuffle {
    aes: Aes,
    n: u64,
    half: u32,
}

impl Shuffle {
    /// The permutation of the segment `[offset, offset + n)` under the OPRF key bytes
    /// `secret` (positions are given relative to the segment).
    pub(crate) fn new(secret: &[u8], offset: u64, n: u64) -> Self {
        let mut input = zeroize::Zeroizing::new(Vec::with_capacity(secret.len() + 16));
        input.extend_from_slice(secret);
        input.extend_from_slice(&offset.to_le_bytes());
        input.extend_from_slice(&n.to_le_bytes());
        let key = obliv_core::hash::ro_hash_block("obliv-psi unbalanced v2 shuffle", &input);
        // Bits of n - 1, rounded up to even (at least 2): 2^(2·half) ≥ n.
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        Shuffle {
            aes: Aes::new(key),
            n,
            half: bits.div_ceil(2),
        }
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half) - 1;
        let (mut l, mut r) = (x >> self.half, x & mask);
        for round in 0..ROUNDS {
            let b = self
                .aes
                .encrypt_block(Block::from((u128::from(round) << 64) | u128::from(r)));
            // The low `half` bits of the AES output (`half ≤ 32`, so the conversion succeeds).
            let f = u64::try_from(u128::from(b) & u128::from(mask)).unwrap_or(0);
            (l, r) = (r, l ^ f);
        }
        (l << self.half) | r
    }

    /// `π(j)` for `j < n` (cycle walking: the Feistel permutation of `[0, 2^{2h})` applied
    /// until the value falls in `[0, n)`, which ends because the cycle through `j` returns
    /// to `j < n`).
    pub(crate) fn apply(&self, j: u64) -> u64 {
        debug_assert!(j < self.n);
        let mut x = self.feistel(j);
        while x >= self.n {
            x = self.feistel(x);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_permutation_for_many_sizes() {
        for n in [1u64, 2, 3, 4, 5, 7, 16, 17, 100, 1000, 4097] {
            let s = Shuffle::new(b"key", 0, n);
            let mut seen = vec![false; usize::try_from(n).unwrap()];
            for j in 0..n {
                let p = s.apply(j);
                assert!(p < n);
                assert!(!seen[usize::try_from(p).unwrap()], "n = {n}: {p} twice");
                seen[usize::try_from(p).unwrap()] = true;
            }
        }
    }

    #[test]
    fn depends_on_key_and_segment_and_moves_items() {
        let n = 1000;
        let a: Vec<u64> = (0..n)
            .map(|j| Shuffle::new(b"key", 0, n).apply(j))
            .collect();
        let b: Vec<u64> = (0..n)
            .map(|j| Shuffle::new(b"kez", 0, n).apply(j))
            .collect();
        let c: Vec<u64> = (0..n)
            .map(|j| Shuffle::new(b"key", 5, n).apply(j))
            .collect();
        assert_ne!(a, b);
        assert_ne!(a, c);
        let fixed = a
            .iter()
            .enumerate()
            .filter(|&(j, &p)| j as u64 == p)
            .count();
        assert!(fixed < 10, "{fixed} fixed points");
    }
}
