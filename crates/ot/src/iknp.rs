//! IKNP OT extension with the ALSZ13 optimisations: random OT, chosen-message OT and the raw
//! correlated OT (global Δ), both roles in this module.
//!
//! # Protocol ([IKNP03], [ALSZ13])
//!
//! Setup: `κ = 128` base OTs with the roles reversed. The extension **receiver** is the
//! base-OT sender and holds seed pairs `(k_j^0, k_j^1)`; the extension **sender** picks a
//! secret `Δ ∈ {0,1}^128`, is the base-OT receiver with choice bits `Δ_j`, and holds
//! `k_j^{Δ_j}`. Each seed keys an AES-CTR [`Prg`] whose stream continues across calls.
//!
//! Extension of `m` OTs (one message, receiver → sender, `κ·m` bits), receiver choice bits
//! `r ∈ {0,1}^m` as a bit vector:
//!
//! - receiver: `t^j = G(k_j^0)`, sends `u^j = t^j ⊕ G(k_j^1) ⊕ r` for `j < κ`
//!   (ALSZ13: the PRG stretch replaces fresh base OTs per call, one message per chunk);
//! - sender: `q^j = G(k_j^{Δ_j}) ⊕ Δ_j·u^j = t^j ⊕ Δ_j·r`.
//!
//! Transposing the `κ × m` matrices (rows `t^j`, `q^j`) into `m` blocks (`t_i`, `q_i`) gives
//! the **correlation**
//!
//! ```text
//!     q_i = t_i ⊕ r_i·Δ        (sender: q_i and Δ;  receiver: r_i and t_i)
//! ```
//!
//! which is returned raw by [`Sender::send_correlated`] / [`Receiver::receive_correlated`].
//! It is a random correlated OT (COT) with global key Δ, i.e. a subfield VOLE over GF(2):
//! in VOLE notation `M_i = K_i ⊕ x_i·Δ` with the receiver's `x_i = r_i` (bits) and MAC
//! `M_i = t_i`, and the sender's key `K_i = q_i`. (Equivalently the sender holds the two
//! messages `q_i`, `q_i ⊕ Δ` and the receiver the one `t_i = q_i ⊕ r_i·Δ`.)
//!
//! Random OT breaks the correlation with the tweakable circular-correlation-robust hash of
//! [GKWW20] (`tccr` of obliv-core, tweak = the global OT index `i`):
//! sender `m_i^0 = H(i, q_i)`, `m_i^1 = H(i, q_i ⊕ Δ)`, receiver `m_i^{r_i} = H(i, t_i)`.
//! Chosen-message OT sends `y_i^b = x_i^b ⊕ m_i^b` on top.
//!
//! Work is done in chunks of [`CHUNK_OTS`] OTs (one `κ·CHUNK_OTS/8`-byte message each), so the
//! extra memory is about 1 MiB per party whatever `n` is. Every batch is rounded up to a
//! multiple of 128 OTs on the wire (the padding OTs are computed and dropped by both sides).
//!
//! # Security
//!
//! Semi-honest security, assuming AES is a PRG/PRP, `tccr` is tweakable circular correlation
//! robust [GKWW20] (for random/chosen OT), and the base OTs are secure ([`crate::base`]).
//! The raw correlation is secure as a COT functionality against a semi-honest receiver: `Δ`
//! stays hidden as long as the caller never reveals `q_i`/`q_i ⊕ Δ` pairs in the clear.
//! **Not** secure against a malicious receiver: a receiver can send inconsistent `u^j`
//! (different `r` per row) and learn bits of `Δ`; KOS15 adds a check for this, with a proof
//! gap, and SoftSpokenOT (not implemented here) closes it. Do not use this module where a
//! malicious receiver must be tolerated.
//!
//! Each [`Sender`]/[`Receiver`] pair must be used in lock step: the `k`-th call on one side
//! with the `k`-th call on the other, with the same `n`; both keep a running OT index so that
//! tweaks never repeat within a session.
//!
//! [IKNP03]: https://www.iacr.org/archive/crypto2003/27290145/27290145.pdf
//! [ALSZ13]: https://eprint.iacr.org/2013/552
//! [GKWW20]: https://eprint.iacr.org/2019/074

use obliv_core::hash::tccr_in_place;
use obliv_core::transpose::transpose_128_rows;
use obliv_core::{Block, Prg};
use obliv_net::{Channel, ChannelExt};
use rand_core::CryptoRng;
use subtle::{Choice, ConditionallySelectable};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::base::{self, ReceiverBaseOts, SenderBaseOts};
use crate::error::{Error, Result, guarded};

