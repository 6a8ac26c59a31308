//! RR22 PSI: VOLE-based PSI from the RR22 OKVS, in three variants.
//!
//! Raghuraman and Rindal, "Blazing Fast PSI from Improved OKVS and Subfield VOLE", CCS 2022,
//! [ePrint 2022/320], §4 (Figure 4, the VOLE-based OPRF of [RS21] instantiated with their
//! OKVS), following the message flow of volePSI's `RsOprf`/`RsPsi`.
//!
//! | [`Variant`] | module | OKVS | VOLE | compared bytes | security |
//! |---|---|---|---|---|---|
//! | [`Variant::Fast`] | [`fast`] | binned, GF(2^128) dense | GF(2^128) silent VOLE | `⌈(λ + log₂ n_r + log₂ n_s)/8⌉` | semi-honest |
//! | [`Variant::LowComm`] | [`lowcomm`] | unbinned, binary dense, `u64` values | subfield VOLE over GF(2^64) | as fast | semi-honest |
//! | [`Variant::Malicious`] | [`malicious`] | binned, GF(2^128) dense | malicious GF(2^128) silent VOLE on SoftSpokenOT | 16 | malicious (see there) |
//!
//! All variants run through [`run`] with an [`Rr22Config`]; the variant is part of the
//! handshake (protocol ids 10, 11 and 12), so two parties that picked different variants stop
//! with [`Error::HandshakeMismatch`] before any item-dependent data flows.
//!
//! `λ` is [`Rr22Config::stat_security`] (40 by default, [`crate::job_stat_security`] for a
//! job of many runs): it sets the comparison width, the OKVS's failure probability `2^-λ`
//! and, for low-comm, the largest sender set of one run
//! ([`lowcomm::max_sender_items`]). It is in every hello, so peers with different values stop
//! with [`Error::HandshakeMismatch`] on the field `statistical security`. A comparison width
//! above 16 bytes (λ near 128 with large sets) is an [`Error::InvalidParameter`] on both
//! sides, in every variant.
//!
//! For many buckets with one peer, an [`Rr22Session`] sets the silent VOLE's base
//! correlations up once and runs one bucket per [`Rr22Session::run`] (each a fresh VOLE
//! extension of that bucket's OKVS size); [`run`] is a new session plus one run, with the
//! same messages as before sessions existed. [`Rr22Session::split`] forks a session into
//! children with independent VOLE streams (no new base OT, semi-honest variants; see
//! [`fork`]), and [`run_buckets`] runs buckets concurrently on such children, one thread and
//! [`obliv_net::Mux`] sub-channel per worker, streaming from the caller's iterator (the
//! crate's [`driver`](crate::driver), which runs every protocol's sessions this way).
//!
//! # The protocol (common to the variants)
//!
//! The receiver R holds `X` (`n_r` items), the sender S holds `Y` (`n_s` items). Every item is
//! mapped to a 128-bit key `k` (injectively for items of up to 15 bytes, by BLAKE3 keyed with
//! a key derived from a domain string for longer ones) and to a value `h(k) = π(k) ⊕ k`
//! (fixed-key AES, as volePSI hashes its inputs). With
//! `Encode`/`Decode` an OKVS of size `m` for `n_r` keys (a GF(2)-linear map:
//! `Decode(P ⊕ Q, k) = Decode(P, k) ⊕ Decode(Q, k)`):
//!
//! 1. Both sides exchange a [`Hello`] (protocol, role, bin size, set sizes).
//! 2. R and S run a silent VOLE of length `m`: S gets `(Δ, B)`, R gets `(A, C)` with
//!    `C = B ⊕ A·Δ`.
//! 3. R picks a random OKVS seed, solves `P = Encode({k_x ↦ h(k_x)})` (a new seed on the
//!    `2^-λ` chance of failure), and sends the seed and `A' = A ⊕ P`.
//! 4. S computes `K = B ⊕ A'·Δ = C ⊕ P·Δ`, so that for every key
//!    `Decode(K, k) ⊕ h(k)·Δ = Decode(C, k) ⊕ (Decode(P, k) ⊕ h(k))·Δ`, which is
//!    `Decode(C, k)` exactly when `k` is one of R's keys and uniform (through Δ) otherwise.
//!    S sends `F(y) = H_out(k_y, Decode(K, k_y) ⊕ h(k_y)·Δ)` for its items, truncated,
//!    sorted (which hides S's order) and without repeats.
//! 5. R computes `H_out(k_x, Decode(C, k_x))` for each of its items and outputs the indices
//!    whose value S sent.
//!
//! Duplicates: R may hold repeated items (every index of a common item is output); S's
//! repeated items are sent once.
//!
//! # Figures
//!
//! Both parties in one process over the in-memory channel, each on a one-thread rayon pool,
//! thread CPU time per party (this 2-core machine is shared with other builds, load 8–10, so
//! wall time is mostly waiting), `X = 0..n`, `Y = n/2..3n/2`, bytes sent by each party:
//!
//! | variant | n | receiver CPU | sender CPU | wall | R → S | S → R | total |
//! |---|---|---|---|---|---|---|---|
//! | fast | 2^16 | 0.030 s | 0.022 s | 0.22 s | 1.41 MB | 0.78 MB | 2.19 MB |
//! | fast | 2^20 | 0.59 s | 0.36 s | 2.4 s | 22.65 MB | 10.72 MB | 33.36 MB |
//! | fast | 10^6 | 0.54 s | 0.33 s | 3.0 s | 21.61 MB | 10.23 MB | 31.84 MB |
//! | low-comm | 2^16 | 0.021 s | 0.016 s | 0.12 s | 0.66 MB | 0.78 MB | 1.44 MB |
//! | low-comm | 2^20 | 0.77 s | 0.37 s | 3.1 s | 10.31 MB | 10.71 MB | 21.02 MB |
//! | low-comm | 10^6 | 0.78 s | 0.31 s | 2.3 s | 9.83 MB | 10.23 MB | 20.06 MB |
//! | malicious | 2^16 | 0.030 s | 0.021 s | 0.17 s | 1.41 MB | 1.25 MB | 2.65 MB |
//! | malicious | 2^20 | 0.63 s | 0.42 s | 2.8 s | 22.64 MB | 17.01 MB | 39.66 MB |
//! | malicious | 10^6 | 0.54 s | 0.35 s | 2.3 s | 21.61 MB | 16.23 MB | 37.85 MB |
//!
//! (The CPU columns above predate the profile-driven pass below; the bytes are unchanged.)
//!
//! ```text
//! OBLIV_RR22_VARIANT=all OBLIV_RR22_N=65536   cargo bench -p obliv-psi --bench rr22 -- --quick
//! OBLIV_RR22_VARIANT=all OBLIV_RR22_LOG_N=20  cargo bench -p obliv-psi --bench rr22 -- --quick
//! OBLIV_RR22_VARIANT=all OBLIV_RR22_N=1000000 cargo bench -p obliv-psi --bench rr22 -- --quick
//! ```
//!
//! A later bucket of an [`Rr22Session`] skips the VOLE's base setup. Thread CPU per party
//! (receiver / sender), median of 9, `X = 0..n`, `Y = n/2..3n/2`, n = 2^16, one-shot [`run`]
//! against a later [`Rr22Session::run`] of the same size:
//!
//! | variant | one-shot run | session run | saved per bucket | bytes saved per bucket |
//! |---|---|---|---|---|
//! | fast | 36.2 / 20.4 ms | 19.4 / 12.0 ms | 16.9 / 8.4 ms | 80.1 kB |
//! | low-comm | 25.3 / 18.2 ms | 18.0 / 11.9 ms | 7.3 / 6.3 ms | 76.0 kB |
//! | malicious | 42.7 / 30.5 ms | 27.0 / 19.2 ms | 15.7 / 11.3 ms | 82.4 kB |
//!
//! ```text
//! OBLIV_RR22_N=65536 OBLIV_RR22_REPS=9 cargo test -p obliv-psi --test rr22_session_cost -- --ignored --nocapture
//! ```
//!
//! Where the time goes (2^20 per side, fast unless said, one thread, thread CPU split by
//! protocol step, loaded machine): the silent VOLE is the largest part (receiver ≈ 0.21–0.27 s
//! — it encodes `A` and `C` side by side —, sender ≈ 0.13–0.17 s); then the OKVS encode
//! (binned ≈ 80 ms; low-comm's unbinned ≈ 0.2 s), the decodes (≈ 45–70 ms per side), the
//! receiver's lookup of the sender's values (≈ 40–50 ms), the sender's sort (≈ 30 ms), the
//! malicious Davies–Meyer hash (≈ 10–20 ms per side since the key schedules run eight at a
//! time with AES-NI in `obliv_core::aes::davies_meyer_many`; ≈ 70 ms one by one), and kernel
//! time for first-touch page faults of the large buffers (a fifth to a quarter of a party's
//! CPU in a one-shot run).
//!
//! Before and after the profile-driven pass (FIFO peeling and batched GF(2^128) dense dots in
//! obliv-okvs, radix sort of the sender's values, directory lookup of the receiver's), the same
//! binary run alternately with the previous tree on the same loaded machine (load 9–11), best
//! of 3 runs twice each, receiver / sender:
//!
//! | variant | n | before | after |
//! |---|---|---|---|
//! | fast | 2^20 | 0.56 / 0.35 s | 0.52 / 0.32 s |
//! | fast | 10^6 | 0.50 / 0.31 s | 0.49 / 0.27 s |
//! | low-comm | 2^20 | 0.78 / 0.35 s | 0.58 / 0.26 s |
//! | low-comm | 10^6 | 0.71 / 0.33 s | 0.55 / 0.25 s |
//! | malicious | 2^20 | 0.58 / 0.40 s | 0.59 / 0.38 s |
//! | malicious | 10^6 | 0.58 / 0.38 s | 0.57 / 0.35 s |
//!
//! ```text
//! OBLIV_RR22_VARIANT=lowcomm OBLIV_RR22_LOG_N=20 OBLIV_RR22_REPS=3 cargo run --release -p obliv-psi --example rr22_profile
//! ```
//!
//! [ePrint 2022/320]: https://eprint.iacr.org/2022/320
//! [RS21]: https://eprint.iacr.org/2021/266

