//! RR22 malicious: the fast variant on maliciously secure VOLE, with a coin-tossed key `w` in
//! a Davies–Meyer output hash and 16-byte comparison values.
//!
//! RR22 (§4, "Malicious instantiation") runs the malicious PSI protocol of Rindal and
//! Schoppmann, "VOLE-PSI: Fast OPRF and Circuit-PSI from Vector-OLE" (Eurocrypt 2021,
//! [ePrint 2021/266], §5) with the RR22 OKVS; the reference code is volePSI's
//! `RsOprfSender`/`RsOprfReceiver` with `mMalicious = true` and `RsPsi` with 16-byte masks.
//! The message flow here:
//!
//! 1. Hello (protocol 12). S samples `w_s` and sends the commitment
//!    `c = BLAKE3-derive-key("obliv-psi rr22 v1 coin commitment", w_s)` (32 bytes).
//! 2. Maliciously secure silent GF(2^128) VOLE of length `m` ([`vole_send`]/[`vole_receive`]):
//!    base correlated OTs from SoftSpokenOT with its consistency check (`k = 4`), then the
//!    silent VOLE of `obliv-vole` with [`Security::Malicious`] (the Ferret/libOTe check of
//!    the GGM trees and the noise).
//! 3. R encodes `P` as in the fast variant and sends the OKVS seed, its share `w_r` and
//!    `A' = A ⊕ P`.
//! 4. Only then S opens `w_s`; R checks it against `c` (abort otherwise) and both use
//!    `w = w_r ⊕ w_s`. Since S committed before seeing `w_r` and R sent `w_r` before seeing
//!    `w_s`, `w` is uniform if either party is honest; R learns it only after it has fixed
//!    `A'` (volePSI opens `w_s` before receiving `A'`; opening later gives R no more power).
//! 5. S sends `F(y) = DM(Decode(K, k_y) ⊕ h(k_y)·Δ ⊕ w, k_y)` for its items, sorted, without
//!    repeats, 16 bytes each; R outputs the `x` with `DM(Decode(C, k_x) ⊕ w, k_x)` among them.
//!
//! `DM(u, v) = AES_u(v) ⊕ v` is the Davies–Meyer compression function exactly as in volePSI
//! (`oc::AES(o ^ w).hashBlock(v)`: the OPRF value plus `w` is the AES *key*, the item key the
//! plaintext), modelled as a random oracle `H(u, x)` in RS21's proof. Putting the item in
//! the hash input is what lets the simulator extract a malicious sender's set from its
//! random-oracle queries, and `w` stops it from making those queries before the protocol
//! fixes the VOLE correlation.
//!
//! # Security model and leakage
//!
//! - **Malicious sender, honest receiver.** The silent VOLE's consistency check aborts a
//!   sender that cheats in the GGM trees (selective failure on R's noise positions); `A'`
//!   is uniform whatever S does; `w` is uniform; every value S sends must be a
//!   random-oracle output `DM(·, k_y)` for the comparison to hit, so S's effective input is
//!   the set of items it queried (RS21, Thm. 5.3). A cheating sender can make R abort (and
//!   learn that it aborted); it learns nothing about `X` beyond `n_r`.
//! - **Malicious receiver, honest sender.** R learns the intersection of `Y` with the set of
//!   items whose `h` it encoded; as in RS21 and every OKVS-based malicious PSI, a malicious
//!   receiver's effective set is not limited to `n_r` items: it is bounded by the OKVS size
//!   `m ≈ 1.35·n_r` (the encoding has `m` degrees of freedom) and by its random-oracle
//!   queries. Base COTs come from SoftSpokenOT with its consistency check, so a receiver
//!   sending inconsistent corrections to learn bits of `Δ` is caught. **Caveats that limit
//!   the claim to "malicious as far as the building blocks are"**: obliv-ot states that its
//!   base OTs (Chou–Orlandi with the MRR21 transcript hashing) are claimed semi-honest only,
//!   and that its SoftSpokenOT check has not been cross-checked against the paper's
//!   malicious parameters (leaky-Δ analysis); the VOLE's malicious mode is the GGM/noise
//!   check of `obliv-vole`. We claim: the protocol is RS21's malicious protocol over these
//!   primitives, and it is as strong as they are.
//! - **Leakage** to either party: the set sizes `n_r`, `n_s` (the number of distinct items of
//!   S to R), and whether the peer aborted. The OKVS seed is chosen by R, as in RS21 and
//!   volePSI: it only shapes R's own encoding, which a malicious R picks freely anyway.
//! - **Correctness**: a false match needs a 128-bit collision of the random oracle
//!   (`≤ n_r·n_s·2^-128`); OKVS failures are retried with a new seed.
//!
//! [ePrint 2021/266]: https://eprint.iacr.org/2021/266

