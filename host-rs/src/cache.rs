//! The precompiled-artifact cache: a compiled component is kept on disk, keyed by the
//! component's digest and the engine's compatibility hash, so that a later load skips Cranelift.
//!
//! A cache file is `MAGIC`, the sha256 of the component, the sha256 of the payload, then the
//! payload (`Component::serialize`). Before the `unsafe` deserialization both hashes are checked
//! again: the artifact belongs to exactly these component bytes and was not truncated or swapped.
//! Those checks catch corruption and mix-ups, not a forger: whoever can write the cache directory
//! can run code in the host, so it is created private (0700), and an entry is used only while
//! it and its directory belong to this process's effective user (`geteuid`) and are writable by
//! no one else. The entry is opened once (`O_NOFOLLOW`), checked on that descriptor and
//! deserialized from the bytes read through it.
//!
//! Without a writable cache directory (a read-only root file system and no volume for the
//! cache) nothing is stored: each start compiles again, and the load says why
//! ([`CacheStatus::NotStored`]).
//!
//! The directory holds at most `PolicyBuilder::cache_max_entries` compilations (32 by default):
//! each store removes the least recently written past it (a compilation is about 1.2 MB; a service
//! staging policy after policy never fills its volume).

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 16] = b"scale-units-aot1";

const HEADER_LEN: usize = MAGIC.len() + 32 + 32;

/// Feeds `Hash` output into sha256, so the engine key is stable across processes (unlike
/// `DefaultHasher`, whose algorithm may change between Rust releases).
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        0 // unused: the full digest is read with `finalize`
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// The cache file for `component_sha` compiled by `engine`.
pub(crate) fn path(dir: &Path, component_sha: &[u8; 32], engine: &Engine) -> PathBuf {
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let engine_key = hex(&hasher.0.finalize());
    let component_key = hex(component_sha);
    dir.join(format!("{component_key}-{}.cwasm", engine_key.get(..16).unwrap_or(&engine_key)))
}

/// Loads the cached compilation of the component whose sha256 is `component_sha`, or `None`
/// when there is none or it fails a check (then the caller compiles again and overwrites it).
///
/// The entry is opened once, without following a symlink and without blocking on a FIFO; its
/// owner, mode and type are read from that open descriptor, and the bytes deserialized are the
/// ones read from it: a file swapped in after the checks is never the one used.
pub(crate) fn load(file: &Path, component_sha: &[u8; 32], engine: &Engine) -> Option<Component> {
    if !file.parent().is_some_and(|dir| fs::metadata(dir).is_ok_and(|meta| private(&meta))) {
        return None;
    }
    let bytes = read_private(file)?;
    let (header, payload) = bytes.split_at_checked(HEADER_LEN)?;
    let (magic, hashes) = header.split_at(MAGIC.len());
    let (recorded_component, recorded_payload) = hashes.split_at(32);
    if magic != MAGIC || recorded_component != component_sha || recorded_payload != Sha256::digest(payload).as_slice() {
        return None;
    }
    // INVARIANT: `payload` is the output of `Component::serialize` for exactly the component
    // whose sha256 is `component_sha` (checked above against the header, and the header's
    // payload hash against the payload), read from a regular file (never through a symlink) that
    // this host's effective user owns and no one else can write, in a directory that only that
    // user can write (both checked above, the file on the descriptor the bytes came from), under
    // a file name that includes this engine's compatibility hash (wasmtime also refuses an
    // artifact from an incompatible engine configuration).
    #[expect(unsafe_code, reason = "deserializing a precompiled component; see the INVARIANT above")]
    let component = unsafe { Component::deserialize(engine, payload) };
    component.ok()
}

/// The bytes of `file` when it is a regular file, not a symlink, owned by this process's
/// effective user and writable by no one else, all read from one open descriptor.
#[cfg(unix)]
fn read_private(file: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut opened =
        fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(file).ok()?;
    let meta = opened.metadata().ok()?;
    if !meta.is_file() || !private(&meta) {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    opened.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(not(unix))]
fn read_private(file: &Path) -> Option<Vec<u8>> {
    fs::read(file).ok()
}

/// What the precompiled cache did when a component was loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheStatus {
    /// No cache directory was configured.
    Disabled,
    /// The compilation was read from the cache.
    Loaded,
    /// The component was compiled and its compilation stored.
    Stored,
    /// The component was compiled but its compilation could not be stored (a full disk, a
    /// read-only directory, …). The component serves all the same; the next load compiles again.
    NotStored {
        /// Why, as the operating system said it.
        reason: String,
    },
}

impl CacheStatus {
    /// One word for logs and the service's JSON: `disabled`, `loaded`, `stored`, `not_stored`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Loaded => "loaded",
            Self::Stored => "stored",
            Self::NotStored { .. } => "not_stored",
        }
    }
}

