//! KKRT16 PSI: cuckoo hashing plus a batched oblivious PRF (semi-honest).
//!
//! # Protocol ([KKRT16], §5; the flow of SecretFlow's `kkrt_psi`)
//!
//! Items of any length are first hashed to 128-bit blocks, `x = RO("obliv-psi kkrt16 v1
//! item", item)` (BLAKE3, domain-separated). With `n_R` receiver items and `n_S` sender items
//! (both public, exchanged in the handshake):
//!
//! 1. **Cuckoo hashing (receiver).** The receiver picks a fresh seed, derives three hash
//!    functions `h_0, h_1, h_2 : Block → [0, m)` with `m ≈ e·n_R` bins (`e` from
//!    [`KkrtConfig::cuckoo_factor`]: by default the factor for failure probability `2^-λ`,
//!    see [`KkrtConfig::bins`]) and places each of its distinct items `x` in exactly one
//!    bin `b = h_k(x)`, no stash ([`obliv_cuckoo::CuckooTable`]). It sends the seed and `m`.
//! 2. **OPRF.** One KKRT16 OPRF instance per bin ([`obliv_ot::kkrt`], 512-bit pseudorandom
//!    code): the receiver's input in bin `b` holding `x` placed by `h_k` is `x ⊕ ⟨k⟩` (the
//!    paper's `x ‖ k`, as a block: `⟨k⟩ = k` in the low bits); empty bins get a random dummy
//!    input. It obtains `F_b(x ⊕ ⟨k⟩)`; the sender obtains a key that evaluates every `F_b`.
//! 3. **Simple hashing (sender).** For each hash function `k` the sender computes, for each of
//!    its distinct items `y`, `F_{h_k(y)}(y ⊕ ⟨k⟩)`, truncates it to
//!    `w = ⌈(λ + log2 n_R + log2 n_S)/8⌉` bytes, pads the set with random values up to `n_S`
//!    (so duplicates in its input are not revealed), shuffles it and sends it: three sets
//!    `V_0, V_1, V_2` as in the paper.
//! 4. **Comparison (receiver).** Item `x` in bin `b` placed by `h_k` is in the intersection iff
//!    the truncation of `F_b(x ⊕ ⟨k⟩)` is in `V_k`. The receiver outputs the indices of its
//!    items (every copy of a duplicated item) in ascending order; the sender gets `None`.
//!
//! Because the receiver compares each bin only against the set of the hash function that
//! placed it, it makes `n_R · n_S` comparisons in all, and `w` bytes keep the probability of
//! any false match below `2^-λ`. Appending the hash index (rather than feeding the bare item,
//! as libOTe does) means that an item whose hash functions coincide still yields distinct,
//! independent values, so the sender never needs to deduplicate per bin.
//!
//! `λ` is [`KkrtConfig::stat_security`] (40 by default, [`crate::job_stat_security`] for a
//! job of many runs); it is in every handshake, so peers with different values stop with
//! [`Error::HandshakeMismatch`] on the field `statistical security`.
//!
//! # Sessions and buckets
//!
//! The 512 base OTs of the OPRF run once per session ([`KkrtPsiSender::setup`],
//! [`KkrtPsiReceiver::setup`]); each call to `run` then intersects one bucket, and OPRF
//! instances keep counting across buckets, so one setup serves any number of buckets.
//! [`KkrtPsiSender::split`] / [`KkrtPsiReceiver::split`] derive independent sessions (no new
//! base OTs) for buckets run concurrently on other channels. [`run`] is the one-shot form.
//!
//! # Security and leakage
//!
//! Semi-honest security, as in [KKRT16, §5] (the OPRF is secure in the random-oracle /
//! correlation-robust model given secure base OTs). The receiver learns the intersection and
//! `n_S`; the sender learns `n_R` and `m` (a function of `n_R` and the configuration: the
//! table is sized for `n_R` items even when some repeat). The cuckoo seed is drawn after the
//! inputs are fixed. If a table fails to build, the receiver draws another seed (up to
//! [`CUCKOO_TRIES`] times) before sending one: the seed the sender sees is then uniform
//! conditioned on the receiver's set hashing under it, which depends on the set; its
//! statistical distance from uniform is at most the failure probability of one table.
//!
//! - **Default** (`cuckoo_factor: None`): `m = ⌈e·n_R⌉` with
//!   `e = `[`obliv_cuckoo::CuckooParams::factor`]`(n_R, λ)`, the conservative [PSZ18] fit
//!   for failure probability `2^-λ` (`e ≈ 1.54` at `n = 2^20`, λ = 40), so a retry, and what
//!   the accepted seed says about the receiver's set, are below `2^-λ`.
//! - **Explicit** `Some(e)` (for instance 1.27, what KKRT16, libOTe and SecretFlow benchmark
//!   with, about 18 % less OPRF traffic than the default at 2^20): the failure probability is
//!   the caller's choice, about `2^-(a_n·e + b_n)` by the same fit — `2^-7` for `e = 1.27` at
//!   `n = 2^20` (empirically far lower; see `obliv-cuckoo`'s README). With that probability
//!   the receiver needs another seed, and the seed the sender sees tells it that the
//!   receiver's set hashes under it, which a fraction of about that size of the possible
//!   sets do not: a leak of the receiver's set of that order. Tables below [`SMALL_TABLE`]
//!   items use at least the `2^-λ` factor (they cost nothing).
//!
//! Not secure against a malicious party (the OPRF is not).
//!
//! # Cost
//!
//! Communication: `64·m` bytes receiver → sender (the OPRF) and `3·n_S·w` bytes sender →
//! receiver. Memory: the sender holds the OPRF key (`64·m` bytes) and its items; the receiver
//! holds its items, `m` inputs and outputs, and a hash map of its `n_R` comparison values; the
//! sender's values are streamed in frames of [`FRAME_VALUES`] and never stored.
//!
//! [KKRT16]: https://eprint.iacr.org/2016/799
//! [PSZ18]: https://eprint.iacr.org/2016/930

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use obliv_core::Block;
use obliv_core::hash::RoHasher;
use obliv_cuckoo::{CuckooHasher, CuckooParams, CuckooTable, NUM_HASHES};
use obliv_net::Channel;
use obliv_ot::kkrt::{KkrtReceiver, KkrtSender};
use rand::seq::SliceRandom;
use rand_core::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroize;

