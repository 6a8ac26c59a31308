//! Throughput of IKNP OT extension and the KKRT OPRF, per party, in CPU time.
//!
//! On a shared machine wall-clock time says little; this example runs both parties on two
//! threads over the in-memory channel and reports, for each party, the CPU time its thread
//! used (Linux `/proc/thread-self/schedstat`) and the resulting OTs per CPU-second, with the
//! bytes sent.
//!
//! `cargo run --release -p obliv-ot --example ot_speed -- [log2 n]` (default 20).
#![allow(clippy::unwrap_used)] // a harness: any failure should abort the run loudly

use std::time::Instant;

use obliv_core::{AesRng, Block};
use obliv_net::{Channel, mem_pair};
use obliv_ot::{base, iknp, kkrt, softspoken};
use rand_core::SeedableRng;

/// CPU time of the calling thread in seconds (0 where schedstat is unavailable).
fn thread_cpu() -> f64 {
    obliv_core::cpu_time::thread().map_or(0.0, |d| d.as_secs_f64())
}

fn report(name: &str, n: usize, wall: f64, cpu_s: f64, cpu_r: f64, bytes: u64) {
    println!(
        "{name:<28} n=2^{:<2} wall {:>7.1} ms | sender cpu {:>7.1} ms ({:>6.1} M/s) | receiver cpu {:>7.1} ms ({:>6.1} M/s) | {:.1} MB",
        n.trailing_zeros(),
        wall * 1e3,
        cpu_s * 1e3,
        n as f64 / cpu_s / 1e6,
        cpu_r * 1e3,
        n as f64 / cpu_r / 1e6,
        bytes as f64 / 1e6
    );
}

fn main() {
    let log_n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let n = 1usize << log_n;

    // Base OT.
    {
        let (mut a, mut b) = mem_pair();
        let t0 = Instant::now();
        let t = std::thread::spawn(move || {
            let c0 = thread_cpu();
            base::send_random(&mut a, 128, &mut AesRng::from_seed([1; 16])).unwrap();
            thread_cpu() - c0
        });
        let c0 = thread_cpu();
        let ch = iknp::random_bits(128, &mut AesRng::from_seed([2; 16]));
        base::receive_random(&mut b, &ch, &mut AesRng::from_seed([3; 16])).unwrap();
        let cr = thread_cpu() - c0;
        let cs = t.join().unwrap();
        let wall = t0.elapsed().as_secs_f64();
        println!(
            "base OT x128 (CO15)          wall {:>7.1} ms | sender cpu {:.1} ms | receiver cpu {:.1} ms",
            wall * 1e3,
            cs * 1e3,
            cr * 1e3
        );
    }

    for kind in ["iknp random", "iknp correlated"] {
        let (bs, br) = base::insecure_dealer(iknp::KAPPA, &mut AesRng::from_seed([7; 16]));
        let mut s = iknp::Sender::new_with_base(&br).unwrap();
        let mut r = iknp::Receiver::new_with_base(&bs).unwrap();
        let (mut a, mut b) = mem_pair();
        let choices = iknp::random_bits(n, &mut AesRng::from_seed([4; 16]));
        let t0 = Instant::now();
        let t = std::thread::spawn(move || {
            let c0 = thread_cpu();
            if kind == "iknp random" {
                r.receive_random(&mut b, &choices).unwrap();
            } else {
                r.receive_correlated(&mut b, &choices).unwrap();
            }
            (thread_cpu() - c0, b.stats().bytes_sent)
        });
        let c0 = thread_cpu();
        if kind == "iknp random" {
            s.send_random(&mut a, n).unwrap();
        } else {
            s.send_correlated(&mut a, n).unwrap();
        }
        let cs = thread_cpu() - c0;
        let (cr, bytes) = t.join().unwrap();
        report(kind, n, t0.elapsed().as_secs_f64(), cs, cr, bytes);
    }

    for k in [2usize, 4, 8] {
        let (bs, br) = base::insecure_dealer(iknp::KAPPA, &mut AesRng::from_seed([6; 16]));
        let (mut a, mut b) = mem_pair();
        let choices = iknp::random_bits(n, &mut AesRng::from_seed([4; 16]));
        let t0 = Instant::now();
        let t = std::thread::spawn(move || {
            let mut rng = AesRng::from_seed([1; 16]);
            let mut r = softspoken::Receiver::new_with_base(&mut b, &bs, k, &mut rng).unwrap();
            let c0 = thread_cpu();
            r.receive_random(&mut b, &choices).unwrap();
            (thread_cpu() - c0, b.stats().bytes_sent)
        });
        let mut s = softspoken::Sender::new_with_base(&mut a, &br, k).unwrap();
        let c0 = thread_cpu();
        s.send_random(&mut a, n, &mut AesRng::from_seed([2; 16]))
            .unwrap();
        let cs = thread_cpu() - c0;
        let (cr, bytes) = t.join().unwrap();
        report(
            &format!("softspoken k={k} random"),
            n,
            t0.elapsed().as_secs_f64(),
            cs,
            cr,
            bytes,
        );
    }

    {
        let (bs, br) = base::insecure_dealer(kkrt::CODE_BITS, &mut AesRng::from_seed([8; 16]));
        let mut s = kkrt::KkrtSender::new_with_base(&br, Block(9)).unwrap();
        let mut r = kkrt::KkrtReceiver::new_with_base(&bs, Block(9)).unwrap();
        let (mut a, mut b) = mem_pair();
        let mut rng = AesRng::from_seed([5; 16]);
        let inputs: Vec<Block> = (0..n).map(|_| Block::random(&mut rng)).collect();
        let xs = inputs.clone();
        let t0 = Instant::now();
        let t = std::thread::spawn(move || {
            let c0 = thread_cpu();
            let out = r.receive(&mut b, &xs).unwrap();
            (thread_cpu() - c0, b.stats().bytes_sent, out)
        });
        let c0 = thread_cpu();
        let key = s.send(&mut a, n).unwrap();
        let cs = thread_cpu() - c0;
        let (cr, bytes, out) = t.join().unwrap();
        report(
            "kkrt oprf batch",
            n,
            t0.elapsed().as_secs_f64(),
            cs,
            cr,
            bytes,
        );
        let idx: Vec<usize> = (0..n).collect();
        let mut ev = vec![Block::ZERO; n];
        let c0 = thread_cpu();
        let e0 = Instant::now();
        key.eval_batch(&idx, &inputs, &mut ev).unwrap();
        let ce = thread_cpu() - c0;
        assert_eq!(ev, out);
        println!(
            "kkrt eval_batch              n=2^{log_n:<2} wall {:>7.1} ms | cpu {:>7.1} ms ({:.1} M evals/s)",
            e0.elapsed().as_secs_f64() * 1e3,
            ce * 1e3,
            n as f64 / ce / 1e6
        );
    }
}
