#!/usr/bin/env python3
"""Assemble the conformance vectors below tests/vectors/ (every group except reference/).

Requests are put together from named building blocks (the reference vectors' contracts and
observations, plus one contract per surface) with explicit per-vector edits. Every expectation
(action, desired_replicas, reasons in evaluation order, drain_required, each evidence entry,
evaluated_at, error code and message) is written by hand below from docs/SPEC.md. The only
computed parts are hashes, which seal.py fills in: contract_id, decision_id, decision_digest,
contract_digest and the digest of a missing evidence entry (written "M" here).

Usage: python3 tests/vectors/tools/build.py   (rewrites the *.json files of the groups below)
Python 3 standard library only.
"""

import copy
import hashlib
import json
import os
import sys

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
import seal  # noqa: E402

GROUPS = ("validation", "errors", "signal", "capacity", "quota", "continuity", "safety",
          "cooldown", "zero", "bounds", "identity", "differences", "derivation", "diagnosis", "gate")

NOW = "2026-08-19T12:00:00Z"
EVAL = "2026-08-19T12:00:00+00:00"   # evaluated_at for NOW
T_OBS = "2026-08-19T11:59:00Z"       # default observed_at
T_EXP = "2026-08-19T12:05:00Z"       # default expires_at
OLD_OBS = "2026-08-19T11:50:00Z"     # an expired window
OLD_EXP = "2026-08-19T11:55:00Z"
FUTURE_OBS = "2026-08-19T12:00:00.000001Z"  # one microsecond after NOW
E15 = 10 ** 15
E12 = 10 ** 12

class _Del:
    """An edit value that removes the key (deepcopy keeps the one instance)."""

    def __deepcopy__(self, memo):
        return self


DEL = _Del()


def load_ref(name):
    with open(os.path.join(ROOT, "reference", name), encoding="utf-8") as fh:
        return json.load(fh)


_T01 = load_ref("t01-mcp-target-tracks-deterministically.json")
_T05 = load_ref("t05-engine-authority-saturated.json")
_T08A = load_ref("t08a-scale-down-is-step-capped.json")

# Source digests: the reference's where the reference has the ref, else a fixed fixture value.
DIG = {}
for _v in (_T01, _T05, _T08A):
    _r = _v["request"]
    for _o in [_r["signal"], _r["continuity"], _r["safety"]] + _r["capacities"] + _r["quotas"]:
        if _o:
            DIG[_o["source_ref"]] = _o["source_digest"]


def digest_of(ref):
    if ref not in DIG:
        DIG[ref] = "sha256:" + hashlib.sha256(("fixture:" + ref).encode()).hexdigest()
    return DIG[ref]


# ---------------------------------------------------------------- observations

def _window(ref, observed_at, expires_at, digest):
    return {"observed_at": observed_at, "expires_at": expires_at, "source_ref": ref,
            "source_digest": digest if digest is not None else digest_of(ref)}


def sig(kind="request_rate", value=250, ref=None, obs=T_OBS, exp=T_EXP, digest=None):
    ref = ref or "metrics:" + kind
    return {"signal": kind, "value": value, **_window(ref, obs, exp, digest)}


def cap(axis, allocatable=10000, reserved=1000, used=0, ref=None, obs=T_OBS, exp=T_EXP, digest=None):
    ref = ref or "capacity:" + axis
    return {"axis": axis, "allocatable": allocatable, "reserved": reserved, "used": used,
            **_window(ref, obs, exp, digest)}


def quo(quota_ref="provider:llm", scope="provider_global", limit=100, used=0, ref=None,
        obs=T_OBS, exp=T_EXP, digest=None):
    ref = ref or "quota:" + quota_ref.replace(":", "-")
    return {"quota_ref": quota_ref, "scope": scope, "limit": limit, "used": used,
            **_window(ref, obs, exp, digest)}


def cont(ready=True, active_sessions=0, active_streams=0, ref="continuity:sessions",
         obs=T_OBS, exp=T_EXP, digest=None):
    return {"ready": ready, "active_sessions": active_sessions, "active_streams": active_streams,
            **_window(ref, obs, exp, digest)}


def safe(overloaded=False, noisy_neighbor=False, reason_ref=DEL, ref="safety:node",
         obs=T_OBS, exp=T_EXP, digest=None):
    out = {"overloaded": overloaded, "noisy_neighbor": noisy_neighbor}
    if reason_ref is not DEL:
        out["reason_ref"] = reason_ref
    out.update(_window(ref, obs, exp, digest))
    return out


# ---------------------------------------------------------------- contracts

def _policy(target_signal, target=100, **kw):
    p = {"min_replicas": 1, "max_replicas": 8, "target": target, "target_signal": target_signal,
         "scale_up_step": 2, "scale_down_step": 1, "scale_up_cooldown_s": 0,
         "scale_down_cooldown_s": 0, "drain_seconds": 30}
    p.update(kw)
    return p


STATELESS = {"mode": "stateless", "drain_required": False, "block_scale_down_with_active": False}
FENCED = {"partitioned": True, "partitions_per_replica": 4, "lease_required": True,
          "lease_ttl_s": 30, "fencing_required": True}


def _demands(axes, per_replica=10):
    return [{"axis": a, "per_replica": per_replica} for a in axes]


CONTRACTS = {
    # The three reference contracts, unchanged.
    "mcp": _T01["request"]["contract"],
    "api": _T08A["request"]["contract"],
    "query": _T05["request"]["contract"],
    # One hand-written contract per remaining surface, satisfying every check of SPEC 4.3.
    "ingest": {
        "unit_ref": "unit:ingest-worker", "surface": "ingest_worker",
        "policy": _policy("queue_depth"),
        "allowed_signals": ["queue_depth", "consumer_lag", "backlog_age_ms", "p95_latency_ms"],
        "required_capacity_axes": ["cpu_milli", "memory_mib", "partition_slots", "lease_slots",
                                   "engine_write_bytes_per_s", "fsync_iops"],
        "replica_demands": _demands(["cpu_milli", "memory_mib", "partition_slots", "lease_slots",
                                     "engine_write_bytes_per_s", "fsync_iops"]),
        "partition_lease": FENCED,
        "continuity": STATELESS,
        "engine_authority_axes": ["engine_write_bytes_per_s", "fsync_iops"],
    },
    "dispatch": {
        "unit_ref": "unit:dispatch-worker", "surface": "dispatch_worker",
        "policy": _policy("consumer_lag"),
        "allowed_signals": ["queue_depth", "consumer_lag", "active_sessions", "p95_latency_ms"],
        "required_capacity_axes": ["cpu_milli", "memory_mib", "partition_slots", "lease_slots"],
        "replica_demands": _demands(["cpu_milli", "memory_mib", "partition_slots", "lease_slots"]),
        "partition_lease": FENCED,
        "continuity": {"mode": "externalized", "external_store_ref": "store:dispatch-state"},
    },
    "graphos": {
        "unit_ref": "unit:graphos-gateway", "surface": "graphos_gateway",
        "policy": _policy("in_flight"),
        "allowed_signals": ["request_rate", "in_flight", "p95_latency_ms", "error_rate_ppm"],
        "required_capacity_axes": ["cpu_milli", "memory_mib", "session_slots",
                                   "read_admission_slots", "engine_bytes", "fsync_iops"],
        "replica_demands": _demands(["cpu_milli", "memory_mib", "session_slots",
                                     "read_admission_slots", "engine_bytes", "fsync_iops"]),
        "continuity": {"mode": "session_affine"},
        "engine_authority_axes": ["read_admission_slots", "engine_bytes", "fsync_iops"],
    },
    "connector": {
        "unit_ref": "unit:connector-pool", "surface": "connector_pool",
        "policy": _policy("queue_depth"),
        "allowed_signals": ["queue_depth", "consumer_lag", "request_rate", "provider_in_flight",
                            "p95_latency_ms", "error_rate_ppm"],
        "required_capacity_axes": ["cpu_milli", "memory_mib", "upstream_rate"],
        "replica_demands": _demands(["cpu_milli", "memory_mib", "upstream_rate"]),
        "quotas": [{"quota_ref": "provider:crm", "axis": "upstream_rate",
                    "scope": "provider_global", "per_replica": 5}],
        "continuity": STATELESS,
    },
    "media": {
        "unit_ref": "unit:media-pool", "surface": "media_pool",
        "policy": _policy("gpu_utilization_ppm", target=300000),
        "allowed_signals": ["queue_depth", "request_rate", "gpu_utilization_ppm", "p95_latency_ms"],
        "required_capacity_axes": ["cpu_milli", "memory_mib", "gpu_count", "gpu_memory_mib"],
        "replica_demands": [{"axis": "cpu_milli", "per_replica": 10},
                            {"axis": "memory_mib", "per_replica": 10},
                            {"axis": "gpu_count", "per_replica": 1},
                            {"axis": "gpu_memory_mib", "per_replica": 1024}],
        "continuity": STATELESS,
    },
    "rlm": {
        "unit_ref": "unit:rlm-pool", "surface": "rlm_pool",
        "policy": _policy("active_sessions", target=10),
        "allowed_signals": ["queue_depth", "request_rate", "gpu_utilization_ppm", "active_sessions"],
        "required_capacity_axes": ["cpu_milli", "memory_mib", "gpu_count", "gpu_memory_mib"],
        "replica_demands": _demands(["cpu_milli", "memory_mib", "gpu_count", "gpu_memory_mib"], 1),
        "continuity": STATELESS,
    },
}


# ---------------------------------------------------------------- edits

def _parse_path(path):
    parts = []
    for piece in path.split("."):
        while "[" in piece:
            head, rest = piece.split("[", 1)
            if head:
                parts.append(head)
            idx, piece = rest.split("]", 1)
            parts.append(int(idx))
        if piece:
            parts.append(piece)
    return parts


def setp(obj, path, value):
    """Set (or with DEL remove) the value at a dotted path such as contract.quotas[0].scope."""
    parts = _parse_path(path)
    cur = obj
    for p in parts[:-1]:
        cur = cur[p]
    last = parts[-1]
    if value is DEL:
        del cur[last]
    elif isinstance(cur, list) and last == len(cur):
        cur.append(value)
    else:
        cur[last] = value


def contract(name, **edits):
    """A copy of a named contract; edits use "__" for "." in paths (policy__target=5)."""
    c = copy.deepcopy(CONTRACTS[name])
    for k, v in edits.items():
        setp(c, k.replace("__", "."), copy.deepcopy(v))
    return c


def caps_for(c, over=None, drop=(), extra=()):
    """One fresh default capacity observation per required axis of contract c."""
    over = over or {}
    out = []
    for axis in c["required_capacity_axes"]:
        if axis in drop:
            continue
        out.append(cap(axis, **over.get(axis, {})))
    return out + list(extra)


def quotas_for(c):
    return [quo(q["quota_ref"], q["scope"]) for q in c.get("quotas", [])]


DEFAULT = object()


def request(c, current=1, signal=DEFAULT, capacities=DEFAULT, quotas=DEFAULT,
            continuity=DEFAULT, safety=DEFAULT, now=NOW, last_action_at=DEL, value=250):
    """A complete request around contract c; DEFAULT picks fresh default observations."""
    if isinstance(c, str):
        c = contract(c)
    r = {"contract": c, "current_replicas": current}
    r["signal"] = sig(c["policy"]["target_signal"], value) if signal is DEFAULT else signal
    r["capacities"] = caps_for(c) if capacities is DEFAULT else capacities
    r["quotas"] = quotas_for(c) if quotas is DEFAULT else quotas
    if continuity is DEFAULT:
        continuity = None if c["continuity"]["mode"] == "stateless" else cont()
    r["continuity"] = continuity
    r["safety"] = safe() if safety is DEFAULT else safety
    r["now"] = now
    if last_action_at is not DEL:
        r["last_action_at"] = last_action_at
    for k in [k for k, v in r.items() if v is DEL]:
        del r[k]
    return r


def edit(req, **edits):
    """A copy of a request with path edits ("__" for "."; use edits() for list indexes)."""
    req = copy.deepcopy(req)
    for k, v in edits.items():
        setp(req, k.replace("__", "."), copy.deepcopy(v))
    return req


def edits(req, pairs):
    """A copy of a request with (path, value) edits; paths may index lists: capacities[0].used."""
    req = copy.deepcopy(req)
    for path, v in pairs:
        setp(req, path, copy.deepcopy(v))
    return req


# ---------------------------------------------------------------- evidence and decisions

def E(kind, ref, status, code, digest=None):
    if digest is None:
        digest = "M" if status == "missing" else digest_of(ref)
    return {"kind": kind, "ref": ref, "digest": digest, "status": status, "code": code}


def A(kind, ref, code):
    return E(kind, ref, "accepted", code)


# Hand-written evidence of the common fixtures, all accepted.
SIG_RR = A("signal", "metrics:request_rate", "request_rate")
CAP = {a: A("capacity", "capacity:" + a, a) for a in (
    "cpu_milli", "memory_mib", "gpu_count", "gpu_memory_mib", "partition_slots", "lease_slots",
    "engine_bytes", "engine_write_bytes_per_s", "fsync_iops", "read_admission_slots",
    "session_slots", "continuity_slots", "upstream_rate", "provider_global_quota")}
MCP_CAPS = [CAP["cpu_milli"], CAP["memory_mib"], CAP["session_slots"], CAP["continuity_slots"]]
API_CAPS = [CAP["cpu_milli"], CAP["memory_mib"], CAP["session_slots"]]
QR_CAPS = [CAP["cpu_milli"], CAP["memory_mib"], CAP["read_admission_slots"], CAP["engine_bytes"],
           CAP["fsync_iops"]]
Q_LLM = A("quota", "quota:provider-llm", "provider_global")
C_EXT = A("continuity", "continuity:sessions", "externalized")
SAFE = A("safety", "safety:node", "safety")
MCP_OK = [SIG_RR] + MCP_CAPS + [Q_LLM, C_EXT, SAFE]
API_OK = [SIG_RR] + API_CAPS + [SAFE]
QR_OK = [SIG_RR] + QR_CAPS + [SAFE]
SIG_MISSING = E("signal", "signal:missing", "missing", "signal_missing")


def decision(current, desired, action, reasons, evidence, drain=False, evaluated_at=EVAL):
    return {
        "schema_version": "1",
        "decision_id": "",
        "decision_digest": "",
        "contract_id": "",
        "evaluated_at": evaluated_at,
        "current_replicas": current,
        "desired_replicas": desired,
        "action": action,
        "reasons": list(reasons),
        "drain_required": drain,
        "evidence": copy.deepcopy(list(evidence)),
    }


def replace_ev(evidence, index, entry):
    out = list(evidence)
    out[index] = entry
    return out


# ---------------------------------------------------------------- registry

VECTORS = []


def _add(vid, description, body, expect):
    group, name = vid.split("/", 1)
    assert group in GROUPS, vid
    assert all(v["id"] != vid for v in VECTORS), "duplicate id " + vid
    v = {"id": vid, "description": description}
    v.update(body)
    v["expect"] = expect
    VECTORS.append(v)


def ok(vid, description, req, dec):
    """A vector whose expected outcome is the hand-written decision dec."""
    assert dec["current_replicas"] == req["current_replicas"], vid
    if dec["action"] in ("blocked", "hold"):
        assert dec["desired_replicas"] == dec["current_replicas"], vid
    _add(vid, description, {"request": req}, {"decision": dec, "contract_digest": ""})


def bad(vid, description, req, code, message=None):
    """A vector whose expected outcome is an error with this code (and message fragment)."""
    err = {"code": code}
    if message is not None:
        err["message_contains"] = message
    _add(vid, description, {"request": req}, {"error": err})


def bad_text(vid, description, text, code, message=None):
    """Like bad(), but the request is exact JSON text (the request_json extension)."""
    err = {"code": code}
    if message is not None:
        err["message_contains"] = message
    _add(vid, description, {"request_json": text}, {"error": err})


def diag(vid, description, req, faults, message=None, text=None):
    """A multi-fault vector: the SPEC's first error (the first fault's code, and `message` when the
    SPEC fixes it) plus the whole diagnosis, each fault (code, path, hint fragment) written by hand
    in the order the checks run (DECISIONS.md, "Diagnosis"). `text` gives the request as exact JSON
    text instead (request_json)."""
    err = {"code": faults[0][0]}
    if message is not None:
        err["message_contains"] = message
    diagnosis = []
    for fault in faults:
        code, path, hint = fault[:3]
        entry = {"code": code, "path": path, "hint_contains": hint}
        if len(fault) > 3:
            entry["message_contains"] = fault[3]
        diagnosis.append(entry)
    body = {"request": req} if text is None else {"request_json": text}
    _add(vid, description, body, {"error": err, "diagnosis": diagnosis})


def replace_once(text, old, new):
    assert text.count(old) == 1, (old, text.count(old))
    return text.replace(old, new)


def S(kind, ref, code):
    return E(kind, ref, "stale", code)


def B(kind, ref, code):
    return E(kind, ref, "blocked", code)


def MI(kind, ref, code):
    return E(kind, ref, "missing", code)


def MISSING_CAP(axis):
    return MI("capacity", "capacity:" + axis, "capacity_missing")


# ================================================================ signal/

