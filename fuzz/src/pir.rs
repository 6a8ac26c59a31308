//! PIR requests (what a server decodes) and responses (what a client decodes).

use std::sync::OnceLock;

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_net::Channel;
use obliv_pir::batch::BatchParams;
use obliv_pir::server::ServerState;
use obliv_pir::{ClientLimits, Database, PirClient};

/// Records of the targets' database.
pub const RECORDS: usize = 100;
/// Bytes per record.
pub const RECORD_LEN: usize = 16;
/// Requests a server accepts (as `ServerConfig::max_query_len` by default).
pub const MAX_QUERY_LEN: usize = 1 << 20;

/// The server state both servers hold: a fixed database with batch queries.
pub fn state() -> &'static ServerState {
    static S: OnceLock<ServerState> = OnceLock::new();
    S.get_or_init(|| {
        let mut rng = AesRng::from_seed([6; 16]);
        let db = Database::random(RECORDS, RECORD_LEN, &mut rng).expect("database");
        ServerState::new(db, Some(BatchParams::for_batch(4))).expect("server state")
    })
}

/// Body of the server target: one request, decoded and answered.
pub fn fuzz_server(data: &[u8]) {
    let s = state();
    let resp = s.handle(data);
    // Status byte first: 0 for an answer, 1 for an error message.
    assert!(matches!(resp.first(), Some(0 | 1)), "{:?}", resp.first());
}

/// The client's operations, by mode byte: a DPF query, a batch query or an IT-PIR query.
fn client_ops<C: Channel>(mode: u8, c: &mut PirClient<C>) -> bool {
    let n = c.info().records;
    let len = c.info().record_len;
    match mode % 3 {
        0 => c.query(7 % n).is_ok_and(|r| r.len() == len),
        1 => {
            let idx = [1 % n, 50 % n, 99 % n];
            c.query_batch(&idx)
                .is_ok_and(|r| r.len() == idx.len() && r.iter().all(|x| x.len() == len))
        }
        _ => c.query_it(3 % n).is_ok_and(|r| r.len() == len),
    }
}

/// The client's limits in the target: the defaults but for the records, which a client sets
/// to what it expects (the default 2^26 allows a documented layout of about 1.5 GiB, over the
/// targets' allocation limit).
pub fn limits() -> ClientLimits {
    ClientLimits {
        max_records: 1 << 20,
        ..ClientLimits::default()
    }
}

/// Body of the client target. Input: `parts` of (mode, server 0's frames, server 1's frames).
pub fn fuzz_client(data: &[u8]) {
    let [mode, s0, s1] = crate::parts::<3>(data);
    let mode = mode.first().copied().unwrap_or(0);
    let ch0 = crate::ScriptedChannel::new(s0);
    let ch1 = crate::ScriptedChannel::new(s1);
    let Ok(mut c) = PirClient::with_limits(ch0, ch1, AesRng::from_seed([7; 16]), limits()) else {
        return;
    };
    client_ops(mode, &mut c);
}

/// Seeds: for each mode, the requests the servers received (one seed per request, for the
/// server target) and the client target's input (the servers' answers).
pub fn seeds(mode: u8) -> (Vec<Vec<u8>>, Vec<u8>) {
    let (c0, s0) = obliv_net::mem_pair();
    let (c1, s1) = obliv_net::mem_pair();
    let serve = |ch: obliv_net::MemChannel| {
        std::thread::spawn(move || {
            let mut rec = crate::Recorder::new(ch);
            let _ = state().serve_channel(&mut rec, MAX_QUERY_LEN);
            rec.into_parts()
        })
    };
    let t0 = serve(s0);
    let t1 = serve(s1);
    let mut client = PirClient::new(c0, c1, AesRng::from_seed([7; 16])).expect("client");
    assert!(client_ops(mode, &mut client), "honest query failed");
    drop(client);
    let (mut requests, a0) = t0.join().expect("server 0");
    let (req1, a1) = t1.join().expect("server 1");
    requests.extend(req1);
    let input = crate::encode_parts(&[
        &[mode],
        &crate::encode_frames(&a0),
        &crate::encode_frames(&a1),
    ]);
    (requests, input)
}
