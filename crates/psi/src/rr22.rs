//! RR22 PSI (fast, semi-honest): VOLE-based PSI from the binned RR22 OKVS.
//!
//! Raghuraman and Rindal, "Blazing Fast PSI from Improved OKVS and Subfield VOLE", CCS 2022,
//! [ePrint 2022/320], §5 (Figure 4, the VOLE-based OPRF of [RS21] instantiated with their
//! OKVS), following the message flow of volePSI's `RsOprf`/`RsPsi`.
//!
//! # Protocol
//!
//! The receiver R holds `X` (`n_r` items), the sender S holds `Y` (`n_s` items). Every item is
//! hashed to a key `k = RO(item)` (BLAKE3 keyed with a key derived from a domain string)
//! and to a value `h(k) = π(k) ⊕ k` (fixed-key AES, as volePSI hashes its inputs). With
//! `Encode`/`Decode` the binned GF(2^128)-dense OKVS of `obliv-okvs` of size `m` for `n_r` keys
//! (a linear map: `Decode(Δ·P ⊕ Q, k) = Δ·Decode(P, k) ⊕ Decode(Q, k)`):
//!
//! 1. Both sides exchange a [`Hello`] (protocol, role, bin size, set sizes).
//! 2. R and S run a silent VOLE of length `m` (`obliv-vole`): S gets `(Δ, B)`, R gets `(A, C)`
//!    with `C = B ⊕ A·Δ`.
//! 3. R picks a random OKVS seed, solves `P = Encode({k_x ↦ h(k_x)})` (a new seed on the
//!    `2^-40` chance of failure), and sends the seed and `A' = A ⊕ P` (`m` blocks).
//! 4. S computes `K = B ⊕ Δ·A' = C ⊕ Δ·P`, so that for every key
//!    `Decode(K, k) ⊕ Δ·h(k) = Decode(C, k) ⊕ Δ·(Decode(P, k) ⊕ h(k))`, which is
//!    `Decode(C, k)` exactly when `k` is one of R's keys and uniform (through Δ) otherwise.
//!    S sends `{T(F(y))}` with `F(y) = H_out(k_y, Decode(K, k_y) ⊕ Δ·h(k_y))`, truncated to
//!    `w = ⌈(40 + log2 n_r + log2 n_s)/8⌉` bytes, sorted (which hides S's order) and without
//!    repeats.
//! 5. R computes `T(H_out(k_x, Decode(C, k_x)))` for each of its items and outputs the indices
//!    whose value S sent.
//!
//! `H_out(k, z) = π(π(z) ⊕ k) ⊕ π(z)` is the tweakable circular-correlation-robust hash of
//! [GKWW20] (fixed-key AES) with the item key as tweak; volePSI's semi-honest mode uses the
//! untweaked `π(z) ⊕ z`. Both are modelled as random oracles in the RR22 proof.
//!
//! # Security and leakage
//!
//! Semi-honest security (RR22 Thm. 5.2 with the VOLE functionality realised by `obliv-vole`
//! under dual LPN with ExConv codes, and the hashes as random oracles). R learns the
//! intersection and `n_s` (and the number of distinct items of S); S learns `n_r`. R's
//! masked OKVS `A'` is uniform to S since `A` is; S's values for items outside `X` are
//! pseudorandom to R because each involves `Δ·e` for a known non-zero `e` and the unknown `Δ`.
//! The OKVS seed is chosen by R (semi-honest: any seed is as good as another). False positives
//! occur with probability below `2^-40` overall.
//!
//! Duplicates: R may hold repeated items (every index of a common item is output); S's
//! repeated items are sent once.
//!
//! [ePrint 2022/320]: https://eprint.iacr.org/2022/320
//! [RS21]: https://eprint.iacr.org/2021/266
//! [GKWW20]: https://eprint.iacr.org/2019/074

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};

use obliv_core::aes::Aes;
use obliv_core::{Block, gf128, psi_compare_bytes};
use obliv_net::Channel;
use obliv_okvs::{BinnedPaxos, Gf128, Okvs};
use obliv_vole::{Security, VoleConfig};
use rand_core::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

use crate::ecdh::{Role, frame, parse};
use crate::error::{Error, Result};
use crate::handshake::{self, Hello};

