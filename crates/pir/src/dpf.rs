//! A distributed point function (DPF) over the domain `{0,1}^n` with one-bit outputs,
//! after Boyle, Gilboa and Ishai, *Function Secret Sharing: Improvements and Extensions*
//! (CCS 2016, <https://eprint.iacr.org/2018/707>), Figure 1, with early termination (§3.2.1).
//!
//! # The function
//!
//! For `α ∈ [0, 2^n)` the point function `f_α(x) = 1` if `x = α`, else `0`. [`gen_keys`] splits
//! `f_α` into two keys `k_0, k_1` such that `Eval(k_0, x) ⊕ Eval(k_1, x) = f_α(x)` for every
//! `x`, while each key alone is pseudorandom (it reveals nothing about `α` beyond `n`, under
//! the assumption that AES is a pseudorandom permutation).
//!
//! [`gen_block_keys`] shares the point function with 128-bit outputs, `β` at `α` and 0
//! elsewhere (the same tree without early termination, depth `n`, one leaf per point).
//!
//! # Construction
//!
//! A GGM tree of depth `d = max(n − 7, 0)`: each node holds a 128-bit block `S` whose least
//! significant bit is the *control bit* `t` (the "LSB trick"). Children come from the
//! length-doubling PRG, fixed-key AES in Matyas–Meyer–Oseas mode:
//!
//! ```text
//! G(S) = (AES_{k_L}(S) ⊕ S,  AES_{k_R}(S) ⊕ S)        k_L, k_R public constants
//! ```
//!
//! On level `i` the key holds one correction word `CW_i`: a seed correction `s_CW` with the
//! left control correction `t^L_CW` in its LSB, and the right control correction `t^R_CW`.
//! Party `b` at a node with control bit `t` computes the children `G(S) ⊕ t·(s_CW‖t^{L,R}_CW)`.
//! Off the path to `α` both parties hold identical nodes; on it their control bits differ,
//! and the correction word makes the child that leaves the path equal again.
//!
//! *Early termination*: the last 7 levels are collapsed: each of the `2^d` leaves carries 128
//! output bits, `y_b(leaf) = Convert(S_b) ⊕ t_b·CW_out` with
//! `Convert(S) = AES_{k_V}(S) ⊕ S` and `CW_out = Convert(S_0) ⊕ Convert(S_1) ⊕ e_{α mod 128}`,
//! where `S_b` are the parties' nodes at leaf `⌊α/128⌋`. Output bit `x` is bit `x mod 128`
//! of leaf `⌊x/128⌋` ([`Block::bit`]); for `n < 7` there is one leaf and bits `≥ 2^n` are 0
//! in the XOR of the shares. A key is `17 + 16·d + ⌈d/8⌉ + 16` bytes (179 for `n = 16`).
//!
//! # Full-domain evaluation
//!
//! [`DpfKey::eval_full`] expands the tree breadth first *in place* in the output buffer (the
//! `2^d` leaves are exactly the `2^n` output bits), with AES called on 64 nodes at a time so
//! the AES-NI/VAES pipelines stay full. Beyond `2^12` leaves it switches to cache-sized
//! sub-trees: the top levels are expanded, then every sub-tree of 4096 leaves (64 KiB) is
//! expanded and converted while it sits in L2. The cost is three AES calls per 128 outputs.
//!
//! # Constant time
//!
//! Key generation handles `α` only through masks (no branch or index depends on it); the
//! evaluator branches on nothing secret (`x` is its own input, control bits are applied as
//! masks).

use std::sync::OnceLock;

use obliv_core::{Aes, Block};
use rand_core::CryptoRng;
use subtle::{Choice, ConstantTimeEq};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::{Error, Result};

/// Levels collapsed by early termination: each leaf holds `2^7 = 128` output bits.
pub const LEAF_BITS: u32 = 7;

/// Largest supported domain: `2^MAX_DOMAIN_BITS` points (a full-domain output of 2^40 bits is
/// 128 GiB, far beyond what one evaluation should hold in memory).
pub const MAX_DOMAIN_BITS: u32 = 40;

/// Nodes handed to AES per call during expansion.
const CHUNK: usize = 64;

/// Levels of a sub-tree expanded while it stays in cache (2^12 blocks = 64 KiB).
const SUBTREE_LEVELS: u32 = 12;

/// The public AES keys of the PRG halves and the output conversion: the 48 bytes of the
/// fractional part of π that follow `obliv_core::aes::FIXED_KEY` (nothing-up-my-sleeve).
const KEY_LEFT: [u8; 16] = [
    0xa4, 0x09, 0x38, 0x22, 0x29, 0x9f, 0x31, 0xd0, 0x08, 0x2e, 0xfa, 0x98, 0xec, 0x4e, 0x6c, 0x89,
];
const KEY_RIGHT: [u8; 16] = [
    0x45, 0x28, 0x21, 0xe6, 0x38, 0xd0, 0x13, 0x77, 0xbe, 0x54, 0x66, 0xcf, 0x34, 0xe9, 0x0c, 0x6c,
];
const KEY_VALUE: [u8; 16] = [
    0xc0, 0xac, 0x29, 0xb7, 0xc9, 0x7c, 0x50, 0xdd, 0x3f, 0x84, 0xd5, 0xb5, 0xb5, 0x47, 0x09, 0x17,
];