def group_signal():
    mcp_tail = MCP_CAPS + [Q_LLM, C_EXT, SAFE]
    ok("signal/omitted-blocks",
       "A request without the signal key is blocked on signal_missing exactly like signal: null.",
       request("mcp", signal=DEL),
       decision(1, 1, "blocked", ["signal_missing"], [SIG_MISSING] + mcp_tail))
    ok("signal/mismatch-allowed-signal-blocks",
       "A fresh in_flight signal on a contract that targets request_rate is blocked as signal_mismatch.",
       request("mcp", signal=sig("in_flight", 250)),
       decision(1, 1, "blocked", ["signal_mismatch"],
                [B("signal", "metrics:in_flight", "signal_mismatch")] + mcp_tail))
    ok("signal/mismatch-signal-outside-allowed-list",
       "A signal kind outside allowed_signals is not a validation error but a signal_mismatch block.",
       request("mcp", signal=sig("queue_depth", 250)),
       decision(1, 1, "blocked", ["signal_mismatch"],
                [B("signal", "metrics:queue_depth", "signal_mismatch")] + mcp_tail))
    ok("signal/mismatch-reported-before-staleness",
       "An expired signal of the wrong kind reports signal_mismatch, not signal_stale.",
       request("mcp", signal=sig("in_flight", 250, obs=OLD_OBS, exp=OLD_EXP)),
       decision(1, 1, "blocked", ["signal_mismatch"],
                [B("signal", "metrics:in_flight", "signal_mismatch")] + mcp_tail))
    ok("signal/expired-is-stale",
       "A signal whose window ended before now is stale and blocks.",
       request("mcp", signal=sig(obs=OLD_OBS, exp=OLD_EXP)),
       decision(1, 1, "blocked", ["signal_stale"],
                [S("signal", "metrics:request_rate", "signal_stale")] + mcp_tail))
    ok("signal/stale-when-now-equals-expires-at",
       "Freshness is half-open: now == expires_at is stale.",
       request("mcp", signal=sig(exp=NOW)),
       decision(1, 1, "blocked", ["signal_stale"],
                [S("signal", "metrics:request_rate", "signal_stale")] + mcp_tail))
    ok("signal/fresh-when-now-equals-observed-at",
       "Freshness is half-open: now == observed_at is fresh, so t01 scales up to 3.",
       request("mcp", signal=sig(obs=NOW)),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("signal/future-observation-is-stale",
       "A signal observed one microsecond after now is not fresh.",
       request("mcp", signal=sig(obs=FUTURE_OBS)),
       decision(1, 1, "blocked", ["signal_stale"],
                [S("signal", "metrics:request_rate", "signal_stale")] + mcp_tail))
    ok("signal/fresh-one-microsecond-before-expiry",
       "A signal expiring one microsecond after now is still fresh.",
       request("mcp", signal=sig(exp="2026-08-19T12:00:00.000001Z")),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("signal/no-age-limit",
       "An observation from 2000-01-01 that expires in 2300 is fresh: there is no other age limit.",
       request("mcp", signal=sig(obs="2000-01-01T00:00:00Z", exp="2300-12-31T23:59:59.999999Z")),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("signal/at-target-holds",
       "Value 100 over target 100 at one replica: ceil is 1, hold with at_target.",
       request("mcp", value=100),
       decision(1, 1, "hold", ["at_target"], MCP_OK))
    ok("signal/one-over-target-rounds-up",
       "Value 101 over target 100 needs ceil = 2 replicas.",
       request("mcp", value=101),
       decision(1, 2, "scale_up", ["target_tracking"], MCP_OK))
    ok("signal/scale-up-is-step-capped",
       "At 4 replicas, 800 over 100 wants 8 but scale_up_step 2 allows 6.",
       request("mcp", current=4, value=800),
       decision(4, 6, "scale_up", ["target_tracking"], MCP_OK))
    ok("signal/clamped-to-max-replicas",
       "At 7 replicas a demand of 100 replicas is clamped to max_replicas 8.",
       request("mcp", current=7, value=10000),
       decision(7, 8, "scale_up", ["target_tracking"], MCP_OK))
    ok("signal/holds-at-max-replicas",
       "At max_replicas 8 a larger demand holds with at_target.",
       request("mcp", current=8, value=10000),
       decision(8, 8, "hold", ["at_target"], MCP_OK))
    ok("signal/scale-down-drains",
       "MCP at 3 with no demand steps down to 2 and, its continuity requiring drain, sets drain_required.",
       request("mcp", current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    c = contract("mcp", policy__target=250000, policy__target_signal="error_rate_ppm")
    ok("signal/ppm-signal-tracks-target",
       "error_rate_ppm of one million over a target of 250000 wants 4, step-capped to 3.",
       request(c, signal=sig("error_rate_ppm", 1000000)),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "metrics:error_rate_ppm", "error_rate_ppm")] + mcp_tail))
    ok("signal/missing-with-missing-capacity",
       "Signal and capacity both missing: both reasons, signal first, one evidence entry per axis.",
       request("mcp", signal=None, capacities=[]),
       decision(1, 1, "blocked", ["signal_missing", "capacity_missing"],
                [SIG_MISSING, MISSING_CAP("cpu_milli"), MISSING_CAP("memory_mib"),
                 MISSING_CAP("session_slots"), MISSING_CAP("continuity_slots"), Q_LLM, C_EXT, SAFE]))
    c = contract("mcp")
    c["quotas"] += [
        {"quota_ref": "tenant:acme", "axis": "cpu_milli", "scope": "tenant", "per_replica": 1},
        {"quota_ref": "tenant:beta", "axis": "memory_mib", "scope": "tenant", "per_replica": 1},
    ]
    ok("signal/phase-a-reasons-in-evaluation-order",
       "Every phase-A fault at once: reasons and evidence follow A1..A6 order.",
       request(c, signal=sig(obs=OLD_OBS, exp=OLD_EXP),
               capacities=[cap("memory_mib", obs=OLD_OBS, exp=OLD_EXP), cap("session_slots"),
                           cap("continuity_slots")],
               quotas=[quo("tenant:acme", "tenant", obs=OLD_OBS, exp=OLD_EXP),
                       quo("tenant:beta", "unit")],
               continuity=cont(ready=False),
               safety=safe(True, True, "incident:capacity"),
               last_action_at="2026-08-19T12:00:01Z"),
       decision(1, 1, "blocked",
                ["signal_stale", "capacity_missing", "capacity_stale", "provider_quota_missing",
                 "quota_stale", "quota_scope_mismatch", "continuity_not_ready",
                 "overload_shedding_active", "noisy_neighbor", "cooldown"],
                [S("signal", "metrics:request_rate", "signal_stale"),
                 MISSING_CAP("cpu_milli"),
                 S("capacity", "capacity:memory_mib", "capacity_stale"),
                 CAP["session_slots"], CAP["continuity_slots"],
                 MI("quota", "provider:llm", "provider_quota_missing"),
                 S("quota", "quota:tenant-acme", "quota_stale"),
                 B("quota", "quota:tenant-beta", "quota_scope_mismatch"),
                 B("continuity", "continuity:sessions", "continuity_not_ready"),
                 SAFE]))


# ================================================================ capacity/

def group_capacity():
    mcp_c = contract("mcp")
    tail = [Q_LLM, C_EXT, SAFE]
    ok("capacity/one-axis-missing",
       "A required axis without an observation gets a missing entry in declaration order and blocks.",
       request(mcp_c, capacities=caps_for(mcp_c, drop=("session_slots",))),
       decision(1, 1, "blocked", ["capacity_missing"],
                [SIG_RR, CAP["cpu_milli"], CAP["memory_mib"], MISSING_CAP("session_slots"),
                 CAP["continuity_slots"]] + tail))
    ok("capacity/no-capacity-observations",
       "capacities omitted: every required axis is missing, capacity_missing is reported once.",
       request(mcp_c, capacities=DEL),
       decision(1, 1, "blocked", ["capacity_missing"],
                [SIG_RR, MISSING_CAP("cpu_milli"), MISSING_CAP("memory_mib"),
                 MISSING_CAP("session_slots"), MISSING_CAP("continuity_slots")] + tail))
    ok("capacity/one-axis-stale",
       "An expired memory observation is stale evidence and blocks.",
       request(mcp_c, capacities=caps_for(mcp_c, over={"memory_mib": dict(obs=OLD_OBS, exp=OLD_EXP)})),
       decision(1, 1, "blocked", ["capacity_stale"],
                [SIG_RR, CAP["cpu_milli"], S("capacity", "capacity:memory_mib", "capacity_stale"),
                 CAP["session_slots"], CAP["continuity_slots"]] + tail))
    ok("capacity/missing-reported-before-stale",
       "A stale first axis and a missing last axis: capacity_missing is reported before capacity_stale.",
       request(mcp_c, capacities=caps_for(mcp_c, over={"cpu_milli": dict(obs=OLD_OBS, exp=OLD_EXP)},
                                          drop=("continuity_slots",))),
       decision(1, 1, "blocked", ["capacity_missing", "capacity_stale"],
                [SIG_RR, S("capacity", "capacity:cpu_milli", "capacity_stale"), CAP["memory_mib"],
                 CAP["session_slots"], MISSING_CAP("continuity_slots")] + tail))
    ok("capacity/future-observation-is-stale",
       "A capacity observation from one microsecond in the future is stale.",
       request(mcp_c, capacities=caps_for(mcp_c, over={"session_slots": dict(obs=FUTURE_OBS)})),
       decision(1, 1, "blocked", ["capacity_stale"],
                [SIG_RR, CAP["cpu_milli"], CAP["memory_mib"],
                 S("capacity", "capacity:session_slots", "capacity_stale"),
                 CAP["continuity_slots"]] + tail))
    ok("capacity/stale-when-now-equals-expires-at",
       "A capacity observation expiring exactly at now is stale.",
       request(mcp_c, capacities=caps_for(mcp_c, over={"cpu_milli": dict(exp=NOW)})),
       decision(1, 1, "blocked", ["capacity_stale"],
                [SIG_RR, S("capacity", "capacity:cpu_milli", "capacity_stale"), CAP["memory_mib"],
                 CAP["session_slots"], CAP["continuity_slots"]] + tail))
    ok("capacity/evidence-follows-declaration-order",
       "Observations listed in reverse still yield evidence in required_capacity_axes order.",
       request(mcp_c, capacities=list(reversed(caps_for(mcp_c)))),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("capacity/unnamed-axis-observation-ignored",
       "A capacity observation on an axis the contract does not name adds no evidence.",
       request(mcp_c, capacities=caps_for(mcp_c, extra=[cap("gpu_count", 8, 0)])),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    api_gpu = contract("api")
    api_gpu["required_capacity_axes"].append("gpu_count")
    api_gpu["replica_demands"].append({"axis": "gpu_count", "per_replica": 1})
    ok("capacity/extra-declared-axis-gets-evidence",
       "An axis beyond the profile's, declared required, is evidence in declaration order.",
       request(api_gpu),
       decision(1, 2, "scale_up", ["target_tracking"],
                [SIG_RR] + API_CAPS + [CAP["gpu_count"], SAFE]))
    api_c = contract("api")
    ok("capacity/available-ignores-used",
       "available = allocatable - reserved: 10000 - 9990 = 10 fits one replica of 10 though used is 9990.",
       request(api_c, capacities=caps_for(api_c, over={"cpu_milli": dict(reserved=9990, used=9990)})),
       decision(1, 2, "scale_up", ["target_tracking"], API_OK))
    ok("capacity/reserved-reduces-available",
       "With 9991 of 10000 reserved and nothing used, 9 available cannot fit a demand of 10.",
       request(api_c, capacities=caps_for(api_c, over={"cpu_milli": dict(reserved=9991)})),
       decision(1, 1, "blocked", ["capacity_exhausted"], API_OK))
    ok("capacity/demand-scales-with-additional-replicas",
       "Two more replicas need 2 x 10 session slots; 19 available blocks.",
       request(mcp_c, capacities=caps_for(mcp_c, over={"session_slots": dict(allocatable=1019)})),
       decision(1, 1, "blocked", ["capacity_exhausted"], MCP_OK))
    ok("capacity/exhaustion-ignored-on-scale-down",
       "A fully reserved axis does not stop a scale-down.",
       request(mcp_c, current=3, value=0,
               capacities=caps_for(mcp_c, over={"cpu_milli": dict(allocatable=1000)})),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    g = contract("graphos")
    g["replica_demands"][4]["per_replica"] = 0
    assert g["replica_demands"][4]["axis"] == "engine_bytes"
    g_ev = [A("signal", "metrics:in_flight", "in_flight"), CAP["cpu_milli"], CAP["memory_mib"],
            CAP["session_slots"], CAP["read_admission_slots"], CAP["engine_bytes"], CAP["fsync_iops"],
            A("continuity", "continuity:sessions", "session_affine"), SAFE]
    ok("capacity/engine-saturated-without-demand",
       "An engine authority axis with no headroom blocks growth even when no replica demands it.",
       request(g, capacities=caps_for(g, over={"engine_bytes": dict(allocatable=100, reserved=100)})),
       decision(1, 1, "blocked", ["engine_authority_saturated"], g_ev))
    ok("capacity/engine-one-unit-of-headroom-grows",
       "An engine authority axis with available 1 is not saturated.",
       request(g, capacities=caps_for(g, over={"engine_bytes": dict(allocatable=100, reserved=99)})),
       decision(1, 3, "scale_up", ["target_tracking"], g_ev))
    ok("capacity/engine-saturation-ignored-on-scale-down",
       "The saturated query reader of t05 may still scale down.",
       edit(_T05["request"], current_replicas=3, signal__value=0),
       decision(3, 2, "scale_down", ["target_tracking"], QR_OK))
    ing = contract("ingest")
    ing_ev = [A("signal", "metrics:queue_depth", "queue_depth"), CAP["cpu_milli"], CAP["memory_mib"],
              CAP["partition_slots"], CAP["lease_slots"], CAP["engine_write_bytes_per_s"],
              CAP["fsync_iops"], SAFE]
    ok("capacity/ingest-fsync-exhausted-and-saturated",
       "Ingest worker with no fsync headroom: the demand is exhausted and the engine axis saturated.",
       request(ing, capacities=caps_for(ing, over={"fsync_iops": dict(allocatable=100, reserved=100,
                                                                       used=100)})),
       decision(1, 1, "blocked", ["capacity_exhausted", "engine_authority_saturated"], ing_ev))
    # One valid decision per surface.
    ok("capacity/surface-ingest-worker-scales-up",
       "ingest_worker with its full profile (partition, fenced lease, engine axes) scales 1 -> 3.",
       request(ing), decision(1, 3, "scale_up", ["target_tracking"], ing_ev))
    ok("capacity/surface-dispatch-worker-scales-up",
       "dispatch_worker with externalized continuity scales 1 -> 3 on consumer_lag.",
       request("dispatch"),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "metrics:consumer_lag", "consumer_lag"), CAP["cpu_milli"],
                 CAP["memory_mib"], CAP["partition_slots"], CAP["lease_slots"], C_EXT, SAFE]))
    ok("capacity/surface-graphos-gateway-scales-up",
       "graphos_gateway with session_affine continuity and engine axes scales 1 -> 3 on in_flight.",
       request(g), decision(1, 3, "scale_up", ["target_tracking"], g_ev))
    m = contract("mcp", continuity={"mode": "session_affine"}, policy__target_signal="continuity_load")
    ok("capacity/surface-mcp-gateway-session-affine-scales-up",
       "mcp_gateway with session_affine continuity scales 1 -> 3 on continuity_load.",
       request(m),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "metrics:continuity_load", "continuity_load")] + MCP_CAPS +
                [Q_LLM, A("continuity", "continuity:sessions", "session_affine"), SAFE]))
    a = contract("api", continuity={"mode": "externalized", "external_store_ref": "store:api-sessions"},
                 policy__target_signal="in_flight")
    ok("capacity/surface-api-gateway-externalized-scales-up",
       "api_gateway with externalized continuity scales 1 -> 2 (default step 1) on in_flight.",
       request(a),
       decision(1, 2, "scale_up", ["target_tracking"],
                [A("signal", "metrics:in_flight", "in_flight")] + API_CAPS + [C_EXT, SAFE]))
    ok("capacity/surface-query-reader-scales-up",
       "query_reader with engine headroom scales 1 -> 2 (default step 1).",
       request("query"), decision(1, 2, "scale_up", ["target_tracking"], QR_OK))
    ok("capacity/surface-connector-pool-scales-up",
       "connector_pool with a provider-global binding on upstream_rate scales 1 -> 3.",
       request("connector"),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "metrics:queue_depth", "queue_depth"), CAP["cpu_milli"],
                 CAP["memory_mib"], CAP["upstream_rate"],
                 A("quota", "quota:provider-crm", "provider_global"), SAFE]))
    med = contract("media")
    med_caps = caps_for(med, over={"gpu_count": dict(allocatable=8, reserved=0),
                                   "gpu_memory_mib": dict(allocatable=65536, reserved=0)})
    med_ev = [A("signal", "metrics:gpu_utilization_ppm", "gpu_utilization_ppm"), CAP["cpu_milli"],
              CAP["memory_mib"], CAP["gpu_count"], CAP["gpu_memory_mib"], SAFE]
    ok("capacity/surface-media-pool-scales-up",
       "media_pool at 900000 ppm GPU use over a 300000 target scales 1 -> 3 with GPU headroom.",
       request(med, signal=sig("gpu_utilization_ppm", 900000), capacities=med_caps),
       decision(1, 3, "scale_up", ["target_tracking"], med_ev))
    ok("capacity/media-gpu-count-exhausted",
       "Two more media replicas need 2 GPUs; one allocatable GPU blocks.",
       request(med, signal=sig("gpu_utilization_ppm", 900000),
               capacities=caps_for(med, over={"gpu_count": dict(allocatable=1, reserved=0),
                                              "gpu_memory_mib": dict(allocatable=65536, reserved=0)})),
       decision(1, 1, "blocked", ["capacity_exhausted"], med_ev))
    ok("capacity/surface-rlm-pool-scales-up",
       "rlm_pool at 25 active sessions over a target of 10 scales 1 -> 3.",
       request("rlm", value=25),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "metrics:active_sessions", "active_sessions"), CAP["cpu_milli"],
                 CAP["memory_mib"], CAP["gpu_count"], CAP["gpu_memory_mib"], SAFE]))


# ================================================================ quota/

def tenant_binding(ref="tenant:acme", scope="tenant", per_replica=10, axis="cpu_milli", **kw):
    b = {"quota_ref": ref, "axis": axis, "scope": scope, "per_replica": per_replica}
    b.update(kw)
    return b


def api_with_quotas(*bindings):
    c = contract("api")
    c["quotas"] = list(bindings)
    return c


