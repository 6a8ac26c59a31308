//! Two-party tests of the generators on injected (dealer) base correlations.

use obliv_core::rand_core::SeedableRng;
use obliv_core::{AesRng, Block, gf128};
use obliv_net::{Channel, Stats, TcpChannel, TcpOptions, mem_pair};

use crate::base::{ReceiverBase, SenderBase, dealer};
use crate::extend::Kind;
use crate::extend::tamper::{self, Target};
use crate::{
    Error, Security, Subfield64VoleReceiver, Subfield64VoleSender, SubfieldVoleReceiver,
    SubfieldVoleSender, VoleConfig, VoleReceiver, VoleSender, embed64,
};

fn cfg(security: Security, max_chunk: usize) -> VoleConfig {
    VoleConfig {
        security,
        max_chunk,
    }
}

// ---------------------------------------------------------------------------------------
// The three generator pairs behind one test interface, and a regression digest of their
// outputs.

/// A generator pair (sender, receiver) seen through its public API, so that one test
/// helper serves all three flavours. `A` is the receiver's value type; [`Flavour::embed`]
/// maps it into GF(2^128) so that the correlation reads `C = B ⊕ embed(A)·Δ` for all three.
trait Flavour: 'static {
    type S: Send + core::fmt::Debug + 'static;
    type R: core::fmt::Debug;
    type A: Copy + Default + PartialEq + core::fmt::Debug + Send + 'static;
    /// Name, for messages.
    const NAME: &'static str;
    /// The extension kind (for tampering).
    const KIND: Kind;
    /// The seeds of the dealer/receiver RNG and the sender RNG in [`run`].
    const SEEDS: [u8; 2];
    /// The bits a tampering sender flips.
    const TAMPER_MASK: u128;
    fn sender_from_base(base: SenderBase, cfg: VoleConfig) -> Result<Self::S, Error>;
    fn receiver_from_base(base: ReceiverBase, cfg: VoleConfig) -> Result<Self::R, Error>;
    fn sender_new<C: Channel>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut AesRng,
    ) -> Result<Self::S, Error>;
    fn receiver_new<C: Channel>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut AesRng,
    ) -> Result<Self::R, Error>;
    fn delta(s: &Self::S) -> Block;
    fn send<C: Channel>(
        s: &mut Self::S,
        ch: &mut C,
        n: usize,
        rng: &mut AesRng,
    ) -> Result<Vec<Block>, Error>;
    fn send_chunks<C: Channel>(
        s: &mut Self::S,
        ch: &mut C,
        n: usize,
        rng: &mut AesRng,
        sink: impl FnMut(&[Block]) -> Result<(), Error>,
    ) -> Result<(), Error>;
    #[allow(clippy::type_complexity)]
    fn receive<C: Channel>(
        r: &mut Self::R,
        ch: &mut C,
        n: usize,
        rng: &mut AesRng,
    ) -> Result<(Vec<Self::A>, Vec<Block>), Error>;
    fn receive_chunks<C: Channel>(
        r: &mut Self::R,
        ch: &mut C,
        n: usize,
        rng: &mut AesRng,
        sink: impl FnMut(&[Self::A], &[Block]) -> Result<(), Error>,
    ) -> Result<(), Error>;
    fn send_into<C: Channel>(
        s: &mut Self::S,
        ch: &mut C,
        n: usize,
        rng: &mut AesRng,
        out: &mut Vec<Block>,
    ) -> Result<(), Error>;
    fn receive_into<C: Channel>(
        r: &mut Self::R,
        ch: &mut C,
        n: usize,
        rng: &mut AesRng,
        a: &mut Vec<Self::A>,
        c: &mut Vec<Block>,
    ) -> Result<(), Error>;
    /// `A`'s value in GF(2^128).
    fn embed(a: Self::A) -> Block;
    /// Checks that `A` (and `B`) of one run look like what the flavour should produce.
    fn sanity(a: &[Self::A], b: &[Block]);
}

/// Implements [`Flavour`] for a marker type from the generator types and the embedding.
macro_rules! flavour {
    (
        $marker:ident, $name:literal, $kind:expr, $seeds:expr, $mask:expr,
        $s:ty, $r:ty, $a:ty, $embed:expr, $sanity:expr
    ) => {
        struct $marker;
        impl Flavour for $marker {
            type S = $s;
            type R = $r;
            type A = $a;
            const NAME: &'static str = $name;
            const KIND: Kind = $kind;
            const SEEDS: [u8; 2] = $seeds;
            const TAMPER_MASK: u128 = $mask;
            fn sender_from_base(base: SenderBase, cfg: VoleConfig) -> Result<$s, Error> {
                <$s>::from_base(base, cfg)
            }
            fn receiver_from_base(base: ReceiverBase, cfg: VoleConfig) -> Result<$r, Error> {
                <$r>::from_base(base, cfg)
            }
            fn sender_new<C: Channel>(
                ch: &mut C,
                cfg: VoleConfig,
                rng: &mut AesRng,
            ) -> Result<$s, Error> {
                <$s>::new(ch, cfg, rng)
            }
            fn receiver_new<C: Channel>(
                ch: &mut C,
                cfg: VoleConfig,
                rng: &mut AesRng,
            ) -> Result<$r, Error> {
                <$r>::new(ch, cfg, rng)
            }
            fn delta(s: &$s) -> Block {
                s.delta()
            }
            fn send<C: Channel>(
                s: &mut $s,
                ch: &mut C,
                n: usize,
                rng: &mut AesRng,
            ) -> Result<Vec<Block>, Error> {
                s.extend(ch, n, rng)
            }
            fn send_chunks<C: Channel>(
                s: &mut $s,
                ch: &mut C,
                n: usize,
                rng: &mut AesRng,
                sink: impl FnMut(&[Block]) -> Result<(), Error>,
            ) -> Result<(), Error> {
                s.extend_chunks(ch, n, rng, sink)
            }
            fn receive<C: Channel>(
                r: &mut $r,
                ch: &mut C,
                n: usize,
                rng: &mut AesRng,
            ) -> Result<(Vec<$a>, Vec<Block>), Error> {
                r.extend(ch, n, rng)
            }
            fn receive_chunks<C: Channel>(
                r: &mut $r,
                ch: &mut C,
                n: usize,
                rng: &mut AesRng,
                sink: impl FnMut(&[$a], &[Block]) -> Result<(), Error>,
            ) -> Result<(), Error> {
                r.extend_chunks(ch, n, rng, sink)
            }
            fn send_into<C: Channel>(
                s: &mut $s,
                ch: &mut C,
                n: usize,
                rng: &mut AesRng,
                out: &mut Vec<Block>,
            ) -> Result<(), Error> {
                s.extend_into(ch, n, rng, out)
            }
            fn receive_into<C: Channel>(
                r: &mut $r,
                ch: &mut C,
                n: usize,
                rng: &mut AesRng,
                a: &mut Vec<$a>,
                c: &mut Vec<Block>,
            ) -> Result<(), Error> {
                r.extend_into(ch, n, rng, a, c)
            }
            fn embed(a: $a) -> Block {
                $embed(a)
            }
            fn sanity(a: &[$a], b: &[Block]) {
                $sanity(a, b)
            }
        }
    };
}