use obliv_core::Block;
use obliv_core::aes::Aes;
use obliv_net::Channel;
use obliv_okvs::{DenseKind, DenseValue, Okvs};
use rand_core::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::handshake::{self, Hello};
use crate::session::{PsiSession, agree_split};
use crate::wire::{Role, check_stat_security, compare_width, frame, pack, parse, peer_count};

pub mod fast;
mod intersect;
pub mod lowcomm;
pub mod malicious;

/// Protocol identifier of RR22 fast (semi-honest, GF(2^128) VOLE, binned OKVS).
pub(crate) const PROTOCOL_FAST: u8 = 10;
/// Protocol identifier of RR22 low-communication (semi-honest, GF(2^64) subfield VOLE).
pub(crate) const PROTOCOL_LOW_COMM: u8 = 11;
/// Protocol identifier of RR22 malicious.
pub(crate) const PROTOCOL_MALICIOUS: u8 = 12;
pub use crate::wire::STAT_SECURITY;
/// Largest set a peer may announce (bounds the VOLE and OKVS this side allocates); larger
/// sets are split into buckets by the caller.
pub const MAX_ITEMS: usize = 1 << 28;
/// Blocks (or comparison values) per frame.
const CHUNK: usize = 1 << 16;
/// The longest frame a peer's RR22 session (any variant) sends: a chunk of 2^16 OKVS
/// blocks of 16 bytes behind the 5-byte frame header (1 MiB + 5). The comparison values
/// (at most 16 bytes each, in chunks as long), the VOLE's messages (its GGM tree messages
/// stay below 200 KiB at the largest VOLE chunk, IKNP/SoftSpokenOT chunks at 256 KiB) and the
/// handshakes are shorter.
pub const MAX_FRAME_LEN: usize = 5 + CHUNK * 16;
/// Encoding attempts before giving up (each fails with probability `≤ 2^-λ`).
const MAX_ATTEMPTS: usize = 8;

const TAG_SEED: u8 = 1;
const TAG_OKVS: u8 = 2;
const TAG_COUNT: u8 = 3;
const TAG_VALUES: u8 = 4;
const TAG_COMMIT: u8 = 5;
const TAG_OPEN: u8 = 6;

const DOMAIN_ITEM: &str = "obliv-psi rr22 v1 item to key";

/// Which RR22 variant to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Variant {
    /// Semi-honest, GF(2^128) VOLE and the binned OKVS with GF(2^128) dense columns
    /// ([`fast`]).
    Fast,
    /// Semi-honest, subfield VOLE over GF(2^64) and the unbinned OKVS with binary dense
    /// columns and 64-bit values: about half the bytes of [`Variant::Fast`] ([`lowcomm`]).
    LowComm,
    /// Malicious VOLE, coin-tossed output-hash key, Davies–Meyer output hash with 16-byte
    /// outputs ([`malicious`]).
    Malicious,
}

