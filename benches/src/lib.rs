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
}

const PSI_SRC: &str = "BENCHMARKS.md §1 (SecretFlow PSI white paper, 32 cores)";
const PHE_SRC: &str = "BENCHMARKS.md §2 (python-phe)";
const PIR_SRC: &str = "BENCHMARKS.md §3 (mpc4j-pir, 4 cores)";
const HE_SRC: &str = "BENCHMARKS.md §4 (Sidorov et al. 2022): findings only, no figure";
const RR22_MISSING: &str = "obliv-psi implements only the RR22 fast variant so far";
const UB3_MISSING: &str = "three-party unbalanced PSI is not implemented in obliv-psi";

macro_rules! psi_rows {
    ($label:literal, $id:literal, $miss:expr, [$($ns:literal = $n:literal : $lan:literal / $wan:literal),*]) => {
        [$(
            Row { section: "§1", label: concat!($label, ", ", $ns, " per side, LAN"),
                  published: Some($lan as f64), source: PSI_SRC, id: concat!($id, "/lan/"),
                  doc_n: Some($n as u64), unit: Unit::Seconds, not_measured: $miss, doc_cores: 32 },
            Row { section: "§1", label: concat!($label, ", ", $ns, " per side, 100 Mbps / 10 ms"),
                  published: Some($wan as f64), source: PSI_SRC, id: concat!($id, "/wan100m10ms/"),
                  doc_n: Some($n as u64), unit: Unit::Seconds, not_measured: $miss, doc_cores: 32 },
        )*]
    };
}

const ROWS_ECDH2_FOURQ: [Row; 6] = psi_rows!("ECDH-PSI-2PC FourQ", "psi/ecdh_2pc/fourq", None,
    ["1e7" = 10_000_000: 73 / 74, "1e8" = 100_000_000: 723 / 729, "1e9" = 1_000_000_000: 7491 / 7387]);
const ROWS_ECDH2_25519: [Row; 6] = psi_rows!("ECDH-PSI-2PC Curve25519", "psi/ecdh_2pc/25519", None,
    ["1e7" = 10_000_000: 110 / 115, "1e8" = 100_000_000: 1129 / 1142, "1e9" = 1_000_000_000: 11377 / 11504]);
const ROWS_ECDH3_FOURQ: [Row; 6] = psi_rows!("ECDH-PSI-3PC FourQ", "psi/ecdh_3pc/fourq", None,
    ["1e7" = 10_000_000: 123 / 155, "1e8" = 100_000_000: 1170 / 1499, "1e9" = 1_000_000_000: 13097 / 17041]);
const ROWS_ECDH3_25519: [Row; 6] = psi_rows!("ECDH-PSI-3PC Curve25519", "psi/ecdh_3pc/25519", None,
    ["1e7" = 10_000_000: 203 / 239, "1e8" = 100_000_000: 2017 / 2349, "1e9" = 1_000_000_000: 22717 / 25807]);
const ROWS_KKRT: [Row; 6] = psi_rows!("KKRT16", "psi/kkrt", None,
    ["1e7" = 10_000_000: 56 / 144, "1e8" = 100_000_000: 558 / 1393, "1e9" = 1_000_000_000: 5970 / 14295]);
const ROWS_RR22_FAST: [Row; 6] = psi_rows!("RR22 fast", "psi/rr22_fast", None,
    ["1e7" = 10_000_000: 28 / 63, "1e8" = 100_000_000: 273 / 575, "1e9" = 1_000_000_000: 3176 / 6025]);
const ROWS_RR22_LOW: [Row; 6] = psi_rows!("RR22 low-comm", "psi/rr22_lowcomm", Some(RR22_MISSING),
    ["1e7" = 10_000_000: 31 / 53, "1e8" = 100_000_000: 317 / 481, "1e9" = 1_000_000_000: 3614 / 5310]);
const ROWS_RR22_MAL: [Row; 6] = psi_rows!("RR22 malicious", "psi/rr22_malicious", Some(RR22_MISSING),
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
    }
}

const ROWS_OTHER: [Row; 37] = [
    // §1 unbalanced (server set offline once, client query online); FourQ in the document.
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
        "unbalanced ECDH-OPRF Curve25519, server 1e8: offline (FourQ row, other curve)",
        Some(139.0),
        PSI_SRC,
        "psi/unbalanced_offline/25519/",
        Some(100_000_000),
        Unit::Seconds,
        None,
    ),
    row(
        "§1",
        "unbalanced ECDH-OPRF Curve25519, client 1e5: online (FourQ row, other curve)",
        Some(31.0),
        PSI_SRC,
        "psi/unbalanced_online/25519/",
        Some(100_000),
        Unit::Seconds,
        None,
    ),
    row(
        "§1",
        "3-party unbalanced ECDH, 1e8 & 1e8 & 1e5",
        Some(894.0),
        PSI_SRC,
        "psi/unbalanced_3pc/",
        Some(100_000_000),
        Unit::Seconds,
        Some(UB3_MISSING),
    ),
    row(
        "§1",
        "3-party unbalanced ECDH, 1e9 & 1e9 & 1e6",
        Some(12441.0),
        PSI_SRC,
        "psi/unbalanced_3pc/",
        Some(1_000_000_000),
        Unit::Seconds,
        Some(UB3_MISSING),
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

/// Every row of the four documents, in document order.
pub fn rows() -> Vec<Row> {
    [
        &ROWS_ECDH2_FOURQ[..],
        &ROWS_ECDH2_25519,
        &ROWS_ECDH3_FOURQ,
        &ROWS_ECDH3_25519,
        &ROWS_KKRT,
        &ROWS_RR22_FAST,
        &ROWS_RR22_LOW,
        &ROWS_RR22_MAL,
        &ROWS_OTHER,
    ]
    .concat()
    .into_iter()
    .map(|mut r| {
        // Cores behind each published figure, as the documents state them.
        r.doc_cores = match r.section {
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
