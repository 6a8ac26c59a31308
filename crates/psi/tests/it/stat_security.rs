//! The configured statistical security parameter: it sets the comparison width, the cuckoo
//! table and the OKVS of every protocol (checked on the wire), peers with different values
//! stop at the handshake, out-of-range values are refused, and `job_stat_security` is the
//! union bound.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use crate::common::{self, items, run_two};

use std::sync::{Arc, Mutex};

use obliv_core::{AesRng, Block};
use obliv_cuckoo::CuckooParams;
use obliv_net::{Channel, MemChannel, RecvBuf, Session, Stats, mem_pair};
use obliv_okvs::{Binary, BinnedPaxos, Gf128, Okvs, Paxos};
use obliv_psi::ecdh::{self, EcdhConfig, EcdhSession};
use obliv_psi::kkrt::{self, KkrtConfig, KkrtSession};
use obliv_psi::rr22::{self, Rr22Config, Rr22Session, Variant};
use obliv_psi::{
    Error, ErrorKind, MAX_STAT_SECURITY, PsiSession, Role, STAT_SECURITY, ecdh3, job_stat_security,
    plain_intersection,
};
use rand_core::SeedableRng;

/// Every frame one end sent, in order.
type Frames = Arc<Mutex<Vec<Vec<u8>>>>;

/// A channel that keeps a copy of every frame it sends.
struct Recorder {
    inner: MemChannel,
    sent: Frames,
}

impl Channel for Recorder {
    fn send(&mut self, msg: &[u8]) -> obliv_net::Result<()> {
        self.sent.lock().unwrap().push(msg.to_vec());
        self.inner.send(msg)
    }
    fn recv_frame(&mut self, max_len: usize, buf: &mut dyn RecvBuf) -> obliv_net::Result<()> {
        self.inner.recv_frame(max_len, buf)
    }
    fn flush(&mut self) -> obliv_net::Result<()> {
        self.inner.flush()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
    fn max_frame_len(&self) -> usize {
        self.inner.max_frame_len()
    }
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.inner.set_deadline(deadline);
    }
    fn set_max_frame_len(&mut self, max: usize) {
        self.inner.set_max_frame_len(max);
    }
}

/// What a recorded run gives: both outputs and the frames each side sent.
struct Recorded {
    receiver: Option<Vec<usize>>,
    sender: Option<Vec<usize>>,
    receiver_sent: Vec<Vec<u8>>,
    sender_sent: Vec<Vec<u8>>,
}

impl Recorded {
    fn sender_bytes(&self) -> usize {
        self.sender_sent.iter().map(Vec::len).sum()
    }
    fn receiver_bytes(&self) -> usize {
        self.receiver_sent.iter().map(Vec::len).sum()
    }
}

/// Runs `protocol` on recorded in-memory channels (receiver with `xs`, sender with `ys`);
/// both sides must succeed.
fn recorded<F>(xs: Vec<Vec<u8>>, ys: Vec<Vec<u8>>, protocol: F) -> Recorded
where
    F: Fn(&mut Recorder, Role, &[Vec<u8>], &mut AesRng) -> Result<Option<Vec<usize>>, Error>
        + Send
        + Clone
        + 'static,
{
    let (a, b) = mem_pair();
    let (fa, fb): (Frames, Frames) = (Arc::default(), Arc::default());
    let pair = (
        Recorder {
            inner: a,
            sent: fa.clone(),
        },
        Recorder {
            inner: b,
            sent: fb.clone(),
        },
    );
    let (r, s) = run_two(pair, xs, ys, protocol);
    let take = |f: &Frames| std::mem::take(&mut *f.lock().unwrap());
    Recorded {
        receiver: r.unwrap(),
        sender: s.unwrap(),
        receiver_sent: take(&fa),
        sender_sent: take(&fb),
    }
}

/// `⌈(λ + ⌈log₂ 100⌉ + ⌈log₂ 100⌉)/8⌉`: the comparison width for 100 × 100 items.
fn width_100(stat_security: u32) -> usize {
    (stat_security as usize + 7 + 7).div_ceil(8)
}

fn sets_100() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    (items("s", 0..100), items("s", 50..150))
}

