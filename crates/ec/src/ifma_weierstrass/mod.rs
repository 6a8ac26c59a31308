//! The same-scalar batch of the short-Weierstrass curves SM2, P-256 (`a = −3`) and
//! secp256k1 (`a = 0`; multiplication and decode only, its hash stays k256's) in eight
//! AVX-512 IFMA lanes: eight points run through one recoded scalar at a time.
//!
//! * Field: [`field::F8`], Montgomery arithmetic for a generic 256-bit prime in radix `2^52`
//!   (five limbs), `vpmadd52{l,h}uq` products.
//! * Curve: Jacobian coordinates (`x = X/Z²`, `y = Y/Z³`), doubling `dbl-2001-b` (3M + 5S,
//!   `a = −3`) or `dbl-2009-l` (2M + 5S, `a = 0`) and addition `add-2007-bl` (11M + 5S) of the Explicit-Formulas Database
//!   (Bernstein–Lange, <https://hyperelliptic.org/EFD/g1p/auto-shortw-jacobian-3.html>).
//! * Scalar: the odd signed fixed window of width 5 (digits `±1, ±3, …, ±31`, never zero;
//!   Okeya–Takagi / Joye–Tunstall regular recoding), computed once per chunk by
//!   [`Recoded::new`] without branches on the scalar. `k` is made odd first: `k' = k` if `k`
//!   is odd, else `k' = n − k` and the result is negated at the end (constant-time select).
//!   The table `[1]P, [3]P, …, [31]P` is read by scanning all sixteen entries with lane-mask
//!   blends; the digit's sign negates `Y` by a select.
//! * Outputs: one shared inversion per chunk (Montgomery's trick in lanes, then one
//!   exponentiation `Z^{p−2}` for eight lanes at once), SEC1 compressed.
//! * Hash: RFC 9380 simplified SWU in lanes (`sqrt_ratio` for `p ≡ 3 mod 4`, `sgn0` on the
//!   canonical value), `Q0 + Q1` with the exceptional case handled; the message expansion
//!   stays per item. Decode: the square root `y = (x³ − 3x + b)^{(p+1)/4}` in lanes, checked by
//!   squaring.
//!
//! # Exceptional cases of the incomplete formulas
//!
//! The Jacobian addition fails (returns `Z = 0`) for `P = Q` and for an identity operand;
//! doubling is exception-free in a group of odd order (no point has `Y = 0`; the identity
//! `Z = 0` doubles to `Z = 0`). In `[k']P` with `k'` odd in `[1, n−1]` write
//! `k_j = Σ_{i≥j} d_i·32^{i−j}` for the value of the top digits: each `k_j` is odd and
//! positive, `k_j ≤ 2^{256−5j}` for `j ≥ 1`, and the step `j` adds `[d_j]P` to `[32·k_{j+1}]P`.
//! For `j ≥ 1`: `32 ≤ 32·k_{j+1} ≤ 2^{251} < n − 31` and `|d_j| ≤ 31`, so
//! `32·k_{j+1} ≢ ±d_j (mod n)`: neither equal nor opposite points, and neither is the identity.
//! Only the last step (`j = 0`) can meet `P = Q`, exactly when `k' = n + 2·d_0` (about 31
//! scalars out of `n`); the last addition is therefore `P8::add_or_double`, which computes
//! both and selects lane-wise (`H = 0 ∧ r = 0`). It yields the identity when `H = 0 ≠ r`,
//! which is also right. The table entries `[2i+1]P = [2i−1]P + [2]P` never coincide
//! (`2i−1 ≢ ±2`). An identity input (`Z = 0`) stays `Z = 0` through every formula (both
//! formulas multiply `Z` by the input `Z`s), and such lanes are encoded as 33 zero bytes, as
//! the serial path does. For the hash, `Q0 + Q1` uses `P8::add_or_double` as well.
//!
//! Constant time: the digits select table entries with masks (no secret index or branch);
//! the scalar's copies (bytes, limbs, digits) are zeroized ([`Recoded`] on drop).
//!
//! The module is compiled only with `cfg(obliv_x86_simd)` (x86-64 without `--cfg
//! obliv_portable`; the callers in `weierstrass` skip it otherwise), its kernels with the
//! feature set `crate::cpu::ifma_weierstrass` (`avx512f`, `avx512ifma`), and they are entered
//! only after [`available`] (that set's detector) said yes; `OBLIV_CPU_DISABLE=avx512ifma` (or
//! `obliv_cpu::disable`) forces the serial `fastmul` path. Every public function here returns
//! `false`/`None` when the lanes are not available, and the callers then run the serial code,
//! whose outputs the tests compare with these.
#![allow(unsafe_code)] // AVX-512 intrinsics behind run-time detection; each block has SAFETY

