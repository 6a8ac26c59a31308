//! Private information retrieval: a distributed point function (DPF), two-server DPF-PIR,
//! batch PIR with cuckoo hashing, an IT-PIR baseline, and a TCP server and client.
//!
//! | module | what | paper |
//! |---|---|---|
//! | [`dpf`] | DPF for point functions on `2^n` points, AES (MMO) PRG, early termination, full-domain evaluation | Boyle–Gilboa–Ishai, CCS 2016, ePrint 2018/707 |
//! | [`dpf_pir`] | two-server PIR: one DPF key per server, one XOR scan of the database | BGI, Eurocrypt 2015 / CCS 2016 |
//! | [`batch`] | `k` records per round, servers scan ≈ 3N records (cuckoo hashing into 1.5k buckets) | Angel–Chen–Laine–Setty, S&P 2018 |
//! | [`it_pir`] | the √N-layout two-server IT-PIR baseline | Chor–Goldreich–Kushilevitz–Sudan, FOCS 1995 |
//! | [`server`] | [`PirServer`] over TCP (worker pool, back-pressure, limits, timeouts), [`PirClient`] | — |
//!
//! Security model: two non-colluding, semi-honest servers hold the same database; each one
//! alone learns nothing about the index (computationally for DPF-PIR, perfectly for IT-PIR).
//! The client learns the record and, as in every PIR without database privacy, more: each
//! answer is the XOR of a set of records that the client's own keys determine, so every query
//! gives it XORs of other records too. No integrity against a malicious server.
//!
//! ```
//! use obliv_core::AesRng;
//! use obliv_pir::{Database, dpf_pir};
//! use rand_core::SeedableRng;
//!
//! let mut rng = AesRng::from_seed([1; 16]);
//! let db = Database::random(1000, 64, &mut rng)?; // held by both servers
//! let q = dpf_pir::query(db.len(), 123, &mut rng)?; // client
//! let a0 = dpf_pir::answer(&db, &q.to_server0)?; // server 0
//! let a1 = dpf_pir::answer(&db, &q.to_server1)?; // server 1
//! assert_eq!(dpf_pir::reconstruct(64, &a0, &a1)?, db.record(123).unwrap());
//! # Ok::<(), obliv_pir::Error>(())
//! ```
#![forbid(unsafe_code)]

pub mod batch;
pub mod db;
pub mod dpf;
pub mod dpf_pir;
mod error;
pub mod it_pir;
pub mod server;

pub use db::Database;
pub use dpf::DpfKey;
pub use error::{Error, Result};
pub use server::{ClientLimits, PirClient, PirServer, ServerConfig, ServerHandle, ServerInfo};
