//! One-way throughput of the in-memory pair and of loopback TCP, for 1 KB and 1 MB messages.
//!
//! A receiver thread consumes the messages and acknowledges each batch, so the time measured
//! runs from the first send until the last message has been received whole.
//! `cargo bench -p obliv-net --bench throughput`

#![allow(missing_docs)]
#![allow(clippy::unwrap_used)] // a bench aborts on any channel error

use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use obliv_net::{Channel, ChannelExt, Mux, TcpChannel, TcpOptions, mem_pair};

/// Sizes from the issue: 1 KB and 1 MB messages.
const SIZES: [usize; 2] = [1 << 10, 1 << 20];

/// Runs a receiver thread on `b`: each command is a count `n`; it receives `n` messages and
/// answers with one byte. A count of `u64::MAX` stops it.
fn spawn_sink<B: Channel + 'static>(mut b: B) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        loop {
            let n: u64 = b.recv_value().unwrap();
            if n == u64::MAX {
                return;
            }
            for _ in 0..n {
                let m = b.recv().unwrap();
                std::hint::black_box(&m);
            }
            b.send(&[1]).unwrap();
            b.flush().unwrap();
        }
    })
}

fn bench_pair<A: Channel, B: Channel + 'static>(
    c: &mut Criterion,
    name: &str,
    mk: impl Fn() -> (A, B),
) {
    let mut g = c.benchmark_group(format!("throughput/{name}"));
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));
    for size in SIZES {
        let (mut a, b) = mk();
        let sink = spawn_sink(b);
        let msg = vec![0x5au8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |bch, _| {
            bch.iter_custom(|iters| {
                let t0 = Instant::now();
                a.send_value(&iters).unwrap();
                for _ in 0..iters {
                    a.send(&msg).unwrap();
                }
                let ack = a.recv().unwrap();
                assert_eq!(ack, [1]);
                t0.elapsed()
            });
        });
        a.send_value(&u64::MAX).unwrap();
        a.flush().unwrap();
        sink.join().unwrap();
    }
    g.finish();
}

fn throughput(c: &mut Criterion) {
    bench_pair(c, "mem", mem_pair);
    bench_pair(c, "tcp-loopback", || {
        TcpChannel::loopback_pair(TcpOptions::default()).unwrap()
    });
    bench_pair(c, "tcp-loopback-direct", || {
        let o = TcpOptions {
            read_ahead: None,
            ..TcpOptions::default()
        };
        TcpChannel::loopback_pair(o).unwrap()
    });
    bench_pair(c, "mux-sub-over-tcp", || {
        let (a, b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
        let (ma, mb) = (Mux::new(a).unwrap(), Mux::new(b).unwrap());
        (ma.sub(0).unwrap(), mb.sub(0).unwrap())
    });
}

criterion_group!(benches, throughput);
criterion_main!(benches);
