//! The hostile-peer harness: two real `obliv psi` processes talk through a relay that, at one
//! frame of one direction, lies about the frame's length (2^40), truncates it and hangs up,
//! flips a byte, zeroes the payload, stalls, or floods (announces a 256 MiB frame and streams
//! it). Whatever it does, both parties must end by themselves within the step timeout, with
//! exit code 0, 4 (network) or 5 (protocol): never a panic (101), an abort or a signal; under
//! a flood, the victim's peak memory stays near its clean run's (the frame is refused at its
//! header). The malicious RR22 variant must never write a wrong intersection with exit code
//! 0. The table of outcomes, with each party's peak memory, is printed (`--nocapture`). RR22
//! runs once more with two workers (the multiplexed connection, the driver set up while the
//! input is read); there a broken stop frame of a worker that is done may leave its peer's
//! success intact.
#![allow(clippy::unwrap_used)] // test code

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{free_ports, gen_data, lost_its_port, obliv};

/// What the relay does to its target frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Replaces the length with 2^40 and sends on.
    Lie,
    /// Sends the header and half of the payload, then closes both connections.
    Truncate,
    /// Flips one bit in the middle of the payload (the length when it is empty).
    Flip,
    /// Sends the payload as zeros.
    Zero,
    /// Forwards nothing more in this direction, keeping the connections open.
    Stall,
    /// Replaces the frame with one announcing [`FLOOD_BYTES`] (below the transport's default
    /// limit of 1 GiB, far above every protocol's longest frame) and streams that many junk
    /// bytes: the victim must refuse it at the header instead of buffering it.
    Flood,
}

const FAULTS: [Fault; 6] = [
    Fault::Lie,
    Fault::Truncate,
    Fault::Flip,
    Fault::Zero,
    Fault::Stall,
    Fault::Flood,
];

/// The frame length of [`Fault::Flood`].
const FLOOD_BYTES: usize = 256 << 20;

/// How far a party's peak resident memory under [`Fault::Flood`] may exceed its peak in the
/// clean run: far below the flood, so buffering it shows.
const FLOOD_SLACK_KIB: u64 = 64 << 10;

/// Frames of a direction at which the fault strikes, for a run of `frames` frames in that
/// direction: the session hello (0), the handshakes and first protocol messages, one in the
/// middle and the last.
fn positions(frames: usize) -> Vec<usize> {
    let mut p = vec![0, 1, 2, 3, frames / 2, frames.saturating_sub(1)];
    p.retain(|&i| i < frames.max(1));
    p.sort_unstable();
    p.dedup();
    p
}

/// Seconds each protocol step may take: a stall is cut off after this.
const STEP: &str = "2";

/// Copies `from` to `to` frame by frame (8-byte little-endian length, then the payload),
/// applying `fault` to frame `target` (if `fault` is set). Returns when either side closes.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    fault: Option<(usize, Fault)>,
    done: &AtomicBool,
    hit: &AtomicBool,
    stop_hit: &AtomicBool,
) -> usize {
    let mut frame = 0usize;
    loop {
        let mut h = [0u8; 8];
        if from.read_exact(&mut h).is_err() {
            break;
        }
        let len = u64::from_le_bytes(h);
        // Frames of these tests are small; a larger length is forwarded as a raw stream.
        let Ok(n) = usize::try_from(len) else { break };
        if n > 64 << 20 {
            let _ = to.write_all(&h);
            let _ = std::io::copy(&mut from, &mut to);
            break;
        }
        let mut payload = vec![0u8; n];
        if from.read_exact(&mut payload).is_err() {
            break;
        }
        match fault {
            Some((at, f)) if at == frame => {
                hit.store(true, Ordering::SeqCst);
                stop_hit.store(payload.ends_with(WORKER_STOP), Ordering::SeqCst);
                match f {
                    Fault::Lie => h = (1u64 << 40).to_le_bytes(),
                    Fault::Truncate => {
                        let _ = to.write_all(&h);
                        let _ = to.write_all(&payload[..n / 2]);
                        let _ = to.shutdown(Shutdown::Both);
                        let _ = from.shutdown(Shutdown::Both);
                        return frame;
                    }
                    Fault::Flip if n == 0 => h[0] ^= 1,
                    Fault::Flip => payload[n / 2] ^= 0x10,
                    Fault::Zero => payload.fill(0),
                    Fault::Stall => {
                        while !done.load(Ordering::SeqCst) {
                            thread::sleep(Duration::from_millis(20));
                        }
                        return frame;
                    }
                    Fault::Flood => {
                        let junk = vec![0x5au8; 1 << 20];
                        if to.write_all(&(FLOOD_BYTES as u64).to_le_bytes()).is_ok() {
                            // Until the victim hangs up (as it should at the header).
                            for _ in 0..FLOOD_BYTES / junk.len() {
                                if to.write_all(&junk).is_err() {
                                    break;
                                }
                            }
                        }
                        let _ = to.shutdown(Shutdown::Both);
                        let _ = from.shutdown(Shutdown::Both);
                        return frame;
                    }
                }
            }
            _ => {}
        }
        if to.write_all(&h).is_err() || to.write_all(&payload).is_err() {
            break;
        }
        frame += 1;
    }
    let _ = to.shutdown(Shutdown::Write);
    frame
}

