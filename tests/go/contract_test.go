// Package contract checks a running hapi-grpc server through the generated Go
// stubs: typed results, the streaming RPC, rich errors (google.rpc.BadRequest)
// compared with client-side protovalidate, parameter validation and health.
//
//	HAPI_ADDR=127.0.0.1:50051 HAPI_EXAMPLES_DIR=../../examples go test ./... -count=1
//
// Without HAPI_ADDR every test is skipped.
package contract

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	hapiv1 "github.com/hapi-grpc/hapi-grpc/generated/go/hapi/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	serviceName = "hapi.v1.IncidentAnalysisService"
	callTimeout = 30 * time.Second
	memoryWF    = "oomkill-increase-memory-v1"
	scaleWF     = "oomkill-scale-down-v1"
)

// JSON types of the bundled catalog's parameters (hapi_grpc/data/catalog.yaml)
// that the checks below know about; other names are only required to be set.
var (
	stringParams = []string{
		"NAMESPACE", "DEPLOYMENT_NAME", "CONTAINER_NAME", "MEMORY_LIMIT_NEW",
		"NODE_NAME", "POD_NAME", "HPA_NAME", "PVC_NAME", "NEW_SIZE", "TARGET_NAMESPACE",
		"TARGET_RESOURCE_NAME", "SERVICE_ACCOUNT_NAME", "PULL_SECRET_NAME", "CERTIFICATE_NAME",
		"RESTART_POLICY",
	}
	integerParams = []string{
		"REPLICA_COUNT", "REVISION", "GRACE_PERIOD_SECONDS", "MAX_REPLICAS", "MIN_REPLICAS",
		"DRAIN_TIMEOUT_SECONDS", "MIN_IMAGE_AGE_HOURS", "INITIAL_DELAY_SECONDS",
		"TIMEOUT_SECONDS", "FAILURE_THRESHOLD",
	}
	booleanParams  = []string{"IGNORE_DAEMONSETS", "FORCE"}
	memoryQuantity = regexp.MustCompile(`^[0-9]+(Ki|Mi|Gi|Ti)$`)
)

var (
	connOnce sync.Once
	conn     *grpc.ClientConn
	connErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if conn != nil {
		_ = conn.Close()
	}
	os.Exit(code)
}

func dial(t *testing.T) *grpc.ClientConn {
	t.Helper()
	addr := os.Getenv("HAPI_ADDR")
	if addr == "" {
		t.Skip("HAPI_ADDR is not set (host:port of a running hapi-grpc server)")
	}
	connOnce.Do(func() {
		conn, connErr = grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	})
	if connErr != nil {
		t.Fatalf("dial %s: %v", addr, connErr)
	}
	return conn
}

func client(t *testing.T) hapiv1.IncidentAnalysisServiceClient {
	return hapiv1.NewIncidentAnalysisServiceClient(dial(t))
}

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

func examplesDir() string {
	if d := os.Getenv("HAPI_EXAMPLES_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "examples")
}

// loadRequest reads an example incident (proto JSON of AnalyzeIncidentRequest).
func loadRequest(t *testing.T, name string) *hapiv1.AnalyzeIncidentRequest {
	t.Helper()
	path := filepath.Join(examplesDir(), name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read example: %v (set HAPI_EXAMPLES_DIR)", err)
	}
	req := &hapiv1.AnalyzeIncidentRequest{}
	if err := protojson.Unmarshal(data, req); err != nil {
		t.Fatalf("%s is not an AnalyzeIncidentRequest in proto JSON: %v", path, err)
	}
	return req
}

// checkParameterTypes fails for a parameter whose JSON type is not the one
// its catalog schema declares; it returns the names of integer parameters seen.
func checkParameterTypes(t *testing.T, where string, params *structpb.Struct) []string {
	t.Helper()
	var integers []string
	for name, v := range params.GetFields() {
		switch {
		case slices.Contains(stringParams, name):
			if _, ok := v.GetKind().(*structpb.Value_StringValue); !ok {
				t.Errorf("%s: %s = %v, want a JSON string", where, name, v)
			}
		case slices.Contains(integerParams, name):
			n, ok := v.GetKind().(*structpb.Value_NumberValue)
			if !ok {
				t.Errorf("%s: %s = %v, want a JSON number", where, name, v)
			} else if n.NumberValue != float64(int64(n.NumberValue)) {
				t.Errorf("%s: %s = %v, want an integer", where, name, n.NumberValue)
			}
			integers = append(integers, name)
		case slices.Contains(booleanParams, name):
			if _, ok := v.GetKind().(*structpb.Value_BoolValue); !ok {
				t.Errorf("%s: %s = %v, want a JSON boolean", where, name, v)
			}
		default:
			if v.GetKind() == nil {
				t.Errorf("%s: %s has no value", where, name)
			}
		}
	}
	return integers
}

// badRequest returns the google.rpc.BadRequest detail of a status, failing
// the test when there is none.
func badRequest(t *testing.T, st *status.Status) *errdetails.BadRequest {
	t.Helper()
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			return br
		}
	}
	t.Fatalf("status %s %q carries no google.rpc.BadRequest detail (details: %v)", st.Code(), st.Message(), st.Details())
	return nil
}

