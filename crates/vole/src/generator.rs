//! The generic core of the generators: what the three families share, written once.
//!
//! Every generator role reduces to *one extension into reusable buffers*
//! ([`SenderStep::run_into`], [`ReceiverStep::run_into`]); the chunk loop of
//! `extend_chunks`, the two `extend` paths and the keeping of the working buffers between
//! calls are the traits' provided methods, shared by all six public types.
//!
//! The GF(2^128) and 64-bit subfield generators are the same generator over an inner
//! subfield generator ([`OuterSender`], [`OuterReceiver`]), parameterised by a [`Packed`]
//! flavour: the extension [`Kind`], how many COTs pack into one base VOLE and how, and the
//! receiver's `A` type. The subfield generators implement the step traits themselves: they
//! bootstrap their base from their own previous extension instead of from an inner
//! generator, which is a different base source, not a different parameter.

use core::marker::PhantomData;

use obliv_core::Block;
use obliv_net::Channel;
use rand_core::CryptoRng;
use zeroize::Zeroize;

use crate::error::{Error, Result, guarded};
use crate::extend::{self, AVec, Kind, Params};
use crate::vole::{SubfieldVoleReceiver, SubfieldVoleSender, VoleConfig, take_reserve};

/// Tweak tags keeping the hash tweaks of the inner and outer generators apart.
pub(crate) const TAG_SUBFIELD: u64 = 0;
/// See [`TAG_SUBFIELD`].
pub(crate) const TAG_FIELD: u64 = 1;

/// The hash tweaks of a generator's extensions: `(counter << 1) | tag`, one per extension.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tweaks {
    counter: u64,
    tag: u64,
}

impl Tweaks {
    pub(crate) const fn new(tag: u64) -> Self {
        Tweaks { counter: 0, tag }
    }

    /// The tweak of the next extension.
    pub(crate) fn next(&mut self) -> u64 {
        let t = (self.counter << 1) | self.tag;
        self.counter += 1;
        t
    }
}

/// A generator's `Debug`: its name, configuration and (optionally) its pool size, no value.
pub(crate) fn debug_generator(
    f: &mut core::fmt::Formatter<'_>,
    name: &str,
    cfg: VoleConfig,
    pool: Option<usize>,
) -> core::fmt::Result {
    let mut d = f.debug_struct(name);
    d.field("cfg", &cfg);
    if let Some(pool) = pool {
        d.field("pool", &pool);
    }
    d.finish_non_exhaustive()
}

/// The receiver's `A` element type and its [`AVec`] variant (the encoding cell type).
pub(crate) trait AValue: Copy + Zeroize + 'static {
    /// The extension kind whose `A` this is.
    const KIND: Kind;
    /// The `A` values of `a`.
    fn values(a: &AVec) -> &[Self];
    /// The `A` vector of `a`.
    fn values_mut(a: &mut AVec) -> &mut Vec<Self>;
    /// The `A` vector of `a`; any working pairs are zeroized.
    fn into_values(mut a: AVec) -> Vec<Self> {
        let values = core::mem::take(Self::values_mut(&mut a));
        a.zeroize();
        values
    }
}

impl AValue for u8 {
    const KIND: Kind = Kind::Subfield;
    fn values(a: &AVec) -> &[u8] {
        match a {
            AVec::Bits(bits) => bits,
            AVec::Field(..) | AVec::U64(..) => unreachable!("a subfield extension returns bits"),
        }
    }
    fn values_mut(a: &mut AVec) -> &mut Vec<u8> {
        match a {
            AVec::Bits(bits) => bits,
            AVec::Field(..) | AVec::U64(..) => unreachable!("a subfield extension returns bits"),
        }
    }
}

impl AValue for u64 {
    const KIND: Kind = Kind::Subfield64;
    fn values(a: &AVec) -> &[u64] {
        match a {
            AVec::U64(vals, _) => vals,
            AVec::Bits(_) | AVec::Field(..) => {
                unreachable!("a 64-bit subfield extension returns u64 values")
            }
        }
    }
    fn values_mut(a: &mut AVec) -> &mut Vec<u64> {
        match a {
            AVec::U64(vals, _) => vals,
            AVec::Bits(_) | AVec::Field(..) => {
                unreachable!("a 64-bit subfield extension returns u64 values")
            }
        }
    }
}