/// The computational security parameter κ: number of base OTs and bits of Δ.
pub const KAPPA: usize = 128;

/// OTs per chunk (one receiver message of `κ·CHUNK_OTS/8` = 256 KiB).
pub const CHUNK_OTS: usize = 1 << 14;

/// log2 of the OT-index range a [`Sender::split`] child gets (2^40 OTs).
pub const SPLIT_SPAN_LOG: u32 = 40;

/// Most OTs one call may produce (2^40; far beyond memory, a guard against overflow).
pub const MAX_OTS: usize = 1 << 40;

/// Packs booleans into blocks, bit `i % 128` of block `i / 128` = `bits[i]`, padding with 0.
///
/// # Panics
/// Panics if `out` has fewer than `bits.len().div_ceil(128)` blocks (a caller bug).
pub fn pack_bits(bits: &[bool], out: &mut [Block]) {
    out.fill(Block::ZERO);
    for (i, &b) in bits.iter().enumerate() {
        out[i / 128].0 |= u128::from(b) << (i % 128);
    }
}

fn check_n(n: usize) -> Result<()> {
    if n > MAX_OTS {
        return Err(Error::InvalidArgument(format!(
            "{n} OTs requested, at most {MAX_OTS} per call"
        )));
    }
    Ok(())
}

fn check_len(what: &str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(Error::InvalidArgument(format!(
            "{what}: expected length {expected}, got {got}"
        )));
    }
    Ok(())
}

/// Checks that a call of `n` OTs (padding included) fits the session's OT index space
/// starting at `count`: the index is a tweak of the output hash and must never wrap.
fn check_index_room(count: u64, n: usize) -> Result<()> {
    let total = u64::try_from(padded(n)).unwrap_or(u64::MAX);
    if count.checked_add(total).is_none() {
        return Err(Error::LimitExceeded {
            field: "OT index of the session (OTs produced so far) for a call of this size",
            got: count,
            max: u64::MAX - total,
        });
    }
    Ok(())
}

/// Advances a parent's OT index past the range its [`Sender::split`] /
/// [`Receiver::split`] child takes; `false` if the index space is used up.
pub(crate) fn advance_for_split(count: &mut u64) -> bool {
    match count.checked_add(1 << SPLIT_SPAN_LOG) {
        Some(c) => {
            *count = c;
            true
        }
        None => false,
    }
}

/// Δ as a block from the 128 base-OT choice bits (bit `j` = choice `j`).
fn delta_from_choices(choices: &[bool]) -> Block {
    let mut d = [Block::ZERO; 1];
    pack_bits(choices, &mut d);
    d[0]
}

/// The OT-extension sender: holds Δ and the seeds `k_j^{Δ_j}`.
///
/// Zeroized on drop; `Debug` prints no secret.
pub struct Sender {
    delta: Block,
    prgs: Vec<Prg>,
    /// OTs produced so far (including padding): the next OT's global index / tweak.
    count: u64,
    rows: Vec<Block>,
    /// Left set by a failed call: the session then refuses every call ([`Error::Aborted`]).
    aborted: bool,
}

/// The OT-extension receiver: holds the seed pairs `(k_j^0, k_j^1)`.
///
/// Zeroized on drop; `Debug` prints no secret.
pub struct Receiver {
    prgs: Vec<[Prg; 2]>,
    count: u64,
    rows: Vec<Block>,
    tmp: Vec<Block>,
    /// Left set by a failed call: the session then refuses every call ([`Error::Aborted`]).
    aborted: bool,
}

impl core::fmt::Debug for Sender {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "iknp::Sender {{ count: {} }}", self.count)
    }
}

impl core::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "iknp::Receiver {{ count: {} }}", self.count)
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.delta.zeroize();
        self.rows.zeroize();
    }
}
impl ZeroizeOnDrop for Sender {}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.rows.zeroize();
        self.tmp.zeroize();
    }
}
impl ZeroizeOnDrop for Receiver {}

/// Rounds `n` up to a multiple of 128.
fn padded(n: usize) -> usize {
    n.div_ceil(128) * 128
}

