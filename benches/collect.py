#!/usr/bin/env python3
"""The evidence collectors under load (BENCHMARKS.md, "Evidence collectors").

Starts an exporter of every unit's series (this script, a thread), Debian's `prometheus` scraping
it, and `scale-units serve --units DIR` over UNITS units (the API gateway example's contract),
each with three Prometheus sources (replica count, in-flight signal, firing alerts) and static
capacities, collected every INTERVAL. For SECONDS it samples the service's CPU time
(/proc/<pid>/stat), reads `GET /v1/units/bench/u<i>` (the signal's `age_s`: evidence age at
decision time) and sends admission reviews (each evaluated), then prints one JSON object: CPU
share of one core, the collector's query latency (the service's own
`scale_units_evidence_query_seconds`), stored and refused observations, evidence age, GET and
admission latencies. With `grpcio` and `grpcio-tools` importable (`make bench-collect` installs
them in `target/bench-venv`), it also calls the KEDA scaler's `GetMetrics` in the same loop,
over stubs compiled from `server/proto/externalscaler.proto` at start.

  python3 benches/collect.py --binary target/release/scale-units --units 200 --seconds 60
"""

import argparse
import http.client
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
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


def get(port, path, method="GET", body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.perf_counter()
    connection.request(method, path, body=body, headers={"content-type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    elapsed = time.perf_counter() - started
    connection.close()
    return response.status, data, elapsed


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def keda_client(root):
    """A `GetMetrics` caller over stubs compiled from the scaler's proto, or None without grpcio."""
    try:
        import grpc
        from grpc_tools import protoc
    except ImportError:
        return None
    proto_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../server/proto")
    if protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={root}", f"--grpc_python_out={root}",
                    os.path.join(proto_dir, "externalscaler.proto")]) != 0:
        raise SystemExit("cannot compile server/proto/externalscaler.proto")
    sys.path.insert(0, root)
    import externalscaler_pb2 as messages
    import externalscaler_pb2_grpc as services

    def connect(address):
        stub = services.ExternalScalerStub(grpc.insecure_channel(address))

        def get_metrics(unit):
            request = messages.GetMetricsRequest(
                scaledObjectRef=messages.ScaledObjectRef(name=unit, namespace="bench"),
                metricName="scale-units-replicas")
            started = time.perf_counter()
            try:
                stub.GetMetrics(request, timeout=30)
                ok = True
            except grpc.RpcError:
                ok = False
            return ok, time.perf_counter() - started

        return get_metrics

    return connect


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/release/scale-units")
    parser.add_argument("--units", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--interval-ms", type=int, default=15000)
    args = parser.parse_args()

    root = tempfile.mkdtemp(prefix="scale-units-bench-collect-")
    units_dir = os.path.join(root, "units")
    os.makedirs(units_dir)
    exposition = "".join(
        f'kube_deployment_status_replicas{{namespace="bench",deployment="u{i}"}} 3\n'
        f'app_in_flight{{unit="u{i}"}} 300\n'
        for i in range(args.units)
    ).encode()

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
    with open(os.path.join(root, "rules.yml"), "w") as rules:
        rules.write("groups:\n  - name: bench\n    rules:\n      - alert: BenchOverloaded\n        expr: vector(0) > 1\n")
    with open(os.path.join(root, "prometheus.yml"), "w") as config:
        config.write(
            "global: {scrape_interval: 5s, evaluation_interval: 5s}\n"
            f"rule_files: [\"{os.path.join(root, 'rules.yml')}\"]\n"
            "scrape_configs:\n  - job_name: bench\n"
            f"    static_configs: [{{targets: [\"127.0.0.1:{exporter.server_address[1]}\"]}}]\n"
        )
    prometheus = subprocess.Popen(
        ["prometheus", f"--config.file={root}/prometheus.yml", f"--storage.tsdb.path={root}/data",
         f"--web.listen-address=127.0.0.1:{prometheus_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    contract = json.load(open(os.path.join(os.path.dirname(__file__), "../examples/api-gateway/contract.json")))
    for i in range(args.units):
        contract["unit_ref"] = f"unit:bench/u{i}"
        with open(os.path.join(units_dir, f"bench.u{i}.json"), "w") as file:
            json.dump(contract, file)
        with open(os.path.join(units_dir, f"bench.u{i}.sources.yaml"), "w") as file:
            file.write(f"""prometheus:
  local: {{url: "http://127.0.0.1:{prometheus_port}", timeout_ms: 5000}}
replicas:
  max_age_s: 60
  count: {{prometheus: {{server: local, query: 'kube_deployment_status_replicas{{namespace="bench",deployment="u{i}"}}'}}}}
signal:
  signal: in_flight
  max_age_s: 60
  value: {{prometheus: {{server: local, query: 'app_in_flight{{unit="u{i}"}}'}}}}
capacities:
  - {{axis: cpu_milli, allocatable: {{static: 16000}}, reserved: {{static: 3000}}, used: {{static: 2400}}, max_age_s: 600}}
  - {{axis: memory_mib, allocatable: {{static: 65536}}, reserved: {{static: 6144}}, used: {{static: 5100}}, max_age_s: 600}}
  - {{axis: session_slots, allocatable: {{static: 4000}}, reserved: {{static: 700}}, used: {{static: 640}}, max_age_s: 600}}
safety: {{server: local, overloaded: [BenchOverloaded], max_age_s: 60}}
""")
    for _ in range(600):
        try:
            if get(prometheus_port, "/-/ready")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.1)
    # Until Prometheus has scraped every unit's series (a first round before that is refused).
    for _ in range(600):
        try:
            status, body, _ = get(prometheus_port, "/api/v1/query?query=count(app_in_flight)")
            result = json.loads(body)["data"]["result"] if status == 200 else []
            if result and int(result[0]["value"][1]) == args.units:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)

    connect = keda_client(root)
    keda = ["--keda-listen", "127.0.0.1:0"] if connect else []
    serve = subprocess.Popen(
        [args.binary, "serve", "--listen", "127.0.0.1:0", "--units", units_dir, "--audit-log", "/dev/null",
         "--collect-interval-ms", str(args.interval_ms), "--shutdown-delay-ms", "0", *keda],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    get_metrics = connect(serve.stdout.readline().strip().rsplit(" ", 1)[1]) if connect else None
    port = int(serve.stdout.readline().strip().rsplit(":", 1)[1])
    load_before = os.getloadavg()
    started, cpu_start = time.time(), cpu_seconds(serve.pid)
    ages, gets, admissions, metrics_calls, metrics_failed, i = [], [], [], [], 0, 0
    review = lambda unit: json.dumps({
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {"uid": "00000000-0000-4000-8000-000000000000",
                    "kind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                    "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
                    "subResource": "scale", "name": unit, "namespace": "bench", "operation": "UPDATE",
                    "userInfo": {"username": "bench"},
                    "object": {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": unit}, "spec": {"replicas": 4}},
                    "oldObject": {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": unit}, "spec": {"replicas": 3}}}})
    while time.time() - started < args.seconds:
        unit = f"u{i % args.units}"
        status, body, elapsed = get(port, f"/v1/units/bench/{unit}")
        gets.append(elapsed)
        if status == 200:
            age = json.loads(body)["evidence"]["signal"]
            if age:
                ages.append(age["age_s"])
        admissions.append(get(port, "/v1/admission", "POST", review(unit))[2])
        if get_metrics:
            ok, elapsed = get_metrics(unit)
            metrics_calls.append(elapsed)
            metrics_failed += 0 if ok else 1
        i += 1
        time.sleep(0.05)
    wall, cpu = time.time() - started, cpu_seconds(serve.pid) - cpu_start
    load_after = os.getloadavg()
    metrics = get(port, "/metrics")[1].decode()
    serve.terminate()
    serve.wait()
    prometheus.terminate()
    prometheus.wait()
    exporter.shutdown()
    shutil.rmtree(root, ignore_errors=True)

    def total(prefix):
        return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(prefix))

    causes = {}
    for line in metrics.splitlines():
        if line.startswith("scale_units_evidence_refused_total{"):
            labels, value = line.rsplit(" ", 1)
            key = labels.split('source="', 1)[1].split('"', 1)[0] + ":" + labels.split('cause="', 1)[1].split('"', 1)[0]
            causes[key] = causes.get(key, 0) + float(value)
    queries = total("scale_units_evidence_query_seconds_count")
    print(json.dumps({
        "units": args.units, "sources_per_unit": 3, "interval_ms": args.interval_ms, "seconds": round(wall, 1),
        "cpu_share_of_one_core": round(cpu / wall, 4),
        "queries": queries,
        "query_mean_ms": round(1000 * total("scale_units_evidence_query_seconds_sum") / queries, 2) if queries else None,
        "query_max_ms": round(1000 * total("scale_units_evidence_query_max_seconds"), 2),
        "stored": total("scale_units_evidence_stored_total"),
        "refused": total("scale_units_evidence_refused_total"),
        "refused_by_source_and_cause": causes,
        "evidence_age_s": {"p50": percentile(ages, 0.5), "p99": percentile(ages, 0.99), "max": max(ages) if ages else None},
        "get_unit_ms": {"p50": round(1000 * percentile(gets, 0.5), 2), "p99": round(1000 * percentile(gets, 0.99), 2)},
        "admission_ms": {"p50": round(1000 * percentile(admissions, 0.5), 2), "p99": round(1000 * percentile(admissions, 0.99), 2)},
        "keda_get_metrics_ms": {"p50": round(1000 * percentile(metrics_calls, 0.5), 2),
                                "p99": round(1000 * percentile(metrics_calls, 0.99), 2),
                                "calls": len(metrics_calls), "errors": metrics_failed} if metrics_calls else None,
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(load_after[0], 2)},
    }, indent=2))


if __name__ == "__main__":
    main()
