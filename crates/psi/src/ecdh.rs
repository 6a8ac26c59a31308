//! ECDH-PSI between two parties (semi-honest), streamed in batches.
//!
//! # Protocol
//!
//! Both parties hash their items to a prime-order group `G` (an RFC 9380 / RFC 9496 hash to
//! the curve, see `obliv-ec`) and hold secret scalars: the receiver `r`, the sender `s`.
//! With `H` the hash to the group and `T` a hash of a group element truncated to `w` bytes:
//!
//! 1. The receiver sends `H(x)^r` for each of its items `x`, in batches.
//! 2. The sender sends `H(y)^s` for each of its items `y`, in a uniformly shuffled order, in
//!    batches; and for each receiver batch it answers with `T(H(x)^{rs})`, in the receiver's
//!    order.
//! 3. The receiver computes `T(H(y)^{sr})` for the sender's values and outputs the indices `j`
//!    whose answer `T(H(x_j)^{rs})` is among them. With `broadcast`, it then tells the sender
//!    which of the sender's (shuffled) positions matched, and the sender maps them back.
//!
//! `w = ⌈(λ + log2 n_r + log2 n_s) / 8⌉` bytes, with `λ` = [`EcdhConfig::stat_security`]
//! (40 by default; [`crate::job_stat_security`] for a job of many runs), so the chance of any
//! false match across all `n_r · n_s` pairs is below `2^-λ`. `λ` is in the handshake: peers
//! with different values stop there with [`Error::HandshakeMismatch`] on the field
//! `statistical security`. A `w` above 16 bytes (only for `λ` near 128 and large sets) is an
//! [`Error::InvalidParameter`] on both sides.
//!
//! # Security and leakage
//!
//! Semi-honest security under the decisional Diffie–Hellman assumption in `G` with `H` a
//! random oracle (the classic Meadows / Huberman–Franklin–Hogg protocol as analysed in De
//! Cristofaro–Tsudik and used by SecretFlow). The receiver learns the intersection and the
//! sender's set size; the sender learns the receiver's set size (and, with `broadcast`, the
//! intersection). Because the sender shuffles its masked values, the receiver does not learn
//! where in the sender's input the common items sit. Both sizes are public by design.
//!
//! # Streaming
//!
//! Items move in batches of [`EcdhConfig::batch_size`] (default 4096); each batch is hashed and
//! multiplied on all cores (rayon) and sent while the peer works on the previous ones. The
//! receiver keeps up to [`EcdhConfig::window`] of its batches in flight before it waits for
//! answers, so neither side idles on a round trip. Memory: the receiver stores `w` bytes per
//! item of both sets; the sender stores a permutation of its set. For sets beyond memory, split
//! the inputs into buckets by a shared hash of the item (see the `obliv` CLI) and run one PSI per
//! bucket.

use std::collections::HashSet;

use obliv_ec::{Curve, DynGroup, SecretKey};
use obliv_net::Channel;
use rand::seq::SliceRandom;
use rand_core::CryptoRng;

use crate::error::{Error, Result};
use crate::handshake::{self, Hello};
use crate::item::PsiItem;
use crate::session::{PsiSession, agree_split};

/// Protocol identifier of two-party ECDH-PSI in the handshake.
pub(crate) const PROTOCOL_ID: u8 = 1;
use crate::wire::FRAME_HEADER;
pub(crate) use crate::wire::{
    RngAdapter, batch_len, check_stat_security, compare_width, frame, pack, parse, peer_count,
};
pub use crate::wire::{Role, STAT_SECURITY};
/// Largest batch a peer may announce (bounds every allocation made for one of its frames).
pub const MAX_BATCH: usize = 1 << 20;

const TAG_MASKED: u8 = 1;
const TAG_REPLY: u8 = 2;
const TAG_RESULT: u8 = 3;
/// Positions of the broadcast result per frame.
const RESULT_CHUNK: usize = 1 << 16;

