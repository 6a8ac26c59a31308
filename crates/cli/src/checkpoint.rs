//! `--checkpoint DIR`: the per-bucket results of a run, written durably so that the same
//! command, rerun after a crash or a kill, resumes from the buckets every party finished.
//!
//! Layout of `DIR`:
//! - `manifest`: the job's identity, one `name=value` line each: format version, protocol,
//!   curve, rank, receiver, broadcast, the `--parties` argument, key columns, bucket load,
//!   shard, and the input's size and BLAKE3 hash. A directory whose manifest differs from the
//!   current command is refused (exit code 3) with the first field that differs; it is never
//!   reused silently.
//! - `run`: the run id (16 random bytes drawn by rank 0 and shared in the handshake) and the
//!   agreed bucket count. A new run id is drawn whenever the parties cannot resume together,
//!   and the old bucket files are deleted then.
//! - `b<index>`: one finished bucket: its run id, index, number of distinct keys in and in the
//!   intersection, and for a party that learns the result the input row numbers that matched,
//!   with a BLAKE3 checksum over all of it. A file with another run id or a bad checksum does
//!   not count as finished.
//! - `lock`: an advisory lock held while a process uses the directory.
//!
//! Every file is written to a temporary name in `DIR`, `fsync`ed, renamed into place and the
//! directory `fsync`ed, so after a crash a file is either complete or absent.
//!
//! What it reveals: the bucket files of a party that learns the result hold the row numbers of
//! its input that are in the intersection — the same information as the output file, so the
//! directory needs the same protection as the output. The other parties' files hold only
//! counts (distinct keys per bucket, which the protocol already reveals to the peers).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Format version of the directory. 2: keys are encoded injectively, so a key's bucket (and
/// a finished bucket's rows) differ from format 1's. 3: the bucket count follows from the
/// public plan (`crate::plan`), not from `--bucket-size`.
const FORMAT: u32 = 3;
const MANIFEST_HEAD: &str = "obliv psi checkpoint";
const BUCKET_MAGIC: &[u8; 8] = b"OBLIVCB1";
const RUN_MAGIC: &[u8; 8] = b"OBLIVCR1";

/// The identity of a job: ordered `(name, value)` pairs; two commands are the same job when
/// their identities are equal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity(Vec<(String, String)>);

impl Identity {
    /// Adds a field (values are stored escaped, so any text is fine).
    pub fn with(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        self.0.push((name.to_string(), value.to_string()));
        self
    }

    fn render(&self) -> String {
        let mut s = format!("{MANIFEST_HEAD}\nformat={FORMAT}\n");
        for (k, v) in &self.0 {
            s += &format!("{k}={}\n", v.escape_default());
        }
        s
    }
}

/// The run a checkpoint belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunInfo {
    /// Random id shared by all parties of the run (never all zero).
    pub id: [u8; 16],
    /// Number of buckets the parties agreed on.
    pub buckets: u64,
}

/// The result of one finished bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketResult {
    /// Rows of this party's input in the bucket.
    pub rows_in: u64,
    /// Distinct keys of this party in the bucket.
    pub keys_in: u64,
    /// Distinct keys in the intersection (0 for a party that does not learn it).
    pub keys_out: u64,
    /// Input row numbers in the intersection, for a party that learns the result.
    pub rows: Option<Vec<u64>>,
}

/// An open checkpoint directory (locked for this process).
#[derive(Debug)]
pub struct Checkpoint {
    dir: PathBuf,
    run: Option<RunInfo>,
    finished: BTreeMap<u64, ()>,
    _lock: File,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |e| CliError::file(format!("checkpoint {}", path.display()), e)
}

/// Writes `bytes` to `dir/name` durably: temporary file, fsync, rename, fsync of `dir`.
fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), CliError> {
    let target = dir.join(name);
    let mut tmp = crate::cleanup::TempOutput::with_prefix_in(".tmp-", dir).map_err(io_err(dir))?;
    tmp.write_all(bytes).map_err(io_err(&target))?;
    tmp.as_file().sync_all().map_err(io_err(&target))?;
    tmp.persist(&target)
        .map_err(|e| CliError::file(format!("checkpoint {}", target.display()), e))?;
    sync_dir(dir)
}

/// Creates `dir` (and its missing parents) if it does not exist, itself with mode 0700 on
/// Unix: the receiver's bucket results hold the row numbers of its input in the intersection,
/// and the directory's listing should not be open to other users either. An existing
/// directory keeps its mode (the operator chose it).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

fn sync_dir(dir: &Path) -> Result<(), CliError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// A locked checkpoint directory whose job is not checked yet ([`Checkpoint::lock`]).
#[derive(Debug)]
pub struct CheckpointLock {
    dir: PathBuf,
    lock: File,
}

