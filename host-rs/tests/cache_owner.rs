//! The precompiled cache's owner check, attacked (issue 19, item 2): an entry reached through a
//! symlink, a FIFO at the entry's path, an entry another user owns, and a process whose temp
//! folder cannot be written. Whatever is planted at the entry's path, the load compiles the
//! component again instead of deserializing what it found.
#![cfg(unix)]
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use common::{component_bytes, good_request};
use scale_units_host::{CacheStatus, Policy};

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scale-units-cache-owner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Loads the built component with `dir` as its cache; the load's cache status.
fn load(dir: &Path) -> CacheStatus {
    let policy = Policy::builder().cache_dir(dir).load(component_bytes()).expect("loads");
    policy.evaluate_json(&good_request()).expect("no host error").expect("a decision");
    policy.cache_status().clone()
}

/// The one cache entry of `dir`.
fn entry(dir: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "cwasm"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

#[test]
fn a_symlink_at_the_entry_path_is_never_followed() {
    let dir = fresh_dir("symlink");
    assert_eq!(load(&dir), CacheStatus::Stored);
    assert_eq!(load(&dir), CacheStatus::Loaded, "a genuine entry is used");
    let entry = entry(&dir);
    // The genuine artifact moved aside (still ours, still valid), and a symlink to it planted at
    // the entry's path: following it would deserialize whatever the link points to.
    let aside = dir.join("aside.bin");
    std::fs::rename(&entry, &aside).unwrap();
    std::os::unix::fs::symlink(&aside, &entry).unwrap();
    assert_eq!(load(&dir), CacheStatus::Stored, "compiled again, the link not followed");
    let meta = std::fs::symlink_metadata(&entry).unwrap();
    assert!(meta.file_type().is_file(), "the link was replaced by a regular entry: {meta:?}");
    assert_eq!(load(&dir), CacheStatus::Loaded);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fifo_at_the_entry_path_does_not_stall_the_load() {
    let dir = fresh_dir("fifo");
    assert_eq!(load(&dir), CacheStatus::Stored);
    let entry = entry(&dir);
    std::fs::remove_file(&entry).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&entry).status().unwrap();
    assert!(made.success());
    // Opened for reading without a writer, a FIFO blocks forever; the load opens without
    // blocking and refuses what is not a regular file.
    assert_eq!(load(&dir), CacheStatus::Stored);
    assert!(std::fs::symlink_metadata(&entry).unwrap().file_type().is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_entry_another_user_owns_or_may_write_is_never_deserialized() {
    let dir = fresh_dir("owner");
    assert_eq!(load(&dir), CacheStatus::Stored);
    let entry = entry(&dir);
    // Writable by group and others: refused although its bytes are genuine.
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(load(&dir), CacheStatus::Stored);
    assert_eq!(load(&dir), CacheStatus::Loaded);
    // Owned by another user (only root can plant that here): refused.
    if std::fs::metadata(&dir).unwrap().uid() == 0 {
        let entry = self::entry(&dir);
        let chown = std::process::Command::new("chown").arg("65534").arg(&entry).status().unwrap();
        assert!(chown.success());
        assert_eq!(std::fs::metadata(&entry).unwrap().uid(), 65534);
        assert_eq!(load(&dir), CacheStatus::Stored, "another user's entry is compiled over");
        assert_eq!(std::fs::metadata(&entry).unwrap().uid(), 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child of [`the_cache_works_without_a_writable_temp_folder`]: run with `TMPDIR` unusable.
#[test]
#[ignore = "run by the_cache_works_without_a_writable_temp_folder, in a child process"]
fn child_loads_twice_from_the_cache() {
    let dir = PathBuf::from(std::env::var_os("SCALE_UNITS_CACHE_OWNER_DIR").expect("run by its parent"));
    assert_eq!(load(&dir), CacheStatus::Stored);
    assert_eq!(load(&dir), CacheStatus::Loaded);
}

#[test]
fn the_cache_works_without_a_writable_temp_folder() {
    // The user's id once came from a file created in the temp folder: with none writable (a
    // read-only root), no entry was ever trusted and every start compiled again. It comes from
    // the kernel now.
    let dir = fresh_dir("no-tmp");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_loads_twice_from_the_cache", "--ignored", "--nocapture"])
        .env("TMPDIR", "/nonexistent/scale-units-no-tmp")
        .env("SCALE_UNITS_CACHE_OWNER_DIR", &dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    assert!(child.status.success(), "{out}\n{}", String::from_utf8_lossy(&child.stderr));
    assert!(out.contains("1 passed"), "the child test ran: {out}");
    let _ = std::fs::remove_dir_all(&dir);
}