// clientViolations validates msg with protovalidate-go, as a client would
// before sending, and returns its violations by field path.
func clientViolations(t *testing.T, msg proto.Message) map[string][]*protovalidateViolation {
	t.Helper()
	err := protovalidate.Validate(msg)
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("protovalidate-go: want a ValidationError, got %v", err)
	}
	out := map[string][]*protovalidateViolation{}
	for _, v := range verr.Violations {
		path := protovalidate.FieldPathString(v.Proto.GetField())
		out[path] = append(out[path], &protovalidateViolation{rule: v.Proto.GetRuleId(), message: v.Proto.GetMessage()})
	}
	return out
}

type protovalidateViolation struct{ rule, message string }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compareWithClientValidation checks that the server's field violations name
// the same field paths as protovalidate-go, with the same messages (and rule
// ids, where the server fills reason).
func compareWithClientValidation(t *testing.T, br *errdetails.BadRequest, msg proto.Message) {
	t.Helper()
	server := map[string][]*errdetails.BadRequest_FieldViolation{}
	for _, fv := range br.GetFieldViolations() {
		server[fv.GetField()] = append(server[fv.GetField()], fv)
	}
	local := clientViolations(t, msg)
	if got, want := sortedKeys(server), sortedKeys(local); !slices.Equal(got, want) {
		t.Fatalf("server field paths %q, protovalidate-go field paths %q", got, want)
	}
	for field, fvs := range server {
		for _, fv := range fvs {
			match := slices.IndexFunc(local[field], func(v *protovalidateViolation) bool {
				return v.message == fv.GetDescription() && (fv.GetReason() == "" || fv.GetReason() == v.rule)
			})
			if match < 0 {
				t.Errorf("server violation {field %q, description %q, reason %q} matches none of protovalidate-go's %v",
					field, fv.GetDescription(), fv.GetReason(), local[field])
			}
		}
	}
}

func TestAnalyzeIncidentReturnsTypedResult(t *testing.T) {
	c := client(t)
	req := loadRequest(t, "oomkilled.json")
	if err := protovalidate.Validate(req); err != nil {
		t.Fatalf("the example itself fails client-side validation: %v", err)
	}
	resp, err := c.AnalyzeIncident(callCtx(t), req)
	if err != nil {
		t.Fatalf("AnalyzeIncident: %v", err)
	}
	res := resp.GetResult()
	if res.GetRemediationId() != req.GetIncident().GetRemediationId() {
		t.Errorf("remediation_id %q, want the request's %q", res.GetRemediationId(), req.GetIncident().GetRemediationId())
	}
	if res.GetNeedsHumanReview() {
		t.Errorf("needs_human_review = true (reason %s), want false", res.GetHumanReviewReason())
	}
	if res.GetHumanReviewReason() != hapiv1.HumanReviewReason_HUMAN_REVIEW_REASON_UNSPECIFIED {
		t.Errorf("human_review_reason = %s, want UNSPECIFIED", res.GetHumanReviewReason())
	}
	sw := res.GetSelectedWorkflow()
	if sw == nil {
		t.Fatalf("no selected_workflow; result: %v", res)
	}
	if id := sw.GetWorkflowId(); id != memoryWF && id != scaleWF {
		t.Errorf("selected workflow %q, want an OOMKilled workflow (%s or %s)", id, memoryWF, scaleWF)
	}
	if sw.GetConfidence() <= 0 || sw.GetConfidence() > 1 {
		t.Errorf("confidence %v, want (0, 1]", sw.GetConfidence())
	}
	params := sw.GetParameters().GetFields()
	if len(params) == 0 {
		t.Fatalf("selected workflow %s has no parameters", sw.GetWorkflowId())
	}
	checkParameterTypes(t, "selected_workflow.parameters", sw.GetParameters())
	for _, name := range []string{"NAMESPACE", "DEPLOYMENT_NAME"} {
		if params[name].GetStringValue() == "" {
			t.Errorf("%s = %v, want a non-empty string", name, params[name])
		}
	}
	if sw.GetWorkflowId() == memoryWF {
		if m := params["MEMORY_LIMIT_NEW"].GetStringValue(); !memoryQuantity.MatchString(m) {
			t.Errorf("MEMORY_LIMIT_NEW = %v, want a quantity string like 512Mi", params["MEMORY_LIMIT_NEW"])
		}
	}
}

