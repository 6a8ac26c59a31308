//! Base OT: the Chou–Orlandi "simplest OT" on Ristretto255, with the transcript hashed into
//! every key.
//!
//! # Protocol ([CO15], batched, with the fix of [MRR21])
//!
//! `G` is the Ristretto255 base point, `H` a random oracle (BLAKE3 in key-derivation mode,
//! domain `"obliv-ot co15 base ot v1"`), and the batch holds `n` OTs, `i ∈ [0, n)`.
//!
//! 1. Sender: `a ← Z_q`, `A = a·G`, `T = a·A`; sends `A` (32 bytes).
//! 2. Receiver, for each `i` with choice bit `c_i`: `b_i ← Z_q`,
//!    `B_i = b_i·G + c_i·A` (the `c_i·A` term by a constant-time select); sends all `B_i`
//!    in one message (32·n bytes). Its key is `k_i = H(i, A, B_i, b_i·A)`.
//! 3. Sender: `k_i^0 = H(i, A, B_i, a·B_i)`, `k_i^1 = H(i, A, B_i, a·B_i − T)`.
//!
//! Since `a·B_i = a·b_i·G + c_i·T`, the receiver's key equals `k_i^{c_i}`. This is a *random*
//! OT (one message each way, one round trip in total); [`send_chosen`]/[`receive_chosen`] add
//! one more sender message `(m_i^0 ⊕ k_i^0, m_i^1 ⊕ k_i^1)` for chosen messages.
//!
//! Cost per OT: the sender one variable-base scalar multiplication, the receiver one
//! fixed-base and one variable-base multiplication.
//!
//! # Security
//!
//! Semi-honest security under the computational Diffie–Hellman assumption in Ristretto255 in
//! the random-oracle model: the receiver's `B_i` is a uniformly random group element whatever
//! `c_i` is (perfect receiver privacy), and `k_i^{1−c_i}` is the hash of a CDH value the
//! receiver cannot compute.
//!
//! The original paper claimed UC security against malicious parties; that proof was found
//! flawed: Genç, Iovino and Rial (ePrint 2017/370) and Hauck and Loss (ePrint 2017/1011)
//! showed that the simulator cannot extract a malicious receiver's choice bits, and that
//! without the sender's message in the hash a batch's keys can be related across instances.
//! The fix taken here is the one analysed by McQuoid, Rosulek and Roy, "Batching Base
//! Oblivious Transfers" (ASIACRYPT 2021, ePrint 2021/682): every key hashes the whole
//! transcript of its instance (`A`, `B_i`) and the instance index `i`, so keys of different
//! instances and different sessions are independent random-oracle outputs. We claim
//! semi-honest security and use these OTs as the base of semi-honest OT extension; we do not
//! present this protocol as UC-secure against a malicious receiver.
//!
//! Hostile input: the sender rejects a `B_i` that does not decode as a Ristretto point or is
//! the identity; the receiver rejects an `A` that does not decode or is the identity
//! (Ristretto255 is a prime-order group, so decoding leaves no small-order points to check).
//! Message lengths are checked before anything is allocated. The secret scalars and the
//! Diffie–Hellman points are wiped on every exit, errors included.
//!
//! [CO15]: https://eprint.iacr.org/2015/267
//! [MRR21]: https://eprint.iacr.org/2021/682

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use obliv_core::Block;
use obliv_net::{Channel, ChannelExt};
use rand_core::CryptoRng;
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::error::{Error, Result};

/// Domain-separation string of the key-derivation random oracle.
const DOMAIN: &str = "obliv-ot co15 base ot v1";

/// Largest batch accepted in one call (a guard against absurd sizes, not a protocol limit).
pub const MAX_BASE_OTS: usize = 1 << 20;

/// The base-OT sender's output: `n` pairs of random 128-bit messages `(m_i^0, m_i^1)`.
///
/// Zeroized on drop; `Debug` shows only the count.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SenderBaseOts {
    /// `messages[i] = [m_i^0, m_i^1]`.
    pub messages: Vec<[Block; 2]>,
}

