//! One party of three-party ECDH-PSI (`obliv_psi::ecdh3`) against two scripted peers, for the
//! `psi_ecdh3` target and its seeds.
//!
//! Input: `mode ‖ items ‖ len: u32 (LE) ‖ script_low ‖ script_high`. `mode % 3` is this
//! party's rank, `(mode / 3) % 3` the receiver's rank (so this party is the receiver `C` or one
//! of the helpers `P`, `Q`), and `mode / 9` picks the curve; `items` (mod 33) is this party's
//! set size. The first `len` bytes after the header (fewer if the input is shorter) are the
//! frames of the lower-ranked peer, the rest those of the higher-ranked one, each a script in
//! the format of [`crate::frames`].

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_ec::Curve;
use obliv_net::{Channel, Session};
use obliv_psi::ecdh::EcdhConfig;
use obliv_psi::ecdh3;

use crate::psi::{MAX_PEER_ITEMS, items_of, peer_items};
use crate::{Recorder, ScriptedChannel};

/// Parties of the protocol.
const PARTIES: usize = 3;

/// This party's rank, the receiver's rank and the settings for `mode`.
fn setup(mode: u8) -> (usize, usize, EcdhConfig) {
    let rank = usize::from(mode % 3);
    let receiver = usize::from(mode / 3 % 3);
    let curve = Curve::ALL[usize::from(mode / 9) % Curve::ALL.len()];
    let cfg = EcdhConfig {
        curve,
        batch_size: 8,
        max_peer_items: MAX_PEER_ITEMS,
        ..EcdhConfig::default()
    };
    (rank, receiver, cfg)
}

/// Runs this party (rank and receiver from `mode`) on `session` with a fixed RNG seed; a
/// result must list indices of `items`, ascending.
pub fn run_party<C: Channel>(
    session: &mut Session<C>,
    mode: u8,
    items: &[[u8; 8]],
) -> obliv_psi::Result<()> {
    let (rank, receiver, cfg) = setup(mode);
    let seed = u8::try_from(rank).unwrap_or(0) + 1;
    let out = ecdh3::run_with_limit(
        session,
        receiver,
        items,
        &cfg,
        MAX_PEER_ITEMS,
        &mut AesRng::from_seed([seed; 16]),
    )?;
    if let Some(idx) = out {
        assert!(idx.windows(2).all(|w| w[0] < w[1]), "{idx:?}");
        assert!(idx.iter().all(|&i| i < items.len()), "{idx:?}");
    }
    Ok(())
}

/// The body of the target.
pub fn fuzz(data: &[u8]) {
    // Ok or a typed error; a panic is the finding.
    let _ = replay(data);
}

/// Runs the party of an input against its scripts; `None` for an input too short to hold
/// the header.
pub fn replay(data: &[u8]) -> Option<obliv_psi::Result<()>> {
    let (mode, items, len, rest) = match data {
        [m, n, a, b, c, d, rest @ ..] => (*m, *n, u32::from_le_bytes([*a, *b, *c, *d]), rest),
        _ => return None,
    };
    let (rank, _, _) = setup(mode);
    let split = rest.len().min(usize::try_from(len).unwrap_or(usize::MAX));
    let (low, high) = rest.split_at(split);
    let mut scripts = [low, high].into_iter();
    let channels: Vec<Option<ScriptedChannel<'_>>> = (0..PARTIES)
        .map(|j| (j != rank).then(|| ScriptedChannel::new(scripts.next().unwrap_or(&[]))))
        .collect();
    let mut session = Session::from_channels(rank, channels).ok()?;
    Some(run_party(&mut session, mode, &items_of(items)))
}

/// A seed: the party of `mode` runs with honest peers in memory (holding
/// [`peer_items`]`(items)` and a third set sharing half of it), and the frames it received
/// from each become the scripts.
pub fn seed(mode: u8, items: u8) -> Vec<u8> {
    let (rank, _, _) = setup(mode);
    let mut sessions = Session::mem_mesh(PARTIES);
    let mine = sessions.remove(rank);
    let peers: Vec<_> = sessions
        .into_iter()
        .map(|mut s| {
            // Each peer runs the same mode with its own rank in place of this party's.
            let peer_mode = mode - mode % 3 + u8::try_from(s.rank()).unwrap_or(0);
            let set: Vec<[u8; 8]> = if s.rank() < rank {
                peer_items(items)
            } else {
                items_of(items).into_iter().step_by(2).collect()
            };
            std::thread::spawn(move || {
                let _ = run_party(&mut s, peer_mode, &set);
            })
        })
        .collect();
    let mut recording = mine.map(|_, ch| Recorder::new(ch));
    let _ = run_party(&mut recording, mode, &items_of(items));
    // Hang up first: a peer may still wait for a message of ours.
    let mut received: Vec<Vec<Vec<u8>>> = Vec::new();
    let _ = recording.map(|_, rec| {
        received.push(rec.into_received());
        ScriptedChannel::new(&[])
    });
    for p in peers {
        let _ = p.join();
    }
    let low = crate::encode_frames(&received[0]);
    let high = crate::encode_frames(&received[1]);
    let mut out = vec![mode, items];
    out.extend_from_slice(&u32::try_from(low.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(&low);
    out.extend_from_slice(&high);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seed replays the whole honest run: the party ends with `Ok` on its scripts, and
    /// fails (typed) on a script cut short.
    #[test]
    fn seeds_replay_honest_runs() {
        for mode in [0u8, 1, 2, 3, 4, 9] {
            let s = seed(mode, 6);
            assert!(matches!(replay(&s), Some(Ok(()))), "mode {mode}");
            assert!(
                matches!(replay(&s[..s.len() - 1]), Some(Err(_))),
                "mode {mode}"
            );
        }
    }
}