/// Protocol identifier of RR22 fast (semi-honest, GF(2^128) VOLE, binned OKVS).
pub(crate) const PROTOCOL_FAST: u8 = 10;
/// Statistical security parameter: OKVS failure and false-match probability `≤ 2^-40`.
pub const STAT_SECURITY: u32 = 40;
/// Largest set a peer may announce (bounds the VOLE and OKVS this side allocates); larger
/// sets are split into buckets by the caller.
pub const MAX_ITEMS: usize = 1 << 28;
/// Blocks (or comparison values) per frame.
const CHUNK: usize = 1 << 16;
/// Encoding attempts before giving up (each fails with probability `≤ 2^-40`).
const MAX_ATTEMPTS: usize = 8;

const TAG_SEED: u8 = 1;
const TAG_OKVS: u8 = 2;
const TAG_COUNT: u8 = 3;
const TAG_VALUES: u8 = 4;

const DOMAIN_ITEM: &str = "obliv-psi rr22 v1 item to key";

/// Which RR22 variant to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Variant {
    /// Semi-honest, GF(2^128) VOLE and the binned OKVS with GF(2^128) dense columns.
    Fast,
}

/// Parameters both parties must agree on (checked by the handshake).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rr22Config {
    /// The variant.
    pub variant: Variant,
    /// Keys per OKVS bin (volePSI: 2^14); `1..=2^24`.
    pub bin_size: usize,
}

impl Default for Rr22Config {
    fn default() -> Self {
        Rr22Config {
            variant: Variant::Fast,
            bin_size: obliv_okvs::DEFAULT_BIN_SIZE,
        }
    }
}

fn role_code(r: Role) -> u8 {
    match r {
        Role::Receiver => 0,
        Role::Sender => 1,
    }
}

fn code_name(field: &'static str, v: u8) -> String {
    match (field, v) {
        ("protocol", PROTOCOL_FAST) => "rr22-fast".into(),
        ("protocol", 11) => "rr22-low-comm".into(),
        ("protocol", 12) => "rr22-malicious".into(),
        _ => crate::ecdh::code_name(field, v),
    }
}

fn vole_err(e: obliv_vole::Error) -> Error {
    match e {
        obliv_vole::Error::Net(n) => Error::Net(n),
        other => Error::Protocol(format!("VOLE: {other}")),
    }
}

fn is_duplicate(e: &obliv_okvs::Error) -> bool {
    matches!(e, obliv_okvs::Error::DuplicateKey { .. })
}

fn okvs_err(e: obliv_okvs::Error) -> Error {
    Error::InvalidParameter(format!("OKVS: {e}"))
}

/// The OKVS both sides use for `n_r` receiver keys (its size does not depend on the seed).
fn okvs(n_r: usize, cfg: &Rr22Config, seed: Block) -> Result<BinnedPaxos<Gf128>> {
    BinnedPaxos::<Gf128>::with_bin_size(n_r, cfg.bin_size, STAT_SECURITY, seed).map_err(okvs_err)
}

/// Keys `RO(item)` and values `h(k) = π(k) ⊕ k`, in parallel.
fn keys_and_values<T: AsRef<[u8]> + Sync>(items: &[T]) -> (Vec<Block>, Vec<Block>) {
    // BLAKE3 keyed by the derived key of the domain string: the same random oracle family
    // as `obliv_core::hash::ro_hash`, with the key derivation done once instead of per item.
    let key = blake3::derive_key(DOMAIN_ITEM, &[]);
    let keys: Vec<Block> = items
        .par_iter()
        .map(|it| {
            let h = blake3::keyed_hash(&key, it.as_ref());
            let mut b = [0u8; 16];
            b.copy_from_slice(&h.as_bytes()[..16]);
            Block::from_bytes(b)
        })
        .collect();
    let mut values = keys.clone();
    values
        .par_chunks_mut(1024)
        .for_each(obliv_core::hash::cr_in_place);
    (keys, values)
}

/// `z[i] ← H_out(k[i], z[i]) = π(π(z) ⊕ k) ⊕ π(z)`, in parallel batches.
fn out_hash(keys: &[Block], z: &mut [Block]) {
    z.par_chunks_mut(1024)
        .zip(keys.par_chunks(1024))
        .for_each(|(z, k)| {
            let aes = Aes::fixed();
            aes.encrypt_blocks(z);
            let mut t: Vec<Block> = z.iter().zip(k).map(|(&p, &k)| p ^ k).collect();
            aes.encrypt_blocks(&mut t);
            for (z, t) in z.iter_mut().zip(&t) {
                *z ^= *t;
            }
        });
}

