//! The KKRT16 batched oblivious PRF: 1-out-of-∞ OT from a 512-bit pseudorandom code.
//!
//! # Protocol ([KKRT16], §3–4)
//!
//! Width `w = 512` bits (4 blocks). Pseudorandom code `C(x) = AES_{k_0}(x) ‖ AES_{k_1}(x) ‖
//! AES_{k_2}(x) ‖ AES_{k_3}(x)` for 128-bit inputs `x`, with four AES keys expanded from a
//! code seed the sender picks and sends at setup (the PRC of [KKRT16, §4.2] instantiated
//! with AES, as libOTe and SecretFlow do; 512 output bits is the paper's choice for
//! κ = 128 against a semi-honest receiver).
//!
//! Setup: 512 base OTs with reversed roles. The OPRF **sender** picks `s ∈ {0,1}^512` and is
//! the base-OT **receiver** with choice bits `s` (it holds `k_j^{s_j}`); the OPRF
//! **receiver** is the base-OT sender (it holds `k_j^0, k_j^1`).
//!
//! Batch of `m` instances, receiver inputs `r_0 … r_{m−1}` (one message receiver → sender,
//! `64·m` bytes):
//!
//! - receiver: `t^j = G(k_j^0)`, sends `u^j = t^j ⊕ G(k_j^1) ⊕ c^j` where `c^j` is column
//!   `j` of the `m × 512` matrix with rows `C(r_i)`;
//! - sender: `q^j = G(k_j^{s_j}) ⊕ s_j·u^j`, so after transposition
//!   `q_i = t_i ⊕ (C(r_i) ∧ s)`.
//!
//! The PRF of instance `i` is `F_i(x) = H(i, q_i ⊕ (C(x) ∧ s))`; the receiver's output is
//! `H(i, t_i) = F_i(r_i)`. For `x ≠ r_i` the value `q_i ⊕ (C(x) ∧ s) = t_i ⊕ ((C(x) ⊕ C(r_i))
//! ∧ s)` differs from `t_i` by a mask of about 256 unknown bits of `s`, so `F_i(x)` looks
//! random to the receiver.
//!
//! `H(i, y_0‖y_1‖y_2‖y_3) = ⊕_g tccr(4i + g, y_g)` — the sum of the tweakable
//! circular-correlation-robust hashes of [GKWW20] over the four blocks, each with its own
//! tweak (libOTe's AES-hash mode of KKRT sums fixed-key hashes of the blocks the same way;
//! adding the tweak separates instances). `i` is a global instance index that keeps
//! counting across batches of one session, so one setup serves any number of batches (PSI
//! buckets) and tweaks never repeat.
//!
//! Inputs are 128-bit blocks: callers hash longer items to a [`Block`] first (with
//! `obliv_core::hash::ro_hash_block` and a domain of their own).
//!
//! # Security and leakage
//!
//! Semi-honest security in the random-oracle / correlation-robust model, as proved in
//! [KKRT16, §4] for a PRC of this width, given secure base OTs ([`crate::base`]). The receiver
//! learns `F_i(r_i)` only; the sender learns nothing about the `r_i`. Not secure against a
//! malicious receiver (it could send inconsistent columns to learn bits of `s`), as in the
//! paper. The sender's [`KkrtSenderKey`] lets it evaluate `F_i` on any number of points —
//! that is what PSI needs, and the reason a sender must never reveal raw evaluations beyond
//! what the protocol using them allows.
//!
//! # Hostile peers
//!
//! The batch size `n` of [`KkrtSender::send`] may come from the peer (a PSI receiver
//! announces its table size). The sender checks it against its agreed maximum
//! ([`KkrtSender::set_max_batch`], [`Error::LimitExceeded`]) and then allocates the key
//! chunk by chunk as the receiver's columns arrive — 64 bytes kept per 64 bytes received —
//! so announcing a large batch and sending nothing costs the
//! sender nothing. Buffers that held key material are wiped on every exit.
//!
//! [KKRT16]: https://eprint.iacr.org/2016/799
//! [GKWW20]: https://eprint.iacr.org/2019/074