/// The end of the frame a bucket-driver worker sends its peer worker when it has no more
/// buckets (after the 4-byte sub-channel id of the multiplexer): a peer that is done does not
/// wait for it, so breaking it may leave that peer's success intact.
const WORKER_STOP: &[u8] = b"worker stopped";

/// The outcome of one run.
struct Outcome {
    codes: [Option<i32>; 2],
    /// Whether the fault struck (the run had that many frames in that direction).
    hit: bool,
    /// Whether the frame it struck was a worker's stop frame ([`WORKER_STOP`]).
    stop_hit: bool,
    /// The receiver's output, when it exited 0.
    output: Option<Vec<u8>>,
    seconds: f64,
    /// Frames relayed from party 0 to party 1 and back.
    frames: [usize; 2],
    /// Each party's peak resident memory (`VmHWM`), KiB.
    peak_kib: [u64; 2],
}

/// Follows process `pid`'s peak resident memory (`VmHWM` of `/proc/<pid>/status`, which only
/// grows) until the process exits; returns the last value read, in KiB (0 where `/proc` does
/// not tell).
fn watch_peak(pid: u32) -> thread::JoinHandle<u64> {
    thread::spawn(move || {
        let mut peak = 0;
        // The line is gone once the process has exited (a zombie has no memory), and the file
        // once it was reaped.
        while let Some(kib) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
        {
            peak = peak.max(kib);
            thread::sleep(Duration::from_millis(5));
        }
        peak
    })
}

