//! The slow-link section of the report: PSI runs through a simulated link against the link's
//! bound, as `benches/links/slow_link.sh` records them (one JSON object per line, kept in
//! `docs/data/links.jsonl`), and the plot of wall time against bandwidth per protocol.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::report::{fmt_bytes, fmt_n, svg_chart};

/// One run of `benches/links/slow_link.sh`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkRun {
    /// The CLI's protocol name (`rr22`, `rr22-lowcomm`, `rr22-malicious`, `kkrt`).
    pub protocol: String,
    /// Rows per side.
    pub n: u64,
    /// `BANDWIDTH/LATENCY` as given to the script, e.g. `100mbit/10ms`.
    pub link: String,
    /// Bandwidth in bits per second (parsed from `link`).
    pub bandwidth_bps: f64,
    /// One-way latency in seconds (parsed from `link`).
    pub latency_s: f64,
    /// `--workers`.
    pub workers: u64,
    /// `--bucket-load` (`default` for the CLI's).
    pub bucket_load: String,
    /// Buckets of the run.
    pub buckets: u64,
    /// Wall seconds, start of both processes to the end of the slower.
    pub wall_s: f64,
    /// CPU seconds (user + system) of the slower party.
    pub cpu_s: f64,
    /// Bytes of the larger direction.
    pub larger_direction: u64,
    /// Round trips on the critical path (the larger of the two parties' counts).
    pub critical_rounds: u64,
    /// `8·B / bandwidth + r·RTT`.
    pub t_link_s: f64,
    /// `max(t_link_s, cpu_s)`.
    pub bound_s: f64,
    /// The CPU model of the machine.
    pub cpu: String,
}

/// `"100mbit"` in bits per second, `"10ms"` in seconds; `None` for another unit.
fn quantity(s: &str, units: &[(&str, f64)]) -> Option<f64> {
    let at = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(at);
    let scale = units.iter().find(|(u, _)| *u == unit)?.1;
    Some(num.parse::<f64>().ok()? * scale)
}

/// The runs in `text` (JSON lines; other lines, incorrect runs and runs without the critical
/// round count are skipped).
pub fn parse_link_runs(text: &str) -> Vec<LinkRun> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["correct"].as_bool() != Some(true) {
            continue;
        }
        let pair_max = |k: &str| -> Option<f64> {
            let a = v[k].as_array()?;
            a.iter()
                .map(Value::as_f64)
                .try_fold(0f64, |m, x| Some(m.max(x?)))
        };
        let link = v["link"].as_str().unwrap_or("").to_string();
        let (bw, lat) = link.split_once('/').unwrap_or(("", ""));
        let (Some(bandwidth_bps), Some(latency_s)) = (
            quantity(bw, &[("kbit", 1e3), ("mbit", 1e6), ("gbit", 1e9)]),
            quantity(lat, &[("us", 1e-6), ("ms", 1e-3), ("s", 1.0)]),
        ) else {
            continue;
        };
        let (Some(protocol), Some(n), Some(wall_s), Some(cpu_s), Some(sent), Some(rounds)) = (
            v["protocol"].as_str(),
            v["n"].as_u64(),
            v["wall_s"].as_f64(),
            pair_max("cpu_s"),
            pair_max("sent"),
            pair_max("critical_rounds"),
        ) else {
            continue;
        };
        // Byte and round counts are integers in the records.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let (larger_direction, critical_rounds) = (sent as u64, rounds as u64);
        let t_link_s = 8.0 * sent / bandwidth_bps + rounds * 2.0 * latency_s;
        out.push(LinkRun {
            protocol: protocol.to_string(),
            n,
            link,
            bandwidth_bps,
            latency_s,
            workers: v["workers"].as_u64().unwrap_or(1),
            bucket_load: match &v["bucket_load"] {
                Value::String(s) => s.clone(),
                Value::Number(x) => x.to_string(),
                _ => "default".into(),
            },
            buckets: v["buckets"].as_u64().unwrap_or(0),
            wall_s,
            cpu_s,
            larger_direction,
            critical_rounds,
            t_link_s,
            bound_s: t_link_s.max(cpu_s),
            cpu: v["cpu"].as_str().unwrap_or("").to_string(),
        });
    }
    out
}

/// The heading of the section (a regenerated section of the report).
pub const HEADING: &str = "PSI on slow links";

/// The plot's file name.
pub const PLOT: &str = "psi_bandwidth.svg";

/// A sweep's fixed settings: rows per side, one-way latency in µs, workers, bucket load.
type SweepKey = (u64, u64, u64, String);