#[test]
fn job_stat_security_is_the_union_bound() {
    assert_eq!(STAT_SECURITY, 40);
    for (runs, want) in [
        (0u64, 40u32),
        (1, 40),
        (2, 41),
        (3, 42),
        (4, 42),
        (5, 43),
        (1023, 50),
        (1024, 50),
        (1025, 51),
        (1 << 20, 60),
        (u64::MAX, 104),
    ] {
        assert_eq!(job_stat_security(runs), want, "{runs} runs");
    }
    // runs · 2^-λ ≤ 2^-40 for every count.
    for runs in 1u64..5000 {
        let lambda = job_stat_security(runs);
        assert!(
            (runs as f64).log2() <= f64::from(lambda - 40),
            "{runs}: {lambda}"
        );
        assert!(lambda <= MAX_STAT_SECURITY);
    }
}

#[test]
fn out_of_range_stat_security_is_refused_before_anything_is_sent() {
    let is_invalid = |r: Result<Option<Vec<usize>>, Error>, what: &str| match r {
        Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{what}: {e}"),
        Ok(_) => panic!("{what}: accepted"),
    };
    let xs = items("o", 0..10);
    for bad in [0u32, 1, 39, 129, 255, 256, u32::MAX] {
        // The peer is gone: a protocol that sent anything would fail with a network error.
        let fresh = || {
            let (a, b) = mem_pair();
            drop(b);
            a
        };
        let mut rng = AesRng::from_seed([1; 16]);
        let e = EcdhConfig {
            stat_security: bad,
            ..EcdhConfig::default()
        };
        assert!(EcdhSession::new(Role::Receiver, &e).is_err());
        is_invalid(
            ecdh::run(&mut fresh(), Role::Receiver, &xs, &e, &mut rng),
            "ecdh",
        );
        let mut s = Session::mem_mesh(3).into_iter().next().unwrap();
        is_invalid(ecdh3::run(&mut s, 0, &xs, &e, &mut rng), "ecdh3");
        let k = KkrtConfig {
            stat_security: bad,
            ..KkrtConfig::default()
        };
        assert!(KkrtSession::new(Role::Sender, &k).is_err());
        is_invalid(
            kkrt::run(&mut fresh(), Role::Sender, &xs, &k, &mut rng),
            "kkrt",
        );
        for v in [Variant::Fast, Variant::LowComm, Variant::Malicious] {
            let c = Rr22Config {
                stat_security: bad,
                ..Rr22Config::new(v)
            };
            assert!(Rr22Session::new(Role::Receiver, &c).is_err());
            is_invalid(
                rr22::run(&mut fresh(), Role::Receiver, &xs, &c, &mut rng),
                v.name(),
            );
        }
    }
    // The ends of the range are accepted.
    for good in [STAT_SECURITY, 41, 50, MAX_STAT_SECURITY] {
        let e = EcdhConfig {
            stat_security: good,
            ..EcdhConfig::default()
        };
        assert!(EcdhSession::new(Role::Receiver, &e).is_ok());
        let k = KkrtConfig {
            stat_security: good,
            ..KkrtConfig::default()
        };
        assert!(KkrtSession::new(Role::Receiver, &k).is_ok());
        let c = Rr22Config {
            stat_security: good,
            ..Rr22Config::default()
        };
        assert!(Rr22Session::new(Role::Receiver, &c).is_ok());
    }
}

#[test]
fn ecdh_width_grows_with_stat_security() {
    let (xs, ys) = sets_100();
    let want = plain_intersection(&xs, &ys);
    let run = |stat_security: u32| {
        let cfg = EcdhConfig {
            stat_security,
            ..EcdhConfig::default()
        };
        let out = recorded(xs.clone(), ys.clone(), move |ch, role, it, rng| {
            ecdh::run(ch, role, it, &cfg, rng)
        });
        assert_eq!(out.receiver.as_ref(), Some(&want), "λ = {stat_security}");
        assert_eq!(out.sender, None);
        // The sender's answer to the receiver's one batch: w bytes per receiver item.
        let w = width_100(stat_security);
        assert!(
            out.sender_sent
                .iter()
                .any(|f| f[0] == 2 && f.len() == 5 + 100 * w),
            "λ = {stat_security}: no answer of {w}-byte values"
        );
        out
    };
    let base = run(40);
    for stat_security in [41, 50, 56] {
        let out = run(stat_security);
        // 41 still fits 7 bytes; 50 needs 8 and 56 needs 9.
        let extra = 100 * (width_100(stat_security) - width_100(40));
        assert_eq!(
            out.sender_bytes(),
            base.sender_bytes() + extra,
            "λ = {stat_security}"
        );
        // The receiver sends points only: unchanged.
        assert_eq!(out.receiver_bytes(), base.receiver_bytes());
    }
}

