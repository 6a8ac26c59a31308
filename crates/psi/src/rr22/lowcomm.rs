//! RR22 low-communication ("SD" in the paper's Table 2): unbinned OKVS with binary dense
//! columns and 64-bit values over subfield VOLE with `A ∈ GF(2^64)`.
//!
//! RR22 §4, "Low communication instantiation": the OKVS values live in a small field `𝔹`
//! (here 64-bit strings, GF(2^64) as a GF(2)-vector space) while the VOLE's `Δ`, `B`, `C` stay
//! in `𝔽 = GF(2^128)`, so the masked OKVS costs 8 bytes per slot instead of 16; the OKVS is
//! the unbinned `Paxos<Binary>` (`m ≈ 1.23·n_r + g + λ`), the most compact one.
//!
//! 1. Hello (protocol 11).
//! 2. Subfield VOLE of length `m` ([`obliv_vole::Subfield64VoleSender`]/`Receiver`): S gets
//!    `Δ, B ∈ GF(2^128)^m`, R gets `A ∈ {0,1}^{64·m}` (as `u64`) and `C` with
//!    `C[i] = B[i] ⊕ embed64(A[i])·Δ`.
//! 3. R encodes `P = Encode({k_x ↦ H64(k_x)})` over `u64` values (`H64(k)` = the low 64 bits
//!    of `π(k) ⊕ k`) and sends the seed and `A' = A ⊕ P` (8 bytes per slot).
//! 4. S sets `K[i] = B[i] ⊕ embed64(A'[i])·Δ = C[i] ⊕ embed64(P[i])·Δ` and sends, for each `y`,
//!    `H_out(k_y, Decode(K, k_y) ⊕ embed64(H64(k_y))·Δ)` truncated to
//!    `w = ⌈(λ + ⌈log₂ n_r⌉ + ⌈log₂ n_s⌉)/8⌉` bytes, sorted, without repeats. Decoding is
//!    GF(2)-linear and so is `embed64`, hence
//!    `Decode(K, k) ⊕ embed64(H64(k))·Δ = Decode(C, k) ⊕ embed64(e_k)·Δ` with
//!    `e_k = Decode(P, k) ⊕ H64(k) ∈ {0,1}^64`.
//! 5. R outputs the `x` whose `H_out(k_x, Decode(C, k_x))` (truncated) S sent.
//!
//! # The 2^-λ statistical bound
//!
//! `λ` is [`Rr22Config::stat_security`](super::Rr22Config::stat_security), 40 by default.
//!
//! For `x ∈ X`, `e_{k_x} = 0` by construction, so S's value for `x` equals R's: no false
//! negatives (the OKVS failing to encode is retried with a new seed). Two bad events remain:
//!
//! - **`e_y = 0` for some `y ∈ Y \ X`** (S's value is then `H_out(k_y, Decode(C, k_y))`,
//!   which R can compute for any candidate `y`: R would learn `y ∈ Y`). `Decode(P, k_y)` is a
//!   fixed function of `P`, and `H64(k_y)` is a random-oracle output independent of `P` (`P`
//!   only depends on the `H64(k_x)`, `x ∈ X`, and `k_y ≠ k_x` except with probability
//!   `n_r·n_s·2^-120` — a collision of the item keys; collisions of `H64` alone between
//!   different keys change nothing, since the OKVS rows differ). So
//!   `Pr[e_y = 0] = 2^-64` per item and `Pr[∃y] ≤ n_s·2^-64`, which is `≤ 2^-λ` for
//!   `n_s ≤ 2^(64-λ)` = [`max_sender_items`]`(λ)` (2^24 = [`MAX_SENDER_ITEMS`] at λ = 40,
//!   2^14 at λ = 50; a larger set must be split into buckets, and a run with more is
//!   refused). Over buckets the bound adds up to `N_s·2^-64` for `N_s` sender items in
//!   total: `runs` buckets at λ = [`crate::job_stat_security`]`(runs)` hold at most
//!   `runs·2^(64-λ) ≤ 2^24` sender items, so the job stays below `2^-40`.
//! - **A false match**: R's value for `x` equals (in its first `w` bytes) S's value for some
//!   `y ≠ x`. If `e_y ≠ 0`, `embed64(e_y)·Δ` is uniform over GF(2^128) (Δ uniform and
//!   unknown to R, `embed64(e_y) ≠ 0` invertible), so the hash input and hence the
//!   truncated output is uniform: probability `2^-8w` per pair. If `e_y = 0`, the two values
//!   are random-oracle outputs at different tweaks `k_x ≠ k_y`: again `2^-8w`. Over the
//!   `n_r·n_s` pairs: `n_r·n_s·2^-8w ≤ 2^-λ` by the choice of `w`.
//!
//! RR22 states the requirement as `|𝔹| ≥ 2^(λ + log₂(n_x·n_y))`, which is what the
//! comparison width `w` (bytes of `H_out`) meets here; the OKVS values themselves need only
//! the `n_s·2^-64` bound above, which is why 64-bit values suffice up to `n_s = 2^(64-λ)`.
//!
//! # Security and leakage
//!
//! Semi-honest, as the fast variant (RR22 Thm. C.1 with `𝔹 = GF(2^64)`, `𝔽 = GF(2^128)`):
//! R learns the intersection and `n_s` (distinct items of S), S learns `n_r`; `A'` is uniform
//! to S since `A` is uniform in `{0,1}^{64m}` (the 64-bit subfield VOLE of obliv-vole, dual
//! LPN over GF(2^64) with the binary ExConv code, see its security note).

