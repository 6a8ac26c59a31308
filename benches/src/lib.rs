//! Shared pieces of the obliv benchmark crate: the scale switch, the published figures of the
//! four benchmark documents (`../shared/BENCHMARKS.md`, originals in `../shared/seeds/`) with
//! the benchmark id that reproduces each row, and the file where single full-scale runs are
//! recorded.
//!
//! Benchmark ids end in the problem size (`psi/ecdh_2pc/fourq/lan/16384`); a row names the
//! id *prefix* and the document's size, and the report projects per-item time linearly to that
//! size when only a smaller size was measured (every protocol benched here is linear in `n`).
#![forbid(unsafe_code)]

use std::path::PathBuf;

pub mod links;
pub mod report;

/// Whether `OBLIV_BENCH_SCALE=full` asks for the documents' own sizes.
pub fn full_scale() -> bool {
    std::env::var("OBLIV_BENCH_SCALE").is_ok_and(|v| v == "full")
}

/// Sizes at or above this are run once, outside criterion's sampler (criterion needs at least
/// ten runs per benchmark, which at 1e7 items would take hours on 2 cores); the run is
/// recorded in [`single_runs_path`].
pub const SINGLE_RUN_FROM: usize = 1 << 20;

/// Criterion's output directory: `$CARGO_TARGET_DIR/criterion`, else `<workspace>/target/criterion`.
pub fn criterion_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        },
        PathBuf::from,
    );
    target.join("criterion")
}

/// JSON lines of single full-scale runs: `{"id", "seconds", "bytes", "elements"}`.
pub fn single_runs_path() -> PathBuf {
    criterion_dir().join("obliv-single-runs.jsonl")
}

/// Appends one single-run record (see [`SINGLE_RUN_FROM`]) and prints it.
pub fn record_single_run(id: &str, seconds: f64, bytes: u64, elements: u64) {
    let line = serde_json::json!({
        "id": id, "seconds": seconds, "bytes": bytes, "elements": elements,
    });
    println!("single run {id}: {seconds:.3} s, {bytes} B on the wire");
    let path = single_runs_path();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let res = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
    if let Err(e) = res {
        eprintln!("could not record the run in {}: {e}", path.display());
    }
}

/// JSON lines of the bytes on the wire of benches whose criterion throughput is not bytes
/// (`{"id", "bytes"}`): PIR batches and concurrent clients.
pub fn traffic_path() -> PathBuf {
    criterion_dir().join("obliv-traffic.jsonl")
}

/// Appends one traffic record (see [`traffic_path`]) and prints it.
pub fn record_traffic(id: &str, bytes: u64) {
    let line = serde_json::json!({ "id": id, "bytes": bytes });
    println!("{id}: {bytes} B on the wire per iteration");
    let path = traffic_path();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let res = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
    if let Err(e) = res {
        eprintln!("could not record the traffic in {}: {e}", path.display());
    }
}

/// One PSI run's key in the side-by-side records (`docs/data/side_by_side.jsonl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunKey {
    /// `obliv` or `secretflow`.
    pub system: &'static str,
    /// Canonical protocol (see [`report::canon_protocol`]).
    pub protocol: &'static str,
    /// Canonical curve or `""`.
    pub curve: &'static str,
    /// Items per party.
    pub n: u64,
    /// `lan` or `wan100m10ms`.
    pub link: &'static str,
}

/// One row of the side-by-side table: our run against a reference run, and the target.
#[derive(Clone, Copy, Debug)]
pub struct SideRow {
    /// What the row compares.
    pub label: &'static str,
    /// The obliv CLI run.
    pub ours: RunKey,
    /// The run it is compared with (SecretFlow's, or ours on another link).
    pub theirs: RunKey,
    /// The target, in words.
    pub target: &'static str,
    /// Met when theirs ÷ ours is at least this.
    pub min_ratio: Option<f64>,
    /// Met when our bytes are at most this.
    pub max_bytes: Option<u64>,
    /// Met when our bytes are at most theirs.
    pub bytes_at_most_theirs: bool,
    /// Compare runs of the same date (same machine load) rather than each side's fastest.
    pub paired: bool,
}

