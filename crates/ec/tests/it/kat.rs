//! Known-answer tests, each from the named standard.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use obliv_ec::{Error, P256, PrimeGroup, Ristretto255, Secp256k1, Sm2};

use crate::common;

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

/// SEC1 compressed form of an affine point given as big-endian hex coordinates.
fn compressed(x: &str, y: &str) -> Vec<u8> {
    let y = h(y);
    let mut out = vec![0x02 | (y[31] & 1)];
    out.extend_from_slice(&h(x));
    out
}

/// RFC 9380 Appendix J.8.1, secp256k1_XMD:SHA-256_SSWU_RO_ (msg, P.x, P.y).
#[test]
fn rfc9380_j_8_1_secp256k1() {
    const DST: &[u8] = b"QUUX-V01-CS02-with-secp256k1_XMD:SHA-256_SSWU_RO_";
    let q128 = format!("q128_{}", "q".repeat(128));
    let vectors: [(&[u8], &str, &str); 4] = [
        (
            b"",
            "c1cae290e291aee617ebaef1be6d73861479c48b841eaba9b7b5852ddfeb1346",
            "64fa678e07ae116126f08b022a94af6de15985c996c3a91b64c406a960e51067",
        ),
        (
            b"abc",
            "3377e01eab42db296b512293120c6cee72b6ecf9f9205760bd9ff11fb3cb2c4b",
            "7f95890f33efebd1044d382a01b1bee0900fb6116f94688d487c6c7b9c8371f6",
        ),
        (
            b"abcdef0123456789",
            "bac54083f293f1fe08e4a70137260aa90783a5cb84d3f35848b324d0674b0e3a",
            "4436476085d4c3c4508b60fcf4389c40176adce756b398bdee27bca19758d828",
        ),
        (
            q128.as_bytes(),
            "e2167bc785333a37aa562f021f1e881defb853839babf52a7f72b102e41890e9",
            "f2401dd95cc35867ffed4f367cd564763719fbc6a53e969fb8496a1e6685d873",
        ),
    ];
    for (msg, x, y) in vectors {
        let p = Secp256k1::hash_to_point_with_dst(msg, DST).unwrap();
        assert_eq!(Secp256k1::encode(&p).to_vec(), compressed(x, y));
    }
}

/// RFC 9380 Appendix J.1.1, P256_XMD:SHA-256_SSWU_RO_ (msg, P.x, P.y).
#[test]
fn rfc9380_j_1_1_p256() {
    const DST: &[u8] = b"QUUX-V01-CS02-with-P256_XMD:SHA-256_SSWU_RO_";
    let q128 = format!("q128_{}", "q".repeat(128));
    let vectors: [(&[u8], &str, &str); 4] = [
        (
            b"",
            "2c15230b26dbc6fc9a37051158c95b79656e17a1a920b11394ca91c44247d3e4",
            "8a7a74985cc5c776cdfe4b1f19884970453912e9d31528c060be9ab5c43e8415",
        ),
        (
            b"abc",
            "0bb8b87485551aa43ed54f009230450b492fead5f1cc91658775dac4a3388a0f",
            "5c41b3d0731a27a7b14bc0bf0ccded2d8751f83493404c84a88e71ffd424212e",
        ),
        (
            b"abcdef0123456789",
            "65038ac8f2b1def042a5df0b33b1f4eca6bff7cb0f9c6c1526811864e544ed80",
            "cad44d40a656e7aff4002a8de287abc8ae0482b5ae825822bb870d6df9b56ca3",
        ),
        (
            q128.as_bytes(),
            "4be61ee205094282ba8a2042bcb48d88dfbb609301c49aa8b078533dc65a0b5d",
            "98f8df449a072c4721d241a3b1236d3caccba603f916ca680f4539d2bfb3c29e",
        ),
    ];
    for (msg, x, y) in vectors {
        let p = P256::hash_to_point_with_dst(msg, DST).unwrap();
        assert_eq!(P256::encode(&p).to_vec(), compressed(x, y));
    }
}

