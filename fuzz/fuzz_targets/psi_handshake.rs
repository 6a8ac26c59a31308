//! obliv-psi's session hello (`handshake::exchange`): the peer's first message of every PSI
//! protocol. Input: the peer's frames. Contract: `Ok` only for a hello that agrees with ours
//! on every field (and names the expected peer role), a typed error otherwise, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obliv_fuzz::ScriptedChannel;
use obliv_psi::handshake::{self, Hello};

/// The hello this side announces (what the seeds answer).
const OURS: Hello = Hello {
    protocol: 10,
    curve: 0,
    role: 0,
    flags: 1,
    batch: 4096,
    n_items: 1000,
    param: 40,
};

fuzz_target!(|data: &[u8]| {
    let mut ch = ScriptedChannel::new(data);
    let names = |_: &'static str, v: u8| v.to_string();
    if let Ok(theirs) = handshake::exchange(&mut ch, &OURS, 1, names) {
        assert_eq!(theirs.protocol, OURS.protocol);
        assert_eq!(theirs.curve, OURS.curve);
        assert_eq!(theirs.role, 1);
        assert_eq!(theirs.flags, OURS.flags);
        assert_eq!(theirs.batch, OURS.batch);
        assert_eq!(theirs.param, OURS.param);
    }
});