const fn key(
    system: &'static str,
    protocol: &'static str,
    curve: &'static str,
    n: u64,
    link: &'static str,
) -> RunKey {
    RunKey {
        system,
        protocol,
        curve,
        n,
        link,
    }
}

const fn side(
    label: &'static str,
    protocol: &'static str,
    curve: &'static str,
    n: u64,
    target: &'static str,
    min_ratio: f64,
) -> SideRow {
    SideRow {
        label,
        ours: key("obliv", protocol, curve, n, "lan"),
        theirs: key("secretflow", protocol, curve, n, "lan"),
        target,
        min_ratio: Some(min_ratio),
        max_bytes: None,
        bytes_at_most_theirs: false,
        paired: false,
    }
}

const M1: u64 = 1_000_000;
const M10: u64 = 10_000_000;
const K64: u64 = 1 << 16;

/// The side-by-side table (`benches/anchors/side_by_side.sh`) with the targets the PSI issues
/// set against SecretFlow on the same machine.
pub const SIDE_BY_SIDE: &[SideRow] = &[
    side("KKRT16", "kkrt", "", M1, "≥ 3×", 3.0),
    side("RR22 fast", "rr22_fast", "", M1, "≥ 5×", 5.0),
    SideRow {
        max_bytes: Some(21_000_000),
        ..side(
            "RR22 low-comm",
            "rr22_lowcomm",
            "",
            M1,
            "≥ 5×, ≤ 21 MB",
            5.0,
        )
    },
    SideRow {
        theirs: key("secretflow", "rr22_fast", "", M1, "lan"),
        ..side(
            "RR22 malicious (SecretFlow has none: against its RR22 fast)",
            "rr22_malicious",
            "",
            M1,
            "≥ 5× SecretFlow fast",
            5.0,
        )
    },
    side(
        "RR22 fast, 1e7 (also: under 9 s)",
        "rr22_fast",
        "",
        M10,
        "≥ 5×",
        5.0,
    ),
    side("RR22 low-comm, 1e7", "rr22_lowcomm", "", M10, "≥ 5×", 5.0),
    SideRow {
        theirs: key("secretflow", "rr22_fast", "", M10, "lan"),
        ..side(
            "RR22 malicious, 1e7 (against SecretFlow's RR22 fast)",
            "rr22_malicious",
            "",
            M10,
            "≥ 5× SecretFlow fast",
            5.0,
        )
    },
    side("KKRT16, 1e7", "kkrt", "", M10, "≥ 3×", 3.0),
    side("ECDH-2PC FourQ", "ecdh_2pc", "fourq", K64, "≥ 2×", 2.0),
    side("ECDH-2PC Curve25519", "ecdh_2pc", "25519", K64, "≥ 2×", 2.0),
    SideRow {
        theirs: key("secretflow", "ecdh_2pc", "25519", M1, "lan"),
        ..side(
            "ECDH-2PC, fastest against fastest (obliv FourQ, SecretFlow Curve25519)",
            "ecdh_2pc",
            "fourq",
            M1,
            "≥ 1.5×",
            1.5,
        )
    },
    side("ECDH-2PC FourQ", "ecdh_2pc", "fourq", M1, "≥ 2×", 2.0),
    side("ECDH-2PC Curve25519", "ecdh_2pc", "25519", M1, "≥ 2×", 2.0),
    SideRow {
        bytes_at_most_theirs: true,
        ..side(
            "ECDH-3PC FourQ",
            "ecdh_3pc",
            "fourq",
            K64,
            "≥ 2×, no more bytes",
            2.0,
        )
    },
    side("ECDH-3PC Curve25519", "ecdh_3pc", "25519", K64, "≥ 2×", 2.0),
    side(
        "ECDH-2PC secp256k1",
        "ecdh_2pc",
        "secp256k1",
        K64,
        "≥ 5×",
        5.0,
    ),
    side("ECDH-2PC SM2", "ecdh_2pc", "sm2", K64, "≥ 5×", 5.0),
    SideRow {
        ours: key("obliv", "ecdh_2pc", "fourq", K64, "wan100m10ms"),
        theirs: key("obliv", "ecdh_2pc", "fourq", K64, "lan"),
        paired: true,
        ..side(
            "ECDH-2PC FourQ, 100 Mbps / 10 ms simulated against LAN",
            "ecdh_2pc",
            "fourq",
            K64,
            "within 10 % of the LAN",
            1.0 / 1.1,
        )
    },
];

