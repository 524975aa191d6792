#!/usr/bin/env python3
"""Collection at scale (BENCHMARKS.md, "Collection at scale", issue 30).

UNITS units (the API gateway example's contract, safety not required), each with three Prometheus
sources (the replica count, the in-flight signal, the CPU used of one capacity), collected every
INTERVAL by REPLICAS `scale-units serve` processes (with REPLICAS > 1 they share one
`redis-server` and split the units under leases) against Debian's `prometheus` scraping every 5 s
an exporter of every unit's series (this script, a thread). MODE:

- `per-unit`: each source its own instant query (`metric{unit="uN"}`),
- `shared`:   each source a shared query (`max by (unit) (metric)`, the unit's series by label),
- `static`:   every field static (no query): the cost of storing evidence alone,
- `watch`:    contracts and static sources loaded, nothing due after the first round (interval 1
              day): the folder rescans alone.

After one interval of warm-up it measures for SECONDS: each process's CPU time over wall time
(/proc/<pid>/stat), Prometheus's beside it, peak resident memory (VmHWM), and from each
replica's /metrics the rounds, the queries and the units per round, the rounds over their
interval, units skipped while still being collected, observations stored and refused, and the
evidence age at store time (the histogram's buckets: p50/p99 as bucket bounds). Beside it, a
sampler reads `GET /v1/units/bench/uN` of random units (SAMPLES_PER_S, spread over the replicas) and
keeps the age of each observation a decision was made on (the evidence's `age_s`: what the issue's
"evidence age p99" is), and how many of those decisions were `blocked`. With --kill, one
replica is killed with SIGKILL half-way and the script reports how long until the survivors own
every unit and how many intervals until each of its units is stored again.

  python3 benches/collect_scale.py --binary target/release/scale-units --units 10000 --mode shared
"""

import argparse
import http.client
import http.server
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def get(port, path, timeout=60):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request("GET", path)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


def metrics(port):
    try:
        return get(port, "/metrics")[1].decode()
    except OSError:
        return ""


def value(text, name):
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def stored_by_unit(text):
    counts = {}
    for line in text.splitlines():
        if line.startswith('scale_units_evidence_stored_total{unit="') and 'source="signal"' in line:
            counts[line.split('unit="', 1)[1].split('"', 1)[0]] = float(line.rsplit(" ", 1)[1])
    return counts


def refused_by_cause(text):
    causes = {}
    for line in text.splitlines():
        if line.startswith("scale_units_evidence_refused_total{") and 'cause="' in line:
            cause = line.split('cause="', 1)[1].split('"', 1)[0]
            causes[cause] = causes.get(cause, 0) + float(line.rsplit(" ", 1)[1])
    return causes


def age_quantiles(texts):
    buckets = {}
    for text in texts:
        for line in text.splitlines():
            if line.startswith("scale_units_evidence_age_seconds_bucket{"):
                bound = line.split('le="', 1)[1].split('"', 1)[0]
                buckets[bound] = buckets.get(bound, 0) + float(line.rsplit(" ", 1)[1])
    ordered = sorted(buckets.items(), key=lambda item: float("inf") if item[0] == "+Inf" else float(item[0]))
    total = ordered[-1][1] if ordered else 0

    def quantile(q):
        for bound, count in ordered:
            if total and count >= q * total:
                return bound
        return None

    return {"p50_at_most_s": quantile(0.5), "p99_at_most_s": quantile(0.99), "observations": total}


class AgeSampler(threading.Thread):
    """Reads random units' decisions and keeps the age of the evidence each was made on."""

    def __init__(self, ports, units, per_second):
        super().__init__(daemon=True)
        self.ports, self.units, self.pause = list(ports), units, 1.0 / per_second
        self.ages, self.reads, self.blocked, self.missing, self.errors = [], 0, 0, 0, 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            port = random.choice(self.ports)
            try:
                status, body = get(port, f"/v1/units/bench/u{random.randrange(self.units)}", timeout=10)
                answer = json.loads(body) if status == 200 else None
            except (OSError, ValueError):
                answer = None
            if answer is None:
                self.errors += 1
            else:
                self.reads += 1
                self.blocked += answer["decision"]["action"] == "blocked"
                evidence = answer.get("evidence") or {}
                observations = [evidence.get("replicas"), evidence.get("signal"), *(evidence.get("capacities") or [])]
                for observation in observations:
                    if observation is None:
                        self.missing += 1
                    elif "age_s" in observation:
                        self.ages.append(observation["age_s"])
            self.stopping.wait(self.pause)

    def report(self):
        ages = sorted(self.ages)
        pick = lambda q: ages[min(len(ages) - 1, int(q * len(ages)))] if ages else None
        return {"decisions_read": self.reads, "blocked": self.blocked, "missing_observations": self.missing,
                "read_errors": self.errors, "observations": len(ages), "age_p50_s": pick(0.5),
                "age_p99_s": pick(0.99), "age_max_s": ages[-1] if ages else None}


