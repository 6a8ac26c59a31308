//! Unbalanced PSI from the ECDH-based OPRF, with an offline and an online phase.
//!
//! A server holds a large set `Y` (1e8–1e9 items), a client a small set `X` (1e5–1e6). The
//! OPRF is 2HashDH: `F_k(y) = H2(y, H1(y)^k)`, truncated to `w` bytes (12 by default, as
//! SecretFlow), with `H1` the curve's hash to the group and `H2` a domain-separated BLAKE3.
//!
//! - **Offline** (once per server set and key): the server evaluates `F_k` on all of `Y` and
//!   streams the values in a shuffled order — position `j` carries `F_k(y_{π(j)})` for a
//!   keyed pseudorandom permutation `π` of the server's indices — to the client, which stores
//!   them in a sorted, checksummed [`Cache`] file built by external sorting (memory bounded by
//!   the run size, whatever the set size).
//! - **Append** (optional, any number of times): [`offline_append_server`] /
//!   [`offline_append_client`] stream the values of items added to the server's set, under a
//!   permutation of their own, and merge them into the cache; nothing sent before is redone.
//! - **Online** (per query set): the client sends `H1(x)^r` for a fresh random `r`, the server
//!   answers `(H1(x)^r)^k`, the client unblinds with `r^{-1}`, hashes to `F_k(x)` and looks the
//!   values up in the cache by one sequential merge pass (checking the cache's checksum on the
//!   way). The online cost is independent of `|Y|` except for that pass over the file.
//! - **`server_get_result`** ([`UbConfig::server_get_result`], agreed in the handshake of
//!   every phase): the cache then also stores each value's stream position; after the lookup
//!   the client sends the positions of the records it matched (sorted, distinct), and the
//!   server maps each back through `π` to the index of its item, so both sides learn the
//!   intersection, as SecretFlow's `server_get_result`.
//!
//! # The server's permutation
//!
//! `π` is not stored: it is an 8-round AES-based Feistel permutation with cycle walking
//! (Black–Rogaway), keyed by a domain-separated hash of the OPRF key and of the segment
//! (`offset`, `length`): the initial set is segment `(0, |Y|)`, each append the segment
//! `(|Y| so far, added)`. The key file is therefore all the server keeps; it recomputes
//! `π(j)` for the returned positions only, so the online phase does not depend on `|Y|`.
//! The server indexes its set as the concatenation of the initial set and of the appended
//! items, in the order given to the offline runs.
//!
//! The server keeps `k` in a [`ServerKey`] file and reuses it for every online phase. The
//! cache records a fingerprint of the key (a hash of `k·G`) and the digest of the server's
//! set, [`ServerSet`]: the segment sizes and a BLAKE3 digest of the items in stream order,
//! keyed by a key derived from `k` (so it tells the client nothing about the items). The
//! online phase sends both, and the client refuses, before it sends a point, a cache made
//! under another key or from another set — another size, or the same size with any item
//! changed, moved or reordered — so that the positions of `server_get_result` are never
//! mapped back onto items the cache does not hold.
//!
//! The key and the cache are written under a temporary name beside their file and renamed
//! into place once complete; a program that cleans up after an interrupt learns of those
//! names through [`set_temp_hook`].
//!
//! # Query budget
//!
//! Every item a client queries in an online phase is one OPRF evaluation `F_k(x)`, which it
//! can compare with the whole cache; a key reused for ever would let clients test any number
//! of items over many sessions, and false positives add up over all of them. The server
//! therefore enforces, before answering any point of an online phase:
//!
//! - the client's announced item count is at most [`UbConfig::max_client_items`];
//! - the evaluations answered under the key over its lifetime stay at most
//!   `min(`[`UbConfig::max_key_queries`]`, ⌊2^(8w − 40) / |Y|⌋)`: the second term keeps the
//!   probability of any false positive over the key's whole life below 2^-40 (the client
//!   checks the same bound for one phase).
//!
//! The client, for its part, holds at most [`UbConfig::max_server_items`] values (offline
//! phase and appends together) and refuses a server that announces more before any value
//! arrives, so the cache's size on disk is what the client agreed to.
//!
//! The count lives in the [`ServerKey`]; a key loaded from or saved to a file records every
//! reservation there (atomically) before the phase answers, so the budget holds across
//! processes. A refused phase is an [`Error::Protocol`] naming `max_client_items` or
//! `max_key_queries`; once a key's budget is spent, the server makes a new key and runs the
//! offline phase again. The reservation follows the announced count, so a client that
//! announces `n` items and then sends fewer (or none) still spends `n` evaluations of the
//! budget: it could have spent them as well by sending `n` random points, so this costs the
//! server nothing it does not already concede to any client it answers, and a phase never
//! answers more points than it reserved. The command line sets these limits with
//! `--max-client-items`, `--max-key-queries` and `--max-server-items`.
//!
//! # Security and leakage
//!
//! Semi-honest, under the one-more-gap-Diffie–Hellman assumption with `H1`, `H2` random oracles
//! (Jarecki–Kiayias–Krawczyk). The client learns `X ∩ Y` and `|Y|` (and the size of each
//! append); the server learns `|X|`. The client also keeps `F_k(Y)` — pseudorandom values
//! that reveal nothing about `Y` without the key — and can test further items against them
//! only by running the online phase with the server again. False positives:
//! `|X|·|Y|·2^{-8w}`; with `w = 12` that is below `2^-40` for `|X|·|Y| ≤ 2^56` (e.g. 1e6 ×
//! 7e10); [`online_client`] checks the bound.
//!
//! With `server_get_result`, the server also learns exactly which of its items are in the
//! intersection: the positions the client returns are those of server values equal to one of
//! the client's OPRF values, i.e. `{i : y_i ∈ X}` (every copy, if `Y` repeats an item). It
//! learns nothing of the client's other items: they produced no match, so no position, and
//! the positions are sent sorted, so their order says nothing of the client's order. Because
//! the stream is shuffled, the client learns nothing of where its matches sit in the
//! server's original order. A client that deviates could return other positions (learning
//! nothing more itself, but making the server's output wrong): the model is semi-honest.

