//! One silent extension: regular-noise multi-point VOLE from GGM trees (SPCOT with
//! correlated OT), the optional malicious consistency check, and dual-LPN compression.
//!
//! # Protocol (one extension to `k` outputs)
//!
//! Parameters ([`Params`]): noise length `N = t · size_per ≥ 2k`, `t` regions (one noise
//! position each, *regular* noise), trees of depth `h = ⌈log2 size_per⌉`.
//!
//! Base correlations, all under the sender's `Δ`:
//! - `t·h` correlated OTs `tᵢ = qᵢ ⊕ rᵢ·Δ` (receiver: bit `rᵢ`, block `tᵢ`; sender: `qᵢ`),
//!   `(+128` for the malicious check, packed into one GF(2^128) VOLE);
//! - GF(2^128) VOLE only: `t` base VOLEs `cᵢ = bᵢ + aᵢ·Δ` (`+1` for the malicious check).
//!
//! 1. R picks `αᵢ ∈ [0, size_per)` for every tree and sends the flips
//!    `e_{i,l} = r_{i,l} ⊕ ¬α_{i,l}` (derandomising the random COT choices into the path).
//! 2. S expands every tree from a random root, and for level `l` sends
//!    `M_b = K_b ⊕ H(q ⊕ (b ⊕ e)·Δ)` for `b ∈ {0, 1}`, where `K_b` is the XOR of the level's
//!    nodes of parity `b` and `H` the tweakable CCR hash ([`obliv_core::hash::tccr`]); R can
//!    open exactly `K_{¬α_l} = M_{¬α_l} ⊕ H(t)` [Ferret, Fig. 4 / BCG+19]. S also sends
//!    `dᵢ = Σ_j vᵢ[j] ⊕ Δ` (subfield) or `dᵢ = Σ_j vᵢ[j] ⊕ bᵢ` (GF(2^128)).
//! 3. R rebuilds every leaf but `αᵢ` and sets `wᵢ[αᵢ] = dᵢ ⊕ Σ_{j≠αᵢ} wᵢ[j] (⊕ cᵢ)`, so that
//!    `w = v ⊕ e·Δ` with `e` regular: `e[αᵢ] = 1` (subfield) or `aᵢ` (GF(2^128)).
//! 4. Malicious only [Ferret §5, libOTe `ferretMalCheck`]: R sends a random `X` and
//!    `s' = Σᵢ X^{posᵢ+1}·eᵢ ⊕ a*`; S answers `ro(Σ_j X^{j+1}·v[j] ⊕ b* ⊕ s'·Δ)`; R compares
//!    with `ro(Σ_j X^{j+1}·w[j] ⊕ c*)` and aborts on a mismatch. A cheating sender passes
//!    with probability about `N / 2^128`; an abort leaks at most one bit of the noise
//!    positions (selective failure), which the regular-LPN assumption tolerates.
//! 5. Both parties compress with the ExConv7x24 code: `B = G·v`, `A = G·e`, `C = G·w`.

use obliv_core::hash::{ro_hash, tccr_in_place};
use obliv_core::{Block, gf128};
use obliv_net::{Channel, ChannelExt};
use rand_core::CryptoRng;
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};
use zeroize::{Zeroize, Zeroizing};

use crate::code::{BlockPair, CodeField, ExConvCode, LpnCode, PSEUDO_MIN_DISTANCE};
use crate::error::{Error, Result};
use crate::ggm::{self, TreeShape, eq_mask};

/// Which correlation an extension produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Subfield VOLE: `A ∈ GF(2)^n`, `B, C ∈ GF(2^128)^n` (equivalently correlated OT).
    Subfield,
    /// VOLE over GF(2^128): `A, B, C ∈ GF(2^128)^n`.
    Field,
    /// Subfield VOLE with 64-bit values: `A ∈ GF(2^64)^n` (as `u64`, embedded into
    /// GF(2^128) by [`crate::embed64`]), `B, C ∈ GF(2^128)^n`. The noise values are 64-bit
    /// and the code is the binary ExConv code (GF(2)-linear, which is all the correlation
    /// needs).
    Subfield64,
}

/// Security against a malicious sender (the GGM consistency check) or semi-honest only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Security {
    /// Semi-honest: no check.
    #[default]
    SemiHonest,
    /// Malicious: the Ferret/libOTe consistency check on the GGM trees.
    Malicious,
}