use crate::error::{Error, Result};
use crate::handshake::{self, Hello};
use crate::item::PsiItem;
use crate::session::{PsiSession, agree_split};
use crate::wire::{RngAdapter, Role, check_stat_security, compare_width, peer_count};

/// Protocol identifier of KKRT16 PSI in the handshake.
pub const PROTOCOL_ID: u8 = 20;
pub use crate::wire::STAT_SECURITY;
/// Sender values per frame of a set `V_k`.
pub const FRAME_VALUES: usize = 1 << 14;
/// Seeds the receiver tries before giving up on a cuckoo table.
pub const CUCKOO_TRIES: usize = 8;
/// Below this many receiver items the table is sized for `2^-λ` failure whatever the factor.
pub const SMALL_TABLE: usize = 1 << 12;
/// Domain of the item hash.
const ITEM_DOMAIN: &str = "obliv-psi kkrt16 v1 item";
/// The stage in `param` of the session handshake and of the per-bucket handshake (above the
/// statistical security parameter in the low byte).
const STAGE_SETUP: u64 = 1;
const STAGE_BUCKET: u64 = 2;
/// Length of the receiver's table message: seed (16 bytes) and `m` (8 bytes).
const TABLE_MSG_LEN: usize = 24;

/// Parameters of a KKRT16 PSI session.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KkrtConfig {
    /// Bins per receiver item, `e = m / n_R` (used by the receiver only; see [`Self::bins`]).
    ///
    /// - `None` (the default): for each bucket of `n_R` items, the conservative [PSZ18] fit
    ///   [`obliv_cuckoo::CuckooParams::factor`]`(n_R, stat_security)`, so that a table fails to
    ///   build with probability at most `2^-stat_security` (≈ 1.54 at 2^20 for λ = 40).
    /// - `Some(e)` with `e` in `(1, 2]`: an explicit factor, for instance 1.27, the size
    ///   KKRT16, libOTe and SecretFlow benchmark with (about 18 % less OPRF traffic than the
    ///   default at 2^20). A table then fails with probability about `2^-7` at 2^20 by the
    ///   same fit (empirically far lower); on a failure the receiver retries with a fresh
    ///   seed, so the seed the sender sees leaks, with about that probability, that the
    ///   receiver's set hashes under it (see the [module documentation](self)). Buckets below
    ///   [`SMALL_TABLE`] items still get at least the `2^-λ` factor.
    ///
    /// [PSZ18]: https://eprint.iacr.org/2016/930
    pub cuckoo_factor: Option<f64>,
    /// Most items a peer may announce per bucket (bounds what its messages make us allocate:
    /// the sender allocates `64 · m` bytes, with `m` at most
    /// `max(2, CuckooParams::factor(n_R, λ))·n_R + 4096`).
    pub max_peer_items: usize,
    /// Statistical security parameter λ of one run (compared in the handshake): a false
    /// match, and with the default `cuckoo_factor` a cuckoo failure, have probability at most
    /// `2^-λ`; it sets the comparison width and the table size. In
    /// `STAT_SECURITY..=`[`crate::MAX_STAT_SECURITY`]; [`STAT_SECURITY`] (40) by default, and
    /// [`crate::job_stat_security`] of the number of runs for a job of many runs (buckets,
    /// shards) that must meet `2^-40` as a whole.
    pub stat_security: u32,
}