mod field;

use crate::fastmul::{AffineXy, Params};

/// Whether the eight-lane kernel can run here: `cpu::ifma_weierstrass::detected()`, i.e. x86
/// SIMD compiled in, the CPU has every feature the kernels are compiled with (`avx512f`,
/// `avx512ifma`) and none is switched off. Asked on every batch call.
pub(crate) fn available() -> bool {
    crate::cpu::ifma_weierstrass::detected()
}

/// Number of window digits: 51 of width 5 and the top one.
const DIGITS: usize = 52;

/// The tag of the window look-up in [`crate::scan_trace`].
#[cfg(test)]
const TRACE_TAG: u8 = 1;

/// The recoded scalar, zeroized on drop: digit `i` is `(−1)^{neg[i]}·(2·idx[i] + 1)`, and the
/// product is negated when `negate` is 1 (the scalar was even, `n − k` was recoded).
struct Recoded {
    idx: [u8; DIGITS],
    neg: [u8; DIGITS],
    negate: u8,
}

impl Drop for Recoded {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.idx);
        zeroize::Zeroize::zeroize(&mut self.neg);
        zeroize::Zeroize::zeroize(&mut self.negate);
    }
}

impl core::fmt::Debug for Recoded {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Recoded(..)")
    }
}

impl Recoded {
    /// Recode the canonical big-endian scalar `k ∈ [1, n−1]` (no branch or index on `k`).
    #[allow(clippy::cast_possible_truncation)] // digits are below 32
    #[allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)] // two's complement on purpose
    fn new<C: Params>(k_be: &[u8]) -> Self {
        let mut k = [0u64; 4];
        for (i, limb) in k.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&k_be[32 - 8 * (i + 1)..32 - 8 * i]);
            *limb = u64::from_be_bytes(w);
            zeroize::Zeroize::zeroize(&mut w);
        }
        // n − k, and k' = k if k is odd, else n − k (odd because n is odd).
        let mut nk = [0u64; 4];
        let mut borrow = 0u64;
        for i in 0..4 {
            let t = u128::from(C::N[i])
                .wrapping_sub(u128::from(k[i]))
                .wrapping_sub(u128::from(borrow));
            nk[i] = t as u64;
            borrow = (t >> 127) as u64;
        }
        let odd = k[0] & 1;
        let keep = odd.wrapping_neg();
        let mut kk = [0u64; 4];
        for i in 0..4 {
            kk[i] = (k[i] & keep) | (nk[i] & !keep);
        }
        let mut r = Recoded {
            idx: [0; DIGITS],
            neg: [0; DIGITS],
            negate: (1 - odd) as u8,
        };
        for j in 0..DIGITS - 1 {
            // d = (k' mod 64) − 32: odd, in [−31, 31]; then k' ← (k' − d)/32, odd again.
            let d = (kk[0] & 63) as i64 - 32;
            let s = d >> 63; // 0 or −1
            let abs = ((d ^ s) - s) as u64;
            r.idx[j] = ((abs - 1) >> 1) as u8;
            r.neg[j] = (s & 1) as u8;
            let md = d.wrapping_neg();
            let ext = (md >> 63) as u64;
            let add = [md as u64, ext, ext, ext];
            let mut c = 0u64;
            for i in 0..4 {
                let t = u128::from(kk[i]) + u128::from(add[i]) + u128::from(c);
                kk[i] = t as u64;
                c = (t >> 64) as u64;
            }
            kk = [
                (kk[0] >> 5) | (kk[1] << 59),
                (kk[1] >> 5) | (kk[2] << 59),
                (kk[2] >> 5) | (kk[3] << 59),
                kk[3] >> 5,
            ];
        }
        // What is left is odd and at most 2 (see the module docs): the top digit 1.
        r.idx[DIGITS - 1] = ((kk[0].wrapping_sub(1) >> 1) & 15) as u8;
        zeroize::Zeroize::zeroize(&mut k);
        zeroize::Zeroize::zeroize(&mut nk);
        zeroize::Zeroize::zeroize(&mut kk);
        r
    }
}