// The integer case: the CrashLoopBackOff example selects a workflow with an
// integer parameter, which must travel as a JSON number, not a string.
func TestAnalyzeIncidentKeepsIntegerParameters(t *testing.T) {
	c := client(t)
	req := loadRequest(t, "crashloopbackoff.json")
	resp, err := c.AnalyzeIncident(callCtx(t), req)
	if err != nil {
		t.Fatalf("AnalyzeIncident: %v", err)
	}
	sw := resp.GetResult().GetSelectedWorkflow()
	if sw == nil {
		t.Fatalf("no selected_workflow; result: %v", resp.GetResult())
	}
	integers := checkParameterTypes(t, sw.GetWorkflowId()+" parameters", sw.GetParameters())
	if len(integers) == 0 {
		t.Fatalf("selected %s with parameters %v: no integer parameter to check", sw.GetWorkflowId(), sw.GetParameters())
	}
}

// Every example incident (but the deliberately invalid ones) is accepted,
// and whatever is selected keeps its parameters' JSON types.
func TestExamplesKeepParameterTypes(t *testing.T) {
	c := client(t)
	paths, err := filepath.Glob(filepath.Join(examplesDir(), "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples in %s (%v)", examplesDir(), err)
	}
	for _, path := range paths {
		name := filepath.Base(path)
		if strings.HasPrefix(name, "invalid-") || strings.HasPrefix(name, "outcome-") {
			continue // outcome-*.json are ReportRemediationOutcome requests
		}
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			resp, err := c.AnalyzeIncident(callCtx(t), loadRequest(t, name))
			if err != nil {
				t.Fatalf("AnalyzeIncident: %v", err)
			}
			res := resp.GetResult()
			if sw := res.GetSelectedWorkflow(); sw != nil {
				checkParameterTypes(t, sw.GetWorkflowId()+" parameters", sw.GetParameters())
			} else if !res.GetNeedsHumanReview() || res.GetHumanReviewReason() == hapiv1.HumanReviewReason_HUMAN_REVIEW_REASON_UNSPECIFIED {
				t.Errorf("no selected workflow, yet needs_human_review=%v reason=%s", res.GetNeedsHumanReview(), res.GetHumanReviewReason())
			}
		})
	}
}

