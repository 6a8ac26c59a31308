//! One party of three-party ECDH-PSI (receiver or helper, every curve) against two scripted
//! peers whose frames come from the input (format: `obliv_fuzz::ecdh3`). Contract: the run
//! ends with `Ok` or a typed error, never a panic, and a result lists indices of this party's
//! items in ascending order.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::ecdh3::fuzz(data));
