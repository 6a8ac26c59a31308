//! Shared pieces of the fuzz targets: a scripted peer channel whose frames come from the fuzz
//! input, a recording channel for making seeds from honest runs, and the input format both
//! use.
//!
//! # Input format of a scripted peer
//!
//! A sequence of frames, each `len: u32 (little-endian) ‖ len bytes`. A length past the end of
//! the input takes what is left, so every byte string is a valid script. When the script runs
//! out, the next receive fails as if the peer had hung up.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::time::Instant;

use obliv_net::{Channel, Error, RecvBuf, Result, Stats, StatsRecorder};

pub mod cli;
pub mod corpus;
pub mod ec;
pub mod ecdh3;
pub mod files;
pub mod he;
pub mod net;
pub mod pir;
pub mod psi;
pub mod unbalanced;

/// Largest single allocation the targets allow: 512 MiB, as libFuzzer's `-malloc_limit_mb=512`
/// (which only takes effect in a sanitizer build; this allocator enforces it in the
/// sanitizer-free build CI runs). A decoder that sizes a buffer from an attacker's length
/// field beyond it aborts the target, which libFuzzer reports with the input.
pub const MALLOC_LIMIT: usize = 512 << 20;

/// The system allocator, refusing (by aborting the process) any allocation over
/// [`MALLOC_LIMIT`].
pub struct LimitedAlloc;

impl LimitedAlloc {
    fn check(size: usize) {
        if size > MALLOC_LIMIT {
            // No allocation here: a fixed message and the size, written straight to stderr.
            let mut msg = *b"obliv-fuzz: allocation of 0x0000000000000000 bytes over the limit\n";
            let hex = b"0123456789abcdef";
            for i in 0..16 {
                msg[28 + i] = hex[(size >> (60 - 4 * i)) & 15];
            }
            let _ = std::io::stderr().write_all(&msg);
            std::process::abort();
        }
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, after a
// size check that either returns or aborts; `System` upholds the `GlobalAlloc` contract.
unsafe impl GlobalAlloc for LimitedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::check(layout.size());
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::check(layout.size());
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::check(new_size);
        // SAFETY: the caller's pointer, layout and size, as `GlobalAlloc::realloc` requires.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: LimitedAlloc = LimitedAlloc;

/// Largest frame the scripted channel accepts unless lowered (as a TCP channel's default).
const SCRIPT_MAX_FRAME: usize = obliv_net::DEFAULT_MAX_FRAME_LEN;

/// Splits `data` into frames (see the [crate documentation](crate)).
pub fn frames(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let mut len = [0u8; 4];
        let head = data.len().min(4);
        len[..head].copy_from_slice(&data[..head]);
        data = &data[head..];
        let n = usize::try_from(u32::from_le_bytes(len))
            .unwrap_or(usize::MAX)
            .min(data.len());
        let (frame, rest) = data.split_at(n);
        out.push(frame);
        data = rest;
    }
    out
}

/// Encodes frames so that [`frames`] gives them back.
pub fn encode_frames<F: AsRef<[u8]>>(fs: &[F]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fs {
        let f = f.as_ref();
        let len = u32::try_from(f.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

/// A peer that sends the frames of a script, whatever it is sent; what this side sends is
/// counted and dropped. Receives past the end of the script fail with
/// [`Error::PeerDisconnected`].
#[derive(Debug)]
pub struct ScriptedChannel<'a> {
    frames: std::vec::IntoIter<&'a [u8]>,
    max_frame: usize,
    stats: StatsRecorder,
}

impl<'a> ScriptedChannel<'a> {
    /// A channel whose peer sends the frames encoded in `script`.
    pub fn new(script: &'a [u8]) -> Self {
        ScriptedChannel {
            frames: frames(script).into_iter(),
            max_frame: SCRIPT_MAX_FRAME,
            stats: StatsRecorder::default(),
        }
    }

    /// Frames of the script not yet received.
    pub fn remaining(&self) -> usize {
        self.frames.len()
    }
}

impl Channel for ScriptedChannel<'_> {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        self.stats.record_send(msg.len());
        Ok(())
    }

    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        let frame = self.frames.next().ok_or(Error::PeerDisconnected)?;
        let max = max_len.min(self.max_frame);
        if frame.len() > max {
            return Err(Error::FrameTooLarge {
                len: frame.len() as u64,
                max: max as u64,
            });
        }
        buf.prepare(frame.len())?.copy_from_slice(frame);
        self.stats.record_recv(frame.len());
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn stats(&self) -> Stats {
        self.stats.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.max_frame
    }

    fn set_deadline(&mut self, _deadline: Option<Instant>) {
        // Nothing blocks: a receive answers from the script at once.
    }

    fn set_max_frame_len(&mut self, max: usize) {
        self.max_frame = max;
    }
}

/// Wraps a channel and keeps a copy of every frame received and sent, for turning an honest
/// run into a seed ([`encode_frames`] of [`Recorder::into_received`]).
#[derive(Debug)]
pub struct Recorder<C> {
    inner: C,
    received: Vec<Vec<u8>>,
    sent: Vec<Vec<u8>>,
}

impl<C: Channel> Recorder<C> {
    /// Records what `inner` receives.
    pub fn new(inner: C) -> Self {
        Recorder {
            inner,
            received: Vec::new(),
            sent: Vec::new(),
        }
    }