impl Variant {
    /// The handshake's protocol identifier (10, 11, 12).
    pub fn protocol_id(self) -> u8 {
        match self {
            Variant::Fast => PROTOCOL_FAST,
            Variant::LowComm => PROTOCOL_LOW_COMM,
            Variant::Malicious => PROTOCOL_MALICIOUS,
        }
    }

    /// The name used in messages and on the command line: `rr22-fast`, `rr22-lowcomm`,
    /// `rr22-malicious`.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Fast => "rr22-fast",
            Variant::LowComm => "rr22-lowcomm",
            Variant::Malicious => "rr22-malicious",
        }
    }
}

/// Parameters both parties must agree on (checked by the handshake).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rr22Config {
    /// The variant.
    pub variant: Variant,
    /// Keys per OKVS bin (volePSI: 2^14); `1..=2^24`. Ignored (and not compared) by
    /// [`Variant::LowComm`], whose OKVS is unbinned.
    pub bin_size: usize,
    /// Most items this party accepts from the peer per run (local, not compared): the VOLE
    /// and OKVS this side allocates grow with the peer's set, so a peer announcing more is
    /// refused ([`crate::PeerMisbehaved::TooLarge`]) before anything is allocated. At most
    /// [`MAX_ITEMS`] (the default); a caller that knows the agreed bucket bound sets it
    /// tighter.
    pub max_peer_items: usize,
    /// Statistical security parameter λ of one run (compared in the handshake): a false
    /// match and an OKVS failure have probability at most `2^-λ`; it sets the comparison
    /// width, the OKVS size and low-comm's largest sender set. In
    /// `STAT_SECURITY..=`[`crate::MAX_STAT_SECURITY`]; [`STAT_SECURITY`] (40) by default, and
    /// [`crate::job_stat_security`] of the number of runs for a job of many runs (buckets,
    /// shards) that must meet `2^-40` as a whole. The malicious variant always compares 16
    /// bytes; λ still sizes its OKVS and must leave 16 bytes enough.
    pub stat_security: u32,
}

impl Default for Rr22Config {
    fn default() -> Self {
        Rr22Config::new(Variant::Fast)
    }
}

impl Rr22Config {
    /// The default configuration (bins of [`obliv_okvs::DEFAULT_BIN_SIZE`]) of `variant`.
    pub fn new(variant: Variant) -> Self {
        Rr22Config {
            variant,
            bin_size: obliv_okvs::DEFAULT_BIN_SIZE,
            max_peer_items: MAX_ITEMS,
            stat_security: STAT_SECURITY,
        }
    }
}

fn code_name(field: &'static str, v: u8) -> String {
    match (field, v) {
        ("protocol", PROTOCOL_FAST) => Variant::Fast.name().into(),
        ("protocol", PROTOCOL_LOW_COMM) => Variant::LowComm.name().into(),
        ("protocol", PROTOCOL_MALICIOUS) => Variant::Malicious.name().into(),
        _ => crate::ecdh::code_name(field, v),
    }
}

/// A VOLE error, its channel errors lifted to [`Error::Net`].
fn vole_err(e: obliv_vole::Error) -> Error {
    match e {
        obliv_vole::Error::Net(n) => Error::Net(n),
        other => Error::Vole(other),
    }
}

fn okvs_err(e: obliv_okvs::Error) -> Error {
    Error::Okvs(e)
}

/// The 128-bit key of an item: items of at most 15 bytes are encoded injectively (the bytes,
/// zero padding, and the length in the last byte, as volePSI feeds 16-byte items to its OKVS
/// and hashes directly); longer items are hashed with BLAKE3 keyed by `key` (a random
/// oracle), with the last byte set to `0xff` so that the two kinds never collide. A
/// collision between long items needs a 120-bit BLAKE3 collision.
///
/// The definition, one item at a time; the protocol runs the batched [`item_keys`], tested
/// equal to it.
#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // a length below 16
fn item_key(key: &[u8; 32], item: &[u8]) -> Block {
    let mut b = [0u8; 16];
    if item.len() < 16 {
        b[..item.len()].copy_from_slice(item);
        b[15] = item.len() as u8;
    } else {
        b.copy_from_slice(&blake3::keyed_hash(key, item).as_bytes()[..16]);
        b[15] = 0xff;
    }
    Block::from_bytes(b)
}

/// The 128-bit key of every item (the encoding of `item_key`: items under 16 bytes injectively
/// with their length in the last byte, longer ones by BLAKE3 keyed by the domain's key with
/// the last byte set to `0xff`), the long ones hashed sixteen at a time in SIMD lanes
/// (`hasher` is BLAKE3 keyed by the same key; equal outputs).
/// Writes them into `out` (`out.len() == items.len()`).
fn item_keys_into<T: AsRef<[u8]>>(
    hasher: &mut obliv_core::hash::RoHasher,
    items: &[T],
    out: &mut [Block],
) {
    let long: Vec<&[u8]> = items
        .iter()
        .map(AsRef::as_ref)
        .filter(|it| it.len() >= 16)
        .collect();
    let mut hashed = hasher.hash_blocks(&long).into_iter();
    for (o, it) in out.iter_mut().zip(items) {
        *o = {
            let it = it.as_ref();
            let mut b = [0u8; 16];
            if it.len() < 16 {
                b[..it.len()].copy_from_slice(it);
                #[allow(clippy::cast_possible_truncation)] // a length below 16
                {
                    b[15] = it.len() as u8;
                }
            } else {
                // One hash per long item, in order: `hashed` has exactly that many.
                b = hashed.next().map_or([0u8; 16], Block::to_bytes);
                b[15] = 0xff;
            }
            Block::from_bytes(b)
        };
    }
}

/// Keys `k = item_key(item)` and values `h(k) = π(k) ⊕ k`, in parallel, each written once
/// into a zeroed allocation ([`Block::zeroed_vec`]).
fn keys_and_values<T: AsRef<[u8]> + Sync>(items: &[T]) -> (Vec<Block>, Vec<Block>) {
    // BLAKE3 keyed by the derived key of the domain string: the same random oracle family
    // as `obliv_core::hash::ro_hash`, with the key derivation done once instead of per item.
    let key = blake3::derive_key(DOMAIN_ITEM, &[]);
    let mut keys = Block::zeroed_vec(items.len());
    keys.par_chunks_mut(4096)
        .zip(items.par_chunks(4096))
        .for_each_init(
            || obliv_core::hash::RoHasher::keyed(&key),
            |h, (out, chunk)| item_keys_into(h, chunk, out),
        );
    let mut values = Block::zeroed_vec(items.len());
    values
        .par_chunks_mut(1024)
        .zip(keys.par_chunks(1024))
        .for_each(|(v, k)| {
            v.copy_from_slice(k);
            obliv_core::hash::cr_in_place(v);
        });
    (keys, values)
}

