//! ECDH-PSI among three parties (semi-honest); one party, the receiver, learns the result.
//!
//! # Protocol
//!
//! The receiver `C` holds key `c`; the two other parties are `P` (the lower rank) with key `a`
//! and `Q` with key `b`. `H` hashes to the group and `T` truncates the comparison hash of a
//! group element. Three more hashes (BLAKE3 in derive-key mode, one context each) let `C` open
//! only the common part of `P`'s and `Q`'s sets: `K(g)`, a 16-byte key of a group element `g`,
//! and `I(k) ‖ E(k)`, the output of a key `k` split into an index of `w_I` bytes and a pad as
//! long as an encoded point. Every party first removes the duplicates from its own items (the
//! receiver maps its result back to every index of a common item), so all sets below are sets.
//!
//! 1. `P` and `Q` exchange their masked, shuffled sets `H(x_P)^a` and `H(x_Q)^b` and raise
//!    the other's to their own key: `P` holds `V = {H(x_Q)^{ab}}`, `Q` holds
//!    `U = {H(x_P)^{ab}}`, each in the other's shuffled order. `Q` sends `C` the keys `K(u)`
//!    for `u ∈ U`; `P` sends `C` each `v ∈ V` sealed as `I(K(v)) ‖ v ⊕ E(K(v))`. `C` looks
//!    each key's index up among the sealed points and opens the ones that match, keeping an
//!    opened `v` only if `K(v)` is the key that opened it. What opens is exactly
//!    `W = U ∩ V = {H(x)^{ab} : x ∈ X_P ∩ X_Q}`; `C` computes `T(w^c)` for `w ∈ W`.
//! 2. `C` sends `H(x_C)^c` in its own order to `P`, which raises it to `a` and forwards it to
//!    `Q`, which raises it to `b` and returns `T(H(x_C)^{cab})` to `C`.
//! 3. `C` outputs the indices of its items whose value lies in `T(W^c)`.
//!
//! `T` keeps `⌈(λ + log₂ n_C + log₂ min(n_P, n_Q))/8⌉` bytes, `λ` =
//! [`EcdhConfig::stat_security`] (40 by default; the same at all three parties, checked in the
//! handshakes), so a false member of the result has probability at most `2^-λ`.
//! `w_I = ⌈(4 + log₂ n_P)/8⌉` bytes: the index only finds the keys worth trying on a sealed
//! point, and one that another element's key shares (at most `n_P / 2^{8·w_I} ≤ 1/16` of them
//! per sealed point on average) costs one failed key check, never a wrong result.
//!
//! This is the flow of SecretFlow's three-party ECDH-PSI, except that there `P` sends `V` as
//! group elements: `C` could then raise every `v ∈ V` to `c`, compare with its answers from
//! step 2 and learn `X_C ∩ X_Q`. Sealing `V` under keys that only `Q` can give closes that.
//!
//! # Security and leakage
//!
//! Semi-honest, non-colluding parties; DDH in the group, `H`, `K`, `I ‖ E` and the comparison
//! hash random oracles. With `n_X` the number of distinct items of party `X`:
//!
//! - **`C` learns `n_P`, `n_Q`, `|X_P ∩ X_Q|` and `X_C ∩ X_P ∩ X_Q`**, and nothing else about
//!   `X_P` or `X_Q`: in particular not which of its items are in `X_Q` only or in `X_P` only.
//! - `P` learns `n_Q` and `n_C`; `Q` learns `n_P` and `n_C`.
//!
//! Simulator for `C`, given its input, its key `c`, the sizes `n_P`, `n_Q`, `m = |X_P ∩ X_Q|`
//! and the output `O = X_C ∩ X_P ∩ X_Q`:
//!
//! 1. Draw `m` uniform group elements `w_1 … w_m` and give the items of `O` distinct ones.
//! 2. `Q`'s keys: `K(w_i)` for `i ≤ m` and `n_P − m` uniform 16-byte strings, in a uniformly
//!    random order. `P`'s sealed points: the seals of `w_1 … w_m` and `n_Q − m` uniform strings
//!    of `w_I` plus a point's length, in a uniformly random order.
//! 3. The answers of step 2, in `C`'s order: `T(w_x^c)` for the items `x ∈ O` and uniform
//!    strings of `T`'s width for its other items.
//!
//! The real view is indistinguishable: (a) `a·b` is uniform and unknown to `C`, so under DDH
//! the elements `H(x)^{ab}` for all items of all parties can be replaced by independent uniform
//! elements `g_x`, including inside the answers `T(H(x)^{abc}) = T(g_x^c)` (the standard
//! multi-instance reduction of two-party ECDH-PSI, applied to the key `ab`). (b) For
//! `x ∈ X_Q \ X_P`, `C` gets the seal of `g_x` but not `K(g_x)`, and can query the oracles on
//! `g_x` only by guessing a uniform element: the seal is a uniform string. For
//! `x ∈ X_P \ X_Q`, `K(g_x)` is a uniform string that opens nothing. For `x ∈ X_C` outside
//! `X_P ∩ X_Q`, `g_x` appears nowhere else in the view, so `T(g_x^c)` is uniform. (c) The orders
//! of both lists are uniform because `P` and `Q` shuffle their sets and do not collude with `C`;
//! which key opens which seal is a uniform matching of `m` pairs, as in the simulation. The
//! distributions then differ only on collisions of truncated hashes, below `2^-λ`.
//!
//! Simulators for `P` and `Q`: `P` sees `H(x_Q)^b` (shuffled) and `H(x_C)^c`, `Q` sees
//! `H(x_P)^a` (shuffled) and `H(x_C)^{ca}`: under DDH these are uniform elements, so `n_Q` and
//! `n_C` (resp. `n_P` and `n_C`) uniform elements simulate them.
//!
//! Nothing is claimed against collusions: `C` and `P` together hold `a`, `c` and `U`'s keys
//! and learn `X_C ∩ X_Q`. A caller for whom `|X_P ∩ X_Q|` is sensitive should use a two-party
//! protocol between the receiver and a party holding `X_P ∩ X_Q`, or a circuit-based PSI.
//!
//! # Cost
//!
//! Three exponentiations per item and party, as before the sealing: `P` and `Q` one for their
//! own items, one for the other helper's and one for `C`'s; `C` one for its items and one per
//! element of `W`. The sealing adds hashing only: `P` two BLAKE3 calls of one block per item of
//! `Q`, `Q` one per item of `P`, `C` one per key and two per opened element. On the wire `P`
//! sends `w_I` more bytes per item of `Q`, and `Q` sends 16-byte keys instead of
//! `⌈(λ + log₂ n_P + log₂ n_Q)/8⌉`-byte hashes per item of `P`. With 32-byte points, `2^16`
//! items per party and `λ = 40` that is 188 bytes per item in all: 64 between `P` and `Q`,
//! 16 + 35 to `C` (3-byte index), 32 + 32 along the chain and 9 back to `C`.
//!
//! # Bounds on what peers announce
//!
//! Every item count a peer announces in its handshake must be at most the caller's
//! `max_peer_items` ([`DEFAULT_MAX_PEER_ITEMS`] in [`run`]); a larger one is
//! [`Error::HandshakeMismatch`] on the field `item count`, before anything is allocated. No
//! buffer is reserved from an announced count: what is stored grows as the frames arrive, and
//! each frame is bounded by the agreed batch size.
//!
//! # Streaming and deadlock freedom
//!
//! Every stream moves in batches, and each party interleaves its sends and receives batch by
//! batch in an order that never waits on a message that the peer can only send after hearing
//! from us, so bounded network buffers cannot deadlock the three parties.