impl Default for KkrtConfig {
    fn default() -> Self {
        KkrtConfig {
            cuckoo_factor: None,
            max_peer_items: 1 << 26,
            stat_security: STAT_SECURITY,
        }
    }
}

impl KkrtConfig {
    /// The expansion factor `e = m / n` the receiver uses for a bucket of `n` items: the
    /// [PSZ18] fit [`CuckooParams::factor`]`(n, stat_security)` by default, the explicit
    /// `cuckoo_factor` otherwise (at least the fit below [`SMALL_TABLE`] items).
    ///
    /// [PSZ18]: https://eprint.iacr.org/2016/930
    pub fn factor(&self, n: usize) -> f64 {
        let fit = CuckooParams::factor(n, self.stat_security);
        match self.cuckoo_factor {
            None => fit,
            Some(e) if n < SMALL_TABLE => e.max(fit),
            Some(e) => e,
        }
    }

    /// The number of bins `m` of the receiver's table for a bucket of `n` items
    /// (`⌈factor(n)·n⌉`, at least `n + 8`), which the sender sees.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the table would exceed [`obliv_cuckoo::MAX_ITEMS`]
    /// bins.
    pub fn bins(&self, n: usize) -> Result<usize> {
        CuckooParams::with_factor(n, self.factor(n))
            .map(|p| p.bins)
            .map_err(|err| Error::InvalidParameter(format!("cuckoo parameters: {err}")))
    }

    fn check(&self) -> Result<()> {
        if let Some(e) = self.cuckoo_factor
            && !(e > 1.0 && e <= 2.0)
        {
            return Err(Error::InvalidParameter(format!(
                "cuckoo factor {e} is not in (1, 2]"
            )));
        }
        check_stat_security(self.stat_security)?;
        if self.max_peer_items > obliv_cuckoo::MAX_ITEMS / 2 {
            return Err(Error::InvalidParameter(format!(
                "max_peer_items {} is above {}",
                self.max_peer_items,
                obliv_cuckoo::MAX_ITEMS / 2
            )));
        }
        Ok(())
    }
}

fn name_of(field: &'static str, v: u8) -> String {
    match (field, v) {
        ("protocol", PROTOCOL_ID) => "kkrt16".into(),
        _ => crate::ecdh::code_name(field, v),
    }
}

/// An OT error, its channel errors lifted to [`Error::Net`].
fn ot_err(e: obliv_ot::Error) -> Error {
    match e {
        obliv_ot::Error::Net(n) => Error::Net(n),
        other => Error::Ot(other),
    }
}

/// The hello of `role` at `stage` for `n_items` items under `cfg`.
fn our_hello(role: Role, stage: u64, n_items: usize, cfg: &KkrtConfig) -> Hello {
    Hello {
        protocol: PROTOCOL_ID,
        curve: 0,
        role: role.code(),
        flags: 0,
        batch: 0,
        n_items: n_items as u64,
        param: handshake::stat_param(cfg.stat_security, stage),
    }
}

/// Exchanges a hello at `stage` and returns the peer's item count (checked against `max`).
fn hello<C: Channel + ?Sized>(
    ch: &mut C,
    role: Role,
    stage: u64,
    n_items: usize,
    cfg: &KkrtConfig,
    max: usize,
) -> Result<usize> {
    let ours = our_hello(role, stage, n_items, cfg);
    let theirs = handshake::exchange_stat(ch, &ours, role.other().code(), name_of)?;
    peer_count("n_items", theirs.n_items, max)
}

/// Hashes items to blocks: `RO("obliv-psi kkrt16 v1 item", item)`, in parallel on rayon.
pub fn hash_items<T: PsiItem + Sync>(items: &[T]) -> Vec<Block> {
    items
        .par_chunks(4096)
        .map_init(
            || RoHasher::new(ITEM_DOMAIN),
            |h, c| {
                let c: Vec<&[u8]> = c.iter().map(PsiItem::item_bytes).collect();
                h.hash_blocks(&c)
            },
        )
        .collect::<Vec<_>>()
        .concat()
}

/// `⟨k⟩`: the encoding of hash function `k` xored into the OPRF input.
fn tag(k: usize) -> Block {
    Block(k as u128)
}

/// The first `w` bytes of a PRF value, packed into a `u128`.
fn truncated(v: Block, w: usize) -> u128 {
    let mask = if w >= 16 {
        u128::MAX
    } else {
        (1u128 << (8 * w)) - 1
    };
    u128::from_le_bytes(v.to_bytes()) & mask
}

/// A hasher for keys that are already pseudorandom (truncated PRF values the peer does not
/// know): the low 64 bits are the hash.
#[derive(Default)]
struct PrfHasher(u64);

impl Hasher for PrfHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, v: u128) {
        #[allow(clippy::cast_possible_truncation)] // folding to 64 bits is the point
        {
            self.0 ^= (v as u64) ^ ((v >> 64) as u64).rotate_left(29);
        }
    }
}

type PrfMap = HashMap<u128, u32, BuildHasherDefault<PrfHasher>>;

