package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
)

// The format of testdata/runs/*.json is described in testdata/runs/README.md.

type runScenario struct {
	Description string        `json:"description"`
	Limits      *Limits       `json:"limits"`
	Actions     []runAction   `json:"actions"`
	Host        *runHost      `json:"host"`
	NoHost      bool          `json:"no_host"`
	Call        runCall       `json:"call"`
	Expect      runExpect     `json:"expect"`
	Then        []runFollowUp `json:"then"`
}

type runFollowUp struct {
	Call   runCall   `json:"call"`
	Expect runExpect `json:"expect"`
}

type runAction struct {
	Definition Definition    `json:"definition"`
	Script     []runScriptOp `json:"script"`
}

type runHost struct {
	Instances map[string][]refFixture `json:"instances"`
	// KeysResolve makes the resolver give an instance's key back for
	// itself, as RefMatches.ID.
	KeysResolve bool `json:"keys_resolve"`
}

// resolver is the fixture host's ref resolver.
func (h *runHost) resolver() RefResolver {
	byIDOrName := fixtureResolver(h.Instances)
	if !h.KeysResolve {
		return byIDOrName
	}
	return func(ctx context.Context, schema, value string) (RefMatches, error) {
		for _, in := range h.Instances[schema] {
			if in.Key == value {
				k := in.Key
				return RefMatches{ID: &k}, nil
			}
		}
		return byIDOrName(ctx, schema, value)
	}
}

type runCall struct {
	ID           string          `json:"id"`
	Params       json.RawMessage `json:"params"`
	ParamsText   *string         `json:"params_text"`
	CancelBefore bool            `json:"cancel_before"`
	CancelDuring bool            `json:"cancel_during"`
}

type runExpect struct {
	Entry          json.RawMessage `json:"entry"`
	Result         json.RawMessage `json:"result"`
	ErrorCode      string          `json:"error_code"`
	ErrorText      string          `json:"error_text"` // err.Error(), whole
	ErrorIsPlain   bool            `json:"error_is_plain"`
	ErrorIsContext bool            `json:"error_is_context"`
	Retry          codes.Retry     `json:"retry"`
	Transport      codes.Transport `json:"transport"`
	Issues         []runIssue      `json:"issues"`
	CauseContains  string          `json:"cause_contains"`
	// The refusal a nested call gave the body, which the body returned:
	// the host finds it whole in errors.Unwrap of the caller's refusal.
	NestedErrorCode string           `json:"nested_error_code"`
	NestedRetry     codes.Retry      `json:"nested_retry"`
	NestedTransport codes.Transport  `json:"nested_transport"`
	NestedIssues    []runIssue       `json:"nested_issues"`
	OnEntryCalls    *int             `json:"on_entry_calls"`
	BodyRuns        map[string]int64 `json:"body_runs"`
}

type runIssue struct {
	Path    string `json:"path"`
	Keyword string `json:"keyword"`
}

// runScriptOp is one step of a fixture body; exactly one verb is set.
type runScriptOp struct {
	Command         json.RawMessage `json:"command"`
	Result          json.RawMessage `json:"result"`
	Call            string          `json:"call"`
	With            json.RawMessage `json:"with"`
	WithText        *string         `json:"with_text"`
	As              string          `json:"as"`
	ContinueOnError bool            `json:"continue_on_error"`
	Return          json.RawMessage `json:"return"`
	Fail            *struct {
		Code       codes.Code  `json:"code"`
		Message    string      `json:"message"`
		Retry      codes.Retry `json:"retry"`
		NextAction string      `json:"next_action"`
	} `json:"fail"`
	Error         *string `json:"error"`
	Panic         *string `json:"panic"`
	WaitForCancel bool    `json:"wait_for_cancel"`
}

func (op runScriptOp) verbs() int {
	n := 0
	for _, set := range []bool{op.Command != nil, op.Call != "", op.Return != nil, op.Fail != nil,
		op.Error != nil, op.Panic != nil, op.WaitForCancel} {
		if set {
			n++
		}
	}
	return n
}

// runStrictDecode decodes a fixture file refusing unknown fields, so that a
// misspelt key fails the test instead of being ignored.
func runStrictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// runExact decodes fixture JSON keeping numbers as their exact text.
func runExact(t testing.TB, raw []byte) any {
	t.Helper()
	v, err := ijson.Decode(raw, 0)
	require.NoError(t, err, "fixture value %s", raw)
	return v
}

// runCanonical is the RFC 8785 text of fixture JSON.
func runCanonical(t testing.TB, raw []byte) string {
	t.Helper()
	// The entry's form: a number a double does not hold keeps its digits.
	text, err := exactText(runExact(t, raw))
	require.NoError(t, err)
	return text
}

// runScripts interprets the scripts of one fixture and keeps what the
// test asserts on: how often each body ran and the plain errors bodies
// returned.
type runScripts struct {
	runs    map[string]*atomic.Int64
	waiting chan struct{} // signalled once by the first wait_for_cancel

	mu    sync.Mutex
	plain []error
}