use std::path::Path;

use obliv_core::hash::RoHasher;
use obliv_ec::{Curve, DynGroup};
use obliv_net::Channel;
use rand_core::CryptoRng;
use rayon::prelude::*;

use crate::ecdh::{MAX_BATCH, STAT_SECURITY, batch_len, code_name, curve_code, frame, parse};
use crate::error::{Error, PeerMisbehaved, Result};
use crate::handshake::{self, Hello};

mod cache;
mod items;
mod key;
mod set;
mod shuffle;
mod temp;

pub use cache::Cache;
pub use items::ItemList;
pub use key::ServerKey;
pub use set::ServerSet;
pub use temp::{TempEvent, TempHook, set_temp_hook};

use cache::{CacheBuilder, MAX_POSITIONS, POS_BYTES};

const OFFLINE_ID: u8 = 30;
const ONLINE_ID: u8 = 31;
const APPEND_ID: u8 = 32;
const ROLE_SERVER: u8 = 1;
const ROLE_CLIENT: u8 = 0;
const TAG_VALUES: u8 = 1;
const TAG_BLINDED: u8 = 2;
const TAG_ANSWER: u8 = 3;
const TAG_POSITIONS: u8 = 4;
/// Handshake flag: the server gets the result too (positions stored and returned).
const FLAG_SERVER_RESULT: u8 = 1;
/// Blinded batches the client keeps in flight in the online phase.
const WINDOW: usize = 8;

/// Parameters of both phases (checked by the handshakes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UbConfig {
    /// The group (FourQ by default, the fastest here).
    pub curve: Curve,
    /// Items per streamed batch.
    pub batch_size: usize,
    /// Bytes kept of each OPRF value (8..=32).
    pub width: usize,
    /// The server learns the intersection too (SecretFlow's `server_get_result`). In the
    /// offline phase (and appends) it makes the client's cache store each value's position
    /// (5 more bytes per value); in the online phase the client returns the positions of its
    /// matches and [`online_server`] returns the server's matching indices. Both sides must
    /// set it alike in each phase (the handshake checks).
    pub server_get_result: bool,
    /// Most items a client may announce in one online phase (the server refuses more before
    /// answering anything). Default 2^24. Server side only.
    pub max_client_items: usize,
    /// Most OPRF evaluations one [`ServerKey`] answers over its lifetime, summed over every
    /// online phase (see [Query budget](self#query-budget)). Default 2^32. Server side only.
    pub max_key_queries: u64,
    /// Most values a server may announce for the client's cache, over the offline phase and
    /// every append (the client refuses more before receiving any value, so a hostile server
    /// cannot fill its disk: the cache takes `width` bytes per value, plus 5 with
    /// `server_get_result`). Default 2^34. Client side only.
    pub max_server_items: u64,
}

