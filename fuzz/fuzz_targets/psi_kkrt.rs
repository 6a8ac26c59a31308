//! One KKRT16 party (base OT, OT extension and OPRF, cuckoo-table seed, masked values)
//! against a scripted peer whose frames come from the input (format: `obliv_fuzz::psi`).
//! Contract: the session ends with `Ok` or a typed error, never a panic, and a result lists
//! indices of this side's items in ascending order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obliv_fuzz::psi::{Family, fuzz_session};

fuzz_target!(|data: &[u8]| fuzz_session(Family::Kkrt, data));
