//! What every protocol of this crate shares on the wire: the two roles, the statistical
//! security parameter, the frame layout (`tag ‖ index ‖ payload`), and the checks that turn a
//! peer's announced count into a bounded allocation.
//!
//! Each protocol module defines its own tags and message order; the layout of one frame is
//! the same everywhere: one tag byte, a little-endian `u32` index (batch, chunk or step) and
//! the payload.

use rand_core::CryptoRng;

use crate::error::{Error, PeerMisbehaved, Result};

/// The default statistical security parameter λ: with it, every protocol keeps its
/// probability of a false match (and of an encoding or hashing failure) below `2^-40` per run.
///
/// Each protocol's configuration carries its own `stat_security` (this value by default); a
/// job of many runs sets it to [`job_stat_security`] of its number of runs so that the whole
/// job, not each run, meets `2^-40`.
pub const STAT_SECURITY: u32 = 40;

/// The largest `stat_security` a configuration accepts (the comparison values and OKVS of
/// this crate have at most 128 bits).
pub const MAX_STAT_SECURITY: u32 = 128;

/// The per-run statistical security parameter for a job of `runs` independent PSI runs (the
/// buckets or shards of one job): `STAT_SECURITY + ⌈log₂ runs⌉`, so 40 for one run, 41 for
/// two, 50 for 1,024 and 51 for 1,025 (`runs = 0` is treated as 1).
///
/// Union bound: a job fails (a false match or an encoding or hashing failure in any of its
/// runs) only if one of its runs fails. If each run fails with probability at most `2^-λ`
/// with `λ = 40 + ⌈log₂ runs⌉`, the job fails with probability at most
/// `runs · 2^-λ ≤ 2^-40`, whatever the runs have in common. Both parties must derive the
/// parameter from the same public count of runs: a peer with another value is refused by
/// every protocol's handshake.
pub fn job_stat_security(runs: u64) -> u32 {
    STAT_SECURITY + obliv_core::log2_ceil(runs)
}

/// Checks a configured statistical security parameter: `STAT_SECURITY..=MAX_STAT_SECURITY`.
pub(crate) fn check_stat_security(stat_security: u32) -> Result<()> {
    if (STAT_SECURITY..=MAX_STAT_SECURITY).contains(&stat_security) {
        Ok(())
    } else {
        Err(Error::InvalidParameter(format!(
            "statistical security {stat_security} is not in {STAT_SECURITY}..={MAX_STAT_SECURITY}"
        )))
    }
}

/// Bytes of the comparison values for `n_r · n_s` comparisons at `2^-stat_security`
/// (`⌈(λ + ⌈log₂ n_r⌉ + ⌈log₂ n_s⌉)/8⌉`), at most 16: the protocols compare at most 128
/// bits, so a larger width is an [`Error::InvalidParameter`] (both sides compute it from the
/// same public sizes and stop alike, before any item-dependent message).
pub(crate) fn compare_width(stat_security: u32, n_r: usize, n_s: usize) -> Result<usize> {
    let w = obliv_core::psi_compare_bytes(stat_security, n_r as u64, n_s as u64);
    if w > 16 {
        return Err(Error::InvalidParameter(format!(
            "statistical security {stat_security} for {n_r} × {n_s} items needs {w}-byte \
             comparison values, more than 16: lower it or split the sets into buckets"
        )));
    }
    Ok(w)
}

/// Which side of a two-party protocol a party plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Learns the intersection.
    Receiver,
    /// Helps; learns the intersection only where a protocol option says so (ECDH's
    /// `broadcast`).
    Sender,
}

impl Role {
    /// The role's code in a handshake: 0 for the receiver, 1 for the sender.
    pub fn code(self) -> u8 {
        match self {
            Role::Receiver => 0,
            Role::Sender => 1,
        }
    }

    /// The peer's role.
    #[must_use]
    pub fn other(self) -> Role {
        match self {
            Role::Receiver => Role::Sender,
            Role::Sender => Role::Receiver,
        }
    }
}

/// Bytes of a frame before its payload: tag (1) and index (4).
pub(crate) const FRAME_HEADER: usize = 5;