impl Sender {
    /// Runs the κ = 128 base OTs (as their receiver, choice bits = a fresh random Δ) and
    /// returns a sender ready to extend. The peer runs [`Receiver::setup`].
    pub fn setup<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        channel: &mut C,
        rng: &mut R,
    ) -> Result<Self> {
        let mut delta = Block::random(rng);
        // The choice bits are Δ: wiped on every exit.
        let choices: Zeroizing<Vec<bool>> =
            Zeroizing::new((0..KAPPA).map(|j| delta.bit(j)).collect());
        delta.zeroize();
        let base = base::receive_random(channel, &choices, rng)?;
        Self::new_with_base(&base)
    }

    /// A sender from base OTs already done (or dealt, in tests): the extension sender is the
    /// base-OT **receiver**; its 128 choice bits become Δ (bit `j` = choice `j`).
    pub fn new_with_base(base: &ReceiverBaseOts) -> Result<Self> {
        check_len("IKNP sender base OTs", KAPPA, base.len())?;
        check_len("IKNP sender base OT choices", KAPPA, base.choices.len())?;
        Ok(Sender {
            delta: delta_from_choices(&base.choices),
            prgs: base.messages.iter().map(|&k| Prg::new(k)).collect(),
            count: 0,
            rows: Vec::new(),
            aborted: false,
        })
    }

    /// The global correlation key Δ (see the module documentation). Secret.
    pub fn delta(&self) -> Block {
        self.delta
    }

    /// A new, independent sender for the same peer, without new base OTs: its seeds are
    /// the next block of each of this one's PRG streams; it continues this one's OT index
    /// while this one skips 2^40 ahead. (After nested splits an index can recur in two
    /// sessions; that is harmless because their seeds are independent — TCCR security
    /// [GKWW20, Def. 4] allows one tweak on different inputs.) The peer
    /// must call `split` on its side at the same point; the two children then run in
    /// lock step with each other (e.g. on another thread over a sub-channel) while the
    /// parents go on independently. This is how PSI buckets run concurrently on one set of
    /// base OTs.
    ///
    /// If this session's 64-bit OT index cannot skip 2^40 ahead any more, both this session
    /// and the child are aborted (every call is [`Error::Aborted`]): the indices are hash
    /// tweaks and must not wrap around.
    pub fn split(&mut self) -> Self {
        let prgs = self
            .prgs
            .iter_mut()
            .map(|p| Prg::new(p.next_block()))
            .collect();
        let mut child = Sender {
            delta: self.delta,
            prgs,
            count: self.count,
            rows: Vec::new(),
            aborted: self.aborted,
        };
        if !advance_for_split(&mut self.count) {
            self.aborted = true;
            child.aborted = true;
        }
        child
    }

    /// OTs produced so far (the global index of the next one, padding included).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Receives one chunk of `m` (multiple of 128) OTs and writes `q_i` into `out[..m]`.
    fn chunk<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        m: usize,
        out: &mut [Block],
    ) -> Result<()> {
        let w = m / 128;
        self.rows.resize(KAPPA * w, Block::ZERO);
        channel.recv_pod_into(&mut self.rows[..KAPPA * w])?;
        let mut buf = vec![Block::ZERO; w];
        for (j, prg) in self.prgs.iter_mut().enumerate() {
            let mask = Block::broadcast_bit(Choice::from(u8::from(self.delta.bit(j))));
            prg.fill_blocks(&mut buf);
            for (r, g) in self.rows[j * w..(j + 1) * w].iter_mut().zip(&buf) {
                *r = (*r & mask) ^ *g;
            }
        }
        buf.zeroize();
        transpose_128_rows(
            Block::slice_as_bytes(&self.rows[..KAPPA * w]),
            m,
            &mut out[..m],
        )?;
        self.count += m as u64;
        Ok(())
    }

    /// Runs the extension for `out.len()` OTs and writes the raw `q_i`; calls `post(first,
    /// q)` on each chunk's outputs with its first global index.
    fn extend_with<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        out: &mut [Block],
        post: impl FnMut(u64, &mut [Block]),
    ) -> Result<()> {
        check_n(out.len())?;
        let mut aborted = self.aborted;
        let res = guarded(&mut aborted, || self.extend_once(channel, out, post));
        self.aborted = aborted;
        // The rows hold the correlation `q^j` of the last chunk: wiped on every exit.
        self.rows.zeroize();
        res
    }

    fn extend_once<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        out: &mut [Block],
        mut post: impl FnMut(u64, &mut [Block]),
    ) -> Result<()> {
        check_index_room(self.count, out.len())?;
        let mut scratch = Zeroizing::new(Vec::new());
        for piece in out.chunks_mut(CHUNK_OTS) {
            let m = padded(piece.len());
            let first = self.count;
            if m == piece.len() {
                self.chunk(channel, m, piece)?;
            } else {
                scratch.resize(m, Block::ZERO);
                self.chunk(channel, m, &mut scratch)?;
                piece.copy_from_slice(&scratch[..piece.len()]);
                scratch.zeroize();
            }
            post(first, piece);
        }
        Ok(())
    }

    /// Correlated OT, raw IKNP output: writes `q_i` into `out` such that the receiver's
    /// `t_i = q_i ⊕ r_i·Δ` ([`Receiver::receive_correlated_into`]).
    pub fn send_correlated_into<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        out: &mut [Block],
    ) -> Result<()> {
        self.extend_with(channel, out, |_, _| {})
    }

    /// Correlated OT: `n` blocks `q_i` with `q_i = t_i ⊕ r_i·Δ`; Δ is [`Sender::delta`].
    pub fn send_correlated<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        n: usize,
    ) -> Result<Vec<Block>> {
        check_n(n)?;
        let mut out = vec![Block::ZERO; n];
        self.send_correlated_into(channel, &mut out)?;
        Ok(out)
    }

    /// Random OT: writes `[m_i^0, m_i^1] = [H(i, q_i), H(i, q_i ⊕ Δ)]` into `out`.
    pub fn send_random_into<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        out: &mut [[Block; 2]],
    ) -> Result<()> {
        check_n(out.len())?;
        let delta = self.delta;
        // Raw correlations: wiped on every exit, errors included.
        let mut q = Zeroizing::new(vec![Block::ZERO; out.len().min(CHUNK_OTS)]);
        let mut q1 = Zeroizing::new(vec![Block::ZERO; q.len()]);
        for piece in out.chunks_mut(CHUNK_OTS) {
            let len = piece.len();
            let first = self.count;
            self.extend_with(channel, &mut q[..len], |_, _| {})?;
            for (a, b) in q1[..len].iter_mut().zip(&q[..len]) {
                *a = *b ^ delta;
            }
            tccr_in_place(u128::from(first), &mut q[..len]);
            tccr_in_place(u128::from(first), &mut q1[..len]);
            for ((o, a), b) in piece.iter_mut().zip(&q[..len]).zip(&q1[..len]) {
                *o = [*a, *b];
            }
        }
        Ok(())
    }

    /// Random OT: `n` random message pairs `[m_i^0, m_i^1]`; the receiver gets `m_i^{r_i}`.
    pub fn send_random<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        n: usize,
    ) -> Result<Vec<[Block; 2]>> {
        check_n(n)?;
        let mut out = vec![[Block::ZERO; 2]; n];
        self.send_random_into(channel, &mut out)?;
        Ok(out)
    }

    /// Chosen-message OT: the receiver learns `messages[i][r_i]` and nothing about the other.
    /// Runs a random OT and sends `messages[i][b] ⊕ m_i^b` (32 bytes per OT).
    ///
    /// # Errors
    /// A failed call (also when sending the masked messages fails) ends the session: every
    /// later call is [`Error::Aborted`].
    pub fn send_chosen<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        messages: &[[Block; 2]],
    ) -> Result<()> {
        check_n(messages.len())?;
        let mut aborted = self.aborted;
        let res = guarded(&mut aborted, || self.send_chosen_once(channel, messages));
        self.aborted = aborted;
        res
    }

    fn send_chosen_once<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        messages: &[[Block; 2]],
    ) -> Result<()> {
        for piece in messages.chunks(CHUNK_OTS) {
            let mut pads = self.send_random(channel, piece.len())?;
            for (p, m) in pads.iter_mut().zip(piece) {
                p[0] ^= m[0];
                p[1] ^= m[1];
            }
            channel.send_pod(&pads)?;
        }
        channel.flush()?;
        Ok(())
    }
}

