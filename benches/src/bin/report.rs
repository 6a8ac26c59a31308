//! Writes `docs/benchmarks.md` from criterion's output: for every row of the four benchmark
//! documents (table in `obliv_bench::rows`, figures from `../shared/BENCHMARKS.md`) the
//! published figure, our figure on this machine and the ratio, the reference systems' runs if
//! `benches/anchors.sh` left them, every other measurement, and the machine.
//!
//! `cargo run -p obliv-bench --release --bin report [-- --criterion DIR --anchors FILE --out FILE]`
//! (defaults: `$CARGO_TARGET_DIR/criterion` or `target/criterion`, `<target>/obliv-anchors.jsonl`,
//! `docs/benchmarks.md`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use obliv_bench::{Row, Unit, criterion_dir, rows, single_runs_path};
use serde_json::Value;

/// One measurement: criterion's mean, or a single full-scale run.
#[derive(Clone, Debug)]
struct Meas {
    /// Mean nanoseconds per iteration.
    ns: f64,
    /// Bytes on the wire per iteration, if the bench declared them.
    bytes: Option<u64>,
    /// Elements per iteration, if the bench declared them.
    elements: Option<u64>,
    /// Whether this is one run outside criterion's sampler.
    single: bool,
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Every `*/new/benchmark.json` under `dir`, with the mean of its `estimates.json`.
fn walk(dir: &Path, out: &mut BTreeMap<String, Meas>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if !p.is_dir() {
            continue;
        }
        if p.file_name().is_some_and(|n| n == "new") {
            let (Some(b), Some(est)) = (
                read_json(&p.join("benchmark.json")),
                read_json(&p.join("estimates.json")),
            ) else {
                continue;
            };
            let (Some(id), Some(ns)) = (
                b["full_id"].as_str(),
                est["mean"]["point_estimate"].as_f64(),
            ) else {
                continue;
            };
            let t = &b["throughput"];
            let bytes = t["Bytes"].as_u64().or_else(|| t["BytesDecimal"].as_u64());
            let elements = t["Elements"].as_u64();
            out.insert(
                id.to_string(),
                Meas {
                    ns,
                    bytes,
                    elements,
                    single: false,
                },
            );
        } else {
            walk(&p, out);
        }
    }
}

fn single_runs(path: &Path, out: &mut BTreeMap<String, Meas>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let (Some(id), Some(s)) = (v["id"].as_str(), v["seconds"].as_f64()) {
            // A later run of the same id replaces an earlier one.
            out.insert(
                id.to_string(),
                Meas {
                    ns: s * 1e9,
                    bytes: v["bytes"].as_u64(),
                    elements: v["elements"].as_u64(),
                    single: true,
                },
            );
        }
    }
}

/// Our figure for a row in its unit, with a note on how it was obtained.
fn ours(row: &Row, all: &BTreeMap<String, Meas>) -> Option<(f64, Option<f64>, String)> {
    let (m, scale, note) = match row.doc_n {
        Some(doc_n) => {
            let sized: Vec<(u64, &Meas)> = all
                .iter()
                .filter_map(|(id, m)| Some((id.strip_prefix(row.id)?.parse().ok()?, m)))
                .collect();
            let (n, m) = sized
                .iter()
                .find(|(n, _)| *n == doc_n)
                .or_else(|| sized.iter().max_by_key(|(n, _)| *n))
                .copied()?;
            let kind = if m.single {
                "one run"
            } else {
                "criterion mean"
            };
            if n == doc_n {
                (m, 1.0, format!("{kind} at n = {n}"))
            } else {
                (
                    m,
                    doc_n as f64 / n as f64,
                    format!("{kind} at n = {n}, projected linearly"),
                )
            }
        }
        None => {
            let m = all.get(row.id)?;
            (
                m,
                1.0,
                if m.single {
                    "one run"
                } else {
                    "criterion mean"
                }
                .to_string(),
            )
        }
    };
    let secs = m.ns * 1e-9 * scale;
    let value = match row.unit {
        Unit::Seconds => secs,
        Unit::Millis => secs * 1e3,
        Unit::MillisPerElement => secs * 1e3 / m.elements.unwrap_or(1) as f64,
        Unit::PerSecond => m.elements.unwrap_or(1) as f64 / secs,
    };
    let bytes = m.bytes.map(|b| b as f64 * scale);
    Some((value, bytes, note))
}

fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Seconds => "s",
        Unit::Millis => "ms",
        Unit::MillisPerElement => "ms/query",
        Unit::PerSecond => "/s",
    }
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

fn fmt_bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} KB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// Civil date (UTC) of a Unix time, by Howard Hinnant's days-from-civil inverse.
fn utc_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!(
        "- CPU: {cpu}\n- cores available: {cores}\n- report written: {}\n",
        utc_date(now)
    )
}