/// Bits per second and one-way microseconds of a run as integers: keys that order and
/// compare exactly (the records give whole units).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn link_key(r: &LinkRun) -> (u64, u64) {
    (
        r.bandwidth_bps.round() as u64,
        (r.latency_s * 1e6).round() as u64,
    )
}

/// The bandwidth sweep the plot shows: the most common `(n, latency, workers, bucket load)`
/// among runs at three or more bandwidths, with its runs.
fn sweep(runs: &[LinkRun]) -> Option<(SweepKey, Vec<&LinkRun>)> {
    let mut groups: BTreeMap<SweepKey, Vec<&LinkRun>> = BTreeMap::new();
    for r in runs {
        groups
            .entry((r.n, link_key(r).1, r.workers, r.bucket_load.clone()))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .filter(|(_, v)| {
            let mut bws: Vec<u64> = v.iter().map(|r| link_key(r).0).collect();
            bws.sort_unstable();
            bws.dedup();
            bws.len() >= 3
        })
        .max_by_key(|(_, v)| v.len())
}

/// For each bandwidth of the sweep, the fastest protocol among `candidates` (with its wall
/// time), in increasing bandwidth.
fn winners<'a>(sweep: &[&'a LinkRun], candidates: &[&str]) -> Vec<(f64, &'a LinkRun)> {
    let mut best: BTreeMap<u64, &LinkRun> = BTreeMap::new();
    for r in sweep
        .iter()
        .filter(|r| candidates.contains(&r.protocol.as_str()))
    {
        let e = best.entry(link_key(r).0).or_insert(r);
        if r.wall_s < e.wall_s {
            *e = r;
        }
    }
    best.into_iter().map(|(b, r)| (b as f64, r)).collect()
}

fn fmt_bps(b: f64) -> String {
    if b >= 1e9 {
        format!("{} Gbps", b / 1e9)
    } else {
        format!("{} Mbps", b / 1e6)
    }
}

/// The section: every run against its bound (latest run per configuration), then the
/// bandwidth sweep's winners; empty when there are no runs.
pub fn section(runs: &[LinkRun]) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let mut md = format!(
        "## {HEADING}: wall time against the link bound\n\n\
         Two `obliv psi` processes over loopback TCP through the CLI's simulated link \
         (`--sim-bandwidth`, `--sim-latency`: each direction a FIFO pipe of that bandwidth \
         followed by the latency), from `bash benches/links/slow_link.sh` (records in \
         `docs/data/links.jsonl`). For the larger direction's `B` bytes, bandwidth `W`, \
         round-trip time `R` and the run's `r` round trips on the critical path (the report's \
         `critical_rounds`: the handshake's and the worker set-up's plus the busiest worker's \
         buckets), the bound is `max(8·B/W + r·R, CPU seconds of the slower party)`; the \
         target is a wall time of at most 1.3× the bound. Both parties share the machine's \
         cores, so the CPU term is that of a shared machine.\n\n\
         | protocol | n per side | link | workers | buckets | wall | larger direction | r | \
         8B/W + rR | CPU (slower) | wall / bound |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    // The latest run of each configuration, in a stable order.
    let mut latest: BTreeMap<(String, u64, u64, u64, u64, String), &LinkRun> = BTreeMap::new();
    for r in runs {
        let (bps, lat_us) = link_key(r);
        let key = (
            r.protocol.clone(),
            r.n,
            bps,
            lat_us,
            r.workers,
            r.bucket_load.clone(),
        );
        latest.insert(key, r);
    }
    for r in latest.values() {
        let ratio = r.wall_s / r.bound_s;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {}{} | {} | {:.2} s | {} | {} | {:.2} s | {:.2} s | {:.2}{} |",
            r.protocol,
            fmt_n(r.n),
            r.link,
            r.workers,
            if r.bucket_load == "default" {
                String::new()
            } else {
                format!(" (load {})", r.bucket_load)
            },
            r.buckets,
            r.wall_s,
            fmt_bytes(r.larger_direction as f64),
            r.critical_rounds,
            r.t_link_s,
            r.cpu_s,
            ratio,
            if ratio <= 1.3 { "" } else { " (over 1.3)" }
        );
    }
    let cpus: Vec<&str> = {
        let mut c: Vec<&str> = runs.iter().map(|r| r.cpu.as_str()).collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    let _ = writeln!(md, "\nCPU: {}.", cpus.join(", "));
    if let Some(((n, lat_us, workers, load), sweep)) = sweep(runs) {
        let _ = write!(
            md,
            "\nThe fastest semi-honest variant at each bandwidth ({} per side, {} ms one way, {} \
             workers, bucket load {load}; the plot shows every protocol):\n\n",
            fmt_n(n),
            lat_us as f64 / 1000.0,
            workers
        );
        // Only the semi-honest variants compete (the malicious one has no rival here).
        let candidates = ["rr22", "rr22-lowcomm", "kkrt"];
        for (b, best) in winners(&sweep, &candidates) {
            // Runs within 5 % of the fastest at the same bandwidth are a tie on this machine.
            let close: Vec<String> = sweep
                .iter()
                .filter(|r| {
                    candidates.contains(&r.protocol.as_str())
                        && r.protocol != best.protocol
                        && (link_key(r).0 as f64 - b).abs() < 0.5
                        && r.wall_s <= best.wall_s * 1.05
                })
                .map(|r| format!("{} {:.2} s", r.protocol, r.wall_s))
                .collect();
            let _ = writeln!(
                md,
                "- {}: {} ({:.2} s{})",
                fmt_bps(b),
                best.protocol,
                best.wall_s,
                if close.is_empty() {
                    String::new()
                } else {
                    format!("; within 5 %: {}", close.join(", "))
                }
            );
        }
        let _ = writeln!(md, "\n![{PLOT}]({PLOT})");
    }
    md.push('\n');
    md
}