/// Parameters both parties must agree on (checked by the handshake).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EcdhConfig {
    /// The group.
    pub curve: Curve,
    /// Items per streamed batch (1..=[`MAX_BATCH`]).
    pub batch_size: usize,
    /// Batches the receiver sends ahead of the answers it has received (≥ 1; local only).
    pub window: usize,
    /// Whether the sender learns the intersection too.
    pub broadcast: bool,
    /// Most items this party accepts from the peer (local, not compared): a peer announcing
    /// more is refused before anything is allocated, and the receiver's storage of the
    /// peer's values grows batch by batch as they arrive. [`MAX_PEER_ITEMS`] by default.
    pub max_peer_items: usize,
    /// Statistical security parameter λ of one run (compared in the handshake): a false
    /// match has probability at most `2^-λ`, which sets the comparison width. In
    /// `STAT_SECURITY..=`[`crate::MAX_STAT_SECURITY`]; [`STAT_SECURITY`] (40) by default, and
    /// [`crate::job_stat_security`] of the number of runs for a job of many runs (buckets,
    /// shards) that must meet `2^-40` as a whole.
    pub stat_security: u32,
}

/// The default of [`EcdhConfig::max_peer_items`].
pub const MAX_PEER_ITEMS: usize = 1 << 28;

impl Default for EcdhConfig {
    fn default() -> Self {
        EcdhConfig {
            curve: Curve::Curve25519,
            batch_size: 4096,
            window: 8,
            broadcast: false,
            max_peer_items: MAX_PEER_ITEMS,
            stat_security: STAT_SECURITY,
        }
    }
}

/// Numeric code of a curve in the handshake.
pub(crate) fn curve_code(c: Curve) -> u8 {
    match c {
        Curve::FourQ => 1,
        // 2 was Curve25519 when that name meant ristretto255: the code stays with the group,
        // so an older peer or key file naming code 2 still gets ristretto255.
        Curve::Ristretto255 => 2,
        Curve::Sm2 => 3,
        Curve::Secp256k1 => 4,
        Curve::P256 => 5,
        Curve::Curve25519 => 6,
        // A curve added to obliv-ec after this crate: its name travels in errors as "#255".
        _ => 255,
    }
}

pub(crate) fn code_name(field: &'static str, v: u8) -> String {
    match (field, v) {
        ("protocol", 1) => "ecdh-2pc".into(),
        ("protocol", 2) => "ecdh-3pc".into(),
        ("curve", 1) => "fourq".into(),
        ("curve", 2) => "ristretto255".into(),
        ("curve", 3) => "sm2".into(),
        ("curve", 4) => "secp256k1".into(),
        ("curve", 5) => "p256".into(),
        ("curve", 6) => "25519".into(),
        ("role", 0) => "receiver".into(),
        ("role", 1) => "sender".into(),
        (_, v) => format!("#{v}"),
    }
}

/// Truncates comparison hashes to their first `w` bytes, packed in a `u128` (for sets) and as
/// bytes (for the wire).
pub(crate) fn truncate(hashes: &[[u8; 32]], w: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(hashes.len() * w);
    for h in hashes {
        out.extend_from_slice(&h[..w]);
    }
    out
}

/// Runs two-party ECDH-PSI as `role` over `ch` on `items`.
///
/// Returns the indices (ascending) of `items` that are in the intersection for the receiver,
/// and for the sender when `cfg.broadcast` is set; `None` for the sender otherwise.
/// Duplicate items are allowed: every index of a common item is returned.
///
/// # Errors
/// A handshake mismatch (curve, batch size, options, statistical security, roles), a network
/// error, a group error (the peer sent an invalid point), a protocol violation (a frame of the
/// wrong kind, order or size), or [`Error::InvalidParameter`] for a bad `cfg` (or a
/// comparison width above 16 bytes).
pub fn run<C, T, R>(
    ch: &mut C,
    role: Role,
    items: &[T],
    cfg: &EcdhConfig,
    rng: &mut R,
) -> Result<Option<Vec<usize>>>
where
    C: Channel + ?Sized,
    T: PsiItem + Sync,
    R: CryptoRng + ?Sized,
{
    check(cfg)?;
    let group = DynGroup::new(cfg.curve)?;
    let ours = Hello {
        protocol: PROTOCOL_ID,
        curve: curve_code(cfg.curve),
        role: role.code(),
        flags: u8::from(cfg.broadcast),
        batch: u32::try_from(cfg.batch_size).unwrap_or(u32::MAX),
        n_items: items.len() as u64,
        param: handshake::stat_param(cfg.stat_security, 0),
    };
    let theirs = handshake::exchange_stat(ch, &ours, role.other().code(), code_name)?;
    let n_peer = peer_count("n_items", theirs.n_items, cfg.max_peer_items)?;
    let (n_r, n_s) = match role {
        Role::Receiver => (items.len(), n_peer),
        Role::Sender => (n_peer, items.len()),
    };
    let w = compare_width(cfg.stat_security, n_r, n_s)?;
    let key = group.random_secret(rng)?;
    let stream = Stream {
        group,
        key,
        w,
        batch: cfg.batch_size,
    };
    match role {
        Role::Sender => stream.sender(ch, items, n_peer, cfg.broadcast, rng),
        Role::Receiver => stream.receiver(ch, items, n_peer, cfg.window, cfg.broadcast),
    }
}

