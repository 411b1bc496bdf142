// Decoding and checking a batch before any call: the grammar, the limits
// and the placeholder names (docs/batches.md).

package actions

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/placeholder"
)

func decodeBatch(data []byte, limits Limits) (Batch, error) {
	limits = limits.withDefaults()
	v, err := ijson.Decode(data, limits.MaxParamDepth+batchDepth)
	if err != nil {
		return Batch{}, decodeRefusal(err, data, limits)
	}
	b, shape := batchOfJSON(v)
	if _, err := checkBatch(b, limits, shape); err != nil {
		return Batch{}, err
	}
	return b, nil
}

// UnmarshalJSON decodes a batch as [Registry.DecodeBatch] does, with its
// *Refusal, but with no bound on the count of steps or placeholders: no
// registry is at hand to say what they are. [Registry.Run] checks those
// against the registry's limits before any call.
func (b *Batch) UnmarshalJSON(data []byte) error {
	d, err := decodeBatch(data, unmarshalLimits())
	if err != nil {
		return err
	}
	*b = d
	return nil
}

// unmarshalLimits are the limits of Batch.UnmarshalJSON: the default
// depth (encoding/json bounds it too), no bound on counts.
func unmarshalLimits() Limits {
	return Limits{
		MaxBatchCalls:        math.MaxInt,
		MaxPlaceholders:      math.MaxInt,
		MaxPlaceholderLength: math.MaxInt,
		MaxParamBytes:        math.MaxInt,
	}.withDefaults()
}

func decodeRefusal(err error, data []byte, limits Limits) *Refusal {
	var je *ijson.Error
	if !errors.As(err, &je) {
		return refusef(codes.InvalidScriptStep, "the batch is not JSON",
			Issue{Path: "", Keyword: "json", Message: "not JSON text"})
	}
	is := Issue{Path: je.Pointer, Keyword: "json"}
	switch je.Reason {
	case ijson.DuplicateName:
		is.Keyword = lastToken(je.Pointer)
		is.Message = "this key appears twice (RFC 7493 §2.3)"
	case ijson.TooDeep:
		is.Message = fmt.Sprintf("nested deeper than %d levels in a step's with", limits.MaxParamDepth)
	default:
		is.Message = textFault(je, data, limits.MaxParamDepth)
	}
	return refusef(codes.InvalidScriptStep, "the batch is not I-JSON text", is)
}

// batchShape holds what only JSON text can get wrong: keys and types that
// a Batch built in Go cannot hold.
type batchShape struct {
	top    []Issue         // keys of the batch object, "commands" missing or not an array
	steps  map[int][]Issue // a step's own keys and the types of call, with, as
	result []Issue         // "result" that is not a string, or empty
}

// batchOfJSON reads the decoded batch into a Batch, noting every fault of
// shape. Faulty fields are left empty.
func batchOfJSON(v any) (Batch, *batchShape) {
	shape := &batchShape{steps: map[int][]Issue{}}
	var b Batch
	obj, ok := v.(map[string]any)
	if !ok {
		shape.top = append(shape.top, Issue{Path: "", Keyword: "commands",
			Message: "a batch is an object with commands and, optionally, result"})
		return b, shape
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch k {
		case "commands", "result":
		case "parameters":
			shape.top = append(shape.top, Issue{Path: "/parameters", Keyword: k,
				Message: "a batch takes no parameters: a script with parameters is run by the engine's script runner"})
		default:
			shape.top = append(shape.top, Issue{Path: ijson.AppendToken("", k), Keyword: k,
				Message: "a batch holds only commands and result"})
		}
	}
	switch cmds := obj["commands"].(type) {
	case []any:
		b.Steps = make([]Step, len(cmds))
		for i, c := range cmds {
			b.Steps[i] = stepOfJSON(c, i, shape)
		}
	case nil:
		msg := "must be an array of steps"
		if _, present := obj["commands"]; !present {
			msg = "is required: the array of steps"
		}
		shape.top = append(shape.top, Issue{Path: "/commands", Keyword: "commands", Message: msg})
	default:
		shape.top = append(shape.top, Issue{Path: "/commands", Keyword: "commands", Message: "must be an array of steps"})
	}
	if r, present := obj["result"]; present {
		if s, ok := r.(string); ok && s != "" {
			b.Result = s
		} else {
			shape.result = append(shape.result, Issue{Path: "/result", Keyword: "result",
				Message: "must be one placeholder naming a result, such as ${name}"})
		}
	}
	return b, shape
}

