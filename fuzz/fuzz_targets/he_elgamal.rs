//! EC ElGamal (ristretto255) and MODP ElGamal keys and ciphertexts (JSON): decode, round trip,
//! decrypt. See `obliv_fuzz::he::fuzz_elgamal`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::he::fuzz_elgamal(data));
