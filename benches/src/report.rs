//! The report's inputs and their rendering, kept in the library so that the parsing and the
//! arithmetic are unit-tested: criterion's `new/benchmark.json` + `new/estimates.json`, the
//! single full-scale runs and traffic records the benches append (JSON lines), and the
//! reference systems' runs on this machine (JSON lines of `shared/anchors/*.py` through
//! `benches/anchors.sh`, and of `benches/anchors/side_by_side.sh`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use crate::{Reference, Row, SIDE_BY_SIDE, SideRow, Unit, rows};

/// One measurement of ours: criterion's mean, or a single full-scale run.
#[derive(Clone, Debug, PartialEq)]
pub struct Meas {
    /// Mean nanoseconds per iteration.
    pub ns: f64,
    /// Bytes on the wire per iteration, if known.
    pub bytes: Option<u64>,
    /// Elements per iteration, if the bench declared them.
    pub elements: Option<u64>,
    /// Whether this is one run outside criterion's sampler.
    pub single: bool,
}

/// Every measurement of ours by benchmark id.
pub type Measurements = BTreeMap<String, Meas>;

/// Parses one criterion benchmark: the contents of `new/benchmark.json` (id, throughput) and
/// `new/estimates.json` (mean). `None` if either lacks what the report needs.
pub fn parse_criterion(benchmark_json: &str, estimates_json: &str) -> Option<(String, Meas)> {
    let b: Value = serde_json::from_str(benchmark_json).ok()?;
    let est: Value = serde_json::from_str(estimates_json).ok()?;
    let id = b["full_id"].as_str()?;
    let ns = est["mean"]["point_estimate"].as_f64()?;
    if !(ns.is_finite() && ns > 0.0) {
        return None;
    }
    let t = &b["throughput"];
    let bytes = t["Bytes"].as_u64().or_else(|| t["BytesDecimal"].as_u64());
    let elements = t["Elements"].as_u64();
    Some((
        id.to_string(),
        Meas {
            ns,
            bytes,
            elements,
            single: false,
        },
    ))
}

/// Reads every `*/new/` benchmark under `dir` into `out`; returns the newest modification
/// time of the estimates read (when the benches ran).
pub fn walk_criterion(dir: &Path, out: &mut Measurements) -> Option<SystemTime> {
    let mut newest: Option<SystemTime> = None;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return None;
    };
    for e in entries.flatten() {
        let p = e.path();
        if !p.is_dir() {
            continue;
        }
        if p.file_name().is_some_and(|n| n == "new") {
            let est = p.join("estimates.json");
            let (Ok(b), Ok(x)) = (
                std::fs::read_to_string(p.join("benchmark.json")),
                std::fs::read_to_string(&est),
            ) else {
                continue;
            };
            if let Some((id, m)) = parse_criterion(&b, &x) {
                out.insert(id, m);
                let t = std::fs::metadata(&est).and_then(|m| m.modified()).ok();
                newest = newest.max(t);
            }
        } else {
            newest = newest.max(walk_criterion(&p, out));
        }
    }
    newest
}

/// Parses the single-run JSON lines (`{"id", "seconds", "bytes", "elements"}`) into `out`;
/// a later line of the same id replaces an earlier one, and replaces a criterion figure of
/// the same id. Lines that do not parse are skipped. Returns the number of lines taken.
pub fn parse_single_runs(text: &str, out: &mut Measurements) -> usize {
    let mut taken = 0;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(id), Some(s)) = (v["id"].as_str(), v["seconds"].as_f64()) else {
            continue;
        };
        if !(s.is_finite() && s > 0.0) {
            continue;
        }
        out.insert(
            id.to_string(),
            Meas {
                ns: s * 1e9,
                bytes: v["bytes"].as_u64(),
                elements: v["elements"].as_u64(),
                single: true,
            },
        );
        taken += 1;
    }
    taken
}

/// Parses the traffic JSON lines (`{"id", "bytes"}`, for benches whose criterion throughput is
/// not bytes) and sets the bytes of measurements that have none.
pub fn parse_traffic(text: &str, out: &mut Measurements) {
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let (Some(id), Some(b)) = (v["id"].as_str(), v["bytes"].as_u64())
            && let Some(m) = out.get_mut(id)
            && m.bytes.is_none()
        {
            m.bytes = Some(b);
        }
    }
}

/// A PSI run of a reference system (or of the obliv CLI in the side-by-side script).
#[derive(Clone, Debug, PartialEq)]
pub struct PsiRun {
    /// `obliv` or `secretflow`.
    pub system: String,
    /// Canonical protocol name (see [`canon_protocol`]).
    pub protocol: String,
    /// Canonical curve name, `""` for none.
    pub curve: String,
    /// Items per party (the server's for the unbalanced offline phase, the client's online).
    pub n: u64,
    /// `lan` or `wan100m10ms` (or the link's own description if neither).
    pub link: String,
    /// Wall seconds.
    pub wall_s: f64,
    /// Bytes on the wire, all parties, if measured.
    pub bytes: Option<u64>,
    /// When it ran, as written in the record.
    pub date: String,
    /// A remark (machine load, …).
    pub note: String,
    /// The CPU model the run was taken on (see [`LEGACY_CPU`] for records without one).
    pub cpu: String,
    /// The SIMD class obliv's dispatch ran on (one of [`CPU_CLASSES`]; [`LEGACY_CPU_CLASS`]
    /// for records without one).
    pub cpu_class: String,
    /// The CPU features of note that obliv could use, space-separated.
    pub features: String,
    /// The backends the obliv CLI reported (`backends:` line), `""` if not recorded.
    pub backend: String,
}

/// The SIMD classes of obliv's run-time dispatch, in the order the report shows them: AVX-512
/// IFMA, AVX-512F without IFMA, AVX2, plain x86-64, and aarch64 (portable code).
pub const CPU_CLASSES: [&str; 5] = ["avx512ifma", "avx512f", "avx2", "x86-64", "aarch64"];

/// The CPU class of side-by-side records written before the `cpu`, `cpu_class` and `features`
/// fields existed: every one of them was taken on an AMD EPYC (Zen 4) with AVX-512 IFMA.
pub const LEGACY_CPU_CLASS: &str = "avx512ifma";

/// The CPU model of the records without a `cpu_class` (see [`LEGACY_CPU_CLASS`]).
pub const LEGACY_CPU: &str = "AMD EPYC (Zen 4)";

/// The CPU features of the records without a `cpu_class` (see [`LEGACY_CPU_CLASS`]).
pub const LEGACY_FEATURES: &str = "aes avx2 bmi2 adx avx512f avx512ifma vaes vpclmulqdq";

/// The CPU features `benches/anchors/side_by_side.sh` records and the Machine section lists.
pub const NOTABLE_FEATURES: [&str; 8] = [
    "aes",
    "avx2",
    "bmi2",
    "adx",
    "avx512f",
    "avx512ifma",
    "vaes",
    "vpclmulqdq",
];

/// `features` less those an `OBLIV_CPU_DISABLE` list (comma-separated) switches off, as obliv
/// honours it: `avx512f` or `avx2` in the list also takes away every `avx512*` feature.
pub fn without_disabled<'a>(features: &[&'a str], disable: &str) -> Vec<&'a str> {
    let off: Vec<&str> = disable
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    let no_avx512 = off.iter().any(|d| *d == "avx512f" || *d == "avx2");
    features
        .iter()
        .copied()
        .filter(|f| !(off.contains(f) || (no_avx512 && f.starts_with("avx512"))))
        .collect()
}

/// The SIMD class obliv's dispatch runs on with `features` (already less `OBLIV_CPU_DISABLE`,
/// see [`without_disabled`]) on the architecture `arch` (`std::env::consts::ARCH`).
pub fn cpu_class(arch: &str, features: &[&str]) -> &'static str {
    if arch == "aarch64" {
        "aarch64"
    } else if features.contains(&"avx512ifma") {
        "avx512ifma"
    } else if features.contains(&"avx512f") {
        "avx512f"
    } else if features.contains(&"avx2") {
        "avx2"
    } else {
        "x86-64"
    }
}

/// The rank of a CPU class in the report's order ([`CPU_CLASSES`], unknown classes after).
fn class_rank(c: &str) -> usize {
    CPU_CLASSES
        .iter()
        .position(|k| *k == c)
        .unwrap_or(CPU_CLASSES.len())
}

/// A line of `shared/anchors/he_anchors.py`.
#[derive(Clone, Debug, PartialEq)]
pub struct HeRun {
    /// Library, e.g. `python-phe(gmpy2)`, `python-phe x2 processes`, `heu`.
    pub lib: String,
    /// Scheme, e.g. `paillier`.
    pub scheme: String,
    /// Key bits.
    pub bits: u64,
    /// Operation, e.g. `encrypt`.
    pub op: String,
    /// Seconds per operation.
    pub s_per_op: f64,
}

/// The reference runs read from the JSON-lines files.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Anchors {
    /// PSI runs (SecretFlow, and the obliv CLI of the side-by-side script).
    pub psi: Vec<PsiRun>,
    /// HE runs (python-phe, HEU).
    pub he: Vec<HeRun>,
}

/// Canonical protocol name of SecretFlow's (`PROTOCOL_RR22_LOWCOMM`), the CLI's
/// (`rr22-lowcomm`) or ours (`rr22_lowcomm`).
pub fn canon_protocol(p: &str) -> String {
    let p = p.to_ascii_lowercase().replace('-', "_");
    let p = p.strip_prefix("protocol_").unwrap_or(&p);
    match p {
        "ecdh" | "ecdh_2pc" => "ecdh_2pc",
        "ecdh_3pc" | "ecdh3pc" => "ecdh_3pc",
        "rr22" | "rr22_fast" => "rr22_fast",
        "rr22_lowcomm" | "rr22_low_comm" => "rr22_lowcomm",
        other => other,
    }
    .to_string()
}

/// Canonical curve name: `fourq`, `25519`, `sm2`, `secp256k1`, `p256`, or `""`.
pub fn canon_curve(c: &str) -> String {
    let c = c.to_ascii_lowercase();
    if c.starts_with("fourq") {
        "fourq".into()
    } else if c.contains("25519") {
        "25519".into()
    } else {
        c
    }
}

/// Canonical link: SecretFlow's loopback is `lan`; a 10 ms, 100 Mbit shaping `wan100m10ms`.
pub fn canon_link(l: &str) -> String {
    let low = l.to_ascii_lowercase();
    if low.is_empty() || low == "lan" || low.starts_with("loopback") {
        "lan".into()
    } else if low.contains("10ms") && low.contains("100mbit") || low == "wan100m10ms" {
        "wan100m10ms".into()
    } else if low.contains("50ms") && low.contains("100mbit") || low == "wan100m50ms" {
        "wan100m50ms".into()
    } else {
        l.to_string()
    }
}

impl Anchors {
    /// A copy with only the PSI runs of CPU class `class` (the HE runs unchanged).
    pub fn of_class(&self, class: &str) -> Self {
        Self {
            psi: self
                .psi
                .iter()
                .filter(|r| r.cpu_class == class)
                .cloned()
                .collect(),
            he: self.he.clone(),
        }
    }
}