func TestAnalyzeIncidentStreamEndsWithResult(t *testing.T) {
	c := client(t)
	req := loadRequest(t, "oomkilled.json")
	ctx := callCtx(t)
	stream, err := c.AnalyzeIncidentStream(ctx, &hapiv1.AnalyzeIncidentStreamRequest{Incident: req.GetIncident()})
	if err != nil {
		t.Fatalf("AnalyzeIncidentStream: %v", err)
	}
	var events []*hapiv1.AnalyzeIncidentStreamResponse
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv after %d events: %v", len(events), err)
		}
		events = append(events, ev)
	}
	if len(events) == 0 {
		t.Fatal("the stream ended without any event")
	}
	var toolCalls, attempts int
	for i, ev := range events[:len(events)-1] {
		switch ev.GetEvent().(type) {
		case *hapiv1.AnalyzeIncidentStreamResponse_Result:
			t.Errorf("event %d of %d is a result; the result must be the last event", i+1, len(events))
		case *hapiv1.AnalyzeIncidentStreamResponse_ToolCall:
			toolCalls++
		case *hapiv1.AnalyzeIncidentStreamResponse_ValidationAttempt:
			attempts++
		case nil:
			t.Errorf("event %d has no event set", i+1)
		}
	}
	res := events[len(events)-1].GetResult()
	if res == nil {
		t.Fatalf("last event is %T, want a result", events[len(events)-1].GetEvent())
	}
	if toolCalls != len(res.GetToolCalls()) {
		t.Errorf("%d tool_call events, the result records %d tool calls", toolCalls, len(res.GetToolCalls()))
	}
	if attempts != len(res.GetValidationAttempts()) {
		t.Errorf("%d validation_attempt events, the result records %d attempts", attempts, len(res.GetValidationAttempts()))
	}
	if res.GetSelectedWorkflow() == nil || res.GetNeedsHumanReview() {
		t.Fatalf("streamed result has no selected workflow or needs review: %v", res)
	}
	unary, err := c.AnalyzeIncident(callCtx(t), req)
	if err != nil {
		t.Fatalf("AnalyzeIncident: %v", err)
	}
	want := unary.GetResult().GetSelectedWorkflow()
	if got := res.GetSelectedWorkflow(); got.GetWorkflowId() != want.GetWorkflowId() ||
		!proto.Equal(got.GetParameters(), want.GetParameters()) {
		t.Errorf("streamed selection %s %v differs from the unary one %s %v",
			got.GetWorkflowId(), got.GetParameters(), want.GetWorkflowId(), want.GetParameters())
	}
}

func TestInvalidIncidentGetsBadRequestMatchingProtovalidate(t *testing.T) {
	c := client(t)
	req := loadRequest(t, "oomkilled.json")
	req.GetIncident().RemediationId = ""

	_, err := c.AnalyzeIncident(callCtx(t), req)
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("AnalyzeIncident with an empty remediation_id: %v, want InvalidArgument", err)
	}
	br := badRequest(t, st)
	found := false
	for _, fv := range br.GetFieldViolations() {
		if fv.GetField() == "incident.remediation_id" {
			found = true
			if fv.GetDescription() == "" {
				t.Errorf("violation of incident.remediation_id has no description")
			}
		}
	}
	if !found {
		t.Fatalf("no field violation for incident.remediation_id in %v", br)
	}
	compareWithClientValidation(t, br, req)

	// The streaming RPC rejects the same request the same way.
	stream, err := c.AnalyzeIncidentStream(callCtx(t), &hapiv1.AnalyzeIncidentStreamRequest{Incident: req.GetIncident()})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("AnalyzeIncidentStream with an empty remediation_id: %v, want InvalidArgument", err)
	}
	compareWithClientValidation(t, badRequest(t, status.Convert(err)), &hapiv1.AnalyzeIncidentStreamRequest{Incident: req.GetIncident()})
}