/// The three fixed-key permutations (left child, right child, output conversion).
struct Prgs {
    left: Aes,
    right: Aes,
    value: Aes,
}

fn prgs() -> &'static Prgs {
    static P: OnceLock<Prgs> = OnceLock::new();
    P.get_or_init(|| Prgs {
        left: Aes::new(Block::from_bytes(KEY_LEFT)),
        right: Aes::new(Block::from_bytes(KEY_RIGHT)),
        value: Aes::new(Block::from_bytes(KEY_VALUE)),
    })
}

/// All ones if bit 0 of `x` is set, else all zeros.
#[inline(always)]
fn lsb_mask(x: Block) -> u128 {
    0u128.wrapping_sub(x.0 & 1)
}

/// All ones if `bit` (0 or 1) is 1.
#[inline(always)]
fn bit_mask(bit: u128) -> u128 {
    0u128.wrapping_sub(bit & 1)
}

/// Depth of the GGM tree for a domain of `2^n` points.
#[inline]
pub const fn tree_depth(domain_bits: u32) -> u32 {
    domain_bits.saturating_sub(LEAF_BITS)
}

/// Blocks of the full-domain output for a domain of `2^n` points: `2^max(n−7, 0)`.
#[inline]
pub const fn output_blocks(domain_bits: u32) -> usize {
    1usize << tree_depth(domain_bits)
}

/// Serialised length of a key over `2^n` points: `1 + 16 + 16·d + ⌈d/8⌉ + 16`.
pub const fn key_len(domain_bits: u32) -> usize {
    encoded_len(tree_depth(domain_bits))
}

/// Serialised length of a key from [`gen_block_keys`] over `2^n` points (tree depth `n`).
pub const fn block_key_len(domain_bits: u32) -> usize {
    encoded_len(domain_bits)
}

const fn encoded_len(depth: u32) -> usize {
    let d = depth as usize;
    1 + 16 + 16 * d + d.div_ceil(8) + 16
}

/// Flag in the first byte of a serialised key: block outputs.
const BLOCK_FLAG: u8 = 0x80;

/// One party's DPF key.
///
/// Zeroized on drop; `Debug` shows only the public domain size; equality
/// ([`ConstantTimeEq`], and `==` through it) takes time independent of the key material.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct DpfKey {
    /// `n`: the domain is `[0, 2^n)`.
    domain_bits: u32,
    /// The root node; its LSB is the party's index (the initial control bit).
    root: Block,
    /// Per level: the seed correction with `t^L_CW` in its LSB.
    cw_seed: Vec<Block>,
    /// Per level: `t^R_CW`, bit `i` for level `i`.
    cw_right: u64,
    /// The output correction word of the leaves.
    cw_out: Block,
    /// `false`: one output bit per point, 128 per leaf (early termination); `true`: one
    /// 128-bit output per point ([`gen_block_keys`]).
    block_output: bool,
}

impl ConstantTimeEq for DpfKey {
    /// Keys of different shapes (domain, output kind: public) differ at once; keys of one
    /// shape are compared in full, without early exit.
    fn ct_eq(&self, other: &Self) -> Choice {
        if self.domain_bits != other.domain_bits
            || self.block_output != other.block_output
            || self.cw_seed.len() != other.cw_seed.len()
        {
            return Choice::from(0);
        }
        let mut eq = self.root.ct_eq(&other.root)
            & self.cw_right.ct_eq(&other.cw_right)
            & self.cw_out.ct_eq(&other.cw_out);
        for (a, b) in self.cw_seed.iter().zip(&other.cw_seed) {
            eq &= a.ct_eq(b);
        }
        eq
    }
}

impl PartialEq for DpfKey {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other).into()
    }
}

impl Eq for DpfKey {}

impl core::fmt::Debug for DpfKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DpfKey")
            .field("domain_bits", &self.domain_bits)
            .finish_non_exhaustive()
    }
}