/// `protocol` is the protocol's name, optionally followed by more options for both parties
/// (`"rr22 --workers 2"`).
fn spawn(dir: &Path, protocol: &str, rank: usize, parties: &str, tag: &str) -> Child {
    let mut words = protocol.split_whitespace();
    let name = words.next().unwrap();
    obliv()
        .args(["psi", "--protocol", name, "--rank", &rank.to_string()])
        .args(words)
        .args(["--parties", parties, "--connect-timeout", "5"])
        .args(["--step-timeout", STEP, "--progress", "off"])
        .arg("--input")
        .arg(dir.join(format!("psi_{}.csv", rank + 1)))
        .arg("--output")
        .arg(dir.join(format!("{tag}-out{rank}.csv")))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// [`run_once`], repeated (at most three times) while a party lost its port to another process.
fn run(dir: &Path, protocol: &str, fault: Option<(usize, Fault, usize)>, tag: &str) -> Outcome {
    let mut tries = 0;
    loop {
        tries += 1;
        match run_once(dir, protocol, fault, tag) {
            Ok(o) => return o,
            Err(e) if tries < 3 => eprintln!("{protocol} {fault:?}: {e}; again on new ports"),
            Err(e) => panic!("{protocol} {fault:?}: {e}, {tries} times"),
        }
    }
}

/// Runs both parties, party 1 reaching party 0 through the relay; `fault` strikes frame
/// `.0` of the direction `.2` (0: from party 0 to party 1). `Err` if a party could not bind
/// its port ([`lost_its_port`]).
fn run_once(
    dir: &Path,
    protocol: &str,
    fault: Option<(usize, Fault, usize)>,
    tag: &str,
) -> Result<Outcome, String> {
    let (p0, p1) = free_ports();
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_port = relay.local_addr().unwrap().port();
    let done = Arc::new(AtomicBool::new(false));
    let hit = Arc::new(AtomicBool::new(false));
    let stop_hit = Arc::new(AtomicBool::new(false));
    let (done2, hit2, stop2) = (Arc::clone(&done), Arc::clone(&hit), Arc::clone(&stop_hit));
    let relay_thread = thread::spawn(move || {
        // Polled, so that a party that never dials the relay (it stopped before connecting)
        // cannot hang the test: the relay gives up once both parties have exited.
        relay.set_nonblocking(true).unwrap();
        let down = loop {
            match relay.accept() {
                Ok((s, _)) => break s,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        && !done2.load(Ordering::SeqCst) =>
                {
                    thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return [0, 0],
            }
        };
        down.set_nonblocking(false).unwrap();
        let start = Instant::now();
        let up = loop {
            match TcpStream::connect(("127.0.0.1", p0)) {
                Ok(s) => break s,
                Err(_) if start.elapsed() < Duration::from_secs(20) => {
                    thread::sleep(Duration::from_millis(10));
                }
                Err(_) => return [0, 0],
            }
        };
        let (up2, down2) = (up.try_clone().unwrap(), down.try_clone().unwrap());
        let to_1 = fault.filter(|f| f.2 == 0).map(|f| (f.0, f.1));
        let to_0 = fault.filter(|f| f.2 == 1).map(|f| (f.0, f.1));
        let (d, h, st) = (Arc::clone(&done2), Arc::clone(&hit2), Arc::clone(&stop2));
        let t = thread::spawn(move || pump(up2, down2, to_1, &d, &h, &st));
        let back = pump(down, up, to_0, &done2, &hit2, &stop2);
        [t.join().unwrap_or(0), back]
    });
    let start = Instant::now();
    let a = spawn(
        dir,
        protocol,
        0,
        &format!("127.0.0.1:{p0},127.0.0.1:{p1}"),
        tag,
    );
    let b = spawn(
        dir,
        protocol,
        1,
        &format!("127.0.0.1:{relay_port},127.0.0.1:{p1}"),
        tag,
    );
    let peaks = [watch_peak(a.id()), watch_peak(b.id())];
    let (oa, ob) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let peak_kib = peaks.map(|t| t.join().unwrap_or(0));
    let seconds = start.elapsed().as_secs_f64();
    done.store(true, Ordering::SeqCst);
    let frames = relay_thread.join().unwrap_or([0, 0]);
    if lost_its_port(&oa) || lost_its_port(&ob) {
        return Err("a party could not bind its port".into());
    }
    for o in [&oa, &ob] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("panicked"),
            "{protocol} {fault:?}: a party panicked: {err}"
        );
    }
    let output = oa
        .status
        .success()
        .then(|| std::fs::read(dir.join(format!("{tag}-out0.csv"))).unwrap());
    Ok(Outcome {
        codes: [oa.status.code(), ob.status.code()],
        hit: hit.load(Ordering::SeqCst),
        stop_hit: stop_hit.load(Ordering::SeqCst),
        output,
        seconds,
        frames,
        peak_kib,
    })
}

/// The data rows of a CSV output, as a set.
fn rows(csv: &[u8]) -> std::collections::HashSet<&[u8]> {
    csv.split(|&b| b == b'\n')
        .skip(1)
        .filter(|l| !l.is_empty())
        .collect()
}

