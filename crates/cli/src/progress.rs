//! Progress on stderr: an [`indicatif`] bar redrawn in place, or plain log lines where no
//! terminal reads them (a pipe, a file, a job scheduler's log).
//!
//! Counting is a few integer operations per call: the count reaches the bar or the log
//! line at most once per 1024 calls (or on every call that adds a large step, such as a whole
//! bucket). The bar is redrawn at most five times per second (indicatif's draw rate limit), a
//! log line written at most every five seconds, so the protocol never waits on the terminal.
//! Nothing goes to stdout, which carries the JSON report.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};

use crate::error::CliError;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, log lines otherwise.
    #[default]
    Auto,
    /// Always the bar (redrawn after a carriage return on stderr, a terminal or not).
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
            _ => Err(CliError::usage(format!(
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

/// Most redraws of the bar per second.
const BAR_HZ: u8 = 5;
/// Minimum time between two log lines.
const LOG_EVERY: Duration = Duration::from_secs(5);
/// Steps at least this large are passed on at once (a bucket, not a row).
const BIG_STEP: u64 = 256;
/// Width of the bar's line where stderr is not a terminal.
const PLAIN_WIDTH: u16 = 100;

/// How a phase is shown once [`ProgressMode::Auto`] is resolved.
#[derive(Debug)]
enum Display {
    /// Nothing (off, or finished).
    Off,
    /// An indicatif bar.
    Bar(ProgressBar),
    /// Log lines, the last one written at `last`.
    Log { last: Instant },
}

/// One phase of work with a known total (bytes read, rows split, rows through the PSI).
#[derive(Debug)]
pub struct Progress {
    display: Display,
    label: String,
    unit: &'static str,
    total: u64,
    done: u64,
    calls: u32,
    start: Instant,
}

impl Progress {
    /// Starts a phase: `label` names it, `unit` the things counted, `total` how many there are.
    pub fn new(
        mode: ProgressMode,
        label: impl Into<String>,
        unit: &'static str,
        total: u64,
    ) -> Self {
        let label = label.into();
        let start = Instant::now();
        let display = match mode.resolve() {
            ProgressMode::Off => Display::Off,
            ProgressMode::Bar => Display::Bar(bar(&label, unit, total)),
            _ => Display::Log { last: start },
        };
        Progress {
            display,
            label,
            unit,
            total,
            done: 0,
            calls: 0,
            start,
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
        if let Display::Bar(pb) = &self.display {
            pb.set_message(self.label.clone());
        }
    }

    /// Passes the count on: to the bar (which redraws at its own rate), or as a log line
    /// when the last one is old enough.
    fn tick(&mut self) {
        match &mut self.display {
            Display::Off => {}
            Display::Bar(pb) => pb.set_position(self.done),
            Display::Log { last } => {
                let now = Instant::now();
                if now.duration_since(*last) >= LOG_EVERY {
                    *last = now;
                    self.log_line(now);
                }
            }
        }
    }

    /// `obliv: psi bucket 12/16: 393216/1048576 rows (37.5%), 81.2k/s, ETA 8s`.
    #[allow(clippy::cast_precision_loss)] // human-readable figures
    fn log_line(&self, now: Instant) {
        let rate = rate(self.done, now.duration_since(self.start));
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
        // Progress is best effort: a closed stderr must not fail the run.
        let _ = writeln!(
            std::io::stderr(),
            "obliv: {}: {}/{} {} ({:.1}%), {}/s, {}",
            self.label,
            self.done,
            self.total,
            self.unit,
            pct,
            human_count(rate),
            eta
        );
    }

    /// Ends the phase: the bar shows its final state and a newline, a log line says how long
    /// the phase took.
    pub fn finish(&mut self) {
        match std::mem::replace(&mut self.display, Display::Off) {
            Display::Off => {}
            Display::Bar(pb) => {
                pb.set_message(self.label.clone());
                pb.set_position(self.done);
                pb.abandon();
                let _ = writeln!(std::io::stderr());
            }
            Display::Log { .. } => {
                let took = self.start.elapsed();
                let _ = writeln!(
                    std::io::stderr(),
                    "obliv: {}: done, {} {} in {:.2} s ({}/s)",
                    self.label,
                    self.done,
                    self.unit,
                    took.as_secs_f64(),
                    human_count(rate(self.done, took))
                );
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // A phase cut short by an error: the bar keeps its last state and its line ends, so
        // the error starts on its own.
        if let Display::Bar(pb) = std::mem::replace(&mut self.display, Display::Off) {
            pb.abandon();
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// The bar of a phase: indicatif's own terminal output on a terminal, else [`PlainStderr`];
/// at most [`BAR_HZ`] redraws a second either way.
fn bar(label: &str, unit: &str, total: u64) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr_with_hz(BAR_HZ)
    } else {
        ProgressDrawTarget::term_like_with_hz(Box::new(PlainStderr), BAR_HZ)
    };
    // The figures as the log lines word them: `81.2k/s`, `ETA 3m05s`.
    let style = ProgressStyle::with_template(&format!(
        "{{msg:<18}} [{{bar:24}}] {{pos}}/{{len}} {unit} {{pct}}%  {{rate}}/s  {{eta_or_dash}}"
    ))
    .map_or_else(
        |_| ProgressStyle::default_bar(),
        |s| {
            s.progress_chars("##-")
                .with_key("pct", |st: &ProgressState, w: &mut dyn fmt::Write| {
                    let _ = write!(w, "{:5.1}", 100.0 * st.fraction());
                })
                .with_key("rate", |st: &ProgressState, w: &mut dyn fmt::Write| {
                    let _ = w.write_str(&human_count(st.per_sec()));
                })
                .with_key(
                    "eta_or_dash",
                    |st: &ProgressState, w: &mut dyn fmt::Write| {
                        let _ = if st.per_sec() > 0.0 && st.pos() < st.len().unwrap_or(0) {
                            write!(w, "ETA {}", human_duration(st.eta().as_secs_f64()))
                        } else {
                            w.write_str("ETA -")
                        };
                    },
                )
        },
    );
    ProgressBar::with_draw_target(Some(total), target)
        .with_style(style)
        .with_message(label.to_string())
}

/// Stderr that is not a terminal, for [`ProgressMode::Bar`]: every redraw is a carriage return
/// and the line, without cursor movements or escape sequences.
#[derive(Debug)]
struct PlainStderr;

impl TermLike for PlainStderr {
    fn width(&self) -> u16 {
        PLAIN_WIDTH
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        writeln!(std::io::stderr(), "{s}")
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        // The line (not its padding) starts over at the left margin.
        if s.bytes().all(|b| b == b' ') {
            std::io::stderr().write_all(s.as_bytes())
        } else {
            write!(std::io::stderr(), "\r{s}")
        }
    }
    fn clear_line(&self) -> std::io::Result<()> {
        // The carriage return comes with the next line.
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Items per second.
#[allow(clippy::cast_precision_loss)] // human-readable figures
fn rate(done: u64, took: Duration) -> f64 {
    let secs = took.as_secs_f64();
    if secs > 0.0 { done as f64 / secs } else { 0.0 }
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
    fn counting_into_a_bar_is_cheap() {
        // The same through an indicatif bar (hidden, so the test writes nothing).
        let mut p = Progress::new(ProgressMode::Off, "t", "rows", 10_000_000);
        p.display = Display::Bar(ProgressBar::hidden());
        let start = Instant::now();
        for _ in 0..10_000_000 {
            p.inc(1);
        }
        p.inc(1000);
        match &p.display {
            Display::Bar(pb) => assert_eq!(pb.position(), 10_001_000),
            _ => unreachable!(),
        }
        p.display = Display::Off;
        assert!(start.elapsed() < Duration::from_secs(2));
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
        p.display = Display::Off;
        assert!(start.elapsed() < Duration::from_secs(2));
    }
}