flavour!(
    Sub,
    "subfield",
    Kind::Subfield,
    [3, 4],
    1 << 77,
    SubfieldVoleSender,
    SubfieldVoleReceiver,
    u8,
    |a: u8| Block(u128::from(a)),
    sanity_bits
);
flavour!(
    Sub64,
    "sub64",
    Kind::Subfield64,
    [14, 15],
    1 << 100,
    Subfield64VoleSender,
    Subfield64VoleReceiver,
    u64,
    embed64,
    sanity_u64
);
flavour!(
    Field,
    "gf128",
    Kind::Field,
    [5, 6],
    1 << 5,
    VoleSender,
    VoleReceiver,
    Block,
    |a: Block| a,
    sanity_field
);

/// Subfield `A`: bits, balanced; `B` not constant.
fn sanity_bits(a: &[u8], b: &[Block]) {
    let n = a.len();
    assert!(a.iter().all(|x| *x <= 1), "A is not bits");
    if n >= 1000 {
        let ones = a.iter().filter(|x| **x == 1).count();
        assert!(ones > n * 2 / 5 && ones < n * 3 / 5, "{ones} ones of {n}");
        assert_ne!(b[0], b[1]);
    }
}

/// GF(2^128) `A`: not zero, not constant.
fn sanity_field(a: &[Block], _b: &[Block]) {
    if a.len() >= 2 {
        assert_ne!(a[0], a[1]);
        assert_ne!(a[0], Block::ZERO);
    }
}

/// 64-bit `A` is not degenerate: every one of its 64 bit positions is balanced (this
/// catches a constant, zero, one-bit or low-degree `A`), and the values are pairwise
/// distinct (a 64-bit uniform `A` repeats with probability `n²/2^65`).
fn sanity_u64(a: &[u64], b: &[Block]) {
    let n = a.len();
    if n >= 2 {
        assert_ne!(a[0], a[1]);
        assert_ne!(b[0], b[1]);
    }
    if n >= 1000 {
        for bit in 0..64 {
            let ones = a.iter().filter(|x| (**x >> bit) & 1 == 1).count();
            assert!(
                ones > n * 2 / 5 && ones < n * 3 / 5,
                "bit {bit}: {ones} ones of {n}"
            );
        }
        let mut sorted = a.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), n, "repeated A values");
    }
}

/// The outputs of one call: `(Δ, B, A, C, sender's traffic, receiver's traffic)`.
type Out<P> = (
    Block,
    Vec<Block>,
    Vec<<P as Flavour>::A>,
    Vec<Block>,
    Stats,
    Stats,
);

