//! The public operations on [`Point`] that combine the curve with scalars and hashing.

use rayon::prelude::*;
use subtle::CtOption;

use crate::error::Error;
use crate::hash;
use crate::point::Point;
use crate::scalar::Scalar;
use crate::scalar_mul;

impl Point {
    /// `[k]G` for the generator `G`, constant time, with the precomputed signed radix-16 table
    /// of `G` (built once per process on first use, 24 KiB).
    pub fn mul_base(k: &Scalar) -> Point {
        scalar_mul::mul_base(&k.limbs())
    }

    /// Build the fixed-base table now instead of on the first [`Point::mul_base`].
    pub fn precompute_base_table() {
        scalar_mul::init_base_table();
    }

    /// `[k]P` in constant time with the four-dimensional GLV+GLS method of [CL15] (the
    /// operator `P * k` does the same).
    ///
    /// [CL15]: https://eprint.iacr.org/2015/565
    pub fn mul(&self, k: &Scalar) -> Point {
        scalar_mul::mul_endo(self, &k.limbs())
    }

    /// `[k]P` by a plain constant-time signed 4-bit fixed window, without endomorphisms: the
    /// slower reference that [`Point::mul`] is tested against.
    pub fn mul_fixed_window(&self, k: &Scalar) -> Point {
        scalar_mul::mul_fixed_window(self, &k.limbs())
    }

    /// `[k]P_i` for every point, with one decomposition and recoding of `k` shared by all
    /// points, the points spread over the rayon thread pool. Constant time per point.
    pub fn mul_many(k: &Scalar, points: &[Point]) -> Vec<Point> {
        let rec = scalar_mul::recode_u256(&k.limbs());
        points
            .par_iter()
            .map(|p| scalar_mul::mul_many_recoded(&rec, p))
            .collect()
    }

    /// [`Point::mul_many`] followed by encoding: the ECDH-PSI step "raise every received point
    /// to my key and send it back".
    ///
    /// Points are processed in chunks of 64, each normalised with a single field inversion
    /// ([`Point::batch_to_bytes`]).
    pub fn mul_many_to_bytes(k: &Scalar, points: &[Point]) -> Vec<[u8; 32]> {
        let rec = scalar_mul::recode_u256(&k.limbs());
        points
            .par_chunks(64)
            .flat_map_iter(|chunk| {
                let r: Vec<Point> = chunk
                    .iter()
                    .map(|p| scalar_mul::mul_many_recoded(&rec, p))
                    .collect();
                Point::batch_to_bytes(&r)
            })
            .collect()
    }

    /// `[a]G + [b]P`. **Variable time** in `a`, `b` and `P`: safe only when all three are
    /// public, as in signature verification; never pass a secret scalar.
    pub fn vartime_double_mul_base(a: &Scalar, p: &Point, b: &Scalar) -> Point {
        scalar_mul::double_mul_vartime(&a.limbs(), p, &b.limbs())
    }

    /// Hash bytes to a point of the order-`N` subgroup: FourQlib's constant-time map applied
    /// to `SHA-512(msg)` reduced into GF(p²), then cofactor clearing (see the `hash` module
    /// docs for the exact construction).
    pub fn hash_to_curve(msg: &[u8]) -> Point {
        hash::map_and_clear(&hash::hash_to_fp2(msg))
    }

    /// Hash many messages in parallel (rayon).
    pub fn hash_to_curve_many<M: AsRef<[u8]> + Sync>(msgs: &[M]) -> Vec<Point> {
        msgs.par_iter()
            .map(|m| Point::hash_to_curve(m.as_ref()))
            .collect()
    }

    /// FourQlib's `HashToCurve` on 32 bytes read as `r0 ‖ r1` (16 bytes each, little-endian,
    /// reduced modulo p), then cofactor clearing: the same point FourQlib (and SecretFlow,
    /// which passes the first 32 bytes of `SHA-512(msg)`) produces.
    pub fn hash_to_curve_fourqlib_compat(bytes: &[u8; 32]) -> Point {
        hash::map_and_clear(&hash::fourqlib_bytes_to_fp2(bytes))
    }

    /// Decode from a slice with a typed error: wrong length, non-canonical or off-curve
    /// encoding, or a point outside the prime-order subgroup.
    pub fn decode(bytes: &[u8]) -> Result<Point, Error> {
        let arr: &[u8; 32] = bytes.try_into().map_err(|_| Error::InvalidLength {
            expected: 32,
            got: bytes.len(),
        })?;
        let p = Option::<Point>::from(Point::from_bytes_unchecked_subgroup(arr))
            .ok_or(Error::InvalidEncoding)?;
        if p.is_torsion_free_vartime() {
            Ok(p)
        } else {
            Err(Error::NotInSubgroup)
        }
    }

    /// Decode many encodings in parallel (each as [`Point::from_bytes`]).
    pub fn from_bytes_many(encodings: &[[u8; 32]]) -> Vec<CtOption<Point>> {
        encodings.par_iter().map(Point::from_bytes).collect()
    }
}

impl core::ops::Mul<&Scalar> for &Point {
    type Output = Point;
    fn mul(self, k: &Scalar) -> Point {
        Point::mul(self, k)
    }
}

impl core::ops::Mul<&Point> for &Scalar {
    type Output = Point;
    fn mul(self, p: &Point) -> Point {
        Point::mul(p, self)
    }
}

impl core::ops::Mul<Scalar> for Point {
    type Output = Point;
    fn mul(self, k: Scalar) -> Point {
        Point::mul(&self, &k)
    }
}

impl core::ops::Mul<&Scalar> for Point {
    type Output = Point;
    fn mul(self, k: &Scalar) -> Point {
        Point::mul(&self, k)
    }
}

impl core::ops::Mul<Point> for Scalar {
    type Output = Point;
    fn mul(self, p: Point) -> Point {
        Point::mul(&p, &self)
    }
}

impl core::ops::MulAssign<Scalar> for Point {
    fn mul_assign(&mut self, k: Scalar) {
        *self = Point::mul(self, &k);
    }
}

impl core::ops::MulAssign<&Scalar> for Point {
    fn mul_assign(&mut self, k: &Scalar) {
        *self = Point::mul(self, k);
    }
}