impl AValue for Block {
    const KIND: Kind = Kind::Field;
    fn values(a: &AVec) -> &[Block] {
        match a {
            AVec::Field(vals, _) => vals,
            AVec::Bits(_) | AVec::U64(..) => {
                unreachable!("a GF(2^128) extension returns field elements")
            }
        }
    }
    fn values_mut(a: &mut AVec) -> &mut Vec<Block> {
        match a {
            AVec::Field(vals, _) => vals,
            AVec::Bits(_) | AVec::U64(..) => {
                unreachable!("a GF(2^128) extension returns field elements")
            }
        }
    }
}

/// Runs `step(k)` for the chunk sizes `k` of `n` (at most `max_chunk` each) until one fails.
fn for_each_chunk(
    n: usize,
    max_chunk: usize,
    mut step: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    let mut left = n;
    let mut res = Ok(());
    while left > 0 && res.is_ok() {
        let k = left.min(max_chunk);
        res = step(k);
        left -= k;
    }
    res
}

/// Hands out `v[..n]` of a working buffer as an output vector without copying it: the
/// rest (scratch, secret) is zeroized, and the unused capacity returned to the allocator.
fn hand_out<T: Zeroize>(v: &mut Vec<T>, n: usize) {
    if let Some(tail) = v.get_mut(n..) {
        tail.iter_mut().for_each(Zeroize::zeroize);
    }
    v.truncate(n);
    v.shrink_to_fit();
}

/// Reserves room for the `n` outputs of a collecting call in the empty vector `v`, before
/// anything is sent: [`Error::TooLarge`] if they cannot be held in memory.
fn reserve_outputs<T>(v: &mut Vec<T>, n: usize) -> Result<()> {
    let max = isize::MAX.unsigned_abs() / core::mem::size_of::<T>().max(1);
    if n > max || v.try_reserve_exact(n).is_err() {
        return Err(Error::TooLarge { requested: n, max });
    }
    Ok(())
}

/// Zeroizes `v[n..]` (scratch, secret) and truncates `v` to `n`, keeping its capacity for the
/// caller's next extension into it.
fn keep_first<T: Zeroize>(v: &mut Vec<T>, n: usize) {
    if let Some(tail) = v.get_mut(n..) {
        tail.iter_mut().for_each(Zeroize::zeroize);
    }
    v.truncate(n);
}

/// The sender role of a generator: one extension, and the shared `extend` paths on top.
pub(crate) trait SenderStep {
    /// The configuration.
    fn config(&self) -> VoleConfig;

    /// The working buffer kept between calls.
    fn scratch(&mut self) -> &mut Vec<Block>;

