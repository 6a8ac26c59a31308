//! A hostile KKRT16 receiver cannot make the sender allocate for instances it never sends.
//!
//! The PSI layer lets a receiver announce up to `2·n + 4096` bins for `n ≤ max_peer_items`
//! items, and the sender runs [`KkrtSender::send`] with that count. Its memory must follow
//! the columns that actually arrive. This binary installs an allocator that records the
//! largest single request and refuses any above [`REFUSE`] (so a regression aborts at once
//! instead of touching gigabytes).

use obliv_core::{AesRng, Block};
use obliv_net::{Channel, mem_pair};
use obliv_ot::kkrt::{CHUNK, CODE_BITS, KkrtSender};
use obliv_ot::{Error, base};
use obliv_testkit::TestAlloc;
use rand_core::SeedableRng;

/// Largest allocation this test binary grants.
const REFUSE: usize = 256 << 20;

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::refusing_above(REFUSE);

fn sender() -> KkrtSender {
    let (_, r) = base::insecure_dealer(CODE_BITS, &mut AesRng::from_seed([5; 16]));
    KkrtSender::new_with_base(&r, Block(9)).expect("512 dealt base OTs")
}

/// The bins a receiver may announce under the PSI default `max_peer_items = 2^26`.
const ANNOUNCED: usize = (1 << 27) + 4096;

#[test]
fn announced_batch_without_data_allocates_nothing_up_front() {
    let ((), largest) = obliv_testkit::largest_allocation(|| {
        // 1. The receiver announces 2^27 + 4096 instances and then hangs up: a channel
        //    error (not an 8 GiB allocation).
        let mut s = sender();
        let (mut a, b) = mem_pair();
        drop(b);
        let t = std::time::Instant::now();
        assert!(matches!(s.send(&mut a, ANNOUNCED), Err(Error::Net(_))));
        // 2. It sends one chunk of garbage columns of the right size, then a frame of the
        //    wrong size: an error after the first chunk, with memory for that chunk only.
        let mut s = sender();
        let (mut a, mut b) = mem_pair();
        b.send(&vec![0xa5u8; CODE_BITS * CHUNK / 8]).unwrap();
        b.send(&[1u8; 64]).unwrap();
        assert!(matches!(s.send(&mut a, ANNOUNCED), Err(Error::Net(_))));
        assert!(t.elapsed() < std::time::Duration::from_secs(10));
    });
    assert!(largest <= 16 << 20, "largest allocation {largest} bytes");
    // 3. A sender that agreed to fewer instances refuses the count before any traffic.
    let mut s = sender();
    s.set_max_batch(1 << 20);
    let (mut a, _b) = mem_pair();
    match s.send(&mut a, ANNOUNCED) {
        Err(Error::LimitExceeded { field, got, max }) => {
            assert!(field.starts_with('n'));
            assert_eq!((got, max), (ANNOUNCED as u64, 1 << 20));
        }
        other => panic!("expected LimitExceeded, got {other:?}"),
    }
}