/// Runs `P` for each size in `sizes` (one generator pair from a dealer base, consecutive
/// calls), optionally with a sender that tampers with every extension's tree messages;
/// `chunked` uses `extend_chunks` and checks that every chunk is at most `max_chunk`. A
/// failed call ends the run.
fn run<P: Flavour, C: Channel + 'static>(
    c0: C,
    mut c1: C,
    cfg: VoleConfig,
    sizes: &[usize],
    tamper_at: Option<Target>,
    chunked: bool,
) -> Vec<Result<Out<P>, Error>> {
    let mut rng = AesRng::from_seed([P::SEEDS[0]; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let sizes_s = sizes.to_vec();
    let sender = std::thread::spawn(move || {
        let mut c0 = c0;
        let mut rng = AesRng::from_seed([P::SEEDS[1]; 16]);
        let mut s = P::sender_from_base(sb, cfg).unwrap();
        let mut outs = Vec::new();
        for n in sizes_s {
            if let Some(target) = tamper_at {
                tamper::set(P::KIND, target, P::TAMPER_MASK);
            }
            let before = c0.stats();
            let b = if chunked {
                let mut all = Vec::new();
                P::send_chunks(&mut s, &mut c0, n, &mut rng, |b| {
                    assert!(!b.is_empty() && b.len() <= cfg.max_chunk);
                    all.extend_from_slice(b);
                    Ok(())
                })
                .map(|()| all)
            } else {
                P::send(&mut s, &mut c0, n, &mut rng)
            };
            let failed = b.is_err();
            outs.push(b.map(|b| (b, c0.stats() - before)));
            if failed {
                break;
            }
        }
        (P::delta(&s), outs)
    });
    let mut r = P::receiver_from_base(rb, cfg).unwrap();
    let mut results = Vec::new();
    for &n in sizes {
        let before = c1.stats();
        let res = if chunked {
            let (mut aa, mut cc) = (Vec::new(), Vec::new());
            P::receive_chunks(&mut r, &mut c1, n, &mut rng, |a, c| {
                assert_eq!(a.len(), c.len());
                assert!(!a.is_empty() && a.len() <= cfg.max_chunk);
                aa.extend_from_slice(a);
                cc.extend_from_slice(c);
                Ok(())
            })
            .map(|()| (aa, cc))
        } else {
            P::receive(&mut r, &mut c1, n, &mut rng)
        };
        let failed = res.is_err();
        results.push(res.map(|(a, c)| (a, c, c1.stats() - before)));
        if failed {
            break;
        }
    }
    drop(c1);
    let (delta, souts) = sender.join().unwrap();
    results
        .into_iter()
        .zip(
            souts
                .into_iter()
                .chain(std::iter::repeat_with(|| Err(Error::ConsistencyCheck))),
        )
        .map(|(r, s)| {
            let (a, c, rs) = r?;
            let (b, ss) = s?;
            Ok((delta, b, a, c, ss, rs))
        })
        .collect()
}

/// [`run`] on the in-memory channel.
fn run_mem<P: Flavour>(
    cfg: VoleConfig,
    sizes: &[usize],
    tamper_at: Option<Target>,
    chunked: bool,
) -> Vec<Result<Out<P>, Error>> {
    let (c0, c1) = mem_pair();
    run::<P, _>(c0, c1, cfg, sizes, tamper_at, chunked)
}

/// The correlation indices `i < n` where `C[i] ≠ B[i] ⊕ embed(A[i])·Δ`.
fn broken<P: Flavour>(out: &Out<P>) -> Vec<usize> {
    let (delta, b, a, c, _, _) = out;
    (0..c.len())
        .filter(|&i| c[i] != b[i] ^ gf128::mul(P::embed(a[i]), *delta))
        .collect()
}

/// `n` outputs, the correlation for every one, and the flavour's [`Flavour::sanity`].
fn assert_out<P: Flavour>(out: &Out<P>, n: usize) {
    let (_, b, a, c, _, _) = out;
    assert_eq!((b.len(), a.len(), c.len()), (n, n, n), "{}", P::NAME);
    P::sanity(a, b);
    let bad = broken::<P>(out);
    assert!(bad.is_empty(), "{}: correlations {bad:?} of {n}", P::NAME);
}

/// [`assert_out`] for outputs without traffic counters.
fn assert_plain<P: Flavour>(delta: Block, b: Vec<Block>, a: Vec<P::A>, c: Vec<Block>) {
    let n = a.len();
    assert_out::<P>(&(delta, b, a, c, Stats::default(), Stats::default()), n);
}

/// Runs `sizes` on one pair and checks every call.
fn check_sizes<P: Flavour>(cfg: VoleConfig, sizes: &[usize], chunked: bool) {
    let outs = run_mem::<P>(cfg, sizes, None, chunked);
    assert_eq!(outs.len(), sizes.len());
    for (out, n) in outs.iter().zip(sizes) {
        assert_out::<P>(out.as_ref().unwrap(), *n);
    }
}

/// The malicious check catches a sender that tampers with `target`.
fn check_catches<P: Flavour>(cfg: VoleConfig, n: usize, target: Target) {
    let outs = run_mem::<P>(cfg, &[n], Some(target), false);
    assert!(
        matches!(outs[0], Err(Error::ConsistencyCheck)),
        "{}: tampering {target:?} not caught",
        P::NAME
    );
}

/// Two calls of `n` and `n + extra` over TCP; the second (steady state, bootstrapped base)
/// sends the same bytes each way and fewer than `max_bits` bits per correlation.
fn check_tcp_communication<P: Flavour>(n: usize, extra: usize, max_bits: f64) {
    let (c0, c1) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let cfg = cfg(Security::SemiHonest, 1 << 20);
    let outs = run::<P, _>(c0, c1, cfg, &[n, n + extra], None, false);
    assert_out::<P>(outs[0].as_ref().unwrap(), n);
    let second = outs[1].as_ref().unwrap();
    assert_out::<P>(second, n + extra);
    let bytes = second.4.total_bytes();
    assert_eq!(bytes, second.5.total_bytes());
    let bits_per = bytes as f64 * 8.0 / n as f64;
    assert!(bits_per < max_bits, "{bits_per} bits per correlation");
}

/// Base OT + IKNP over TCP, then one extension of `n`.
fn check_real_base_ot<P: Flavour>(cfg: VoleConfig, n: usize, seeds: [u8; 2]) {
    let (mut c0, mut c1) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([seeds[0]; 16]);
        let mut s = P::sender_new(&mut c0, cfg, &mut rng).unwrap();
        let b = P::send(&mut s, &mut c0, n, &mut rng).unwrap();
        (P::delta(&s), b)
    });
    let mut rng = AesRng::from_seed([seeds[1]; 16]);
    let mut r = P::receiver_new(&mut c1, cfg, &mut rng).unwrap();
    let (a, c) = P::receive(&mut r, &mut c1, n, &mut rng).unwrap();
    let (delta, b) = sender.join().unwrap();
    assert_eq!(a.len(), n);
    assert_plain::<P>(delta, b, a, c);
}

/// Several `extend_chunks` calls of `sizes` on one pair (the working buffers are kept
/// between calls, with chunks of different lengths), then a plain `extend` of `last`:
/// every chunk at most `max_chunk`, and every output correlated.
fn check_streaming<P: Flavour>(cfg: VoleConfig, sizes: &[usize], last: usize, seeds: [u8; 2]) {
    let mut rng = AesRng::from_seed([seeds[0]; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let (mut c0, mut c1) = mem_pair();
    let sizes_s = sizes.to_vec();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([seeds[1]; 16]);
        let mut s = P::sender_from_base(sb, cfg).unwrap();
        let mut outs = Vec::new();
        for n in sizes_s {
            P::send_chunks(&mut s, &mut c0, n, &mut rng, |b| {
                outs.push(b.to_vec());
                Ok(())
            })
            .unwrap();
        }
        outs.push(P::send(&mut s, &mut c0, last, &mut rng).unwrap());
        (P::delta(&s), outs)
    });
    let mut r = P::receiver_from_base(rb, cfg).unwrap();
    let mut outs = Vec::new();
    for &n in sizes {
        P::receive_chunks(&mut r, &mut c1, n, &mut rng, |a, c| {
            assert!(a.len() <= cfg.max_chunk && a.len() == c.len());
            outs.push((a.to_vec(), c.to_vec()));
            Ok(())
        })
        .unwrap();
    }
    outs.push(P::receive(&mut r, &mut c1, last, &mut rng).unwrap());
    let (delta, souts) = t.join().unwrap();
    // Every chunk is full but each call's last.
    let mut expected: Vec<usize> = sizes
        .iter()
        .flat_map(|&n| {
            (0..n)
                .step_by(cfg.max_chunk)
                .map(move |i| cfg.max_chunk.min(n - i))
        })
        .collect();
    expected.push(last);
    let got: Vec<usize> = outs.iter().map(|(a, _)| a.len()).collect();
    assert_eq!(got, expected);
    assert_eq!(outs.len(), souts.len());
    for ((a, c), b) in outs.into_iter().zip(souts) {
        assert_plain::<P>(delta, b, a, c);
    }
}

