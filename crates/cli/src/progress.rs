//! Progress on stderr: a one-line bar redrawn in place on a terminal, plain log lines
//! otherwise (a pipe, a file, a job scheduler's log).
//!
//! Counting is a few integer operations per call; the clock is read at most once per 1024
//! calls (or on every call that adds a large step, such as a whole bucket), and the bar is
//! redrawn at most five times per second, a log line written at most every five seconds. The
//! protocol never waits on the terminal. Nothing goes to stdout, which carries the JSON report.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::error::CliError;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, log lines otherwise.
    #[default]
    Auto,
    /// Always the bar (carriage returns on stderr).
    Bar,
    /// Always log lines.
    Log,
    /// Nothing.
    Off,
}

impl std::str::FromStr for ProgressMode {
    type Err = CliError;
    fn from_str(s: &str) -> Result<Self, CliError> {
        match s {
            "auto" => Ok(ProgressMode::Auto),
            "bar" => Ok(ProgressMode::Bar),
            "log" => Ok(ProgressMode::Log),
            "off" => Ok(ProgressMode::Off),
            _ => Err(CliError::Usage(format!(
                "--progress {s:?}: expected auto, bar, log or off"
            ))),
        }
    }
}

impl ProgressMode {
    /// `Auto` resolved against whether stderr is a terminal.
    fn resolve(self) -> ProgressMode {
        match self {
            ProgressMode::Auto if std::io::stderr().is_terminal() => ProgressMode::Bar,
            ProgressMode::Auto => ProgressMode::Log,
            m => m,
        }
    }
}

/// Minimum time between two redraws of the bar.
const BAR_EVERY: Duration = Duration::from_millis(200);
/// Minimum time between two log lines.
const LOG_EVERY: Duration = Duration::from_secs(5);
/// Steps at least this large read the clock at once (a bucket, not a row).
const BIG_STEP: u64 = 256;

/// One phase of work with a known total (bytes read, rows split, rows through the PSI).
#[derive(Debug)]
pub struct Progress {
    mode: ProgressMode,
    label: String,
    unit: &'static str,
    total: u64,
    done: u64,
    calls: u32,
    start: Instant,
    last: Instant,
    drawn: bool,
}

impl Progress {
    /// Starts a phase: `label` names it, `unit` the things counted, `total` how many there are.
    pub fn new(
        mode: ProgressMode,
        label: impl Into<String>,
        unit: &'static str,
        total: u64,
    ) -> Self {
        let now = Instant::now();
        Progress {
            mode: mode.resolve(),
            label: label.into(),
            unit,
            total,
            done: 0,
            calls: 0,
            start: now,
            last: now,
            drawn: false,
        }
    }

    /// Adds `n` finished items.
    #[inline]
    pub fn inc(&mut self, n: u64) {
        self.set(self.done.saturating_add(n));
        if n >= BIG_STEP {
            self.calls = 0;
            self.tick();
        }
    }

    /// Sets the number of finished items.
    #[inline]
    pub fn set(&mut self, done: u64) {
        self.done = done;
        self.calls = self.calls.wrapping_add(1);
        if self.calls.is_multiple_of(1024) {
            self.tick();
        }
    }

    /// Changes the label (e.g. to say which bucket runs).
    pub fn set_label(&mut self, label: impl Into<String>) {
        self.label = label.into();
    }

    fn tick(&mut self) {
        if self.mode == ProgressMode::Off {
            return;
        }
        let now = Instant::now();
        let every = if self.mode == ProgressMode::Bar {
            BAR_EVERY
        } else {
            LOG_EVERY
        };
        if now.duration_since(self.last) >= every {
            self.last = now;
            self.draw(now);
        }
    }

