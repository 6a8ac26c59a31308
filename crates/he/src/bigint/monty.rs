//! Constant-time Montgomery arithmetic modulo an odd `N` of `L` 64-bit limbs, `R = 2^(64L)`.
//!
//! Multiplication is *separated operand scanning* (Koç, Acar, Kaliski, *Analyzing and comparing
//! Montgomery multiplication algorithms*, IEEE Micro 1996): the full product (or a dedicated
//! square: off-diagonal products once, doubled, plus the diagonal) followed by word-serial
//! REDC in the form of GMP's `mpn_redc_1` (each row's carry parked in the limb it cleared and
//! added back at the end), then one masked subtraction of `N`. Every loop runs over fixed,
//! public lengths and nothing branches on or indexes memory by the values, so the time of a
//! multiplication depends on `L` only.
//!
//! The only primitive is `r += a·b` over a limb row (`addmul_1`), in two kernels:
//! * **portable**: `u128` multiply-accumulate, any target;
//! * **ADX** (x86-64): a `mulx`/`adcx`/`adox` loop in inline assembly with two independent
//!   carry chains, used when the CPU reports every feature of the `adx_features!` list (the
//!   same list is the `target_feature` set of the entry points that run it). For `L` a
//!   multiple of 4 it also runs whole passes in assembly: the product rows, the REDC rows and
//!   the square (the off-diagonal triangle in one routine, then doubling and diagonal fused
//!   into one pass, in the manner of GMP's `sqr_basecase` and `sqr_diag_addlsh1`). At
//!   `L = 16` (the digits of Paillier-2048's CRT decryption) the rows and the triangle are
//!   unrolled, with no inner loop.
//!
//! Exponentiation is a fixed 5-bit window over all `e_bits` bits of the exponent; each table
//! entry is chosen by reading all 32 entries and keeping one by masks. [`MontFixedBase`] is the
//! fixed-base variant (every window precomputed, one multiplication per window).
#![allow(clippy::cast_possible_truncation)] // limb arithmetic: truncation to 64 bits intended
#![allow(clippy::needless_range_loop)]
// several arrays indexed in lock-step
// The dispatch to the ADX entry points is `unsafe` (target features); each block says why the
// features are present. All other code here is safe.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use super::integer::addmul_1;
use super::{Integer, limbs_of};

pub(crate) const WINDOW: u32 = 5;

/// A row kernel: `r += a·b` over `r.len() == a.len()` limbs, returning the carry limb.
/// Implementations are constant time. A value of the type is the proof that the CPU can run it.
pub(crate) trait Kernel: Copy {
    fn addmul_1(self, r: &mut [u64], a: &[u64], b: u64) -> u64;

    /// `t[0..2L] = a·b` for `a`, `b` of `L` limbs (`t` zeroed first).
    #[inline(always)]
    fn mul_rows(self, t: &mut [u64], a: &[u64], b: &[u64]) {
        let l = a.len();
        t.fill(0);
        for i in 0..l {
            t[i + l] = self.addmul_1(&mut t[i..i + l], a, b[i]);
        }
    }

    /// The REDC rows: for each `i < L`, `t += q·N·2^(64i)` with `q = t[i]·n0 mod 2^64`, the
    /// row's carry parked in `t[i]` (which the row made zero).
    #[inline(always)]
    fn redc_rows(self, t: &mut [u64], n: &[u64], n0: u64) {
        let l = n.len();
        for i in 0..l {
            let q = t[i].wrapping_mul(n0);
            let c = self.addmul_1(&mut t[i..i + l], n, q);
            t[i] = c;
        }
    }

    /// As [`Self::redc_rows`], also writing each row's `q` to `q[i]`: afterwards
    /// `q = t·(−N^{−1}) mod R` for the `t` on entry.
    #[inline(always)]
    fn redc_rows_q(self, t: &mut [u64], n: &[u64], n0: u64, q: &mut [u64]) {
        let l = n.len();
        for i in 0..l {
            let qi = t[i].wrapping_mul(n0);
            q[i] = qi;
            let c = self.addmul_1(&mut t[i..i + l], n, qi);
            t[i] = c;
        }
    }

    /// `t[0..2L] = a²` for `a` of `L` limbs (`t` of `2L` limbs, overwritten).
    #[inline(always)]
    fn sqr_rows(self, t: &mut [u64], a: &[u64]) {
        sqr_rows_generic(self, t, a);
    }

    /// `r = a − b` over equal lengths, returning the borrow.
    #[inline(always)]
    fn sub_n(self, r: &mut [u64], a: &[u64], b: &[u64]) -> u64 {
        let mut borrow = 0u64;
        for ((x, &y), &z) in r.iter_mut().zip(a).zip(b) {
            let (d, b1) = y.overflowing_sub(z);
            let (d, b2) = d.overflowing_sub(borrow);
            *x = d;
            borrow = u64::from(b1 | b2);
        }
        borrow
    }

    /// `t = 2t + u + cin` over equal lengths (`cin ∈ {0, 1}`), returning what overflows
    /// (0, 1 or 2).
    #[inline(always)]
    fn double_add_n(self, t: &mut [u64], u: &[u64], cin: u64) -> u64 {
        double_add_u128(t, u, cin)
    }

    /// `t = t + u + w + cin` over equal lengths (`cin ∈ {0, 1}`), returning what overflows
    /// (0, 1 or 2).
    #[inline(always)]
    fn add2_n(self, t: &mut [u64], u: &[u64], w: &[u64], cin: u64) -> u64 {
        add2_u128(t, u, w, cin)
    }

    /// `out = a + b` and `d = out + nm + 1` (that is `out − m` for `nm = !m`) over equal
    /// lengths, returning the carries of both (the second is 1 when `out ≥ m`, ignoring the
    /// first sum's carry).
    #[inline(always)]
    fn add_sub_n(
        self,
        out: &mut [u64],
        d: &mut [u64],
        a: &[u64],
        b: &[u64],
        nm: &[u64],
    ) -> (u64, u64) {
        add_sub_u128(out, d, a, b, nm)
    }
}

/// `t[0..2L] = a²` over any kernel: the off-diagonal products `a[i]·a[j]` (`i < j`) once, one
/// `addmul_1` row per `i`, then the triangle doubled and the squares `a[i]²` added.
#[inline(always)]
fn sqr_rows_generic<K: Kernel>(k: K, t: &mut [u64], a: &[u64]) {
    let l = a.len();
    t.fill(0);
    for i in 0..l.saturating_sub(1) {
        t[i + l] = k.addmul_1(&mut t[2 * i + 1..i + l], &a[i + 1..l], a[i]);
    }
    let mut c = 0u64;
    for w in t.iter_mut() {
        let nw = (*w << 1) | c;
        c = *w >> 63;
        *w = nw;
    }
    let mut carry = 0u64;
    for i in 0..l {
        let sq = u128::from(a[i]) * u128::from(a[i]);
        let s0 = u128::from(t[2 * i]) + u128::from(sq as u64) + u128::from(carry);
        t[2 * i] = s0 as u64;
        let s1 = u128::from(t[2 * i + 1]) + (sq >> 64) + (s0 >> 64);
        t[2 * i + 1] = s1 as u64;
        carry = (s1 >> 64) as u64;
    }
}

/// [`Kernel::double_add_n`] on `u128` arithmetic.
#[inline(always)]
fn double_add_u128(t: &mut [u64], u: &[u64], cin: u64) -> u64 {
    let mut carry = u128::from(cin);
    for (x, &y) in t.iter_mut().zip(u) {
        let v = (u128::from(*x) << 1) + u128::from(y) + carry;
        *x = v as u64;
        carry = v >> 64;
    }
    carry as u64
}

/// [`Kernel::add2_n`] on `u128` arithmetic.
#[inline(always)]
fn add2_u128(t: &mut [u64], u: &[u64], w: &[u64], cin: u64) -> u64 {
    let mut carry = u128::from(cin);
    for ((x, &y), &z) in t.iter_mut().zip(u).zip(w) {
        let v = u128::from(*x) + u128::from(y) + u128::from(z) + carry;
        *x = v as u64;
        carry = v >> 64;
    }
    carry as u64
}

/// [`Kernel::add_sub_n`] on `u128` arithmetic.
#[inline(always)]
fn add_sub_u128(out: &mut [u64], d: &mut [u64], a: &[u64], b: &[u64], nm: &[u64]) -> (u64, u64) {
    let (mut c1, mut c2) = (0u64, 1u64);
    for i in 0..out.len() {
        let v = u128::from(a[i]) + u128::from(b[i]) + u128::from(c1);
        out[i] = v as u64;
        c1 = (v >> 64) as u64;
        let w = u128::from(v as u64) + u128::from(nm[i]) + u128::from(c2);
        d[i] = w as u64;
        c2 = (w >> 64) as u64;
    }
    (c1, c2)
}

/// The `u128` kernel.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Kernel for Portable {
    #[inline(always)]
    fn addmul_1(self, r: &mut [u64], a: &[u64], b: u64) -> u64 {
        addmul_1(r, a, b)
    }
}

obliv_cpu::feature_set! {
    /// The `mulx`/`adcx`/`adox` kernel's entry points.
    pub(crate) mod adx_set = ["bmi2", "adx"];
}

#[cfg(obliv_x86_simd)]
pub(crate) use adx::Adx;

#[cfg(obliv_x86_simd)]
mod adx {
    #![allow(unsafe_code)]
    use super::{Kernel, MontFixedBase, Monty};
    use crate::bigint::Integer;

