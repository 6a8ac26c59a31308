//! The opening message of every PSI protocol: both sides check that they run the same protocol,
//! version, curve and parameters, in complementary roles, before any item-dependent data flows.

use obliv_net::Channel;

use crate::error::{Error, Result};

/// Magic bytes at the start of every handshake.
const MAGIC: [u8; 4] = *b"OBPS";
/// Version of the wire formats in this crate (and of `obliv-net`'s `Mux` under the bucket
/// driver, whose per-sub-channel credit messages came with version 3 and its window
/// announcement with version 4); bumped on any incompatible change.
pub const WIRE_VERSION: u16 = 4;
/// Encoded length of a [`Hello`].
const HELLO_LEN: usize = 4 + 2 + 1 + 1 + 1 + 1 + 4 + 8 + 8;

/// The [`Hello`] flag bits, one table for every protocol so that no two meanings share a
/// bit. Bit 0 is the protocol's own option (ECDH: broadcast the result; unbalanced PSI: the
/// server gets the result). The others:
///
/// | bit | value | set by |
/// |---|---|---|
/// | 1 | [`FLAG_CONTINUED`] | an RR22 session's second and later runs |
/// | 2 | [`FLAG_FORK`] | RR22's fork step (splitting a VOLE session into children) |
/// | 3 | [`FLAG_SPLIT`] | the split step of ECDH, KKRT and malicious RR22 |
/// | 4 | [`FLAG_PRE_HASHED`] | an RR22 run on caller-hashed items ([`crate::HashedItem`]) |
pub(crate) const FLAG_CONTINUED: u8 = 2;
/// See [`FLAG_CONTINUED`].
pub(crate) const FLAG_FORK: u8 = 4;
/// See [`FLAG_CONTINUED`].
pub(crate) const FLAG_SPLIT: u8 = 8;
/// See [`FLAG_CONTINUED`].
pub(crate) const FLAG_PRE_HASHED: u8 = 16;
const _: () = assert!(
    (1 | FLAG_CONTINUED) & FLAG_FORK == 0
        && (1 | FLAG_CONTINUED | FLAG_FORK) & FLAG_SPLIT == 0
        && (1 | FLAG_CONTINUED | FLAG_FORK | FLAG_SPLIT) & FLAG_PRE_HASHED == 0
);

/// What one party announces about itself at the start of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Protocol identifier (one per protocol and variant).
    pub protocol: u8,
    /// Curve or parameter-set identifier (0 where none applies).
    pub curve: u8,
    /// The sender's role code (protocol-specific).
    pub role: u8,
    /// Option flags that must agree: bit 0 the protocol's own option (ECDH: broadcast the
    /// result), bit 1 a continued RR22 session, bit 2 RR22's fork step, bit 3 a split step,
    /// bit 4 an RR22 run on caller-hashed items.
    pub flags: u8,
    /// Items per streamed batch (must agree).
    pub batch: u32,
    /// Number of items this party holds (public in every protocol here).
    pub n_items: u64,
    /// An extra protocol-specific parameter that must agree (0 if unused). In every protocol
    /// of this crate but the unbalanced one, its low byte is the run's statistical security
    /// parameter (`stat_security` of the configuration) and the bits above it are the
    /// protocol's own.
    pub param: u64,
}

