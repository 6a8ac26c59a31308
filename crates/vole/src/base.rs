//! Base correlations: correlated OTs under the VOLE sender's `Δ`.
//!
//! Everything the silent generators need reduces to one kind of base correlation, a batch of
//! correlated OTs whose global offset is the VOLE's `Δ`:
//!
//! ```text
//!   sender:   Δ, q_i                 receiver:  r_i ∈ {0,1}, t_i = q_i ⊕ r_i·Δ
//! ```
//!
//! which is exactly a subfield VOLE (`C = B + A·Δ` with `A = r`, `B = q`, `C = t`). IKNP/KOS OT
//! extension produces it with `Δ` = the sender's base-OT choice string; an earlier silent
//! extension produces it for free (bootstrapping). GF(2^128) base VOLEs are derived from 128
//! such COTs at a time without interaction (`Σ t_j·X^j = Σ q_j·X^j + (Σ r_j·X^j)·Δ`).
//!
//! [`SenderBase`] / [`ReceiverBase`] hold such a batch; the generators take them in
//! `from_base` constructors, so a higher protocol can set the base up once (by OT extension,
//! or by a trusted setup in tests) and extend many times.

use obliv_core::Block;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// The sender's half of a batch of base correlated OTs: `Δ` and the `q_i`.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SenderBase {
    pub(crate) delta: Block,
    pub(crate) q: Vec<Block>,
}

impl SenderBase {
    /// Wraps `Δ` and the sender's COT values `q_i` (with `t_i = q_i ⊕ r_i·Δ` at the receiver).
    pub fn new(delta: Block, q: Vec<Block>) -> Self {
        SenderBase { delta, q }
    }

    /// The number of correlations.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// `Δ`.
    pub fn delta(&self) -> Block {
        self.delta
    }
}

impl core::fmt::Debug for SenderBase {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SenderBase {{ len: {}, .. }}", self.q.len())
    }
}

/// The receiver's half of a batch of base correlated OTs: the bits `r_i` (one per byte, 0 or
/// 1) and the blocks `t_i = q_i ⊕ r_i·Δ`.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct ReceiverBase {
    pub(crate) r: Vec<u8>,
    pub(crate) t: Vec<Block>,
}

impl ReceiverBase {
    /// Wraps the receiver's choice bits (`0` or `1` each) and its COT values.
    ///
    /// # Errors
    /// [`crate::Error::MalformedBase`] if the lengths differ or a choice is not a bit.
    /// The rejected vectors are zeroized.
    pub fn new(r: Vec<u8>, t: Vec<Block>) -> crate::Result<Self> {
        let reason = if r.len() != t.len() {
            "choice bits and COT blocks differ in number"
        } else if r.iter().any(|b| *b > 1) {
            "a choice bit is neither 0 nor 1"
        } else {
            return Ok(ReceiverBase { r, t });
        };
        let (mut r, mut t) = (r, t);
        r.zeroize();
        t.zeroize();
        Err(crate::Error::MalformedBase { reason })
    }

    /// The number of correlations.
    pub fn len(&self) -> usize {
        self.t.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }
}

impl core::fmt::Debug for ReceiverBase {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ReceiverBase {{ len: {}, .. }}", self.t.len())
    }
}

/// **Insecure** trusted dealer: samples `Δ` and `n` base COTs for both parties from one RNG.
///
/// For tests, benchmarks and examples only (enable the `dealer` feature): whoever runs it
/// knows both parties' secrets. Real deployments use the generators' `new` constructors,
/// which run base OT and OT extension.
#[cfg(any(test, feature = "dealer"))]
pub fn dealer<R: rand_core::CryptoRng + ?Sized>(
    n: usize,
    rng: &mut R,
) -> (SenderBase, ReceiverBase) {
    let delta = Block::random(rng);
    let q: Vec<Block> = (0..n).map(|_| Block::random(rng)).collect();
    let mut bits = vec![0u8; n];
    rng.fill_bytes(&mut bits);
    for b in &mut bits {
        *b &= 1;
    }
    let t = q
        .iter()
        .zip(&bits)
        .map(|(q, r)| q.xor_if(delta, subtle::Choice::from(*r)))
        .collect();
    (SenderBase { delta, q }, ReceiverBase { r: bits, t })
}