    crate::bigint::monty::adx_set::enable! {
        /// [`Monty::pow_with`] compiled for BMI2 + ADX.
        pub(super) unsafe fn pow(m: &Monty, k: Adx, base: &[u64], e: &[u64], e_bits: u32) -> Vec<u64> {
            m.pow_with(k, base, e, e_bits)
        }
        /// [`MontFixedBase::pow_with`] compiled for BMI2 + ADX.
        pub(super) unsafe fn fixed_pow(t: &MontFixedBase, k: Adx, e: &[u64]) -> Vec<u64> {
            t.pow_with(k, e)
        }
        /// [`Monty::mul_plain_with`] compiled for BMI2 + ADX.
        pub(super) unsafe fn mul_plain(m: &Monty, k: Adx, a: &[u64], b: &[u64]) -> Vec<u64> {
            m.mul_plain_with(k, a, b)
        }
        /// [`Monty::reduce_with`] compiled for BMI2 + ADX.
        pub(super) unsafe fn reduce(m: &Monty, k: Adx, x: &Integer) -> Vec<u64> {
            m.reduce_with(k, x)
        }
    }

    /// The `mulx`/`adcx`/`adox` kernel; only [`Adx::detect`] makes one.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Adx(());

    impl Adx {
        /// The kernel, if the CPU has BMI2 and ADX.
        pub(crate) fn detect() -> Option<Self> {
            super::adx_set::detected().then_some(Self(()))
        }
    }

    impl Kernel for Adx {
        #[inline(always)]
        fn addmul_1(self, r: &mut [u64], a: &[u64], b: u64) -> u64 {
            assert_eq!(r.len(), a.len());
            // The assembly takes multiples of four limbs; the last 0–3 continue in u128 with
            // its carry (same value, one carry chain).
            let n4 = a.len() & !3;
            let mut carry = 0u64;
            if n4 > 0 {
                // SAFETY: `self` exists only when `detected()` confirmed BMI2 (mulx) and ADX
                // (adcx, adox); both pointers are valid for `n4 ≤ len` limbs and the loop
                // touches exactly indices 0..n4 of each.
                carry = unsafe { addmul_4k_asm(r.as_mut_ptr(), a.as_ptr(), n4, b) };
            }
            for (ri, &ai) in r[n4..].iter_mut().zip(&a[n4..]) {
                let t = u128::from(ai) * u128::from(b) + u128::from(*ri) + u128::from(carry);
                *ri = t as u64;
                carry = (t >> 64) as u64;
            }
            carry
        }

        #[inline(always)]
        fn mul_rows(self, t: &mut [u64], a: &[u64], b: &[u64]) {
            let l = a.len();
            assert!(b.len() == l && t.len() == 2 * l);
            // Row i adds into t[i..i+L] and assigns its carry to t[i+L], so only t[0..L] is
            // read before it is written.
            t[..l].fill(0);
            if l == 0 || !l.is_multiple_of(4) {
                for i in 0..l {
                    t[i + l] = self.addmul_1(&mut t[i..i + l], a, b[i]);
                }
                return;
            }
            // SAFETY: BMI2 and ADX are present (`self` exists); `t` has 2L limbs, `a` and `b`
            // L, with L a positive multiple of 4: row i touches t[i..=i+L], a[0..L], b[i].
            unsafe {
                if l == 16 {
                    mul_rows16_asm(t.as_mut_ptr(), a.as_ptr(), b.as_ptr());
                } else {
                    mul_rows_asm(t.as_mut_ptr(), a.as_ptr(), b.as_ptr(), l);
                }
            }
        }

        #[inline(always)]
        fn redc_rows(self, t: &mut [u64], n: &[u64], n0: u64) {
            let l = n.len();
            assert!(t.len() == 2 * l);
            if l == 0 || !l.is_multiple_of(4) {
                for i in 0..l {
                    let q = t[i].wrapping_mul(n0);
                    let c = self.addmul_1(&mut t[i..i + l], n, q);
                    t[i] = c;
                }
                return;
            }
            // SAFETY: as in `mul_rows`: row i touches t[i..i+L] and n[0..L].
            unsafe {
                if l == 16 {
                    redc_rows16_asm(t.as_mut_ptr(), n.as_ptr(), n0);
                } else {
                    redc_rows_asm(t.as_mut_ptr(), n.as_ptr(), l, n0);
                }
            }
        }

        #[inline(always)]
        fn sub_n(self, r: &mut [u64], a: &[u64], b: &[u64]) -> u64 {
            assert!(r.len() == a.len() && r.len() == b.len() && !r.is_empty());
            // SAFETY: three valid buffers of `len` limbs.
            unsafe { sub_n_asm(r.as_mut_ptr(), a.as_ptr(), b.as_ptr(), r.len()) }
        }

        #[inline(always)]
        fn double_add_n(self, t: &mut [u64], u: &[u64], cin: u64) -> u64 {
            assert!(t.len() == u.len());
            if t.is_empty() || !t.len().is_multiple_of(4) {
                return super::double_add_u128(t, u, cin);
            }
            // 2t + u = t + t + u: the same loop with `t` as its first addend too (limb i is read
            // from both before it is written).
            let tp = t.as_mut_ptr();
            // SAFETY: both buffers valid for `len` limbs, a positive multiple of 4.
            unsafe { two_chain_asm(tp, tp, u.as_ptr(), t.len(), cin) }
        }

        #[inline(always)]
        fn add2_n(self, t: &mut [u64], u: &[u64], w: &[u64], cin: u64) -> u64 {
            assert!(t.len() == u.len() && t.len() == w.len());
            if t.is_empty() || !t.len().is_multiple_of(4) {
                return super::add2_u128(t, u, w, cin);
            }
            // SAFETY: three buffers valid for `len` limbs, a positive multiple of 4.
            unsafe { two_chain_asm(t.as_mut_ptr(), u.as_ptr(), w.as_ptr(), t.len(), cin) }
        }

        #[inline(always)]
        fn add_sub_n(
            self,
            out: &mut [u64],
            d: &mut [u64],
            a: &[u64],
            b: &[u64],
            nm: &[u64],
        ) -> (u64, u64) {
            let n = out.len();
            assert!(d.len() == n && a.len() == n && b.len() == n && nm.len() == n);
            if n == 0 || !n.is_multiple_of(4) {
                return super::add_sub_u128(out, d, a, b, nm);
            }
            let (c1, c2): (u64, u64);
            // SAFETY: five buffers valid for `n` limbs, `n` a positive multiple of 4; accesses
            // at `end + 8·i`, i ∈ [−n, −1]. Two carry chains: CF (adcx) for a + b, OF (adox,
            // set to 1 first) for out + nm; four limbs per round.
            unsafe {
                core::arch::asm!(
                    "mov {x:e}, 0x7f",
                    "add {x:l}, 1", // OF = 1, CF = 0
                    "2:",
                    "mov {x}, qword ptr [{ap} + 8*rcx]",
                    "adcx {x}, qword ptr [{bp} + 8*rcx]",
                    "mov qword ptr [{op} + 8*rcx], {x}",
                    "adox {x}, qword ptr [{mp} + 8*rcx]",
                    "mov qword ptr [{dp} + 8*rcx], {x}",
                    "mov {x}, qword ptr [{ap} + 8*rcx + 8]",
                    "adcx {x}, qword ptr [{bp} + 8*rcx + 8]",
                    "mov qword ptr [{op} + 8*rcx + 8], {x}",
                    "adox {x}, qword ptr [{mp} + 8*rcx + 8]",
                    "mov qword ptr [{dp} + 8*rcx + 8], {x}",
                    "mov {x}, qword ptr [{ap} + 8*rcx + 16]",
                    "adcx {x}, qword ptr [{bp} + 8*rcx + 16]",
                    "mov qword ptr [{op} + 8*rcx + 16], {x}",
                    "adox {x}, qword ptr [{mp} + 8*rcx + 16]",
                    "mov qword ptr [{dp} + 8*rcx + 16], {x}",
                    "mov {x}, qword ptr [{ap} + 8*rcx + 24]",
                    "adcx {x}, qword ptr [{bp} + 8*rcx + 24]",
                    "mov qword ptr [{op} + 8*rcx + 24], {x}",
                    "adox {x}, qword ptr [{mp} + 8*rcx + 24]",
                    "mov qword ptr [{dp} + 8*rcx + 24], {x}",
                    "lea rcx, [rcx + 4]",
                    "jrcxz 3f",
                    "jmp 2b",
                    "3:",
                    "mov {c1:e}, 0",
                    "adcx {c1}, {c1}",
                    "mov {c2:e}, 0",
                    "adox {c2}, {c2}",
                    ap = in(reg) a.as_ptr().add(n),
                    bp = in(reg) b.as_ptr().add(n),
                    mp = in(reg) nm.as_ptr().add(n),
                    op = in(reg) out.as_mut_ptr().add(n),
                    dp = in(reg) d.as_mut_ptr().add(n),
                    inout("rcx") n.wrapping_neg() => _,
                    x = out(reg) _,
                    c1 = out(reg) c1,
                    c2 = out(reg) c2,
                    options(nostack),
                );
            }
            (c1, c2)
        }

        #[inline(always)]
        fn redc_rows_q(self, t: &mut [u64], n: &[u64], n0: u64, q: &mut [u64]) {
            let l = n.len();
            assert!(t.len() == 2 * l && q.len() == l);
            if l == 0 || !l.is_multiple_of(4) {
                for i in 0..l {
                    let qi = t[i].wrapping_mul(n0);
                    q[i] = qi;
                    let c = self.addmul_1(&mut t[i..i + l], n, qi);
                    t[i] = c;
                }
                return;
            }
            // SAFETY: as in `redc_rows`, and row i writes q[i] (q has L limbs).
            unsafe {
                if l == 16 {
                    redc_rows_q16_asm(t.as_mut_ptr(), n.as_ptr(), n0, q.as_mut_ptr());
                } else {
                    redc_rows_q_asm(t.as_mut_ptr(), n.as_ptr(), l, n0, q.as_mut_ptr());
                }
            }
        }