impl Hello {
    fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..6].copy_from_slice(&WIRE_VERSION.to_le_bytes());
        b[6] = self.protocol;
        b[7] = self.curve;
        b[8] = self.role;
        b[9] = self.flags;
        b[10..14].copy_from_slice(&self.batch.to_le_bytes());
        b[14..22].copy_from_slice(&self.n_items.to_le_bytes());
        b[22..30].copy_from_slice(&self.param.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<(u16, Hello)> {
        if b.len() != HELLO_LEN || b[0..4] != MAGIC {
            return Err(Error::Protocol(
                "the peer's first message is not an obliv-psi handshake".into(),
            ));
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        Ok((
            u16_at(4),
            Hello {
                protocol: b[6],
                curve: b[7],
                role: b[8],
                flags: b[9],
                batch: u32_at(10),
                n_items: u64_at(14),
                param: u64_at(22),
            },
        ))
    }
}

/// Sends `ours`, receives the peer's hello and checks that protocol, version, curve, flags,
/// batch size and parameter agree and that the peer's role is `expected_peer_role`.
/// Returns the peer's hello (its item count is what the protocol needs).
///
/// `name_of` turns protocol/curve codes into names for the error message.
///
/// # Errors
/// [`Error::HandshakeMismatch`] naming the first field that differs, [`Error::Protocol`] if
/// the peer's message is not a handshake, or a network error.
pub fn exchange<C: Channel + ?Sized>(
    ch: &mut C,
    ours: &Hello,
    expected_peer_role: u8,
    name_of: impl Fn(&'static str, u8) -> String,
) -> Result<Hello> {
    exchange_checked(ch, ours, expected_peer_role, name_of, false)
}

/// Bits of [`Hello::param`] that hold the statistical security parameter.
const STAT_MASK: u64 = 0xff;

/// The `param` of a hello that carries `stat_security` in its low byte and `rest` above it.
pub(crate) fn stat_param(stat_security: u32, rest: u64) -> u64 {
    (u64::from(stat_security) & STAT_MASK) | (rest << 8)
}

/// [`exchange`] for a hello whose `param` carries the statistical security parameter in its
/// low byte ([`stat_param`]): two peers that differ there get
/// [`Error::HandshakeMismatch`] on the field `statistical security` (with both values), any
/// other difference of `param` is the field `parameters`.
pub(crate) fn exchange_stat<C: Channel + ?Sized>(
    ch: &mut C,
    ours: &Hello,
    expected_peer_role: u8,
    name_of: impl Fn(&'static str, u8) -> String,
) -> Result<Hello> {
    exchange_checked(ch, ours, expected_peer_role, name_of, true)
}

fn exchange_checked<C: Channel + ?Sized>(
    ch: &mut C,
    ours: &Hello,
    expected_peer_role: u8,
    name_of: impl Fn(&'static str, u8) -> String,
    stat_in_param: bool,
) -> Result<Hello> {
    ch.send(&ours.encode())?;
    ch.flush()?;
    let msg = ch.recv_max(HELLO_LEN)?;
    let (version, theirs) = Hello::decode(&msg)?;
    let mismatch = |field: &'static str, a: String, b: String| Error::HandshakeMismatch {
        field,
        ours: a,
        theirs: b,
    };
    if version != WIRE_VERSION {
        return Err(mismatch(
            "wire version",
            WIRE_VERSION.to_string(),
            version.to_string(),
        ));
    }
    if theirs.protocol != ours.protocol {
        return Err(mismatch(
            "protocol",
            name_of("protocol", ours.protocol),
            name_of("protocol", theirs.protocol),
        ));
    }
    if theirs.curve != ours.curve {
        return Err(mismatch(
            "curve",
            name_of("curve", ours.curve),
            name_of("curve", theirs.curve),
        ));
    }
    if theirs.role != expected_peer_role {
        return Err(mismatch(
            "role",
            format!("peer expected as {}", name_of("role", expected_peer_role)),
            name_of("role", theirs.role),
        ));
    }
    if theirs.flags != ours.flags {
        return Err(mismatch(
            "options",
            format!("{:#04x}", ours.flags),
            format!("{:#04x}", theirs.flags),
        ));
    }
    if theirs.batch != ours.batch {
        return Err(mismatch(
            "batch size",
            ours.batch.to_string(),
            theirs.batch.to_string(),
        ));
    }
    if stat_in_param && (theirs.param & STAT_MASK) != (ours.param & STAT_MASK) {
        return Err(mismatch(
            "statistical security",
            (ours.param & STAT_MASK).to_string(),
            (theirs.param & STAT_MASK).to_string(),
        ));
    }
    if theirs.param != ours.param {
        return Err(mismatch(
            "parameters",
            ours.param.to_string(),
            theirs.param.to_string(),
        ));
    }
    Ok(theirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(role: u8) -> Hello {
        Hello {
            protocol: 1,
            curve: 2,
            role,
            flags: 0,
            batch: 4096,
            n_items: 10,
            param: 0,
        }
    }

    #[test]
    fn round_trip_and_mismatches() {
        let h = hello(1);
        assert_eq!(Hello::decode(&h.encode()).unwrap(), (WIRE_VERSION, h));
        assert!(Hello::decode(&h.encode()[..10]).is_err());
        let mut bad = h.encode();
        bad[0] = b'X';
        assert!(Hello::decode(&bad).is_err());

        let names = |_: &'static str, v: u8| v.to_string();
        let (mut a, mut b) = obliv_net::mem_pair();
        let t = std::thread::spawn(move || {
            let mut other = hello(0);
            other.curve = 3;
            exchange(&mut b, &other, 1, names)
        });
        let err = exchange(&mut a, &hello(1), 0, names).unwrap_err();
        assert!(
            matches!(err, Error::HandshakeMismatch { field: "curve", .. }),
            "{err}"
        );
        assert!(t.join().unwrap().is_err());
    }

    #[test]
    fn statistical_security_mismatch_is_named() {
        let names = |_: &'static str, v: u8| v.to_string();
        let with = |role: u8, stat: u32, rest: u64| Hello {
            param: stat_param(stat, rest),
            ..hello(role)
        };
        assert_eq!(stat_param(40, 0), 40);
        assert_eq!(stat_param(50, 2), 50 | 2 << 8);
        let (mut a, mut b) = obliv_net::mem_pair();
        let t = std::thread::spawn(move || exchange_stat(&mut b, &with(0, 50, 1), 1, names));
        let err = exchange_stat(&mut a, &with(1, 40, 1), 0, names).unwrap_err();
        match err {
            Error::HandshakeMismatch {
                field: "statistical security",
                ours,
                theirs,
            } => assert_eq!((ours.as_str(), theirs.as_str()), ("40", "50")),
            e => panic!("{e}"),
        }
        assert!(t.join().unwrap().is_err());
        // Same statistical security, other bits: the generic field.
        let (mut a, mut b) = obliv_net::mem_pair();
        let t = std::thread::spawn(move || exchange_stat(&mut b, &with(0, 40, 2), 1, names));
        let err = exchange_stat(&mut a, &with(1, 40, 1), 0, names).unwrap_err();
        assert!(
            matches!(
                err,
                Error::HandshakeMismatch {
                    field: "parameters",
                    ..
                }
            ),
            "{err}"
        );
        assert!(t.join().unwrap().is_err());
    }
}
