//! Curve constants, all taken from Microsoft's FourQlib (`FourQ_params.h`, `eccp2.c`,
//! `hash_to_curve.c`, FourQ_64bit_and_portable) and CL15 (<https://eprint.iacr.org/2015/565>).
//!
//! GF(p²) constants are written as FourQlib's four 64-bit words `a0.lo, a0.hi, a1.lo, a1.hi`.

use crate::field::{Fp, Fp2};

/// The curve parameter `d` of `−x² + y² = 1 + d·x²·y²` ([CL15, §2]; FourQlib `PARAMETER_d`).
pub(crate) const D: Fp2 = Fp2::from_words([
    0x0000000000000142,
    0x00000000000000E4,
    0xB3821488F1FC0C8D,
    0x5E472F846657E0FC,
]);

/// `x` of the generator (FourQlib `GENERATOR_x`).
pub(crate) const GEN_X: Fp2 = Fp2::from_words([
    0x286592AD7B3833AA,
    0x1A3472237C2FB305,
    0x96869FB360AC77F6,
    0x1E1F553F2878AA9C,
]);
/// `y` of the generator (FourQlib `GENERATOR_y`).
pub(crate) const GEN_Y: Fp2 = Fp2::from_words([
    0xB924A2462BCBB287,
    0x0E3FEE9BA120785A,
    0x49A7C344844C8B5C,
    0x6E1C4AF8630E0242,
]);

/// The prime order `N` of the subgroup, 246 bits, little-endian words (FourQlib `curve_order`).
pub(crate) const ORDER: [u64; 4] = [
    0x2FB2540EC7768CE7,
    0xDFBD004DFE0F7999,
    0xF05397829CBC14E5,
    0x0029CBC14E5E0A72,
];

/// `392⁻¹ mod N`, little-endian words: divides a scalar by the cofactor, so that
/// `[k·392⁻¹]([392]P) = [k]P` for `P` in the order-`N` subgroup (checked by a test).
pub(crate) const INV_COFACTOR: [u64; 4] = [
    0x19FBEB877B2691F3,
    0x5B1F37C5A96F4350,
    0xA61E1145D66AD5E2,
    0x0023EE839264702A,
];

// ---- Endomorphisms ψ and φ ([CL15, §3, App. A]; FourQlib `eccp2.c`). ----
pub(crate) const CTAU1: Fp2 = Fp2::from_words([0x74DCD57CEBCE74C3, 0x1964DE2C3AFAD20C, 0x12, 0x0C]);
pub(crate) const CTAUDUAL1: Fp2 = Fp2::from_words([
    0x9ECAA6D9DECDF034,
    0x4AA740EB23058652,
    0x11,
    0x7FFFFFFFFFFFFFF4,
]);
pub(crate) const CPHI0: Fp2 = Fp2::from_words([
    0xFFFFFFFFFFFFFFF7,
    0x05,
    0x4F65536CEF66F81A,
    0x2553A0759182C329,
]);
pub(crate) const CPHI1: Fp2 = Fp2::from_words([0x07, 0x05, 0x334D90E9E28296F9, 0x62C8CAA0C50C62CF]);
pub(crate) const CPHI2: Fp2 = Fp2::from_words([0x15, 0x0F, 0x2C2CB7154F1DF391, 0x78DF262B6C9B5C98]);
pub(crate) const CPHI3: Fp2 = Fp2::from_words([0x03, 0x02, 0x92440457A7962EA4, 0x5084C6491D76342A]);
pub(crate) const CPHI4: Fp2 = Fp2::from_words([0x03, 0x03, 0xA1098C923AEC6855, 0x12440457A7962EA4]);
pub(crate) const CPHI5: Fp2 = Fp2::from_words([0x0F, 0x0A, 0x669B21D3C5052DF3, 0x459195418A18C59E]);
pub(crate) const CPHI6: Fp2 = Fp2::from_words([0x18, 0x12, 0xCD3643A78A0A5BE7, 0x0B232A8314318B3C]);
pub(crate) const CPHI7: Fp2 = Fp2::from_words([0x23, 0x18, 0x66C183035F48781A, 0x3963BC1C99E2EA1A]);
pub(crate) const CPHI8: Fp2 = Fp2::from_words([0xF0, 0xAA, 0x44E251582B5D0EF0, 0x1F529F860316CBE5]);
pub(crate) const CPHI9: Fp2 =
    Fp2::from_words([0xBEF, 0x870, 0x014D3E48976E2505, 0x0FD52E9CFE00375B]);