/// The parameters of one extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// The correlation.
    pub kind: Kind,
    /// Outputs `k`.
    pub k: usize,
    /// Noise weight `t` (regions / trees).
    pub t: usize,
    /// Region size (leaves per tree).
    pub size_per: usize,
    /// Tree depth `⌈log2 size_per⌉`.
    pub depth: usize,
    /// Security.
    pub security: Security,
}

/// Bits of security the noise weight is chosen for.
pub const SECURITY_BITS: usize = 128;

/// The regular noise weight `t` for a code of length `n`, following libOTe's
/// `getRegNoiseWeight` (2025): the maximum of (i) the pseudo-distance bound
/// `⌈−64 / log2(1 − f·δ)⌉` with `δ` = [`PSEUDO_MIN_DISTANCE`] and `f = 2` for binary noise
/// (`f = q/(q−1) ≈ 1` for GF(2^128) noise, whose non-zero coefficient is uniform), (ii) the
/// algebraic-attack floor `t ≥ 128` (`⌈9·128/8⌉ = 144` for binary `n ≤ 2048`), and (iii) 40
/// (64 if `n < 512`), rounded up to a multiple of 8.
/// Subfield VOLE: `t = 128` for `n > 2048`; GF(2^128) VOLE: `t = 280`.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // small positive values
pub fn noise_weight(kind: Kind, n: usize) -> usize {
    let f = match kind {
        Kind::Subfield => 2.0,
        Kind::Field | Kind::Subfield64 => 1.0,
    };
    let pseudo = (-64.0 / (1.0 - f * PSEUDO_MIN_DISTANCE).log2()).ceil() as usize;
    let attack = if kind == Kind::Subfield && n <= 2048 {
        (SECURITY_BITS * 9).div_ceil(8)
    } else {
        SECURITY_BITS
    };
    let mut t = pseudo.max(attack).max(40);
    if n < 512 {
        t = t.max(64);
    }
    t.next_multiple_of(8)
}

impl Params {
    /// Parameters for `k` outputs: `N = t · size_per ≥ 2k` (rate ≤ 1/2), `size_per` even
    /// and at least 4. For `k` beyond what a generator can run (`2k` or `N` above
    /// `usize::MAX`) the sizes saturate instead of overflowing.
    pub fn new(kind: Kind, k: usize, security: Security) -> Self {
        let base = k.saturating_mul(2).max(2);
        let t = noise_weight(kind, base);
        let size_per = base.div_ceil(t).next_multiple_of(2).max(4);
        let depth = obliv_core::log2_ceil(size_per as u64) as usize;
        Params {
            kind,
            k,
            t,
            size_per,
            depth,
            security,
        }
    }

    /// Noise length `N = t · size_per`.
    pub fn n(&self) -> usize {
        self.t.saturating_mul(self.size_per)
    }

    /// Correlated OTs (with the VOLE's Δ) this extension consumes.
    pub fn cots_needed(&self) -> usize {
        let check = match (self.security, self.kind) {
            (Security::Malicious, Kind::Subfield | Kind::Subfield64) => 128,
            _ => 0,
        };
        self.t.saturating_mul(self.depth).saturating_add(check)
    }

    /// GF(2^128) base VOLEs this extension consumes (0 for subfield VOLE).
    pub fn voles_needed(&self) -> usize {
        match (self.kind, self.security) {
            (Kind::Subfield, _) => 0,
            (Kind::Field | Kind::Subfield64, Security::SemiHonest) => self.t,
            (Kind::Subfield64, Security::Malicious) => self.t,
            (Kind::Field, Security::Malicious) => self.t + 1,
        }
    }

    fn shape(&self) -> TreeShape {
        TreeShape::new(self.t, self.size_per)
    }

    fn code(&self) -> ExConvCode {
        let field = match self.kind {
            Kind::Subfield | Kind::Subfield64 => CodeField::Gf2,
            Kind::Field => CodeField::Gf128,
        };
        ExConvCode::new(self.k, self.n(), field)
    }

    fn flip_bytes(&self) -> usize {
        (self.t * self.depth).div_ceil(8)
    }

    fn tree_msg_blocks(&self) -> usize {
        self.t * (2 * self.depth + 1)
    }
}

/// `x·X` in GF(2^128) (multiplication by the generator).
#[inline]
fn mul_x(v: Block) -> Block {
    let carry = v.0 >> 127;
    Block((v.0 << 1) ^ (0x87 & 0u128.wrapping_sub(carry)))
}