func TestMissingIncidentIsInvalid(t *testing.T) {
	c := client(t)
	req := &hapiv1.AnalyzeIncidentRequest{}
	_, err := c.AnalyzeIncident(callCtx(t), req)
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("AnalyzeIncident without an incident: %v, want InvalidArgument", err)
	}
	compareWithClientValidation(t, badRequest(t, st), req)
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValidateWorkflowParameters(t *testing.T) {
	c := client(t)

	t.Run("valid", func(t *testing.T) {
		resp, err := c.ValidateWorkflowParameters(callCtx(t), &hapiv1.ValidateWorkflowParametersRequest{
			WorkflowId: memoryWF,
			Parameters: mustStruct(t, map[string]any{
				"NAMESPACE": "production", "DEPLOYMENT_NAME": "api-server", "MEMORY_LIMIT_NEW": "2Gi",
			}),
		})
		if err != nil {
			t.Fatalf("ValidateWorkflowParameters: %v", err)
		}
		v := resp.GetValidation()
		if !v.GetValid() || len(v.GetErrors()) != 0 {
			t.Fatalf("valid=%v errors=%v, want valid and no errors", v.GetValid(), v.GetErrors())
		}
		if resp.GetWorkflowId() != memoryWF || resp.GetWorkflowVersion() == "" {
			t.Errorf("workflow %q version %q, want %s and a version", resp.GetWorkflowId(), resp.GetWorkflowVersion(), memoryWF)
		}
		if got := v.GetSanitizedParameters().GetFields()["MEMORY_LIMIT_NEW"].GetStringValue(); got != "2Gi" {
			t.Errorf("sanitized MEMORY_LIMIT_NEW = %q, want 2Gi", got)
		}
		checkParameterTypes(t, "sanitized_parameters", v.GetSanitizedParameters())
	})

	t.Run("valid integer, undeclared stripped", func(t *testing.T) {
		resp, err := c.ValidateWorkflowParameters(callCtx(t), &hapiv1.ValidateWorkflowParametersRequest{
			WorkflowId: scaleWF,
			Parameters: mustStruct(t, map[string]any{
				"NAMESPACE": "production", "DEPLOYMENT_NAME": "api-server", "REPLICA_COUNT": 3, "EXTRA_FLAG": "x",
			}),
		})
		if err != nil {
			t.Fatalf("ValidateWorkflowParameters: %v", err)
		}
		v := resp.GetValidation()
		if !v.GetValid() {
			t.Fatalf("valid=false errors=%v, want valid", v.GetErrors())
		}
		rc, ok := v.GetSanitizedParameters().GetFields()["REPLICA_COUNT"].GetKind().(*structpb.Value_NumberValue)
		if !ok || rc.NumberValue != 3 {
			t.Errorf("sanitized REPLICA_COUNT = %v, want the number 3", v.GetSanitizedParameters().GetFields()["REPLICA_COUNT"])
		}
		if _, kept := v.GetSanitizedParameters().GetFields()["EXTRA_FLAG"]; kept {
			t.Errorf("undeclared EXTRA_FLAG kept in sanitized parameters")
		}
		if !slices.Contains(v.GetStrippedParameters(), "EXTRA_FLAG") {
			t.Errorf("stripped_parameters %v, want EXTRA_FLAG", v.GetStrippedParameters())
		}
	})

	invalid := []struct {
		name     string
		workflow string
		params   map[string]any
		param    string
		code     hapiv1.ParameterErrorCode
	}{
		{"pattern mismatch", memoryWF,
			map[string]any{"NAMESPACE": "production", "DEPLOYMENT_NAME": "api-server", "MEMORY_LIMIT_NEW": "2 gigabytes"},
			"MEMORY_LIMIT_NEW", hapiv1.ParameterErrorCode_PARAMETER_ERROR_CODE_PATTERN_MISMATCH},
		{"integer sent as a string", scaleWF,
			map[string]any{"NAMESPACE": "production", "DEPLOYMENT_NAME": "api-server", "REPLICA_COUNT": "3"},
			"REPLICA_COUNT", hapiv1.ParameterErrorCode_PARAMETER_ERROR_CODE_WRONG_TYPE},
		{"above maximum", scaleWF,
			map[string]any{"NAMESPACE": "production", "DEPLOYMENT_NAME": "api-server", "REPLICA_COUNT": 11},
			"REPLICA_COUNT", hapiv1.ParameterErrorCode_PARAMETER_ERROR_CODE_ABOVE_MAXIMUM},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.ValidateWorkflowParameters(callCtx(t), &hapiv1.ValidateWorkflowParametersRequest{
				WorkflowId: tc.workflow, Parameters: mustStruct(t, tc.params),
			})
			if err != nil {
				t.Fatalf("ValidateWorkflowParameters: %v, want OK with valid=false", err)
			}
			v := resp.GetValidation()
			if v.GetValid() {
				t.Fatalf("valid=true, want false")
			}
			i := slices.IndexFunc(v.GetErrors(), func(e *hapiv1.ParameterError) bool {
				return e.GetParameter() == tc.param && e.GetCode() == tc.code
			})
			if i < 0 {
				t.Fatalf("errors %v, want %s on %s", v.GetErrors(), tc.code, tc.param)
			}
			if v.GetErrors()[i].GetMessage() == "" {
				t.Errorf("error on %s has no message", tc.param)
			}
		})
	}

	t.Run("unknown workflow", func(t *testing.T) {
		_, err := c.ValidateWorkflowParameters(callCtx(t), &hapiv1.ValidateWorkflowParametersRequest{
			WorkflowId: "no-such-workflow-v1", Parameters: mustStruct(t, map[string]any{}),
		})
		if status.Code(err) != codes.NotFound {
			t.Fatalf("got %v, want NotFound", err)
		}
	})

	t.Run("path traversal id", func(t *testing.T) {
		req := &hapiv1.ValidateWorkflowParametersRequest{
			WorkflowId: "../../admin", Parameters: mustStruct(t, map[string]any{}),
		}
		_, err := c.ValidateWorkflowParameters(callCtx(t), req)
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument {
			t.Fatalf("got %v, want InvalidArgument", err)
		}
		br := badRequest(t, st)
		if !slices.ContainsFunc(br.GetFieldViolations(), func(fv *errdetails.BadRequest_FieldViolation) bool {
			return fv.GetField() == "workflow_id"
		}) {
			t.Fatalf("no violation of workflow_id in %v", br)
		}
		compareWithClientValidation(t, br, req)
	})
}