/// The receiver's table message (seed, then `m`): the frame right after its last hello.
fn kkrt_bins(receiver_sent: &[Vec<u8>]) -> usize {
    let hello = receiver_sent
        .iter()
        .rposition(|f| f.starts_with(b"OBPS"))
        .unwrap();
    let table = &receiver_sent[hello + 1];
    assert_eq!(table.len(), 24);
    let mut m = [0u8; 8];
    m.copy_from_slice(&table[16..]);
    usize::try_from(u64::from_le_bytes(m)).unwrap()
}

fn kkrt_run(xs: &[Vec<u8>], ys: &[Vec<u8>], cfg: KkrtConfig) -> Recorded {
    let out = recorded(xs.to_vec(), ys.to_vec(), move |ch, role, it, rng| {
        kkrt::run(ch, role, it, &cfg, rng)
    });
    assert_eq!(out.receiver, Some(plain_intersection(xs, ys)), "{cfg:?}");
    assert_eq!(out.sender, None);
    out
}

#[test]
fn kkrt_width_and_table_grow_with_stat_security() {
    let (xs, ys) = sets_100();
    let run = |stat_security: u32| {
        let cfg = KkrtConfig {
            stat_security,
            ..KkrtConfig::default()
        };
        let out = kkrt_run(&xs, &ys, cfg);
        // Three sets V_0, V_1, V_2 of 100 values each, the last three frames.
        let w = width_100(stat_security);
        let tail = &out.sender_sent[out.sender_sent.len() - 3..];
        assert!(
            tail.iter().all(|f| f.len() == 100 * w),
            "λ = {stat_security}"
        );
        // The table: the PSZ fit for 100 items at λ.
        let m = kkrt_bins(&out.receiver_sent);
        assert_eq!(m, CuckooParams::new(100, stat_security).unwrap().bins);
        assert_eq!(m, cfg.bins(100).unwrap());
        (out, m)
    };
    let (base, m40) = run(40);
    for stat_security in [50, 56] {
        let (out, m) = run(stat_security);
        assert!(m > m40, "λ = {stat_security}: {m} bins, {m40} at 40");
        assert_eq!(
            out.sender_bytes(),
            base.sender_bytes() + 3 * 100 * (width_100(stat_security) - width_100(40)),
            "λ = {stat_security}"
        );
        // The OPRF sends 64 bytes per bin, in blocks of 128 bins: never fewer bytes.
        assert!(out.receiver_bytes() >= base.receiver_bytes());
    }
}

#[test]
fn kkrt_default_factor_is_the_psz_fit_and_explicit_factors_stay() {
    for n in [
        1usize,
        2,
        10,
        100,
        1000,
        4095,
        4096,
        5000,
        1 << 16,
        1 << 20,
        10_000_000,
    ] {
        for stat_security in [40, 50, 64] {
            let cfg = KkrtConfig {
                stat_security,
                ..KkrtConfig::default()
            };
            assert_eq!(cfg.cuckoo_factor, None);
            assert_eq!(cfg.factor(n), CuckooParams::factor(n, stat_security));
            assert_eq!(
                cfg.bins(n).unwrap(),
                CuckooParams::new(n, stat_security).unwrap().bins,
                "n = {n}, λ = {stat_security}"
            );
        }
        // 1.27 as asked, except that small tables keep the 2^-λ floor.
        let published = KkrtConfig {
            cuckoo_factor: Some(1.27),
            ..KkrtConfig::default()
        };
        let e = if n < kkrt::SMALL_TABLE {
            CuckooParams::factor(n, 40).max(1.27)
        } else {
            1.27
        };
        assert_eq!(published.factor(n), e, "n = {n}");
    }
    // On the wire, above the small-table floor: default vs 1.27.
    let (xs, ys) = (items("t", 0..5000), items("t", 2500..7500));
    let default = kkrt_bins(&kkrt_run(&xs, &ys, KkrtConfig::default()).receiver_sent);
    assert_eq!(default, CuckooParams::new(5000, 40).unwrap().bins);
    let explicit = KkrtConfig {
        cuckoo_factor: Some(1.27),
        ..KkrtConfig::default()
    };
    let m = kkrt_bins(&kkrt_run(&xs, &ys, explicit).receiver_sent);
    assert_eq!(m, CuckooParams::with_factor(5000, 1.27).unwrap().bins);
    assert!(m < default);
    // Duplicates do not change the table: it is sized for the announced count.
    let mut dup = items("t", 0..2500);
    dup.extend(items("t", 0..2500));
    let m_dup = kkrt_bins(&kkrt_run(&dup, &ys, KkrtConfig::default()).receiver_sent);
    assert_eq!(m_dup, default);
}