/// Packs 128 correlations `cⱼ = bⱼ + aⱼ·Δ` (`aⱼ` bits) into one GF(2^128) correlation
/// `Σ cⱼ·X^j = Σ bⱼ·X^j + (Σ aⱼ·X^j)·Δ`.
pub(crate) fn pack128(v: &[Block]) -> Block {
    debug_assert_eq!(v.len(), 128);
    pack_poly(v)
}

/// `Σ_j v[j]·X^j` for `v.len() ≤ 128` (Horner's rule with multiplications by `X`): packs
/// `len` correlations with bit values into one whose value has degree `< len`.
pub(crate) fn pack_poly(v: &[Block]) -> Block {
    debug_assert!(v.len() <= 128);
    v.iter().rev().fold(Block::ZERO, |acc, x| mul_x(acc) ^ *x)
}

/// The bits `aⱼ` packed as the GF(2^128) element `Σ aⱼ·X^j`.
pub(crate) fn pack_bits(bits: &[u8]) -> Block {
    debug_assert_eq!(bits.len(), 128);
    Block(
        bits.iter()
            .enumerate()
            .fold(0u128, |acc, (j, b)| acc | (u128::from(*b & 1) << j)),
    )
}

/// `Σ_j v[j]·X^{j+1}`: inner products of blocks of 1024 leaves with `X^1, …, X^1024`
/// (carry-less products summed unreduced, one reduction per block), combined by Horner's
/// rule in `X^1024`.
pub(crate) fn poly_hash(v: &[Block], x: Block) -> Block {
    const L: usize = 1024;
    let mut pows = Vec::with_capacity(L.min(v.len()));
    let mut p = x;
    for _ in 0..L.min(v.len()) {
        pows.push(p);
        p = gf128::mul(p, x);
    }
    let x_l = pows.last().copied().unwrap_or(Block::ONE); // X^L when there are ≥ 2 blocks
    v.chunks(L).rev().fold(Block::ZERO, |acc, chunk| {
        gf128::mul(acc, x_l) ^ gf128::inner_product(chunk, &pows[..chunk.len()])
    })
}

/// [`poly_hash`] of a vector fed in pieces, front to back: `Σ_c X^{1024·c}·⟨v_c, (X^1, …,
/// X^1024)⟩` over the blocks `v_c` of 1024 elements (the same value as Horner's rule from
/// the back). The pending partial block is zeroized when finished.
pub(crate) struct PolyHasher {
    pows: Vec<Block>,
    x_l: Block,
    x_pow: Block,
    acc: Block,
    pending: Vec<Block>,
}

impl PolyHasher {
    const L: usize = 1024;

    pub(crate) fn new(x: Block) -> Self {
        let mut pows = Vec::with_capacity(Self::L);
        let mut p = x;
        for _ in 0..Self::L {
            pows.push(p);
            p = gf128::mul(p, x);
        }
        PolyHasher {
            x_l: pows[Self::L - 1],
            pows,
            x_pow: Block::ONE,
            acc: Block::ZERO,
            pending: Vec::with_capacity(Self::L),
        }
    }

    fn add_block(&mut self, b: &[Block]) {
        let ip = gf128::inner_product(b, &self.pows[..b.len()]);
        self.acc ^= gf128::mul(self.x_pow, ip);
        self.x_pow = gf128::mul(self.x_pow, self.x_l);
    }

    /// Appends `v` to the hashed vector.
    pub(crate) fn feed(&mut self, mut v: &[Block]) {
        if !self.pending.is_empty() {
            let take = (Self::L - self.pending.len()).min(v.len());
            self.pending.extend_from_slice(&v[..take]);
            v = &v[take..];
            if self.pending.len() == Self::L {
                let p = core::mem::take(&mut self.pending);
                self.add_block(&p);
                self.pending = p;
                self.pending.zeroize();
            }
        }
        let mut blocks = v.chunks_exact(Self::L);
        for b in &mut blocks {
            self.add_block(b);
        }
        self.pending.extend_from_slice(blocks.remainder());
    }

    /// The hash of everything fed.
    pub(crate) fn finish(mut self) -> Block {
        if !self.pending.is_empty() {
            let p = core::mem::take(&mut self.pending);
            let ip = gf128::inner_product(&p, &self.pows[..p.len()]);
            self.acc ^= gf128::mul(self.x_pow, ip);
            self.pending = p;
            self.pending.zeroize();
        }
        self.acc
    }
}