/// The plot of the bandwidth sweep: wall seconds against bandwidth (Mbps), one series per
/// protocol; `None` without a sweep.
pub fn plot(runs: &[LinkRun]) -> Option<(String, String)> {
    let ((n, lat_us, workers, _), sweep) = sweep(runs)?;
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in sweep {
        series
            .entry(r.protocol.clone())
            .or_default()
            .push((r.bandwidth_bps / 1e6, r.wall_s));
    }
    let series: Vec<(String, Vec<(f64, f64)>)> = series
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, v)
        })
        .collect();
    Some((
        PLOT.to_string(),
        svg_chart(
            &format!(
                "PSI wall time against bandwidth, {} per side, {} ms one way, {workers} workers",
                fmt_n(n),
                lat_us as f64 / 1000.0
            ),
            "bandwidth, Mbps",
            "seconds",
            &series,
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(p: &str, bw: &str, wall: f64) -> String {
        format!(
            "{{\"protocol\": \"{p}\", \"n\": 1000000, \"link\": \"{bw}/10ms\", \"workers\": 3, \
             \"bucket_load\": \"65536\", \"buckets\": 8, \"wall_s\": {wall}, \"cpu_s\": [0.4, 0.3], \
             \"sent\": [22000000, 11000000], \"critical_rounds\": [20, 19], \"correct\": true, \
             \"cpu\": \"AMD EPYC\"}}"
        )
    }

    #[test]
    fn bound_and_winners_from_records() {
        let text = [
            line("rr22", "10mbit", 20.0),
            line("rr22-lowcomm", "10mbit", 11.0),
            line("rr22", "100mbit", 2.5),
            line("rr22-lowcomm", "100mbit", 2.6),
            line("rr22", "1gbit", 1.0),
            line("rr22-lowcomm", "1gbit", 1.1),
            "not json".to_string(),
            line("kkrt", "1gbit", 1.0).replace("true", "false"),
        ]
        .join("\n");
        let runs = parse_link_runs(&text);
        assert_eq!(runs.len(), 6);
        let r = &runs[2];
        // 8·22e6/1e8 + 20·0.02 = 1.76 + 0.4
        assert!((r.t_link_s - 2.16).abs() < 1e-9, "{}", r.t_link_s);
        assert!((r.bound_s - 2.16).abs() < 1e-9);
        let md = section(&runs);
        assert!(
            md.contains("- 10 Mbps: rr22-lowcomm (11.00 s)\n- 100 Mbps: rr22 (2.50 s; within 5 %: rr22-lowcomm 2.60 s)\n- 1 Gbps: rr22 (1.00 s)\n"),
            "{md}"
        );
        // 20 s against 8·22e6/1e7 + 0.4 = 18 s: 1.11.
        assert!(md.contains("| 1.11 |"), "{md}");
        let (name, svg) = plot(&runs).unwrap();
        assert_eq!(name, PLOT);
        assert!(svg.contains("rr22-lowcomm"));
    }

    #[test]
    fn no_runs_no_section() {
        assert!(section(&[]).is_empty());
        assert!(plot(&[]).is_none());
    }
}