/// Big-endian 32 bytes to little-endian limbs.
fn le_limbs(b: &[u8]) -> [u64; 4] {
    let mut l = [0u64; 4];
    for (i, limb) in l.iter_mut().enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[32 - 8 * (i + 1)..32 - 8 * i]);
        *limb = u64::from_be_bytes(w);
    }
    l
}

/// Little-endian limbs to big-endian 32 bytes.
fn be_bytes(l: &[u64; 4]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, limb) in l.iter().enumerate() {
        out[32 - 8 * (i + 1)..32 - 8 * i].copy_from_slice(&limb.to_be_bytes());
    }
    out
}

/// `x < p` on limbs (public data).
fn below_p<C: Params>(x: &[u64; 4]) -> bool {
    for i in (0..4).rev() {
        if x[i] != C::P[i] {
            return x[i] < C::P[i];
        }
    }
    false
}

/// `[k]P_i` for affine inputs (`None`: the identity), SEC1 compressed into `out` (identity:
/// 33 zeros); `k` canonical big-endian, non-zero. Returns `false` (and writes nothing) when
/// the lanes are not available.
pub(crate) fn mul_affine_batch<C: Params>(
    points: &[AffineXy],
    k_be: &[u8],
    out: &mut [[u8; 33]],
) -> bool {
    if !available() {
        return false;
    }
    let rec = Recoded::new::<C>(k_be);
    // SAFETY: `available()` is `cpu::ifma_weierstrass::detected()`, which checks every
    // feature the `cpu::ifma_weierstrass::enable!` kernels are compiled with.
    unsafe { lanes::mul_affine::<C>(points, &rec, out) };
    true
}

/// `[k]H(x_i)` with RFC 9380 `hash_to_curve` (SSWU, expander `X`, tag `dst`), SEC1
/// compressed into `out`. Returns `false` (and writes nothing) when the lanes are not
/// available or the expander rejects `dst`; the caller then runs the serial path.
pub(crate) fn hash_mul_batch<C, X, T>(
    items: &[T],
    dst: &[u8],
    k_be: &[u8],
    out: &mut [[u8; 33]],
) -> bool
where
    C: Params,
    X: k256::hash2curve::ExpandMsg<k256::elliptic_curve::consts::U16>,
    T: AsRef<[u8]>,
{
    if !available() {
        return false;
    }
    let mut us = Vec::with_capacity(items.len());
    let mut uniform = [0u8; 96];
    for it in items {
        if crate::sswu::expand::<X>(it.as_ref(), dst, &mut uniform).is_err() {
            zeroize::Zeroize::zeroize(&mut us);
            zeroize::Zeroize::zeroize(&mut uniform);
            return false;
        }
        us.push([
            crate::fastmul::Fe::<C>::reduce_be48(&uniform[..48]).to_le_limbs(),
            crate::fastmul::Fe::<C>::reduce_be48(&uniform[48..]).to_le_limbs(),
        ]);
    }
    zeroize::Zeroize::zeroize(&mut uniform);
    let rec = Recoded::new::<C>(k_be);
    // SAFETY: `available()` is `cpu::ifma_weierstrass::detected()`, which checks every
    // feature the `cpu::ifma_weierstrass::enable!` kernels are compiled with.
    unsafe { lanes::hash_mul::<C>(&us, &rec, out) };
    // The field elements of the hashed items (private inputs), once per chunk.
    zeroize::Zeroize::zeroize(&mut us);
    true
}