/// The longest frame a peer's KKRT16 session sends: a chunk of the OPRF's OT extension
/// ([`obliv_ot::kkrt::CODE_BITS`] columns of [`obliv_ot::kkrt::CHUNK`] bits, 512 KiB), from the
/// receiver. The sender's frames of [`FRAME_VALUES`] values of at most 16 bytes (256 KiB), the
/// 512 base OTs (16 KiB) and the handshakes are shorter.
pub const MAX_FRAME_LEN: usize = obliv_ot::kkrt::CODE_BITS * obliv_ot::kkrt::CHUNK / 8;

/// Largest `m` a sender accepts for `n_r` receiver items at statistical security
/// `stat_security`: `max(2·n_r, ⌈CuckooParams::factor(n_r, λ)·n_r⌉) + 4096`, which admits
/// every table [`KkrtConfig::bins`] gives (any explicit factor is at most 2; the slack covers
/// the rounding of the fit on another platform).
fn max_bins(n_r: usize, stat_security: u32) -> usize {
    #[allow(clippy::cast_precision_loss)] // n_r < 2^53: exact enough for a bound
    let fit = (CuckooParams::factor(n_r, stat_security) * n_r as f64).ceil();
    // A float to usize cast saturates; the fit is positive.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let fit = fit as usize;
    n_r.saturating_mul(2).max(fit).saturating_add(4096)
}

/// The receiver's side of a KKRT16 PSI session (base OTs done once, many buckets).
///
/// Its OPRF state is zeroized on drop; `Debug` prints no secret.
///
/// A failed [`run`](Self::run) ends the session: the two sides' OPRF instance counters may
/// no longer agree (one side may have finished the OPRF of the failed bucket, the other
/// not), so every later run, and every session split from it, is refused.
#[derive(Debug)]
pub struct KkrtPsiReceiver {
    oprf: KkrtReceiver,
    cfg: KkrtConfig,
    failed: bool,
}

/// The sender's side of a KKRT16 PSI session (base OTs done once, many buckets).
///
/// Its OPRF state is zeroized on drop; `Debug` prints no secret.
///
/// A failed [`run`](Self::run) ends the session, as for [`KkrtPsiReceiver`].
#[derive(Debug)]
pub struct KkrtPsiSender {
    oprf: KkrtSender,
    cfg: KkrtConfig,
    failed: bool,
}

/// The error of a call on a session that an earlier error ended.
fn spent() -> Error {
    Error::InvalidParameter("an earlier run of this KKRT session failed; open a new session".into())
}