/// The first `w ≤ 16` bytes of `b`, as an integer.
fn truncate(b: Block, w: usize) -> u128 {
    if w >= 16 {
        b.0
    } else {
        b.0 & ((1u128 << (8 * w)) - 1)
    }
}

/// Runs RR22 PSI as `role` over `ch` on `items`.
///
/// Returns, for the receiver, the indices (ascending) of `items` in the intersection; `None`
/// for the sender. Duplicate items are allowed (see the [module documentation](self)).
///
/// # Errors
/// A handshake mismatch, a network error, a VOLE failure (as [`Error::Protocol`]), a protocol
/// violation (a frame of the wrong kind, order or size, a peer set above [`MAX_ITEMS`]), or
/// [`Error::InvalidParameter`] for a bad configuration.
pub fn run<C, T, R>(
    ch: &mut C,
    role: Role,
    items: &[T],
    cfg: &Rr22Config,
    rng: &mut R,
) -> Result<Option<Vec<usize>>>
where
    C: Channel + ?Sized,
    T: AsRef<[u8]> + Sync,
    R: CryptoRng + ?Sized,
{
    if cfg.bin_size == 0 || cfg.bin_size > 1 << 24 || items.len() > MAX_ITEMS {
        return Err(Error::InvalidParameter(format!(
            "bin size must be in 1..=2^24 and at most {MAX_ITEMS} items"
        )));
    }
    let protocol = match cfg.variant {
        Variant::Fast => PROTOCOL_FAST,
    };
    let ours = Hello {
        protocol,
        curve: 0,
        role: role_code(role),
        flags: 0,
        batch: u32::try_from(cfg.bin_size).unwrap_or(u32::MAX),
        n_items: items.len() as u64,
        param: u64::from(STAT_SECURITY),
    };
    let other = match role {
        Role::Receiver => Role::Sender,
        Role::Sender => Role::Receiver,
    };
    let theirs = handshake::exchange(ch, &ours, role_code(other), code_name)?;
    let n_peer = usize::try_from(theirs.n_items)
        .ok()
        .filter(|&n| n <= MAX_ITEMS)
        .ok_or_else(|| {
            Error::Protocol(format!(
                "peer announced {} items, more than {MAX_ITEMS}",
                theirs.n_items
            ))
        })?;
    let (n_r, n_s) = match role {
        Role::Receiver => (items.len(), n_peer),
        Role::Sender => (n_peer, items.len()),
    };
    if n_r == 0 || n_s == 0 {
        return Ok(match role {
            Role::Receiver => Some(Vec::new()),
            Role::Sender => None,
        });
    }
    let w = psi_compare_bytes(STAT_SECURITY, n_r as u64, n_s as u64).min(16);
    let vole_cfg = VoleConfig::with_security(Security::SemiHonest);
    match role {
        Role::Receiver => receiver(ch, items, n_s, w, cfg, vole_cfg, rng).map(Some),
        Role::Sender => sender(ch, items, n_r, w, cfg, vole_cfg, rng).map(|()| None),
    }
}