/// RFC 9496 Appendix A.1: encodings of `[i]B` for i = 0..16 (i = 0 is the identity).
const RISTRETTO_MULTIPLES: [&str; 16] = [
    "0000000000000000000000000000000000000000000000000000000000000000",
    "e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76",
    "6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919",
    "94741f5d5d52755ece4f23f044ee27d5d1ea1e2bd196b462166b16152a9d0259",
    "da80862773358b466ffadfe0b3293ab3d9fd53c5ea6c955358f568322daf6a57",
    "e882b131016b52c1d3337080187cf768423efccbb517bb495ab812c4160ff44e",
    "f64746d3c92b13050ed8d80236a7f0007c3b3f962f5ba793d19a601ebb1df403",
    "44f53520926ec81fbd5a387845beb7df85a96a24ece18738bdcfa6a7822a176d",
    "903293d8f2287ebe10e2374dc1a53e0bc887e592699f02d077d5263cdd55601c",
    "02622ace8f7303a31cafc63f8fc48fdc16e1c8c8d234b2f0d6685282a9076031",
    "20706fd788b2720a1ed2a5dad4952b01f413bcf0e7564de8cdc816689e2db95f",
    "bce83f8ba5dd2fa572864c24ba1810f9522bc6004afe95877ac73241cafdab42",
    "e4549ee16b9aa03099ca208c67adafcafa4c3f3e4e5303de6026e3ca8ff84460",
    "aa52e000df2e16f55fb1032fc33bc42742dad6bd5a8fc0be0167436c5948501f",
    "46376b80f409b29dc2b5f6f0c52591990896e5716f41477cd30085ab7f10301e",
    "e0c418f7c8d9c4cdd7395b93ea124f3ad99021bb681dfc3302a9d99a2e53e64e",
];

#[test]
fn rfc9496_a1_small_multiples() {
    let mut rng = rand::rng();
    for (i, enc) in RISTRETTO_MULTIPLES.iter().enumerate() {
        let mut k = [0u8; 32];
        k[0] = u8::try_from(i).unwrap();
        if i == 0 {
            // The identity encodes as zeros and is rejected on decode.
            assert_eq!(
                Ristretto255::decode(&h(enc)),
                Err(Error::Identity { group: "25519" })
            );
            continue;
        }
        let s = Ristretto255::scalar_from_bytes(&k).unwrap();
        assert_eq!(
            Ristretto255::encode(&Ristretto255::mul_base(&s)).to_vec(),
            h(enc)
        );
        let g = Ristretto255::generator();
        assert_eq!(
            Ristretto255::encode(&Ristretto255::mul(&g, &s)).to_vec(),
            h(enc)
        );
        // Decoding and re-encoding is the identity map on valid encodings.
        let p = Ristretto255::decode(&h(enc)).unwrap();
        assert_eq!(Ristretto255::encode(&p).to_vec(), h(enc));
        // The batch path with its halving trick agrees.
        let b = Ristretto255::mul_encoded_batch(&[Ristretto255::encode(&g)], &s).unwrap();
        assert_eq!(b[0].to_vec(), h(enc));
        let _ = Ristretto255::random_scalar(&mut rng);
    }
}

/// RFC 9496 Appendix A.2: invalid encodings (non-canonical field encodings, negative field
/// elements, non-square x², negative xy, s = −1 giving y = 0).
#[test]
fn rfc9496_a2_bad_encodings() {
    for b in common::RFC9496_A2_INVALID {
        assert_eq!(
            Ristretto255::decode(&h(b)),
            Err(Error::InvalidPoint { group: "25519" }),
            "{b}"
        );
    }
}

