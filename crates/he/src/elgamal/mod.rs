//! ElGamal encryption, in its two homomorphic forms:
//!
//! * [`ec`] — additive ("exponential", or lifted) ElGamal on a prime-order elliptic-curve
//!   group: `E(m) = (r·G, m·G + r·Y)`; ciphertexts add, subtract and scale, and decryption
//!   recovers `m·G` and then `m` by baby-step giant-step over a bounded range.
//! * [`modp`] — multiplicative ElGamal in the order-`q` subgroup of the RFC 3526 safe-prime
//!   groups: `E(m) = (g^k, m·y^k)`; ciphertexts multiply.
//!
//! \[ElG85\] T. ElGamal, *A public key cryptosystem and a signature scheme based on discrete
//! logarithms*, IEEE Trans. IT 31(4), 1985. \[CGS97\] R. Cramer, R. Gennaro, B. Schoenmakers,
//! *A secure and optimally efficient multi-authority election scheme*, EUROCRYPT 1997
//! (the exponential variant).

pub mod ec;
pub mod modp;
