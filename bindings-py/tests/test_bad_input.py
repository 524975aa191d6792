"""Bad input at the Python face: each gets its typed error, nothing crashes, the evaluator keeps
serving. The same list as cli/tests/bad_input.rs and bindings-js/test/bad-input.test.mjs."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from scale_units import MAX_REQUEST_BYTES, Evaluator, HostError, RequestTooLargeError, ScaleUnitsError

GOOD = (ROOT / "examples" / "api-gateway" / "request.json").read_text()
MARKER = '"__bad_input_marker__"'


def with_(path: str, raw: str) -> str:
    """The good request with ``path`` (dotted, ``name[i]`` for an index) set to the JSON ``raw``."""
    request = json.loads(GOOD)
    parts = path.split(".")
    slot = request
    for part in parts[:-1]:
        name, _, index = part.partition("[")
        slot = slot[name][int(index[:-1])] if index else slot[name]
    name, _, index = parts[-1].partition("[")
    if index:
        slot[name][int(index[:-1])] = "__bad_input_marker__"
    else:
        slot[name] = "__bad_input_marker__"
    return json.dumps(request, ensure_ascii=False).replace(MARKER, raw, 1)


CASES: list[tuple[str, str, str]] = [
    ("empty", "", "invalid_json"),
    ("truncated", GOOD[:100], "invalid_json"),
    ("trailing comma", '{"now": 1,}', "invalid_json"),
    ("two documents", GOOD + " {}", "invalid_json"),
    ("byte-order mark", "\ufeff" + GOOD, "invalid_json"),
    ("NaN", with_("current_replicas", "NaN"), "invalid_json"),
    ("single quotes", "{'now': 1}", "invalid_json"),
    ("raw control character in a string", with_("contract.unit_ref", '"a\x01b"'), "invalid_json"),
    ("lone surrogate escape", with_("contract.unit_ref", '"\\ud800"'), "invalid_json"),
    ("duplicate key", GOOD.replace('"now"', '"now":"2026-08-19T12:00:00Z","now"', 1), "invalid_json"),
    ("duplicate key, nested", with_("signal", '{"value":1,"value":2}'), "invalid_json"),
    ("100 000 [", "[" * 100_000, "invalid_json"),
    ('100 000 {"a":', '{"a":' * 100_000, "invalid_json"),
    ("100 000 [ in a field", with_("signal", "[" * 100_000), "invalid_json"),
    ("129 levels, closed", "[" * 129 + "]" * 129, "invalid_json"),
    ("2^53 + 1 replicas", with_("current_replicas", "9007199254740993"), "replicas_out_of_bounds"),
    ("2^53 + 1 capacity", with_("capacities[0].allocatable", "9007199254740993"), "invalid_field"),
    ("2^64 capacity", with_("capacities[0].allocatable", "18446744073709551616"), "invalid_field"),
    ("2^64 signal", with_("signal.value", "18446744073709551616"), "invalid_field"),
    ("-2^63 - 1 replicas", with_("current_replicas", "-9223372036854775809"), "invalid_field"),
    ("1e400", with_("signal.value", "1e400"), "invalid_field"),
    ("400 digits", with_("signal.value", "9" * 400), "invalid_field"),
    ("float", with_("current_replicas", "3.0"), "invalid_field"),
    ("negative zero", with_("current_replicas", "-0.0"), "invalid_field"),
    ("boolean as integer", with_("current_replicas", "true"), "invalid_field"),
    ("escaped control character in a ref", with_("contract.unit_ref", '"a\\u0001b"'), "invalid_ref"),
    ("NUL in a ref", with_("signal.source_ref", '"a\\u0000b"'), "invalid_ref"),
    ("newline in a ref", with_("signal.source_ref", '"a\\nb"'), "invalid_ref"),
    ("non-ASCII ref", with_("contract.unit_ref", '"caf\u00e9"'), "invalid_ref"),
    ("right-to-left override in a ref", with_("signal.source_ref", '"a\u202eb"'), "invalid_ref"),
    ("emoji ref", with_("capacities[0].source_ref", '"\U0001f600"'), "invalid_ref"),
    ("257-byte ref", with_("contract.unit_ref", '"' + "a" * 257 + '"'), "invalid_ref"),
    ("megabyte-long ref", with_("contract.unit_ref", '"' + "a" * 900_000 + '"'), "invalid_ref"),
    ("token: ref", with_("signal.source_ref", '"metrics:token:abc123"'), "credential_in_ref"),
    ("bearer ref", with_("signal.source_ref", '"Bearer.eyJhbGciOiJIUzI1NiJ9"'), "credential_in_ref"),
    ("password ref", with_("contract.unit_ref", '"db/PASSWORD/hunter2"'), "credential_in_ref"),
    ("api key ref", with_("capacities[1].source_ref", '"vault:api-key/prod"'), "credential_in_ref"),
    ("private key ref", with_("safety.source_ref", '"ssh/private_key"'), "credential_in_ref"),
    ("token= ref", with_("signal.source_ref", '"token=abc"'), "invalid_ref"),
    ("null where required", with_("now", "null"), "invalid_field"),
    ("array for object", with_("contract", "[]"), "invalid_field"),
    ("unknown field", GOOD.replace("{", '{"extra":1,', 1), "invalid_field"),
]


def assert_serving(evaluator: Evaluator) -> None:
    assert evaluator.evaluate_json(GOOD).find('"action":"scale_up"') > 0


@pytest.mark.parametrize(("name", "text", "code"), CASES, ids=[c[0] for c in CASES])
def test_bad_json_text_gets_its_code(evaluator: Evaluator, name: str, text: str, code: str) -> None:
    for given in (text, text.encode("utf-8", "surrogatepass")):
        with pytest.raises(ScaleUnitsError) as raised:
            evaluator.evaluate_json(given)
        assert raised.value.code == code, f"{name}: {raised.value}"
    assert_serving(evaluator)


@pytest.mark.parametrize(
    "data",
    [b"\xff", b'{"now":"\xc3\x28"}', b"\xed\xa0\x80", b'{"a":"\xf4\x90\x80\x80"}', "\ud800", '{"now":"\udfff"}'],
)
def test_text_that_is_not_utf8_is_invalid_json(evaluator: Evaluator, data: bytes | str) -> None:
    with pytest.raises(ScaleUnitsError) as raised:
        evaluator.evaluate_json(data)
    assert raised.value.code == "invalid_json"


def test_text_over_the_size_limit_is_refused_before_the_component(evaluator: Evaluator) -> None:
    assert MAX_REQUEST_BYTES == 1 << 20
    at_limit = GOOD + " " * (MAX_REQUEST_BYTES - len(GOOD.encode()))
    assert '"action":"scale_up"' in evaluator.evaluate_json(at_limit)
    # Counted in UTF-8 bytes: a character may be 1 to 4 of them.
    padded_multibyte = GOOD.replace('"now"', '"\u00e9":1,"now"', 1)  # an unknown field, were it read
    for text in (
        at_limit + " ",
        (at_limit + " ").encode(),
        GOOD + " " * (100 << 20),
        padded_multibyte + "\u00e9" * ((MAX_REQUEST_BYTES // 2) + 1),
        "\U0001f600" * (MAX_REQUEST_BYTES // 4 + 1),
    ):
        for call in (evaluator.evaluate_json, evaluator.validate_contract_json, evaluator.simulate_json):
            with pytest.raises(RequestTooLargeError) as raised:
                call(text)
            assert isinstance(raised.value, HostError)
            assert raised.value.size > raised.value.limit == MAX_REQUEST_BYTES
    assert_serving(evaluator)


def test_python_values_past_json(evaluator: Evaluator) -> None:
    request = json.loads(GOOD)
    # Integers past 2^64 go to the component as written, and are refused there.
    request["capacities"][0]["allocatable"] = 2**64
    with pytest.raises(ScaleUnitsError) as raised:
        evaluator.evaluate(request)
    assert raised.value.code == "invalid_field"
    # NaN is written by json.dumps, and refused as not JSON.
    request = json.loads(GOOD)
    request["signal"]["value"] = float("nan")
    with pytest.raises(ScaleUnitsError) as raised:
        evaluator.evaluate(request)
    assert raised.value.code == "invalid_json"
    # Nesting past Python's own recursion limit fails in json.dumps, before the component.
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    request = json.loads(GOOD)
    request["signal"] = deep
    with pytest.raises(RecursionError):
        evaluator.evaluate(request)
    # A value json.dumps cannot write at all.
    with pytest.raises(TypeError):
        evaluator.evaluate({"contract": object()})
    assert_serving(evaluator)
