//! The `obliv` command as a library: CSV input and output, test-data generation, one PSI party,
//! and the all-in-one demo. `src/main.rs` is the argument parser on top.
#![forbid(unsafe_code)]

pub mod bucket;
pub mod checkpoint;
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
