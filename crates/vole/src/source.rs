//! Where a generator's base correlations come from.
//!
//! Every generator starts from one batch of base correlated OTs under the sender's `Δ`
//! ([`crate::base`]). A *base-correlation source* produces that batch:
//!
//! | source | how | security of the set-up |
//! |---|---|---|
//! | [`BaseSource::Iknp`] | 128 base OTs (Chou–Orlandi) and IKNP OT extension | semi-honest |
//! | [`BaseSource::SoftSpoken`] | 128 base OTs and SoftSpokenOT (`k` = [`SOFTSPOKEN_K`]) with its consistency check | malicious |
//! | a [`SenderBase`] / [`ReceiverBase`] | given: an earlier generator's outputs derandomised to COTs, or a trusted dealer | that of its origin |
//!
//! The generators take a source in [`VoleSenderGen::with_source`] /
//! [`VoleReceiverGen::with_source`]; [`VoleSenderGen::setup`] picks the source that fits the
//! configuration's [`Security`] ([`BaseSource::for_security`]), so a
//! [`Security::Malicious`] generator runs SoftSpokenOT with its check and a semi-honest one
//! IKNP. Both parties must use the same source.
//!
//! [`VoleSenderGen::with_source`]: crate::VoleSenderGen::with_source
//! [`VoleReceiverGen::with_source`]: crate::VoleReceiverGen::with_source
//! [`VoleSenderGen::setup`]: crate::VoleSenderGen::setup

use obliv_net::Channel;
use obliv_ot::softspoken;
use rand_core::CryptoRng;
use zeroize::Zeroize;

use crate::base::{ReceiverBase, SenderBase};
use crate::error::Result;
use crate::extend::Security;

/// The SoftSpokenOT parameter `k` of [`BaseSource::SoftSpoken`]: `2^k` PRG calls per
/// correlated OT for `128/k` bits of communication (k = 4: 32 bits per base COT).
pub const SOFTSPOKEN_K: usize = 4;

/// A source of the VOLE sender's base correlations: `Δ` and `n` COT values `q_i`.
pub trait SenderBaseSource {
    /// Produces at least `n` base COTs with the peer's [`ReceiverBaseSource`] of the same
    /// kind (a given base is returned as it is; the generator checks its length).
    ///
    /// # Errors
    /// [`crate::Error::BaseOt`] if base OT, OT extension or its consistency check fails;
    /// channel errors.
    fn sender_base<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<SenderBase>;
}

/// A source of the VOLE receiver's base correlations: choice bits `r_i` and `t_i`.
pub trait ReceiverBaseSource {
    /// Produces at least `n` base COTs with the peer's [`SenderBaseSource`] of the same kind
    /// (a given base is returned as it is; the generator checks its length).
    ///
    /// # Errors
    /// [`crate::Error::BaseOt`] if base OT, OT extension or its consistency check fails;
    /// channel errors.
    fn receiver_base<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<ReceiverBase>;
}

/// The interactive base-correlation sources (see the [module documentation](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BaseSource {
    /// Base OT + IKNP OT extension: secure against a semi-honest peer only (a malicious
    /// receiver could attack the IKNP set-up).
    Iknp,
    /// Base OT + SoftSpokenOT (`k` = [`SOFTSPOKEN_K`]) with its consistency check, which
    /// stops a malicious receiver from using non-bit choices.
    SoftSpoken,
}

impl BaseSource {
    /// The source that fits `security`: [`BaseSource::Iknp`] for semi-honest,
    /// [`BaseSource::SoftSpoken`] for malicious.
    pub fn for_security(security: Security) -> Self {
        match security {
            Security::SemiHonest => BaseSource::Iknp,
            Security::Malicious => BaseSource::SoftSpoken,
        }
    }
}

impl SenderBaseSource for BaseSource {
    fn sender_base<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<SenderBase> {
        match self {
            BaseSource::Iknp => {
                let mut iknp = obliv_ot::iknp::Sender::setup(ch, rng)?;
                let q = iknp.send_correlated(ch, n)?;
                Ok(SenderBase::new(iknp.delta(), q))
            }
            BaseSource::SoftSpoken => {
                let mut ss = softspoken::Sender::setup(ch, SOFTSPOKEN_K, rng)?;
                let q = ss.send_correlated(ch, n, rng)?;
                Ok(SenderBase::new(ss.delta(), q))
            }
        }
    }
}

impl ReceiverBaseSource for BaseSource {
    fn receiver_base<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<ReceiverBase> {
        let (mut choices, t) = match self {
            BaseSource::Iknp => {
                let mut iknp = obliv_ot::iknp::Receiver::setup(ch, rng)?;
                let choices = obliv_ot::iknp::random_bits(n, rng);
                let t = iknp.receive_correlated(ch, &choices)?;
                (choices, t)
            }
            BaseSource::SoftSpoken => {
                let mut ss = softspoken::Receiver::setup(ch, SOFTSPOKEN_K, rng)?;
                let choices = obliv_ot::iknp::random_bits(n, rng);
                let t = ss.receive_correlated(ch, &choices)?;
                (choices, t)
            }
        };
        let r = choices.iter().map(|&b| u8::from(b)).collect();
        choices.zeroize();
        ReceiverBase::new(r, t)
    }
}

impl SenderBaseSource for SenderBase {
    fn sender_base<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        self,
        _ch: &mut C,
        _n: usize,
        _rng: &mut R,
    ) -> Result<SenderBase> {
        Ok(self)
    }
}

impl ReceiverBaseSource for ReceiverBase {
    fn receiver_base<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        self,
        _ch: &mut C,
        _n: usize,
        _rng: &mut R,
    ) -> Result<ReceiverBase> {
        Ok(self)
    }
}