/// Generates the two keys of the point function that is 1 at `alpha` over `[0, 2^n)`.
///
/// Errors: [`Error::DomainTooLarge`] for `n > MAX_DOMAIN_BITS`, [`Error::IndexOutOfRange`]
/// for `alpha ≥ 2^n`. Runs in time independent of `alpha`.
pub fn gen_keys<R: CryptoRng + ?Sized>(
    domain_bits: u32,
    alpha: u64,
    rng: &mut R,
) -> Result<(DpfKey, DpfKey)> {
    check_point(domain_bits, alpha)?;
    let leaf = if domain_bits >= LEAF_BITS {
        alpha >> LEAF_BITS
    } else {
        0
    };
    let payload = Block(1u128 << (alpha & 127));
    Ok(gen_inner(
        domain_bits,
        tree_depth(domain_bits),
        leaf,
        payload,
        false,
        rng,
    ))
}

/// Generates the two keys of the point function with 128-bit outputs that is `beta` at
/// `alpha` and 0 elsewhere on `[0, 2^n)` (BGI16 Fig. 1 over the group `GF(2)^128`, without
/// early termination: the tree has depth `n` and each leaf is one output). Evaluate with
/// [`DpfKey::eval_block`] or [`DpfKey::eval_full`] (one block per point).
///
/// Errors as for [`gen_keys`].
pub fn gen_block_keys<R: CryptoRng + ?Sized>(
    domain_bits: u32,
    alpha: u64,
    beta: Block,
    rng: &mut R,
) -> Result<(DpfKey, DpfKey)> {
    check_point(domain_bits, alpha)?;
    Ok(gen_inner(domain_bits, domain_bits, alpha, beta, true, rng))
}

fn check_point(domain_bits: u32, alpha: u64) -> Result<()> {
    if domain_bits > MAX_DOMAIN_BITS {
        return Err(Error::DomainTooLarge {
            bits: domain_bits,
            max: MAX_DOMAIN_BITS,
        });
    }
    let size = 1u64 << domain_bits;
    if alpha >= size {
        return Err(Error::IndexOutOfRange { index: alpha, size });
    }
    Ok(())
}

/// The key generation of BGI16 Fig. 1 for a tree of depth `d` whose leaf `leaf` carries
/// `payload` (in the XOR of the two parties' conversions).
fn gen_inner<R: CryptoRng + ?Sized>(
    domain_bits: u32,
    d: u32,
    leaf: u64,
    payload: Block,
    block_output: bool,
    rng: &mut R,
) -> (DpfKey, DpfKey) {
    let p = prgs();
    let mut s0 = Block(Block::random(rng).0 & !1);
    let mut s1 = Block(Block::random(rng).0 | 1);
    let (root0, root1) = (s0, s1);
    let mut cw_seed = Vec::with_capacity(d as usize);
    let mut cw_right = 0u64;
    let mut buf = [Block::ZERO; 4];
    for i in 0..d {
        let bit = u128::from((leaf >> (d - 1 - i)) & 1);
        let a = bit_mask(bit);
        // Children of both parties: [L0, L1] and [R0, R1].
        buf[0] = s0;
        buf[1] = s1;
        buf[2] = s0;
        buf[3] = s1;
        p.left.encrypt_blocks(&mut buf[..2]);
        p.right.encrypt_blocks(&mut buf[2..]);
        let (l0, l1, r0, r1) = (
            buf[0].0 ^ s0.0,
            buf[1].0 ^ s1.0,
            buf[2].0 ^ s0.0,
            buf[3].0 ^ s1.0,
        );
        // Lose = L if bit = 1, R if bit = 0; Keep is the other.
        let lose0 = (a & l0) | (!a & r0);
        let lose1 = (a & l1) | (!a & r1);
        let keep0 = (a & r0) | (!a & l0);
        let keep1 = (a & r1) | (!a & l1);
        let scw = (lose0 ^ lose1) & !1;
        let tl_cw = (l0 ^ l1 ^ bit ^ 1) & 1;
        let tr_cw = (r0 ^ r1 ^ bit) & 1;
        let t_keep_cw = (a & tr_cw) | (!a & tl_cw);
        let corr = scw | t_keep_cw;
        let (m0, m1) = (lsb_mask(s0), lsb_mask(s1));
        s0 = Block(keep0 ^ (m0 & corr));
        s1 = Block(keep1 ^ (m1 & corr));
        cw_seed.push(Block(scw | tl_cw));
        #[allow(clippy::cast_possible_truncation)] // tr_cw is a single bit
        {
            cw_right |= (tr_cw as u64) << i;
        }
        buf.zeroize();
    }
    // Output correction: Convert(S0) ⊕ Convert(S1) ⊕ e_{α mod 128}.
    let mut conv = [s0, s1];
    p.value.encrypt_blocks(&mut conv);
    let cw_out = Block(conv[0].0 ^ s0.0 ^ conv[1].0 ^ s1.0 ^ payload.0);
    conv.zeroize();
    s0.zeroize();
    s1.zeroize();
    let k0 = DpfKey {
        domain_bits,
        root: root0,
        cw_seed: cw_seed.clone(),
        cw_right,
        cw_out,
        block_output,
    };
    let k1 = DpfKey {
        domain_bits,
        root: root1,
        cw_seed,
        cw_right,
        cw_out,
        block_output,
    };
    (k0, k1)
}