    /// The frames received, in order; closes the channel.
    pub fn into_received(self) -> Vec<Vec<u8>> {
        self.received
    }

    /// The frames received and the frames sent, in order; closes the channel.
    pub fn into_parts(self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        (self.received, self.sent)
    }
}

impl<C: Channel> Channel for Recorder<C> {
    fn send(&mut self, msg: &[u8]) -> Result<()> {
        self.sent.push(msg.to_vec());
        self.inner.send(msg)
    }

    fn send_vec(&mut self, msg: Vec<u8>) -> Result<()> {
        self.sent.push(msg.clone());
        self.inner.send_vec(msg)
    }

    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> Result<()> {
        // Receive into our own vector first, then hand the bytes to the caller's buffer: the
        // frame is copied once more, which a seed generator can afford.
        let mut v = obliv_net::VecBuf::default();
        self.inner.recv_frame(max_len, &mut v)?;
        buf.prepare(v.0.len())?.copy_from_slice(&v.0);
        self.received.push(v.0);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }

    fn max_frame_len(&self) -> usize {
        self.inner.max_frame_len()
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.inner.set_deadline(deadline);
    }

    fn set_max_frame_len(&mut self, max: usize) {
        self.inner.set_max_frame_len(max);
    }
}

/// Splits a fuzz input into a fixed number of parts, each `len: u16 ‖ bytes` but the last,
/// which takes the rest (missing parts are empty).
pub fn parts<const N: usize>(mut data: &[u8]) -> [&[u8]; N] {
    let mut out = [&[][..]; N];
    for (i, slot) in out.iter_mut().enumerate() {
        if i + 1 == N {
            *slot = data;
            break;
        }
        let mut len = [0u8; 2];
        let head = data.len().min(2);
        len[..head].copy_from_slice(&data[..head]);
        data = &data[head..];
        let n = usize::from(u16::from_le_bytes(len)).min(data.len());
        let (part, rest) = data.split_at(n);
        *slot = part;
        data = rest;
    }
    out
}

/// Encodes parts so that [`parts`] gives them back (every part but the last at most
/// `u16::MAX` bytes).
pub fn encode_parts(ps: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, p) in ps.iter().enumerate() {
        if i + 1 < ps.len() {
            let len = u16::try_from(p.len()).unwrap_or(u16::MAX);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&p[..usize::from(len)]);
        } else {
            out.extend_from_slice(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let fs: Vec<Vec<u8>> = vec![vec![], vec![1, 2, 3], vec![7; 300]];
        let enc = encode_frames(&fs);
        let back: Vec<Vec<u8>> = frames(&enc).into_iter().map(<[u8]>::to_vec).collect();
        assert_eq!(back, fs);
        // A short length field and an overlong length still parse.
        let empty: &[u8] = &[];
        assert_eq!(frames(&[5, 0]), vec![empty]);
        assert_eq!(frames(&[9, 0, 0, 0, 1, 2]), vec![&[1u8, 2][..]]);
    }

    #[test]
    fn parts_round_trip() {
        let enc = encode_parts(&[b"ab", b"", b"tail"]);
        assert_eq!(parts::<3>(&enc), [&b"ab"[..], &b""[..], &b"tail"[..]]);
        let empty: &[u8] = &[];
        assert_eq!(parts::<2>(&[]), [empty, empty]);
    }
}
