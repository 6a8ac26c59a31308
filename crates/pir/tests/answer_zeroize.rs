//! A server's answer leaves no expansion of the client's key in memory it frees:
//! `obliv_testkit` records every block freed, checked afterwards for the key's full-domain
//! evaluation (which, with the other server's, gives the index).
//!
//! This binary holds one test, so no other test frees memory while it records.
#![allow(clippy::unwrap_used)]

use obliv_core::AesRng;
use obliv_net::Channel;
use obliv_pir::batch::{self, BatchLayout, BatchParams};
use obliv_pir::server::ServerState;
use obliv_pir::{Database, DpfKey, dpf, dpf_pir};
use obliv_testkit::{TestAlloc, record_freed};
use rand_core::SeedableRng;

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::new();

/// Blocks of a key's full-domain evaluation, as bytes, to look for.
fn expansion(key: &[u8]) -> Vec<[u8; 16]> {
    let k = DpfKey::from_bytes(key).unwrap();
    k.eval_full().iter().take(8).map(|b| b.to_bytes()).collect()
}

/// Regression: the servers wiped the parsed key (`DpfKey` is zeroized on drop) but freed its
/// full-domain evaluation as it was: the share of the selection vector, which with the other
/// server's gives the index just as the keys do. Also the request frames the server handles.
#[test]
fn answers_free_no_key_expansion() {
    let mut rng = AesRng::from_seed([7; 16]);
    let db = Database::random(1 << 12, 32, &mut rng).unwrap();
    let q = dpf_pir::query(db.len(), 1234, &mut rng).unwrap();
    let needles = expansion(&q.to_server0);
    let needles: Vec<&[u8]> = needles.iter().map(|b| &b[..]).collect();
    let (answer, freed) = record_freed(|| dpf_pir::answer(&db, &q.to_server0));
    assert_eq!(freed.count_of(&needles), 0, "answer");
    answer.unwrap();
    let (answer, freed) = record_freed(|| dpf_pir::answer_parallel(&db, &q.to_server0, 2));
    assert_eq!(freed.count_of(&needles), 0, "answer_parallel");
    answer.unwrap();
    let keys: [&[u8]; 2] = [&q.to_server0, &q.to_server0];
    let (answers, freed) = record_freed(|| dpf_pir::answer_many(&db, &keys));
    assert_eq!(freed.count_of(&needles), 0, "answer_many");
    drop(answers);

    // The server's request handling: the frame holds the key itself.
    let st = ServerState::new(db.clone(), None).unwrap();
    let mut frame = vec![2u8];
    frame.extend_from_slice(&q.to_server0);
    let root: &[u8] = &q.to_server0[1..17];
    let (resp, freed) = record_freed(|| st.handle(&frame));
    assert_eq!(freed.count_of(&needles), 0, "ServerState::handle");
    drop(resp);
    let (mut client, mut server) = obliv_net::mem_pair();
    client.send(&frame).unwrap();
    client.flush().unwrap();
    drop(client);
    // Handles the request, then fails to send the response to the closed end.
    let (_, freed) = record_freed(|| st.serve_channel(&mut server, 1 << 16));
    assert_eq!(freed.count_of(&[root]), 0, "serve_channel");

    // A batch answer: every bucket's key is expanded.
    let layout = BatchLayout::new(db.len(), BatchParams::for_batch(10)).unwrap();
    let bq = batch::query(&layout, &[5, 77, 3000], &mut rng).unwrap();
    let mut needles = Vec::new();
    let mut off = 0;
    for b in 0..layout.buckets() {
        let len = dpf::key_len(layout.bucket_domain_bits(b));
        needles.extend(expansion(&bq.to_server1[off..off + len]));
        off += len;
    }
    let needles: Vec<&[u8]> = needles.iter().map(|b| &b[..]).collect();
    let (answer, freed) = record_freed(|| batch::answer(&db, &layout, &bq.to_server1));
    assert_eq!(freed.count_of(&needles), 0, "batch answer");
    answer.unwrap();
}
