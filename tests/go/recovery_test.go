package contract

import (
	"fmt"
	"testing"

	"buf.build/go/protovalidate"
	hapiv1 "github.com/hapi-grpc/hapi-grpc/generated/go/hapi/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// recoveryOf is the incident of req as a controller resends it after the
// execution of sw failed with reason: attempt of maxAttempts.
func recoveryOf(req *hapiv1.AnalyzeIncidentRequest, sw *hapiv1.SelectedWorkflow, reason string, attempt, maxAttempts uint32) *hapiv1.AnalyzeIncidentRequest {
	out := proto.Clone(req).(*hapiv1.AnalyzeIncidentRequest)
	out.GetIncident().Recovery = &hapiv1.RecoveryContext{
		AttemptNumber: attempt,
		MaxAttempts:   maxAttempts,
		PreviousExecutions: []*hapiv1.PreviousExecution{{
			Workflow: &hapiv1.ExecutedWorkflow{
				WorkflowId: sw.GetWorkflowId(),
				Version:    sw.GetVersion(),
				Parameters: sw.GetParameters(),
			},
			Rationale: sw.GetRationale(),
			OriginalAnalysis: &hapiv1.OriginalAnalysis{
				SignalType: req.GetIncident().GetSignal().GetSignalType(),
				Severity:   req.GetIncident().GetSignal().GetSeverity(),
			},
			Failure: &hapiv1.ExecutionFailure{
				FailedStepIndex: 0,
				FailedStepName:  "apply",
				Reason:          reason,
				Message:         fmt.Sprintf("the workflow's %s step failed: %s", "apply", reason),
				ExecutionTime:   durationpb.New(4e9),
			},
			ExecutionRef: "workflowexecution/contract-1",
		}},
	}
	return out
}

// A recovery request naming the workflow that failed never gets it back with
// the same parameters; attempts beyond the maximum get review with a reason
// of their own; a malformed recovery context is InvalidArgument.
func TestRecoveryNeverReturnsTheFailedExecution(t *testing.T) {
	c := client(t)
	req := loadRequest(t, "oomkilled.json")
	req.GetIncident().RemediationId = "rr-contract-recovery"
	first, err := c.AnalyzeIncident(callCtx(t), req)
	if err != nil {
		t.Fatalf("AnalyzeIncident: %v", err)
	}
	sw := first.GetResult().GetSelectedWorkflow()
	if sw == nil {
		t.Fatalf("the first analysis selected nothing: %v", first.GetResult())
	}

	recovery := recoveryOf(req, sw, "Forbidden", 1, 3)
	if err := protovalidate.Validate(recovery); err != nil {
		t.Fatalf("the recovery request fails client-side validation: %v", err)
	}
	resp, err := c.AnalyzeIncident(callCtx(t), recovery)
	if err != nil {
		t.Fatalf("AnalyzeIncident (recovery): %v", err)
	}
	res := resp.GetResult()
	if res.GetReused() {
		t.Errorf("the recovery attempt reused the first analysis")
	}
	if again := res.GetSelectedWorkflow(); again != nil && again.GetWorkflowId() == sw.GetWorkflowId() &&
		proto.Equal(again.GetParameters(), sw.GetParameters()) {
		t.Fatalf("the failed execution came back: %v", again)
	}
	if res.GetSelectedWorkflow() == nil && res.GetHumanReviewReason() == hapiv1.HumanReviewReason_HUMAN_REVIEW_REASON_UNSPECIFIED {
		t.Errorf("nothing selected and no review reason")
	}

	exhausted, err := c.AnalyzeIncident(callCtx(t), recoveryOf(req, sw, "Forbidden", 4, 3))
	if err != nil {
		t.Fatalf("AnalyzeIncident (attempt 4 of 3): %v", err)
	}
	if got := exhausted.GetResult().GetHumanReviewReason(); got != hapiv1.HumanReviewReason_HUMAN_REVIEW_REASON_RECOVERY_ATTEMPTS_EXHAUSTED {
		t.Errorf("attempt 4 of 3: review reason %s, want RECOVERY_ATTEMPTS_EXHAUSTED", got)
	}

	bad := recoveryOf(req, sw, "Forbidden", 0, 3)
	_, err = c.AnalyzeIncident(callCtx(t), bad)
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("attempt_number 0: %v, want InvalidArgument", err)
	}
	compareWithClientValidation(t, badRequest(t, st), bad)
}