use std::collections::{HashMap, HashSet};

use obliv_core::psi_compare_bytes;
use obliv_ec::{DynGroup, SecretKey};
use obliv_net::{Channel, Session};
use rand::seq::SliceRandom;
use rand_core::CryptoRng;
use rayon::prelude::*;

use crate::ecdh::{
    EcdhConfig, MAX_BATCH, RngAdapter, batch_len, check_stat_security, code_name, compare_width,
    curve_code, frame, pack, parse, truncate,
};
use crate::error::{Error, Result};
use crate::handshake::{self, Hello};

/// The largest item count [`run`] accepts from a peer's handshake.
pub const DEFAULT_MAX_PEER_ITEMS: usize = 1 << 30;

/// Protocol identifier of three-party ECDH-PSI in the handshake.
const PROTOCOL_ID: u8 = 2;
/// Message layout of this version, in the handshake's parameter field above the statistical
/// security parameter: 2 = `Q` sends keys and `P` sealed points (layout 1 sent `V` as points,
/// which let `C` test its items against `X_Q`; a peer of that layout is refused before any
/// item-dependent data); 3 = as 2 with the index narrowed from `⌈(8 + log₂ n_P + log₂ n_Q)/8⌉`
/// to `⌈(4 + log₂ n_P)/8⌉` bytes (two bytes less per sealed point at `2^16`; the keys and
/// pads are derived as in layout 2).
const LAYOUT: u64 = 3;
/// Role codes in the handshake.
const ROLE_C: u8 = 0;
const ROLE_P: u8 = 1;
const ROLE_Q: u8 = 2;

