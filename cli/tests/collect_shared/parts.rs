//! The real parts of the shared-collection tests: an exporter this test serves from a thread
//! (text it controls) and Debian's `prometheus` scraping it every second.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::Client;

/// Polls `check` until it returns `Some`, at most `limit` (a bound on waiting, not an assertion
/// on time).
pub fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(start.elapsed() < limit, "gave up waiting for: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scale-units-shared-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A `/metrics` endpoint serving the text this test sets.
pub struct Exporter {
    pub port: u16,
    text: Arc<Mutex<String>>,
}

impl Exporter {
    pub fn start(text: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let text = Arc::new(Mutex::new(text.to_owned()));
        let serving = Arc::clone(&text);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|read| read > 0) && line != "\r\n" {
                    line.clear();
                }
                let body = serving.lock().unwrap().clone();
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Self { port, text }
    }

    pub fn set(&self, text: &str) {
        text.clone_into(&mut self.text.lock().unwrap());
    }
}

/// Debian's `prometheus` on a loopback port, scraping the exporter every second; killed on drop.
pub struct Prometheus {
    pub port: u16,
    child: Child,
    dir: PathBuf,
}

impl Prometheus {
    pub fn start(dir: &Path, exporter: u16) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n  - job_name: app\n    static_configs: [{{targets: [\"127.0.0.1:{exporter}\"]}}]\n"
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("prometheus cannot be started ({error}): apt-get install prometheus (.ci/run does)")
            });
        let prometheus = Self { port, child, dir: dir.to_owned() };
        wait_for("prometheus ready", Duration::from_secs(60), || {
            let reply = Client::new(SocketAddr::from(([127, 0, 0, 1], port))).get("/-/ready").ok()?;
            (reply.status == 200).then_some(())
        });
        prometheus
    }

    /// How many series `query` answers now.
    pub fn series(&self, query: &str) -> usize {
        // HTTP/1.0: the answer is not chunked, read to the end.
        use std::io::Read as _;
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else { return 0 };
        let request = format!("GET /api/v1/query?query={} HTTP/1.0\r\nhost: localhost\r\n\r\n", encode(query));
        let mut text = String::new();
        if stream.write_all(request.as_bytes()).is_err() || stream.read_to_string(&mut text).is_err() {
            return 0;
        }
        let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        let value: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        value["data"]["result"].as_array().map_or(0, Vec::len)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(self.dir.join("data"));
    }
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

/// The api-gateway example's contract for `shop/<name>`, safety not required (these units have
/// no alerts): its decisions need a replica count, the in-flight signal and three capacities.
pub fn contract(name: &str) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/api-gateway/contract.json"))
            .unwrap();
    let mut contract: serde_json::Value = serde_json::from_str(&text).unwrap();
    contract["unit_ref"] = serde_json::json!(format!("unit:shop/{name}"));
    contract["safety_required"] = serde_json::json!(false);
    contract.to_string()
}

/// The unit's sources: its replica count and in-flight signal from two shared queries.
pub fn shared_sources(prometheus: u16, name: &str, interval_s: Option<u64>) -> String {
    let interval = interval_s.map(|seconds| format!("interval_s: {seconds}\n")).unwrap_or_default();
    format!(
        r#"{interval}prometheus:
  local: {{url: "http://127.0.0.1:{prometheus}", timeout_ms: 5000}}
replicas:
  max_age_s: 20
  count: {{prometheus: {{server: local, query: 'max by (deployment) (kube_deployment_status_replicas{{namespace="shop"}})', series: {{label: deployment, value: {name}}}}}}}
signal:
  signal: in_flight
  max_age_s: 20
  value: {{prometheus: {{server: local, query: 'max by (unit, pod) (demo_in_flight)', series: {{label: unit, value: {name}}}}}}}
capacities:
  - {{axis: cpu_milli, allocatable: {{static: 16000}}, reserved: {{static: 3000}}, used: {{static: 2400}}, max_age_s: 600}}
  - {{axis: memory_mib, allocatable: {{static: 65536}}, reserved: {{static: 6144}}, used: {{static: 5100}}, max_age_s: 600}}
  - {{axis: session_slots, allocatable: {{static: 4000}}, reserved: {{static: 700}}, used: {{static: 640}}, max_age_s: 600}}
"#
    )
}

/// One series per unit of each metric; `missing` has no in-flight series, `doubled` two (two pods).
pub fn exposition(names: &[String], missing: Option<&str>, doubled: Option<&str>) -> String {
    let mut text = String::from("# TYPE kube_deployment_status_replicas gauge\n");
    for name in names {
        text.push_str(&format!("kube_deployment_status_replicas{{namespace=\"shop\",deployment=\"{name}\"}} 3\n"));
    }
    text.push_str("# TYPE demo_in_flight gauge\n");
    for name in names {
        if Some(name.as_str()) == missing {
            continue;
        }
        text.push_str(&format!("demo_in_flight{{unit=\"{name}\",pod=\"a\"}} 150\n"));
        if Some(name.as_str()) == doubled {
            text.push_str(&format!("demo_in_flight{{unit=\"{name}\",pod=\"b\"}} 150\n"));
        }
    }
    text
}

/// A counter or gauge of a `/metrics` text, by its exact name and labels (`name{…}`).
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}
