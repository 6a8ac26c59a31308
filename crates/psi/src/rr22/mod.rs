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
//! a key derived from a domain string for longer ones, and as it is for a
//! [`HashedItem`](crate::HashedItem), a key the caller derived already: one hash per item
//! instead of two; see [`crate::PsiItem`]) and to a value `h(k) = π(k) ⊕ k`
//! (fixed-key AES, as volePSI hashes its inputs). With
//! `Encode`/`Decode` an OKVS of size `m` for `n_r` keys (a GF(2)-linear map:
//! `Decode(P ⊕ Q, k) = Decode(P, k) ⊕ Decode(Q, k)`):
//!
//! 1. Both sides exchange a [`Hello`](crate::handshake::Hello) (protocol, role, bin size,
//!    set sizes).
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
//!
//! Measured figures (time and bytes per variant and set size, session savings) are in the
//! repository's `docs/measurements.md`, section "RR22".
//!
//! [RS21]: https://eprint.iacr.org/2021/266

use obliv_net::Channel;
use rand_core::CryptoRng;

use crate::error::{Error, PeerMisbehaved, Result};
use crate::item::PsiItem;
use crate::wire::Role;

pub mod fast;
mod intersect;
mod items;
pub mod lowcomm;
pub mod malicious;
mod session;
mod wire;

use intersect::recv_and_intersect;
use items::{encode_with_retry, keys_and_values, out_hash};
pub use session::Rr22Session;
use session::{Generator, Generators, VoleBuffers};
use wire::{recv_block, recv_chunks, send_chunks, send_values};

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

/// A VOLE error as a PSI error: channel errors (also those of the base OT) as
/// [`Error::Net`], base-OT failures (SoftSpokenOT's check among them) as [`Error::Ot`], and a
/// failed GGM-tree consistency check as [`PeerMisbehaved::CheckFailed`].
fn vole_err(e: obliv_vole::Error) -> Error {
    match e {
        obliv_vole::Error::Net(n) | obliv_vole::Error::BaseOt(obliv_ot::Error::Net(n)) => {
            Error::Net(n)
        }
        obliv_vole::Error::BaseOt(o) => Error::Ot(o),
        obliv_vole::Error::ConsistencyCheck => Error::PeerMisbehaved(PeerMisbehaved::CheckFailed(
            "the silent VOLE's GGM-tree consistency check failed".into(),
        )),
        other => Error::Vole(other),
    }
}

fn okvs_err(e: obliv_okvs::Error) -> Error {
    Error::Okvs(e)
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
/// network error, a VOLE or base-OT failure ([`Error::Vole`], [`Error::Ot`]; a failed
/// consistency check of the malicious variant, or a wrong opening of its coin toss, is
/// [`crate::ErrorKind::PeerMisbehaved`]), a protocol violation (a frame of
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
    T: PsiItem + Sync,
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
    T: PsiItem + Send + Sync + 'static,
    R: CryptoRng + ?Sized,
{
    crate::driver::run_concurrent(mux, Rr22Session::new(role, cfg)?, workers, buckets, rng)
}

#[cfg(test)]
mod tests {
    use super::intersect::{intersect, sort_values, truncate};
    use super::items::{DOMAIN_ITEM, item_key, item_keys_into};
    use super::*;
    use obliv_core::AesRng;
    use obliv_core::Block;
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