#[test]
fn subfield_semi_honest_sizes() {
    let sizes = [1, 2, 100, 1000, 4097, 20_011];
    check_sizes::<Sub>(cfg(Security::SemiHonest, 1 << 16), &sizes, false);
}

#[test]
fn subfield_chunked_and_bootstrapped() {
    // max_chunk 3000: 10_001 runs as four chunks, each bootstrapping the next.
    check_sizes::<Sub>(cfg(Security::SemiHonest, 3000), &[10_001, 3000, 1], false);
}

#[test]
fn subfield_malicious_honest_run_passes() {
    check_sizes::<Sub>(cfg(Security::Malicious, 1 << 14), &[777, 5000], false);
}

#[test]
fn subfield_malicious_check_catches_bit_flip() {
    // (a) a flipped bit in the final correction d of tree 3;
    // (b) the same bit flipped in both level sums of level 2 of tree 5.
    for target in [Target::D(3), Target::Level(5, 2)] {
        check_catches::<Sub>(cfg(Security::Malicious, 1 << 14), 5000, target);
    }
    // Without the check the same tampering silently breaks the correlation (of the bootstrap
    // extension, whose outputs become the next base: the user's outputs then break too).
    let cfg = cfg(Security::SemiHonest, 1 << 14);
    let outs = run_mem::<Sub>(cfg, &[5000], Some(Target::D(3)), false);
    assert!(
        !broken::<Sub>(outs[0].as_ref().unwrap()).is_empty(),
        "tampering had no effect"
    );
}

#[test]
fn field_semi_honest_sizes_and_chunks() {
    check_sizes::<Field>(
        cfg(Security::SemiHonest, 4000),
        &[1, 513, 6000, 9001],
        false,
    );
}

#[test]
fn field_malicious_passes_and_catches() {
    check_sizes::<Field>(cfg(Security::Malicious, 1 << 13), &[3001], false);
    check_catches::<Field>(cfg(Security::Malicious, 1 << 13), 3001, Target::Level(4, 1));
}

#[test]
fn subfield_over_tcp_and_communication() {
    check_tcp_communication::<Sub>(1 << 16, 0, 8.0);
}

#[test]
fn real_base_ot_over_tcp_field_and_subfield() {
    // Two generator pairs one after the other on one connection.
    let (mut c0, mut c1) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let cfg = VoleConfig::default();
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([7; 16]);
        let mut s = VoleSender::new(&mut c0, cfg, &mut rng).unwrap();
        let b = s.extend(&mut c0, 5000, &mut rng).unwrap();
        let mut ss = SubfieldVoleSender::new(&mut c0, cfg, &mut rng).unwrap();
        let bb = ss.extend(&mut c0, 3001, &mut rng).unwrap();
        (s.delta(), b, ss.delta(), bb)
    });
    let mut rng = AesRng::from_seed([8; 16]);
    let mut r = VoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
    let (a, c) = r.extend(&mut c1, 5000, &mut rng).unwrap();
    let mut rr = SubfieldVoleReceiver::new(&mut c1, cfg, &mut rng).unwrap();
    let (aa, cc) = rr.extend(&mut c1, 3001, &mut rng).unwrap();
    let (delta, b, delta2, bb) = sender.join().unwrap();
    assert_eq!((a.len(), aa.len()), (5000, 3001));
    assert_plain::<Field>(delta, b, a, c);
    assert_plain::<Sub>(delta2, bb, aa, cc);
    assert_ne!(delta, delta2);
}

#[test]
fn hostile_peer_messages_give_errors_not_panics() {
    use obliv_net::ChannelExt;
    let cfg = VoleConfig::default();
    let mut rng = AesRng::from_seed([9; 16]);
    // A "sender" that answers the receiver's flips with a truncated tree message.
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let (mut c0, mut c1) = mem_pair();
    let peer = std::thread::spawn(move || {
        let flips = c0.recv().unwrap();
        assert!(!flips.is_empty());
        c0.send_pod(&[Block::ZERO; 3]).unwrap();
        c0.flush().unwrap();
    });
    let mut r = SubfieldVoleReceiver::from_base(rb, cfg).unwrap();
    let err = r.extend(&mut c1, 100, &mut rng).unwrap_err();
    assert!(matches!(err, Error::Net(_)), "{err}");
    peer.join().unwrap();
    // A "receiver" that sends flips of the wrong length.
    let (mut c0, mut c1) = mem_pair();
    let peer = std::thread::spawn(move || {
        c1.send(&[0u8; 3]).unwrap();
        c1.flush().unwrap();
    });
    let mut s = SubfieldVoleSender::from_base(sb, cfg).unwrap();
    let err = s.extend(&mut c0, 100, &mut rng).unwrap_err();
    assert!(matches!(err, Error::Net(_)), "{err}");
    peer.join().unwrap();
    // Too small a base is refused up front, by every generator.
    check_small_base::<Sub>(&mut rng);
    check_small_base::<Field>(&mut rng);
}