def group_quota():
    mcp_caps = [SIG_RR] + MCP_CAPS
    end = [C_EXT, SAFE]
    ok("quota/provider-missing-blocks",
       "No observation for the provider-global binding: provider_quota_missing, ref is the quota_ref.",
       request("mcp", quotas=[]),
       decision(1, 1, "blocked", ["provider_quota_missing"],
                mcp_caps + [MI("quota", "provider:llm", "provider_quota_missing")] + end))
    ok("quota/provider-missing-blocks-scale-down",
       "Missing provider evidence blocks a scale-down too.",
       request("mcp", current=3, value=0, quotas=[]),
       decision(3, 3, "blocked", ["provider_quota_missing"],
                mcp_caps + [MI("quota", "provider:llm", "provider_quota_missing")] + end))
    ok("quota/provider-future-observation-stale",
       "A provider quota observed one microsecond in the future is stale.",
       request("mcp", quotas=[quo(obs=FUTURE_OBS)]),
       decision(1, 1, "blocked", ["provider_quota_stale"],
                mcp_caps + [S("quota", "quota:provider-llm", "provider_quota_stale")] + end))
    ok("quota/provider-stale-when-now-equals-expires-at",
       "A provider quota expiring exactly at now is stale.",
       request("mcp", quotas=[quo(exp=NOW)]),
       decision(1, 1, "blocked", ["provider_quota_stale"],
                mcp_caps + [S("quota", "quota:provider-llm", "provider_quota_stale")] + end))
    ok("quota/scope-mismatch-blocks",
       "A tenant-scoped observation for a provider-global binding is blocked evidence.",
       request("mcp", quotas=[quo(scope="tenant")]),
       decision(1, 1, "blocked", ["quota_scope_mismatch"],
                mcp_caps + [B("quota", "quota:provider-llm", "quota_scope_mismatch")] + end))
    ok("quota/scope-mismatch-before-staleness",
       "An expired observation of the wrong scope reports quota_scope_mismatch, not staleness.",
       request("mcp", quotas=[quo(scope="engine_global", obs=OLD_OBS, exp=OLD_EXP)]),
       decision(1, 1, "blocked", ["quota_scope_mismatch"],
                mcp_caps + [B("quota", "quota:provider-llm", "quota_scope_mismatch")] + end))
    ok("quota/unnamed-quota-observation-ignored",
       "A quota observation whose quota_ref no binding names adds no evidence.",
       request("mcp", quotas=[quo(), quo("tenant:other", "tenant")]),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("quota/provider-used-at-limit",
       "A provider quota with used == limit is exhausted for growth.",
       request("mcp", quotas=[quo(limit=100, used=100)]),
       decision(1, 1, "blocked", ["provider_quota_exhausted"], MCP_OK))
    ok("quota/provider-exhaustion-ignored-on-scale-down",
       "An exhausted provider quota does not stop a scale-down.",
       request("mcp", current=3, value=0, quotas=[quo(limit=100, used=100)]),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    ok("quota/provider-exactly-fills-limit",
       "used 80 + 2 replicas x 10 = 100 does not exceed the limit of 100: scale up.",
       request("mcp", quotas=[quo(limit=100, used=80)]),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("quota/provider-one-over-limit",
       "used 81 + 2 replicas x 10 = 101 exceeds the shared limit of 100.",
       request("mcp", quotas=[quo(limit=100, used=81)]),
       decision(1, 1, "blocked", ["provider_quota_exhausted"], MCP_OK))
    mcp_c = contract("mcp")
    ok("quota/capacity-reported-before-provider",
       "An exhausted demand axis and an exhausted provider: capacity_exhausted first.",
       request(mcp_c, capacities=caps_for(mcp_c, over={"cpu_milli": dict(allocatable=1000)}),
               quotas=[quo(limit=100, used=100)]),
       decision(1, 1, "blocked", ["capacity_exhausted", "provider_quota_exhausted"], MCP_OK))

    acme_ev = A("quota", "quota:tenant-acme", "tenant")
    api_q = api_with_quotas(tenant_binding())
    ok("quota/tenant-accepted-scales-up",
       "A fresh tenant quota with room is accepted evidence with the binding scope as its code.",
       request(api_q),
       decision(1, 2, "scale_up", ["target_tracking"], [SIG_RR] + API_CAPS + [acme_ev, SAFE]))
    ok("quota/tenant-missing-blocks",
       "No observation for a tenant binding: quota_missing with a missing entry.",
       request(api_q, quotas=[]),
       decision(1, 1, "blocked", ["quota_missing"],
                [SIG_RR] + API_CAPS + [MI("quota", "tenant:acme", "quota_missing"), SAFE]))
    ok("quota/tenant-stale-blocks",
       "An expired tenant quota observation: quota_stale.",
       request(api_q, quotas=[quo("tenant:acme", "tenant", obs=OLD_OBS, exp=OLD_EXP)]),
       decision(1, 1, "blocked", ["quota_stale"],
                [SIG_RR] + API_CAPS + [S("quota", "quota:tenant-acme", "quota_stale"), SAFE]))
    ok("quota/tenant-exactly-fills-limit",
       "used 90 + one replica x 10 = 100 fits a tenant limit of 100.",
       request(api_q, quotas=[quo("tenant:acme", "tenant", limit=100, used=90)]),
       decision(1, 2, "scale_up", ["target_tracking"], [SIG_RR] + API_CAPS + [acme_ev, SAFE]))
    ok("quota/tenant-one-over-limit",
       "used 91 + one replica x 10 = 101 exceeds a tenant limit: capacity_exhausted.",
       request(api_q, quotas=[quo("tenant:acme", "tenant", limit=100, used=91)]),
       decision(1, 1, "blocked", ["capacity_exhausted"], [SIG_RR] + API_CAPS + [acme_ev, SAFE]))
    api_q0 = api_with_quotas(tenant_binding(per_replica=0))
    ok("quota/tenant-used-at-limit-exhausted",
       "A tenant quota with used == limit is exhausted for growth even with no per-replica demand.",
       request(api_q0, quotas=[quo("tenant:acme", "tenant", limit=100, used=100)]),
       decision(1, 1, "blocked", ["capacity_exhausted"], [SIG_RR] + API_CAPS + [acme_ev, SAFE]))
    ok("quota/tenant-multiplicative-allowed",
       "multiplicative is only forbidden on provider-global bindings; a tenant binding may set it.",
       request(api_with_quotas(tenant_binding(multiplicative=True))),
       decision(1, 2, "scale_up", ["target_tracking"], [SIG_RR] + API_CAPS + [acme_ev, SAFE]))
    ok("quota/engine-global-scope-code",
       "An accepted engine_global quota carries the code engine_global.",
       request(api_with_quotas(tenant_binding("engine:global", "engine_global"))),
       decision(1, 2, "scale_up", ["target_tracking"],
                [SIG_RR] + API_CAPS + [A("quota", "quota:engine-global", "engine_global"), SAFE]))
    ok("quota/unit-scope-projection-exhausted",
       "A unit-scoped quota at 95 of 100 cannot take one more replica of 10.",
       request(api_with_quotas(tenant_binding("unit:pool", "unit")),
               quotas=[quo("unit:pool", "unit", limit=100, used=95)]),
       decision(1, 1, "blocked", ["capacity_exhausted"],
                [SIG_RR] + API_CAPS + [A("quota", "quota:unit-pool", "unit"), SAFE]))
    ext = tenant_binding("provider:ext", "provider_global", per_replica=1, axis="upstream_rate")
    ok("quota/provider-binding-on-surface-without-provider-axes",
       "api_gateway may declare a provider-global binding; it is evaluated like any other.",
       request(api_with_quotas(ext)),
       decision(1, 2, "scale_up", ["target_tracking"],
                [SIG_RR] + API_CAPS + [A("quota", "quota:provider-ext", "provider_global"), SAFE]))
    ok("quota/after-loop-reasons-in-fixed-order",
       "A missing tenant binding declared before a stale provider one: provider_quota_stale is reported first.",
       request(api_with_quotas(tenant_binding(), ext),
               quotas=[quo("provider:ext", obs=OLD_OBS, exp=OLD_EXP)]),
       decision(1, 1, "blocked", ["provider_quota_stale", "quota_missing"],
                [SIG_RR] + API_CAPS + [MI("quota", "tenant:acme", "quota_missing"),
                                      S("quota", "quota:provider-ext", "provider_quota_stale"), SAFE]))
    ok("quota/growth-reasons-provider-before-local",
       "Both a tenant and a provider quota at their limit: provider_quota_exhausted, then capacity_exhausted.",
       request(api_with_quotas(tenant_binding(per_replica=0), ext),
               quotas=[quo("tenant:acme", "tenant", limit=100, used=100),
                       quo("provider:ext", limit=100, used=100)]),
       decision(1, 1, "blocked", ["provider_quota_exhausted", "capacity_exhausted"],
                [SIG_RR] + API_CAPS + [acme_ev, A("quota", "quota:provider-ext", "provider_global"), SAFE]))
    conn = contract("connector")
    conn["quotas"].append({"quota_ref": "provider:llm", "axis": "provider_global_quota",
                           "scope": "provider_global", "per_replica": 5})
    conn_head = [A("signal", "metrics:queue_depth", "queue_depth"), CAP["cpu_milli"], CAP["memory_mib"],
                 CAP["upstream_rate"]]
    ok("quota/two-provider-bindings",
       "A connector pool may bind two provider-global quotas; both are evidence.",
       request(conn),
       decision(1, 3, "scale_up", ["target_tracking"],
                conn_head + [A("quota", "quota:provider-crm", "provider_global"), Q_LLM, SAFE]))
    ok("quota/connector-provider-missing",
       "A connector pool without its provider observation is blocked.",
       request("connector", quotas=[]),
       decision(1, 1, "blocked", ["provider_quota_missing"],
                conn_head + [MI("quota", "provider:crm", "provider_quota_missing"), SAFE]))


# ================================================================ continuity/

def group_continuity():
    head = [SIG_RR] + MCP_CAPS + [Q_LLM]
    ok("continuity/missing-blocks-growth",
       "An externalized unit without continuity evidence cannot grow either.",
       request("mcp", continuity=None),
       decision(1, 1, "blocked", ["continuity_missing"],
                head + [MI("continuity", "continuity:missing", "continuity_missing"), SAFE]))
    ok("continuity/expired-is-stale",
       "An expired continuity observation is stale.",
       request("mcp", continuity=cont(obs=OLD_OBS, exp=OLD_EXP)),
       decision(1, 1, "blocked", ["continuity_stale"],
                head + [S("continuity", "continuity:sessions", "continuity_stale"), SAFE]))
    ok("continuity/stale-when-now-equals-expires-at",
       "A continuity observation expiring exactly at now is stale.",
       request("mcp", continuity=cont(exp=NOW)),
       decision(1, 1, "blocked", ["continuity_stale"],
                head + [S("continuity", "continuity:sessions", "continuity_stale"), SAFE]))
    ok("continuity/future-observation-is-stale",
       "A continuity observation from the future is stale.",
       request("mcp", continuity=cont(obs=FUTURE_OBS)),
       decision(1, 1, "blocked", ["continuity_stale"],
                head + [S("continuity", "continuity:sessions", "continuity_stale"), SAFE]))
    ok("continuity/not-ready-blocks",
       "A fresh but not-ready continuity store blocks.",
       request("mcp", continuity=cont(ready=False)),
       decision(1, 1, "blocked", ["continuity_not_ready"],
                head + [B("continuity", "continuity:sessions", "continuity_not_ready"), SAFE]))
    ok("continuity/stale-reported-before-not-ready",
       "A stale and not-ready observation reports continuity_stale only.",
       request("mcp", continuity=cont(ready=False, obs=OLD_OBS, exp=OLD_EXP)),
       decision(1, 1, "blocked", ["continuity_stale"],
                head + [S("continuity", "continuity:sessions", "continuity_stale"), SAFE]))
    ok("continuity/not-ready-blocks-scale-down",
       "A not-ready continuity store blocks a scale-down too.",
       request("mcp", current=3, value=0, continuity=cont(ready=False)),
       decision(3, 3, "blocked", ["continuity_not_ready"],
                head + [B("continuity", "continuity:sessions", "continuity_not_ready"), SAFE]))
    ok("continuity/stateless-stale-adds-reason-without-evidence",
       "Under stateless a supplied stale observation adds continuity_stale but no evidence entry.",
       request("api", continuity=cont(obs=OLD_OBS, exp=OLD_EXP)),
       decision(1, 1, "blocked", ["continuity_stale"], API_OK))
    ok("continuity/stateless-future-observation-stale",
       "Under stateless a continuity observation from the future also adds continuity_stale.",
       request("api", continuity=cont(obs=FUTURE_OBS)),
       decision(1, 1, "blocked", ["continuity_stale"], API_OK))
    ok("continuity/stateless-not-ready-ignored",
       "Under stateless a fresh not-ready observation is ignored.",
       request("api", continuity=cont(ready=False)),
       decision(1, 2, "scale_up", ["target_tracking"], API_OK))
    ok("continuity/stateless-active-sessions-do-not-block",
       "Stateless contracts do not block scale-down on active sessions.",
       request("api", current=3, value=0, continuity=cont(active_sessions=5)),
       decision(3, 2, "scale_down", ["target_tracking"], API_OK))
    ok("continuity/active-streams-block-drain",
       "Active streams alone block a scale-down and require a drain.",
       request("mcp", current=3, value=0, continuity=cont(active_streams=2)),
       decision(3, 3, "blocked", ["active_sessions_block_drain"], MCP_OK, drain=True))
    ok("continuity/active-sessions-do-not-block-growth",
       "Active sessions do not stop a scale-up.",
       request("mcp", continuity=cont(active_sessions=5)),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("continuity/hold-ignores-active-sessions",
       "At target, active sessions do not matter: hold.",
       request("mcp", current=3, value=300, continuity=cont(active_sessions=5)),
       decision(3, 3, "hold", ["at_target"], MCP_OK))
    ok("continuity/no-block-flag-allows-scale-down",
       "block_scale_down_with_active false lets a unit with sessions scale down, with drain.",
       request(contract("mcp", continuity__block_scale_down_with_active=False), current=3, value=0,
               continuity=cont(active_sessions=3)),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    ok("continuity/drain-not-required",
       "continuity.drain_required false: the scale-down carries drain_required false.",
       request(contract("mcp", continuity__drain_required=False), current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK))
    ok("continuity/drain-equal-to-bound-passes",
       "drain_seconds 300 equal to max_drain_seconds 300 is within bound.",
       request(contract("mcp", policy__drain_seconds=300), current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    ok("continuity/drain-bound-ignored-without-drain",
       "A drain over the bound does not matter when continuity does not require a drain.",
       request(contract("mcp", policy__drain_seconds=600, continuity__drain_required=False),
               current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK))
    ok("continuity/session-affine-scale-down-drains",
       "A session_affine unit with no sessions scales down with drain_required.",
       request(contract("mcp", continuity={"mode": "session_affine"}), current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"],
                head + [A("continuity", "continuity:sessions", "session_affine"), SAFE], drain=True))
    st = {"mode": "stateless", "block_scale_down_with_active": False}
    ok("continuity/stateless-default-drain-required",
       "A stateless contract leaving drain_required at its default true scales down with drain_required.",
       request(contract("api", continuity=st), current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], API_OK, drain=True))
    ok("continuity/stateless-drain-over-bound-blocks",
       "Stateless with drain required and max_drain_seconds 0: a 1 s drain blocks the scale-down.",
       request(contract("api", continuity=dict(st, max_drain_seconds=0), policy__drain_seconds=1),
               current=3, value=0),
       decision(3, 3, "blocked", ["drain_required"], API_OK, drain=True))


# ================================================================ safety/

def group_safety():
    head = [SIG_RR] + MCP_CAPS + [Q_LLM, C_EXT]
    missing = MI("safety", "safety:missing", "overload_shedding_active")
    stale = S("safety", "safety:node", "safety_stale")
    ok("safety/null-blocks",
       "safety_required (the default) with safety null: overload_shedding_active with a missing entry.",
       request("mcp", safety=None),
       decision(1, 1, "blocked", ["overload_shedding_active"], head + [missing]))
    ok("safety/omitted-blocks",
       "safety_required with the safety key omitted: same as null.",
       request("mcp", safety=DEL),
       decision(1, 1, "blocked", ["overload_shedding_active"], head + [missing]))
    ok("safety/expired-is-stale",
       "An expired safety observation: reason overload_shedding_active, evidence code safety_stale.",
       request("mcp", safety=safe(obs=OLD_OBS, exp=OLD_EXP)),
       decision(1, 1, "blocked", ["overload_shedding_active"], head + [stale]))
    ok("safety/future-observation-is-stale",
       "A safety observation from the future is stale.",
       request("mcp", safety=safe(obs=FUTURE_OBS)),
       decision(1, 1, "blocked", ["overload_shedding_active"], head + [stale]))
    ok("safety/stale-flags-not-read",
       "A stale observation with both flags set reports only overload_shedding_active.",
       request("mcp", safety=safe(True, True, "incident:capacity", obs=OLD_OBS, exp=OLD_EXP)),
       decision(1, 1, "blocked", ["overload_shedding_active"], head + [stale]))
    ok("safety/overloaded-only",
       "overloaded alone blocks with overload_shedding_active and accepted evidence.",
       request("mcp", safety=safe(True, False, "incident:overload")),
       decision(1, 1, "blocked", ["overload_shedding_active"], MCP_OK))
    ok("safety/noisy-neighbor-only",
       "noisy_neighbor alone blocks with noisy_neighbor.",
       request("mcp", safety=safe(False, True, "incident:neighbor")),
       decision(1, 1, "blocked", ["noisy_neighbor"], MCP_OK))
    ok("safety/overload-blocks-scale-down",
       "Overload blocks shrinkage as well as growth.",
       request("mcp", current=3, value=0, safety=safe(True, False, "incident:overload")),
       decision(3, 3, "blocked", ["overload_shedding_active"], MCP_OK))
    ok("safety/reason-ref-null-allowed",
       "reason_ref null with both flags false is valid.",
       request("mcp", safety=safe(reason_ref=None)),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("safety/reason-ref-without-flags",
       "A reason_ref with both flags false is valid and changes nothing.",
       request("mcp", safety=safe(reason_ref="incident:closed")),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    nosafety = contract("api", safety_required=False)
    api_nos = [SIG_RR] + API_CAPS
    ok("safety/not-required-no-evidence",
       "safety_required false with no safety observation: no safety evidence, scale up.",
       request(nosafety, safety=None),
       decision(1, 2, "scale_up", ["target_tracking"], api_nos))
    ok("safety/not-required-ignores-overload",
       "safety_required false ignores a valid overloaded observation entirely.",
       request(nosafety, safety=safe(True, True, "incident:capacity")),
       decision(1, 2, "scale_up", ["target_tracking"], api_nos))
    ok("safety/not-required-ignores-stale",
       "safety_required false ignores a stale safety observation.",
       request(nosafety, safety=safe(obs=OLD_OBS, exp=OLD_EXP)),
       decision(1, 2, "scale_up", ["target_tracking"], api_nos))


# ================================================================ cooldown/

def group_cooldown():
    cd = contract("mcp", policy__scale_up_cooldown_s=30, policy__scale_down_cooldown_s=300)
    ok("cooldown/scale-up-one-microsecond-short",
       "29.999999 s after the last action with a 30 s scale-up cooldown: hold [cooldown].",
       request(cd, last_action_at="2026-08-19T11:59:30.000001Z"),
       decision(1, 1, "hold", ["cooldown"], MCP_OK))
    ok("cooldown/scale-up-exactly-elapsed",
       "Exactly 30 s after the last action the 30 s scale-up cooldown has passed.",
       request(cd, last_action_at="2026-08-19T11:59:30Z"),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("cooldown/scale-up-uses-up-cooldown",
       "60 s after the last action a scale-up (30 s cooldown) proceeds.",
       request(cd, last_action_at="2026-08-19T11:59:00Z"),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("cooldown/scale-down-uses-down-cooldown",
       "60 s after the last action a scale-down (300 s cooldown) holds.",
       request(cd, current=3, value=0, last_action_at="2026-08-19T11:59:00Z"),
       decision(3, 3, "hold", ["cooldown"], MCP_OK))
    ok("cooldown/scale-down-one-microsecond-short",
       "299.999999 s into a 300 s scale-down cooldown: hold.",
       request(cd, current=3, value=0, last_action_at="2026-08-19T11:55:00.000001Z"),
       decision(3, 3, "hold", ["cooldown"], MCP_OK))
    ok("cooldown/scale-down-exactly-elapsed",
       "Exactly 300 s after the last action the scale-down proceeds.",
       request(cd, current=3, value=0, last_action_at="2026-08-19T11:55:00Z"),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    ok("cooldown/last-action-now-holds",
       "last_action_at == now with a 30 s cooldown: hold.",
       request(cd, last_action_at=NOW),
       decision(1, 1, "hold", ["cooldown"], MCP_OK))
    ok("cooldown/last-action-now-zero-cooldown",
       "last_action_at == now with a 0 s cooldown passes.",
       request("mcp", last_action_at=NOW),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("cooldown/last-action-in-future-blocks",
       "A last action one microsecond after now is a clock fault: blocked [cooldown].",
       request(cd, last_action_at="2026-08-19T12:00:00.000001Z"),
       decision(1, 1, "blocked", ["cooldown"], MCP_OK))
    ok("cooldown/last-action-in-future-blocks-without-cooldown",
       "A future last action blocks even with zero cooldowns.",
       request("mcp", last_action_at="2026-08-19T12:00:01Z"),
       decision(1, 1, "blocked", ["cooldown"], MCP_OK))
    ok("cooldown/future-last-action-after-other-reasons",
       "The clock check comes after the evidence checks: [signal_missing, cooldown].",
       request("mcp", signal=None, last_action_at="2026-08-19T12:00:01Z"),
       decision(1, 1, "blocked", ["signal_missing", "cooldown"],
                [SIG_MISSING] + MCP_CAPS + [Q_LLM, C_EXT, SAFE]))
    ok("cooldown/null-last-action",
       "last_action_at null means no cooldown applies.",
       request(cd, last_action_at=None),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("cooldown/at-target-ignores-cooldown",
       "At target the decision is hold [at_target] even inside a cooldown.",
       request(cd, value=100, last_action_at=NOW),
       decision(1, 1, "hold", ["at_target"], MCP_OK))
    ok("cooldown/active-sessions-checked-first",
       "Active sessions (C2) are checked before the cooldown (C3).",
       request(cd, current=3, value=0, continuity=cont(active_sessions=1), last_action_at=NOW),
       decision(3, 3, "blocked", ["active_sessions_block_drain"], MCP_OK, drain=True))
    ok("cooldown/checked-before-capacity",
       "Inside a cooldown an exhausted axis is not reported: hold [cooldown].",
       request(cd, capacities=caps_for(cd, over={"cpu_milli": dict(allocatable=1000)}), last_action_at=NOW),
       decision(1, 1, "hold", ["cooldown"], MCP_OK))
    ok("cooldown/checked-before-drain-bound",
       "Inside a cooldown the drain bound is not reached: hold [cooldown], drain_required false.",
       request(contract("mcp", policy__scale_down_cooldown_s=300, policy__drain_seconds=301),
               current=3, value=0, last_action_at=NOW),
       decision(3, 3, "hold", ["cooldown"], MCP_OK))
    api0 = contract("api", policy__min_replicas=0, policy__allow_scale_from_zero=False,
                    policy__scale_up_cooldown_s=30)
    ok("cooldown/scale-from-zero-checked-first",
       "scale_from_zero_disabled (C1) is reported before the cooldown (C3).",
       request(api0, current=0, value=100, last_action_at=NOW),
       decision(0, 0, "blocked", ["scale_from_zero_disabled"], API_OK))
    ok("cooldown/offset-last-action-exactly-elapsed",
       "last_action_at 13:59:30+02:00 is 11:59:30Z: exactly 30 s, the scale-up proceeds.",
       request(cd, last_action_at="2026-08-19T13:59:30+02:00"),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("cooldown/offset-last-action-one-microsecond-short",
       "last_action_at 13:59:30.000001+02:00 is one microsecond short of 30 s: hold.",
       request(cd, last_action_at="2026-08-19T13:59:30.000001+02:00"),
       decision(1, 1, "hold", ["cooldown"], MCP_OK))
    day = contract("mcp", policy__scale_up_cooldown_s=86400)
    ok("cooldown/one-day-cooldown-exactly-elapsed",
       "A 86400 s cooldown, the maximum, has passed exactly one day later.",
       request(day, last_action_at="2026-08-18T12:00:00Z"),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("cooldown/one-day-cooldown-one-microsecond-short",
       "A 86400 s cooldown one microsecond short of a day: hold.",
       request(day, last_action_at="2026-08-18T12:00:00.000001Z"),
       decision(1, 1, "hold", ["cooldown"], MCP_OK))


# ================================================================ zero/

def group_zero():
    z = contract("api", policy__min_replicas=0, policy__allow_scale_to_zero=True)
    z_nofrom = contract("api", policy__min_replicas=0, policy__allow_scale_to_zero=True,
                        policy__allow_scale_from_zero=False)
    m0 = contract("api", policy__min_replicas=0)
    ok("zero/to-zero-is-step-capped",
       "With scale-to-zero allowed, an idle unit at 3 steps down to 2, not 0.",
       request(z, current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], API_OK))
    ok("zero/idle-at-zero-holds",
       "Scale-to-zero allowed, at 0 with no demand: hold [at_target].",
       request(z, current=0, value=0),
       decision(0, 0, "hold", ["at_target"], API_OK))
    ok("zero/positive-value-keeps-one",
       "Scale-to-zero allowed but value 1 > 0: ceil is 1, hold at 1.",
       request(z, current=1, value=1),
       decision(1, 1, "hold", ["at_target"], API_OK))
    ok("zero/from-zero-scales-up",
       "From 0, value 50 over target 100 wants 1: scale up (scaling from zero is allowed by default).",
       request(z, current=0, value=50),
       decision(0, 1, "scale_up", ["target_tracking"], API_OK))
    ok("zero/from-zero-is-step-capped",
       "From 0, a demand of 4 replicas is capped to 1 by scale_up_step 1.",
       request(z, current=0, value=1000),
       decision(0, 1, "scale_up", ["target_tracking"], API_OK))
    ok("zero/from-zero-disabled-blocks-with-to-zero",
       "Scale-to-zero allowed, scale-from-zero disabled, demand at 0: blocked.",
       request(z_nofrom, current=0, value=100),
       decision(0, 0, "blocked", ["scale_from_zero_disabled"], API_OK))
    ok("zero/idle-at-zero-with-from-zero-disabled-holds",
       "Scale-from-zero disabled does not matter when an idle unit at 0 stays at 0.",
       request(z_nofrom, current=0, value=0),
       decision(0, 0, "hold", ["at_target"], API_OK))
    ok("zero/floor-raised-to-one-scales-up-from-zero",
       "min_replicas 0 without scale-to-zero: the floor is 1, so an idle unit at 0 scales up to 1.",
       request(m0, current=0, value=0),
       decision(0, 1, "scale_up", ["target_tracking"], API_OK))
    ok("zero/floor-raised-to-one-from-zero-disabled",
       "The same idle unit at 0 with scale-from-zero disabled is blocked.",
       request(contract("api", policy__min_replicas=0, policy__allow_scale_from_zero=False),
               current=0, value=0),
       decision(0, 0, "blocked", ["scale_from_zero_disabled"], API_OK))
    ok("zero/min-zero-without-to-zero-holds-at-one",
       "min_replicas 0 without scale-to-zero: an idle unit at 1 holds.",
       request(m0, current=1, value=0),
       decision(1, 1, "hold", ["at_target"], API_OK))
    ok("zero/from-zero-growth-checks-capacity",
       "Growth from 0 is checked against capacity: 5 available cannot fit one replica of 10.",
       request(m0, current=0, value=250, capacities=caps_for(m0, over={"cpu_milli": dict(reserved=9995)})),
       decision(0, 0, "blocked", ["capacity_exhausted"], API_OK))
    ok("zero/signal-missing-at-zero",
       "At 0 replicas a missing signal blocks and desired stays 0.",
       request(m0, current=0, signal=None),
       decision(0, 0, "blocked", ["signal_missing"], [SIG_MISSING] + API_CAPS + [SAFE]))
    mz = contract("mcp", policy__min_replicas=0, policy__allow_scale_to_zero=True)
    ok("zero/session-unit-to-zero-drains",
       "An MCP gateway allowed to reach zero goes 1 -> 0 with drain_required.",
       request(mz, current=1, value=0),
       decision(1, 0, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    ok("zero/session-unit-to-zero-blocked-by-session",
       "The same gateway with one active session is blocked with drain_required.",
       request(mz, current=1, value=0, continuity=cont(active_sessions=1)),
       decision(1, 1, "blocked", ["active_sessions_block_drain"], MCP_OK, drain=True))
    ok("zero/min-replicas-is-the-floor",
       "min_replicas 2: an idle unit at 3 steps down to 2.",
       request(contract("api", policy__min_replicas=2), current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], API_OK))
    ok("zero/min-replicas-floor-holds",
       "min_replicas 2: an idle unit at 2 holds.",
       request(contract("api", policy__min_replicas=2), current=2, value=0),
       decision(2, 2, "hold", ["at_target"], API_OK))


# ================================================================ bounds/

def big_caps(c, **over):
    """Capacity observations of 10^15 allocatable, nothing reserved, for every required axis."""
    base = dict(allocatable=E15, reserved=0, used=0)
    return caps_for(c, over={a: dict(base, **over.get(a, {})) for a in c["required_capacity_axes"]})


def group_bounds():
    api_max = contract("api", policy__max_replicas=10000)
    ok("bounds/replicas-10000-holds-at-max",
       "current_replicas 10000 = max_replicas 10000 with a huge demand holds.",
       request(api_max, current=10000, value=E15),
       decision(10000, 10000, "hold", ["at_target"], API_OK))
    ok("bounds/min-and-max-10000-hold",
       "min_replicas = max_replicas = 10000: an idle unit at 10000 holds at its floor.",
       request(contract("api", policy__min_replicas=10000, policy__max_replicas=10000),
               current=10000, value=0),
       decision(10000, 10000, "hold", ["at_target"], API_OK))
    ok("bounds/above-max-replicas-steps-down",
       "current_replicas 10 above max_replicas 8 is allowed and steps down by one.",
       request("mcp", current=10),
       decision(10, 9, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    ok("bounds/step-10000-down-to-floor",
       "scale_down_step 10000 takes an idle unit from 10000 straight to its floor of 1.",
       request(contract("api", policy__max_replicas=10000, policy__scale_down_step=10000),
               current=10000, value=0),
       decision(10000, 1, "scale_down", ["target_tracking"], API_OK))
    ok("bounds/signal-value-1e15-accepted",
       "A signal value of exactly 10^15 is valid; the demand is clamped to max_replicas.",
       request("mcp", value=E15),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    tgt = contract("api", policy__max_replicas=10000, policy__scale_up_step=10000, policy__target=E12)
    ok("bounds/target-1e12-exact-division",
       "10^15 over a target of 10^12 is exactly 1000 replicas (not 1001).",
       request(tgt, value=E15, capacities=big_caps(tgt)),
       decision(1, 1000, "scale_up", ["target_tracking"], API_OK))
    huge = contract("api", policy__min_replicas=0, policy__max_replicas=10000,
                    policy__scale_up_step=10000, policy__target=1)
    over = copy.deepcopy(huge)
    over["replica_demands"][0]["per_replica"] = E15
    ok("bounds/growth-product-exceeds-64-bits",
       "10000 additional replicas x 10^15 per replica = 10^19 (beyond i64) exceeds 10^15 available.",
       request(over, current=0, value=E15, capacities=big_caps(over)),
       decision(0, 0, "blocked", ["capacity_exhausted"], API_OK))
    fits = copy.deepcopy(huge)
    for d in fits["replica_demands"]:
        d["per_replica"] = 10 ** 11
    ok("bounds/growth-product-fills-1e15-exactly",
       "0 -> 10000 replicas at 10^11 each needs exactly the 10^15 available on every axis.",
       request(fits, current=0, value=E15, capacities=big_caps(fits)),
       decision(0, 10000, "scale_up", ["target_tracking"], API_OK))
    qhuge = copy.deepcopy(huge)
    for d in qhuge["replica_demands"]:
        d["per_replica"] = 1
    qhuge["quotas"] = [tenant_binding(per_replica=E15)]
    ok("bounds/quota-projection-exceeds-64-bits",
       "A tenant quota: 0 used + 10000 x 10^15 = 10^19 exceeds the 10^15 limit.",
       request(qhuge, current=0, value=E15, capacities=big_caps(qhuge),
               quotas=[quo("tenant:acme", "tenant", limit=E15, used=0)]),
       decision(0, 0, "blocked", ["capacity_exhausted"],
                [SIG_RR] + API_CAPS + [A("quota", "quota:tenant-acme", "tenant"), SAFE]))
    ph = contract("connector", policy__max_replicas=10000, policy__scale_up_step=10000, policy__target=1)
    for d in ph["replica_demands"]:
        d["per_replica"] = 1
    ph["quotas"][0]["per_replica"] = E15
    ok("bounds/provider-projection-exceeds-64-bits",
       "A provider quota: (10^15 - 1) used + 9999 x 10^15 exceeds the 10^15 limit; the limit is never multiplied.",
       request(ph, value=E15, capacities=big_caps(ph),
               quotas=[quo("provider:crm", limit=E15, used=E15 - 1)]),
       decision(1, 1, "blocked", ["provider_quota_exhausted"],
                [A("signal", "metrics:queue_depth", "queue_depth"), CAP["cpu_milli"], CAP["memory_mib"],
                 CAP["upstream_rate"], A("quota", "quota:provider-crm", "provider_global"), SAFE]))
    zd = contract("api")
    zd["replica_demands"][2]["per_replica"] = 0
    ok("bounds/zero-demand-on-full-axis",
       "A demand of 0 on an axis with 10^15 allocatable and all of it reserved fits (0 > 0 is false).",
       request(zd, capacities=caps_for(zd, over={"session_slots": dict(allocatable=E15, reserved=E15,
                                                                       used=E15)})),
       decision(1, 2, "scale_up", ["target_tracking"], API_OK))
    ok("bounds/sessions-and-streams-at-1e12",
       "active_sessions and active_streams at their 10^12 bound are valid and block the drain.",
       request("mcp", current=3, value=0, continuity=cont(active_sessions=E12, active_streams=E12)),
       decision(3, 3, "blocked", ["active_sessions_block_drain"], MCP_OK, drain=True))
    ing = contract("ingest", partition_lease__partitions_per_replica=10 ** 6,
                   partition_lease__lease_ttl_s=86400)
    ok("bounds/partition-and-lease-at-bounds",
       "partitions_per_replica 10^6 and lease_ttl_s 86400 are valid.",
       request(ing),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "metrics:queue_depth", "queue_depth"), CAP["cpu_milli"], CAP["memory_mib"],
                 CAP["partition_slots"], CAP["lease_slots"], CAP["engine_write_bytes_per_s"],
                 CAP["fsync_iops"], SAFE]))
    secs = contract("mcp", policy__drain_seconds=86400, continuity__max_drain_seconds=86400,
                    policy__scale_up_cooldown_s=86400, policy__scale_down_cooldown_s=86400)
    ok("bounds/seconds-at-86400",
       "Every *_seconds field at 86400 is valid; a drain equal to its bound passes.",
       request(secs, current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], MCP_OK, drain=True))
    med = contract("media")
    ok("bounds/ppm-at-one-million-accepted",
       "gpu_utilization_ppm of exactly 1000000 is valid: ceil(1000000 / 300000) = 4, step-capped to 3.",
       request(med, signal=sig("gpu_utilization_ppm", 1000000)),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "metrics:gpu_utilization_ppm", "gpu_utilization_ppm"), CAP["cpu_milli"],
                 CAP["memory_mib"], CAP["gpu_count"], CAP["gpu_memory_mib"], SAFE]))

    # Out-of-bounds integers: invalid_field.
    mcp_r = request("mcp")
    for name, path, value, desc in [
        ("target-zero", "contract.policy.target", 0, "policy.target 0 is below its bound of 1"),
        ("target-over-1e12", "contract.policy.target", E12 + 1, "policy.target 10^12 + 1 is over its bound"),
        ("target-huge-literal", "contract.policy.target", 10 ** 30, "an integer literal too large for any bound"),
        ("min-replicas-negative", "contract.policy.min_replicas", -1, "min_replicas -1 is below its bound"),
        ("max-replicas-over-10000", "contract.policy.max_replicas", 10001, "max_replicas 10001 is over its bound"),
        ("scale-up-step-zero", "contract.policy.scale_up_step", 0, "scale_up_step 0 is below its bound of 1"),
        ("scale-down-step-zero", "contract.policy.scale_down_step", 0, "scale_down_step 0 is below its bound of 1"),
        ("scale-up-cooldown-over-86400", "contract.policy.scale_up_cooldown_s", 86401, "a cooldown of 86401 s is over MAX_SECONDS"),
        ("scale-down-cooldown-negative", "contract.policy.scale_down_cooldown_s", -1, "a negative cooldown is out of bounds"),
        ("drain-seconds-over-86400", "contract.policy.drain_seconds", 86401, "drain_seconds 86401 is over MAX_SECONDS"),
        ("max-drain-seconds-over-86400", "contract.continuity.max_drain_seconds", 86401, "max_drain_seconds 86401 is over MAX_SECONDS"),
        ("version-zero", "contract.version", 0, "contract version 0 is below its bound of 1"),
        ("version-2pow31", "contract.version", 2 ** 31, "contract version 2^31 is over its bound of 2^31 - 1"),
        ("demand-per-replica-over-1e15", "contract.replica_demands[0].per_replica", E15 + 1, "a replica demand of 10^15 + 1 is over its bound"),
        ("demand-per-replica-negative", "contract.replica_demands[0].per_replica", -1, "a negative replica demand is out of bounds"),
        ("quota-per-replica-over-1e15", "contract.quotas[0].per_replica", E15 + 1, "a quota binding per_replica of 10^15 + 1 is over its bound"),
        ("capacity-allocatable-over-1e15", "capacities[0].allocatable", E15 + 1, "allocatable 10^15 + 1 is over its bound"),
        ("capacity-used-negative", "capacities[0].used", -1, "a negative used (still <= reserved) is out of bounds"),
        ("quota-limit-over-1e15", "quotas[0].limit", E15 + 1, "a quota limit of 10^15 + 1 is over its bound"),
        ("quota-used-negative", "quotas[0].used", -1, "a negative quota usage is out of bounds"),
        ("active-sessions-over-1e12", "continuity.active_sessions", E12 + 1, "active_sessions 10^12 + 1 is over its bound"),
        ("active-streams-over-1e12", "continuity.active_streams", E12 + 1, "active_streams 10^12 + 1 is over its bound"),
    ]:
        bad("bounds/" + name, "invalid_field: " + desc + ".", edits(mcp_r, [(path, value)]), "invalid_field")
    ing_r = request("ingest")
    bad("bounds/lease-ttl-over-86400", "invalid_field: lease_ttl_s 86401 is over MAX_SECONDS.",
        edits(ing_r, [("contract.partition_lease.lease_ttl_s", 86401)]), "invalid_field")
    bad("bounds/partitions-per-replica-over-1e6", "invalid_field: partitions_per_replica 10^6 + 1 is over its bound.",
        edits(ing_r, [("contract.partition_lease.partitions_per_replica", 10 ** 6 + 1)]), "invalid_field")
    api_q = request(api_with_quotas(*[tenant_binding("tenant:t%02d" % i, per_replica=0) for i in range(17)]))
    bad("bounds/seventeen-quota-bindings", "invalid_field: 17 quota bindings exceed MAX_QUOTAS 16.",
        api_q, "invalid_field")


# ================================================================ identity/

def retime(req, now, obs, exp):
    """A copy of req whose now and every observation window are replaced."""
    req = copy.deepcopy(req)
    req["now"] = now
    for o in [req.get("signal"), req.get("continuity"), req.get("safety")] + \
            req.get("capacities", []) + req.get("quotas", []):
        if o:
            o["observed_at"], o["expires_at"] = obs, exp
    return req


def group_identity():
    t01_id = _T01["expect"]["decision"]["contract_id"]
    c = contract("mcp")
    assert seal.contract_id(c) == t01_id
    cid, cdig = seal.contract_id(c), seal.contract_digest(c)
    up3 = decision(1, 3, "scale_up", ["target_tracking"], MCP_OK)
    ok("identity/contract-id-supplied-matching",
       "A supplied contract_id equal to the computed one is accepted.",
       request(contract("mcp", contract_id=cid)), up3)
    ok("identity/contract-digest-supplied-matching",
       "A supplied contract_digest equal to the computed one is accepted.",
       request(contract("mcp", contract_digest=cdig)), up3)
    ok("identity/both-supplied-matching",
       "contract_id and contract_digest both supplied and both matching are accepted.",
       request(contract("mcp", contract_id=cid, contract_digest=cdig)), up3)
    ok("identity/empty-identity-fields-computed",
       "contract_id and contract_digest given as empty strings are computed.",
       request(contract("mcp", contract_id="", contract_digest="")), up3)
    bad("identity/contract-id-differs",
        "A well-formed contract_id that differs from the computed one is identity_mismatch.",
        request(contract("mcp", contract_id="scale-unit:" + "0" * 32)),
        "identity_mismatch", "contract_id does not match immutable identity")
    bad("identity/contract-id-free-text-differs",
        "Any non-empty contract_id other than the computed one is identity_mismatch.",
        request(contract("mcp", contract_id="my-contract")),
        "identity_mismatch", "contract_id does not match immutable identity")
    bad("identity/contract-id-100-chars-differs",
        "A 100-character contract_id is within its length limit but differs: identity_mismatch.",
        request(contract("mcp", contract_id="scale-unit:" + "0" * 89)),
        "identity_mismatch", "contract_id does not match immutable identity")
    bad("identity/contract-id-101-chars",
        "A 101-character contract_id is over its length limit: invalid_field.",
        request(contract("mcp", contract_id="scale-unit:" + "0" * 90)), "invalid_field")
    bad("identity/contract-id-of-another-contract",
        "The contract_id of t01 on a contract with a different version is identity_mismatch.",
        request(contract("mcp", contract_id=cid, version=2)),
        "identity_mismatch", "contract_id does not match immutable identity")
    bad("identity/contract-digest-differs",
        "A well-formed contract_digest that differs from the computed one is identity_mismatch.",
        request(contract("mcp", contract_digest="sha256:" + "0" * 64)),
        "identity_mismatch", "contract_digest does not match immutable identity")
    bad("identity/contract-digest-upper-case",
        "The computed contract_digest written in upper-case hex is invalid_digest.",
        request(contract("mcp", contract_digest="sha256:" + cdig[7:].upper())), "invalid_digest")
    bad("identity/contract-digest-short",
        "A contract_digest with 63 hex digits is invalid_digest.",
        request(contract("mcp", contract_digest=cdig[:-1])), "invalid_digest")
    rev = contract("mcp")
    rev["allowed_signals"].reverse()
    assert seal.contract_id(rev) == t01_id
    ok("identity/allowed-signals-order-irrelevant",
       "allowed_signals are sorted in the identity: reversed, the contract_id is t01's.",
       request(rev), up3)
    dem = contract("mcp")
    dem["replica_demands"].reverse()
    assert seal.contract_id(dem) != t01_id
    ok("identity/demand-order-is-identity",
       "replica_demands keep declaration order in the identity: reversed, the contract_id changes.",
       request(dem), up3)
    v2 = contract("mcp", version=2)
    assert seal.contract_id(v2) != t01_id
    ok("identity/version-is-identity", "version 2 changes the contract_id.", request(v2), up3)
    ok("identity/version-max", "version 2^31 - 1 is valid.", request(contract("mcp", version=2 ** 31 - 1)), up3)
    full = contract("api")
    full = {
        "schema_version": "1", "unit_ref": full["unit_ref"], "surface": "api_gateway", "version": 1,
        "policy": {"min_replicas": 1, "max_replicas": 4, "target": 100, "target_signal": "request_rate",
                   "scale_up_step": 1, "scale_down_step": 1, "scale_up_cooldown_s": 0,
                   "scale_down_cooldown_s": 0, "drain_seconds": 0, "allow_scale_to_zero": False,
                   "allow_scale_from_zero": True},
        "allowed_signals": full["allowed_signals"],
        "required_capacity_axes": full["required_capacity_axes"],
        "replica_demands": full["replica_demands"], "quotas": [],
        "partition_lease": {"partitioned": False, "partitions_per_replica": 0, "lease_required": False,
                            "lease_ttl_s": 0, "fencing_required": False},
        "continuity": {"mode": "stateless", "external_store_ref": None, "drain_required": False,
                       "block_scale_down_with_active": False, "max_drain_seconds": 300},
        "safety_required": True, "engine_authority_axes": [], "contract_id": "", "contract_digest": "",
    }
    assert seal.contract_id(full) == _T08A["expect"]["decision"]["contract_id"]
    ok("identity/defaults-written-out",
       "The t08a contract with every default written out (external_store_ref null included) has t08a's contract_id.",
       request(full), decision(1, 2, "scale_up", ["target_tracking"], API_OK))

    # evaluated_at: now converted to UTC, .ffffff only when microseconds are non-zero.
    for name, now, evaluated, desc in [
        ("positive-offset", "2026-08-19T14:00:00+02:00", EVAL, "now at +02:00 is written in UTC"),
        ("negative-offset-crosses-day", "2026-08-18T23:00:00-13:00", EVAL,
         "now at -13:00 on the previous day converts to 12:00 UTC"),
        ("max-offset", "2026-08-20T11:59:00+23:59", EVAL, "an offset of +23:59 is valid and converted"),
        ("minus-zero-offset", "2026-08-19T12:00:00-00:00", EVAL, "-00:00 is UTC"),
        ("one-fraction-digit", "2026-08-19T12:00:00.5Z", "2026-08-19T12:00:00.500000+00:00",
         "one fractional digit is written as six"),
        ("two-fraction-digits", "2026-08-19T12:00:00.25Z", "2026-08-19T12:00:00.250000+00:00",
         "two fractional digits are written as six"),
        ("three-fraction-digits-with-offset", "2026-08-19T14:00:00.123+02:00",
         "2026-08-19T12:00:00.123000+00:00", "three fractional digits with an offset"),
        ("four-fraction-digits", "2026-08-19T12:00:00.0001Z", "2026-08-19T12:00:00.000100+00:00",
         "four fractional digits are written as six"),
        ("five-fraction-digits", "2026-08-19T12:00:00.12345Z", "2026-08-19T12:00:00.123450+00:00",
         "five fractional digits are written as six"),
        ("one-microsecond", "2026-08-19T12:00:00.000001Z", "2026-08-19T12:00:00.000001+00:00",
         "six fractional digits are kept"),
        ("zero-fraction-omitted", "2026-08-19T12:00:00.000000Z", EVAL,
         "a zero fraction is not written"),
        ("zero-single-digit-fraction-omitted", "2026-08-19T12:00:00.0Z", EVAL,
         "a single zero fractional digit is not written"),
    ]:
        ok("identity/evaluated-at-" + name, "evaluated_at: " + desc + ".",
           request("mcp", now=now), decision(1, 3, "scale_up", ["target_tracking"], MCP_OK,
                                             evaluated_at=evaluated))
    ok("identity/leap-day-2028",
       "2028-02-29 is a real day: now and every window on it are valid.",
       retime(request("mcp"), "2028-02-29T12:00:00Z", "2028-02-29T11:59:00Z", "2028-02-29T12:05:00Z"),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK, evaluated_at="2028-02-29T12:00:00+00:00"))
    ok("identity/century-leap-day-2000",
       "2000-02-29 is a real day (2000 is a leap year): valid as last_action_at.",
       request("mcp", last_action_at="2000-02-29T00:00:00Z"), up3)
    ok("identity/lower-time-bound",
       "now at 2000-01-01T00:00:00Z, the first supported instant, with observations from that instant.",
       retime(request("mcp"), "2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "2000-01-01T00:05:00Z"),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK, evaluated_at="2000-01-01T00:00:00+00:00"))
    ok("identity/upper-time-bound",
       "Windows expiring at 2300-12-31T23:59:59.999999Z, the last supported instant, are valid.",
       retime(request("mcp"), "2300-12-31T23:00:00Z", "2300-12-31T22:59:00Z", "2300-12-31T23:59:59.999999Z"),
       decision(1, 3, "scale_up", ["target_tracking"], MCP_OK, evaluated_at="2300-12-31T23:00:00+00:00"))
    ok("identity/local-year-1999-utc-2000",
       "observed_at 1999-12-31T23:30:00-01:00 is 2000-01-01T00:30:00Z: inside the range after conversion.",
       request("mcp", signal=sig(obs="1999-12-31T23:30:00-01:00")), up3)


# ================================================================ differences/

def group_differences():
    # 10.1: a replica demand on an axis outside required_capacity_axes.
    g = contract("api")
    g["replica_demands"].append({"axis": "gpu_count", "per_replica": 1})
    ok("differences/undeclared-axis-demand-missing-blocks-growth",
       "SPEC 10.1: a demand on gpu_count (not a required axis) with no observation blocks growth with capacity_missing.",
       request(g),
       decision(1, 1, "blocked", ["capacity_missing"], API_OK))
    ok("differences/undeclared-axis-demand-stale-blocks-growth",
       "SPEC 10.1: the same demand with an expired observation blocks growth with capacity_stale.",
       request(g, capacities=caps_for(g, extra=[cap("gpu_count", 8, 0, obs=OLD_OBS, exp=OLD_EXP)])),
       decision(1, 1, "blocked", ["capacity_stale"], API_OK))
    ok("differences/undeclared-axis-demand-future-observation-stale",
       "SPEC 10.1: an observation of that axis from the future is stale too.",
       request(g, capacities=caps_for(g, extra=[cap("gpu_count", 8, 0, obs=FUTURE_OBS)])),
       decision(1, 1, "blocked", ["capacity_stale"], API_OK))
    g0 = copy.deepcopy(g)
    g0["replica_demands"][3]["per_replica"] = 0
    ok("differences/undeclared-axis-zero-demand-still-missing",
       "SPEC 10.1: a demand of 0 per replica on an unobserved axis is still capacity_missing.",
       request(g0),
       decision(1, 1, "blocked", ["capacity_missing"], API_OK))
    ok("differences/undeclared-axis-demand-fresh-is-checked",
       "SPEC 10.1: with a fresh observation the demand is checked and fits; it adds no evidence entry.",
       request(g, capacities=caps_for(g, extra=[cap("gpu_count", 8, 0)])),
       decision(1, 2, "scale_up", ["target_tracking"], API_OK))
    ok("differences/undeclared-axis-demand-fresh-exhausted",
       "SPEC 10.1: with a fresh observation and no headroom the demand is capacity_exhausted.",
       request(g, capacities=caps_for(g, extra=[cap("gpu_count", 8, 8)])),
       decision(1, 1, "blocked", ["capacity_exhausted"], API_OK))
    ok("differences/undeclared-axis-demand-missing-allows-scale-down",
       "SPEC 10.1 applies to growth only: the unobserved demand axis does not stop a scale-down.",
       request(g, current=3, value=0),
       decision(3, 2, "scale_down", ["target_tracking"], API_OK))
    gf = contract("api")
    gf["replica_demands"].insert(0, {"axis": "gpu_count", "per_replica": 1})
    ok("differences/undeclared-axis-missing-stops-demand-loop",
       "SPEC 10.1: a missing demand axis declared first stops the demand loop before an exhausted cpu demand.",
       request(gf, capacities=caps_for(gf, over={"cpu_milli": dict(reserved=10000)})),
       decision(1, 1, "blocked", ["capacity_missing"], API_OK))
    ok("differences/exhausted-demand-stops-before-undeclared-axis",
       "SPEC 10.1: an exhausted cpu demand declared before the unobserved axis stops the loop first.",
       request(g, capacities=caps_for(g, over={"cpu_milli": dict(reserved=10000)})),
       decision(1, 1, "blocked", ["capacity_exhausted"], API_OK))
    gq = copy.deepcopy(g)
    gq["quotas"] = [tenant_binding(per_replica=0)]
    ok("differences/undeclared-axis-missing-then-quota-steps-run",
       "SPEC 10.1: after the demand loop stops on capacity_missing, the quota steps still run.",
       request(gq, quotas=[quo("tenant:acme", "tenant", limit=100, used=100)]),
       decision(1, 1, "blocked", ["capacity_missing", "capacity_exhausted"],
                [SIG_RR] + API_CAPS + [A("quota", "quota:tenant-acme", "tenant"), SAFE]))
    qr = copy.deepcopy(_T05["request"])
    qr["contract"]["replica_demands"].insert(0, {"axis": "gpu_count", "per_replica": 1})
    ok("differences/undeclared-axis-missing-then-engine-saturated",
       "SPEC 10.1: after capacity_missing the engine authority step still runs on the t05 reader.",
       qr, decision(1, 1, "blocked", ["capacity_missing", "engine_authority_saturated"], QR_OK))

    # 10.2: exact integer ceiling at the top of the value range.
    big = contract("api", policy__max_replicas=10000, policy__scale_up_step=10000, policy__target=E12)
    for name, value, target, want, desc in [
        ("ceil-just-below-integer", E15 - 1, E12, 1000, "(10^15 - 1) / 10^12 = 999.999999999999 rounds up to 1000"),
        ("ceil-just-above-integer", E15, E12 - 1, 1001, "10^15 / (10^12 - 1) = 1000.000001... rounds up to 1001"),
        ("ceil-one-over-target", E12 + 1, E12, 2, "(10^12 + 1) / 10^12 rounds up to 2"),
        ("ceil-exact-multiple", 999 * E12, E12, 999, "999 x 10^12 / 10^12 is exactly 999"),
    ]:
        c = copy.deepcopy(big)
        c["policy"]["target"] = target
        ok("differences/" + name, "SPEC 10.2 exact ceiling: " + desc + ".",
           request(c, value=value, capacities=big_caps(c)),
           decision(1, want, "scale_up", ["target_tracking"], API_OK))

    # 10.4: signal values above 10^15; the ppm bound is checked first.
    bad("differences/signal-value-over-1e15",
        "SPEC 10.4: a request_rate of 10^15 + 1 is invalid_field.",
        request("mcp", value=E15 + 1), "invalid_field")
    bad("differences/ppm-signal-over-1e15-ppm-check-first",
        "SPEC 10.4: an error_rate_ppm of 10^15 + 1 fails the one-million check first (invalid_observation).",
        request("mcp", signal=sig("error_rate_ppm", E15 + 1)),
        "invalid_observation", "must be bounded to one million ppm")
    bad("differences/gpu-ppm-signal-over-1e15-ppm-check-first",
        "SPEC 10.4: a gpu_utilization_ppm of 10^15 + 1 fails the one-million check first.",
        request("media", signal=sig("gpu_utilization_ppm", E15 + 1)),
        "invalid_observation", "must be bounded to one million ppm")

    # 10.5: at most 64 capacity and 64 quota observations.
    api_c = contract("api")
    ok("differences/64-quota-observations-accepted",
       "SPEC 10.5: 64 quota observations (none bound by the contract) are accepted and ignored.",
       request(api_c, quotas=[quo("tenant:q%02d" % i, "tenant") for i in range(64)]),
       decision(1, 2, "scale_up", ["target_tracking"], API_OK))
    bad("differences/65-quota-observations",
        "SPEC 10.5: 65 quota observations with distinct quota_refs are invalid_field.",
        request(api_c, quotas=[quo("tenant:q%02d" % i, "tenant") for i in range(65)]), "invalid_field")
    axes = ["cpu_milli", "memory_mib", "session_slots"]
    many = [cap(axes[i % 3], ref="capacity:copy-%02d" % i) for i in range(65)]
    bad("differences/65-capacity-observations",
        "SPEC 10.5: 65 capacity observations are invalid_field (the list bound is a shape check, before duplicates).",
        request(api_c, capacities=many), "invalid_field")


# ================================================================ validation/

def group_validation():
    mcp_r = request("mcp")
    api_r = request("api")
    ing_r = request("ingest")
    qr_r = copy.deepcopy(_T05["request"])

    def v(name, desc, req, code, msg=None):
        bad("validation/" + name, desc, req, code, msg)

    # SPEC 4.1, in order.
    v("policy-min-exceeds-max", "min_replicas 5 over max_replicas 4 (current 5).",
      edits(api_r, [("contract.policy.min_replicas", 5), ("current_replicas", 5)]),
      "invalid_policy", "min_replicas cannot exceed max_replicas")
    v("policy-scale-to-zero-needs-min-zero", "allow_scale_to_zero with min_replicas 1.",
      edits(api_r, [("contract.policy.allow_scale_to_zero", True)]),
      "invalid_policy", "scale-to-zero requires min_replicas=0")
    v("policy-scale-up-step-over-max", "scale_up_step 9 over max_replicas 8.",
      edits(mcp_r, [("contract.policy.scale_up_step", 9)]),
      "invalid_policy", "scale_up_step cannot exceed max_replicas")
    v("policy-scale-down-step-over-max", "scale_down_step 5 over max_replicas 4.",
      edits(api_r, [("contract.policy.scale_down_step", 5)]),
      "invalid_policy", "scale_down_step cannot exceed max_replicas")
    # SPEC 4.2 parts.
    v("quota-provider-multiplicative", "A provider-global binding declared multiplicative.",
      edits(mcp_r, [("contract.quotas[0].multiplicative", True)]),
      "invalid_contract", "provider-global quota cannot be multiplied per replica")
    v("quota-provider-zero-demand", "A provider-global binding with per_replica 0.",
      edits(mcp_r, [("contract.quotas[0].per_replica", 0)]),
      "invalid_contract", "provider-global quota requires a declared per-replica demand")
    v("partition-without-partitions", "partitioned with partitions_per_replica 0.",
      edits(ing_r, [("contract.partition_lease.partitions_per_replica", 0)]),
      "invalid_contract", "partitioned surfaces require partitions_per_replica")
    v("lease-without-ttl", "lease_required with lease_ttl_s 0.",
      edits(ing_r, [("contract.partition_lease.lease_ttl_s", 0)]),
      "invalid_contract", "leased surfaces require a TTL and fencing")
    v("lease-without-fencing", "lease_required without fencing (on api_gateway, which needs no lease).",
      edits(api_r, [("contract.partition_lease", {"lease_required": True, "lease_ttl_s": 30})]),
      "invalid_contract", "leased surfaces require a TTL and fencing")
    v("fencing-without-lease", "fencing_required without lease_required.",
      edits(api_r, [("contract.partition_lease", {"fencing_required": True})]),
      "invalid_contract", "fencing cannot be declared without leases")
    v("externalized-without-store", "externalized continuity with no store reference.",
      edits(mcp_r, [("contract.continuity.external_store_ref", DEL)]),
      "invalid_contract", "externalized continuity requires a store reference")
    v("externalized-null-store", "externalized continuity with external_store_ref null.",
      edits(mcp_r, [("contract.continuity.external_store_ref", None)]),
      "invalid_contract", "externalized continuity requires a store reference")
    v("session-affine-with-store", "session_affine continuity declaring a store reference.",
      edits(mcp_r, [("contract.continuity.mode", "session_affine")]),
      "invalid_contract", "only externalized continuity may declare a store reference")
    v("stateless-blocking-on-sessions", "stateless continuity with block_scale_down_with_active true.",
      edits(api_r, [("contract.continuity.block_scale_down_with_active", True)]),
      "invalid_contract", "stateless continuity cannot block scale-down on active sessions")
    v("stateless-default-blocks-on-sessions", "stateless continuity leaving block_scale_down_with_active at its default true.",
      edits(api_r, [("contract.continuity", {"mode": "stateless"})]),
      "invalid_contract", "stateless continuity cannot block scale-down on active sessions")
    # SPEC 4.3 contract checks.
    v("duplicate-allowed-signal", "request_rate listed twice in allowed_signals.",
      edits(mcp_r, [("contract.allowed_signals[7]", "request_rate")]),
      "invalid_contract", "allowed signal names must be unique")
    v("duplicate-required-axis", "cpu_milli listed twice in required_capacity_axes.",
      edits(mcp_r, [("contract.required_capacity_axes[4]", "cpu_milli")]),
      "invalid_contract", "required capacity axes must be unique")
    v("signal-outside-profile", "queue_depth in an mcp_gateway contract's allowed_signals.",
      edits(mcp_r, [("contract.allowed_signals[7]", "queue_depth")]),
      "invalid_contract", "mcp_gateway contract declares a signal outside its allowed vocabulary")
    v("empty-allowed-signals", "An empty allowed_signals list (check 3 runs before check 4).",
      edits(api_r, [("contract.allowed_signals", [])]),
      "invalid_contract", "api_gateway contract declares a signal outside its allowed vocabulary")
    v("target-signal-not-allowed", "target_signal p95_latency_ms not in allowed_signals.",
      edits(api_r, [("contract.allowed_signals", ["request_rate", "in_flight"]),
                    ("contract.policy.target_signal", "p95_latency_ms")]),
      "invalid_contract", "target_signal must be in allowed_signals")
    v("required-axis-omitted", "mcp_gateway without continuity_slots in required_capacity_axes (its demand kept).",
      edits(mcp_r, [("contract.required_capacity_axes", ["cpu_milli", "memory_mib", "session_slots"])]),
      "invalid_contract", "mcp_gateway contract omitted a required hard capacity axis")
    v("engine-axis-omitted-from-required", "query_reader without fsync_iops among its hard axes: check 5 fires before check 6.",
      edits(qr_r, [("contract.required_capacity_axes",
                    ["cpu_milli", "memory_mib", "read_admission_slots", "engine_bytes"])]),
      "invalid_contract", "query_reader contract omitted a required hard capacity axis")
    v("duplicate-engine-axis", "fsync_iops listed twice in engine_authority_axes.",
      edits(qr_r, [("contract.engine_authority_axes[3]", "fsync_iops")]),
      "invalid_contract", "engine authority axes must be unique")
    v("engine-axes-omitted", "query_reader with engine_authority_axes left empty (never filled in).",
      edits(qr_r, [("contract.engine_authority_axes", DEL)]),
      "invalid_contract", "engine_authority_axes must match the surface profile")
    v("engine-axes-subset", "query_reader declaring only two of its three engine axes.",
      edits(qr_r, [("contract.engine_authority_axes", ["engine_bytes", "fsync_iops"])]),
      "invalid_contract", "engine_authority_axes must match the surface profile")
    v("engine-axes-on-surface-without", "api_gateway declaring an engine authority axis.",
      edits(api_r, [("contract.engine_authority_axes", ["cpu_milli"])]),
      "invalid_contract", "engine_authority_axes must match the surface profile")
    v("continuity-mode-unsupported", "api_gateway with session_affine continuity.",
      edits(api_r, [("contract.continuity", {"mode": "session_affine"})]),
      "invalid_contract", "api_gateway does not support continuity mode session_affine")
    v("continuity-mode-stateless-unsupported", "graphos_gateway with stateless continuity.",
      edits(request("graphos"), [("contract.continuity", STATELESS)]),
      "invalid_contract", "graphos_gateway does not support continuity mode stateless")
    v("partition-lease-required", "ingest_worker with the default (absent) partition_lease.",
      edits(ing_r, [("contract.partition_lease", DEL)]),
      "invalid_contract", "ingest_worker requires partition and fenced lease contracts")
    v("partition-without-lease", "dispatch_worker partitioned but not leased.",
      edits(request("dispatch"), [("contract.partition_lease", {"partitioned": True, "partitions_per_replica": 2})]),
      "invalid_contract", "dispatch_worker requires partition and fenced lease contracts")
    v("duplicate-demand-axis", "Two replica demands on cpu_milli.",
      edits(api_r, [("contract.replica_demands[3]", {"axis": "cpu_milli", "per_replica": 5})]),
      "invalid_contract", "replica demand axes must be unique")
    v("required-axis-without-demand", "session_slots required without a replica demand.",
      edits(api_r, [("contract.replica_demands", [{"axis": "cpu_milli", "per_replica": 10},
                                                  {"axis": "memory_mib", "per_replica": 10}])]),
      "invalid_contract", "every required capacity axis needs a per-replica demand")
    v("duplicate-quota-binding", "Two bindings with quota_ref provider:llm.",
      edits(mcp_r, [("contract.quotas[1]", {"quota_ref": "provider:llm", "axis": "provider_global_quota",
                                            "scope": "provider_global", "per_replica": 5})]),
      "invalid_contract", "quota bindings must be unique")
    v("provider-binding-required", "mcp_gateway with no quota bindings.",
      edits(mcp_r, [("contract.quotas", DEL)]),
      "invalid_contract", "mcp_gateway requires one provider-global quota binding")
    v("provider-binding-required-tenant-only", "connector_pool with only a tenant binding.",
      edits(request("connector"), [("contract.quotas[0].scope", "tenant")]),
      "invalid_contract", "connector_pool requires one provider-global quota binding")
    v("provider-binding-unsupported-axis", "mcp_gateway's provider-global binding on cpu_milli.",
      edits(mcp_r, [("contract.quotas[0].axis", "cpu_milli")]),
      "invalid_contract", "mcp_gateway provider quota binding has an unsupported axis")
    v("provider-binding-axis-of-other-profile", "mcp_gateway's provider-global binding on upstream_rate (a connector_pool axis).",
      edits(mcp_r, [("contract.quotas[0].axis", "upstream_rate")]),
      "invalid_contract", "mcp_gateway provider quota binding has an unsupported axis")

    # SPEC 5 observation checks.
    for kind, path in [("signal", "signal"), ("capacity", "capacities[1]"), ("quota", "quotas[0]"),
                       ("continuity", "continuity"), ("safety", "safety")]:
        v(kind + "-expires-equal-observed", "A %s observation with expires_at == observed_at." % kind,
          edits(mcp_r, [(path + ".expires_at", T_OBS)]),
          "invalid_observation", "expires_at must follow observed_at")
    v("signal-expires-before-observed", "A signal expiring before it was observed.",
      edits(mcp_r, [("signal.expires_at", "2026-08-19T11:58:59.999999Z")]),
      "invalid_observation", "expires_at must follow observed_at")
    v("signal-negative", "A negative signal value.", edits(mcp_r, [("signal.value", -1)]),
      "invalid_observation", "scale signal values must be finite non-negative integers")
    v("error-rate-ppm-over-million", "error_rate_ppm of 1000001.",
      request("mcp", signal=sig("error_rate_ppm", 1000001)),
      "invalid_observation", "error_rate_ppm must be bounded to one million ppm")
    v("gpu-ppm-over-million", "gpu_utilization_ppm of 1000001.",
      request("media", signal=sig("gpu_utilization_ppm", 1000001)),
      "invalid_observation", "gpu_utilization_ppm must be bounded to one million ppm")
    v("capacity-used-over-reserved", "capacity used 1001 over reserved 1000.",
      edits(mcp_r, [("capacities[0].used", 1001)]),
      "invalid_observation", "capacity must satisfy used <= reserved <= allocatable")
    v("capacity-reserved-over-allocatable", "capacity reserved 10001 over allocatable 10000.",
      edits(mcp_r, [("capacities[2].reserved", 10001)]),
      "invalid_observation", "capacity must satisfy used <= reserved <= allocatable")
    v("quota-used-over-limit", "quota used 101 over limit 100.", edits(mcp_r, [("quotas[0].used", 101)]),
      "invalid_observation", "quota usage cannot exceed its limit")
    v("safety-overloaded-without-reason", "overloaded without a reason_ref.",
      edits(mcp_r, [("safety.overloaded", True)]),
      "invalid_observation", "overload and noisy-neighbor evidence require a reason reference")
    v("safety-noisy-neighbor-null-reason", "noisy_neighbor with reason_ref null.",
      edits(mcp_r, [("safety.noisy_neighbor", True), ("safety.reason_ref", None)]),
      "invalid_observation", "overload and noisy-neighbor evidence require a reason reference")
    v("unused-safety-still-checked", "safety_required false: a supplied overloaded observation without reason_ref is still an error.",
      edits(api_r, [("contract.safety_required", False), ("safety.overloaded", True)]),
      "invalid_observation", "overload and noisy-neighbor evidence require a reason reference")
    v("unused-continuity-still-checked", "stateless: a supplied continuity observation with expires_at == observed_at is still an error.",
      edits(api_r, [("continuity", cont(exp=T_OBS))]),
      "invalid_observation", "expires_at must follow observed_at")
    v("unused-capacity-still-checked", "A capacity observation on an unnamed axis is still checked.",
      edits(api_r, [("capacities[3]", cap("gpu_count", 8, 9, 0))]),
      "invalid_observation", "capacity must satisfy used <= reserved <= allocatable")
    v("unused-quota-still-checked", "A quota observation no binding names is still checked.",
      edits(api_r, [("quotas[0]", quo("tenant:other", "tenant", limit=10, used=11))]),
      "invalid_observation", "quota usage cannot exceed its limit")

    # SPEC 1 strictness: all invalid_field.
    def f(name, desc, req):
        v(name, desc, req, "invalid_field")
    f("unknown-top-level-field", "An unknown top-level field.", edits(mcp_r, [("extra", 1)]))
    f("unknown-contract-field", "An unknown contract field.", edits(mcp_r, [("contract.owner", "team")]))
    f("unknown-policy-field", "An unknown policy field.", edits(mcp_r, [("contract.policy.cooldown_s", 0)]))
    f("unknown-demand-field", "An unknown replica demand field.", edits(mcp_r, [("contract.replica_demands[0].unit", "m")]))
    f("unknown-binding-field", "An unknown quota binding field.", edits(mcp_r, [("contract.quotas[0].limit", 100)]))
    f("unknown-partition-lease-field", "An unknown partition_lease field.",
      edits(ing_r, [("contract.partition_lease.shards", 1)]))
    f("unknown-continuity-contract-field", "An unknown continuity contract field.",
      edits(mcp_r, [("contract.continuity.ttl", 1)]))
    f("unknown-signal-field", "An unknown signal observation field.", edits(mcp_r, [("signal.unit", "rps")]))
    f("unknown-capacity-field", "An unknown capacity observation field.", edits(mcp_r, [("capacities[0].free", 1)]))
    f("unknown-quota-field", "An unknown quota observation field.", edits(mcp_r, [("quotas[0].axis", "provider_global_quota")]))
    f("unknown-continuity-field", "An unknown continuity observation field.", edits(mcp_r, [("continuity.mode", "externalized")]))
    f("unknown-safety-field", "An unknown safety observation field.", edits(mcp_r, [("safety.severity", 1)]))
    f("float-current-replicas", "current_replicas 1.0 is a float.", edits(mcp_r, [("current_replicas", 1.0)]))
    f("float-target", "policy.target 100.0 is a float.", edits(mcp_r, [("contract.policy.target", 100.0)]))
    f("float-signal-value", "signal value 250.0 is a float.", edits(mcp_r, [("signal.value", 250.0)]))
    f("float-allocatable", "allocatable 10000.5 is a float.", edits(mcp_r, [("capacities[0].allocatable", 10000.5)]))
    f("bool-current-replicas", "current_replicas true is a boolean, not 1.", edits(mcp_r, [("current_replicas", True)]))
    f("bool-per-replica", "per_replica false is a boolean, not 0.", edits(mcp_r, [("contract.replica_demands[0].per_replica", False)]))
    f("bool-signal-value", "signal value true is a boolean.", edits(mcp_r, [("signal.value", True)]))
    f("int-allow-scale-to-zero", "allow_scale_to_zero 0 is an integer, not false.",
      edits(mcp_r, [("contract.policy.allow_scale_to_zero", 0)]))
    f("int-safety-required", "safety_required 1 is an integer, not true.", edits(mcp_r, [("contract.safety_required", 1)]))
    f("int-continuity-ready", "continuity ready 1 is an integer.", edits(mcp_r, [("continuity.ready", 1)]))
    f("int-safety-overloaded", "safety overloaded 0 is an integer.", edits(mcp_r, [("safety.overloaded", 0)]))
    f("int-multiplicative", "multiplicative 0 on a binding is an integer.", edits(mcp_r, [("contract.quotas[0].multiplicative", 0)]))
    f("null-capacities", "capacities may be omitted, not null.", edits(mcp_r, [("capacities", None)]))
    f("null-quotas", "quotas may be omitted, not null.", edits(mcp_r, [("quotas", None)]))
    f("null-contract-quotas", "contract.quotas may be omitted, not null.", edits(api_r, [("contract.quotas", None)]))
    f("null-partition-lease", "partition_lease may be omitted, not null.", edits(api_r, [("contract.partition_lease", None)]))
    f("null-engine-axes", "engine_authority_axes may be omitted, not null.", edits(api_r, [("contract.engine_authority_axes", None)]))
    f("null-contract-id", "contract_id may be omitted, not null.", edits(mcp_r, [("contract.contract_id", None)]))
    f("null-contract-digest", "contract_digest may be omitted, not null.", edits(mcp_r, [("contract.contract_digest", None)]))
    f("null-min-replicas", "policy.min_replicas null (it has a default, but null is not allowed).",
      edits(mcp_r, [("contract.policy.min_replicas", None)]))
    f("null-safety-required", "safety_required null.", edits(mcp_r, [("contract.safety_required", None)]))
    f("null-unit-ref", "unit_ref null.", edits(mcp_r, [("contract.unit_ref", None)]))
    f("null-signal-value", "signal value null.", edits(mcp_r, [("signal.value", None)]))
    f("null-source-digest", "source_digest null.", edits(mcp_r, [("capacities[0].source_digest", None)]))
    f("null-now", "now null.", edits(mcp_r, [("now", None)]))
    f("null-current-replicas", "current_replicas null.", edits(mcp_r, [("current_replicas", None)]))
    f("null-contract", "contract null.", edits(mcp_r, [("contract", None)]))
    f("missing-contract", "No contract.", edits(mcp_r, [("contract", DEL)]))
    f("missing-current-replicas", "No current_replicas.", edits(mcp_r, [("current_replicas", DEL)]))
    f("missing-now", "No now.", edits(mcp_r, [("now", DEL)]))
    f("missing-unit-ref", "No unit_ref.", edits(mcp_r, [("contract.unit_ref", DEL)]))
    f("missing-surface", "No surface.", edits(mcp_r, [("contract.surface", DEL)]))
    f("missing-policy", "No policy.", edits(mcp_r, [("contract.policy", DEL)]))
    f("missing-target", "No policy.target.", edits(mcp_r, [("contract.policy.target", DEL)]))
    f("missing-target-signal", "No policy.target_signal.", edits(mcp_r, [("contract.policy.target_signal", DEL)]))
    f("missing-allowed-signals", "No allowed_signals.", edits(mcp_r, [("contract.allowed_signals", DEL)]))
    f("missing-required-axes", "No required_capacity_axes.", edits(mcp_r, [("contract.required_capacity_axes", DEL)]))
    f("missing-replica-demands", "No replica_demands.", edits(mcp_r, [("contract.replica_demands", DEL)]))
    f("missing-continuity-contract", "No contract continuity.", edits(mcp_r, [("contract.continuity", DEL)]))
    f("missing-continuity-mode", "No continuity mode.", edits(mcp_r, [("contract.continuity.mode", DEL)]))
    f("missing-demand-per-replica", "A replica demand without per_replica.", edits(mcp_r, [("contract.replica_demands[0].per_replica", DEL)]))
    f("missing-binding-scope", "A quota binding without scope.", edits(mcp_r, [("contract.quotas[0].scope", DEL)]))
    f("missing-signal-source-digest", "A signal without source_digest.", edits(mcp_r, [("signal.source_digest", DEL)]))
    f("missing-signal-observed-at", "A signal without observed_at.", edits(mcp_r, [("signal.observed_at", DEL)]))
    f("missing-capacity-used", "A capacity observation without used.", edits(mcp_r, [("capacities[0].used", DEL)]))
    f("missing-quota-scope", "A quota observation without scope.", edits(mcp_r, [("quotas[0].scope", DEL)]))
    f("missing-continuity-ready", "A continuity observation without ready.", edits(mcp_r, [("continuity.ready", DEL)]))
    f("missing-safety-noisy-neighbor", "A safety observation without noisy_neighbor.", edits(mcp_r, [("safety.noisy_neighbor", DEL)]))
    f("missing-safety-source-ref", "A safety observation without source_ref.", edits(mcp_r, [("safety.source_ref", DEL)]))
    f("request-not-an-object", "The request is a JSON array.", [mcp_r])
    f("contract-not-an-object", "The contract is a string.", edits(mcp_r, [("contract", "scale-unit:x")]))
    f("allowed-signals-not-a-list", "allowed_signals is a string.", edits(mcp_r, [("contract.allowed_signals", "request_rate")]))
    f("capacities-not-a-list", "capacities is an object.", edits(mcp_r, [("capacities", {})]))
    f("current-replicas-string", "current_replicas is the string \"1\".", edits(mcp_r, [("current_replicas", "1")]))
    f("unit-ref-number", "unit_ref is a number.", edits(mcp_r, [("contract.unit_ref", 7)]))
    f("signal-not-an-object", "signal is a list.", edits(mcp_r, [("signal", [])]))
    f("unknown-surface", "surface web_gateway is outside SurfaceKind.", edits(mcp_r, [("contract.surface", "web_gateway")]))
    f("enum-wrong-case", "target_signal Request_Rate: enums are lower snake_case.",
      edits(mcp_r, [("contract.policy.target_signal", "Request_Rate")]))
    f("unknown-signal-kind", "A signal observation of kind cpu.", edits(mcp_r, [("signal.signal", "cpu")]))
    f("unknown-capacity-axis", "A capacity observation on axis disk_iops.", edits(mcp_r, [("capacities[0].axis", "disk_iops")]))
    f("unknown-quota-scope", "A quota observation of scope global.", edits(mcp_r, [("quotas[0].scope", "global")]))
    f("unknown-continuity-mode", "Continuity mode sticky.", edits(mcp_r, [("contract.continuity.mode", "sticky")]))
    f("unknown-allowed-signal", "allowed_signals containing cpu_load.", edits(mcp_r, [("contract.allowed_signals[7]", "cpu_load")]))
    f("schema-version-2", "schema_version \"2\".", edits(mcp_r, [("contract.schema_version", "2")]))
    f("schema-version-integer", "schema_version 1 as an integer.", edits(mcp_r, [("contract.schema_version", 1)]))

    # Accepted boundaries of the same rules.
    ok("validation/schema-version-explicit", "schema_version \"1\" written out is accepted.",
       edits(mcp_r, [("contract.schema_version", "1")]), decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("validation/ref-256-chars-accepted", "A unit_ref of exactly 256 characters is a valid ref.",
       edits(mcp_r, [("contract.unit_ref", "u" * 256)]), decision(1, 3, "scale_up", ["target_tracking"], MCP_OK))
    ok("validation/ref-all-allowed-characters", "A source_ref using every allowed punctuation character is valid.",
       request("mcp", signal=sig(ref="Metrics.v2_rate:eu/west@1+canary-a")),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "Metrics.v2_rate:eu/west@1+canary-a", "request_rate")] + MCP_CAPS + [Q_LLM, C_EXT, SAFE]))
    ok("validation/ref-token-without-separator-accepted",
       "token not followed by = or : is not a credential: metrics:tokenizer-rate is a valid ref.",
       request("mcp", signal=sig(ref="metrics:tokenizer-rate")),
       decision(1, 3, "scale_up", ["target_tracking"],
                [A("signal", "metrics:tokenizer-rate", "request_rate")] + MCP_CAPS + [Q_LLM, C_EXT, SAFE]))
    ok("validation/optional-nulls-accepted",
       "null is accepted on last_action_at and on the optional observations of a stateless unit.",
       request("api", continuity=None, last_action_at=None),
       decision(1, 2, "scale_up", ["target_tracking"], API_OK))


# ================================================================ errors/

def group_errors():
    mcp_r = request("mcp")
    api_r = request("api")

    # invalid_json: exact request text (request_json).
    text = json.dumps(api_r)
    assert json.loads(text) == api_r

    def j(name, desc, t, code="invalid_json"):
        bad_text("errors/" + name, desc, t, code)
    j("json-duplicate-key-in-contract", "A duplicate key (surface, same value twice) inside the contract.",
      replace_once(text, '"surface": "api_gateway"', '"surface": "api_gateway", "surface": "api_gateway"'))
    j("json-duplicate-key-top-level", "current_replicas given twice at the top level.",
      replace_once(text, '"current_replicas": 1', '"current_replicas": 1, "current_replicas": 2'))
    j("json-duplicate-key-in-observation", "value given twice in the signal observation.",
      replace_once(text, '"value": 250', '"value": 250, "value": 0'))
    j("json-trailing-garbage", "Valid request text followed by garbage.", text + " x")
    j("json-trailing-second-document", "Valid request text followed by a second document.", text + "{}")
    j("json-truncated", "The request text cut off in the middle.", text[: len(text) // 2])
    j("json-truncated-last-brace", "The request text missing its final brace.", text[:-1])
    j("json-empty-document", "An empty document.", "")
    j("json-nan", "NaN as the signal value.", replace_once(text, '"value": 250', '"value": NaN'))
    j("json-infinity", "Infinity as the signal value.", replace_once(text, '"value": 250', '"value": Infinity'))
    j("json-byte-order-mark", "A byte-order mark before the document.", "\ufeff" + text)
    j("json-single-quoted-string", "A single-quoted string.",
      replace_once(text, '"now": "2026-08-19T12:00:00Z"', "\"now\": '2026-08-19T12:00:00Z'"))
    j("json-trailing-comma", "A trailing comma in a list.",
      replace_once(text, '"error_rate_ppm"]', '"error_rate_ppm",]'))
    j("json-float-exponent-is-field-error", "1e3 is valid JSON but a float: invalid_field, not invalid_json.",
      replace_once(text, '"value": 250', '"value": 1e3'), "invalid_field")
    j("json-float-point-zero-is-field-error", "1.0 written as text is a float: invalid_field.",
      replace_once(text, '"current_replicas": 1', '"current_replicas": 1.0'), "invalid_field")

    # invalid_ref / credential_in_ref.
    def r(name, desc, req, code, msg):
        bad("errors/" + name, desc, req, code, msg)
    REF = "must be a bounded opaque reference"
    CRED = "must not contain credentials or raw payloads"
    r("ref-257-chars", "A 257-character unit_ref is over the 256-character bound.",
      edits(api_r, [("contract.unit_ref", "u" * 257)]), "invalid_ref", REF)
    r("ref-empty", "An empty source_ref.", edits(api_r, [("signal.source_ref", "")]), "invalid_ref", REF)
    r("ref-leading-dash", "A ref must start with a letter or digit.",
      edits(api_r, [("capacities[0].source_ref", "-capacity:cpu")]), "invalid_ref", REF)
    r("ref-with-space", "A quota_ref with a space.",
      edits(mcp_r, [("quotas[0].quota_ref", "provider llm")]), "invalid_ref", REF)
    r("ref-binding-with-hash", "A binding quota_ref with '#'.",
      edits(mcp_r, [("contract.quotas[0].quota_ref", "provider#llm")]), "invalid_ref", REF)
    r("ref-store-with-space", "An external_store_ref with a space.",
      edits(mcp_r, [("contract.continuity.external_store_ref", "store:my sessions")]), "invalid_ref", REF)
    r("ref-reason-leading-hash", "A reason_ref starting with '#'.",
      edits(mcp_r, [("safety.reason_ref", "#incident")]), "invalid_ref", REF)
    r("ref-non-ascii", "A source_ref with a non-ASCII letter.",
      edits(mcp_r, [("continuity.source_ref", "continuit\u00e9:sessions")]), "invalid_ref", REF)
    r("ref-pattern-before-credential", "token=abc fails the ref pattern ('=') before the credential rule.",
      edits(mcp_r, [("signal.source_ref", "metrics:token=abc")]), "invalid_ref", REF)
    for name, path, value in [
        ("unit-ref-password", "contract.unit_ref", "unit:password-vault"),
        ("source-ref-bearer-mixed-case", "signal.source_ref", "metrics:BeArEr-abc"),
        ("source-ref-token-colon", "capacities[0].source_ref", "capacity:token:abc"),
        ("quota-ref-api-key", "quotas[0].quota_ref", "provider:api_key-1"),
        ("binding-ref-apikey", "contract.quotas[0].quota_ref", "provider:apikey"),
        ("store-ref-secret", "contract.continuity.external_store_ref", "store:Secret-sessions"),
        ("reason-ref-cookie", "safety.reason_ref", "incident:cookie-dump"),
        ("source-ref-passwd", "continuity.source_ref", "continuity:passwd"),
        ("source-ref-authorization", "quotas[0].source_ref", "quota:authorization"),
        ("source-ref-private-key", "safety.source_ref", "safety:private-key"),
        ("source-ref-privatekey", "capacities[1].source_ref", "capacity:PRIVATEKEY"),
        ("source-ref-raw-body", "signal.source_ref", "logs:raw_body"),
        ("source-ref-raw-span", "capacities[2].source_ref", "trace:raw-span"),
        ("source-ref-raw-log", "capacities[3].source_ref", "logs:RAWLOG"),
    ]:
        r("credential-" + name, "credential_in_ref: %s = %s." % (path, value),
          edits(mcp_r, [(path, value)]), "credential_in_ref", CRED)
    r("credential-unused-reason-ref", "A credential in the reason_ref of an ignored safety observation is still an error.",
      edits(api_r, [("contract.safety_required", False), ("safety.reason_ref", "incident:token:x")]),
      "credential_in_ref", CRED)

    # invalid_digest.
    good = DIG["metrics:request_rate"]
    for name, path, value in [
        ("upper-case-hex", "signal.source_digest", "sha256:" + good[7:].upper()),
        ("upper-case-prefix", "signal.source_digest", "SHA256:" + good[7:]),
        ("no-prefix", "capacities[0].source_digest", good[7:]),
        ("63-hex-digits", "quotas[0].source_digest", good[:-1]),
        ("65-hex-digits", "continuity.source_digest", good + "0"),
        ("non-hex", "safety.source_digest", "sha256:" + "g" * 64),
        ("other-algorithm", "signal.source_digest", "sha512:" + good[7:]),
    ]:
        r("digest-" + name, "invalid_digest: %s is %s." % (path, name.replace("-", " ")),
          edits(mcp_r, [(path, value)]), "invalid_digest", None)

    # invalid_time.
    AWARE = "must be timezone-aware"
    RANGE = "is outside the supported time range"
    for name, path, value, msg in [
        ("now-without-offset", "now", "2026-08-19T12:00:00", AWARE),
        ("observed-at-without-offset", "signal.observed_at", "2026-08-19T11:59:00.5", AWARE),
        ("last-action-without-offset", "last_action_at", "2026-08-19T11:00:00", AWARE),
        ("now-year-1999", "now", "1999-12-31T23:59:59Z", RANGE),
        ("expires-year-2301", "capacities[0].expires_at", "2301-01-01T00:00:00Z", RANGE),
        ("now-utc-1999-after-offset", "now", "2000-01-01T00:30:00+01:00", RANGE),
        ("expires-utc-2301-after-offset", "signal.expires_at", "2300-12-31T23:30:00-01:00", RANGE),
        ("last-action-year-1970", "last_action_at", "1970-01-01T00:00:00Z", RANGE),
        ("feb-29-non-leap", "now", "2026-02-29T12:00:00Z", None),
        ("feb-29-century-non-leap", "last_action_at", "2100-02-29T00:00:00Z", None),
        ("april-31", "signal.observed_at", "2026-04-31T00:00:00Z", None),
        ("month-13", "now", "2026-13-19T12:00:00Z", None),
        ("month-00", "now", "2026-00-19T12:00:00Z", None),
        ("day-00", "now", "2026-08-00T12:00:00Z", None),
        ("hour-24", "now", "2026-08-19T24:00:00Z", None),
        ("minute-60", "now", "2026-08-19T12:60:00Z", None),
        ("second-60", "now", "2026-08-19T12:00:60Z", None),
        ("seven-fraction-digits", "now", "2026-08-19T12:00:00.0000001Z", None),
        ("empty-fraction", "now", "2026-08-19T12:00:00.Z", None),
        ("lower-case-t", "now", "2026-08-19t12:00:00Z", None),
        ("lower-case-z", "now", "2026-08-19T12:00:00z", None),
        ("space-separator", "now", "2026-08-19 12:00:00Z", None),
        ("offset-hour-24", "now", "2026-08-19T12:00:00+24:00", None),
        ("offset-minute-60", "now", "2026-08-19T12:00:00+05:60", None),
        ("offset-without-colon", "now", "2026-08-19T12:00:00+0200", None),
        ("date-only", "now", "2026-08-19", None),
        ("no-seconds", "now", "2026-08-19T12:00Z", None),
        ("empty-string", "expires_at", "", None),
    ]:
        target = mcp_r if not path.startswith("last_action_at") else request("mcp", last_action_at=NOW)
        if path == "expires_at":
            path = "safety.expires_at"
        r("time-" + name, "invalid_time: %s = %r." % (path, value),
          edits(target, [(path, value)]), "invalid_time", msg)
    r("time-now-integer", "A non-string now is invalid_field, not invalid_time.",
      edits(mcp_r, [("now", 1787140800)]), "invalid_field", None)
    r("time-last-action-integer", "A non-string last_action_at is invalid_field.",
      edits(mcp_r, [("last_action_at", 0)]), "invalid_field", None)
    r("time-observed-at-object", "A non-string observed_at is invalid_field.",
      edits(mcp_r, [("signal.observed_at", {})]), "invalid_field", None)

    # duplicate_observation.
    r("duplicate-capacity-axis", "Two capacity observations on cpu_milli.",
      edits(mcp_r, [("capacities[4]", cap("cpu_milli", ref="capacity:cpu-second"))]),
      "duplicate_observation", "duplicate capacity axis observation")
    r("duplicate-capacity-unnamed-axis", "Two capacity observations on gpu_count, an axis the contract does not name.",
      edits(mcp_r, [("capacities[4]", cap("gpu_count")), ("capacities[5]", cap("gpu_count", ref="capacity:gpu-2"))]),
      "duplicate_observation", "duplicate capacity axis observation")
    r("duplicate-quota-ref", "Two quota observations for provider:llm.",
      edits(mcp_r, [("quotas[1]", quo(ref="quota:provider-llm-2"))]),
      "duplicate_observation", "duplicate quota observation")
    r("duplicate-quota-ref-different-scopes", "Two observations of an unbound quota_ref with different scopes.",
      edits(mcp_r, [("quotas[1]", quo("tenant:x", "tenant")), ("quotas[2]", quo("tenant:x", "unit", ref="quota:x-2"))]),
      "duplicate_observation", "duplicate quota observation")

    # replicas_out_of_bounds.
    r("replicas-negative", "current_replicas -1.", edits(mcp_r, [("current_replicas", -1)]),
      "replicas_out_of_bounds", "current_replicas is outside bounds")
    r("replicas-10001", "current_replicas 10001 is over MAX_REPLICAS.", edits(mcp_r, [("current_replicas", 10001)]),
      "replicas_out_of_bounds", "current_replicas is outside bounds")
    r("replicas-1e15", "current_replicas 10^15.", edits(mcp_r, [("current_replicas", E15)]),
      "replicas_out_of_bounds", "current_replicas is outside bounds")
    r("replicas-below-min", "current_replicas 1 under min_replicas 2.",
      edits(mcp_r, [("contract.policy.min_replicas", 2)]),
      "replicas_out_of_bounds", "current_replicas is below the contract floor")
    r("replicas-zero-below-min", "current_replicas 0 under the default min_replicas 1.",
      edits(api_r, [("current_replicas", 0)]),
      "replicas_out_of_bounds", "current_replicas is below the contract floor")


# ================================================================ derivation/
#
# Each vector is an ordinary SPEC 11 vector plus expect.derivation (issue 17): every number the
# algorithm of SPEC 7 compared, written here by hand from the SPEC's arithmetic (the comment
# above each vector works it out). seal.py copies decision_id, decision_digest and contract_id
# from the sealed decision; nothing else is computed.

OBS_U = "2026-08-19T11:59:00+00:00"   # T_OBS in UTC text (SPEC 8's evaluated_at form)
EXP_U = "2026-08-19T12:05:00+00:00"   # T_EXP
OLD_OBS_U = "2026-08-19T11:50:00+00:00"
OLD_EXP_U = "2026-08-19T11:55:00+00:00"
FUTURE_OBS_U = "2026-08-19T12:00:00.000001+00:00"


def VD(entry, obs=OBS_U, exp=EXP_U, mismatch=None):
    """The verdict of one decision evidence entry: its kind, ref, status and code, the window of
    the observation (None for a missing one) and, for a mismatch, what was expected and found."""
    missing = entry["status"] == "missing"
    return {"kind": entry["kind"], "ref": entry["ref"], "status": entry["status"], "code": entry["code"],
            "observed_at": None if missing else obs, "expires_at": None if missing else exp,
            "mismatch": mismatch}


def TARGET(value, target, ceil, min_replicas, floor, max_replicas, clamp, raw, action, step, desired,
           signal="request_rate"):
    return {"signal": signal, "value": value, "target": target, "ceil": ceil,
            "min_replicas": min_replicas, "floor": floor, "max_replicas": max_replicas,
            "clamp": clamp, "raw": raw, "action": action, "step": step, "desired": desired}


def STEP(name, size, limit, capped):
    return {"name": name, "size": size, "limit": limit, "capped": capped}


def DEM(axis, per_replica, needed, status, allocatable=None, reserved=None, available=None, shortfall=None):
    return {"axis": axis, "per_replica": per_replica, "needed": needed, "status": status,
            "allocatable": allocatable, "reserved": reserved, "available": available,
            "shortfall": shortfall}


def QC(quota_ref, scope, axis, per_replica, used, limit, projected, over, multiplicative=False):
    return {"quota_ref": quota_ref, "scope": scope, "axis": axis, "multiplicative": multiplicative,
            "per_replica": per_replica, "used": used, "limit": limit, "projected": projected,
            "over": over}


def ENG(axis, allocatable, reserved, available, saturated):
    return {"axis": axis, "allocatable": allocatable, "reserved": reserved, "available": available,
            "saturated": saturated}


def GROWTH(additional, capacity, quotas=(), engine=(), provider_at_limit=False, local_at_limit=False,
           fired=False):
    return {"gate": "growth", "additional": additional, "capacity": list(capacity),
            "provider_quota_at_limit": provider_at_limit, "local_quota_at_limit": local_at_limit,
            "quotas": list(quotas), "engine_authority": list(engine), "fired": fired}


def SESSIONS(block, sessions, streams, fired):
    return {"gate": "active_sessions", "block_scale_down_with_active": block,
            "active_sessions": sessions, "active_streams": streams, "fired": fired}


def COOLDOWN(field, seconds, last_action_at, elapsed_us, remaining_us, fired):
    return {"gate": "cooldown", "cooldown": field, "cooldown_s": seconds, "last_action_at": last_action_at,
            "elapsed_us": elapsed_us, "remaining_us": remaining_us, "fired": fired}


def DRAIN(drain_required, drain_seconds, max_drain_seconds, fired):
    return {"gate": "drain_bound", "drain_required": drain_required, "drain_seconds": drain_seconds,
            "max_drain_seconds": max_drain_seconds, "fired": fired}


def derivation(dec, evidence, checks=(), target=None, gates=()):
    """The expected derivation of the hand-written decision dec: its identity (sealed later) and
    outcome fields are the decision's own."""
    return {
        "decision_id": "", "decision_digest": "", "contract_id": "",
        "evaluated_at": dec["evaluated_at"], "current_replicas": dec["current_replicas"],
        "evidence": list(evidence), "checks": list(checks), "target": target, "gates": list(gates),
        "action": dec["action"], "desired_replicas": dec["desired_replicas"],
        "reasons": list(dec["reasons"]), "drain_required": dec["drain_required"],
    }


def derived(vid, description, req, dec, der):
    """A vector with a decision and its derivation."""
    assert dec["current_replicas"] == req["current_replicas"], vid
    if dec["action"] in ("blocked", "hold"):
        assert dec["desired_replicas"] == dec["current_replicas"], vid
    assert [v["ref"] for v in der["evidence"]] == [e["ref"] for e in dec["evidence"]], vid
    _add(vid, description, {"request": req},
         {"decision": dec, "contract_digest": "", "derivation": der})


# The default fits of the mcp demands (10 per replica on 10000 allocatable - 1000 reserved).
def MCP_FITS(additional, cpu=None):
    needed = additional * 10   # written per vector below; this only spells 2 x 10 = 20 once
    rows = [cpu or DEM("cpu_milli", 10, needed, "fits", 10000, 1000, 9000, 0)]
    for axis in ("memory_mib", "session_slots", "continuity_slots"):
        rows.append(DEM(axis, 10, needed, "fits", 10000, 1000, 9000, 0))
    return rows


def group_derivation():
    mcp_ev = [VD(e) for e in MCP_OK]

    # ceil(640 / 100) = 7 (6.4 rounded up); floor max(2, 1) = 2; raw max(2, min(12, 7)) = 7 > 3:
    # scale up, limit 3 + 2 = 5 < 7 so desired 5 (capped). C4: additional 5 - 3 = 2; cpu 2 x 500
    # = 1000 against 10000 - 6000 = 4000 (used 2500 is not headroom); the other axes 2 x 10 = 20
    # against 9000; provider 40 + 2 x 10 = 60 <= 100.
    c = contract("mcp", policy__min_replicas=2, policy__max_replicas=12)
    c["replica_demands"][0]["per_replica"] = 500
    r = request(c, current=3, value=640,
                capacities=caps_for(c, over={"cpu_milli": dict(allocatable=10000, reserved=6000, used=2500)}),
                quotas=[quo(limit=100, used=40)])
    dec = decision(3, 5, "scale_up", ["target_tracking"], MCP_OK)
    derived("derivation/target-step-capped-within-bounds",
            "ceil(640 / 100) = 7 within [2, 12], capped by scale_up_step 2 to 5; every growth check fits.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(640, 100, 7, 2, 2, 12, None, 7, "scale_up",
                                             STEP("scale_up_step", 2, 5, True), 5),
                               gates=[GROWTH(2, MCP_FITS(2, DEM("cpu_milli", 500, 1000, "fits", 10000, 6000, 4000, 0)),
                                             [QC("provider:llm", "provider_global", "provider_global_quota",
                                                 10, 40, 100, 60, False)])]))

    # ceil(1500 / 100) = 15 > max 8: raw 8 (clamped to max_replicas); limit 7 + 2 = 9 >= 8, so
    # desired 8 (not capped). C4: additional 1; 1 x 10 = 10 per axis; provider 0 + 10 <= 100.
    r = request("mcp", current=7, value=1500)
    dec = decision(7, 8, "scale_up", ["target_tracking"], MCP_OK)
    derived("derivation/target-clamped-to-max-step-not-binding",
            "ceil(1500 / 100) = 15 is lowered to max_replicas 8; the step limit 7 + 2 = 9 does not bind.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(1500, 100, 15, 1, 1, 8, "max_replicas", 8, "scale_up",
                                             STEP("scale_up_step", 2, 9, False), 8),
                               gates=[GROWTH(1, MCP_FITS(1),
                                             [QC("provider:llm", "provider_global", "provider_global_quota",
                                                 10, 0, 100, 10, False)])]))

    # ceil(40 / 100) = 1 < floor 2: raw 2 (raised to the floor) < 5: scale down, limit 5 - 1 = 4
    # > 2, so desired 4 (capped). C2(b): 0 sessions + 0 streams. C5: drain_required, 30 <= 300.
    c = contract("mcp", policy__min_replicas=2)
    r = request(c, current=5, value=40)
    dec = decision(5, 4, "scale_down", ["target_tracking"], MCP_OK, drain=True)
    derived("derivation/scale-down-floor-and-step",
            "ceil(40 / 100) = 1 is raised to the floor 2; scale_down_step 1 caps 5 -> 4; sessions and drain bound pass.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(40, 100, 1, 2, 2, 8, "floor", 2, "scale_down",
                                             STEP("scale_down_step", 1, 4, True), 4),
                               gates=[SESSIONS(True, 0, 0, False), DRAIN(True, 30, 300, False)]))

    # ceil(300 / 100) = 3 = current 3: hold [at_target], no step, no gate.
    r = request("mcp", current=3, value=300)
    dec = decision(3, 3, "hold", ["at_target"], MCP_OK)
    derived("derivation/hold-at-target",
            "ceil(300 / 100) = 3 equals the current count: hold at_target, no gate runs.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(300, 100, 3, 1, 1, 8, None, 3, "hold", None, 3)))

    # ceil(250 / 100) = 3, limit 1 + 2 = 3 (not capped). C3: scale-up cooldown 30 s, last action
    # 11:59:40, elapsed 20 s = 20 000 000 us < 30 000 000 us: hold, 10 000 000 us left.
    cd = contract("mcp", policy__scale_up_cooldown_s=30, policy__scale_down_cooldown_s=300)
    r = request(cd, last_action_at="2026-08-19T11:59:40Z")
    dec = decision(1, 1, "hold", ["cooldown"], MCP_OK)
    derived("derivation/cooldown-scale-up-holds",
            "20 s after the last action a scale-up with a 30 s cooldown holds, 10 s left.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(250, 100, 3, 1, 1, 8, None, 3, "scale_up",
                                             STEP("scale_up_step", 2, 3, False), 3),
                               gates=[COOLDOWN("scale_up_cooldown_s", 30, "2026-08-19T11:59:40+00:00",
                                               20000000, 10000000, True)]))

    # ceil(0 / 100) = 0 < floor 1: raw 1, limit 3 - 1 = 2 > 1, desired 2 (capped). C2(b) passes.
    # C3: scale-down cooldown 300 s, last action 11:54:00, elapsed 360 s >= 300 s: passes, 0 left.
    # C5: drain_required, 30 <= 300.
    r = request(cd, current=3, value=0, last_action_at="2026-08-19T11:54:00Z")
    dec = decision(3, 2, "scale_down", ["target_tracking"], MCP_OK, drain=True)
    derived("derivation/cooldown-scale-down-elapsed",
            "360 s after the last action the 300 s scale-down cooldown has passed: scale down 3 -> 2 with a drain.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(0, 100, 0, 1, 1, 8, "floor", 1, "scale_down",
                                             STEP("scale_down_step", 1, 2, True), 2),
                               gates=[SESSIONS(True, 0, 0, False),
                                      COOLDOWN("scale_down_cooldown_s", 300, "2026-08-19T11:54:00+00:00",
                                               360000000, 0, False),
                                      DRAIN(True, 30, 300, False)]))

    # As above with last action 11:55:00.000001: elapsed 299.999999 s = 299 999 999 us <
    # 300 000 000 us: hold, 1 us left.
    r = request(cd, current=3, value=0, last_action_at="2026-08-19T11:55:00.000001Z")
    dec = decision(3, 3, "hold", ["cooldown"], MCP_OK)
    derived("derivation/cooldown-one-microsecond-short",
            "299.999999 s into a 300 s scale-down cooldown: hold with 1 microsecond left.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(0, 100, 0, 1, 1, 8, "floor", 1, "scale_down",
                                             STEP("scale_down_step", 1, 2, True), 2),
                               gates=[SESSIONS(True, 0, 0, False),
                                      COOLDOWN("scale_down_cooldown_s", 300, "2026-08-19T11:55:00.000001+00:00",
                                               299999999, 1, True)]))

    # ceil(250 / 100) = 3, desired 3, additional 2: cpu 20 <= 9000 fits; memory 2 x 10 = 20 >
    # 1000 - 990 = 10: exhausted, short by 10, and the demand loop stops. Provider 0 + 20 <= 100.
    mcp_c = contract("mcp")
    r = request(mcp_c, capacities=caps_for(mcp_c, over={"memory_mib": dict(allocatable=1000, reserved=990)}))
    dec = decision(1, 1, "blocked", ["capacity_exhausted"], MCP_OK)
    derived("derivation/capacity-shortfall-memory",
            "2 added replicas need 2 x 10 = 20 MiB against 1000 - 990 = 10 available: short by 10; later axes are not checked.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(250, 100, 3, 1, 1, 8, None, 3, "scale_up",
                                             STEP("scale_up_step", 2, 3, False), 3),
                               gates=[GROWTH(2, [DEM("cpu_milli", 10, 20, "fits", 10000, 1000, 9000, 0),
                                                 DEM("memory_mib", 10, 20, "exhausted", 1000, 990, 10, 10)],
                                             [QC("provider:llm", "provider_global", "provider_global_quota",
                                                 10, 0, 100, 20, False)], fired=True)]))

    # media_pool, target 300 000 ppm: ceil(900 000 / 300 000) = 3, limit 1 + 2 = 3, desired 3,
    # additional 2. cpu and memory 2 x 10 = 20 <= 9000; gpu_count 2 x 1 = 2 <= 4 - 1 = 3;
    # gpu_memory_mib 2 x 1024 = 2048 > 16384 - 15360 = 1024: short by 1024.
    m = contract("media")
    r = request(m, value=900000,
                capacities=caps_for(m, over={"gpu_count": dict(allocatable=4, reserved=1),
                                             "gpu_memory_mib": dict(allocatable=16384, reserved=15360)}))
    media_ok = [A("signal", "metrics:gpu_utilization_ppm", "gpu_utilization_ppm"), CAP["cpu_milli"],
                CAP["memory_mib"], CAP["gpu_count"], CAP["gpu_memory_mib"], SAFE]
    dec = decision(1, 1, "blocked", ["capacity_exhausted"], media_ok)
    derived("derivation/capacity-shortfall-gpu-memory",
            "2 added GPU replicas fit gpu_count (2 of 3) but need 2 x 1024 = 2048 MiB of GPU memory against 1024: short by 1024.",
            r, dec, derivation(dec, [VD(e) for e in media_ok],
                               target=TARGET(900000, 300000, 3, 1, 1, 8, None, 3, "scale_up",
                                             STEP("scale_up_step", 2, 3, False), 3,
                                             signal="gpu_utilization_ppm"),
                               gates=[GROWTH(2, [DEM("cpu_milli", 10, 20, "fits", 10000, 1000, 9000, 0),
                                                 DEM("memory_mib", 10, 20, "fits", 10000, 1000, 9000, 0),
                                                 DEM("gpu_count", 1, 2, "fits", 4, 1, 3, 0),
                                                 DEM("gpu_memory_mib", 1024, 2048, "exhausted", 16384, 15360, 1024, 1024)],
                                             fired=True)]))

    # api_gateway with a tenant binding (10 per replica, multiplicative): ceil(250 / 100) = 3,
    # limit 1 + 1 = 2 < 3, desired 2 (capped), additional 1. Demands 1 x 10 = 10 <= 9000. Quota:
    # 95 < 100 so not at its limit, but 95 + 1 x 10 = 105 > 100: over by 5, capacity_exhausted.
    t = api_with_quotas(tenant_binding(multiplicative=True))
    r = request(t, quotas=[quo("tenant:acme", "tenant", limit=100, used=95)])
    q_tenant = A("quota", "quota:tenant-acme", "tenant")
    api_tenant_ok = [SIG_RR] + API_CAPS + [q_tenant, SAFE]
    dec = decision(1, 1, "blocked", ["capacity_exhausted"], api_tenant_ok)
    derived("derivation/local-quota-projection-over-limit",
            "A tenant quota at 95 of 100 cannot take one more replica of 10: 95 + 1 x 10 = 105 > 100 (multiplicative changes no arithmetic).",
            r, dec, derivation(dec, [VD(e) for e in api_tenant_ok],
                               target=TARGET(250, 100, 3, 1, 1, 4, None, 3, "scale_up",
                                             STEP("scale_up_step", 1, 2, True), 2),
                               gates=[GROWTH(1, [DEM("cpu_milli", 10, 10, "fits", 10000, 1000, 9000, 0),
                                                 DEM("memory_mib", 10, 10, "fits", 10000, 1000, 9000, 0),
                                                 DEM("session_slots", 10, 10, "fits", 10000, 1000, 9000, 0)],
                                             [QC("tenant:acme", "tenant", "cpu_milli", 10, 95, 100, 105, True,
                                                 multiplicative=True)], fired=True)]))

    # Provider-global: 81 + 2 x 10 = 101 > 100, over by 1. The limit 100 is never multiplied by
    # a replica count (3 replicas would not make it 300).
    r = request("mcp", quotas=[quo(limit=100, used=81)])
    dec = decision(1, 1, "blocked", ["provider_quota_exhausted"], MCP_OK)
    derived("derivation/provider-quota-not-multiplied",
            "A provider-global quota of 100 at 81 used cannot take 2 replicas of 10: 81 + 2 x 10 = 101 > 100; the limit is never multiplied.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(250, 100, 3, 1, 1, 8, None, 3, "scale_up",
                                             STEP("scale_up_step", 2, 3, False), 3),
                               gates=[GROWTH(2, MCP_FITS(2),
                                             [QC("provider:llm", "provider_global", "provider_global_quota",
                                                 10, 81, 100, 101, True)], fired=True)]))

    # used 100 >= limit 100: C4 step 2 (at its limit in phase A) and step 4 (100 + 20 = 120 >
    # 100) both give provider_quota_exhausted, reported once.
    r = request("mcp", quotas=[quo(limit=100, used=100)])
    dec = decision(1, 1, "blocked", ["provider_quota_exhausted"], MCP_OK)
    derived("derivation/provider-quota-at-limit",
            "A provider quota with used == limit is at its limit (step 2) and over it once projected (step 4): one reason.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(250, 100, 3, 1, 1, 8, None, 3, "scale_up",
                                             STEP("scale_up_step", 2, 3, False), 3),
                               gates=[GROWTH(2, MCP_FITS(2),
                                             [QC("provider:llm", "provider_global", "provider_global_quota",
                                                 10, 100, 100, 120, True)], provider_at_limit=True, fired=True)]))

    # query_reader, fsync_iops demand 0 per replica on 100 - 100 = 0 available: 1 x 0 = 0 fits.
    # ceil(250 / 100) = 3, limit 1 + 1 = 2, desired 2 (capped), additional 1. Engine authority in
    # order: read_admission_slots 9000, engine_bytes 9000, fsync_iops 0: saturated.
    qc = contract("query")
    qc["replica_demands"][4]["per_replica"] = 0
    r = request(qc, capacities=caps_for(qc, over={"fsync_iops": dict(allocatable=100, reserved=100)}))
    dec = decision(1, 1, "blocked", ["engine_authority_saturated"], QR_OK)
    derived("derivation/engine-authority-saturated",
            "Every demand fits (fsync_iops needs 0), but the engine authority axis fsync_iops has 100 - 100 = 0 available: saturated.",
            r, dec, derivation(dec, [VD(e) for e in QR_OK],
                               target=TARGET(250, 100, 3, 1, 1, 8, None, 3, "scale_up",
                                             STEP("scale_up_step", 1, 2, True), 2),
                               gates=[GROWTH(1, [DEM("cpu_milli", 10, 10, "fits", 10000, 1000, 9000, 0),
                                                 DEM("memory_mib", 10, 10, "fits", 10000, 1000, 9000, 0),
                                                 DEM("read_admission_slots", 10, 10, "fits", 10000, 1000, 9000, 0),
                                                 DEM("engine_bytes", 10, 10, "fits", 10000, 1000, 9000, 0),
                                                 DEM("fsync_iops", 0, 0, "fits", 100, 100, 0, 0)],
                                             engine=[ENG("read_admission_slots", 10000, 1000, 9000, False),
                                                     ENG("engine_bytes", 10000, 1000, 9000, False),
                                                     ENG("fsync_iops", 100, 100, 0, True)], fired=True)]))

    # ceil(0 / 100) = 0 < floor 1: raw 1, limit 3 - 1 = 2, desired 2 (capped). C2(b): 4 sessions
    # + 1 stream > 0 with block_scale_down_with_active: blocked, drain required.
    r = request("mcp", current=3, value=0, continuity=cont(active_sessions=4, active_streams=1))
    dec = decision(3, 3, "blocked", ["active_sessions_block_drain"], MCP_OK, drain=True)
    derived("derivation/active-sessions-block-drain",
            "A scale-down 3 -> 2 with 4 sessions and 1 stream still active is blocked until they drain.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(0, 100, 0, 1, 1, 8, "floor", 1, "scale_down",
                                             STEP("scale_down_step", 1, 2, True), 2),
                               gates=[SESSIONS(True, 4, 1, True)]))

    # As the scale-down above with drain_seconds 600 > max_drain_seconds 300: C2(b) passes (0 +
    # 0), C5 blocks with drain_required.
    r = request(contract("mcp", policy__drain_seconds=600), current=3, value=0)
    dec = decision(3, 3, "blocked", ["drain_required"], MCP_OK, drain=True)
    derived("derivation/drain-bound-blocks",
            "A scale-down needing a 600 s drain against a 300 s max_drain_seconds is blocked.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(0, 100, 0, 1, 1, 8, "floor", 1, "scale_down",
                                             STEP("scale_down_step", 1, 2, True), 2),
                               gates=[SESSIONS(True, 0, 0, False), DRAIN(True, 600, 300, True)]))

    # min_replicas 0 without scale-to-zero: floor raised to 1. ceil(250 / 100) = 3, raw 3 > 0,
    # limit 0 + 2 = 2, desired 2 (capped). C1: current 0 and allow_scale_from_zero false: blocked.
    r = request(contract("mcp", policy__min_replicas=0, policy__allow_scale_from_zero=False), current=0)
    dec = decision(0, 0, "blocked", ["scale_from_zero_disabled"], MCP_OK)
    derived("derivation/scale-from-zero-disabled",
            "A unit at 0 (min_replicas 0, floor raised to 1) would grow to 2 but scaling from zero is off.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(250, 100, 3, 0, 1, 8, None, 3, "scale_up",
                                             STEP("scale_up_step", 2, 2, True), 2),
                               gates=[{"gate": "scale_from_zero", "allow_scale_from_zero": False, "fired": True}]))

    # api_gateway, min 0 with scale-to-zero, scale_down_step 2: ceil(0 / 100) = 0, floor 0, raw 0,
    # limit 1 - 2 at least 0 = 0, desired 0 (not capped). C2(a) does not apply (scale-to-zero
    # allowed); C2(b): no continuity observation; C5: drain_required false.
    z = contract("api", policy__min_replicas=0, policy__allow_scale_to_zero=True, policy__scale_down_step=2)
    r = request(z, current=1, value=0)
    dec = decision(1, 0, "scale_down", ["target_tracking"], API_OK)
    derived("derivation/scale-to-zero",
            "An idle stateless unit allowed to reach zero steps 1 -> 0; the step limit 1 - 2 stops at 0.",
            r, dec, derivation(dec, [VD(e) for e in API_OK],
                               target=TARGET(0, 100, 0, 0, 0, 4, None, 0, "scale_down",
                                             STEP("scale_down_step", 2, 0, False), 0),
                               gates=[SESSIONS(False, None, None, False), DRAIN(False, 0, 300, False)]))

    # Phase A: signal expired at 11:55 (stale), no session_slots observation (missing), provider
    # quota observed 1 us after now (stale). Reasons in A order; no target, no gate.
    r = request(mcp_c, signal=sig("request_rate", 250, obs=OLD_OBS, exp=OLD_EXP),
                capacities=caps_for(mcp_c, drop=("session_slots",)), quotas=[quo(obs=FUTURE_OBS)])
    sig_stale = S("signal", "metrics:request_rate", "signal_stale")
    q_stale = S("quota", "quota:provider-llm", "provider_quota_stale")
    ev = [sig_stale, CAP["cpu_milli"], CAP["memory_mib"], MISSING_CAP("session_slots"),
          CAP["continuity_slots"], q_stale, C_EXT, SAFE]
    dec = decision(1, 1, "blocked", ["signal_stale", "capacity_missing", "provider_quota_stale"], ev)
    derived("derivation/stale-and-missing-evidence",
            "An expired signal, a missing capacity axis and a quota from the future: each verdict with its window, no target.",
            r, dec, derivation(dec, [VD(sig_stale, OLD_OBS_U, OLD_EXP_U), VD(CAP["cpu_milli"]),
                                     VD(CAP["memory_mib"]), VD(MISSING_CAP("session_slots")),
                                     VD(CAP["continuity_slots"]), VD(q_stale, FUTURE_OBS_U, EXP_U),
                                     VD(C_EXT), VD(SAFE)]))

    # A1: in_flight is not the policy's request_rate; A3: a tenant-scoped observation for the
    # provider-global binding.
    r = request("mcp", signal=sig("in_flight", 250), quotas=[quo(scope="tenant")])
    sig_b = B("signal", "metrics:in_flight", "signal_mismatch")
    q_b = B("quota", "quota:provider-llm", "quota_scope_mismatch")
    ev = [sig_b] + MCP_CAPS + [q_b, C_EXT, SAFE]
    dec = decision(1, 1, "blocked", ["signal_mismatch", "quota_scope_mismatch"], ev)
    derived("derivation/mismatches-name-both-sides",
            "A signal and a quota scope that differ from the contract: each verdict names what was expected and found.",
            r, dec, derivation(dec, [VD(sig_b, mismatch={"expected": "request_rate", "found": "in_flight"})]
                               + [VD(e) for e in MCP_CAPS]
                               + [VD(q_b, mismatch={"expected": "provider_global", "found": "tenant"}),
                                  VD(C_EXT), VD(SAFE)]))

    # Reason-only checks of phase A on a stateless api_gateway: an expired continuity observation
    # (A4, no evidence entry), overloaded and noisy_neighbor (A5), last action 5 s = 5 000 000 us
    # after now (A6).
    r = request("api", continuity=cont(obs=OLD_OBS, exp=OLD_EXP),
                safety=safe(overloaded=True, noisy_neighbor=True, reason_ref="incident:42"),
                last_action_at="2026-08-19T12:00:05Z")
    dec = decision(1, 1, "blocked",
                   ["continuity_stale", "overload_shedding_active", "noisy_neighbor", "cooldown"], API_OK)
    derived("derivation/phase-a-checks-without-evidence",
            "Stateless continuity stale, overload, noisy neighbour and a future last action: four checks that add reasons without evidence entries.",
            r, dec, derivation(dec, [VD(e) for e in API_OK],
                               checks=[{"check": "continuity_stale", "observed_at": OLD_OBS_U,
                                        "expires_at": OLD_EXP_U},
                                       {"check": "overloaded", "reason_ref": "incident:42"},
                                       {"check": "noisy_neighbor", "reason_ref": "incident:42"},
                                       {"check": "last_action_in_future",
                                        "last_action_at": "2026-08-19T12:00:05+00:00", "ahead_us": 5000000}]))

    # SPEC 10.1: a gpu_count demand (1 per replica) outside required_capacity_axes, observed but
    # expired. additional 2: the four declared axes fit (20 <= 9000), gpu_count needs 2 x 1 = 2 but
    # its observation is stale: capacity_stale, numbers not read. Provider 0 + 20 <= 100.
    u = contract("mcp")
    u["replica_demands"].append({"axis": "gpu_count", "per_replica": 1})
    r = request(u, capacities=caps_for(u, extra=[cap("gpu_count", 8, 0, obs=OLD_OBS, exp=OLD_EXP)]))
    dec = decision(1, 1, "blocked", ["capacity_stale"], MCP_OK)
    derived("derivation/undeclared-demand-axis-stale",
            "SPEC 10.1: a demand on an axis outside required_capacity_axes whose observation expired stops growth as capacity_stale.",
            r, dec, derivation(dec, mcp_ev,
                               target=TARGET(250, 100, 3, 1, 1, 8, None, 3, "scale_up",
                                             STEP("scale_up_step", 2, 3, False), 3),
                               gates=[GROWTH(2, MCP_FITS(2) + [DEM("gpu_count", 1, 2, "stale")],
                                             [QC("provider:llm", "provider_global", "provider_global_quota",
                                                 10, 0, 100, 20, False)], fired=True)]))


