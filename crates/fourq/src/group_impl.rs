//! The RustCrypto `ff` and `group` traits (0.14) for [`Scalar`] and [`Point`], so code generic
//! over `ff::PrimeField` / `group::Group` / `group::GroupEncoding` / `group::prime::PrimeGroup`
//! runs on FourQ.

use ff::{Field, PrimeField};
use group::{Group, GroupEncoding, prime::PrimeGroup};
use rand_core::TryRng;
use subtle::{Choice, ConditionallySelectable, CtOption};

use crate::point::Point;
use crate::scalar::Scalar;

/// `N − 1`: the only non-trivial square root of unity, since `N ≡ 3 (mod 4)` (`S = 1`).
const MINUS_ONE: Scalar = Scalar([
    0x2FB2540EC7768CE6,
    0xDFBD004DFE0F7999,
    0xF05397829CBC14E5,
    0x0029CBC14E5E0A72,
]);
/// `(N + 1)/2`.
const TWO_INV: Scalar = Scalar([
    0x97d92a0763bb4674,
    0xefde8026ff07bccc,
    0x7829cbc14e5e0a72,
    0x0014e5e0a72f0539,
]);
/// `(N + 1)/4`, the square-root exponent.
const SQRT_EXP: [u64; 4] = [
    0x4bec9503b1dda33a,
    0x77ef40137f83de66,
    0xbc14e5e0a72f0539,
    0x000a72f05397829c,
];

impl Field for Scalar {
    const ZERO: Scalar = Scalar::ZERO;
    const ONE: Scalar = Scalar::ONE;

    /// As [`Scalar::random`]: 64 random bytes reduced, the buffer wiped afterwards (also
    /// when the generator fails part-way).
    fn try_random<R: TryRng + ?Sized>(rng: &mut R) -> Result<Scalar, R::Error> {
        let mut b = zeroize::Zeroizing::new([0u8; 64]);
        rng.try_fill_bytes(&mut *b)?;
        Ok(Scalar::from_bytes_mod_order_wide(&b))
    }

    fn square(&self) -> Scalar {
        Scalar::square(self)
    }

    fn double(&self) -> Scalar {
        self.add(self)
    }

    fn invert(&self) -> CtOption<Scalar> {
        Scalar::invert(self)
    }

    /// `N ≡ 3 (mod 4)`: `√a = a^((N+1)/4)` when `a` is a square; the non-square `G_S` is the
    /// multiplicative generator 6.
    fn sqrt_ratio(num: &Scalar, div: &Scalar) -> (Choice, Scalar) {
        ff::helpers::sqrt_ratio_generic(num, div)
    }

    fn sqrt(&self) -> CtOption<Scalar> {
        let r = self.pow_vartime(SQRT_EXP);
        CtOption::new(r, Scalar::square(&r).ct_eq_choice(self))
    }
}

impl Scalar {
    fn ct_eq_choice(&self, other: &Scalar) -> Choice {
        subtle::ConstantTimeEq::ct_eq(self, other)
    }
}

impl PrimeField for Scalar {
    type Repr = [u8; 32];

    fn from_repr(repr: [u8; 32]) -> CtOption<Scalar> {
        Scalar::from_canonical_bytes(&repr)
    }

    fn to_repr(&self) -> [u8; 32] {
        self.to_bytes()
    }

    fn is_odd(&self) -> Choice {
        Scalar::is_odd(self)
    }

    const MODULUS: &'static str =
        "0x0029cbc14e5e0a72f05397829cbc14e5dfbd004dfe0f79992fb2540ec7768ce7";
    const NUM_BITS: u32 = 246;
    const CAPACITY: u32 = 245;
    const TWO_INV: Scalar = TWO_INV;
    /// 6 generates the multiplicative group (`N − 1 = 2·3²·103043·5948609·7355633·9560163629·p₄₄`).
    const MULTIPLICATIVE_GENERATOR: Scalar = Scalar([6, 0, 0, 0]);
    const S: u32 = 1;
    const ROOT_OF_UNITY: Scalar = MINUS_ONE;
    const ROOT_OF_UNITY_INV: Scalar = MINUS_ONE;
    /// `6^(2^S) = 36`.
    const DELTA: Scalar = Scalar([36, 0, 0, 0]);
}