/// `x^e` in constant time for `e < 2^48`.
fn pow_ct(x: Block, e: u64) -> Block {
    let mut acc = Block::ONE;
    for i in (0..48).rev() {
        acc = gf128::square(acc);
        let m = gf128::mul(acc, x);
        #[allow(clippy::cast_possible_truncation)] // a single bit
        let bit = Choice::from(((e >> i) & 1) as u8);
        acc = Block::conditional_select(&acc, &m, bit);
    }
    acc
}

const CHECK_DOMAIN: &str = "obliv-vole ggm consistency check v1";

/// Sender side of one extension: returns `B` (length `params.k`).
///
/// `cots` are the sender's COT values `qᵢ` (at least [`Params::cots_needed`]), `voles` its
/// base VOLE values `bᵢ` (at least [`Params::voles_needed`]). `tweak` must differ between
/// extensions that use the same `Δ` (the generators count extensions).
#[allow(clippy::too_many_arguments)]
pub(crate) fn send<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    params: &Params,
    delta: Block,
    cots: &[Block],
    voles: &[Block],
    tweak: u64,
    rng: &mut R,
) -> Result<Vec<Block>> {
    let mut v = Vec::new();
    send_into(ch, params, delta, cots, voles, tweak, rng, &mut v)?;
    v.truncate(params.k);
    Ok(v)
}

/// Empties a working buffer that will be refilled by appending `n` elements: keeps it if it
/// has room (its old contents are all overwritten), so that a buffer kept from the previous
/// extension costs neither page faults nor a memset, else replaces it by a fresh one on huge
/// pages ([`obliv_core::mem::huge_vec`]), never zero-filled: the appends are the first touch.
pub(crate) fn prepare_empty<T: Zeroize>(buf: &mut Vec<T>, n: usize) {
    if buf.capacity() < n {
        // The old contents may be secret.
        buf.zeroize();
        *buf = obliv_core::mem::huge_vec(n);
    }
    buf.clear();
}

/// [`send`] into a caller's buffer: on success `v[..params.k]` is `B` (`v.len() ==
/// params.n()`, the rest is scratch). `v` may hold anything on entry.
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    params: &Params,
    delta: Block,
    cots: &[Block],
    voles: &[Block],
    tweak: u64,
    rng: &mut R,
    v: &mut Vec<Block>,
) -> Result<()> {
    check_base("correlated OTs", params.cots_needed(), cots.len())?;
    check_base("base VOLEs", params.voles_needed(), voles.len())?;
    let shape = params.shape();
    let th = params.t * params.depth;

    // 1. The receiver's flips.
    let flips = ch.recv_pod_exact::<u8>(params.flip_bytes())?;

    // 2. Expand and mask the level sums.
    let mut roots: Vec<Block> = (0..params.t).map(|_| Block::random(rng)).collect();
    prepare_empty(v, params.n());
    let mut sums = ggm::expand_full_with(&shape, &roots, |t0, leaves| {
        debug_assert_eq!(v.len(), t0 * params.size_per);
        v.extend_from_slice(leaves);
    });
    // The roots and both level sums of every level are the sender's secrets.
    roots.zeroize();
    let first_tweak = u128::from(tweak) << 64;
    let mut h0 = cots[..th].to_vec();
    let mut h1: Vec<Block> = h0.iter().map(|q| *q ^ delta).collect();
    tccr_in_place(first_tweak, &mut h0);
    tccr_in_place(first_tweak, &mut h1);
    let mut msg = Vec::with_capacity(params.tree_msg_blocks());
    for i in 0..th {
        let e = (flips[i / 8] >> (i % 8)) & 1;
        // mask for K_b is H(q ⊕ (b ⊕ e)Δ): h0 if b == e.
        let (m0, m1) = if e == 0 {
            (h0[i], h1[i])
        } else {
            (h1[i], h0[i])
        };
        msg.push(sums[i][0] ^ m0);
        msg.push(sums[i][1] ^ m1);
    }
    for tree in 0..params.t {
        let last = sums[tree * params.depth + params.depth - 1];
        let share = match params.kind {
            Kind::Subfield => delta,
            Kind::Field | Kind::Subfield64 => voles[tree],
        };
        msg.push(last[0] ^ last[1] ^ share);
    }
    h0.zeroize();
    h1.zeroize();
    sums.iter_mut().for_each(|s| s.zeroize());
    #[cfg(test)]
    tamper::apply(params, &mut msg);
    ch.send_pod(&msg)?;
    ch.flush()?;

    // 4. Malicious check.
    if params.security == Security::Malicious {
        let xs = ch.recv_pod_exact::<Block>(2)?;
        let (x, s_prime) = (xs[0], xs[1]);
        let b_star = match params.kind {
            Kind::Subfield | Kind::Subfield64 => pack128(&cots[th..th + 128]),
            Kind::Field => voles[params.t],
        };
        let y = poly_hash(v, x) ^ b_star ^ gf128::mul(s_prime, delta);
        ch.send(&ro_hash(CHECK_DOMAIN, &y.to_bytes()))?;
        ch.flush()?;
    }

    // 5. Compress.
    params.code().dual_encode(v);
    Ok(())
}