impl Default for UbConfig {
    fn default() -> Self {
        UbConfig {
            curve: Curve::FourQ,
            batch_size: 4096,
            width: 12,
            server_get_result: false,
            max_client_items: 1 << 24,
            max_key_queries: 1 << 32,
            max_server_items: 1 << 34,
        }
    }
}

impl UbConfig {
    /// The longest frame a peer of either phase with these parameters sends: a batch of
    /// `batch_size` points, OPRF values or positions behind the 5-byte frame header. A caller
    /// lowers the channel to it ([`Channel::set_max_frame_len`]) before the phase.
    pub fn max_frame_len(&self) -> usize {
        let point = obliv_ec::DynGroup::new(self.curve).map_or(33, |g| g.encoded_len());
        let record = point.max(self.width).max(8);
        5usize.saturating_add(self.batch_size.saturating_mul(record))
    }

    fn check(&self) -> Result<()> {
        if self.batch_size == 0 || self.batch_size > MAX_BATCH || !(8..=32).contains(&self.width) {
            return Err(Error::InvalidParameter(format!(
                "batch size must be in 1..={MAX_BATCH} and width in 8..=32 bytes"
            )));
        }
        Ok(())
    }

    fn flags(&self) -> u8 {
        if self.server_get_result {
            FLAG_SERVER_RESULT
        } else {
            0
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The domain of `H2`.
const H2_DOMAIN: &str = "obliv-psi unbalanced v1 H2";

/// `H2(y, P)` truncated to `w ≤ 32` bytes, written to `out` (`w` bytes long): BLAKE3 in
/// key-derivation mode under [`H2_DOMAIN`] of `len(y) as u64 (LE) ‖ y ‖ P`. `hasher` is a
/// [`RoHasher`] for [`H2_DOMAIN`] (set up once per thread: its key derivation is not repeated
/// per item) and `buf` a scratch buffer for the input.
fn h2_into(hasher: &mut RoHasher, buf: &mut Vec<u8>, item: &[u8], point: &[u8], out: &mut [u8]) {
    buf.clear();
    buf.extend_from_slice(&(item.len() as u64).to_le_bytes());
    buf.extend_from_slice(item);
    buf.extend_from_slice(point);
    // The first `w ≤ 32` bytes of BLAKE3's output stream are those of its 32-byte hash.
    out.copy_from_slice(&hasher.hash(buf)[..out.len()]);
}

/// `H2` of each item with its point (`len` bytes each), `w ≤ 32` bytes each, in parallel.
fn h2_batch<T: AsRef<[u8]> + Sync>(items: &[T], points: &[u8], len: usize, w: usize) -> Vec<u8> {
    let mut out = vec![0u8; items.len() * w];
    out.par_chunks_mut(w)
        .zip(points.par_chunks(len))
        .zip(items.par_iter())
        .for_each_init(
            || (RoHasher::new(H2_DOMAIN), Vec::with_capacity(64)),
            |(hasher, buf), ((o, p), y)| h2_into(hasher, buf, y.as_ref(), p, o),
        );
    out
}

fn hello(cfg: &UbConfig, protocol: u8, role: u8, n: usize) -> Hello {
    Hello {
        protocol,
        curve: curve_code(cfg.curve),
        role,
        flags: cfg.flags(),
        batch: u32::try_from(cfg.batch_size).unwrap_or(u32::MAX),
        n_items: n as u64,
        param: cfg.width as u64,
    }
}

fn names(field: &'static str, v: u8) -> String {
    match (field, v) {
        ("protocol", OFFLINE_ID) => "unbalanced-offline".into(),
        ("protocol", ONLINE_ID) => "unbalanced-online".into(),
        ("protocol", APPEND_ID) => "unbalanced-offline-append".into(),
        ("role", ROLE_SERVER) => "server".into(),
        ("role", ROLE_CLIENT) => "client".into(),
        _ => code_name(field, v),
    }
}

fn check_key(key: &ServerKey, cfg: &UbConfig) -> Result<()> {
    cfg.check()?;
    if key.curve() != cfg.curve {
        return Err(Error::InvalidParameter(
            "the key is for another curve".into(),
        ));
    }
    Ok(())
}

fn check_positions(cfg: &UbConfig, total: u64) -> Result<()> {
    if cfg.server_get_result && total > MAX_POSITIONS {
        return Err(Error::InvalidParameter(format!(
            "server_get_result supports server sets of up to 2^{} items",
            8 * POS_BYTES
        )));
    }
    Ok(())
}

/// Streams `F_k` of the segment `[offset, offset + items.len())`, in the segment's shuffled
/// order.
fn stream_values<C, L>(
    ch: &mut C,
    key: &ServerKey,
    items: &L,
    offset: u64,
    cfg: &UbConfig,
) -> Result<()>
where
    C: Channel + ?Sized,
    L: ItemList + ?Sized,
{
    let n = items.len();
    let shuffle = key.shuffle(offset, n as u64);
    let (b, w, len) = (cfg.batch_size, cfg.width, key.group.encoded_len());
    for i in 0..n.div_ceil(b) {
        let lo = i * b;
        let batch: Vec<&[u8]> = (lo..lo + batch_len(i, n, b))
            .into_par_iter()
            .map(|j| {
                // π maps [0, n) into [0, n), so the index is in range and fits a usize.
                let p = usize::try_from(shuffle.apply(j as u64)).unwrap_or(0);
                items.item(p)
            })
            .collect();
        let points = key.group.hash_and_mul_batch(&batch, &key.secret)?;
        ch.send_vec(frame(TAG_VALUES, i, &h2_batch(&batch, &points, len, w))?)?;
    }
    ch.flush()?;
    Ok(())
}

/// Receives the value batches of a segment of `n` items starting at position `offset`.
fn receive_values<C: Channel + ?Sized>(
    ch: &mut C,
    builder: &mut CacheBuilder,
    n: usize,
    offset: u64,
    cfg: &UbConfig,
) -> Result<()> {
    let (b, w) = (cfg.batch_size, cfg.width);
    for i in 0..n.div_ceil(b) {
        let f = ch.recv_max(5 + b * w)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_VALUES || index != i || payload.len() != batch_len(i, n, b) * w {
            return Err(Error::Protocol(format!("malformed value batch {i}")));
        }
        builder.push(payload, offset + (i * b) as u64)?;
    }
    Ok(())
}

fn recv_digest<C: Channel + ?Sized>(ch: &mut C) -> Result<[u8; 32]> {
    ch.recv_max(32)?
        .try_into()
        .map_err(|_| Error::Protocol("the server set's digest must be 32 bytes".into()))
}

fn recv_fingerprint<C: Channel + ?Sized>(ch: &mut C) -> Result<[u8; 32]> {
    ch.recv_max(32)?
        .try_into()
        .map_err(|_| Error::Protocol("the key fingerprint must be 32 bytes".into()))
}

/// The client: refuses a server that announces `added` values on top of the `held` ones of
/// its cache beyond [`UbConfig::max_server_items`], before any value arrives.
fn check_server_items(cfg: &UbConfig, held: u64, added: u64) -> Result<()> {
    let total = held.saturating_add(added);
    if total > cfg.max_server_items {
        return Err(PeerMisbehaved::TooLarge {
            field: "the server's set size (max_server_items)",
            announced: total,
            max: cfg.max_server_items,
        }
        .into());
    }
    Ok(())
}

fn announced(n: u64, who: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::Protocol(format!("{who} announced too many items")))
}

/// The server's offline phase: evaluates the OPRF on every item and streams the values in
/// the shuffled order described in the [module docs](self).
///
/// `rng` is not drawn from: the shuffle is derived from the key so that the server can
/// recompute it for [`UbConfig::server_get_result`]; the parameter keeps the signature of the
/// other protocols.
///
/// Returns the [`ServerSet`] the client's cache now holds (its digest was sent with the
/// values); keep it, or compute it again from the items, for the online phases and appends.
///
/// # Errors
/// Handshake, network or group errors; [`Error::InvalidParameter`] if the key's curve is not
/// `cfg.curve`, or if `server_get_result` is set and the set has 2^40 items or more.
pub fn offline_server<C, L, R>(
    ch: &mut C,
    key: &ServerKey,
    items: &L,
    cfg: &UbConfig,
    rng: &mut R,
) -> Result<ServerSet>
where
    C: Channel + ?Sized,
    L: ItemList + ?Sized,
    R: CryptoRng + ?Sized,
{
    let _ = rng;
    check_key(key, cfg)?;
    check_positions(cfg, items.len() as u64)?;
    handshake::exchange(
        ch,
        &hello(cfg, OFFLINE_ID, ROLE_SERVER, items.len()),
        ROLE_CLIENT,
        names,
    )?;
    let set = ServerSet::new(key, items);
    ch.send(&key.fingerprint()?)?;
    ch.send(set.digest())?;
    stream_values(ch, key, items, 0, cfg)?;
    Ok(set)
}

/// The client's offline phase: receives the server's values and builds the cache at `path`
/// (temporary run files go to the same directory). Returns the cache.
///
/// # Errors
/// Handshake, network and protocol errors; [`Error::Io`] for the files.
pub fn offline_client<C: Channel + ?Sized>(
    ch: &mut C,
    cfg: &UbConfig,
    path: &Path,
) -> Result<Cache> {
    cfg.check()?;
    let theirs = handshake::exchange(
        ch,
        &hello(cfg, OFFLINE_ID, ROLE_CLIENT, 0),
        ROLE_SERVER,
        names,
    )?;
    check_server_items(cfg, 0, theirs.n_items)?;
    let n = announced(theirs.n_items, "the server")?;
    check_positions(cfg, theirs.n_items)?;
    let fp = recv_fingerprint(ch)?;
    let set_digest = recv_digest(ch)?;
    let pos = if cfg.server_get_result { POS_BYTES } else { 0 };
    let mut builder = CacheBuilder::new(path, cfg.width, pos);
    receive_values(ch, &mut builder, n, 0, cfg)?;
    builder.finish(curve_code(cfg.curve), fp, set_digest)
}

/// The server's side of an append: streams the OPRF values of `added`, items appended to its
/// set `set` after the offline phase (and any earlier appends). The server's set is from then
/// on the concatenation of the earlier items and `added`, which this returns.
///
/// # Errors
/// As [`offline_server`]; the client refuses the append if `set` is not the size of its
/// cache or the key is not the cache's.
pub fn offline_append_server<C, L>(
    ch: &mut C,
    key: &ServerKey,
    set: &ServerSet,
    added: &L,
    cfg: &UbConfig,
) -> Result<ServerSet>
where
    C: Channel + ?Sized,
    L: ItemList + ?Sized,
{
    check_key(key, cfg)?;
    let offset = set.len();
    let total = offset.saturating_add(added.len() as u64);
    check_positions(cfg, total)?;
    handshake::exchange(
        ch,
        &hello(cfg, APPEND_ID, ROLE_SERVER, added.len()),
        ROLE_CLIENT,
        names,
    )?;
    let segment = set::segment_digest(key, offset, added);
    ch.send(&key.fingerprint()?)?;
    ch.send(&offset.to_le_bytes())?;
    ch.send(&segment)?;
    stream_values(ch, key, added, offset, cfg)?;
    Ok(set.extended(added.len() as u64, &segment))
}

/// The client's side of an append: receives the values of the server's added items and
/// merges them into `cache` (rewritten in place, atomically, with its header and checksum
/// updated; the old body's checksum is verified during the merge). Returns the new cache.
///
/// # Errors
/// [`Error::Cache`] if the cache is of another curve or width, stores positions while
/// `cfg.server_get_result` is off or the reverse, belongs to another key, or has another
/// size than the server's set before the append; handshake, network, protocol and I/O errors.
pub fn offline_append_client<C: Channel + ?Sized>(
    ch: &mut C,
    cfg: &UbConfig,
    cache: &Cache,
) -> Result<Cache> {
    cfg.check()?;
    check_cache(cache, cfg)?;
    if cache.has_positions() != cfg.server_get_result {
        return Err(Error::Cache(
            "the cache was built with server_get_result set otherwise; appends must agree".into(),
        ));
    }
    let theirs = handshake::exchange(
        ch,
        &hello(cfg, APPEND_ID, ROLE_CLIENT, 0),
        ROLE_SERVER,
        names,
    )?;
    let n = announced(theirs.n_items, "the server")?;
    let fp = recv_fingerprint(ch)?;
    let offset: [u8; 8] = ch
        .recv_max(8)?
        .try_into()
        .map_err(|_| Error::Protocol("the append offset must be 8 bytes".into()))?;
    let offset = u64::from_le_bytes(offset);
    let segment = recv_digest(ch)?;
    if fp != cache.fingerprint || offset != cache.count {
        return Err(Error::Cache(format!(
            "the server appends to a set of {offset} items under {} key; the cache holds {} \
             values{}",
            if fp == cache.fingerprint {
                "the same"
            } else {
                "another"
            },
            cache.count,
            if fp == cache.fingerprint {
                ""
            } else {
                " under another key"
            }
        )));
    }
    check_server_items(cfg, offset, theirs.n_items)?;
    check_positions(cfg, offset.saturating_add(theirs.n_items))?;
    let mut builder = CacheBuilder::extend(cache);
    receive_values(ch, &mut builder, n, offset, cfg)?;
    builder.finish(
        cache.curve,
        cache.fingerprint,
        set::chain(&cache.set_digest, &segment),
    )
}

fn check_cache(cache: &Cache, cfg: &UbConfig) -> Result<()> {
    if cache.width != cfg.width || cache.curve != curve_code(cfg.curve) {
        return Err(Error::Cache(
            "the cache was built with another curve or width".into(),
        ));
    }
    Ok(())
}

/// The server's online phase on its set `set` (the offline set and its appends, as
/// [`ServerSet`] describes them): raises every blinded point the client sends to `k`. With
/// `cfg.server_get_result`, then receives the positions of the client's matches and returns
/// `Some(indices)`, ascending, of the server's items in the intersection (indices into the
/// concatenation of the segments); otherwise `None`.
///
/// The client refuses the phase, before it sends any point, unless `set` is the set its cache
/// was built from (same digest): compute `set` from the items the indices will select.
///
/// # Errors
/// Handshake, network, protocol and group errors (a point that is not in the group, a
/// position out of range or out of order).
pub fn online_server<C: Channel + ?Sized>(
    ch: &mut C,
    key: &ServerKey,
    set: &ServerSet,
    cfg: &UbConfig,
) -> Result<Option<Vec<usize>>> {
    check_key(key, cfg)?;
    let n_server = usize::try_from(set.len())
        .map_err(|_| Error::InvalidParameter("the server set is too large".into()))?;
    check_positions(cfg, n_server as u64)?;
    let theirs = handshake::exchange(
        ch,
        &hello(cfg, ONLINE_ID, ROLE_SERVER, n_server),
        ROLE_CLIENT,
        names,
    )?;
    ch.send(&key.fingerprint()?)?;
    ch.send(set.digest())?;
    let n = announced(theirs.n_items, "the client")?;
    if n > cfg.max_client_items {
        return Err(Error::Protocol(format!(
            "the client announced n_items = {n}, above max_client_items = {}",
            cfg.max_client_items
        )));
    }
    key.reserve_queries(n as u64, key_query_limit(cfg, n_server as u64))?;
    let (b, len) = (cfg.batch_size, key.group.encoded_len());
    for i in 0..n.div_ceil(b) {
        let f = ch.recv_max(5 + b * len)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_BLINDED || index != i || payload.len() != batch_len(i, n, b) * len {
            return Err(Error::Protocol(format!("malformed blinded batch {i}")));
        }
        let answer = key.group.mul_encoded_batch(payload, &key.secret)?;
        ch.send_vec(frame(TAG_ANSWER, i, &answer)?)?;
    }
    ch.flush()?;
    if !cfg.server_get_result {
        return Ok(None);
    }
    let positions = recv_positions(ch, n_server as u64, b)?;
    let mut starts = Vec::with_capacity(set.segments().len());
    let mut at = 0u64;
    for &s in set.segments() {
        starts.push((at, key.shuffle(at, s)));
        at += s;
    }
    let mut out: Vec<usize> = positions
        .par_iter()
        .map(|&p| {
            // Segment k holds positions [starts[k].0, starts[k+1].0); p < n_server, so k exists.
            let k = starts.partition_point(|(s, _)| *s <= p).saturating_sub(1);
            let (s, sh) = &starts[k];
            usize::try_from(s + sh.apply(p - s)).unwrap_or(usize::MAX)
        })
        .collect();
    out.par_sort_unstable();
    Ok(Some(out))
}

/// The lifetime budget of a key over a server set of `n_server` items: the configured
/// maximum, and at most `⌊2^(8w − 40) / n_server⌋` (false positives over the key's life
/// below 2^-40).
fn key_query_limit(cfg: &UbConfig, n_server: u64) -> u64 {
    let bits = (8 * cfg.width).saturating_sub(STAT_SECURITY as usize);
    let fp = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) / n_server.max(1)
    };
    cfg.max_key_queries.min(fp)
}