/// The OKVS size of an RR22 run with `n_r` receiver items.
fn rr22_okvs_size(v: Variant, n_r: usize, stat_security: u32) -> usize {
    match v {
        Variant::LowComm => Paxos::<Binary>::new(n_r, stat_security, Block::ZERO)
            .unwrap()
            .size(),
        _ => BinnedPaxos::<Gf128>::with_bin_size(
            n_r,
            obliv_okvs::DEFAULT_BIN_SIZE,
            stat_security,
            Block::ZERO,
        )
        .unwrap()
        .size(),
    }
}

#[test]
fn rr22_width_and_okvs_grow_with_stat_security() {
    let (xs, ys) = sets_100();
    let want = plain_intersection(&xs, &ys);
    for v in [Variant::Fast, Variant::LowComm, Variant::Malicious] {
        let slot = if v == Variant::LowComm { 8 } else { 16 };
        let mut sizes = Vec::new();
        for stat_security in [40, 50, 56] {
            let cfg = Rr22Config {
                stat_security,
                ..Rr22Config::new(v)
            };
            let out = recorded(xs.clone(), ys.clone(), move |ch, role, it, rng| {
                rr22::run(ch, role, it, &cfg, rng)
            });
            let what = format!("{} at λ = {stat_security}", v.name());
            assert_eq!(out.receiver.as_ref(), Some(&want), "{what}");
            // The sender's last frame: its 100 values of w bytes (16 for malicious).
            let w = if v == Variant::Malicious {
                16
            } else {
                width_100(stat_security)
            };
            let last = out.sender_sent.last().unwrap();
            assert_eq!(last[0], 4, "{what}");
            assert_eq!(last.len(), 5 + 100 * w, "{what}");
            // The receiver's masked OKVS, one frame of m slots, m sized for 2^-λ.
            let m = rr22_okvs_size(v, 100, stat_security);
            assert!(
                out.receiver_sent
                    .iter()
                    .any(|f| f.len() == 5 + slot * m && f[..5] == [2, 0, 0, 0, 0]),
                "{what}: no OKVS of {m} slots"
            );
            sizes.push(m);
        }
        assert!(sizes[0] < sizes[1] && sizes[1] < sizes[2], "{sizes:?}");
    }
}

/// Both sides of a run with different parameters fail with a mismatch on the field
/// `statistical security`.
fn assert_stat_mismatch(out: common::Out, what: &str) {
    for (side, r) in [("receiver", out.0), ("sender", out.1)] {
        match r {
            Err(Error::HandshakeMismatch {
                field: "statistical security",
                ours,
                theirs,
            }) => assert_ne!(ours, theirs, "{what}, {side}"),
            other => panic!("{what}, {side}: {other:?}"),
        }
    }
}

#[test]
fn peers_with_different_stat_security_stop_at_the_handshake() {
    let (xs, ys) = sets_100();
    for (r_stat, s_stat) in [(40, 50), (50, 40), (50, 51)] {
        let pick = move |role: Role| {
            if role == Role::Receiver {
                r_stat
            } else {
                s_stat
            }
        };
        let out = run_two(
            mem_pair(),
            xs.clone(),
            ys.clone(),
            move |ch, role, it, rng| {
                let cfg = EcdhConfig {
                    stat_security: pick(role),
                    ..EcdhConfig::default()
                };
                ecdh::run(ch, role, it, &cfg, rng)
            },
        );
        assert_stat_mismatch(out, "ecdh");
        let out = run_two(
            mem_pair(),
            xs.clone(),
            ys.clone(),
            move |ch, role, it, rng| {
                let cfg = KkrtConfig {
                    stat_security: pick(role),
                    ..KkrtConfig::default()
                };
                kkrt::run(ch, role, it, &cfg, rng)
            },
        );
        assert_stat_mismatch(out, "kkrt");
        for v in [Variant::Fast, Variant::LowComm, Variant::Malicious] {
            let out = run_two(
                mem_pair(),
                xs.clone(),
                ys.clone(),
                move |ch, role, it, rng| {
                    let cfg = Rr22Config {
                        stat_security: pick(role),
                        ..Rr22Config::new(v)
                    };
                    rr22::run(ch, role, it, &cfg, rng)
                },
            );
            assert_stat_mismatch(out, v.name());
        }
        // Sessions: the first run (KKRT: its set-up) and the split step compare it too.
        let out = run_two(
            mem_pair(),
            xs.clone(),
            ys.clone(),
            move |ch, role, _, rng| {
                let cfg = EcdhConfig {
                    stat_security: pick(role),
                    ..EcdhConfig::default()
                };
                let mut s = EcdhSession::new(role, &cfg)?;
                s.split(ch, 2, rng).map(|_| None)
            },
        );
        assert_stat_mismatch(out, "ecdh split");
    }
}