use obliv_core::Block;
use obliv_core::aes::davies_meyer_many;
use obliv_net::Channel;
use obliv_vole::{Security, VoleConfig, VoleReceiver, VoleReceiverGen, VoleSender, VoleSenderGen};
use rand_core::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroize;

use super::vole_err;
use crate::error::Result;

/// SoftSpokenOT's `k` for the base COTs (4: 32 bits per OT on the wire, see obliv-ot), as
/// `obliv-vole`'s malicious base source uses it.
pub use obliv_vole::SOFTSPOKEN_K;

const DOMAIN_COMMIT: &str = "obliv-psi rr22 v1 coin commitment";

/// The commitment to a coin-toss share: BLAKE3 in key-derivation mode under its own domain
/// (a random oracle; `w_s` has 128 bits of entropy, so the commitment hides it, and it binds
/// by collision resistance).
pub(super) fn commit(w_s: Block) -> [u8; 32] {
    blake3::derive_key(DOMAIN_COMMIT, &w_s.to_bytes())
}

/// `z[i] ← AES_{z[i] ⊕ w}(k[i]) ⊕ k[i]`: the Davies–Meyer hash of volePSI's malicious mode,
/// in parallel batches of 1024, each through [`davies_meyer_many`] (one AES key schedule per
/// item, eight expanded side by side with AES-NI) with the keys `z[i] ⊕ w` in a scratch array
/// that is zeroized afterwards.
pub(super) fn dm_hash(keys: &[Block], z: &mut [Block], w: Block) {
    z.par_chunks_mut(1024)
        .zip(keys.par_chunks(1024))
        .for_each(|(z, k)| {
            let mut scratch = [Block::ZERO; 1024];
            let n = z.len().min(k.len());
            let key = &mut scratch[..n];
            for (key, &z) in key.iter_mut().zip(z.iter()) {
                *key = z ^ w;
            }
            davies_meyer_many(key, &k[..n], &mut z[..n]);
            scratch.zeroize();
        });
}

/// The malicious VOLE configuration.
fn config() -> VoleConfig {
    VoleConfig::with_security(Security::Malicious)
}

/// The malicious VOLE sender's generator (the PSI sender): `obliv-vole`'s malicious set-up
/// ([`VoleSenderGen::setup`] of a [`Security::Malicious`] configuration: SoftSpokenOT base
/// COTs, `k` = [`SOFTSPOKEN_K`], under a fresh `Δ` with the consistency check against the
/// receiver) feeding a malicious silent GF(2^128) VOLE generator, which an
/// [`Rr22Session`](super::Rr22Session) extends once per run. The peer runs
/// [`setup_receiver`].
///
/// # Errors
/// Network errors; [`Error::Ot`](crate::Error::Ot) if base OT or the SoftSpokenOT check fails.
pub fn setup_sender<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    rng: &mut R,
) -> Result<VoleSender> {
    <VoleSender as VoleSenderGen>::setup(ch, config(), rng).map_err(vole_err)
}

/// The malicious VOLE receiver's generator (the PSI receiver), the peer of
/// [`setup_sender`].
///
/// # Errors
/// Network errors; [`Error::Ot`](crate::Error::Ot) if base OT or the SoftSpokenOT check fails.
pub fn setup_receiver<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    rng: &mut R,
) -> Result<VoleReceiver> {
    <VoleReceiver as VoleReceiverGen>::setup(ch, config(), rng).map_err(vole_err)
}

