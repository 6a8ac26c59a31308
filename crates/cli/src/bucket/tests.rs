//! Tests of the bucketing: both CSV paths against each other, spilling, sharding, the
//! row writer.

use super::*;
use std::collections::BTreeMap;

#[test]
fn key_hash_is_the_documented_blake3_derive_key() {
    for key in [&b""[..], b"k1", &[0xab; 64], &[7; 65], &[1; 300]] {
        let h = blake3::derive_key("obliv-cli bucket v1", key);
        let a = u64::from_le_bytes(h[..8].try_into().unwrap());
        let b = u64::from_le_bytes(h[8..16].try_into().unwrap());
        assert_eq!(key_hash(key), (a, b));
    }
}

fn opts(dir: &Path, force_csv: bool) -> IngestOptions {
    let mut o = IngestOptions::new(Shard::default(), true, dir, ProgressMode::Off);
    o.force_csv = force_csv;
    o
}

/// Every bucket of `total`: key hash -> sorted rows, and which bucket held it.
fn contents(b: &mut Buckets, total: usize) -> BTreeMap<Vec<u8>, (usize, Vec<u64>)> {
    let mut all = BTreeMap::new();
    for i in 0..total {
        let bucket = b.take(i, total).unwrap();
        assert_eq!(bucket.distinct_len(), bucket.distinct().len());
        for (k, key) in bucket.distinct().into_iter().enumerate() {
            let mut rows = bucket.rows_of(k).to_vec();
            rows.sort_unstable();
            assert!(all.insert(key.to_vec(), (i, rows)).is_none(), "a key twice");
        }
    }
    all
}

/// The plain computation: every record read by `csv`, its key, and the rows of each key.
fn plain(path: &Path, keys: &[&str]) -> (u64, BTreeMap<Vec<u8>, Vec<u64>>) {
    let mut rdr = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    let cols: Vec<usize> = keys
        .iter()
        .map(|k| header.iter().position(|h| h == k).unwrap())
        .collect();
    let mut map: BTreeMap<Vec<u8>, Vec<u64>> = BTreeMap::new();
    let mut rows = 0;
    for rec in rdr.records() {
        let mut key = Vec::new();
        key_of(&rec.unwrap(), &cols, &mut key);
        let (lo, hi) = key_hash(&key);
        let mut h = lo.to_le_bytes().to_vec();
        h.extend_from_slice(&hi.to_le_bytes());
        map.entry(h).or_default().push(rows);
        rows += 1;
    }
    (rows, map)
}

const FILES: &[(&str, &str, bool)] = &[
    // (contents, key columns, simple)
    ("id,x\nk1,1\nk2,2\nk1,3\n", "id", true),
    ("id,x\r\nk1,1\r\n\r\nk2,2\r\nk1,3", "id", true),
    ("id\n\nk1\n\n\nk2\nk1\n\n", "id", true),
    ("a,b,c\n1,2,3\n1,2,4\n2,2,3\n1,2,3\n", "c,a", true),
    ("a,b,c\n1,2,3\n1,2,4\n2,2,3\n1,2,3\n", "b", true),
    ("a,b\n,\n,x\n ,\nä,ö\n", "a,b", true),
    ("\"id\",x\nk1,1\nk2,2\n", "id", true),
    ("\u{feff}id,x\nk1,1\nk2,2\n", "id", true),
    (
        "id,x\n\"k,1\",1\nk1,2\n\"k\"\"q\",3\n\"k\"\"q\",4\n",
        "id",
        false,
    ),
    ("id,x\nk1,\"multi\nline\"\nk2,2\n", "id", false),
    ("id,x\rk1,1\rk2,2\r", "id", false),
    ("id,x\nk1,1\rk2,2\n", "id", false),
];