use obliv_core::transpose::{transpose_128_rows, transpose_blocks_to_rows};
use obliv_core::{Aes, Block, Prg};
use obliv_net::{Channel, ChannelExt};
use rand_core::CryptoRng;
use subtle::Choice;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::base::{self, ReceiverBaseOts, SenderBaseOts};
use crate::error::{Error, Result, guarded};

/// Code width in bits (and the number of base OTs).
pub const CODE_BITS: usize = 512;
/// Code width in blocks.
pub const CODE_BLOCKS: usize = CODE_BITS / 128;
/// Instances per chunk message (`64 · CHUNK` = 512 KiB per message).
pub const CHUNK: usize = 1 << 13;
/// Most instances per batch by default (2^36: a guard against overflow, far beyond memory);
/// a sender can lower it with [`KkrtSender::set_max_batch`].
pub const MAX_BATCH: usize = 1 << 36;

/// The pseudorandom code `C(x) = AES_{k_0}(x) ‖ … ‖ AES_{k_3}(x)`.
#[derive(Clone)]
struct Prc {
    aes: [Aes; CODE_BLOCKS],
}

impl Prc {
    fn new(seed: Block) -> Self {
        let mut prg = Prg::new(seed);
        let mut keys = [Block::ZERO; CODE_BLOCKS];
        prg.fill_blocks(&mut keys);
        let aes = keys.map(Aes::new);
        keys.zeroize();
        Prc { aes }
    }

    /// `out[i] = block g of C(xs[i])`.
    fn encode_group(&self, g: usize, xs: &[Block], out: &mut [Block]) {
        self.aes[g].encrypt_blocks_into(xs, out);
    }
}

/// `out[p] = ⊕_g tccr(4·(first + p) + g, y[p][g])`, batched: `H` of the module docs.
fn hash_rows(first: u64, ys: &[[Block; CODE_BLOCKS]], out: &mut [Block]) {
    hash_rows_with(ys, out, |p| first + p as u64);
}

/// `out[p] = H(index(p), ys[p])`.
fn hash_rows_with(ys: &[[Block; CODE_BLOCKS]], out: &mut [Block], index: impl Fn(usize) -> u64) {
    const B: usize = 64;
    let pi = Aes::fixed();
    let mut a = [Block::ZERO; B * CODE_BLOCKS];
    let mut b = [Block::ZERO; B * CODE_BLOCKS];
    for (c, (ych, och)) in ys.chunks(B).zip(out.chunks_mut(B)).enumerate() {
        let n = ych.len() * CODE_BLOCKS;
        a[..n].copy_from_slice(bytemuck_flat(ych));
        pi.encrypt_blocks(&mut a[..n]); // π(y)
        for (p, (bb, aa)) in b[..n].iter_mut().zip(&a[..n]).enumerate() {
            let inst = u128::from(index(c * B + p / CODE_BLOCKS));
            *bb = *aa ^ Block(inst * CODE_BLOCKS as u128 + (p % CODE_BLOCKS) as u128);
        }
        pi.encrypt_blocks(&mut b[..n]); // π(π(y) ⊕ tweak)
        for (k, o) in och.iter_mut().enumerate() {
            let mut acc = Block::ZERO;
            for g in 0..CODE_BLOCKS {
                let p = k * CODE_BLOCKS + g;
                acc ^= a[p] ^ b[p];
            }
            *o = acc;
        }
    }
    a.zeroize();
    b.zeroize();
}

/// Flattens `[[Block; 4]]` into `[Block]` (same memory).
fn bytemuck_flat(ys: &[[Block; CODE_BLOCKS]]) -> &[Block] {
    ys.as_flattened()
}

/// The OPRF sender's state for a session: `s`, its seeds and the code.
///
/// Zeroized on drop; `Debug` prints no secret.
pub struct KkrtSender {
    s: [Block; CODE_BLOCKS],
    prgs: Vec<Prg>,
    prc: Prc,
    count: u64,
    max_batch: usize,
    /// Left set by a failed batch: the session then refuses every batch ([`Error::Aborted`]).
    aborted: bool,
}