/// The base-OT receiver's output: choice bits `c_i` and the chosen messages `m_i^{c_i}`.
///
/// Zeroized on drop; `Debug` shows only the count.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct ReceiverBaseOts {
    /// The choice bits `c_i`.
    pub choices: Vec<bool>,
    /// `messages[i] = m_i^{c_i}`.
    pub messages: Vec<Block>,
}

impl core::fmt::Debug for SenderBaseOts {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SenderBaseOts({} OTs)", self.messages.len())
    }
}

impl core::fmt::Debug for ReceiverBaseOts {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ReceiverBaseOts({} OTs)", self.messages.len())
    }
}

impl SenderBaseOts {
    /// Number of OTs.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are no OTs.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

impl ReceiverBaseOts {
    /// Number of OTs.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are no OTs.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

/// Correlated base OTs made locally from one RNG, **for tests and benchmarks only**: both
/// outputs come from the same process, so nothing is oblivious. It lets protocol tests and
/// benches skip the public-key work; real use runs [`send_random`]/[`receive_random`] (or
/// `Sender::setup`/`Receiver::setup` of the extension protocols, which do).
pub fn insecure_dealer<R: CryptoRng + ?Sized>(
    n: usize,
    rng: &mut R,
) -> (SenderBaseOts, ReceiverBaseOts) {
    let mut messages = Vec::with_capacity(n);
    let mut choices = Vec::with_capacity(n);
    let mut chosen = Vec::with_capacity(n);
    for _ in 0..n {
        let pair = [Block::random(rng), Block::random(rng)];
        let c = (rng.next_u32() & 1) == 1;
        messages.push(pair);
        choices.push(c);
        chosen.push(pair[usize::from(c)]);
    }
    (
        SenderBaseOts { messages },
        ReceiverBaseOts {
            choices,
            messages: chosen,
        },
    )
}

fn check_n(n: usize) -> Result<()> {
    if n > MAX_BASE_OTS {
        return Err(Error::InvalidArgument(format!(
            "{n} base OTs requested, at most {MAX_BASE_OTS} per call"
        )));
    }
    Ok(())
}

/// A peer's point: it must decode as a Ristretto point and must not be the identity (the
/// group has prime order, so these are the only checks). `what`/`index` name it in the error.
fn decode_nonidentity(
    bytes: &[u8; 32],
    what: &'static str,
    index: usize,
) -> Result<RistrettoPoint> {
    let p = CompressedRistretto(*bytes)
        .decompress()
        .ok_or(Error::InvalidPoint { what, index })?;
    if bool::from(p.ct_eq(&RistrettoPoint::identity())) {
        return Err(Error::InvalidPoint { what, index });
    }
    Ok(p)
}

/// `H(i, A, B, P)` truncated to a block.
fn kdf(i: usize, a: &[u8; 32], b: &[u8; 32], p: &RistrettoPoint) -> Block {
    let mut input = [0u8; 8 + 32 * 3];
    input[..8].copy_from_slice(&(i as u64).to_le_bytes());
    input[8..40].copy_from_slice(a);
    input[40..72].copy_from_slice(b);
    input[72..].copy_from_slice(p.compress().as_bytes());
    let mut h = obliv_core::hash::ro_hash(DOMAIN, &input);
    let mut out = [0u8; 16];
    out.copy_from_slice(&h[..16]);
    input.zeroize();
    h.zeroize();
    Block::from_bytes(out)
}

/// The sender of `n` random base OTs: returns `(m_i^0, m_i^1)` for `i < n`.
///
/// Sends `A`, then receives the receiver's `n` points (see the module documentation).
pub fn send_random<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    channel: &mut C,
    n: usize,
    rng: &mut R,
) -> Result<SenderBaseOts> {
    check_n(n)?;
    let a = Zeroizing::new(Scalar::random(rng));
    let big_a = RistrettoPoint::mul_base(&a);
    let t = Zeroizing::new(*a * big_a);
    let a_bytes = big_a.compress().to_bytes();
    channel.send(&a_bytes)?;
    channel.flush()?;
    let bs: Vec<[u8; 32]> = channel.recv_pod_exact(n)?;
    // Keys made so far are wiped if a later point is rejected.
    let mut out = SenderBaseOts {
        messages: Vec::with_capacity(n),
    };
    for (i, b_bytes) in bs.iter().enumerate() {
        let b = decode_nonidentity(b_bytes, "base OT receiver points", i)?;
        let p0 = Zeroizing::new(*a * b);
        let p1 = Zeroizing::new(*p0 - *t);
        out.messages.push([
            kdf(i, &a_bytes, b_bytes, &p0),
            kdf(i, &a_bytes, b_bytes, &p1),
        ]);
    }
    Ok(out)
}

/// The receiver of random base OTs with the given choice bits: returns `m_i^{c_i}`.
pub fn receive_random<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    channel: &mut C,
    choices: &[bool],
    rng: &mut R,
) -> Result<ReceiverBaseOts> {
    let n = choices.len();
    check_n(n)?;
    let a_bytes: [u8; 32] = channel.recv_array()?;
    let big_a = decode_nonidentity(&a_bytes, "base OT sender point A", 0)?;
    // The secret scalars `b_i`: wiped on every exit, errors included.
    let mut scalars: Zeroizing<Vec<Scalar>> = Zeroizing::new(Vec::with_capacity(n));
    let mut bs = Vec::with_capacity(n);
    for &c in choices {
        let b = Scalar::random(rng);
        let p = RistrettoPoint::mul_base(&b);
        let q = RistrettoPoint::conditional_select(&p, &(p + big_a), Choice::from(u8::from(c)));
        bs.push(q.compress().to_bytes());
        scalars.push(b);
    }
    channel.send_pod(&bs)?;
    channel.flush()?;
    let mut messages = Vec::with_capacity(n);
    for (i, (b, b_bytes)) in scalars.iter().zip(&bs).enumerate() {
        let p = Zeroizing::new(b * big_a);
        messages.push(kdf(i, &a_bytes, b_bytes, &p));
    }
    Ok(ReceiverBaseOts {
        choices: choices.to_vec(),
        messages,
    })
}

