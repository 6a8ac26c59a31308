//! Private information retrieval: a distributed point function (DPF), two-server DPF-PIR,
//! batch PIR with cuckoo hashing, an IT-PIR baseline and a TCP server.
//!
//! See the crate README for the papers, the security model and measured figures.
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
pub use server::{PirClient, PirServer, ServerConfig, ServerHandle, ServerInfo};