/// The OPRF receiver's state for a session: the seed pairs and the code.
///
/// Zeroized on drop; `Debug` prints no secret.
pub struct KkrtReceiver {
    prgs: Vec<[Prg; 2]>,
    prc: Prc,
    count: u64,
    /// Left set by a failed batch: the session then refuses every batch ([`Error::Aborted`]).
    aborted: bool,
}

/// The sender's key for one batch of `n` OPRF instances: evaluates `F_i(x)` for any `x`.
///
/// Zeroized on drop; `Debug` prints no secret.
pub struct KkrtSenderKey {
    s: [Block; CODE_BLOCKS],
    /// `q_i` is `q[i / CHUNK][i % CHUNK]`: one allocation per received chunk.
    q: Vec<Vec<[Block; CODE_BLOCKS]>>,
    len: usize,
    prc: Prc,
    first: u64,
}

impl core::fmt::Debug for KkrtSender {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "KkrtSender {{ count: {} }}", self.count)
    }
}
impl core::fmt::Debug for KkrtReceiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "KkrtReceiver {{ count: {} }}", self.count)
    }
}
impl core::fmt::Debug for KkrtSenderKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "KkrtSenderKey {{ instances: {}, first: {} }}",
            self.len, self.first
        )
    }
}
impl Drop for KkrtSender {
    fn drop(&mut self) {
        self.s.zeroize();
    }
}
impl ZeroizeOnDrop for KkrtSender {}
impl Drop for KkrtSenderKey {
    fn drop(&mut self) {
        self.s.zeroize();
        self.q.zeroize();
    }
}
impl ZeroizeOnDrop for KkrtSenderKey {}

/// Checks that a batch of `n` instances (padding included) fits the session's instance index
/// space starting at `count` (the index is a hash tweak and must never wrap).
fn check_index_room(count: u64, n: usize) -> Result<()> {
    let total = u64::try_from(n.div_ceil(128) * 128).unwrap_or(u64::MAX);
    if count.checked_add(total).is_none() {
        return Err(Error::LimitExceeded {
            field: "instance index of the session (instances so far) for a batch of this size",
            got: count,
            max: u64::MAX - total,
        });
    }
    Ok(())
}

fn check_batch(n: usize, max: usize) -> Result<()> {
    if n > max {
        return Err(Error::LimitExceeded {
            field: "n (OPRF instances in one batch)",
            got: n as u64,
            max: max as u64,
        });
    }
    Ok(())
}