/// The receiver's `A` output: bits (subfield) or field elements.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum AVec {
    Bits(Vec<u8>),
    /// `A`, and the working parity pairs `(A, C)` (positions `k..N` of the encoder input).
    Field(Vec<Block>, Vec<BlockPair>),
    /// `A` as words, and the working parity pairs `(embed64(A), C)`.
    U64(Vec<u64>, Vec<BlockPair>),
}

impl Zeroize for AVec {
    fn zeroize(&mut self) {
        match self {
            AVec::Bits(v) => v.zeroize(),
            AVec::Field(v, pairs) => {
                v.zeroize();
                pairs.zeroize();
            }
            AVec::U64(v, pairs) => {
                v.zeroize();
                pairs.zeroize();
            }
        }
    }
}

impl AVec {
    /// An empty vector of the variant `kind` produces.
    pub(crate) fn empty(kind: Kind) -> Self {
        match kind {
            Kind::Subfield => AVec::Bits(Vec::new()),
            Kind::Field => AVec::Field(Vec::new(), Vec::new()),
            Kind::Subfield64 => AVec::U64(Vec::new(), Vec::new()),
        }
    }

    fn is_kind(&self, kind: Kind) -> bool {
        matches!(
            (self, kind),
            (AVec::Bits(_), Kind::Subfield)
                | (AVec::Field(..), Kind::Field)
                | (AVec::U64(..), Kind::Subfield64)
        )
    }

    fn truncate(&mut self, len: usize) {
        match self {
            AVec::Bits(v) => v.truncate(len),
            AVec::Field(v, pairs) => {
                v.truncate(len);
                pairs.zeroize();
            }
            AVec::U64(v, pairs) => {
                v.truncate(len);
                pairs.zeroize();
            }
        }
    }
}

/// Receiver side of one extension: returns `(A, C)` (length `params.k`).
///
/// `choices`/`cots` are the receiver's COT bits `rᵢ` and values `tᵢ`; `vole_a`/`vole_c` its
/// base VOLE values (GF(2^128) only).
#[allow(clippy::too_many_arguments)]
pub(crate) fn receive<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    params: &Params,
    choices: &[u8],
    cots: &[Block],
    vole_a: &[Block],
    vole_c: &[Block],
    tweak: u64,
    rng: &mut R,
) -> Result<(AVec, Vec<Block>)> {
    let mut a = AVec::empty(params.kind);
    let mut w = Vec::new();
    receive_into(
        ch, params, choices, cots, vole_a, vole_c, tweak, rng, &mut a, &mut w,
    )?;
    a.truncate(params.k);
    w.truncate(params.k);
    Ok((a, w))
}