// engineSteps are the script keys that the engine's runner handles and a
// call-only batch refuses, with the reason given to the author.
var engineSteps = map[string]string{
	"when": "a condition (when) is run by the engine's script runner; a batch step holds only call, with and as",
	"each": "a loop (each) is run by the engine's script runner; a batch step holds only call, with and as",
	"fail": "a fail step is run by the engine's script runner; a batch step holds only call, with and as",
}

func stepOfJSON(v any, i int, shape *batchShape) Step {
	at := "/commands/" + strconv.Itoa(i)
	var s Step
	obj, ok := v.(map[string]any)
	if !ok {
		shape.steps[i] = append(shape.steps[i], Issue{Path: at, Keyword: "commands",
			Message: "a step must be an object with call, with and as"})
		return s
	}
	var issues []Issue
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch k {
		case "call", "with", "as":
			continue
		}
		msg, known := engineSteps[k]
		if !known {
			msg = "a batch step holds only call, with and as; commands and other steps are run by the engine's script runner"
		}
		issues = append(issues, Issue{Path: ijson.AppendToken(at, k), Keyword: k, Message: msg})
	}
	if c, present := obj["call"]; present {
		if str, ok := c.(string); ok {
			s.Call = str
		} else {
			issues = append(issues, Issue{Path: at + "/call", Keyword: "call", Message: "must be a string: the id of the action to call"})
		}
	}
	if w, present := obj["with"]; present {
		if m, ok := w.(map[string]any); ok {
			s.With = m
		} else {
			issues = append(issues, Issue{Path: at + "/with", Keyword: "with", Message: "must be an object: the parameters of the call"})
		}
	}
	if a, present := obj["as"]; present {
		if str, ok := a.(string); ok && str != "" {
			s.As = str
		} else {
			issues = append(issues, Issue{Path: at + "/as", Keyword: "as", Message: "must be an identifier ([A-Za-z_][A-Za-z0-9_]*)"})
		}
	}
	if len(issues) > 0 {
		shape.steps[i] = issues
	}
	return s
}

// batchPlan is a checked batch, ready to run.
type batchPlan struct {
	steps  []plannedStep
	result string         // the result placeholder, or ""
	names  map[string]int // as → step
}

type plannedStep struct {
	call string
	with map[string]any // JSON values only
	refs bool           // with holds a path placeholder
	// keep is set when a later step or the result reads this step's
	// result: a result nobody reads is not kept.
	keep bool
	// drop lists the steps whose results this step reads for the last
	// time; they are let go once its parameters are built, so that a long
	// batch holds only the results still to be read.
	drop []int32
	// reads are the names its placeholders read, each once with its
	// step, in the order of their first placeholders: looked up here
	// rather than in the batch's map of names, which a long batch spreads
	// over far more memory.
	reads []stepRead
}

// stepRead is a name a step's placeholders read, and the step setting it.
type stepRead struct {
	name string
	step int32
}

// stepRef is a path placeholder whose name is not set by an earlier step.
type stepRef struct {
	step    int // len(steps) for "result"
	pointer string
	keyword string
	name    string
}

// issueList collects issues up to maxBatchIssues.
type issueList struct {
	issues []Issue
	more   bool
}

func (l *issueList) add(is ...Issue) {
	for _, x := range is {
		if len(l.issues) == maxBatchIssues {
			l.more = true
			return
		}
		l.issues = append(l.issues, x)
	}
}

func (l *issueList) refusal(code codes.Code, message string) *Refusal {
	if l.more {
		message += fmt.Sprintf(" (the first %d faults are listed)", maxBatchIssues)
	}
	return refusef(code, message, l.issues...)
}

func placeholderLimits(l Limits) placeholder.Limits {
	return placeholder.Limits{
		MaxLength:       l.MaxPlaceholderLength,
		MaxPlaceholders: l.MaxPlaceholders,
		MaxDepth:        l.MaxParamDepth,
		MaxBytes:        l.MaxParamBytes,
	}
}