/// Decode SEC1 compressed encodings, multiply by `k`, encode into `out`. `None` when the
/// lanes are not available; `Some(Err(i))` with the first index whose encoding is rejected
/// (wrong length, tag other than `02`/`03`, `x ≥ p`, or no point with that `x`), in which case
/// `out` holds nothing meaningful.
pub(crate) fn decode_mul_batch<C: Params, E: AsRef<[u8]>>(
    encodings: &[E],
    k_be: &[u8],
    out: &mut [[u8; 33]],
) -> Option<Result<(), usize>> {
    if !available() {
        return None;
    }
    // The format checks, per item; the square roots in lanes on the prefix before the
    // first malformed item.
    let mut xs = Vec::with_capacity(encodings.len());
    let mut bad = None;
    for (i, e) in encodings.iter().enumerate() {
        let e = e.as_ref();
        let ok = e.len() == 33 && (e[0] == 0x02 || e[0] == 0x03);
        let x = if ok { le_limbs(&e[1..]) } else { [0; 4] };
        if !ok || !below_p::<C>(&x) {
            bad = Some(i);
            break;
        }
        xs.push((x, e[0] & 1));
    }
    let rec = Recoded::new::<C>(k_be);
    // SAFETY: `available()` is `cpu::ifma_weierstrass::detected()`, which checks every
    // feature the `cpu::ifma_weierstrass::enable!` kernels are compiled with.
    let r = unsafe { lanes::decode_mul::<C>(&xs, bad.is_none(), &rec, out) };
    Some(match (r, bad) {
        (Err(i), _) => Err(i),
        (Ok(()), Some(i)) => Err(i),
        (Ok(()), None) => Ok(()),
    })
}

mod lanes {
    //! The kernels; every function needs avx512f and avx512ifma.
    use super::field::{F8, Mask};
    use super::{DIGITS, Recoded, be_bytes};
    use crate::fastmul::{AffineXy, Params};
    use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

    /// A full lane mask from a `Choice` (all lanes share the scalar).
    fn mask_of(c: Choice) -> Mask {
        u8::conditional_select(&0, &0xff, c)
    }

    /// Eight points in Jacobian coordinates.
    #[derive(Clone, Copy)]
    pub(super) struct P8<C> {
        x: F8<C>,
        y: F8<C>,
        z: F8<C>,
    }

    // SAFETY: three `F8<C>`, i.e. `__m512i` arrays and a `PhantomData`: all zeros is valid.
    unsafe impl<C: Copy> crate::wipe::ZeroBits for P8<C> {}