#[test]
fn byte_scanner_and_csv_parser_give_the_same_buckets_and_output() {
    let dir = tempfile::tempdir().unwrap();
    for (n, &(body, keys, simple)) in FILES.iter().enumerate() {
        let input = dir.path().join(format!("in{n}.csv"));
        std::fs::write(&input, body).unwrap();
        let keys: Vec<String> = keys.split(',').map(String::from).collect();
        let (fast, mut fb) = ingest(&input, &keys, &opts(dir.path(), false)).unwrap();
        let (slow, mut sb) = ingest(&input, &keys, &opts(dir.path(), true)).unwrap();
        assert_eq!(fast.data_start.is_some(), simple, "file {n}");
        assert_eq!(slow.data_start, None);
        assert_eq!(
            (fast.rows, fast.shard_rows, fast.digest, &fast.header),
            (slow.rows, slow.shard_rows, slow.digest, &slow.header),
            "file {n}"
        );
        assert_eq!(fast.digest, Some(*blake3::hash(body.as_bytes()).as_bytes()));
        let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let (rows, want) = plain(&input, &key_refs);
        assert_eq!(fast.rows, rows, "file {n}");
        for total in [1, 2, 4] {
            let (f, s) = (contents(&mut fb, total), contents(&mut sb, total));
            assert_eq!(f, s, "file {n}");
            let got: BTreeMap<Vec<u8>, Vec<u64>> =
                f.into_iter().map(|(k, (_, r))| (k, r)).collect();
            assert_eq!(got, want, "file {n}");
            // Taken buckets are gone; read the file again for the next count.
            (_, fb) = ingest(&input, &keys, &opts(dir.path(), false)).unwrap();
            (_, sb) = ingest(&input, &keys, &opts(dir.path(), true)).unwrap();
        }
        // The output, both ways, every other row marked, in input order and sorted.
        let mut set = RowSet::new(rows);
        for r in (0..rows).step_by(2) {
            set.insert(r);
        }
        for sort in [false, true] {
            let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
            let wa = write_rows(&input, &fast, &set, &a, sort, ProgressMode::Off).unwrap();
            let wb = write_rows(&input, &slow, &set, &b, sort, ProgressMode::Off).unwrap();
            assert_eq!(wa, wb);
            assert_eq!(wa, rows.div_ceil(2));
            assert_eq!(
                std::fs::read_to_string(&a).unwrap(),
                std::fs::read_to_string(&b).unwrap(),
                "file {n}, sort {sort}"
            );
        }
    }
}

#[test]
fn malformed_files_get_the_parsers_errors() {
    let dir = tempfile::tempdir().unwrap();
    for body in [
        &b"id,x\nk1,1\nk2\n"[..],
        b"id,x\nk1,1\nk2,2,3\n",
        b"id,x\nk1,1\nk\xff,2\n",
        b"id\nk1\nk2,2\n",
    ] {
        let input = dir.path().join("bad.csv");
        std::fs::write(&input, body).unwrap();
        let keys = ["id".to_string()];
        let fast = ingest(&input, &keys, &opts(dir.path(), false)).unwrap_err();
        let slow = ingest(&input, &keys, &opts(dir.path(), true)).unwrap_err();
        assert_eq!(fast.to_string(), slow.to_string());
        assert!(fast.to_string().contains("line 3"), "{fast}");
    }
}

/// Spilled entries (public hashes of private keys, with row numbers) never have a name in the
/// file system: no file another user could read (a directory of mode 0755 with files of mode
/// 0644 before), none left behind by a run killed with Ctrl-C, before which no `Drop` runs.
#[test]
fn spilled_entries_leave_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let mut body = String::from("id,x\n");
    for i in 0..5000 {
        body += &format!("k{i},{i}\n");
    }
    std::fs::write(&input, body).unwrap();
    let tmp_root = dir.path().join("tmp");
    std::fs::create_dir(&tmp_root).unwrap();
    let mut o = opts(&tmp_root, false);
    o.memory_budget = 0;
    let (_, mut b) = ingest(&input, &["id".to_string()], &o).unwrap();
    assert!(b.spilled());
    let names: Vec<_> = std::fs::read_dir(&tmp_root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(names.is_empty(), "spill files with names: {names:?}");
    // And the entries still come back from the anonymous file.
    assert_eq!(contents(&mut b, 4).len(), 5000);
}