const TAG_OWN: u8 = 1;
const TAG_FORWARD: u8 = 2;
const TAG_FINAL: u8 = 3;

/// Bytes of a key `K(g)`.
const KEY_LEN: usize = 16;
/// Bits of the index width `w_I` beyond `log₂ n_P`: a sealed point shares its index with at
/// most `2^-4` of the keys on average (an index collision only costs a key check).
const INDEX_SLACK: u32 = 4;
/// Derive-key contexts of `K` and of `I ‖ E`.
const KEY_CONTEXT: &str = "obliv-psi ecdh3 layout 2: key of a doubly masked element";
const SEAL_CONTEXT: &str = "obliv-psi ecdh3 layout 2: index and pad of a key";
/// Longest `I(k) ‖ E(k)`: a 16-byte index and a 33-byte point.
const MAX_SEAL: usize = 16 + 33;
/// Most of `Q`'s keys that may share one index. Honest keys are pseudorandom and there are
/// at least `16·n_P` indices, so `t` keys share one with probability at most
/// `M·16^-t / t!` over the `M` indices: below `2^-200` at `t = 33` for any `M ≤ 2^128`. A
/// longer run (repeated keys, or keys ground to one index) only makes `C` try every key of
/// the run on every sealed point of that index: up to `n_P·n_Q` key checks if `P` gives every
/// sealed point the same index. Refusing it bounds `C`'s work by `MAX_KEYS_PER_INDEX·n_Q`
/// checks.
const MAX_KEYS_PER_INDEX: usize = 32;

/// `C`: refuses `Q`'s keys (sorted by index) if more than [`MAX_KEYS_PER_INDEX`] share one
/// index.
fn check_key_runs(keys: &[(u128, [u8; KEY_LEN])]) -> Result<()> {
    let mut longest = 0;
    for run in keys.chunk_by(|a, b| a.0 == b.0) {
        longest = longest.max(run.len());
    }
    if longest > MAX_KEYS_PER_INDEX {
        return Err(Error::Protocol(format!(
            "{longest} of the keys share one index (honest keys: at most {MAX_KEYS_PER_INDEX} \
             but with negligible probability)"
        )));
    }
    Ok(())
}

