"""The one table that classifies how an executed workflow failed.

Design notes: docs/internals.md (`domain/recovery/failures.py`).
"""

from __future__ import annotations

import enum

__all__ = ["FailureClass", "classify"]


class FailureClass(enum.Enum):
    """What a reason code says about the failed execution: its label, whether the
    same workflow may run again, and what it means for the next decision."""

    RUNNER_NOT_STARTED = (
        "the workflow's own pod never ran",
        True,
        "the workflow's own pod could not be scheduled, pulled or created, so nothing was"
        " done to the target: a fault of the execution environment, not of the remediation."
        " The same workflow may run again once its runner can start",
    )
    PERMISSION_DENIED = (
        "an API request of the workflow was refused",
        False,
        "the workflow's own request to the API server was refused: its service account lacks"
        " a permission (RBAC), or an admission rule refused the change. This is about the"
        " workflow's permissions, not the workload; the same workflow would be refused again",
    )
    ADMISSION_REJECTED = (
        "the change was rejected by the cluster's rules",
        False,
        "the cluster refused the change or the pods it needed: a LimitRange maximum, a"
        " ResourceQuota or a validation rule. Read the LimitRange/ResourceQuota of the"
        " namespace: a value above their maximum cannot be applied, whatever the workflow",
    )
    ROLLOUT_NOT_PROGRESSING = (
        "the change was applied but its rollout did not progress",
        False,
        "the change reached the workload but its new pods did not become available: read"
        " the new ReplicaSet's events (FailedCreate) and the new pods' state. The workload"
        " may now run a mix of old and new pods",
    )
    TIMED_OUT = (
        "the workflow ran out of time",
        False,
        "the workflow was slower than its deadline, which does not make it wrong: its change"
        " may have partly or fully taken effect. Read the current state before choosing",
    )
    RUNNER_OUT_OF_MEMORY = (
        "the workflow's own step was OOMKilled",
        False,
        "the workflow's own step container hit its memory limit: this is about the"
        " workflow's pod, not evidence about the workload. The step may have partly run",
    )
    RUNNER_INTERRUPTED = (
        "the workflow's own pod was stopped while it ran",
        False,
        "the workflow's own pod was evicted or preempted part-way: the change may be"
        " partly applied. Read the current state before choosing",
    )
    STEP_FAILED = (
        "a step of the workflow failed",
        False,
        "the workflow's action itself failed (every retry of its step): its message and exit"
        " code say why. Repeating it would fail the same way",
    )
    UNCLASSIFIED = (
        "failed for a reason not classified",
        False,
        "the reason code is not one the service classifies: treat the remediation as failed",
    )

    def __init__(self, label: str, repeat_allowed: bool, guidance: str) -> None:
        self.label = label
        self.repeat_allowed = repeat_allowed
        self.guidance = guidance


# Reason codes as Kubernetes (kubelet, scheduler, controllers, API server) spells them.
_TABLE: dict[str, FailureClass] = {
    # The runner's pod never ran.
    "ImagePullBackOff": FailureClass.RUNNER_NOT_STARTED,
    "ErrImagePull": FailureClass.RUNNER_NOT_STARTED,
    "ErrImageNeverPull": FailureClass.RUNNER_NOT_STARTED,
    "InvalidImageName": FailureClass.RUNNER_NOT_STARTED,
    "FailedScheduling": FailureClass.RUNNER_NOT_STARTED,
    "Unschedulable": FailureClass.RUNNER_NOT_STARTED,
    "CreateContainerConfigError": FailureClass.RUNNER_NOT_STARTED,
    "CreateContainerError": FailureClass.RUNNER_NOT_STARTED,
    "ContainerCannotRun": FailureClass.RUNNER_NOT_STARTED,
    "FailedMount": FailureClass.RUNNER_NOT_STARTED,
    "FailedAttachVolume": FailureClass.RUNNER_NOT_STARTED,
    "FailedCreatePodSandBox": FailureClass.RUNNER_NOT_STARTED,
    # The workflow's requests were refused.
    "Forbidden": FailureClass.PERMISSION_DENIED,
    "Unauthorized": FailureClass.PERMISSION_DENIED,
    # The cluster's rules rejected the change.
    "Invalid": FailureClass.ADMISSION_REJECTED,
    "FailedCreate": FailureClass.ADMISSION_REJECTED,
    "ExceededQuota": FailureClass.ADMISSION_REJECTED,
    # Applied, but not rolled out.
    "ProgressDeadlineExceeded": FailureClass.ROLLOUT_NOT_PROGRESSING,
    # Out of time.
    "DeadlineExceeded": FailureClass.TIMED_OUT,
    "Timeout": FailureClass.TIMED_OUT,
    # The runner's own pod.
    "OOMKilled": FailureClass.RUNNER_OUT_OF_MEMORY,
    "Evicted": FailureClass.RUNNER_INTERRUPTED,
    "Preempted": FailureClass.RUNNER_INTERRUPTED,
    "Preempting": FailureClass.RUNNER_INTERRUPTED,
    # The action failed.
    "BackoffLimitExceeded": FailureClass.STEP_FAILED,
    "Error": FailureClass.STEP_FAILED,
    "Failed": FailureClass.STEP_FAILED,
    "CrashLoopBackOff": FailureClass.STEP_FAILED,
}
_FOLDED = {reason.lower(): kind for reason, kind in _TABLE.items()}


def classify(reason: str) -> FailureClass:
    """The class of a failure's reason code; UNCLASSIFIED when not in the table."""
    return _TABLE.get(reason) or _FOLDED.get(reason.strip().lower(), FailureClass.UNCLASSIFIED)