#[test]
fn spilled_refined_and_sharded_buckets_keep_equal_keys_together() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let mut body = String::from("id,x\n");
    for i in 0..3000 {
        body += &format!("k{},{i}\n", i % 1100);
    }
    std::fs::write(&input, body).unwrap();
    let keys = ["id".to_string()];
    let (shape, mut mem) = ingest(&input, &keys, &opts(dir.path(), false)).unwrap();
    assert!(!mem.spilled());
    let want = contents(&mut mem, 8);
    assert_eq!((shape.rows, want.len()), (3000, 1100));
    for (k, (b, _)) in &want {
        let lo = u64::from_le_bytes(k[..8].try_into().unwrap());
        assert_eq!(lo % 8, *b as u64);
    }
    // A tiny budget (every batch goes to files) and four sub-buckets refined into 8 and 16.
    for (budget, sub) in [(0, 256), (0, 4), (1 << 30, 4), (5000, 2)] {
        for total in [8, 16] {
            let mut o = opts(dir.path(), false);
            o.memory_budget = budget;
            o.sub_buckets = sub;
            let (_, mut b) = ingest(&input, &keys, &o).unwrap();
            assert_eq!(b.spilled(), budget < 1 << 30);
            let got = contents(&mut b, total);
            let strip = |m: &BTreeMap<Vec<u8>, (usize, Vec<u64>)>| {
                m.iter()
                    .map(|(k, (_, r))| (k.clone(), r.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(strip(&got), strip(&want), "budget {budget} sub {sub}");
            assert!(got.iter().all(|(k, (b, _))| {
                u64::from_le_bytes(k[..8].try_into().unwrap()) % total as u64 == *b as u64
            }));
        }
    }
    // Shards: disjoint, together everything, counted.
    let mut union = BTreeMap::new();
    let mut rows = 0;
    for i in 0..3 {
        let mut o = opts(dir.path(), false);
        o.shard = Shard { index: i, count: 3 };
        let (s, mut b) = ingest(&input, &keys, &o).unwrap();
        assert_eq!(s.rows, 3000);
        rows += s.shard_rows;
        for (k, v) in contents(&mut b, 8) {
            let (_, hi) = (0, u64::from_le_bytes(k[8..].try_into().unwrap()));
            assert_eq!(hi % 3, i);
            assert!(union.insert(k, v).is_none());
        }
    }
    assert_eq!(rows, 3000);
    assert_eq!(union, want);
}

#[test]
fn output_keeps_marked_rows() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let mut body = String::from("id,x\n");
    for i in 0..500 {
        body += &format!("k{},{i}\n", i % 200);
    }
    std::fs::write(&input, body).unwrap();
    let (shape, _) = ingest(&input, &["id".to_string()], &opts(dir.path(), false)).unwrap();
    let mut set = RowSet::new(500);
    set.insert(3);
    set.insert(499);
    assert_eq!(set.count(), 2);
    let out = dir.path().join("out.csv");
    assert_eq!(
        write_rows(&input, &shape, &set, &out, false, ProgressMode::Off).unwrap(),
        2
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "id,x\nk3,3\nk99,499\n"
    );
}

/// Field values that a separator-joined key confuses: separators, quotes, commas, empty
/// fields, control bytes, and values that look like two fields joined.
const TRICKY: &[&str] = &[
    "",
    "a",
    "b",
    "\u{1f}",
    "a\u{1f}b",
    "b\u{1f}c",
    "\u{0}",
    "\u{0}\u{1}",
    "\u{1}",
    "\u{0}\u{ff}",
    "\t",
    " ",
    ",",
    "\"",
    "a,b",
    "x\ny",
    "\r",
];

/// Writes a CSV (header `k1,v,k2,k3`) with one row per triple of `values`, by the `csv`
/// writer (which quotes what needs it); returns the triples in row order.
fn tricky_file(path: &Path, values: &[&str]) -> Vec<[String; 3]> {
    let mut w = csv::Writer::from_path(path).unwrap();
    w.write_record(["k1", "v", "k2", "k3"]).unwrap();
    let mut rows = Vec::new();
    for a in values {
        for b in values {
            for c in values {
                w.write_record([*a, "val", *b, *c]).unwrap();
                rows.push([a.to_string(), b.to_string(), c.to_string()]);
            }
        }
    }
    w.flush().unwrap();
    rows
}

/// Rows grouped by their key's public hash, on both reading paths, equal rows grouped by
/// their key columns' values: the key is an injective function of the key columns, in
/// every column position, whatever bytes the fields hold.
#[test]
fn keys_are_injective_on_the_byte_scanner_and_the_csv_parser() {
    let dir = tempfile::tempdir().unwrap();
    let simple: Vec<&str> = TRICKY
        .iter()
        .copied()
        .filter(|v| !v.contains([',', '"', '\n', '\r']))
        .collect();
    for (name, values, fast_path) in [("all", TRICKY, false), ("simple", &simple[..], true)] {
        let input = dir.path().join(format!("{name}.csv"));
        let tuples = tricky_file(&input, values);
        for keys in [
            &["k1", "k2", "k3"][..],
            &["k3", "k1"],
            &["k2"],
            &["k1", "k2"],
        ] {
            let cols: Vec<usize> = keys
                .iter()
                .map(|k| ["k1", "k2", "k3"].iter().position(|c| c == k).unwrap())
                .collect();
            // Rows by the values of their key columns.
            let mut want: BTreeMap<Vec<&str>, Vec<u64>> = BTreeMap::new();
            for (r, t) in tuples.iter().enumerate() {
                let vals = cols.iter().map(|&c| t[c].as_str()).collect();
                want.entry(vals).or_default().push(r as u64);
            }
            let want: std::collections::BTreeSet<Vec<u64>> = want.into_values().collect();
            let keys: Vec<String> = keys.iter().map(|k| (*k).to_string()).collect();
            for force_csv in [false, true] {
                let (shape, mut b) = ingest(&input, &keys, &opts(dir.path(), force_csv)).unwrap();
                assert_eq!(
                    shape.data_start.is_some(),
                    fast_path && !force_csv,
                    "{name}"
                );
                assert_eq!(usize::try_from(shape.rows).unwrap(), tuples.len());
                let got: std::collections::BTreeSet<Vec<u64>> =
                    contents(&mut b, 1).into_values().map(|(_, r)| r).collect();
                assert_eq!(got, want, "{name}, keys {keys:?}, csv parser {force_csv}");
            }
            // And `read_keys` (ub-psi) decodes every key back to its columns' values.
            let kd = crate::csvio::read_keys(&input, &keys).unwrap();
            for (r, t) in tuples.iter().enumerate() {
                let key = &kd.distinct[kd.row_key[r] as usize];
                let fields = crate::csvio::decode_key(key).unwrap();
                let vals: Vec<&[u8]> = cols.iter().map(|&c| t[c].as_bytes()).collect();
                assert_eq!(fields, vals, "{name}, row {r}");
            }
        }
    }
}

/// Two rows that a 0x1F join made one key: (`a\x1fb`, `c`) and (`a`, `b\x1fc`).
#[test]
fn joined_looking_fields_do_not_collide() {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    std::fs::write(&pa, "id,region\na\u{1f}b,c\n").unwrap();
    std::fs::write(&pb, "id,region\na,b\u{1f}c\n").unwrap();
    let keys = ["id".to_string(), "region".to_string()];
    for force_csv in [false, true] {
        let (_, mut a) = ingest(&pa, &keys, &opts(dir.path(), force_csv)).unwrap();
        let (_, mut b) = ingest(&pb, &keys, &opts(dir.path(), force_csv)).unwrap();
        let (ka, kb) = (contents(&mut a, 1), contents(&mut b, 1));
        assert_eq!((ka.len(), kb.len()), (1, 1));
        assert_ne!(ka.keys().next(), kb.keys().next(), "csv parser {force_csv}");
    }
}

/// A file edited between ingest and output, with the same number of rows (and, for the
/// byte scanner, the same length): the output pass refuses it with exit code 3 and
/// leaves no output file.
#[test]
fn output_refuses_an_input_changed_since_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    for (before, after) in [
        ("id,x\nk1,1\nk2,2\nk3,3\n", "id,x\nk1,1\nk9,2\nk3,3\n"),
        ("id,x\n\"k,1\",1\nk2,2\n", "id,x\n\"k,1\",1\nk2,3\n"),
    ] {
        for force_csv in [false, true] {
            std::fs::write(&input, before).unwrap();
            let (shape, _) = ingest(&input, &["id".into()], &opts(dir.path(), force_csv)).unwrap();
            let mut set = RowSet::new(shape.rows);
            set.insert(1);
            let out = dir.path().join("out.csv");
            let _ = std::fs::remove_file(&out);
            // Unchanged: written.
            assert_eq!(
                write_rows(&input, &shape, &set, &out, false, ProgressMode::Off).unwrap(),
                1
            );
            std::fs::remove_file(&out).unwrap();
            std::fs::write(&input, after).unwrap();
            for sort in [false, true] {
                let e =
                    write_rows(&input, &shape, &set, &out, sort, ProgressMode::Off).unwrap_err();
                assert_eq!(e.exit_code(), 3, "{e}");
                assert!(e.to_string().contains("changed"), "{e}");
                assert!(!out.exists());
            }
        }
    }
}