impl DpfKey {
    /// `n`: the key shares a point function on `[0, 2^n)`.
    pub fn domain_bits(&self) -> u32 {
        self.domain_bits
    }

    /// The party this key belongs to (0 or 1).
    pub fn party(&self) -> u8 {
        u8::from(self.root.lsb())
    }

    /// Whether the key has 128-bit outputs ([`gen_block_keys`]) rather than bits.
    pub fn block_output(&self) -> bool {
        self.block_output
    }

    /// Depth of the key's tree.
    fn depth(&self) -> u32 {
        if self.block_output {
            self.domain_bits
        } else {
            tree_depth(self.domain_bits)
        }
    }

    /// Blocks of the full-domain output: [`output_blocks`] for bit outputs, `2^n` for block
    /// outputs.
    pub fn output_blocks(&self) -> usize {
        1usize << self.depth()
    }

    /// Correction words of level `i` for the left and right child.
    #[inline(always)]
    fn cws(&self, i: usize) -> (u128, u128) {
        let l = self.cw_seed[i].0;
        let tr = u128::from((self.cw_right >> i) & 1);
        (l, (l & !1) | tr)
    }

    /// This party's share of `f_α(x)`.
    ///
    /// Errors: [`Error::IndexOutOfRange`] for `x ≥ 2^n`.
    pub fn eval(&self, x: u64) -> Result<bool> {
        let size = 1u64 << self.domain_bits;
        if x >= size {
            return Err(Error::IndexOutOfRange { index: x, size });
        }
        if self.block_output {
            return Err(Error::Malformed {
                what: "a key with block outputs is evaluated with eval_block",
            });
        }
        let leaf = self.eval_leaf(if self.domain_bits >= LEAF_BITS {
            x >> LEAF_BITS
        } else {
            0
        });
        Ok(leaf.bit((x & 127) as usize))
    }

    /// This party's share of the 128-bit output at `x` of a key from [`gen_block_keys`].
    ///
    /// Errors: [`Error::IndexOutOfRange`], [`Error::Malformed`] for a key with bit outputs.
    pub fn eval_block(&self, x: u64) -> Result<Block> {
        let size = 1u64 << self.domain_bits;
        if x >= size {
            return Err(Error::IndexOutOfRange { index: x, size });
        }
        if !self.block_output {
            return Err(Error::Malformed {
                what: "a key with bit outputs is evaluated with eval",
            });
        }
        Ok(self.eval_leaf(x))
    }

    /// This party's share of the 128 outputs of leaf `j` (points `128·j .. 128·j + 127`),
    /// walking one path of the tree. `j` must be below `2^d` (checked by the caller).
    fn eval_leaf(&self, j: u64) -> Block {
        let p = prgs();
        let d = self.depth();
        let mut s = self.root;
        for i in 0..d {
            let right = (j >> (d - 1 - i)) & 1 == 1;
            let (cl, cr) = self.cws(i as usize);
            let (aes, cw) = if right { (&p.right, cr) } else { (&p.left, cl) };
            let child = aes.encrypt_block(s).0 ^ s.0;
            s = Block(child ^ (lsb_mask(s) & cw));
        }
        let out = Block(p.value.encrypt_block(s).0 ^ s.0 ^ (lsb_mask(s) & self.cw_out.0));
        s.zeroize();
        out
    }

    /// This party's shares of all `2^n` outputs as a bit vector: bit `x mod 128` of block
    /// `⌊x/128⌋` is the share of `f_α(x)`.
    pub fn eval_full(&self) -> Vec<Block> {
        let mut out = vec![Block::ZERO; self.output_blocks()];
        self.eval_full_into(&mut out);
        out
    }

    /// [`eval_full`](Self::eval_full) into a caller's buffer.
    ///
    /// # Panics
    /// Panics if `out.len() != self.output_blocks()` (a caller bug).
    pub fn eval_full_into(&self, out: &mut [Block]) {
        assert_eq!(out.len(), self.output_blocks(), "output buffer size");
        let d = self.depth();
        out[0] = self.root;
        if d <= SUBTREE_LEVELS {
            self.expand(out, 0, d);
            self.convert(out);
            return;
        }
        let top = d - SUBTREE_LEVELS;
        let sub = 1usize << SUBTREE_LEVELS;
        self.expand(&mut out[..1 << top], 0, top);
        // Sub-tree j's root sits at index j; its leaves go to [j·sub, (j+1)·sub), which only
        // covers roots with index ≥ j·sub ≥ j, so going from the last to the first reads every
        // root before it is overwritten.
        for j in (0..1usize << top).rev() {
            let root = out[j];
            let region = &mut out[j * sub..(j + 1) * sub];
            region[0] = root;
            self.expand(region, top, SUBTREE_LEVELS);
            self.convert(region);
        }
    }

