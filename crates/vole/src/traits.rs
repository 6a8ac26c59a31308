//! The public generator traits: one interface over the three families of generators, so
//! that a higher protocol can be written once, generic over the kind of VOLE it runs on.
//!
//! | trait | implemented by | `A` |
//! |---|---|---|
//! | [`VoleSenderGen`] | [`SubfieldVoleSender`], [`Subfield64VoleSender`], [`VoleSender`] | (the receiver's) |
//! | [`VoleReceiverGen`] | [`SubfieldVoleReceiver`] | `u8` (a bit, 0 or 1) |
//! | | [`Subfield64VoleReceiver`] | `u64` (GF(2^64), see [`crate::embed64`]) |
//! | | [`VoleReceiver`] | [`Block`] (GF(2^128)) |
//!
//! A generator is constructed from a base-correlation source ([`crate::source`]):
//! [`with_source`](VoleSenderGen::with_source) takes any source (IKNP, SoftSpokenOT, or a
//! given base such as an earlier generator's outputs), [`setup`](VoleSenderGen::setup) the
//! one its configuration's [`Security`](crate::Security) calls for, and
//! [`from_base`](VoleSenderGen::from_base) a given base without interaction.
//!
//! The inherent methods of the six types are the same functions; the traits add nothing at
//! run time (static dispatch).

use obliv_core::Block;
use obliv_net::Channel;
use rand_core::CryptoRng;
use zeroize::Zeroize;

use crate::base::{ReceiverBase, SenderBase};
use crate::error::Result;
use crate::source::{BaseSource, ReceiverBaseSource, SenderBaseSource};
use crate::vole::{SubfieldVoleReceiver, SubfieldVoleSender, VoleConfig, VoleReceiver, VoleSender};
use crate::vole64::{Subfield64VoleReceiver, Subfield64VoleSender};

mod sealed {
    /// Only this crate's generators implement the generator traits.
    pub trait Sealed {}
}

/// The sender role of a silent VOLE generator: holds `Δ`, gets `B` with `C = B + A·Δ`.
///
/// Both parties must call the same methods with the same `n` and configuration, in the same
/// order. A call that fails once it has begun (a channel error or timeout, a peer message of
/// the wrong length, an error of `sink`) leaves the generator out of step with its peer: every
/// later call gives [`crate::Error::Aborted`]. A request too large to hold in memory
/// ([`crate::Error::TooLarge`]) is refused before anything is sent and does not abort. This
/// trait is sealed: the six generators of this crate implement it.
pub trait VoleSenderGen: sealed::Sealed + Sized + Send + core::fmt::Debug {
    /// The receiver's `A` element type of this family (`u8`, `u64` or [`Block`]).
    type A: Copy + Send + Sync + Zeroize + 'static;
    /// The peer generator.
    type Peer: VoleReceiverGen<A = Self::A>;

    /// A sender from base COTs under `base.delta()` (at least
    /// [`VoleConfig::base_cots_needed`] of them), without interaction.
    ///
    /// # Errors
    /// [`crate::Error::TooLarge`] for an invalid `max_chunk`; [`crate::Error::NotEnoughBase`]
    /// if the base is too small.
    fn from_base(base: SenderBase, cfg: VoleConfig) -> Result<Self>;

    /// A sender whose base correlations come from `source` (with the peer's
    /// [`VoleReceiverGen::with_source`] on a source of the same kind).
    ///
    /// # Errors
    /// As [`from_base`](Self::from_base) (the configuration is checked before anything is
    /// sent); [`crate::Error::BaseOt`] if the source's base OT, OT extension or consistency
    /// check fails; channel errors.
    fn with_source<S, C, R>(ch: &mut C, cfg: VoleConfig, source: S, rng: &mut R) -> Result<Self>
    where
        S: SenderBaseSource,
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        cfg.validate()?;
        let base = source.sender_base(ch, cfg.base_cots_needed(), rng)?;
        Self::from_base(base, cfg)
    }

    /// A sender with the base-correlation source that `cfg.security` calls for
    /// ([`BaseSource::for_security`]: IKNP for semi-honest, SoftSpokenOT with its
    /// consistency check for malicious). The peer runs [`VoleReceiverGen::setup`].
    ///
    /// # Errors
    /// As [`with_source`](Self::with_source).
    fn setup<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut R,
    ) -> Result<Self> {
        Self::with_source(ch, cfg, BaseSource::for_security(cfg.security), rng)
    }

    /// `Δ`.
    fn delta(&self) -> Block;

    /// The configuration.
    fn config(&self) -> VoleConfig;

    /// Produces `n` correlations, handing `B` to `sink` chunk by chunk.
    ///
    /// # Errors
    /// Channel errors, and the errors of `sink`.
    fn extend_chunks<C, R, F>(&mut self, ch: &mut C, n: usize, rng: &mut R, sink: F) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[Block]) -> Result<()>;

    /// Produces `B` of `n` correlations.
    ///
    /// # Errors
    /// Channel errors.
    fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<Block>>;

    /// Produces `B` of `n` correlations into `out` (any contents on entry; `n` elements on
    /// success), reusing its memory; on error `out` is zeroized and emptied.
    ///
    /// # Errors
    /// Channel errors.
    fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        out: &mut Vec<Block>,
    ) -> Result<()>;
}

