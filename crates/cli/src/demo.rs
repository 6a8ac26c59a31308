//! `obliv psi demo`: both parties in one process, each on its own thread with its own CSV
//! file, over real loopback TCP (optionally through a simulated link), on generated data.

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use obliv_ec::Curve;
use obliv_net::LinkModel;

use crate::bucket::Shard;
use crate::error::{CliError, ExitKind};
use crate::gen_data;
use crate::party::{self, PartyConfig, Protocol, Report};
use crate::progress::ProgressMode;

/// Most rows per party a demo generates: 10^8, about 2.5 GB of CSV per party in the temporary
/// directory (three files for `ecdh-3pc`) plus the outputs, and about an hour of `ecdh`.
/// Larger jobs run `obliv gen-data` into a directory of their choice and one `obliv psi`
/// process per party.
pub const MAX_SIZE: u64 = 100_000_000;

/// Settings of a demo run.
#[derive(Clone, Debug)]
pub struct DemoConfig {
    /// Protocol.
    pub protocol: Protocol,
    /// Curve.
    pub curve: Curve,
    /// Rows per party, in `1..=`[`MAX_SIZE`].
    pub size: u64,
    /// Simulated link, if any.
    pub sim: Option<LinkModel>,
    /// Directory for the generated files and outputs (a temporary one if `None`).
    pub dir: Option<PathBuf>,
}

/// The outcome of a demo.
#[derive(Clone, Debug)]
pub struct DemoOutcome {
    /// Each party's report, in rank order.
    pub reports: Vec<Report>,
    /// Wall time of the protocol part (both parties), seconds.
    pub seconds: f64,
    /// Intersection size the generator planted.
    pub expected: u64,
}

/// Generates data, runs every party over loopback TCP and checks the intersection size.
///
/// # Errors
/// [`ExitKind::Usage`] for a size outside `1..=`[`MAX_SIZE`] (before anything is written),
/// whatever a party reports, and [`ExitKind::Protocol`] if the result is not the planted
/// intersection.
pub fn run(cfg: &DemoConfig) -> Result<DemoOutcome, CliError> {
    if !(1..=MAX_SIZE).contains(&cfg.size) {
        return Err(CliError::usage(format!(
            "--size {} is outside 1..={MAX_SIZE}: for more rows run `obliv gen-data` and one \
             `obliv psi` process per party",
            cfg.size
        )));
    }
    let tmp;
    let dir = match &cfg.dir {
        Some(d) => d.clone(),
        None => {
            tmp = crate::cleanup::TempDir::new().map_err(|e| CliError::file("", e))?;
            tmp.path().to_path_buf()
        }
    };
    let parties = cfg.protocol.parties();
    let files = gen_data::generate(cfg.size, parties, 0.5, &dir, 1)?;
    let expected = gen_data::common_rows(cfg.size, 0.5);
    let listeners: Vec<TcpListener> = (0..parties)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .map_err(|e| CliError::with_source(ExitKind::Network, "cannot bind a loopback port", e))?;
    let addrs = listeners
        .iter()
        .map(TcpListener::local_addr)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::network(e.to_string()))?;
    let start = Instant::now();
    let reports: Vec<Result<Report, CliError>> = std::thread::scope(|s| {
        let handles: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(rank, l)| {
                let pc = PartyConfig {
                    protocol: cfg.protocol,
                    curve: cfg.curve,
                    rank,
                    parties: addrs.clone(),
                    parties_arg: addrs
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                    input: files[rank].clone(),
                    keys: vec!["id".into()],
                    output: dir.join(format!("out_{}.csv", rank + 1)),
                    receiver: 0,
                    broadcast: false,
                    sort: false,
                    batch_size: 4096,
                    bucket_size: 1 << 22,
                    bucket_load: crate::plan::DEFAULT_LOAD,
                    sim: cfg.sim,
                    connect_timeout: Duration::from_secs(30),
                    step_timeout: crate::deadline::DEFAULT_STEP_TIMEOUT,
                    shard: Shard::default(),
                    checkpoint: None,
                    progress: ProgressMode::Off,
                    memory_budget: crate::bucket::DEFAULT_MEMORY_BUDGET,
                    workers: 1,
                    tls: None,
                };
                s.spawn(move || party::run(&pc, Some(l)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CliError::protocol("a party panicked")))
            })
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let reports: Vec<Report> = reports.into_iter().collect::<Result<_, _>>()?;
    let got = reports[0].keys_out.unwrap_or(0) as u64;
    if got != expected {
        return Err(CliError::protocol(format!(
            "intersection has {got} keys, the generator planted {expected}"
        )));
    }
    Ok(DemoOutcome {
        reports,
        seconds,
        expected,
    })
}

/// The SIMD backends this CPU runs, one `name kind backend` entry per group operation whose
/// speed depends on it (FourQ's batch and serial paths, the X25519-style and ristretto255
/// batches), as `obliv psi demo` prints them on its `backends:` line.
pub fn backends() -> String {
    format!(
        "fourq batch {}, fourq serial {}, x25519 batch {}, ristretto255 batch {}",
        obliv_fourq::Point::batch_backend(),
        obliv_fourq::Point::serial_backend(),
        obliv_ec::X25519::batch_backend(),
        obliv_ec::Ristretto255::batch_backend(),
    )
}