def sources(mode, port, unit):
    local = f'prometheus:\n  local: {{url: "http://127.0.0.1:{port}", timeout_ms: 10000}}\n'
    if mode in ("static", "watch"):
        count, signal_value, used = "{static: 3}", "{static: 300}", "{static: 2400}"
        local = ""
    elif mode == "shared":
        count = f"{{prometheus: {{server: local, query: 'max by (unit) (bench_replicas)', series: {{label: unit, value: {unit}}}}}}}"
        signal_value = f"{{prometheus: {{server: local, query: 'max by (unit) (bench_in_flight)', series: {{label: unit, value: {unit}}}}}}}"
        used = f"{{prometheus: {{server: local, query: 'max by (unit) (bench_cpu_used)', series: {{label: unit, value: {unit}}}}}}}"
    else:
        count = f"{{prometheus: {{server: local, query: 'bench_replicas{{unit=\"{unit}\"}}'}}}}"
        signal_value = f"{{prometheus: {{server: local, query: 'bench_in_flight{{unit=\"{unit}\"}}'}}}}"
        used = f"{{prometheus: {{server: local, query: 'bench_cpu_used{{unit=\"{unit}\"}}'}}}}"
    replicas = "" if mode == "static" else f"replicas:\n  max_age_s: 60\n  count: {count}\n"
    return f"""{local}{replicas}signal:
  signal: in_flight
  max_age_s: 60
  value: {signal_value}
capacities:
  - {{axis: cpu_milli, allocatable: {{static: 16000}}, reserved: {{static: 3000}}, used: {used}, max_age_s: 60}}
  - {{axis: memory_mib, allocatable: {{static: 65536}}, reserved: {{static: 6144}}, used: {{static: 5100}}, max_age_s: 600}}
  - {{axis: session_slots, allocatable: {{static: 4000}}, reserved: {{static: 700}}, used: {{static: 640}}, max_age_s: 600}}
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/release/scale-units")
    parser.add_argument("--units", type=int, default=10000)
    parser.add_argument("--mode", choices=["per-unit", "shared", "static", "watch"], default="shared")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=75)
    parser.add_argument("--interval-ms", type=int, default=15000)
    parser.add_argument("--units-interval-ms", type=int, default=2000)
    parser.add_argument("--kill", action="store_true")
    parser.add_argument("--samples-per-s", type=float, default=5.0)
    args = parser.parse_args()

    root = tempfile.mkdtemp(prefix="scale-units-bench-scale-")
    units_dir = os.path.join(root, "units")
    os.makedirs(units_dir)
    exposition = "".join(
        f'bench_replicas{{unit="u{i}"}} 3\nbench_in_flight{{unit="u{i}"}} 300\nbench_cpu_used{{unit="u{i}"}} 2400\n'
        for i in range(args.units)).encode()

    class Exporter(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.send_header("content-length", str(len(exposition)))
            self.end_headers()
            self.wfile.write(exposition)

        def log_message(self, *_):
            pass

    exporter = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    prometheus_port = free_port()
    with open(os.path.join(root, "prometheus.yml"), "w") as config:
        config.write("global: {scrape_interval: 5s, evaluation_interval: 5s}\nscrape_configs:\n  - job_name: bench\n"
                     f"    static_configs: [{{targets: [\"127.0.0.1:{exporter.server_address[1]}\"]}}]\n")
    prometheus = subprocess.Popen(
        ["prometheus", f"--config.file={root}/prometheus.yml", f"--storage.tsdb.path={root}/data",
         f"--web.listen-address=127.0.0.1:{prometheus_port}", "--query.max-samples=200000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    contract = json.load(open(os.path.join(os.path.dirname(__file__), "../examples/api-gateway/contract.json")))
    contract["safety_required"] = False
    for i in range(args.units):
        contract["unit_ref"] = f"unit:bench/u{i}"
        with open(os.path.join(units_dir, f"bench.u{i}.json"), "w") as file:
            json.dump(contract, file)
        with open(os.path.join(units_dir, f"bench.u{i}.sources.yaml"), "w") as file:
            file.write(sources(args.mode, prometheus_port, f"u{i}"))
    for _ in range(1200):
        try:
            status, body = get(prometheus_port, "/api/v1/query?query=count(bench_in_flight)")
            result = json.loads(body)["data"]["result"] if status == 200 else []
            if result and int(result[0]["value"][1]) == args.units:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)

    redis = None
    extra = []
    if args.replicas > 1:
        redis_port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", root],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        extra = ["--redis", f"redis://127.0.0.1:{redis_port}/"]
    interval_ms = 86_400_000 if args.mode == "watch" else args.interval_ms
    serves, ports = [], []
    for _ in range(args.replicas):
        serve = subprocess.Popen(
            [args.binary, "serve", "--listen", "127.0.0.1:0", "--units", units_dir, "--audit-log", "/dev/null",
             "--collect-interval-ms", str(interval_ms), "--units-interval-ms", str(args.units_interval_ms),
             "--shutdown-delay-ms", "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        serves.append(serve)
    for serve in serves:
        ports.append(int(serve.stdout.readline().strip().rsplit(":", 1)[1]))
    # Warm-up: every unit loaded and a first round done (the first round is over when each
    # replica has reported one: its units, its time).
    time.sleep(args.interval_ms / 1000 + 2)
    deadline = time.time() + 10 * args.interval_ms / 1000
    while time.time() < deadline and not all(value(metrics(port), "scale_units_collect_round_units") > 0
                                             for port in ports):
        time.sleep(1)
    started = time.time()
    cpu_start = [cpu_seconds(serve.pid) for serve in serves]
    prometheus_cpu_start = cpu_seconds(prometheus.pid)
    redis_cpu_start = cpu_seconds(redis.pid) if redis else 0
    before = [metrics(port) for port in ports]
    sampler = AgeSampler(ports[1:] if args.kill and len(ports) > 1 else ports, args.units, args.samples_per_s)
    if args.mode != "watch":
        sampler.start()
    killed = None
    kill_report = None
    while time.time() - started < args.seconds:
        time.sleep(1)
        if args.kill and killed is None and time.time() - started >= args.seconds / 3:
            killed = 0
            orphans = set(stored_by_unit(metrics(ports[0])))
            survivors_before = {}
            for port in ports[1:]:
                for unit, count in stored_by_unit(metrics(port)).items():
                    survivors_before[unit] = survivors_before.get(unit, 0) + count
            serves[0].send_signal(signal.SIGKILL)
            serves[0].wait()
            killed_at = time.time()
            owned_at = collected_at = None
            while time.time() - killed_at < 10 * args.interval_ms / 1000:
                texts = [metrics(port) for port in ports[1:]]
                if owned_at is None and sum(value(text, "scale_units_collect_units") for text in texts) >= args.units:
                    owned_at = time.time() - killed_at
                after = {}
                for text in texts:
                    for unit, count in stored_by_unit(text).items():
                        after[unit] = after.get(unit, 0) + count
                if all(after.get(unit, 0) > survivors_before.get(unit, 0) for unit in orphans):
                    collected_at = time.time() - killed_at
                    break
                time.sleep(0.5)
            kill_report = {"orphaned_units": len(orphans), "survivors_own_all_after_s": owned_at,
                           "orphans_stored_again_after_s": collected_at,
                           "within_two_intervals": collected_at is not None
                           and collected_at <= 2 * args.interval_ms / 1000}
    wall = time.time() - started
    sampler.stopping.set()
    live = [index for index in range(len(serves)) if index != killed]
    cpu = {f"replica{index}": round((cpu_seconds(serves[index].pid) - cpu_start[index]) / wall, 4) for index in live}
    prometheus_cpu = (cpu_seconds(prometheus.pid) - prometheus_cpu_start) / wall
    redis_cpu = (cpu_seconds(redis.pid) - redis_cpu_start) / wall if redis else None
    rss = {f"replica{index}": round(peak_rss_mib(serves[index].pid), 1) for index in live}
    after = [metrics(port) for port in ports]
    per_replica = {}
    for index in live:
        delta = lambda name: value(after[index], name) - value(before[index], name)
        per_replica[f"replica{index}"] = {
            "units_owned": value(after[index], "scale_units_collect_units"),
            "rounds": delta("scale_units_collect_rounds_total"),
            "last_round_s": value(after[index], "scale_units_collect_round_seconds"),
            "last_round_units": value(after[index], "scale_units_collect_round_units"),
            "last_round_queries": value(after[index], "scale_units_collect_round_queries"),
            "overruns": delta("scale_units_collect_round_overruns_total"),
            "behind": delta("scale_units_collect_behind_total"),
            "queries": delta("scale_units_evidence_query_seconds_count"),
            "stored": delta("scale_units_evidence_stored_total"),
            "refused": delta("scale_units_evidence_refused_total"),
            "refused_by_cause": refused_by_cause(after[index]),
            "query_seconds_mean": round(delta("scale_units_evidence_query_seconds_sum")
                                        / max(1.0, delta("scale_units_evidence_query_seconds_count")), 3),
            "lease_changes": value(after[index], "scale_units_collect_lease_changes_total"),
        }
    stopped = {}
    for index in live:
        at = time.time()
        serves[index].terminate()
        serves[index].wait()
        stopped[f"replica{index}"] = round(time.time() - at, 2)
    prometheus.terminate()
    prometheus.wait()
    if redis:
        redis.terminate()
        redis.wait()
    exporter.shutdown()
    shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({
        "units": args.units, "mode": args.mode, "replicas": args.replicas, "interval_ms": interval_ms,
        "seconds": round(wall, 1), "cpu_share_of_one_core": cpu, "prometheus_cpu_share": round(prometheus_cpu, 4),
        "redis_cpu_share": round(redis_cpu, 4) if redis_cpu is not None else None, "peak_rss_mib": rss,
        "evidence_age_at_store": age_quantiles([after[index] for index in live]),
        "evidence_age_at_decision": sampler.report() if args.mode != "watch" else None,
        "per_replica": per_replica, "kill": kill_report, "exit_after_sigterm_s": stopped,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }, indent=2))


if __name__ == "__main__":
    main()