    impl<C: Params> P8<C> {
        crate::cpu::ifma_weierstrass::enable! {
            #[inline]
            fn select(m: Mask, a: &Self, b: &Self) -> Self {
                P8 {
                    x: F8::select(m, &a.x, &b.x),
                    y: F8::select(m, &a.y, &b.y),
                    z: F8::select(m, &a.z, &b.z),
                }
            }

            /// `2P`: `dbl-2001-b` (`a = −3`, 3M + 5S) or, for `a = 0`, `dbl-2009-l` (2M + 5S).
            #[inline]
            fn dbl(&self) -> Self {
                if C::A_IS_ZERO {
                    let a = self.x.square();
                    let b = self.y.square();
                    let c = b.square();
                    let d = self.x.add(&b).square().sub(&a).sub(&c).double();
                    let e = a.double().add(&a);
                    let x3 = e.square().sub(&d.double());
                    let y3 = e.mul(&d.sub(&x3)).sub(&c.double().double().double());
                    let z3 = self.y.mul(&self.z).double();
                    return P8 {
                        x: x3,
                        y: y3,
                        z: z3,
                    };
                }
                let delta = self.z.square();
                let gamma = self.y.square();
                let beta = self.x.mul(&gamma);
                let alpha = self.x.sub(&delta).mul(&self.x.add(&delta));
                let alpha = alpha.double().add(&alpha);
                let beta4 = beta.double().double();
                let x3 = alpha.square().sub(&beta4.double());
                let z3 = self.y.add(&self.z).square().sub(&gamma).sub(&delta);
                let g2 = gamma.square().double().double().double();
                let y3 = alpha.mul(&beta4.sub(&x3)).sub(&g2);
                P8 {
                    x: x3,
                    y: y3,
                    z: z3,
                }
            }

            /// `P + Q`, `add-2007-bl`: 11M + 5S; also returns `H` and `r` (both zero iff
            /// `P = Q` for non-identity inputs).
            #[inline]
            fn add_hr(&self, q: &Self) -> (Self, F8<C>, F8<C>) {
                let z1z1 = self.z.square();
                let z2z2 = q.z.square();
                let u1 = self.x.mul(&z2z2);
                let u2 = q.x.mul(&z1z1);
                let s1 = self.y.mul(&q.z).mul(&z2z2);
                let s2 = q.y.mul(&self.z).mul(&z1z1);
                let h = u2.sub(&u1);
                let i = h.double().square();
                let j = h.mul(&i);
                let r = s2.sub(&s1).double();
                let v = u1.mul(&i);
                let x3 = r.square().sub(&j).sub(&v.double());
                let y3 = r.mul(&v.sub(&x3)).sub(&s1.mul(&j).double());
                let z3 = self.z.add(&q.z).square().sub(&z1z1).sub(&z2z2).mul(&h);
                (
                    P8 {
                        x: x3,
                        y: y3,
                        z: z3,
                    },
                    h,
                    r,
                )
            }

            /// `P + Q` for `P ≠ ±Q`, neither the identity (see the module docs).
            #[inline]
            fn add(&self, q: &Self) -> Self {
                self.add_hr(q).0
            }

            /// `P + Q` with the doubling selected in the lanes where `P = Q`.
            #[inline]
            fn add_or_double(&self, q: &Self) -> Self {
                let (s, h, r) = self.add_hr(q);
                let d = self.dbl();
                Self::select(h.is_zero() & r.is_zero(), &s, &d)
            }

            /// `T[idx]` with `Y` negated if `neg = 1`, by a scan of the whole table.
            #[inline]
            #[allow(clippy::cast_possible_truncation)] // j < 16
            fn lookup(table: &[Self; 16], idx: u8, neg: u8) -> Self {
                #[cfg(test)]
                crate::scan_trace::note(super::TRACE_TAG, 0);
                let mut r = table[0];
                for (j, e) in table.iter().enumerate().skip(1) {
                    #[cfg(test)]
                    crate::scan_trace::note(super::TRACE_TAG, j);
                    r = Self::select(mask_of(idx.ct_eq(&(j as u8))), &r, e);
                }
                let ny = r.y.neg();
                r.y = F8::select(mask_of(neg.ct_eq(&1)), &r.y, &ny);
                r
            }

            /// `[k]P` for the recoded `k`.
            fn mul(&self, rec: &Recoded) -> Self {
                let p2 = self.dbl();
                let mut table = [*self; 16];
                for i in 1..16 {
                    table[i] = table[i - 1].add(&p2);
                }
                let mut acc = Self::lookup(&table, rec.idx[DIGITS - 1], rec.neg[DIGITS - 1]);
                for j in (0..DIGITS - 1).rev() {
                    acc = acc.dbl().dbl().dbl().dbl().dbl();
                    let t = Self::lookup(&table, rec.idx[j], rec.neg[j]);
                    acc = if j == 0 {
                        acc.add_or_double(&t)
                    } else {
                        acc.add(&t)
                    };
                }
                let ny = acc.y.neg();
                acc.y = F8::select(mask_of(rec.negate.ct_eq(&1)), &acc.y, &ny);
                // The multiples of P (for the hash path, of the secret items' points): wiped
                // once per eight-lane multiplication, about 15 KiB of stores against 52
                // window steps.
                crate::wipe::wipe_slice(&mut table);
                acc
            }
        }
    }