        #[inline(always)]
        fn sqr_rows(self, t: &mut [u64], a: &[u64]) {
            let l = a.len();
            assert!(t.len() == 2 * l);
            if l == 0 || !l.is_multiple_of(4) {
                super::sqr_rows_generic(self, t, a);
                return;
            }
            // The triangle reads t[1..L] before writing it and writes t[L..2L] (row i's carry
            // lands in t[i+L] before any later row reads it); the diagonal pass reads t[0].
            t[..l].fill(0);
            // SAFETY: BMI2 and ADX are present (`self` exists); `t` has 2L limbs and `a` L,
            // with L a positive multiple of 4: row i of the triangle touches t[2i+1..=i+L] and
            // a[i..L], the diagonal pass t[0..2L] and a[0..L].
            unsafe {
                if l == 16 {
                    sqr_triangle16_asm(t.as_mut_ptr(), a.as_ptr());
                } else {
                    sqr_triangle_asm(t.as_mut_ptr(), a.as_ptr(), l);
                }
                sqr_diag_asm(t.as_mut_ptr(), a.as_ptr(), l);
            }
        }
    }

    /// The off-diagonal triangle of a square: for each `i < l`, `t[2i+1..i+l] += a[i]·a[i+1..l]`
    /// and `t[i+l] = carry` (`t` of `2l` limbs with `t[1..l]` zero on entry, `t[l..2l]` written
    /// before it is read; `l` a positive multiple of 4).
    ///
    /// Row `i` has `l−1−i` products, so the rows go by groups of four with 3, 2, 1 and 0
    /// leading products before the four-limb loop of [`addmul_4k_asm`] (two carry chains, CF
    /// for the high words and OF for the old `t[j]`). Within row `i`, source `a[j]` and
    /// destination `t[i+j]` are both at `8·(j−l)` bytes from their row's end pointer
    /// (`a + l`, `t + i + l`), so one index (rcx, counting up to 0) serves both. Every
    /// branch depends on `l` only.
    #[inline(always)]
    unsafe fn sqr_triangle_asm(t: *mut u64, a: *const u64, l: usize) {
        // SAFETY: the caller guarantees the CPU features and the buffer sizes.
        unsafe {
            core::arch::asm!(
                "2:",
                // row i = 4g: 3 leading products, then (l−4g−4)/4 loop rounds
                "mov rdx, qword ptr [{ip}]",
                "mov rcx, {neg}",
                "xor {h2:e}, {h2:e}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx]",
                "mov qword ptr [{tend} + 8*rcx], {lo}",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx + 8]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 8]",
                "mov qword ptr [{tend} + 8*rcx + 8], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 16]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 16]",
                "mov qword ptr [{tend} + 8*rcx + 16], {lo}",
                "lea rcx, [rcx + 3]",
                "3:",
                "jrcxz 4f",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx]",
                "mov qword ptr [{tend} + 8*rcx], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 8]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 8]",
                "mov qword ptr [{tend} + 8*rcx + 8], {lo}",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx + 16]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 16]",
                "mov qword ptr [{tend} + 8*rcx + 16], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 24]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 24]",
                "mov qword ptr [{tend} + 8*rcx + 24], {lo}",
                "lea rcx, [rcx + 4]",
                "jmp 3b",
                "4:",
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tend}], {hi}",
                "lea {ip}, [{ip} + 8]",
                "lea {tend}, [{tend} + 8]",
                "lea {neg}, [{neg} + 1]",
                // row i = 4g+1: 2 leading products, then (l−4g−4)/4 loop rounds
                "mov rdx, qword ptr [{ip}]",
                "mov rcx, {neg}",
                "xor {hi:e}, {hi:e}",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx]",
                "mov qword ptr [{tend} + 8*rcx], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 8]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 8]",
                "mov qword ptr [{tend} + 8*rcx + 8], {lo}",
                "lea rcx, [rcx + 2]",
                "5:",
                "jrcxz 6f",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx]",
                "mov qword ptr [{tend} + 8*rcx], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 8]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 8]",
                "mov qword ptr [{tend} + 8*rcx + 8], {lo}",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx + 16]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 16]",
                "mov qword ptr [{tend} + 8*rcx + 16], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 24]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 24]",
                "mov qword ptr [{tend} + 8*rcx + 24], {lo}",
                "lea rcx, [rcx + 4]",
                "jmp 5b",
                "6:",
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tend}], {hi}",
                "lea {ip}, [{ip} + 8]",
                "lea {tend}, [{tend} + 8]",
                "lea {neg}, [{neg} + 1]",
                // row i = 4g+2: 1 leading product, then (l−4g−4)/4 loop rounds
                "mov rdx, qword ptr [{ip}]",
                "mov rcx, {neg}",
                "xor {h2:e}, {h2:e}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx]",
                "mov qword ptr [{tend} + 8*rcx], {lo}",
                "lea rcx, [rcx + 1]",
                "7:",
                "jrcxz 8f",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx]",
                "mov qword ptr [{tend} + 8*rcx], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 8]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 8]",
                "mov qword ptr [{tend} + 8*rcx + 8], {lo}",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx + 16]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 16]",
                "mov qword ptr [{tend} + 8*rcx + 16], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 24]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 24]",
                "mov qword ptr [{tend} + 8*rcx + 24], {lo}",
                "lea rcx, [rcx + 4]",
                "jmp 7b",
                "8:",
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tend}], {hi}",
                "lea {ip}, [{ip} + 8]",
                "lea {tend}, [{tend} + 8]",
                "lea {neg}, [{neg} + 1]",
                // row i = 4g+3: 0 leading products, then (l−4g−4)/4 loop rounds
                "mov rdx, qword ptr [{ip}]",
                "mov rcx, {neg}",
                "xor {hi:e}, {hi:e}",
                "22:",
                "jrcxz 23f",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx]",
                "mov qword ptr [{tend} + 8*rcx], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 8]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 8]",
                "mov qword ptr [{tend} + 8*rcx + 8], {lo}",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx + 16]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 16]",
                "mov qword ptr [{tend} + 8*rcx + 16], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 24]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{tend} + 8*rcx + 24]",
                "mov qword ptr [{tend} + 8*rcx + 24], {lo}",
                "lea rcx, [rcx + 4]",
                "jmp 22b",
                "23:",
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tend}], {hi}",
                "lea {ip}, [{ip} + 8]",
                "lea {tend}, [{tend} + 8]",
                "lea {neg}, [{neg} + 1]",
                "cmp {ip}, {aend}",
                "jne 2b",
                ip = inout(reg) a => _,
                aend = in(reg) a.add(l),
                tend = inout(reg) t.add(l) => _,
                neg = inout(reg) 1isize - l as isize => _,
                hi = out(reg) _,
                h2 = out(reg) _,
                lo = out(reg) _,
                out("rcx") _,
                out("rdx") _,
                options(nostack),
            );
        }
    }

    /// `t = 2·t + Σ a[i]²·2^(128i)` over `2l` limbs (`l` a positive multiple of 4, the result
    /// below `2^(128l)`): one pass, `adcx t,t` doubling on the CF chain, the squares (`mulx`)
    /// added on the OF chain. The index (rcx) runs from `−2l` to 0 by two limbs of `t` per
    /// limb of `a`.
    #[inline(always)]
    unsafe fn sqr_diag_asm(t: *mut u64, a: *const u64, l: usize) {
        // SAFETY: the caller guarantees the CPU features and the buffer sizes; accesses are
        // at `tend + 8·j` for `j ∈ [−2l, −1]` and `aend + 4·j` for even `j` in that range.
        unsafe {
            core::arch::asm!(
                "xor {lo:e}, {lo:e}",
                "2:",
                "mov rdx, qword ptr [{aend} + 4*rcx]",
                "mulx {hi}, {lo}, rdx",
                "mov {t0}, qword ptr [{tend} + 8*rcx]",
                "mov {t1}, qword ptr [{tend} + 8*rcx + 8]",
                "adcx {t0}, {t0}",
                "adcx {t1}, {t1}",
                "adox {t0}, {lo}",
                "adox {t1}, {hi}",
                "mov qword ptr [{tend} + 8*rcx], {t0}",
                "mov qword ptr [{tend} + 8*rcx + 8], {t1}",
                "mov rdx, qword ptr [{aend} + 4*rcx + 8]",
                "mulx {hi}, {lo}, rdx",
                "mov {t0}, qword ptr [{tend} + 8*rcx + 16]",
                "mov {t1}, qword ptr [{tend} + 8*rcx + 24]",
                "adcx {t0}, {t0}",
                "adcx {t1}, {t1}",
                "adox {t0}, {lo}",
                "adox {t1}, {hi}",
                "mov qword ptr [{tend} + 8*rcx + 16], {t0}",
                "mov qword ptr [{tend} + 8*rcx + 24], {t1}",
                "lea rcx, [rcx + 4]",
                "jrcxz 3f",
                "jmp 2b",
                "3:",
                aend = in(reg) a.add(l),
                tend = in(reg) t.add(2 * l),
                inout("rcx") (2 * l).wrapping_neg() => _,
                hi = out(reg) _,
                lo = out(reg) _,
                t0 = out(reg) _,
                t1 = out(reg) _,
                out("rdx") _,
                options(nostack),
            );
        }
    }

    /// One product of an unrolled row: `lo(m[moff]·rdx)` plus the previous high word `$src`
    /// (CF chain, `adcx`) plus the old `t[toff]` (OF chain, `adox`) into `t[toff]`, the new high
    /// word into `$dst` (byte offsets; `{tp}`/`{t}` is `t`).
    macro_rules! row_step {
        ($dst:literal, $src:literal, $m:literal, $moff:literal, $toff:literal) => {
            concat!(
                "mulx ",
                $dst,
                ", {lo}, qword ptr [",
                $m,
                " + ",
                $moff,
                "]\n",
                "adcx {lo}, ",
                $src,
                "\n",
                "adox {lo}, qword ptr [{tp} + ",
                $toff,
                "]\n",
                "mov qword ptr [{tp} + ",
                $toff,
                "], {lo}\n",
            )
        };
    }

    /// A whole 16-limb row, unrolled: `t[0..16] += m[0..16]·rdx` over both carry chains
    /// (cleared first), the row's carry left in `{hi}`. The 16-limb kernels below are the
    /// loop kernels with their four-limb inner loop written out: on AMD Zen 3 the loop and its
    /// row set-up cost as much as the products (about 1.7× slower rows), on the Intel cores
    /// measured little.
    macro_rules! row16 {
        ($m:literal) => {
            concat!(
                "xor {hi:e}, {hi:e}\n",
                row_step!("{h2}", "{hi}", $m, 0, 0),
                row_step!("{hi}", "{h2}", $m, 8, 8),
                row_step!("{h2}", "{hi}", $m, 16, 16),
                row_step!("{hi}", "{h2}", $m, 24, 24),
                row_step!("{h2}", "{hi}", $m, 32, 32),
                row_step!("{hi}", "{h2}", $m, 40, 40),
                row_step!("{h2}", "{hi}", $m, 48, 48),
                row_step!("{hi}", "{h2}", $m, 56, 56),
                row_step!("{h2}", "{hi}", $m, 64, 64),
                row_step!("{hi}", "{h2}", $m, 72, 72),
                row_step!("{h2}", "{hi}", $m, 80, 80),
                row_step!("{hi}", "{h2}", $m, 88, 88),
                row_step!("{h2}", "{hi}", $m, 96, 96),
                row_step!("{hi}", "{h2}", $m, 104, 104),
                row_step!("{h2}", "{hi}", $m, 112, 112),
                row_step!("{hi}", "{h2}", $m, 120, 120),
                "mov {lo:e}, 0\n",
                "adcx {hi}, {lo}\n",
                "adox {hi}, {lo}\n",
            )
        };
    }

    /// [`mul_rows_asm`] for `l = 16`, each row unrolled ([`row16!`]).
    #[inline(always)]
    unsafe fn mul_rows16_asm(t: *mut u64, a: *const u64, b: *const u64) {
        // SAFETY: the caller guarantees the CPU features and the buffer sizes (`t` 32 limbs,
        // `a` and `b` 16); row i touches t[i..=i+16], a[0..16] and b[i].
        unsafe {
            core::arch::asm!(
                "2:",
                "mov rdx, qword ptr [{bp}]",
                row16!("{a}"),
                "mov qword ptr [{tp} + 128], {hi}",
                "lea {tp}, [{tp} + 8]",
                "lea {bp}, [{bp} + 8]",
                "dec {cnt}",
                "jnz 2b",
                tp = inout(reg) t => _,
                bp = inout(reg) b => _,
                a = in(reg) a,
                cnt = inout(reg) 16usize => _,
                hi = out(reg) _,
                h2 = out(reg) _,
                lo = out(reg) _,
                out("rdx") _,
                options(nostack),
            );
        }
    }

    /// [`redc_rows_asm`] (and, with the `mov`/`lea` of the row multiplier as `$after_q`,
    /// [`redc_rows_q_asm`]) for `l = 16`, each row unrolled ([`row16!`]).
    macro_rules! redc_rows16 {
        ([$($after_q:literal),*], $($extra:tt)*) => {
            core::arch::asm!(
                "2:",
                "mov rdx, qword ptr [{tp}]",
                "imul rdx, {n0}",
                $($after_q,)*
                row16!("{n}"),
                "mov qword ptr [{tp}], {hi}",
                "lea {tp}, [{tp} + 8]",
                "dec {cnt}",
                "jnz 2b",
                $($extra)*
                cnt = inout(reg) 16usize => _,
                hi = out(reg) _,
                h2 = out(reg) _,
                lo = out(reg) _,
                out("rdx") _,
                options(nostack),
            )
        };
    }

    /// [`redc_rows_asm`] for `l = 16`.
    #[inline(always)]
    unsafe fn redc_rows16_asm(t: *mut u64, n: *const u64, n0: u64) {
        // SAFETY: the caller guarantees the CPU features and the buffer sizes (`t` 32 limbs,
        // `n` 16); row i touches t[i..i+16] and n[0..16].
        unsafe { redc_rows16!([], tp = inout(reg) t => _, n = in(reg) n, n0 = in(reg) n0,) }
    }

    /// [`redc_rows_q_asm`] for `l = 16`.
    #[inline(always)]
    unsafe fn redc_rows_q16_asm(t: *mut u64, n: *const u64, n0: u64, q: *mut u64) {
        // SAFETY: as in `redc_rows16_asm`, and row i writes q[i] (`q` 16 limbs).
        unsafe {
            redc_rows16!(
                ["mov qword ptr [{qp}], rdx", "lea {qp}, [{qp} + 8]"],
                tp = inout(reg) t => _,
                n = in(reg) n,
                n0 = in(reg) n0,
                qp = inout(reg) q => _,
            )
        }
    }

    /// [`sqr_triangle_asm`] for `l = 16`, unrolled: row `i` adds `a[i]·a[i+1..16]` into
    /// `t[2i+1..i+16]` and writes its carry to `t[i+16]` (same entry conditions).
    #[rustfmt::skip]
    #[inline(always)]
    unsafe fn sqr_triangle16_asm(t: *mut u64, a: *const u64) {
        // SAFETY: the caller guarantees the CPU features and the buffer sizes (`t` 32 limbs,
        // `a` 16).
        unsafe {
            core::arch::asm!(
                // row 0: a[0]·a[1..16] into t[1..16], carry to t[16]
                "mov rdx, qword ptr [{a} + 0]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 8, 8),
                row_step!("{hi}", "{h2}", "{a}", 16, 16),
                row_step!("{h2}", "{hi}", "{a}", 24, 24),
                row_step!("{hi}", "{h2}", "{a}", 32, 32),
                row_step!("{h2}", "{hi}", "{a}", 40, 40),
                row_step!("{hi}", "{h2}", "{a}", 48, 48),
                row_step!("{h2}", "{hi}", "{a}", 56, 56),
                row_step!("{hi}", "{h2}", "{a}", 64, 64),
                row_step!("{h2}", "{hi}", "{a}", 72, 72),
                row_step!("{hi}", "{h2}", "{a}", 80, 80),
                row_step!("{h2}", "{hi}", "{a}", 88, 88),
                row_step!("{hi}", "{h2}", "{a}", 96, 96),
                row_step!("{h2}", "{hi}", "{a}", 104, 104),
                row_step!("{hi}", "{h2}", "{a}", 112, 112),
                row_step!("{h2}", "{hi}", "{a}", 120, 120),
                "mov {lo:e}, 0",
                "adcx {h2}, {lo}",
                "adox {h2}, {lo}",
                "mov qword ptr [{tp} + 128], {h2}",
                // row 1: a[1]·a[2..16] into t[3..17], carry to t[17]
                "mov rdx, qword ptr [{a} + 8]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 16, 24),
                row_step!("{hi}", "{h2}", "{a}", 24, 32),
                row_step!("{h2}", "{hi}", "{a}", 32, 40),
                row_step!("{hi}", "{h2}", "{a}", 40, 48),
                row_step!("{h2}", "{hi}", "{a}", 48, 56),
                row_step!("{hi}", "{h2}", "{a}", 56, 64),
                row_step!("{h2}", "{hi}", "{a}", 64, 72),
                row_step!("{hi}", "{h2}", "{a}", 72, 80),
                row_step!("{h2}", "{hi}", "{a}", 80, 88),
                row_step!("{hi}", "{h2}", "{a}", 88, 96),
                row_step!("{h2}", "{hi}", "{a}", 96, 104),
                row_step!("{hi}", "{h2}", "{a}", 104, 112),
                row_step!("{h2}", "{hi}", "{a}", 112, 120),
                row_step!("{hi}", "{h2}", "{a}", 120, 128),
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tp} + 136], {hi}",
                // row 2: a[2]·a[3..16] into t[5..18], carry to t[18]
                "mov rdx, qword ptr [{a} + 16]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 24, 40),
                row_step!("{hi}", "{h2}", "{a}", 32, 48),
                row_step!("{h2}", "{hi}", "{a}", 40, 56),
                row_step!("{hi}", "{h2}", "{a}", 48, 64),
                row_step!("{h2}", "{hi}", "{a}", 56, 72),
                row_step!("{hi}", "{h2}", "{a}", 64, 80),
                row_step!("{h2}", "{hi}", "{a}", 72, 88),
                row_step!("{hi}", "{h2}", "{a}", 80, 96),
                row_step!("{h2}", "{hi}", "{a}", 88, 104),
                row_step!("{hi}", "{h2}", "{a}", 96, 112),
                row_step!("{h2}", "{hi}", "{a}", 104, 120),
                row_step!("{hi}", "{h2}", "{a}", 112, 128),
                row_step!("{h2}", "{hi}", "{a}", 120, 136),
                "mov {lo:e}, 0",
                "adcx {h2}, {lo}",
                "adox {h2}, {lo}",
                "mov qword ptr [{tp} + 144], {h2}",
                // row 3: a[3]·a[4..16] into t[7..19], carry to t[19]
                "mov rdx, qword ptr [{a} + 24]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 32, 56),
                row_step!("{hi}", "{h2}", "{a}", 40, 64),
                row_step!("{h2}", "{hi}", "{a}", 48, 72),
                row_step!("{hi}", "{h2}", "{a}", 56, 80),
                row_step!("{h2}", "{hi}", "{a}", 64, 88),
                row_step!("{hi}", "{h2}", "{a}", 72, 96),
                row_step!("{h2}", "{hi}", "{a}", 80, 104),
                row_step!("{hi}", "{h2}", "{a}", 88, 112),
                row_step!("{h2}", "{hi}", "{a}", 96, 120),
                row_step!("{hi}", "{h2}", "{a}", 104, 128),
                row_step!("{h2}", "{hi}", "{a}", 112, 136),
                row_step!("{hi}", "{h2}", "{a}", 120, 144),
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tp} + 152], {hi}",
                // row 4: a[4]·a[5..16] into t[9..20], carry to t[20]
                "mov rdx, qword ptr [{a} + 32]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 40, 72),
                row_step!("{hi}", "{h2}", "{a}", 48, 80),
                row_step!("{h2}", "{hi}", "{a}", 56, 88),
                row_step!("{hi}", "{h2}", "{a}", 64, 96),
                row_step!("{h2}", "{hi}", "{a}", 72, 104),
                row_step!("{hi}", "{h2}", "{a}", 80, 112),
                row_step!("{h2}", "{hi}", "{a}", 88, 120),
                row_step!("{hi}", "{h2}", "{a}", 96, 128),
                row_step!("{h2}", "{hi}", "{a}", 104, 136),
                row_step!("{hi}", "{h2}", "{a}", 112, 144),
                row_step!("{h2}", "{hi}", "{a}", 120, 152),
                "mov {lo:e}, 0",
                "adcx {h2}, {lo}",
                "adox {h2}, {lo}",
                "mov qword ptr [{tp} + 160], {h2}",
                // row 5: a[5]·a[6..16] into t[11..21], carry to t[21]
                "mov rdx, qword ptr [{a} + 40]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 48, 88),
                row_step!("{hi}", "{h2}", "{a}", 56, 96),
                row_step!("{h2}", "{hi}", "{a}", 64, 104),
                row_step!("{hi}", "{h2}", "{a}", 72, 112),
                row_step!("{h2}", "{hi}", "{a}", 80, 120),
                row_step!("{hi}", "{h2}", "{a}", 88, 128),
                row_step!("{h2}", "{hi}", "{a}", 96, 136),
                row_step!("{hi}", "{h2}", "{a}", 104, 144),
                row_step!("{h2}", "{hi}", "{a}", 112, 152),
                row_step!("{hi}", "{h2}", "{a}", 120, 160),
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tp} + 168], {hi}",
                // row 6: a[6]·a[7..16] into t[13..22], carry to t[22]
                "mov rdx, qword ptr [{a} + 48]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 56, 104),
                row_step!("{hi}", "{h2}", "{a}", 64, 112),
                row_step!("{h2}", "{hi}", "{a}", 72, 120),
                row_step!("{hi}", "{h2}", "{a}", 80, 128),
                row_step!("{h2}", "{hi}", "{a}", 88, 136),
                row_step!("{hi}", "{h2}", "{a}", 96, 144),
                row_step!("{h2}", "{hi}", "{a}", 104, 152),
                row_step!("{hi}", "{h2}", "{a}", 112, 160),
                row_step!("{h2}", "{hi}", "{a}", 120, 168),
                "mov {lo:e}, 0",
                "adcx {h2}, {lo}",
                "adox {h2}, {lo}",
                "mov qword ptr [{tp} + 176], {h2}",
                // row 7: a[7]·a[8..16] into t[15..23], carry to t[23]
                "mov rdx, qword ptr [{a} + 56]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 64, 120),
                row_step!("{hi}", "{h2}", "{a}", 72, 128),
                row_step!("{h2}", "{hi}", "{a}", 80, 136),
                row_step!("{hi}", "{h2}", "{a}", 88, 144),
                row_step!("{h2}", "{hi}", "{a}", 96, 152),
                row_step!("{hi}", "{h2}", "{a}", 104, 160),
                row_step!("{h2}", "{hi}", "{a}", 112, 168),
                row_step!("{hi}", "{h2}", "{a}", 120, 176),
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tp} + 184], {hi}",
                // row 8: a[8]·a[9..16] into t[17..24], carry to t[24]
                "mov rdx, qword ptr [{a} + 64]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 72, 136),
                row_step!("{hi}", "{h2}", "{a}", 80, 144),
                row_step!("{h2}", "{hi}", "{a}", 88, 152),
                row_step!("{hi}", "{h2}", "{a}", 96, 160),
                row_step!("{h2}", "{hi}", "{a}", 104, 168),
                row_step!("{hi}", "{h2}", "{a}", 112, 176),
                row_step!("{h2}", "{hi}", "{a}", 120, 184),
                "mov {lo:e}, 0",
                "adcx {h2}, {lo}",
                "adox {h2}, {lo}",
                "mov qword ptr [{tp} + 192], {h2}",
                // row 9: a[9]·a[10..16] into t[19..25], carry to t[25]
                "mov rdx, qword ptr [{a} + 72]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 80, 152),
                row_step!("{hi}", "{h2}", "{a}", 88, 160),
                row_step!("{h2}", "{hi}", "{a}", 96, 168),
                row_step!("{hi}", "{h2}", "{a}", 104, 176),
                row_step!("{h2}", "{hi}", "{a}", 112, 184),
                row_step!("{hi}", "{h2}", "{a}", 120, 192),
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tp} + 200], {hi}",
                // row 10: a[10]·a[11..16] into t[21..26], carry to t[26]
                "mov rdx, qword ptr [{a} + 80]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 88, 168),
                row_step!("{hi}", "{h2}", "{a}", 96, 176),
                row_step!("{h2}", "{hi}", "{a}", 104, 184),
                row_step!("{hi}", "{h2}", "{a}", 112, 192),
                row_step!("{h2}", "{hi}", "{a}", 120, 200),
                "mov {lo:e}, 0",
                "adcx {h2}, {lo}",
                "adox {h2}, {lo}",
                "mov qword ptr [{tp} + 208], {h2}",
                // row 11: a[11]·a[12..16] into t[23..27], carry to t[27]
                "mov rdx, qword ptr [{a} + 88]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 96, 184),
                row_step!("{hi}", "{h2}", "{a}", 104, 192),
                row_step!("{h2}", "{hi}", "{a}", 112, 200),
                row_step!("{hi}", "{h2}", "{a}", 120, 208),
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tp} + 216], {hi}",
                // row 12: a[12]·a[13..16] into t[25..28], carry to t[28]
                "mov rdx, qword ptr [{a} + 96]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 104, 200),
                row_step!("{hi}", "{h2}", "{a}", 112, 208),
                row_step!("{h2}", "{hi}", "{a}", 120, 216),
                "mov {lo:e}, 0",
                "adcx {h2}, {lo}",
                "adox {h2}, {lo}",
                "mov qword ptr [{tp} + 224], {h2}",
                // row 13: a[13]·a[14..16] into t[27..29], carry to t[29]
                "mov rdx, qword ptr [{a} + 104]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 112, 216),
                row_step!("{hi}", "{h2}", "{a}", 120, 224),
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tp} + 232], {hi}",
                // row 14: a[14]·a[15..16] into t[29..30], carry to t[30]
                "mov rdx, qword ptr [{a} + 112]",
                "xor {hi:e}, {hi:e}",
                row_step!("{h2}", "{hi}", "{a}", 120, 232),
                "mov {lo:e}, 0",
                "adcx {h2}, {lo}",
                "adox {h2}, {lo}",
                "mov qword ptr [{tp} + 240], {h2}",
                // row 15 has no products
                "mov qword ptr [{tp} + 248], 0",
                tp = in(reg) t,
                a = in(reg) a,
                hi = out(reg) _,
                h2 = out(reg) _,
                lo = out(reg) _,
                out("rdx") _,
                options(nostack),
            );
        }
    }

    /// The rows of a full product: for `i < l`, `t[i..i+l] += a·b[i]` and `t[i+l] = carry`
    /// (`t` zero on entry, `l` a positive multiple of 4). The row loop uses `dec`/`jnz`
    /// between rows, where no carry is live; the inner loop is `addmul_4k_asm`'s.
    #[inline(always)]
    unsafe fn mul_rows_asm(t: *mut u64, a: *const u64, b: *const u64, l: usize) {
        // SAFETY: the caller guarantees the CPU features and the buffer sizes.
        unsafe {
            core::arch::asm!(
                "2:",
                "mov rdx, qword ptr [{bp}]",
                "lea {rend}, [{tp} + {lbytes}]",
                "mov rcx, {lbytes}",
                "shr rcx, 3",
                "neg rcx",
                "xor {hi:e}, {hi:e}",
                "3:",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{rend} + 8*rcx]",
                "mov qword ptr [{rend} + 8*rcx], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 8]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{rend} + 8*rcx + 8]",
                "mov qword ptr [{rend} + 8*rcx + 8], {lo}",
                "mulx {h2}, {lo}, qword ptr [{aend} + 8*rcx + 16]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{rend} + 8*rcx + 16]",
                "mov qword ptr [{rend} + 8*rcx + 16], {lo}",
                "mulx {hi}, {lo}, qword ptr [{aend} + 8*rcx + 24]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{rend} + 8*rcx + 24]",
                "mov qword ptr [{rend} + 8*rcx + 24], {lo}",
                "lea rcx, [rcx + 4]",
                "jrcxz 4f",
                "jmp 3b",
                "4:",
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{rend}], {hi}",
                "lea {tp}, [{tp} + 8]",
                "lea {bp}, [{bp} + 8]",
                "dec {cnt}",
                "jnz 2b",
                tp = inout(reg) t => _,
                bp = inout(reg) b => _,
                aend = in(reg) a.add(l),
                lbytes = in(reg) 8 * l,
                cnt = inout(reg) l => _,
                rend = out(reg) _,
                hi = out(reg) _,
                h2 = out(reg) _,
                lo = out(reg) _,
                out("rcx") _,
                out("rdx") _,
                options(nostack),
            );
        }
    }

    /// The REDC row loop shared by [`redc_rows_asm`] and [`redc_rows_q_asm`]: the template
    /// lines after `imul` (storing the row's multiplier, or nothing) and their operands are
    /// the arguments.
    macro_rules! redc_rows_loop {
        ([$($after_q:literal),*], $($extra:tt)*) => {
            core::arch::asm!(
                "2:",
                "mov rdx, qword ptr [{tp}]",
                "imul rdx, {n0}",
                $($after_q,)*
                "lea {rend}, [{tp} + {lbytes}]",
                "mov rcx, {lbytes}",
                "shr rcx, 3",
                "neg rcx",
                "xor {hi:e}, {hi:e}",
                "3:",
                "mulx {h2}, {lo}, qword ptr [{nend} + 8*rcx]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{rend} + 8*rcx]",
                "mov qword ptr [{rend} + 8*rcx], {lo}",
                "mulx {hi}, {lo}, qword ptr [{nend} + 8*rcx + 8]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{rend} + 8*rcx + 8]",
                "mov qword ptr [{rend} + 8*rcx + 8], {lo}",
                "mulx {h2}, {lo}, qword ptr [{nend} + 8*rcx + 16]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{rend} + 8*rcx + 16]",
                "mov qword ptr [{rend} + 8*rcx + 16], {lo}",
                "mulx {hi}, {lo}, qword ptr [{nend} + 8*rcx + 24]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{rend} + 8*rcx + 24]",
                "mov qword ptr [{rend} + 8*rcx + 24], {lo}",
                "lea rcx, [rcx + 4]",
                "jrcxz 4f",
                "jmp 3b",
                "4:",
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                "mov qword ptr [{tp}], {hi}",
                "lea {tp}, [{tp} + 8]",
                "dec {cnt}",
                "jnz 2b",
                $($extra)*
                rend = out(reg) _,
                hi = out(reg) _,
                h2 = out(reg) _,
                lo = out(reg) _,
                out("rcx") _,
                out("rdx") _,
                options(nostack),
            )
        };
    }

    /// The REDC rows (see [`Kernel::redc_rows`]) for `l` a positive multiple of 4.
    #[inline(always)]
    unsafe fn redc_rows_asm(t: *mut u64, n: *const u64, l: usize, n0: u64) {
        // SAFETY: the caller guarantees the CPU features and the buffer sizes.
        unsafe {
            redc_rows_loop!(
                [],
                tp = inout(reg) t => _,
                nend = in(reg) n.add(l),
                lbytes = in(reg) 8 * l,
                n0 = in(reg) n0,
                cnt = inout(reg) l => _,
            );
        }
    }

    /// [`redc_rows_asm`] that also stores row `i`'s multiplier in `q[i]` (`q`: `l` limbs).
    #[inline(always)]
    unsafe fn redc_rows_q_asm(t: *mut u64, n: *const u64, l: usize, n0: u64, q: *mut u64) {
        // SAFETY: the caller guarantees the CPU features and the buffer sizes.
        unsafe {
            redc_rows_loop!(
                ["mov qword ptr [{qp}], rdx", "lea {qp}, [{qp} + 8]"],
                tp = inout(reg) t => _,
                nend = in(reg) n.add(l),
                lbytes = in(reg) 8 * l,
                n0 = in(reg) n0,
                cnt = inout(reg) l => _,
                qp = inout(reg) q => _,
            );
        }
    }

    /// Two carry chains over `n` limbs, `n` a positive multiple of 4 (four per round),
    /// returning what overflows (0, 1 or 2): `t = t + u + w + cin` (CF chain: `+ u`; OF
    /// chain: `+ w`); `u` may be `t` (limb i is read from both before it is written). OF
    /// starts at `cin`, CF at 0 (an 8-bit `0x7f + cin` sets exactly that); `lea` and `jrcxz`
    /// leave both flags alone.
    #[inline(always)]
    unsafe fn two_chain_asm(t: *mut u64, u: *const u64, w: *const u64, n: usize, cin: u64) -> u64 {
        let (c1, c2): (u64, u64);
        // SAFETY: the caller guarantees `n` valid limbs behind each pointer, `n` a positive
        // multiple of 4; accesses are at `end + 8·i` for `i ∈ [−n, −1]`.
        unsafe {
            core::arch::asm!(
                "mov {x:e}, 0x7f",
                "add {x:l}, {c:l}",
                "2:",
                "mov {x}, qword ptr [{tp} + 8*rcx]",
                "adcx {x}, qword ptr [{up} + 8*rcx]",
                "adox {x}, qword ptr [{wp} + 8*rcx]",
                "mov qword ptr [{tp} + 8*rcx], {x}",
                "mov {x}, qword ptr [{tp} + 8*rcx + 8]",
                "adcx {x}, qword ptr [{up} + 8*rcx + 8]",
                "adox {x}, qword ptr [{wp} + 8*rcx + 8]",
                "mov qword ptr [{tp} + 8*rcx + 8], {x}",
                "mov {x}, qword ptr [{tp} + 8*rcx + 16]",
                "adcx {x}, qword ptr [{up} + 8*rcx + 16]",
                "adox {x}, qword ptr [{wp} + 8*rcx + 16]",
                "mov qword ptr [{tp} + 8*rcx + 16], {x}",
                "mov {x}, qword ptr [{tp} + 8*rcx + 24]",
                "adcx {x}, qword ptr [{up} + 8*rcx + 24]",
                "adox {x}, qword ptr [{wp} + 8*rcx + 24]",
                "mov qword ptr [{tp} + 8*rcx + 24], {x}",
                "lea rcx, [rcx + 4]",
                "jrcxz 3f",
                "jmp 2b",
                "3:",
                "mov {c:e}, 0",
                "adcx {c}, {c}",
                "mov {o:e}, 0",
                "adox {o}, {o}",
                tp = in(reg) t.add(n),
                up = in(reg) u.add(n),
                wp = in(reg) w.add(n),
                inout("rcx") n.wrapping_neg() => _,
                x = out(reg) _,
                c = inout(reg) cin => c1,
                o = out(reg) c2,
                options(nostack),
            );
        }
        c1 + c2
    }

    /// `r = a − b` over `n ≥ 1` limbs, returning the borrow; `r` may be `a` or `b` (limb i
    /// of both is read before limb i of `r` is written). The index counts from `−n` up to 0
    /// with `inc`, which leaves CF alone.
    #[inline(always)]
    unsafe fn sub_n_asm(r: *mut u64, a: *const u64, b: *const u64, n: usize) -> u64 {
        let borrow: u64;
        // SAFETY: the caller guarantees `n ≥ 1` valid limbs behind each pointer; accesses are
        // at `end + 8·i` for `i ∈ [−n, −1]`.
        unsafe {
            core::arch::asm!(
                "clc",
                "2:",
                "mov {x}, qword ptr [{ap} + 8*rcx]",
                "sbb {x}, qword ptr [{bp} + 8*rcx]",
                "mov qword ptr [{rp} + 8*rcx], {x}",
                "inc rcx",
                "jnz 2b",
                "mov {c:e}, 0",
                "adc {c}, 0",
                ap = in(reg) a.add(n),
                bp = in(reg) b.add(n),
                rp = in(reg) r.add(n),
                inout("rcx") n.wrapping_neg() => _,
                c = out(reg) borrow,
                x = out(reg) _,
                options(nostack),
            );
        }
        borrow
    }

    /// `r[0..n] += a[0..n]·b`, returns the carry; `n` a positive multiple of 4. Two carry
    /// chains: CF (adcx) adds the previous high word to the low word, OF (adox) adds the old
    /// `r[j]`; the index counts from `−n` up to 0 with `lea` and `jrcxz`, which leave both flags
    /// alone.
    #[inline(always)]
    unsafe fn addmul_4k_asm(r: *mut u64, a: *const u64, n: usize, b: u64) -> u64 {
        let carry: u64;
        // SAFETY: the caller guarantees the CPU features and `n` valid limbs behind each
        // pointer; the pointers passed point one past the end and every access is at
        // `end + 8·i` for `i ∈ [−n, −1]`.
        unsafe {
            core::arch::asm!(
                "xor {hi:e}, {hi:e}",
                "2:",
                "mulx {h2}, {lo}, qword ptr [{ap} + 8*rcx]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{rp} + 8*rcx]",
                "mov qword ptr [{rp} + 8*rcx], {lo}",
                "mulx {hi}, {lo}, qword ptr [{ap} + 8*rcx + 8]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{rp} + 8*rcx + 8]",
                "mov qword ptr [{rp} + 8*rcx + 8], {lo}",
                "mulx {h2}, {lo}, qword ptr [{ap} + 8*rcx + 16]",
                "adcx {lo}, {hi}",
                "adox {lo}, qword ptr [{rp} + 8*rcx + 16]",
                "mov qword ptr [{rp} + 8*rcx + 16], {lo}",
                "mulx {hi}, {lo}, qword ptr [{ap} + 8*rcx + 24]",
                "adcx {lo}, {h2}",
                "adox {lo}, qword ptr [{rp} + 8*rcx + 24]",
                "mov qword ptr [{rp} + 8*rcx + 24], {lo}",
                "lea rcx, [rcx + 4]",
                "jrcxz 3f",
                "jmp 2b",
                "3:",
                "mov {lo:e}, 0",
                "adcx {hi}, {lo}",
                "adox {hi}, {lo}",
                ap = in(reg) a.add(n),
                rp = in(reg) r.add(n),
                inout("rcx") n.wrapping_neg() => _,
                in("rdx") b,
                hi = out(reg) carry,
                h2 = out(reg) _,
                lo = out(reg) _,
                options(nostack),
            );
        }
        carry
    }
}