/// `Bucket::from_parts` against a plain map, at sizes on both sides of the one-group case
/// and with keys repeated often enough to make groups of over 16 entries (the sort path):
/// the distinct keys in hash order, each with exactly its rows.
#[test]
fn grouping_matches_a_plain_map() {
    for (n, distinct) in [
        (0u64, 1u64),
        (1, 1),
        (200, 7),
        (255, 300),
        (256, 256),
        (5000, 40),
        (20_000, 19_000),
    ] {
        let mut want: BTreeMap<(u64, u64), Vec<u64>> = BTreeMap::new();
        let mut parts = vec![Vec::new(), Vec::new(), Vec::new()];
        for row in 0..n {
            // A spread of keys (hi carries the radix bits), some rows sharing one.
            let k = row.wrapping_mul(0x9e37_79b9_7f4a_7c15) % distinct;
            let (hi, lo) = (k.wrapping_mul(0xd6e8_feb8_6659_fd93), k ^ 0x55);
            want.entry((hi, lo)).or_default().push(row);
            parts[usize::from(row % 3 == 1) + 2 * usize::from(row % 3 == 2)].push(Entry {
                hi,
                lo,
                row,
            });
        }
        let b = Bucket::from_parts(parts).unwrap();
        assert_eq!(b.distinct_len(), want.len(), "n {n}");
        assert_eq!(b.rows_len() as u64, n);
        for (i, ((hi, lo), rows)) in want.iter().enumerate() {
            let mut key = lo.to_le_bytes().to_vec();
            key.extend_from_slice(&hi.to_le_bytes());
            assert_eq!(b.distinct()[i], &key[..], "n {n} key {i}");
            let mut got = b.rows_of(i).to_vec();
            got.sort_unstable();
            assert_eq!(&got, rows, "n {n} key {i}");
        }
    }
}