    /// Expands the node in `buf[0]` (on level `level`) by `levels` levels, in place:
    /// afterwards `buf[..2^levels]` holds its descendants on level `level + levels`.
    fn expand(&self, buf: &mut [Block], level: u32, levels: u32) {
        let p = prgs();
        let mut parents = [Block::ZERO; CHUNK];
        let mut left = [Block::ZERO; CHUNK];
        let mut right = [Block::ZERO; CHUNK];
        for l in 0..levels {
            let width = 1usize << l;
            let (cl, cr) = self.cws((level + l) as usize);
            // Parents in [start, end) write children to [2·start, 2·end): going from the top
            // down, no parent is overwritten before it has been read into `parents`.
            let mut end = width;
            while end > 0 {
                let start = end.saturating_sub(CHUNK);
                let m = end - start;
                parents[..m].copy_from_slice(&buf[start..end]);
                left[..m].copy_from_slice(&parents[..m]);
                right[..m].copy_from_slice(&parents[..m]);
                p.left.encrypt_blocks(&mut left[..m]);
                p.right.encrypt_blocks(&mut right[..m]);
                let children = &mut buf[2 * start..2 * end];
                for (i, pair) in children.chunks_exact_mut(2).enumerate() {
                    let s = parents[i];
                    let mask = lsb_mask(s);
                    pair[0] = Block(left[i].0 ^ s.0 ^ (mask & cl));
                    pair[1] = Block(right[i].0 ^ s.0 ^ (mask & cr));
                }
                end = start;
            }
        }
        parents.zeroize();
        left.zeroize();
        right.zeroize();
    }

    /// Replaces every leaf node `S` in `buf` by its output share
    /// `Convert(S) ⊕ t·CW_out`.
    fn convert(&self, buf: &mut [Block]) {
        let p = prgs();
        let mut tmp = [Block::ZERO; CHUNK];
        for chunk in buf.chunks_mut(CHUNK) {
            let m = chunk.len();
            tmp[..m].copy_from_slice(chunk);
            p.value.encrypt_blocks(&mut tmp[..m]);
            for (o, h) in chunk.iter_mut().zip(&tmp[..m]) {
                *o = Block(h.0 ^ o.0 ^ (lsb_mask(*o) & self.cw_out.0));
            }
        }
        tmp.zeroize();
    }

    /// Serialised length of this key ([`key_len`] or [`block_key_len`]).
    pub fn encoded_len(&self) -> usize {
        encoded_len(self.depth())
    }

    /// Serialises the key: `n` (1 byte, with bit 7 set for block outputs) ‖ root (16) ‖ per level the seed correction (16 each)
    /// ‖ the right control corrections, one bit per level, little-endian (`⌈d/8⌉` bytes) ‖ the
    /// output correction (16). Blocks are little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.write_bytes(&mut v);
        v
    }

    /// Appends the encoding of [`to_bytes`](Self::to_bytes) to `v`, with no temporary copy of
    /// the key. Reserve [`encoded_len`](Self::encoded_len) bytes in `v` beforehand when it
    /// must not leave a copy behind: a vector that grows frees its old buffer as it is.
    pub fn write_bytes(&self, v: &mut Vec<u8>) {
        let d = self.cw_seed.len();
        #[allow(clippy::cast_possible_truncation)] // domain_bits ≤ MAX_DOMAIN_BITS < 128
        v.push(self.domain_bits as u8 | if self.block_output { BLOCK_FLAG } else { 0 });
        v.extend_from_slice(&self.root.to_bytes());
        for cw in &self.cw_seed {
            v.extend_from_slice(&cw.to_bytes());
        }
        v.extend_from_slice(&self.cw_right.to_le_bytes()[..d.div_ceil(8)]);
        v.extend_from_slice(&self.cw_out.to_bytes());
    }

    /// Parses a key produced by [`to_bytes`](Self::to_bytes), of any supported domain.
    ///
    /// The domain is the one the bytes announce, up to [`MAX_DOMAIN_BITS`], and with it the
    /// size of [`eval_full`](Self::eval_full)'s output (up to `2^40` blocks for block
    /// outputs): parse a peer's key with [`from_bytes_for_domain`](Self::from_bytes_for_domain),
    /// which takes only the domain the evaluator expects.
    ///
    /// Errors: [`Error::DomainTooLarge`], [`Error::WrongLength`], and
    /// [`Error::NonCanonical`] if padding bits of the control corrections are set.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let Some(&head) = bytes.first() else {
            return Err(Error::WrongLength {
                expected: key_len(0),
                got: 0,
            });
        };
        let block_output = head & BLOCK_FLAG != 0;
        let n = u32::from(head & !BLOCK_FLAG);
        if n > MAX_DOMAIN_BITS {
            return Err(Error::DomainTooLarge {
                bits: n,
                max: MAX_DOMAIN_BITS,
            });
        }
        let depth = if block_output { n } else { tree_depth(n) };
        let expected = encoded_len(depth);
        if bytes.len() != expected {
            return Err(Error::WrongLength {
                expected,
                got: bytes.len(),
            });
        }
        let d = depth as usize;
        let block = |off: usize| {
            let mut b = [0u8; 16];
            b.copy_from_slice(&bytes[off..off + 16]);
            Block::from_bytes(b)
        };
        let root = block(1);
        let cw_seed: Vec<Block> = (0..d).map(|i| block(17 + 16 * i)).collect();
        let off = 17 + 16 * d;
        let mut r = [0u8; 8];
        r[..d.div_ceil(8)].copy_from_slice(&bytes[off..off + d.div_ceil(8)]);
        let cw_right = u64::from_le_bytes(r);
        if d < 64 && cw_right >> d != 0 {
            return Err(Error::NonCanonical {
                what: "padding bits of the right control corrections",
            });
        }
        let cw_out = block(off + d.div_ceil(8));
        Ok(DpfKey {
            domain_bits: n,
            root,
            cw_seed,
            cw_right,
            cw_out,
            block_output,
        })
    }

    /// Parses a key with bit outputs and checks that it is over `2^domain_bits` points
    /// ([`Error::WrongDomain`] otherwise, also for a key with block outputs), before looking at
    /// anything else.
    pub fn from_bytes_for_domain(bytes: &[u8], domain_bits: u32) -> Result<Self> {
        if let Some(&n) = bytes.first()
            && u32::from(n) != domain_bits
        {
            return Err(Error::WrongDomain {
                expected: domain_bits,
                got: u32::from(n),
            });
        }
        let k = Self::from_bytes(bytes)?;
        if k.domain_bits != domain_bits || k.block_output {
            return Err(Error::WrongDomain {
                expected: domain_bits,
                got: k.domain_bits,
            });
        }
        Ok(k)
    }
}