use obliv_core::{Block, gf128};
use obliv_net::Channel;
use obliv_okvs::{Binary, Okvs, Paxos};
use obliv_vole::{Security, Subfield64VoleReceiver, Subfield64VoleSender, VoleConfig, embed64};
use rand_core::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

use super::session::{receiver_in, sender_in};

use super::{
    STAT_SECURITY, TAG_OKVS, TAG_SEED, VoleBuffers, encode_with_retry, keys_and_values, okvs_err,
    out_hash, recv_and_intersect, recv_block, recv_chunks, send_chunks, send_values, vole_err,
};
use crate::error::{Error, Result};
use crate::item::PsiItem;
use crate::wire::frame;

/// The largest sender set of one low-communication run at the default statistical security
/// (`n_s·2^-64 ≤ 2^-40`, see the module documentation): [`max_sender_items`]`(40)`.
pub const MAX_SENDER_ITEMS: usize = 1 << (64 - STAT_SECURITY);

/// The largest sender set of one low-communication run at statistical security
/// `stat_security` (`n_s·2^-64 ≤ 2^-λ`): `2^(64-λ)` for `λ ≤ 64`, none above (every
/// non-empty sender set is then refused; use [`super::Variant::Fast`]).
pub fn max_sender_items(stat_security: u32) -> usize {
    match 64u32.checked_sub(stat_security) {
        None => 0,
        Some(k) => 1usize.checked_shl(k).unwrap_or(usize::MAX),
    }
}

/// The unbinned binary-dense OKVS both sides use for `n_r` receiver keys at statistical
/// security `stat_security`.
fn okvs(n_r: usize, stat_security: u32, seed: Block) -> Result<Paxos<Binary>> {
    Paxos::<Binary>::new(n_r, stat_security, seed).map_err(okvs_err)
}

/// `H64(k)`: the low 64 bits of `h(k) = π(k) ⊕ k`.
#[allow(clippy::cast_possible_truncation)] // the low 64 bits are the point
fn h64(v: &Block) -> u64 {
    v.0 as u64
}

/// `out[i] ^= embed64(x[i])·Δ`, in parallel batches. The scratch products are zeroized:
/// with `x` the receiver's masked OKVS `A'` (public), one product `embed64(A'_i)·Δ` gives
/// `Δ`.
fn add_embedded(out: &mut [Block], x: &[u64], delta: Block) {
    out.par_chunks_mut(4096)
        .zip(x.par_chunks(4096))
        .for_each(|(o, x)| {
            let e: Vec<Block> = x.iter().map(|&a| embed64(a)).collect();
            let mut t = Zeroizing::new(vec![Block::ZERO; e.len()]);
            gf128::scale_into(&e, delta, &mut t);
            for (o, t) in o.iter_mut().zip(t.iter()) {
                *o ^= *t;
            }
        });
}