/// A base of 10 COTs is refused by both roles.
fn check_small_base<P: Flavour>(rng: &mut AesRng) {
    let cfg = VoleConfig::default();
    let (sb, rb) = dealer(10, rng);
    assert!(matches!(
        P::sender_from_base(sb, cfg),
        Err(Error::NotEnoughBase { .. })
    ));
    assert!(matches!(
        P::receiver_from_base(rb, cfg),
        Err(Error::NotEnoughBase { .. })
    ));
}

#[test]
fn one_shot_functions() {
    let (mut c0, mut c1) = mem_pair();
    let cfg = VoleConfig::default();
    let t = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([10; 16]);
        let f = crate::vole_send(&mut c0, 777, cfg, &mut rng).unwrap();
        let s = crate::subfield_vole_send(&mut c0, 778, cfg, &mut rng).unwrap();
        (f, s)
    });
    let mut rng = AesRng::from_seed([11; 16]);
    let (a, c) = crate::vole_receive(&mut c1, 777, cfg, &mut rng).unwrap();
    let (aa, cc) = crate::subfield_vole_receive(&mut c1, 778, cfg, &mut rng).unwrap();
    let ((delta, b), (delta2, bb)) = t.join().unwrap();
    assert_eq!((a.len(), aa.len()), (777, 778));
    assert_plain::<Field>(delta, b, a, c);
    assert_plain::<Sub>(delta2, bb, aa, cc);
}

/// `extend_into` with the same vectors call after call gives exactly the outputs of
/// `extend` on the same seeds (so the correlations hold), and a second call of the same
/// size (at most `max_chunk`) reuses the vectors' memory.
fn check_into<P: Flavour>(cfg: VoleConfig, sizes: &[usize]) {
    let reference = run_mem::<P>(cfg, sizes, None, false);
    let (mut c0, mut c1) = mem_pair();
    let mut rng = AesRng::from_seed([P::SEEDS[0]; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let sizes_s = sizes.to_vec();
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([P::SEEDS[1]; 16]);
        let mut s = P::sender_from_base(sb, cfg).unwrap();
        let mut b = vec![Block(7); 3];
        let mut outs = Vec::new();
        for n in sizes_s {
            let ptr = b.as_ptr();
            P::send_into(&mut s, &mut c0, n, &mut rng, &mut b).unwrap();
            outs.push((b.clone(), ptr == b.as_ptr()));
        }
        outs
    });
    let mut r = P::receiver_from_base(rb, cfg).unwrap();
    let (mut a, mut c) = (Vec::new(), vec![Block(9); 5]);
    let mut prev = 0;
    let souts = {
        let mut recv = Vec::new();
        for &n in sizes {
            let ptrs = (a.as_ptr(), c.as_ptr());
            P::receive_into(&mut r, &mut c1, n, &mut rng, &mut a, &mut c).unwrap();
            recv.push((a.clone(), c.clone(), ptrs == (a.as_ptr(), c.as_ptr())));
        }
        recv.into_iter()
            .zip(sender.join().unwrap())
            .collect::<Vec<_>>()
    };
    for (((a, c, same_r), (b, same_s)), (want, &n)) in
        souts.into_iter().zip(reference.iter().zip(sizes))
    {
        let (_, wb, wa, wc, _, _) = want.as_ref().unwrap();
        assert_eq!((&b, &a, &c), (wb, wa, wc), "{} n = {n}", P::NAME);
        if n == prev && n > 0 && n <= cfg.max_chunk {
            assert!(same_r && same_s, "{} n = {n}: memory not reused", P::NAME);
        }
        prev = n;
    }
}

#[test]
fn extend_into_reuses_memory_and_matches_extend() {
    let sizes = [1000, 1000, 0, 3, 5001, 1000, 1000];
    check_into::<Field>(cfg(Security::SemiHonest, 2000), &sizes);
    check_into::<Sub64>(cfg(Security::Malicious, 2000), &sizes);
    check_into::<Sub>(cfg(Security::SemiHonest, 2000), &sizes);
}

#[test]
fn streaming_chunks_have_bounded_size_and_hold() {
    // 5001 with max_chunk 2000: chunks of 2000, 2000, 1001 (checked in check_streaming).
    check_streaming::<Field>(cfg(Security::SemiHonest, 2000), &[5001], 0, [12, 13]);
}

#[test]
fn base_and_reserve_sizes() {
    let sh = VoleConfig::default();
    let mal = VoleConfig::with_security(Security::Malicious);
    assert_eq!(sh.base_cots_needed(), 640);
    assert_eq!(mal.base_cots_needed(), 896);
    assert_eq!(sh.subfield_reserve(), 2048);
    assert_eq!(mal.subfield_reserve(), 2176);
}

// ---------------------------------------------------------------------------------------
// Subfield VOLE with 64-bit values.

#[test]
fn sub64_semi_honest_sizes() {
    let sizes = [1, 2, 3, 100, 1000, 4097, 20_011];
    check_sizes::<Sub64>(cfg(Security::SemiHonest, 1 << 16), &sizes, false);
}

#[test]
fn sub64_chunked_and_bootstrapped() {
    // max_chunk 3000: 10_001 runs as four chunks, each bootstrapping the next; both the
    // streaming and the collecting calls.
    for chunked in [true, false] {
        let cfg = cfg(Security::SemiHonest, 3000);
        check_sizes::<Sub64>(cfg, &[10_001, 3000, 1, 6001], chunked);
    }
}

#[test]
fn sub64_malicious_passes_and_catches() {
    check_sizes::<Sub64>(cfg(Security::Malicious, 1 << 13), &[3001, 777], false);
    for target in [Target::D(7), Target::Level(4, 1)] {
        check_catches::<Sub64>(cfg(Security::Malicious, 1 << 13), 3001, target);
    }
}

#[test]
fn sub64_over_tcp_and_communication() {
    check_tcp_communication::<Sub64>(1 << 16, 1, 16.0);
}

#[test]
fn sub64_real_base_ot_over_tcp() {
    check_real_base_ot::<Sub64>(cfg(Security::SemiHonest, 1 << 12), 5003, [16, 17]);
}

