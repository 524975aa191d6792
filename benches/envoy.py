#!/usr/bin/env python3
"""Requests per second through the real Envoy with and without the scale-units check, and the
p50/p99 latency the check adds, at 1, 16 and 64 concurrent clients on loopback (`make
bench-envoy`; figures go into BENCHMARKS.md, "Envoy ext_authz").

One Envoy (deploy/envoy/envoy.yaml's filter) with two listeners answering from Envoy itself
(`direct_response`, so no upstream is measured): one with the ext_authz filter, one without.
`wrk` posts a Docker service update of unit default/web to 3 replicas while the unit is at 3
(decision scale_up 3 -> 5): a full check — route, body read by the Go decoder, decision in the
component, gate — that is allowed without recording anything, so every request costs the same.
A third run posts the same body to a path no route matches (`/v1.45/containers/web/start`): Envoy
buffers the body and asks scale-units over gRPC, which answers at once; the difference between it
and the scale call is the gate's own work, between it and no filter Envoy's and gRPC's.

wrk's clients are closed-loop: at saturation each waits for the one before, so p50 is about
clients / throughput, and on a machine that wrk, Envoy and scale-units share, the latency the check
adds at 16 and 64 clients is mostly the CPU it costs. That cost is printed too: CPU time (user +
system, from /proc) of scale-units and of Envoy per request, in each mode. Each row ends with the
load average (1 min) before and after it; the first line says the date, the commit and the CPUs. Usage: benches/envoy.py SCALE_UNITS_BINARY ENVOY_BINARY
[SECONDS] [CLIENTS,...]
"""

import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stamp(offset):
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def observations():
    request = json.load(open(os.path.join(ROOT, "examples/api-gateway/request.json")))
    body = {k: request[k] for k in ("current_replicas", "signal", "capacities", "safety")}
    for observation in [body["signal"], body["safety"], *body["capacities"]]:
        observation["observed_at"], observation["expires_at"] = stamp(-5), stamp(300)
    return json.dumps(body).encode()


def push(http_port):
    request = urllib.request.Request(
        f"http://127.0.0.1:{http_port}/v1/units/default/web/observations",
        data=observations(),
        method="PUT",
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request) as reply:
        assert reply.status == 200, reply.read()


def envoy_config(plain, checked, authz, admin):
    bootstrap = open(os.path.join(ROOT, "deploy/envoy/envoy.yaml")).read()
    # The filter as shipped; the clusters' scale-units port replaced; the route answers directly.
    bootstrap = bootstrap.replace("port_value: 9901", f"port_value: {admin}")
    bootstrap = bootstrap.replace("port_value: 9191", f"port_value: {authz}")
    bootstrap = bootstrap.replace("port_value: 10000", f"port_value: {checked}")
    bootstrap = bootstrap.replace(
        "route: { cluster: actuator, timeout: 30s }", 'direct_response: { status: 200, body: { inline_string: "ok" } }'
    )
    # The same listener without the filter.
    start = bootstrap.index("    - name: actuator_api")
    end = bootstrap.index("  clusters:")
    listener = bootstrap[start:end]
    plain_listener = listener.replace("actuator_api", "plain_api").replace(f"port_value: {checked}", f"port_value: {plain}")
    authz_start = plain_listener.index("                  - name: envoy.filters.http.ext_authz")
    authz_end = plain_listener.index("                  - name: envoy.filters.http.router")
    plain_listener = plain_listener[:authz_start] + plain_listener[authz_end:]
    return bootstrap[:end] + plain_listener + bootstrap[end:]


def wait_http(url, limit=120):
    started = time.time()
    while True:
        try:
            with urllib.request.urlopen(url) as reply:
                if reply.status == 200:
                    return
        except Exception:
            pass
        if time.time() - started > limit:
            raise SystemExit(f"{url} not ready")
        time.sleep(0.1)


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def cpu_seconds(pid):
    """User + system CPU time of a process, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pids, run):
    """run()'s wrk figures and, per request, the CPU microseconds each of pids spent."""
    before = [cpu_seconds(pid) for pid in pids]
    figures = run()
    requests = max(figures[0] * figures[4], 1)
    return figures, [1e6 * (cpu_seconds(pid) - was) / requests for pid, was in zip(pids, before)]