/// The longest frame a peer's ECDH-PSI session with parameters `cfg` sends: a batch of
/// `cfg.batch_size` points or of answers of at most 16 bytes (`5 + batch·max(point, 16)`
/// bytes with the 5-byte frame header) or, with `broadcast`, a chunk of result positions.
/// The handshake (30 bytes) is shorter.
pub fn max_frame_len(cfg: &EcdhConfig) -> usize {
    let point = DynGroup::new(cfg.curve).map_or(MAX_POINT_LEN, |g| g.encoded_len());
    let batch = FRAME_HEADER.saturating_add(cfg.batch_size.saturating_mul(point.max(16)));
    if cfg.broadcast {
        batch.max(FRAME_HEADER + RESULT_CHUNK * 8)
    } else {
        batch
    }
}

/// The longest encoding of a point among the curves (a compressed 256-bit Weierstrass point).
const MAX_POINT_LEN: usize = 33;

/// Checks the local parameters of `cfg`.
fn check(cfg: &EcdhConfig) -> Result<()> {
    if cfg.batch_size == 0 || cfg.batch_size > MAX_BATCH || cfg.window == 0 {
        return Err(Error::InvalidParameter(format!(
            "batch size must be in 1..={MAX_BATCH} and window at least 1"
        )));
    }
    check_stat_security(cfg.stat_security)
}

/// State shared by both roles once the handshake is done.
struct Stream {
    group: DynGroup,
    key: SecretKey,
    /// Comparison width in bytes.
    w: usize,
    batch: usize,
}

impl Stream {
    /// Receives the peer's next masked batch, checks it and raises it to our key.
    fn take_masked(&self, payload: &[u8], count: usize) -> Result<Vec<u8>> {
        let len = self.group.encoded_len();
        if payload.len() != count * len {
            return Err(Error::Protocol(format!(
                "masked batch of {} bytes, expected {} points of {len} bytes",
                payload.len(),
                count
            )));
        }
        let doubled = self.group.mul_encoded_batch(payload, &self.key)?;
        Ok(truncate(&self.group.hash_encoded_batch(&doubled)?, self.w))
    }