impl KkrtPsiReceiver {
    /// Opens a session: handshake (protocol, roles) and the OPRF's 512 base OTs. The peer runs
    /// [`KkrtPsiSender::setup`].
    ///
    /// # Errors
    /// An invalid `cfg`, a handshake mismatch, or a network / protocol error in the base OTs.
    pub fn setup<C, R>(ch: &mut C, cfg: &KkrtConfig, rng: &mut R) -> Result<Self>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        cfg.check()?;
        hello(ch, Role::Receiver, STAGE_SETUP, 0, cfg, 0)?;
        let oprf = KkrtReceiver::setup(ch, rng).map_err(ot_err)?;
        Ok(KkrtPsiReceiver {
            oprf,
            cfg: *cfg,
            failed: false,
        })
    }

    /// An independent session for the same peer without new base OTs (see
    /// [`obliv_ot::kkrt::KkrtReceiver::split`]); the peer splits its sender at the same point.
    /// The split of a failed session is failed too.
    pub fn split(&mut self) -> Self {
        KkrtPsiReceiver {
            oprf: self.oprf.split(),
            cfg: self.cfg,
            failed: self.failed,
        }
    }

    /// Intersects one bucket: returns the indices (ascending) of `items` that the sender also
    /// holds. Duplicates are allowed; every index of a common item is returned.
    ///
    /// # Errors
    /// A handshake mismatch, a peer announcing too many items, a cuckoo table that fails for
    /// [`CUCKOO_TRIES`] seeds, or a network / protocol error (a frame of the wrong size);
    /// [`Error::InvalidParameter`] if an earlier run failed (see [`KkrtPsiReceiver`]).
    pub fn run<C, T, R>(&mut self, ch: &mut C, items: &[T], rng: &mut R) -> Result<Vec<usize>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        if self.failed {
            return Err(spent());
        }
        if items.len() > obliv_cuckoo::MAX_ITEMS / 2 {
            return Err(Error::InvalidParameter(format!(
                "{} items in one bucket",
                items.len()
            )));
        }
        let r = self.run_checked(ch, items, rng);
        self.failed = r.is_err();
        r
    }

    fn run_checked<C, T, R>(&mut self, ch: &mut C, items: &[T], rng: &mut R) -> Result<Vec<usize>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        let n_s = hello(
            ch,
            Role::Receiver,
            STAGE_BUCKET,
            items.len(),
            &self.cfg,
            self.cfg.max_peer_items,
        )?;
        if items.is_empty() || n_s == 0 {
            return Ok(Vec::new());
        }
        // Width from the announced sizes (the sender knows no other), checked before anything
        // else is sent.
        let w = compare_width(self.cfg.stat_security, items.len(), n_s)?;
        let blocks = hash_items(items);
        self.run_blocks(ch, blocks, n_s, w, rng)
    }

    fn run_blocks<C, R>(
        &mut self,
        ch: &mut C,
        blocks: Vec<Block>,
        n_s: usize,
        w: usize,
        rng: &mut R,
    ) -> Result<Vec<usize>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        // Distinct items: `uniq` and, for each input index, its distinct item.
        let mut order: Vec<u32> = (0..u32::try_from(blocks.len())
            .map_err(|_| Error::InvalidParameter("more than 2^32 items in one bucket".into()))?)
            .collect();
        order.sort_unstable_by_key(|&i| blocks[i as usize]);
        let mut uniq: Vec<Block> = Vec::with_capacity(blocks.len());
        let mut uniq_of = vec![0u32; blocks.len()];
        for &i in &order {
            let x = blocks[i as usize];
            if uniq.last() != Some(&x) {
                uniq.push(x);
            }
            // uniq.len() ≤ blocks.len() < 2^32, checked above.
            #[allow(clippy::cast_possible_truncation)]
            {
                uniq_of[i as usize] = (uniq.len() - 1) as u32;
            }
        }
        drop(order);
        let n_r = blocks.len();
        drop(blocks);

        // 1. Cuckoo table under a fresh seed, sized for the announced `n_r` items (so `m`
        //    does not reveal how many of them repeat).
        let n = uniq.len();
        let params = CuckooParams::with_bins(n_r, self.cfg.bins(n_r)?)
            .map_err(|err| Error::InvalidParameter(format!("cuckoo parameters: {err}")))?;
        let mut built = None;
        let mut last_err = None;
        for _ in 0..CUCKOO_TRIES {
            let seed = Block::random(rng);
            match CuckooTable::build_with(&params, &uniq, seed) {
                Ok(t) => {
                    built = Some((t, seed));
                    break;
                }
                Err(err) => last_err = Some(err),
            }
        }
        let Some((table, seed)) = built else {
            return Err(Error::InvalidParameter(format!(
                "cuckoo hashing of {n} items into {} bins failed for {CUCKOO_TRIES} seeds \
                 (last: {}); use a larger cuckoo_factor",
                params.bins,
                last_err.map(|e| e.to_string()).unwrap_or_default()
            )));
        };
        let m = table.bins();
        let mut msg = Vec::with_capacity(TABLE_MSG_LEN);
        msg.extend_from_slice(&seed.to_bytes());
        msg.extend_from_slice(&(m as u64).to_le_bytes());
        ch.send_vec(msg)?;

        // 2. One OPRF instance per bin. Only the placement (item, hash function) of each bin
        //    is kept; the table and the items are freed before the OPRF runs.
        let mut inputs = Vec::with_capacity(m);
        let mut place = Vec::with_capacity(m);
        let mut per_hash = [0usize; NUM_HASHES];
        for b in 0..m {
            let (x, p) = match table.bin(b) {
                Some((i, k)) => {
                    per_hash[k] += 1;
                    // i < n < 2^32 and k < 3.
                    #[allow(clippy::cast_possible_truncation)]
                    (uniq[i] ^ tag(k), (i as u32, k as u8))
                }
                None => (Block::random(rng), (u32::MAX, 0)),
            };
            inputs.push(x);
            place.push(p);
        }
        drop(table);
        uniq.zeroize();
        drop(uniq);
        let mut outs = self.oprf.receive(ch, &inputs).map_err(ot_err)?;
        inputs.zeroize();
        drop(inputs);

        // 3. Comparison maps: V_k lookups for the bins placed by h_k.
        let mut maps: [PrfMap; NUM_HASHES] =
            per_hash.map(|c| PrfMap::with_capacity_and_hasher(c, Default::default()));
        for (out, &(i, k)) in outs.iter().zip(&place) {
            if i != u32::MAX {
                maps[usize::from(k)].insert(truncated(*out, w), i);
            }
        }
        outs.zeroize();
        drop(outs);
        drop(place);

        // 4. Receive V_0, V_1, V_2 and mark the matches.
        let mut found = vec![false; n];
        for map in &maps {
            let mut left = n_s;
            while left > 0 {
                let count = left.min(FRAME_VALUES);
                let f = ch.recv_max(count * w)?;
                if f.len() != count * w {
                    return Err(Error::Protocol(format!(
                        "sender frame of {} bytes, expected {} values of {w} bytes",
                        f.len(),
                        count
                    )));
                }
                for v in f.chunks_exact(w) {
                    let mut a = [0u8; 16];
                    a[..w].copy_from_slice(v);
                    if let Some(&i) = map.get(&u128::from_le_bytes(a)) {
                        found[i as usize] = true;
                    }
                }
                left -= count;
            }
        }
        Ok((0..n_r).filter(|&j| found[uniq_of[j] as usize]).collect())
    }
}

