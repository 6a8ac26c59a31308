//! Writes `docs/benchmarks.md` and its plots (`docs/psi_scaling.svg`,
//! `docs/paillier_threads.svg`) from criterion's output, the runs the benches recorded, and
//! the reference systems' runs on this machine (see `obliv_bench::report`).
//!
//! ```text
//! cargo run -p obliv-bench --release --bin report -- [--criterion DIR] [--anchors FILE]...
//!     [--side-by-side FILE] [--links FILE] [--measurements FILE] [--out FILE]
//!     [--keep-criterion-sections]
//! ```
//! Defaults: `$CARGO_TARGET_DIR/criterion` (else `target/criterion`); anchors
//! `<target>/obliv-anchors.jsonl` (from `benches/anchors.sh`); side by side
//! `docs/data/side_by_side.jsonl`; slow-link runs `docs/data/links.jsonl` (from
//! `benches/links/slow_link.sh`; their section and `docs/psi_bandwidth.svg`); measurements `docs/measurements.md`; out
//! `docs/benchmarks.md` (the plots go beside it).
//!
//! `--keep-criterion-sections` is for a machine without the criterion output of the page's
//! figures (it lives in the target directory of the machine that ran `cargo bench`): it reads
//! the page at the `--out` path first and keeps its criterion-derived sections (§1–§4, "Other
//! measurements", "Plots") and the criterion lines of its Machine section verbatim,
//! regenerating only the side-by-side and slow-link sections, the hand-maintained section and
//! the rest of the Machine section. No criterion directory or anchors file is read then, and
//! of the plots only the slow-link one is written.

use std::path::{Path, PathBuf};

use obliv_bench::links::parse_link_runs;
use obliv_bench::report::{
    Anchors, Inputs, Measurements, cpu_class, parse_anchor_lines, parse_cpuinfo, parse_single_runs,
    parse_traffic, render, render_keeping, side_classes, utc_date, walk_criterion,
    without_disabled,
};
use obliv_bench::{criterion_dir, single_runs_path, traffic_path};

const USAGE: &str = "usage: report [--criterion DIR] [--anchors FILE]... [--side-by-side FILE] \
                     [--links FILE] [--measurements FILE] [--out FILE] [--keep-criterion-sections]";