    /// One extension of `k_user` (at most `max_chunk`) outputs: `B` in `buf[..k_user]`
    /// (`buf` is a reusable working buffer of length `N` and may hold anything on entry);
    /// the extension's extra outputs become the next base.
    fn run_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
        buf: &mut Vec<Block>,
    ) -> Result<()>;

    /// The abort latch: set while a call runs and left set if it fails (see
    /// [`Error::Aborted`]).
    fn aborted(&mut self) -> &mut bool;

    /// `extend_chunks`: `n` outputs in chunks of at most `max_chunk`, each handed to `sink`,
    /// in the kept working buffer.
    fn chunks<C, R, F>(&mut self, ch: &mut C, n: usize, rng: &mut R, sink: F) -> Result<()>
    where
        Self: Sized,
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[Block]) -> Result<()>,
    {
        guarded(self, Self::aborted, |s| s.chunks_once(ch, n, rng, sink))
    }

    /// [`chunks`](Self::chunks) without the abort latch.
    fn chunks_once<C, R, F>(&mut self, ch: &mut C, n: usize, rng: &mut R, mut sink: F) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[Block]) -> Result<()>,
    {
        let mut buf = core::mem::take(self.scratch());
        let max_chunk = self.config().max_chunk;
        let res = for_each_chunk(n, max_chunk, |k| {
            self.run_into(ch, k, rng, &mut buf)
                .and_then(|()| sink(&buf[..k]))
        });
        *self.scratch() = buf;
        res
    }

    /// `extend` through [`chunks`](Self::chunks), collecting the outputs. A request of one
    /// chunk runs in the kept working buffer, which becomes the output (no copy, no second
    /// buffer of `n` blocks).
    fn collect<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<Block>>
    where
        Self: Sized,
    {
        let mut all = Vec::new();
        if n > self.config().max_chunk {
            reserve_outputs(&mut all, n)?;
        }
        guarded(self, Self::aborted, |s| s.collect_once(ch, n, rng, all))
    }

    /// [`collect`](Self::collect) without the abort latch, into `all` (empty, with room for
    /// `n` outputs if `n` is above `max_chunk`).
    fn collect_once<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        mut all: Vec<Block>,
    ) -> Result<Vec<Block>> {
        if n > 0 && n <= self.config().max_chunk {
            let mut buf = core::mem::take(self.scratch());
            let res = self.run_into(ch, n, rng, &mut buf);
            if let Err(e) = res {
                *self.scratch() = buf;
                return Err(e);
            }
            hand_out(&mut buf, n);
            return Ok(buf);
        }
        let res = self.chunks_once(ch, n, rng, |b| {
            all.extend_from_slice(b);
            Ok(())
        });
        if let Err(e) = res {
            all.zeroize();
            return Err(e);
        }
        Ok(all)
    }

    /// `extend_into`: `B` into the caller's vector `out` (any contents on entry, `n` elements
    /// on success). A request of one chunk runs with `out` as the working buffer (it keeps
    /// the capacity of `N ≈ 2n` blocks for the next call: no fresh memory then); a larger one
    /// appends the chunks. On error `out` is zeroized and emptied.
    fn collect_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        out: &mut Vec<Block>,
    ) -> Result<()>
    where
        Self: Sized,
    {
        let single = n > 0 && n <= self.config().max_chunk;
        let res = if single {
            guarded(self, Self::aborted, |s| s.run_into(ch, n, rng, out))
        } else {
            out.clear();
            reserve_outputs(out, n).and_then(|()| {
                guarded(self, Self::aborted, |s| {
                    s.chunks_once(ch, n, rng, |b| {
                        out.extend_from_slice(b);
                        Ok(())
                    })
                })
            })
        };
        match res {
            Ok(()) => keep_first(out, n),
            Err(_) => out.zeroize(),
        }
        res
    }

    /// `extend` that runs a request of one chunk into a fresh buffer and returns it (no
    /// copy), and a larger one as [`collect`](Self::collect).
    fn collect_or_single<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<Block>>
    where
        Self: Sized,
    {
        if n > self.config().max_chunk {
            return self.collect(ch, n, rng);
        }
        guarded(self, Self::aborted, |s| {
            let mut out = Vec::new();
            if n > 0 {
                if let Err(e) = s.run_into(ch, n, rng, &mut out) {
                    out.zeroize();
                    return Err(e);
                }
                out.truncate(n);
            }
            Ok(out)
        })
    }
}

/// The receiver role of a generator: one extension, and the shared `extend` paths on top.
pub(crate) trait ReceiverStep {
    /// The type of `A`.
    type A: AValue;

    /// The configuration.
    fn config(&self) -> VoleConfig;

    /// The working buffers kept between calls.
    fn scratch(&mut self) -> &mut (AVec, Vec<Block>);