/// A small deterministic generator (xorshift64*) for the property tests below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }
}

/// Random CSV-like bytes over an adversarial alphabet: separators, quotes, both line ends,
/// NUL, invalid and multi-byte UTF-8, a byte-order mark, empty lines; a header naming the
/// key column most of the time, rows mostly of the header's width.
fn adversarial_csv(rng: &mut Rng) -> Vec<u8> {
    const PIECES: &[&[u8]] = &[
        b"a",
        b"b",
        b"k1",
        b"",
        b" ",
        b",",
        b"\"",
        b"\"\"",
        b"\n",
        b"\r\n",
        b"\r",
        b"\0",
        b"\xff",
        b"\xc3\xa4",
        b"\xc3",
        b"\xef\xbb\xbf",
        b"id",
        b"x",
        b"#",
        b"\t",
    ];
    // Well-formed quoted fields.
    const QUOTED: &[&[u8]] = &[b"\"a,b\"", b"\"x\ny\"", b"\"q\"\"q\"", b"\"\"", b"\"\r\n\""];
    let mut out = Vec::new();
    if rng.below(4) == 0 {
        out.extend_from_slice(b"\xef\xbb\xbf");
    }
    let width = 1 + rng.below(3);
    match rng.below(6) {
        0 => {}
        1 => out.extend_from_slice(b"\"id\""),
        _ => out.extend_from_slice(b"id"),
    }
    for _ in 1..width {
        out.extend_from_slice(b",x");
    }
    out.extend_from_slice(if rng.below(3) == 0 { b"\r\n" } else { b"\n" });
    for _ in 0..rng.below(8) {
        if rng.below(4) == 0 {
            // A field or line of anything.
            for _ in 0..1 + rng.below(6) {
                out.extend_from_slice(PIECES[rng.below(PIECES.len())]);
            }
        } else {
            // A well-formed-looking row.
            for f in 0..width {
                if f > 0 {
                    out.push(b',');
                }
                if rng.below(8) == 0 {
                    out.extend_from_slice(QUOTED[rng.below(QUOTED.len())]);
                } else {
                    for _ in 0..rng.below(3) {
                        out.extend_from_slice(PIECES[rng.below(5)]);
                    }
                }
            }
        }
        match rng.below(8) {
            0 => {}
            1 => out.extend_from_slice(b"\r\n"),
            2 => out.extend_from_slice(b"\n\n"),
            _ => out.push(b'\n'),
        }
    }
    out
}