impl Receiver {
    /// Runs the κ = 128 base OTs as their sender and returns a receiver ready to extend.
    /// The peer runs [`Sender::setup`].
    pub fn setup<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        channel: &mut C,
        rng: &mut R,
    ) -> Result<Self> {
        let base = base::send_random(channel, KAPPA, rng)?;
        Self::new_with_base(&base)
    }

    /// A receiver from base OTs already done (or dealt, in tests): the extension receiver is
    /// the base-OT **sender**.
    pub fn new_with_base(base: &SenderBaseOts) -> Result<Self> {
        check_len("IKNP receiver base OTs", KAPPA, base.len())?;
        Ok(Receiver {
            prgs: base
                .messages
                .iter()
                .map(|k| [Prg::new(k[0]), Prg::new(k[1])])
                .collect(),
            count: 0,
            rows: Vec::new(),
            tmp: Vec::new(),
            aborted: false,
        })
    }

    /// A new, independent receiver for the same peer, without new base OTs: its seeds are
    /// the next block of each of this one's PRG streams; it continues this one's OT index
    /// while this one skips 2^40 ahead. (After nested splits an index can recur in two
    /// sessions; that is harmless because their seeds are independent — TCCR security
    /// [GKWW20, Def. 4] allows one tweak on different inputs.) The peer
    /// must call `split` on its side at the same point; the two children then run in
    /// lock step with each other (e.g. on another thread over a sub-channel) while the
    /// parents go on independently. This is how PSI buckets run concurrently on one set of
    /// base OTs.
    ///
    /// If this session's 64-bit OT index cannot skip 2^40 ahead any more, both this session
    /// and the child are aborted (see [`Sender::split`]).
    pub fn split(&mut self) -> Self {
        let prgs = self
            .prgs
            .iter_mut()
            .map(|p| [Prg::new(p[0].next_block()), Prg::new(p[1].next_block())])
            .collect();
        let mut child = Receiver {
            prgs,
            count: self.count,
            rows: Vec::new(),
            tmp: Vec::new(),
            aborted: self.aborted,
        };
        if !advance_for_split(&mut self.count) {
            self.aborted = true;
            child.aborted = true;
        }
        child
    }

    /// OTs produced so far (the global index of the next one, padding included).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// One chunk: `m` (multiple of 128) OTs with packed choice bits `r` (`m / 128` blocks);
    /// sends `u` and writes `t_i` into `out[..m]`.
    fn chunk<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        m: usize,
        r: &[Block],
        out: &mut [Block],
    ) -> Result<()> {
        let w = m / 128;
        self.rows.resize(KAPPA * w, Block::ZERO);
        self.tmp.resize(KAPPA * w, Block::ZERO);
        let mut g1 = vec![Block::ZERO; w];
        for (j, prg) in self.prgs.iter_mut().enumerate() {
            let t = &mut self.rows[j * w..(j + 1) * w];
            prg[0].fill_blocks(t);
            prg[1].fill_blocks(&mut g1);
            for (((u, t), g), r) in self.tmp[j * w..(j + 1) * w]
                .iter_mut()
                .zip(t.iter())
                .zip(&g1)
                .zip(r)
            {
                *u = *t ^ *g ^ *r;
            }
        }
        g1.zeroize();
        channel.send_pod(&self.tmp[..KAPPA * w])?;
        transpose_128_rows(
            Block::slice_as_bytes(&self.rows[..KAPPA * w]),
            m,
            &mut out[..m],
        )?;
        self.count += m as u64;
        Ok(())
    }

    fn extend_with<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        check_n(out.len())?;
        check_len("IKNP receiver choices", out.len(), choices.len())?;
        let mut aborted = self.aborted;
        let res = guarded(&mut aborted, || self.extend_once(channel, choices, out));
        self.aborted = aborted;
        // The rows hold `t^j` of the last chunk: wiped on every exit (`tmp` held what was
        // sent, wiped all the same).
        self.rows.zeroize();
        self.tmp.zeroize();
        res
    }

    fn extend_once<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        check_index_room(self.count, out.len())?;
        // Outputs of a padded chunk and the packed choice bits: wiped on every exit.
        let mut scratch = Zeroizing::new(Vec::new());
        let mut r = Zeroizing::new(vec![Block::ZERO; CHUNK_OTS / 128]);
        for (piece, ch) in out.chunks_mut(CHUNK_OTS).zip(choices.chunks(CHUNK_OTS)) {
            let m = padded(piece.len());
            pack_bits(ch, &mut r[..m / 128]);
            if m == piece.len() {
                self.chunk(channel, m, &r[..m / 128], piece)?;
            } else {
                scratch.resize(m, Block::ZERO);
                self.chunk(channel, m, &r[..m / 128], &mut scratch)?;
                piece.copy_from_slice(&scratch[..piece.len()]);
                scratch.zeroize();
            }
        }
        channel.flush()?;
        Ok(())
    }

    /// Correlated OT, raw IKNP output: writes `t_i = q_i ⊕ r_i·Δ` for the choice bits
    /// `r_i = choices[i]`.
    pub fn receive_correlated_into<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        self.extend_with(channel, choices, out)
    }

    /// Correlated OT: `t_i` for the given choice bits, with `q_i = t_i ⊕ r_i·Δ`.
    pub fn receive_correlated<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
    ) -> Result<Vec<Block>> {
        check_n(choices.len())?;
        let mut out = vec![Block::ZERO; choices.len()];
        self.receive_correlated_into(channel, choices, &mut out)?;
        Ok(out)
    }

    /// Random OT with chosen choice bits: writes `m_i^{r_i} = H(i, t_i)` into `out`.
    pub fn receive_random_into<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        check_len("IKNP receiver choices", out.len(), choices.len())?;
        for (piece, ch) in out.chunks_mut(CHUNK_OTS).zip(choices.chunks(CHUNK_OTS)) {
            let first = self.count;
            self.extend_with(channel, ch, piece)?;
            tccr_in_place(u128::from(first), piece);
        }
        Ok(())
    }

    /// Random OT with chosen choice bits: `m_i^{r_i}` for `r_i = choices[i]`.
    pub fn receive_random<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
    ) -> Result<Vec<Block>> {
        check_n(choices.len())?;
        let mut out = vec![Block::ZERO; choices.len()];
        self.receive_random_into(channel, choices, &mut out)?;
        Ok(out)
    }

    /// Random OT with random choice bits drawn from `rng`: returns `(r, m_i^{r_i})`.
    pub fn receive_random_choices<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        channel: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<(Vec<bool>, Vec<Block>)> {
        check_n(n)?;
        let choices = random_bits(n, rng);
        let out = self.receive_random(channel, &choices)?;
        Ok((choices, out))
    }

    /// Chosen-message OT: returns `messages[i][r_i]` of the sender's
    /// [`Sender::send_chosen`].
    ///
    /// # Errors
    /// A failed call (also a masked-message frame of the wrong length or a timeout waiting
    /// for it) ends the session: every later call is [`Error::Aborted`]. Otherwise a late
    /// frame of this call would be read as the next call's masked messages.
    pub fn receive_chosen<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
    ) -> Result<Vec<Block>> {
        check_n(choices.len())?;
        let mut aborted = self.aborted;
        let res = guarded(&mut aborted, || self.receive_chosen_once(channel, choices));
        self.aborted = aborted;
        res
    }

    fn receive_chosen_once<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
    ) -> Result<Vec<Block>> {
        let mut out = Vec::with_capacity(choices.len());
        for ch in choices.chunks(CHUNK_OTS) {
            let pads = Zeroizing::new(self.receive_random(channel, ch)?);
            let ct: Vec<[Block; 2]> = channel.recv_pod_exact(ch.len())?;
            for ((c, p), &b) in ct.iter().zip(pads.iter()).zip(ch) {
                out.push(Block::conditional_select(&c[0], &c[1], Choice::from(u8::from(b))) ^ *p);
            }
        }
        Ok(out)
    }
}