/// [`receive`] into the caller's buffers: on success `a[..params.k]` is `A` and
/// `w[..params.k]` is `C` (the rest is scratch). `a` must be of `params.kind`'s variant
/// (see [`AVec::empty`]); both may hold anything on entry.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)] // per-tree index loops
pub(crate) fn receive_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    params: &Params,
    choices: &[u8],
    cots: &[Block],
    vole_a: &[Block],
    vole_c: &[Block],
    tweak: u64,
    rng: &mut R,
    a: &mut AVec,
    w: &mut Vec<Block>,
) -> Result<()> {
    check_base("correlated OTs", params.cots_needed(), cots.len())?;
    check_base(
        "correlated OT choice bits",
        params.cots_needed(),
        choices.len(),
    )?;
    check_base(
        "base VOLEs",
        params.voles_needed(),
        vole_a.len().min(vole_c.len()),
    )?;
    let shape = params.shape();
    let (t, depth, size_per) = (params.t, params.depth, params.size_per);
    let th = t * depth;

    // 1. Noise positions and flips.
    // Secret, and zeroized also when a peer message ends the extension early.
    let mut alpha: Zeroizing<Vec<usize>> = Zeroizing::new(
        (0..t)
            .map(|_| {
                let mut b = [0u8; 8];
                rng.fill_bytes(&mut b);
                #[allow(clippy::cast_possible_truncation)] // < size_per
                let a = ((u128::from(u64::from_le_bytes(b)) * size_per as u128) >> 64) as usize;
                a
            })
            .collect(),
    );
    let mut flips = vec![0u8; params.flip_bytes()];
    for tree in 0..t {
        for l in 1..=depth {
            let i = tree * depth + l - 1;
            #[allow(clippy::cast_possible_truncation)] // a single bit
            let a_bit = ((alpha[tree] >> (depth - l)) & 1) as u8;
            let e = (choices[i] & 1) ^ a_bit ^ 1;
            flips[i / 8] |= e << (i % 8);
        }
    }
    ch.send(&flips)?;
    ch.flush()?;

    // 2. Open the level keys.
    let msg = ch.recv_pod_exact::<Block>(params.tree_msg_blocks())?;
    let mut ht = cots[..th].to_vec();
    tccr_in_place(u128::from(tweak) << 64, &mut ht);
    let mut keys = vec![Block::ZERO; th];
    for tree in 0..t {
        for l in 1..=depth {
            let i = tree * depth + l - 1;
            #[allow(clippy::cast_possible_truncation)] // a single bit
            let a_bit = ((alpha[tree] >> (depth - l)) & 1) as u8;
            // want M_{¬α}: M_1 if α = 0.
            let m = Block::conditional_select(&msg[2 * i + 1], &msg[2 * i], Choice::from(a_bit));
            keys[i] = m ^ ht[i];
        }
    }
    ht.zeroize();

    // 3. Punctured expansion and the noisy coordinates, written group of trees by group of
    //    trees straight from the cache into the encoder's input: `w` (subfield) or the
    //    `(A, C)` pairs (the other kinds, which need no separate `w` of length `N`). The
    //    malicious check's hash of `w` is accumulated on the way (its `X` is drawn now: the
    //    same position in the RNG stream as after the expansion, nothing is drawn between).
    let x_check = (params.security == Security::Malicious).then(|| Block::random(rng));
    let mut check = x_check.map(PolyHasher::new);
    if !a.is_kind(params.kind) {
        *a = AVec::empty(params.kind);
    }
    match a {
        AVec::Bits(v) => {
            prepare_empty(v, params.n());
            prepare_empty(w, params.n());
        }
        // Filled in order by appending (no zero-fill pass first).
        AVec::Field(vals, pairs) => {
            prepare_empty(pairs, params.n() - params.k);
            prepare_empty(vals, params.k);
            prepare_empty(w, params.k);
        }
        AVec::U64(vals, pairs) => {
            prepare_empty(pairs, params.n() - params.k);
            prepare_empty(vals, params.k);
            prepare_empty(w, params.k);
        }
    }
    let k = params.k;
    ggm::expand_punctured_with(&shape, &alpha, &keys, |t0, leaves, fixes, totals| {
        for (i, leaves) in leaves.chunks_exact_mut(size_per).enumerate() {
            let tree = t0 + i;
            let d = msg[2 * th + tree];
            let (c, dfix) = fixes[i];
            let (beta, share) = match params.kind {
                Kind::Subfield => (Block::ONE, Block::ZERO),
                Kind::Field | Kind::Subfield64 => (vole_a[tree], vole_c[tree]),
            };
            let corr = d ^ totals[i] ^ share;
            let region = tree * size_per..(tree + 1) * size_per;
            let at = alpha[tree];
            for (j, x) in leaves.iter_mut().enumerate() {
                x.0 ^= (dfix.0 & eq_mask(j, c)) ^ (corr.0 & eq_mask(j, at));
            }
            if let Some(h) = check.as_mut() {
                h.feed(leaves);
            }
            match &mut *a {
                AVec::Bits(bits) => {
                    debug_assert_eq!(w.len(), region.start);
                    w.extend_from_slice(leaves);
                    #[allow(clippy::cast_possible_truncation)] // mask is 0 or all ones
                    bits.extend((0..size_per).map(|j| eq_mask(j, at) as u8 & 1));
                }
                AVec::Field(vals, pairs) => {
                    write_split(region.start, k, leaves, beta, at, vals, w, pairs, |b| b);
                }
                AVec::U64(vals, pairs) => {
                    // β = embed64(β₆₄): the base VOLE's value has degree < 64.
                    debug_assert!(beta.to_u64s().1 == 0);
                    let low = |b: Block| b.to_u64s().0;
                    write_split(region.start, k, leaves, beta, at, vals, w, pairs, low);
                }
            }
        }
    });
    keys.zeroize();

    // 4. Malicious check.
    if let (Some(x), Some(check)) = (x_check, check) {
        let mut s = Block::ZERO;
        for tree in 0..t {
            let beta = match params.kind {
                Kind::Subfield => Block::ONE,
                Kind::Field | Kind::Subfield64 => vole_a[tree],
            };
            let pos = (tree * size_per + alpha[tree] + 1) as u64;
            s ^= gf128::mul(pow_ct(x, pos), beta);
        }
        let (a_star, c_star) = match params.kind {
            Kind::Subfield | Kind::Subfield64 => (
                pack_bits(&choices[th..th + 128]),
                pack128(&cots[th..th + 128]),
            ),
            Kind::Field => (vole_a[t], vole_c[t]),
        };
        ch.send_pod(&[x, s ^ a_star])?;
        ch.flush()?;
        let theirs = ch.recv_array::<32>()?;
        let z = check.finish() ^ c_star;
        let mine = ro_hash(CHECK_DOMAIN, &z.to_bytes());
        if !bool::from(mine.ct_eq(&theirs)) {
            alpha.zeroize();
            w.zeroize();
            a.zeroize();
            return Err(Error::ConsistencyCheck);
        }
    }
    alpha.zeroize();

    // 5. Compress.
    let code = params.code();
    match a {
        AVec::Bits(bits) => {
            code.dual_encode2(bits, w);
            Ok(())
        }
        AVec::Field(vals, pairs) => {
            code.dual_encode_split(vals, w, pairs);
            Ok(())
        }
        AVec::U64(vals, pairs) => {
            // The binary code on the pairs (embed64(A), C): A keeps degree < 64.
            code.dual_encode_split(vals, w, pairs);
            Ok(())
        }
    }
}