/// The byte scanner and the `csv` parser agree on random adversarial files: both accept
/// (with the same header, rows, digest and buckets, and the same output for every marking)
/// or both refuse with the same error.
#[test]
fn byte_scanner_and_csv_parser_agree_on_random_adversarial_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let keys = ["id".to_string()];
    let mut rng = Rng(0x243f_6a88_85a3_08d3);
    for case in 0..3000 {
        let body = adversarial_csv(&mut rng);
        std::fs::write(&input, &body).unwrap();
        let fast = ingest(&input, &keys, &opts(dir.path(), false));
        let slow = ingest(&input, &keys, &opts(dir.path(), true));
        let ((fs, mut fb), (ss, mut sb)) = match (fast, slow) {
            (Ok(f), Ok(s)) => (f, s),
            (Err(f), Err(s)) => {
                assert_eq!(f.to_string(), s.to_string(), "case {case}: {body:?}");
                continue;
            }
            (f, s) => panic!(
                "case {case}: {body:?}: scanner {:?}, parser {:?}",
                f.map(|x| x.0.rows),
                s.map(|x| x.0.rows)
            ),
        };
        assert_eq!(
            (fs.rows, &fs.header, &fs.key_cols, fs.digest, fs.bytes),
            (ss.rows, &ss.header, &ss.key_cols, ss.digest, ss.bytes),
            "case {case}: {body:?}"
        );
        assert_eq!(fs.digest, Some(*blake3::hash(&body).as_bytes()));
        assert_eq!(
            contents(&mut fb, 2),
            contents(&mut sb, 2),
            "case {case}: {body:?}"
        );
        let mut set = RowSet::new(fs.rows);
        for r in 0..fs.rows {
            if rng.below(2) == 0 {
                set.insert(r);
            }
        }
        for sort in [false, true] {
            let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
            let wa = write_rows(&input, &fs, &set, &a, sort, ProgressMode::Off).unwrap();
            let wb = write_rows(&input, &ss, &set, &b, sort, ProgressMode::Off).unwrap();
            assert_eq!(wa, wb, "case {case}: {body:?}");
            assert_eq!(
                std::fs::read(&a).unwrap(),
                std::fs::read(&b).unwrap(),
                "case {case}: {body:?}, sort {sort}"
            );
        }
    }
}

