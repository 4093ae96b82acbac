"""Policy rules: what fires on a decision, what it does to the result, and load errors."""

from __future__ import annotations

from typing import Any

import pytest

from hapi_grpc.adapters.remediation_counter import MemoryRemediationCounter
from hapi_grpc.domain.catalog import SearchHit
from hapi_grpc.domain.levels import RiskLevel
from hapi_grpc.domain.policy.decision import Decision
from hapi_grpc.domain.policy.enforce import POLICY_REVIEW_REASON, DecisionPolicy
from hapi_grpc.domain.policy.rules import Evaluation, Policy, PolicyError, parse_policy
from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason, TargetResource
from tests.domain.policy.helpers import StaticSource, incident, policy, selected

RULES = """
rules:
  - name: prod-medium-risk
    action: require_review
    when: incident.environment == "production" && workflow.risk_level in ["medium", "high"]
    message: approved by the on-call
  - name: kube-system
    action: require_review
    when: incident.namespace.startsWith("kube-")
  - name: no-node-drain
    action: forbid
    when: workflow.id == "node-drain-reboot-v1"
  - name: zero-replicas
    action: require_review
    when: has(params.REPLICA_COUNT) && params.REPLICA_COUNT == 0
  - name: tier-critical
    action: require_review
    when: '"tier" in incident.labels && incident.labels["tier"] == "critical"'
"""


async def apply(text: str, result: AnalysisResult, **incident_args: Any) -> AnalysisResult:
    enforcer = DecisionPolicy(StaticSource(policy(text)), MemoryRemediationCounter())
    await enforcer.apply(incident(**incident_args), result)
    return result


async def test_a_decision_no_rule_matches_stays_automated() -> None:
    result = await apply(RULES, selected(), environment="staging")
    assert not result.needs_human_review
    assert result.selected_workflow is not None
    assert result.warnings == []


@pytest.mark.parametrize(
    ("args", "result_args", "rule"),
    [
        ({}, {"risk": RiskLevel.MEDIUM}, "prod-medium-risk"),
        ({"environment": "dev", "namespace": "kube-system"}, {}, "kube-system"),
        ({"environment": "dev"}, {"params": {"REPLICA_COUNT": 0}}, "zero-replicas"),
        ({"environment": "dev", "labels": {"tier": "critical"}}, {}, "tier-critical"),
    ],
)
async def test_require_review_names_the_rule_and_keeps_the_selection(
    args: dict[str, Any], result_args: dict[str, Any], rule: str
) -> None:
    result = await apply(RULES, selected(**result_args), **args)
    assert result.needs_human_review
    assert result.human_review_reason is POLICY_REVIEW_REASON
    assert result.selected_workflow is not None
    assert any(f"Policy rule {rule!r} requires review" in w for w in result.warnings)


async def test_the_rule_message_is_shown() -> None:
    result = await apply(RULES, selected(risk=RiskLevel.HIGH))
    assert result.warnings == [
        "Policy rule 'prod-medium-risk' requires review (approved by the on-call)."
    ]


async def test_the_catalog_risk_level_wins_over_the_model_estimate() -> None:
    hit = SearchHit(
        workflow_id="oomkill-increase-memory-v1",
        version="1.0.0",
        confidence=0.9,
        estimated_risk=RiskLevel.HIGH,
    )
    result = selected(risk=RiskLevel.LOW)  # the model calls it low
    enforcer = DecisionPolicy(StaticSource(policy(RULES)), MemoryRemediationCounter())
    await enforcer.apply(incident(), result, hit)
    assert result.needs_human_review


async def test_forbid_removes_the_selection_and_keeps_it_for_humans() -> None:
    result = await apply(RULES, selected("node-drain-reboot-v1"), environment="dev")
    assert result.selected_workflow is None
    assert result.needs_human_review
    assert result.human_review_reason is POLICY_REVIEW_REASON
    assert result.alternative_workflows[0].workflow_id == "node-drain-reboot-v1"
    assert "no-node-drain" in result.alternative_workflows[0].rationale
    assert result.warnings == [
        "Policy rule 'no-node-drain' forbids workflow 'node-drain-reboot-v1'; it was not selected."
    ]