impl CheckpointLock {
    /// The directory (bucket files of the run may go here).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The second half of [`Checkpoint::open`]: compares (or records) the job `identity`.
    ///
    /// # Errors
    /// [`ExitKind::Input`](crate::ExitKind::Input) if the directory belongs to another job or cannot be written.
    pub fn open(self, identity: &Identity) -> Result<Checkpoint, CliError> {
        let dir = &self.dir;
        let manifest_path = dir.join("manifest");
        let want = identity.render();
        match fs::read(&manifest_path) {
            Ok(bytes) => compare_manifest(dir, &String::from_utf8_lossy(&bytes), &want)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                write_durably(dir, "manifest", want.as_bytes())?;
            }
            Err(e) => return Err(io_err(&manifest_path)(e)),
        }
        let mut cp = Checkpoint {
            dir: self.dir,
            run: None,
            finished: BTreeMap::new(),
            _lock: self.lock,
        };
        cp.run = cp.read_run();
        if let Some(run) = cp.run {
            for entry in fs::read_dir(&cp.dir).map_err(io_err(&cp.dir))?.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(b) = name.strip_prefix('b').and_then(|n| n.parse::<u64>().ok()) else {
                    continue;
                };
                if b < run.buckets && cp.read_bucket(b).is_ok() {
                    cp.finished.insert(b, ());
                }
            }
        }
        Ok(cp)
    }

    /// Removes temporary files and bucket directories left by a killed process.
    fn clean_temporaries(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".tmp-") {
                let _ = fs::remove_file(e.path());
            } else if name.starts_with("obliv-buckets-") {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
}

impl Checkpoint {
    /// Opens (or creates) the checkpoint directory `dir` for the job `identity`.
    ///
    /// # Errors
    /// [`ExitKind::Input`](crate::ExitKind::Input) if the directory belongs to another job (the message names the
    /// first field that differs), is not a checkpoint directory, is in use by another process,
    /// or cannot be written.
    pub fn open(dir: &Path, identity: &Identity) -> Result<Self, CliError> {
        Self::lock(dir)?.open(identity)
    }

