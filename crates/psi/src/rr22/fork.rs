//! Forking an [`Rr22Session`] into child sessions with independent VOLE streams, without a
//! new base OT (the semi-honest variants).
//!
//! # The fork step
//!
//! Both parties call [`Rr22Session::split`] (or [`Rr22Session::fork`]) at the same point with
//! the same number of children `k`, over the channel of the parent session:
//!
//! 1. A [`Hello`] with flag bit 2 (so a peer that runs a bucket or forks another number of
//!    children instead stops with [`Error::HandshakeMismatch`]) and `k` as its item count.
//! 2. If the parent has no VOLE generator yet (no non-empty bucket ran), it is set up here
//!    (base OT + IKNP), exactly as a first run would.
//! 3. The parent extends `k·N` fresh correlations, `N` = [`VoleConfig::base_cots_needed`]:
//!    the sender gets `B`, the receiver `(A, C)` with `C = B ⊕ A·Δ` (`A ∈ GF(2^128)` for
//!    [`Variant::Fast`], `A ∈ GF(2^64)` for [`Variant::LowComm`]).
//! 4. *Derandomisation to correlated OTs* (the standard random-to-chosen-input step): the
//!    receiver draws bits `r_i`, sends `d_i = A_i ⊕ r_i` (16 or 8 bytes each), and the sender
//!    sets `q_i = B_i ⊕ d_i·Δ`. Then `C_i = B_i ⊕ A_i·Δ = q_i ⊕ r_i·Δ`: the `(q_i; r_i, C_i)`
//!    are correlated OTs under the same `Δ`, the base correlations `obliv-vole`'s generators
//!    start from (`from_base`, the way they bootstrap themselves).
//! 5. Child `j` gets correlations `j·N..(j+1)·N` as its base and its own generator.
//!
//! Each child is an ordinary session (its first run starts with its own [`Hello`]), tagged
//! with a lineage value derived from its parent's, the fork count and `j`: the tag is part
//! of every hello of the child (in the `param` field above the statistical security
//! parameter, which is all the field holds for a session that was not forked), so child `j`
//! of one side talking to child `j' ≠ j` of the other — whose VOLE outputs would not be
//! correlated, silently giving a wrong intersection — is a handshake mismatch instead.
//!
//! # Security (semi-honest)
//!
//! `d_i` is `r_i` masked by `A_i`, which is uniform and unknown to the sender (the VOLE's
//! receiver privacy) and used for nothing else, so the sender learns nothing about `r_i`;
//! the receiver learns nothing new (it receives nothing in the step). All children share the
//! sender's `Δ`, as all runs of one session already do: the children's correlations are
//! disjoint pieces of the parent's VOLE, each used once as a base COT, and every child
//! extends its own fresh outputs, each used for one OKVS only. The argument of "Security
//! across buckets" on [`Rr22Session`] then applies unchanged to the union of all buckets of
//! the parent and its children: each sender value outside the receiver's bucket involves
//! `e·Δ` with `e ≠ 0`, pseudorandom while `Δ` is hidden. The children's silent extensions
//! start the same tweak sequence for the correlation-robust hash; their hash inputs are
//! built from independent uniform base values, so a (value, tweak) pair repeats only with
//! negligible probability, which is what the tweakable CCR hash needs.
//!
//! # Malicious
//!
//! [`Variant::Malicious`] is refused ([`Error::InvalidParameter`], before anything is sent):
//! in step 4 a malicious receiver could send any `d_i`, making its "choice" `A_i ⊕ d_i` an
//! arbitrary field element instead of a bit; the child generators' consistency checks
//! protect the receiver against the sender, not this, and nothing here proves the `r_i` are
//! bits (SoftSpokenOT's check does that for the parent's base). Concurrent malicious buckets
//! use independent sessions instead (see the [`crate::session::PsiSession`] implementation).

use obliv_core::{Block, gf128};
use obliv_net::Channel;
use obliv_vole::{
    ReceiverBase, Security, SenderBase, Subfield64VoleReceiver, Subfield64VoleSender, VoleConfig,
    VoleReceiver, VoleSender, embed64,
};
use rand_core::CryptoRng;
use rayon::prelude::*;
use zeroize::{Zeroize, Zeroizing};

