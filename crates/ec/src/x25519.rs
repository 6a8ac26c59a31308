//! Curve25519 as an X25519-style group: u-coordinates of the prime-order subgroup of the
//! Montgomery curve `v² = u³ + 486662·u² + u` over GF(2^255 − 19) (RFC 7748), multiplied by
//! the Montgomery ladder, with the torsion of a peer's points projected away by the scalar.
//!
//! # The group
//!
//! Elements are the points `P₀` of the subgroup of prime order
//! `ℓ = 2^252 + 27742317777372353535851937790883648493`, up to sign, written by their
//! u-coordinate: 32 bytes little-endian, `u < p`, bit 255 clear. The identity is `u = 0`
//! (RFC 7748's convention: the ladder's `Z = 0` inverts to `0`). A scalar multiplication
//! `±P ↦ ±[k]P` is well defined on u-coordinates, and that is all the ECDH-PSI, the
//! unbalanced OPRF and the comparison round of this workspace use (none of them adds two
//! points; EC ElGamal, which would, is not implemented on this type: use [`crate::Ristretto255`]).
//!
//! # Decoding: strict, and torsion projected rather than rejected
//!
//! [`PrimeGroup::decode`] accepts exactly the canonical u-coordinates of points of the curve
//! (not of its twist) outside the 8-torsion, and returns the projection `P₀` of `P = P₀ + T`
//! (`T ∈ E[8]`) to the prime-order subgroup, computed as `P₀ = [s'₁]P` with
//! `s'₁ = 8·(8⁻¹ mod ℓ)` (so `s'₁ ≡ 1 mod ℓ` and `s'₁ ≡ 0 mod 8`). It rejects:
//!
//! * a length other than 32 ([`Error::WrongLength`]);
//! * bit 255 set, or `u ≥ p` (non-canonical; RFC 7748 would mask or reduce, we refuse)
//!   ([`Error::InvalidPoint`]);
//! * `u = 0` ([`Error::Identity`]: it is the identity's encoding, and the order-2 point
//!   `(0, 0)` projects to the identity);
//! * `u` on the twist: `u³ + A·u² + u` not a square (this includes `u = p − 1`)
//!   ([`Error::InvalidPoint`]);
//! * the other small-order `u`: `1` (order 4) and the two order-8 values
//!   ([`Error::InvalidPoint`]); their projection would be the identity.
//!
//! So the rule is "reject every encoding whose projection is the identity, and everything
//! off the curve", and `decode(encode(P)) = P` for every non-identity element. Where
//! [`PrimeGroup`] promises that `decode` rejects points "not in the prime-order subgroup",
//! this group accepts mixed-order points `P₀ + T` and maps them to `P₀` instead; a subgroup
//! check (a multiplication by `ℓ`) per received point would cost as much as the
//! multiplication itself.
//!
//! # Why the projection is sound for the protocols
//!
//! Every multiplication by a secret `k` uses the integer `s' = 8·((8⁻¹·k) mod ℓ)`:
//! `s' ≡ k (mod ℓ)` and `s' ≡ 0 (mod 8)`, so `[s'](P₀ + T) = [k]P₀` for every `T ∈ E[8]`. A
//! peer that adds torsion to what it sends receives exactly what it would have received for
//! `P₀` — the answer is a function of `P₀` and `k` only, always in the prime-order subgroup,
//! and carries no information about `k mod 8` (the classic small-subgroup attack on X25519
//! with a plain clamped scalar leaks nothing here either, but the clamped scalar is not a
//! multiplicative group element mod `ℓ`, which the OPRF unblinding needs). Hence:
//!
//! * ECDH-PSI (2PC and 3PC): each party sends `u([a]H(x))`; the peer's `u([b]·)` of a
//!   torsioned or honest `u` is `u([ab]H(x))` either way, so commutativity holds and a
//!   malicious peer learns nothing it could not learn by sending `P₀`;
//! * the unbalanced OPRF: the client blinds `[r]H(x)`, the server answers `[k]([r]H(x))`,
//!   and the client unblinds with `r⁻¹ mod ℓ` ([`PrimeGroup::scalar_invert`]): `[r⁻¹][k][r]H(x)
//!   = [k]H(x)` because all three live in the prime-order subgroup (`s'` of `r⁻¹` again
//!   removes any torsion the server might have added);
//! * points on the twist are rejected, so no answer is ever computed on the twist's group
//!   (order `4·ℓ'`), and `u = 0` never yields an answer.
//!
//! Because elements are u-coordinates, `P` and `−P` are the same element; the protocols
//! compare only `u([k]P)` values, which is consistent since `u([k](−P)) = u([k]P)`.
//!
//! # Hash to the curve
//!
//! [`PrimeGroup::hash_to_point`] is RFC 9380's `curve25519_XMD:SHA-512_ELL2_RO_` (§8.5):
//! `expand_message_xmd` with SHA-512 to two field elements, two Elligator 2 maps, their sum,
//! `clear_cofactor` (`h_eff = 8`), output `u`; indifferentiable from a random oracle. It is
//! computed by curve25519-dalek's `EdwardsPoint::hash_to_curve` (the same maps on the
//! birationally equivalent edwards25519, RFC 9380 §6.8.2 and Appendix D.2) followed by the
//! birational map to `u = (1 + y)/(1 − y)`; the RFC 9380 Appendix J.7.1 vectors check it.
//!
//! # Batch paths: eight AVX-512 IFMA lanes, dalek as the fallback
//!
//! With AVX-512 IFMA (detected at run time on every call, not switched off by
//! `OBLIV_CPU_DISABLE=avx512ifma` or `obliv_cpu::disable`), the batch steps run
//! the RFC 7748 ladder on eight points per 64-bit lane (`ifma25519::ladder`): the scalar `s'`
//! once per chunk, one shared inversion per chunk, and the on-curve test batched over the
//! chunk (below). The hash-and-multiply step computes `expand_message_xmd` with SHA-512 on eight
//! items at a time in AVX-512F lanes (`ifma25519::sha512x8`), `hash_to_field` per item,
//! and the rest of the suite in lanes (RFC 9380 App. G.2.1 straight-line Elligator 2 and the
//! G.2.2 rational map, the sum on edwards25519, one shared inversion for the affine `u`, then
//! the ladder on `8k`, whose three final doublings are the suite's `clear_cofactor`).
//! Otherwise (and in the reference paths the tests compare against) every point goes through
//! curve25519-dalek's Edwards arithmetic: the point from the birational map (which is the
//! on-curve test), `[k/8 mod ℓ]([8]P)`, back to `u`. That is constant time in the scalar,
//! uses dalek's AVX2 backend where the CPU has one, and is about twice as fast as dalek's
//! Montgomery ladder (which remains for `mul` of a `u` on the twist). The outputs are
//! byte-identical, which the tests check; a chunk with an invalid encoding is redone
//! serially, which names the first offending index.
//!
//! ## The batched on-curve test
//!
//! Deciding curve or twist for one `u` is a Legendre symbol, `χ(u³ + A·u² + u)`: an
//! exponentiation as long as the inversion. Per point it would cost about a tenth of the
//! multiplication. The lanes instead run the random-subset product test on the whole chunk:
//! 40 tests, each multiplying the right-hand sides `wᵢ` of a uniformly random subset of the
//! chunk's points and checking the product with Euler's criterion. `χ` is multiplicative, so
//! a chunk of valid points always passes, and a chunk with a twist point passes a test with
//! probability exactly 1/2, all 40 with probability `2^-40` (the workspace's statistical
//! parameter). The subsets come from the thread's CSPRNG (`rand::rng()`, seeded by the
//! operating system) after the chunk is fixed, so the peer cannot aim at them. Cost: about 21
//! multiplications per eight points and 5 eight-lane exponentiations per chunk, against 265
//! multiplications per eight points for the lane-by-lane test (which chunks under 64 points
//! still use). A rejected chunk is redone serially with the exact test, so errors name the
//! exact index. Should a twist point slip through (`2^-40` per chunk), the ladder computes on
//! the twist, whose group has order `4·ℓ'` with `ℓ'` a 253-bit prime (Curve25519 is
//! twist-secure, Bernstein 2006): the answer is `[s']P` in the order-`ℓ'` subgroup of the
//! twist, which reveals nothing of `k` that a discrete logarithm there would not.
//! [`PrimeGroup::decode`] and the serial paths test each point exactly.