/// Set by [`force_portable`]: new contexts use the `u128` kernel even when ADX is present.
static FORCE_PORTABLE: AtomicBool = AtomicBool::new(false);

/// Makes Montgomery contexts created afterwards use the portable `u128` kernel (`true`) or
/// the best kernel the CPU has (`false`, the default). For benchmarks and tests.
pub(crate) fn force_portable(on: bool) {
    FORCE_PORTABLE.store(on, Ordering::Relaxed);
}

/// Which kernel a context runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Backend {
    /// `u128` multiply-accumulate.
    Portable,
    /// BMI2 + ADX assembly.
    #[cfg(obliv_x86_simd)]
    Adx(Adx),
}

impl Backend {
    /// The best kernel for this CPU (unless [`force_portable`] is on).
    pub(crate) fn detect() -> Self {
        #[cfg(obliv_x86_simd)]
        if !FORCE_PORTABLE.load(Ordering::Relaxed)
            && let Some(k) = Adx::detect()
        {
            return Self::Adx(k);
        }
        Self::Portable
    }

    /// Whether this is the assembly kernel.
    #[cfg(test)]
    pub(crate) fn is_adx(self) -> bool {
        !matches!(self, Self::Portable)
    }
}

/// Whether the CPU has what the ADX kernel needs (always false when it is compiled out).
#[cfg(test)]
pub(crate) fn adx_available() -> bool {
    adx_set::detected()
}