/// Prints that a size or row is skipped, and why.
pub fn skip(id: &str, why: &str) {
    println!("skipped {id}: {why}");
}

/// How a row's figure is expressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Wall seconds for the whole run at the document's size (projected linearly from the
    /// largest measured size when the document's size was not run).
    Seconds,
    /// Milliseconds per iteration (latency, server time).
    Millis,
    /// Milliseconds per element of the throughput (e.g. per query of a batch).
    MillisPerElement,
    /// Elements per second (encryptions per second, queries per second).
    PerSecond,
}

/// One row of a benchmark document.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Section of BENCHMARKS.md (`§1` …).
    pub section: &'static str,
    /// What the row measures, as the document words it.
    pub label: &'static str,
    /// The published figure in `unit`, if the document gives a number.
    pub published: Option<f64>,
    /// The published figure as printed, with its source.
    pub source: &'static str,
    /// Benchmark id prefix; the last path component of a measured id is its size.
    pub id: &'static str,
    /// The document's problem size (items per side, records, …) for projection; `None` when
    /// the id names the exact benchmark (no projection).
    pub doc_n: Option<u64>,
    /// Unit of `published` and of our figure.
    pub unit: Unit,
    /// Why the row cannot be measured here, if so.
    pub not_measured: Option<&'static str>,
    /// Cores (or processes) behind the published figure: `1` for a single-thread row (ours is
    /// single-thread too), `0` if the document does not say. Used for the per-core ratio.
    pub doc_cores: u32,
    /// The reference system's run on this machine that this row compares against, if any.
    pub reference: Option<Reference>,
}

/// Which reference-system measurement (run on this machine by `benches/anchors.sh` or
/// `benches/anchors/side_by_side.sh`) a row compares against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// A SecretFlow PSI run: canonical protocol (`ecdh_2pc`, `ecdh_3pc`, `kkrt`, `rr22_fast`,
    /// `rr22_lowcomm`, `unbalanced_offline`, `unbalanced_online`), curve (`""` for none) and
    /// link (`lan`, `wan100m10ms`). Projected linearly to the row's size like ours.
    Psi {
        /// Canonical protocol name.
        protocol: &'static str,
        /// Canonical curve name (`fourq`, `25519`, …) or `""`.
        curve: &'static str,
        /// `lan` or `wan100m10ms`.
        link: &'static str,
    },
    /// A line of `shared/anchors/he_anchors.py`: library name prefix, scheme, key bits and
    /// operation; its seconds per operation.
    He {
        /// Prefix of the `lib` field (`python-phe(`, `python-phe x`, `heu`).
        lib: &'static str,
        /// `scheme` field.
        scheme: &'static str,
        /// `bits` field.
        bits: u32,
        /// `op` field.
        op: &'static str,
    },
}

const PSI_SRC: &str = "BENCHMARKS.md §1 (SecretFlow PSI white paper, 32 cores)";
const PHE_SRC: &str = "BENCHMARKS.md §2 (python-phe)";
const PIR_SRC: &str = "BENCHMARKS.md §3 (mpc4j-pir, 4 cores)";
const HE_SRC: &str = "BENCHMARKS.md §4 (Sidorov et al. 2022): findings only, no figure";

