//! Unfinished files removed when the process is interrupted.
//!
//! Every file the CLI writes for the user (a PSI output, a merged file, a checkpoint record,
//! an unbalanced-PSI summary, a PIR answer, a report) is written to a temporary file beside
//! its target, mode 0600, and renamed over the target once complete. Stopped by a signal with
//! the default action, the process would leave that temporary file behind, holding part of the
//! result (the first rows of an intersection), as would `psi demo` its directory of generated
//! inputs. Files made through [`TempOutput`] and directories made through [`TempDir`] are
//! registered here while they exist, and [`install`] sets a handler for SIGINT, SIGTERM and
//! SIGHUP (Ctrl-C and console close on Windows) that removes every registered path and exits
//! with status [`INTERRUPTED_EXIT`].
//!
//! Creating, renaming and dropping a registered path take the registry's lock, and the
//! handler keeps it from the first removal until the process exits: a file is either renamed
//! into place complete or removed, and nothing is registered after the handler has looked.
//!
//! The temporary files of obliv-psi's unbalanced-PSI key and cache writers are registered too,
//! through the hook [`install`] gives that crate ([`psi_temp_hook`]).
//!
//! Not covered: SIGKILL, a crash of the machine, and a program that uses this crate as a
//! library without calling [`install`] (it may call [`remove_registered`] from its own signal
//! handling). A leftover of that kind is a `.tmp*` file of mode 0600 in the target's directory.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The exit status of a process stopped by the handler of [`install`] (128 + SIGINT, as
/// shells report Ctrl-C).
pub const INTERRUPTED_EXIT: i32 = 130;