impl KkrtPsiSender {
    /// Opens a session: handshake (protocol, roles) and the OPRF's 512 base OTs. The peer runs
    /// [`KkrtPsiReceiver::setup`].
    ///
    /// # Errors
    /// An invalid `cfg`, a handshake mismatch, or a network / protocol error in the base OTs.
    pub fn setup<C, R>(ch: &mut C, cfg: &KkrtConfig, rng: &mut R) -> Result<Self>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        cfg.check()?;
        hello(ch, Role::Sender, STAGE_SETUP, 0, cfg, 0)?;
        let mut oprf = KkrtSender::setup(ch, rng).map_err(ot_err)?;
        // A second bound under the table-size check of every bucket: the OT extension itself
        // refuses a batch above what the largest agreed bucket needs.
        oprf.set_max_batch(max_bins(cfg.max_peer_items, cfg.stat_security));
        Ok(KkrtPsiSender {
            oprf,
            cfg: *cfg,
            failed: false,
        })
    }

    /// An independent session for the same peer without new base OTs (see
    /// [`obliv_ot::kkrt::KkrtSender::split`]); the peer splits its receiver at the same point.
    /// The split of a failed session is failed too.
    pub fn split(&mut self) -> Self {
        KkrtPsiSender {
            oprf: self.oprf.split(),
            cfg: self.cfg,
            failed: self.failed,
        }
    }

    /// Intersects one bucket as the sender (who learns nothing but `n_R`).
    ///
    /// # Errors
    /// A handshake mismatch, a peer announcing too many items or an out-of-range table size,
    /// or a network / protocol error; [`Error::InvalidParameter`] if an earlier run failed
    /// (see [`KkrtPsiSender`]).
    pub fn run<C, T, R>(&mut self, ch: &mut C, items: &[T], rng: &mut R) -> Result<()>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        if self.failed {
            return Err(spent());
        }
        if items.len() > obliv_cuckoo::MAX_ITEMS / 2 {
            return Err(Error::InvalidParameter(format!(
                "{} items in one bucket",
                items.len()
            )));
        }
        let r = self.run_checked(ch, items, rng);
        self.failed = r.is_err();
        r
    }

    fn run_checked<C, T, R>(&mut self, ch: &mut C, items: &[T], rng: &mut R) -> Result<()>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        let n_r = hello(
            ch,
            Role::Sender,
            STAGE_BUCKET,
            items.len(),
            &self.cfg,
            self.cfg.max_peer_items,
        )?;
        if items.is_empty() || n_r == 0 {
            return Ok(());
        }
        let w = compare_width(self.cfg.stat_security, n_r, items.len())?;
        // The item hashes are the sender's secret input: wiped whatever the run's outcome.
        let mut ys = zeroize::Zeroizing::new(hash_items(items));
        ys.sort_unstable();
        ys.dedup();
        self.run_blocks(ch, &ys, items.len(), n_r, w, rng)
    }

    /// `ys`: the distinct item blocks; `n_s`: the announced count (the sets are padded to it);
    /// `w`: the comparison width.
    fn run_blocks<C, R>(
        &mut self,
        ch: &mut C,
        ys: &[Block],
        n_s: usize,
        n_r: usize,
        w: usize,
        rng: &mut R,
    ) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        // 1. The receiver's table: seed and m, checked before anything is allocated for it.
        let msg = ch.recv_max(TABLE_MSG_LEN)?;
        if msg.len() != TABLE_MSG_LEN {
            return Err(Error::Protocol(format!(
                "cuckoo table message of {} bytes, expected {TABLE_MSG_LEN}",
                msg.len()
            )));
        }
        let mut sb = [0u8; 16];
        sb.copy_from_slice(&msg[..16]);
        let seed = Block::from_bytes(sb);
        let mut mb = [0u8; 8];
        mb.copy_from_slice(&msg[16..]);
        let m_raw = u64::from_le_bytes(mb);
        let max_m = max_bins(n_r, self.cfg.stat_security);
        let m = usize::try_from(m_raw)
            .ok()
            .filter(|&m| m >= n_r && m <= max_m)
            .ok_or_else(|| {
                Error::Protocol(format!(
                    "receiver announced {m_raw} bins for {n_r} items (allowed {n_r}..={max_m})"
                ))
            })?;
        let hasher = CuckooHasher::new(seed, m)
            .map_err(|e| Error::Protocol(format!("receiver's cuckoo table: {e}")))?;

        // 2. The OPRF key for the m bins.
        let key = self.oprf.send(ch, m).map_err(ot_err)?;

        // 3. Simple hashing and the three shuffled, padded sets.
        let mut bins = vec![[0u32; NUM_HASHES]; ys.len()];
        hasher.hash_many(ys, &mut bins);
        let n_s32 = u32::try_from(n_s)
            .map_err(|_| Error::InvalidParameter("more than 2^32 items in one bucket".into()))?;
        let mut perm: Vec<u32> = (0..n_s32).collect();
        let mut idx = Vec::with_capacity(FRAME_VALUES);
        // OPRF inputs (item hashes with the hash index): wiped on every return.
        let mut inp = zeroize::Zeroizing::new(Vec::with_capacity(FRAME_VALUES));
        let mut out = vec![Block::ZERO; FRAME_VALUES];
        for k in 0..NUM_HASHES {
            perm.shuffle(&mut RngAdapter(rng));
            for chunk in perm.chunks(FRAME_VALUES) {
                idx.clear();
                inp.clear();
                for &p in chunk {
                    if let (Some(y), Some(h)) = (ys.get(p as usize), bins.get(p as usize)) {
                        idx.push(h[k] as usize);
                        inp.push(*y ^ tag(k));
                    }
                }
                key.eval_batch(&idx, &inp[..], &mut out[..idx.len()])
                    .map_err(ot_err)?;
                let mut frame = Vec::with_capacity(chunk.len() * w);
                let mut real = out[..idx.len()].iter();
                for &p in chunk {
                    let v = if (p as usize) < ys.len() {
                        // One output per real position, in order.
                        real.next().copied().unwrap_or(Block::ZERO)
                    } else {
                        Block::random(rng)
                    };
                    frame.extend_from_slice(&v.to_bytes()[..w]);
                }
                ch.send_vec(frame)?;
            }
        }
        ch.flush()?;
        Ok(())
    }
}