    /// One extension of `k_user` (at most `max_chunk`) outputs: `A`, `C` in `[..k_user]` of
    /// the reusable buffers `a` (of `A`'s variant) and `c`, which may hold anything on entry;
    /// the extension's extra outputs become the next base.
    fn run_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
        a: &mut AVec,
        c: &mut Vec<Block>,
    ) -> Result<()>;

    /// The abort latch: set while a call runs and left set if it fails (see
    /// [`Error::Aborted`]).
    fn aborted(&mut self) -> &mut bool;

    /// `extend_chunks`: `n` outputs in chunks of at most `max_chunk`, each handed to `sink`,
    /// in the kept working buffers.
    fn chunks<C, R, F>(&mut self, ch: &mut C, n: usize, rng: &mut R, sink: F) -> Result<()>
    where
        Self: Sized,
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[Self::A], &[Block]) -> Result<()>,
    {
        guarded(self, Self::aborted, |s| s.chunks_once(ch, n, rng, sink))
    }

    /// [`chunks`](Self::chunks) without the abort latch.
    fn chunks_once<C, R, F>(&mut self, ch: &mut C, n: usize, rng: &mut R, mut sink: F) -> Result<()>
    where
        C: Channel + ?Sized,
        R: CryptoRng + ?Sized,
        F: FnMut(&[Self::A], &[Block]) -> Result<()>,
    {
        let empty = (AVec::empty(Self::A::KIND), Vec::new());
        let (mut a, mut c) = core::mem::replace(self.scratch(), empty);
        let max_chunk = self.config().max_chunk;
        let res = for_each_chunk(n, max_chunk, |k| {
            self.run_into(ch, k, rng, &mut a, &mut c)
                .and_then(|()| sink(&Self::A::values(&a)[..k], &c[..k]))
        });
        *self.scratch() = (a, c);
        res
    }

    /// `extend` through [`chunks`](Self::chunks), collecting the outputs. A request of one
    /// chunk runs in the kept working buffers, whose `A` and `C` become the outputs (no copy,
    /// no second pair of buffers of `n` elements); the parity `(A, C)` pairs the code runs on stay
    /// kept for the next extension.
    #[allow(clippy::type_complexity)]
    fn collect<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<(Vec<Self::A>, Vec<Block>)>
    where
        Self: Sized,
    {
        let (mut aa, mut cc) = (Vec::new(), Vec::new());
        if n > self.config().max_chunk {
            reserve_outputs(&mut aa, n)?;
            reserve_outputs(&mut cc, n)?;
        }
        guarded(self, Self::aborted, |s| s.collect_once(ch, n, rng, aa, cc))
    }

    /// [`collect`](Self::collect) without the abort latch, into `aa` and `cc` (empty, with
    /// room for `n` outputs if `n` is above `max_chunk`).
    #[allow(clippy::type_complexity)]
    fn collect_once<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        mut aa: Vec<Self::A>,
        mut cc: Vec<Block>,
    ) -> Result<(Vec<Self::A>, Vec<Block>)> {
        if n > 0 && n <= self.config().max_chunk {
            let empty = (AVec::empty(Self::A::KIND), Vec::new());
            let (mut a, mut c) = core::mem::replace(self.scratch(), empty);
            let res = self.run_into(ch, n, rng, &mut a, &mut c);
            if let Err(e) = res {
                *self.scratch() = (a, c);
                return Err(e);
            }
            let mut vals = core::mem::take(Self::A::values_mut(&mut a));
            hand_out(&mut vals, n);
            hand_out(&mut c, n);
            *self.scratch() = (a, Vec::new());
            return Ok((vals, c));
        }
        let res = self.chunks_once(ch, n, rng, |a, c| {
            aa.extend_from_slice(a);
            cc.extend_from_slice(c);
            Ok(())
        });
        if let Err(e) = res {
            aa.zeroize();
            cc.zeroize();
            return Err(e);
        }
        Ok((aa, cc))
    }

    /// `extend_into`: `A` and `C` into the caller's vectors (any contents on entry, `n`
    /// elements each on success). A request of one chunk runs with them as the working
    /// buffers of `A` and `C` (they keep their capacity for the next call: no fresh memory
    /// then; the generator keeps its other working buffers as usual); a larger one appends
    /// the chunks. On error both are zeroized and emptied.
    fn collect_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
        a_out: &mut Vec<Self::A>,
        c_out: &mut Vec<Block>,
    ) -> Result<()>
    where
        Self: Sized,
    {
        let res = if n > 0 && n <= self.config().max_chunk {
            guarded(self, Self::aborted, |s| {
                let empty = (AVec::empty(Self::A::KIND), Vec::new());
                let (mut a, c) = core::mem::replace(s.scratch(), empty);
                let mut c = c;
                c.zeroize();
                *Self::A::values_mut(&mut a) = core::mem::take(a_out);
                let res = s.run_into(ch, n, rng, &mut a, c_out);
                *a_out = core::mem::take(Self::A::values_mut(&mut a));
                *s.scratch() = (a, Vec::new());
                res
            })
        } else {
            a_out.clear();
            c_out.clear();
            reserve_outputs(a_out, n)
                .and_then(|()| reserve_outputs(c_out, n))
                .and_then(|()| {
                    guarded(self, Self::aborted, |s| {
                        s.chunks_once(ch, n, rng, |a, c| {
                            a_out.extend_from_slice(a);
                            c_out.extend_from_slice(c);
                            Ok(())
                        })
                    })
                })
        };
        match res {
            Ok(()) => {
                keep_first(a_out, n);
                keep_first(c_out, n);
            }
            Err(_) => {
                a_out.zeroize();
                c_out.zeroize();
            }
        }
        res
    }

    /// `extend` that runs a request of one chunk into fresh buffers and returns them (no
    /// copy), and a larger one as [`collect`](Self::collect).
    #[allow(clippy::type_complexity)]
    fn collect_or_single<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        n: usize,
        rng: &mut R,
    ) -> Result<(Vec<Self::A>, Vec<Block>)>
    where
        Self: Sized,
    {
        if n > self.config().max_chunk {
            return self.collect(ch, n, rng);
        }
        guarded(self, Self::aborted, |s| {
            if n == 0 {
                return Ok((Vec::new(), Vec::new()));
            }
            let (mut a, mut c) = (AVec::empty(Self::A::KIND), Vec::new());
            if let Err(e) = s.run_into(ch, n, rng, &mut a, &mut c) {
                a.zeroize();
                c.zeroize();
                return Err(e);
            }
            let mut a = Self::A::into_values(a);
            a.truncate(n);
            c.truncate(n);
            Ok((a, c))
        })
    }
}