macro_rules! psi_rows {
    ($label:literal, $id:literal, $sf:expr, [$($ns:literal = $n:literal : $lan:literal / $wan:literal),*]) => {
        [$(
            Row { section: "§1", label: concat!($label, ", ", $ns, " per side, LAN"),
                  published: Some($lan as f64), source: PSI_SRC, id: concat!($id, "/lan/"),
                  doc_n: Some($n as u64), unit: Unit::Seconds, not_measured: None, doc_cores: 32,
                  reference: sf_psi($sf, "lan") },
            Row { section: "§1", label: concat!($label, ", ", $ns, " per side, 100 Mbps / 10 ms"),
                  published: Some($wan as f64), source: PSI_SRC, id: concat!($id, "/wan100m10ms/"),
                  doc_n: Some($n as u64), unit: Unit::Seconds, not_measured: None, doc_cores: 32,
                  reference: sf_psi($sf, "wan100m10ms") },
        )*]
    };
}

/// SecretFlow's run of `(protocol, curve)` on `link`, if SecretFlow has the protocol.
const fn sf_psi(p: Option<(&'static str, &'static str)>, link: &'static str) -> Option<Reference> {
    match p {
        Some((protocol, curve)) => Some(Reference::Psi {
            protocol,
            curve,
            link,
        }),
        None => None,
    }
}

const ROWS_ECDH2_FOURQ: [Row; 6] = psi_rows!("ECDH-PSI-2PC FourQ", "psi/ecdh_2pc/fourq", Some(("ecdh_2pc", "fourq")),
    ["1e7" = 10_000_000: 73 / 74, "1e8" = 100_000_000: 723 / 729, "1e9" = 1_000_000_000: 7491 / 7387]);
const ROWS_ECDH2_25519: [Row; 6] = psi_rows!("ECDH-PSI-2PC Curve25519", "psi/ecdh_2pc/25519", Some(("ecdh_2pc", "25519")),
    ["1e7" = 10_000_000: 110 / 115, "1e8" = 100_000_000: 1129 / 1142, "1e9" = 1_000_000_000: 11377 / 11504]);
const ROWS_ECDH3_FOURQ: [Row; 6] = psi_rows!("ECDH-PSI-3PC FourQ", "psi/ecdh_3pc/fourq", Some(("ecdh_3pc", "fourq")),
    ["1e7" = 10_000_000: 123 / 155, "1e8" = 100_000_000: 1170 / 1499, "1e9" = 1_000_000_000: 13097 / 17041]);
const ROWS_ECDH3_25519: [Row; 6] = psi_rows!("ECDH-PSI-3PC Curve25519", "psi/ecdh_3pc/25519", Some(("ecdh_3pc", "25519")),
    ["1e7" = 10_000_000: 203 / 239, "1e8" = 100_000_000: 2017 / 2349, "1e9" = 1_000_000_000: 22717 / 25807]);
const ROWS_KKRT: [Row; 6] = psi_rows!("KKRT16", "psi/kkrt", Some(("kkrt", "")),
    ["1e7" = 10_000_000: 56 / 144, "1e8" = 100_000_000: 558 / 1393, "1e9" = 1_000_000_000: 5970 / 14295]);
const ROWS_RR22_FAST: [Row; 6] = psi_rows!("RR22 fast", "psi/rr22_fast", Some(("rr22_fast", "")),
    ["1e7" = 10_000_000: 28 / 63, "1e8" = 100_000_000: 273 / 575, "1e9" = 1_000_000_000: 3176 / 6025]);
const ROWS_RR22_LOW: [Row; 6] = psi_rows!("RR22 low-comm", "psi/rr22_lowcomm", Some(("rr22_lowcomm", "")),
    ["1e7" = 10_000_000: 31 / 53, "1e8" = 100_000_000: 317 / 481, "1e9" = 1_000_000_000: 3614 / 5310]);