/// KKRT16 PSI of either role as a [`PsiSession`]: the 512 base OTs run at the start of the
/// first run (or of the first [`split`](PsiSession::split)), exactly where
/// [`KkrtPsiReceiver::setup`] / [`KkrtPsiSender::setup`] would run them, so the messages are
/// those of a set-up followed by one `run` per bucket.
#[derive(Debug)]
pub struct KkrtSession {
    role: Role,
    cfg: KkrtConfig,
    state: KkrtState,
}

/// Where a [`KkrtSession`] stands.
#[derive(Debug)]
enum KkrtState {
    /// No base OT yet.
    New,
    /// Set up as the receiver.
    Receiver(KkrtPsiReceiver),
    /// Set up as the sender.
    Sender(KkrtPsiSender),
    /// A run or set-up failed.
    Failed,
}

impl KkrtSession {
    /// A session as `role` with parameters `cfg` (checked here). Nothing is sent until the
    /// first run.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid `cfg`.
    pub fn new(role: Role, cfg: &KkrtConfig) -> Result<Self> {
        cfg.check()?;
        Ok(KkrtSession {
            role,
            cfg: *cfg,
            state: KkrtState::New,
        })
    }

    /// Runs the base OTs if they have not run yet.
    fn set_up<C, R>(&mut self, ch: &mut C, rng: &mut R) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        match self.state {
            KkrtState::New => {
                self.state = KkrtState::Failed;
                self.state = match self.role {
                    Role::Receiver => {
                        KkrtState::Receiver(KkrtPsiReceiver::setup(ch, &self.cfg, rng)?)
                    }
                    Role::Sender => KkrtState::Sender(KkrtPsiSender::setup(ch, &self.cfg, rng)?),
                };
                Ok(())
            }
            KkrtState::Failed => Err(spent()),
            _ => Ok(()),
        }
    }
}

impl PsiSession for KkrtSession {
    fn protocol(&self) -> &'static str {
        "kkrt16"
    }

    fn set_job_limits(&mut self, max_peer_items: usize, stat_security: u32) -> Result<()> {
        let cfg = KkrtConfig {
            max_peer_items,
            stat_security,
            ..self.cfg
        };
        cfg.check()?;
        match &mut self.state {
            KkrtState::New => {}
            KkrtState::Receiver(s) => s.cfg = cfg,
            KkrtState::Sender(s) => {
                // The OT extension's own bound follows the new largest bucket, as in `setup`.
                s.oprf
                    .set_max_batch(max_bins(cfg.max_peer_items, cfg.stat_security));
                s.cfg = cfg;
            }
            KkrtState::Failed => return Err(spent()),
        }
        self.cfg = cfg;
        Ok(())
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
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        self.set_up(ch, rng)?;
        let r = match &mut self.state {
            KkrtState::Receiver(s) => s.run(ch, items, rng).map(Some),
            KkrtState::Sender(s) => s.run(ch, items, rng).map(|()| None),
            KkrtState::New | KkrtState::Failed => {
                Err(Error::InvalidParameter("KKRT session not set up".into()))
            }
        };
        if r.is_err() {
            self.state = KkrtState::Failed;
        }
        r
    }

    fn split<C, R>(&mut self, ch: &mut C, n: usize, rng: &mut R) -> Result<Vec<Self>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        self.set_up(ch, rng)?;
        let ours = our_hello(self.role, STAGE_SETUP, 0, &self.cfg);
        // A split that failed half-way may have split the peer's OPRF and not ours (its
        // children would then not correlate with ours): the session ends, as after a run.
        if let Err(e) = agree_split(ch, ours, self.role, n, name_of) {
            self.state = KkrtState::Failed;
            return Err(e);
        }
        let (role, cfg) = (self.role, self.cfg);
        let child = |state| KkrtSession { role, cfg, state };
        Ok((0..n)
            .map(|_| match &mut self.state {
                KkrtState::Receiver(s) => child(KkrtState::Receiver(s.split())),
                KkrtState::Sender(s) => child(KkrtState::Sender(s.split())),
                KkrtState::New | KkrtState::Failed => child(KkrtState::Failed),
            })
            .collect())
    }
}