/// RFC 9496 Appendix A.3: the element derivation (one-way map) from 64 uniform bytes.
#[test]
fn rfc9496_a3_element_derivation() {
    let v = [
        (
            "5d1be09e3d0c82fc538112490e35701979d99e06ca3e2b5b54bffe8b4dc772c14d98b696a1bbfb5ca32c436cc61c16563790306c79eaca7705668b47dffe5bb6",
            "3066f82a1a747d45120d1740f14358531a8f04bbffe6a819f86dfe50f44a0a46",
        ),
        (
            "f116b34b8f17ceb56e8732a60d913dd10cce47a6d53bee9204be8b44f6678b270102a56902e2488c46120e9276cfe54638286b9e4b3cdb470b542d46c2068d38",
            "f26e5b6f7d362d2d2a94c5d0e7602cb4773c95a2e5c31a64f133189fa76ed61b",
        ),
        (
            "8422e1bbdaab52938b81fd602effb6f89110e1e57208ad12d9ad767e2e25510c27140775f9337088b982d83d7fcf0b2fa1edffe51952cbe7365e95c86eaf325c",
            "006ccd2a9e6867e6a2c5cea83d3302cc9de128dd2a9a57dd8ee7b9d7ffe02826",
        ),
        (
            "ac22415129b61427bf464e17baee8db65940c233b98afce8d17c57beeb7876c2150d15af1cb1fb824bbd14955f2b57d08d388aab431a391cfc33d5bafb5dbbaf",
            "f8f0c87cf237953c5890aec3998169005dae3eca1fbb04548c635953c817f92a",
        ),
        (
            "165d697a1ef3d5cf3c38565beefcf88c0f282b8e7dbd28544c483432f1cec7675debea8ebb4e5fe7d6f6e5db15f15587ac4d4d4a1de7191e0c1ca6664abcc413",
            "ae81e7dedf20a497e10c304a765c1767a42d6e06029758d2d7e8ef7cc4c41179",
        ),
        (
            "a836e6c9a9ca9f1e8d486273ad56a78c70cf18f0ce10abb1c7172ddd605d7fd2979854f47ae1ccf204a33102095b4200e5befc0465accc263175485f0e17ea5c",
            "e2705652ff9f5e44d3e841bf1c251cf7dddb77d140870d1ab2ed64f1a9ce8628",
        ),
        (
            "2cdc11eaeb95daf01189417cdddbf95952993aa9cb9c640eb5058d09702c74622c9965a697a3b345ec24ee56335b556e677b30e6f90ac77d781064f866a3c982",
            "80bd07262511cdde4863f8a7434cef696750681cb9510eea557088f76d9e5065",
        ),
        (
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff1200000000000000000000000000000000000000000000000000000000000000",
            "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
        ),
        (
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
        ),
        (
            "0000000000000000000000000000000000000000000000000000000000000080ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
        ),
        (
            "00000000000000000000000000000000000000000000000000000000000000001200000000000000000000000000000000000000000000000000000000000080",
            "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
        ),
    ];
    for (input, output) in v {
        let bytes: [u8; 64] = h(input).try_into().unwrap();
        let p = Ristretto255::from_uniform_bytes(&bytes);
        assert_eq!(Ristretto255::encode(&p).to_vec(), h(output));
    }
}

/// GB/T 32918.2-2016 Annex A (recommended curve): public key `d·G` and the signing nonce
/// point `k·G` of the worked example.
#[test]
fn gbt32918_public_key_derivation() {
    let v = [
        (
            "3945208f7b2144b13f36e38ac6d39f95889393692860b51a42fb81ef4df7c5b8",
            "09f9df311e5421a150dd7d161e4bc5c672179fad1833fc076bb08ff356f35020",
            "ccea490ce26775a52dc6ea718cc1aa600aed05fbf35e084a6632f6072da9ad13",
        ),
        (
            "59276e27d506861a16680f3ad9c02dccef3cc1fa3cdbe4ce6d54b80deac1bc21",
            "04ebfc718e8d1798620432268e77feb6415e2ede0e073c0f4f640ecd2e149a73",
            "e858f9d81e5430a57b36daab8f950a3c64e6ee6a63094d99283aff767e124df0",
        ),
    ];
    for (d, x, y) in v {
        let s = Sm2::scalar_from_bytes(&h(d)).unwrap();
        assert_eq!(Sm2::encode(&Sm2::mul_base(&s)).to_vec(), compressed(x, y));
        assert_eq!(
            Sm2::encode(&Sm2::mul(&Sm2::generator(), &s)).to_vec(),
            compressed(x, y)
        );
        assert_eq!(Sm2::scalar_to_bytes(&s).to_vec(), h(d));
    }
}