use super::session::{Slot, receiver_in, sender_in};
use super::{Generator, Generators, Rr22Session, Variant, code_name, vole_err};
use crate::error::{Error, Result};
use crate::handshake::{self, FLAG_FORK, Hello};
use crate::wire::Role;

/// Most children one fork step may create (bounds what a peer's hello can make this side
/// compute: `k·N` correlations, `N ≈` [`VoleConfig::base_cots_needed`]).
pub const MAX_CHILDREN: usize = 64;

/// Frame kind of the receiver's derandomisation values.
const TAG_FORK: u8 = 7;
/// Domain of the lineage tags of child sessions.
const DOMAIN_LINEAGE: &str = "obliv-psi rr22 v1 fork lineage";

/// The VOLE configuration of the semi-honest generators (as in `fast` and `lowcomm`).
fn vole_config() -> VoleConfig {
    VoleConfig::with_security(Security::SemiHonest)
}

/// The lineage tag of child `j` of the `fork`-th fork step of a session tagged `parent`: 48
/// bits of BLAKE3, never 0 (0 is the tag of a session that was not forked).
fn child_lineage(parent: u64, fork: u64, j: usize) -> u64 {
    let mut input = [0u8; 24];
    input[..8].copy_from_slice(&parent.to_le_bytes());
    input[8..16].copy_from_slice(&fork.to_le_bytes());
    input[16..].copy_from_slice(&(j as u64).to_le_bytes());
    let h = blake3::derive_key(DOMAIN_LINEAGE, &input);
    let mut t = [0u8; 8];
    t[..6].copy_from_slice(&h[..6]);
    u64::from_le_bytes(t) | 1
}