const ROWS_RR22_MAL: [Row; 6] = psi_rows!("RR22 malicious", "psi/rr22_malicious", None,
    ["1e7" = 10_000_000: 23 / 82, "1e8" = 100_000_000: 232 / 705, "1e9" = 1_000_000_000: 1791 / 6840]);

// One argument per field keeps the table below one line per row.
#[allow(clippy::too_many_arguments)]
const fn row(
    section: &'static str,
    label: &'static str,
    published: Option<f64>,
    source: &'static str,
    id: &'static str,
    doc_n: Option<u64>,
    unit: Unit,
    not_measured: Option<&'static str>,
) -> Row {
    Row {
        section,
        label,
        published,
        source,
        id,
        doc_n,
        unit,
        not_measured,
        doc_cores: 0,
        reference: None,
    }
}

const ROWS_OTHER: [Row; 35] = [
    // §1 unbalanced (server set offline once, client query online); FourQ in the document.
    // The three-party rows' n is the two large sets' size (the third is n/1000 at every size
    // run), so all three scale together and the linear projection keeps the shape.
    row(
        "§1",
        "unbalanced ECDH-OPRF FourQ, server 1e8: offline",
        Some(139.0),
        PSI_SRC,
        "psi/unbalanced_offline/fourq/",
        Some(100_000_000),
        Unit::Seconds,
        None,
    ),
    row(
        "§1",
        "unbalanced ECDH-OPRF FourQ, client 1e5 (server 1e8): online",
        Some(31.0),
        PSI_SRC,
        "psi/unbalanced_online/fourq/",
        Some(100_000),
        Unit::Seconds,
        None,
    ),
    row(
        "§1",
        "unbalanced ECDH-OPRF FourQ, server 1e9: offline",
        Some(1428.0),
        PSI_SRC,
        "psi/unbalanced_offline/fourq/",
        Some(1_000_000_000),
        Unit::Seconds,
        None,
    ),
    row(
        "§1",
        "unbalanced ECDH-OPRF FourQ, client 1e6 (server 1e9): online",
        Some(300.0),
        PSI_SRC,
        "psi/unbalanced_online/fourq/",
        Some(1_000_000),
        Unit::Seconds,
        None,
    ),
    row(
        "§1",
        "3-party unbalanced ECDH FourQ, receiver alice: 1e8 & 1e8 & 1e5, 5 in common (n = the large sets)",
        Some(894.0),
        PSI_SRC,
        "psi/unbalanced_3pc/fourq/",
        Some(100_000_000),
        Unit::Seconds,
        None,
    ),
    row(
        "§1",
        "3-party unbalanced ECDH FourQ, receiver alice: 1e9 & 1e9 & 1e6, 50 in common (n = the large sets)",
        Some(12441.0),
        PSI_SRC,
        "psi/unbalanced_3pc/fourq/",
        Some(1_000_000_000),
        Unit::Seconds,
        None,
    ),
    // §2 Paillier-2048 encryptions per second.
    row(
        "§2",
        "Paillier-2048 encryption, 1 thread (i5-8250U)",
        Some(89.0),
        PHE_SRC,
        "paillier/encrypt2048/1_thread",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§2",
        "Paillier-2048 encryption, 1 thread (Ryzen 5 3600)",
        Some(139.0),
        PHE_SRC,
        "paillier/encrypt2048/1_thread",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§2",
        "Paillier-2048 encryption, 1 thread (Xeon E5-2670)",
        Some(74.0),
        PHE_SRC,
        "paillier/encrypt2048/1_thread",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§2",
        "Paillier-2048 encryption, every core (i5-8250U, 7 processes)",
        Some(298.0),
        PHE_SRC,
        "paillier/encrypt2048/all_cores",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§2",
        "Paillier-2048 encryption, every core (Ryzen 5 3600, 11 processes)",
        Some(787.0),
        PHE_SRC,
        "paillier/encrypt2048/all_cores",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§2",
        "Paillier-2048 encryption, every core (Xeon E5-2670, 31 processes)",
        Some(1075.0),
        PHE_SRC,
        "paillier/encrypt2048/all_cores",
        None,
        Unit::PerSecond,
        None,
    ),
    // §3 PIR.
    row(
        "§3",
        "A: DPF-PIR, 1024 × 1 KB, latency (TCP loopback)",
        Some(45.0),
        PIR_SRC,
        "pir/dpf_tcp/1024x1024",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "A: DPF-PIR, 1024 × 1 KB, server time",
        Some(5.0),
        PIR_SRC,
        "pir/dpf_server/1024x1024",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "B: DPF-PIR, 65536 × 1 KB, latency (TCP loopback)",
        Some(52.0),
        PIR_SRC,
        "pir/dpf_tcp/65536x1024",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "B: DPF-PIR, 65536 × 1 KB, server time",
        Some(8.0),
        PIR_SRC,
        "pir/dpf_server/65536x1024",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "C: IT-PIR, 65536 × 1 KB, latency (TCP loopback)",
        Some(380.0),
        PIR_SRC,
        "pir/it_tcp/65536x1024",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "A with 10 KB records, latency",
        None,
        PIR_SRC,
        "pir/dpf_tcp/1024x10240",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "B with 10 KB records, latency (full scale only)",
        None,
        PIR_SRC,
        "pir/dpf_tcp/65536x10240",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "B with 20 ms added latency (simulated link)",
        Some(72.0),
        PIR_SRC,
        "pir/dpf_sim_lat20ms/65536x1024",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "B at 10 Mbps (simulated link), published: above 1.2 s",
        Some(1200.0),
        PIR_SRC,
        "pir/dpf_sim_10mbps/65536x1024",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§3",
        "B concurrency 1 client, QPS",
        Some(19.0),
        PIR_SRC,
        "pir/concurrency/1",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§3",
        "B concurrency 4 clients, QPS",
        Some(62.0),
        PIR_SRC,
        "pir/concurrency/4",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§3",
        "B concurrency 8 clients, QPS",
        Some(68.0),
        PIR_SRC,
        "pir/concurrency/8",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§3",
        "B concurrency 16 clients, QPS",
        Some(69.0),
        PIR_SRC,
        "pir/concurrency/16",
        None,
        Unit::PerSecond,
        None,
    ),
    row(
        "§3",
        "B batch of 10 queries, ms per query",
        Some(30.0),
        PIR_SRC,
        "pir/batch10/65536x1024",
        None,
        Unit::MillisPerElement,
        None,
    ),
    // §4 HE comparison: the paper's findings, no figures in BENCHMARKS.md.
    row(
        "§4",
        "Paillier-2048 key generation",
        None,
        HE_SRC,
        "he/paillier2048/keygen",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§4",
        "Paillier-2048 encryption",
        None,
        HE_SRC,
        "he/paillier2048/encrypt",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§4",
        "Paillier-2048 decryption",
        None,
        HE_SRC,
        "he/paillier2048/decrypt",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§4",
        "Paillier-2048 addition (fastest per the paper)",
        None,
        HE_SRC,
        "he/paillier2048/add",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§4",
        "Paillier-2048 subtraction (fastest per the paper)",
        None,
        HE_SRC,
        "he/paillier2048/sub",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§4",
        "Paillier-2048 multiplication by a plaintext",
        None,
        HE_SRC,
        "he/paillier2048/mul_plain",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§4",
        "ElGamal-2048 (RFC 3526) multiplication (fastest per the paper)",
        None,
        HE_SRC,
        "he/elgamal2048/mul",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§4",
        "re-encryption pipeline (a+b)·(c+d), pre-encrypted",
        None,
        HE_SRC,
        "he/pipeline/product_of_sums_preencrypted",
        None,
        Unit::Millis,
        None,
    ),
    row(
        "§4",
        "linear regression on 16 points, two agents in parallel",
        None,
        HE_SRC,
        "he/pipeline/linear_regression_16_two_agents",
        None,
        Unit::Millis,
        None,
    ),
];