/// The sender of chosen-message base OTs: the receiver learns `messages[i][c_i]`.
///
/// Runs [`send_random`] and then sends `m_i^b ⊕ k_i^b` for both `b`.
pub fn send_chosen<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    channel: &mut C,
    messages: &[[Block; 2]],
    rng: &mut R,
) -> Result<()> {
    let keys = send_random(channel, messages.len(), rng)?;
    let ct: Vec<[Block; 2]> = keys
        .messages
        .iter()
        .zip(messages)
        .map(|(k, m)| [k[0] ^ m[0], k[1] ^ m[1]])
        .collect();
    channel.send_pod(&ct)?;
    channel.flush()?;
    Ok(())
}

/// The receiver of chosen-message base OTs: returns `m_i^{c_i}`.
pub fn receive_chosen<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    channel: &mut C,
    choices: &[bool],
    rng: &mut R,
) -> Result<Vec<Block>> {
    let keys = receive_random(channel, choices, rng)?;
    let ct: Vec<[Block; 2]> = channel.recv_pod_exact(choices.len())?;
    Ok(ct
        .iter()
        .zip(&keys.messages)
        .zip(choices)
        .map(|((pair, k), &c)| {
            Block::conditional_select(&pair[0], &pair[1], Choice::from(u8::from(c))) ^ *k
        })
        .collect())
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_net::mem_pair;
    use rand_core::SeedableRng;

    fn run(choices: Vec<bool>) -> (SenderBaseOts, ReceiverBaseOts) {
        let (mut a, mut b) = mem_pair();
        let n = choices.len();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([1; 16]);
            send_random(&mut a, n, &mut rng).unwrap()
        });
        let mut rng = AesRng::from_seed([2; 16]);
        let r = receive_random(&mut b, &choices, &mut rng).unwrap();
        (t.join().unwrap(), r)
    }

    #[test]
    fn random_ots_agree() {
        for n in [0usize, 1, 5, 128] {
            let choices: Vec<bool> = (0..n).map(|i| (i * 7 + 3) % 5 < 2).collect();
            let (s, r) = run(choices.clone());
            assert_eq!(s.len(), n);
            assert_eq!(r.len(), n);
            for i in 0..n {
                let c = usize::from(choices[i]);
                assert_eq!(s.messages[i][c], r.messages[i]);
                assert_ne!(s.messages[i][1 - c], r.messages[i]);
            }
        }
    }

    #[test]
    fn chosen_ots_deliver_the_chosen_message() {
        let (mut a, mut b) = mem_pair();
        let msgs: Vec<[Block; 2]> = (0..40u128).map(|i| [Block(i), Block(1000 + i)]).collect();
        let m2 = msgs.clone();
        let t = std::thread::spawn(move || {
            send_chosen(&mut a, &m2, &mut AesRng::from_seed([3; 16])).unwrap();
        });
        let choices: Vec<bool> = (0..40).map(|i| i % 3 == 0).collect();
        let got = receive_chosen(&mut b, &choices, &mut AesRng::from_seed([4; 16])).unwrap();
        t.join().unwrap();
        for i in 0..40 {
            assert_eq!(got[i], msgs[i][usize::from(choices[i])]);
        }
    }

    #[test]
    fn hostile_messages_are_typed_errors() {
        // Receiver sends a point that does not decode.
        let (mut a, mut b) = mem_pair();
        b.send(&[0xffu8; 64]).unwrap();
        let e = send_random(&mut a, 2, &mut AesRng::from_seed([5; 16])).unwrap_err();
        assert!(matches!(e, Error::InvalidPoint { index: 0, .. }), "{e}");
        // Receiver sends too few points.
        let (mut a, mut b) = mem_pair();
        b.send(&[0u8; 32]).unwrap();
        let e = send_random(&mut a, 2, &mut AesRng::from_seed([5; 16])).unwrap_err();
        assert!(matches!(e, Error::Net(_)), "{e}");
        // Sender sends the identity or garbage as A, or a short message.
        for bad in [vec![0u8; 32], vec![0xffu8; 32], vec![1u8; 5]] {
            let (mut a, mut b) = mem_pair();
            a.send(&bad).unwrap();
            let e = receive_random(&mut b, &[true], &mut AesRng::from_seed([6; 16])).unwrap_err();
            assert!(
                matches!(e, Error::InvalidPoint { .. } | Error::Net(_)),
                "{e}"
            );
        }
    }

    /// Regression: the sender accepted the identity as a receiver point `B_i` (only `A` was
    /// checked), though the brief of this module is that no peer point may be the identity.
    #[test]
    fn identity_receiver_point_is_rejected() {
        let mut msg = [0u8; 64];
        msg[32..].copy_from_slice(RistrettoPoint::mul_base(&Scalar::ONE).compress().as_bytes());
        for (bad, index) in [
            (msg, 0usize),
            (
                {
                    let mut m = [0u8; 64];
                    m[..32].copy_from_slice(&msg[32..]);
                    m
                },
                1,
            ),
        ] {
            let (mut a, mut b) = mem_pair();
            b.send(&bad).unwrap();
            let e = send_random(&mut a, 2, &mut AesRng::from_seed([7; 16])).unwrap_err();
            assert!(
                matches!(e, Error::InvalidPoint { index: i, .. } if i == index),
                "{e}"
            );
        }
    }

    #[test]
    fn dealer_outputs_are_correlated() {
        let (s, r) = insecure_dealer(50, &mut AesRng::from_seed([9; 16]));
        for i in 0..50 {
            assert_eq!(s.messages[i][usize::from(r.choices[i])], r.messages[i]);
        }
        assert_eq!(format!("{s:?}"), "SenderBaseOts(50 OTs)");
    }
}
