//! ECDH-PSI among three parties (semi-honest); one party, the receiver, learns the result.
//!
//! # Protocol
//!
//! The receiver `C` holds key `c`; the two other parties are `P` (the lower rank) with key `a`
//! and `Q` with key `b`. `H` hashes to the group, `T` truncates a hash of a group element.
//!
//! 1. `P` and `Q` exchange their masked, shuffled sets `H(x_P)^a` and `H(x_Q)^b`; each raises
//!    the other's to its own key and forwards the result to `C`: `P` sends the points
//!    `V = {H(x_Q)^{ab}}`, `Q` only the truncated hashes `T'(U)` of `U = {H(x_P)^{ab}}`
//!    (`C` needs group elements of one side only). `C` computes `W = {v ∈ V : T'(v) ∈ T'(U)}`,
//!    the doubly-masked intersection of `P` and `Q`, and `T(w^c)` for `w ∈ W`. `T'` keeps
//!    `⌈(40 + log₂ n_P + log₂ n_Q)/8⌉` bytes, so a false member of `W` has probability at
//!    most 2^-40; sending hashes instead of points saves about a tenth of the traffic.
//! 2. `C` sends `H(x_C)^c` in its own order to `P`, which raises it to `a` and forwards it to
//!    `Q`, which raises it to `b` and returns `T(H(x_C)^{cab})` to `C`.
//! 3. `C` outputs the indices of its items whose value lies in `T(W^c)`.
//!
//! This is the construction SecretFlow's three-party ECDH-PSI uses, with the same number of
//! group operations per item.
//!
//! # Security and leakage
//!
//! Semi-honest, non-colluding parties; DDH in the group, `H` a random oracle. **`C` learns
//! `|X_P ∩ X_Q|`**, the size of the intersection of the two other parties' sets (the size of
//! `W`), in addition to the three-way intersection and every set size; `P` and `Q` learn the
//! set sizes only. The shuffles hide where common items sit in `P`'s and `Q`'s inputs. We know
//! of no construction at the same cost (three exponentiations per item, no OPRF or circuit)
//! that avoids revealing `|X_P ∩ X_Q|` to the receiver; a caller for whom that size is
//! sensitive should use a two-party protocol between the receiver and a party holding
//! `X_P ∩ X_Q`, or a circuit-based PSI.
//!
//! # Streaming and deadlock freedom
//!
//! Every stream moves in batches, and each party interleaves its sends and receives batch by
//! batch in an order that never waits on a message that the peer can only send after hearing
//! from us, so bounded network buffers cannot deadlock the three parties.

use std::collections::HashSet;

use obliv_core::psi_compare_bytes;
use obliv_ec::{DynGroup, SecretKey};
use obliv_net::{Channel, Session};
use rand::seq::SliceRandom;
use rand_core::CryptoRng;

use crate::ecdh::{
    EcdhConfig, MAX_BATCH, RngAdapter, STAT_SECURITY, batch_len, code_name, curve_code, frame,
    pack, parse, truncate,
};
use crate::error::{Error, Result};
use crate::handshake::{self, Hello};

/// Protocol identifier of three-party ECDH-PSI in the handshake.
const PROTOCOL_ID: u8 = 2;
/// Message layout of this version, in the handshake's parameter field: 1 = `Q` forwards
/// truncated hashes of `U`, not points (an older peer sends 0 and is refused before any
/// item-dependent data).
const LAYOUT: u64 = 1;
/// Role codes in the handshake.
const ROLE_C: u8 = 0;
const ROLE_P: u8 = 1;
const ROLE_Q: u8 = 2;

const TAG_OWN: u8 = 1;
const TAG_FORWARD: u8 = 2;
const TAG_FINAL: u8 = 3;

/// Runs three-party ECDH-PSI as party `session.rank()` of a three-party session; `receiver`
/// is the rank of the party that learns the result.
///
/// Returns `Some(indices)` (ascending indices of `items` in the three-way intersection) for
/// the receiver and `None` for the others. `cfg.broadcast` is not supported for three parties
/// (the others would need the receiver's positions mapped through two shuffles); it is an
/// [`Error::InvalidParameter`]. `cfg.window` is unused.
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
    let group = DynGroup::new(cfg.curve)?;
    let hello = |my_role: u8| Hello {
        protocol: PROTOCOL_ID,
        curve: curve_code(cfg.curve),
        role: my_role,
        flags: 0,
        batch: u32::try_from(cfg.batch_size).unwrap_or(u32::MAX),
        n_items: items.len() as u64,
        param: LAYOUT,
    };
    // Handshakes in rank order of the peers (each pair talks in both directions at once).
    let mut sizes = [0usize; 3];
    sizes[me] = items.len();
    for peer in [0, 1, 2].into_iter().filter(|&r| r != me) {
        let ch = session.channel(peer)?;
        let theirs = handshake::exchange(ch, &hello(role(me)), role(peer), code_name)?;
        sizes[peer] = usize::try_from(theirs.n_items)
            .map_err(|_| Error::Protocol("peer announced too many items".into()))?;
    }
    let key = group.random_secret(rng)?;
    let st = Three {
        group,
        key,
        batch: cfg.batch_size,
        n_p: sizes[p],
        n_q: sizes[q],
        n_c: sizes[receiver],
        w: psi_compare_bytes(
            STAT_SECURITY,
            sizes[receiver] as u64,
            sizes[p].min(sizes[q]) as u64,
        )
        .min(16),
        w_pq: psi_compare_bytes(STAT_SECURITY, sizes[p] as u64, sizes[q] as u64).min(16),
    };
    if me == receiver {
        let (to_p, to_q) = session.channel_pair(p, q)?;
        st.receiver(to_p, to_q, items).map(Some)
    } else if me == p {
        let (to_q, to_c) = session.channel_pair(q, receiver)?;
        st.helper(to_q, to_c, items, true, rng).map(|()| None)
    } else {
        let (to_p, to_c) = session.channel_pair(p, receiver)?;
        st.helper(to_p, to_c, items, false, rng).map(|()| None)
    }
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
    /// Width of `T'(U)`, the hashes `Q` forwards for `C`'s intersection of `U` and `V`.
    w_pq: usize,
}

