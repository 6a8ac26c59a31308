//! One party of a two-party PSI session (ECDH, KKRT16, RR22) with small, fixed settings, for
//! the session targets and their seeds.
//!
//! Input of a session target: `mode ‖ items ‖ script`. Bit 0 of `mode` is this side's role
//! (0: receiver, 1: sender), the bits above it pick the curve or variant; `items` (mod 33) is
//! this side's set size; `script` is the peer's frames ([`crate::frames`]). The session runs
//! twice (two buckets), so a second run after a first that succeeded is reached too.

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_ec::Curve;
use obliv_net::Channel;
use obliv_psi::ecdh::{EcdhConfig, EcdhSession};
use obliv_psi::kkrt::{KkrtConfig, KkrtSession};
use obliv_psi::rr22::{Rr22Config, Rr22Session, Variant};
use obliv_psi::{PsiSession, Role};

/// Most items a peer may announce in the targets: keeps every allocation small.
pub const MAX_PEER_ITEMS: usize = 256;

/// Which protocol a session target runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// ECDH-PSI.
    Ecdh,
    /// KKRT16.
    Kkrt,
    /// RR22 (all three variants).
    Rr22,
}

/// The role a mode byte gives.
pub fn role_of(mode: u8) -> Role {
    if mode & 1 == 0 {
        Role::Receiver
    } else {
        Role::Sender
    }
}

/// This side's items for an `items` byte.
pub fn items_of(items: u8) -> Vec<[u8; 8]> {
    (0..u64::from(items % 33)).map(u64::to_le_bytes).collect()
}

/// The items the scripted peer held in a seed (half of them common with [`items_of`]).
pub fn peer_items(n: u8) -> Vec<[u8; 8]> {
    let n = u64::from(n % 33);
    (n / 2..n / 2 + n).map(u64::to_le_bytes).collect()
}

fn ecdh_config(mode: u8) -> EcdhConfig {
    let curve = Curve::ALL[usize::from(mode >> 1) % Curve::ALL.len()];
    EcdhConfig {
        curve,
        batch_size: 8,
        window: 2,
        broadcast: mode & 0x80 != 0,
        max_peer_items: MAX_PEER_ITEMS,
        ..EcdhConfig::default()
    }
}

fn kkrt_config() -> KkrtConfig {
    KkrtConfig {
        max_peer_items: MAX_PEER_ITEMS,
        ..KkrtConfig::default()
    }
}

fn rr22_config(mode: u8) -> Rr22Config {
    let variant = [Variant::Fast, Variant::LowComm, Variant::Malicious][usize::from(mode >> 1) % 3];
    Rr22Config {
        bin_size: 64,
        max_peer_items: MAX_PEER_ITEMS,
        ..Rr22Config::new(variant)
    }
}

/// Two buckets of one session: ends with the first error, or `Ok` after both.
fn two_runs<S: PsiSession, C: Channel + ?Sized>(
    mut s: S,
    ch: &mut C,
    items: &[[u8; 8]],
    rng: &mut AesRng,
) -> obliv_psi::Result<()> {
    ch.set_max_frame_len(s.max_frame_len());
    for _ in 0..2 {
        let out = s.run(ch, items, rng)?;
        if let Some(idx) = out {
            // A result is a set of indices of our own items, ascending.
            assert!(idx.windows(2).all(|w| w[0] < w[1]), "{idx:?}");
            assert!(idx.iter().all(|&i| i < items.len()), "{idx:?}");
        }
    }
    Ok(())
}

/// Runs one side of `family` (mode and items as in the [module documentation](self)) over
/// `ch` with a fixed RNG seed.
pub fn run_side<C: Channel + ?Sized>(
    family: Family,
    mode: u8,
    items: &[[u8; 8]],
    seed: u8,
    ch: &mut C,
) -> obliv_psi::Result<()> {
    let role = role_of(mode);
    let mut rng = AesRng::from_seed([seed; 16]);
    match family {
        Family::Ecdh => two_runs(
            EcdhSession::new(role, &ecdh_config(mode))?,
            ch,
            items,
            &mut rng,
        ),
        Family::Kkrt => two_runs(KkrtSession::new(role, &kkrt_config())?, ch, items, &mut rng),
        Family::Rr22 => two_runs(
            Rr22Session::new(role, &rr22_config(mode))?,
            ch,
            items,
            &mut rng,
        ),
    }
}

/// The body of a session target.
pub fn fuzz_session(family: Family, data: &[u8]) {
    let (mode, items, script) = match data {
        [m, n, rest @ ..] => (*m, *n, rest),
        _ => return,
    };
    let mut ch = crate::ScriptedChannel::new(script);
    // Ok or a typed error; a panic is the finding.
    let _ = run_side(family, mode, &items_of(items), 1, &mut ch);
}

/// A seed for a session target: this side (`mode`, `items`) runs against an honest peer in
/// memory, and the frames it received become the script.
pub fn seed(family: Family, mode: u8, items: u8) -> Vec<u8> {
    let (a, mut b) = obliv_net::mem_pair();
    let peer_mode = mode ^ 1;
    let peer = std::thread::spawn(move || {
        let _ = run_side(family, peer_mode, &peer_items(items), 2, &mut b);
    });
    let mut rec = crate::Recorder::new(a);
    let _ = run_side(family, mode, &items_of(items), 1, &mut rec);
    // Hang up first: the peer may still wait for a message of ours.
    let received = rec.into_received();
    let _ = peer.join();
    let mut out = vec![mode, items];
    out.extend_from_slice(&crate::encode_frames(&received));
    out
}