/// `z[i] ← H_out(k[i], z[i]) = π(π(z) ⊕ k) ⊕ π(z)`, the tweakable circular-correlation-robust
/// hash of [GKWW20] (fixed-key AES) with the item key as tweak, in parallel batches.
/// (volePSI's semi-honest mode uses the untweaked `π(z) ⊕ z`; both are modelled as random
/// oracles in the RR22 proof.)
///
/// [GKWW20]: https://eprint.iacr.org/2019/074
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

/// Solves `out = Encode({keys[i] ↦ values[i]})` with the OKVS `make(seed)` for a fresh random
/// seed, retrying on the `2^-λ` failures; returns the seed and the OKVS. If the first
/// failure may come from repeated keys, the keys are deduplicated (values recomputed by
/// `values_of`) and encoding retried.
fn encode_with_retry<D, O, V, R>(
    make: impl Fn(Block) -> Result<O>,
    keys: &[Block],
    values: &[V],
    values_of: impl Fn(&[Block]) -> Vec<V>,
    out: &mut [V],
    rng: &mut R,
) -> Result<(Block, O)>
where
    D: DenseKind,
    O: Okvs<D>,
    V: DenseValue<D>,
    R: CryptoRng + ?Sized,
{
    let mut deduped: Option<(Vec<Block>, Vec<V>)> = None;
    let mut last = None;
    for _ in 0..MAX_ATTEMPTS {
        let s = Block::random(rng);
        let o = make(s)?;
        let (k, v) = deduped
            .as_ref()
            .map_or((keys, values), |(k, v)| (&k[..], &v[..]));
        match o.encode_into(k, v, out) {
            Ok(()) => return Ok((s, o)),
            // Repeated keys make the system singular (or are reported as such): on the first
            // failure, drop repeats (rare failures of distinct keys just retry).
            Err(e)
                if deduped.is_none()
                    && (e.is_retryable()
                        || matches!(e, obliv_okvs::Error::DuplicateKey { .. })) =>
            {
                let mut uk = keys.to_vec();
                uk.par_sort_unstable();
                uk.dedup();
                let uv = values_of(&uk);
                deduped = Some((uk, uv));
                last = Some(e);
            }
            Err(e) if e.is_retryable() => last = Some(e),
            Err(e) => return Err(okvs_err(e)),
        }
    }
    // Every attempt failed with a retryable error (probability `2^-λ` each).
    Err(Error::Okvs(last.unwrap_or(
        obliv_okvs::Error::SolveFailed { gap: 0, rank: 0 },
    )))
}

/// Receives a 16-byte block in a frame of kind `tag` (`what` names it in the error).
fn recv_block<C: Channel + ?Sized>(ch: &mut C, tag: u8, what: &str) -> Result<Block> {
    let f = ch.recv_max(5 + 16)?;
    let (t, index, payload) = parse(&f)?;
    if t != tag || index != 0 || payload.len() != 16 {
        return Err(Error::Protocol(format!("expected {what}")));
    }
    let mut b = [0u8; 16];
    b.copy_from_slice(payload);
    Ok(Block::from_bytes(b))
}

/// Receives `n` values of `width` bytes in frames of kind `tag` of [`CHUNK`] values each (as
/// [`send_chunks`] sends them), checking kind, order and size of every frame (`what` names
/// the values in the error), and hands each frame's payload (value `i·CHUNK` onwards) to
/// `apply`. The masked OKVS `A'` and the fork's masked correlations travel this way.
fn recv_chunks<C, F>(
    ch: &mut C,
    tag: u8,
    what: &str,
    n: usize,
    width: usize,
    mut apply: F,
) -> Result<()>
where
    C: Channel + ?Sized,
    F: FnMut(usize, &[u8]),
{
    for i in 0..n.div_ceil(CHUNK) {
        let expected = width * (n - i * CHUNK).min(CHUNK);
        let f = ch.recv_max(5 + expected)?;
        let (t, index, payload) = parse(&f)?;
        if t != tag || index != i || payload.len() != expected {
            return Err(Error::Protocol(format!(
                "expected {what} chunk {i} of {expected} bytes, got tag {t} chunk {index} of {} bytes",
                payload.len()
            )));
        }
        apply(i * CHUNK, payload);
    }
    Ok(())
}

/// Sends values `0..n` of `width` bytes, each written by `write(i, buf)`, in frames of kind
/// `tag` of [`CHUNK`] values each (written straight into the frame, no copy).
fn send_chunks<C, F>(ch: &mut C, tag: u8, n: usize, width: usize, write: F) -> Result<()>
where
    C: Channel + ?Sized,
    F: Fn(usize, &mut Vec<u8>),
{
    for i in 0..n.div_ceil(CHUNK) {
        let range = i * CHUNK..(n.min((i + 1) * CHUNK));
        let mut buf = Vec::with_capacity(5 + width * range.len());
        buf.push(tag);
        buf.extend_from_slice(&u32::try_from(i).unwrap_or(u32::MAX).to_le_bytes());
        for j in range {
            write(j, &mut buf);
        }
        ch.send_vec(buf)?;
    }
    ch.flush()?;
    Ok(())
}

/// The sender's last message: its comparison values `out` truncated to `w` bytes, sorted and
/// without repeats.
fn send_values<C: Channel + ?Sized>(ch: &mut C, out: &[Block], w: usize) -> Result<()> {
    let mut t: Vec<u128> = out.iter().map(|&b| truncate(b, w)).collect();
    sort_values(&mut t, w);
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

/// Receives the sender's values (at most `n_s` of `w` bytes) and returns the indices `j`
/// (ascending) whose `ours[j]`, truncated to `w` bytes, the sender sent. `scratch` (a vector
/// the caller no longer needs, its length irrelevant) lends its allocation to the sender's
/// values.
fn recv_and_intersect<C>(
    ch: &mut C,
    ours: Vec<Block>,
    scratch: Vec<Block>,
    n_s: usize,
    w: usize,
) -> Result<Vec<usize>>
where
    C: Channel + ?Sized,
{
    // Partitioned while the sender computes its values.
    let ours = intersect::Prepared::new(ours, w);
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
    let mut theirs = Block::into_u128_vec(scratch);
    theirs.clear();
    theirs.reserve(count);
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
        theirs.extend(payload.chunks_exact(w).map(pack));
    }
    // An honest sender sends its values sorted without repeats; a deviating one only costs
    // us a sort (its values are then looked up all the same).
    if !theirs.windows(2).all(|p| p[0] < p[1]) {
        sort_values(&mut theirs, w);
    }
    Ok(ours.intersect(&theirs))
}