    fn sender<C, T, R>(
        &self,
        ch: &mut C,
        items: &[T],
        n_peer: usize,
        broadcast: bool,
        rng: &mut R,
    ) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        let b = self.batch;
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.shuffle(&mut RngAdapter(rng));
        let (nb_own, nb_peer) = (items.len().div_ceil(b), n_peer.div_ceil(b));
        let max_frame = 5 + b * self.group.encoded_len();
        let (mut sent, mut replied) = (0, 0);
        while sent < nb_own || replied < nb_peer {
            if sent < nb_own {
                let idx = &order[sent * b..sent * b + batch_len(sent, items.len(), b)];
                let batch: Vec<&[u8]> = idx.iter().map(|&i| items[i].item_bytes()).collect();
                let masked = self.group.hash_and_mul_batch(&batch, &self.key)?;
                ch.send_vec(frame(TAG_MASKED, sent, &masked)?)?;
                sent += 1;
            }
            if replied < nb_peer {
                ch.flush()?;
                let f = ch.recv_max(max_frame)?;
                let (tag, index, payload) = parse(&f)?;
                if tag != TAG_MASKED || index != replied {
                    return Err(Error::Protocol(format!(
                        "expected masked batch {replied}, got tag {tag} batch {index}"
                    )));
                }
                let answer = self.take_masked(payload, batch_len(replied, n_peer, b))?;
                ch.send_vec(frame(TAG_REPLY, replied, &answer)?)?;
                replied += 1;
            }
        }
        ch.flush()?;
        if !broadcast {
            return Ok(None);
        }
        let positions = recv_result(ch, items.len())?;
        let mut out: Vec<usize> = positions.into_iter().map(|p| order[p]).collect();
        out.sort_unstable();
        Ok(Some(out))
    }

    fn receiver<C, T>(
        &self,
        ch: &mut C,
        items: &[T],
        n_peer: usize,
        window: usize,
        broadcast: bool,
    ) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
    {
        let (b, w) = (self.batch, self.w);
        let (nb_own, nb_peer) = (items.len().div_ceil(b), n_peer.div_ceil(b));
        let max_frame = 5 + b * self.group.encoded_len().max(w);
        // Grows batch by batch as the peer's values arrive (never reserved by its count).
        let mut peer_values: Vec<u128> = Vec::new();
        let mut answers: Vec<u128> = Vec::with_capacity(items.len());
        let (mut sent, mut got_masked, mut got_reply) = (0, 0, 0);
        while got_masked < nb_peer || got_reply < nb_own {
            while sent < nb_own && sent - got_reply < window {
                let batch: Vec<&[u8]> = items[sent * b..sent * b + batch_len(sent, items.len(), b)]
                    .iter()
                    .map(PsiItem::item_bytes)
                    .collect();
                let masked = self.group.hash_and_mul_batch(&batch, &self.key)?;
                ch.send_vec(frame(TAG_MASKED, sent, &masked)?)?;
                sent += 1;
            }
            ch.flush()?;
            let f = ch.recv_max(max_frame)?;
            match parse(&f)? {
                (TAG_MASKED, index, payload) if index == got_masked && got_masked < nb_peer => {
                    let values = self.take_masked(payload, batch_len(index, n_peer, b))?;
                    peer_values.extend(values.chunks_exact(w).map(pack));
                    got_masked += 1;
                }
                (TAG_REPLY, index, payload) if index == got_reply && got_reply < sent => {
                    let count = batch_len(index, items.len(), b);
                    if payload.len() != count * w {
                        return Err(Error::Protocol(format!(
                            "answer to batch {index} has {} bytes, expected {}",
                            payload.len(),
                            count * w
                        )));
                    }
                    answers.extend(payload.chunks_exact(w).map(pack));
                    got_reply += 1;
                }
                (tag, index, _) => {
                    return Err(Error::Protocol(format!(
                        "unexpected frame: tag {tag} batch {index} (next masked {got_masked}, next answer {got_reply})"
                    )));
                }
            }
        }
        let peer_set: HashSet<u128> = peer_values.iter().copied().collect();
        let ours: Vec<usize> = (0..items.len())
            .filter(|&j| peer_set.contains(&answers[j]))
            .collect();
        if broadcast {
            let answer_set: HashSet<u128> = answers.iter().copied().collect();
            let positions: Vec<u64> = (0..n_peer)
                .filter(|&p| answer_set.contains(&peer_values[p]))
                .map(|p| p as u64)
                .collect();
            send_result(ch, &positions)?;
        }
        Ok(Some(ours))
    }
}

/// Sends the sender's matching positions: a count frame, then chunks of `u64`s.
fn send_result<C: Channel + ?Sized>(ch: &mut C, positions: &[u64]) -> Result<()> {
    ch.send_vec(frame(
        TAG_RESULT,
        0,
        &(positions.len() as u64).to_le_bytes(),
    )?)?;
    for (i, chunk) in positions.chunks(RESULT_CHUNK).enumerate() {
        let bytes: Vec<u8> = chunk.iter().flat_map(|p| p.to_le_bytes()).collect();
        ch.send_vec(frame(TAG_RESULT, i + 1, &bytes)?)?;
    }
    ch.flush()?;
    Ok(())
}