    #[allow(clippy::cast_precision_loss)] // human-readable figures
    fn draw(&mut self, now: Instant) {
        let secs = now.duration_since(self.start).as_secs_f64();
        let rate = if secs > 0.0 {
            self.done as f64 / secs
        } else {
            0.0
        };
        let eta = if rate > 0.0 && self.total > self.done {
            format!(
                "ETA {}",
                human_duration((self.total - self.done) as f64 / rate)
            )
        } else {
            "ETA -".to_string()
        };
        let pct = if self.total == 0 {
            100.0
        } else {
            100.0 * self.done as f64 / self.total as f64
        };
        let mut err = std::io::stderr().lock();
        // Progress is best effort: a closed stderr must not fail the run.
        let _ = if self.mode == ProgressMode::Bar {
            const WIDTH: usize = 24;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 0..=WIDTH
            let filled = ((pct / 100.0) * WIDTH as f64).clamp(0.0, WIDTH as f64) as usize;
            self.drawn = true;
            write!(
                err,
                "\r{:<18} [{}{}] {}/{} {} {:5.1}%  {}/s  {}   ",
                self.label,
                "#".repeat(filled),
                "-".repeat(WIDTH - filled),
                self.done,
                self.total,
                self.unit,
                pct,
                human_count(rate),
                eta
            )
            .and_then(|()| err.flush())
        } else {
            writeln!(
                err,
                "obliv: {}: {}/{} {} ({:.1}%), {}/s, {}",
                self.label,
                self.done,
                self.total,
                self.unit,
                pct,
                human_count(rate),
                eta
            )
        };
    }

    /// Ends the phase: the bar shows its final state and a newline, a log line says how long
    /// the phase took.
    #[allow(clippy::cast_precision_loss)] // human-readable figures
    pub fn finish(&mut self) {
        let secs = self.start.elapsed().as_secs_f64();
        match self.mode {
            ProgressMode::Off | ProgressMode::Auto => {}
            ProgressMode::Bar => {
                self.draw(Instant::now());
                let _ = writeln!(std::io::stderr());
            }
            ProgressMode::Log => {
                let rate = if secs > 0.0 {
                    self.done as f64 / secs
                } else {
                    0.0
                };
                let _ = writeln!(
                    std::io::stderr(),
                    "obliv: {}: done, {} {} in {:.2} s ({}/s)",
                    self.label,
                    self.done,
                    self.unit,
                    secs,
                    human_count(rate)
                );
            }
        }
        self.mode = ProgressMode::Off;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // A phase cut short by an error: end the bar's line so the error starts on its own.
        if self.mode == ProgressMode::Bar && self.drawn {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// A message on stderr unless progress is off (phase changes, resumption).
pub fn note(mode: ProgressMode, msg: &str) {
    if mode != ProgressMode::Off {
        let _ = writeln!(std::io::stderr(), "obliv: {msg}");
    }
}

/// `1.2M`, `35.0k`, `512`.
fn human_count(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// `1h02m`, `3m05s`, `42s`.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // a non-negative duration
fn human_duration(secs: f64) -> String {
    let s = secs.clamp(0.0, 1e9).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_well() {
        assert_eq!(human_count(1_234_567.0), "1.23M");
        assert_eq!(human_count(35_000.0), "35.0k");
        assert_eq!(human_count(12.0), "12");
        assert_eq!(human_duration(42.2), "42s");
        assert_eq!(human_duration(185.0), "3m05s");
        assert_eq!(human_duration(3720.0), "1h02m");
        assert_eq!("log".parse::<ProgressMode>().unwrap(), ProgressMode::Log);
        assert!("loud".parse::<ProgressMode>().is_err());
    }

    #[test]
    fn counting_is_cheap() {
        // Ten million increments must not be slowed by the clock or the terminal.
        let mut p = Progress::new(ProgressMode::Log, "t", "rows", 10_000_000);
        let start = Instant::now();
        for _ in 0..10_000_000 {
            p.inc(1);
        }
        assert_eq!(p.done, 10_000_000);
        p.mode = ProgressMode::Off;
        assert!(start.elapsed() < Duration::from_secs(2));
    }
}
