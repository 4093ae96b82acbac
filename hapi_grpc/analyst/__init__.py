"""The built-in analyst: the deterministic decider used when no language model is configured.

It drives the same investigation loop through the same read-only tools as a model
would, and decides from the `Incident` and the service's record of what its tools
read, never from prompt text or the alert's prose. Per action type it gathers the
evidence the type's premises need and fills every parameter from that evidence; the
service checks the premise packs when it validates the proposal. Modules:

- `provider`: the `LLMProvider` and the order of its steps;
- `subject`, `conversation`: what the incident reports and what was read so far;
- `evidence`, `pods`, `findings`, `runtime_errors`, `wording`: the general reads and
  what they show (the resource to remediate, the failure, the cause);
- `candidates`, `actions/`, `parameters`, `amounts`, `series`: the catalog's
  candidates, their reads and parameter values by role;
- `history`, `recovery`: what was done to the target before;
- `answer`: the final JSON answer.
"""

from hapi_grpc.analyst.provider import BuiltinAnalyst

__all__ = ["BuiltinAnalyst"]
