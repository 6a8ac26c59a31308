//! RR22 fast (and the message flow it shares with [`super::malicious`]): binned OKVS with
//! GF(2^128) dense columns and silent GF(2^128) VOLE.
//!
//! The protocol of the [parent module](super) with:
//!
//! - the binned OKVS of `obliv-okvs` (`BinnedPaxos<Gf128>`, bins of [`Rr22Config::bin_size`]
//!   keys, size `≈ 1.35·n_r` at bins of 2^14), values `h(k) ∈ GF(2^128)`;
//! - the silent GF(2^128) VOLE of `obliv-vole` (dual LPN with ExConv7x24 codes), so `A'` is
//!   `16·m` bytes;
//! - the sender's values truncated to `w = ⌈(λ + log₂ n_r + log₂ n_s)/8⌉` bytes, `λ` =
//!   [`Rr22Config::stat_security`], which also sets the OKVS's failure probability `2^-λ`.
//!
//! # Security and leakage (fast)
//!
//! Semi-honest security (RR22 Thm. C.1 with the VOLE functionality realised by `obliv-vole`
//! under dual LPN with ExConv codes, and the hashes as random oracles). R learns the
//! intersection and `n_s` (and the number of distinct items of S); S learns `n_r`. R's
//! masked OKVS `A'` is uniform to S since `A` is; S's values for items outside `X` are
//! pseudorandom to R because each involves `e·Δ` for a known non-zero `e` and the unknown `Δ`.
//! The OKVS seed is chosen by R (semi-honest: any seed is as good as another). False positives
//! occur with probability below `2^-λ` overall: each of the `n_r·n_s` pairs matches with
//! probability `2^-8w ≤ 2^-λ/(n_r·n_s)`.

use obliv_core::{Block, gf128};
use obliv_net::Channel;
use obliv_okvs::{BinnedPaxos, Gf128, Okvs};
use obliv_vole::{Security, VoleConfig, VoleReceiver, VoleSender};

use super::session::{receiver_in, sender_in};
use rand_core::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

use super::{
    Rr22Config, TAG_COMMIT, TAG_OKVS, TAG_OPEN, TAG_SEED, VoleBuffers, encode_with_retry,
    keys_and_values, malicious, okvs_err, out_hash, recv_and_intersect, recv_block, recv_chunks,
    send_chunks, send_values, vole_err,
};
use crate::error::{Error, Result};
use crate::item::PsiItem;
use crate::wire::{frame, parse};

/// The OKVS both sides use for `n_r` receiver keys (its size does not depend on the seed).
fn okvs(n_r: usize, cfg: &Rr22Config, seed: Block) -> Result<BinnedPaxos<Gf128>> {
    BinnedPaxos::<Gf128>::with_bin_size(n_r, cfg.bin_size, cfg.stat_security, seed)
        .map_err(okvs_err)
}

/// The VOLE configuration of the fast (`mal = false`) or malicious variant; a malicious
/// generator sets its base up with SoftSpokenOT and its check ([`VoleConfig::security`]).
fn vole_config(mal: bool) -> VoleConfig {
    VoleConfig::with_security(if mal {
        Security::Malicious
    } else {
        Security::SemiHonest
    })
}

/// `out[i] ^= x[i]·Δ` for all `i`, in parallel batches. The scratch products are zeroized:
/// with `x` the receiver's masked OKVS `A'` (public), one product `A'_i·Δ` gives `Δ`.
fn add_scaled(out: &mut [Block], x: &[Block], delta: Block) {
    out.par_chunks_mut(4096)
        .zip(x.par_chunks(4096))
        .for_each(|(o, x)| {
            let mut t = Zeroizing::new(vec![Block::ZERO; x.len()]);
            gf128::scale_into(x, delta, &mut t);
            for (o, t) in o.iter_mut().zip(t.iter()) {
                *o ^= *t;
            }
        });
}

