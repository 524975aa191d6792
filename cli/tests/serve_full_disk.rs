//! The real `scale-units serve` with its policy store (the precompiled cache) on a full disk: a
//! 64 KiB tmpfs, far smaller than one compiled component, mounted in a user and mount namespace
//! of its own (`unshare -rm`, no privileges needed). The service starts, stages new builds over
//! HTTP and from its watched folder, swaps to them under load and drains on SIGTERM; no answer
//! fails, every stage reports the cache as `not_stored` with the operating system's reason, and
//! no partial file is left on the full disk.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
#[path = "../../host-rs/tests/common/mod.rs"]
mod common;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use binary::Namespaced;
use common::{component_bytes, good_request};
use support::Client;

const TOKEN: &str = "full-disk-token";
const AUTH: (&str, &str) = ("authorization", "Bearer full-disk-token");

/// Mounts the tmpfs on `$1`, runs the service in the background with its cache in `$1/cache`,
/// reports its pid, waits for it, then lists what is left on the tmpfs and how full it is. A
/// staging request compiles a component (a debug build, beside four evaluating threads): the
/// request deadline is lifted so that a loaded machine does not answer 408 instead.
const SCRIPT: &str = r#"
set -u
mount -t tmpfs -o size=64k tmpfs "$1" || exit 90
SCALE_UNITS_CACHE_DIR="$1/cache" "$4" serve --listen 127.0.0.1:0 --token-file "$2" --watch "$3" \
  --watch-interval-ms 100 --shutdown-delay-ms 0 --drain-timeout-ms 10000 --request-timeout-ms 600000 \
  --audit-log /dev/null &
echo "pid $!"
wait $!
echo "exit $?"
echo "files:$(cd "$1" && find . -mindepth 1 -type f | sort | tr '\n' ' ')"
echo "used-kib $(df -k "$1" | awk 'NR == 2 { print $3 }')"
"#;

fn policies(client: &mut Client) -> serde_json::Value {
    let reply = client.get("/v1/policies").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

fn staged_cache(list: &serde_json::Value, digest: &str) -> Option<String> {
    list["staged"].as_array()?.iter().find(|staged| staged["digest"] == digest)?["cache"].as_str().map(str::to_owned)
}

#[test]
fn a_full_policy_store_loses_nothing_and_the_service_keeps_serving_and_swapping() {
    let work = tempfile_dir("scale-units-full-disk");
    let mount = work.join("store");
    let watch = work.join("watch");
    std::fs::create_dir_all(&mount).unwrap();
    std::fs::create_dir_all(&watch).unwrap();
    let token_file = work.join("token");
    std::fs::write(&token_file, TOKEN).unwrap();

    let served = Namespaced::start(SCRIPT, &[mount.as_os_str(), token_file.as_os_str(), watch.as_os_str()], &[]);
    let (pid, address) = (served.pid, served.http);

    let mut admin = Client::new(address).retrying_stale_connections();
    let list = policies(&mut admin);
    let a = list["active"]["digest"].as_str().unwrap().to_owned();
    assert_eq!(staged_cache(&list, &a).as_deref(), Some("not_stored"), "{list}");

    // Clients evaluate throughout; every answer must be a 200 from one of the three builds.
    let done = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut client = Client::new(address);
                let (mut answers, mut digests) = (0usize, BTreeSet::new());
                while !done.load(Ordering::SeqCst) {
                    let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).expect("answered");
                    assert_eq!(reply.status, 200, "{}", reply.body);
                    digests.insert(reply.json()["policy"]["digest"].as_str().unwrap().to_owned());
                    answers += 1;
                }
                (answers, digests)
            })
        })
        .collect();

    // A new build over HTTP: compiled, not stored (the disk is full), staged and activated.
    let b_bytes = common::variant_build(component_bytes(), "full-disk-b");
    let reply = admin.post("/v1/policies", &[AUTH], &b_bytes).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.body);
    let staged = reply.json();
    assert_eq!(staged["cache"], "not_stored", "{staged}");
    let b = staged["digest"].as_str().unwrap().to_owned();
    let reply = admin.post(&format!("/v1/policies/{b}/activate"), &[AUTH], b"").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);

    // Another from the watched folder (on an ordinary disk), then activated too.
    let c_bytes = common::variant_build(component_bytes(), "full-disk-c");
    std::fs::write(watch.join("c.tmp"), &c_bytes).unwrap();
    std::fs::rename(watch.join("c.tmp"), watch.join("c.wasm")).unwrap();
    let c = format!("sha256:{}", sha256_hex(&c_bytes));
    let waited = Instant::now();
    loop {
        if let Some(cache) = staged_cache(&policies(&mut admin), &c) {
            assert_eq!(cache, "not_stored");
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(60), "the watched build was never staged");
        std::thread::sleep(Duration::from_millis(50));
    }
    let reply = admin.post(&format!("/v1/policies/{c}/activate"), &[AUTH], b"").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = Client::new(address).post("/v1/evaluate", &[], good_request().as_bytes()).unwrap();
    assert_eq!(reply.json()["policy"]["digest"], c.as_str(), "the last activation serves");

    done.store(true, Ordering::SeqCst);
    let mut answers = 0;
    let mut digests = BTreeSet::new();
    for client in clients {
        let (count, seen) = client.join().unwrap();
        answers += count;
        digests.extend(seen);
    }
    assert!(answers > 0);
    assert!(digests.is_subset(&BTreeSet::from([a.clone(), b.clone(), c.clone()])), "{digests:?}");

    let status = Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    let exit = served.next_line();
    let files = served.next_line();
    let used = served.next_line();
    let stderr = served.finish();
    assert_eq!(exit, "exit 0", "the service drained and stopped cleanly:\n{stderr}");
    // Nothing half-written is left behind: each failed store removed its temporary file.
    assert_eq!(files.trim_end(), "files:", "{stderr}");
    let used: u64 = used.strip_prefix("used-kib ").unwrap().parse().unwrap();
    assert!(used < 8, "{used} KiB still used on the store\n{stderr}");
    // The operator is told, for every build, why its compilation was not kept.
    let full = stderr.matches("No space left on device").count();
    assert!(full >= 3, "start, HTTP stage and watched stage each report the full disk:\n{stderr}");
    assert!(stderr.contains(&format!("staged {b} over HTTP, cannot write")), "{stderr}");
    eprintln!("{answers} answers from {} builds while the store was full\n{stderr}", digests.len());
    let _ = std::fs::remove_dir_all(&work);
}

fn tempfile_dir(prefix: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}