/// Parses reference-run JSON lines into `out`: side-by-side records (`system`, `protocol`,
/// `curve`, `n`, `link`, `wall_s`, `bytes`, and `cpu`, `cpu_class`, `features`, `backend`
/// where recorded), `secretflow_psi.py`'s own lines (`protocol` such as `PROTOCOL_KKRT`,
/// `wall_s`, `bytes_sent`; an unbalanced line gives an offline and an online run) and
/// `he_anchors.py`'s (`lib`, `scheme`, `bits`, `op`, `s_per_op`). A PSI line without
/// `cpu_class` predates the CPU fields and gets [`LEGACY_CPU_CLASS`], [`LEGACY_CPU`] and
/// [`LEGACY_FEATURES`]. Failed runs (no time, or `correct: false`) and other lines are
/// skipped.
pub fn parse_anchor_lines(text: &str, out: &mut Anchors) {
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["correct"].as_bool() == Some(false) {
            continue;
        }
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        if let (Some(lib), Some(t)) = (v["lib"].as_str(), v["s_per_op"].as_f64()) {
            out.he.push(HeRun {
                lib: lib.into(),
                scheme: s("scheme").to_ascii_lowercase(),
                bits: v["bits"].as_u64().unwrap_or(0),
                op: s("op"),
                s_per_op: t,
            });
            continue;
        }
        let Some(proto) = v["protocol"].as_str() else {
            continue;
        };
        let system = v["system"].as_str().unwrap_or("secretflow").to_string();
        let (cpu, cpu_class, features) = match v["cpu_class"].as_str() {
            Some(c) if !c.trim().is_empty() => {
                let cpu = s("cpu");
                (
                    if cpu.trim().is_empty() {
                        "unknown".to_string()
                    } else {
                        cpu
                    },
                    c.trim().to_string(),
                    s("features"),
                )
            }
            _ => (
                LEGACY_CPU.to_string(),
                LEGACY_CPU_CLASS.to_string(),
                LEGACY_FEATURES.to_string(),
            ),
        };
        let base = PsiRun {
            system,
            protocol: canon_protocol(proto),
            curve: canon_curve(&s("curve")),
            n: v["n"].as_u64().unwrap_or(0),
            link: canon_link(&s("link")),
            wall_s: 0.0,
            bytes: None,
            date: s("date"),
            note: s("note"),
            cpu,
            cpu_class,
            features,
            backend: s("backend").trim().to_string(),
        };
        if base.protocol == "ub_psi_ecdh_oprf" {
            let phase = |name: &str, t: &str, b: &str, n: Option<u64>| {
                Some(PsiRun {
                    protocol: name.into(),
                    wall_s: v[t].as_f64()?,
                    bytes: v[b].as_u64(),
                    n: n?,
                    ..base.clone()
                })
            };
            let offline = phase(
                "unbalanced_offline",
                "offline_s",
                "offline_bytes_sent",
                Some(base.n),
            );
            let online = phase(
                "unbalanced_online",
                "online_s",
                "online_bytes_sent",
                v["client_n"].as_u64(),
            );
            out.psi.extend(offline.into_iter().chain(online));
            continue;
        }
        let Some(wall_s) = v["wall_s"].as_f64() else {
            continue;
        };
        out.psi.push(PsiRun {
            wall_s,
            bytes: v["bytes"].as_u64().or_else(|| v["bytes_sent"].as_u64()),
            ..base
        });
    }
}

/// A figure in a row's unit, with the bytes on the wire at the row's size and how it was
/// obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The value in the row's unit.
    pub value: f64,
    /// Bytes on the wire, scaled like the value.
    pub bytes: Option<f64>,
    /// How it was obtained (size measured, projection).
    pub note: String,
    /// The size measured (before any projection), where the row has one.
    pub n: Option<u64>,
    /// The date stamp of the side-by-side invocation behind a CLI figure ([`ours_cli`]), so
    /// that [`reference()`] can take the reference system's run of that same invocation.
    pub date: Option<String>,
}

/// Converts seconds per iteration (with `elements` per iteration) into `unit`.
pub fn in_unit(unit: Unit, secs: f64, elements: Option<u64>) -> f64 {
    let e = elements.unwrap_or(1).max(1) as f64;
    match unit {
        Unit::Seconds => secs,
        Unit::Millis => secs * 1e3,
        Unit::MillisPerElement => secs * 1e3 / e,
        Unit::PerSecond => e / secs,
    }
}

/// How much faster `ours` is than `other` (both in `unit`): `other / ours` for times,
/// `ours / other` for rates. Above 1: ours is faster. `None` unless both are positive.
pub fn speedup(unit: Unit, other: f64, ours: f64) -> Option<f64> {
    if !(other > 0.0 && ours > 0.0) {
        return None;
    }
    Some(match unit {
        Unit::PerSecond => ours / other,
        _ => other / ours,
    })
}

/// Picks the size to use from `sizes` for a row at `doc_n`: `doc_n` itself if present, else
/// the largest (the protocols are linear in n, and the largest has the least fixed cost).
pub fn pick_size(sizes: impl IntoIterator<Item = u64>, doc_n: u64) -> Option<u64> {
    let mut best = None;
    for n in sizes {
        if n == doc_n {
            return Some(n);
        }
        best = best.max(Some(n));
    }
    best
}

/// Our figure for a row: the measurement at the row's size or, when only smaller sizes ran,
/// the largest one projected linearly.
pub fn ours(row: &Row, all: &Measurements) -> Option<Figure> {
    let (m, scale, note, measured_n) = match row.doc_n {
        Some(doc_n) => {
            let sized: BTreeMap<u64, &Meas> = all
                .iter()
                .filter_map(|(id, m)| Some((id.strip_prefix(row.id)?.parse().ok()?, m)))
                .collect();
            let n = pick_size(sized.keys().copied(), doc_n)?;
            let m = sized[&n];
            let kind = if m.single {
                "one run"
            } else {
                "criterion mean"
            };
            if n == doc_n {
                (m, 1.0, format!("{kind}, n = {}", fmt_n(n)), Some(n))
            } else {
                (
                    m,
                    doc_n as f64 / n as f64,
                    format!("{kind}, n = {}, projected linearly", fmt_n(n)),
                    Some(n),
                )
            }
        }
        None => {
            let m = all.get(row.id)?;
            let kind = if m.single {
                "one run"
            } else {
                "criterion mean"
            };
            (m, 1.0, kind.to_string(), None)
        }
    };
    let secs = m.ns * 1e-9 * scale;
    Some(Figure {
        value: in_unit(row.unit, secs, m.elements),
        bytes: m.bytes.map(|b| b as f64 * scale),
        note,
        n: measured_n,
        date: None,
    })
}

/// Our figure for a PSI row from the side-by-side records of the `obliv` CLI
/// (`benches/anchors/side_by_side.sh`): the latest run (the current code; the fastest of that
/// date) at the row's size or at the largest size run, projected linearly. These runs use the
/// same harness as the reference system's (two parties on this machine, CSV in and out), so
/// where they reach a larger size than the criterion benches they are the better figure.
pub fn ours_cli(row: &Row, anchors: &Anchors) -> Option<Figure> {
    let Some(Reference::Psi {
        protocol,
        curve,
        link,
    }) = row.reference
    else {
        return None;
    };
    let doc_n = row.doc_n?;
    let runs: Vec<&PsiRun> = anchors
        .psi
        .iter()
        .filter(|r| {
            r.system == "obliv" && r.protocol == protocol && r.curve == curve && r.link == link
        })
        .collect();
    let n = pick_size(runs.iter().map(|r| r.n), doc_n)?;
    let at_n: Vec<&PsiRun> = runs.into_iter().filter(|r| r.n == n).collect();
    let latest = at_n.iter().map(|r| r.date.as_str()).max()?;
    let run = at_n
        .iter()
        .filter(|r| r.date == latest)
        .min_by(|a, b| a.wall_s.total_cmp(&b.wall_s))?;
    let scale = doc_n as f64 / n as f64;
    let note = if n == doc_n {
        format!("`obliv psi demo` run of {latest}, n = {}", fmt_n(n))
    } else {
        format!(
            "`obliv psi demo` run of {latest}, n = {}, projected linearly",
            fmt_n(n)
        )
    };
    Some(Figure {
        value: in_unit(row.unit, run.wall_s * scale, None),
        bytes: run.bytes.map(|b| b as f64 * scale),
        note,
        n: Some(n),
        date: Some(latest.to_string()),
    })
}

/// Our figure for a row: the criterion measurement ([`ours`]) unless the CLI's side-by-side
/// record ([`ours_cli`]) ran at least as large a size.
pub fn ours_best(row: &Row, all: &Measurements, anchors: &Anchors) -> Option<Figure> {
    match (ours(row, all), ours_cli(row, anchors)) {
        (Some(c), Some(cli)) if cli.n >= c.n => Some(cli),
        (None, Some(cli)) => Some(cli),
        (c, _) => c,
    }
}

/// The reference system's figure for a row, from the runs on this machine: at the size our
/// figure was measured at (`prefer_n`) where the reference ran it, else at the row's size or
/// the largest size run, projected linearly; of the runs at that size, the one of our CLI
/// figure's side-by-side invocation (`prefer_date`: same machine speed, as in the side-by-side
/// section), else the fastest.
pub fn reference(
    row: &Row,
    anchors: &Anchors,
    prefer_n: Option<u64>,
    prefer_date: Option<&str>,
) -> Option<(Figure, &'static str)> {
    match row.reference? {
        Reference::Psi {
            protocol,
            curve,
            link,
        } => {
            let runs: Vec<&PsiRun> = anchors
                .psi
                .iter()
                .filter(|r| {
                    r.system == "secretflow"
                        && r.protocol == protocol
                        && r.curve == curve
                        && r.link == link
                })
                .collect();
            let doc_n = row.doc_n?;
            // Like with like: the size our figure was measured at, if the reference ran it.
            let n = match prefer_n {
                Some(p) if runs.iter().any(|r| r.n == p) => p,
                _ => pick_size(runs.iter().map(|r| r.n), doc_n)?,
            };
            let at_n = runs.iter().filter(|r| r.n == n);
            let same_run = prefer_date.and_then(|d| at_n.clone().find(|r| r.date == d));
            let best = match same_run {
                Some(r) => r,
                None => at_n.min_by(|a, b| a.wall_s.total_cmp(&b.wall_s))?,
            };
            let scale = doc_n as f64 / n as f64;
            let mut note = if n == doc_n {
                format!("n = {}", fmt_n(n))
            } else {
                format!("n = {}, projected linearly", fmt_n(n))
            };
            note.push_str(if same_run.is_some() {
                ", same run"
            } else {
                ", fastest run"
            });
            Some((
                Figure {
                    value: in_unit(row.unit, best.wall_s * scale, None),
                    bytes: best.bytes.map(|b| b as f64 * scale),
                    note,
                    n: Some(n),
                    date: Some(best.date.clone()),
                },
                "SecretFlow",
            ))
        }
        Reference::He {
            lib,
            scheme,
            bits,
            op,
        } => {
            let best = anchors
                .he
                .iter()
                .filter(|r| {
                    r.lib.starts_with(lib)
                        && r.scheme == scheme
                        && r.bits == u64::from(bits)
                        && r.op == op
                })
                .min_by(|a, b| a.s_per_op.total_cmp(&b.s_per_op))?;
            Some((
                Figure {
                    value: in_unit(row.unit, best.s_per_op, None),
                    bytes: None,
                    note: best.lib.clone(),
                    n: None,
                    date: None,
                },
                "python-phe",
            ))
        }
    }
}

/// `1e7`-style for powers of ten, `2^16` for powers of two, else the number.
pub fn fmt_n(n: u64) -> String {
    if n >= 1000 && n.is_power_of_two() {
        return format!("2^{}", n.trailing_zeros());
    }
    let mut e = 0;
    let mut m = n;
    while m >= 10 && m.is_multiple_of(10) {
        m /= 10;
        e += 1;
    }
    if e >= 3 {
        format!("{m}e{e}")
    } else {
        n.to_string()
    }
}

/// A figure with three significant digits or so.
pub fn fmt_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else if v >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

/// Bytes in B, KB, MB or GB (decimal).
pub fn fmt_bytes(b: f64) -> String {
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

fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Seconds => "s",
        Unit::Millis => "ms",
        Unit::MillisPerElement => "ms/query",
        Unit::PerSecond => "/s",
    }
}