var runNameRef = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*$`)

// runSubstitute replaces, at any depth, each string "$params" by the body's
// parameters and "$name" by the result a call stored under that name.
func runSubstitute(v any, params map[string]any, vars map[string]any) (any, error) {
	switch v := v.(type) {
	case string:
		if !runNameRef.MatchString(v) {
			return v, nil
		}
		if v == "$params" {
			return params, nil
		}
		r, ok := vars[v[1:]]
		if !ok {
			return nil, fmt.Errorf("fixture: %s names no earlier call", v)
		}
		return r, nil
	case map[string]any:
		for k, e := range v {
			s, err := runSubstitute(e, params, vars)
			if err != nil {
				return nil, err
			}
			v[k] = s
		}
	case []any:
		for i, e := range v {
			s, err := runSubstitute(e, params, vars)
			if err != nil {
				return nil, err
			}
			v[i] = s
		}
	}
	return v, nil
}

func (s *runScripts) body(t *testing.T, id string, script []runScriptOp) Body {
	count := &atomic.Int64{}
	s.runs[id] = count
	value := func(raw json.RawMessage, params map[string]any, vars map[string]any) (any, error) {
		if raw == nil {
			return nil, nil
		}
		return runSubstitute(runExact(t, raw), params, vars)
	}
	return func(ctx context.Context, params map[string]any, tr *Trace) (any, error) {
		count.Add(1)
		if tr == nil || tr.Action() != id {
			return nil, fmt.Errorf("fixture: the body of %s got the wrong trace", id)
		}
		vars := map[string]any{}
		for _, op := range script {
			switch {
			case op.Command != nil:
				cmd, err := value(op.Command, params, vars)
				if err != nil {
					return nil, err
				}
				res, err := value(op.Result, params, vars)
				if err != nil {
					return nil, err
				}
				if err := tr.Command(cmd, res); err != nil {
					return nil, err
				}
			case op.Call != "":
				var with any
				if op.WithText != nil {
					with = []byte(*op.WithText)
				} else if op.With != nil {
					w, err := value(op.With, params, vars)
					if err != nil {
						return nil, err
					}
					with = w
				}
				res, err := tr.Call(ctx, op.Call, with)
				if err != nil && !op.ContinueOnError {
					return nil, err
				}
				if op.As != "" {
					vars[op.As] = res
				}
			case op.Return != nil:
				return value(op.Return, params, vars)
			case op.Fail != nil:
				r := NewRefusal(op.Fail.Code, op.Fail.Message)
				if op.Fail.Retry != "" {
					r.Retry = op.Fail.Retry
				}
				if op.Fail.NextAction != "" {
					r.NextAction = op.Fail.NextAction
				}
				return nil, r
			case op.Error != nil:
				err := errors.New(*op.Error)
				s.mu.Lock()
				s.plain = append(s.plain, err)
				s.mu.Unlock()
				return nil, err
			case op.Panic != nil:
				panic(*op.Panic)
			case op.WaitForCancel:
				select {
				case s.waiting <- struct{}{}:
				default:
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(10 * time.Second):
					return nil, errors.New("fixture: the context was never cancelled")
				}
			}
		}
		return nil, nil
	}
}

func loadRunScenarios(t *testing.T) map[string]runScenario {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "runs", "*.json"))
	require.NoError(t, err)
	out := map[string]runScenario{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		var f runScenario
		require.NoError(t, runStrictDecode(b, &f), n)
		out[strings.TrimSuffix(filepath.Base(n), ".json")] = f
	}
	return out
}

func TestRunFixtures(t *testing.T) {
	fixtures := loadRunScenarios(t)
	require.GreaterOrEqual(t, len(fixtures), 28, "fixtures in testdata/runs")
	names := make([]string, 0, len(fixtures))
	for n := range fixtures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := fixtures[name]
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, f.Description, "a fixture says what it shows")
			opts := &Options{}
			if f.Limits != nil {
				opts.Limits = *f.Limits
			}
			var entries []RunEntry
			var entriesMu sync.Mutex
			if !f.NoHost {
				opts.OnRecord = func(rec Record) {
					entriesMu.Lock()
					entries = append(entries, rec.Entry)
					entriesMu.Unlock()
				}
				if f.Host != nil && f.Host.Instances != nil {
					opts.Resolve = f.Host.resolver()
				}
			} else {
				require.Nil(t, f.Host, "no_host excludes host")
			}
			reg := NewRegistry(opts)
			s := &runScripts{runs: map[string]*atomic.Int64{}, waiting: make(chan struct{}, 1)}
			for _, a := range f.Actions {
				for i, op := range a.Script {
					require.Equal(t, 1, op.verbs(), "%s: script op %d needs exactly one verb", a.Definition.ID, i)
				}
				require.NoError(t, reg.Register(Action{Definition: a.Definition, Run: s.body(t, a.Definition.ID, a.Script)}))
			}
			observed := !f.NoHost
			calls := append([]runFollowUp{{f.Call, f.Expect}}, f.Then...)
			for i, c := range calls {
				t.Run(fmt.Sprintf("call%d_%s", i, c.Call.ID), func(t *testing.T) {
					entriesMu.Lock()
					entries = nil
					entriesMu.Unlock()
					for _, n := range s.runs {
						n.Store(0)
					}
					s.mu.Lock()
					s.plain = nil
					s.mu.Unlock()
					checkRunCall(t, reg, observed, s, c.Call, c.Expect, func() []RunEntry {
						entriesMu.Lock()
						defer entriesMu.Unlock()
						return append([]RunEntry(nil), entries...)
					})
				})
			}
		})
	}
}

func checkRunCall(t *testing.T, reg *Registry, observed bool, s *runScripts,
	c runCall, want runExpect, seen func() []RunEntry) {
	var params any
	var before string
	switch {
	case c.ParamsText != nil:
		require.Nil(t, c.Params, "params and params_text exclude each other")
		params = []byte(*c.ParamsText)
		before = *c.ParamsText
	case c.Params != nil:
		params = runExact(t, c.Params)
		before = runCanonical(t, c.Params)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.CancelBefore {
		cancel()
	}
	if c.CancelDuring {
		go func() {
			select {
			case <-s.waiting:
			case <-time.After(5 * time.Second):
			}
			cancel()
		}()
	}

	res, err := reg.Run(ctx, Call{Action: c.ID, Params: params})
	result, entry := res.Value, res.Entry()
	require.Len(t, res.Records, 1, "one record per call")

	// The caller's parameters are never changed.
	switch p := params.(type) {
	case []byte:
		assert.Equal(t, before, string(p), "the caller's JSON text changed")
	case map[string]any:
		after, cerr := CanonicalJSON(p)
		require.NoError(t, cerr)
		assert.Equal(t, before, string(after), "the caller's parameters changed")
	}

	// The entry, byte for byte in canonical form.
	require.NotNil(t, want.Entry, "every fixture call expects an entry")
	got, cerr := CanonicalJSON(entry)
	require.NoError(t, cerr)
	assert.Equal(t, runCanonical(t, want.Entry), string(got), "entry")
	checkRunEntryShape(t, entry)

	// OnRecord, once per top-level call, with the same entry.
	calls := seen()
	wantCalls := 1
	if !observed {
		wantCalls = 0
	}
	if want.OnEntryCalls != nil {
		wantCalls = *want.OnEntryCalls
	}
	require.Len(t, calls, wantCalls, "OnRecord calls")
	for _, e := range calls {
		text, cerr := CanonicalJSON(e)
		require.NoError(t, cerr)
		assert.Equal(t, string(got), string(text), "OnRecord received another entry")
	}

	// The result, as the exact Go value the body returned.
	if want.Result != nil {
		assert.Equal(t, runExact(t, want.Result), result, "result")
	}

	// The error.
	switch {
	case want.ErrorIsPlain:
		require.Error(t, err)
		var r *Refusal
		assert.False(t, errors.As(err, &r), "a plain error must not become a refusal: %v", err)
		s.mu.Lock()
		plain := append([]error(nil), s.plain...)
		s.mu.Unlock()
		require.NotEmpty(t, plain, "no body returned a plain error")
		assert.Same(t, plain[len(plain)-1], err, "the plain error must come back as it is")
	case want.ErrorIsContext:
		// A cancelled call is the cancelled refusal, its cause the
		// context's error: both errors.Is hold, and CodeOf agrees.
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, codes.Cancelled)
		assert.Equal(t, codes.Cancelled, CodeOf(err))
	case want.ErrorCode != "":
		require.Error(t, err)
		var r *Refusal
		require.True(t, errors.As(err, &r), "want a *Refusal, got %T: %v", err, err)
		assert.Equal(t, codes.Code(want.ErrorCode), r.Code, "code of %v", err)
		if want.ErrorText != "" {
			assert.Equal(t, want.ErrorText, err.Error())
		}
		if sentinel := sentinelOf(r.Code); sentinel != nil {
			assert.ErrorIs(t, err, sentinel)
		}
		if want.Retry != "" {
			assert.Equal(t, want.Retry, r.Retry, "retry")
		}
		if want.Transport != "" {
			assert.Equal(t, want.Transport, r.Transport, "transport")
		}
		if want.Issues != nil {
			var gotIssues []runIssue
			for _, is := range r.Issues {
				gotIssues = append(gotIssues, runIssue{is.Path, is.Keyword})
			}
			assert.Equal(t, want.Issues, gotIssues, "issues")
		}
		if want.NestedErrorCode != "" {
			var nr *Refusal
			require.True(t, errors.As(r.Cause(), &nr), "the nested refusal is the cause: %v", err)
			if nr.Code != r.Code {
				assert.NotErrorIs(t, err, sentinelOf(nr.Code), "errors.Is sees the caller's code only")
			}
			assert.Equal(t, codes.Code(want.NestedErrorCode), nr.Code)
			if want.NestedRetry != "" {
				assert.Equal(t, want.NestedRetry, nr.Retry, "nested retry")
			}
			if want.NestedTransport != "" {
				assert.Equal(t, want.NestedTransport, nr.Transport, "nested transport")
			}
			if want.NestedIssues != nil {
				var gotIssues []runIssue
				for _, is := range nr.Issues {
					gotIssues = append(gotIssues, runIssue{is.Path, is.Keyword})
				}
				assert.Equal(t, want.NestedIssues, gotIssues, "nested issues")
			}
		}
		if want.CauseContains != "" {
			require.Error(t, r.Cause(), "the refusal keeps its cause for the host")
			var chain strings.Builder
			next := func(e error) error {
				if r, ok := e.(*Refusal); ok {
					return r.Cause()
				}
				return errors.Unwrap(e)
			}
			for c := r.Cause(); c != nil; c = next(c) {
				chain.WriteString(c.Error())
			}
			assert.Contains(t, chain.String(), want.CauseContains)
			assert.NotContains(t, r.Message, want.CauseContains, "the cause leaked into the message")
			assert.NotContains(t, r.NextAction, want.CauseContains, "the cause leaked into the next action")
		}
	default:
		require.NoError(t, err)
	}

	for id, n := range want.BodyRuns {
		counter, ok := s.runs[id]
		require.True(t, ok, "body_runs names %s, which the fixture does not register", id)
		assert.Equal(t, n, counter.Load(), "runs of the body of %s", id)
	}
}

// checkRunEntryShape asserts what every entry holds, at every depth: an
// action, canonical parameters, non-nil steps of one kind each, an outcome
// with an error code exactly when refused, and a canonical result only
// when done.
func checkRunEntryShape(t testing.TB, e RunEntry) {
	t.Helper()
	assert.NotEmpty(t, e.Action)
	assertRunCanonical(t, e.Parameters, "parameters of %s", e.Action)
	assert.NotNil(t, e.Steps, "steps of %s", e.Action)
	switch e.Outcome {
	case OutcomeDone:
		assert.Empty(t, e.Error, "a done call has no error code")
	case OutcomeRefused:
		assert.NotEmpty(t, e.Error, "a refused call has an error code")
		assert.Empty(t, e.Result, "a refused call has no result")
	default:
		t.Errorf("outcome %q of %s", e.Outcome, e.Action)
	}
	if e.Result != "" {
		assertRunCanonical(t, e.Result, "result of %s", e.Action)
	}
	for _, s := range e.Steps {
		if s.Call != nil {
			assert.Nil(t, s.Command, "a step is a command or a call")
			assert.Empty(t, s.Result, "a call step keeps its result in its entry")
			checkRunEntryShape(t, *s.Call)
			continue
		}
		require.NotEmpty(t, s.Command, "a step is a command or a call")
		assertRunCanonical(t, string(s.Command), "command of %s", e.Action)
		if s.Result != "" {
			assertRunCanonical(t, s.Result, "command result of %s", e.Action)
		}
	}
}

func assertRunCanonical(t testing.TB, text string, msg string, args ...any) {
	t.Helper()
	// The entry's form: RFC 8785, but a number a double does not hold
	// keeps its digits (docs/runlog.md).
	again, err := exactText(json.RawMessage(text))
	if assert.NoError(t, err, msg, args) {
		assert.Equal(t, text, again, msg, args)
	}
}

// TestRegistryRegisterRefusesBadIDs covers the id rule: namespace/name, both
// identifiers, ASCII only.
func TestRegistryRegisterRefusesBadIDs(t *testing.T) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	for _, id := range []string{"", "a", "a/b/c", "1a/b", "a/b-c", "ns/", "/x", "/", "a b/c", "ns/1x",
		"é/x", "ns/名前", "ns/x\u200b", "ns\\x"} {
		t.Run(fmt.Sprintf("%q", id), func(t *testing.T) {
			reg := NewRegistry(nil)
			err := reg.Register(Action{Definition: Definition{ID: id}, Run: body})
			require.Error(t, err)
			assert.ErrorIs(t, err, codes.ConstraintViolation)
			var r *Refusal
			require.True(t, errors.As(err, &r))
			assert.Equal(t, codes.ConstraintViolation, r.Code)
			assert.Equal(t, codes.RetryNever, r.Retry)
			assert.Equal(t, codes.TransportProtocol, r.Transport)
			assert.Empty(t, reg.Definitions(), "a refused action is not registered")
		})
	}
	for _, id := range []string{"a/b", "_/_", "ns_1/x_2", "A/Z9", "garden/plant"} {
		t.Run("accepts "+id, func(t *testing.T) {
			reg := NewRegistry(nil)
			require.NoError(t, reg.Register(Action{Definition: Definition{ID: id}, Run: body}))
			_, ok := getAction(reg, id)
			assert.True(t, ok)
		})
	}
}

func TestRegistryRegisterRefusesDuplicatesAndMissingBodies(t *testing.T) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return "first", nil }
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "ns/x", Title: "first"}, Run: body}))
	err := reg.Register(Action{Definition: Definition{ID: "ns/x", Title: "second"}, Run: body})
	require.Error(t, err)
	assert.ErrorIs(t, err, codes.DuplicateName)
	var r *Refusal
	require.True(t, errors.As(err, &r))
	assert.Equal(t, codes.DuplicateName, r.Code)
	got, _ := getAction(reg, "ns/x")
	assert.Equal(t, "first", got.Title, "the first registration stays")

	err = reg.Register(Action{Definition: Definition{ID: "ns/nobody"}})
	assert.ErrorIs(t, err, codes.ConstraintViolation, "an action without body")

	err = reg.Register(Action{Definition: Definition{ID: "ns/y", Parameters: `{"type":"array"}`}, Run: body})
	assert.ErrorIs(t, err, codes.ConstraintViolation, "a root that is not an object")
	_, ok := getAction(reg, "ns/y")
	assert.False(t, ok)
}

func TestRegistryRegisterKeepsItsOwnCopyOfWrites(t *testing.T) {
	writes := []string{"plant", "bed"}
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/x", Writes: writes},
		Run:        func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil },
	}))
	writes[0] = "changed"
	got, _ := getAction(reg, "ns/x")
	assert.Equal(t, []string{"plant", "bed"}, got.Writes)
}

func TestRegistryDefinitionsAreSorted(t *testing.T) {
	reg := NewRegistry(nil)
	assert.Empty(t, reg.Definitions())
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	ids := []string{"zeta/a", "alpha/z", "alpha/b", "Beta/x", "alpha/B", "m/m", "_/a"}
	for _, id := range ids {
		require.NoError(t, reg.Register(Action{Definition: Definition{ID: id}, Run: body}))
	}
	var got []string
	for _, a := range reg.Definitions() {
		got = append(got, a.ID)
	}
	want := append([]string(nil), ids...)
	sort.Strings(want)
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"Beta/x", "_/a", "alpha/B", "alpha/b", "alpha/z", "m/m", "zeta/a"}, got, "byte order of the ids")
}

func TestRegistryRunNestedDepthDefault(t *testing.T) {
	// Without a fixture limit, an action calling itself forever is stopped
	// at defaultLimits.MaxCallDepth, with one entry per level.
	reg := NewRegistry(nil)
	var runs atomic.Int64
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/loop"},
		Run: func(ctx context.Context, _ map[string]any, tr *Trace) (any, error) {
			runs.Add(1)
			return tr.Call(ctx, "ns/loop", nil)
		},
	}))
	_, entry, err := call3(reg, context.Background(), "ns/loop", nil)
	assert.ErrorIs(t, err, codes.Internal, "the caller is not at fault")
	assert.NotErrorIs(t, err, codes.ConstraintViolation, "errors.Is sees the caller's code only")
	var r *Refusal
	require.ErrorAs(t, err, &r)
	innermost := r.Cause()
	for {
		nr, ok := innermost.(*Refusal)
		if !ok || nr.Cause() == nil {
			break
		}
		innermost = nr.Cause()
	}
	assert.ErrorIs(t, innermost, codes.ConstraintViolation, "the host finds the nested refusal down the causes")
	assert.Equal(t, int64(defaultLimits.MaxCallDepth+1), runs.Load(), "bodies run: the top level and each allowed nesting")
	levels := 0
	for e := &entry; ; levels++ {
		assert.Equal(t, OutcomeRefused, e.Outcome)
		if len(e.Steps) == 0 {
			assert.Equal(t, codes.ConstraintViolation, e.Error, "the call too deep")
			break
		}
		assert.Equal(t, codes.Internal, e.Error, "each level returned the refusal of the level below")
		require.Len(t, e.Steps, 1)
		e = e.Steps[0].Call
	}
	assert.Equal(t, defaultLimits.MaxCallDepth+1, levels, "nested entries below the top one")
}

func TestRunTraceRecordsNothingAfterItsBody(t *testing.T) {
	reg := NewRegistry(nil)
	var kept *Trace
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/leak"},
		Run: func(_ context.Context, _ map[string]any, tr *Trace) (any, error) {
			kept = tr
			return nil, nil
		},
	}))
	var lateRuns atomic.Int64
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/late"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			lateRuns.Add(1)
			return nil, nil
		},
	}))
	_, entry, err := call3(reg, context.Background(), "ns/leak", nil)
	require.NoError(t, err)
	assert.Error(t, kept.Command("late", nil))
	// A call that nothing would record does not run either.
	_, err = kept.Call(context.Background(), "ns/late", nil)
	assert.Error(t, err)
	assert.Zero(t, lateRuns.Load(), "the late nested call ran")
	assert.Empty(t, entry.Steps)
}

// TestConcurrentRegisterAndRun runs 8 goroutines at once; each registers
// its own actions, binds a small manifest and runs its own and shared
// actions many times, all recorded in one RunLog. Run it with -race.
func TestConcurrentRegisterAndRun(t *testing.T) {
	const workers, rounds = 8, 60
	log := NewRunLog()
	reg := NewRegistry(&Options{
		Store:   log,
		Resolve: fixtureResolver(map[string][]refFixture{"plant": {{Key: "k1", ID: "p1", DisplayName: map[string]string{"en": "Rose"}}}}),
	})
	echo := func(_ context.Context, p map[string]any, tr *Trace) (any, error) {
		if err := tr.Command(map[string]any{"op": "echo", "at": "${now()}"}, p); err != nil {
			return nil, err
		}
		return p, nil
	}
	shared := Definition{ID: "shared/echo", Parameters: `{"type":"object","properties":{"n":{"type":"integer"},"plant":{"type":"string","ref":"plant"}},"required":["n"]}`}
	require.NoError(t, reg.Register(Action{Definition: shared, Run: echo}))
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "shared/outer", Parameters: `{"type":"object","properties":{"n":{"type":"integer","default":0}}}`},
		Run: func(ctx context.Context, p map[string]any, tr *Trace) (any, error) {
			r, err := tr.Call(ctx, "shared/echo", map[string]any{"n": p["n"], "plant": "Rose"})
			if err != nil {
				return nil, err
			}
			return map[string]any{"inner": r}, nil
		},
	}))

	var wantDone, wantRefused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			own := fmt.Sprintf("w%d/echo", w)
			if err := reg.Register(Action{Definition: Definition{ID: own, Parameters: shared.Parameters}, Run: echo}); err != nil {
				t.Error(err)
				return
			}
			// Everybody also tries to take a shared name: exactly one wins
			// across all workers (checked below).
			_ = reg.Register(Action{Definition: Definition{ID: "shared/race"}, Run: echo})
			bound := fmt.Sprintf("w%d/bound", w)
			if err := reg.Bind([]Definition{{ID: bound}}, map[string]Body{bound: echo}); err != nil {
				t.Error(err)
				return
			}
			ctx := context.Background()
			for i := range rounds {
				id := []string{own, "shared/echo", "shared/outer", bound}[i%4]
				var params any = map[string]any{"n": i}
				if id == bound {
					params = nil
				}
				result, entry, err := call3(reg, ctx, id, params)
				if err != nil || result == nil || entry.Outcome != OutcomeDone {
					t.Errorf("%s: %v", id, err)
					return
				}
				wantDone.Add(1)
				// A refused call: the wrong type.
				_, entry, err = call3(reg, ctx, own, []byte(`{"n":"x"}`))
				if !errors.Is(err, codes.InvalidParameters) || entry.Parameters != `{"n":"x"}` {
					t.Errorf("%s refused: %v %q", own, err, entry.Parameters)
					return
				}
				wantRefused.Add(1)
				_ = reg.Definitions()
			}
		}()
	}
	close(start)
	wg.Wait()

	entries := entriesOf(log.Records())
	require.Len(t, entries, int(wantDone.Load()+wantRefused.Load()))
	assert.Equal(t, int64(workers*rounds), wantDone.Load())
	done, refused := 0, 0
	for _, e := range entries {
		checkRunEntryShape(t, e)
		switch e.Outcome {
		case OutcomeDone:
			done++
			if e.Action == "shared/outer" {
				require.Len(t, e.Steps, 1)
				assert.Contains(t, e.Steps[0].Call.Parameters, `"plant":"k1"`, "the ref resolved in the nested call")
			}
		case OutcomeRefused:
			refused++
			assert.Equal(t, codes.InvalidParameters, e.Error)
		}
	}
	assert.Equal(t, int(wantDone.Load()), done)
	assert.Equal(t, int(wantRefused.Load()), refused)
	assert.Len(t, reg.Definitions(), 2+1+2*workers, "shared, the raced name once, own and bound per worker")
}

// TestConcurrentBindAndRegisterSameID races Bind against Register on the
// same id: exactly one of them may win, never both.
func TestConcurrentBindAndRegisterSameID(t *testing.T) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	for i := range 200 {
		reg := NewRegistry(nil)
		id := fmt.Sprintf("ns/x%d", i)
		var errReg, errBind error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			errReg = reg.Register(Action{Definition: Definition{ID: id, Title: "register"}, Run: body})
		}()
		go func() {
			defer wg.Done()
			errBind = reg.Bind([]Definition{{ID: id, Title: "bind"}}, map[string]Body{id: body})
		}()
		wg.Wait()
		require.True(t, (errReg == nil) != (errBind == nil), "exactly one wins: register %v, bind %v", errReg, errBind)
		got, _ := getAction(reg, id)
		if errReg == nil {
			require.Equal(t, "register", got.Title)
			require.ErrorIs(t, errBind, codes.DuplicateName)
		} else {
			require.Equal(t, "bind", got.Title)
			require.ErrorIs(t, errReg, codes.DuplicateName)
		}
	}
}

func readManifestFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "manifests", name))
	require.NoError(t, err)
	return b
}

// manifestTestBodies gives each id a body that returns its id.
func manifestTestBodies(ids ...string) map[string]Body {
	m := map[string]Body{}
	for _, id := range ids {
		m[id] = func(_ context.Context, p map[string]any, tr *Trace) (any, error) {
			return map[string]any{"ran": tr.Action(), "params": p}, nil
		}
	}
	return m
}

func TestBindManifest(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		defs, err := DecodeManifest(readManifestFile(t, "good.json"))
		require.NoError(t, err)
		require.Len(t, defs, 3)
		reg := NewRegistry(nil)
		require.NoError(t, reg.Bind(defs, manifestTestBodies("garden/plant", "garden/list", "garden/audit")))
		var ids []string
		for _, a := range reg.Definitions() {
			ids = append(ids, a.ID)
		}
		assert.Equal(t, []string{"garden/audit", "garden/list", "garden/plant"}, ids)
		list, _ := getAction(reg, "garden/list")
		assert.True(t, list.EffectOf() == EffectRead)
		audit, _ := getAction(reg, "garden/audit")
		assert.False(t, audit.offers(SurfaceMCP))
		assert.Equal(t, []string{"plant"}, mustGetAction(t, reg, "garden/plant").Writes)

		result, entry, err := call3(reg, context.Background(), "garden/plant", map[string]any{"species": "rose"})
		require.NoError(t, err)
		assert.Equal(t, `{"count":1,"species":"rose"}`, entry.Parameters, "the manifest's default applies")
		assert.Equal(t, "garden/plant", result.(map[string]any)["ran"])
		_, _, err = call3(reg, context.Background(), "garden/plant", map[string]any{})
		assert.ErrorIs(t, err, codes.InvalidParameters, "the manifest's schema applies")
	})

	t.Run("parameters as JSON text", func(t *testing.T) {
		defs, err := DecodeManifest(readManifestFile(t, "params_text.json"))
		require.NoError(t, err)
		reg := NewRegistry(nil)
		require.NoError(t, reg.Bind(defs, manifestTestBodies("garden/water")))
		_, entry, err := call3(reg, context.Background(), "garden/water", map[string]any{"plant": "p1"})
		require.NoError(t, err)
		assert.Equal(t, `{"litres":0.5,"plant":"p1"}`, entry.Parameters)
		_, _, err = call3(reg, context.Background(), "garden/water", map[string]any{"plant": "p1", "litres": -1})
		assert.ErrorIs(t, err, codes.InvalidParameters)
	})

	t.Run("every missing body and every stray body in one error", func(t *testing.T) {
		defs, err := DecodeManifest(readManifestFile(t, "unbound.json"))
		require.NoError(t, err)
		reg := NewRegistry(nil)
		// garden/plant and garden/list have bodies; garden/prune and
		// garden/harvest do not; garden/weed and garden/mow have no
		// definition.
		err = reg.Bind(defs, manifestTestBodies("garden/plant", "garden/list", "garden/weed", "garden/mow"))
		require.Error(t, err)
		assert.ErrorIs(t, err, codes.ConstraintViolation)
		var r *Refusal
		require.True(t, errors.As(err, &r))
		assert.Equal(t, []Issue{
			{Path: "/1", Keyword: "body", Message: "the definition garden/prune has no body"},
			{Path: "/3", Keyword: "body", Message: "the definition garden/harvest has no body"},
			{Path: "/bodies/garden~1mow", Keyword: "definition", Message: "the body garden/mow has no definition"},
			{Path: "/bodies/garden~1weed", Keyword: "definition", Message: "the body garden/weed has no definition"},
		}, r.Issues)
		assert.Empty(t, reg.Definitions(), "nothing is registered when the manifest does not bind")
	})

	t.Run("a refused definition registers nothing", func(t *testing.T) {
		defs := []Definition{{ID: "garden/ok"}, {ID: "bad id"}, {ID: "garden/schema", Parameters: `{"type":"object","frobnicate":1}`}}
		reg := NewRegistry(nil)
		err := reg.Bind(defs, manifestTestBodies("garden/ok", "bad id", "garden/schema"))
		assert.ErrorIs(t, err, codes.ConstraintViolation)
		var r *Refusal
		require.True(t, errors.As(err, &r))
		require.Len(t, r.Issues, 2)
		assert.Equal(t, "/1/id", r.Issues[0].Path, "issues point into the manifest")
		assert.Equal(t, "/2/parameters/frobnicate", r.Issues[1].Path, "schema faults are under /parameters")
		assert.Empty(t, reg.Definitions())
	})

	t.Run("an id listed twice or already taken", func(t *testing.T) {
		reg := NewRegistry(nil)
		err := reg.Bind([]Definition{{ID: "garden/a"}, {ID: "garden/a"}}, manifestTestBodies("garden/a"))
		assert.ErrorIs(t, err, codes.DuplicateName)
		assert.Empty(t, reg.Definitions())

		require.NoError(t, reg.Register(Action{Definition: Definition{ID: "garden/taken"}, Run: manifestTestBodies("x/y")["x/y"]}))
		err = reg.Bind([]Definition{{ID: "garden/new"}, {ID: "garden/taken"}}, manifestTestBodies("garden/new", "garden/taken"))
		assert.ErrorIs(t, err, codes.DuplicateName)
		var r *Refusal
		require.True(t, errors.As(err, &r))
		require.Len(t, r.Issues, 1)
		assert.Equal(t, "/1/id", r.Issues[0].Path, "the taken id is reported at its definition")
		_, ok := getAction(reg, "garden/new")
		assert.False(t, ok, "all or none")
	})

	t.Run("DecodeManifest refuses", func(t *testing.T) {
		for _, name := range []string{"refused_unknown_field.json", "refused_kind.json", "refused_exposure.json"} {
			t.Run(name, func(t *testing.T) {
				defs, err := DecodeManifest(readManifestFile(t, name))
				assert.Error(t, err)
				assert.Nil(t, defs)
			})
		}
	})
}

func mustGetAction(t *testing.T, reg *Registry, id string) Action {
	t.Helper()
	a, ok := getAction(reg, id)
	require.True(t, ok, id)
	return a
}

// getAction returns the action registered under id or the alias id, with
// its policy slices copied, as a host would see it.
func getAction(reg *Registry, id string) (Action, bool) {
	r, ok := reg.lookup(id)
	if !ok {
		return Action{}, false
	}
	a := r.action
	a.Definition.clonePolicy()
	return a, true
}

func TestEntryWriterWritesCanonicalLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewEntryWriter(&buf)
	reg := NewRegistry(&Options{OnRecord: w.Write})
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/echo", Parameters: `{"type":"object","properties":{"b":{"default":"\u2028<&>"},"a":{}}}`},
		Run: func(ctx context.Context, p map[string]any, tr *Trace) (any, error) {
			if err := tr.Command(map[string]any{"z": 1, "a": "${now()}"}, map[string]any{"ok": true}); err != nil {
				return nil, err
			}
			if _, err := tr.Call(ctx, "ns/missing", nil); err == nil {
				return nil, errors.New("the nested call should be refused")
			}
			return p, nil
		},
	}))
	var want []Record
	for _, p := range []any{map[string]any{"a": 1.5}, []byte(`{"a":"x\ny"}`), []byte(`{"a":`), nil} {
		res, _ := reg.Run(context.Background(), Call{Action: "ns/echo", Params: p})
		want = append(want, res.Records...)
	}
	res, _ := reg.Run(context.Background(), Call{Action: "ns/none"})
	want = append(want, res.Records...)
	require.NoError(t, w.Err())

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, len(want))
	require.True(t, strings.HasSuffix(buf.String(), "\n"))
	for i, line := range lines {
		var back Record
		require.NoError(t, json.Unmarshal([]byte(line), &back), line)
		again, err := CanonicalJSON(back)
		require.NoError(t, err)
		assert.Equal(t, line, string(again), "line %d is canonical and round-trips", i)
		orig, err := CanonicalJSON(want[i])
		require.NoError(t, err)
		assert.Equal(t, string(orig), line, "line %d is the record Run returned", i)
		checkRunEntryShape(t, back.Entry)
	}
	assert.Contains(t, lines[0], `"command":{"a":"${now()}","z":1}`)
	assert.Contains(t, lines[0], "\u2028<&>", "no HTML escaping, U+2028 as it is")
}

type failingEntryWriter struct{ writes int }

func (f *failingEntryWriter) Write(p []byte) (int, error) {
	f.writes++
	return 0, errors.New("disk full")
}

func TestEntryWriterStopsAfterAnError(t *testing.T) {
	fw := &failingEntryWriter{}
	w := NewEntryWriter(fw)
	w.Write(Record{Entry: RunEntry{Action: "ns/a", Parameters: "{}", Steps: []RunStep{}, Outcome: OutcomeDone}})
	w.Write(Record{Entry: RunEntry{Action: "ns/b", Parameters: "{}", Steps: []RunStep{}, Outcome: OutcomeDone}})
	assert.EqualError(t, w.Err(), "disk full")
	assert.Equal(t, 1, fw.writes, "nothing is written after the first error")
}

func TestEntryWriterConcurrentLinesDoNotInterleave(t *testing.T) {
	var buf bytes.Buffer
	w := NewEntryWriter(&buf)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				w.Write(Record{Entry: RunEntry{Action: fmt.Sprintf("g%d/a%d", g, i), Parameters: `{"pad":"` + strings.Repeat("x", 200) + `"}`, Steps: []RunStep{}, Outcome: OutcomeDone}})
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.Err())
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 400)
	for _, l := range lines {
		var rec Record
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
	}
}

func TestRunLogEntriesIsACopy(t *testing.T) {
	log := NewRunLog()
	assert.Empty(t, entriesOf(log.Records()))
	log.add(Record{Entry: RunEntry{Action: "ns/a", Parameters: "{}", Outcome: OutcomeDone, Steps: []RunStep{
		{Command: json.RawMessage(`{"op":"x"}`), Result: "1"},
		{Call: &RunEntry{Action: "ns/b", Parameters: "{}", Steps: []RunStep{}, Outcome: OutcomeDone}},
	}}})
	log.add(Record{Entry: RunEntry{Action: "ns/c", Parameters: "{}", Outcome: OutcomeRefused, Error: "internal", Steps: []RunStep{}}})

	got := entriesOf(log.Records())
	require.Len(t, got, 2)
	assert.Equal(t, "ns/a", got[0].Action)
	assert.Equal(t, "ns/c", got[1].Action, "in the order recorded")

	// Changing the copy, at any depth, leaves the log as it was.
	got[0].Action = "changed"
	got[0].Steps[0].Result = "changed"
	got[0].Steps[0].Command[2] = 'X'
	got[0].Steps[1].Call.Action = "changed"
	_ = append(got[:1], RunEntry{Action: "appended"})

	again := entriesOf(log.Records())
	require.Len(t, again, 2)
	assert.Equal(t, "ns/a", again[0].Action)
	assert.Equal(t, "1", again[0].Steps[0].Result)
	assert.Equal(t, `{"op":"x"}`, string(again[0].Steps[0].Command))
	assert.Equal(t, "ns/b", again[0].Steps[1].Call.Action)
	assert.Equal(t, "ns/c", again[1].Action)

	// Nor does changing the entry given to Record.
	given := RunEntry{Action: "ns/e", Parameters: "{}", Outcome: OutcomeDone, Steps: []RunStep{{Command: json.RawMessage(`{"op":"y"}`)}}}
	log.add(Record{Entry: given})
	given.Steps[0].Command[2] = 'Z'
	assert.Equal(t, `{"op":"y"}`, string(entriesOf(log.Records())[2].Steps[0].Command))

	// Recording after a read does not change the copy already taken.
	log.add(Record{Entry: RunEntry{Action: "ns/d", Parameters: "{}", Outcome: OutcomeDone, Steps: []RunStep{}}})
	assert.Len(t, again, 2)
	assert.Len(t, entriesOf(log.Records()), 4)
}

func TestRunLogConcurrentRecord(t *testing.T) {
	log := NewRunLog()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				log.add(Record{Entry: RunEntry{Action: "ns/a", Parameters: "{}", Steps: []RunStep{}, Outcome: OutcomeDone}})
				_ = entriesOf(log.Records())
			}
		}()
	}
	wg.Wait()
	assert.Len(t, entriesOf(log.Records()), 800)
}

// call3 runs one call of id through reg as the host itself (no caller)
// and returns its result, entry and error, the three values most tests
// look at.
func call3(reg *Registry, ctx context.Context, id string, params any) (any, RunEntry, error) {
	res, err := reg.Run(ctx, Call{Action: id, Params: params})
	return res.Value, res.Entry(), err
}

// callAs is call3 as caller c.
func callAs(reg *Registry, ctx context.Context, c *Caller, id string, params any) (any, RunEntry, error) {
	res, err := reg.Run(ctx, Call{Action: id, Params: params, Caller: c})
	return res.Value, res.Entry(), err
}

// batch3 runs b through reg as caller c (nil: the host) and returns its
// result, the entries of the calls made and its error.
func batch3(reg *Registry, ctx context.Context, b Batch, c *Caller) (any, []RunEntry, error) {
	res, err := reg.Run(ctx, Call{Batch: &b, Caller: c})
	return res.Value, entriesOf(res.Records), err
}

// entriesOf is the entries of records, in order.
func entriesOf(recs []Record) []RunEntry {
	var out []RunEntry
	for _, r := range recs {
		out = append(out, r.Entry)
	}
	return out
}

// confirm3 confirms the pending change id as caller c.
func confirm3(reg *Registry, ctx context.Context, id string, c *Caller) (any, RunEntry, error) {
	res, err := reg.Decide(ctx, Decision{Change: id, Confirm: true, Caller: onUI(c)})
	return res.Value, res.Entry(), err
}

// reject rejects the pending change id as caller c.
func reject(reg *Registry, ctx context.Context, id string, c *Caller) error {
	_, err := reg.Decide(ctx, Decision{Change: id, Caller: onUI(c)})
	return err
}

// onUI is c as the host's own screen sees the same person: where a
// decision comes from by default. Nil stays nil.
func onUI(c *Caller) *Caller {
	if c == nil {
		return nil
	}
	cp := c.clone()
	cp.Surface = SurfaceUI
	return &cp
}

// paramsOf is the compiled parameters schema of the action id, for tests.
func (r *Registry) paramsOf(id string) *ParameterSchema {
	reg, ok := r.lookup(id)
	if !ok {
		return nil
	}
	return reg.params
}