    /// The first half of [`Checkpoint::open`], before the job's identity is known (it needs the
    /// input read): creates `dir`, takes its lock, refuses a directory that is not a
    /// checkpoint, and removes what a killed process left, so the bucket files of this run can
    /// go there.
    ///
    /// # Errors
    /// As [`Checkpoint::open`], except for the job comparison.
    pub fn lock(dir: &Path) -> Result<CheckpointLock, CliError> {
        create_private_dir(dir).map_err(io_err(dir))?;
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
            .map_err(io_err(dir))?;
        lock.try_lock().map_err(|_| {
            CliError::input(format!(
                "checkpoint {} is in use by another obliv process",
                dir.display()
            ))
        })?;
        let manifest_path = dir.join("manifest");
        match fs::metadata(&manifest_path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let foreign = fs::read_dir(dir)
                    .map_err(io_err(dir))?
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .find(|n| n != "lock" && !n.starts_with(".tmp-"));
                if let Some(name) = foreign {
                    return Err(CliError::input(format!(
                        "{} is not an obliv checkpoint directory (it holds {name:?} but no \
                         manifest); give an empty or new directory",
                        dir.display()
                    )));
                }
            }
            Err(e) => return Err(io_err(&manifest_path)(e)),
        }
        let held = CheckpointLock {
            dir: dir.to_path_buf(),
            lock,
        };
        held.clean_temporaries();
        Ok(held)
    }
    /// The directory (split bucket files of the run go here too, and are cleaned up when a
    /// killed run left them behind).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The run this checkpoint belongs to, if one was started.
    pub fn run(&self) -> Option<RunInfo> {
        self.run
    }

    /// Whether bucket `b` of the current run is finished.
    pub fn is_finished(&self, b: u64) -> bool {
        self.finished.contains_key(&b)
    }

    /// Number of finished buckets.
    pub fn finished_count(&self) -> usize {
        self.finished.len()
    }

    /// The finished buckets as a bitmap of `buckets` bits (bit `b % 8` of byte `b / 8`).
    pub fn finished_bitmap(&self, buckets: u64) -> Vec<u8> {
        let mut bits = vec![0u8; usize::try_from(buckets.div_ceil(8)).unwrap_or(0)];
        for &b in self.finished.keys() {
            if let Some(byte) = usize::try_from(b / 8).ok().and_then(|i| bits.get_mut(i)) {
                *byte |= 1 << (b % 8);
            }
        }
        bits
    }

    /// Keeps only the finished buckets that every party finished (`common`, a bitmap as
    /// [`Checkpoint::finished_bitmap`]); the others will run again and be overwritten.
    pub fn keep_common(&mut self, common: &[u8]) {
        self.finished.retain(|&b, ()| {
            usize::try_from(b / 8)
                .ok()
                .and_then(|i| common.get(i))
                .is_some_and(|byte| (byte >> (b % 8)) & 1 == 1)
        });
    }

    /// Starts a new run: deletes the bucket files of any earlier run and records `run`.
    ///
    /// # Errors
    /// [`ExitKind::Input`](crate::ExitKind::Input) if the directory cannot be written.
    pub fn start_run(&mut self, run: RunInfo) -> Result<(), CliError> {
        for e in fs::read_dir(&self.dir)
            .map_err(io_err(&self.dir))?
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name
                .strip_prefix('b')
                .is_some_and(|n| n.parse::<u64>().is_ok())
            {
                fs::remove_file(e.path()).map_err(io_err(&e.path()))?;
            }
        }
        let mut bytes = RUN_MAGIC.to_vec();
        bytes.extend_from_slice(&run.id);
        bytes.extend_from_slice(&run.buckets.to_le_bytes());
        let sum = blake3::hash(&bytes);
        bytes.extend_from_slice(sum.as_bytes());
        write_durably(&self.dir, "run", &bytes)?;
        self.run = Some(run);
        self.finished.clear();
        Ok(())
    }

    fn read_run(&self) -> Option<RunInfo> {
        let bytes = fs::read(self.dir.join("run")).ok()?;
        let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
        if blake3::hash(body).as_bytes() != sum || body.len() != 8 + 16 + 8 {
            return None;
        }
        if &body[..8] != RUN_MAGIC {
            return None;
        }
        let id: [u8; 16] = body[8..24].try_into().ok()?;
        let buckets = u64::from_le_bytes(body[24..32].try_into().ok()?);
        (id != [0; 16]).then_some(RunInfo { id, buckets })
    }

    /// Records bucket `b` of the current run as finished with `result`, durably.
    ///
    /// # Errors
    /// [`ExitKind::Input`](crate::ExitKind::Input) if no run was started or the file cannot be written.
    pub fn save(&mut self, b: u64, result: &BucketResult) -> Result<(), CliError> {
        let run = self
            .run
            .ok_or_else(|| CliError::input("checkpoint: no run started"))?;
        let rows = result.rows.as_deref().unwrap_or(&[]);
        let mut bytes = Vec::with_capacity(8 + 16 + 8 * 6 + 1 + rows.len() * 8 + 32);
        bytes.extend_from_slice(BUCKET_MAGIC);
        bytes.extend_from_slice(&run.id);
        bytes.extend_from_slice(&b.to_le_bytes());
        bytes.extend_from_slice(&result.rows_in.to_le_bytes());
        bytes.extend_from_slice(&result.keys_in.to_le_bytes());
        bytes.extend_from_slice(&result.keys_out.to_le_bytes());
        bytes.push(u8::from(result.rows.is_some()));
        bytes.extend_from_slice(&(rows.len() as u64).to_le_bytes());
        for r in rows {
            bytes.extend_from_slice(&r.to_le_bytes());
        }
        let sum = blake3::hash(&bytes);
        bytes.extend_from_slice(sum.as_bytes());
        write_durably(&self.dir, &format!("b{b}"), &bytes)?;
        self.finished.insert(b, ());
        Ok(())
    }

    /// Reads the result of finished bucket `b`.
    ///
    /// # Errors
    /// [`ExitKind::Input`](crate::ExitKind::Input) if the file is missing, damaged or of another run.
    pub fn read_bucket(&self, b: u64) -> Result<BucketResult, CliError> {
        let path = self.dir.join(format!("b{b}"));
        let damaged = || {
            CliError::input(format!(
                "checkpoint file {} is damaged or of another run",
                path.display()
            ))
        };
        let run = self.run.ok_or_else(damaged)?;
        let mut bytes = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(io_err(&path))?;
        let split = bytes.len().checked_sub(32).ok_or_else(damaged)?;
        let (body, sum) = bytes.split_at(split);
        if blake3::hash(body).as_bytes() != sum {
            return Err(damaged());
        }
        let mut r = Reader(body);
        if r.take(8)? != BUCKET_MAGIC || r.take(16)? != run.id || r.u64()? != b {
            return Err(damaged());
        }
        let rows_in = r.u64()?;
        let keys_in = r.u64()?;
        let keys_out = r.u64()?;
        let has_rows = r.take(1)?[0] == 1;
        let n = r.u64()?;
        if n.checked_mul(8) != Some(r.0.len() as u64) {
            return Err(damaged());
        }
        let rows: Vec<u64> =
            r.0.chunks_exact(8)
                .map(|c| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(c);
                    u64::from_le_bytes(a)
                })
                .collect();
        Ok(BucketResult {
            rows_in,
            keys_in,
            keys_out,
            rows: has_rows.then_some(rows),
        })
    }
}