/// Receives the client's matched positions: a count, then batches of `u64` LE, strictly
/// ascending and below `n`. The list grows as batches arrive (never reserved from the count).
fn recv_positions<C: Channel + ?Sized>(ch: &mut C, n: u64, b: usize) -> Result<Vec<u64>> {
    let f = ch.recv_max(5 + 8)?;
    let (tag, index, payload) = parse(&f)?;
    let count: [u8; 8] = payload
        .try_into()
        .map_err(|_| Error::Protocol("malformed position count".into()))?;
    let count = u64::from_le_bytes(count);
    if tag != TAG_POSITIONS || index != 0 {
        return Err(Error::Protocol("malformed position count".into()));
    }
    if count > n {
        return Err(Error::Protocol(format!(
            "the client's position count {count} is above the server's set size {n}"
        )));
    }
    let count = announced(count, "the client")?;
    let mut out = Vec::new();
    for i in 0..count.div_ceil(b) {
        let f = ch.recv_max(5 + 8 * b)?;
        let (tag, index, payload) = parse(&f)?;
        if tag != TAG_POSITIONS || index != i + 1 || payload.len() != 8 * batch_len(i, count, b) {
            return Err(Error::Protocol(format!("malformed position batch {i}")));
        }
        for c in payload.chunks_exact(8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            let p = u64::from_le_bytes(a);
            if p >= n || out.last().is_some_and(|&q| q >= p) {
                return Err(Error::Protocol(
                    "positions must be distinct, ascending and below the server's set size".into(),
                ));
            }
            out.push(p);
        }
    }
    Ok(out)
}