/// Montgomery context for one odd modulus `N > 1`.
#[derive(Clone)]
pub(crate) struct Monty {
    n: Vec<u64>,
    /// `−N^{−1} mod 2^64`.
    n0: u64,
    /// `R² mod N`.
    r2: Vec<u64>,
    /// `R mod N` (the Montgomery form of 1).
    one: Vec<u64>,
    backend: Backend,
}

impl Drop for Monty {
    fn drop(&mut self) {
        // The modulus may be secret (p², q²).
        self.n.zeroize();
        self.r2.zeroize();
        self.one.zeroize();
        self.n0.zeroize();
    }
}

/// Bits `[pos, pos + WINDOW)` of the little-endian limbs `e` (public positions).
fn window_digit(e: &[u64], pos: u32) -> u32 {
    let mut d = 0u32;
    for k in 0..WINDOW {
        let i = (pos + k) as usize;
        if let Some(w) = e.get(i / 64) {
            d |= (((w >> (i % 64)) & 1) as u32) << k;
        }
    }
    d
}

/// `out = table[d]` for entries of `out.len()` limbs, reading every entry.
fn ct_select(out: &mut [u64], table: &[u64], d: u32) {
    let l = out.len();
    out.fill(0);
    for (j, entry) in (0u32..).zip(table.chunks_exact(l)) {
        let mask = super::ct_mask(u64::from(j.ct_eq(&d).unwrap_u8()));
        for (o, &t) in out.iter_mut().zip(entry) {
            *o |= t & mask;
        }
    }
}

