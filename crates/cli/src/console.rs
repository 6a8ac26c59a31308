//! Lines for stdout and stderr that never panic.
//!
//! `println!` and `eprintln!` panic when the stream is closed (`obliv … | head`, a log
//! collector that went away). Results go to stdout through [`out`], whose failure is an error
//! of the run (exit code 3), reported after the files the run writes are in place; notices go
//! to stderr through [`note`], which drops a line it cannot write.

use std::fmt;
use std::io::Write;

use crate::CliError;

/// Writes one line to stdout and flushes it.
///
/// # Errors
/// [`ExitKind::Input`](crate::ExitKind::Input) when stdout cannot be written (closed pipe,
/// full disk).
pub fn out(line: fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut w = std::io::stdout().lock();
    w.write_fmt(line)
        .and_then(|()| w.write_all(b"\n"))
        .and_then(|()| w.flush())
        .map_err(|e| CliError::file("writing to stdout", e))
}

/// Writes one line to stderr, ignoring a failure (there is nowhere left to report it).
pub fn note(line: fmt::Arguments<'_>) {
    let mut w = std::io::stderr().lock();
    let _ = w.write_fmt(line).and_then(|()| w.write_all(b"\n"));
}