/// `n` uniformly random bits.
pub fn random_bits<R: CryptoRng + ?Sized>(n: usize, rng: &mut R) -> Vec<bool> {
    let mut bytes = vec![0u8; n.div_ceil(8)];
    rng.fill_bytes(&mut bytes);
    let bits = (0..n).map(|i| (bytes[i / 8] >> (i % 8)) & 1 == 1).collect();
    bytes.zeroize();
    bits
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_net::mem_pair;
    use rand_core::SeedableRng;

    fn pair(seed: u8) -> (Sender, Receiver) {
        let (s, r) = base::insecure_dealer(KAPPA, &mut AesRng::from_seed([seed; 16]));
        (
            Sender::new_with_base(&r).unwrap(),
            Receiver::new_with_base(&s).unwrap(),
        )
    }

    #[test]
    fn correlated_ot_holds_at_boundaries() {
        for n in [
            0usize,
            1,
            127,
            128,
            129,
            CHUNK_OTS - 1,
            CHUNK_OTS + 1,
            3 * CHUNK_OTS + 5,
        ] {
            let (mut s, mut r) = pair(1);
            let (mut a, mut b) = mem_pair();
            let choices = random_bits(n, &mut AesRng::from_seed([2; 16]));
            let c2 = choices.clone();
            let t = std::thread::spawn(move || {
                let t = r.receive_correlated(&mut b, &c2).unwrap();
                (r, t)
            });
            let q = s.send_correlated(&mut a, n).unwrap();
            let (r, tt) = t.join().unwrap();
            assert_eq!(q.len(), n);
            for i in 0..n {
                let expect = if choices[i] { q[i] ^ s.delta() } else { q[i] };
                assert_eq!(tt[i], expect, "n={n} i={i}");
            }
            assert_eq!(s.count(), r.count());
        }
    }

    #[test]
    fn random_and_chosen_ots_match_across_calls() {
        let (mut s, mut r) = pair(3);
        let (mut a, mut b) = mem_pair();
        let sizes = [1usize, 200, 40_000];
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([4; 16]);
            let mut outs = Vec::new();
            for n in sizes {
                outs.push(r.receive_random_choices(&mut b, n, &mut rng).unwrap());
            }
            let ch = random_bits(300, &mut rng);
            let got = r.receive_chosen(&mut b, &ch).unwrap();
            (outs, ch, got)
        });
        let mut pairs = Vec::new();
        for n in sizes {
            pairs.push(s.send_random(&mut a, n).unwrap());
        }
        let msgs: Vec<[Block; 2]> = (0..300u128).map(|i| [Block(i), Block(i << 64)]).collect();
        s.send_chosen(&mut a, &msgs).unwrap();
        let (outs, ch, got) = t.join().unwrap();
        let mut seen = std::collections::HashSet::new();
        for (p, (c, m)) in pairs.iter().zip(&outs) {
            for i in 0..p.len() {
                assert_eq!(p[i][usize::from(c[i])], m[i]);
                assert_ne!(p[i][usize::from(!c[i])], m[i]);
                assert!(seen.insert(p[i][0]), "messages repeat across calls");
            }
        }
        for i in 0..300 {
            assert_eq!(got[i], msgs[i][usize::from(ch[i])]);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// For any size and choice bits: t_i = q_i ⊕ r_i·Δ, and random OT delivers m_{r_i}.
        #[test]
        fn correlation_law(n in 0usize..700, seed in proptest::prelude::any::<u8>()) {
            let (mut s, mut r) = pair(seed);
            let (mut a, mut b) = mem_pair();
            let ch = random_bits(n, &mut AesRng::from_seed([seed ^ 0x55; 16]));
            let c2 = ch.clone();
            let (q, pairs, t, m) = std::thread::scope(|sc| {
                let h = sc.spawn(|| {
                    let t = r.receive_correlated(&mut b, &c2).unwrap();
                    (t, r.receive_random(&mut b, &c2).unwrap())
                });
                let q = s.send_correlated(&mut a, n).unwrap();
                let p = s.send_random(&mut a, n).unwrap();
                let (t, m) = h.join().unwrap();
                (q, p, t, m)
            });
            for i in 0..n {
                let d = Block::broadcast_bit(Choice::from(u8::from(ch[i]))) & s.delta();
                proptest::prop_assert_eq!(t[i], q[i] ^ d);
                proptest::prop_assert_eq!(m[i], pairs[i][usize::from(ch[i])]);
            }
        }
    }

    #[test]
    fn split_children_are_independent_sessions() {
        let (mut s, mut r) = pair(6);
        let (mut sc, mut rc) = (s.split(), r.split());
        for (ss, rr) in [(&mut sc, &mut rc), (&mut s, &mut r)] {
            let (mut a, mut b) = mem_pair();
            let ch = random_bits(1000, &mut AesRng::from_seed([8; 16]));
            let c2 = ch.clone();
            let (pairs, got) = std::thread::scope(|sc| {
                let t = sc.spawn(move || rr.receive_random(&mut b, &c2).unwrap());
                (ss.send_random(&mut a, 1000).unwrap(), t.join().unwrap())
            });
            for i in 0..1000 {
                assert_eq!(pairs[i][usize::from(ch[i])], got[i]);
            }
        }
        assert_eq!(sc.delta(), s.delta());
        assert_eq!(s.count(), r.count());
    }

    /// Regression: a failed call left the sessions usable although their PRG streams had
    /// drifted apart (the receiver advances before sending, the sender only after a good
    /// message), so later OTs silently did not correlate. Now the session is `Aborted`.
    #[test]
    fn failed_call_aborts_the_session() {
        let (mut s, mut r) = pair(7);
        let (mut a, mut b) = mem_pair();
        b.send(&[0u8; 100]).unwrap();
        assert!(matches!(s.send_correlated(&mut a, 128), Err(Error::Net(_))));
        assert!(matches!(s.send_random(&mut a, 1), Err(Error::Aborted)));
        assert!(matches!(
            s.split().send_correlated(&mut a, 1),
            Err(Error::Aborted)
        ));
        drop(a);
        let ch = [true; 3];
        assert!(matches!(
            r.receive_correlated(&mut b, &ch),
            Err(Error::Net(_))
        ));
        assert!(matches!(r.receive_random(&mut b, &ch), Err(Error::Aborted)));
        assert!(matches!(r.receive_chosen(&mut b, &ch), Err(Error::Aborted)));
    }

    /// Regression: chosen-message OT did not latch. A masked-message frame of the wrong
    /// length (or one that timed out and arrived late) left the receiver usable, and its next
    /// `receive_chosen` read the stale frame as its own masked messages; a sender whose
    /// masked messages failed to go out went on too. Now both sessions are `Aborted`.
    #[test]
    fn failed_chosen_message_call_aborts_the_session() {
        let (mut s, mut r) = pair(8);
        let (mut a, mut b) = mem_pair();
        let ch = [true, false, true];
        std::thread::scope(|sc| {
            let t = sc.spawn(|| r.receive_chosen(&mut b, &ch));
            // The random-OT part of `send_chosen`, then a masked-message frame that is short.
            s.send_random(&mut a, ch.len()).unwrap();
            a.send(&[0u8; 40]).unwrap();
            assert!(matches!(t.join().unwrap(), Err(Error::Net(_))));
        });
        assert!(matches!(r.receive_chosen(&mut b, &ch), Err(Error::Aborted)));
        assert!(matches!(
            r.receive_correlated(&mut b, &ch),
            Err(Error::Aborted)
        ));
        // Sender: the receiver's columns arrive, then it hangs up before the masked messages.
        let (mut s, mut r) = pair(9);
        let (mut a, mut b) = mem_pair();
        r.receive_random(&mut b, &ch).unwrap();
        drop(b);
        let msgs = [[Block(1), Block(2)]; 3];
        assert!(matches!(s.send_chosen(&mut a, &msgs), Err(Error::Net(_))));
        let (mut a, _b) = mem_pair();
        assert!(matches!(s.send_chosen(&mut a, &msgs), Err(Error::Aborted)));
        assert!(matches!(s.send_correlated(&mut a, 1), Err(Error::Aborted)));
    }

    /// Regression: the 64-bit OT index (the hash tweak) was advanced with `+=`: after 2^24
    /// `split`s, or a call near the end of the index space, it overflowed (a panic with
    /// overflow checks, a wrap and repeated tweaks without). Now the session is aborted.
    #[test]
    fn exhausted_index_space_aborts_instead_of_wrapping() {
        let (mut s, mut r) = pair(10);
        s.count = u64::MAX - (1 << SPLIT_SPAN_LOG) + 1;
        r.count = s.count;
        let (mut sc, mut rc) = (s.split(), r.split());
        let (mut a, mut b) = mem_pair();
        for e in [
            s.send_correlated(&mut a, 1).map(|_| ()),
            sc.send_random(&mut a, 1).map(|_| ()),
            r.receive_correlated(&mut b, &[true]).map(|_| ()),
            rc.receive_random(&mut b, &[true]).map(|_| ()),
        ] {
            assert!(matches!(e, Err(Error::Aborted)), "{e:?}");
        }
        // A call that would run past the end is refused (and ends the session).
        let (mut s, mut r) = pair(11);
        s.count = u64::MAX - 256;
        r.count = s.count;
        assert!(matches!(
            s.send_correlated(&mut a, 257),
            Err(Error::LimitExceeded { .. })
        ));
        assert!(matches!(s.send_correlated(&mut a, 1), Err(Error::Aborted)));
        assert!(matches!(
            r.receive_correlated(&mut b, &[false; 257]),
            Err(Error::LimitExceeded { .. })
        ));
        // The last 256 indices are still usable.
        let (mut s, mut r) = pair(12);
        s.count = u64::MAX - 256;
        r.count = s.count;
        let t = std::thread::spawn(move || r.receive_correlated(&mut b, &[true; 256]).unwrap());
        let q = s.send_correlated(&mut a, 256).unwrap();
        let tt = t.join().unwrap();
        assert!(q.iter().zip(&tt).all(|(q, t)| *t == *q ^ s.delta()));
    }

    /// Regression: the transposition rows (`q^j` on the sender, `t^j` on the receiver) stayed
    /// in the session after a call until it was dropped, and were freed unwiped when a larger
    /// call grew them. Now they are wiped at the end of every call.
    #[test]
    fn correlation_rows_are_wiped_after_every_call() {
        let (mut s, mut r) = pair(13);
        let (mut a, mut b) = mem_pair();
        let ch = random_bits(300, &mut AesRng::from_seed([14; 16]));
        let t = std::thread::spawn(move || {
            r.receive_correlated(&mut b, &ch).unwrap();
            r
        });
        s.send_correlated(&mut a, 300).unwrap();
        let r = t.join().unwrap();
        for rows in [&s.rows, &r.rows, &r.tmp] {
            assert!(rows.iter().all(|b| *b == Block::ZERO), "rows kept");
        }
    }

    #[test]
    fn hostile_receiver_message_is_an_error() {
        let (mut s, _) = pair(5);
        let (mut a, mut b) = mem_pair();
        b.send(&[0u8; 100]).unwrap();
        assert!(matches!(s.send_correlated(&mut a, 128), Err(Error::Net(_))));
        assert!(matches!(
            Sender::new_with_base(&base::insecure_dealer(127, &mut AesRng::from_seed([0; 16])).1),
            Err(Error::InvalidArgument(_))
        ));
    }
}