impl Rr22Session {
    /// One child session with its own VOLE stream: [`split`](Self::split) with one child.
    ///
    /// # Errors
    /// As [`split`](Self::split).
    pub fn fork<C, R>(&mut self, ch: &mut C, rng: &mut R) -> Result<Rr22Session>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        let mut v = self.split(ch, 1, rng)?;
        v.pop()
            .ok_or_else(|| Error::Protocol("fork produced no child".into()))
    }

    /// Splits off `children` child sessions, each with an independent VOLE stream derived
    /// from this session's (no new base OT; see the [module documentation](self) for the
    /// step and its security). The peer calls `split` on its session at the same point with
    /// the same count; child `j` of one side runs with child `j` of the other, each pair on
    /// a channel of its own if they run side by side (for instance sub-channels of an
    /// [`obliv_net::Mux`], as [`super::run_buckets`] does). This session stays usable.
    ///
    /// Traffic: a hello each way, the parent's VOLE extension of `children·N` correlations
    /// (`N` = [`VoleConfig::base_cots_needed`]) and `16·children·N` bytes (`8·children·N`
    /// for low-comm) from the receiver; plus the base OT if this session has not set up its
    /// generator yet.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for [`Variant::Malicious`] (not supported, see the module
    /// documentation; nothing is sent), for `children` outside `1..=`[`MAX_CHILDREN`], or if
    /// an earlier run or fork of this session failed;
    /// [`Error::HandshakeMismatch`] if the peer is not forking the same number of children
    /// at this point (or has other parameters); network, VOLE and protocol errors (a frame
    /// of the wrong kind or size). After an error this session refuses further use.
    pub fn split<C, R>(
        &mut self,
        ch: &mut C,
        children: usize,
        rng: &mut R,
    ) -> Result<Vec<Rr22Session>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        if self.failed {
            return Err(Error::InvalidParameter(
                "an earlier run of this RR22 session failed; open a new session".into(),
            ));
        }
        if self.cfg.variant == Variant::Malicious {
            return Err(Error::InvalidParameter(
                "rr22-malicious sessions cannot be forked (the derandomised base COTs would \
                 need a proof that the receiver's choices are bits); use independent sessions"
                    .into(),
            ));
        }
        if children == 0 || children > MAX_CHILDREN {
            return Err(Error::InvalidParameter(format!(
                "a fork makes 1..={MAX_CHILDREN} children, not {children}"
            )));
        }
        let r = self.split_inner(ch, children, rng);
        self.forks += 1;
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn split_inner<C, R>(
        &mut self,
        ch: &mut C,
        children: usize,
        rng: &mut R,
    ) -> Result<Vec<Rr22Session>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        let (cfg, role) = (self.cfg, self.role);
        let ours = Hello {
            protocol: cfg.variant.protocol_id(),
            curve: 0,
            role: role.code(),
            flags: FLAG_FORK,
            batch: self.hello_batch(),
            n_items: children as u64,
            param: self.hello_param(),
        };
        let theirs = handshake::exchange_stat(ch, &ours, role.other().code(), code_name)?;
        if theirs.n_items != ours.n_items {
            return Err(Error::HandshakeMismatch {
                field: "fork children",
                ours: children.to_string(),
                theirs: theirs.n_items.to_string(),
            });
        }
        let vcfg = vole_config();
        let per = vcfg.base_cots_needed();
        let total = per
            .checked_mul(children)
            .ok_or_else(|| Error::InvalidParameter("fork too large".into()))?;
        let v = &mut self.vole;
        let gens: Vec<Generators> = match (cfg.variant, role) {
            (Variant::Fast, Role::Receiver) => {
                let g = receiver_in(v.generator.gf128()?.receiver()?, ch, vcfg, rng)?;
                let (a, c) = g.extend(ch, total, rng).map_err(vole_err)?;
                let (a, c) = (Zeroizing::new(a), Zeroizing::new(c));
                check_len(a.len().min(c.len()), total)?;
                let r = derandomise_receiver(ch, total, 16, rng, |i, bit, buf| {
                    buf.extend_from_slice(&(a[i] ^ Block(u128::from(bit))).to_bytes());
                })?;
                receiver_children(&r, &c, per, children, |base| {
                    Ok(Generators::new(Generator::Gf128(Slot::Receiver(Some(
                        VoleReceiver::from_base(base, vcfg).map_err(vole_err)?,
                    )))))
                })?
            }
            (Variant::Fast, Role::Sender) => {
                let g = sender_in(v.generator.gf128()?.sender()?, ch, vcfg, rng)?;
                let mut q = Zeroizing::new(g.extend(ch, total, rng).map_err(vole_err)?);
                let delta = Zeroizing::new(g.delta());
                check_len(q.len(), total)?;
                derandomise_sender(ch, &mut q, *delta, 16, |x| {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(x);
                    Block::from_bytes(b)
                })?;
                sender_children(*delta, &q, per, children, |base| {
                    Ok(Generators::new(Generator::Gf128(Slot::Sender(Some(
                        VoleSender::from_base(base, vcfg).map_err(vole_err)?,
                    )))))
                })?
            }
            (Variant::LowComm, Role::Receiver) => {
                let g = receiver_in(v.generator.sub64()?.receiver()?, ch, vcfg, rng)?;
                let (a, c) = g.extend(ch, total, rng).map_err(vole_err)?;
                let (a, c) = (Zeroizing::new(a), Zeroizing::new(c));
                check_len(a.len().min(c.len()), total)?;
                let r = derandomise_receiver(ch, total, 8, rng, |i, bit, buf| {
                    buf.extend_from_slice(&(a[i] ^ u64::from(bit)).to_le_bytes());
                })?;
                receiver_children(&r, &c, per, children, |base| {
                    Ok(Generators::new(Generator::Sub64(Slot::Receiver(Some(
                        Subfield64VoleReceiver::from_base(base, vcfg).map_err(vole_err)?,
                    )))))
                })?
            }
            (Variant::LowComm, Role::Sender) => {
                let g = sender_in(v.generator.sub64()?.sender()?, ch, vcfg, rng)?;
                let mut q = Zeroizing::new(g.extend(ch, total, rng).map_err(vole_err)?);
                let delta = Zeroizing::new(g.delta());
                check_len(q.len(), total)?;
                derandomise_sender(ch, &mut q, *delta, 8, |x| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(x);
                    embed64(u64::from_le_bytes(b))
                })?;
                sender_children(*delta, &q, per, children, |base| {
                    Ok(Generators::new(Generator::Sub64(Slot::Sender(Some(
                        Subfield64VoleSender::from_base(base, vcfg).map_err(vole_err)?,
                    )))))
                })?
            }
            (Variant::Malicious, _) => {
                return Err(Error::InvalidParameter(
                    "rr22-malicious sessions cannot be forked".into(),
                ));
            }
        };
        let (lineage, fork) = (self.lineage, self.forks);
        Ok(gens
            .into_iter()
            .enumerate()
            .map(|(j, vole)| Rr22Session {
                role,
                cfg,
                runs: 0,
                failed: false,
                vole,
                lineage: child_lineage(lineage, fork, j),
                forks: 0,
            })
            .collect())
    }
}