/// Civil date and time (UTC) of a Unix time (Howard Hinnant's `civil_from_days`).
pub fn utc_date(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
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

/// The machine as `/proc/cpuinfo` describes it: (CPU model, logical cores, flags of note).
pub fn parse_cpuinfo(text: &str) -> (String, usize, Vec<&'static str>) {
    let model = text
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or_else(|| "unknown".to_string(), |(_, m)| m.trim().to_string());
    let cores = text
        .lines()
        .filter(|l| l.starts_with("processor") && l.contains(':'))
        .count();
    let flags: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map_or_else(Vec::new, |(_, f)| f.split_whitespace().collect());
    let notable = NOTABLE_FEATURES
        .into_iter()
        .filter(|f| flags.contains(f))
        .collect();
    (model, cores, notable)
}

/// Everything the report is made of.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// Our measurements by id.
    pub ours: Measurements,
    /// Reference runs.
    pub anchors: Anchors,
    /// CPU model.
    pub cpu: String,
    /// Logical cores.
    pub cores: usize,
    /// CPU flags of note.
    pub flags: Vec<&'static str>,
    /// The CPU class of this machine (see [`cpu_class`]): §1 takes the side-by-side and
    /// reference PSI runs of this class only, so that its criterion figures are never set
    /// against another CPU's. `""`: every class (no filter).
    pub cpu_class: String,
    /// When the benches ran (newest estimate), formatted.
    pub measured: Option<String>,
    /// When the report was written, formatted.
    pub written: String,
    /// The hand-maintained page (`docs/measurements.md`), included verbatim after its title.
    pub measurements_md: Option<String>,
    /// Where the criterion and reference inputs came from, one line each (shown in the
    /// Machine section).
    pub sources: Vec<String>,
    /// Where the side-by-side records came from (one line of the Machine section, regenerated
    /// with the side-by-side section), if known.
    pub side_by_side_source: Option<String>,
    /// The slow-link runs (`docs/data/links.jsonl`), for their regenerated section and plot.
    pub links: Vec<crate::links::LinkRun>,
}

/// The rendered report: the Markdown page and the SVG plots (file name, contents) that it
/// links to, to be written beside it.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The Markdown of `docs/benchmarks.md`.
    pub markdown: String,
    /// `(file name, SVG)` pairs.
    pub plots: Vec<(String, String)>,
    /// Rows of the documents with a figure of ours, and all rows.
    pub measured_rows: (usize, usize),
}

/// The page's title and introduction, after the kept "Partial" notice if any.
fn preamble(partial: &str) -> String {
    let mut md = String::from("# Benchmarks\n\n");
    md.push_str(partial);
    md.push_str(
        "Generated by `cargo run -p obliv-bench --release --bin report` from the output of \
         `cargo bench -p obliv-bench` and of the reference-system scripts; do not edit by hand \
         (hand-written figures live in `docs/measurements.md`, included at the end). Each row \
         of the four benchmark documents (SecretFlow's PSI white paper, python-phe's Paillier \
         figures, the mpc4j DPF-PIR study, Sidorov et al. 2022) is reproduced by the \
         benchmark id in `benches/README.md`.\n\n\
         - **vs published** is the published figure ÷ ours for times (ours ÷ published for \
         rates): above 1 means obliv on this machine beats the document's figure on its \
         machine. The documents used 4–32 cores; **per core** multiplies that by the \
         document's cores ÷ ours (like for like on compute-bound rows).\n\
         - **reference here** is the reference system run on *this* machine (SecretFlow PSI, \
         python-phe), **vs reference** the same ratio against it: the fairest comparison.\n\
         - Rows measured at a smaller n are projected linearly to the document's n (every \
         protocol here is linear in n); *one run* figures come from \
         `OBLIV_BENCH_SCALE=full`. Traffic is the bytes on the wire, all parties.\n\n",
    );
    md
}

/// The lines of the Machine section that describe the criterion-derived sections (the
/// machine they were measured on, when, from which files); `--keep-criterion-sections` keeps
/// them verbatim.
fn criterion_machine_lines(inp: &Inputs) -> Vec<String> {
    let mut v = vec![format!("- CPU: {} ({} logical cores)", inp.cpu, inp.cores)];
    if !inp.flags.is_empty() {
        v.push(format!(
            "- CPU features used by obliv: {}",
            inp.flags.join(", ")
        ));
    }
    if let Some(m) = &inp.measured {
        v.push(format!("- benches ran: {m} (newest criterion estimate)"));
    }
    v.extend(inp.sources.iter().map(|s| format!("- {s}")));
    if !inp.cpu_class.is_empty() {
        v.push(format!(
            "- §1's CLI and reference-here PSI figures: runs of CPU class {} (this machine's) \
             only",
            inp.cpu_class
        ));
    }
    v
}

/// The CPU classes of the side-by-side records, as one Machine line.
fn side_classes_line(anchors: &Anchors) -> String {
    let classes = side_classes(anchors);
    if classes.is_empty() {
        return "- side-by-side CPU classes: none (no side-by-side records)".into();
    }
    let parts: Vec<String> = classes
        .iter()
        .map(|c| {
            let runs = class_runs(anchors, c);
            format!(
                "{c} ({})",
                distinct(runs.iter().map(|r| r.cpu.as_str())).join(", ")
            )
        })
        .collect();
    format!("- side-by-side CPU classes: {}", parts.join("; "))
}

/// The lines of the Machine section that every run of the report writes anew: when, the
/// side-by-side records and their CPU classes.
fn regenerated_machine_lines(inp: &Inputs) -> Vec<String> {
    let mut v = vec![format!("- report written: {}", inp.written)];
    if let Some(s) = &inp.side_by_side_source {
        v.push(format!("- {s}"));
    }
    v.push(side_classes_line(&inp.anchors));
    v
}

/// The section including `docs/measurements.md`, if given.
fn hand_maintained(measurements_md: Option<&str>) -> Option<String> {
    let text = measurements_md?;
    let mut md = format!("{HAND_HEADING}\n\n");
    // Drop the page's own title; demote its sections one level.
    for line in text
        .lines()
        .skip_while(|l| l.starts_with("# ") || l.is_empty())
    {
        if line.starts_with('#') {
            let _ = writeln!(md, "#{line}");
        } else {
            let _ = writeln!(md, "{line}");
        }
    }
    Some(md)
}

/// The heading of the section that includes `docs/measurements.md`.
const HAND_HEADING: &str = "## Hand-maintained measurements (`docs/measurements.md`)";

/// Renders the whole report.
pub fn render(inp: &Inputs) -> Rendered {
    let all_rows = rows();
    let measured = all_rows
        .iter()
        .filter(|r| r.not_measured.is_none() && ours(r, &inp.ours).is_some())
        .count();
    // Rows a default `cargo bench` measures: not those with a reason, nor full-scale ones.
    let measurable = all_rows
        .iter()
        .filter(|r| r.not_measured.is_none() && !r.label.contains("full scale only"))
        .count();
    let partial = if measured < measurable {
        format!(
            "> **Partial**: {measured} of the {measurable} document rows that the default \
             `cargo bench -p obliv-bench` measures have a figure of ours in the criterion \
             output this page was generated from (the others say *not measured*).\n\n"
        )
    } else {
        String::new()
    };
    let mut md = preamble(&partial);
    md.push_str("## Machine\n\n");
    for l in criterion_machine_lines(inp)
        .into_iter()
        .chain(regenerated_machine_lines(inp))
    {
        let _ = writeln!(md, "{l}");
    }

    // §1 sets criterion figures against the reference runs of this machine's class only.
    let anchors = if inp.cpu_class.is_empty() {
        inp.anchors.clone()
    } else {
        inp.anchors.of_class(&inp.cpu_class)
    };
    let mut matched = std::collections::BTreeSet::new();
    let mut section = "";
    for row in &all_rows {
        if row.section != section {
            section = row.section;
            let _ = write!(
                md,
                "\n## {section}: {}\n\n| row | published | ours | reference here | vs published | per core | vs reference | traffic (ours) | how |\n|---|---|---|---|---|---|---|---|---|\n",
                section_title(section)
            );
        }
        md.push_str(&row_line(row, inp, &anchors, &mut matched));
    }
    md.push('\n');
    md.push_str(&side_by_side(&inp.anchors));
    let links = crate::links::section(&inp.links);
    if !links.is_empty() {
        md.push('\n');
        md.push_str(&links);
    }
    md.push_str(
        "\n## Other measurements (primitives, other curves, extra cases)\n\n| id | mean | per iteration |\n|---|---|---|\n",
    );
    for (id, m) in inp.ours.iter().filter(|(id, _)| !matched.contains(*id)) {
        let t = m.ns * 1e-9;
        let thr = match (m.bytes, m.elements) {
            // The AES benches count the bytes they encrypt; every other byte count is traffic.
            (Some(b), _) if id.starts_with("primitives/aes") => {
                format!("{} processed", fmt_bytes(b as f64))
            }
            (Some(b), _) => format!("{} on the wire", fmt_bytes(b as f64)),
            (_, Some(e)) => format!("{e} elements, {} /s", fmt_num(e as f64 / t)),
            _ => "—".into(),
        };
        let _ = writeln!(md, "| `{id}` | {} | {thr} |", fmt_time(t));
    }
    let plots = plots(inp);
    md.push_str("\n## Plots\n\n");
    for (name, _) in &plots {
        let _ = writeln!(md, "![{name}]({name})\n");
    }
    if let Some(hand) = hand_maintained(inp.measurements_md.as_deref()) {
        md.push('\n');
        md.push_str(&hand);
    }
    Rendered {
        markdown: md,
        plots,
        measured_rows: (measured, all_rows.len()),
    }
}

/// What a `## ` section of a generated page is, for `--keep-criterion-sections`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SectionKind {
    /// `## Machine`: partly criterion lines (kept), partly regenerated.
    Machine,
    /// §1–§4, "Other measurements", "Plots": from criterion output, kept verbatim.
    Criterion(&'static str),
    /// The side-by-side section: regenerated.
    SideBySide,
    /// The `docs/measurements.md` inclusion: regenerated.
    Hand,
}

/// The names of the criterion-derived sections, in page order: every section of
/// [`rows`], then "Other measurements" and "Plots".
fn criterion_section_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for r in rows() {
        if !v.contains(&r.section) {
            v.push(r.section);
        }
    }
    v.push("Other measurements");
    v.push("Plots");
    v
}

/// The kind of a section by its heading line (`## …`), `None` if this report writes no such
/// section.
fn section_kind(heading: &str) -> Option<SectionKind> {
    let h = heading.strip_prefix("## ")?.trim_end();
    if h == "Machine" {
        return Some(SectionKind::Machine);
    }
    if h.starts_with("PSI side by side") || h.starts_with(crate::links::HEADING) {
        return Some(SectionKind::SideBySide);
    }
    if h.starts_with("Hand-maintained") {
        return Some(SectionKind::Hand);
    }
    criterion_section_names()
        .into_iter()
        .find(|name| {
            h.strip_prefix(name).is_some_and(|rest| {
                rest.is_empty() || rest.starts_with(':') || rest.starts_with(' ')
            })
        })
        .map(SectionKind::Criterion)
}

/// Splits a generated page at its `## ` headings (outside fenced code blocks): the text
/// before the first heading, then `(heading line, section text)` pairs, each text running
/// from its heading up to the next heading (so the pieces concatenate to the page). The
/// hand-maintained section, last on the page, runs to the end: the page it includes may have
/// headings of its own.
pub fn split_sections(page: &str) -> (&str, Vec<(&str, &str)>) {
    let mut starts = Vec::new();
    let mut fenced = false;
    let mut pos = 0;
    for line in page.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with("## ") {
            starts.push(pos);
            if line.starts_with("## Hand-maintained") {
                break;
            }
        }
        pos += line.len();
    }
    let first = starts.first().copied().unwrap_or(page.len());
    let sections = starts
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let b = starts.get(i + 1).copied().unwrap_or(page.len());
            let text = &page[a..b];
            let heading = text.lines().next().unwrap_or("");
            (heading, text)
        })
        .collect();
    (&page[..first], sections)
}

/// Whether a line of an old Machine section is one the report writes anew (and so is not
/// kept): the time of writing, the side-by-side lines, the note on the kept sections, the
/// machine that regenerated the page, and the side-by-side source line of pages written
/// before it had its own prefix (a `reference runs` line naming the side-by-side file).
fn regenerated_machine_line(l: &str) -> bool {
    const PREFIXES: [&str; 4] = [
        "- report written:",
        "- side-by-side ",
        "- kept ",
        "- page regenerated on:",
    ];
    PREFIXES.iter().any(|p| l.starts_with(p))
        || (l.starts_with("- reference runs:")
            && (l.contains("side_by_side") || l.contains("side-by-side")))
}