// checkBatch checks a whole batch, limits already defaulted, and plans its
// run. shape is nil for a Batch built in Go, whose With values are copied
// into JSON values when they are not such values already; a decoded
// batch's are.
func checkBatch(b Batch, limits Limits, shape *batchShape) (*batchPlan, error) {
	var faults issueList
	if shape != nil {
		faults.add(shape.top...)
	}
	if len(b.Steps) > limits.MaxBatchCalls {
		faults.add(Issue{Path: "/commands", Keyword: "commands",
			Message: fmt.Sprintf("more than %d steps in one batch", limits.MaxBatchCalls)})
		return nil, faults.refusal(codes.InvalidScriptStep, "the batch cannot run as it is")
	}
	pl := placeholderLimits(limits)
	plan := &batchPlan{steps: make([]plannedStep, len(b.Steps))}
	names := make(map[string]int, len(b.Steps)) // as → step
	lastRead := make([]int32, len(b.Steps))     // step → last step reading its result, or -1
	for i := range lastRead {
		lastRead[i] = -1
	}
	var (
		unresolved []stepRef
		reads      = make([]stepRead, 0, len(b.Steps)) // every step's, in order (a chain reads one name a step); see plannedStep.reads
		readsFrom  = make([]int32, len(b.Steps)+1)
	)
	for i, s := range b.Steps {
		readsFrom[i] = int32(len(reads))
		if shape != nil && len(shape.steps[i]) > 0 {
			faults.add(shape.steps[i]...)
			continue
		}
		if s.Call == "" {
			faults.add(Issue{Path: stepPointer(i) + "/call", Keyword: "call", Message: "is required: the id of the action to call"})
		}
		if s.As != "" {
			if !isIdentifier(s.As) {
				faults.add(Issue{Path: stepPointer(i) + "/as", Keyword: "as", Message: "must be an identifier ([A-Za-z_][A-Za-z0-9_]*)"})
			} else if j, taken := names[s.As]; taken {
				faults.add(Issue{Path: stepPointer(i) + "/as", Keyword: "as", Message: "is already the name of step " + strconv.Itoa(j)})
			} else {
				names[s.As] = i
			}
		}
		with, err := stepWith(s.With, limits, shape == nil)
		if err != nil {
			faults.add(withIssue(stepPointer(i), err))
			continue
		}
		found, err := placeholder.Paths(with, pl)
		if err != nil {
			faults.add(withIssue(stepPointer(i), err))
			continue
		}
		for _, r := range found {
			if j, set := names[r.Name]; set && j < i {
				if lastRead[j] != int32(i) { // each name once: a step's lookups scan its reads
					reads = append(reads, stepRead{name: r.Name, step: int32(j)})
				}
				lastRead[j] = int32(i)
			} else if len(unresolved) <= maxBatchIssues { // one more tells there are more
				unresolved = append(unresolved, stepRef{step: i, pointer: stepPointer(i) + "/with" + r.Pointer, keyword: "with", name: r.Name})
			}
		}
		plan.steps[i] = plannedStep{call: s.Call, with: with, refs: len(found) > 0}
	}
	if shape != nil && len(shape.result) > 0 {
		faults.add(shape.result...)
	} else if b.Result != "" {
		name, is := resultName(b.Result, pl)
		switch j, set := names[name]; {
		case is != nil:
			faults.add(*is)
		case set:
			plan.result = b.Result
			lastRead[j] = int32(len(b.Steps))
		default:
			unresolved = append(unresolved, stepRef{step: len(b.Steps), pointer: "/result", keyword: "result", name: name})
		}
	}
	if len(faults.issues) > 0 {
		return nil, faults.refusal(codes.InvalidScriptStep, "the batch cannot run as it is")
	}
	if len(unresolved) > 0 {
		return nil, unknownRefs(unresolved, names)
	}
	readsFrom[len(b.Steps)] = int32(len(reads))
	for i := range plan.steps {
		plan.steps[i].reads = reads[readsFrom[i]:readsFrom[i+1]:readsFrom[i+1]]
	}
	plan.names = names
	planDrops(plan.steps, lastRead)
	return plan, nil
}

// planDrops marks the results to keep and, for each step, the results it
// reads for the last time. The lists share one array (counting sort by
// reader), so that planning costs no allocation per step.
func planDrops(steps []plannedStep, lastRead []int32) {
	n := int32(len(steps))
	start := make([]int32, n+1)
	for j, r := range lastRead {
		if r >= 0 {
			steps[j].keep = true
		}
		if r >= 0 && r < n {
			start[r+1]++
		}
	}
	for i := int32(1); i <= n; i++ {
		start[i] += start[i-1]
	}
	list := make([]int32, start[n])
	next := slices.Clone(start[:n])
	for j, r := range lastRead {
		if r >= 0 && r < n {
			list[next[r]] = int32(j)
			next[r]++
		}
	}
	for i := range steps {
		steps[i].drop = list[start[i]:start[i+1]:start[i+1]]
	}
}