/// Items in batch `i` of a stream of `n` items in batches of `b`.
pub(crate) fn batch_len(i: usize, n: usize, b: usize) -> usize {
    b.min(n - i * b)
}

/// Builds one frame: tag, index, payload.
pub(crate) fn frame(tag: u8, index: usize, payload: &[u8]) -> Result<Vec<u8>> {
    let index = u32::try_from(index)
        .map_err(|_| Error::InvalidParameter("more than 2^32 batches".into()))?;
    let mut f = Vec::with_capacity(FRAME_HEADER + payload.len());
    f.push(tag);
    f.extend_from_slice(&index.to_le_bytes());
    f.extend_from_slice(payload);
    Ok(f)
}

/// Splits a frame into tag, index and payload.
pub(crate) fn parse(f: &[u8]) -> Result<(u8, usize, &[u8])> {
    if f.len() < FRAME_HEADER {
        return Err(
            PeerMisbehaved::Malformed(format!("frame of {} bytes is too short", f.len())).into(),
        );
    }
    let index = u32::from_le_bytes([f[1], f[2], f[3], f[4]]) as usize;
    Ok((f[0], index, &f[5..]))
}

/// Up to 16 little-endian bytes as an integer (the comparison values of every protocol).
pub(crate) fn pack(bytes: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    b[..bytes.len()].copy_from_slice(bytes);
    u128::from_le_bytes(b)
}

/// A count the peer announced (`field` names it), accepted only up to `max`, the bound this
/// party agreed to: anything sized by the count is allocated only after this check.
pub(crate) fn peer_count(field: &'static str, announced: u64, max: usize) -> Result<usize> {
    usize::try_from(announced)
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| {
            PeerMisbehaved::TooLarge {
                field,
                announced,
                max: max as u64,
            }
            .into()
        })
}

/// Lets a `rand_core` RNG of unknown size drive `rand`'s shuffle.
pub(crate) struct RngAdapter<'a, R: CryptoRng + ?Sized>(pub(crate) &'a mut R);

impl<R: CryptoRng + ?Sized> rand_core::TryRng for RngAdapter<'_, R> {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> core::result::Result<u32, Self::Error> {
        Ok(self.0.next_u32())
    }
    fn try_next_u64(&mut self) -> core::result::Result<u64, Self::Error> {
        Ok(self.0.next_u64())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> core::result::Result<(), Self::Error> {
        self.0.fill_bytes(dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_short_frames_are_rejected() {
        let f = frame(7, 300, b"abc").unwrap();
        assert_eq!(parse(&f).unwrap(), (7, 300, b"abc".as_slice()));
        for cut in 0..FRAME_HEADER {
            let e = parse(&f[..cut]).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::PeerMisbehaved);
        }
    }

    #[test]
    fn peer_counts_are_bounded() {
        assert_eq!(peer_count("n", 5, 5).unwrap(), 5);
        let e = peer_count("n_items", 1 << 40, 1 << 20).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::PeerMisbehaved);
        assert!(e.to_string().contains("n_items"), "{e}");
    }

    #[test]
    fn stat_security_bounds_and_widths() {
        assert!(check_stat_security(STAT_SECURITY).is_ok());
        assert!(check_stat_security(MAX_STAT_SECURITY).is_ok());
        for bad in [0, 39, 129, u32::MAX] {
            let e = check_stat_security(bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidParameter);
        }
        assert_eq!(compare_width(40, 100, 100).unwrap(), 7);
        assert_eq!(compare_width(50, 100, 100).unwrap(), 8);
        assert_eq!(compare_width(40, 0, 0).unwrap(), 5);
        assert_eq!(compare_width(128, 1, 1).unwrap(), 16);
        let e = compare_width(128, 2, 1).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidParameter);
        // At the default, every pair of sets up to 2^44 items fits.
        assert_eq!(compare_width(40, 1 << 44, 1 << 44).unwrap(), 16);
    }

    #[test]
    fn roles() {
        assert_eq!(Role::Receiver.code(), 0);
        assert_eq!(Role::Sender.code(), 1);
        assert_eq!(Role::Sender.other(), Role::Receiver);
    }
}