# ================================================================ diagnosis/

def group_diagnosis():
    """Several planted faults each; expect.diagnosis lists every one, in check order."""
    F, C, P, O = "invalid_field", "invalid_contract", "invalid_policy", "invalid_observation"
    STATELESS_BLOCK = "stateless continuity cannot block scale-down on active sessions"
    DEFAULT_BLOCK = "`block_scale_down_with_active` is not written, so it takes its default true"

    # dispatch_worker, the first draft of issue 18: stateless without the block flag, two required
    # axes and the partition lease left out, a demand missing.
    c = {"unit_ref": "unit:dispatch-worker", "surface": "dispatch_worker",
         "policy": _policy("queue_depth"),
         "allowed_signals": ["queue_depth", "consumer_lag"],
         "required_capacity_axes": ["cpu_milli", "memory_mib"],
         "replica_demands": _demands(["cpu_milli"]),
         "continuity": {"mode": "stateless"}}
    diag("diagnosis/dispatch-worker-first-draft",
         "A first dispatch_worker draft: the stateless block flag left at its default, partition_slots and "
         "lease_slots and the partition lease left out, no demand for memory_mib.",
         request(c),
         [(C, "contract.continuity", DEFAULT_BLOCK),
          (C, "contract", "add `partition_slots`, `lease_slots` to `required_capacity_axes`, and to "
                          "`replica_demands` a demand for `partition_slots`, `lease_slots`"),
          (C, "contract", "`partition_lease` is not written, so every field takes its default (false, 0)"),
          (C, "contract", "add to `replica_demands` a demand for `memory_mib`")],
         STATELESS_BLOCK)

    # ingest_worker: engine axes left out of the required axes and of engine_authority_axes (check
    # 6 is not reported beside check 5), and a signal misspelt past any suggestion.
    c = contract("ingest", required_capacity_axes=["cpu_milli", "memory_mib", "partition_slots", "lease_slots"],
                 replica_demands=_demands(["cpu_milli", "memory_mib", "partition_slots", "lease_slots"]),
                 engine_authority_axes=DEL, allowed_signals=["queue_depth", "backlog_age"])
    diag("diagnosis/ingest-worker-engine-axes-left-out",
         "ingest_worker without its engine axes (required and engine authority, the latter at its default []), "
         "and an allowed signal with no near word (unreadable, so the signal checks are not judged).",
         request(c, capacities=caps_for(c)),
         [(F, "contract.allowed_signals[1]", "`backlog_age` is none of `queue_depth`"),
          (C, "contract", "add `engine_write_bytes_per_s`, `fsync_iops` to `required_capacity_axes`, and to "
                          "`replica_demands` a demand for `engine_write_bytes_per_s`, `fsync_iops`"),
          (C, "contract", "`engine_authority_axes` is not written, so it takes its default []: write "
                          "`\"engine_authority_axes\": [\"engine_write_bytes_per_s\", \"fsync_iops\"]`")])

    # graphos_gateway drafted as stateless.
    c = contract("graphos", continuity={"mode": "stateless"},
                 allowed_signals=["request_rate", "in_flight", "queue_depth"],
                 required_capacity_axes=["cpu_milli", "memory_mib", "read_admission_slots", "engine_bytes",
                                         "fsync_iops"],
                 engine_authority_axes=["read_admission_slots", "engine_bytes"])
    diag("diagnosis/graphos-gateway-stateless-draft",
         "graphos_gateway as stateless (default block flag, unsupported mode), a signal of another surface, "
         "session_slots left out (its demand is there), an engine axis missing.",
         request(c),
         [(C, "contract.continuity", DEFAULT_BLOCK),
          (C, "contract", "remove `queue_depth` from `allowed_signals`: graphos_gateway allows"),
          (C, "contract", "add `session_slots` to `required_capacity_axes` (graphos_gateway requires"),
          (C, "contract", "missing `fsync_iops`"),
          (C, "contract", "set `continuity.mode` to `session_affine` or `externalized`")],
         STATELESS_BLOCK)

    # mcp_gateway: the target signal not allowed, continuity_slots and the provider binding left out.
    c = contract("mcp", policy__target_signal="in_flight", allowed_signals=["request_rate"],
                 required_capacity_axes=["cpu_milli", "memory_mib", "session_slots"],
                 replica_demands=_demands(["cpu_milli", "memory_mib", "session_slots"]),
                 quotas=[{"quota_ref": "tenant:team-a", "axis": "cpu_milli", "scope": "tenant", "per_replica": 1}])
    diag("diagnosis/mcp-gateway-target-axes-and-provider-quota",
         "mcp_gateway tracking in_flight without allowing it, without continuity_slots (axis and demand) and "
         "without a provider-global binding.",
         request(c, signal=sig("in_flight", 250)),
         [(C, "contract", "add `in_flight` to `allowed_signals`"),
          (C, "contract", "add `continuity_slots` to `required_capacity_axes`, and to `replica_demands` a demand "
                          "for `continuity_slots`"),
          (C, "contract", "`\"scope\": \"provider_global\"` on `provider_global_quota`")],
         "target_signal must be in allowed_signals")

    # Misspelt words: near ones are read as meant (nothing follows from them), a far one is unreadable.
    c = contract("api", surface="API-Gateway", policy__target_signal="requestrate",
                 continuity__mode="Stateless")
    setp(c, "required_capacity_axes[0]", "cpu_mili")
    setp(c, "replica_demands[2].axis", "sessions")
    r = request(c, signal=sig("request-rate", 250), capacities=caps_for(contract("api")))
    setp(r, "capacities[1].axis", "memory_mb")
    diag("diagnosis/api-gateway-misspelt-words",
         "Misspelt vocabulary words: each near one gets its did-you-mean and is read as meant; `sessions` is near "
         "no axis and lists the vocabulary.",
         r,
         [(F, "contract.surface", "did you mean `api_gateway`?"),
          (F, "contract.policy.target_signal", "did you mean `request_rate`?"),
          (F, "contract.required_capacity_axes[0]", "did you mean `cpu_milli`?"),
          (F, "contract.replica_demands[2].axis", "`sessions` is none of `cpu_milli`, `memory_mib`"),
          (F, "contract.continuity.mode", "did you mean `stateless`?"),
          (F, "signal.signal", "did you mean `request_rate`?"),
          (F, "capacities[1].axis", "did you mean `memory_mib`?")])

    # Unknown fields, and what their absence leaves at its default.
    c = contract("api", policy__scale_up_step=2)
    c["policy"]["max_replica"] = c["policy"].pop("max_replicas")
    c["continuity"] = {"mode": "stateless", "drain_required": False, "block_scale_down_with_actives": False}
    c["safety_requried"] = False
    c["owner"] = "team-a"
    r = request(c)
    r["signals"] = r.pop("signal")
    diag("diagnosis/unknown-fields-and-their-defaults",
         "Misspelt field names get the nearest known field; the fields they meant take their defaults, and the "
         "rules those defaults break say so.",
         r,
         [(F, "contract.policy.max_replica", "did you mean `max_replicas`?"),
          (F, "contract.continuity.block_scale_down_with_actives", "did you mean `block_scale_down_with_active`?"),
          (F, "contract.safety_requried", "did you mean `safety_required`?"),
          (F, "contract.owner", "remove `owner`: `contract` has the fields `schema_version`, `unit_ref`"),
          (F, "signals", "did you mean `signal`?"),
          (P, "contract.policy", "`scale_up_step` is 2 and `max_replicas` is not written, so it takes its default 1"),
          (C, "contract.continuity", DEFAULT_BLOCK)])

    # Wrong JSON types, each with the expected type; what reads them is not judged.
    r = request("api")
    for path, value in [("contract.policy.min_replicas", 1.0), ("contract.policy.target", "100"),
                        ("contract.policy.allow_scale_to_zero", "false"),
                        ("contract.allowed_signals", "request_rate"),
                        ("contract.replica_demands[0].per_replica", True),
                        ("contract.safety_required", 1), ("current_replicas", "1")]:
        setp(r, path, value)
    diag("diagnosis/wrong-json-types",
         "Seven values of the wrong JSON type, each with what to write instead; the rules that read them are not "
         "judged.",
         r,
         [(F, "contract.policy.min_replicas", "write `min_replicas` as the whole number 1, without a decimal point"),
          (F, "contract.policy.target", "write `target` as the number 100, without quotes"),
          (F, "contract.policy.allow_scale_to_zero", "write `allow_scale_to_zero` as false, without quotes"),
          (F, "contract.allowed_signals", "write `allowed_signals` as an array, such as [\"request_rate\"]"),
          (F, "contract.replica_demands[0].per_replica", "write `per_replica` as a number in 0..=1000000000000000"),
          (F, "contract.safety_required", "write `safety_required` as true: a boolean is true or false"),
          (F, "current_replicas", "write `current_replicas` as the number 1, without quotes")])

    # Numbers out of bounds, 10^20 among them (an integer past u64, not a float).
    r = request("api", value=E15 * 10)
    for path, value in [("contract.version", 0), ("contract.policy.max_replicas", 0),
                        ("contract.policy.target", 10 ** 20), ("contract.policy.scale_down_cooldown_s", 90000),
                        ("contract.replica_demands[1].per_replica", E15 * 10),
                        ("capacities[2].reserved", 20000), ("current_replicas", 10001)]:
        setp(r, path, value)
    diag("diagnosis/numbers-out-of-bounds",
         "Eight numbers outside their bounds: target 10^20 is reported as an integer past its bounds, max_replicas "
         "0 is not used by the rules that read it, reserved over allocatable, replicas over 10000.",
         None,
         [(F, "contract.policy.target", "write `target` in 1..=1000000000000", "an integer past its bounds"),
          (F, "contract.version", "set `version` to a value in 1..=2147483647"),
          (F, "contract.policy.max_replicas", "set `max_replicas` to a value in 1..=10000"),
          (F, "contract.policy.scale_down_cooldown_s", "set `scale_down_cooldown_s` to a value in 0..=86400"),
          (F, "contract.replica_demands[1].per_replica", "set `per_replica` to a value in 0..=1000000000000000"),
          (F, "signal.value", "set `value` to a value in 0..=1000000000000000"),
          (O, "capacities[2]", "`reserved` 20000 is more than `allocatable` 10000"),
          ("replicas_out_of_bounds", "current_replicas", "give the replicas running now, in 0..=10000")],
         text=json.dumps(r))

    # Refs, digests and times (query_reader, fsync_iops left out of the required axes).
    c = contract("query", unit_ref="unit query-reader", contract_digest="sha256:" + "A" * 64,
                 required_capacity_axes=["cpu_milli", "memory_mib", "read_admission_slots", "engine_bytes"])
    r = request(c, last_action_at="2301-01-01T00:00:00Z", safety=safe(overloaded=True))
    for path, value in [("signal.source_ref", "metrics:Bearer-abc"),
                        ("capacities[0].source_digest", "sha512:" + "0" * 64),
                        ("capacities[1].observed_at", "2026-08-19T11:59:00")]:
        setp(r, path, value)
    diag("diagnosis/refs-digests-and-times",
         "A ref with a space, a credential in a ref, digests in upper case and of another algorithm, a time "
         "without an offset and one past 2300, overload without a reason; the identity is not judged.",
         r,
         [("invalid_ref", "contract.unit_ref", "at character 5 is not allowed"),
          ("invalid_digest", "contract.contract_digest", "write the hex digits in lower case"),
          (C, "contract", "add `fsync_iops` to `required_capacity_axes` (query_reader requires"),
          ("credential_in_ref", "signal.source_ref", "contains `bearer`"),
          ("invalid_digest", "capacities[0].source_digest", "`sha512` is not supported"),
          ("invalid_time", "capacities[1].observed_at", "add an offset to `observed_at`"),
          (O, "safety", "add `reason_ref`"),
          ("invalid_time", "last_action_at", "give `last_action_at` a time whose UTC year is in 2000..=2300")],
         "must be a bounded opaque reference")

    # Observation faults beside stale evidence, which is never a fault (media_pool).
    c = contract("media", required_capacity_axes=["cpu_milli", "memory_mib", "gpu_count"])
    caps = caps_for(contract("media"))
    caps[0]["expires_at"] = caps[0]["observed_at"]
    caps[1]["used"] = 2000
    caps[2]["observed_at"], caps[2]["expires_at"] = OLD_OBS, OLD_EXP
    caps.append(cap("cpu_milli", ref="capacity:cpu-second"))
    r = request(c, signal=sig("gpu_utilization_ppm", -5), capacities=caps,
                quotas=[quo("tenant:x", "tenant", limit=3, used=5)],
                safety=safe(obs=OLD_OBS, exp=OLD_EXP))
    diag("diagnosis/observation-faults-beside-stale-evidence",
         "A negative signal, a capacity window that ends where it starts, used over reserved, a quota over its "
         "limit and a duplicate axis are faults; the stale capacity and safety observations are not.",
         r,
         [(C, "contract", "add `gpu_memory_mib` to `required_capacity_axes` (media_pool requires"),
          (O, "signal.value", "report the signal as 0 or more"),
          (O, "capacities[0]", "is not after `observed_at`"),
          (O, "capacities[1]", "`used` 2000 is more than `reserved` 1000"),
          (O, "quotas[0]", "`used` 5 is more than `limit` 3"),
          ("duplicate_observation", "capacities", "there is more than one for `cpu_milli`")],
         "media_pool contract omitted a required hard capacity axis")

    # Every rule of the policy, broken by max_replicas left at its default.
    c = contract("api", policy={"min_replicas": 5, "target": 100, "target_signal": "request_rate",
                                "allow_scale_to_zero": True, "scale_up_step": 3, "scale_down_step": 2},
                 required_capacity_axes=["cpu_milli", "memory_mib"])
    diag("diagnosis/api-gateway-policy-rules",
         "min_replicas 5 with max_replicas at its default 1 breaks the four policy rules; session_slots left out; "
         "current_replicas under the floor.",
         request(c, current=1),
         [(P, "contract.policy", "`min_replicas` is 5 and `max_replicas` is not written, so it takes its default 1: "
                                 "raise `max_replicas` to at least 5"),
          (P, "contract.policy", "set `min_replicas` to 0, or `allow_scale_to_zero` to false"),
          (P, "contract.policy", "`scale_up_step` is 3 and `max_replicas` is not written"),
          (P, "contract.policy", "`scale_down_step` is 2 and `max_replicas` is not written"),
          (C, "contract", "add `session_slots` to `required_capacity_axes` (api_gateway requires"),
          ("replicas_out_of_bounds", "current_replicas", "`current_replicas` is 1 and `min_replicas` is 5")],
         "min_replicas cannot exceed max_replicas")

    # dispatch_worker: a half-written partition lease, an externalized store left out.
    c = contract("dispatch", partition_lease={"partitioned": True, "lease_required": True},
                 continuity={"mode": "externalized"})
    diag("diagnosis/dispatch-worker-half-written-lease",
         "partitioned and lease_required without partitions_per_replica, lease_ttl_s and fencing (all at their "
         "defaults), and externalized continuity without its store.",
         request(c),
         [(C, "contract.partition_lease", "`partitions_per_replica` is not written, so it takes its default 0"),
          (C, "contract.partition_lease", "`fencing_required` is not written, so it takes its default false: set it "
                                          "to true"),
          (C, "contract.continuity", "add `external_store_ref`"),
          (C, "contract", "set `fencing_required` to true in `partition_lease` (`fencing_required` not written: "
                          "the default is false)")],
         "partitioned surfaces require partitions_per_replica")

    # connector_pool: a provider binding broken three ways, a repeated quota_ref.
    c = contract("connector", required_capacity_axes=["cpu_milli", "memory_mib"],
                 quotas=[{"quota_ref": "provider:crm", "axis": "cpu_milli", "scope": "provider_global",
                          "per_replica": 0, "multiplicative": True},
                         {"quota_ref": "provider:crm", "axis": "upstream_rate", "scope": "tenant",
                          "per_replica": 1}])
    diag("diagnosis/connector-pool-quota-bindings",
         "A provider-global binding that multiplies, draws nothing and sits on an unsupported axis; its quota_ref "
         "repeated; upstream_rate left out of the required axes (its demand is there).",
         request(c, quotas=[quo("provider:crm", "provider_global")]),
         [(C, "contract.quotas[0]", "set `multiplicative` to false"),
          (C, "contract.quotas[0]", "set `per_replica` to what one replica draws from the provider quota"),
          (C, "contract", "add `upstream_rate` to `required_capacity_axes` (connector_pool requires"),
          (C, "contract", "there is more than one for `provider:crm`"),
          (C, "contract", "set the `axis` of a provider-global binding to `upstream_rate` or `provider_global_quota`")],
         "provider-global quota cannot be multiplied per replica")

    # rlm_pool: repeats, an engine axis the surface does not have, gpu_memory_mib left out.
    c = contract("rlm", allowed_signals=["queue_depth", "active_sessions", "queue_depth"],
                 required_capacity_axes=["cpu_milli", "memory_mib", "gpu_count"],
                 replica_demands=_demands(["cpu_milli", "memory_mib", "gpu_count", "cpu_milli"], 1),
                 engine_authority_axes=["gpu_count"])
    diag("diagnosis/rlm-pool-repeats-and-engine-axes",
         "A repeated signal, gpu_memory_mib left out (axis and demand), an engine authority axis rlm_pool does not "
         "have, a repeated demand axis.",
         request(c, signal=sig("active_sessions", 25)),
         [(C, "contract", "remove the repeated `queue_depth` from `allowed_signals`"),
          (C, "contract", "add `gpu_memory_mib` to `required_capacity_axes`, and to `replica_demands` a demand for "
                          "`gpu_memory_mib`"),
          (C, "contract", "rlm_pool has no engine authority axes"),
          (C, "contract", "there is more than one for `cpu_milli`")],
         "allowed signal names must be unique")

    # Stale and missing evidence blocks a decision; it is not a fault.
    c = contract("api", contract_id="scale-unit:00000000000000000000000000000000")
    stale = dict(obs=OLD_OBS, exp=OLD_EXP)
    r = request(c, signal=sig("request_rate", 250, **stale),
                capacities=[cap(a, **stale) for a in c["required_capacity_axes"]],
                safety=DEL, last_action_at="2026-08-19T11:00:00")
    diag("diagnosis/stale-evidence-is-not-a-fault",
         "Every observation stale and safety missing (a blocked decision, not a fault) beside a contract_id that "
         "is not the contract's and a last_action_at without an offset.",
         r,
         [("identity_mismatch", "contract.contract_id", "this contract's id is `scale-unit:"),
          ("invalid_time", "last_action_at", "add an offset to `last_action_at`")],
         "contract_id does not match immutable identity")


