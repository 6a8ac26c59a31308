//! The `obliv` command as a library; `src/main.rs` is the argument parser on top. Its
//! subcommands and the modules that run them:
//!
//! - `obliv psi`: one party of a bucketed, resumable, shardable PSI over CSV files
//!   ([`party`], with [`bucket`] for reading the input and writing the rows, [`plan`],
//!   [`checkpoint`], [`deadline`], [`tls`]); `obliv psi demo`: every party in one process
//!   over loopback ([`demo`]).
//! - `obliv merge`: joins the outputs of the shards of one job ([`merge`]).
//! - `obliv ub-psi offline|online`: unbalanced PSI in two phases ([`unbalanced`]).
//! - `obliv pir serve|query`: two-server PIR over [`obliv_pir`] (in `src/main.rs`).
//! - `obliv gen-data`: test CSV files with a planted intersection ([`gen_data`]).
//!
//! Input: [`csvio`] encodes key columns and reads them (the `csv` parser); [`bucket`] reads a
//! `psi` input once through a byte scanner (the `csv` parser for files with quotes) and
//! writes the marked rows of every subcommand that writes rows ([`bucket::write_rows`]).
//! Outputs are written to temporary files that an interrupt removes ([`cleanup`]).
//! Progress goes to stderr ([`progress`]); every failure is a [`CliError`] whose
//! [`ExitKind`] is the process exit code.
#![forbid(unsafe_code)]

pub mod bucket;
pub mod checkpoint;
pub mod cleanup;
pub mod console;
pub mod csvio;
pub mod deadline;
pub mod demo;
pub mod error;
mod fastcsv;
pub mod gen_data;
pub mod merge;
pub mod party;
pub mod plan;
pub mod progress;
pub mod tls;
pub mod unbalanced;

pub use error::{CliError, ExitKind};
