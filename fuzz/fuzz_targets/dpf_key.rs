//! DPF keys (`DpfKey::from_bytes`, `from_bytes_for_domain`): a key that decodes re-encodes to
//! the same bytes and evaluates without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use obliv_pir::DpfKey;

fuzz_target!(|data: &[u8]| {
    let Ok(k) = DpfKey::from_bytes(data) else {
        return;
    };
    assert_eq!(k.to_bytes(), data, "decode(encode(key)) differs");
    assert_eq!(k.encoded_len(), data.len());
    let n = k.domain_bits();
    if let Ok(k2) = DpfKey::from_bytes_for_domain(data, n) {
        assert_eq!(k2.to_bytes(), data);
        assert!(!k2.block_output());
    }
    // Points inside the domain evaluate; outside they are an error.
    let last = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    if k.block_output() {
        let _ = k.eval_block(0).expect("inside the domain");
        let _ = k.eval_block(last).expect("inside the domain");
    } else {
        let _ = k.eval(0).expect("inside the domain");
        let _ = k.eval(last).expect("inside the domain");
        if n <= 12 {
            let full = k.eval_full();
            assert!(!full.is_empty());
        }
    }
    if n < 64 {
        assert!(k.eval(1u64 << n).is_err() || k.block_output());
    }
});