// stepWith returns a step's parameters as JSON values: nil as {}, and, when
// convert is set, a copy in JSON's Go types bounded by MaxParamDepth unless
// they are such values already (as after DecodeBatch). The batch never
// changes the value it returns, and each call copies it again.
func stepWith(w map[string]any, limits Limits, convert bool) (map[string]any, error) {
	if w == nil {
		return map[string]any{}, nil
	}
	if !convert || plainJSON(w, limits.MaxParamDepth) {
		return w, nil
	}
	c, err := copyParamsValue(w, limits.MaxParamDepth)
	if err != nil {
		return nil, err
	}
	return c.(map[string]any), nil
}

// plainJSON reports whether v holds only what copyParamsValue would keep
// as it is: JSON's Go types, UTF-8 strings and names, JSON number text,
// objects and arrays nested at most depth deep. It allocates nothing.
func plainJSON(v any, depth int) bool {
	switch v := v.(type) {
	case nil, bool:
		return true
	case string:
		return utf8.ValidString(v)
	case json.Number:
		return ijson.ValidNumber(string(v))
	case map[string]any:
		if depth <= 0 {
			return false
		}
		for k, e := range v {
			if !utf8.ValidString(k) || !plainJSON(e, depth-1) {
				return false
			}
		}
		return true
	case []any:
		if depth <= 0 {
			return false
		}
		for _, e := range v {
			if !plainJSON(e, depth-1) {
				return false
			}
		}
		return true
	}
	return false
}

// placeholderMessage says what limit a placeholder passed, without the
// placeholder itself.
func placeholderMessage(pe *placeholder.Error) string {
	switch pe.Kind {
	case placeholder.TooLong:
		return fmt.Sprintf("a placeholder is longer than %d bytes", pe.Limit)
	case placeholder.TooMany:
		return fmt.Sprintf("more than %d placeholders in one step", pe.Limit)
	case placeholder.TooDeep:
		return fmt.Sprintf("a value would nest the parameters deeper than %d levels", pe.Limit)
	case placeholder.TooLarge:
		return fmt.Sprintf("the placeholders' values would pass %d bytes (each copy, walk and text counts)", pe.Limit)
	}
	return "the placeholders cannot be read"
}

// withIssue turns a fault found in a step's with (by copyParamsValue or the
// placeholder package) into an issue at its pointer in the batch.
func withIssue(at string, err error) Issue {
	is := Issue{Path: at + "/with", Keyword: "with"}
	var r *Refusal
	var pe *placeholder.Error
	switch {
	case errors.As(err, &pe):
		is.Path += pe.Pointer
		is.Message = placeholderMessage(pe)
	case errors.As(err, &r) && len(r.Issues) > 0:
		is.Path += r.Issues[0].Path
		is.Message = r.Issues[0].Message
	default:
		is.Message = "is not a JSON object"
	}
	return is
}

// resultName checks a batch's result placeholder: one path and nothing
// else, within the length limit. It returns the path's name.
func resultName(s string, pl placeholder.Limits) (string, *Issue) {
	is := &Issue{Path: "/result", Keyword: "result"}
	if !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") || len(s) < 3 {
		is.Message = "must be one placeholder naming a result, such as ${name}"
		return "", is
	}
	inner := s[2 : len(s)-1]
	if len(inner) > pl.MaxLength {
		is.Message = fmt.Sprintf("a placeholder is longer than %d bytes", pl.MaxLength)
		return "", is
	}
	p, ok := placeholder.ParsePath(inner)
	if !ok || strings.IndexByte(inner, '}') >= 0 {
		is.Message = "must be one placeholder naming a result, such as ${name}"
		return "", is
	}
	return p.Name, nil
}

// unknownRefs refuses the paths whose name no earlier step sets.
func unknownRefs(refs []stepRef, names map[string]int) *Refusal {
	var faults issueList
	for _, r := range refs {
		is := Issue{Path: r.pointer, Keyword: r.keyword}
		switch j, set := names[r.name]; {
		case !set:
			is.Message = "no step of the batch is named " + r.name
		case j == r.step:
			is.Message = "a step cannot use its own result, " + r.name
		default:
			is.Message = fmt.Sprintf("%s is set only later, by step %d", r.name, j)
		}
		faults.add(is)
	}
	return faults.refusal(codes.UnknownReference, "a placeholder names a result that no earlier step sets")
}

// clone copies b deeply, its "with" values as JSON's Go types: a held
// batch is the caller's no more.
func (b Batch) clone() Batch {
	text, err := exactText(b)
	if err != nil {
		return b
	}
	c, err := decodeBatch([]byte(text), unmarshalLimits())
	if err != nil {
		return b
	}
	return c
}