impl std::fmt::Display for CacheStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotStored { reason } => write!(f, "not stored in the precompiled cache: {reason}"),
            other => f.write_str(other.as_str()),
        }
    }
}

/// Stores a compiled component, then prunes the directory to `keep` compilations. A failure leaves
/// no file behind and is returned for the caller to report; it is not an error of the load (the
/// cache is an optimisation).
pub(crate) fn store(file: &Path, component_sha: &[u8; 32], component: &Component, keep: usize) -> CacheStatus {
    let not_stored = |reason: String| CacheStatus::NotStored { reason };
    let payload = match component.serialize() {
        Ok(payload) => payload,
        Err(error) => return not_stored(format!("cannot serialize the compilation: {error:#}")),
    };
    let Some(dir) = file.parent() else { return not_stored("the cache file has no directory".to_owned()) };
    if let Err(error) = create_private_dir(dir) {
        return not_stored(format!("cannot create {}: {error}", dir.display()));
    }
    // Unique per process and call, so that concurrent stores never write one temporary file.
    static STORES: AtomicU64 = AtomicU64::new(0);
    let call = STORES.fetch_add(1, Ordering::Relaxed);
    let temporary = file.with_extension(format!("tmp-{}-{call}", std::process::id()));
    // A new file (O_EXCL: never through a planted symlink, never over another file), private.
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&temporary).and_then(|mut out| {
        out.write_all(MAGIC)?;
        out.write_all(component_sha)?;
        out.write_all(&Sha256::digest(&payload))?;
        out.write_all(&payload)?;
        out.sync_all()
    });
    // Rename is atomic: a reader sees the old file, the new one, or none, never half of one.
    match written.and_then(|()| fs::rename(&temporary, file)) {
        Ok(()) => {
            prune(dir, file, keep);
            CacheStatus::Stored
        }
        Err(error) => {
            let _ = fs::remove_file(&temporary);
            not_stored(format!("cannot write {}: {error}", file.display()))
        }
    }
}

/// Removes the least recently written compilations (`*.cwasm`) of `dir` past `keep`, never `kept`
/// (the one just stored). A file that cannot be removed stays; the next store tries again.
fn prune(dir: &Path, kept: &Path, keep: usize) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|extension| extension == "cwasm"))
        .filter_map(|entry| {
            let meta = entry.metadata().ok().filter(fs::Metadata::is_file)?;
            Some((meta.modified().ok()?, entry.path()))
        })
        .collect();
    let Some(excess) = files.len().checked_sub(keep).filter(|excess| *excess > 0) else { return };
    files.sort();
    for (_, file) in files.into_iter().filter(|(_, file)| file != kept).take(excess) {
        let _ = fs::remove_file(file);
    }
}

/// Whether only this process's effective user can write what `meta` describes: owned by it and
/// not writable by group or others (Unix). Elsewhere, the directory's access control is the
/// operator's concern.
fn private(meta: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.mode() & 0o022 == 0 && meta.uid() == effective_uid()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        true
    }
}

/// This process's effective user id, from the kernel.
#[cfg(unix)]
#[expect(unsafe_code, reason = "a call to geteuid(2); see the INVARIANT inside")]
fn effective_uid() -> u32 {
    // INVARIANT: geteuid(2) takes no argument, touches no memory and always succeeds.
    unsafe { libc::geteuid() }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    {
        fs::create_dir_all(dir)
    }
}

/// The default cache directory: `$SCALE_UNITS_CACHE_DIR`, else `$XDG_CACHE_HOME/scale-units`,
/// else `$HOME/.cache/scale-units`; `None` when none of them is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    var("SCALE_UNITS_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|dir| dir.join("scale-units")))
        .or_else(|| var("HOME").map(|dir| dir.join(".cache").join("scale-units")))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::prune;

    #[test]
    fn prune_keeps_the_newest_and_the_one_just_stored() {
        let dir = std::env::temp_dir().join(format!("scale-units-prune-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let names: Vec<std::path::PathBuf> = (0..5).map(|index| dir.join(format!("{index}.cwasm"))).collect();
        for (index, name) in names.iter().enumerate() {
            std::fs::write(name, b"x").unwrap_or_default();
            let time = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + index as u64);
            let file = std::fs::File::options().write(true).open(name);
            assert!(file.and_then(|file| file.set_modified(time)).is_ok());
        }
        std::fs::write(dir.join("other.txt"), b"y").unwrap_or_default();
        // The oldest (0) was just stored: it stays, and the next oldest go.
        prune(&dir, &names[0], 2);
        let left: Vec<bool> = names.iter().map(|name| name.exists()).collect();
        assert_eq!(left, [true, false, false, false, true]);
        assert!(dir.join("other.txt").exists(), "only compilations are pruned");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