def write_all():
    for g in GROUPS:
        d = os.path.join(ROOT, g)
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            if name.endswith(".json"):
                os.remove(os.path.join(d, name))
    counts = {}
    for v in VECTORS:
        v = seal.seal(v)
        group, name = v["id"].split("/", 1)
        with open(os.path.join(ROOT, group, name + ".json"), "w", encoding="utf-8") as fh:
            fh.write(seal.dump(v))
        counts[group] = counts.get(group, 0) + 1
    for g in GROUPS:
        print("%-12s %d" % (g, counts.get(g, 0)))
    print("%-12s %d" % ("total", len(VECTORS)))


# ================================================================ gate/
# SPEC §12: what a decision permits. Each vector is an ordinary vector (its request's decision or
# error, written by hand as above) plus a proposed change and the gate's verdict, and the
# external scaler's reading, written by hand from §12. "{id}" in a message stands for the
# decision's id, which seal.py fills in with the decision itself.

def ch(frm, to):
    return "%d -> %d replicas" % (frm, to)


def verdict(allowed, reason, message, frm, to, decided=True, error=None):
    return {"allowed": allowed, "reason": reason, "message": message, "from_replicas": frm,
            "to_replicas": to, "decision": "D" if decided else None, "error": error}


def reading(metric, active, decided=True, error=None):
    return {"metric_value": metric, "active": active, "decision": "D" if decided else None, "error": error}