/// Step 4 on the receiver's side: draws the bits `r_i` and sends `d_i = A_i ⊕ r_i`,
/// `width` bytes each, written by `encode(i, r_i, buf)`; returns the bits.
fn derandomise_receiver<C, R, F>(
    ch: &mut C,
    total: usize,
    width: usize,
    rng: &mut R,
    encode: F,
) -> Result<Zeroizing<Vec<u8>>>
where
    C: Channel + ?Sized,
    R: CryptoRng + ?Sized,
    F: Fn(usize, u8, &mut Vec<u8>),
{
    let r = random_bits(total, rng);
    super::send_chunks(ch, TAG_FORK, total, width, |i, buf| encode(i, r[i], buf))?;
    Ok(r)
}

/// Step 4 on the sender's side: receives the `d_i` (`width` bytes each, embedded in
/// GF(2^128) by `decode`) and sets `q_i ← B_i ⊕ d_i·Δ` in place.
fn derandomise_sender<C, F>(
    ch: &mut C,
    q: &mut [Block],
    delta: Block,
    width: usize,
    decode: F,
) -> Result<()>
where
    C: Channel + ?Sized,
    F: Fn(&[u8]) -> Block,
{
    let total = q.len();
    super::recv_chunks(ch, TAG_FORK, "fork", total, width, |start, payload| {
        let d: Vec<Block> = payload.chunks_exact(width).map(&decode).collect();
        add_scaled(&mut q[start..start + d.len()], &d, delta);
    })
}

/// Step 5 on the receiver's side: child `j` gets the correlated OTs `(r_i, C_i)` for
/// `i ∈ j·per..(j+1)·per`, made into its generator by `make`.
fn receiver_children<F>(
    r: &[u8],
    c: &[Block],
    per: usize,
    children: usize,
    make: F,
) -> Result<Vec<Generators>>
where
    F: Fn(ReceiverBase) -> Result<Generators>,
{
    (0..children)
        .map(|j| {
            let s = j * per..(j + 1) * per;
            make(ReceiverBase::new(r[s.clone()].to_vec(), c[s].to_vec()).map_err(vole_err)?)
        })
        .collect()
}

/// Step 5 on the sender's side: child `j` gets `(Δ, q_i)` for `i ∈ j·per..(j+1)·per`.
fn sender_children<F>(
    delta: Block,
    q: &[Block],
    per: usize,
    children: usize,
    make: F,
) -> Result<Vec<Generators>>
where
    F: Fn(SenderBase) -> Result<Generators>,
{
    (0..children)
        .map(|j| make(SenderBase::new(delta, q[j * per..(j + 1) * per].to_vec())))
        .collect()
}

fn check_len(got: usize, want: usize) -> Result<()> {
    if got != want {
        return Err(Error::Protocol("VOLE returned the wrong length".into()));
    }
    Ok(())
}

/// `n` uniformly random bits, one per byte (0 or 1).
fn random_bits<R: CryptoRng + ?Sized>(n: usize, rng: &mut R) -> Zeroizing<Vec<u8>> {
    let mut r = Zeroizing::new(vec![0u8; n]);
    rng.fill_bytes(&mut r);
    for b in r.iter_mut() {
        *b &= 1;
    }
    r
}

/// `out[i] ^= x[i]·Δ`, in parallel batches (the scratch products are zeroized).
fn add_scaled(out: &mut [Block], x: &[Block], delta: Block) {
    out.par_chunks_mut(4096)
        .zip(x.par_chunks(4096))
        .for_each(|(o, x)| {
            let mut t = vec![Block::ZERO; x.len()];
            gf128::scale_into(x, delta, &mut t);
            for (o, t) in o.iter_mut().zip(&t) {
                *o ^= *t;
            }
            t.zeroize();
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lineage_tags_differ_and_are_never_zero() {
        let mut seen = std::collections::HashSet::new();
        for parent in [0u64, 1, 12345] {
            for fork in 0..4 {
                for j in 0..8 {
                    let t = child_lineage(parent, fork, j);
                    assert_ne!(t, 0);
                    assert!(t < 1 << 48);
                    assert!(seen.insert(t));
                }
            }
        }
    }
}