/// A §1 row of the 16- and 8-core tables or of the second standard: LAN at `doc_n`, FourQ
/// or Curve25519 or an OPRF protocol, compared against `cores` cores.
fn psi_extra(label: &'static str, published: f64, id: &'static str, doc_n: u64, cores: u32) -> Row {
    Row {
        doc_cores: cores,
        ..row(
            "§1",
            label,
            Some(published),
            PSI_SRC_EXTRA,
            id,
            Some(doc_n),
            Unit::Seconds,
            None,
        )
    }
}

const PSI_SRC_EXTRA: &str = "BENCHMARKS.md §1 (SecretFlow PSI white paper, other machines)";

/// The second standard's two rows of one protocol: 1e8 on the LAN, 1e9 at 100 Mbps / 50 ms.
macro_rules! second {
    ($what:literal, $lan:literal, $wan:literal, $id:literal) => {
        [
            psi_extra(
                concat!($what, ", 1e8, LAN (second standard)"),
                $lan as f64,
                concat!($id, "lan/"),
                100_000_000,
                32,
            ),
            psi_extra(
                concat!($what, ", 1e9, 100 Mbps / 50 ms (second standard)"),
                $wan as f64,
                concat!($id, "wan100m50ms/"),
                1_000_000_000,
                32,
            ),
        ]
    };
}

