"""Cost bounds of CEL from outside: what is refused when read, what is bounded at run."""

from __future__ import annotations

import time

import pytest

from hapi_grpc.adapters.catalog.loader import load_bundled_catalog
from hapi_grpc.domain.cel_ast import read_program
from hapi_grpc.domain.cel_cost import OUTSIDE, estimate
from hapi_grpc.domain.cel_programs import compile_expression
from hapi_grpc.domain.preconditions import Bound, Declared, evaluate

TEXT = "x" * 300  # the longest string the observed record keeps


def _refused(expression: str) -> str:
    with pytest.raises(ValueError) as info:
        compile_expression(expression, OUTSIDE)
    return str(info.value)


@pytest.mark.parametrize("times", [9, 12, 20])
def test_a_replace_chain_that_can_outgrow_the_string_bound_is_refused(times: int) -> None:
    chain = '"aaaa"' + '.replace("a", "aaaa")' * times
    assert "can build a string of" in _refused(chain + ' != ""')


@pytest.mark.parametrize(
    "expression",
    [
        # Growth through loops instead of a chain: each level joins 200 copies.
        'observed.pods.map(p, observed.pods.map(q, p.name).join("")).join("") != ""',
        '"%s%s".format([params.X, params.Y]).replace("", params.Z) != ""',
        "x" * 2100,
    ],
    ids=["nested-join", "format-then-replace", "too-long"],
)
def test_amplifying_shapes_are_refused(expression: str) -> None:
    assert "refused" in _refused(expression) or "longer than" in _refused(expression)


def _record(pods: int = 200, containers: int = 20) -> dict[str, object]:
    def container(i: int) -> dict[str, object]:
        termination = {"reason": TEXT, "exit_code": 137, "message": TEXT}
        return {"name": f"{TEXT[:-3]}{i:03d}", "restarts": 3, "last_termination": termination}

    pod = {"name": TEXT, "namespace": TEXT, "containers": [container(i) for i in range(containers)]}
    events = [{"reason": TEXT, "message": TEXT} for _ in range(200)]
    return {"pods": [pod] * pods, "events": events, "workloads": [], "objects": []}


def test_the_dearest_accepted_expression_runs_in_bounded_time_on_a_full_record() -> None:
    texts = {
        text
        for workflow in load_bundled_catalog()
        for condition in (*workflow.preconditions, *workflow.invariants)
        for text in (condition.expression, condition.show)
        if text
    }
    cost = {t: estimate(read_program(compile_expression(t, OUTSIDE)), OUTSIDE) for t in texts}
    dearest = max(cost, key=cost.__getitem__)
    assert cost[dearest] > OUTSIDE.max_cost / 2  # near the bound: the worst accepted
    declared = Declared("dearest", "false", show=dearest, limits=OUTSIDE)
    record = _record()
    started = time.perf_counter()
    (result,) = evaluate([declared], [], Bound({}, record, {}))
    elapsed = time.perf_counter() - started
    assert result.holds is False
    assert elapsed < 0.5, f"{elapsed:.2f} s"


def test_inputs_larger_than_the_estimate_assumed_make_the_condition_unknown() -> None:
    declared = Declared("sized", 'params.X.startsWith("a")', limits=OUTSIDE)
    (ok,) = evaluate([declared], [], Bound({}, {"pods": []}, {"X": "a" * 1024}))
    assert ok.holds is True
    (big,) = evaluate([declared], [], Bound({}, {"pods": []}, {"X": "a" * 1025}))
    assert big.holds is None and "inputs larger than" in big.detail
    trusted = Declared("sized", 'params.X.startsWith("a")')  # shipped: no input bound
    (shipped,) = evaluate([trusted], [], Bound({}, {"pods": []}, {"X": "a" * 2000}))
    assert shipped.holds is True


def test_an_error_the_runtime_raises_is_unknown() -> None:
    hundred = "[" + ",".join(["0"] * 100) + "]"
    loops = f"{hundred}.all(x, {hundred}.all(y, {hundred}.all(z, true)))"
    declared = Declared("loops", loops, limits=OUTSIDE)
    (result,) = evaluate([declared], [], Bound({}, {"pods": []}, {}))
    assert result.holds is None and "Iteration budget exceeded" in result.detail