/// The receiver of RR22 fast (`mal = false`) or malicious (`mal = true`); `w` is the
/// comparison width in bytes.
#[allow(clippy::too_many_arguments)] // the per-run parameters plus the session's generator
pub(super) fn receiver<C, T, R>(
    ch: &mut C,
    items: &[T],
    n_s: usize,
    w: usize,
    cfg: &Rr22Config,
    mal: bool,
    (vole, bufs): (&mut Option<VoleReceiver>, &mut VoleBuffers),
    rng: &mut R,
) -> Result<Vec<usize>>
where
    C: Channel + ?Sized,
    T: PsiItem + Sync,
    R: CryptoRng + ?Sized,
{
    let n = items.len();
    // Malicious: the sender's commitment to its share of the output-hash key comes first.
    let commitment = if mal {
        let f = ch.recv_max(5 + 32)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_COMMIT || index != 0 || payload.len() != 32 {
            return Err(Error::Protocol(
                "expected the sender's coin-toss commitment".into(),
            ));
        }
        let mut c = [0u8; 32];
        c.copy_from_slice(payload);
        Some(c)
    } else {
        None
    };
    let (keys, values) = keys_and_values(items);
    let m = okvs(n, cfg, Block::ZERO)?.size();
    // The session's generator, set up (base OTs) on its first use.
    let generator = receiver_in(vole, ch, vole_config(mal), rng)?;
    generator
        .extend_into(ch, m, rng, &mut bufs.a_or_b, &mut bufs.c)
        .map_err(vole_err)?;
    let (a, c) = (&bufs.a_or_b, &bufs.c);
    if a.len() != m || c.len() != m {
        return Err(Error::Protocol("VOLE returned the wrong length".into()));
    }

    // P = Encode({k ↦ h(k)}), with a fresh seed on the rare failure.
    let mut p = Zeroizing::new(Block::zeroed_vec(m));
    let (seed, o) = encode_with_retry(
        |s| okvs(n, cfg, s),
        &keys,
        &values,
        |k| {
            let mut v = k.to_vec();
            obliv_core::hash::cr_in_place(&mut v);
            v
        },
        &mut p,
        rng,
    )?;

    // The seed (and, malicious, our share w_r), then A' = A ⊕ P in chunks.
    let w_r = Block::random(rng);
    let mut first = seed.to_bytes().to_vec();
    if mal {
        first.extend_from_slice(&w_r.to_bytes());
    }
    ch.send_vec(frame(TAG_SEED, 0, &first)?)?;
    send_chunks(ch, TAG_OKVS, m, 16, |j, buf| {
        buf.extend_from_slice(&(p[j] ^ a[j]).to_bytes());
    })?;
    drop(p);

    // Our values: H_out(k, Decode(C, k)) (malicious: the Davies–Meyer hash keyed with w),
    // decoded into the buffer of the OKVS values, which are no longer needed.
    let mut ours = values;
    o.decode_into(&keys, &c[..], &mut ours).map_err(okvs_err)?;
    if let Some(commitment) = commitment {
        let w_s = recv_block(ch, TAG_OPEN, "the opening of the sender's coin toss")?;
        if malicious::commit(w_s) != commitment {
            return Err(Error::Protocol(
                "the sender's coin-toss opening does not match its commitment".into(),
            ));
        }
        malicious::dm_hash(&keys, &mut ours, w_s ^ w_r);
    } else {
        out_hash(&keys, &mut ours);
    }
    recv_and_intersect(ch, ours, keys, n_s, w)
}

/// The sender of RR22 fast (`mal = false`) or malicious (`mal = true`).
#[allow(clippy::too_many_arguments)] // the per-run parameters plus the session's generator
pub(super) fn sender<C, T, R>(
    ch: &mut C,
    items: &[T],
    n_r: usize,
    w: usize,
    cfg: &Rr22Config,
    mal: bool,
    (vole, bufs): (&mut Option<VoleSender>, &mut VoleBuffers),
    rng: &mut R,
) -> Result<()>
where
    C: Channel + ?Sized,
    T: PsiItem + Sync,
    R: CryptoRng + ?Sized,
{
    // Malicious: commit to our share of the output-hash key before anything else.
    let w_s = Zeroizing::new(Block::random(rng));
    if mal {
        ch.send_vec(frame(TAG_COMMIT, 0, &malicious::commit(*w_s))?)?;
        ch.flush()?;
    }
    let m = okvs(n_r, cfg, Block::ZERO)?.size();
    let (keys, values) = keys_and_values(items);
    // The session's generator, set up (base OTs) on its first use.
    let generator = sender_in(vole, ch, vole_config(mal), rng)?;
    generator
        .extend_into(ch, m, rng, &mut bufs.a_or_b)
        .map_err(vole_err)?;
    let delta = Zeroizing::new(generator.delta());
    let k = &mut bufs.a_or_b;
    if k.len() != m {
        return Err(Error::Protocol("VOLE returned the wrong length".into()));
    }
    // h(k)·Δ for our items, computed now, while the receiver solves its OKVS.
    let mut scaled = Zeroizing::new(Block::zeroed_vec(values.len()));
    add_scaled(&mut scaled, &values, *delta);
    drop(values);

    // The seed (and w_r), then K = B ⊕ A'·Δ, chunk by chunk as A' arrives.
    let first_len = if mal { 32 } else { 16 };
    let f = ch.recv_max(5 + first_len)?;
    let (tag, index, payload) = parse(&f)?;
    if tag != TAG_SEED || index != 0 || payload.len() != first_len {
        return Err(Error::Protocol("expected the OKVS seed".into()));
    }
    let block_at = |i: usize| {
        let mut b = [0u8; 16];
        b.copy_from_slice(&payload[16 * i..16 * i + 16]);
        Block::from_bytes(b)
    };
    let o = okvs(n_r, cfg, block_at(0))?;
    let w_r = if mal { block_at(1) } else { Block::ZERO };
    let d = *delta;
    recv_chunks(ch, TAG_OKVS, "OKVS", m, 16, |start, payload| {
        let a: Vec<Block> = payload
            .chunks_exact(16)
            .map(|c| {
                let mut x = [0u8; 16];
                x.copy_from_slice(c);
                Block::from_bytes(x)
            })
            .collect();
        add_scaled(&mut k[start..start + a.len()], &a, d);
    })?;
    if mal {
        // The receiver has committed to its OKVS: open our share.
        ch.send_vec(frame(TAG_OPEN, 0, &w_s.to_bytes())?)?;
    }

    // F(y) = H_out(k, Decode(K, k) ⊕ h(k)·Δ), truncated, sorted, without repeats.
    let mut out = o.decode(&keys, &k[..]).map_err(okvs_err)?;
    out.par_iter_mut()
        .zip(scaled.par_iter())
        .for_each(|(o, s)| *o ^= *s);
    drop(scaled);
    if mal {
        malicious::dm_hash(&keys, &mut out, *w_s ^ w_r);
    } else {
        out_hash(&keys, &mut out);
    }
    send_values(ch, &out, w)
}