async def test_forbid_applies_to_a_result_already_under_review_and_keeps_its_reason() -> None:
    result = selected("node-drain-reboot-v1", review=True)
    result.human_review_reason = HumanReviewReason.LOW_CONFIDENCE
    await apply(RULES, result, environment="dev")
    assert result.selected_workflow is None
    assert result.human_review_reason is HumanReviewReason.LOW_CONFIDENCE
    assert "no-node-drain" in result.warnings[0]


async def test_a_result_without_a_selection_is_left_alone() -> None:
    result = AnalysisResult("rr-1")
    await apply("rules: [{name: all, action: require_review}]", result)
    assert not result.needs_human_review and result.warnings == []


async def test_a_rule_without_when_fires_on_every_decision() -> None:
    result = await apply("rules: [{name: everything, action: require_review}]", selected())
    assert result.needs_human_review


async def test_a_rule_that_cannot_be_evaluated_fails_closed() -> None:
    text = "rules: [{name: label-check, action: forbid, when: 'incident.labels[\"tier\"] == 1'}]"
    result = await apply(text, selected())  # no "tier" label: the key is absent
    assert result.needs_human_review
    assert result.selected_workflow is not None  # not known to be forbidden
    assert result.warnings == [
        "Policy rule 'label-check' could not be evaluated on this decision: a field or key"
        " it reads is absent (guard it with has() or 'in')."
    ]


async def test_a_rule_that_is_not_boolean_fails_closed() -> None:
    result = await apply("rules: [{name: text, action: forbid, when: workflow.id}]", selected())
    assert result.needs_human_review
    assert "did not evaluate to true or false" in result.warnings[0]


async def test_values_larger_than_the_cost_bound_assumed_send_the_decision_to_review() -> None:
    text = "rules: [{name: replicas, action: forbid, when: 'params.NOTE.startsWith(\"x\")'}]"
    assert not (await apply(text, selected(params={"NOTE": "y" * 1024}))).needs_human_review
    result = await apply(text, selected(params={"NOTE": "y" * 5000}))
    assert result.needs_human_review and result.selected_workflow is not None
    assert "larger than policy expressions may read" in result.warnings[0]


async def test_a_rule_past_the_runtime_iteration_budget_fails_closed() -> None:
    hundred = "[" + ",".join(["0"] * 100) + "]"
    loops = f"{hundred}.all(x, {hundred}.all(y, {hundred}.all(z, true)))"
    result = await apply(f"rules: [{{name: loops, action: forbid, when: '{loops}'}}]", selected())
    assert result.needs_human_review and result.selected_workflow is not None
    assert "runtime's budget of 10000 iterations" in result.warnings[0]


def test_a_rule_past_the_estimated_cost_is_refused_at_load() -> None:
    # Patterns built from the values, compiled on each of up to 10,000 iterations.
    when = "params.all(a, params.all(b, a.matches(b) || b.matches(a) || (a + b).matches(b + a)))"
    with pytest.raises(PolicyError, match="estimated cost"):
        parse_policy({"rules": [{"name": "regexes", "action": "forbid", "when": when}]})