/// The §1 rows beyond the main table: 16 and 8 cores at 1e7 (LAN), and the second standard
/// (32 cores, 256 GB): 1e8 on the LAN, 1e9 at 100 Mbps / 50 ms.
fn psi_extra_rows() -> Vec<Row> {
    let mut v = Vec::new();
    for (label, published, id, cores) in [
        (
            "ECDH-PSI-2PC FourQ, 1e7, LAN, 16 cores",
            96.0,
            "psi/ecdh_2pc/fourq/lan/",
            16,
        ),
        (
            "ECDH-PSI-2PC Curve25519, 1e7, LAN, 16 cores",
            170.0,
            "psi/ecdh_2pc/25519/lan/",
            16,
        ),
        ("KKRT16, 1e7, LAN, 16 cores", 55.0, "psi/kkrt/lan/", 16),
        (
            "RR22 fast, 1e7, LAN, 16 cores",
            31.0,
            "psi/rr22_fast/lan/",
            16,
        ),
        (
            "ECDH-PSI-2PC FourQ, 1e7, LAN, 8 cores",
            145.0,
            "psi/ecdh_2pc/fourq/lan/",
            8,
        ),
        (
            "ECDH-PSI-2PC Curve25519, 1e7, LAN, 8 cores",
            302.0,
            "psi/ecdh_2pc/25519/lan/",
            8,
        ),
        (
            "ECDH-PSI-3PC FourQ, 1e7, LAN, 8 cores",
            277.0,
            "psi/ecdh_3pc/fourq/lan/",
            8,
        ),
        ("KKRT16, 1e7, LAN, 8 cores", 59.0, "psi/kkrt/lan/", 8),
        (
            "RR22 fast, 1e7, LAN, 8 cores",
            31.0,
            "psi/rr22_fast/lan/",
            8,
        ),
        (
            "RR22 low-comm, 1e7, LAN, 8 cores",
            35.0,
            "psi/rr22_lowcomm/lan/",
            8,
        ),
        (
            "RR22 malicious, 1e7, LAN, 8 cores",
            25.0,
            "psi/rr22_malicious/lan/",
            8,
        ),
    ] {
        v.push(psi_extra(label, published, id, 10_000_000, cores));
    }
    v.extend(second!(
        "ECDH-PSI-2PC FourQ",
        729,
        7764,
        "psi/ecdh_2pc/fourq/"
    ));
    v.extend(second!(
        "ECDH-PSI-2PC Curve25519",
        1131,
        11555,
        "psi/ecdh_2pc/25519/"
    ));
    v.extend(second!(
        "ECDH-PSI-3PC FourQ",
        1172,
        17599,
        "psi/ecdh_3pc/fourq/"
    ));
    v.extend(second!(
        "ECDH-PSI-3PC Curve25519",
        2022,
        26220,
        "psi/ecdh_3pc/25519/"
    ));
    v.extend(second!("KKRT16", 554, 30963, "psi/kkrt/"));
    v.extend(second!("RR22 fast", 280, 6236, "psi/rr22_fast/"));
    v.extend(second!("RR22 low-comm", 323, 5659, "psi/rr22_lowcomm/"));
    v.extend(second!("RR22 malicious", 203, 14847, "psi/rr22_malicious/"));
    v
}