#[test]
fn three_parties_with_different_stat_security_stop_at_the_handshake() {
    let sets = [items("q", 0..20), items("q", 5..25), items("q", 10..30)];
    let handles: Vec<_> = Session::mem_mesh(3)
        .into_iter()
        .zip(sets)
        .map(|(mut s, set)| {
            std::thread::spawn(move || {
                let rank = s.rank();
                let cfg = EcdhConfig {
                    stat_security: if rank == 2 { 50 } else { 40 },
                    ..EcdhConfig::default()
                };
                let seed = [u8::try_from(rank).unwrap() + 1; 16];
                ecdh3::run(&mut s, 0, &set, &cfg, &mut AesRng::from_seed(seed))
            })
        })
        .collect();
    let out: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // Rank 2 meets rank 0 first, and rank 0 meets rank 2 second: both see the mismatch;
    // rank 1 loses its peer.
    for r in [0, 2] {
        assert!(
            matches!(
                out[r],
                Err(Error::HandshakeMismatch {
                    field: "statistical security",
                    ..
                })
            ),
            "rank {r}: {:?}",
            out[r]
        );
    }
    assert!(out[1].is_err());
}

#[test]
fn widths_above_16_bytes_are_refused_on_both_sides() {
    // λ = 128 with 2 × 2 items needs ⌈130/8⌉ = 17 bytes.
    let (xs, ys) = (items("w", 0..2), items("w", 1..3));
    let invalid = |out: common::Out, what: &str| {
        for (side, r) in [("receiver", out.0), ("sender", out.1)] {
            match r {
                Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{what} {side}: {e}"),
                Ok(o) => panic!("{what} {side}: {o:?}"),
            }
        }
    };
    let out = run_two(mem_pair(), xs.clone(), ys.clone(), |ch, role, it, rng| {
        let cfg = EcdhConfig {
            stat_security: 128,
            ..EcdhConfig::default()
        };
        ecdh::run(ch, role, it, &cfg, rng)
    });
    invalid(out, "ecdh");
    let out = run_two(mem_pair(), xs.clone(), ys.clone(), |ch, role, it, rng| {
        let cfg = KkrtConfig {
            stat_security: 128,
            ..KkrtConfig::default()
        };
        kkrt::run(ch, role, it, &cfg, rng)
    });
    invalid(out, "kkrt");
    for v in [Variant::Fast, Variant::Malicious] {
        let out = run_two(
            mem_pair(),
            xs.clone(),
            ys.clone(),
            move |ch, role, it, rng| {
                let cfg = Rr22Config {
                    stat_security: 128,
                    ..Rr22Config::new(v)
                };
                rr22::run(ch, role, it, &cfg, rng)
            },
        );
        invalid(out, v.name());
    }
    // Low-comm at λ = 60 takes at most 2^4 sender items per run.
    assert_eq!(
        rr22::lowcomm::max_sender_items(40),
        rr22::lowcomm::MAX_SENDER_ITEMS
    );
    assert_eq!(rr22::lowcomm::max_sender_items(60), 16);
    assert_eq!(rr22::lowcomm::max_sender_items(65), 0);
    let lowcomm = |n_s: usize| {
        run_two(
            mem_pair(),
            items("l", 0..20),
            items("l", 0..n_s),
            |ch, role, it, rng| {
                let cfg = Rr22Config {
                    stat_security: 60,
                    ..Rr22Config::new(Variant::LowComm)
                };
                rr22::run(ch, role, it, &cfg, rng)
            },
        )
    };
    invalid(lowcomm(17), "rr22-lowcomm, 17 sender items");
    let (r, s) = lowcomm(16);
    assert_eq!(r.unwrap(), Some((0..16).collect()));
    assert_eq!(s.unwrap(), None);
}