use crate::{Error, PrimeGroup, SecretScalar, scalar25519};
use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::montgomery::MontgomeryPoint;
use curve25519_dalek::scalar::Scalar;
use rand_core::CryptoRng;
use sha2::{Digest, Sha512};
use zeroize::{Zeroize, Zeroizing};

/// Curve25519 as an X25519-style group of prime order `ℓ` on u-coordinates (see the module
/// documentation for the decoding rule and why projecting the torsion is sound).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct X25519;

/// An element of [`X25519`]: the u-coordinate of a point of the prime-order subgroup (or `0`,
/// the identity).
///
/// The field is private: a value is built only by [`PrimeGroup::decode`] (which validates and
/// projects a peer's encoding, see the module documentation), by hashing
/// ([`PrimeGroup::hash_to_point`]), as the generator or the identity, or as the product of
/// one of these by a scalar. So every `X25519Point` is an element of the group, and the batch
/// paths never see an unvalidated `u` (dalek's [`MontgomeryPoint`] has a public field: build
/// it only from trusted values, and pass peer bytes to [`PrimeGroup::decode`]).
///
/// ```
/// use obliv_ec::{PrimeGroup, X25519};
/// let peer = X25519::encode(&X25519::hash_to_point(b"item"));
/// let p: <X25519 as PrimeGroup>::Point = X25519::decode(&peer).unwrap();
/// assert_eq!(p.to_bytes(), peer);
/// ```
///
/// A group element cannot be made from unchecked bytes (here a `u` of order 4):
///
/// ```compile_fail
/// use obliv_ec::{PrimeGroup, X25519};
/// let mut u = [0u8; 32];
/// u[0] = 1;
/// let p: <X25519 as PrimeGroup>::Point = curve25519_dalek::montgomery::MontgomeryPoint(u);
/// ```
///
/// ```compile_fail
/// let p = obliv_ec::X25519Point([1u8; 32]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct X25519Point([u8; 32]);

/// Wiping gives the identity (`u = 0`), [`PrimeGroup::identity`]: the hash of a private item
/// reveals the item to a dictionary search, so its copies are wiped before they are freed.
impl Zeroize for X25519Point {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl X25519Point {
    /// The canonical 32-byte little-endian u-coordinate ([`PrimeGroup::encode`]).
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0
    }

    /// The same u-coordinate as curve25519-dalek's [`MontgomeryPoint`] (for interoperability
    /// with dalek; there is no conversion the other way, peer bytes go through
    /// [`PrimeGroup::decode`]).
    pub fn to_montgomery(&self) -> MontgomeryPoint {
        MontgomeryPoint(self.0)
    }
}

/// `8⁻¹ mod ℓ`, little-endian.
const INV_EIGHT: [u8; 32] = [
    121, 47, 220, 226, 41, 229, 6, 97, 208, 218, 28, 125, 179, 157, 211, 7, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 6,
];

/// The u-coordinates of the order-8 points (little-endian); with `0` (order 2) and `1`
/// (order 4) they are the small-order points of the curve.
const ORDER_EIGHT_U: [[u8; 32]; 2] = [
    [
        224, 235, 122, 124, 59, 65, 184, 174, 22, 86, 227, 250, 241, 159, 196, 106, 218, 9, 141,
        235, 156, 50, 177, 253, 134, 98, 5, 22, 95, 73, 184, 0,
    ],
    [
        95, 156, 149, 188, 163, 80, 140, 36, 177, 208, 177, 85, 156, 131, 239, 91, 4, 68, 92, 196,
        88, 28, 142, 134, 216, 34, 78, 221, 208, 159, 17, 87,
    ],
];

/// `t = k·8⁻¹ mod ℓ` (little-endian), so that `s' = 8t` (the lanes' ladder scalar).
#[cfg(obliv_x86_simd)]
fn torsion_free_t(k: &Scalar) -> Zeroizing<[u8; 32]> {
    Zeroizing::new(torsion_free_scalar(k).to_bytes())
}