/// A cursor over a checkpoint file's bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CliError> {
        if self.0.len() < n {
            return Err(CliError::input("checkpoint file is truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u64(&mut self) -> Result<u64, CliError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
}

fn compare_manifest(dir: &Path, have: &str, want: &str) -> Result<(), CliError> {
    if have == want {
        return Ok(());
    }
    let field = |line: &str| {
        line.split_once('=')
            .map_or(line.to_string(), |(k, _)| k.to_string())
    };
    let (h, w): (Vec<&str>, Vec<&str>) = (have.lines().collect(), want.lines().collect());
    let mut what = String::from("the manifest differs");
    for i in 0..h.len().max(w.len()) {
        let (a, b) = (
            h.get(i).copied().unwrap_or(""),
            w.get(i).copied().unwrap_or(""),
        );
        if a != b {
            what = format!(
                "{} differs (checkpoint: {a:?}, this command: {b:?})",
                field(if b.is_empty() { a } else { b })
            );
            break;
        }
    }
    Err(CliError::input(format!(
        "checkpoint {} belongs to another job: {what}; use another --checkpoint directory, or \
         delete this one to start over",
        dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(input: &str) -> Identity {
        Identity::default()
            .with("protocol", "ecdh")
            .with("input_blake3", input)
            .with("keys", "a\nb")
    }

    /// A new checkpoint directory is private to its user (it was created with the umask's
    /// mode, 0755 usually); its files were and are 0600.
    #[cfg(unix)]
    #[test]
    fn a_new_checkpoint_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("new").join("ck");
        let mut cp = Checkpoint::open(&d, &id("x")).unwrap();
        cp.start_run(RunInfo {
            id: [7; 16],
            buckets: 2,
        })
        .unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&d), 0o700);
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n != "lock") {
                assert_eq!(mode(&p), 0o600, "{}", p.display());
            }
        }
    }

    #[test]
    fn round_trip_resume_and_rejection() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("ck");
        let run = RunInfo {
            id: [7; 16],
            buckets: 10,
        };
        {
            let mut cp = Checkpoint::open(&d, &id("x")).unwrap();
            assert_eq!(cp.run(), None);
            cp.start_run(run).unwrap();
            let r3 = BucketResult {
                rows_in: 6,
                keys_in: 5,
                keys_out: 2,
                rows: Some(vec![1, 9, 40]),
            };
            cp.save(3, &r3).unwrap();
            cp.save(
                0,
                &BucketResult {
                    rows_in: 1,
                    keys_in: 1,
                    keys_out: 0,
                    rows: None,
                },
            )
            .unwrap();
            // The lock keeps a second process out.
            let e = Checkpoint::open(&d, &id("x")).unwrap_err();
            assert!(e.to_string().contains("in use"), "{e}");
        }
        let mut cp = Checkpoint::open(&d, &id("x")).unwrap();
        assert_eq!(cp.run(), Some(run));
        assert_eq!(cp.finished_count(), 2);
        assert_eq!(cp.finished_bitmap(10), vec![0b1001, 0]);
        let r3 = cp.read_bucket(3).unwrap();
        assert_eq!((r3.rows_in, r3.keys_in, r3.keys_out), (6, 5, 2));
        assert_eq!(r3.rows, Some(vec![1, 9, 40]));
        assert_eq!(cp.read_bucket(0).unwrap().rows, None);
        cp.keep_common(&[0b1000, 0]);
        assert!(cp.is_finished(3) && !cp.is_finished(0));
        // A torn or altered file does not count as finished.
        let mut bytes = fs::read(d.join("b3")).unwrap();
        bytes[30] ^= 1;
        fs::write(d.join("b3"), &bytes).unwrap();
        drop(cp);
        let mut cp = Checkpoint::open(&d, &id("x")).unwrap();
        assert_eq!(cp.finished_count(), 1);
        // A new run forgets the old buckets.
        cp.start_run(RunInfo {
            id: [8; 16],
            buckets: 4,
        })
        .unwrap();
        assert_eq!(cp.finished_count(), 0);
        assert!(!d.join("b0").exists());
        drop(cp);
        // Another job is refused, naming the field.
        let e = Checkpoint::open(&d, &id("y")).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("input_blake3 differs"), "{e}");
        // So is a directory that is not a checkpoint.
        let other = dir.path().join("other");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("data.csv"), "x").unwrap();
        let e = Checkpoint::open(&other, &id("x")).unwrap_err();
        assert!(e.to_string().contains("not an obliv checkpoint"), "{e}");
    }
}
