//! The chunked frames of RR22: single blocks, vectors of values in frames of [`CHUNK`]
//! values, and the sender's sorted comparison values.

use obliv_core::Block;
use obliv_net::Channel;

use super::intersect::{sort_values, truncate};
use super::{CHUNK, TAG_COUNT, TAG_VALUES};
use crate::error::{Error, Result};
use crate::wire::{frame, parse};

/// Receives a 16-byte block in a frame of kind `tag` (`what` names it in the error).
pub(super) fn recv_block<C: Channel + ?Sized>(ch: &mut C, tag: u8, what: &str) -> Result<Block> {
    let f = ch.recv_max(5 + 16)?;
    let (t, index, payload) = parse(&f)?;
    if t != tag || index != 0 || payload.len() != 16 {
        return Err(Error::Protocol(format!("expected {what}")));
    }
    let mut b = [0u8; 16];
    b.copy_from_slice(payload);
    Ok(Block::from_bytes(b))
}

/// Receives `n` values of `width` bytes in frames of kind `tag` of [`CHUNK`] values each (as
/// [`send_chunks`] sends them), checking kind, order and size of every frame (`what` names
/// the values in the error), and hands each frame's payload (value `i·CHUNK` onwards) to
/// `apply`. The masked OKVS `A'` and the fork's masked correlations travel this way.
pub(super) fn recv_chunks<C, F>(
    ch: &mut C,
    tag: u8,
    what: &str,
    n: usize,
    width: usize,
    mut apply: F,
) -> Result<()>
where
    C: Channel + ?Sized,
    F: FnMut(usize, &[u8]),
{
    for i in 0..n.div_ceil(CHUNK) {
        let expected = width * (n - i * CHUNK).min(CHUNK);
        let f = ch.recv_max(5 + expected)?;
        let (t, index, payload) = parse(&f)?;
        if t != tag || index != i || payload.len() != expected {
            return Err(Error::Protocol(format!(
                "expected {what} chunk {i} of {expected} bytes, got tag {t} chunk {index} of {} bytes",
                payload.len()
            )));
        }
        apply(i * CHUNK, payload);
    }
    Ok(())
}

/// Sends values `0..n` of `width` bytes, each written by `write(i, buf)`, in frames of kind
/// `tag` of [`CHUNK`] values each (written straight into the frame, no copy).
pub(super) fn send_chunks<C, F>(ch: &mut C, tag: u8, n: usize, width: usize, write: F) -> Result<()>
where
    C: Channel + ?Sized,
    F: Fn(usize, &mut Vec<u8>),
{
    for i in 0..n.div_ceil(CHUNK) {
        let range = i * CHUNK..(n.min((i + 1) * CHUNK));
        let mut buf = Vec::with_capacity(5 + width * range.len());
        buf.push(tag);
        buf.extend_from_slice(&u32::try_from(i).unwrap_or(u32::MAX).to_le_bytes());
        for j in range {
            write(j, &mut buf);
        }
        ch.send_vec(buf)?;
    }
    ch.flush()?;
    Ok(())
}

/// The sender's last message: its comparison values `out` truncated to `w` bytes, sorted and
/// without repeats.
pub(super) fn send_values<C: Channel + ?Sized>(ch: &mut C, out: &[Block], w: usize) -> Result<()> {
    let mut t: Vec<u128> = out.iter().map(|&b| truncate(b, w)).collect();
    sort_values(&mut t, w);
    ch.send_vec(frame(TAG_COUNT, 0, &(t.len() as u64).to_le_bytes())?)?;
    for (i, chunk) in t.chunks(CHUNK).enumerate() {
        let mut buf = Vec::with_capacity(5 + w * chunk.len());
        buf.push(TAG_VALUES);
        buf.extend_from_slice(&u32::try_from(i).unwrap_or(u32::MAX).to_le_bytes());
        for v in chunk {
            buf.extend_from_slice(&v.to_le_bytes()[..w]);
        }
        ch.send_vec(buf)?;
    }
    ch.flush()?;
    Ok(())
}