/// `t = k·8⁻¹ mod ℓ` as a scalar.
fn torsion_free_scalar(k: &Scalar) -> Zeroizing<Scalar> {
    Zeroizing::new(k * Scalar::from_bytes_mod_order(INV_EIGHT))
}

/// `u([8t]P)` for a point `P` of the curve, serially on curve25519-dalek's Edwards
/// arithmetic (constant time in `t`; dalek's AVX2 backend where the CPU has one): `[t]([8]P)`
/// mapped back to `u = (1 + y)/(1 − y)` (`0` for the identity, as the ladder gives). About
/// twice as fast as dalek's Montgomery ladder, and `P` is at hand anyway: the on-curve test
/// is the Edwards decompression.
fn mul_edwards(p: &EdwardsPoint, t: &Scalar) -> [u8; 32] {
    (p.mul_by_cofactor() * t).to_montgomery().to_bytes()
}

/// `u([8t]P)` for any `u` (the serial `mul`; an [`X25519Point`] is never on the twist, but
/// the lanes' tests compare their twist results against this):
/// [`mul_edwards`] if `u` is on the curve, otherwise (the twist) dalek's ladder, which
/// computes on the twist as RFC 7748's function does.
fn mul_any(u: &[u8; 32], t: &Scalar) -> [u8; 32] {
    match MontgomeryPoint(*u).to_edwards(0) {
        Some(p) => mul_edwards(&p, t),
        None => ladder_serial(u, &Zeroizing::new(t.to_bytes())),
    }
}

/// `u([8t]P)` for an affine `u`, serially: dalek's constant-time ladder over the 256 bits of
/// `s' = 8t`, most significant first (bit `j` of `s'` is bit `j − 3` of `t`).
fn ladder_serial(u: &[u8; 32], t: &[u8; 32]) -> [u8; 32] {
    let bits = (0..256usize)
        .rev()
        .map(|j| j >= 3 && (t[(j - 3) >> 3] >> ((j - 3) & 7)) & 1 == 1);
    MontgomeryPoint(*u).mul_bits_be(bits).to_bytes()
}

/// The checks of `decode` that need no field arithmetic: length, canonical, not zero, not
/// `1` nor an order-8 `u`.
fn check_bytes(bytes: &[u8]) -> Result<[u8; 32], Error> {
    let u: [u8; 32] = bytes.try_into().map_err(|_| Error::WrongLength {
        group: X25519::NAME,
        expected: 32,
        got: bytes.len(),
    })?;
    let invalid = Error::InvalidPoint {
        group: X25519::NAME,
    };
    if !is_canonical(&u) {
        return Err(invalid);
    }
    if u == [0u8; 32] {
        return Err(Error::Identity {
            group: X25519::NAME,
        });
    }
    let mut one = [0u8; 32];
    one[0] = 1;
    if u == one || ORDER_EIGHT_U.contains(&u) {
        return Err(invalid);
    }
    Ok(u)
}

/// `u < p = 2^255 − 19` and bit 255 clear (compared from the top byte; public data).
fn is_canonical(u: &[u8; 32]) -> bool {
    if u[31] & 0x80 != 0 {
        return false;
    }
    // u ≥ p iff u[31] = 0x7f, u[1..31] all 0xff and u[0] ≥ 0xed.
    !(u[31] == 0x7f && u[1..31].iter().all(|&b| b == 0xff) && u[0] >= 0xed)
}

/// The eight-lane AVX-512 IFMA backend, if this CPU has it and it is not switched off.
#[cfg(obliv_x86_simd)]
fn ifma() -> Option<crate::ifma25519::Ifma> {
    crate::ristretto::ifma()
}