fn receiver<C, T, R>(
    ch: &mut C,
    items: &[T],
    n_s: usize,
    w: usize,
    cfg: &Rr22Config,
    vole_cfg: VoleConfig,
    rng: &mut R,
) -> Result<Vec<usize>>
where
    C: Channel + ?Sized,
    T: AsRef<[u8]> + Sync,
    R: CryptoRng + ?Sized,
{
    let n = items.len();
    let (keys, values) = keys_and_values(items);
    let m = okvs(n, cfg, Block::ZERO)?.size();
    let (a, c) = obliv_vole::vole_receive(ch, m, vole_cfg, rng).map_err(vole_err)?;
    let (a, c) = (Zeroizing::new(a), Zeroizing::new(c));
    if a.len() != m || c.len() != m {
        return Err(Error::Protocol("VOLE returned the wrong length".into()));
    }

    // P = Encode({k ↦ h(k)}), with a fresh seed on the rare failure.
    let mut p = Zeroizing::new(vec![Block::ZERO; m]);
    let mut deduped: Option<(Vec<Block>, Vec<Block>)> = None;
    let mut seed = None;
    for _ in 0..MAX_ATTEMPTS {
        let s = Block::random(rng);
        let o = okvs(n, cfg, s)?;
        let (k, v) = deduped
            .as_ref()
            .map_or((&keys[..], &values[..]), |(k, v)| (&k[..], &v[..]));
        match o.encode_into(k, v, &mut p) {
            Ok(()) => {
                seed = Some((s, o));
                break;
            }
            // Repeated keys make the system singular (or are reported as such): on the first
            // failure, drop repeats (rare failures of distinct keys just retry).
            Err(e) if deduped.is_none() && (e.is_retryable() || is_duplicate(&e)) => {
                let mut uk = keys.clone();
                uk.par_sort_unstable();
                uk.dedup();
                let mut uv = uk.clone();
                obliv_core::hash::cr_in_place(&mut uv);
                deduped = Some((uk, uv));
            }
            Err(e) if e.is_retryable() => {}
            Err(e) => return Err(okvs_err(e)),
        }
    }
    let (seed, o) = seed.ok_or_else(|| {
        Error::InvalidParameter(format!(
            "OKVS encoding failed {MAX_ATTEMPTS} times (probability 2^-{STAT_SECURITY} each)"
        ))
    })?;

    // Send the seed and A' = A ⊕ P in chunks.
    ch.send_vec(frame(TAG_SEED, 0, &seed.to_bytes())?)?;
    for (i, (pc, ac)) in p.chunks(CHUNK).zip(a.chunks(CHUNK)).enumerate() {
        let mut buf = Vec::with_capacity(5 + 16 * pc.len());
        buf.push(TAG_OKVS);
        buf.extend_from_slice(&u32::try_from(i).unwrap_or(u32::MAX).to_le_bytes());
        for (&x, &y) in pc.iter().zip(ac.iter()) {
            buf.extend_from_slice(&(x ^ y).to_bytes());
        }
        ch.send_vec(buf)?;
    }
    ch.flush()?;
    drop(p);
    drop(a);

    // Our values: H_out(k, Decode(C, k)), truncated.
    let mut ours = o.decode(&keys, &c[..]).map_err(okvs_err)?;
    drop(c);
    out_hash(&keys, &mut ours);

    // The sender's values.
    let f = ch.recv_max(5 + 8)?;
    let (tag, index, payload) = parse(&f)?;
    if tag != TAG_COUNT || index != 0 || payload.len() != 8 {
        return Err(Error::Protocol(
            "expected the count of the sender's values".into(),
        ));
    }
    let mut cb = [0u8; 8];
    cb.copy_from_slice(payload);
    let count = usize::try_from(u64::from_le_bytes(cb))
        .ok()
        .filter(|&c| c <= n_s)
        .ok_or_else(|| Error::Protocol(format!("more values than the {n_s} items announced")))?;
    let mut theirs: HashSet<u128, KeyedHash> =
        HashSet::with_capacity_and_hasher(count, KeyedHash::new(rng));
    for i in 0..count.div_ceil(CHUNK) {
        let expected = (count - i * CHUNK).min(CHUNK) * w;
        let f = ch.recv_max(5 + expected)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_VALUES || index != i || payload.len() != expected {
            return Err(Error::Protocol(format!(
                "expected value chunk {i} of {expected} bytes, got tag {tag} chunk {index} of {} bytes",
                payload.len()
            )));
        }
        theirs.extend(payload.chunks_exact(w).map(crate::ecdh::pack));
    }
    Ok((0..n)
        .filter(|&j| theirs.contains(&truncate(ours[j], w)))
        .collect())
}

