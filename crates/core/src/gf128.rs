//! Arithmetic in GF(2^128) on [`Block`]s.
//!
//! The field is GF(2)\[x\] / (x^128 + x^7 + x^2 + x + 1) with bit `i` of the block's `u128`
//! value holding the coefficient of x^i (no bit reflection, unlike GCM's GHASH; the same
//! convention as libOTe's `block::gf128Mul`). Addition is XOR.
//!
//! Multiplication is a 128×128 carry-less product (Karatsuba over three 64×64 products)
//! followed by reduction. The 64×64 product uses PCLMULQDQ when the CPU has it (checked once at
//! run time) and otherwise the constant-time integer-multiplication-with-holes method of
//! BearSSL's `ghash_ctmul64`. Both paths are constant time and are tested to agree.
//!
//! [`inner_product`] accumulates unreduced 256-bit products and reduces once, the form VOLE
//! consistency checks and OKVS decoding use.

use crate::backend;
use crate::block::Block;

/// The low 128 bits of the reduction: x^128 = x^7 + x^2 + x + 1.
pub const MODULUS_LOW: u128 = 0x87;

/// An unreduced 256-bit carry-less product `hi·x^128 + lo`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wide {
    /// Coefficients of x^0 .. x^127.
    pub lo: u128,
    /// Coefficients of x^128 .. x^255.
    pub hi: u128,
}

impl core::ops::BitXorAssign for Wide {
    #[inline]
    fn bitxor_assign(&mut self, rhs: Wide) {
        self.lo ^= rhs.lo;
        self.hi ^= rhs.hi;
    }
}

impl Wide {
    /// Reduces modulo x^128 + x^7 + x^2 + x + 1, in constant time.
    #[inline]
    pub fn reduce(self) -> Block {
        Block(backend::reduce(self.lo, self.hi))
    }
}

/// The unreduced carry-less product of `a` and `b`.
#[inline]
pub fn mul_wide(a: Block, b: Block) -> Wide {
    let (lo, hi) = backend::clmul128(a.0, b.0);
    Wide { lo, hi }
}

/// `a · b` in GF(2^128).
#[inline]
pub fn mul(a: Block, b: Block) -> Block {
    Block(backend::gf_mul(a.0, b.0))
}

/// `out[i] = a[i] · b[i]` for whole slices (the fast path for many products).
///
/// # Panics
/// Panics if the slices differ in length (a caller bug).
pub fn mul_slices(a: &[Block], b: &[Block], out: &mut [Block]) {
    assert!(
        a.len() == b.len() && a.len() == out.len(),
        "slices of different lengths"
    );
    backend::gf_mul_slices(
        bytemuck::cast_slice(a),
        bytemuck::cast_slice(b),
        bytemuck::cast_slice_mut(out),
    );
}

/// `a²` in GF(2^128).
#[inline]
pub fn square(a: Block) -> Block {
    mul(a, a)
}

/// `a^(2^128 − 2)`: the inverse of `a`, or 0 for `a = 0`. Constant time (fixed exponent).
pub fn invert(a: Block) -> Block {
    // 2^128 − 2 = 2·(2^127 − 1): compute a^(2^127 − 1) by the chain
    // t_k = a^(2^k − 1), t_{2k} = t_k^(2^k)·t_k, t_{k+1} = t_k²·a, then square once.
    let pow2k = |mut x: Block, k: u32| {
        for _ in 0..k {
            x = square(x);
        }
        x
    };
    let t1 = a;
    let t2 = mul(square(t1), a); // 2^2-1
    let t3 = mul(square(t2), a); // 2^3-1
    let t6 = mul(pow2k(t3, 3), t3);
    let t7 = mul(square(t6), a);
    let t14 = mul(pow2k(t7, 7), t7);
    let t15 = mul(square(t14), a);
    let t30 = mul(pow2k(t15, 15), t15);
    let t31 = mul(square(t30), a);
    let t62 = mul(pow2k(t31, 31), t31);
    let t63 = mul(square(t62), a);
    let t126 = mul(pow2k(t63, 63), t63);
    let t127 = mul(square(t126), a);
    square(t127)
}

/// `Σ a[i]·b[i]` in GF(2^128), reduced once at the end.
///
/// # Panics
/// Panics if the slices differ in length (a caller bug).
pub fn inner_product(a: &[Block], b: &[Block]) -> Block {
    assert_eq!(
        a.len(),
        b.len(),
        "inner product of vectors of different lengths"
    );
    let (lo, hi) = backend::clmul_dot(bytemuck::cast_slice(a), bytemuck::cast_slice(b));
    Wide { lo, hi }.reduce()
}

/// `out[i] = a[i] · s` for a scalar `s`.
///
/// # Panics
/// Panics if the slices differ in length (a caller bug).
pub fn scale_into(a: &[Block], s: Block, out: &mut [Block]) {
    assert_eq!(a.len(), out.len(), "scale of vectors of different lengths");
    backend::gf_scale(bytemuck::cast_slice(a), s.0, bytemuck::cast_slice_mut(out));
}