def test_decision_variables() -> None:
    result = selected(target=TargetResource("payments", "StatefulSet", "db"))
    hit = SearchHit(workflow_id="w", version="1", confidence=0.5)
    decision = Decision.of(incident(labels={"a": "b"}), result, hit)
    assert decision.target == {
        "namespace": "payments",
        "kind": "StatefulSet",
        "name": "db",
        "api_group": "",
    }
    assert decision.incident["environment"] == "production"
    assert decision.incident["labels"] == {"a": "b"}
    assert decision.incident["severity"] == "critical"
    assert decision.workflow["risk_level"] == "low"
    assert decision.workflow["read_only"] is False
    read_only = SearchHit(workflow_id="w", version="1", confidence=0.5, read_only=True)
    assert Decision.of(incident(), result, read_only).workflow["read_only"] is True
    assert Decision.of(incident(), result, None).workflow["read_only"] is False
    # Without a target in the answer, the incident's resource is the target.
    assert (
        Decision.of(incident(), selected(), None).target_text == "payments/Deployment/payment-api"
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            "rules: [{name: typo, action: forbid, when: 'incidnet.namespace == \"a\"'}]",
            "rule 'typo' (rules[0]): when: is not valid CEL: line 1 column 9: undeclared"
            " reference to 'incidnet.namespace'",
        ),
        (
            "rules: [{name: ok, action: forbid}, {name: broken, action: forbid, when: 'a =='}]",
            "rule 'broken' (rules[1]): when: is not valid CEL: line 1 column 5: Syntax error:"
            " mismatched input '<EOF>'",
        ),
        (
            "rules: [{name: fn, action: forbid, when: 'lower(incident.namespace) == \"a\"'}]",
            "rule 'fn' (rules[0]): when: is not valid CEL: line 1 column 6: undeclared"
            " reference to 'lower'",
        ),
        (
            "rules: [{name: act, action: deny}]",
            "rule 'act' (rules[0]): unknown action 'deny' (one of require_review, forbid,"
            " rate_limit)",
        ),
        (
            "rules: [{name: rl, action: rate_limit, window: 1h}]",
            "rule 'rl' (rules[0]): limit must be an integer from 1 to 10000",
        ),
        (
            "rules: [{name: rl, action: rate_limit, limit: 3, window: 1y}]",
            "rule 'rl' (rules[0]): window must be a duration from 1s to 7d",
        ),
        (
            "rules: [{name: rl, action: rate_limit, limit: 3, window: 1h, key: 'target.nme +'}]",
            "rule 'rl' (rules[0]): key: is not valid CEL: line 1 column 13: Syntax error",
        ),
        (
            "rules: [{name: num, action: forbid, when: 'size(params) + 1'}]",
            "rule 'num' (rules[0]): when: must give true or false, but gives int",
        ),
        (
            "rules: [{name: rk, action: rate_limit, limit: 1, window: 60,"
            " key: 'size(params) > 1'}]",
            "rule 'rk' (rules[0]): key: must give a string, but gives bool",
        ),
        (
            "rules: [{name: fb, action: forbid, limit: 3}]",
            "rule 'fb' (rules[0]): limit applies to action rate_limit only",
        ),
        (
            "rules: [{name: x, action: forbid, whn: 'true'}]",
            "rule 'x' (rules[0]): unknown key 'whn'",
        ),
        (
            "rules: [{name: a, action: forbid}, {name: a, action: forbid}]",
            "rule 'a' (rules[1]): the name is used twice",
        ),
        ("rules: [{action: forbid}]", "rules[0]: name must be 1-63 letters"),
        ("rules: [{name: 'bad name', action: forbid}]", "rules[0]: name must be"),
        ("rule: []", "unknown top-level key 'rule' (only 'rules' and 'allow_unverified')"),
        ("rules: {a: 1}", "'rules' must be a list"),
    ],
)
def test_a_bad_policy_is_refused_with_one_line_naming_the_rule(document: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        policy(document)
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_window_forms() -> None:
    for window, seconds in [
        (90, 90.0),
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h", 3600.0),
        ("2d", 172800.0),
    ]:
        rules = parse_policy(
            {"rules": [{"name": "r", "action": "rate_limit", "limit": 1, "window": window}]}
        )
        assert rules.rules[0].window_seconds == seconds


def test_an_empty_policy_has_no_rules() -> None:
    assert parse_policy(None).rules == ()
    assert parse_policy({"rules": []}).rules == ()


class _BrokenPolicy(Policy):
    """A policy whose evaluation hits a defect (nothing a rule can express does)."""

    def evaluate(self, decision: Decision) -> Evaluation:
        raise RuntimeError("defect")


async def test_a_policy_that_cannot_be_applied_sends_the_decision_to_review() -> None:
    result = selected()
    broken = _BrokenPolicy(policy("rules: [{name: any, action: require_review}]").rules)
    await DecisionPolicy(StaticSource(broken), MemoryRemediationCounter()).apply(incident(), result)
    assert result.needs_human_review
    assert result.warnings == ["The operator policy could not be applied to this decision: review."]