fn anchors(path: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return format!(
            "No reference runs found (`{}`): run `benches/anchors.sh` to add SecretFlow PSI, \
             HEU and python-phe on this machine.\n",
            path.display()
        );
    };
    let mut s = String::from(
        "Reference systems run on this machine by `benches/anchors.sh` (../shared/anchors):\n\n\
         | system / protocol | size | seconds | record |\n|---|---|---|---|\n",
    );
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let what = v["token"]
            .as_str()
            .map(str::to_string)
            .or_else(|| {
                Some(format!(
                    "{} {} {}",
                    v["lib"].as_str()?,
                    v["scheme"].as_str().unwrap_or(""),
                    v["op"].as_str().unwrap_or("")
                ))
            })
            .unwrap_or_else(|| "?".into());
        let size = v["n"]
            .as_u64()
            .or_else(|| v["bits"].as_u64())
            .map_or_else(|| "—".into(), |n| n.to_string());
        let secs = v["wall_s"]
            .as_f64()
            .or_else(|| v["s_per_op"].as_f64())
            .map_or_else(|| "—".into(), fmt_num);
        let _ = writeln!(s, "| {what} | {size} | {secs} | `{line}` |");
    }
    s
}

/// A log-log line chart as a self-contained SVG: one polyline per series of `(x, y)` points.
// Decades of log10 of timings and sizes are small integers (|d| < 30): the casts are exact.
#[allow(clippy::cast_possible_truncation)]
fn svg_chart(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let (w, h, left, bottom, top, right) = (760.0, 420.0, 70.0, 50.0, 30.0, 230.0);
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x.log10());
        x1 = x1.max(x.log10());
        y0 = y0.min(y.log10());
        y1 = y1.max(y.log10());
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    let (x0, x1) = (x0.floor(), x1.ceil().max(x0.floor() + 1.0));
    let (y0, y1) = (y0.floor(), y1.ceil().max(y0.floor() + 1.0));
    let px = |x: f64| left + (x.log10() - x0) / (x1 - x0) * (w - left - right);
    let py = |y: f64| h - bottom - (y.log10() - y0) / (y1 - y0) * (h - bottom - top);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"18\" font-size=\"14\">{title}</text>\n\
         <text x=\"{}\" y=\"{}\">{xlabel} (log)</text>\n\
         <text x=\"8\" y=\"{}\">{ylabel} (log)</text>\n",
        left + 150.0,
        h - 12.0,
        top - 6.0
    );
    let colours = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
        "#bcbd22", "#17becf",
    ];
    for d in (x0 as i32)..=(x1 as i32) {
        let x = px(10f64.powi(d));
        let _ = writeln!(
            s,
            "<line x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\">1e{d}</text>",
            h - bottom,
            x - 8.0,
            h - bottom + 14.0
        );
    }
    for d in (y0 as i32)..=(y1 as i32) {
        let y = py(10f64.powi(d));
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\">1e{d}</text>",
            w - right,
            left - 34.0,
            y + 4.0
        );
    }
    for (i, (name, p)) in series.iter().enumerate() {
        let c = colours[i % colours.len()];
        let path: Vec<String> = p
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for &(x, y) in p {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{c}\"/>",
                px(x),
                py(y)
            );
        }
        let ly = top + 14.0 * i as f64;
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{c}\"/><text x=\"{}\" y=\"{}\">{name}</text>",
            w - right + 10.0,
            ly - 9.0,
            w - right + 24.0,
            ly
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Series of the PSI scaling plot: seconds against n for every measured protocol/curve/net.
fn psi_series(all: &BTreeMap<String, Meas>) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut m: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (id, meas) in all.iter().filter(|(id, _)| id.starts_with("psi/")) {
        if let Some((head, n)) = id.rsplit_once('/')
            && let Ok(n) = n.parse::<f64>()
        {
            m.entry(head.trim_start_matches("psi/").to_string())
                .or_default()
                .push((n, meas.ns * 1e-9));
        }
    }
    m.into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, v)
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut crit = criterion_dir();
    let mut anchor_path = crit.parent().map_or_else(
        || PathBuf::from("obliv-anchors.jsonl"),
        |t| t.join("obliv-anchors.jsonl"),
    );
    let mut out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/benchmarks.md");
    while let Some(a) = args.next() {
        let v = args.next();
        match (a.as_str(), v) {
            ("--criterion", Some(v)) => crit = PathBuf::from(v),
            ("--anchors", Some(v)) => anchor_path = PathBuf::from(v),
            ("--out", Some(v)) => out = PathBuf::from(v),
            _ => {
                eprintln!("usage: report [--criterion DIR] [--anchors FILE] [--out FILE]");
                std::process::exit(2);
            }
        }
    }
    let mut all = BTreeMap::new();
    walk(&crit, &mut all);
    single_runs(&single_runs_path(), &mut all);

    let mut md = String::from(
        "# Benchmarks\n\nGenerated by `cargo run -p obliv-bench --release --bin report` from \
         `cargo bench -p obliv-bench` (criterion output) — do not edit by hand. Each row of the \
         four benchmark documents (`../shared/BENCHMARKS.md`) is reproduced by the benchmark id \
         given in `benches/README.md`. **Speed-up** is published ÷ ours for times and ours ÷ \
         published for rates: above 1 means this machine with obliv beats the published figure. \
         The documents used 4–32 cores; **per core** scales the speed-up by the document's \
         cores over ours (a like-for-like comparison for compute-bound rows), or compare against the reference systems run \
         on this machine (section below). Rows measured at a smaller n are projected linearly \
         to the document's n (every protocol here is linear in n); *one run* rows come from \
         `OBLIV_BENCH_SCALE=full`.\n\n## Machine\n\n",
    );
    md.push_str(&machine());
    let cores = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .try_into()
        .unwrap_or(u32::MAX);
    let mut matched = std::collections::BTreeSet::new();
    let mut section = "";
    for row in rows() {
        if row.section != section {
            section = row.section;
            let _ = write!(
                md,
                "\n## {section}\n\n| row | published | source | ours | speed-up | per core | traffic (ours) | how |\n|---|---|---|---|---|---|---|---|\n"
            );
        }
        let unit = unit_name(row.unit);
        let published = row
            .published
            .map_or_else(|| "—".into(), |p| format!("{} {unit}", fmt_num(p)));
        for id in all.keys().filter(|id| id.starts_with(row.id)) {
            matched.insert(id.clone());
        }
        let dash = || String::from("—");
        let (o, ratio, per_core, traffic, how) = match (row.not_measured, ours(&row, &all)) {
            (Some(why), _) => (
                format!("not measured: {why}"),
                dash(),
                dash(),
                dash(),
                String::new(),
            ),
            (None, None) => (
                "not measured".into(),
                dash(),
                dash(),
                dash(),
                format!("`{}`", row.id),
            ),
            (None, Some((v, bytes, note))) => {
                let r = row.published.map(|p| {
                    if row.unit == Unit::PerSecond {
                        v / p
                    } else {
                        p / v
                    }
                });
                let ratio = r.map_or_else(dash, |r| format!("{r:.2}×"));
                // Per core: the published figure used `doc_cores`, ours every core here (one
                // for single-thread rows).
                let ours_cores = if row.doc_cores == 1 { 1 } else { cores };
                let per_core = match r {
                    Some(r) if row.doc_cores > 0 => {
                        format!(
                            "{:.2}×",
                            r * f64::from(row.doc_cores) / f64::from(ours_cores)
                        )
                    }
                    _ => dash(),
                };
                (
                    format!("{} {unit}", fmt_num(v)),
                    ratio,
                    per_core,
                    bytes.map_or_else(dash, fmt_bytes),
                    format!("`{}` {note}", row.id),
                )
            }
        };
        let _ = writeln!(
            md,
            "| {} | {published} | {} | {o} | {ratio} | {per_core} | {traffic} | {how} |",
            row.label, row.source
        );
    }
    md.push_str("\n## Other measurements (primitives and extra cases)\n\n| id | mean | throughput |\n|---|---|---|\n");
    for (id, m) in all.iter().filter(|(id, _)| !matched.contains(*id)) {
        let t = m.ns * 1e-9;
        let thr = match (m.bytes, m.elements) {
            (Some(b), _) => format!("{} per iteration", fmt_bytes(b as f64)),
            (_, Some(e)) => format!("{} elements/s", fmt_num(e as f64 / t)),
            _ => "—".into(),
        };
        let mean = if t >= 1.0 {
            format!("{t:.2} s")
        } else if t >= 1e-3 {
            format!("{:.2} ms", t * 1e3)
        } else {
            format!("{:.2} µs", t * 1e6)
        };
        let _ = writeln!(md, "| `{id}` | {mean} | {thr} |");
    }
    // Plots, written beside the report.
    let dir = out
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let psi = psi_series(&all);
    let mut pail = Vec::new();
    for (threads, id) in [
        (1.0, "paillier/encrypt2048/1_thread"),
        (f64::from(cores), "paillier/encrypt2048/all_cores"),
    ] {
        if let Some(m) = all.get(id) {
            pail.push((threads, m.elements.unwrap_or(1) as f64 / (m.ns * 1e-9)));
        }
    }
    let plots = [
        (
            "psi_scaling.svg",
            svg_chart(
                "PSI: wall time against set size (this machine)",
                "n per party",
                "seconds",
                &psi,
            ),
        ),
        (
            "paillier_threads.svg",
            svg_chart(
                "Paillier-2048 encryption throughput against threads",
                "threads",
                "encryptions/s",
                &[("obliv-he".to_string(), pail)],
            ),
        ),
    ];
    md.push_str("\n## Plots\n\n");
    for (name, svg) in plots {
        let _ = std::fs::create_dir_all(&dir);
        match std::fs::write(dir.join(name), svg) {
            Ok(()) => {
                let _ = writeln!(md, "![{name}]({name})\n");
            }
            Err(e) => eprintln!("cannot write {name}: {e}"),
        }
    }
    md.push_str("\n## Reference systems on this machine\n\n");
    md.push_str(&anchors(&anchor_path));
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(&out, md) {
        Ok(()) => println!(
            "wrote {} ({} measurements from {})",
            out.display(),
            all.len(),
            crit.display()
        ),
        Err(e) => {
            eprintln!("cannot write {}: {e}", out.display());
            std::process::exit(1);
        }
    }
}