/// Appends the fixed leaves `leaves` of one tree (global positions `g0..`, trees in order)
/// as `(A, C)` elements of the receiver's encoder input: `A = β` at the noise position `at`
/// and 0 elsewhere (masked, constant time), `C` the leaf; the message part (positions
/// `< k`) to `vals` (through `to_a`) and `c`, the parity part to `pairs` (A and C side by
/// side: one cache line per random read of the encoder).
#[allow(clippy::too_many_arguments)] // the two halves of both parts of the input
fn write_split<A>(
    g0: usize,
    k: usize,
    leaves: &[Block],
    beta: Block,
    at: usize,
    vals: &mut Vec<A>,
    c: &mut Vec<Block>,
    pairs: &mut Vec<BlockPair>,
    to_a: impl Fn(Block) -> A,
) {
    debug_assert_eq!(c.len(), g0.min(k));
    debug_assert_eq!(pairs.len(), g0.saturating_sub(k));
    let split = k.saturating_sub(g0).min(leaves.len());
    let (msg, par) = leaves.split_at(split);
    vals.extend((0..split).map(|j| to_a(Block(beta.0 & eq_mask(j, at)))));
    c.extend_from_slice(msg);
    pairs.extend(
        par.iter()
            .enumerate()
            .map(|(q, leaf)| BlockPair([Block(beta.0 & eq_mask(split + q, at)), *leaf])),
    );
}

/// Test hook: a sender that corrupts its tree messages (to test the malicious check).
#[cfg(test)]
pub(crate) mod tamper {
    use super::{Kind, Params};
    use obliv_core::Block;
    use std::cell::Cell;

    /// Which message to corrupt.
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Target {
        /// The final correction `d` of a tree.
        D(usize),
        /// Both masked level sums of level `l ≥ 1` of a tree.
        Level(usize, usize),
    }

    thread_local! {
        static TAMPER: Cell<Option<(Kind, Target, u128)>> = const { Cell::new(None) };
    }