/// Renders the report keeping the criterion-derived parts of `old` (a page this report
/// generated, e.g. on the machine that ran `cargo bench`): its "Partial" notice, its sections
/// §1–§4, "Other measurements" and "Plots" (byte for byte) and the criterion lines of its
/// Machine section (CPU, features, when the benches ran, the sources); the side-by-side
/// section, the hand-maintained section and the rest of the Machine section come from `inp`.
/// `inp.ours` is not used. An error names a section `old` lacks, has twice, or that this
/// report does not write.
pub fn render_keeping(inp: &Inputs, old: &str) -> Result<String, String> {
    let (pre, sections) = split_sections(old);
    let mut machine: Option<&str> = None;
    let mut kept: BTreeMap<&'static str, &str> = BTreeMap::new();
    for (heading, text) in &sections {
        match section_kind(heading) {
            None => {
                return Err(format!(
                    "--keep-criterion-sections: the old page has a section `{heading}` that this \
                     report does not write, so it cannot tell whether it came from criterion; \
                     remove it or regenerate the page without the option"
                ));
            }
            Some(SectionKind::Machine) => {
                if machine.replace(text).is_some() {
                    return Err(
                        "--keep-criterion-sections: the old page has two `## Machine` sections"
                            .into(),
                    );
                }
            }
            Some(SectionKind::Criterion(name)) => {
                if kept.insert(name, text).is_some() {
                    return Err(format!(
                        "--keep-criterion-sections: the old page has two `## {name}` sections"
                    ));
                }
            }
            Some(SectionKind::SideBySide | SectionKind::Hand) => {}
        }
    }
    let missing = |name: &str| {
        format!(
            "--keep-criterion-sections: the old page has no `## {name}` section to keep (it must \
             be a docs/benchmarks.md this report wrote from criterion output; pass it with \
             --out, or drop the option on the machine that ran `cargo bench`)"
        )
    };
    let machine = machine.ok_or_else(|| missing("Machine"))?;
    let names = criterion_section_names();
    if let Some(name) = names.iter().find(|n| !kept.contains_key(*n)) {
        return Err(missing(name));
    }

    // The "Partial" notice speaks of the criterion output: kept.
    let partial = pre.find("> **Partial**").map_or(String::new(), |a| {
        let rest = &pre[a..];
        let end = rest.find("\n\n").map_or(rest.len(), |e| e + 2);
        let mut p = rest[..end].to_string();
        if !p.ends_with("\n\n") {
            p.push_str(if p.ends_with('\n') { "\n" } else { "\n\n" });
        }
        p
    });
    let mut md = preamble(&partial);
    md.push_str("## Machine\n\n");
    for l in machine
        .lines()
        .filter(|l| l.starts_with("- ") && !regenerated_machine_line(l))
    {
        let _ = writeln!(md, "{l}");
    }
    let _ = writeln!(
        md,
        "- kept verbatim from the previous page by `report --keep-criterion-sections`: the lines \
         above and the sections {}; they were measured on the machine of the CPU line above, \
         not necessarily the one below",
        names
            .iter()
            .map(|n| match *n {
                "Other measurements" | "Plots" => format!("\"{n}\""),
                n => n.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        md,
        "- page regenerated on: {} ({} logical cores{})",
        inp.cpu,
        inp.cores,
        if inp.cpu_class.is_empty() {
            String::new()
        } else {
            format!(", CPU class {}", inp.cpu_class)
        }
    );
    for l in regenerated_machine_lines(inp) {
        let _ = writeln!(md, "{l}");
    }
    md.push('\n');
    let push_kept = |md: &mut String, text: &str| {
        md.push_str(text);
        // A section that ended the old page has no blank line after it yet.
        if !md.ends_with("\n\n") {
            md.push_str(if md.ends_with('\n') { "\n" } else { "\n\n" });
        }
    };
    // §1–§4, then the side by side, then the rest: the order of `render`.
    for name in names.iter().filter(|n| n.starts_with('§')) {
        push_kept(&mut md, kept[name]);
    }
    md.push_str(&side_by_side(&inp.anchors));
    md.push('\n');
    let links = crate::links::section(&inp.links);
    if !links.is_empty() {
        md.push_str(&links);
    }
    for name in names.iter().filter(|n| !n.starts_with('§')) {
        push_kept(&mut md, kept[name]);
    }
    if let Some(hand) = hand_maintained(inp.measurements_md.as_deref()) {
        md.push_str(&hand);
    }
    Ok(md)
}

fn section_title(s: &str) -> &'static str {
    match s {
        "§1" => "PSI (SecretFlow PSI white paper)",
        "§2" => "Paillier on many cores (python-phe)",
        "§3" => "DPF-PIR against IT-PIR (mpc4j-pir)",
        "§4" => "homomorphic cryptosystems compared (Sidorov et al. 2022)",
        _ => "",
    }
}

fn fmt_time(t: f64) -> String {
    if t >= 1.0 {
        format!("{t:.2} s")
    } else if t >= 1e-3 {
        format!("{:.2} ms", t * 1e3)
    } else {
        format!("{:.2} µs", t * 1e6)
    }
}

/// One row of a document's table.
fn row_line(
    row: &Row,
    inp: &Inputs,
    anchors: &Anchors,
    matched: &mut std::collections::BTreeSet<String>,
) -> String {
    let unit = unit_name(row.unit);
    let dash = || String::from("—");
    let with_unit = |v: f64| format!("{} {unit}", fmt_num(v));
    let published = row.published.map_or_else(dash, with_unit);
    for id in inp.ours.keys().filter(|id| id.starts_with(row.id)) {
        matched.insert(id.clone());
    }
    if let Some(why) = row.not_measured {
        return format!(
            "| {} | {published} | not measured: {why} | — | — | — | — | — | |\n",
            row.label
        );
    }
    let ours = ours_best(row, &inp.ours, anchors);
    let refr = reference(
        row,
        anchors,
        ours.as_ref().and_then(|f| f.n),
        ours.as_ref().and_then(|f| f.date.as_deref()),
    );
    let (o, vs_pub, per_core, traffic, how) = match &ours {
        None => (
            "not measured".to_string(),
            dash(),
            dash(),
            dash(),
            format!("`{}`", row.id),
        ),
        Some(f) => {
            let r = row.published.and_then(|p| speedup(row.unit, p, f.value));
            // Per core: the published figure used `doc_cores`, ours every core here (one for
            // single-thread rows).
            let ours_cores = if row.doc_cores == 1 {
                1.0
            } else {
                inp.cores.max(1) as f64
            };
            let per_core = match r {
                Some(r) if row.doc_cores > 0 => {
                    format!("{:.2}×", r * f64::from(row.doc_cores) / ours_cores)
                }
                _ => dash(),
            };
            (
                with_unit(f.value),
                r.map_or_else(dash, |r| format!("{r:.2}×")),
                per_core,
                f.bytes.map_or_else(dash, fmt_bytes),
                format!("`{}` {}", row.id, f.note),
            )
        }
    };
    let (reference_cell, vs_ref) = match (&refr, &ours) {
        (None, _) if row.reference.is_some() => ("not run here".to_string(), dash()),
        (None, _) => (dash(), dash()),
        (Some((f, system)), ours) => (
            if f.note.contains(system) {
                format!("{} ({})", with_unit(f.value), f.note)
            } else {
                format!("{} {} ({})", with_unit(f.value), system, f.note)
            },
            ours.as_ref()
                .and_then(|o| speedup(row.unit, f.value, o.value))
                .map_or_else(dash, |r| format!("**{r:.2}×**")),
        ),
    };
    format!(
        "| {} | {published} | {o} | {reference_cell} | {vs_pub} | {per_core} | {vs_ref} | {traffic} | {how} |\n",
        row.label
    )
}

/// Whether a run is one of a side-by-side row's sides.
fn is_side_run(r: &PsiRun, k: &crate::RunKey) -> bool {
    r.system == k.system
        && r.protocol == k.protocol
        && r.curve == k.curve
        && r.n == k.n
        && r.link == k.link
}

/// The runs of one side of a side-by-side row on CPU class `class`, fastest first.
fn side_runs<'a>(anchors: &'a Anchors, k: &crate::RunKey, class: &str) -> Vec<&'a PsiRun> {
    let mut v: Vec<&PsiRun> = anchors
        .psi
        .iter()
        .filter(|r| r.cpu_class == class && is_side_run(r, k))
        .collect();
    v.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    v
}

/// Every run of class `class` that a side-by-side row uses.
fn class_runs<'a>(anchors: &'a Anchors, class: &str) -> Vec<&'a PsiRun> {
    anchors
        .psi
        .iter()
        .filter(|r| {
            r.cpu_class == class
                && SIDE_BY_SIDE
                    .iter()
                    .any(|row| is_side_run(r, &row.ours) || is_side_run(r, &row.theirs))
        })
        .collect()
}

/// The CPU classes of the runs the side-by-side rows use, in [`CPU_CLASSES`] order (others
/// after, by name).
pub fn side_classes(anchors: &Anchors) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in &anchors.psi {
        if !v.contains(&r.cpu_class)
            && SIDE_BY_SIDE
                .iter()
                .any(|row| is_side_run(r, &row.ours) || is_side_run(r, &row.theirs))
        {
            v.push(r.cpu_class.clone());
        }
    }
    v.sort_by(|a, b| class_rank(a).cmp(&class_rank(b)).then_with(|| a.cmp(b)));
    v
}

/// The distinct non-empty values, in order of first appearance.
fn distinct<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for s in it {
        if !s.is_empty() && !v.contains(&s) {
            v.push(s);
        }
    }
    v
}

/// The two runs a side-by-side row compares: for a `paired` row, the latest date on which
/// both sides ran (same load); otherwise our latest run (the current code; the fastest of
/// that date) against the reference system's run of the same date (the same invocation of
/// `side_by_side.sh`, so the same machine speed: these machines drift by up to 1.5× between
/// hours), or, where it did not run then, its fastest run (its code does not change between
/// runs, so its fastest run is its figure on a quiet machine, and the ratio errs low). Both
/// slices are sorted by wall time; the caller passes the runs of one CPU class.
pub fn side_pick<'a>(
    row: &SideRow,
    ours: &[&'a PsiRun],
    theirs: &[&'a PsiRun],
) -> (Option<&'a PsiRun>, Option<&'a PsiRun>) {
    if row.paired {
        let best = ours
            .iter()
            .filter_map(|o| Some((*o, *theirs.iter().find(|t| t.date == o.date)?)))
            .max_by(|a, b| a.0.date.cmp(&b.0.date));
        return best.map_or((None, None), |(o, t)| (Some(o), Some(t)));
    }
    let latest = ours.iter().map(|r| r.date.as_str()).max();
    let ours = ours
        .iter()
        .find(|r| Some(r.date.as_str()) == latest)
        .copied();
    let same_run = ours.and_then(|o| theirs.iter().find(|t| t.date == o.date));
    (ours, same_run.or(theirs.first()).copied())
}

/// One side-by-side row on one CPU class: every run of each side (fastest first), the two
/// compared, their ratio (theirs ÷ ours, within the class) and the verdicts on the targets.
#[derive(Clone, Debug)]
pub struct SideCell<'a> {
    /// Our runs of the class.
    pub ours: Vec<&'a PsiRun>,
    /// The other side's runs of the class.
    pub theirs: Vec<&'a PsiRun>,
    /// Our run compared ([`side_pick`]).
    pub o: Option<&'a PsiRun>,
    /// Their run compared.
    pub t: Option<&'a PsiRun>,
    /// Theirs ÷ ours in wall time, when both ran on the class.
    pub ratio: Option<f64>,
    /// `met`, `not met`, `bytes met`, … for each target of the row.
    pub verdicts: Vec<&'static str>,
}