/// One-shot malicious VOLE, sender side: [`setup_sender`] and one extension of length `m`.
/// Returns `(Δ, B)`.
///
/// # Errors
/// Network errors; [`Error::Ot`](crate::Error::Ot) if base OT or the SoftSpokenOT check fails; VOLE errors.
pub fn vole_send<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    m: usize,
    rng: &mut R,
) -> Result<(Block, Vec<Block>)> {
    let mut s = setup_sender(ch, rng)?;
    let b = s.extend(ch, m, rng).map_err(vole_err)?;
    Ok((s.delta(), b))
}

/// One-shot malicious VOLE, receiver side (the peer of [`vole_send`]): returns `(A, C)`
/// with `C = B ⊕ A·Δ`.
///
/// # Errors
/// Network errors; [`Error::Ot`](crate::Error::Ot) if base OT fails; [`crate::PeerMisbehaved::CheckFailed`]
/// if the VOLE consistency check detects a cheating sender.
pub fn vole_receive<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
    ch: &mut C,
    m: usize,
    rng: &mut R,
) -> Result<(Vec<Block>, Vec<Block>)> {
    setup_receiver(ch, rng)?
        .extend(ch, m, rng)
        .map_err(vole_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use obliv_core::AesRng;
    use obliv_core::aes::Aes;
    use obliv_core::gf128;
    use obliv_core::rand_core::SeedableRng;

    /// Davies–Meyer against its definition on single blocks, and the commitment binds.
    #[test]
    fn dm_hash_matches_definition() {
        let mut rng = AesRng::from_seed([5; 16]);
        let keys: Vec<Block> = (0..3000).map(|_| Block::random(&mut rng)).collect();
        let z0: Vec<Block> = (0..3000).map(|_| Block::random(&mut rng)).collect();
        let w = Block::random(&mut rng);
        let mut z = z0.clone();
        dm_hash(&keys, &mut z, w);
        for i in [0, 1, 1023, 1024, 2999] {
            assert_eq!(z[i], Aes::new(z0[i] ^ w).encrypt_block(keys[i]) ^ keys[i]);
        }
        assert_ne!(commit(w), commit(w ^ Block(1)));
    }

    /// Micro-timing at 2^20 items (`--ignored --nocapture`): `dm_hash` against the former
    /// one-`Aes::new`-per-item loop, same chunking, same output.
    #[test]
    #[ignore = "timing, run by hand"]
    fn dm_hash_timing() {
        let n = 1 << 20;
        let mut rng = AesRng::from_seed([6; 16]);
        let keys: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
        let z0: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
        let w = Block::random(&mut rng);
        let old = |z: &mut [Block]| {
            z.par_chunks_mut(1024)
                .zip(keys.par_chunks(1024))
                .for_each(|(z, k)| {
                    for (z, &k) in z.iter_mut().zip(k) {
                        *z = Aes::new(*z ^ w).encrypt_block(k) ^ k;
                    }
                });
        };
        let (mut a, mut b) = (z0.clone(), z0.clone());
        let best = |f: &mut dyn FnMut()| {
            (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    f();
                    t.elapsed()
                })
                .min()
                .unwrap()
        };
        let t_old = best(&mut || {
            a.copy_from_slice(&z0);
            old(&mut a);
        });
        let t_new = best(&mut || {
            b.copy_from_slice(&z0);
            dm_hash(&keys, &mut b, w);
        });
        assert_eq!(a, b);
        println!(
            "dm_hash 2^20 ({} threads): Aes::new loop {t_old:?}, davies_meyer_many {t_new:?}",
            rayon::current_num_threads()
        );
    }

    /// The SoftSpokenOT-based malicious VOLE yields the VOLE correlation.
    #[test]
    fn malicious_vole_correlates() {
        let (mut a, mut b) = obliv_net::mem_pair();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([2; 16]);
            vole_send(&mut b, 5000, &mut rng).unwrap()
        });
        let mut rng = AesRng::from_seed([1; 16]);
        let (aa, cc) = vole_receive(&mut a, 5000, &mut rng).unwrap();
        let (delta, bb) = t.join().unwrap();
        assert_eq!((aa.len(), bb.len()), (5000, 5000));
        assert!((0..5000).all(|i| cc[i] == bb[i] ^ gf128::mul(aa[i], delta)));
    }
}