def denial(why, reasons):
    return "%s; reasons: %s; decision {id}" % (why, ", ".join(reasons))


def gated(vid, description, req, dec, to, v, scaler, kind=None):
    """A gate vector over a decided request."""
    assert dec["current_replicas"] == req["current_replicas"], vid
    change = {"to_replicas": to} if kind is None else {"to_replicas": to, "kind": kind}
    _add(vid, description, {"request": req, "change": change},
         {"decision": dec, "gate": v, "scaler": scaler})


def gated_error(vid, description, req, err, to, v, kind=None, text=None):
    """A gate vector over a request that cannot be decided (err: the evaluation error)."""
    change = {"to_replicas": to} if kind is None else {"to_replicas": to, "kind": kind}
    body = {"request": req} if text is None else {"request_json": text}
    body["change"] = change
    e = {k: err[k] for k in ("code", "message_contains") if k in err}
    _add(vid, description, body, {"error": e, "gate": v, "scaler": reading(None, True, False, e)})


def bad_change(vid, description, req, dec, change_text, code, message=None):
    """A gate vector whose change cannot be read: the gate answers an error."""
    err = {"code": code}
    if message is not None:
        err["message_contains"] = message
    _add(vid, description, {"request": req, "change_json": change_text},
         {"decision": dec, "gate_error": err})


