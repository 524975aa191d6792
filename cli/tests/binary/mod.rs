//! Shared by the binary's tests: `scale-units serve` started as a child process and read for the
//! addresses it listens on, and the `redis-server` some of them serve from.
#![allow(dead_code, reason = "each test binary uses a different part")]
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test code: a failed expectation is a test failure"
)]

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `scale-units serve`, to be started: no shutdown delay, the audit log to `/dev/null`, the shared
/// test cache, no token from the test's own environment.
pub struct Serve {
    command: Command,
    keda: bool,
    envoy: bool,
    owned: Option<PathBuf>,
}

impl Serve {
    /// `scale-units serve ARGS` (ARGS must not repeat `--shutdown-delay-ms` or `--audit-log`).
    pub fn new<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Self {
        Self::audited(Path::new("/dev/null"), args)
    }

    /// `scale-units serve ARGS` with its audit log in `audit`.
    pub fn audited<S: AsRef<OsStr>>(audit: &Path, args: impl IntoIterator<Item = S>) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_scale-units"));
        command
            .args(["serve", "--shutdown-delay-ms", "0", "--audit-log"])
            .arg(audit)
            .args(args)
            .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
            .env_remove("SCALE_UNITS_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        Self { command, keda: false, envoy: false, owned: None }
    }

    /// `scale-units serve ARGS` as [`Self::new`], but its decision audit log on stdout (unless
    /// ARGS give `--audit-log`), left unread in [`Served::stdout`].
    pub fn audit_on_stdout<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_scale-units"));
        command
            .args(["serve", "--shutdown-delay-ms", "0"])
            .args(args)
            .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
            .env_remove("SCALE_UNITS_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        Self { command, keda: false, envoy: false, owned: None }
    }

    /// One more argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.command.arg(arg);
        self
    }

    /// More arguments.
    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.command.args(args);
        self
    }

    /// An environment variable of the child.
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.command.env(name, value);
        self
    }

    /// The arguments include `--keda-listen`: its address is read first.
    pub fn keda(mut self) -> Self {
        self.keda = true;
        self
    }

    /// The arguments include `--envoy-listen`: its address is read after KEDA's.
    pub fn envoy(mut self) -> Self {
        self.envoy = true;
        self
    }

    /// Removes `dir` when the service is dropped.
    pub fn owning(mut self, dir: &Path) -> Self {
        self.owned = Some(dir.to_owned());
        self
    }

    /// The child's standard error goes to `file`.
    pub fn stderr_to(mut self, file: &Path) -> Self {
        self.command.stderr(std::fs::File::create(file).unwrap());
        self
    }

    /// The child's standard error goes nowhere.
    pub fn quiet(mut self) -> Self {
        self.command.stderr(Stdio::null());
        self
    }

    /// Starts it and waits for `keda external scaler listening on` (with [`Self::keda`]) and
    /// `listening on`; the addresses are on loopback whatever the listener's.
    pub fn start(mut self) -> Served {
        let mut child = self.command.spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = |prefix: &str| {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            let address: SocketAddr =
                line.trim().strip_prefix(prefix).unwrap_or_else(|| panic!("{prefix}: {line:?}")).parse().unwrap();
            SocketAddr::from(([127, 0, 0, 1], address.port()))
        };
        let keda = self.keda.then(|| line("keda external scaler listening on "));
        let envoy = self.envoy.then(|| line("envoy ext_authz listening on "));
        let http = line("listening on ");
        Served { child, http, keda, envoy, owned: self.owned, stdout }
    }
}

/// The binary, serving; killed (and its folder removed, when it owns one) on drop.
pub struct Served {
    child: Child,
    /// The HTTP listener, on loopback.
    pub http: SocketAddr,
    /// The KEDA listener, when started with one.
    pub keda: Option<SocketAddr>,
    /// The Envoy ext_authz listener, when started with one.
    pub envoy: Option<SocketAddr>,
    owned: Option<PathBuf>,
    /// The rest of the child's stdout (kept open, read by nobody unless the test does).
    pub stdout: BufReader<ChildStdout>,
}

impl Served {
    /// The KEDA listener's address (started with [`Serve::keda`]).
    pub fn keda(&self) -> SocketAddr {
        self.keda.expect("started without --keda-listen")
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `SIGTERM`, then a clean exit.
    pub fn stop(mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "{exit:?}");
    }