/// The low `e_bits` bits of `e` as little-endian limbs (at least one limb).
pub(crate) fn exponent_limbs(e: &Integer, e_bits: u32) -> Vec<u64> {
    let mut el = limbs_of(e, e_bits.div_ceil(64).max(1) as usize);
    if !e_bits.is_multiple_of(64)
        && let Some(top) = el.last_mut()
    {
        *top &= (1u64 << (e_bits % 64)) - 1;
    }
    el
}

/// The fixed-window ladder over a built table of `2^WINDOW` entries of `len` limbs each:
/// `acc = table[top digit]`, then per lower window `WINDOW` squarings and a product with the
/// entry of its digit, each entry read by [`ct_select`]. `sqr(out, a, s)` and
/// `mul(out, a, b, s)` are the representation's operations on scratch `s`. Returns `acc`.
#[inline(always)]
pub(crate) fn window_ladder<S>(
    table: &[u64],
    len: usize,
    e: &[u64],
    e_bits: u32,
    s: &mut S,
    sqr: impl Fn(&mut [u64], &[u64], &mut S),
    mul: impl Fn(&mut [u64], &[u64], &[u64], &mut S),
) -> Vec<u64> {
    let windows = e_bits.div_ceil(WINDOW).max(1);
    let mut acc = vec![0u64; len];
    let mut tmp = vec![0u64; len];
    let mut sel = vec![0u64; len];
    ct_select(&mut acc, table, window_digit(e, (windows - 1) * WINDOW));
    for w in (0..windows - 1).rev() {
        for _ in 0..WINDOW {
            sqr(&mut tmp, &acc, s);
            core::mem::swap(&mut acc, &mut tmp);
        }
        ct_select(&mut sel, table, window_digit(e, w * WINDOW));
        mul(&mut tmp, &acc, &sel, s);
        core::mem::swap(&mut acc, &mut tmp);
    }
    tmp.zeroize();
    sel.zeroize();
    acc
}