/// The registered paths: `true` for a directory (removed with its contents).
static REGISTERED: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<(PathBuf, bool)>> {
    // A panic while holding the lock leaves the list consistent (every change is one push or
    // one retain), so a poisoned lock is used as it is.
    REGISTERED.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unregister(list: &mut Vec<(PathBuf, bool)>, path: &Path) {
    list.retain(|(p, _)| p != path);
}

/// Removes the registered paths that `pick` selects, with `list` held; returns how many were
/// removed.
fn remove_picked(list: &mut Vec<(PathBuf, bool)>, pick: impl Fn(&Path) -> bool) -> usize {
    let (picked, kept): (Vec<_>, Vec<_>) = list.drain(..).partition(|(p, _)| pick(p));
    *list = kept;
    let mut removed = 0;
    for (path, is_dir) in picked {
        let result = if is_dir {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if result.is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Removes every file and directory registered now, for programs that handle signals
/// themselves; returns how many were removed. Files removed this way make the owner's later
/// [`TempOutput::persist`] fail.
pub fn remove_registered() -> usize {
    remove_picked(&mut registry(), |_| true)
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (Ctrl-C, Ctrl-Break and console close
/// on Windows): it removes every registered path, says so on stderr and exits with
/// [`INTERRUPTED_EXIT`]. Call once, early in `main`.
///
/// # Errors
/// When a handler is installed already (by an earlier call or another library) or the
/// operating system refuses one.
pub fn install() -> io::Result<()> {
    // The unbalanced-PSI key and cache writers of obliv-psi announce their temporary files
    // (a cache's partial body, a key's copy); registered, an interrupt removes them as well.
    // A hook installed before (by a program embedding this crate) stays.
    let _ = obliv_psi::unbalanced::set_temp_hook(psi_temp_hook);
    ctrlc::set_handler(|| {
        // Keep the lock until exit: nothing is created, renamed or dropped after this.
        let mut list = registry();
        let removed = remove_picked(&mut list, |_| true);
        crate::console::note(format_args!(
            "obliv: interrupted; {removed} unfinished file(s) removed"
        ));
        std::process::exit(INTERRUPTED_EXIT);
    })
    .map_err(io::Error::other)
}

/// The [`obliv_psi::unbalanced::TempHook`] that [`install`] sets: a temporary file of the
/// unbalanced-PSI key or cache writer is registered from its creation until it is renamed into
/// place or deleted.
pub fn psi_temp_hook(path: &Path, event: obliv_psi::unbalanced::TempEvent) {
    let mut list = registry();
    match event {
        obliv_psi::unbalanced::TempEvent::Created => list.push((path.to_path_buf(), false)),
        obliv_psi::unbalanced::TempEvent::Gone => unregister(&mut list, path),
    }
}

/// A temporary file of mode 0600 beside an output, registered for removal on interrupt
/// until it is renamed into place ([`TempOutput::persist`]) or dropped (which deletes it).
#[derive(Debug)]
pub struct TempOutput {
    file: Option<tempfile::NamedTempFile>,
}

/// The directory a file `target` is written in, where its temporary file goes: its parent, or
/// `.` for a bare file name (whose parent is the empty path).
#[must_use]
pub fn dir_of(target: &Path) -> &Path {
    target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

impl TempOutput {
    /// A new empty file (named `.tmp*`) in the directory of `target` ([`dir_of`]), so that
    /// [`TempOutput::persist`] can rename it over `target` atomically.
    ///
    /// # Errors
    /// When the file cannot be created there (a missing or read-only directory).
    pub fn beside(target: &Path) -> io::Result<Self> {
        Self::new_in(dir_of(target))
    }

    /// A new empty file in `dir` (named `.tmp*`).
    ///
    /// # Errors
    /// When the file cannot be created there.
    pub fn new_in(dir: &Path) -> io::Result<Self> {
        Self::with_prefix_in(".tmp", dir)
    }

    /// A new empty file in `dir` whose name starts with `prefix`.
    ///
    /// # Errors
    /// When the file cannot be created there.
    pub fn with_prefix_in(prefix: &str, dir: &Path) -> io::Result<Self> {
        let mut list = registry();
        let file = tempfile::Builder::new().prefix(prefix).tempfile_in(dir)?;
        list.push((file.path().to_path_buf(), false));
        Ok(TempOutput { file: Some(file) })
    }

    fn inner(&self) -> &tempfile::NamedTempFile {
        self.file.as_ref().expect("present until persist or drop")
    }

    /// The open file.
    #[must_use]
    pub fn as_file(&self) -> &File {
        self.inner().as_file()
    }

    /// The file's current (temporary) path.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.inner().path()
    }

    /// Renames the file over `target` (replacing it) and takes it off the registry.
    ///
    /// # Errors
    /// When the rename fails (the temporary file is then deleted), also because an interrupt
    /// removed the file first.
    pub fn persist(mut self, target: &Path) -> io::Result<()> {
        let file = self.file.take().expect("present until persist or drop");
        let mut list = registry();
        unregister(&mut list, file.path());
        file.persist(target).map(drop).map_err(|e| e.error)
    }
}

impl Write for TempOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.as_file().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.as_file().flush()
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            let mut list = registry();
            unregister(&mut list, file.path());
            drop(file); // deletes it, under the lock
        }
    }
}

/// A temporary directory (mode 0700 on Unix, in the system's temporary directory), removed
/// with its contents when dropped or on interrupt.
#[derive(Debug)]
pub struct TempDir {
    dir: Option<tempfile::TempDir>,
}

impl TempDir {
    /// A new empty directory in [`std::env::temp_dir`].
    ///
    /// # Errors
    /// When it cannot be created.
    pub fn new() -> io::Result<Self> {
        let mut list = registry();
        let dir = tempfile::tempdir()?;
        list.push((dir.path().to_path_buf(), true));
        Ok(TempDir { dir: Some(dir) })
    }

    /// The directory's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("present until drop").path()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let mut list = registry();
            unregister(&mut list, dir.path());
            drop(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(path: &Path) -> bool {
        registry().iter().any(|(p, _)| p == path)
    }

    #[test]
    fn persisted_file_is_in_place_and_off_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        let mut tmp = TempOutput::new_in(dir.path()).unwrap();
        let tmp_path = tmp.path().to_path_buf();
        assert!(registered(&tmp_path));
        tmp.write_all(b"id\nk1\n").unwrap();
        tmp.persist(&target).unwrap();
        assert!(!registered(&tmp_path));
        assert_eq!(std::fs::read(&target).unwrap(), b"id\nk1\n");
        assert!(!tmp_path.exists());
    }

    #[test]
    fn beside_puts_the_file_in_the_targets_directory() {
        assert_eq!(dir_of(Path::new("out.csv")), Path::new("."));
        assert_eq!(dir_of(Path::new("a/b/out.csv")), Path::new("a/b"));
        assert_eq!(dir_of(Path::new("/out.csv")), Path::new("/"));
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        let mut tmp = TempOutput::beside(&target).unwrap();
        assert_eq!(tmp.path().parent(), Some(dir.path()));
        assert!(registered(tmp.path()));
        tmp.write_all(b"id\n").unwrap();
        tmp.persist(&target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"id\n");
    }

    #[test]
    fn dropped_file_is_deleted_and_off_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = TempOutput::with_prefix_in(".tmp-", dir.path()).unwrap();
        let tmp_path = tmp.path().to_path_buf();
        assert!(
            tmp_path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".tmp-")
        );
        drop(tmp);
        assert!(!registered(&tmp_path));
        assert!(!tmp_path.exists());
    }

    #[cfg(unix)]
    #[test]
    fn temp_output_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let tmp = TempOutput::new_in(dir.path()).unwrap();
        let mode = tmp.as_file().metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn psi_temp_files_are_registered_while_they_exist() {
        use obliv_psi::unbalanced::TempEvent;
        let path = Path::new("/nonexistent/.obliv-cache-test");
        psi_temp_hook(path, TempEvent::Created);
        assert!(registered(path));
        psi_temp_hook(path, TempEvent::Gone);
        assert!(!registered(path));
    }

    #[test]
    fn remove_registered_removes_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let mut tmp = TempOutput::new_in(dir.path()).unwrap();
        tmp.write_all(b"partial rows").unwrap();
        let tmp_path = tmp.path().to_path_buf();
        let generated = TempDir::new().unwrap();
        std::fs::write(generated.path().join("p0.csv"), "id\n").unwrap();
        let generated_path = generated.path().to_path_buf();
        // Other tests of this binary hold registered files meanwhile: remove only ours, as
        // `remove_registered` removes all.
        let ours = |p: &Path| p == tmp_path || p == generated_path;
        assert_eq!(remove_picked(&mut registry(), ours), 2);
        assert!(!tmp_path.exists());
        assert!(!generated_path.exists());
        assert!(!registered(&tmp_path) && !registered(&generated_path));
        let err = tmp.persist(&dir.path().join("out.csv")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(!dir.path().join("out.csv").exists());
        drop(generated); // already gone: dropping it is harmless
    }
}