fn send_positions<C: Channel + ?Sized>(ch: &mut C, positions: &[u64], b: usize) -> Result<()> {
    ch.send_vec(frame(
        TAG_POSITIONS,
        0,
        &(positions.len() as u64).to_le_bytes(),
    )?)?;
    for (i, chunk) in positions.chunks(b).enumerate() {
        let payload: Vec<u8> = chunk.iter().flat_map(|p| p.to_le_bytes()).collect();
        ch.send_vec(frame(TAG_POSITIONS, i + 1, &payload)?)?;
    }
    ch.flush()?;
    Ok(())
}

/// The client's online phase: returns the indices (ascending) of `items` in the server's set.
/// With `cfg.server_get_result`, also sends the server the positions of the matched cache
/// records (which needs a cache built with that option).
///
/// # Errors
/// [`Error::Cache`] if the cache belongs to another key, curve, width or set size, stores no
/// positions while `server_get_result` is set, or was tampered with (checked by its checksum
/// during the lookup pass); [`Error::InvalidParameter`] if `w` bytes cannot keep false
/// positives below 2^-40 for these sizes; handshake, network, protocol and group errors.
pub fn online_client<C, T, R>(
    ch: &mut C,
    items: &[T],
    cache: &Cache,
    cfg: &UbConfig,
    rng: &mut R,
) -> Result<Vec<usize>>
where
    C: Channel + ?Sized,
    T: AsRef<[u8]> + Sync,
    R: CryptoRng + ?Sized,
{
    cfg.check()?;
    let group = DynGroup::new(cfg.curve)?;
    check_cache(cache, cfg)?;
    if cfg.server_get_result && !cache.has_positions() {
        return Err(Error::Cache(
            "server_get_result needs a cache built with server_get_result: run the offline \
             phase with it"
                .into(),
        ));
    }
    let bits = STAT_SECURITY
        + obliv_core::log2_ceil(items.len() as u64)
        + obliv_core::log2_ceil(cache.count);
    if bits as usize > 8 * cfg.width {
        return Err(Error::InvalidParameter(format!(
            "{} bytes per value cannot keep false positives below 2^-40 for these sizes; need {}",
            cfg.width,
            bits.div_ceil(8)
        )));
    }
    let theirs = handshake::exchange(
        ch,
        &hello(cfg, ONLINE_ID, ROLE_CLIENT, items.len()),
        ROLE_SERVER,
        names,
    )?;
    let fp = recv_fingerprint(ch)?;
    let set_digest = recv_digest(ch)?;
    if fp != cache.fingerprint || theirs.n_items != cache.count {
        return Err(Error::Cache(
            "the cache was built for another server key or set size: run the offline phase again"
                .into(),
        ));
    }
    if set_digest != cache.set_digest {
        return Err(Error::Cache(
            "the server's set is not the one this cache was built from (its items changed \
             since the offline phase): run the offline phase again"
                .into(),
        ));
    }
    let r = group.random_secret(rng)?;
    let r_inv = group.invert(&r)?;
    let (b, w, len) = (cfg.batch_size, cfg.width, group.encoded_len());
    let nb = items.len().div_ceil(b);
    let mut values = Vec::with_capacity(items.len() * w);
    let mut sent = 0;
    for i in 0..nb {
        while sent < nb && sent < i + WINDOW {
            let batch = &items[sent * b..sent * b + batch_len(sent, items.len(), b)];
            ch.send_vec(frame(
                TAG_BLINDED,
                sent,
                &group.hash_and_mul_batch(batch, &r)?,
            )?)?;
            sent += 1;
        }
        ch.flush()?;
        let f = ch.recv_max(5 + b * len)?;
        let (tag, index, payload) = parse(&f)?;
        let count = batch_len(i, items.len(), b);
        if tag != TAG_ANSWER || index != i || payload.len() != count * len {
            return Err(Error::Protocol(format!("malformed answer batch {i}")));
        }
        let unblinded = group.mul_encoded_batch(payload, &r_inv)?;
        let lo = i * b;
        values.extend_from_slice(&h2_batch(&items[lo..lo + count], &unblinded, len, w));
    }
    let hits = cache.lookup(&values)?;
    if cfg.server_get_result {
        send_positions(ch, &hits.positions, b)?;
    }
    Ok(hits.client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_net::mem_pair;

    /// `H2` as specified: BLAKE3 in key-derivation mode over `len ‖ y ‖ P`, its output stream
    /// truncated to `w`, against the batch (one-block inputs and longer ones, every width).
    #[test]
    #[allow(clippy::cast_possible_truncation)] // bytes below 251
    fn h2_batch_matches_its_definition() {
        let items: Vec<Vec<u8>> = [0usize, 1, 7, 24, 25, 56, 64, 200]
            .iter()
            .map(|&l| (0..l).map(|i| ((i * 7 + l) % 251) as u8).collect())
            .collect();
        let points: Vec<u8> = (0..items.len() * 32)
            .map(|i| ((i * 13) % 251) as u8)
            .collect();
        for w in [8usize, 12, 16, 31, 32] {
            let got = h2_batch(&items, &points, 32, w);
            for (i, y) in items.iter().enumerate() {
                let mut h = blake3::Hasher::new_derive_key(H2_DOMAIN);
                h.update(&(y.len() as u64).to_le_bytes());
                h.update(y);
                h.update(&points[32 * i..32 * (i + 1)]);
                let mut want = vec![0u8; w];
                h.finalize_xof().fill(&mut want);
                assert_eq!(&got[w * i..w * (i + 1)], &want[..], "item {i}, width {w}");
            }
        }
    }

    /// A client announcing 2^39 positions (allowed for a server set of 2^40) and then
    /// sending nothing: an error, without reserving 4 TiB for the list first.
    #[test]
    fn positions_grow_as_they_arrive() {
        let (mut a, mut b) = mem_pair();
        b.send_vec(frame(TAG_POSITIONS, 0, &(1u64 << 39).to_le_bytes()).unwrap())
            .unwrap();
        drop(b);
        assert!(matches!(
            recv_positions(&mut a, 1 << 40, 4096),
            Err(Error::Net(_))
        ));
        // More positions than the server has items: refused, naming the count.
        let (mut a, mut b) = mem_pair();
        b.send_vec(frame(TAG_POSITIONS, 0, &11u64.to_le_bytes()).unwrap())
            .unwrap();
        match recv_positions(&mut a, 10, 4096) {
            Err(Error::Protocol(m)) => assert!(m.contains("position count"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn key_query_limit_follows_the_false_positive_bound() {
        let cfg = UbConfig::default(); // w = 12: 2^56 / |Y|
        assert_eq!(key_query_limit(&cfg, 1 << 30), 1 << 26);
        assert_eq!(key_query_limit(&cfg, 1000), 1 << 32);
        let narrow = UbConfig { width: 8, ..cfg }; // 2^24 / |Y|
        assert_eq!(key_query_limit(&narrow, 1000), (1 << 24) / 1000);
        let wide = UbConfig {
            width: 32,
            max_key_queries: u64::MAX,
            ..cfg
        };
        assert_eq!(key_query_limit(&wide, 1 << 30), u64::MAX);
    }
}
