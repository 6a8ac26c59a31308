//! Decoders of files an attacker may have written: the CLI's checkpoint directory and the
//! unbalanced-PSI cache, key file and server-set record.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use obliv_cli::checkpoint::{BucketResult, Checkpoint, Identity, RunInfo};
use obliv_psi::unbalanced::{Cache, ServerKey, ServerSet};

/// A fresh, empty directory for one run of a target (in memory where the system has
/// `/dev/shm`); removed on drop.
#[derive(Debug)]
pub struct WorkDir(PathBuf);

impl WorkDir {
    /// Creates the directory.
    pub fn new(tag: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let shm = Path::new("/dev/shm");
        let root = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        static SWEEP: std::sync::Once = std::sync::Once::new();
        SWEEP.call_once(|| sweep(&root));
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("obliv-fuzz-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work directory");
        WorkDir(dir)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Removes the work directories that processes no longer running left behind (those of a
/// process's fixtures live as long as it does).
fn sweep(root: &Path) {
    // Liveness is read from /proc; without it, nothing is removed.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("obliv-fuzz-") else {
            continue;
        };
        // `<tag>-<pid>-<n>`: the pid is the second field from the end.
        let pid = rest.rsplit('-').nth(1).and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The job identity every checkpoint run of the target uses.
pub fn identity() -> Identity {
    Identity::default()
        .with("protocol", "ecdh")
        .with("keys", "id")
        .with("input_blake3", "00")
}

/// The manifest a checkpoint writes for [`identity`] (read back from a fresh directory).
pub fn manifest() -> Vec<u8> {
    let dir = WorkDir::new("manifest");
    let cp = Checkpoint::open(dir.path(), &identity()).expect("fresh checkpoint");
    drop(cp);
    std::fs::read(dir.path().join("manifest")).expect("manifest")
}

/// `bytes ‖ BLAKE3(bytes)`: the checksum framing of the checkpoint's `run` and bucket files.
pub fn with_checksum(bytes: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v.extend_from_slice(blake3::hash(bytes).as_bytes());
    v
}

/// Body of the checkpoint target. Input: `parts` of (flags, manifest, run, bucket). Flags:
/// bit 0 uses the right manifest instead of the input's, bit 1 appends the checksum to the
/// run file and bit 2 to the bucket file (so that the fuzzer gets past them), bits 4–5 give
/// the bucket's index in its file name.
pub fn fuzz_checkpoint(data: &[u8]) {
    let [flags, man, run, bucket] = crate::parts::<4>(data);
    let flags = flags.first().copied().unwrap_or(0);
    let dir = WorkDir::new("checkpoint");
    let man = if flags & 1 != 0 {
        manifest()
    } else {
        man.to_vec()
    };
    let run = if flags & 2 != 0 {
        with_checksum(run)
    } else {
        run.to_vec()
    };
    let bucket = if flags & 4 != 0 {
        with_checksum(bucket)
    } else {
        bucket.to_vec()
    };
    let b = u64::from((flags >> 4) & 3);
    let p = dir.path();
    std::fs::write(p.join("manifest"), man).expect("write");
    std::fs::write(p.join("run"), run).expect("write");
    std::fs::write(p.join(format!("b{b}")), bucket).expect("write");
    let Ok(mut cp) = Checkpoint::open(p, &identity()) else {
        return;
    };
    let mut found = None;
    for i in 0..4 {
        let r = cp.read_bucket(i);
        if cp.is_finished(i) {
            assert!(
                r.is_ok(),
                "bucket {i} counted finished but unreadable: {r:?}"
            );
            assert!(cp.run().is_some_and(|run| i < run.buckets));
        }
        if let Ok(res) = r {
            found = Some((i, res));
        }
    }
    assert!(cp.finished_count() <= 1);
    // Round trip: what was read back, saved again under a fresh run, reads back the same.
    if let Some((i, res)) = found {
        let run = RunInfo {
            id: [9; 16],
            buckets: i + 1,
        };
        cp.start_run(run).expect("start_run");
        cp.save(i, &res).expect("save");
        assert_eq!(cp.read_bucket(i).expect("read back"), res);
        assert!(cp.is_finished(i));
    }
}

/// A bucket file's body (before its checksum) as a checkpoint writes it, for seeds.
pub fn bucket_body(run_id: [u8; 16], b: u64, r: &BucketResult) -> Vec<u8> {
    let mut v = b"OBLIVCB1".to_vec();
    v.extend_from_slice(&run_id);
    v.extend_from_slice(&b.to_le_bytes());
    v.extend_from_slice(&r.rows_in.to_le_bytes());
    v.extend_from_slice(&r.keys_in.to_le_bytes());
    v.extend_from_slice(&r.keys_out.to_le_bytes());
    let rows = r.rows.as_deref().unwrap_or(&[]);
    v.push(u8::from(r.rows.is_some()));
    v.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    for x in rows {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v
}

/// A run file's body (before its checksum), for seeds.
pub fn run_body(run: RunInfo) -> Vec<u8> {
    let mut v = b"OBLIVCR1".to_vec();
    v.extend_from_slice(&run.id);
    v.extend_from_slice(&run.buckets.to_le_bytes());
    v
}

/// The domain of the key file's tag (obliv-psi's `unbalanced::key`).
const KEY_TAG_DOMAIN: &str = "obliv-psi unbalanced v1 key file";

/// `body ‖ tag`: the integrity framing of an unbalanced server key file.
pub fn with_key_tag(body: &[u8]) -> Vec<u8> {
    let mut v = body.to_vec();
    v.extend_from_slice(&obliv_core::hash::ro_hash(KEY_TAG_DOMAIN, body));
    v
}

/// Body of the unbalanced-files target. Input: `kind ‖ bytes`; `kind` mod 4: 0 a server-set
/// record, 1 a key file, 2 a key file whose tag the target appends, 3 a cache file.
pub fn fuzz_unbalanced_files(data: &[u8]) {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    match kind % 4 {
        0 => {
            if let Ok(set) = ServerSet::from_bytes(bytes) {
                // The encoding is canonical: it re-encodes to the same bytes.
                assert_eq!(set.to_bytes(), bytes);
                assert_eq!(set.len(), set.segments().iter().sum::<u64>());
            }
        }
        1 | 2 => {
            let dir = WorkDir::new("key");
            let path = dir.path().join("key");
            let file = if kind % 4 == 2 {
                with_key_tag(bytes)
            } else {
                bytes.to_vec()
            };
            std::fs::write(&path, &file).expect("write");
            if let Ok(key) = ServerKey::load(&path) {
                // Saved again and reloaded, it is the same key.
                let again = dir.path().join("again");
                key.save(&again).expect("save");
                let back = ServerKey::load(&again).expect("reload");
                assert_eq!(back.curve(), key.curve());
                assert_eq!(back.queries_served(), key.queries_served());
                assert_eq!(
                    back.fingerprint().expect("fingerprint"),
                    key.fingerprint().expect("fingerprint")
                );
            }
        }
        _ => {
            let dir = WorkDir::new("cache");
            let path = dir.path().join("cache");
            std::fs::write(&path, bytes).expect("write");
            if let Ok(c) = Cache::open(&path) {
                assert!(c.len() <= bytes.len() as u64);
            }
        }
    }
}