/// The receiver role of a silent VOLE generator: gets `A` and `C = B + A·Δ`.
///
/// Both parties must call the same methods with the same `n` and configuration, in the same
/// order. A call that fails once it has begun (a channel error or timeout, a peer message of
/// the wrong length, a failed consistency check, an error of `sink`) leaves the generator out
/// of step with its peer: every later call gives [`crate::Error::Aborted`], so that a
/// cheating sender cannot retry the consistency check against the same base correlations. A
/// request too large to hold in memory ([`crate::Error::TooLarge`]) is refused before
/// anything is sent and does not abort. This trait is sealed: the six generators of this
/// crate implement it.
pub trait VoleReceiverGen: sealed::Sealed + Sized + Send + core::fmt::Debug {
    /// The type of `A`: `u8` (a bit, 0 or 1), `u64` (GF(2^64)) or [`Block`] (GF(2^128)).
    type A: Copy + Send + Sync + Zeroize + 'static;
    /// The peer generator.
    type Peer: VoleSenderGen<A = Self::A>;

    /// A receiver from base COTs (at least [`VoleConfig::base_cots_needed`]), without
    /// interaction.
    ///
    /// # Errors
    /// As [`VoleSenderGen::from_base`].
    fn from_base(base: ReceiverBase, cfg: VoleConfig) -> Result<Self>;

    /// A receiver whose base correlations come from `source` (with the peer's
    /// [`VoleSenderGen::with_source`] on a source of the same kind).
    ///
    /// # Errors
    /// As [`VoleSenderGen::with_source`].
    fn with_source<S, C, R>(ch: &mut C, cfg: VoleConfig, source: S, rng: &mut R) -> Result<Self>
    where
        S: ReceiverBaseSource,
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        cfg.validate()?;
        let base = source.receiver_base(ch, cfg.base_cots_needed(), rng)?;
        Self::from_base(base, cfg)
    }

    /// A receiver with the base-correlation source that `cfg.security` calls for (see
    /// [`VoleSenderGen::setup`]).
    ///
    /// # Errors
    /// As [`VoleSenderGen::with_source`].
    fn setup<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        ch: &mut C,
        cfg: VoleConfig,
        rng: &mut R,
    ) -> Result<Self> {
        Self::with_source(ch, cfg, BaseSource::for_security(cfg.security), rng)
    }

    /// The configuration.
    fn config(&self) -> VoleConfig;

    /// Produces `n` correlations, handing `(A, C)` to `sink` chunk by chunk.
    ///
    /// # Errors
    /// Channel errors; [`crate::Error::ConsistencyCheck`] if the sender cheated (malicious
    /// mode); the errors of `sink`.
    fn extend_chunks<C, R, F>(&mut self, ch: &mut C, n: usize, rng: &mut R, sink: F) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[Self::A], &[Block]) -> Result<()>;

    /// Produces `(A, C)` of `n` correlations.
    ///
    /// # Errors
    /// As [`extend_chunks`](Self::extend_chunks).
    #[allow(clippy::type_complexity)]
    fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<(Vec<Self::A>, Vec<Block>)>;

    /// Produces `(A, C)` of `n` correlations into `a` and `c` (any contents on entry; `n`
    /// elements each on success), reusing their memory; on error both are zeroized and
    /// emptied.
    ///
    /// # Errors
    /// As [`extend_chunks`](Self::extend_chunks).
    fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        a: &mut Vec<Self::A>,
        c: &mut Vec<Block>,
    ) -> Result<()>;
}