    crate::cpu::ifma_weierstrass::enable! {
        /// Normalise and SEC1-compress `pts` into `out` (`out.len() ≤ 8·pts.len()`), one
        /// inversion for all (Montgomery's trick across the vectors, lane-wise).
        #[allow(clippy::cast_possible_truncation)] // a parity bit
        fn encode<C: Params>(pts: &[P8<C>], out: &mut [[u8; 33]]) {
            let one = F8::<C>::one();
            let zs: Vec<(F8<C>, Mask)> = pts
                .iter()
                .map(|p| {
                    let m = p.z.is_zero();
                    (F8::select(m, &p.z, &one), m)
                })
                .collect();
            let mut prefix = Vec::with_capacity(zs.len());
            let mut acc = one;
            for (z, _) in &zs {
                prefix.push(acc);
                acc = acc.mul(z);
            }
            let mut inv = acc.invert();
            for i in (0..pts.len()).rev() {
                let zi = inv.mul(&prefix[i]);
                inv = inv.mul(&zs[i].0);
                let zi2 = zi.square();
                let zi3 = zi2.mul(&zi);
                let x = pts[i].x.mul(&zi2).to_lanes();
                let y = pts[i].y.mul(&zi3).to_lanes();
                for l in 0..8 {
                    let Some(o) = out.get_mut(8 * i + l) else {
                        break;
                    };
                    // Identity lanes (public: only identity inputs give identity outputs).
                    if zs[i].1 & (1 << l) != 0 {
                        *o = [0u8; 33];
                    } else {
                        o[0] = 0x02 | (y[l][0] & 1) as u8;
                        o[1..].copy_from_slice(&be_bytes(&x[l]));
                    }
                }
            }
        }

        /// See [`super::mul_affine_batch`].
        pub(super) fn mul_affine<C: Params>(points: &[AffineXy], rec: &Recoded, out: &mut [[u8; 33]]) {
            let mut prods: Vec<P8<C>> = Vec::with_capacity(points.len().div_ceil(8));
            for group in points.chunks(8) {
                let mut xs = [[0u64; 4]; 8];
                let mut ys = [[1u64, 0, 0, 0]; 8];
                let mut id: Mask = 0;
                for (l, p) in group.iter().enumerate() {
                    match p {
                        Some((x, y)) => {
                            xs[l] = super::le_limbs(x);
                            ys[l] = super::le_limbs(y);
                        }
                        None => id |= 1 << l,
                    }
                }
                let z = F8::<C>::select(id, &F8::one(), &F8::zero());
                let p = P8 {
                    x: F8::from_lanes(&xs),
                    y: F8::from_lanes(&ys),
                    z,
                };
                prods.push(p.mul(rec));
            }
            encode(&prods, out);
        }
    }

    /// The SSWU constants of a curve, in lanes.
    struct Sswu<C> {
        z: F8<C>,
        a: F8<C>,
        b: F8<C>,
        c2: F8<C>,
        one: F8<C>,
    }

    impl<C: Params> Sswu<C> {
        crate::cpu::ifma_weierstrass::enable! {
            fn new() -> Self {
                Sswu {
                    z: F8::constant([C::Z_NEG, 0, 0, 0]).neg(),
                    a: F8::constant([3, 0, 0, 0]).neg(),
                    b: F8::constant(crate::fastmul::Fe::<C>::b().to_le_limbs()),
                    c2: F8::constant(super::le_limbs(&C::C2)),
                    one: F8::one(),
                }
            }

            /// `sqrt_ratio(u, v)` for `p ≡ 3 (mod 4)` (RFC 9380 App. F.2.1.2).
            #[inline]
            fn sqrt_ratio(&self, u: &F8<C>, v: &F8<C>) -> (Mask, F8<C>) {
                let tv1 = v.square();
                let tv2 = u.mul(v);
                let tv1 = tv1.mul(&tv2);
                let y1 = tv1.pow_public(&C::C1).mul(&tv2);
                let y2 = y1.mul(&self.c2);
                let tv3 = y1.square().mul(v);
                let is_qr = tv3.eq(u);
                (is_qr, F8::select(is_qr, &y2, &y1))
            }

            /// `map_to_curve_simple_swu(u)` (RFC 9380 §6.6.2, `A = −3`), in Jacobian form
            /// `(x·d : y·d³ : d)` with `d = x_d` (no inversion); the same steps as
            /// `fastmul::map_to_curve`.
            #[inline]
            fn map(&self, u: &F8<C>) -> P8<C> {
                let tv1 = self.z.mul(&u.square());
                let tv2 = tv1.square().add(&tv1);
                let tv3 = self.b.mul(&tv2.add(&self.one));
                let tv4 = F8::select(tv2.is_zero(), &tv2.neg(), &self.z);
                let tv4 = self.a.mul(&tv4);
                let tv2 = tv3.square();
                let tv6 = tv4.square();
                let tv5 = self.a.mul(&tv6);
                let tv2 = tv2.add(&tv5).mul(&tv3);
                let tv6 = tv6.mul(&tv4);
                let tv2 = tv2.add(&self.b.mul(&tv6));
                let x = tv1.mul(&tv3);
                let (is_qr, y1) = self.sqrt_ratio(&tv2, &tv6);
                let y = tv1.mul(u).mul(&y1);
                let x = F8::select(is_qr, &x, &tv3);
                let y = F8::select(is_qr, &y, &y1);
                let differ = u.sgn0() ^ y.sgn0();
                let y = F8::select(differ, &y, &y.neg());
                let d2 = tv4.square();
                P8 {
                    x: x.mul(&tv4),
                    y: y.mul(&d2).mul(&tv4),
                    z: tv4,
                }
            }
        }
    }