impl KkrtSender {
    /// Runs the 512 base OTs (as their receiver, choice bits `s`) and sends the code seed.
    /// The peer runs [`KkrtReceiver::setup`].
    pub fn setup<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        channel: &mut C,
        rng: &mut R,
    ) -> Result<Self> {
        // The choice bits are `s`: wiped on every exit.
        let choices = Zeroizing::new(crate::iknp::random_bits(CODE_BITS, rng));
        let base = base::receive_random(channel, &choices, rng)?;
        let code_seed = Block::random(rng);
        channel.send_value(&code_seed)?;
        channel.flush()?;
        Self::new_with_base(&base, code_seed)
    }

    /// A sender from 512 base OTs in which it was the **receiver** (choice bits = `s`), and
    /// the code seed both parties use.
    pub fn new_with_base(base: &ReceiverBaseOts, code_seed: Block) -> Result<Self> {
        if base.len() != CODE_BITS || base.choices.len() != CODE_BITS {
            return Err(Error::InvalidArgument(format!(
                "KKRT sender needs {CODE_BITS} base OTs, got {}",
                base.len()
            )));
        }
        let mut s = [Block::ZERO; CODE_BLOCKS];
        crate::iknp::pack_bits(&base.choices, &mut s);
        Ok(KkrtSender {
            s,
            prgs: base.messages.iter().map(|&k| Prg::new(k)).collect(),
            prc: Prc::new(code_seed),
            count: 0,
            max_batch: MAX_BATCH,
            aborted: false,
        })
    }

    /// Sets the most instances [`KkrtSender::send`] accepts in one batch (at most
    /// [`MAX_BATCH`]; children from [`KkrtSender::split`] inherit it). A caller whose batch
    /// size comes from the peer (a PSI receiver's table size) sets the bound it agreed to;
    /// a larger `n` is [`Error::LimitExceeded`] before anything is allocated.
    pub fn set_max_batch(&mut self, max: usize) {
        self.max_batch = max.min(MAX_BATCH);
    }

    /// The most instances one batch accepts (see [`KkrtSender::set_max_batch`]).
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// A new, independent OPRF sender (same `s` and code) for the same peer, without new base OTs: its seeds are
    /// the next block of each of this one's PRG streams; it continues this one's OT index
    /// while this one skips 2^40 ahead. (After nested splits an index can recur in two
    /// sessions; that is harmless because their seeds are independent — TCCR security
    /// [GKWW20, Def. 4] allows one tweak on different inputs.) The peer
    /// must call `split` on its side at the same point; the two children then run in
    /// lock step with each other (e.g. on another thread over a sub-channel) while the
    /// parents go on independently. This is how PSI buckets run concurrently on one set of
    /// base OTs.
    ///
    /// If this session's 64-bit instance index cannot skip 2^40 ahead any more, both this
    /// session and the child are aborted (every batch is [`Error::Aborted`]): the indices are
    /// hash tweaks and must not wrap around.
    pub fn split(&mut self) -> Self {
        let prgs = self
            .prgs
            .iter_mut()
            .map(|p| Prg::new(p.next_block()))
            .collect();
        let mut child = KkrtSender {
            s: self.s,
            prgs,
            prc: self.prc.clone(),
            count: self.count,
            max_batch: self.max_batch,
            aborted: self.aborted,
        };
        if !crate::iknp::advance_for_split(&mut self.count) {
            self.aborted = true;
            child.aborted = true;
        }
        child
    }

    /// Instances produced so far in this session (padding included).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Runs one batch of `n` OPRF instances against the receiver's
    /// [`KkrtReceiver::receive`] with `n` inputs, and returns the key that evaluates them.
    pub fn send<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        n: usize,
    ) -> Result<KkrtSenderKey> {
        check_batch(n, self.max_batch)?;
        let mut aborted = self.aborted;
        let res = guarded(&mut aborted, || self.send_once(channel, n));
        self.aborted = aborted;
        res
    }

    fn send_once<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        n: usize,
    ) -> Result<KkrtSenderKey> {
        check_index_room(self.count, n)?;
        let first = self.count;
        // `q` gets one chunk of rows per chunk of the receiver's columns that arrives (64
        // bytes kept per 64 bytes received), never an allocation up front from `n`, which may
        // come from the peer. Every buffer holds key material and is wiped on every exit,
        // errors included.
        let mut q: Zeroizing<Vec<Vec<[Block; CODE_BLOCKS]>>> = Zeroizing::new(Vec::new());
        let mut u = Zeroizing::new(Vec::new());
        let mut g = Zeroizing::new(Vec::new());
        let mut cols = Zeroizing::new(Vec::new());
        let mut left = n;
        while left > 0 {
            let len = left.min(CHUNK);
            left -= len;
            let m = len.div_ceil(128) * 128;
            let w = m / 128;
            u.resize(CODE_BITS * w, Block::ZERO);
            g.resize(w, Block::ZERO);
            channel.recv_pod_into(&mut u[..CODE_BITS * w])?;
            for (j, prg) in self.prgs.iter_mut().enumerate() {
                let bit = (self.s[j / 128].0 >> (j % 128)) & 1;
                #[allow(clippy::cast_possible_truncation)] // a single bit
                let mask = Block::broadcast_bit(Choice::from(bit as u8));
                prg.fill_blocks(&mut g);
                for (r, gg) in u[j * w..(j + 1) * w].iter_mut().zip(g.iter()) {
                    *r = (*r & mask) ^ *gg;
                }
            }
            cols.resize(m, Block::ZERO);
            let mut piece = Zeroizing::new(vec![[Block::ZERO; CODE_BLOCKS]; len]);
            for grp in 0..CODE_BLOCKS {
                let rows = &u[grp * 128 * w..(grp + 1) * 128 * w];
                transpose_128_rows(Block::slice_as_bytes(rows), m, &mut cols)?;
                for (qi, c) in piece.iter_mut().zip(cols.iter()) {
                    qi[grp] = *c;
                }
            }
            q.push(core::mem::take(&mut *piece));
            self.count += m as u64;
        }
        Ok(KkrtSenderKey {
            s: self.s,
            q: core::mem::take(&mut *q),
            len: n,
            prc: self.prc.clone(),
            first,
        })
    }
}