/// Receives and validates the positions sent by [`send_result`]: at most `n` of them, each
/// below `n`, strictly increasing.
fn recv_result<C: Channel + ?Sized>(ch: &mut C, n: usize) -> Result<Vec<usize>> {
    let f = ch.recv_max(5 + 8)?;
    let (tag, index, payload) = parse(&f)?;
    if tag != TAG_RESULT || index != 0 || payload.len() != 8 {
        return Err(Error::Protocol("expected the result count".into()));
    }
    let mut count_bytes = [0u8; 8];
    count_bytes.copy_from_slice(payload);
    let count = u64::from_le_bytes(count_bytes);
    let count = usize::try_from(count)
        .ok()
        .filter(|&c| c <= n)
        .ok_or_else(|| Error::Protocol(format!("result of {count} items from a set of {n}")))?;
    let mut out = Vec::with_capacity(count);
    let mut chunk_index = 1;
    while out.len() < count {
        let f = ch.recv_max(5 + RESULT_CHUNK * 8)?;
        let (tag, index, payload) = parse(&f)?;
        let expected = (count - out.len()).min(RESULT_CHUNK) * 8;
        if tag != TAG_RESULT || index != chunk_index || payload.len() != expected {
            return Err(Error::Protocol("malformed result chunk".into()));
        }
        for p in payload.chunks_exact(8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(p);
            let p = usize::try_from(u64::from_le_bytes(a)).unwrap_or(usize::MAX);
            let prev_ok = out.last().is_none_or(|&last: &usize| last < p);
            if p >= n || !prev_ok {
                return Err(Error::Protocol(
                    "result positions out of range or out of order".into(),
                ));
            }
            out.push(p);
        }
        chunk_index += 1;
    }
    Ok(out)
}

/// Two-party ECDH-PSI as a [`PsiSession`]: each run is a [`run`] with a fresh secret scalar,
/// so runs (and the children of [`split`](PsiSession::split)) are independent.
#[derive(Clone, Debug)]
pub struct EcdhSession {
    role: Role,
    cfg: EcdhConfig,
    failed: bool,
}

impl EcdhSession {
    /// A session as `role` with parameters `cfg` (checked here; the peer's are checked by
    /// every run's handshake). Nothing is sent until the first run.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a batch size outside `1..=`[`MAX_BATCH`], a zero
    /// window or a statistical security parameter outside `40..=128`.
    pub fn new(role: Role, cfg: &EcdhConfig) -> Result<Self> {
        check(cfg)?;
        Ok(EcdhSession {
            role,
            cfg: *cfg,
            failed: false,
        })
    }

    /// The hello of this session's runs, without the item count.
    fn hello(&self) -> Hello {
        Hello {
            protocol: PROTOCOL_ID,
            curve: curve_code(self.cfg.curve),
            role: self.role.code(),
            flags: u8::from(self.cfg.broadcast),
            batch: u32::try_from(self.cfg.batch_size).unwrap_or(u32::MAX),
            n_items: 0,
            param: handshake::stat_param(self.cfg.stat_security, 0),
        }
    }
}

impl PsiSession for EcdhSession {
    fn protocol(&self) -> &'static str {
        "ecdh-2pc"
    }

    fn set_job_limits(&mut self, max_peer_items: usize, stat_security: u32) -> Result<()> {
        if self.failed {
            return Err(Error::InvalidParameter(
                "an earlier run of this ECDH session failed; open a new session".into(),
            ));
        }
        let cfg = EcdhConfig {
            max_peer_items,
            stat_security,
            ..self.cfg
        };
        check(&cfg)?;
        self.cfg = cfg;
        Ok(())
    }

    fn role(&self) -> Role {
        self.role
    }

    fn max_frame_len(&self) -> usize {
        max_frame_len(&self.cfg)
    }

    fn run<C, T, R>(&mut self, ch: &mut C, items: &[T], rng: &mut R) -> Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        if self.failed {
            return Err(Error::InvalidParameter(
                "an earlier run of this ECDH session failed; open a new session".into(),
            ));
        }
        let r = run(ch, self.role, items, &self.cfg, rng);
        self.failed = r.is_err();
        r
    }

    fn split<C, R>(&mut self, ch: &mut C, n: usize, _rng: &mut R) -> Result<Vec<Self>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        if self.failed {
            return Err(Error::InvalidParameter(
                "an earlier run of this ECDH session failed; open a new session".into(),
            ));
        }
        let r = agree_split(ch, self.hello(), self.role, n, code_name);
        self.failed = r.is_err();
        r?;
        Ok(vec![self.clone(); n])
    }
}