    crate::cpu::ifma_weierstrass::enable! {
        /// See [`super::hash_mul_batch`]: `us` holds `(u0, u1)` per item, plain canonical.
        pub(super) fn hash_mul<C: Params>(us: &[[[u64; 4]; 2]], rec: &Recoded, out: &mut [[u8; 33]]) {
            let sswu = Sswu::<C>::new();
            let mut prods: Vec<P8<C>> = Vec::with_capacity(us.len().div_ceil(8));
            for group in us.chunks(8) {
                let mut u0 = [[0u64; 4]; 8];
                let mut u1 = [[0u64; 4]; 8];
                for (l, u) in group.iter().enumerate() {
                    u0[l] = u[0];
                    u1[l] = u[1];
                }
                let mut q0 = sswu.map(&F8::from_lanes(&u0));
                let mut q1 = sswu.map(&F8::from_lanes(&u1));
                let mut h = q0.add_or_double(&q1);
                prods.push(h.mul(rec));
                // The hashed items (secret) and their field elements.
                crate::wipe::wipe(&mut q0);
                crate::wipe::wipe(&mut q1);
                crate::wipe::wipe(&mut h);
                zeroize::Zeroize::zeroize(&mut u0);
                zeroize::Zeroize::zeroize(&mut u1);
            }
            encode(&prods, out);
        }
    }

    /// `(p + 1)/4` for `p ≡ 3 (mod 4)`: `⌊p/4⌋ + 1`.
    fn sqrt_exp<C: Params>() -> [u64; 4] {
        let p = C::P;
        let mut e = [
            (p[0] >> 2) | (p[1] << 62),
            (p[1] >> 2) | (p[2] << 62),
            (p[2] >> 2) | (p[3] << 62),
            p[3] >> 2,
        ];
        for limb in &mut e {
            let (v, c) = limb.overflowing_add(1);
            *limb = v;
            if !c {
                break;
            }
        }
        e
    }

    crate::cpu::ifma_weierstrass::enable! {
        /// See [`super::decode_mul_batch`]: `xs` holds `(x, y parity)` of well-formed
        /// encodings; when `multiply` is false only the square roots are checked.
        pub(super) fn decode_mul<C: Params>(
            xs: &[([u64; 4], u8)],
            multiply: bool,
            rec: &Recoded,
            out: &mut [[u8; 33]],
        ) -> Result<(), usize> {
            let sswu = Sswu::<C>::new();
            let e = sqrt_exp::<C>();
            let three = F8::<C>::constant([3, 0, 0, 0]);
            let mut pts = Vec::with_capacity(xs.len().div_ceil(8));
            for (g, group) in xs.chunks(8).enumerate() {
                let mut xl = [[0u64; 4]; 8];
                let mut odd: Mask = 0;
                for (l, (x, s)) in group.iter().enumerate() {
                    xl[l] = *x;
                    odd |= s << l;
                }
                let x = F8::from_lanes(&xl);
                let x2 = if C::A_IS_ZERO {
                    x.square()
                } else {
                    x.square().sub(&three)
                };
                let rhs = x2.mul(&x).add(&sswu.b);
                let y = rhs.pow_public(&e);
                let ok = y.square().eq(&rhs);
                // Lanes past the end of the input are not checked.
                let used: Mask = if group.len() == 8 {
                    0xff
                } else {
                    (1u8 << group.len()) - 1
                };
                let bad = !ok & used;
                if bad != 0 {
                    return Err(8 * g + bad.trailing_zeros() as usize);
                }
                let flip = y.sgn0() ^ odd;
                let y = F8::select(flip, &y, &y.neg());
                pts.push(P8 { x, y, z: sswu.one });
            }
            if multiply {
                let prods: Vec<P8<C>> = pts.iter().map(|p| p.mul(rec)).collect();
                encode(&prods, out);
            }
            Ok(())
        }
    }