impl KkrtReceiver {
    /// Runs the 512 base OTs as their sender and receives the code seed.
    /// The peer runs [`KkrtSender::setup`].
    pub fn setup<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        channel: &mut C,
        rng: &mut R,
    ) -> Result<Self> {
        let base = base::send_random(channel, CODE_BITS, rng)?;
        let code_seed: Block = channel.recv_value()?;
        Self::new_with_base(&base, code_seed)
    }

    /// A receiver from 512 base OTs in which it was the **sender**, and the code seed.
    pub fn new_with_base(base: &SenderBaseOts, code_seed: Block) -> Result<Self> {
        if base.len() != CODE_BITS {
            return Err(Error::InvalidArgument(format!(
                "KKRT receiver needs {CODE_BITS} base OTs, got {}",
                base.len()
            )));
        }
        Ok(KkrtReceiver {
            prgs: base
                .messages
                .iter()
                .map(|k| [Prg::new(k[0]), Prg::new(k[1])])
                .collect(),
            prc: Prc::new(code_seed),
            count: 0,
            aborted: false,
        })
    }

    /// A new, independent OPRF receiver (same code) for the same peer, without new base OTs: its seeds are
    /// the next block of each of this one's PRG streams; it continues this one's OT index
    /// while this one skips 2^40 ahead. (After nested splits an index can recur in two
    /// sessions; that is harmless because their seeds are independent — TCCR security
    /// [GKWW20, Def. 4] allows one tweak on different inputs.) The peer
    /// must call `split` on its side at the same point; the two children then run in
    /// lock step with each other (e.g. on another thread over a sub-channel) while the
    /// parents go on independently. This is how PSI buckets run concurrently on one set of
    /// base OTs.
    ///
    /// If this session's 64-bit instance index cannot skip 2^40 ahead any more, both this
    /// session and the child are aborted (see [`KkrtSender::split`]).
    pub fn split(&mut self) -> Self {
        let prgs = self
            .prgs
            .iter_mut()
            .map(|p| [Prg::new(p[0].next_block()), Prg::new(p[1].next_block())])
            .collect();
        let mut child = KkrtReceiver {
            prgs,
            prc: self.prc.clone(),
            count: self.count,
            aborted: self.aborted,
        };
        if !crate::iknp::advance_for_split(&mut self.count) {
            self.aborted = true;
            child.aborted = true;
        }
        child
    }

    /// Instances produced so far in this session (padding included).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Runs one batch: instance `i` gets input `inputs[i]`; returns `F_i(inputs[i])`.
    pub fn receive<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        inputs: &[Block],
    ) -> Result<Vec<Block>> {
        check_batch(inputs.len(), MAX_BATCH)?;
        let mut out = vec![Block::ZERO; inputs.len()];
        self.receive_into(channel, inputs, &mut out)?;
        Ok(out)
    }

    /// [`KkrtReceiver::receive`] into a caller's buffer (`out.len() == inputs.len()`).
    pub fn receive_into<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        inputs: &[Block],
        out: &mut [Block],
    ) -> Result<()> {
        check_batch(inputs.len(), MAX_BATCH)?;
        if out.len() != inputs.len() {
            return Err(Error::InvalidArgument(format!(
                "KKRT receive: {} inputs but an output buffer of {}",
                inputs.len(),
                out.len()
            )));
        }
        let mut aborted = self.aborted;
        let res = guarded(&mut aborted, || self.receive_once(channel, inputs, out));
        self.aborted = aborted;
        res
    }

    fn receive_once<C: Channel + ?Sized>(
        &mut self,
        channel: &mut C,
        inputs: &[Block],
        out: &mut [Block],
    ) -> Result<()> {
        check_index_room(self.count, inputs.len())?;
        // Inputs, codewords, PRG rows and outputs before hashing: wiped on every exit, errors
        // included (`u` is what is sent).
        let mut x = Zeroizing::new(Vec::new());
        let mut code = Zeroizing::new(Vec::new());
        let mut crow = Zeroizing::new(Vec::new());
        let mut t = Zeroizing::new(Vec::new());
        let mut u = Vec::new();
        let mut g = Zeroizing::new(Vec::new());
        let mut cols = Zeroizing::new(Vec::new());
        let mut tq: Zeroizing<Vec<[Block; CODE_BLOCKS]>> = Zeroizing::new(Vec::new());
        let mut index = self.count;
        for (ins, outs) in inputs.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let m = ins.len().div_ceil(128) * 128;
            let w = m / 128;
            // Sized first and then filled: growing a vector that already held inputs would
            // free the old buffer unwiped (the first chunk is the largest, so this allocates
            // once).
            x.clear();
            x.resize(m, Block::ZERO);
            x[..ins.len()].copy_from_slice(ins);
            code.resize(m, Block::ZERO);
            crow.resize(CODE_BITS * w, Block::ZERO);
            for grp in 0..CODE_BLOCKS {
                self.prc.encode_group(grp, &x, &mut code);
                transpose_blocks_to_rows(
                    &code,
                    Block::slice_as_bytes_mut(&mut crow[grp * 128 * w..(grp + 1) * 128 * w]),
                )?;
            }
            t.resize(CODE_BITS * w, Block::ZERO);
            u.resize(CODE_BITS * w, Block::ZERO);
            g.resize(w, Block::ZERO);
            for (j, prg) in self.prgs.iter_mut().enumerate() {
                let tj = &mut t[j * w..(j + 1) * w];
                prg[0].fill_blocks(tj);
                prg[1].fill_blocks(&mut g);
                for (((uu, tt), gg), cc) in u[j * w..(j + 1) * w]
                    .iter_mut()
                    .zip(tj.iter())
                    .zip(g.iter())
                    .zip(&crow[j * w..(j + 1) * w])
                {
                    *uu = *tt ^ *gg ^ *cc;
                }
            }
            channel.send_pod(&u[..CODE_BITS * w])?;
            cols.resize(m, Block::ZERO);
            tq.resize(ins.len(), [Block::ZERO; CODE_BLOCKS]);
            for grp in 0..CODE_BLOCKS {
                let rows = &t[grp * 128 * w..(grp + 1) * 128 * w];
                transpose_128_rows(Block::slice_as_bytes(rows), m, &mut cols)?;
                for (ti, c) in tq.iter_mut().zip(cols.iter()) {
                    ti[grp] = *c;
                }
            }
            hash_rows(index, &tq, outs);
            index += m as u64;
        }
        self.count = index;
        channel.flush()?;
        Ok(())
    }
}

