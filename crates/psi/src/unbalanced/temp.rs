//! The named temporary files of the key and cache writers, and the hook through which a
//! program learns of them.
//!
//! [`ServerKey::save`](super::ServerKey) and the cache writer of the offline phase and of
//! appends write a complete file under a temporary name beside the target, then rename it
//! over the target. Dropped on an error, the temporary file is deleted; but a process stopped
//! by a signal runs no destructor, and would leave it behind: a cache's partial body (which
//! may take gigabytes), or a copy of a key (mode 0600, like the key file). A program that
//! removes its unfinished files on an interrupt (the `obliv` command line does) installs a
//! [`TempHook`] with [`set_temp_hook`]; every such file is then announced to it when created
//! and again once renamed into place or deleted.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What happened to a temporary file (see [`TempHook`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TempEvent {
    /// The file was created (empty) at the path; it is unfinished until [`TempEvent::Gone`].
    Created,
    /// The file is no longer at the path: renamed over its target, or deleted.
    Gone,
}

/// Told of every temporary file of this module's writers: `Created` right after it is made,
/// `Gone` right after it is renamed into place or deleted. A path announced `Created` and not
/// yet `Gone` is an unfinished file that may be removed when the process is interrupted.
///
/// The hook runs on the writer's thread; it should only record the path (take a lock, push,
/// return), not block.
pub type TempHook = fn(&Path, TempEvent);

static HOOK: OnceLock<TempHook> = OnceLock::new();

/// Installs `hook` for the life of the process.
///
/// # Errors
/// When a hook is installed already (the one installed first stays).
pub fn set_temp_hook(hook: TempHook) -> Result<(), TempHook> {
    HOOK.set(hook)
}

fn announce(path: &Path, event: TempEvent) {
    if let Some(hook) = HOOK.get() {
        hook(path, event);
    }
}

/// A named temporary file announced to the [`TempHook`]: created in `dir` with `prefix`,
/// then either [`Announced::persist`]ed over a target or deleted on drop.
pub(crate) struct Announced {
    file: Option<tempfile::NamedTempFile>,
    path: PathBuf,
}

impl Announced {
    /// A new empty file in `dir`, named `prefix` and random characters.
    pub(crate) fn new_in(dir: &Path, prefix: &str) -> io::Result<Self> {
        let file = tempfile::Builder::new().prefix(prefix).tempfile_in(dir)?;
        let path = file.path().to_path_buf();
        announce(&path, TempEvent::Created);
        Ok(Self {
            file: Some(file),
            path,
        })
    }

    /// The open file.
    pub(crate) fn as_file(&self) -> &std::fs::File {
        self.file
            .as_ref()
            .expect("present until persist or drop")
            .as_file()
    }

    /// Renames the file over `target` (atomically on one file system). On failure the
    /// temporary file is deleted.
    pub(crate) fn persist(mut self, target: &Path) -> io::Result<()> {
        let file = self.file.take().expect("present until persist or drop");
        // On failure the `NamedTempFile` inside the error deletes the file as it drops.
        let result = file.persist(target).map(drop).map_err(|e| e.error);
        announce(&self.path, TempEvent::Gone);
        result
    }
}

impl Drop for Announced {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            drop(file);
            announce(&self.path, TempEvent::Gone);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<(PathBuf, TempEvent)>> = Mutex::new(Vec::new());

    fn record(path: &Path, event: TempEvent) {
        SEEN.lock().unwrap().push((path.to_path_buf(), event));
    }

    fn events_for(path: &Path) -> Vec<TempEvent> {
        SEEN.lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, e)| *e)
            .collect()
    }

    #[test]
    fn every_temporary_file_is_announced_created_then_gone() {
        // Other tests of the crate may write keys and caches meanwhile: only this test's
        // paths are looked at.
        assert!(
            set_temp_hook(record).is_ok(),
            "no other test installs a hook"
        );
        let dir = tempfile::tempdir().unwrap();

        let kept = Announced::new_in(dir.path(), ".t-").unwrap();
        let kept_path = kept.path.clone();
        assert!(kept_path.exists());
        assert_eq!(events_for(&kept_path), [TempEvent::Created]);
        let target = dir.path().join("out");
        kept.persist(&target).unwrap();
        assert!(target.exists() && !kept_path.exists());
        assert_eq!(
            events_for(&kept_path),
            [TempEvent::Created, TempEvent::Gone]
        );

        let dropped = Announced::new_in(dir.path(), ".t-").unwrap();
        let dropped_path = dropped.path.clone();
        drop(dropped);
        assert!(!dropped_path.exists());
        assert_eq!(
            events_for(&dropped_path),
            [TempEvent::Created, TempEvent::Gone]
        );

        // A failed rename (into a missing directory) deletes the file and says so too.
        let failed = Announced::new_in(dir.path(), ".t-").unwrap();
        let failed_path = failed.path.clone();
        assert!(failed.persist(&dir.path().join("missing/out")).is_err());
        assert!(!failed_path.exists());
        assert_eq!(
            events_for(&failed_path),
            [TempEvent::Created, TempEvent::Gone]
        );
    }
}
