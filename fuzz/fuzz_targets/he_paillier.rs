//! Paillier ciphertexts (bytes and JSON), public and secret keys (JSON): decode, round trip,
//! validate and decrypt under a fixed key. See `obliv_fuzz::he::fuzz_paillier`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::he::fuzz_paillier(data));