/// `v >> (8·w − bits)`: the top `bits` bits of a value truncated to `w` bytes
/// (`bits ≤ 8·w`, `v < 2^(8·w)`).
#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // at most 26 bits remain
fn top_bits(v: u128, w: usize, bits: u32) -> usize {
    (v >> (8 * w as u32 - bits)) as usize
}

/// Sorts values truncated to `w` bytes ascending and drops repeats.
///
/// Three LSD radix passes of 8 bits on the top 24 bits (one counting pass for all three,
/// then three scatters into 256 buckets each: few enough write streams for the TLB), then
/// a comparison sort of each run of equal top bits (about one value per run for
/// pseudorandom values; a run of any length is still sorted in `O(len·log len)`, so
/// structured input costs no more than a plain sort).
fn sort_values(t: &mut Vec<u128>, w: usize) {
    const DIGIT: u32 = 8;
    const PASSES: u32 = 3;
    if t.len() < 1 << 12 || w < 3 {
        t.sort_unstable();
        t.dedup();
        return;
    }
    let bits = DIGIT * PASSES;
    let passes = PASSES as usize;
    let mask = (1usize << DIGIT) - 1;
    let digit = |v: u128, p: usize| (top_bits(v, w, bits) >> (DIGIT as usize * p)) & mask;
    let mut counts = vec![[0usize; PASSES as usize]; 1 << DIGIT];
    for &v in t.iter() {
        for p in 0..passes {
            counts[digit(v, p)][p] += 1;
        }
    }
    let mut sums = [0usize; PASSES as usize];
    for c in counts.iter_mut() {
        for (x, s) in c.iter_mut().zip(sums.iter_mut()) {
            let here = *x;
            *x = *s;
            *s += here;
        }
    }
    let mut tmp = vec![0u128; t.len()];
    for p in 0..passes {
        let (from, to) = if p % 2 == 0 {
            (&t[..], &mut tmp[..])
        } else {
            (&tmp[..], &mut t[..])
        };
        for &v in from {
            let d = digit(v, p);
            to[counts[d][p]] = v;
            counts[d][p] += 1;
        }
    }
    // An odd number of passes leaves the result in `tmp`.
    core::mem::swap(t, &mut tmp);
    drop(tmp);
    // Runs of equal top bits, in order; sort inside each.
    let mut i = 0;
    while i < t.len() {
        let k = top_bits(t[i], w, bits);
        let mut j = i + 1;
        while j < t.len() && top_bits(t[j], w, bits) == k {
            j += 1;
        }
        if j - i > 1 {
            t[i..j].sort_unstable();
        }
        i = j;
    }
    t.dedup();
}

/// The indices `j` (ascending) whose `ours[j]`, truncated to `w` bytes, is in `theirs`
/// (sorted ascending, without repeats, values below `2^(8·w)`).
///
/// A directory over the top `⌊log₂ |theirs|⌋` bits gives each value's range of `theirs`
/// (about one entry for an honest sender's pseudorandom values), searched linearly when
/// short and by bisection otherwise, so a sender whose values crowd one range costs
/// `O(log |theirs|)` per lookup, never more.
fn intersect(ours: &[Block], theirs: &[u128], w: usize) -> Vec<usize> {
    if theirs.is_empty() || ours.is_empty() {
        return Vec::new();
    }
    let bits = (usize::BITS - 1 - theirs.len().leading_zeros()).clamp(1, 26);
    let bits = bits.min(8 * u32::try_from(w).unwrap_or(16));
    // dir[b] = the number of values whose top bits are below b.
    let mut dir = vec![0u32; (1usize << bits) + 1];
    let mut b = 0usize;
    for (i, &v) in theirs.iter().enumerate() {
        let t = top_bits(v, w, bits);
        while b <= t {
            dir[b] = u32::try_from(i).unwrap_or(u32::MAX);
            b += 1;
        }
    }
    let total = u32::try_from(theirs.len()).unwrap_or(u32::MAX);
    for d in &mut dir[b..] {
        *d = total;
    }
    // In batches: first every value's range and first candidate (independent loads without
    // branches, so the cache misses overlap), then the comparisons.
    const B: usize = 32;
    let last = theirs.len() - 1;
    let mut out = Vec::new();
    let (mut vals, mut lo, mut hi, mut first) = ([0u128; B], [0usize; B], [0usize; B], [0u128; B]);
    for (c, chunk) in ours.chunks(B).enumerate() {
        for (i, &o) in chunk.iter().enumerate() {
            let v = truncate(o, w);
            let t = top_bits(v, w, bits);
            vals[i] = v;
            lo[i] = dir[t] as usize;
            hi[i] = dir[t + 1] as usize;
        }
        for i in 0..chunk.len() {
            first[i] = theirs[lo[i].min(last)];
        }
        for i in 0..chunk.len() {
            let (v, range) = (vals[i], &theirs[lo[i]..hi[i]]);
            let hit = match range.len() {
                0 => false,
                1 => first[i] == v,
                2..=8 => range.contains(&v),
                _ => range.binary_search(&v).is_ok(),
            };
            if hit {
                out.push(c * B + i);
            }
        }
    }
    out
}

/// Runs RR22 PSI (the variant of `cfg`) as `role` over `ch` on `items`: a new
/// [`Rr22Session`] and one [`Rr22Session::run`] (the wire format is exactly that of the
/// session's first run).
///
/// Returns, for the receiver, the indices (ascending) of `items` in the intersection; `None`
/// for the sender. Duplicate items are allowed (see the [module documentation](self)).
///
/// # Errors
/// A handshake mismatch (different variants, bin sizes, statistical security or roles), a
/// network error, a VOLE or
/// base-OT failure (as [`Error::Protocol`]; in the malicious variant this includes a failed
/// consistency check or a wrong opening of the coin toss), a protocol violation (a frame of
/// the wrong kind, order or size, a peer set above [`MAX_ITEMS`]), or
/// [`Error::InvalidParameter`] for a bad configuration (or a low-communication sender set
/// above [`lowcomm::max_sender_items`], or a comparison width above 16 bytes).
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
    Rr22Session::new(role, cfg)?.run(ch, items, rng)
}

pub mod fork;

pub use crate::driver::{BucketOutput, ConcurrentBuckets, MAX_WORKERS, SUB_CONTROL, worker_sub_id};
pub use fork::MAX_CHILDREN;

