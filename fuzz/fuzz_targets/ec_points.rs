//! Every point decoder: FourQ, Curve25519 (X25519), ristretto255, SM2, secp256k1 and P-256
//! through obliv-ec (single and batch decoding, `DynGroup`), and obliv-fourq's own decoders.
//! See `obliv_fuzz::ec`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::ec::fuzz(data));