/// Runs three-party ECDH-PSI as party `session.rank()` of a three-party session; `receiver`
/// is the rank of the party that learns the result. A peer may announce at most
/// [`DEFAULT_MAX_PEER_ITEMS`] items; see [`run_with_limit`].
///
/// Returns `Some(indices)` (ascending indices of `items` in the three-way intersection; every
/// index of a repeated item) for the receiver and `None` for the others. `cfg.broadcast` is not
/// supported for three parties (the others would need the receiver's positions mapped through
/// two shuffles); it is an [`Error::InvalidParameter`]. `cfg.window` is unused.
///
/// # Errors
/// As [`crate::ecdh::run`]; also a session that does not have exactly three parties.
pub fn run<C, T, R>(
    session: &mut Session<C>,
    receiver: usize,
    items: &[T],
    cfg: &EcdhConfig,
    rng: &mut R,
) -> Result<Option<Vec<usize>>>
where
    C: Channel,
    T: AsRef<[u8]> + Sync,
    R: CryptoRng + ?Sized,
{
    run_with_limit(session, receiver, items, cfg, DEFAULT_MAX_PEER_ITEMS, rng)
}

/// The longest frame a peer of a three-party ECDH-PSI with parameters `cfg` sends: a batch
/// of `cfg.batch_size` sealed records (an index of at most 16 bytes and a point) behind the
/// 5-byte frame header. Keys, answers and the handshakes are shorter. A caller lowers every
/// channel of the session to it ([`Channel::set_max_frame_len`]) before the first run.
pub fn max_frame_len(cfg: &EcdhConfig) -> usize {
    let point = obliv_ec::DynGroup::new(cfg.curve).map_or(33, |g| g.encoded_len());
    5usize.saturating_add(cfg.batch_size.saturating_mul(16 + point))
}

/// [`run`] with a bound on the number of distinct items each peer may announce.
///
/// # Errors
/// As [`run`]; a peer announcing more than `max_peer_items` items is
/// [`Error::HandshakeMismatch`] with `field == "item count"`.
pub fn run_with_limit<C, T, R>(
    session: &mut Session<C>,
    receiver: usize,
    items: &[T],
    cfg: &EcdhConfig,
    max_peer_items: usize,
    rng: &mut R,
) -> Result<Option<Vec<usize>>>
where
    C: Channel,
    T: AsRef<[u8]> + Sync,
    R: CryptoRng + ?Sized,
{
    if session.parties() != 3 || receiver >= 3 {
        return Err(Error::InvalidParameter(
            "three-party PSI needs a session of 3 parties and a receiver rank below 3".into(),
        ));
    }
    if cfg.broadcast {
        return Err(Error::InvalidParameter(
            "broadcast is not supported for three parties".into(),
        ));
    }
    if cfg.batch_size == 0 || cfg.batch_size > MAX_BATCH {
        return Err(Error::InvalidParameter(format!(
            "batch size must be in 1..={MAX_BATCH}"
        )));
    }
    check_stat_security(cfg.stat_security)?;
    let me = session.rank();
    let others: Vec<usize> = (0..3).filter(|&r| r != receiver).collect();
    let (p, q) = (others[0], others[1]);
    let role = |r: usize| {
        if r == receiver {
            ROLE_C
        } else if r == p {
            ROLE_P
        } else {
            ROLE_Q
        }
    };
    let (distinct, slot) = distinct(items);
    let group = DynGroup::new(cfg.curve)?;
    let hello = |my_role: u8| Hello {
        protocol: PROTOCOL_ID,
        curve: curve_code(cfg.curve),
        role: my_role,
        flags: 0,
        batch: u32::try_from(cfg.batch_size).unwrap_or(u32::MAX),
        n_items: distinct.len() as u64,
        param: handshake::stat_param(cfg.stat_security, LAYOUT),
    };
    // Handshakes in rank order of the peers (each pair talks in both directions at once).
    let mut sizes = [0usize; 3];
    sizes[me] = distinct.len();
    for peer in [0, 1, 2].into_iter().filter(|&r| r != me) {
        let ch = session.channel(peer)?;
        let theirs = handshake::exchange_stat(ch, &hello(role(me)), role(peer), code_name)?;
        sizes[peer] = usize::try_from(theirs.n_items)
            .ok()
            .filter(|&n| n <= max_peer_items)
            .ok_or_else(|| Error::HandshakeMismatch {
                field: "item count",
                ours: format!("at most {max_peer_items} items from a peer"),
                theirs: theirs.n_items.to_string(),
            })?;
    }
    let w = compare_width(cfg.stat_security, sizes[receiver], sizes[p].min(sizes[q]))?;
    let key = group.random_secret(rng)?;
    let st = Three {
        group,
        key,
        batch: cfg.batch_size,
        n_p: sizes[p],
        n_q: sizes[q],
        n_c: sizes[receiver],
        w,
        w_idx: index_width(sizes[p]),
    };
    if me == receiver {
        let (to_p, to_q) = session.channel_pair(p, q)?;
        let hit = st.receiver(to_p, to_q, &distinct)?;
        Ok(Some((0..items.len()).filter(|&i| hit[slot[i]]).collect()))
    } else if me == p {
        let (to_q, to_c) = session.channel_pair(q, receiver)?;
        st.helper(to_q, to_c, &distinct, true, rng).map(|()| None)
    } else {
        let (to_p, to_c) = session.channel_pair(p, receiver)?;
        st.helper(to_p, to_c, &distinct, false, rng).map(|()| None)
    }
}