/// Runs RR22 on many buckets at once: [`crate::driver::run_concurrent`] with a fresh
/// [`Rr22Session`] of `role` and `cfg`. The peer calls `run_buckets` with the same `cfg`
/// and `workers`, the complementary role and its buckets in the same order.
///
/// # Errors
/// [`Error::InvalidParameter`] for a bad `cfg`; otherwise as
/// [`crate::driver::run_concurrent`].
pub fn run_buckets<S, I, B, T, R>(
    mux: &obliv_net::Mux<S>,
    role: Role,
    cfg: &Rr22Config,
    workers: usize,
    buckets: I,
    rng: &mut R,
) -> Result<ConcurrentBuckets<I::IntoIter, B>>
where
    S: obliv_net::FrameSender + Send + 'static,
    I: IntoIterator<Item = B>,
    B: AsRef<[T]> + Send + 'static,
    T: AsRef<[u8]> + Send + Sync + 'static,
    R: CryptoRng + ?Sized,
{
    crate::driver::run_concurrent(mux, Rr22Session::new(role, cfg)?, workers, buckets, rng)
}

/// Flag bit of the [`Hello`] of a session's second and later runs (the first run's hello is
/// the one-shot [`run`]'s, flags 0); the handshake requires both sides to agree on it.
const FLAG_CONTINUED: u8 = 2;

/// The VOLE generator of a session: the one of its variant and role, fixed when the session
/// is made, empty until the first run (or fork) that needs it sets it up.
#[derive(Debug)]
enum Generator {
    /// GF(2^128) VOLE receiver (fast and malicious).
    Gf128Receiver(Option<obliv_vole::VoleReceiver>),
    /// GF(2^128) VOLE sender (fast and malicious).
    Gf128Sender(Option<obliv_vole::VoleSender>),
    /// Subfield GF(2^64) VOLE receiver (low-comm).
    Sub64Receiver(Option<obliv_vole::Subfield64VoleReceiver>),
    /// Subfield GF(2^64) VOLE sender (low-comm).
    Sub64Sender(Option<obliv_vole::Subfield64VoleSender>),
}

/// The generator's slot of one kind, or an error if the session holds another kind (which
/// its construction rules out).
macro_rules! generator_slot {
    ($name:ident, $variant:ident, $ty:ty) => {
        fn $name(&mut self) -> Result<&mut Option<$ty>> {
            match self {
                Generator::$variant(slot) => Ok(slot),
                _ => Err(Error::InvalidParameter(
                    "this RR22 session holds another kind of VOLE generator".into(),
                )),
            }
        }
    };
}

impl Generator {
    /// The empty generator of `variant` and `role`.
    fn new(variant: Variant, role: Role) -> Self {
        match (variant, role) {
            (Variant::LowComm, Role::Receiver) => Generator::Sub64Receiver(None),
            (Variant::LowComm, Role::Sender) => Generator::Sub64Sender(None),
            (_, Role::Receiver) => Generator::Gf128Receiver(None),
            (_, Role::Sender) => Generator::Gf128Sender(None),
        }
    }

    generator_slot!(gf128_receiver, Gf128Receiver, obliv_vole::VoleReceiver);
    generator_slot!(gf128_sender, Gf128Sender, obliv_vole::VoleSender);
    generator_slot!(
        sub64_receiver,
        Sub64Receiver,
        obliv_vole::Subfield64VoleReceiver
    );
    generator_slot!(sub64_sender, Sub64Sender, obliv_vole::Subfield64VoleSender);
}

/// What a session keeps between runs: its VOLE generator and output vectors.
#[derive(Debug)]
struct Generators {
    /// The generator of the session's variant and role.
    generator: Generator,
    /// The VOLE output vectors, kept from run to run.
    bufs: VoleBuffers,
}

impl Generators {
    fn new(generator: Generator) -> Self {
        Generators {
            generator,
            bufs: VoleBuffers::default(),
        }
    }
}

/// The VOLE output vectors a session keeps between runs: each run's extension writes into
/// them (`extend_into`), so the buckets after the first reuse their memory instead of
/// faulting in tens of MB of fresh pages each. They hold correlations: zeroized when
/// overwritten by a failed extension and when the session is dropped; `Debug` shows lengths
/// only.
#[derive(Default)]
pub(super) struct VoleBuffers {
    /// The receiver's `A` (GF(2^128)) or the sender's `B`.
    pub(super) a_or_b: Zeroizing<Vec<Block>>,
    /// The receiver's `C`.
    pub(super) c: Zeroizing<Vec<Block>>,
    /// The low-communication receiver's `A` (GF(2^64)).
    pub(super) a64: Zeroizing<Vec<u64>>,
}

impl core::fmt::Debug for VoleBuffers {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "VoleBuffers({} / {} / {} elements)",
            self.a_or_b.len(),
            self.c.len(),
            self.a64.len()
        )
    }
}

/// An RR22 PSI session with one peer: the silent VOLE's base correlations are produced once,
/// and each [`run`](Rr22Session::run) intersects one bucket with a fresh VOLE extension of
/// the OKVS size of that bucket.
///
/// # Message flow
///
/// The first run is byte for byte the one-shot [`run`]: its [`Hello`] (protocol, role, bin
/// size, statistical security, set sizes) is the session's handshake, so mismatched
/// variants, bin sizes, statistical security or roles stop there with
/// [`Error::HandshakeMismatch`]; the VOLE generator (base OT + IKNP for the
/// semi-honest variants, base OT + SoftSpokenOT with its check for the malicious one) is set
/// up inside the first run whose two sets are non-empty, at the point where the one-shot
/// protocol runs it. Every later run starts with another [`Hello`] carrying the bucket's set
/// size (with flag bit 1 set, so a peer that is not at the same stage is a mismatch) and
/// then extends the same generator: `obliv-vole` bootstraps the next base correlations from
/// its own outputs, so no base OT runs again. Per-run protocol steps (OKVS seed, masked OKVS,
/// the malicious coin toss for `w`, the sender's values) and all their checks are unchanged.
///
/// # Security across buckets
///
/// All runs of a session share the sender's `Δ` (the OPRF key, as in one long VOLE): the
/// correlations of the runs are disjoint pieces of one VOLE, each used for one OKVS only.
/// A sender value for an item outside the receiver's bucket involves `e·Δ` with `e ≠ 0`,
/// pseudorandom to the receiver as long as `Δ` is hidden, exactly as for the many items of
/// one run; nothing of one run's correlation is reused in another. The malicious coin toss
/// for `w` is repeated per run. The low-comm bound `n_s·2^-64` adds up over the runs (see
/// [`lowcomm`]).
///
/// The same holds across the children of [`split`](Rr22Session::split) (and theirs): each
/// child's base correlated OTs are fresh, disjoint correlations of its parent's VOLE under
/// the same `Δ` (derandomised by the receiver's mask `A ⊕ r`, uniform to the sender), and
/// each child's own outputs serve one OKVS each, so the buckets of a parent and all its
/// descendants are again disjoint pieces of one VOLE under one `Δ`; the low-comm bound adds
/// up over all of them. See [`fork`] for the step and why malicious sessions are not forked.
///
/// After an error the two sides may no longer be in step: the session refuses further runs
/// (open a new one on a fresh channel).
#[derive(Debug)]
pub struct Rr22Session {
    role: Role,
    cfg: Rr22Config,
    runs: u64,
    failed: bool,
    vole: Generators,
    /// 0 for a session made by [`Rr22Session::new`]; a non-zero 48-bit tag for a child of
    /// [`Rr22Session::split`], sent in every hello so that mismatched children are caught.
    lineage: u64,
    /// Fork steps taken so far (part of the children's lineage tags).
    forks: u64,
}