/// Implements [`VoleSenderGen`] by the type's inherent methods of the same names.
macro_rules! sender_gen {
    ($ty:ty, $peer:ty, $a:ty) => {
        impl sealed::Sealed for $ty {}

        impl VoleSenderGen for $ty {
            type A = $a;
            type Peer = $peer;

            fn from_base(base: SenderBase, cfg: VoleConfig) -> Result<Self> {
                <$ty>::from_base(base, cfg)
            }

            fn delta(&self) -> Block {
                <$ty>::delta(self)
            }

            fn config(&self) -> VoleConfig {
                <$ty>::config(self)
            }

            fn extend_chunks<C, R, F>(
                &mut self,
                ch: &mut C,
                n: usize,
                rng: &mut R,
                sink: F,
            ) -> Result<()>
            where
                C: Channel + ?Sized,
                R: CryptoRng + ?Sized,
                F: FnMut(&[Block]) -> Result<()>,
            {
                <$ty>::extend_chunks(self, ch, n, rng, sink)
            }

            fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
                &mut self,
                ch: &mut C,
                n: usize,
                rng: &mut R,
            ) -> Result<Vec<Block>> {
                <$ty>::extend(self, ch, n, rng)
            }

            fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
                &mut self,
                ch: &mut C,
                n: usize,
                rng: &mut R,
                out: &mut Vec<Block>,
            ) -> Result<()> {
                <$ty>::extend_into(self, ch, n, rng, out)
            }
        }
    };
}

/// Implements [`VoleReceiverGen`] by the type's inherent methods of the same names.
macro_rules! receiver_gen {
    ($ty:ty, $peer:ty, $a:ty) => {
        impl sealed::Sealed for $ty {}

        impl VoleReceiverGen for $ty {
            type A = $a;
            type Peer = $peer;

            fn from_base(base: ReceiverBase, cfg: VoleConfig) -> Result<Self> {
                <$ty>::from_base(base, cfg)
            }

            fn config(&self) -> VoleConfig {
                <$ty>::config(self)
            }

            fn extend_chunks<C, R, F>(
                &mut self,
                ch: &mut C,
                n: usize,
                rng: &mut R,
                sink: F,
            ) -> Result<()>
            where
                C: Channel + ?Sized,
                R: CryptoRng + ?Sized,
                F: FnMut(&[$a], &[Block]) -> Result<()>,
            {
                <$ty>::extend_chunks(self, ch, n, rng, sink)
            }

            fn extend<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
                &mut self,
                ch: &mut C,
                n: usize,
                rng: &mut R,
            ) -> Result<(Vec<$a>, Vec<Block>)> {
                <$ty>::extend(self, ch, n, rng)
            }

            fn extend_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
                &mut self,
                ch: &mut C,
                n: usize,
                rng: &mut R,
                a: &mut Vec<$a>,
                c: &mut Vec<Block>,
            ) -> Result<()> {
                <$ty>::extend_into(self, ch, n, rng, a, c)
            }
        }
    };
}