impl KkrtSenderKey {
    /// Number of instances in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check_index(&self, i: usize) -> Result<()> {
        if i >= self.len {
            return Err(Error::InvalidArgument(format!(
                "OPRF instance {i} out of a batch of {}",
                self.len
            )));
        }
        Ok(())
    }

    /// `F_i(x)`: the PRF of instance `i` (`0 ≤ i < len`) on any input `x`.
    pub fn eval(&self, i: usize, x: Block) -> Result<Block> {
        let mut out = [Block::ZERO];
        self.eval_batch(&[i], &[x], &mut out)?;
        Ok(out[0])
    }

    /// `out[k] = F_{indices[k]}(inputs[k])`, with the AES work batched (the form PSI uses:
    /// one entry per (bin, item) pair of the simple-hashing table).
    pub fn eval_batch(&self, indices: &[usize], inputs: &[Block], out: &mut [Block]) -> Result<()> {
        if indices.len() != inputs.len() || out.len() != inputs.len() {
            return Err(Error::InvalidArgument(format!(
                "KKRT eval_batch: {} indices, {} inputs, {} outputs",
                indices.len(),
                inputs.len(),
                out.len()
            )));
        }
        // Every index is checked before any key material is touched, so an error leaves no
        // unwiped scratch behind.
        for &i in indices {
            self.check_index(i)?;
        }
        const B: usize = 256;
        let mut code = [Block::ZERO; B];
        let mut ys = [[Block::ZERO; CODE_BLOCKS]; B];
        for ((idx, xs), os) in indices
            .chunks(B)
            .zip(inputs.chunks(B))
            .zip(out.chunks_mut(B))
        {
            let n = xs.len();
            for grp in 0..CODE_BLOCKS {
                self.prc.encode_group(grp, xs, &mut code[..n]);
                for ((y, c), &i) in ys[..n].iter_mut().zip(&code[..n]).zip(idx) {
                    y[grp] = self.q[i / CHUNK][i % CHUNK][grp] ^ (*c & self.s[grp]);
                }
            }
            hash_rows_with(&ys[..n], os, |p| self.first + idx[p] as u64);
        }
        code.zeroize();
        ys.zeroize();
        Ok(())
    }

    /// `F_i(x)` for every `x` in `xs` (one bin of a simple-hashing table).
    pub fn eval_many(&self, i: usize, xs: &[Block]) -> Result<Vec<Block>> {
        let idx = vec![i; xs.len()];
        let mut out = vec![Block::ZERO; xs.len()];
        self.eval_batch(&idx, xs, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_net::mem_pair;
    use rand_core::SeedableRng;

    fn pair(seed: u8) -> (KkrtSender, KkrtReceiver) {
        let (s, r) = base::insecure_dealer(CODE_BITS, &mut AesRng::from_seed([seed; 16]));
        let code = Block(u128::from(seed) * 77);
        (
            KkrtSender::new_with_base(&r, code).unwrap(),
            KkrtReceiver::new_with_base(&s, code).unwrap(),
        )
    }

    fn inputs(n: usize, seed: u8) -> Vec<Block> {
        let mut rng = AesRng::from_seed([seed; 16]);
        (0..n).map(|_| Block::random(&mut rng)).collect()
    }

    #[test]
    fn receiver_outputs_match_sender_eval() {
        let (mut s, mut r) = pair(1);
        let (mut a, mut b) = mem_pair();
        let sizes = [0usize, 1, 127, 128, 129, CHUNK + 3];
        let t = std::thread::spawn(move || {
            sizes
                .iter()
                .enumerate()
                .map(|(k, &n)| {
                    let xs = inputs(n, u8::try_from(k).unwrap());
                    let ys = r.receive(&mut b, &xs).unwrap();
                    (xs, ys)
                })
                .collect::<Vec<_>>()
        });
        let keys: Vec<_> = sizes.iter().map(|&n| s.send(&mut a, n).unwrap()).collect();
        let got = t.join().unwrap();
        let mut all = std::collections::HashSet::new();
        for (key, (xs, ys)) in keys.iter().zip(&got) {
            assert_eq!(key.len(), xs.len());
            for i in 0..xs.len() {
                assert_eq!(key.eval(i, xs[i]).unwrap(), ys[i]);
                assert_ne!(key.eval(i, xs[i] ^ Block::ONE).unwrap(), ys[i]);
                if i > 0 {
                    assert_ne!(key.eval(i - 1, xs[i]).unwrap(), ys[i]);
                }
                assert!(all.insert(ys[i]));
            }
            let idx: Vec<usize> = (0..xs.len()).rev().collect();
            let xr: Vec<Block> = xs.iter().rev().copied().collect();
            let mut out = vec![Block::ZERO; xs.len()];
            key.eval_batch(&idx, &xr, &mut out).unwrap();
            let yr: Vec<Block> = ys.iter().rev().copied().collect();
            assert_eq!(out, yr);
        }
        let k = &keys[2];
        assert!(k.eval(127, Block::ZERO).is_err());
        assert!(k.eval_batch(&[0], &[], &mut []).is_err());
    }

    #[test]
    fn split_sessions_run_concurrently() {
        let (mut s, mut r) = pair(3);
        let (mut s1, mut r1) = (s.split(), r.split());
        let (s2, r2) = (s.split(), r.split());
        let mut handles = Vec::new();
        for (k, (mut ss, mut rr)) in [(s1.split(), r1.split()), (s2, r2)].into_iter().enumerate() {
            handles.push(std::thread::spawn(move || {
                let (mut a, mut b) = mem_pair();
                let xs = inputs(300, 40 + u8::try_from(k).unwrap());
                let t = std::thread::spawn(move || rr.receive(&mut b, &xs).map(|y| (xs, y)));
                let key = ss.send(&mut a, 300).unwrap();
                let (xs, ys) = t.join().unwrap().unwrap();
                for i in 0..300 {
                    assert_eq!(key.eval(i, xs[i]).unwrap(), ys[i]);
                }
                ys
            }));
        }
        // The parents (and the first child) still work after splitting.
        for (ss, rr) in [(&mut s, &mut r), (&mut s1, &mut r1)] {
            let (mut a, mut b) = mem_pair();
            let xs = inputs(50, 60);
            let x2 = xs.clone();
            let key = std::thread::scope(|sc| {
                let t = sc.spawn(move || rr.receive(&mut b, &x2).unwrap());
                let key = ss.send(&mut a, 50).unwrap();
                (key, t.join().unwrap())
            });
            for i in 0..50 {
                assert_eq!(key.0.eval(i, xs[i]).unwrap(), key.1[i]);
            }
        }
        let outs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_ne!(outs[0], outs[1]);
    }

    /// Regression: after a failed batch (here a short message from the peer, after which the
    /// two sides' PRG streams no longer agree) the sessions went on and produced keys and
    /// outputs that silently did not match. Now every later batch is `Aborted`, in children
    /// from `split` too.
    #[test]
    fn failed_batch_aborts_the_session() {
        let (mut s, mut r) = pair(4);
        let (mut a, mut b) = mem_pair();
        b.send(&[0u8; 64]).unwrap();
        assert!(matches!(s.send(&mut a, 200), Err(Error::Net(_))));
        assert!(matches!(s.send(&mut a, 0), Err(Error::Aborted)));
        assert!(matches!(s.split().send(&mut a, 1), Err(Error::Aborted)));
        drop(a);
        assert!(matches!(
            r.receive(&mut b, &inputs(5, 1)),
            Err(Error::Net(_))
        ));
        assert!(matches!(r.receive(&mut b, &[]), Err(Error::Aborted)));
        assert!(matches!(
            r.split().receive(&mut b, &[]),
            Err(Error::Aborted)
        ));
    }

    /// Regression: the instance index was advanced with `+=`, so a split near the end of the
    /// 64-bit index space overflowed (a panic with overflow checks, repeated tweaks without).
    /// Now both sessions are aborted, and a batch that would run past the end is refused.
    #[test]
    fn exhausted_index_space_aborts_instead_of_wrapping() {
        let (mut s, mut r) = pair(5);
        s.count = u64::MAX - (1 << crate::iknp::SPLIT_SPAN_LOG) + 1;
        r.count = s.count;
        let (mut sc, mut rc) = (s.split(), r.split());
        let (mut a, mut b) = mem_pair();
        assert!(matches!(s.send(&mut a, 1), Err(Error::Aborted)));
        assert!(matches!(sc.send(&mut a, 1), Err(Error::Aborted)));
        assert!(matches!(
            r.receive(&mut b, &[Block(1)]),
            Err(Error::Aborted)
        ));
        assert!(matches!(
            rc.receive(&mut b, &[Block(1)]),
            Err(Error::Aborted)
        ));
        let (mut s, mut r) = pair(6);
        s.count = u64::MAX - 127;
        r.count = s.count;
        assert!(matches!(
            s.send(&mut a, 129),
            Err(Error::LimitExceeded { .. })
        ));
        assert!(matches!(
            r.receive(&mut b, &inputs(129, 1)),
            Err(Error::LimitExceeded { .. })
        ));
    }

    #[test]
    fn hostile_short_message_is_error() {
        let (mut s, _) = pair(2);
        let (mut a, mut b) = mem_pair();
        b.send(&[0u8; 64]).unwrap();
        assert!(matches!(s.send(&mut a, 200), Err(Error::Net(_))));
    }
}