impl Rr22Session {
    /// A session as `role` with parameters `cfg` (checked here; the peer's are checked by
    /// the first run's handshake). Nothing is sent until the first [`run`](Self::run).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the bin size is outside `1..=2^24`, `max_peer_items`
    /// above [`MAX_ITEMS`] or the statistical security parameter outside `40..=128`.
    pub fn new(role: Role, cfg: &Rr22Config) -> Result<Self> {
        if cfg.bin_size == 0 || cfg.bin_size > 1 << 24 {
            return Err(Error::InvalidParameter(
                "bin size must be in 1..=2^24".into(),
            ));
        }
        if cfg.max_peer_items > MAX_ITEMS {
            return Err(Error::InvalidParameter(format!(
                "max_peer_items must be at most {MAX_ITEMS}"
            )));
        }
        check_stat_security(cfg.stat_security)?;
        Ok(Rr22Session {
            role,
            cfg: *cfg,
            runs: 0,
            failed: false,
            vole: Generators::new(Generator::new(cfg.variant, role)),
            lineage: 0,
            forks: 0,
        })
    }

    /// The `batch` field of this session's hellos: the bin size (0 for low-comm).
    fn hello_batch(&self) -> u32 {
        match self.cfg.variant {
            Variant::LowComm => 0,
            _ => u32::try_from(self.cfg.bin_size).unwrap_or(u32::MAX),
        }
    }

    /// The `param` field of this session's hellos: the configured statistical security
    /// parameter in the low byte, with the lineage tag of a forked session above bit 16 (just
    /// the parameter for a session that was not forked).
    fn hello_param(&self) -> u64 {
        handshake::stat_param(self.cfg.stat_security, self.lineage << 8)
    }

    /// Whether this session is a child of [`split`](Self::split) or [`fork`](Self::fork).
    pub fn is_forked(&self) -> bool {
        self.lineage != 0
    }

    /// The role of this side.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The configuration.
    pub fn config(&self) -> &Rr22Config {
        &self.cfg
    }

    /// The number of runs started so far.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Intersects one bucket with the peer's (which calls `run` on its session at the same
    /// point). Returns, for the receiver, the indices (ascending) of `items` in the
    /// intersection; `None` for the sender. Buckets may have any size up to [`MAX_ITEMS`],
    /// including 0.
    ///
    /// # Errors
    /// As [`run`](fn@run); also [`Error::InvalidParameter`] if an earlier run of this session
    /// failed.
    pub fn run<C, T, R>(
        &mut self,
        ch: &mut C,
        items: &[T],
        rng: &mut R,
    ) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: AsRef<[u8]> + Sync,
        R: CryptoRng + ?Sized,
    {
        if self.failed {
            return Err(Error::InvalidParameter(
                "an earlier run of this RR22 session failed; open a new session".into(),
            ));
        }
        if items.len() > MAX_ITEMS {
            return Err(Error::InvalidParameter(format!(
                "at most {MAX_ITEMS} items per run"
            )));
        }
        let r = self.run_inner(ch, items, rng);
        self.runs += 1;
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn run_inner<C, T, R>(
        &mut self,
        ch: &mut C,
        items: &[T],
        rng: &mut R,
    ) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: AsRef<[u8]> + Sync,
        R: CryptoRng + ?Sized,
    {
        let (cfg, role) = (self.cfg, self.role);
        let ours = Hello {
            protocol: cfg.variant.protocol_id(),
            curve: 0,
            role: role.code(),
            flags: if self.runs == 0 { 0 } else { FLAG_CONTINUED },
            batch: self.hello_batch(),
            n_items: items.len() as u64,
            param: self.hello_param(),
        };
        let theirs = handshake::exchange_stat(ch, &ours, role.other().code(), code_name)?;
        let n_peer = peer_count("n_items", theirs.n_items, cfg.max_peer_items)?;
        let (n_r, n_s) = match role {
            Role::Receiver => (items.len(), n_peer),
            Role::Sender => (n_peer, items.len()),
        };
        let max_s = lowcomm::max_sender_items(cfg.stat_security);
        if cfg.variant == Variant::LowComm && n_s > max_s {
            return Err(Error::InvalidParameter(format!(
                "rr22-lowcomm: the sender's {n_s} items exceed {max_s} (the 2^-{} bound needs \
                 n_s ≤ 2^(64 - {}); split the set into buckets)",
                cfg.stat_security, cfg.stat_security
            )));
        }
        if n_r == 0 || n_s == 0 {
            return Ok(match role {
                Role::Receiver => Some(Vec::new()),
                Role::Sender => None,
            });
        }
        // Malicious compares 16 bytes, which the width for λ must not exceed either.
        let w = compare_width(cfg.stat_security, n_r, n_s)?;
        let v = &mut self.vole;
        match (cfg.variant, role) {
            (Variant::Fast, Role::Receiver) => fast::receiver(
                ch,
                items,
                n_s,
                w,
                &cfg,
                false,
                (v.generator.gf128_receiver()?, &mut v.bufs),
                rng,
            )
            .map(Some),
            (Variant::Fast, Role::Sender) => fast::sender(
                ch,
                items,
                n_r,
                w,
                &cfg,
                false,
                (v.generator.gf128_sender()?, &mut v.bufs),
                rng,
            )
            .map(|()| None),
            (Variant::Malicious, Role::Receiver) => fast::receiver(
                ch,
                items,
                n_s,
                16,
                &cfg,
                true,
                (v.generator.gf128_receiver()?, &mut v.bufs),
                rng,
            )
            .map(Some),
            (Variant::Malicious, Role::Sender) => fast::sender(
                ch,
                items,
                n_r,
                16,
                &cfg,
                true,
                (v.generator.gf128_sender()?, &mut v.bufs),
                rng,
            )
            .map(|()| None),
            (Variant::LowComm, Role::Receiver) => lowcomm::receiver(
                ch,
                items,
                n_s,
                (w, cfg.stat_security),
                (v.generator.sub64_receiver()?, &mut v.bufs),
                rng,
            )
            .map(Some),
            (Variant::LowComm, Role::Sender) => lowcomm::sender(
                ch,
                items,
                n_r,
                (w, cfg.stat_security),
                (v.generator.sub64_sender()?, &mut v.bufs),
                rng,
            )
            .map(|()| None),
        }
    }
}

impl PsiSession for Rr22Session {
    fn protocol(&self) -> &'static str {
        self.cfg.variant.name()
    }