/// An input that is not a regular file: a pipe (`--input <(zcat big.csv.gz)`) used to fail
/// with "Illegal seek" once its header was read, a directory with "Is a directory"; both are
/// refused with what to give instead, on every reader (`psi` and `ub-psi`).
#[cfg(unix)]
#[test]
fn an_input_that_is_not_a_regular_file_is_refused_with_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.csv");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let keys = ["id".to_string()];
    for reader in 0..2 {
        // The writer blocks in `open` until the reader opens the pipe; it ends when the
        // reader closes it (a write error then is expected).
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
                let _ = f.write_all(b"id,x\nk1,1\nk2,2\n");
            })
        };
        let e = if reader == 0 {
            ingest(&fifo, &keys, &opts(dir.path(), false)).unwrap_err()
        } else {
            crate::csvio::read_keys(&fifo, &keys).unwrap_err()
        };
        writer.join().unwrap();
        assert_eq!(e.exit_code(), 3, "{e}");
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
    let e = ingest(dir.path(), &keys, &opts(dir.path(), false)).unwrap_err();
    assert_eq!(e.exit_code(), 3, "{e}");
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

/// A record longer than `MAX_RECORD_BYTES` is refused with a clear error before it is
/// buffered whole: a data line without its end (which grew the scanner's buffer, then the
/// `csv` parser's record, to the size of the file), a quote never closed (which made the rest
/// of the file one field), a header line without its end (whose whole text the error message
/// then quoted).
#[test]
fn overlong_records_are_refused_with_a_short_message() {
    use crate::csvio::MAX_RECORD_BYTES;
    let dir = tempfile::tempdir().unwrap();
    let long = usize::try_from(MAX_RECORD_BYTES).unwrap() + (1 << 20);
    let mut no_newline = b"id,x\nk1,1\n".to_vec();
    no_newline.resize(no_newline.len() + long, b'a');
    let mut open_quote = b"id,x\nk1,1\n\"k2,2\n".to_vec();
    while open_quote.len() < long + 64 {
        open_quote.extend_from_slice(b"k3,3\n");
    }
    let header = vec![b'h'; long];
    for (name, body) in [
        ("no_newline", &no_newline),
        ("open_quote", &open_quote),
        ("header", &header),
    ] {
        let input = dir.path().join(format!("{name}.csv"));
        std::fs::write(&input, body).unwrap();
        for force_csv in [false, true] {
            let e = ingest(&input, &["id".to_string()], &opts(dir.path(), force_csv))
                .map(|_| ())
                .unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.len() < 1000 && msg.contains("longer than 16 MiB"),
                "{name} (csv {force_csv}): {}",
                &msg[..msg.len().min(300)]
            );
        }
    }
}

#[test]
fn temp_beside_names_the_directory_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("absent").join("out.csv");
    let Err(e) = temp_beside(&out) else {
        panic!("a missing directory is an error")
    };
    let msg = e.to_string();
    assert!(
        msg.contains("cannot create a file in") && msg.contains("absent"),
        "{msg}"
    );
    // Beside an output in an existing directory: a hidden temporary file there.
    let ok = temp_beside(&dir.path().join("out.csv")).unwrap();
    assert_eq!(ok.path().parent(), Some(dir.path()));
}
