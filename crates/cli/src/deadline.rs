//! Total deadlines per protocol step: the job handshake, the driver's set-up and every
//! bucket's PSI must each end within `--step-timeout`, however slowly a peer sends.
//!
//! The channels' own timeouts are idle timeouts: a peer that sends one byte every few seconds
//! would never trip them. A deadline ([`obliv_net::Channel::set_deadline`]) bounds the whole
//! step instead; when it passes, the receive fails with a network error and the party exits
//! with code 4.

use std::time::{Duration, Instant};

use obliv_net::Channel;
use obliv_psi::{PsiSession, Role};
use rand_core::CryptoRng;

/// Default of `--step-timeout`: 30 minutes for one step (one bucket of up to 2^22 keys on a
/// slow link fits with a wide margin).
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Longest `--connect-timeout` accepted: a year. The connection and the channels add it to
/// the current time, which a value near `u64::MAX` seconds overflows.
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// Refuses a `--connect-timeout` above [`MAX_CONNECT_TIMEOUT`].
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) for a longer one.
pub fn check_connect_timeout(t: Duration) -> Result<(), crate::CliError> {
    if t > MAX_CONNECT_TIMEOUT {
        return Err(crate::CliError::usage(format!(
            "--connect-timeout {} is longer than a year; give at most {} seconds",
            t.as_secs(),
            MAX_CONNECT_TIMEOUT.as_secs()
        )));
    }
    Ok(())
}

/// Refuses a `--step-timeout` of zero: a deadline set zero seconds ahead has passed before the
/// first message can arrive, so every run fails, but only once the input is read and the
/// peers connected. Any longer value is accepted (one too long to add to the clock means no
/// deadline).
///
/// # Errors
/// [`ExitKind::Usage`](crate::ExitKind::Usage) for zero.
pub fn check_step_timeout(t: Duration) -> Result<(), crate::CliError> {
    if t.is_zero() {
        return Err(crate::CliError::usage(
            "--step-timeout 0 leaves no time for any step: give at least 1 second",
        ));
    }
    Ok(())
}

/// A [`PsiSession`] whose every run and split must end within `step` on its channel.
#[derive(Debug)]
pub struct StepDeadline<S> {
    inner: S,
    step: Duration,
}

impl<S> StepDeadline<S> {
    /// `inner`, each of whose steps gets `step`.
    pub fn new(inner: S, step: Duration) -> Self {
        StepDeadline { inner, step }
    }
}

/// Runs `f` on `ch` with a deadline `step` from now, removed afterwards.
pub fn within<C, T>(
    ch: &mut C,
    step: Duration,
    f: impl FnOnce(&mut C) -> obliv_psi::Result<T>,
) -> obliv_psi::Result<T>
where
    C: Channel + ?Sized,
{
    ch.set_deadline(Instant::now().checked_add(step));
    let r = f(ch);
    ch.set_deadline(None);
    r
}

impl<S: PsiSession> PsiSession for StepDeadline<S> {
    fn protocol(&self) -> &'static str {
        self.inner.protocol()
    }

    fn role(&self) -> Role {
        self.inner.role()
    }

    fn max_frame_len(&self) -> usize {
        self.inner.max_frame_len()
    }

    fn set_job_limits(
        &mut self,
        max_peer_items: usize,
        stat_security: u32,
    ) -> obliv_psi::Result<()> {
        self.inner.set_job_limits(max_peer_items, stat_security)
    }

    fn run<C, T, R>(
        &mut self,
        ch: &mut C,
        items: &[T],
        rng: &mut R,
    ) -> obliv_psi::Result<Option<Vec<usize>>>
    where
        C: Channel + ?Sized,
        T: obliv_psi::PsiItem + Sync,
        R: CryptoRng + ?Sized,
    {
        let inner = &mut self.inner;
        within(ch, self.step, |ch| inner.run(ch, items, rng))
    }

    fn split<C, R>(&mut self, ch: &mut C, n: usize, rng: &mut R) -> obliv_psi::Result<Vec<Self>>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
    {
        let step = self.step;
        let inner = &mut self.inner;
        let children = within(ch, step, |ch| inner.split(ch, n, rng))?;
        Ok(children
            .into_iter()
            .map(|c| StepDeadline::new(c, step))
            .collect())
    }
}

/// Sets `deadline` on every channel of `session` (the job handshake and the three-party
/// protocol use all of them at once).
pub fn set_on_session<C: Channel>(session: &mut obliv_net::Session<C>, deadline: Option<Instant>) {
    for (_, ch) in session.channels_mut() {
        ch.set_deadline(deadline);
    }
}
