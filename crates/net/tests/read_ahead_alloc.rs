//! What a hostile length prefix costs a TCP reader (the read-ahead thread, and direct reads):
//! its buffer grows with the bytes that arrive, not with the length the peer announces. Its
//! own test binary, because it installs `obliv_testkit::TestAlloc` to record the largest
//! single allocation.

#![allow(clippy::unwrap_used)] // test helpers, outside #[test] functions

use obliv_net::{Channel, Error, TcpChannel, TcpOptions};
use obliv_testkit::TestAlloc;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::new();

/// A peer announces a 512 MiB frame (within the channel's 1 GiB limit), sends 100 bytes of it
/// and hangs up. The reader used to allocate the announced 512 MiB as soon as the header
/// arrived (the read-ahead thread, and in direct mode the receive buffer); now it allocates for
/// what arrives (at most a few MiB here). The receive reports the truncated frame, and a whole
/// frame of 3 MiB still arrives intact. Both read modes, one after the other in one test, since
/// the allocation record is global.
#[test]
fn announced_length_costs_nothing_until_the_bytes_arrive() {
    for read_ahead in [Some(64 << 20), None] {
        announced_length_costs_nothing(read_ahead);
    }
}

fn announced_length_costs_nothing(read_ahead: Option<usize>) {
    let ((), largest) = obliv_testkit::largest_allocation(|| {
        let l = TcpListener::bind("127.0.0.2:0").unwrap();
        let mut raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let opts = TcpOptions {
            read_timeout: Some(Duration::from_secs(20)),
            write_timeout: Some(Duration::from_secs(20)),
            read_ahead,
            ..TcpOptions::default()
        };
        let mut ch = TcpChannel::accept(&l, Some(Duration::from_secs(5)), opts).unwrap();
        assert!(ch.max_frame_len() >= 512 << 20);
        // First a whole frame larger than the first allocation step: it must arrive intact.
        let big: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
        raw.write_all(&(big.len() as u64).to_le_bytes()).unwrap();
        raw.write_all(&big).unwrap();
        assert_eq!(ch.recv().unwrap(), big);
        drop(big);
        raw.write_all(&(512u64 << 20).to_le_bytes()).unwrap();
        raw.write_all(&[7u8; 100]).unwrap();
        drop(raw);
        let e = ch.recv().unwrap_err();
        assert!(
            matches!(
                e,
                Error::Truncated {
                    expected,
                    got: 100
                } if expected == 512 << 20
            ),
            "{read_ahead:?}: {e:?}"
        );
    });
    assert!(
        largest < 64 << 20,
        "{read_ahead:?}: an allocation of {largest} bytes for 100 bytes received"
    );
}
