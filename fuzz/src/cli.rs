//! One `obliv psi` party (`obliv_cli::party::run`, rank 0 of two) on a small CSV file,
//! against a peer on loopback TCP that completes the session set-up and then sends the frames
//! of a script: the job hello first, then (with a checkpoint) the finished-bucket bitmap and
//! run id, then the protocol's frames.
//!
//! Input: `mode ‖ script`. `mode` picks the protocol (bits 0–2) and whether this party keeps
//! a checkpoint (bit 3); `script` is the peer's frames ([`crate::frames`]).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use obliv_cli::CliError;
use obliv_cli::bucket::{DEFAULT_MEMORY_BUDGET, Shard};
use obliv_cli::party::{self, PartyConfig, Protocol};
use obliv_cli::progress::ProgressMode;
use obliv_ec::Curve;
use obliv_psi::rr22::Variant;

/// Rows of this party's input (ids 0..ROWS).
pub const ROWS: u64 = 8;

const PROTOCOLS: [Protocol; 5] = [
    Protocol::Ecdh,
    Protocol::Kkrt,
    Protocol::Rr22(Variant::Fast),
    Protocol::Rr22(Variant::LowComm),
    Protocol::Rr22(Variant::Malicious),
];

/// What stays the same across runs: a work directory with the input, and the two listeners.
struct Fixture {
    dir: PathBuf,
    input: PathBuf,
    listener: TcpListener,
    addrs: Vec<SocketAddr>,
    _work: crate::files::WorkDir,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let work = crate::files::WorkDir::new("cli");
        let dir = work.path().to_path_buf();
        let input = dir.join("input.csv");
        let mut csv = String::from("id,value\n");
        for i in 0..ROWS {
            csv += &format!("{i},v{i}\n");
        }
        std::fs::write(&input, csv).expect("input file");
        let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
        let ours = listener.local_addr().expect("address");
        // The peer's address is never dialled (rank 1 dials rank 0), only announced.
        let addrs = vec![ours, SocketAddr::from(([127, 0, 0, 1], 9))];
        Fixture {
            dir,
            input,
            listener,
            addrs,
            _work: work,
        }
    })
}

/// The configuration of this party for a mode byte; `run` numbers the output and checkpoint.
pub fn config(mode: u8, run: u64) -> PartyConfig {
    let f = fixture();
    let protocol = PROTOCOLS[usize::from(mode & 7) % PROTOCOLS.len()];
    PartyConfig {
        protocol,
        curve: Curve::Curve25519,
        rank: 0,
        parties: f.addrs.clone(),
        parties_arg: "fuzz".into(),
        input: f.input.clone(),
        keys: vec!["id".into()],
        output: f.dir.join(format!("out-{run}.csv")),
        receiver: 0,
        broadcast: false,
        sort: false,
        batch_size: 8,
        bucket_size: 1 << 12,
        bucket_load: obliv_cli::plan::MIN_LOAD,
        sim: None,
        connect_timeout: Duration::from_secs(5),
        step_timeout: Duration::from_secs(5),
        shard: Shard::default(),
        checkpoint: (mode & 8 != 0).then(|| f.dir.join(format!("cp-{run}"))),
        progress: ProgressMode::Off,
        memory_budget: DEFAULT_MEMORY_BUDGET,
        workers: 1,
        tls: None,
    }
}

/// The session set-up message of party `rank` of 2 (obliv-net's mesh hello).
fn net_hello(rank: u32) -> Vec<u8> {
    let mut m = b"OBLIVNET".to_vec();
    m.extend_from_slice(&1u32.to_le_bytes());
    m.extend_from_slice(&rank.to_le_bytes());
    m.extend_from_slice(&2u32.to_le_bytes());
    m
}

/// A frame on obliv-net's TCP wire: `len: u64 ‖ bytes`.
fn tcp_frame(out: &mut Vec<u8>, f: &[u8]) {
    out.extend_from_slice(&(f.len() as u64).to_le_bytes());
    out.extend_from_slice(f);
}

/// Runs the party against the peer script; returns its result and what the party sent after
/// the set-up.
pub fn run_against(mode: u8, script: &[u8]) -> (Result<party::Report, CliError>, Vec<u8>) {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let f = fixture();
    let cfg = config(mode, run);
    let listener = f.listener.try_clone().expect("listener clone");
    let mut wire = Vec::new();
    tcp_frame(&mut wire, &net_hello(1));
    for fr in crate::frames(script) {
        tcp_frame(&mut wire, fr);
    }
    let addr = f.addrs[0];
    let peer = std::thread::spawn(move || -> Vec<u8> {
        let Ok(mut s) = TcpStream::connect(addr) else {
            return Vec::new();
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let Ok(mut r) = s.try_clone() else {
            return Vec::new();
        };
        // Read everything the party sends while writing, so neither side blocks.
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let _ = r.read_to_end(&mut got);
            got
        });
        let _ = s.write_all(&wire);
        let _ = s.shutdown(Shutdown::Write);
        let got = reader.join().unwrap_or_default();
        // The party's set-up answer (one 20-byte frame) is not part of the transcript.
        got.get(28..).map(<[u8]>::to_vec).unwrap_or_default()
    });
    let result = party::run(&cfg, Some(listener));
    let sent = peer.join().unwrap_or_default();
    let _ = std::fs::remove_file(&cfg.output);
    if let Some(cp) = &cfg.checkpoint {
        let _ = std::fs::remove_dir_all(cp);
    }
    (result, sent)
}

/// The body of the job-hello target.
pub fn fuzz(data: &[u8]) {
    let Some((&mode, script)) = data.split_first() else {
        return;
    };
    let (result, _) = run_against(mode, script);
    if let Ok(report) = result {
        assert!(report.rows_out <= ROWS as usize, "{report:?}");
    }
}

/// Splits a TCP byte stream into its frames' payloads (for making seeds).
pub fn tcp_frames(mut b: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some((h, rest)) = b.split_first_chunk::<8>() {
        let n = usize::try_from(u64::from_le_bytes(*h))
            .unwrap_or(usize::MAX)
            .min(rest.len());
        out.push(rest[..n].to_vec());
        b = &rest[n..];
    }
    out
}