/// SecretFlow's run for a balanced PSI id prefix `psi/<protocol>[/<curve>]/<link>/` (none for
/// RR22 malicious, which SecretFlow lacks).
fn psi_reference(id: &'static str) -> Option<Reference> {
    let parts: Vec<&'static str> = id.trim_end_matches('/').split('/').collect();
    let (protocol, curve, link) = match parts[..] {
        ["psi", p, c, l] => (p, c, l),
        ["psi", p, l] => (p, "", l),
        _ => return None,
    };
    (protocol != "rr22_malicious").then_some(Reference::Psi {
        protocol,
        curve,
        link,
    })
}

/// The reference-system measurement a row of [`ROWS_OTHER`] compares against.
fn other_reference(id: &str) -> Option<Reference> {
    let phe = |lib, op| {
        Some(Reference::He {
            lib,
            scheme: "paillier",
            bits: 2048,
            op,
        })
    };
    let psi = |protocol| {
        Some(Reference::Psi {
            protocol,
            curve: "fourq",
            link: "lan",
        })
    };
    match id {
        "psi/unbalanced_offline/fourq/" => psi("unbalanced_offline"),
        "psi/unbalanced_online/fourq/" => psi("unbalanced_online"),
        "paillier/encrypt2048/1_thread" => phe("python-phe(", "encrypt"),
        "paillier/encrypt2048/all_cores" => phe("python-phe x", "encrypt"),
        "he/paillier2048/keygen" => phe("python-phe(", "keygen"),
        "he/paillier2048/encrypt" => phe("python-phe(", "encrypt"),
        "he/paillier2048/decrypt" => phe("python-phe(", "decrypt"),
        "he/paillier2048/add" => phe("python-phe(", "add_ct_ct"),
        "he/paillier2048/sub" => phe("python-phe(", "sub_ct_ct"),
        "he/paillier2048/mul_plain" => phe("python-phe(", "mul_ct_pt"),
        _ => None,
    }
}

/// Every row of the four documents, in document order.
pub fn rows() -> Vec<Row> {
    let other = ROWS_OTHER.iter().map(|r| Row {
        reference: other_reference(r.id),
        ..*r
    });
    [
        &ROWS_ECDH2_FOURQ[..],
        &ROWS_ECDH2_25519,
        &ROWS_ECDH3_FOURQ,
        &ROWS_ECDH3_25519,
        &ROWS_KKRT,
        &ROWS_RR22_FAST,
        &ROWS_RR22_LOW,
        &ROWS_RR22_MAL,
    ]
    .concat()
    .into_iter()
    .chain(psi_extra_rows().into_iter().map(|r| Row {
        reference: psi_reference(r.id),
        ..r
    }))
    .chain(other)
    .map(|mut r| {
        // Cores behind each published figure, as the documents state them.
        r.doc_cores = match r.section {
            "§1" if r.doc_cores > 0 => r.doc_cores,
            "§1" => 32,
            "§3" => 4,
            "§2" if r.label.contains("1 thread") => 1,
            "§2" if r.label.contains("7 processes") => 7,
            "§2" if r.label.contains("11 processes") => 11,
            "§2" if r.label.contains("31 processes") => 31,
            _ => 0,
        };
        r
    })
    .collect()
}