fn vole_config() -> VoleConfig {
    VoleConfig::with_security(Security::SemiHonest)
}

/// The receiver of RR22 low-communication.
pub(super) fn receiver<C, T, R>(
    ch: &mut C,
    items: &[T],
    n_s: usize,
    (w, stat_security): (usize, u32),
    (vole, bufs): (&mut Option<Subfield64VoleReceiver>, &mut VoleBuffers),
    rng: &mut R,
) -> Result<Vec<usize>>
where
    C: Channel + ?Sized,
    T: PsiItem + Sync,
    R: CryptoRng + ?Sized,
{
    let n = items.len();
    let (keys, values128) = keys_and_values(items);
    let values: Vec<u64> = values128.iter().map(h64).collect();
    let m = okvs(n, stat_security, Block::ZERO)?.size();
    // The session's generator, set up (base OTs) on its first use.
    let generator = receiver_in(vole, ch, vole_config(), rng)?;
    generator
        .extend_into(ch, m, rng, &mut bufs.a64, &mut bufs.c)
        .map_err(vole_err)?;
    let (a, c) = (&bufs.a64, &bufs.c);
    if a.len() != m || c.len() != m {
        return Err(Error::Protocol("VOLE returned the wrong length".into()));
    }

    let mut p = Zeroizing::new(vec![0u64; m]);
    let (seed, o) = encode_with_retry(
        |s| okvs(n, stat_security, s),
        &keys,
        &values,
        |k| {
            let mut v = k.to_vec();
            obliv_core::hash::cr_in_place(&mut v);
            v.iter().map(h64).collect()
        },
        &mut p,
        rng,
    )?;
    ch.send_vec(frame(TAG_SEED, 0, &seed.to_bytes())?)?;
    send_chunks(ch, TAG_OKVS, m, 8, |j, buf| {
        buf.extend_from_slice(&(p[j] ^ a[j]).to_le_bytes());
    })?;
    drop(p);

    // Decoded into the buffer of the 128-bit values, no longer needed.
    let mut ours = values128;
    o.decode_into(&keys, &c[..], &mut ours).map_err(okvs_err)?;
    out_hash(&keys, &mut ours);
    recv_and_intersect(ch, ours, keys, n_s, w)
}

/// The sender of RR22 low-communication.
pub(super) fn sender<C, T, R>(
    ch: &mut C,
    items: &[T],
    n_r: usize,
    (w, stat_security): (usize, u32),
    (vole, bufs): (&mut Option<Subfield64VoleSender>, &mut VoleBuffers),
    rng: &mut R,
) -> Result<()>
where
    C: Channel + ?Sized,
    T: PsiItem + Sync,
    R: CryptoRng + ?Sized,
{
    let m = okvs(n_r, stat_security, Block::ZERO)?.size();
    let (keys, values) = keys_and_values(items);
    // The session's generator, set up (base OTs) on its first use.
    let generator = sender_in(vole, ch, vole_config(), rng)?;
    let delta = Zeroizing::new(generator.delta());
    generator
        .extend_into(ch, m, rng, &mut bufs.a_or_b)
        .map_err(vole_err)?;
    let k = &mut bufs.a_or_b;
    if k.len() != m {
        return Err(Error::Protocol("VOLE returned the wrong length".into()));
    }

    let o = okvs(
        n_r,
        stat_security,
        recv_block(ch, TAG_SEED, "the OKVS seed")?,
    )?;
    let d = *delta;
    recv_chunks(ch, TAG_OKVS, "OKVS", m, 8, |start, payload| {
        let a: Vec<u64> = payload
            .chunks_exact(8)
            .map(|c| {
                let mut x = [0u8; 8];
                x.copy_from_slice(c);
                u64::from_le_bytes(x)
            })
            .collect();
        add_embedded(&mut k[start..start + a.len()], &a, d);
    })?;

    let mut out = o.decode(&keys, &k[..]).map_err(okvs_err)?;
    let h: Vec<u64> = values.iter().map(h64).collect();
    add_embedded(&mut out, &h, d);
    out_hash(&keys, &mut out);
    send_values(ch, &out, w)
}