#[test]
fn sub64_zero_and_small_base() {
    let cfg = VoleConfig::default();
    let mut rng = AesRng::from_seed([18; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let mut s = Subfield64VoleSender::from_base(sb, cfg).unwrap();
    let mut r = Subfield64VoleReceiver::from_base(rb, cfg).unwrap();
    let (mut c0, mut c1) = mem_pair();
    assert!(s.extend(&mut c0, 0, &mut rng).unwrap().is_empty());
    let (a, c) = r.extend(&mut c1, 0, &mut rng).unwrap();
    assert!(a.is_empty() && c.is_empty());
    assert!(format!("{s:?}").starts_with("Subfield64VoleSender"));
    assert!(!format!("{s:?}").contains(&format!("{:?}", s.delta())));
    check_small_base::<Sub64>(&mut rng);
}

#[test]
fn subfield_streaming_reuses_buffers_across_calls() {
    // Several extend_chunks calls on one pair (the working buffers are kept between calls,
    // with chunks of different lengths), then a plain extend.
    let cfg = cfg(Security::SemiHonest, 2000);
    check_streaming::<Sub>(cfg, &[5001, 1, 4000, 1999], 777, [19, 20]);
}

#[test]
fn sink_error_stops_the_stream() {
    let cfg = cfg(Security::SemiHonest, 2000);
    let mut rng = AesRng::from_seed([21; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let (mut c0, mut c1) = mem_pair();
    let peer = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([22; 16]);
        let mut r = Subfield64VoleReceiver::from_base(rb, cfg).unwrap();
        let mut chunks = 0;
        let res = r.extend_chunks(&mut c1, 5000, &mut rng, |_, _| {
            chunks += 1;
            Ok(())
        });
        (res, chunks)
    });
    let mut s = Subfield64VoleSender::from_base(sb, cfg).unwrap();
    let mut calls = 0;
    let err = s
        .extend_chunks(&mut c0, 5000, &mut rng, |_| {
            calls += 1;
            Err(Error::TooLarge {
                requested: 0,
                max: 0,
            })
        })
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    assert_eq!(calls, 1);
    drop(c0);
    // The peer got its first chunk, then an error (not a hang) when the sender stopped.
    let (res, chunks) = peer.join().unwrap();
    assert!(matches!(res, Err(Error::Net(_))));
    assert_eq!(chunks, 1);
}

/// One call of a test schedule: `extend` or `extend_chunks` of `n`.
#[derive(Clone, Copy, Debug)]
enum Call {
    Extend(usize),
    Chunks(usize),
}

/// A channel that keeps a copy of every frame it sends (length-prefixed), to pin the wire.
struct Recording<C> {
    ch: C,
    sent: Vec<u8>,
}

impl<C: Channel> Channel for Recording<C> {
    fn send(&mut self, msg: &[u8]) -> obliv_net::Result<()> {
        self.sent
            .extend_from_slice(&(msg.len() as u64).to_le_bytes());
        self.sent.extend_from_slice(msg);
        self.ch.send(msg)
    }
    fn recv_frame(
        &mut self,
        max_len: usize,
        buf: &mut dyn obliv_net::RecvBuf,
    ) -> obliv_net::Result<()> {
        self.ch.recv_frame(max_len, buf)
    }
    fn flush(&mut self) -> obliv_net::Result<()> {
        self.ch.flush()
    }
    fn stats(&self) -> Stats {
        self.ch.stats()
    }
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.ch.set_deadline(deadline)
    }
    fn set_max_frame_len(&mut self, max: usize) {
        self.ch.set_max_frame_len(max);
    }
}

/// The bytes of every output of `P` on a fixed schedule (dealer base from fixed seeds, then
/// base OT + IKNP), with `Δ`, and every frame each party sent.
fn output_transcript<P: Flavour>(security: Security) -> Vec<u8> {
    let cfg = cfg(security, 2000);
    let schedule = [
        Call::Extend(1),
        Call::Extend(1000),
        Call::Chunks(5001),
        Call::Extend(4001),
        Call::Extend(0),
        Call::Chunks(1999),
        Call::Extend(2000),
    ];
    let mut rng = AesRng::from_seed([23; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let (c0, c1) = mem_pair();
    let (mut c0, mut c1) = (
        Recording {
            ch: c0,
            sent: Vec::new(),
        },
        Recording {
            ch: c1,
            sent: Vec::new(),
        },
    );
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([24; 16]);
        let mut out = Vec::new();
        let mut s = P::sender_from_base(sb, cfg).unwrap();
        for call in schedule {
            let before = c0.stats();
            let b = match call {
                Call::Extend(n) => P::send(&mut s, &mut c0, n, &mut rng).unwrap(),
                Call::Chunks(n) => {
                    let mut all = Vec::new();
                    P::send_chunks(&mut s, &mut c0, n, &mut rng, |b| {
                        all.extend_from_slice(b);
                        Ok(())
                    })
                    .unwrap();
                    all
                }
            };
            out.extend_from_slice(Block::slice_as_bytes(&b));
            out.extend_from_slice(&(c0.stats() - before).total_bytes().to_le_bytes());
        }
        out.extend_from_slice(&P::delta(&s).to_bytes());
        let mut s = P::sender_new(&mut c0, cfg, &mut rng).unwrap();
        let b = P::send(&mut s, &mut c0, 3001, &mut rng).unwrap();
        out.extend_from_slice(Block::slice_as_bytes(&b));
        out.extend_from_slice(&P::delta(&s).to_bytes());
        out.extend_from_slice(&c0.sent);
        out
    });
    let mut out = Vec::new();
    let mut r = P::receiver_from_base(rb, cfg).unwrap();
    let push = |out: &mut Vec<u8>, a: &[P::A], c: &[Block]| {
        for x in a {
            out.extend_from_slice(&P::embed(*x).to_bytes());
        }
        out.extend_from_slice(Block::slice_as_bytes(c));
    };
    for call in schedule {
        let (a, c) = match call {
            Call::Extend(n) => P::receive(&mut r, &mut c1, n, &mut rng).unwrap(),
            Call::Chunks(n) => {
                let (mut aa, mut cc) = (Vec::new(), Vec::new());
                P::receive_chunks(&mut r, &mut c1, n, &mut rng, |a, c| {
                    aa.extend_from_slice(a);
                    cc.extend_from_slice(c);
                    Ok(())
                })
                .unwrap();
                (aa, cc)
            }
        };
        push(&mut out, &a, &c);
    }
    let mut r = P::receiver_new(&mut c1, cfg, &mut rng).unwrap();
    let (a, c) = P::receive(&mut r, &mut c1, 3001, &mut rng).unwrap();
    push(&mut out, &a, &c);
    out.extend_from_slice(&c1.sent);
    out.extend_from_slice(&sender.join().unwrap());
    out
}

/// The generators' outputs and every frame they send, on fixed seeds, are pinned, so that a
/// refactoring of the generators (or of anything below them) cannot change what they
/// produce unnoticed. Source: this implementation at commit 77bf91a, before the generators
/// were unified (the digests were computed on that tree and on the unified one: equal).
#[test]
fn generator_output_regression() {
    fn digests<P: Flavour>() -> (&'static str, Block, Block) {
        let digest = |security| {
            let transcript = output_transcript::<P>(security);
            obliv_core::hash::ro_hash_block("obliv-vole generator regression", &transcript)
        };
        (
            P::NAME,
            digest(Security::SemiHonest),
            digest(Security::Malicious),
        )
    }
    let got = [digests::<Sub>(), digests::<Sub64>(), digests::<Field>()];
    let want = [
        (
            Sub::NAME,
            Block(0xf4cb_23ee_e17b_3d88_c019_8991_b925_ca37),
            Block(0x8aa2_7fe4_8c78_7067_1024_8722_f23a_4558),
        ),
        (
            Sub64::NAME,
            Block(0x5f60_3428_07df_f93d_bacc_aad3_f20c_4fe7),
            Block(0x7041_22a8_1d60_3c99_ea3c_5d97_82bd_3bb0),
        ),
        (
            Field::NAME,
            Block(0xca4d_82ca_3319_089c_130f_2e00_3d2a_b1b1),
            Block(0x625a_527b_3f5e_6a2f_6b48_7366_94f3_a098),
        ),
    ];
    assert_eq!(got, want);
}

// ---------------------------------------------------------------------------------------
// After an error a generator refuses every later call (`Error::Aborted`).

/// A channel whose receive number `fail_at` (counting from 0) times out without consuming
/// the frame, as a slow peer makes a real channel do; the channel stays usable after it.
struct Flaky<C> {
    inner: C,
    recvs: usize,
    fail_at: usize,
}

impl<C: Channel> Channel for Flaky<C> {
    fn send(&mut self, msg: &[u8]) -> obliv_net::Result<()> {
        self.inner.send(msg)
    }
    fn recv_frame(
        &mut self,
        max_len: usize,
        buf: &mut dyn obliv_net::RecvBuf,
    ) -> obliv_net::Result<()> {
        let i = self.recvs;
        self.recvs += 1;
        if i == self.fail_at {
            return Err(obliv_net::Error::Timeout {
                after: std::time::Duration::from_millis(1),
            });
        }
        self.inner.recv_frame(max_len, buf)
    }
    fn flush(&mut self) -> obliv_net::Result<()> {
        self.inner.flush()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.inner.set_deadline(deadline);
    }
    fn set_max_frame_len(&mut self, max: usize) {
        self.inner.set_max_frame_len(max);
    }
}

/// A sender whose receive times out, retried by its caller, would run on with the
/// receiver's late message of the failed call but the next hash tweak (and, for the
/// GF(2^128) and 64-bit flavours, the inner generator a step further): the two parties'
/// outputs would silently stop being correlations. The retry, and every later call, gives
/// `Aborted` instead, without touching the channel.
fn check_sender_retry_after_timeout<P: Flavour>() {
    let cfg = cfg(Security::SemiHonest, 2000);
    let mut rng = AesRng::from_seed([P::SEEDS[0]; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let (c0, mut c1) = mem_pair();
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([P::SEEDS[1]; 16]);
        let mut ch = Flaky {
            inner: c0,
            recvs: 0,
            fail_at: 0,
        };
        let mut s = P::sender_from_base(sb, cfg).unwrap();
        let first = P::send(&mut s, &mut ch, 700, &mut rng).map(|_| ());
        let stats = ch.stats();
        let retry = P::send(&mut s, &mut ch, 700, &mut rng).map(|_| ());
        let empty = P::send(&mut s, &mut ch, 0, &mut rng).map(|_| ());
        let mut out = vec![Block(3); 4];
        let into = P::send_into(&mut s, &mut ch, 5000, &mut rng, &mut out);
        let chunks = P::send_chunks(&mut s, &mut ch, 700, &mut rng, |_| Ok(()));
        assert_eq!(
            ch.stats(),
            stats,
            "{}: an aborted call used the channel",
            P::NAME
        );
        assert!(out.is_empty(), "{}", P::NAME);
        (first, retry, empty, into, chunks)
    });
    let mut r = P::receiver_from_base(rb, cfg).unwrap();
    let received = P::receive(&mut r, &mut c1, 700, &mut rng);
    let (first, retry, empty, into, chunks) = sender.join().unwrap();
    let name = P::NAME;
    assert!(
        matches!(first, Err(Error::Net(obliv_net::Error::Timeout { .. }))),
        "{name}: {first:?}"
    );
    for res in [retry, empty, into, chunks] {
        assert!(matches!(res, Err(Error::Aborted)), "{name}: {res:?}");
    }
    // The receiver's call ends with the channel, not with out-of-step outputs.
    assert!(received.is_err(), "{name}: the receiver got outputs");
}

#[test]
fn sender_refuses_calls_after_a_failed_one() {
    check_sender_retry_after_timeout::<Sub>();
    check_sender_retry_after_timeout::<Sub64>();
    check_sender_retry_after_timeout::<Field>();
}

/// A sender that fails the malicious check gets no second try on the same base (a retry
/// would re-send flips under the same base choice bits, so a selective-failure guess could
/// be repeated and combined): the receiver's later calls give `Aborted` and send nothing.
fn check_receiver_no_retry_after_check<P: Flavour>() {
    let cfg = cfg(Security::Malicious, 2000);
    let mut rng = AesRng::from_seed([P::SEEDS[0]; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let (mut c0, mut c1) = mem_pair();
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([P::SEEDS[1]; 16]);
        let mut s = P::sender_from_base(sb, cfg).unwrap();
        tamper::set(P::KIND, Target::D(1), P::TAMPER_MASK);
        let first = P::send(&mut s, &mut c0, 900, &mut rng).map(|_| ());
        let second = P::send(&mut s, &mut c0, 900, &mut rng).map(|_| ());
        (first, second)
    });
    let mut r = P::receiver_from_base(rb, cfg).unwrap();
    let first = P::receive(&mut r, &mut c1, 900, &mut rng).map(|_| ());
    let stats = c1.stats();
    let second = P::receive(&mut r, &mut c1, 900, &mut rng).map(|_| ());
    let (mut a, mut c) = (vec![P::A::default(); 2], vec![Block(1); 2]);
    let into = P::receive_into(&mut r, &mut c1, 900, &mut rng, &mut a, &mut c);
    let chunks = P::receive_chunks(&mut r, &mut c1, 900, &mut rng, |_, _| Ok(()));
    assert_eq!(
        c1.stats(),
        stats,
        "{}: an aborted call used the channel",
        P::NAME
    );
    assert!(a.is_empty() && c.is_empty(), "{}", P::NAME);
    drop(c1);
    let _ = sender.join().unwrap();
    let name = P::NAME;
    assert!(
        matches!(first, Err(Error::ConsistencyCheck)),
        "{name}: {first:?}"
    );
    for res in [second, into, chunks] {
        assert!(matches!(res, Err(Error::Aborted)), "{name}: {res:?}");
    }
}

#[test]
fn receiver_refuses_calls_after_a_failed_check() {
    check_receiver_no_retry_after_check::<Sub>();
    check_receiver_no_retry_after_check::<Sub64>();
    check_receiver_no_retry_after_check::<Field>();
}

/// An error of the caller's `sink` leaves the generator a chunk behind its peer: the next
/// call gives `Aborted` (the sink's error is returned as it is).
#[test]
fn sink_error_aborts_the_generator() {
    let cfg = cfg(Security::SemiHonest, 1000);
    let mut rng = AesRng::from_seed([21; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let (mut c0, mut c1) = mem_pair();
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([22; 16]);
        let mut s = VoleSender::from_base(sb, cfg).unwrap();
        let first = s.extend_chunks(&mut c0, 3000, &mut rng, |_| {
            Err(Error::MalformedBase { reason: "sink" })
        });
        let second = s.extend(&mut c0, 1000, &mut rng).map(|_| ());
        (first, second)
    });
    let mut r = VoleReceiver::from_base(rb, cfg).unwrap();
    let first = r.extend_chunks(&mut c1, 3000, &mut rng, |_, _| Ok(()));
    drop(c1);
    let (sfirst, ssecond) = sender.join().unwrap();
    assert!(
        matches!(sfirst, Err(Error::MalformedBase { reason: "sink" })),
        "{sfirst:?}"
    );
    assert!(matches!(ssecond, Err(Error::Aborted)), "{ssecond:?}");
    // The receiver ran on alone until the peer was gone.
    assert!(first.is_err());
}

/// A request too large to collect in memory (`n` near `usize::MAX`, or just more than the
/// machine has) is refused with `TooLarge` before anything is sent (it used to panic with a
/// capacity overflow or abort the process on a failed allocation); the generator stays
/// usable and in step with its peer.
fn check_huge_requests<P: Flavour>() {
    let cfg = cfg(Security::SemiHonest, 2000);
    let mut rng = AesRng::from_seed([P::SEEDS[0]; 16]);
    let (sb, rb) = dealer(cfg.base_cots_needed(), &mut rng);
    let (mut c0, mut c1) = mem_pair();
    let huge = [usize::MAX, isize::MAX.unsigned_abs() / 16 + 1, 1 << 60];
    let sender = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([P::SEEDS[1]; 16]);
        let mut s = P::sender_from_base(sb, cfg).unwrap();
        for n in huge {
            let res = P::send(&mut s, &mut c0, n, &mut rng);
            assert!(
                matches!(res, Err(Error::TooLarge { .. })),
                "{}: {n}",
                P::NAME
            );
            let mut out = vec![Block(1)];
            let res = P::send_into(&mut s, &mut c0, n, &mut rng, &mut out);
            assert!(
                matches!(res, Err(Error::TooLarge { .. })),
                "{}: {n}",
                P::NAME
            );
        }
        assert_eq!(c0.stats(), Stats::default(), "{}", P::NAME);
        let b = P::send(&mut s, &mut c0, 500, &mut rng).unwrap();
        (P::delta(&s), b)
    });
    let mut r = P::receiver_from_base(rb, cfg).unwrap();
    for n in huge {
        let res = P::receive(&mut r, &mut c1, n, &mut rng);
        assert!(
            matches!(res, Err(Error::TooLarge { .. })),
            "{}: {n}",
            P::NAME
        );
        let (mut a, mut c) = (Vec::new(), Vec::new());
        let res = P::receive_into(&mut r, &mut c1, n, &mut rng, &mut a, &mut c);
        assert!(
            matches!(res, Err(Error::TooLarge { .. })),
            "{}: {n}",
            P::NAME
        );
    }
    let (a, c) = P::receive(&mut r, &mut c1, 500, &mut rng).unwrap();
    let (delta, b) = sender.join().unwrap();
    assert_plain::<P>(delta, b, a, c);
}

#[test]
fn huge_requests_are_refused_up_front() {
    check_huge_requests::<Sub>();
    check_huge_requests::<Sub64>();
    check_huge_requests::<Field>();
}