impl Group for Point {
    type Scalar = Scalar;

    /// A uniformly random point of the subgroup: `[k]G` for a random non-zero `k`.
    fn try_random<R: TryRng + ?Sized>(rng: &mut R) -> Result<Point, R::Error> {
        loop {
            let k = <Scalar as Field>::try_random(rng)?;
            // Rejecting k = 0 (probability 2^−246) leaks nothing about the accepted k.
            if !bool::from(k.is_zero()) {
                return Ok(Point::mul_base(&k));
            }
        }
    }

    fn identity() -> Point {
        Point::IDENTITY
    }

    fn generator() -> Point {
        Point::generator()
    }

    fn is_identity(&self) -> Choice {
        Point::is_identity(self)
    }

    fn double(&self) -> Point {
        Point::double(self)
    }

    fn mul_by_generator(k: &Scalar) -> Point {
        Point::mul_base(k)
    }
}

impl GroupEncoding for Point {
    type Repr = [u8; 32];

    fn from_bytes(bytes: &[u8; 32]) -> CtOption<Point> {
        Point::from_bytes(bytes)
    }

    /// Skips the subgroup check (the point is still checked to be on the curve).
    fn from_bytes_unchecked(bytes: &[u8; 32]) -> CtOption<Point> {
        Point::from_bytes_unchecked_subgroup(bytes)
    }

    fn to_bytes(&self) -> [u8; 32] {
        Point::to_bytes(self)
    }
}

impl PrimeGroup for Point {}

// `Choice`-based selection is part of the trait surface generic code may use.
const _: fn() = || {
    fn assert_sel<T: ConditionallySelectable>() {}
    assert_sel::<Scalar>();
    assert_sel::<Point>();
};

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{SeedableRng, rngs::StdRng};

    /// Exercise the traits only through generic code.
    fn generic_dh<G: Group + GroupEncoding>(rng: &mut StdRng) -> bool {
        let a = G::Scalar::random(&mut *rng);
        let b = G::Scalar::random(&mut *rng);
        let g = G::generator();
        let ab = (g * a) * b;
        let ba = (g * b) * a;
        let back = G::from_bytes(&ab.to_bytes()).unwrap();
        ab == ba && back == ab && G::mul_by_generator(&(a * b)) == ab
    }

    #[test]
    fn generic_code_runs_on_fourq() {
        let mut rng = StdRng::seed_from_u64(9);
        assert!(generic_dh::<Point>(&mut rng));
        let p = Point::random(&mut rng);
        assert!(p.is_torsion_free_vartime());
    }

    #[test]
    fn prime_field_constants() {
        assert_eq!(TWO_INV.double(), Scalar::ONE);
        assert_eq!(MINUS_ONE + Scalar::ONE, Scalar::ZERO);
        assert_eq!(
            <Scalar as PrimeField>::MULTIPLICATIVE_GENERATOR.square(),
            <Scalar as PrimeField>::DELTA
        );
        // 6 is a non-square: 6^((N−1)/2) = −1.
        let mut e = crate::constants::ORDER;
        e[0] -= 1;
        // (N−1)/2 as an integer exponent
        let mut h = [0u64; 4];
        for i in 0..4 {
            h[i] = (e[i] >> 1) | if i < 3 { e[i + 1] << 63 } else { 0 };
        }
        assert_eq!(Scalar::from_u64(6).pow_vartime(h), MINUS_ONE);
        // (N+1)/4 exponent: the square root of a square squares back.
        let s = Scalar::from_u64(12345).square();
        let r = Field::sqrt(&s).unwrap();
        assert_eq!(r.square(), s);
        assert!(bool::from(Field::sqrt(&Scalar::from_u64(6)).is_none()));
        let (ok, r) = Scalar::sqrt_ratio(&Scalar::from_u64(50), &Scalar::from_u64(2));
        assert!(bool::from(ok) && (r == Scalar::from_u64(5) || r == -Scalar::from_u64(5)));
    }
}
