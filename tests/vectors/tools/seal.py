#!/usr/bin/env python3
"""Fill the hash-derived fields of conformance vectors (SPEC section 8).

This tool only hashes. It never decides an action, a reason or an evidence
entry: those are written by hand in each vector. Given a vector it computes

  * expect.decision.contract_id    from request.contract (identity object, defaults filled in)
  * expect.contract_digest         when the key is present in expect
  * the digest of each missing evidence entry written as the placeholder "M"
  * expect.decision.decision_id and decision_digest from the decision's own fields
  * expect.derivation's decision_id, decision_digest and contract_id, copied from the decision
    (a derivation names the decision it derives; its other fields are written by hand)

Usage:
  seal.py FILE...           reseal the files in place
  seal.py --check FILE...   recompute and report any field that differs (exit 1 on a difference)

Python 3 standard library only.
"""

import copy
import hashlib
import json
import sys

POLICY_DEFAULTS = {
    "min_replicas": 1,
    "max_replicas": 1,
    "scale_up_step": 1,
    "scale_down_step": 1,
    "scale_up_cooldown_s": 30,
    "scale_down_cooldown_s": 300,
    "drain_seconds": 60,
    "allow_scale_to_zero": False,
    "allow_scale_from_zero": True,
}
POLICY_REQUIRED = ("target", "target_signal")
PARTITION_DEFAULTS = {
    "partitioned": False,
    "partitions_per_replica": 0,
    "lease_required": False,
    "lease_ttl_s": 0,
    "fencing_required": False,
}
CONTINUITY_DEFAULTS = {
    "external_store_ref": None,
    "drain_required": True,
    "block_scale_down_with_active": True,
    "max_drain_seconds": 300,
}


def canonical(value):
    """Canonical JSON text of SPEC section 8."""
    return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


def sha_hex(value):
    return hashlib.sha256(canonical(value).encode("ascii")).hexdigest()


def D(value):
    """Content digest D(v) of SPEC section 8."""
    return "sha256:" + sha_hex(value)


def _with_defaults(obj, defaults, required=()):
    out = {}
    for key in required:
        out[key] = obj[key]
    for key, default in defaults.items():
        out[key] = obj.get(key, default)
    return out


def contract_identity(contract):
    """The identity object of SPEC section 8, defaults of section 4 filled in."""
    policy = _with_defaults(contract["policy"], POLICY_DEFAULTS, POLICY_REQUIRED)
    quotas = [
        {
            "quota_ref": q["quota_ref"],
            "axis": q["axis"],
            "scope": q["scope"],
            "per_replica": q["per_replica"],
            "multiplicative": q.get("multiplicative", False),
        }
        for q in contract.get("quotas", [])
    ]
    continuity = _with_defaults(contract["continuity"], CONTINUITY_DEFAULTS, ("mode",))
    return {
        "schema_version": contract.get("schema_version", "1"),
        "unit_ref": contract["unit_ref"],
        "surface": contract["surface"],
        "version": contract.get("version", 1),
        "policy": policy,
        "allowed_signals": sorted(contract["allowed_signals"]),
        "required_capacity_axes": sorted(contract["required_capacity_axes"]),
        "replica_demands": [
            {"axis": d["axis"], "per_replica": d["per_replica"]} for d in contract["replica_demands"]
        ],
        "quotas": quotas,
        "partition_lease": _with_defaults(contract.get("partition_lease", {}), PARTITION_DEFAULTS),
        "continuity": continuity,
        "safety_required": contract.get("safety_required", True),
        "engine_authority_axes": sorted(contract.get("engine_authority_axes", [])),
    }


def contract_id(contract):
    return "scale-unit:" + sha_hex(contract_identity(contract))[:32]


def contract_digest(contract):
    return D({"kind": "scale_unit_contract", "identity": contract_identity(contract)})


def missing_digest(kind, ref):
    """M{...} of SPEC section 7 for a missing evidence entry of this kind and ref."""
    if kind in ("signal", "continuity", "safety"):
        return D({"kind": kind, "state": "missing"})
    if kind == "capacity":
        prefix = "capacity:"
        if not ref.startswith(prefix):
            raise ValueError("missing capacity evidence ref must be capacity:<axis>: %r" % ref)
        return D({"axis": ref[len(prefix):], "state": "missing"})
    if kind == "quota":
        return D({"quota_ref": ref, "state": "missing"})
    raise ValueError("unknown evidence kind %r" % kind)