fn harness(protocol: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_data(d, 300);
    let clean = run(d, protocol, None, "clean");
    assert_eq!(
        clean.codes,
        [Some(0), Some(0)],
        "{protocol}: the clean run failed"
    );
    let reference = clean.output.unwrap();
    let mut table = Vec::new();
    for direction in 0..2 {
        let at_all = positions(clean.frames[direction]);
        for (i, &at) in at_all.iter().enumerate() {
            for (j, &fault) in FAULTS.iter().enumerate() {
                // Every other fault per position and direction, alternating; stalls (a full step
                // timeout each) at two positions per direction only.
                if (i + j + direction) % 2 == 1 || (fault == Fault::Stall && i > 1) {
                    continue;
                }
                let tag = format!("{at}-{j}-{direction}");
                let o = run(d, protocol, Some((at, fault, direction)), &tag);
                for code in o.codes {
                    assert!(
                        matches!(code, Some(0 | 4 | 5)),
                        "{protocol} frame {at} dir {direction} {fault:?}: exit codes {:?}",
                        o.codes
                    );
                }
                assert!(
                    o.seconds < 40.0,
                    "{protocol} frame {at} {fault:?}: took {:.1} s",
                    o.seconds
                );
                // Rows written that are not in the intersection (a false match), and rows of the
                // intersection missing (a corrupted value of the peer: the same as a peer that
                // changed that item of its input, which no protocol can tell apart).
                let (extra, missing) = o.output.as_ref().map_or((0, 0), |out| {
                    let (got, want) = (rows(out), rows(&reference));
                    (got.difference(&want).count(), want.difference(&got).count())
                });
                assert_eq!(
                    extra, 0,
                    "{protocol} frame {at} dir {direction} {fault:?}: {extra} rows not in the intersection written with exit 0"
                );
                let wrong = missing > 0;
                // The party the broken frame was meant for cannot have finished (the other one
                // may have, if it had nothing more to receive).
                let victim = 1 - direction;
                if o.hit && fault == Fault::Flood {
                    assert!(
                        o.peak_kib[victim] <= clean.peak_kib[victim] + FLOOD_SLACK_KIB,
                        "{protocol} frame {at} dir {direction}: party {victim} peaked at {} KiB \
                         under a {FLOOD_BYTES}-byte frame ({} KiB in the clean run)",
                        o.peak_kib[victim],
                        clean.peak_kib[victim]
                    );
                }
                if o.hit
                    && !o.stop_hit
                    && matches!(
                        fault,
                        Fault::Lie | Fault::Truncate | Fault::Stall | Fault::Flood
                    )
                {
                    assert_ne!(
                        o.codes[victim],
                        Some(0),
                        "{protocol} frame {at} dir {direction} {fault:?}: party {victim} ended \
                     with success ({:?})",
                        o.codes
                    );
                }
                if protocol == "rr22-malicious" {
                    // Against a malicious peer the output is the intersection with *some* set of the
                    // peer's announced size: rows may be missing only where the broken frame carries
                    // the sender's final values (its input, in effect), never elsewhere.
                    assert!(
                        !wrong || (direction == 1 && at + 1 == clean.frames[1]),
                        "malicious RR22 wrote a wrong intersection with exit 0 ({fault:?} at frame {at}, direction {direction}, {missing} rows missing)"
                    );
                }
                table.push(format!(
                    "{protocol:15} frame {at} dir {direction} {:9} -> exit {:?} peak {:?} MiB {}{} {:.1}s",
                    format!("{fault:?}"),
                    o.codes,
                    o.peak_kib.map(|k| k / 1024),
                    match (o.hit, o.stop_hit) {
                        (false, _) => "(not reached) ",
                        (true, true) => "(a worker's stop frame) ",
                        (true, false) => "",
                    },
                    if wrong {
                        format!("{missing} rows missing ")
                    } else {
                        String::new()
                    },
                    o.seconds
                ));
            }
        }
    }
    println!(
        "{protocol}: {} frames 0→1, {} frames 1→0, peak {:?} MiB in the clean run\n{}",
        clean.frames[0],
        clean.frames[1],
        clean.peak_kib.map(|k| k / 1024),
        table.join("\n")
    );
}

#[test]
fn hostile_relay_ecdh() {
    harness("ecdh");
}

#[test]
fn hostile_relay_kkrt() {
    harness("kkrt");
}

#[test]
fn hostile_relay_rr22() {
    harness("rr22");
}

#[test]
fn hostile_relay_rr22_lowcomm() {
    harness("rr22-lowcomm");
}

#[test]
fn hostile_relay_rr22_malicious() {
    harness("rr22-malicious");
}

/// Several workers: the settings hello, the driver's set-up (the VOLE fork on the Mux's control
/// sub-channel) while the input is read, the job handshake after it and the workers'
/// sub-channels, each under the same faults.
#[test]
fn hostile_relay_rr22_two_workers() {
    harness("rr22 --workers 2");
}