fn unix(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn main() {
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let mut crit = criterion_dir();
    let mut anchor_files = Vec::new();
    let mut side = docs.join("data/side_by_side.jsonl");
    let mut links = docs.join("data/links.jsonl");
    let mut measurements = docs.join("measurements.md");
    let mut out = docs.join("benchmarks.md");
    let mut keep = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--keep-criterion-sections" {
            keep = true;
            continue;
        }
        let Some(v) = args.next() else {
            eprintln!("{USAGE}");
            std::process::exit(2);
        };
        match a.as_str() {
            "--criterion" => crit = PathBuf::from(v),
            "--anchors" => anchor_files.push(PathBuf::from(v)),
            "--side-by-side" => side = PathBuf::from(v),
            "--links" => links = PathBuf::from(v),
            "--measurements" => measurements = PathBuf::from(v),
            "--out" => out = PathBuf::from(v),
            _ => {
                eprintln!("{USAGE}");
                std::process::exit(2);
            }
        }
    }
    // The page whose criterion sections are kept: read before anything is written.
    let old = if keep {
        match std::fs::read_to_string(&out) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!(
                    "--keep-criterion-sections: cannot read {} (the page whose criterion \
                     sections are kept): {e}",
                    out.display()
                );
                std::process::exit(1);
            }
        }
    } else {
        None
    };
    if anchor_files.is_empty() && !keep {
        anchor_files.push(crit.parent().map_or_else(
            || PathBuf::from("obliv-anchors.jsonl"),
            |t| t.join("obliv-anchors.jsonl"),
        ));
    }

    let mut ours = Measurements::new();
    let mut anchors = Anchors::default();
    let mut sources = Vec::new();
    let mut newest = None;
    if keep {
        if !anchor_files.is_empty() {
            eprintln!("--keep-criterion-sections: the --anchors files are not read (§1 is kept)");
        }
    } else {
        newest = walk_criterion(&crit, &mut ours);
        let from_criterion = ours.len();
        // The recorded files sit in the criterion directory read.
        let singles_file = crit.join(
            single_runs_path()
                .file_name()
                .unwrap_or_else(|| "obliv-single-runs.jsonl".as_ref()),
        );
        let singles =
            std::fs::read_to_string(&singles_file).map_or(0, |t| parse_single_runs(&t, &mut ours));
        let traffic_file = crit.join(
            traffic_path()
                .file_name()
                .unwrap_or_else(|| "obliv-traffic.jsonl".as_ref()),
        );
        if let Ok(t) = std::fs::read_to_string(&traffic_file) {
            parse_traffic(&t, &mut ours);
        }
        sources.push(format!(
            "ours: {from_criterion} criterion benchmarks from `{}`, {singles} single full-scale runs",
            crit.display()
        ));
        for f in &anchor_files {
            match std::fs::read_to_string(f) {
                Ok(t) => {
                    let before = anchors.psi.len() + anchors.he.len();
                    parse_anchor_lines(&t, &mut anchors);
                    sources.push(format!(
                        "reference runs: {} from `{}`",
                        anchors.psi.len() + anchors.he.len() - before,
                        display(f)
                    ));
                }
                Err(_) => sources.push(format!(
                    "reference runs: none in `{}` (`benches/anchors.sh` writes it)",
                    display(f)
                )),
            }
        }
    }
    let side_by_side_source = match std::fs::read_to_string(&side) {
        Ok(t) => {
            let before = anchors.psi.len();
            parse_anchor_lines(&t, &mut anchors);
            format!(
                "side-by-side records: {} from `{}`",
                anchors.psi.len() - before,
                display(&side)
            )
        }
        Err(_) => format!(
            "side-by-side records: none in `{}` (`benches/anchors/side_by_side.sh` writes it)",
            display(&side)
        ),
    };
    let (cpu, cores, flags) =
        parse_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default());
    // This machine's class, as obliv's dispatch sees it with this environment.
    let class = cpu_class(
        std::env::consts::ARCH,
        &without_disabled(
            &flags,
            &std::env::var("OBLIV_CPU_DISABLE").unwrap_or_default(),
        ),
    );
    let inputs = Inputs {
        ours,
        anchors,
        cpu,
        cores,
        flags,
        cpu_class: class.to_string(),
        measured: newest.map(|t| utc_date(unix(t))),
        written: utc_date(unix(std::time::SystemTime::now())),
        measurements_md: std::fs::read_to_string(&measurements).ok(),
        sources,
        side_by_side_source: Some(side_by_side_source),
        links: std::fs::read_to_string(&links)
            .map(|t| parse_link_runs(&t))
            .unwrap_or_default(),
    };
    let dir = out
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    if let Some(old) = old {
        let md = match render_keeping(&inputs, &old) {
            Ok(md) => md,
            Err(e) => {
                eprintln!("{}: {e}", out.display());
                std::process::exit(1);
            }
        };
        if let Err(e) = std::fs::write(&out, &md) {
            eprintln!("cannot write {}: {e}", out.display());
            std::process::exit(1);
        }
        // The slow-link plot is regenerated with its section (the others are criterion's).
        if let Some((name, svg)) = obliv_bench::links::plot(&inputs.links)
            && let Err(e) = std::fs::write(dir.join(&name), svg)
        {
            eprintln!("cannot write {name}: {e}");
            std::process::exit(1);
        }
        println!(
            "wrote {}: criterion sections kept, side-by-side section regenerated ({} records, \
             CPU classes: {})",
            out.display(),
            inputs.anchors.psi.len(),
            side_classes(&inputs.anchors).join(", ")
        );
        return;
    }
    let r = render(&inputs);
    for (name, svg) in r
        .plots
        .iter()
        .chain(&obliv_bench::links::plot(&inputs.links))
    {
        if let Err(e) = std::fs::write(dir.join(name), svg) {
            eprintln!("cannot write {name}: {e}");
            std::process::exit(1);
        }
    }
    if let Err(e) = std::fs::write(&out, &r.markdown) {
        eprintln!("cannot write {}: {e}", out.display());
        std::process::exit(1);
    }
    println!(
        "wrote {} and {} plots: {} of {} document rows measured, {} measurements",
        out.display(),
        r.plots.len(),
        r.measured_rows.0,
        r.measured_rows.1,
        inputs.ours.len()
    );
}

/// A path relative to the workspace when it is inside it.
fn display(p: &Path) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let (Ok(p2), Ok(root)) = (p.canonicalize(), root.canonicalize()) else {
        return p.display().to_string();
    };
    p2.strip_prefix(&root)
        .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
}