impl Monty {
    /// The context for an odd `m > 1` (`None` otherwise), with the best kernel of this CPU.
    /// The setup is constant time in `m` (for secret moduli: `p`, `q`, `p²`, `q²`, prime
    /// candidates); see [`Self::with_backend`].
    pub(crate) fn new(m: &Integer) -> Option<Self> {
        Self::with_backend(m, Backend::detect())
    }

    /// The context for a **public** odd `m > 1` (`n²`, a MODP prime, the modulus of
    /// [`Integer::pow_mod`]): the same context as [`Self::new`], its constants computed with
    /// the faster variable-time division.
    pub(crate) fn new_public(m: &Integer) -> Option<Self> {
        Self::setup(m, Backend::detect(), false)
    }

    /// The context with a chosen kernel. `−N^{−1} mod 2^64` comes from Newton's iteration on
    /// the low limb and `R mod N`, `R² mod N` from [`super::ct_pow2_mod`], so the setup takes
    /// a time that depends on the limb count of `m` only.
    pub(crate) fn with_backend(m: &Integer, backend: Backend) -> Option<Self> {
        Self::setup(m, backend, true)
    }

    fn setup(m: &Integer, backend: Backend, secret: bool) -> Option<Self> {
        // The verdict is public (a secret modulus is an odd prime); it is computed without
        // short-circuiting on the modulus's parity.
        if obliv_cpu::ctgrind::declassify(m.is_negative() | m.is_even() | (*m <= 1u32)) {
            return None;
        }
        let n = m.as_limbs().to_vec();
        let l = n.len();
        // −N^{−1} mod 2^64 by Newton's iteration (x ← x·(2 − N·x) doubles the correct bits).
        let mut inv = 1u64;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(n[0].wrapping_mul(inv)));
        }
        let n0 = inv.wrapping_neg();
        let r_bits = u32::try_from(64 * l).ok()?;
        let (one, r2) = if secret {
            (
                super::ct_pow2_mod(r_bits, &n),
                super::ct_pow2_mod(r_bits.checked_mul(2)?, &n),
            )
        } else {
            let r = (Integer::from(1u32) << r_bits).modulo(m);
            let r2 = r.square().modulo(m);
            (limbs_of(&r, l), limbs_of(&r2, l))
        };
        Some(Self {
            one,
            r2,
            n,
            n0,
            backend,
        })
    }

    /// Limbs of the modulus.
    pub(crate) fn limbs(&self) -> usize {
        self.n.len()
    }

    /// The kernel in use.
    #[cfg(test)]
    pub(crate) fn backend(&self) -> Backend {
        self.backend
    }

    // --- limb-level core, generic over the kernel --------------------------------------------

    /// `t[0..2L] = a·b` (`a`, `b` of `L` limbs).
    #[inline(always)]
    fn mul_full<K: Kernel>(k: K, t: &mut [u64], a: &[u64], b: &[u64]) {
        k.mul_rows(t, a, b);
    }

    /// `t[0..2L] = a²`: off-diagonal products once, doubled, plus the squares.
    #[inline(always)]
    fn sqr_full<K: Kernel>(k: K, t: &mut [u64], a: &[u64]) {
        k.sqr_rows(t, a);
    }

    /// `out = t·R^{−1} mod N` for `t < N·R` held in `t[0..2L]` (destroyed).
    #[inline(always)]
    fn redc<K: Kernel>(&self, k: K, out: &mut [u64], t: &mut [u64]) {
        let l = self.n.len();
        super::ct_trace::note(super::ct_trace::REDC, l, 0);
        k.redc_rows(t, &self.n, self.n0);
        let mut carry = 0u64;
        for i in 0..l {
            let s = u128::from(t[l + i]) + u128::from(t[i]) + u128::from(carry);
            out[i] = s as u64;
            carry = (s >> 64) as u64;
        }
        // out + carry·R < 2N: subtract N once unless out < N (and no carry), by masks.
        let mut borrow = 0u64;
        for i in 0..l {
            let (d, b1) = out[i].overflowing_sub(self.n[i]);
            let (d, b2) = d.overflowing_sub(borrow);
            t[i] = d;
            borrow = u64::from(b1 | b2);
        }
        let keep = super::ct_mask((carry ^ 1) & borrow);
        for i in 0..l {
            out[i] = (out[i] & keep) | (t[i] & !keep);
        }
    }

    /// `out = a·b·R^{−1} mod N` for `a, b < N` (`t`: scratch of `2L` limbs).
    #[inline(always)]
    fn mont_mul<K: Kernel>(&self, k: K, out: &mut [u64], a: &[u64], b: &[u64], t: &mut [u64]) {
        Self::mul_full(k, t, a, b);
        self.redc(k, out, t);
    }

    /// `out = a²·R^{−1} mod N` for `a < N`.
    #[inline(always)]
    fn mont_sqr<K: Kernel>(&self, k: K, out: &mut [u64], a: &[u64], t: &mut [u64]) {
        Self::sqr_full(k, t, a);
        self.redc(k, out, t);
    }

    /// `base^e mod N` for `base < N` (`L` limbs) and the low `e_bits` bits of `e`.
    #[inline(always)]
    pub(crate) fn pow_with<K: Kernel>(
        &self,
        k: K,
        base: &[u64],
        e: &[u64],
        e_bits: u32,
    ) -> Vec<u64> {
        let l = self.n.len();
        let per = 1usize << WINDOW;
        let mut t = vec![0u64; 2 * l];
        let mut table = vec![0u64; per * l];
        table[..l].copy_from_slice(&self.one);
        {
            let (first, rest) = table.split_at_mut(l);
            let _ = first;
            self.mont_mul(k, &mut rest[..l], base, &self.r2, &mut t);
        }
        for j in 2..per {
            let (done, rest) = table.split_at_mut(j * l);
            self.mont_mul(
                k,
                &mut rest[..l],
                &done[(j - 1) * l..],
                &done[l..2 * l],
                &mut t,
            );
        }
        let mut acc = window_ladder(
            &table,
            l,
            e,
            e_bits,
            &mut t,
            |out, a, t| self.mont_sqr(k, out, a, t),
            |out, a, b, t| self.mont_mul(k, out, a, b, t),
        );
        // Out of Montgomery form: REDC(acc).
        let mut out = vec![0u64; l];
        t.fill(0);
        t[..l].copy_from_slice(&acc);
        self.redc(k, &mut out, &mut t);
        table.zeroize();
        t.zeroize();
        acc.zeroize();
        out
    }

    /// `a·b mod N` for `a, b < N`: two Montgomery multiplications (`a·b·R^{−1}`, then by `R²`).
    #[inline(always)]
    pub(crate) fn mul_plain_with<K: Kernel>(&self, k: K, a: &[u64], b: &[u64]) -> Vec<u64> {
        let l = self.n.len();
        let mut t = vec![0u64; 2 * l];
        let mut x = vec![0u64; l];
        let mut out = vec![0u64; l];
        self.mont_mul(k, &mut x, a, b, &mut t);
        self.mont_mul(k, &mut out, &x, &self.r2, &mut t);
        t.zeroize();
        x.zeroize();
        out
    }

    /// `x mod N` for any non-negative `x`, in time that depends on the length of `x` only:
    /// Horner over `L`-limb chunks from the top, `acc ← (acc·R + chunk) mod N` as
    /// `REDC(acc·R + chunk)·R² · R^{−1}`.
    #[inline(always)]
    pub(crate) fn reduce_with<K: Kernel>(&self, k: K, x: &Integer) -> Vec<u64> {
        let l = self.n.len();
        let chunks = x.as_limbs().len().div_ceil(l).max(1);
        let xs = limbs_of(x, chunks * l);
        let mut acc = vec![0u64; l];
        let mut tmp = vec![0u64; l];
        let mut t = vec![0u64; 2 * l];
        for c in (0..chunks).rev() {
            t[..l].copy_from_slice(&xs[c * l..(c + 1) * l]);
            t[l..].copy_from_slice(&acc);
            self.redc(k, &mut tmp, &mut t);
            self.mont_mul(k, &mut acc, &tmp, &self.r2, &mut t);
        }
        let mut xs = xs;
        xs.zeroize();
        tmp.zeroize();
        t.zeroize();
        acc
    }

    // --- Integer-level entry points, dispatched once per call -----------------------------------

    /// `base^e mod N` in constant time for a fixed `e_bits` (higher bits of `e` are ignored;
    /// `base` is reduced first, in time depending on its length only).
    pub(crate) fn pow(&self, base: &Integer, e: &Integer, e_bits: u32) -> Integer {
        let b = self.reduce_limbs(base);
        let mut el = exponent_limbs(e, e_bits);
        let mut r = match self.backend {
            Backend::Portable => self.pow_with(Portable, &b, &el, e_bits),
            #[cfg(obliv_x86_simd)]
            // SAFETY: an `Adx` value exists only after the run-time check of every feature
            // that `adx::pow` enables.
            Backend::Adx(k) => unsafe { adx::pow(self, k, &b, &el, e_bits) },
        };
        el.zeroize();
        let out = Integer::from_limbs(&r);
        r.zeroize();
        out
    }

    fn reduce_limbs(&self, x: &Integer) -> Vec<u64> {
        match self.backend {
            Backend::Portable => self.reduce_with(Portable, x),
            #[cfg(obliv_x86_simd)]
            // SAFETY: as in `pow`.
            Backend::Adx(k) => unsafe { adx::reduce(self, k, x) },
        }
    }

    /// `x mod N` in time that depends on the length of `x` only.
    pub(crate) fn reduce(&self, x: &Integer) -> Integer {
        let mut r = self.reduce_limbs(x);
        let out = Integer::from_limbs(&r);
        r.zeroize();
        out
    }

    /// `a·b mod N` in constant time (`a`, `b` reduced first).
    pub(crate) fn mul_mod(&self, a: &Integer, b: &Integer) -> Integer {
        let mut a = self.reduce_limbs(a);
        let mut b = self.reduce_limbs(b);
        let mut r = match self.backend {
            Backend::Portable => self.mul_plain_with(Portable, &a, &b),
            #[cfg(obliv_x86_simd)]
            // SAFETY: as in `pow`.
            Backend::Adx(k) => unsafe { adx::mul_plain(self, k, &a, &b) },
        };
        a.zeroize();
        b.zeroize();
        let out = Integer::from_limbs(&r);
        r.zeroize();
        out
    }

    /// `a·b mod N` in constant time for `a < R` (at most `L` limbs) and `b < N`, without
    /// reducing them first (cheaper than [`Self::mul_mod`]).
    pub(crate) fn mul_mod_lt(&self, a: &Integer, b: &Integer) -> Integer {
        let l = self.n.len();
        debug_assert!(a.as_limbs().len() <= l);
        debug_assert!(super::integer::cmp_mag(b.as_limbs(), &self.n) == core::cmp::Ordering::Less);
        let (mut a, mut b) = (limbs_of(a, l), limbs_of(b, l));
        let mut r = match self.backend {
            Backend::Portable => self.mul_plain_with(Portable, &a, &b),
            #[cfg(obliv_x86_simd)]
            // SAFETY: as in `pow`.
            Backend::Adx(k) => unsafe { adx::mul_plain(self, k, &a, &b) },
        };
        a.zeroize();
        b.zeroize();
        let out = Integer::from_limbs(&r);
        r.zeroize();
        out
    }

    /// `(a − b) mod N` in constant time for `a, b < N`.
    pub(crate) fn sub_mod(&self, a: &Integer, b: &Integer) -> Integer {
        let l = self.n.len();
        let (mut a, mut b) = (limbs_of(a, l), limbs_of(b, l));
        let mut borrow = 0u64;
        for i in 0..l {
            let (d, b1) = a[i].overflowing_sub(b[i]);
            let (d, b2) = d.overflowing_sub(borrow);
            a[i] = d;
            borrow = u64::from(b1 | b2);
        }
        // Add N back under the mask of the borrow.
        let mask = super::ct_mask(borrow);
        let mut carry = 0u64;
        for i in 0..l {
            let s = u128::from(a[i]) + u128::from(self.n[i] & mask) + u128::from(carry);
            a[i] = s as u64;
            carry = (s >> 64) as u64;
        }
        let out = Integer::from_limbs(&a);
        a.zeroize();
        b.zeroize();
        out
    }
}