impl X25519 {
    /// Which backend the batch paths use on this machine: `"avx512ifma-8way"` or `"dalek"`
    /// (curve25519-dalek's serial ladder: on CPUs without AVX-512 IFMA, in builds with
    /// `--cfg obliv_portable`, and when the kernel is switched off with
    /// `OBLIV_CPU_DISABLE=avx512ifma` or `obliv_cpu::disable`).
    pub fn batch_backend() -> &'static str {
        #[cfg(obliv_x86_simd)]
        if ifma().is_some() {
            return "avx512ifma-8way";
        }
        "dalek"
    }

    /// The reference path of [`PrimeGroup::mul_and_encode_chunk`]: `u([s']P)` with
    /// `s' = 8·(k/8 mod ℓ)` for each point on dalek's Edwards arithmetic (dalek's ladder for a
    /// `u` on the twist), whatever the CPU.
    ///
    /// # Panics
    /// If `out.len() != points.len()`.
    pub fn mul_and_encode_chunk_serial(
        points: &[X25519Point],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) {
        crate::assert_out_len(points.len(), out.len());
        let t = torsion_free_scalar(&k.0);
        for (p, o) in points.iter().zip(out.iter_mut()) {
            *o = mul_any(&p.0, &t);
        }
    }

    /// The reference path of [`PrimeGroup::hash_mul_and_encode_chunk`]: dalek's RFC 9380
    /// hash per item (on edwards25519, cofactor cleared), times `k`, mapped to `u`.
    ///
    /// # Panics
    /// If `out.len() != items.len()`.
    pub fn hash_mul_and_encode_chunk_serial<T: AsRef<[u8]>>(
        items: &[T],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) {
        crate::assert_out_len(items.len(), out.len());
        for (x, o) in items.iter().zip(out.iter_mut()) {
            let h = EdwardsPoint::hash_to_curve::<Sha512>(&[x.as_ref()], &[Self::DEFAULT_DST]);
            *o = (h * k.0).to_montgomery().to_bytes();
        }
    }

    /// The reference path of [`PrimeGroup::decode_mul_and_encode_chunk`]: full validation of
    /// each encoding ([`PrimeGroup::decode`]'s checks, exact), then `[s']P` of the received
    /// point on dalek's Edwards arithmetic (which projects its torsion away).
    ///
    /// # Errors
    /// [`Error::BufferLength`] if `out.len() != encodings.len()`; [`Error::Batch`] naming the
    /// first invalid encoding and why it was rejected.
    pub fn decode_mul_and_encode_chunk_serial<E: AsRef<[u8]>>(
        encodings: &[E],
        first_index: usize,
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        crate::check_out_len(encodings.len(), out.len())?;
        let ps = encodings
            .iter()
            .enumerate()
            .map(|(i, e)| {
                validate(e.as_ref()).map_err(|source| Error::Batch {
                    index: first_index + i,
                    source: Box::new(source),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let t = torsion_free_scalar(&k.0);
        for (p, o) in ps.iter().zip(out.iter_mut()) {
            *o = mul_edwards(p, &t);
        }
        Ok(())
    }

    /// The RFC 7748 §5 `X25519(k, u)` function (clamped scalar, bit 255 of `u` masked,
    /// non-canonical `u` reduced), by dalek: for the RFC 7748 §5.2 known-answer tests and
    /// interoperability. Not a group operation of this type.
    ///
    /// With AVX-512 IFMA this runs the lanes' ladder (a clamped scalar is `8t` with
    /// `t = clamp(k)/8 < 2^252`, exactly the ladder-then-three-doublings the lanes compute),
    /// otherwise dalek's `MontgomeryPoint::mul_clamped`; the RFC 7748 vectors test both.
    pub fn x25519_rfc7748(k: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
        #[cfg(obliv_x86_simd)]
        if let Some(ifma) = ifma() {
            let mut c = Zeroizing::new(*k);
            c[0] &= 248;
            c[31] &= 127;
            c[31] |= 64;
            let mut t = Zeroizing::new([0u8; 32]);
            for i in 0..32 {
                t[i] = (c[i] >> 3) | if i < 31 { c[i + 1] << 5 } else { 0 };
            }
            let mut out = [[0u8; 32]];
            // The lanes ignore bit 255 of `u` and accept u ≥ p unreduced, as RFC 7748 says.
            if ifma.x25519_mul(&[*u], &t, &mut out, false) {
                return out[0];
            }
        }
        Self::x25519_rfc7748_serial(k, u)
    }

    /// [`Self::x25519_rfc7748`] on curve25519-dalek whatever the CPU.
    pub fn x25519_rfc7748_serial(k: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
        MontgomeryPoint(*u).mul_clamped(*k).to_bytes()
    }
}

/// All of `decode`'s checks; returns the received point (not yet projected) on edwards25519,
/// with either sign of `x` (both have the received `u`).
fn validate(bytes: &[u8]) -> Result<EdwardsPoint, Error> {
    let u = check_bytes(bytes)?;
    // On the curve iff the Edwards decompression of y = (u − 1)/(u + 1) succeeds (dalek
    // rejects u = −1, on the twist, first).
    MontgomeryPoint(u).to_edwards(0).ok_or(Error::InvalidPoint {
        group: X25519::NAME,
    })
}

/// The DST `hash_to_point_with_dst` passes to the expander: `dst` itself, or for tags over
/// 255 bytes `SHA-512("H2C-OVERSIZE-DST-" ‖ dst)` (RFC 9380 §5.3.3).
fn effective_dst(dst: &[u8]) -> Result<Vec<u8>, Error> {
    if dst.is_empty() {
        return Err(Error::HashToCurve("empty domain separation tag"));
    }
    if dst.len() <= 255 {
        return Ok(dst.to_vec());
    }
    let mut h = Sha512::new();
    h.update(b"H2C-OVERSIZE-DST-");
    h.update(dst);
    Ok(h.finalize().to_vec())
}

/// RFC 9380 §5.3.1 `expand_message_xmd` with SHA-512 and `len_in_bytes = 96` (`ell = 2`),
/// for one DST of at most 255 bytes, with the SHA-512 state after `Z_pad` computed once; then
/// `hash_to_field` with `L = 48`: the two field elements as reduced radix-2^51 limbs. The
/// serial reference of the eight-lane expander the batch path uses (the tests compare them).
#[cfg(all(test, obliv_x86_simd))]
struct HashToField<'a> {
    /// SHA-512 after absorbing `Z_pad = I2OSP(0, 128)`.
    after_zpad: Sha512,
    dst: &'a [u8],
    /// `I2OSP(len(DST), 1)`.
    dst_len: u8,
}

#[cfg(all(test, obliv_x86_simd))]
impl<'a> HashToField<'a> {
    /// The expander for `dst` (1 to 255 bytes).
    fn new(dst: &'a [u8]) -> Self {
        let mut after_zpad = Sha512::new();
        after_zpad.update([0u8; 128]);
        debug_assert!(!dst.is_empty() && dst.len() <= 255);
        Self {
            after_zpad,
            dst,
            dst_len: u8::try_from(dst.len()).unwrap_or(u8::MAX),
        }
    }

    /// `b₀ = H(Z_pad ‖ msg ‖ I2OSP(96, 2) ‖ I2OSP(0, 1) ‖ DST′)`, `b₁ = H(b₀ ‖ 1 ‖ DST′)`,
    /// `b₂ = H((b₀ ⊕ b₁) ‖ 2 ‖ DST′)`; the 96 bytes `b₁ ‖ b₂[..32]` as two 48-byte big-endian
    /// integers reduced mod p ([`field_elements`]).
    fn hash(&self, msg: &[u8]) -> [[u64; 5]; 2] {
        let mut h = self.after_zpad.clone();
        h.update(msg);
        h.update([0u8, 96, 0]);
        h.update(self.dst);
        h.update([self.dst_len]);
        let b0 = h.finalize();
        let block = |prev: &[u8], i: u8| {
            let mut h = Sha512::new();
            h.update(prev);
            h.update([i]);
            h.update(self.dst);
            h.update([self.dst_len]);
            h.finalize()
        };
        let b1 = block(&b0, 1);
        let mut x = [0u8; 64];
        for (x, (a, b)) in x.iter_mut().zip(b0.iter().zip(b1.iter())) {
            *x = a ^ b;
        }
        let b2 = block(&x, 2);
        let mut bytes = [0u8; 96];
        bytes[..64].copy_from_slice(&b1);
        bytes[64..].copy_from_slice(&b2[..32]);
        field_elements(&bytes)
    }
}

/// RFC 9380 §5.2 `hash_to_field` with `count = 2`, `L = 48` from the 96 bytes of
/// `expand_message_xmd`: each 48-byte half as a big-endian integer reduced mod p, in limbs.
#[cfg(obliv_x86_simd)]
fn field_elements(uniform: &[u8; 96]) -> [[u64; 5]; 2] {
    [reduce48(&uniform[..48]), reduce48(&uniform[48..])]
}

/// A 48-byte big-endian integer (`< 2^384`) mod `p = 2^255 − 19`, as five limbs below
/// `2^51 + 2^11`: eight 51-bit limbs, the top three folded with `2^255 ≡ 19`, one carry pass.
#[cfg(obliv_x86_simd)]
#[allow(clippy::cast_possible_truncation)] // 51-bit limb extraction
fn reduce48(be: &[u8]) -> [u64; 5] {
    const M: u64 = (1 << 51) - 1;
    let mut le = [0u8; 56];
    for (d, s) in le.iter_mut().zip(be.iter().rev()) {
        *d = *s;
    }
    let limb = |i: usize| {
        let bit = 51 * i;
        let mut w = [0u8; 16];
        let start = bit / 8;
        let end = (start + 16).min(56);
        w[..end - start].copy_from_slice(&le[start..end]);
        ((u128::from_le_bytes(w) >> (bit % 8)) as u64) & M
    };
    let mut l = [0u64; 8];
    for (i, x) in l.iter_mut().enumerate() {
        *x = limb(i);
    }
    // l5, l6 < 2^51, l7 < 2^27: the sums stay below 2^56.
    let mut r = [
        l[0] + 19 * l[5],
        l[1] + 19 * l[6],
        l[2] + 19 * l[7],
        l[3],
        l[4],
    ];
    let mut c = 0;
    for x in &mut r {
        *x += c;
        c = *x >> 51;
        *x &= M;
    }
    r[0] += 19 * c;
    r
}

impl PrimeGroup for X25519 {
    const NAME: &'static str = "x25519";
    const SUITE_ID: &'static str = "curve25519_XMD:SHA-512_ELL2_RO_";
    const DEFAULT_DST: &'static [u8] = b"obliv-ec-v1-curve25519_XMD:SHA-512_ELL2_RO_";
    const ENCODED_LEN: usize = 32;
    /// 1024 rather than [`crate::BATCH_CHUNK`]: the batched on-curve test costs 5
    /// exponentiations per chunk whatever its size, so its share per point falls fourfold
    /// from 256 to 1024 (module documentation).
    const CHUNK: usize = 1024;

    type ScalarInner = Scalar;
    type Point = X25519Point;
    type Encoded = [u8; 32];

    fn hash_to_point_with_dst(msg: &[u8], dst: &[u8]) -> Result<X25519Point, Error> {
        let dst = effective_dst(dst)?;
        // dalek panics only for an empty DST or one over 255 bytes, excluded above.
        Ok(X25519Point(
            EdwardsPoint::hash_to_curve::<Sha512>(&[msg], &[&dst])
                .to_montgomery()
                .to_bytes(),
        ))
    }

    fn hash_to_point(msg: &[u8]) -> X25519Point {
        X25519Point(
            EdwardsPoint::hash_to_curve::<Sha512>(&[msg], &[Self::DEFAULT_DST])
                .to_montgomery()
                .to_bytes(),
        )
    }

    fn generator() -> X25519Point {
        X25519Point(curve25519_dalek::constants::X25519_BASEPOINT.to_bytes())
    }

    fn identity() -> X25519Point {
        X25519Point([0u8; 32])
    }

    fn mul(point: &X25519Point, k: &SecretScalar<Scalar>) -> X25519Point {
        X25519Point(mul_any(&point.0, &torsion_free_scalar(&k.0)))
    }

    fn mul_base(k: &SecretScalar<Scalar>) -> X25519Point {
        X25519Point(MontgomeryPoint::mul_base(&k.0).to_bytes())
    }

    fn encode(point: &X25519Point) -> [u8; 32] {
        point.0
    }

    fn decode(bytes: &[u8]) -> Result<X25519Point, Error> {
        let p = validate(bytes)?;
        // P₀ = [s'₁]P with s'₁ = 8·(8⁻¹ mod ℓ): t = 8⁻¹ mod ℓ.
        Ok(X25519Point(mul_edwards(
            &p,
            &Scalar::from_bytes_mod_order(INV_EIGHT),
        )))
    }

    fn random_scalar<R: CryptoRng + ?Sized>(rng: &mut R) -> SecretScalar<Scalar> {
        scalar25519::random(rng)
    }

    fn scalar_invert(k: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
        scalar25519::invert(k)
    }

    fn scalar_mul(a: &SecretScalar<Scalar>, b: &SecretScalar<Scalar>) -> SecretScalar<Scalar> {
        scalar25519::mul(a, b)
    }

    fn scalar_to_bytes(k: &SecretScalar<Scalar>) -> Zeroizing<Vec<u8>> {
        scalar25519::to_bytes(k)
    }

    fn scalar_from_bytes(bytes: &[u8]) -> Result<SecretScalar<Scalar>, Error> {
        scalar25519::from_bytes(bytes, Self::NAME)
    }

    fn mul_and_encode_chunk(
        points: &[X25519Point],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) {
        crate::assert_out_len(points.len(), out.len());
        #[cfg(obliv_x86_simd)]
        if let Some(ifma) = ifma() {
            // The points may be hashes of private items (the default hash path): the copy is
            // wiped once the chunk is done.
            let us: Zeroizing<Vec<[u8; 32]>> = Zeroizing::new(points.iter().map(|p| p.0).collect());
            let t = torsion_free_t(&k.0);
            // Without the on-curve check the lanes cannot fail.
            if ifma.x25519_mul(&us, &t, out, false) {
                return;
            }
        }
        Self::mul_and_encode_chunk_serial(points, k, out);
    }

    fn hash_mul_and_encode_chunk<T: AsRef<[u8]>>(
        items: &[T],
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) {
        crate::assert_out_len(items.len(), out.len());
        #[cfg(obliv_x86_simd)]
        if let Some(ifma) = ifma() {
            // expand_message_xmd (SHA-512, eight items per AVX-512F lane group) and
            // hash_to_field per item, then the two Elligator 2 maps, the sum and the ladder in
            // lanes: the same RFC 9380 suite as `hash_to_point`. The ladder's scalar is 8k, so
            // [8k](Q₀ + Q₁) = [k]H: the cofactor clearing costs nothing extra (H has no
            // torsion, so s' is not needed).
            // The expanded bytes and field elements of the (private) items are wiped when
            // the chunk is done.
            let mut uniform = Zeroizing::new(vec![[0u8; 96]; items.len()]);
            ifma.expand_message_xmd_sha512(items, Self::DEFAULT_DST, &mut uniform);
            let fe: Zeroizing<Vec<[[u64; 5]; 2]>> =
                Zeroizing::new(uniform.iter().map(field_elements).collect());
            ifma.x25519_hash_mul(&fe, &Zeroizing::new(k.0.to_bytes()), out);
            return;
        }
        Self::hash_mul_and_encode_chunk_serial(items, k, out);
    }

    fn decode_mul_and_encode_chunk<E: AsRef<[u8]>>(
        encodings: &[E],
        first_index: usize,
        k: &SecretScalar<Scalar>,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        crate::check_out_len(encodings.len(), out.len())?;
        #[cfg(obliv_x86_simd)]
        if let Some(ifma) = ifma() {
            // The byte checks serially (public data), the on-curve test in lanes; any
            // failure sends the chunk to the serial path, which names the first bad index.
            let us: Option<Vec<[u8; 32]>> = encodings
                .iter()
                .map(|e| check_bytes(e.as_ref()).ok())
                .collect();
            let t = torsion_free_t(&k.0);
            if let Some(us) = us
                && ifma.x25519_mul(&us, &t, out, true)
            {
                return Ok(());
            }
        }
        Self::decode_mul_and_encode_chunk_serial(encodings, first_index, k, out)
    }
}

#[cfg(test)]
mod tests {
    //! The dispatched batch paths (AVX-512 IFMA lanes on this machine) against the serial
    //! dalek ladder: byte-identical outputs, identical errors.
    use super::*;
    use curve25519_dalek::constants::EIGHT_TORSION;
    use rand::SeedableRng;

    fn points(n: usize, seed: u64) -> Vec<X25519Point> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                X25519Point(
                    EdwardsPoint::random(&mut rng)
                        .mul_by_cofactor()
                        .to_montgomery()
                        .to_bytes(),
                )
            })
            .collect()
    }

    fn scalars() -> Vec<SecretScalar<Scalar>> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(99);
        vec![
            SecretScalar(Scalar::ONE),
            SecretScalar(-Scalar::ONE), // ℓ − 1
            SecretScalar(Scalar::from(2u8)),
            SecretScalar(Scalar::from(8u8)),
            SecretScalar(Scalar::from_bytes_mod_order(INV_EIGHT)),
            SecretScalar(Scalar::random(&mut rng)),
            SecretScalar(Scalar::random(&mut rng)),
        ]
    }

    #[test]
    fn lanes_match_serial_ladder() {
        for n in [0usize, 1, 7, 8, 9, 17, 33, 100, 256] {
            let mut pts = points(n, n as u64);
            if n > 3 {
                pts[2] = X25519::identity();
            }
            for k in &scalars() {
                let mut fast = vec![[0u8; 32]; n];
                let mut slow = vec![[0u8; 32]; n];
                X25519::mul_and_encode_chunk(&pts, k, &mut fast);
                X25519::mul_and_encode_chunk_serial(&pts, k, &mut slow);
                assert_eq!(fast, slow, "n = {n}");
                // For points of the prime-order group [s']P = [k]P: dalek's plain ladder.
                let plain: Vec<[u8; 32]> = pts
                    .iter()
                    .map(|p| (p.to_montgomery() * k.0).to_bytes())
                    .collect();
                assert_eq!(fast, plain, "n = {n}");
            }
        }
    }

    /// Mixed-order inputs `P₀ + T`: the lanes and the serial path give `u([k]P₀)`.
    #[test]
    fn decode_mul_projects_torsion() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let n = 40;
        let clean: Vec<EdwardsPoint> = (0..n)
            .map(|_| EdwardsPoint::random(&mut rng).mul_by_cofactor())
            .collect();
        let dirty: Vec<[u8; 32]> = clean
            .iter()
            .enumerate()
            .map(|(i, p)| (p + EIGHT_TORSION[i % 8]).to_montgomery().to_bytes())
            .collect();
        for k in &scalars() {
            let mut fast = vec![[0u8; 32]; n];
            let mut slow = vec![[0u8; 32]; n];
            X25519::decode_mul_and_encode_chunk(&dirty, 3, k, &mut fast).unwrap();
            X25519::decode_mul_and_encode_chunk_serial(&dirty, 3, k, &mut slow).unwrap();
            assert_eq!(fast, slow);
            let want: Vec<[u8; 32]> = clean
                .iter()
                .map(|p| (p * k.0).to_montgomery().to_bytes())
                .collect();
            assert_eq!(fast, want);
        }
    }

    /// A u-coordinate on the twist (`u³ + A·u² + u` not a square), canonical and not small.
    fn twist_u(seed: u64) -> [u8; 32] {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        loop {
            let mut b: [u8; 32] = rand::RngExt::random(&mut rng);
            b[31] &= 0x7f;
            if check_bytes(&b).is_ok() && MontgomeryPoint(b).to_edwards(0).is_none() {
                return b;
            }
        }
    }

    /// Chunks long enough for the batched (random-subset) on-curve test: valid chunks, torsioned
    /// or not, give the serial path's output; one or two twist points anywhere (first lane,
    /// a middle one, the last lane of a partial last vector) are caught and reported at the
    /// serial path's index. Two twist points matter: their product is a square, so a test that
    /// multiplied every `wᵢ` together would miss them.
    #[test]
    fn batched_on_curve_test_catches_twist_points() {
        let k = &scalars()[6];
        for n in [64usize, 65, 200, 1024] {
            let good: Vec<[u8; 32]> = points(n, 1000 + n as u64).iter().map(|p| p.0).collect();
            let mut fast = vec![[0u8; 32]; n];
            let mut slow = vec![[0u8; 32]; n];
            X25519::decode_mul_and_encode_chunk(&good, 0, k, &mut fast).unwrap();
            X25519::decode_mul_and_encode_chunk_serial(&good, 0, k, &mut slow).unwrap();
            assert_eq!(fast, slow, "n = {n}");
            let positions = [vec![0], vec![n / 2], vec![n - 1], vec![3, n - 2]];
            for (case, at) in positions.iter().enumerate() {
                let mut batch = good.clone();
                for (j, &i) in at.iter().enumerate() {
                    batch[i] = twist_u(100 * case as u64 + j as u64);
                }
                let e1 = X25519::decode_mul_and_encode_chunk(&batch, 10, k, &mut fast).unwrap_err();
                let e2 = X25519::decode_mul_and_encode_chunk_serial(&batch, 10, k, &mut slow)
                    .unwrap_err();
                assert_eq!(e1, e2, "n = {n}, twist at {at:?}");
                let Error::Batch { index, .. } = e1 else {
                    panic!("{e1:?}")
                };
                assert_eq!(index, 10 + at[0]);
            }
        }
    }

    /// The whole batch API with the group's 1024-point chunks (two tasks and a remainder):
    /// the same bytes as the serial path.
    #[test]
    fn batch_api_uses_large_chunks() {
        assert_eq!(X25519::CHUNK, 1024);
        let k = &scalars()[5];
        let n = 2 * X25519::CHUNK + 77;
        let pts: Vec<[u8; 32]> = points(n, 4242).iter().map(|p| p.0).collect();
        let fast = X25519::mul_encoded_batch(&pts, k).unwrap();
        let mut slow = vec![[0u8; 32]; n];
        X25519::decode_mul_and_encode_chunk_serial(&pts, 0, k, &mut slow).unwrap();
        assert_eq!(fast, slow);
        let mut bad = pts.clone();
        bad[X25519::CHUNK + 5] = twist_u(9);
        let e = X25519::mul_encoded_batch(&bad, k).unwrap_err();
        assert!(
            matches!(e, Error::Batch { index, .. } if index == X25519::CHUNK + 5),
            "{e:?}"
        );
    }

    #[test]
    fn hash_lanes_match_serial() {
        for n in [0usize, 1, 8, 15, 16, 17, 40, 100] {
            let items: Vec<Vec<u8>> = (0..n).map(|i| format!("item {i}").into_bytes()).collect();
            for k in &scalars() {
                let mut fast = vec![[0u8; 32]; n];
                let mut slow = vec![[0u8; 32]; n];
                X25519::hash_mul_and_encode_chunk(&items, k, &mut fast);
                X25519::hash_mul_and_encode_chunk_serial(&items, k, &mut slow);
                assert_eq!(fast, slow, "n = {n}");
            }
        }
    }

    /// The lanes' hash with the RFC 9380 Appendix J.7.1 DST (the eight-lane
    /// `expand_message_xmd`, `hash_to_field`, the maps and the ladder), multiplied by 1, gives
    /// `P.x`; the field elements equal the serial expander's.
    #[cfg(obliv_x86_simd)]
    #[test]
    fn hash_lanes_rfc9380_vectors() {
        let Some(ifma) = crate::ifma25519::lanes_for_test("hash_lanes_rfc9380_vectors") else {
            return;
        };
        let dst = b"QUUX-V01-CS02-with-curve25519_XMD:SHA-512_ELL2_RO_";
        let h2f = HashToField::new(dst);
        let msgs: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"abc".to_vec(),
            b"abcdef0123456789".to_vec(),
            [b"q128_".as_slice(), &[b'q'; 128]].concat(),
            [b"a512_".as_slice(), &[b'a'; 512]].concat(),
        ];
        let px = [
            "2de3780abb67e861289f5749d16d3e217ffa722192d16bbd9d1bfb9d112b98c0",
            "2b4419f1f2d48f5872de692b0aca72cc7b0a60915dd70bde432e826b6abc526d",
            "68ca1ea5a6acf4e9956daa101709b1eee6c1bb0df1de3b90d4602382a104c036",
            "096e9c8bae6c06b554c1ee69383bb0e82267e064236b3a30608d4ed20b73ac5a",
            "1bc61845a138e912f047b5e70ba9606ba2a447a4dade024c8ef3dd42b7bbc5fe",
        ];
        let mut uniform = vec![[0u8; 96]; msgs.len()];
        ifma.expand_message_xmd_sha512(&msgs, dst, &mut uniform);
        let fe: Vec<[[u64; 5]; 2]> = uniform.iter().map(field_elements).collect();
        let serial: Vec<[[u64; 5]; 2]> = msgs.iter().map(|m| h2f.hash(m)).collect();
        assert_eq!(fe, serial);
        let mut out = vec![[0u8; 32]; msgs.len()];
        ifma.x25519_hash_mul(&fe, &Scalar::ONE.to_bytes(), &mut out);
        for (o, want) in out.iter().zip(px) {
            let mut be = *o;
            be.reverse();
            assert_eq!(hex::encode(be), want);
        }
    }

    /// The eight-lane expander against the serial midstate one ([`HashToField`]) with the
    /// group's DST, for every message length from 0 to 300 bytes (groups of eight different
    /// lengths crossing the block boundaries, and a last group of five).
    #[cfg(obliv_x86_simd)]
    #[test]
    fn hash_to_field_lanes_match_serial() {
        let Some(ifma) = crate::ifma25519::lanes_for_test("hash_to_field_lanes_match_serial")
        else {
            return;
        };
        let h2f = HashToField::new(X25519::DEFAULT_DST);
        let msgs: Vec<Vec<u8>> = (0..=300usize)
            .map(|len| {
                (0..len)
                    .map(|i| u8::try_from((i * 13 + len) % 256).unwrap())
                    .collect()
            })
            .collect();
        let mut uniform = vec![[0u8; 96]; msgs.len()];
        ifma.expand_message_xmd_sha512(&msgs, X25519::DEFAULT_DST, &mut uniform);
        for (m, u) in msgs.iter().zip(&uniform) {
            assert_eq!(field_elements(u), h2f.hash(m), "len {}", m.len());
        }
    }

    /// The lanes' ladder itself (not the dispatch) against the serial paths, lane for lane:
    /// without the on-curve check on curve and twist `u`s (the lanes, like dalek's ladder,
    /// compute on the twist), with it on valid chunks of every size around the vector width and
    /// the batched test's threshold, and the check failing when one `u` is on the twist.
    #[cfg(obliv_x86_simd)]
    #[test]
    fn ladder_kernel_matches_serial() {
        let Some(ifma) = crate::ifma25519::lanes_for_test("ladder_kernel_matches_serial") else {
            return;
        };
        for n in [1usize, 7, 8, 9, 17, 63, 64, 65, 130] {
            let mut us: Vec<[u8; 32]> = points(n, 500 + n as u64).iter().map(|p| p.0).collect();
            for k in &scalars() {
                let t = torsion_free_t(&k.0);
                let want: Vec<[u8; 32]> = us
                    .iter()
                    .map(|u| mul_any(u, &torsion_free_scalar(&k.0)))
                    .collect();
                let mut got = vec![[0u8; 32]; n];
                assert!(ifma.x25519_mul(&us, &t, &mut got, true), "n = {n}");
                assert_eq!(got, want, "checked, n = {n}");
                let mut got = vec![[0u8; 32]; n];
                assert!(ifma.x25519_mul(&us, &t, &mut got, false));
                assert_eq!(got, want, "unchecked, n = {n}");
            }
            // A twist point: unchecked, the lanes compute on the twist as dalek's ladder does;
            // checked, the chunk is rejected.
            us[n / 2] = twist_u(n as u64);
            let k = &scalars()[6];
            let t = torsion_free_t(&k.0);
            let want: Vec<[u8; 32]> = us
                .iter()
                .map(|u| mul_any(u, &torsion_free_scalar(&k.0)))
                .collect();
            let mut got = vec![[0u8; 32]; n];
            assert!(ifma.x25519_mul(&us, &t, &mut got, false));
            assert_eq!(got, want, "twist, n = {n}");
            assert!(
                !ifma.x25519_mul(&us, &t, &mut got, true),
                "twist caught, n = {n}"
            );
        }
    }

    /// The lanes' hash-and-multiply itself (eight-lane `expand_message_xmd`,
    /// `hash_to_field`, both Elligator 2 maps, the sum, the shared inversion and the ladder)
    /// against dalek's RFC 9380 hash times `k`, lane for lane.
    #[cfg(obliv_x86_simd)]
    #[test]
    fn hash_kernel_matches_serial() {
        let Some(ifma) = crate::ifma25519::lanes_for_test("hash_kernel_matches_serial") else {
            return;
        };
        for n in [1usize, 7, 8, 9, 16, 17, 100] {
            let items: Vec<Vec<u8>> = (0..n)
                .map(|i| format!("kernel item {i} of {n}").into_bytes())
                .collect();
            for k in &scalars() {
                let mut uniform = vec![[0u8; 96]; n];
                ifma.expand_message_xmd_sha512(&items, X25519::DEFAULT_DST, &mut uniform);
                let fe: Vec<[[u64; 5]; 2]> = uniform.iter().map(field_elements).collect();
                let mut got = vec![[0u8; 32]; n];
                ifma.x25519_hash_mul(&fe, &Zeroizing::new(k.0.to_bytes()), &mut got);
                let mut want = vec![[0u8; 32]; n];
                X25519::hash_mul_and_encode_chunk_serial(&items, k, &mut want);
                assert_eq!(got, want, "n = {n}");
            }
        }
    }

    /// Invalid encodings at a given index: the dispatched path reports the same error at the
    /// same index as the serial one (twist points are caught by the lanes' on-curve test,
    /// the rest by the byte checks).
    #[test]
    fn decode_errors_match_serial() {
        let k = &scalars()[5];
        let good: Vec<Vec<u8>> = points(20, 5).iter().map(|p| p.0.to_vec()).collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(77);
        let twist = loop {
            let mut b: [u8; 32] = rand::RngExt::random(&mut rng);
            b[31] &= 0x7f;
            if MontgomeryPoint(b).to_edwards(0).is_none() {
                break b.to_vec();
            }
        };
        let mut p_minus_1 = vec![0xffu8; 32];
        p_minus_1[0] = 0xec;
        p_minus_1[31] = 0x7f;
        let mut p = p_minus_1.clone();
        p[0] = 0xed;
        let mut top = good[0].clone();
        top[31] |= 0x80;
        let mut one = vec![0u8; 32];
        one[0] = 1;
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![0u8; 32], "Identity"),
            (one, "InvalidPoint"),
            (ORDER_EIGHT_U[0].to_vec(), "InvalidPoint"),
            (ORDER_EIGHT_U[1].to_vec(), "InvalidPoint"),
            (p_minus_1, "InvalidPoint"),
            (p, "InvalidPoint"),
            (top, "InvalidPoint"),
            (twist, "InvalidPoint"),
            (vec![9u8; 31], "WrongLength"),
        ];
        for (bad, kind) in cases {
            for at in [0usize, 9, 19] {
                let mut batch = good.clone();
                batch[at] = bad.clone();
                let mut o1 = vec![[0u8; 32]; 20];
                let mut o2 = vec![[0u8; 32]; 20];
                let e1 = X25519::decode_mul_and_encode_chunk(&batch, 256, k, &mut o1).unwrap_err();
                let e2 = X25519::decode_mul_and_encode_chunk_serial(&batch, 256, k, &mut o2)
                    .unwrap_err();
                assert_eq!(e1, e2);
                let Error::Batch { index, source } = e1 else {
                    panic!("{e1:?}")
                };
                assert_eq!(index, 256 + at);
                assert!(
                    format!("{source:?}").starts_with(kind),
                    "{source:?} vs {kind}"
                );
            }
        }
    }

    /// The lanes' RFC 7748 function against dalek's on random scalars and u (including
    /// u ≥ p and bit 255 set, which RFC 7748 reduces / masks).
    #[test]
    fn rfc7748_lanes_match_dalek() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for i in 0..64 {
            let k: [u8; 32] = rand::RngExt::random(&mut rng);
            let mut u: [u8; 32] = rand::RngExt::random(&mut rng);
            if i == 0 {
                u = [0xff; 32]; // 2^256 − 1: masked to 2^255 − 1 ≥ p
            }
            assert_eq!(
                X25519::x25519_rfc7748(&k, &u),
                X25519::x25519_rfc7748_serial(&k, &u)
            );
        }
    }
}