// An outcome report is acknowledged, its retry gets the stored ack, a
// different report for the same attempt is AlreadyExists, and a malformed
// one is InvalidArgument with the violations protovalidate finds client-side.
func TestReportRemediationOutcome(t *testing.T) {
	c := client(t)
	for _, name := range []string{"outcome-succeeded.json", "outcome-failed.json", "outcome-declined.json"} {
		data, err := os.ReadFile(filepath.Join(examplesDir(), name))
		if err != nil {
			t.Fatalf("read example: %v", err)
		}
		req := &hapiv1.ReportRemediationOutcomeRequest{}
		if err := protojson.Unmarshal(data, req); err != nil {
			t.Fatalf("%s is not a ReportRemediationOutcomeRequest: %v", name, err)
		}
		// A fresh id per run: the server keeps reports.
		req.RemediationId = req.GetRemediationId() + "-" + time.Now().Format("150405.000000000")
		ack, err := c.ReportRemediationOutcome(callCtx(t), req)
		if err != nil {
			t.Fatalf("%s: ReportRemediationOutcome: %v", name, err)
		}
		if ack.GetAlreadyRecorded() || ack.GetRecordedAt() == nil {
			t.Fatalf("%s: first report acknowledged as %v", name, ack)
		}
		again, err := c.ReportRemediationOutcome(callCtx(t), req)
		if err != nil || !again.GetAlreadyRecorded() || !proto.Equal(again.GetRecordedAt(), ack.GetRecordedAt()) {
			t.Fatalf("%s: retried report: %v, %v; want the stored ack", name, again, err)
		}
		other := proto.Clone(req).(*hapiv1.ReportRemediationOutcomeRequest)
		other.SignalCleared = proto.Bool(!other.GetSignalCleared())
		if _, err := c.ReportRemediationOutcome(callCtx(t), other); status.Code(err) != codes.AlreadyExists {
			t.Fatalf("%s: a different report for the same attempt: %v, want AlreadyExists", name, err)
		}
	}
	bad := &hapiv1.ReportRemediationOutcomeRequest{RemediationId: "rr-bad", Attempt: 0}
	_, err := c.ReportRemediationOutcome(callCtx(t), bad)
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("malformed report: %v, want InvalidArgument", err)
	}
	compareWithClientValidation(t, badRequest(t, st), bad)
}

func TestHealthServing(t *testing.T) {
	h := healthpb.NewHealthClient(dial(t))
	for _, svc := range []string{"", serviceName} {
		resp, err := h.Check(callCtx(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("Health.Check(%q): %v", svc, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Health.Check(%q) = %s, want SERVING", svc, resp.GetStatus())
		}
	}
	_, err := h.Check(callCtx(t), &healthpb.HealthCheckRequest{Service: "no.such.Service"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("Health.Check of an unknown service: %v, want NotFound", err)
	}
}