sender_gen!(SubfieldVoleSender, SubfieldVoleReceiver, u8);
sender_gen!(Subfield64VoleSender, Subfield64VoleReceiver, u64);
sender_gen!(VoleSender, VoleReceiver, Block);
receiver_gen!(SubfieldVoleReceiver, SubfieldVoleSender, u8);
receiver_gen!(Subfield64VoleReceiver, Subfield64VoleSender, u64);
receiver_gen!(VoleReceiver, VoleSender, Block);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Security;
    use obliv_core::AesRng;
    use obliv_core::rand_core::SeedableRng;

    /// `A` of each family as the GF(2^128) element it scales `Δ` by.
    trait Embed: Copy {
        fn embed(self) -> Block;
    }
    impl Embed for u8 {
        fn embed(self) -> Block {
            Block(u128::from(self))
        }
    }
    impl Embed for u64 {
        fn embed(self) -> Block {
            crate::embed64(self)
        }
    }
    impl Embed for Block {
        fn embed(self) -> Block {
            self
        }
    }

    /// Sets a pair up through the traits with the source `cfg.security` calls for and checks
    /// `C = B + A·Δ` over two extensions (`extend`, then `extend_into`).
    fn check_setup<S>(security: Security)
    where
        S: VoleSenderGen + 'static,
        S::A: Embed,
    {
        let cfg = VoleConfig {
            security,
            max_chunk: 1 << 13,
        };
        let (mut c0, mut c1) = obliv_net::mem_pair();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([2; 16]);
            let mut s = S::setup(&mut c0, cfg, &mut rng).unwrap();
            let b1 = s.extend(&mut c0, 3001, &mut rng).unwrap();
            let mut b2 = Vec::new();
            s.extend_into(&mut c0, 777, &mut rng, &mut b2).unwrap();
            (s.delta(), b1, b2)
        });
        let mut rng = AesRng::from_seed([1; 16]);
        let mut r = S::Peer::setup(&mut c1, cfg, &mut rng).unwrap();
        assert_eq!(r.config(), cfg);
        let (a1, c1v) = r.extend(&mut c1, 3001, &mut rng).unwrap();
        let (mut a2, mut c2) = (Vec::new(), Vec::new());
        r.extend_into(&mut c1, 777, &mut rng, &mut a2, &mut c2)
            .unwrap();
        let (delta, b1, b2) = t.join().unwrap();
        for (a, b, c) in [(&a1, &b1, &c1v), (&a2, &b2, &c2)] {
            assert_eq!((a.len(), b.len(), c.len()), (b.len(), c.len(), a.len()));
            assert!(
                (0..a.len()).all(|i| c[i] == b[i] ^ obliv_core::gf128::mul(a[i].embed(), delta))
            );
        }
    }

    #[test]
    fn setup_semi_honest_all_families() {
        check_setup::<SubfieldVoleSender>(Security::SemiHonest);
        check_setup::<Subfield64VoleSender>(Security::SemiHonest);
        check_setup::<VoleSender>(Security::SemiHonest);
    }

    /// Malicious configurations set themselves up with SoftSpokenOT and its check.
    #[test]
    fn setup_malicious_all_families() {
        check_setup::<SubfieldVoleSender>(Security::Malicious);
        check_setup::<Subfield64VoleSender>(Security::Malicious);
        check_setup::<VoleSender>(Security::Malicious);
    }

    /// `new` and `with_source(BaseSource::Iknp)` send the same bytes and give the same
    /// outputs; a given base is a source too (no interaction).
    #[test]
    fn sources_agree_with_constructors() {
        let cfg = VoleConfig {
            security: Security::SemiHonest,
            max_chunk: 1 << 13,
        };
        let run = |via_trait: bool| {
            let (mut c0, mut c1) = obliv_net::mem_pair();
            let t = std::thread::spawn(move || {
                let mut rng = AesRng::from_seed([4; 16]);
                let mut s = if via_trait {
                    VoleSender::with_source(&mut c0, cfg, BaseSource::Iknp, &mut rng).unwrap()
                } else {
                    VoleSender::new(&mut c0, cfg, &mut rng).unwrap()
                };
                s.extend(&mut c0, 500, &mut rng).unwrap()
            });
            let mut rng = AesRng::from_seed([3; 16]);
            let mut r = if via_trait {
                <VoleReceiver as VoleReceiverGen>::with_source(
                    &mut c1,
                    cfg,
                    BaseSource::Iknp,
                    &mut rng,
                )
                .unwrap()
            } else {
                VoleReceiver::new(&mut c1, cfg, &mut rng).unwrap()
            };
            let (a, c) = r.extend(&mut c1, 500, &mut rng).unwrap();
            (a, c, t.join().unwrap())
        };
        assert_eq!(run(true), run(false));

        let mut rng = AesRng::from_seed([5; 16]);
        let (sb, rb) = crate::base::dealer(cfg.base_cots_needed(), &mut rng);
        let (mut c0, mut c1) = obliv_net::mem_pair();
        let mut s =
            <Subfield64VoleSender as VoleSenderGen>::with_source(&mut c0, cfg, sb, &mut rng)
                .unwrap();
        let mut r =
            <Subfield64VoleReceiver as VoleReceiverGen>::with_source(&mut c1, cfg, rb, &mut rng)
                .unwrap();
        assert_eq!(s.delta(), VoleSenderGen::delta(&s));
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([6; 16]);
            let b = s.extend(&mut c0, 100, &mut rng).unwrap();
            (s.delta(), b)
        });
        let (a, c) = r.extend(&mut c1, 100, &mut rng).unwrap();
        let (delta, b) = t.join().unwrap();
        assert!(
            (0..100).all(|i| c[i] == b[i] ^ obliv_core::gf128::mul(crate::embed64(a[i]), delta))
        );
    }
}