/// Runs KKRT16 PSI once (session setup plus one bucket) as `role` over `ch`.
///
/// Returns the indices (ascending) of `items` in the intersection for the receiver, `None`
/// for the sender. Duplicate items are allowed: every index of a common item is returned.
///
/// # Errors
/// As [`KkrtPsiReceiver::setup`] and [`KkrtPsiReceiver::run`] (or the sender's).
pub fn run<C, T, R>(
    ch: &mut C,
    role: Role,
    items: &[T],
    cfg: &KkrtConfig,
    rng: &mut R,
) -> Result<Option<Vec<usize>>>
where
    C: Channel + ?Sized,
    T: PsiItem + Sync,
    R: CryptoRng + ?Sized,
{
    match role {
        Role::Receiver => {
            let mut s = KkrtPsiReceiver::setup(ch, cfg, rng)?;
            s.run(ch, items, rng).map(Some)
        }
        Role::Sender => {
            let mut s = KkrtPsiSender::setup(ch, cfg, rng)?;
            s.run(ch, items, rng)?;
            Ok(None)
        }
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test constants
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_the_first_bytes() {
        let v = Block::from_bytes(core::array::from_fn(|i| (i + 1) as u8));
        assert_eq!(truncated(v, 1), 1);
        assert_eq!(truncated(v, 2), 0x0201);
        assert_eq!(truncated(v, 16), u128::from_le_bytes(v.to_bytes()));
        // The receiver packs received bytes the same way.
        let mut a = [0u8; 16];
        a[..10].copy_from_slice(&v.to_bytes()[..10]);
        assert_eq!(truncated(v, 10), u128::from_le_bytes(a));
    }

    #[test]
    fn table_bounds_and_config() {
        assert_eq!(max_bins(0, STAT_SECURITY), 4096);
        assert!(max_bins(1 << 20, STAT_SECURITY) >= (1.27 * f64::from(1u32 << 20)) as usize);
        // Every table the receiver builds, at the default factor, an explicit one, and for
        // small tables the 2^-λ floor, is within what a sender accepts, at every λ.
        let mut sizes: Vec<usize> = (0..=2 * SMALL_TABLE).step_by(7).collect();
        sizes.extend((12..=26).map(|k| 1usize << k));
        sizes.extend([(1 << 26) - 1, 1_000_000, 10_000_000, 50_000_000]);
        for stat_security in [40, 41, 50, 64, 96, 128] {
            for cuckoo_factor in [None, Some(1.01), Some(1.27), Some(2.0)] {
                let cfg = KkrtConfig {
                    cuckoo_factor,
                    stat_security,
                    ..KkrtConfig::default()
                };
                assert!(cfg.check().is_ok());
                for &n in &sizes {
                    let bins = cfg.bins(n).unwrap();
                    let max = max_bins(n, stat_security);
                    assert!(
                        bins >= n && bins <= max,
                        "λ = {stat_security}, e = {cuckoo_factor:?}, n = {n}: {bins} bins, max {max}"
                    );
                }
            }
        }
        assert!(KkrtConfig::default().check().is_ok());
        for e in [1.0, 2.5, f64::NAN] {
            let c = KkrtConfig {
                cuckoo_factor: Some(e),
                ..KkrtConfig::default()
            };
            assert!(c.check().is_err());
        }
        for stat_security in [0, 39, 129] {
            let c = KkrtConfig {
                stat_security,
                ..KkrtConfig::default()
            };
            assert!(c.check().is_err());
        }
    }

    #[test]
    fn item_hash_regression() {
        // Pins the item encoding (a wire-format change must bump the domain).
        let a = hash_items(&[b"alice".as_slice(), b"bob".as_slice()]);
        assert_eq!(a[0], obliv_core::hash::ro_hash_block(ITEM_DOMAIN, b"alice"));
        assert_ne!(a[0], a[1]);
        assert_eq!(tag(2), Block(2));
    }
}