impl Drop for MontFixedBase {
    fn drop(&mut self) {
        self.wipe();
    }
}

/// Fixed-base exponentiation modulo an odd `N` with every window precomputed in Montgomery
/// form (Brickell–Gordon–McCurley–Wilson, HAC 14.109): one Montgomery multiplication per
/// window, each entry chosen by a masked scan of its window's `2^w` entries.
#[derive(Clone)]
pub(crate) struct MontFixedBase {
    ctx: Monty,
    window: u32,
    windows: u32,
    /// `windows · 2^window` entries of `L` limbs, `base^(j·2^(w·i))·R mod N`, window-major.
    table: Vec<u64>,
}

impl MontFixedBase {
    /// The table for `base` modulo odd `m > 1` and exponents below `2^exp_bits`.
    pub(crate) fn new(base: &Integer, m: &Integer, exp_bits: u32, window: u32) -> Option<Self> {
        let ctx = Monty::new(m)?;
        let l = ctx.limbs();
        let windows = exp_bits.div_ceil(window).max(1);
        let per = 1usize << window;
        let mut table = vec![0u64; windows as usize * per * l];
        // The base is public (h_s, g, y) but the modulus may be secret (p², q²): every entry
        // is computed with constant-time Montgomery products, starting from `R mod N` so
        // that the entries come out in Montgomery form.
        let mut b = ctx.reduce(base);
        for i in 0..windows as usize {
            let mut cur = Integer::from_limbs(&ctx.one);
            for j in 0..per {
                let off = (i * per + j) * l;
                // Entries modulo a secret p² reveal p: the temporary limbs are wiped too.
                let mut limbs = limbs_of(&cur, l);
                table[off..off + l].copy_from_slice(&limbs);
                limbs.zeroize();
                if j + 1 < per {
                    cur = ctx.mul_mod_lt(&cur, &b);
                }
            }
            for _ in 0..window {
                b = ctx.mul_mod_lt(&b, &b);
            }
        }
        Some(Self {
            ctx,
            window,
            windows,
            table,
        })
    }

    /// Bytes held by the table.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.table.len() * 8
    }

    /// Overwrites the table with zeros (it is secret when the modulus is: powers of `h_s`
    /// modulo `p²` give `p` as `gcd(h_s^e − entry, n)`).
    pub(crate) fn wipe(&mut self) {
        self.table.zeroize();
    }

    /// Whether every entry is zero (after [`Self::wipe`]).
    #[cfg(test)]
    pub(crate) fn is_wiped(&self) -> bool {
        self.table.iter().all(|&w| w == 0)
    }

    #[inline(always)]
    fn pow_with<K: Kernel>(&self, k: K, e: &[u64]) -> Vec<u64> {
        let l = self.ctx.limbs();
        let per = 1usize << self.window;
        let mut t = vec![0u64; 2 * l];
        let mut acc = self.ctx.one.clone();
        let mut tmp = vec![0u64; l];
        let mut sel = vec![0u64; l];
        for i in 0..self.windows {
            let d = (0..self.window).fold(0u32, |d, b| {
                let pos = (i * self.window + b) as usize;
                let bit = e
                    .get(pos / 64)
                    .map_or(0, |w| ((w >> (pos % 64)) & 1) as u32);
                d | (bit << b)
            });
            let start = i as usize * per * l;
            ct_select(&mut sel, &self.table[start..start + per * l], d);
            self.ctx.mont_mul(k, &mut tmp, &acc, &sel, &mut t);
            core::mem::swap(&mut acc, &mut tmp);
        }
        t.fill(0);
        t[..l].copy_from_slice(&acc);
        self.ctx.redc(k, &mut tmp, &mut t);
        t.zeroize();
        acc.zeroize();
        sel.zeroize();
        tmp
    }

    /// `base^e mod N` for `0 ≤ e < 2^(w·windows)` (higher bits ignored), constant time in `e`.
    pub(crate) fn pow(&self, e: &Integer) -> Integer {
        let bits = self.window * self.windows;
        let mut el = limbs_of(e, bits.div_ceil(64) as usize);
        let mut r = match self.ctx.backend {
            Backend::Portable => self.pow_with(Portable, &el),
            #[cfg(obliv_x86_simd)]
            // SAFETY: an `Adx` value exists only after the run-time feature check.
            Backend::Adx(k) => unsafe { adx::fixed_pow(self, k, &el) },
        };
        el.zeroize();
        let out = Integer::from_limbs(&r);
        r.zeroize();
        out
    }
}

#[cfg(test)]
mod tests;