def wrk(port, connections, seconds, script, path="/v1.45/services/web/update"):
    output = subprocess.run(
        ["wrk", "-t", str(min(connections, 2)), "-c", str(connections), "-d", f"{seconds}s", "--latency", "-s", script,
         f"http://127.0.0.1:{port}{path}"],
        check=True, capture_output=True, text=True,
    ).stdout
    latency = {}
    for percent in ("50", "99"):
        match = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
        latency[percent] = float(match.group(1)) * UNITS[match.group(2)]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    # A check past the filter's 0.5 s timeout is answered 503 by Envoy (fail closed): counted.
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return rps, latency["50"], latency["99"], int(non2xx.group(1)) if non2xx else 0, seconds


def main():
    scale_units, envoy = sys.argv[1], sys.argv[2]
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    clients = [int(n) for n in sys.argv[4].split(",")] if len(sys.argv) > 4 else [1, 16, 64]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit}"
          f"{' (working tree with changes)' if dirty.strip() else ''}, {os.cpu_count()} CPUs, {seconds} s per point, "
          f"binary {scale_units}", flush=True)
    work = tempfile.mkdtemp(prefix="scale-units-bench-envoy-")
    processes = []
    try:
        units = os.path.join(work, "units")
        os.makedirs(units)
        contract = json.load(open(os.path.join(ROOT, "examples/api-gateway/contract.json")))
        contract["policy"]["scale_up_cooldown_s"] = 0
        json.dump(contract, open(os.path.join(units, "default.web.json"), "w"))
        http, authz, admin, plain, checked = (free_port() for _ in range(5))
        serve = subprocess.Popen(
            [scale_units, "serve", "--listen", f"127.0.0.1:{http}", "--envoy-listen", f"127.0.0.1:{authz}",
             "--units", units, "--audit-log", "/dev/null", "--shutdown-delay-ms", "0"],
            stdout=subprocess.DEVNULL,
        )
        processes.append(serve)
        wait_http(f"http://127.0.0.1:{http}/health")
        config = os.path.join(work, "envoy.yaml")
        open(config, "w").write(envoy_config(plain, checked, authz, admin))
        proxy = subprocess.Popen(
            [envoy, "-c", config, "--disable-hot-restart", "--log-level", "error", "--concurrency", "2"],
            stdout=subprocess.DEVNULL,
        )
        processes.append(proxy)
        pids = [serve.pid, proxy.pid]
        wait_http(f"http://127.0.0.1:{admin}/ready")
        script = os.path.join(work, "post.lua")
        body = json.dumps({"Name": "web", "Mode": {"Replicated": {"Replicas": 3}}, "TaskTemplate": {}})
        open(script, "w").write(
            f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\nwrk.headers["content-type"] = "application/json"\n'
        )
        print("| clients | no filter: req/s | p50 | p99 | check, not a scale call: req/s | p50 | p99 "
              "| check, scale call: req/s | p50 | p99 | added p50 | added p99 | refused | load before/after |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        costs = []
        for connections in clients:
            load = os.getloadavg()[0]
            push(http)
            wrk(checked, connections, 2, script)  # warm-up
            without, cost_without = measured(pids, lambda: wrk(plain, connections, seconds, script))
            passed, cost_passed = measured(
                pids, lambda: wrk(checked, connections, seconds, script, "/v1.45/containers/web/start"))
            push(http)
            with_check, cost_check = measured(pids, lambda: wrk(checked, connections, seconds, script))
            costs.append((connections, cost_without, cost_passed, cost_check))
            print(
                f"| {connections} | {without[0]:,.0f} | {without[1]:.2f} ms | {without[2]:.2f} ms "
                f"| {passed[0]:,.0f} | {passed[1]:.2f} ms | {passed[2]:.2f} ms "
                f"| {with_check[0]:,.0f} | {with_check[1]:.2f} ms | {with_check[2]:.2f} ms "
                f"| {with_check[1] - without[1]:+.2f} ms | {with_check[2] - without[2]:+.2f} ms "
                f"| {with_check[3] + passed[3]} | {load:.2f} / {os.getloadavg()[0]:.2f} |",
                flush=True,
            )
        print()
        print("CPU per request, µs (scale-units / Envoy):")
        print()
        print("| clients | no filter | check, not a scale call | check, scale call |")
        print("|---|---|---|---|")
        for connections, *modes in costs:
            print(f"| {connections} | " + " | ".join(f"{serve:.0f} / {proxy:.0f}" for serve, proxy in modes) + " |")
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