pub(crate) const CPSI1: Fp2 =
    Fp2::from_words([0xEDF07F4767E346EF, 0x2AF99E9A83D54A02, 0x13A, 0xDE]);
pub(crate) const CPSI2: Fp2 =
    Fp2::from_words([0x143, 0xE4, 0x4C7DEB770E03F372, 0x21B8D07B99A81F03]);
pub(crate) const CPSI3: Fp2 = Fp2::from_words([0x09, 0x06, 0x3A6E6ABE75E73A61, 0x4CB26F161D7D6906]);
pub(crate) const CPSI4: Fp2 = Fp2::from_words([
    0xFFFFFFFFFFFFFFF6,
    0x7FFFFFFFFFFFFFF9,
    0xC59195418A18C59E,
    0x334D90E9E28296F9,
]);

// ---- Four-dimensional decomposition ([CL15, §4]; FourQlib `eccp2.c`). ----
/// The offset vector `c` that makes the first sub-scalar odd.
pub(crate) const DEC_C: [u64; 4] = [
    0x72482C5251A4559C,
    0x59F95B0ADD276F6C,
    0x7DD2D17C4625FA78,
    0x6BC57DEF56CE8877,
];
/// Basis entries `b_ij` of the reduced lattice (`b22 = 1`, `b23 = −1` implicitly).
pub(crate) const B11: u64 = 0x0906FF27E0A0A196;
pub(crate) const B12: u64 = 0x1363E862C22A2DA0;
pub(crate) const B13: u64 = 0x07426031ECC8030F;
pub(crate) const B14: u64 = 0x084F739986B9E651;
pub(crate) const B21: u64 = 0x1D495BEA84FCC2D4;
pub(crate) const B24: u64 = 0x25DBC5BC8DD167D0;
pub(crate) const B31: u64 = 0x17ABAD1D231F0302;
pub(crate) const B32: u64 = 0x02C4211AE388DA51;
pub(crate) const B33: u64 = 0x2E4D21C98927C49F;
pub(crate) const B34: u64 = 0x0A9E6F44C02ECD97;
pub(crate) const B41: u64 = 0x136E340A9108C83F;
pub(crate) const B42: u64 = 0x3122DF2DC3E0FF32;
pub(crate) const B43: u64 = 0x068A49F02AA8A9B5;
pub(crate) const B44: u64 = 0x18D5087896DE0AEA;
/// Babai rounding multipliers `ℓ_i ≈ 2^256·α_i/N`.
pub(crate) const ELL: [[u64; 4]; 4] = [
    [
        0x259686E09D1A7D4F,
        0xF75682ACE6A6BD66,
        0xFC5BB5C5EA2BE5DF,
        0x07,
    ],
    [
        0xD1BA1D84DD627AFB,
        0x2BD235580F468D8D,
        0x8FD4B04CAA6C0F8A,
        0x03,
    ],
    [
        0x9B291A33678C203C,
        0xC42BD6C965DCA902,
        0xD038BF8D0BFFBAF6,
        0x00,
    ],
    [
        0x12E5666B77E7FDC0,
        0x81CBDC3714983D82,
        0x1B073877A22D8410,
        0x03,
    ],
];

// ---- Hash to curve (FourQlib `hash_to_curve.c` / `FourQ_params.h`, 64-bit words). ----
const fn fp(lo: u64, hi: u64) -> Fp {
    Fp([lo, hi])
}
pub(crate) const H2C_CON1: Fp = fp(6651107, 9223372036850072768);
pub(crate) const H2C_CON2: Fp = fp(7387256751988042354, 3037402815281497692);
pub(crate) const H2C_B0: Fp = fp(11442141257964318772, 5379339658566403666);
pub(crate) const H2C_B1: Fp = fp(17, 9223372036854775796);
pub(crate) const H2C_A0: Fp = fp(1289, 9223372036854774896);
pub(crate) const H2C_A1: Fp = fp(12311914987857864728, 7168186187914912079);