def decision_identity(decision):
    return {
        "schema_version": decision["schema_version"],
        "contract_id": decision["contract_id"],
        "evaluated_at": decision["evaluated_at"],
        "current_replicas": decision["current_replicas"],
        "desired_replicas": decision["desired_replicas"],
        "action": decision["action"],
        "reasons": sorted(decision["reasons"]),
        "drain_required": decision["drain_required"],
        "evidence": [
            {k: e[k] for k in ("kind", "ref", "digest", "status", "code")} for e in decision["evidence"]
        ],
    }


def decision_id(decision):
    return "scale-decision:" + sha_hex(decision_identity(decision))[:32]


def decision_digest(decision):
    return D({"kind": "scale_decision", "identity": decision_identity(decision)})


# The fields of expect.derivation that name its decision.
DERIVATION_IDS = ("decision_id", "decision_digest", "contract_id")


def seal(vector):
    """Return a copy of the vector with every hash-derived field recomputed."""
    vector = copy.deepcopy(vector)
    expect = vector["expect"]
    if "decision" not in expect:
        return vector
    contract = vector["request"]["contract"]
    decision = expect["decision"]
    decision["contract_id"] = contract_id(contract)
    for entry in decision["evidence"]:
        if entry["digest"] == "M":
            entry["digest"] = missing_digest(entry["kind"], entry["ref"])
    decision["decision_id"] = decision_id(decision)
    decision["decision_digest"] = decision_digest(decision)
    if "contract_digest" in expect:
        expect["contract_digest"] = contract_digest(contract)
    if "derivation" in expect:
        for key in DERIVATION_IDS:
            expect["derivation"][key] = decision[key]
    for key in ("gate", "scaler"):
        # A gate vector's verdict and reading name the decision they judge ("D" when written);
        # "{id}" in a message stands for its decision_id.
        if key in expect and expect[key].get("decision") is not None:
            expect[key]["decision"] = copy.deepcopy(decision)
            for field in ("message", "message_contains"):
                if field in expect[key]:
                    expect[key][field] = expect[key][field].replace("{id}", decision["decision_id"])
    return vector


def check(vector):
    """List of differences between the vector and its recomputed hashes."""
    problems = []
    expect = vector["expect"]
    if "decision" not in expect:
        return problems
    decision = expect["decision"]
    contract = vector["request"]["contract"]
    want = {
        "contract_id": contract_id(contract),
        "decision_id": decision_id(decision),
        "decision_digest": decision_digest(decision),
    }
    for key, value in want.items():
        if decision.get(key) != value:
            problems.append("%s: have %s, computed %s" % (key, decision.get(key), value))
    for i, entry in enumerate(decision["evidence"]):
        if entry["status"] == "missing" and entry["ref"] != "" and entry["kind"] in (
            "signal", "capacity", "quota", "continuity", "safety"
        ):
            m = missing_digest(entry["kind"], entry["ref"])
            if entry["digest"] != m:
                problems.append("evidence[%d].digest: have %s, M{} is %s" % (i, entry["digest"], m))
    for key in DERIVATION_IDS if "derivation" in expect else ():
        if expect["derivation"].get(key) != want[key]:
            problems.append("derivation.%s: have %s, the decision's is %s" % (key, expect["derivation"].get(key), want[key]))
    if "contract_digest" in expect and expect["contract_digest"] != contract_digest(contract):
        problems.append(
            "contract_digest: have %s, computed %s" % (expect["contract_digest"], contract_digest(contract))
        )
    return problems


def dump(vector):
    return json.dumps(vector, indent=2, ensure_ascii=True) + "\n"


def main(argv):
    checking = "--check" in argv
    files = [a for a in argv if a != "--check"]
    if not files:
        print(__doc__)
        return 2
    failed = 0
    for path in files:
        with open(path, encoding="utf-8") as fh:
            vector = json.load(fh)
        if checking:
            problems = check(vector)
            for p in problems:
                print("%s: %s" % (path, p))
            failed += bool(problems)
        else:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(dump(seal(vector)))
    if checking:
        print("%d file(s) checked, %d with differences" % (len(files), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
