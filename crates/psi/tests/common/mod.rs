//! Helpers shared by the protocol tests of this crate.
#![allow(clippy::unwrap_used, dead_code)] // test helpers; not every test file uses each one

use obliv_core::AesRng;
use obliv_net::Channel;
use obliv_psi::Error;
use obliv_psi::ecdh::Role;
use rand_core::SeedableRng;

pub(crate) mod buckets;

/// `prefix0`, `prefix1`, … for the indices in `range`, as byte strings.
pub(crate) fn items(prefix: &str, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

/// What a two-party run returns to the receiver and the sender.
pub(crate) type Out = (
    Result<Option<Vec<usize>>, Error>,
    Result<Option<Vec<usize>>, Error>,
);

/// Runs `protocol` as receiver on `a` (RNG seed 1) and as sender on `b` (seed 2, own thread).
pub(crate) fn run_two<C, F>(
    (mut a, mut b): (C, C),
    receiver: Vec<Vec<u8>>,
    sender: Vec<Vec<u8>>,
    protocol: F,
) -> Out
where
    C: Channel + 'static,
    F: Fn(&mut C, Role, &[Vec<u8>], &mut AesRng) -> Result<Option<Vec<usize>>, Error>
        + Send
        + Clone
        + 'static,
{
    let p = protocol.clone();
    let t = std::thread::spawn(move || {
        p(
            &mut b,
            Role::Sender,
            &sender,
            &mut AesRng::from_seed([2; 16]),
        )
    });
    let r = protocol(
        &mut a,
        Role::Receiver,
        &receiver,
        &mut AesRng::from_seed([1; 16]),
    );
    (r, t.join().unwrap())
}