/// The distinct items in order of first occurrence, and for each item the position of its
/// value among them.
fn distinct<T: AsRef<[u8]>>(items: &[T]) -> (Vec<&[u8]>, Vec<usize>) {
    let mut seen: HashMap<&[u8], usize> = HashMap::with_capacity(items.len());
    let mut uniq = Vec::with_capacity(items.len());
    let slot = items
        .iter()
        .map(|it| {
            let b = it.as_ref();
            *seen.entry(b).or_insert_with(|| {
                uniq.push(b);
                uniq.len() - 1
            })
        })
        .collect();
    (uniq, slot)
}

/// `w_I` for `n_p` keys: `⌈(4 + log₂ n_P)/8⌉` bytes, at most 16.
fn index_width(n_p: usize) -> usize {
    psi_compare_bytes(INDEX_SLACK, n_p as u64, 1).min(16)
}

/// `K(g)`: the key of an encoded group element.
fn element_key(g: &[u8]) -> [u8; KEY_LEN] {
    let h = blake3::Hasher::new_derive_key(KEY_CONTEXT)
        .update(g)
        .finalize();
    let mut k = [0u8; KEY_LEN];
    k.copy_from_slice(&h.as_bytes()[..KEY_LEN]);
    k
}

/// Fills `out` with `I(k) ‖ E(k)`.
fn index_and_pad(k: &[u8; KEY_LEN], out: &mut [u8]) {
    blake3::Hasher::new_derive_key(SEAL_CONTEXT)
        .update(k)
        .finalize_xof()
        .fill(out);
}

/// Parameters and key of one party after the handshakes.
struct Three {
    group: DynGroup,
    key: SecretKey,
    batch: usize,
    n_p: usize,
    n_q: usize,
    n_c: usize,
    /// Width of the final comparison values.
    w: usize,
    /// Width `w_I` of the index of a sealed element.
    w_idx: usize,
}

impl Three {
    /// Bytes of one sealed element `I(K(v)) ‖ v ⊕ E(K(v))`.
    fn sealed_len(&self) -> usize {
        self.w_idx + self.group.encoded_len()
    }

    /// Receives frame `index` of kind `tag` holding `count` records of `width` bytes (at most
    /// one batch of them).
    fn recv_records<C: Channel + ?Sized>(
        &self,
        ch: &mut C,
        tag: u8,
        index: usize,
        count: usize,
        width: usize,
    ) -> Result<Vec<u8>> {
        ch.flush()?;
        let f = ch.recv_max(5 + self.batch * width)?;
        let (t, i, payload) = parse(&f)?;
        if t != tag || i != index || payload.len() != count * width {
            return Err(Error::Protocol(format!(
                "expected batch {index} of kind {tag} with {count} records of {width} bytes, got kind {t} batch {i} of {} bytes",
                payload.len()
            )));
        }
        Ok(payload.to_vec())
    }