    /// `SIGTERM`, then its exit status and how long it took, or `None` when it was still running
    /// after `limit` (it is then killed).
    pub fn terminate_within(mut self, limit: Duration) -> Option<(ExitStatus, Duration)> {
        let signalled = Instant::now();
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        while signalled.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some((status, signalled.elapsed()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// `kill -9`: no shutdown, no flush.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.owned {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The binary started by `script` (sh) in a user and mount namespace of its own (`unshare -rm`, to
/// mount a small tmpfs): `sh -c SCRIPT sh ARGS… BINARY`. The script prints `pid N` and lets the
/// service's `listening on` through (and `envoy ext_authz listening on`, when it gives
/// `--envoy-listen`; exit 90 when it cannot mount); its other lines are read with
/// [`Self::next_line`].
pub struct Namespaced {
    child: Child,
    stderr: JoinHandle<String>,
    lines: Receiver<String>,
    /// The service's process id (in the host's namespace).
    pub pid: u32,
    /// The service's HTTP listener.
    pub http: SocketAddr,
    /// The service's Envoy ext_authz listener, when the script starts it with `--envoy-listen`.
    pub envoy: Option<SocketAddr>,
}

impl Namespaced {
    /// Starts it with `args` before the binary's path and `env` for the script.
    pub fn start(script: &str, args: &[&OsStr], env: &[(&str, &OsStr)]) -> Self {
        let mut command = Command::new("unshare");
        command.args(["-rm", "sh", "-c", script, "sh"]).args(args).arg(env!("CARGO_BIN_EXE_scale-units"));
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("`unshare` (util-linux) runs the service in a mount namespace of its own");
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            stderr.read_to_string(&mut text).unwrap();
            text
        });
        let (sender, lines) = mpsc::channel();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            let mut line = String::new();
            while out.read_line(&mut line).is_ok_and(|read| read > 0) {
                if sender.send(line.trim().to_owned()).is_err() {
                    break;
                }
                line.clear();
            }
        });
        let mut served =
            Self { child, stderr, lines, pid: 0, http: SocketAddr::from(([127, 0, 0, 1], 0)), envoy: None };
        let (mut pid, mut http) = (None, None);
        while pid.is_none() || http.is_none() {
            let line = served.next_line();
            if let Some(rest) = line.strip_prefix("pid ") {
                pid = Some(rest.parse::<u32>().unwrap());
            } else if let Some(rest) = line.strip_prefix("envoy ext_authz listening on ") {
                served.envoy = Some(rest.parse::<SocketAddr>().unwrap());
            } else if let Some(rest) = line.strip_prefix("listening on ") {
                http = Some(rest.parse::<SocketAddr>().unwrap());
            } else {
                panic!("unexpected output {line:?} (90: the tmpfs could not be mounted)");
            }
        }
        (served.pid, served.http) = (pid.unwrap(), http.unwrap());
        served
    }

    /// The script's next line of output (the service's after start); fails after 120 s of silence.
    pub fn next_line(&self) -> String {
        self.lines.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| {
            let _ = Command::new("kill").arg(self.child.id().to_string()).status();
            panic!("the service said nothing for 120 s")
        })
    }

    /// Waits for the script's clean exit: the service's standard error.
    pub fn finish(mut self) -> String {
        assert!(self.child.wait().unwrap().success());
        self.stderr.join().unwrap()
    }
}

/// A `redis-server` without persistence on a loopback port below the ephemeral range (a
/// reconnecting client cannot hold it while Redis restarts); killed on drop.
pub struct Redis {
    /// Its port (plain, or TLS only when started with TLS options).
    pub port: u16,
    dir: PathBuf,
    tls: Option<Vec<String>>,
    child: Option<Child>,
}

impl Redis {
    /// Plain, with its working folder `dir`.
    pub fn start(dir: &Path) -> Self {
        Self::start_with(dir, None)
    }

    /// With `tls` (redis-server's TLS options) on a TLS port and no plain one.
    pub fn start_tls(dir: &Path, tls: &[String]) -> Self {
        Self::start_with(dir, Some(tls.to_vec()))
    }

    fn start_with(dir: &Path, tls: Option<Vec<String>>) -> Self {
        // Each pick of this process a port of its own (tests run on threads), free when picked.
        static PICKED: AtomicU32 = AtomicU32::new(0);
        let port = loop {
            let pick = PICKED.fetch_add(1, Ordering::Relaxed);
            assert!(pick < 4000, "no free port for redis-server");
            let port = 20_000 + u16::try_from((std::process::id().wrapping_mul(37).wrapping_add(pick)) % 8000).unwrap();
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                break port;
            }
        };
        let mut redis = Self { port, dir: dir.to_owned(), tls, child: None };
        redis.restart();
        redis
    }

    /// Starts it again on its port (after [`Self::stop`]): empty, as it keeps nothing.
    pub fn restart(&mut self) {
        self.stop();
        let mut command = Command::new("redis-server");
        match &self.tls {
            None => command.args(["--port", &self.port.to_string()]),
            Some(tls) => command.args(["--port", "0", "--tls-port", &self.port.to_string()]).args(tls),
        };
        let child = command
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server; .ci/run does)");
        self.child = Some(child);
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "redis-server did not start");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Kills it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `redis-cli ARGS` against it (plain only): its output.
    pub fn cli(&self, args: &[&str]) -> String {
        let output =
            Command::new("redis-cli").args(["-p", &self.port.to_string(), "--raw"]).args(args).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    }

    /// One command in RESP over a socket (plain only): the reply's first line.
    pub fn command(&self, args: &[&str]) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        stream.write_all(request.as_bytes()).unwrap();
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).unwrap();
        line.trim().to_owned()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