def group_gate():
    # ---- scale_up 3 -> 5: ceil(500 / 100) = 5 within [1, 8], 3 + scale_up_step 2 = 5.
    up = request("mcp", current=3, value=500)
    up_dec = decision(3, 5, "scale_up", ["target_tracking"], MCP_OK)
    up_read = reading(5, True)
    up_why = lambda why: denial(why, ["target_tracking"])
    gated("gate/up-no-change", "3 -> 3 under scale_up 3 -> 5 changes nothing: allowed.",
          up, up_dec, 3, verdict(True, "no_change", ch(3, 3) + ": no change", 3, 3), up_read)
    gated("gate/up-one-step", "3 -> 4 under scale_up 3 -> 5 goes the decision's way, short of 5: allowed.",
          up, up_dec, 4, verdict(True, "within_decision", ch(3, 4) + " allowed: the decision is scale_up to 5 (decision {id})", 3, 4), up_read)
    gated("gate/up-to-desired", "3 -> 5 under scale_up 3 -> 5 is exactly the decision: allowed.",
          up, up_dec, 5, verdict(True, "within_decision", ch(3, 5) + " allowed: the decision is scale_up to 5 (decision {id})", 3, 5), up_read)
    for to, name in ((6, "one-past"), (8, "to-max"), (10000, "to-10000")):
        gated("gate/up-past-desired-" + name, "3 -> %d under scale_up 3 -> 5 passes desired_replicas: denied." % to,
              up, up_dec, to, verdict(False, "past_desired", ch(3, to) + " denied: " + up_why("the decision is scale_up to at most 5"), 3, to), up_read)
    for to, name in ((2, "down-one"), (0, "down-to-zero")):
        gated("gate/up-wrong-direction-" + name, "3 -> %d under scale_up 3 -> 5 goes the other way: denied." % to,
              up, up_dec, to, verdict(False, "wrong_direction", ch(3, to) + " denied: " + up_why("the decision is scale_up to 5, not down"), 3, to), up_read)
    gated("gate/up-break-glass-past-desired", "A break-glass 3 -> 8 under scale_up 3 -> 5 is allowed and says what it overrides.",
          up, up_dec, 8, verdict(True, "break_glass", ch(3, 8) + " allowed: break glass over a denial: " + up_why("the decision is scale_up to at most 5"), 3, 8), up_read, kind="break_glass")
    gated("gate/up-break-glass-within", "A break-glass 3 -> 4 the decision allows anyway is an ordinary allowed change.",
          up, up_dec, 4, verdict(True, "within_decision", ch(3, 4) + " allowed: the decision is scale_up to 5 (decision {id})", 3, 4), up_read, kind="break_glass")
    gated("gate/up-kind-scale-explicit", "kind scale written out is the default.",
          up, up_dec, 6, verdict(False, "past_desired", ch(3, 6) + " denied: " + up_why("the decision is scale_up to at most 5"), 3, 6), up_read, kind="scale")
    # Changes that cannot be read: an error, never a verdict.
    for name, text, code, message in (
            ("to-10001", '{"to_replicas": 10001}', "invalid_field", "to_replicas must be within 0..=10000"),
            ("to-negative", '{"to_replicas": -1}', "invalid_field", "to_replicas must be within 0..=10000"),
            ("to-float", '{"to_replicas": 5.0}', "invalid_field", None),
            ("to-string", '{"to_replicas": "5"}', "invalid_field", None),
            ("to-missing", '{"kind": "scale"}', "invalid_field", None),
            ("to-null", '{"to_replicas": null}', "invalid_field", None),
            ("kind-unknown", '{"to_replicas": 5, "kind": "override"}', "invalid_field", None),
            ("kind-null", '{"to_replicas": 5, "kind": null}', "invalid_field", None),
            ("unknown-field", '{"to_replicas": 5, "from_replicas": 3}', "invalid_field", None),
            ("duplicate-key", '{"to_replicas": 5, "to_replicas": 8}', "invalid_json", None),
            ("not-json", 'to 5', "invalid_json", None),
            ("not-an-object", '[5]', "invalid_field", None)):
        bad_change("gate/change-" + name, "A change written %s cannot be read: %s, no verdict." % (text, code),
                   up, up_dec, text, code, message)

    # ---- scale_down 5 -> 4 with a drain: ceil(40 / 100) = 1 raised to the floor 2, step 1.
    c = contract("mcp", policy__min_replicas=2)
    down = request(c, current=5, value=40)
    down_dec = decision(5, 4, "scale_down", ["target_tracking"], MCP_OK, drain=True)
    down_read = reading(4, True)
    down_why = lambda why: denial(why, ["target_tracking"])
    gated("gate/down-to-desired-drains", "5 -> 4 under scale_down 5 -> 4 is allowed and asks for a drain first.",
          down, down_dec, 4, verdict(True, "within_decision", ch(5, 4) + " allowed: the decision is scale_down to 4 (decision {id}); drain the removed replicas first", 5, 4), down_read)
    gated("gate/down-past-desired", "5 -> 3 under scale_down 5 -> 4 passes desired_replicas: denied.",
          down, down_dec, 3, verdict(False, "past_desired", ch(5, 3) + " denied: " + down_why("the decision is scale_down to at least 4"), 5, 3), down_read)
    gated("gate/down-below-min-is-past-desired", "5 -> 1 under scale_down 5 -> 4 (floor 2) is denied as past desired_replicas.",
          down, down_dec, 1, verdict(False, "past_desired", ch(5, 1) + " denied: " + down_why("the decision is scale_down to at least 4"), 5, 1), down_read)
    gated("gate/down-wrong-direction", "5 -> 6 under scale_down 5 -> 4 goes the other way: denied.",
          down, down_dec, 6, verdict(False, "wrong_direction", ch(5, 6) + " denied: " + down_why("the decision is scale_down to 4, not up"), 5, 6), down_read)
    gated("gate/down-no-change", "5 -> 5 under scale_down 5 -> 4: no change, allowed.",
          down, down_dec, 5, verdict(True, "no_change", ch(5, 5) + ": no change", 5, 5), down_read)
    gated("gate/down-break-glass", "A break-glass 5 -> 2 under scale_down 5 -> 4 is allowed.",
          down, down_dec, 2, verdict(True, "break_glass", ch(5, 2) + " allowed: break glass over a denial: " + down_why("the decision is scale_down to at least 4"), 5, 2), down_read, kind="break_glass")

    # ---- hold at target: ceil(300 / 100) = 3 = current.
    hold = request("mcp", current=3, value=300)
    hold_dec = decision(3, 3, "hold", ["at_target"], MCP_OK)
    hold_read = reading(3, True)
    for to in (4, 2):
        gated("gate/hold-denies-%d" % to, "3 -> %d under hold at 3 is denied." % to,
              hold, hold_dec, to, verdict(False, "decision_hold", ch(3, to) + " denied: " + denial("the decision is hold at 3", ["at_target"]), 3, to), hold_read)
    gated("gate/hold-no-change", "3 -> 3 under hold at 3 is allowed: nothing changes.",
          hold, hold_dec, 3, verdict(True, "no_change", ch(3, 3) + ": no change", 3, 3), hold_read)
    gated("gate/hold-break-glass", "A break-glass 3 -> 6 under hold is allowed.",
          hold, hold_dec, 6, verdict(True, "break_glass", ch(3, 6) + " allowed: break glass over a denial: " + denial("the decision is hold at 3", ["at_target"]), 3, 6), hold_read, kind="break_glass")

    # ---- cooldown: 20 s after the last action a scale-up with a 30 s cooldown holds.
    cd = contract("mcp", policy__scale_up_cooldown_s=30, policy__scale_down_cooldown_s=300)
    cool = request(cd, last_action_at="2026-08-19T11:59:40Z")
    cool_dec = decision(1, 1, "hold", ["cooldown"], MCP_OK)
    gated("gate/cooldown-denies-the-next-step", "Inside the cooldown the same step again is denied: hold [cooldown].",
          cool, cool_dec, 3, verdict(False, "decision_hold", ch(1, 3) + " denied: " + denial("the decision is hold at 1", ["cooldown"]), 1, 3), reading(1, True))

    # ---- blocked: missing signal; stale evidence; active sessions.
    mcp_tail = MCP_CAPS + [Q_LLM, C_EXT, SAFE]
    blk = request("mcp", current=3, signal=DEL)
    blk_dec = decision(3, 3, "blocked", ["signal_missing"], [SIG_MISSING] + mcp_tail)
    blk_read = reading(3, True)
    for to in (5, 2, 0):
        gated("gate/blocked-denies-%d" % to, "3 -> %d with no signal is denied: the decision is blocked." % to,
              blk, blk_dec, to, verdict(False, "decision_blocked", ch(3, to) + " denied: " + denial("the decision is blocked", ["signal_missing"]), 3, to), blk_read)
    gated("gate/blocked-no-change", "3 -> 3 with no signal: no change, allowed.",
          blk, blk_dec, 3, verdict(True, "no_change", ch(3, 3) + ": no change", 3, 3), blk_read)
    gated("gate/blocked-break-glass", "A break-glass 3 -> 5 while blocked is allowed and names the block.",
          blk, blk_dec, 5, verdict(True, "break_glass", ch(3, 5) + " allowed: break glass over a denial: " + denial("the decision is blocked", ["signal_missing"]), 3, 5), blk_read, kind="break_glass")
    sess = request("mcp", current=3, value=0, continuity=cont(active_streams=2))
    sess_dec = decision(3, 3, "blocked", ["active_sessions_block_drain"], MCP_OK, drain=True)
    gated("gate/active-sessions-deny-a-drain", "3 -> 2 while streams are active is denied: blocked [active_sessions_block_drain].",
          sess, sess_dec, 2, verdict(False, "decision_blocked", ch(3, 2) + " denied: " + denial("the decision is blocked", ["active_sessions_block_drain"]), 3, 2), reading(3, True))
    stale = request("api", continuity=cont(obs=OLD_OBS, exp=OLD_EXP))
    stale_dec = decision(1, 1, "blocked", ["continuity_stale"], API_OK)
    gated("gate/stale-evidence-denies", "1 -> 2 on stale continuity evidence is denied: stale is never fresh.",
          stale, stale_dec, 2, verdict(False, "decision_blocked", ch(1, 2) + " denied: " + denial("the decision is blocked", ["continuity_stale"]), 1, 2), reading(1, True))

    # ---- above max_replicas 8: the decision steps 10 -> 9; a recovery goes to 8 and no further.
    above = request("mcp", current=10)
    above_dec = decision(10, 9, "scale_down", ["target_tracking"], MCP_OK, drain=True)
    above_read = reading(9, True)
    above_why = lambda why: denial(why, ["target_tracking"])
    gated("gate/above-max-decision-step", "10 -> 9 above max_replicas 8 is the decision itself: allowed.",
          above, above_dec, 9, verdict(True, "within_decision", ch(10, 9) + " allowed: the decision is scale_down to 9 (decision {id}); drain the removed replicas first", 10, 9), above_read)
    gated("gate/above-max-recovery-to-max", "10 -> 8 passes the decision's 9 but stops at max_replicas 8: allowed as a recovery.",
          above, above_dec, 8, verdict(True, "recovery_toward_max", ch(10, 8) + " allowed: recovery: 10 is above max_replicas 8 and the change moves toward it (the decision alone denies it: " + above_why("the decision is scale_down to at least 9") + ")", 10, 8), above_read)
    gated("gate/above-max-past-max", "10 -> 7 goes past max_replicas 8: denied, and the recovery's limit is named.",
          above, above_dec, 7, verdict(False, "past_desired", ch(10, 7) + " denied: " + above_why("the decision is scale_down to at least 9") + "; 10 is above max_replicas 8: a recovery goes down to 8 and no further", 10, 7), above_read)
    gated("gate/above-max-away", "10 -> 11 above max_replicas 8 moves away: denied.",
          above, above_dec, 11, verdict(False, "wrong_direction", ch(10, 11) + " denied: " + above_why("the decision is scale_down to 9, not up") + "; 10 is above max_replicas 8 and the change moves away from it", 10, 11), above_read)
    gated("gate/above-max-no-change", "10 -> 10 above max_replicas: no change, allowed.",
          above, above_dec, 10, verdict(True, "no_change", ch(10, 10) + ": no change", 10, 10), above_read)
    above_blk = request("mcp", current=10, signal=DEL)
    above_blk_dec = decision(10, 10, "blocked", ["signal_missing"], [SIG_MISSING] + mcp_tail)
    gated("gate/above-max-blocked-recovery", "Blocked at 10 above max_replicas 8, 10 -> 9 moves toward the bound: allowed as a recovery.",
          above_blk, above_blk_dec, 9, verdict(True, "recovery_toward_max", ch(10, 9) + " allowed: recovery: 10 is above max_replicas 8 and the change moves toward it (the decision alone denies it: " + denial("the decision is blocked", ["signal_missing"]) + ")", 10, 9), reading(10, True))
    gated("gate/above-max-blocked-away", "Blocked at 10 above max_replicas 8, 10 -> 12 is denied.",
          above_blk, above_blk_dec, 12, verdict(False, "decision_blocked", ch(10, 12) + " denied: " + denial("the decision is blocked", ["signal_missing"]) + "; 10 is above max_replicas 8 and the change moves away from it", 10, 12), reading(10, True))
    gated("gate/above-max-blocked-break-glass-past", "A break-glass 10 -> 4 while blocked above max is allowed.",
          above_blk, above_blk_dec, 4, verdict(True, "break_glass", ch(10, 4) + " allowed: break glass over a denial: " + denial("the decision is blocked", ["signal_missing"]) + "; 10 is above max_replicas 8: a recovery goes down to 8 and no further", 10, 4), reading(10, True), kind="break_glass")

    # ---- below min_replicas 3: no decision; a recovery goes up to 3 and no further.
    floor = contract("mcp", policy__min_replicas=3)
    below = request(floor, current=1)
    err = {"code": "replicas_out_of_bounds", "message_contains": "current_replicas is below the contract floor"}
    def floor_v(allowed, reason, message, to):
        return verdict(allowed, reason, message, 1, to, decided=False, error=err)
    gated_error("gate/below-min-toward", "1 -> 2 below min_replicas 3 moves toward it: allowed as a recovery.",
                below, err, 2, floor_v(True, "recovery_toward_min", ch(1, 2) + " allowed: recovery: 1 is below min_replicas 3 and the change moves toward it (from 3 on, the decision decides)", 2))
    gated_error("gate/below-min-to-min", "1 -> 3 reaches min_replicas 3: allowed as a recovery.",
                below, err, 3, floor_v(True, "recovery_toward_min", ch(1, 3) + " allowed: recovery: 1 is below min_replicas 3 and the change moves toward it (from 3 on, the decision decides)", 3))
    gated_error("gate/below-min-past-min", "1 -> 4 passes min_replicas 3: denied, a recovery goes up to 3 and no further.",
                below, err, 4, floor_v(False, "past_bound", ch(1, 4) + " denied: 1 is below min_replicas 3: a recovery goes up to 3 and no further", 4))
    gated_error("gate/below-min-away", "1 -> 0 below min_replicas 3 moves away: denied.",
                below, err, 0, floor_v(False, "away_from_bounds", ch(1, 0) + " denied: 1 is below min_replicas 3 and the change moves away from it", 0))
    gated_error("gate/below-min-no-change", "1 -> 1 below min_replicas: no change, allowed.",
                below, err, 1, floor_v(True, "no_change", ch(1, 1) + ": no change", 1))
    gated_error("gate/below-min-break-glass", "A break-glass 1 -> 6 below the floor is allowed and names the bound.",
                below, err, 6, floor_v(True, "break_glass", ch(1, 6) + " allowed: break glass over a denial: 1 is below min_replicas 3: a recovery goes up to 3 and no further", 6), kind="break_glass")
    zero_floor = request(contract("mcp", policy__min_replicas=2), current=0)
    gated_error("gate/below-min-from-zero", "0 -> 2 from zero below min_replicas 2: allowed as a recovery, needing no evidence.",
                zero_floor, err, 2, verdict(True, "recovery_toward_min", ch(0, 2) + " allowed: recovery: 0 is below min_replicas 2 and the change moves toward it (from 2 on, the decision decides)", 0, 2, decided=False, error=err))

    # ---- requests that cannot be evaluated: denied, never a permission; break glass still decides.
    # The error's message is the SPEC's where it names one (compared as message_contains).
    def invalid(vid, description, req, code, message, to, kind=None, text=None):
        why = "the request cannot be evaluated: %s" % code + (": " + message if message else "")
        e = {"code": code}
        if message:
            e["message_contains"] = message
        if kind == "break_glass":
            v = verdict(True, "break_glass", None, None, to, False, e)
            v["message_contains"] = "a change to %d replicas allowed: break glass over a denial: %s" % (to, why)
        else:
            v = verdict(False, "request_invalid", None, None, to, False, e)
            v["message_contains"] = "a change to %d replicas denied: %s" % (to, why)
        del v["message"]
        err = dict(e, message=message) if message else dict(e)
        gated_error(vid, description, req, err, to, v, kind=kind, text=text)
    invalid("gate/invalid-replicas-over-10000", "current_replicas 10001 cannot be evaluated: any change is denied.",
            request("mcp", current=10001), "replicas_out_of_bounds", "current_replicas is outside bounds", 8)
    invalid("gate/invalid-replicas-negative", "current_replicas -1 cannot be evaluated: any change is denied.",
            request("mcp", current=-1), "replicas_out_of_bounds", "current_replicas is outside bounds", 1)
    inverted = request(contract("mcp", policy__min_replicas=9), current=9)
    invalid("gate/invalid-policy-denies", "A contract whose min_replicas passes max_replicas cannot be evaluated: denied.",
            inverted, "invalid_policy", "min_replicas cannot exceed max_replicas", 9)
    invalid("gate/invalid-policy-break-glass", "A break-glass change over a request that cannot be evaluated is allowed, and says why.",
            inverted, "invalid_policy", "min_replicas cannot exceed max_replicas", 4, kind="break_glass")
    dup = request("mcp", current=3)
    dup["capacities"] = dup["capacities"] + [dup["capacities"][0]]
    invalid("gate/invalid-duplicate-observation", "Two observations of one axis cannot be evaluated: denied.",
            dup, "duplicate_observation", "duplicate capacity axis observation", 4)
    text = json.dumps(request("mcp", current=3)).replace('"current_replicas": 3', '"current_replicas": 3, "current_replicas": 3')
    invalid("gate/invalid-json-duplicate-key", "A request with a duplicate key cannot be read: denied, with no count to move from.",
            None, "invalid_json", None, 5, text=text)

    # ---- zero: the scaler's activity follows the decision, never missing knowledge.
    z = contract("api", policy__min_replicas=0, policy__allow_scale_to_zero=True)
    to_zero = request(z, current=1, value=0)
    to_zero_dec = decision(1, 0, "scale_down", ["target_tracking"], API_OK)
    gated("gate/zero-scale-down-to-zero", "1 -> 0 under scale_down to 0 is allowed, and the scaler goes inactive.",
          to_zero, to_zero_dec, 0, verdict(True, "within_decision", ch(1, 0) + " allowed: the decision is scale_down to 0 (decision {id})", 1, 0), reading(0, False))
    idle = request(z, current=0, value=0)
    idle_dec = decision(0, 0, "hold", ["at_target"], API_OK)
    gated("gate/zero-idle-holds-inactive", "Idle at 0, 0 -> 1 is denied (hold) and the scaler stays inactive.",
          idle, idle_dec, 1, verdict(False, "decision_hold", ch(0, 1) + " denied: " + denial("the decision is hold at 0", ["at_target"]), 0, 1), reading(0, False))
    wake = request(z, current=0, value=50)
    wake_dec = decision(0, 1, "scale_up", ["target_tracking"], API_OK)
    gated("gate/zero-wakes-up-active", "From 0 with demand, 0 -> 1 is allowed and the scaler is active.",
          wake, wake_dec, 1, verdict(True, "within_decision", ch(0, 1) + " allowed: the decision is scale_up to 1 (decision {id})", 0, 1), reading(1, True))
    z_nofrom = contract("api", policy__min_replicas=0, policy__allow_scale_to_zero=True, policy__allow_scale_from_zero=False)
    cold = request(z_nofrom, current=0, value=100)
    cold_dec = decision(0, 0, "blocked", ["scale_from_zero_disabled"], API_OK)
    gated("gate/zero-blocked-at-zero-inactive", "Blocked at 0 (scale-from-zero disabled): 0 -> 1 denied, the scaler stays inactive.",
          cold, cold_dec, 1, verdict(False, "decision_blocked", ch(0, 1) + " denied: " + denial("the decision is blocked", ["scale_from_zero_disabled"]), 0, 1), reading(0, False))
    blk_zero = request(z, current=0, signal=DEL)
    blk_zero_dec = decision(0, 0, "blocked", ["signal_missing"], [SIG_MISSING] + API_CAPS + [SAFE])
    gated("gate/zero-missing-signal-at-zero", "At 0 with no signal: blocked, 0 -> 1 denied, the scaler stays inactive (no wake on missing evidence).",
          blk_zero, blk_zero_dec, 1, verdict(False, "decision_blocked", ch(0, 1) + " denied: " + denial("the decision is blocked", ["signal_missing"]), 0, 1), reading(0, False))
    blk_one = request(z, current=1, signal=DEL)
    blk_one_dec = decision(1, 1, "blocked", ["signal_missing"], [SIG_MISSING] + API_CAPS + [SAFE])
    gated("gate/zero-missing-signal-never-to-zero", "At 1 with no signal: 1 -> 0 denied and the scaler stays active (never to zero on missing knowledge).",
          blk_one, blk_one_dec, 0, verdict(False, "decision_blocked", ch(1, 0) + " denied: " + denial("the decision is blocked", ["signal_missing"]), 1, 0), reading(1, True))

    # ---- bounds of the count itself.
    api_max = contract("api", policy__max_replicas=10000, policy__scale_up_step=10000, policy__target=1)
    big = request(api_max, current=1, value=10000, capacities=big_caps(api_max))
    big_dec = decision(1, 10000, "scale_up", ["target_tracking"], API_OK)
    gated("gate/up-to-10000", "1 -> 10000 under scale_up to 10000 is allowed: the largest count.",
          big, big_dec, 10000, verdict(True, "within_decision", ch(1, 10000) + " allowed: the decision is scale_up to 10000 (decision {id})", 1, 10000), reading(10000, True))


def main():
    for build in (group_validation, group_errors, group_signal, group_capacity, group_quota,
                  group_continuity, group_safety, group_cooldown, group_zero, group_bounds,
                  group_identity, group_differences, group_derivation, group_diagnosis, group_gate):
        build()
    write_all()


if __name__ == "__main__":
    main()