/// The side-by-side row `row` on CPU class `class`, from the runs of that class only.
pub fn side_cell<'a>(row: &SideRow, anchors: &'a Anchors, class: &str) -> SideCell<'a> {
    let ours = side_runs(anchors, &row.ours, class);
    let theirs = side_runs(anchors, &row.theirs, class);
    let (o, t) = side_pick(row, &ours, &theirs);
    let ratio = match (o, t) {
        (Some(o), Some(t)) => speedup(Unit::Seconds, t.wall_s, o.wall_s),
        _ => None,
    };
    let mut verdicts = Vec::new();
    if let Some(min) = row.min_ratio {
        verdicts.push(match ratio {
            Some(r) if r >= min => "met",
            Some(_) => "not met",
            None => "not measured",
        });
    }
    if let Some(max) = row.max_bytes {
        verdicts.push(match o.and_then(|o| o.bytes) {
            Some(b) if b <= max => "bytes met",
            Some(_) => "bytes not met",
            None => "bytes not measured",
        });
    }
    if row.bytes_at_most_theirs {
        verdicts.push(match (o.and_then(|o| o.bytes), t.and_then(|t| t.bytes)) {
            (Some(a), Some(b)) if a <= b => "bytes met",
            (Some(_), Some(_)) => "bytes not met",
            _ => "bytes not measured",
        });
    }
    SideCell {
        ours,
        theirs,
        o,
        t,
        ratio,
        verdicts,
    }
}

/// The side-by-side section: the obliv CLI and SecretFlow on the same sizes, one column group
/// per CPU class, then the classes' CPUs, features and backends, then every run recorded.
fn side_by_side(anchors: &Anchors) -> String {
    let classes = side_classes(anchors);
    let mut md = String::from(
        "## PSI side by side: obliv CLI against SecretFlow, per CPU class\n\n\
         Wall seconds with both parties on one machine over loopback TCP (obliv: `obliv psi \
         demo`, CSV parsing, bucketing and output included; SecretFlow: \
         `shared/anchors/secretflow_psi.py`), bytes on the wire in both directions, from \
         `bash benches/anchors/side_by_side.sh` (records in `docs/data/side_by_side.jsonl`). \
         One column group per CPU class, the SIMD class obliv's dispatch ran on (AVX-512 IFMA, \
         AVX-512F, AVX2, plain x86-64, aarch64): within a class obliv's figure is its latest \
         run (the current code), the reference system's its run in the same invocation of the \
         script (same machine speed) or, where it did not run then, its fastest, and the ratio \
         divides the two; figures of different classes are never divided. `[B1]` after an obliv \
         figure names the backends that run reported (listed under the table), — is a run \
         not made on that class; the other runs recorded, with their notes, are listed per \
         class after the classes. Records written before the CPU fields existed were all \
         taken on one CPU class: an AMD EPYC (Zen 4), class avx512ifma, with ",
    );
    let _ = write!(
        md,
        "{}.\n\n",
        LEGACY_FEATURES.split(' ').collect::<Vec<_>>().join(", ")
    );
    if classes.is_empty() {
        md.push_str(
            "No side-by-side records yet: `bash benches/anchors/side_by_side.sh` writes them.\n",
        );
        return md;
    }
    // Backend lines, numbered across the classes in table order.
    let mut backends: Vec<(String, String)> = Vec::new();
    for c in &classes {
        for b in distinct(
            class_runs(anchors, c)
                .iter()
                .filter(|r| r.system == "obliv")
                .map(|r| r.backend.as_str()),
        ) {
            backends.push((c.clone(), b.to_string()));
        }
    }
    let marker = |class: &str, b: &str| {
        backends
            .iter()
            .position(|(c, x)| c == class && x == b)
            .map(|i| format!("B{}", i + 1))
    };
    md.push_str("| protocol | n per side | target |");
    for c in &classes {
        let _ = write!(
            md,
            " {c}: obliv | {c}: reference | {c}: ratio | {c}: obliv bytes | {c}: reference bytes | {c}: target met |"
        );
    }
    md.push_str("\n|---|---|---|");
    for _ in &classes {
        md.push_str("---|---|---|---|---|---|");
    }
    md.push('\n');
    let dash = || String::from("—");
    let bytes = |p: Option<&PsiRun>| {
        p.and_then(|p| p.bytes)
            .map_or_else(dash, |b| fmt_bytes(b as f64))
    };
    let mut details: Vec<(String, Vec<String>)> =
        classes.iter().map(|c| (c.clone(), Vec::new())).collect();
    for row in SIDE_BY_SIDE {
        let _ = write!(
            md,
            "| {} | {} | {} |",
            row.label,
            fmt_n(row.ours.n),
            row.target
        );
        let theirs_name = if row.theirs.system == "obliv" {
            format!("obliv {}", row.theirs.link)
        } else {
            "SecretFlow".to_string()
        };
        for (ci, c) in classes.iter().enumerate() {
            let cell = side_cell(row, anchors, c);
            let ours_cell = cell.o.map_or_else(dash, |o| {
                let mut s = format!("{} s", fmt_num(o.wall_s));
                if let Some(m) = marker(c, &o.backend) {
                    let _ = write!(s, " [{m}]");
                }
                s
            });
            let theirs_cell = cell.t.map_or_else(dash, |t| {
                if row.theirs.system == "obliv" {
                    format!("{theirs_name}: {} s", fmt_num(t.wall_s))
                } else {
                    format!("{} s", fmt_num(t.wall_s))
                }
            });
            let _ = write!(
                md,
                " {ours_cell} | {theirs_cell} | {} | {} | {} | {} |",
                cell.ratio.map_or_else(dash, |r| format!("**{r:.2}×**")),
                bytes(cell.o),
                bytes(cell.t),
                if cell.verdicts.is_empty() {
                    dash()
                } else {
                    cell.verdicts.join(", ")
                }
            );
            if cell.ours.is_empty() && cell.theirs.is_empty() {
                continue;
            }
            // Every run of the class: the one compared first, then the others.
            let runs = |pick: Option<&PsiRun>, all: &[&PsiRun]| {
                let mut v: Vec<String> = pick.map(|p| fmt_num(p.wall_s)).into_iter().collect();
                v.extend(
                    all.iter()
                        .filter(|r| !pick.is_some_and(|p| std::ptr::eq(**r, p)))
                        .map(|r| fmt_num(r.wall_s)),
                );
                if v.is_empty() {
                    "not run".to_string()
                } else if v.len() == 1 {
                    format!("{} s", v[0])
                } else {
                    format!("{} s ({})", v[0], v[1..].join(", "))
                }
            };
            let notes: Vec<String> = cell
                .ours
                .iter()
                .chain(&cell.theirs)
                .filter(|r| !r.note.is_empty())
                .map(|r| format!("{} {}: {}", r.system, fmt_num(r.wall_s), r.note))
                .collect();
            let mut line = format!(
                "{}, {}: obliv {}; {theirs_name} {}",
                row.label,
                fmt_n(row.ours.n),
                runs(cell.o, &cell.ours),
                runs(cell.t, &cell.theirs)
            );
            if !notes.is_empty() {
                let _ = write!(line, ". Notes: {}", notes.join("; "));
            }
            details[ci].1.push(line);
        }
        md.push('\n');
    }
    md.push_str(
        "\nThe CPU classes (CPU model, the CPU features obliv could use, the backends obliv's \
         runs reported):\n\n",
    );
    for c in &classes {
        let runs = class_runs(anchors, c);
        let cpus = distinct(runs.iter().map(|r| r.cpu.as_str()));
        let features: Vec<String> = distinct(runs.iter().map(|r| r.features.as_str()))
            .iter()
            .map(|f| format!("`{f}`"))
            .collect();
        let ours: Vec<&&PsiRun> = runs.iter().filter(|r| r.system == "obliv").collect();
        let lines: Vec<String> = distinct(ours.iter().map(|r| r.backend.as_str()))
            .iter()
            .map(|b| format!("{} `{b}`", marker(c, b).unwrap_or_default()))
            .collect();
        let unrecorded = ours.iter().filter(|r| r.backend.is_empty()).count();
        let mut b = lines.join("; ");
        if unrecorded > 0 {
            if !b.is_empty() {
                b.push_str("; ");
            }
            let _ = write!(
                b,
                "not recorded for {unrecorded} of {} runs (written before the CLI printed it)",
                ours.len()
            );
        }
        if ours.is_empty() {
            b = "no obliv runs".into();
        }
        let _ = writeln!(
            md,
            "- **{c}**: {}; features {}; obliv backends: {b}",
            if cpus.is_empty() {
                "CPU unknown".to_string()
            } else {
                cpus.join(", ")
            },
            if features.is_empty() {
                "none recorded".to_string()
            } else {
                features.join(", ")
            }
        );
    }
    md.push_str(
        "\nEvery run recorded, per class (each side: the run compared first, the others in \
         brackets):\n\n",
    );
    for (c, lines) in &details {
        let _ = writeln!(md, "- **{c}**");
        for l in lines {
            let _ = writeln!(md, "  - {l}");
        }
    }
    md
}

/// The plots: PSI wall time against n per protocol, Paillier throughput against threads.
fn plots(inp: &Inputs) -> Vec<(String, String)> {
    let mut psi: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (id, m) in inp.ours.iter().filter(|(id, _)| id.starts_with("psi/")) {
        if let Some((head, n)) = id.rsplit_once('/')
            && let Ok(n) = n.parse::<f64>()
            && (head.ends_with("/lan")
                || head.contains("unbalanced_offline")
                || head.contains("unbalanced_3pc"))
        {
            // One series per protocol (and curve) on the LAN (the three-party unbalanced run
            // is in memory too, n the large sets' size); the simulated link and the online
            // phase would only crowd the plot.
            let name = head.trim_start_matches("psi/").trim_end_matches("/lan");
            psi.entry(name.to_string())
                .or_default()
                .push((n, m.ns * 1e-9));
        }
    }
    let psi: Vec<(String, Vec<(f64, f64)>)> = psi
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, v)
        })
        .collect();
    let mut pail = Vec::new();
    for (threads, id) in [
        (1.0, "paillier/encrypt2048/1_thread"),
        (inp.cores.max(1) as f64, "paillier/encrypt2048/all_cores"),
    ] {
        if let Some(m) = inp.ours.get(id) {
            pail.push((threads, in_unit(Unit::PerSecond, m.ns * 1e-9, m.elements)));
        }
    }
    let mut series = vec![("obliv-he".to_string(), pail)];
    let mut phe: Vec<(f64, f64)> = inp
        .anchors
        .he
        .iter()
        .filter(|r| r.scheme == "paillier" && r.bits == 2048 && r.op == "encrypt")
        .filter_map(|r| {
            let threads = if r.lib.starts_with("python-phe(") {
                1.0
            } else {
                let rest = r.lib.strip_prefix("python-phe x")?;
                rest.split_whitespace().next()?.parse::<f64>().ok()?
            };
            Some((threads, 1.0 / r.s_per_op))
        })
        .collect();
    phe.sort_by(|a, b| a.0.total_cmp(&b.0));
    if !phe.is_empty() {
        series.push(("python-phe (processes), this machine".to_string(), phe));
    }
    // The document's machines: single thread and every core.
    for (name, cores, one, many) in [
        ("python-phe i5-8250U (published)", 7.0, 89.0, 298.0),
        ("python-phe Ryzen 5 3600 (published)", 11.0, 139.0, 787.0),
        ("python-phe Xeon E5-2670 (published)", 31.0, 74.0, 1075.0),
    ] {
        series.push((name.to_string(), vec![(1.0, one), (cores, many)]));
    }
    vec![
        (
            "psi_scaling.svg".to_string(),
            svg_chart(
                "PSI on the LAN: wall time against set size, this machine (obliv-bench)",
                "n per party",
                "seconds",
                &psi,
            ),
        ),
        (
            "paillier_threads.svg".to_string(),
            svg_chart(
                "Paillier-2048 encryptions per second against threads / processes",
                "threads",
                "encryptions/s",
                &series,
            ),
        ),
    ]
}