    fn role(&self) -> Role {
        self.role
    }

    fn max_frame_len(&self) -> usize {
        MAX_FRAME_LEN
    }

    fn run<C, T, R>(&mut self, ch: &mut C, items: &[T], rng: &mut R) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: AsRef<[u8]> + Sync,
        R: CryptoRng + ?Sized,
    {
        Rr22Session::run(self, ch, items, rng)
    }

    /// The semi-honest variants fork the VOLE ([`Rr22Session::split`]: no new base OT);
    /// malicious sessions cannot be forked (see [`fork`]), so after a handshake on the
    /// child count each child is an independent session (its own SoftSpokenOT base and `Δ`,
    /// set up in its first non-empty run).
    fn split<C, R>(&mut self, ch: &mut C, n: usize, rng: &mut R) -> Result<Vec<Self>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        if self.cfg.variant != Variant::Malicious {
            return Rr22Session::split(self, ch, n, rng);
        }
        if n == 0 || n > MAX_CHILDREN {
            return Err(Error::InvalidParameter(format!(
                "1..={MAX_CHILDREN} children, not {n}"
            )));
        }
        let ours = Hello {
            protocol: self.cfg.variant.protocol_id(),
            curve: 0,
            role: self.role.code(),
            flags: 0,
            batch: self.hello_batch(),
            n_items: 0,
            param: self.hello_param(),
        };
        agree_split(ch, ours, self.role, n, code_name)?;
        (0..n)
            .map(|_| Rr22Session::new(self.role, &self.cfg))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_core::rand_core::SeedableRng;

    #[test]
    fn truncate_keeps_low_bytes() {
        let b = Block(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10);
        assert_eq!(truncate(b, 16), b.0);
        assert_eq!(truncate(b, 1), 0x10);
        assert_eq!(truncate(b, 10), b.0 & ((1u128 << 80) - 1));
    }

    /// The radix sort against a plain sort with dedup, for pseudorandom values, values
    /// crowding one run of top bits, repeats, and every width.
    #[test]
    fn sort_values_matches_plain_sort() {
        let mut rng = AesRng::from_seed([3; 16]);
        for w in [1usize, 2, 3, 5, 10, 16] {
            for n in [0usize, 1, 100, 4095, 4096, 20_000] {
                let mut v: Vec<u128> = (0..n)
                    .map(|_| truncate(Block::random(&mut rng), w))
                    .collect();
                // Some repeats and some values sharing their top bits.
                for i in (0..n).step_by(7) {
                    v[i] = v[i / 2];
                }
                for i in (0..n).step_by(5) {
                    v[i] &= (1u128 << (8 * w).min(20)) - 1;
                }
                let mut want = v.clone();
                want.sort_unstable();
                want.dedup();
                sort_values(&mut v, w);
                assert_eq!(v, want, "w = {w}, n = {n}");
            }
        }
    }

    #[test]
    fn intersect_matches_plain() {
        let mut rng = AesRng::from_seed([4; 16]);
        for w in [5usize, 10, 16] {
            for (nr, ns) in [
                (0usize, 0usize),
                (1, 0),
                (0, 1),
                (5, 7),
                (3000, 5000),
                (9000, 2),
                (20_000, 70_000),
            ] {
                // Values in a small range (many matches), truncated to w bytes, placed
                // in the high bytes or the low bytes.
                let shift = if nr % 2 == 0 { 0 } else { 8 * w - 16 };
                let val = |rng: &mut AesRng| Block((Block::random(rng).0 % 20_000) << shift);
                let ours: Vec<Block> = (0..nr).map(|_| val(&mut rng)).collect();
                let mut theirs: Vec<u128> = (0..ns).map(|_| truncate(val(&mut rng), w)).collect();
                sort_values(&mut theirs, w);
                let set: std::collections::HashSet<u128> = theirs.iter().copied().collect();
                let want: Vec<usize> = (0..nr)
                    .filter(|&j| set.contains(&truncate(ours[j], w)))
                    .collect();
                assert_eq!(intersect(&ours, &theirs, w), want, "w = {w}");
            }
        }
        // All of the sender's values under one directory entry (a hostile sender): still
        // correct (bisection inside the crowded range).
        let w = 16;
        let theirs: Vec<u128> = (0..10_000u128).map(|v| v << 64).collect();
        let ours: Vec<Block> = (0..20_000u128).map(|v| Block(v << 63)).collect();
        let got = intersect(&ours, &theirs, w);
        assert_eq!(got, (0..20_000).step_by(2).collect::<Vec<_>>());
    }

    #[test]
    #[allow(clippy::cast_possible_truncation)] // test bytes
    fn batched_item_keys_equal_item_key() {
        let key = blake3::derive_key(DOMAIN_ITEM, &[]);
        let items: Vec<Vec<u8>> = (0..100usize)
            .map(|i| vec![i as u8; (i * 13) % 90])
            .collect();
        let mut h = obliv_core::hash::RoHasher::keyed(&key);
        let want: Vec<Block> = items.iter().map(|it| item_key(&key, it)).collect();
        let mut got = vec![Block::ZERO; items.len()];
        item_keys_into(&mut h, &items, &mut got);
        assert_eq!(got, want);
    }

    #[test]
    fn item_keys_are_injective_on_short_items() {
        let key = [7u8; 32];
        let a = item_key(&key, b"");
        let b = item_key(&key, &[0]);
        let c = item_key(&key, &[0, 0]);
        let d = item_key(&key, &[1; 15]);
        let e = item_key(&key, &[1; 16]);
        let all = [a, b, c, d, e];
        for i in 0..all.len() {
            for j in 0..i {
                assert_ne!(all[i], all[j]);
            }
        }
        assert_eq!(e.to_bytes()[15], 0xff);
        assert_eq!(d.to_bytes()[15], 15);
    }

    #[test]
    fn variant_names_and_ids() {
        for (v, id, name) in [
            (Variant::Fast, 10, "rr22-fast"),
            (Variant::LowComm, 11, "rr22-lowcomm"),
            (Variant::Malicious, 12, "rr22-malicious"),
        ] {
            assert_eq!(v.protocol_id(), id);
            assert_eq!(v.name(), name);
            assert_eq!(code_name("protocol", id), name);
        }
    }
}
