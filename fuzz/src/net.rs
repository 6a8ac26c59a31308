//! obliv-net's frame readers: the TCP framing (`len: u64 ‖ bytes`, both the read-ahead and
//! the direct reader) on raw bytes from a loopback socket, and the `Mux` demultiplexer on
//! the frames of a scripted peer.

use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use obliv_net::{Channel, Mux, MuxOptions, TcpChannel, TcpOptions};

/// The frame limit the targets set (a protocol lowers it so; see `set_max_frame_len`).
pub const MAX_FRAME: usize = 1 << 16;

fn listener() -> &'static TcpListener {
    static L: OnceLock<TcpListener> = OnceLock::new();
    L.get_or_init(|| TcpListener::bind("127.0.0.1:0").expect("listener"))
}

/// Reads frames from a TCP channel whose peer wrote `wire` and hung up; returns them.
fn tcp_read(wire: &[u8], read_ahead: bool, max_frame: usize) -> Vec<Vec<u8>> {
    let l = listener();
    let addr = l.local_addr().expect("address");
    let mut w = TcpStream::connect(addr).expect("connect");
    let (s, _) = l.accept().expect("accept");
    let opts = TcpOptions {
        read_timeout: Some(Duration::from_secs(5)),
        max_frame_len: max_frame,
        read_ahead: read_ahead.then_some(1 << 20),
        ..TcpOptions::default()
    };
    let mut ch = TcpChannel::from_stream(s, opts).expect("channel");
    ch.set_deadline(Some(Instant::now() + Duration::from_secs(5)));
    // Loopback buffers hold a fuzz input; write it all, then end the stream.
    let _ = w.write_all(wire);
    let _ = w.shutdown(Shutdown::Write);
    let mut got = Vec::new();
    while let Ok(f) = ch.recv() {
        assert!(
            f.len() <= max_frame,
            "frame of {} bytes over the limit",
            f.len()
        );
        got.push(f);
    }
    got
}

/// The TCP wire bytes of `frames`.
pub fn tcp_wire<F: AsRef<[u8]>>(frames: &[F]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        let f = f.as_ref();
        out.extend_from_slice(&(f.len() as u64).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

/// Demultiplexes the scripted frames with a `Mux`; returns what sub-channels 0..4 received.
fn mux_read(script: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let (a, mut b) = obliv_net::mem_pair_with_timeout(Duration::from_secs(5));
    for f in crate::frames(script) {
        if b.send(f).is_err() {
            break;
        }
    }
    let _ = b.flush();
    let opts = MuxOptions {
        recv_timeout: Duration::from_secs(5),
        max_queued: 1 << 20,
        max_queued_per_sub: 1 << 18,
        max_sub_channels: 8,
    };
    let Ok(mux) = Mux::with_options(a, opts) else {
        return Vec::new();
    };
    let mut subs: Vec<_> = (0..4).filter_map(|id| mux.sub(id).ok()).collect();
    // Everything the peer sent is queued by now or arrives at once; then it hangs up.
    drop(b);
    let mut out = Vec::new();
    for s in &mut subs {
        s.set_max_frame_len(MAX_FRAME);
        s.set_deadline(Some(Instant::now() + Duration::from_secs(5)));
        let mut got = Vec::new();
        while let Ok(f) = s.recv() {
            assert!(f.len() <= MAX_FRAME);
            got.push(f);
        }
        out.push(got);
    }
    out
}

/// Body of the target. Input: `mode ‖ bytes`; `mode` mod 4: 0 the read-ahead TCP reader, 1 the
/// direct one (both with a 64 KiB frame limit, `bytes` as raw wire bytes); 2 the read-ahead
/// reader with a 512 MiB limit; 3 a `Mux` over the frames of a script.
pub fn fuzz(data: &[u8]) {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 | 1 => {
            let got = tcp_read(bytes, mode % 4 == 0, MAX_FRAME);
            // Whatever was read was framed in the input: payloads plus headers fit in it.
            let used: usize = got.iter().map(|f| f.len() + 8).sum();
            assert!(used <= bytes.len());
            // And it re-frames to a prefix of the input.
            assert_eq!(&bytes[..used], &tcp_wire(&got)[..]);
        }
        2 => {
            // The read-ahead reader with the largest frame limit the targets' allocator
            // allows: its buffer grows as a frame's bytes arrive (1 MiB first, doubling), so a
            // header announcing up to 512 MiB costs at most about twice the bytes that follow
            // it, and the allocator's limit would abort the run if it allocated the
            // announced length up front.
            let got = tcp_read(bytes, true, crate::MALLOC_LIMIT);
            let used: usize = got.iter().map(|f| f.len() + 8).sum();
            assert!(used <= bytes.len());
        }
        _ => {
            let _ = mux_read(bytes);
        }
    }
}