    /// Receives `count` encoded points.
    fn recv_points<C: Channel + ?Sized>(
        &self,
        ch: &mut C,
        tag: u8,
        index: usize,
        count: usize,
    ) -> Result<Vec<u8>> {
        self.recv_records(ch, tag, index, count, self.group.encoded_len())
    }

    /// `P`'s message to `C`: each doubly-masked element `v` sealed as `I(K(v)) ‖ v ⊕ E(K(v))`.
    fn seal(&self, points: &[u8]) -> Vec<u8> {
        let (len, rec) = (self.group.encoded_len(), self.sealed_len());
        let mut out = vec![0u8; points.len() / len * rec];
        out.par_chunks_mut(rec)
            .zip(points.par_chunks(len))
            .for_each(|(o, v)| {
                index_and_pad(&element_key(v), o);
                for (x, y) in o[self.w_idx..].iter_mut().zip(v) {
                    *x ^= y;
                }
            });
        out
    }

    /// `Q`'s message to `C`: the key `K(u)` of each doubly-masked element `u`.
    fn keys(&self, points: &[u8]) -> Vec<u8> {
        let len = self.group.encoded_len();
        let mut out = vec![0u8; points.len() / len * KEY_LEN];
        out.par_chunks_mut(KEY_LEN)
            .zip(points.par_chunks(len))
            .for_each(|(o, u)| o.copy_from_slice(&element_key(u)));
        out
    }

    /// `C`: the elements of `sealed` that one of `keys` (`(I(k), k)`, sorted) opens.
    fn open(&self, sealed: &[u8], keys: &[(u128, [u8; KEY_LEN])]) -> Vec<u8> {
        let rec = self.sealed_len();
        let opened: Vec<Vec<u8>> = sealed
            .par_chunks(rec)
            .filter_map(|s| {
                let idx = pack(&s[..self.w_idx]);
                let from = keys.partition_point(|e| e.0 < idx);
                keys[from..]
                    .iter()
                    .take_while(|e| e.0 == idx)
                    .find_map(|(_, k)| {
                        let mut pad = [0u8; MAX_SEAL];
                        index_and_pad(k, &mut pad[..rec]);
                        let v: Vec<u8> = s[self.w_idx..]
                            .iter()
                            .zip(&pad[self.w_idx..rec])
                            .map(|(a, b)| a ^ b)
                            .collect();
                        (element_key(&v) == *k).then_some(v)
                    })
            })
            .collect();
        opened.concat()
    }

    /// `P` (`first`) or `Q`: exchange masked sets with the other helper and forward the
    /// doubly-masked ones to `C` (`P` sealed, `Q` as keys); then pass `C`'s items along the
    /// chain `C → P → Q → C`.
    fn helper<C, R>(
        &self,
        other: &mut C,
        to_c: &mut C,
        items: &[&[u8]],
        first: bool,
        rng: &mut R,
    ) -> Result<()>
    where
        C: Channel,
        R: CryptoRng + ?Sized,
    {
        let b = self.batch;
        let (n_other, n_own) = if first {
            (self.n_q, self.n_p)
        } else {
            (self.n_p, self.n_q)
        };
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.shuffle(&mut RngAdapter(rng));
        let (nb_own, nb_other) = (n_own.div_ceil(b), n_other.div_ceil(b));
        for i in 0..nb_own.max(nb_other) {
            if i < nb_own {
                let idx = &order[i * b..i * b + batch_len(i, n_own, b)];
                let batch: Vec<&[u8]> = idx.iter().map(|&j| items[j]).collect();
                let masked = self.group.hash_and_mul_batch(&batch, &self.key)?;
                other.send_vec(frame(TAG_OWN, i, &masked)?)?;
            }
            if i < nb_other {
                let pts = self.recv_points(other, TAG_OWN, i, batch_len(i, n_other, b))?;
                let doubled = self.group.mul_encoded_batch(&pts, &self.key)?;
                let msg = if first {
                    self.seal(&doubled)
                } else {
                    self.keys(&doubled)
                };
                to_c.send_vec(frame(TAG_OWN, i, &msg)?)?;
            }
        }
        other.flush()?;
        to_c.flush()?;
        for j in 0..self.n_c.div_ceil(b) {
            let count = batch_len(j, self.n_c, b);
            if first {
                // C → P → Q: raise C's points to a and pass them on.
                let pts = self.recv_points(to_c, TAG_FORWARD, j, count)?;
                let raised = self.group.mul_encoded_batch(&pts, &self.key)?;
                other.send_vec(frame(TAG_FORWARD, j, &raised)?)?;
            } else {
                // P → Q → C: raise to b, hash, truncate, return to C.
                let pts = self.recv_points(other, TAG_FORWARD, j, count)?;
                let raised = self.group.mul_encoded_batch(&pts, &self.key)?;
                let t = truncate(&self.group.hash_encoded_batch(&raised)?, self.w);
                to_c.send_vec(frame(TAG_FINAL, j, &t)?)?;
            }
        }
        other.flush()?;
        to_c.flush()?;
        Ok(())
    }