/// A log-log line chart as a self-contained SVG: one polyline per series of `(x, y)` points
/// (non-positive points are left out).
// Decades of log10 of timings and sizes are small integers (|d| < 400): the casts are exact.
#[allow(clippy::cast_possible_truncation)]
pub fn svg_chart(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let (w, left, bottom, top, right) = (820.0, 70.0, 50.0, 30.0, 290.0);
    // Tall enough for the legend (one line per series).
    let h = f64::max(440.0, top + 14.0 * series.len() as f64 + bottom);
    let ok = |&&(x, y): &&(f64, f64)| x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in series.iter().flat_map(|(_, p)| p.iter().filter(ok)) {
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
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;");
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"18\" font-size=\"14\">{}</text>\n\
         <text x=\"{}\" y=\"{}\">{} (log scale)</text>\n\
         <text x=\"8\" y=\"{}\">{} (log)</text>\n",
        esc(title),
        left + 150.0,
        h - 12.0,
        esc(xlabel),
        top - 6.0,
        esc(ylabel)
    );
    let colours = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
        "#bcbd22", "#17becf",
    ];
    for d in (x0 as i32)..=(x1 as i32) {
        let x = px(10f64.powi(d));
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{}\">1e{d}</text>",
            h - bottom,
            x - 8.0,
            h - bottom + 14.0
        );
    }
    for d in (y0 as i32)..=(y1 as i32) {
        let y = py(10f64.powi(d));
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\">1e{d}</text>",
            w - right,
            left - 34.0,
            y + 4.0
        );
    }
    for (i, (name, p)) in series.iter().enumerate() {
        let c = colours[i % colours.len()];
        let dash = if i >= colours.len() {
            " stroke-dasharray=\"5,3\""
        } else {
            ""
        };
        let pts: Vec<&(f64, f64)> = p.iter().filter(ok).collect();
        let path: Vec<String> = pts
            .iter()
            .map(|&&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
            path.join(" ")
        );
        for &&(x, y) in &pts {
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
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{c}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            w - right + 10.0,
            ly - 9.0,
            w - right + 24.0,
            ly,
            esc(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const BENCH: &str = r#"{"group_id":"psi","function_id":"kkrt/lan","value_str":"65536","throughput":{"Bytes":7119040},"full_id":"psi/kkrt/lan/65536","directory_name":"psi/kkrt_lan/65536","title":"psi/kkrt/lan/65536"}"#;
    const EST: &str = r#"{"mean":{"confidence_interval":{"confidence_level":0.95,"lower_bound":248996316.0,"upper_bound":249994738.5},"point_estimate":250000000.0,"standard_error":353027.98},"median":{"point_estimate":249495527.25}}"#;

    #[test]
    fn criterion_files_parse() {
        let (id, m) = parse_criterion(BENCH, EST).unwrap();
        assert_eq!(id, "psi/kkrt/lan/65536");
        assert_eq!(
            m,
            Meas {
                ns: 250_000_000.0,
                bytes: Some(7_119_040),
                elements: None,
                single: false
            }
        );
        let rate = r#"{"full_id":"pir/concurrency/16","throughput":{"Elements":1}}"#;
        let (_, m) = parse_criterion(rate, EST).unwrap();
        assert_eq!((m.bytes, m.elements), (None, Some(1)));
        // No throughput, a missing mean, a zero mean, garbage: rejected or bare.
        let bare = r#"{"full_id":"he/x","throughput":null}"#;
        assert_eq!(parse_criterion(bare, EST).unwrap().1.bytes, None);
        assert!(parse_criterion(BENCH, r#"{"median":{"point_estimate":1.0}}"#).is_none());
        assert!(parse_criterion(BENCH, r#"{"mean":{"point_estimate":0.0}}"#).is_none());
        assert!(parse_criterion("not json", EST).is_none());
        assert!(parse_criterion(r#"{"title":"x"}"#, EST).is_none());
    }

    #[test]
    fn criterion_tree_is_walked() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("psi/kkrt_lan/65536/new");
        std::fs::create_dir_all(&new).unwrap();
        std::fs::write(new.join("benchmark.json"), BENCH).unwrap();
        std::fs::write(new.join("estimates.json"), EST).unwrap();
        // A half-written benchmark is skipped.
        let bad = dir.path().join("psi/other/1/new");
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("benchmark.json"), BENCH).unwrap();
        let mut all = Measurements::new();
        assert!(walk_criterion(dir.path(), &mut all).is_some());
        assert_eq!(all.len(), 1);
        assert!(all.contains_key("psi/kkrt/lan/65536"));
        assert!(walk_criterion(&dir.path().join("missing"), &mut all).is_none());
    }

    #[test]
    fn single_runs_and_traffic_parse() {
        let mut all = Measurements::new();
        let text = "{\"id\":\"psi/rr22_fast/lan/10000000\",\"seconds\":20.0,\"bytes\":300,\"elements\":10000000}\n\
                    garbage\n{\"id\":\"x\"}\n{\"id\":\"y\",\"seconds\":-1}\n\
                    {\"id\":\"psi/rr22_fast/lan/10000000\",\"seconds\":18.0,\"bytes\":320}\n";
        assert_eq!(parse_single_runs(text, &mut all), 2);
        assert_eq!(all.len(), 1);
        let m = &all["psi/rr22_fast/lan/10000000"];
        assert!(m.single && (m.ns - 18e9).abs() < 1.0 && m.bytes == Some(320));
        all.insert(
            "pir/batch10/65536x1024".into(),
            Meas {
                ns: 1e6,
                bytes: None,
                elements: Some(10),
                single: false,
            },
        );
        parse_traffic(
            "{\"id\":\"pir/batch10/65536x1024\",\"bytes\":5000}\n{\"id\":\"psi/rr22_fast/lan/10000000\",\"bytes\":1}\n{\"id\":\"nope\",\"bytes\":2}",
            &mut all,
        );
        assert_eq!(all["pir/batch10/65536x1024"].bytes, Some(5000));
        // A measurement that has bytes keeps them.
        assert_eq!(all["psi/rr22_fast/lan/10000000"].bytes, Some(320));
    }

    #[test]
    fn anchor_lines_parse() {
        let text = r#"{"protocol": "PROTOCOL_RR22_LOWCOMM", "curve": null, "n": 1000000, "wall_s": 6.21, "bytes_sent": 20600000, "link": "loopback 127.0.0.1 (brpc)", "correct": true}
{"protocol": "PROTOCOL_KKRT", "curve": null, "n": 65536, "wall_s": null, "correct": false}
{"protocol": "UB_PSI_ECDH_OPRF", "curve": "FOURQ(builtin)", "n": 1000000, "client_n": 1000, "offline_s": 13.4, "online_s": 0.11, "offline_bytes_sent": 12000000, "online_bytes_sent": 90000, "wall_s": 13.51, "correct": true}
{"system": "obliv", "protocol": "ecdh_3pc", "curve": "fourq", "n": 65536, "link": "lan", "wall_s": 1.43, "bytes": 11670000, "date": "d", "note": "quiet"}
{"lib": "python-phe(gmpy2)", "scheme": "paillier", "bits": 2048, "op": "encrypt", "s_per_op": 0.00935, "ops_per_s": 107}
{"lib": "heu", "scheme": "ZPaillier", "bits": 2048, "error": "boom"}
not json"#;
        let mut a = Anchors::default();
        parse_anchor_lines(text, &mut a);
        assert_eq!(a.psi.len(), 4);
        assert_eq!(
            (a.psi[0].protocol.as_str(), a.psi[0].curve.as_str()),
            ("rr22_lowcomm", "")
        );
        assert_eq!(
            (a.psi[0].link.as_str(), a.psi[0].bytes),
            ("lan", Some(20_600_000))
        );
        assert_eq!(a.psi[0].system, "secretflow");
        let off = &a.psi[1];
        assert_eq!(
            (off.protocol.as_str(), off.n, off.wall_s, off.curve.as_str()),
            ("unbalanced_offline", 1_000_000, 13.4, "fourq")
        );
        let on = &a.psi[2];
        assert_eq!(
            (on.protocol.as_str(), on.n, on.bytes),
            ("unbalanced_online", 1000, Some(90_000))
        );
        assert_eq!(
            (a.psi[3].system.as_str(), a.psi[3].note.as_str()),
            ("obliv", "quiet")
        );
        assert_eq!(a.he.len(), 1);
        assert_eq!(a.he[0].op, "encrypt");
    }

    #[test]
    fn canonical_names() {
        assert_eq!(canon_protocol("PROTOCOL_ECDH"), "ecdh_2pc");
        assert_eq!(canon_protocol("PROTOCOL_ECDH_3PC"), "ecdh_3pc");
        assert_eq!(canon_protocol("rr22-malicious"), "rr22_malicious");
        assert_eq!(canon_protocol("rr22"), "rr22_fast");
        assert_eq!(canon_curve("25519_ELLIGATOR2"), "25519");
        assert_eq!(canon_curve("SECP256K1"), "secp256k1");
        assert_eq!(canon_link("netns veth, netem 10ms 100mbit"), "wan100m10ms");
        assert_eq!(canon_link(""), "lan");
        assert_eq!(canon_link("netem 50ms 100mbit"), "wan100m50ms");
        assert_eq!(
            canon_link("tbf-rate-only rate 100mbit"),
            "tbf-rate-only rate 100mbit"
        );
    }

    #[test]
    fn ratios_and_units() {
        // Times: published / ours; rates: ours / published.
        assert_eq!(speedup(Unit::Seconds, 28.0, 14.0), Some(2.0));
        assert_eq!(speedup(Unit::Millis, 5.0, 10.0), Some(0.5));
        assert_eq!(speedup(Unit::PerSecond, 100.0, 1300.0), Some(13.0));
        assert_eq!(speedup(Unit::Seconds, 0.0, 1.0), None);
        assert_eq!(speedup(Unit::Seconds, 1.0, f64::NAN), None);
        assert_eq!(in_unit(Unit::PerSecond, 0.5, Some(100)), 200.0);
        assert_eq!(in_unit(Unit::MillisPerElement, 0.3, Some(10)), 30.0);
        assert_eq!(in_unit(Unit::Millis, 0.045, None), 45.0);
        assert_eq!(
            pick_size([16384, 1 << 20, 10_000_000], 10_000_000),
            Some(10_000_000)
        );
        assert_eq!(pick_size([16384, 1 << 20], 10_000_000), Some(1 << 20));
        assert_eq!(pick_size([], 5), None);
    }

    fn row_by_label(label: &str) -> Row {
        rows().into_iter().find(|r| r.label == label).unwrap()
    }

    #[test]
    fn ours_projects_linearly_and_says_so() {
        let row = row_by_label("RR22 fast, 1e7 per side, LAN");
        let mut all = Measurements::new();
        assert!(ours(&row, &all).is_none(), "no data: not measured");
        all.insert(
            "psi/rr22_fast/lan/65536".into(),
            Meas {
                ns: 65_536.0 * 1000.0, // 1 µs per item
                bytes: Some(65_536 * 30),
                elements: None,
                single: false,
            },
        );
        // Another protocol's id that shares a prefix must not be taken.
        all.insert(
            "psi/rr22_fast/lan_other/999999999".into(),
            Meas {
                ns: 1.0,
                bytes: None,
                elements: None,
                single: false,
            },
        );
        let f = ours(&row, &all).unwrap();
        assert!((f.value - 10.0).abs() < 1e-9, "{f:?}");
        assert!((f.bytes.unwrap() - 3e8).abs() < 1.0);
        assert!(f.note.contains("projected") && f.note.contains("2^16"));
        // The document's size itself, when run, is taken as is.
        all.insert(
            "psi/rr22_fast/lan/10000000".into(),
            Meas {
                ns: 12e9,
                bytes: None,
                elements: None,
                single: true,
            },
        );
        let f = ours(&row, &all).unwrap();
        assert_eq!(f.value, 12.0);
        assert_eq!(f.note, "one run, n = 1e7");
    }

    #[test]
    fn unbalanced_3pc_rows_are_measured_and_projected() {
        let rows: Vec<Row> = rows()
            .into_iter()
            .filter(|r| r.id == "psi/unbalanced_3pc/fourq/")
            .collect();
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.not_measured.is_none()));
        let mut inp = Inputs {
            cores: 2,
            ..Inputs::default()
        };
        inp.ours.insert(
            "psi/unbalanced_3pc/fourq/65536".into(),
            Meas {
                ns: 1.2e9,
                bytes: Some(7_344_782),
                elements: None,
                single: false,
            },
        );
        // The 1e8 row: 1.2 s at 2^16 projected to 1e8 = 1831 s; published 894 s.
        let f = ours(&rows[0], &inp.ours).unwrap();
        assert!((f.value - 1.2 * 1e8 / 65536.0).abs() < 1e-6, "{f:?}");
        assert_eq!(f.note, "criterion mean, n = 2^16, projected linearly");
        let md = render(&inp).markdown;
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", rows[1].label)))
            .unwrap();
        assert!(line.contains("| 12441 s | 18311 s |"), "{line}");
        assert!(!line.contains("not measured"), "{line}");
        assert!(!md.contains("| `psi/unbalanced_3pc/fourq/65536` |"));
    }

    #[test]
    fn reference_figures() {
        let row = row_by_label("KKRT16, 1e7 per side, LAN");
        let mut a = Anchors::default();
        assert!(reference(&row, &a, None, None).is_none());
        parse_anchor_lines(
            "{\"protocol\":\"PROTOCOL_KKRT\",\"n\":1000000,\"wall_s\":9.2,\"bytes_sent\":115000000}\n\
             {\"protocol\":\"PROTOCOL_KKRT\",\"n\":1000000,\"wall_s\":7.5}\n\
             {\"protocol\":\"PROTOCOL_KKRT\",\"n\":65536,\"wall_s\":0.6}\n\
             {\"system\":\"obliv\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":1.0}",
            &mut a,
        );
        let (f, who) = reference(&row, &a, None, None).unwrap();
        assert_eq!(who, "SecretFlow");
        // Fastest run at the largest size (1e6), times 10.
        assert!((f.value - 75.0).abs() < 1e-9);
        assert!(f.note.contains("projected"));
        let he = row_by_label("Paillier-2048 encryption, 1 thread (i5-8250U)");
        parse_anchor_lines(
            "{\"lib\":\"python-phe(gmpy2)\",\"scheme\":\"paillier\",\"bits\":2048,\"op\":\"encrypt\",\"s_per_op\":0.01}\n\
             {\"lib\":\"python-phe x2 processes\",\"scheme\":\"paillier\",\"bits\":2048,\"op\":\"encrypt\",\"s_per_op\":0.005}",
            &mut a,
        );
        let (f, _) = reference(&he, &a, None, None).unwrap();
        assert!((f.value - 100.0).abs() < 1e-9, "1 / 0.01 s = 100 /s");
        let pool = row_by_label("Paillier-2048 encryption, every core (i5-8250U, 7 processes)");
        assert!((reference(&pool, &a, None, None).unwrap().0.value - 200.0).abs() < 1e-9);
    }

    #[test]
    fn cli_runs_beat_smaller_criterion_sizes_and_pick_the_reference_size() {
        let row = row_by_label("KKRT16, 1e7 per side, LAN");
        let mut a = Anchors::default();
        parse_anchor_lines(
            "{\"protocol\":\"PROTOCOL_KKRT\",\"n\":1000000,\"wall_s\":8.0}\n\
             {\"protocol\":\"PROTOCOL_KKRT\",\"n\":65536,\"wall_s\":0.6}\n\
             {\"system\":\"obliv\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":1.5,\"date\":\"2026-01-01T10:00Z\"}\n\
             {\"system\":\"obliv\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":2.0,\"date\":\"2026-01-02T10:00Z\"}",
            &mut a,
        );
        let mut all = Measurements::new();
        all.insert(
            format!("{}65536", row.id),
            Meas {
                ns: 0.1e9,
                bytes: None,
                elements: None,
                single: false,
            },
        );
        // The CLI ran 1e6 > 2^16: its latest run (2.0 s, not the faster older one) counts.
        let f = ours_best(&row, &all, &a).unwrap();
        assert_eq!(f.n, Some(1_000_000));
        assert!((f.value - 20.0).abs() < 1e-9, "2.0 s x 10 = {}", f.value);
        // The reference is taken at the same size as ours when it ran there.
        let (r, _) = reference(&row, &a, Some(65536), None).unwrap();
        assert!((r.value - 0.6 * 1e7 / 65536.0).abs() < 1e-6);
        let (r, _) = reference(&row, &a, f.n, f.date.as_deref()).unwrap();
        assert!((r.value - 80.0).abs() < 1e-9);
        assert!(r.note.ends_with("fastest run"), "{}", r.note);
        // A reference run of the CLI figure's invocation is taken over a faster one of
        // another: the host's speed drifts between runs.
        parse_anchor_lines(
            "{\"protocol\":\"PROTOCOL_KKRT\",\"n\":1000000,\"wall_s\":9.0,\"date\":\"2026-01-02T10:00Z\"}",
            &mut a,
        );
        let (r, _) = reference(&row, &a, f.n, f.date.as_deref()).unwrap();
        assert!((r.value - 90.0).abs() < 1e-9, "{}", r.value);
        assert!(r.note.ends_with("same run"), "{}", r.note);
        let (r, _) = reference(&row, &a, f.n, None).unwrap();
        assert!((r.value - 80.0).abs() < 1e-9);
        // Without CLI runs the criterion figure stands.
        let f = ours_best(&row, &all, &Anchors::default()).unwrap();
        assert_eq!(f.n, Some(65536));
    }

    #[test]
    fn report_renders_missing_data_as_not_measured() {
        let mut inp = Inputs {
            cpu: "Test CPU".into(),
            cores: 2,
            written: "now".into(),
            measurements_md: Some("# Measurements\n\n## Scale\n\nkept text\n".into()),
            ..Inputs::default()
        };
        inp.ours.insert(
            "psi/kkrt/lan/65536".into(),
            Meas {
                ns: 0.25e9,
                bytes: Some(7_119_040),
                elements: None,
                single: false,
            },
        );
        inp.ours.insert(
            "primitives/aes_prg/65536".into(),
            Meas {
                ns: 1e5,
                bytes: Some(1 << 20),
                elements: None,
                single: false,
            },
        );
        let r = render(&inp);
        let md = &r.markdown;
        assert!(md.contains("**Partial**"));
        assert!(md.contains("Test CPU (2 logical cores)"));
        // KKRT 1e7 LAN: 0.25 s at 2^16 projected to 1e7 = 38.1 s; published 56 s: 1.47x.
        let line = md
            .lines()
            .find(|l| l.starts_with("| KKRT16, 1e7 per side, LAN |"))
            .unwrap();
        assert!(line.contains("| 38.1 s |"), "{line}");
        assert!(line.contains("| 1.47× |"), "{line}");
        assert!(line.contains("not run here"), "{line}");
        let line = md
            .lines()
            .find(|l| l.starts_with("| RR22 fast, 1e7 per side, LAN |"))
            .unwrap();
        assert!(line.contains("| not measured |"), "{line}");
        assert!(md.contains("| `primitives/aes_prg/65536` | 100.00 µs | 1.0 MB processed |"));
        assert!(
            !md.contains("| `psi/kkrt/lan/65536` |"),
            "matched ids are not repeated"
        );
        assert!(md.contains("### Scale") && md.contains("kept text"));
        assert!(md.contains("No side-by-side records yet"));
        assert!(md.contains("- side-by-side CPU classes: none"));
        assert_eq!(r.plots.len(), 2);
        assert!(r.plots[0].1.starts_with("<svg") && r.plots[0].1.contains(">kkrt<"));
    }

    #[test]
    fn side_by_side_pairs_and_targets() {
        let mut a = Anchors::default();
        parse_anchor_lines(
            "{\"system\":\"obliv\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":1.5,\"bytes\":111000000,\"date\":\"a\"}\n\
             {\"system\":\"obliv\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":1.25,\"bytes\":111000000,\"date\":\"b\"}\n\
             {\"system\":\"secretflow\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":5.0,\"bytes\":115000000,\"date\":\"b\"}",
            &mut a,
        );
        let md = side_by_side(&a);
        let line = md.lines().find(|l| l.starts_with("| KKRT16 |")).unwrap();
        // Ours: the latest date ("b"); the others in brackets in the list of runs.
        assert!(line.contains("| 1.25 s | 5.00 s |"), "{line}");
        assert!(line.contains("**4.00×**") && line.contains("met"), "{line}");
        assert!(
            md.contains("  - KKRT16, 1e6: obliv 1.25 s (1.50); SecretFlow 5.00 s"),
            "{md}"
        );
        let paired = SIDE_BY_SIDE.iter().find(|r| r.paired).unwrap();
        let lan = PsiRun {
            system: "obliv".into(),
            protocol: "ecdh_2pc".into(),
            curve: "fourq".into(),
            n: 65536,
            link: "lan".into(),
            wall_s: 0.8,
            bytes: None,
            date: "quiet".into(),
            note: String::new(),
            cpu: LEGACY_CPU.into(),
            cpu_class: LEGACY_CPU_CLASS.into(),
            features: LEGACY_FEATURES.into(),
            backend: String::new(),
        };
        let lan_loaded = PsiRun {
            wall_s: 1.4,
            date: "loaded".into(),
            ..lan.clone()
        };
        let wan_loaded = PsiRun {
            wall_s: 1.45,
            link: "wan100m10ms".into(),
            ..lan_loaded.clone()
        };
        let (o, t) = side_pick(paired, &[&wan_loaded], &[&lan, &lan_loaded]);
        assert_eq!((o.unwrap().wall_s, t.unwrap().wall_s), (1.45, 1.4));
        // Unpaired: our latest run even if an older one was faster; their fastest.
        let old_fast = PsiRun {
            wall_s: 0.5,
            date: "2026-01-01".into(),
            ..lan.clone()
        };
        let new_slow = PsiRun {
            wall_s: 0.9,
            date: "2026-02-01".into(),
            ..lan.clone()
        };
        let unpaired = &SIDE_BY_SIDE[0];
        let (o, t) = side_pick(unpaired, &[&old_fast, &new_slow], &[&lan, &lan_loaded]);
        assert_eq!((o.unwrap().wall_s, t.unwrap().wall_s), (0.9, 0.8));
        // ... but their run of our latest run's date where there is one (same machine speed).
        let same_date = PsiRun {
            wall_s: 1.2,
            date: "2026-02-01".into(),
            ..lan.clone()
        };
        let (o, t) = side_pick(
            unpaired,
            &[&old_fast, &new_slow],
            &[&lan, &lan_loaded, &same_date],
        );
        assert_eq!((o.unwrap().wall_s, t.unwrap().wall_s), (0.9, 1.2));
    }

    /// A side-by-side record of `system` for `protocol` at 1e6 on the LAN, on CPU `class`.
    fn sbs(system: &str, protocol: &str, wall_s: f64, class: &str, backend: &str) -> String {
        format!(
            "{{\"system\":\"{system}\",\"protocol\":\"{protocol}\",\"curve\":\"\",\"n\":1000000,\
             \"link\":\"lan\",\"wall_s\":{wall_s},\"bytes\":1000,\"date\":\"2026-12-01T10:00Z\",\
             \"correct\":true,\"note\":\"\",\"cpu\":\"CPU {class}\",\"cpu_class\":\"{class}\",\
             \"features\":\"aes {class}\",\"backend\":\"{backend}\"}}\n"
        )
    }

    #[test]
    fn side_by_side_groups_by_cpu_class() {
        let mut a = Anchors::default();
        let text = [
            // Old records (no CPU fields): the Zen 4 class.
            "{\"system\":\"obliv\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":1.0,\"date\":\"a\"}\n"
                .to_string(),
            "{\"system\":\"secretflow\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":5.0,\"date\":\"a\"}\n"
                .to_string(),
            sbs("obliv", "kkrt", 2.0, "avx2", "fourq serial avx2"),
            sbs("secretflow", "kkrt", 8.0, "avx2", ""),
            // An avx2 row with no reference run, and a class with obliv runs only.
            sbs("obliv", "rr22_fast", 0.5, "avx2", "fourq serial avx2"),
            sbs("obliv", "kkrt", 1.5, "avx512f", "fourq serial avx512f"),
        ]
        .concat();
        parse_anchor_lines(&text, &mut a);
        assert_eq!(side_classes(&a), ["avx512ifma", "avx512f", "avx2"]);
        let md = side_by_side(&a);
        let header = md.lines().find(|l| l.starts_with("| protocol |")).unwrap();
        let (i, f, x) = (
            header.find("avx512ifma: obliv").unwrap(),
            header.find("avx512f: obliv").unwrap(),
            header.find("avx2: obliv").unwrap(),
        );
        assert!(i < f && f < x, "{header}");
        assert_eq!(header.matches("target met").count(), 3);
        let cells = |label: &str| -> Vec<String> {
            let line = md
                .lines()
                .find(|l| l.starts_with(&format!("| {label} |")))
                .unwrap();
            line.split('|').map(|c| c.trim().to_string()).collect()
        };
        // | label | n | target | then six cells per class.
        let kkrt = cells("KKRT16");
        let group = |c: &[String], k: usize| c[4 + 6 * k..10 + 6 * k].to_vec();
        // Within a class only: 5 / 1 on avx512ifma, 8 / 2 on avx2 (never 5 / 2 or 8 / 1).
        assert_eq!(group(&kkrt, 0)[..3], ["1.00 s", "5.00 s", "**5.00×**"]);
        assert_eq!(group(&kkrt, 0)[5], "met");
        assert_eq!(group(&kkrt, 2)[..3], ["2.00 s [B2]", "8.00 s", "**4.00×**"]);
        // The class with obliv runs only: — for the reference and the ratio.
        assert_eq!(
            group(&kkrt, 1),
            ["1.50 s [B1]", "—", "—", "1.0 KB", "—", "not measured"]
        );
        let rr22 = cells("RR22 fast");
        assert_eq!(group(&rr22, 2)[..3], ["0.500 s [B2]", "—", "—"]);
        assert_eq!(group(&rr22, 0)[..3], ["—", "—", "—"]);
        // The classes' CPUs, features and backends, and the runs of each class.
        assert!(md.contains(
            "- **avx512ifma**: AMD EPYC (Zen 4); features `aes avx2 bmi2 adx avx512f avx512ifma vaes vpclmulqdq`; obliv backends: not recorded for 1 of 1 runs"
        ), "{md}");
        assert!(
            md.contains(
                "- **avx2**: CPU avx2; features `aes avx2`; obliv backends: B2 `fourq serial avx2`"
            ),
            "{md}"
        );
        assert!(md.contains("- **avx512f**: CPU avx512f; features `aes avx512f`; obliv backends: B1 `fourq serial avx512f`"), "{md}");
        assert!(
            md.contains("  - KKRT16, 1e6: obliv 2.00 s; SecretFlow 8.00 s"),
            "{md}"
        );
        assert!(
            md.contains("  - KKRT16, 1e6: obliv 1.50 s; SecretFlow not run"),
            "{md}"
        );
        assert!(md.contains("Records written before the CPU fields existed"));
        let machine = side_classes_line(&a);
        assert_eq!(
            machine,
            "- side-by-side CPU classes: avx512ifma (AMD EPYC (Zen 4)); avx512f (CPU avx512f); avx2 (CPU avx2)"
        );
    }

    #[test]
    fn old_records_get_the_zen4_class() {
        let mut a = Anchors::default();
        parse_anchor_lines(
            "{\"system\":\"obliv\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":1.0}\n\
             {\"protocol\":\"PROTOCOL_KKRT\",\"n\":1000000,\"wall_s\":7.0}\n\
             {\"system\":\"obliv\",\"protocol\":\"kkrt\",\"n\":1000000,\"wall_s\":2.0,\"cpu_class\":\"avx2\",\"features\":\"aes avx2\",\"backend\":\" b \"}",
            &mut a,
        );
        for r in &a.psi[..2] {
            assert_eq!(
                (r.cpu_class.as_str(), r.cpu.as_str(), r.features.as_str()),
                (LEGACY_CPU_CLASS, LEGACY_CPU, LEGACY_FEATURES)
            );
            assert_eq!(r.backend, "");
        }
        assert_eq!(LEGACY_CPU_CLASS, "avx512ifma");
        let r = &a.psi[2];
        assert_eq!(
            (
                r.cpu_class.as_str(),
                r.cpu.as_str(),
                r.features.as_str(),
                r.backend.as_str()
            ),
            ("avx2", "unknown", "aes avx2", "b")
        );
        assert_eq!(a.of_class("avx2").psi.len(), 1);
        // The class of a CPU, as the script computes it.
        let zen4 = NOTABLE_FEATURES;
        assert_eq!(cpu_class("x86_64", &zen4), "avx512ifma");
        assert_eq!(
            cpu_class("x86_64", &without_disabled(&zen4, "avx512ifma")),
            "avx512f"
        );
        assert_eq!(
            cpu_class("x86_64", &without_disabled(&zen4, "avx512f")),
            "avx2"
        );
        assert_eq!(
            without_disabled(&zen4, " avx2 ,vaes"),
            ["aes", "bmi2", "adx", "vpclmulqdq"]
        );
        assert_eq!(
            cpu_class("x86_64", &without_disabled(&zen4, "avx2")),
            "x86-64"
        );
        assert_eq!(cpu_class("aarch64", &[]), "aarch64");
    }

    /// A small page in the report's layout, with a "Partial" notice and an old side-by-side
    /// section, for `--keep-criterion-sections`.
    fn old_page() -> String {
        let mut p = String::from("# Benchmarks\n\n> **Partial**: 3 of the 9 rows.\n\nIntro.\n\n");
        p.push_str(
            "## Machine\n\n- CPU: Zen 4 box (2 logical cores)\n- CPU features used by obliv: aes, avx512ifma\n\
             - benches ran: 2026-11-30 19:15 UTC (newest criterion estimate)\n- report written: 2026-11-30 19:18 UTC\n\
             - ours: 94 criterion benchmarks from `/x/criterion`, 0 single full-scale runs\n\
             - reference runs: 93 from `/x/obliv-anchors.jsonl`\n\
             - reference runs: 127 from `docs/data/side_by_side.jsonl`\n\n",
        );
        for s in ["§1", "§2", "§3", "§4"] {
            let _ = write!(
                p,
                "## {s}: {}\n\n| row | x |\n|---|---|\n| {s} row | 1 s |\n\n",
                section_title(s)
            );
        }
        p.push_str(
            "## PSI side by side on this machine: obliv CLI against SecretFlow\n\n| old |\n\n",
        );
        p.push_str("## Other measurements (primitives, other curves, extra cases)\n\n| id | mean | per iteration |\n|---|---|---|\n| `a` | 1 s | — |\n\n");
        p.push_str("## Plots\n\n![psi_scaling.svg](psi_scaling.svg)\n\n\n");
        p.push_str("## Hand-maintained measurements (`docs/measurements.md`)\n\nold hand text\n\n## not a section of ours\n");
        p
    }

    #[test]
    fn keep_sections_splices_the_old_criterion_sections() {
        let old = old_page();
        let mut a = Anchors::default();
        parse_anchor_lines(
            &sbs("obliv", "kkrt", 2.0, "avx2", "fourq serial avx2"),
            &mut a,
        );
        let inp = Inputs {
            anchors: a,
            cpu: "Zen 3 box".into(),
            cores: 2,
            cpu_class: "avx2".into(),
            written: "now".into(),
            measurements_md: Some("# M\n\nnew hand text\n".into()),
            links: Vec::new(),
            side_by_side_source: Some("side-by-side records: 1 from `s.jsonl`".into()),
            ..Inputs::default()
        };
        let new = render_keeping(&inp, &old).unwrap();
        let (old_pre, old_s) = split_sections(&old);
        let (new_pre, new_s) = split_sections(&new);
        assert!(old_pre.contains("> **Partial**: 3 of the 9 rows.\n\n"));
        assert!(new_pre.contains("> **Partial**: 3 of the 9 rows.\n\n"));
        let get = |s: &[(&str, &str)], prefix: &str| -> Option<String> {
            s.iter()
                .find(|(h, _)| h.starts_with(prefix))
                .map(|(_, t)| (*t).to_string())
        };
        // The criterion sections, byte for byte.
        for prefix in [
            "## §1",
            "## §2",
            "## §3",
            "## §4",
            "## Other measurements",
            "## Plots",
        ] {
            assert_eq!(get(&new_s, prefix), get(&old_s, prefix), "{prefix}");
            assert!(get(&new_s, prefix).is_some(), "{prefix}");
        }
        let order: Vec<String> = new_s
            .iter()
            .map(|(h, _)| h.chars().take(12).collect())
            .collect();
        assert_eq!(
            order,
            [
                "## Machine",
                "## §1: PSI (",
                "## §2: Paill",
                "## §3: DPF-P",
                "## §4: homom",
                "## PSI side ",
                "## Other mea",
                "## Plots",
                "## Hand-main"
            ]
        );
        // Machine: the criterion lines kept in order, the rest regenerated.
        let machine = get(&new_s, "## Machine").unwrap();
        let kept = "- CPU: Zen 4 box (2 logical cores)\n- CPU features used by obliv: aes, avx512ifma\n\
                    - benches ran: 2026-11-30 19:15 UTC (newest criterion estimate)\n\
                    - ours: 94 criterion benchmarks from `/x/criterion`, 0 single full-scale runs\n\
                    - reference runs: 93 from `/x/obliv-anchors.jsonl`\n- kept verbatim";
        assert!(machine.contains(kept), "{machine}");
        assert!(
            machine.contains("- page regenerated on: Zen 3 box (2 logical cores, CPU class avx2)")
        );
        assert!(machine.contains("- report written: now\n- side-by-side records: 1 from `s.jsonl`\n- side-by-side CPU classes: avx2 (CPU avx2)\n"));
        assert!(!machine.contains("2026-11-30 19:18") && !machine.contains("127 from"));
        // The side-by-side and hand-maintained sections regenerated.
        assert!(
            get(
                &new_s,
                "## PSI side by side: obliv CLI against SecretFlow, per CPU class"
            )
            .is_some()
        );
        assert!(!new.contains("| old |") && !new.contains("old hand text"));
        assert!(new.ends_with(
            "## Hand-maintained measurements (`docs/measurements.md`)\n\nnew hand text\n"
        ));
        // Keeping again changes nothing.
        assert_eq!(render_keeping(&inp, &new).unwrap(), new);
        // A page rendered from criterion data keeps its sections too.
        let mut full = inp.clone();
        full.ours.insert(
            "primitives/aes_prg/65536".into(),
            Meas {
                ns: 1e5,
                bytes: Some(1 << 20),
                elements: None,
                single: false,
            },
        );
        full.cpu_class = String::new();
        let page = render(&full).markdown;
        let again = render_keeping(&inp, &page).unwrap();
        let (_, ps) = split_sections(&page);
        let (_, ag) = split_sections(&again);
        for prefix in ["## §1", "## §4", "## Other measurements", "## Plots"] {
            assert_eq!(get(&ag, prefix), get(&ps, prefix), "{prefix}");
        }
        assert!(again.contains("| `primitives/aes_prg/65536` | 100.00 µs |"));
        // A missing or unknown section is an error that names it.
        let no_s3 = old.replace("## §3: ", "### §3: ");
        let e = render_keeping(&inp, &no_s3).unwrap_err();
        assert!(e.contains("no `## §3` section"), "{e}");
        let e = render_keeping(&inp, "# Benchmarks\n").unwrap_err();
        assert!(e.contains("no `## Machine` section"), "{e}");
        let odd = old.replace("## Plots", "## Pictures");
        let e = render_keeping(&inp, &odd).unwrap_err();
        assert!(e.contains("`## Pictures`"), "{e}");
        let twice = old.replace("## Plots\n", "## §2: again\n\n## Plots\n");
        assert!(
            render_keeping(&inp, &twice)
                .unwrap_err()
                .contains("two `## §2`")
        );
    }

    #[test]
    fn machine_and_formats() {
        let cpu = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu aes avx2 avx512ifma\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n";
        let (m, n, f) = parse_cpuinfo(cpu);
        assert_eq!((m.as_str(), n), ("AMD EPYC", 2));
        assert_eq!(f, ["aes", "avx2", "avx512ifma"]);
        assert_eq!(parse_cpuinfo("").0, "unknown");
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(1_796_040_000), "2026-11-30 12:00 UTC");
        assert_eq!(fmt_n(65536), "2^16");
        assert_eq!(fmt_n(10_000_000), "1e7");
        assert_eq!(fmt_n(1000), "1e3");
        assert_eq!(fmt_n(1500), "1500");
        assert_eq!(fmt_bytes(7_119_040.0), "7.1 MB");
    }
}