    #[cfg(test)]
    mod tests {
        //! Field lanes against the serial `fastmul` field.
        use super::*;
        use crate::fastmul::{Fe, P256Params, Secp256k1Params, Sm2Params};
        use proptest::prelude::*;

        fn field_ops<C: Params>(a: [u64; 4], b: [u64; 4]) {
            let (Some(fa), Some(fb)) = (
                Fe::<C>::from_be_bytes(&be_bytes(&a)),
                Fe::<C>::from_be_bytes(&be_bytes(&b)),
            ) else {
                return;
            };
            // SAFETY: the caller checked `available()`.
            let got = unsafe { lane_ops::<C>(a, b) };
            let want = [
                fa.mul(&fb),
                fa.add(&fb),
                fa.sub(&fb),
                fa.neg(),
                fa.invert(),
                fa.mul(&fa).mul(&fb).sub(&fb).add(&fa),
            ]
            .map(Fe::to_le_limbs);
            assert_eq!(got, want);
        }

        crate::cpu::ifma_weierstrass::enable! {
            fn lane_ops<C: Params>(a: [u64; 4], b: [u64; 4]) -> [[u64; 4]; 6] {
                let x = F8::<C>::from_lanes(&[a; 8]);
                let y = F8::<C>::from_lanes(&[b; 8]);
                let r = [
                    x.mul(&y),
                    x.add(&y),
                    x.sub(&y),
                    x.neg(),
                    x.invert(),
                    x.square().mul(&y).sub(&y).add(&x),
                ]
                .map(|v| v.to_lanes());
                for v in &r {
                    assert!(v.iter().all(|l| l == &v[0]), "lanes differ");
                }
                r.map(|v| v[0])
            }
        }

        fn edge<C: Params>() -> Vec<[u64; 4]> {
            let p = C::P;
            let mut v = vec![[0; 4], [1, 0, 0, 0], [2, 0, 0, 0], [u64::MAX; 4]];
            for d in 1..4 {
                let mut x = p;
                x[0] -= d;
                v.push(x);
            }
            v
        }

        #[test]
        fn field_edges_match_serial() {
            if !super::super::lanes_for_test("field_edges_match_serial") {
                return;
            }
            for a in edge::<Sm2Params>() {
                for b in edge::<Sm2Params>() {
                    field_ops::<Sm2Params>(a, b);
                }
            }
            for a in edge::<P256Params>() {
                for b in edge::<P256Params>() {
                    field_ops::<P256Params>(a, b);
                }
            }
            for a in edge::<Secp256k1Params>() {
                for b in edge::<Secp256k1Params>() {
                    field_ops::<Secp256k1Params>(a, b);
                }
            }
        }

        #[test]
        fn field_random_match_serial() {
            if !super::super::lanes_for_test("field_random_match_serial") {
                return;
            }
            proptest!(ProptestConfig::with_cases(200), |(a: [u64; 4], b: [u64; 4])| {
                field_ops::<Sm2Params>(a, b);
                field_ops::<P256Params>(a, b);
                field_ops::<Secp256k1Params>(a, b);
            });
        }
    }
}

/// For the lanes' tests: whether the kernels can run, after printing that `test` is skipped
/// if not (a CPU without a feature of `cpu::ifma_weierstrass`, or one switched off).
#[cfg(test)]
fn lanes_for_test(test: &str) -> bool {
    let ok = available();
    if !ok {
        eprintln!(
            "{test}: skipped, the AVX-512 IFMA lanes ({}) are not available here \
             (missing on this CPU or switched off by OBLIV_CPU_DISABLE)",
            crate::cpu::ifma_weierstrass::FEATURES.join(", ")
        );
    }
    ok
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // limb arithmetic in the reference computations
mod tests;