/// The flavour of a generator built on an inner subfield generator: its base VOLEs are
/// packed from `WIDTH` inner COTs each, without interaction, for the first extension, and
/// taken from the previous extension's extra outputs after that.
pub(crate) trait Packed: 'static {
    /// The extension kind.
    const KIND: Kind;
    /// Inner COTs packed into one base VOLE.
    const WIDTH: usize;
    /// The receiver's `A` type.
    type A: AValue;
    /// `WIDTH` COT blocks (the sender's `q` or the receiver's `t`) as one base VOLE block.
    fn pack_blocks(v: &[Block]) -> Block;
    /// `WIDTH` choice bits (one per byte) as one base VOLE `A` value.
    fn pack_bits(bits: &[u8]) -> Self::A;
    /// Runs `f` on base VOLE `A` values as GF(2^128) elements.
    fn with_blocks<T>(a: &[Self::A], f: impl FnOnce(&[Block]) -> T) -> T;
}

/// The sender of a [`Packed`] generator (the GF(2^128) and 64-bit subfield VOLE senders).
pub(crate) struct OuterSender<F> {
    inner: SubfieldVoleSender,
    pool_b: Vec<Block>,
    tweaks: Tweaks,
    /// The working buffer of the extensions, kept for the next one (no page faults).
    scratch: Vec<Block>,
    /// Set by a failed call: every later call gives [`Error::Aborted`].
    aborted: bool,
    flavour: PhantomData<F>,
}

impl<F> Drop for OuterSender<F> {
    fn drop(&mut self) {
        self.pool_b.zeroize();
        self.scratch.zeroize();
    }
}

impl<F: Packed> OuterSender<F> {
    /// A sender on the inner subfield generator `inner` (which holds `Δ`).
    pub(crate) fn new(inner: SubfieldVoleSender) -> Self {
        OuterSender {
            inner,
            pool_b: Vec::new(),
            tweaks: Tweaks::new(TAG_FIELD),
            scratch: Vec::new(),
            aborted: false,
            flavour: PhantomData,
        }
    }

    /// `Δ`.
    pub(crate) fn delta(&self) -> Block {
        self.inner.delta()
    }

    /// The base VOLEs in the pool.
    pub(crate) fn pool_len(&self) -> usize {
        self.pool_b.len()
    }
}

impl<F: Packed> SenderStep for OuterSender<F> {
    fn config(&self) -> VoleConfig {
        self.inner.config()
    }

    fn scratch(&mut self) -> &mut Vec<Block> {
        &mut self.scratch
    }

    fn aborted(&mut self) -> &mut bool {
        &mut self.aborted
    }