    /// `C`: collect the sealed `V` and the keys of `U`, open `W`, then send its own items
    /// around the chain. Returns for each of `items` whether it is in the intersection.
    fn receiver<C>(&self, to_p: &mut C, to_q: &mut C, items: &[&[u8]]) -> Result<Vec<bool>>
    where
        C: Channel,
    {
        let b = self.batch;
        let rec = self.sealed_len();
        // From P: V sealed; from Q: the keys of U. Both grow as the frames arrive.
        let (nb_v, nb_u) = (self.n_q.div_ceil(b), self.n_p.div_ceil(b));
        let mut sealed: Vec<u8> = Vec::new();
        let mut keys: Vec<(u128, [u8; KEY_LEN])> = Vec::new();
        for i in 0..nb_v.max(nb_u) {
            if i < nb_v {
                let count = batch_len(i, self.n_q, b);
                sealed.extend(self.recv_records(to_p, TAG_OWN, i, count, rec)?);
            }
            if i < nb_u {
                let count = batch_len(i, self.n_p, b);
                let payload = self.recv_records(to_q, TAG_OWN, i, count, KEY_LEN)?;
                let batch: Vec<(u128, [u8; KEY_LEN])> = payload
                    .par_chunks_exact(KEY_LEN)
                    .map(|c| {
                        let mut k = [0u8; KEY_LEN];
                        k.copy_from_slice(c);
                        let mut idx = [0u8; 16];
                        index_and_pad(&k, &mut idx[..self.w_idx]);
                        (pack(&idx[..self.w_idx]), k)
                    })
                    .collect();
                keys.extend(batch);
            }
        }
        keys.par_sort_unstable_by_key(|e| e.0);
        check_key_runs(&keys)?;
        let common = self.open(&sealed, &keys);
        drop(sealed);
        drop(keys);
        let raised = self.group.mul_encoded_batch(&common, &self.key)?;
        let targets: HashSet<u128> = truncate(&self.group.hash_encoded_batch(&raised)?, self.w)
            .chunks_exact(self.w)
            .map(pack)
            .collect();
        // Our items around the chain.
        let nb_c = self.n_c.div_ceil(b);
        for j in 0..nb_c {
            let batch = &items[j * b..j * b + batch_len(j, self.n_c, b)];
            let masked = self.group.hash_and_mul_batch(batch, &self.key)?;
            to_p.send_vec(frame(TAG_FORWARD, j, &masked)?)?;
        }
        to_p.flush()?;
        let mut hit = vec![false; items.len()];
        for j in 0..nb_c {
            let count = batch_len(j, self.n_c, b);
            let payload = self.recv_records(to_q, TAG_FINAL, j, count, self.w)?;
            for (k, val) in payload.chunks_exact(self.w).enumerate() {
                hit[j * b + k] = targets.contains(&pack(val));
            }
        }
        Ok(hit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_core::rand_core::SeedableRng;
    use obliv_ec::Curve;

    fn three(w_idx: usize) -> Three {
        let group = DynGroup::new(Curve::FourQ).expect("FourQ");
        let key = group
            .random_secret(&mut AesRng::seed_from_u64(1))
            .expect("key");
        Three {
            group,
            key,
            batch: 1 << 10,
            n_p: 0,
            n_q: 0,
            n_c: 0,
            w: 8,
            w_idx,
        }
    }

    /// Repeated keys (or keys sharing one index) from `Q` used to be accepted, letting a `Q`
    /// colluding with `P` make `C` run `n_P·n_Q` key checks; a run above the bound is refused,
    /// while honest keys at the real index width pass.
    #[test]
    fn long_runs_of_keys_on_one_index_are_refused() {
        let w_idx = index_width(1 << 16);
        let mut keys: Vec<(u128, [u8; KEY_LEN])> = (0..1u32 << 16)
            .map(|i| {
                let k = element_key(&i.to_le_bytes());
                let mut idx = [0u8; 16];
                index_and_pad(&k, &mut idx[..w_idx]);
                (pack(&idx[..w_idx]), k)
            })
            .collect();
        keys.sort_unstable_by_key(|e| e.0);
        assert!(check_key_runs(&keys).is_ok());
        // One key repeated: the run is refused, at one past the bound and not at the bound.
        let k = keys[7];
        let mut bad = keys.clone();
        bad.extend(std::iter::repeat_n(k, MAX_KEYS_PER_INDEX));
        bad.sort_unstable_by_key(|e| e.0);
        assert!(matches!(check_key_runs(&bad), Err(Error::Protocol(_))));
        let mut edge: Vec<_> = std::iter::repeat_n(k, MAX_KEYS_PER_INDEX).collect();
        assert!(check_key_runs(&edge).is_ok());
        edge.push(k);
        assert!(check_key_runs(&edge).is_err());
    }

    /// The index widths of the layout: four bits beyond `log₂ n_P`, whole bytes.
    #[test]
    fn index_width_leaves_four_bits_beyond_the_key_count() {
        assert_eq!(index_width(0), 1);
        assert_eq!(index_width(16), 1);
        assert_eq!(index_width(17), 2);
        assert_eq!(index_width(1 << 16), 3);
        assert_eq!(index_width(1 << 20), 3);
        assert_eq!(index_width((1 << 20) + 1), 4);
        assert_eq!(index_width(1 << 30), 5);
        assert_eq!(index_width(usize::MAX), 9);
    }

    /// `C` opens exactly the sealed points whose key `Q` sent, whatever the index width: with
    /// a one-byte index, every sealed point shares its index with several keys of other
    /// elements, which costs key checks but opens nothing else.
    #[test]
    fn open_finds_exactly_the_common_elements_despite_index_collisions() {
        let elements: Vec<[u8; 32]> = (0..1200u32)
            .map(|i| *blake3::hash(&i.to_le_bytes()).as_bytes())
            .collect();
        // V: elements 0..800 (sealed by P); U: elements 400..1200 (keys from Q).
        let (v, u) = (&elements[..800], &elements[400..]);
        for w_idx in [1, 2, 3] {
            let st = three(w_idx);
            let sealed = st.seal(&v.concat());
            assert_eq!(sealed.len(), v.len() * (w_idx + 32));
            let mut keys: Vec<(u128, [u8; KEY_LEN])> = u
                .iter()
                .map(|g| {
                    let k = element_key(g);
                    let mut idx = [0u8; 16];
                    index_and_pad(&k, &mut idx[..w_idx]);
                    (pack(&idx[..w_idx]), k)
                })
                .collect();
            keys.sort_unstable_by_key(|e| e.0);
            let mut opened: Vec<[u8; 32]> = st
                .open(&sealed, &keys)
                .chunks_exact(32)
                .map(|c| c.try_into().expect("32 bytes"))
                .collect();
            opened.sort_unstable();
            let mut want = elements[400..800].to_vec();
            want.sort_unstable();
            assert_eq!(opened, want, "index width {w_idx}");
        }
    }
}
