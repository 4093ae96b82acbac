"""Operator policy over decisions: CEL rules that require review, forbid
workflows or rate-limit automated remediations per target.

`rules` (the policy and its parser), `decision` (what rules see), `enforce`
(applying it to a result; the ports), `cel` (the expression language). Core
only: the policy file and the counters are adapters
(`hapi_grpc.adapters.policy_file`, `hapi_grpc.adapters.remediation_counter`).
Nothing is re-exported here, so importing `enforce` for its types does not
load the CEL library.
"""