#[cfg(test)]
#[allow(
    clippy::needless_range_loop,
    clippy::cast_possible_truncation,
    clippy::useless_vec
)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use proptest::prelude::*;
    use rand_core::SeedableRng;

    const KAT_N9_ALPHA300: (u64, u64, u64) = (
        109_855_801_606_644_628,
        633_390_551_472_671_401,
        12_351_640_313_667_341_552,
    );

    fn xor_full(k0: &DpfKey, k1: &DpfKey) -> Vec<Block> {
        let mut a = k0.eval_full();
        Block::xor_slices_in_place(&mut a, &k1.eval_full());
        a
    }

    fn check_point(n: u32, alpha: u64, rng: &mut AesRng) {
        let (k0, k1) = gen_keys(n, alpha, rng).unwrap();
        assert_eq!((k0.party(), k1.party()), (0, 1));
        let out = xor_full(&k0, &k1);
        assert_eq!(out.len(), output_blocks(n));
        for (j, b) in out.iter().enumerate() {
            let expected = if j as u64 == alpha >> 7 {
                1u128 << (alpha & 127)
            } else {
                0
            };
            assert_eq!(b.0, expected, "n = {n}, alpha = {alpha}, block {j}");
        }
        // Full-domain evaluation agrees with point evaluation, for both keys.
        let f0 = k0.eval_full();
        let f1 = k1.eval_full();
        let size = 1u64 << n;
        let step = (size / 700).max(1);
        let mut x = 0;
        while x < size {
            let (e0, e1) = (k0.eval(x).unwrap(), k1.eval(x).unwrap());
            assert_eq!(e0, f0[(x >> 7) as usize].bit((x & 127) as usize));
            assert_eq!(e1, f1[(x >> 7) as usize].bit((x & 127) as usize));
            assert_eq!(e0 ^ e1, x == alpha, "n = {n}, x = {x}, alpha = {alpha}");
            x += step;
        }
        assert!(k0.eval(alpha).unwrap() ^ k1.eval(alpha).unwrap());
    }

    #[test]
    fn point_function_small_domains_every_alpha() {
        let mut rng = AesRng::from_seed([1; 16]);
        for n in 0..=9 {
            for alpha in 0..(1u64 << n) {
                check_point(n, alpha, &mut rng);
            }
        }
    }

    #[test]
    fn point_function_large_domains() {
        let mut rng = AesRng::from_seed([2; 16]);
        for n in [10, 12, 16, 19, 20] {
            for alpha in [0, (1u64 << n) - 1, 12345 % (1u64 << n), (1u64 << n) / 3] {
                check_point(n, alpha, &mut rng);
            }
        }
    }

    /// Domains deeper than one cache sub-tree (d > 12) exercise the sub-tree path.
    #[test]
    fn point_function_subtree_path() {
        let mut rng = AesRng::from_seed([3; 16]);
        for alpha in [0u64, 1 << 20, (1 << 21) - 1, 777_777] {
            check_point(21, alpha, &mut rng);
        }
    }

    #[test]
    fn serialisation_round_trip_and_length() {
        let mut rng = AesRng::from_seed([4; 16]);
        for n in [0, 1, 6, 7, 8, 15, 16, 17, 20, 40] {
            let (k0, k1) = gen_keys(n, (1u64 << n) - 1, &mut rng).unwrap();
            for k in [&k0, &k1] {
                let b = k.to_bytes();
                assert_eq!(b.len(), key_len(n));
                assert_eq!(&DpfKey::from_bytes(&b).unwrap(), k);
                assert_eq!(&DpfKey::from_bytes_for_domain(&b, n).unwrap(), k);
            }
        }
        assert_eq!(key_len(16), 179);
    }

    #[test]
    fn malformed_keys_are_errors() {
        let mut rng = AesRng::from_seed([5; 16]);
        let (k0, _) = gen_keys(16, 5, &mut rng).unwrap();
        let b = k0.to_bytes();
        assert!(matches!(
            DpfKey::from_bytes(&[]),
            Err(Error::WrongLength { got: 0, .. })
        ));
        assert!(matches!(
            DpfKey::from_bytes(&b[..b.len() - 1]),
            Err(Error::WrongLength {
                expected: 179,
                got: 178
            })
        ));
        let mut long = b.clone();
        long.push(0);
        assert!(matches!(
            DpfKey::from_bytes(&long),
            Err(Error::WrongLength { .. })
        ));
        assert!(matches!(
            DpfKey::from_bytes_for_domain(&b, 17),
            Err(Error::WrongDomain {
                expected: 17,
                got: 16
            })
        ));
        let mut big = b.clone();
        big[0] = 41;
        assert!(matches!(
            DpfKey::from_bytes(&big),
            Err(Error::DomainTooLarge { bits: 41, .. })
        ));
        // d = 9: the second byte of right-corrections has 7 padding bits.
        let mut pad = b.clone();
        pad[17 + 16 * 9 + 1] |= 0x80;
        assert!(matches!(
            DpfKey::from_bytes(&pad),
            Err(Error::NonCanonical { .. })
        ));
        assert!(matches!(
            gen_keys(41, 0, &mut rng),
            Err(Error::DomainTooLarge { .. })
        ));
        assert!(matches!(
            gen_keys(3, 8, &mut rng),
            Err(Error::IndexOutOfRange { index: 8, size: 8 })
        ));
        assert!(matches!(
            k0.eval(1 << 16),
            Err(Error::IndexOutOfRange { .. })
        ));
    }

    /// Each key alone looks uniform: over many key generations for two fixed points, every
    /// bit of one party's key material (root, correction words) and of its full-domain output
    /// is set about half the time, and the frequencies for α = 0 and α = 2^n − 1 agree.
    #[test]
    fn single_key_looks_random() {
        let mut rng = AesRng::from_seed([6; 16]);
        let n = 12;
        let trials = 2000;
        for party in 0..2 {
            let mut counts = [[0u32; 128 * 3]; 2];
            for (ai, alpha) in [0u64, (1 << n) - 1].into_iter().enumerate() {
                for _ in 0..trials {
                    let (k0, k1) = gen_keys(n, alpha, &mut rng).unwrap();
                    let k = if party == 0 { k0 } else { k1 };
                    let full = k.eval_full();
                    // Bits 1..128 of the root (bit 0 is the party), of the first seed
                    // correction, and of output block 0 (which holds α = 0's bit).
                    let vals = [k.root.0, k.cw_seed[0].0, full[0].0];
                    for (v, val) in vals.iter().enumerate() {
                        for bit in 0..128 {
                            counts[ai][v * 128 + bit] += ((val >> bit) & 1) as u32;
                        }
                    }
                }
            }
            for ai in 0..2 {
                for (pos, &c) in counts[ai].iter().enumerate() {
                    if pos == 0 {
                        continue; // the party bit
                    }
                    // Binomial(2000, 1/2): sd ≈ 22.4; 6 sd ≈ 134.
                    assert!(
                        (866..=1134).contains(&c),
                        "party {party} alpha#{ai} bit {pos}: {c}"
                    );
                }
            }
            // The same statistic does not tell the two points apart.
            for pos in 1..128 * 3 {
                let diff = counts[0][pos].abs_diff(counts[1][pos]);
                assert!(diff < 200, "party {party} bit {pos}: {diff}");
            }
        }
    }

    /// Regression vector: the key bytes for a fixed RNG seed pin the encoding, the PRG keys
    /// and the correction-word computation (and obliv-core's `AesRng` stream). Source: this
    /// implementation (first version,
    /// checked against the full-domain correctness tests above); any change to the
    /// construction must update it deliberately.
    #[test]
    fn known_answer_key() {
        let mut rng = AesRng::from_seed([0x42; 16]);
        let (k0, k1) = gen_keys(9, 300, &mut rng).unwrap();
        let h = |k: &DpfKey| {
            let b = k.to_bytes();
            // FNV-1a over the encoding, to keep the vector short.
            b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
                (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
            })
        };
        let f0 = k0.eval_full();
        assert_eq!((h(&k0), h(&k1), f0[0].0 as u64), KAT_N9_ALPHA300);
    }

    #[test]
    fn block_outputs() {
        let mut rng = AesRng::from_seed([21; 16]);
        for n in 0..=8 {
            for alpha in 0..(1u64 << n) {
                let beta = Block::random(&mut rng);
                let (k0, k1) = gen_block_keys(n, alpha, beta, &mut rng).unwrap();
                assert!(k0.block_output());
                let mut f = k0.eval_full();
                Block::xor_slices_in_place(&mut f, &k1.eval_full());
                assert_eq!(f.len(), 1 << n);
                for (x, v) in f.iter().enumerate() {
                    let want = if x as u64 == alpha { beta } else { Block::ZERO };
                    assert_eq!(*v, want, "n = {n} alpha = {alpha} x = {x}");
                    let pt = k0.eval_block(x as u64).unwrap() ^ k1.eval_block(x as u64).unwrap();
                    assert_eq!(pt, want);
                }
                let b = k1.to_bytes();
                assert_eq!(b.len(), block_key_len(n));
                assert_eq!(DpfKey::from_bytes(&b).unwrap(), k1);
                assert!(DpfKey::from_bytes_for_domain(&b, n).is_err());
                assert!(k0.eval(0).is_err());
            }
        }
        let (k0, k1) = gen_block_keys(20, 999_999, Block(7), &mut rng).unwrap();
        assert_eq!(
            k0.eval_block(999_999).unwrap() ^ k1.eval_block(999_999).unwrap(),
            Block(7)
        );
        assert_eq!(
            k0.eval_block(5).unwrap() ^ k1.eval_block(5).unwrap(),
            Block::ZERO
        );
        let (b0, _) = gen_keys(9, 3, &mut rng).unwrap();
        assert!(b0.eval_block(3).is_err());
    }

    /// Regression: `DpfKey`'s equality was derived, comparing the secret root and correction
    /// words with early exit. It goes through [`ConstantTimeEq`] now, and still tells apart
    /// keys that differ in any one field.
    #[test]
    fn key_equality_is_constant_time() {
        let mut rng = AesRng::from_seed([23; 16]);
        let (k0, k1) = gen_keys(12, 77, &mut rng).unwrap();
        assert!(bool::from(k0.ct_eq(&k0.clone())) && k0 == k0.clone());
        assert!(!bool::from(k0.ct_eq(&k1)) && k0 != k1);
        let b = k0.to_bytes();
        // One bit changed in the root (past the party bit), a seed correction, the right
        // control corrections, the output correction.
        for at in [1usize, 17 + 16 * 4, 17 + 16 * 5, b.len() - 1] {
            let mut c = b.clone();
            c[at] ^= if at == 17 + 16 * 5 { 1 } else { 2 };
            let k = DpfKey::from_bytes(&c).unwrap();
            assert!(!bool::from(k0.ct_eq(&k)) && k0 != k, "byte {at}");
        }
        let (other_domain, _) = gen_keys(13, 77, &mut rng).unwrap();
        assert!(!bool::from(k0.ct_eq(&other_domain)));
        let (block, _) = gen_block_keys(5, 3, Block(1), &mut rng).unwrap();
        let (bits, _) = gen_keys(12, 3, &mut rng).unwrap();
        assert!(!bool::from(block.ct_eq(&bits)) && block != bits);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn prop_point_eval(n in 0u32..=24, a in any::<u64>(), x in any::<u64>(), seed in any::<[u8; 16]>()) {
            let mut rng = AesRng::from_seed(seed);
            let alpha = a & ((1u64 << n) - 1);
            let x = x & ((1u64 << n) - 1);
            let (k0, k1) = gen_keys(n, alpha, &mut rng).unwrap();
            prop_assert!(k0.eval(alpha).unwrap() ^ k1.eval(alpha).unwrap());
            prop_assert_eq!(k0.eval(x).unwrap() ^ k1.eval(x).unwrap(), x == alpha);
            let k0b = DpfKey::from_bytes(&k0.to_bytes()).unwrap();
            prop_assert_eq!(k0b.eval(x).unwrap(), k0.eval(x).unwrap());
        }

        #[test]
        fn prop_parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = DpfKey::from_bytes(&bytes);
        }
    }
}