fn sender<C, T, R>(
    ch: &mut C,
    items: &[T],
    n_r: usize,
    w: usize,
    cfg: &Rr22Config,
    vole_cfg: VoleConfig,
    rng: &mut R,
) -> Result<()>
where
    C: Channel + ?Sized,
    T: AsRef<[u8]> + Sync,
    R: CryptoRng + ?Sized,
{
    let m = okvs(n_r, cfg, Block::ZERO)?.size();
    let (keys, values) = keys_and_values(items);
    let (delta, b) = obliv_vole::vole_send(ch, m, vole_cfg, rng).map_err(vole_err)?;
    let (delta, mut k) = (Zeroizing::new(delta), Zeroizing::new(b));
    if k.len() != m {
        return Err(Error::Protocol("VOLE returned the wrong length".into()));
    }

    // The seed, then K = B ⊕ Δ·A', chunk by chunk as A' arrives.
    let f = ch.recv_max(5 + 16)?;
    let (tag, index, payload) = parse(&f)?;
    if tag != TAG_SEED || index != 0 || payload.len() != 16 {
        return Err(Error::Protocol("expected the OKVS seed".into()));
    }
    let mut sb = [0u8; 16];
    sb.copy_from_slice(payload);
    let o = okvs(n_r, cfg, Block::from_bytes(sb))?;
    for (i, kc) in k.chunks_mut(CHUNK).enumerate() {
        let expected = 16 * kc.len();
        let f = ch.recv_max(5 + expected)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_OKVS || index != i || payload.len() != expected {
            return Err(Error::Protocol(format!(
                "expected OKVS chunk {i} of {expected} bytes, got tag {tag} chunk {index} of {} bytes",
                payload.len()
            )));
        }
        let d = *delta;
        kc.par_chunks_mut(4096)
            .zip(payload.par_chunks(4096 * 16))
            .for_each(|(kc, pc)| {
                for (kv, pb) in kc.iter_mut().zip(pc.chunks_exact(16)) {
                    let mut x = [0u8; 16];
                    x.copy_from_slice(pb);
                    *kv ^= gf128::mul(d, Block::from_bytes(x));
                }
            });
    }

    // F(y) = H_out(k, Decode(K, k) ⊕ Δ·h(k)), truncated, sorted, without repeats.
    let mut out = o.decode(&keys, &k[..]).map_err(okvs_err)?;
    drop(k);
    let d = *delta;
    out.par_chunks_mut(4096)
        .zip(values.par_chunks(4096))
        .for_each(|(o, v)| {
            for (o, &v) in o.iter_mut().zip(v) {
                *o ^= gf128::mul(d, v);
            }
        });
    out_hash(&keys, &mut out);
    let mut t: Vec<u128> = out.par_iter().map(|&b| truncate(b, w)).collect();
    t.par_sort_unstable();
    t.dedup();

    ch.send_vec(frame(TAG_COUNT, 0, &(t.len() as u64).to_le_bytes())?)?;
    for (i, chunk) in t.chunks(CHUNK).enumerate() {
        let mut buf = Vec::with_capacity(5 + w * chunk.len());
        buf.push(TAG_VALUES);
        buf.extend_from_slice(&u32::try_from(i).unwrap_or(u32::MAX).to_le_bytes());
        for v in chunk {
            buf.extend_from_slice(&v.to_le_bytes()[..w]);
        }
        ch.send_vec(buf)?;
    }
    ch.flush()?;
    Ok(())
}

/// A hasher for the receiver's set of (pseudorandom) comparison values, keyed with a secret
/// random multiplier so that a hostile sender cannot choose values that collide in the table.
#[derive(Clone, Copy)]
struct KeyedHash {
    k0: u64,
    k1: u64,
}

impl KeyedHash {
    fn new<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        KeyedHash {
            k0: rng.next_u64(),
            k1: rng.next_u64() | 1,
        }
    }
}

impl BuildHasher for KeyedHash {
    type Hasher = KeyedHasher;
    fn build_hasher(&self) -> KeyedHasher {
        KeyedHasher {
            keys: *self,
            state: 0,
        }
    }
}

/// The hasher of [`KeyedHash`]: `((lo ⊕ k0)·k1) ⊕ ((hi ⊕ k0)·k1 rotated)`, a multiply-shift
/// style universal hash of the 128-bit value.
struct KeyedHasher {
    keys: KeyedHash,
    state: u64,
}

impl Hasher for KeyedHasher {
    fn finish(&self) -> u64 {
        self.state
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        let h = (x ^ self.keys.k0).wrapping_mul(self.keys.k1);
        self.state = self.state.rotate_left(29) ^ h;
        self.state = self.state.wrapping_mul(self.keys.k1) ^ (self.state >> 32);
    }
    #[allow(clippy::cast_possible_truncation)] // splitting a u128 into its two halves
    fn write_u128(&mut self, x: u128) {
        self.write_u64(x as u64);
        self.write_u64((x >> 64) as u64);
    }
}