    /// The next extension of `kind` on this thread XORs `mask` into the target message.
    pub(crate) fn set(kind: Kind, target: Target, mask: u128) {
        TAMPER.with(|t| t.set(Some((kind, target, mask))));
    }

    pub(super) fn apply(params: &Params, msg: &mut [Block]) {
        TAMPER.with(|t| {
            if let Some((k, target, mask)) = t.get()
                && k == params.kind
            {
                {
                    t.set(None);
                    let th = params.t * params.depth;
                    match target {
                        Target::D(tree) => msg[2 * th + tree].0 ^= mask,
                        Target::Level(tree, l) => {
                            let i = tree * params.depth + l - 1;
                            msg[2 * i].0 ^= mask;
                            msg[2 * i + 1].0 ^= mask;
                        }
                    }
                }
            }
        });
    }
}

fn check_base(what: &'static str, needed: usize, have: usize) -> Result<()> {
    if have < needed {
        return Err(Error::NotEnoughBase { what, needed, have });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::{AesRng, Prg};
    use rand_core::SeedableRng;

    #[test]
    fn noise_weights() {
        assert_eq!(noise_weight(Kind::Subfield, 1 << 21), 128);
        assert_eq!(noise_weight(Kind::Subfield, 2048), 144);
        assert_eq!(noise_weight(Kind::Subfield, 100), 144);
        assert_eq!(noise_weight(Kind::Field, 1 << 21), 280);
        let p = Params::new(Kind::Subfield, 1 << 20, Security::SemiHonest);
        assert_eq!((p.t, p.size_per, p.depth), (128, 1 << 14, 14));
        assert!(p.n() >= 2 * p.k);
    }

    /// Parameters for any `k` are computed without an arithmetic overflow (`2k` used to
    /// overflow for `k > usize::MAX / 2`).
    #[test]
    fn params_of_huge_k_saturate() {
        for k in [usize::MAX, usize::MAX / 2 + 1, usize::MAX / 3] {
            for kind in [Kind::Subfield, Kind::Field, Kind::Subfield64] {
                let p = Params::new(kind, k, Security::Malicious);
                assert!(p.n() >= p.k.min(usize::MAX / 2), "{kind:?} {k}");
                assert!(p.cots_needed() > 0 && p.voles_needed() <= p.t + 1);
            }
        }
        let p = Params::new(Kind::Subfield, 0, Security::SemiHonest);
        assert!(p.n() >= 4 && p.size_per >= 4);
    }

    #[test]
    fn packing_is_a_vole() {
        let mut prg = Prg::new(Block(9));
        let delta = prg.next_block();
        let b = prg.blocks(128);
        let bits: Vec<u8> = (0..128)
            .map(|i| u8::from(prg.next_block().lsb()) ^ (i % 3 == 0) as u8)
            .collect();
        let c: Vec<Block> = b
            .iter()
            .zip(&bits)
            .map(|(b, a)| if *a == 1 { *b ^ delta } else { *b })
            .collect();
        assert_eq!(
            pack128(&c),
            pack128(&b) ^ gf128::mul(pack_bits(&bits), delta)
        );
    }

    #[test]
    fn poly_hash_and_pow() {
        let mut prg = Prg::new(Block(10));
        let x = prg.next_block();
        for len in [0usize, 1, 7, 8, 9, 100, 1023, 1024, 1025, 3000] {
            let v = prg.blocks(len);
            let expect = v.iter().enumerate().fold(Block::ZERO, |s, (j, vj)| {
                s ^ gf128::mul(*vj, pow_ct(x, j as u64 + 1))
            });
            assert_eq!(poly_hash(&v, x), expect);
        }
        // Fed in pieces (across block boundaries), the incremental form agrees.
        for len in [0usize, 5, 1024, 3000, 10_119] {
            let v = prg.blocks(len);
            for piece in [1usize, 7, 1000, 1024, 1500, 4096] {
                let mut h = PolyHasher::new(x);
                for c in v.chunks(piece) {
                    h.feed(c);
                }
                assert_eq!(h.finish(), poly_hash(&v, x), "len {len} piece {piece}");
            }
        }
        assert_eq!(pow_ct(x, 0), Block::ONE);
        assert_eq!(pow_ct(x, 3), gf128::mul(x, gf128::square(x)));
        let _ = AesRng::from_seed([0; 16]);
    }
}