/// `Σ a[i]·x^i`: the polynomial with coefficients `a` (lowest first) evaluated at `x` by
/// Horner's rule.
pub fn eval_poly(coeffs: &[Block], x: Block) -> Block {
    coeffs
        .iter()
        .rev()
        .fold(Block::ZERO, |acc, c| mul(acc, x) ^ *c)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // tests split u128s into halves
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Constant time under memcheck (`.ci/ctgrind`, see `obliv_cpu::ctgrind`): GF(2^128)
    /// products and inversion, the portable carry-less multiplication, AES under a secret key
    /// and the PRG from a secret seed, on secret operands; a branch or a memory address that
    /// depends on them fails it (under Valgrind: PCLMULQDQ and AES-NI).
    #[test]
    #[ignore = "run under valgrind by .ci/ctgrind"]
    fn ctgrind_field_aes_and_prg() {
        use obliv_cpu::ctgrind::{public, secret};
        let (a0, b0) = (
            Block(0x0123_4567_89ab_cdef_0011_2233_4455_6677),
            Block(0xfeed_f00d),
        );
        let (mut a, mut b) = (a0, b0);
        secret(&mut a);
        secret(&mut b);
        let mut got = [
            mul(a, b),
            invert(a),
            Block(crate::backend::clmul64_portable(a.0 as u64, b.0 as u64)),
            crate::Aes::new(a).encrypt_block(b),
            crate::Prg::new(a).next_block(),
        ];
        public(&mut got[..]);
        let want = [
            mul(a0, b0),
            invert(a0),
            Block(crate::backend::clmul64(a0.0 as u64, b0.0 as u64)),
            crate::Aes::new(a0).encrypt_block(b0),
            crate::Prg::new(a0).next_block(),
        ];
        assert_eq!(got, want);
    }

    /// Bit-by-bit reference: schoolbook multiply-and-reduce, the textbook algorithm.
    fn mul_reference(a: u128, b: u128) -> u128 {
        let mut acc = 0u128;
        let mut a = a;
        for i in 0..128 {
            if (b >> i) & 1 == 1 {
                acc ^= a;
            }
            let carry = a >> 127;
            a <<= 1;
            if carry == 1 {
                a ^= MODULUS_LOW;
            }
        }
        acc
    }

    #[test]
    fn known_answers() {
        // x^127 · x = x^128 = x^7 + x^2 + x + 1.
        assert_eq!(mul(Block(1 << 127), Block(2)), Block(0x87));
        // (x^64)^2 = x^128.
        assert_eq!(square(Block(1 << 64)), Block(0x87));
        assert_eq!(mul(Block::ONE, Block(0xdead_beef)), Block(0xdead_beef));
        assert_eq!(invert(Block::ZERO), Block::ZERO);
        assert_eq!(invert(Block::ONE), Block::ONE);
        // x · x^-1 = 1 with x^-1 = (x^127 + x^6 + x + 1) since x^128 + x^7 + x^2 + x = 1.
        assert_eq!(
            invert(Block(2)),
            Block((1 << 127) | (1 << 6) | (1 << 1) | 1)
        );
    }

    proptest! {
        #[test]
        fn matches_reference(a in any::<u128>(), b in any::<u128>()) {
            prop_assert_eq!(mul(Block(a), Block(b)), Block(mul_reference(a, b)));
        }

        #[test]
        fn field_laws(a in any::<u128>(), b in any::<u128>(), c in any::<u128>()) {
            let (a, b, c) = (Block(a), Block(b), Block(c));
            prop_assert_eq!(mul(a, b), mul(b, a));
            prop_assert_eq!(mul(mul(a, b), c), mul(a, mul(b, c)));
            prop_assert_eq!(mul(a, b ^ c), mul(a, b) ^ mul(a, c));
            if a != Block::ZERO {
                prop_assert_eq!(mul(a, invert(a)), Block::ONE);
            }
        }

        #[test]
        fn inner_product_matches_sum(v in proptest::collection::vec((any::<u128>(), any::<u128>()), 0..40)) {
            let a: Vec<Block> = v.iter().map(|p| Block(p.0)).collect();
            let b: Vec<Block> = v.iter().map(|p| Block(p.1)).collect();
            let expect = a.iter().zip(&b).fold(Block::ZERO, |s, (x, y)| s ^ mul(*x, *y));
            prop_assert_eq!(inner_product(&a, &b), expect);
            let mut prods = vec![Block::ZERO; a.len()];
            mul_slices(&a, &b, &mut prods);
            prop_assert_eq!(prods.iter().fold(Block::ZERO, |s, p| s ^ *p), expect);
            let mut scaled = vec![Block::ZERO; a.len()];
            scale_into(&a, Block(3), &mut scaled);
            prop_assert_eq!(inner_product(&scaled, &b), mul(expect, Block(3)));
        }

        #[test]
        fn portable_and_hardware_clmul_agree(a in any::<u64>(), b in any::<u64>(), c in any::<u128>(), d in any::<u128>()) {
            prop_assert_eq!(backend::clmul64(a, b), backend::clmul64_portable(a, b));
            let naive = {
                let (lo, hi) = (backend::clmul64_portable(c as u64, d as u64), backend::clmul64_portable((c >> 64) as u64, (d >> 64) as u64));
                let m = backend::clmul64_portable(c as u64, (d >> 64) as u64) ^ backend::clmul64_portable((c >> 64) as u64, d as u64);
                (lo ^ (m << 64), hi ^ (m >> 64))
            };
            prop_assert_eq!(backend::clmul128(c, d), naive);
        }
    }

    #[test]
    fn horner() {
        let c = [Block(3), Block(5), Block(7)];
        let x = Block(0x1234);
        assert_eq!(eval_poly(&c, x), c[0] ^ mul(c[1], x) ^ mul(c[2], square(x)));
        assert_eq!(eval_poly(&[], x), Block::ZERO);
    }
}