    fn run_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
        buf: &mut Vec<Block>,
    ) -> Result<()> {
        let cfg = self.inner.config();
        let reserve = cfg.vole_reserve(F::KIND);
        let params = Params::new(F::KIND, k_user + reserve, cfg.security);
        if self.pool_b.len() < params.voles_needed() {
            // Base VOLEs from WIDTH COTs each (non-interactive packing).
            let mut cots = self.inner.extend(ch, F::WIDTH * reserve, rng)?;
            self.pool_b.zeroize();
            self.pool_b = cots.chunks_exact(F::WIDTH).map(F::pack_blocks).collect();
            cots.zeroize();
        }
        let mut cots = self.inner.extend(ch, params.cots_needed(), rng)?;
        let tw = self.tweaks.next();
        let delta = self.inner.delta();
        let res = extend::send_into(ch, &params, delta, &cots, &self.pool_b, tw, rng, buf);
        cots.zeroize();
        res?;
        self.pool_b.zeroize();
        self.pool_b = take_reserve(buf, k_user, params.k);
        Ok(())
    }
}

/// The receiver of a [`Packed`] generator (the GF(2^128) and 64-bit subfield VOLE
/// receivers).
pub(crate) struct OuterReceiver<F: Packed> {
    inner: SubfieldVoleReceiver,
    pool_a: Vec<F::A>,
    pool_c: Vec<Block>,
    tweaks: Tweaks,
    /// The working buffers of the extensions, kept for the next one.
    scratch: (AVec, Vec<Block>),
    /// Set by a failed call: every later call gives [`Error::Aborted`].
    aborted: bool,
}

impl<F: Packed> Drop for OuterReceiver<F> {
    fn drop(&mut self) {
        self.pool_a.zeroize();
        self.pool_c.zeroize();
        self.scratch.0.zeroize();
        self.scratch.1.zeroize();
    }
}

impl<F: Packed> OuterReceiver<F> {
    /// A receiver on the inner subfield generator `inner`.
    pub(crate) fn new(inner: SubfieldVoleReceiver) -> Self {
        OuterReceiver {
            inner,
            pool_a: Vec::new(),
            pool_c: Vec::new(),
            tweaks: Tweaks::new(TAG_FIELD),
            scratch: (AVec::empty(F::KIND), Vec::new()),
            aborted: false,
        }
    }

    /// The base VOLEs in the pool.
    pub(crate) fn pool_len(&self) -> usize {
        self.pool_c.len()
    }
}

impl<F: Packed> ReceiverStep for OuterReceiver<F> {
    type A = F::A;

    fn config(&self) -> VoleConfig {
        self.inner.config()
    }

    fn scratch(&mut self) -> &mut (AVec, Vec<Block>) {
        &mut self.scratch
    }

    fn aborted(&mut self) -> &mut bool {
        &mut self.aborted
    }

    fn run_into<C: Channel + ?Sized, R: CryptoRng + ?Sized>(
        &mut self,
        ch: &mut C,
        k_user: usize,
        rng: &mut R,
        a: &mut AVec,
        c: &mut Vec<Block>,
    ) -> Result<()> {
        let cfg = self.inner.config();
        let reserve = cfg.vole_reserve(F::KIND);
        let params = Params::new(F::KIND, k_user + reserve, cfg.security);
        if self.pool_c.len() < params.voles_needed() {
            let (mut bits, mut cots) = self.inner.extend(ch, F::WIDTH * reserve, rng)?;
            self.pool_a.zeroize();
            self.pool_c.zeroize();
            self.pool_a = bits.chunks_exact(F::WIDTH).map(F::pack_bits).collect();
            self.pool_c = cots.chunks_exact(F::WIDTH).map(F::pack_blocks).collect();
            bits.zeroize();
            cots.zeroize();
        }
        let (mut r, mut t) = self.inner.extend(ch, params.cots_needed(), rng)?;
        let tw = self.tweaks.next();
        let pc = &self.pool_c;
        let res = F::with_blocks(&self.pool_a, |pa| {
            extend::receive_into(ch, &params, &r, &t, pa, pc, tw, rng, a, c)
        });
        r.zeroize();
        t.zeroize();
        res?;
        self.pool_a.zeroize();
        self.pool_c.zeroize();
        self.pool_a = take_reserve(F::A::values_mut(a), k_user, params.k);
        self.pool_c = take_reserve(c, k_user, params.k);
        Ok(())
    }
}