impl Three {
    fn max_frame(&self) -> usize {
        5 + self.batch * self.group.encoded_len()
    }

    /// Receives frame `index` of kind `tag` holding `count` encoded points.
    fn recv_points<C: Channel + ?Sized>(
        &self,
        ch: &mut C,
        tag: u8,
        index: usize,
        count: usize,
    ) -> Result<Vec<u8>> {
        ch.flush()?;
        let f = ch.recv_max(self.max_frame())?;
        let (t, i, payload) = parse(&f)?;
        if t != tag || i != index || payload.len() != count * self.group.encoded_len() {
            return Err(Error::Protocol(format!(
                "expected batch {index} of kind {tag} with {count} points, got kind {t} batch {i} of {} bytes",
                payload.len()
            )));
        }
        Ok(payload.to_vec())
    }

    /// `P` (`first`) or `Q`: exchange masked sets with the other helper and forward the
    /// doubly-masked ones to `C`; then pass `C`'s items along the chain `C → P → Q → C`.
    fn helper<C, T, R>(
        &self,
        other: &mut C,
        to_c: &mut C,
        items: &[T],
        first: bool,
        rng: &mut R,
    ) -> Result<()>
    where
        C: Channel,
        T: AsRef<[u8]> + Sync,
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
                let batch: Vec<&[u8]> = idx.iter().map(|&j| items[j].as_ref()).collect();
                let masked = self.group.hash_and_mul_batch(&batch, &self.key)?;
                other.send_vec(frame(TAG_OWN, i, &masked)?)?;
            }
            if i < nb_other {
                let pts = self.recv_points(other, TAG_OWN, i, batch_len(i, n_other, b))?;
                let doubled = self.group.mul_encoded_batch(&pts, &self.key)?;
                if first {
                    // P forwards V as points: C raises the common ones to c.
                    to_c.send_vec(frame(TAG_OWN, i, &doubled)?)?;
                } else {
                    // Q forwards only T'(U): C just tests membership.
                    let t = truncate(&self.group.hash_encoded_batch(&doubled)?, self.w_pq);
                    to_c.send_vec(frame(TAG_OWN, i, &t)?)?;
                }
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

    /// `C`: collect `U` and `V`, intersect, then send its own items around the chain.
    fn receiver<C, T>(&self, to_p: &mut C, to_q: &mut C, items: &[T]) -> Result<Vec<usize>>
    where
        C: Channel,
        T: AsRef<[u8]> + Sync,
    {
        let b = self.batch;
        let len = self.group.encoded_len();
        // From P: the points V = Q's items under ab; from Q: T'(U), U = P's items under ab.
        let (nb_v, nb_u) = (self.n_q.div_ceil(b), self.n_p.div_ceil(b));
        let mut v: Vec<u8> = Vec::with_capacity(self.n_q * len);
        let mut u: HashSet<u128> = HashSet::with_capacity(self.n_p);
        for i in 0..nb_v.max(nb_u) {
            if i < nb_v {
                v.extend(self.recv_points(to_p, TAG_OWN, i, batch_len(i, self.n_q, b))?);
            }
            if i < nb_u {
                let count = batch_len(i, self.n_p, b);
                let f = to_q.recv_max(5 + b * self.w_pq)?;
                let (t, k, payload) = parse(&f)?;
                if t != TAG_OWN || k != i || payload.len() != count * self.w_pq {
                    return Err(Error::Protocol(format!(
                        "malformed batch {i} of hashed masked items from the second party"
                    )));
                }
                u.extend(payload.chunks_exact(self.w_pq).map(pack));
            }
        }
        let v_hashes = truncate(&self.group.hash_encoded_batch(&v)?, self.w_pq);
        let common: Vec<u8> = v
            .chunks_exact(len)
            .zip(v_hashes.chunks_exact(self.w_pq))
            .filter(|(_, h)| u.contains(&pack(h)))
            .flat_map(|(pt, _)| pt.iter().copied())
            .collect();
        drop(v);
        drop(u);
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
        let mut out = Vec::new();
        for j in 0..nb_c {
            let count = batch_len(j, self.n_c, b);
            let f = to_q.recv_max(5 + b * self.w)?;
            let (t, i, payload) = parse(&f)?;
            if t != TAG_FINAL || i != j || payload.len() != count * self.w {
                return Err(Error::Protocol(format!(
                    "malformed final batch {j} from the second party"
                )));
            }
            for (k, val) in payload.chunks_exact(self.w).enumerate() {
                if targets.contains(&pack(val)) {
                    out.push(j * b + k);
                }
            }
        }
        Ok(out)
    }
}
