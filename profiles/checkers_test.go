package profiles

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// The rule checkers: one per provider, written from the providers' docs
// (see docs/profiles.md) apart from the profiles' own tables, so that a
// profile that drifts from its provider is caught. Each returns the rules
// a tool breaks, as "rule: where" strings; none means the tool passes.

var (
	openAIName    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	geminiName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$`)
	mcpName       = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	// checkAnthropicKeyRule is the rule on input_schema property keys: a request
	// with one key outside it is refused whole.
	checkAnthropicKeyRule = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)
)

// openAIMaxDescription is the longest function description OpenAI takes.
const checkOpenAIDescription = 1024

// checkerKeywords are the keywords each checker lets through.
var (
	checkOpenAIStrictKeys = keySet("type properties required additionalProperties items anyOf enum const $defs $ref description title pattern format multipleOf minimum maximum exclusiveMinimum exclusiveMaximum minItems maxItems")
	checkOpenAIFormats    = keySet("date-time time date duration email hostname ipv4 ipv6 uuid")
	checkAnthropicStrict  = keySet("type properties required additionalProperties items anyOf allOf enum const default $defs $ref description title pattern format minItems")
	checkAnthropicFormats = keySet("date-time time date duration email hostname uri ipv4 ipv6 uuid")
	checkGeminiJSONKeys   = keySet("$id $defs $ref $anchor type format title description enum items prefixItems minItems maxItems minimum maximum anyOf oneOf properties additionalProperties required")
	checkGeminiOpenAPI    = keySet("type format title description nullable enum minItems maxItems properties required minProperties maxProperties minLength maxLength pattern example anyOf propertyOrdering default items minimum maximum")
	checkGeminiTypes      = keySet("STRING NUMBER INTEGER BOOLEAN ARRAY OBJECT")
)

func keySet(s string) map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(s) {
		m[k] = true
	}
	return m
}

// checkTool dispatches to the checker of profile p.
func checkTool(p Profile, tool map[string]any) []string {
	switch p {
	case MCP:
		return checkMCPTool(tool)
	case OpenAIChat, OpenAIResponses:
		return checkOpenAITool(p, tool)
	case Anthropic, AnthropicStrict:
		return checkAnthropicTool(tool)
	case Gemini:
		return checkGeminiTool(tool)
	case GeminiOpenAPI:
		return checkGeminiOpenAPITool(tool)
	}
	return []string{"unknown profile"}
}

// checkRequest checks what applies to a whole request (Anthropic's caps).
func checkRequest(p Profile, tools []map[string]any) []string {
	var out []string
	for _, t := range tools {
		out = append(out, checkTool(p, t)...)
	}
	if p == Anthropic || p == AnthropicStrict {
		out = append(out, checkAnthropicCaps(tools)...)
	}
	return out
}

func onlyKeys(m map[string]any, allowed ...string) []string {
	var out []string
	for k := range m {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			out = append(out, "unknown field: "+k)
		}
	}
	sort.Strings(out)
	return out
}

// eachSchema calls fn with every schema object under s, s included, and
// its pointer.
func eachSchema(s any, ptr string, fn func(m map[string]any, ptr string)) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	fn(m, ptr)
	for k, v := range m {
		switch k {
		case "properties", "$defs", "patternProperties", "dependentSchemas":
			if mm, ok := v.(map[string]any); ok {
				for n, sub := range mm {
					eachSchema(sub, ptr+"/"+k+"/"+n, fn)
				}
			}
		case "anyOf", "oneOf", "allOf", "prefixItems":
			if a, ok := v.([]any); ok {
				for i, sub := range a {
					eachSchema(sub, fmt.Sprintf("%s/%s/%d", ptr, k, i), fn)
				}
			}
		case "items", "additionalProperties", "not", "if", "then", "else", "contains",
			"propertyNames", "unevaluatedItems", "unevaluatedProperties":
			eachSchema(v, ptr+"/"+k, fn)
		}
	}
}

func rootRules(s map[string]any) []string {
	var out []string
	if s["type"] != "object" && s["type"] != "OBJECT" {
		out = append(out, "root not an object")
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf", "not", "enum", "$schema"} {
		if _, ok := s[kw]; ok {
			out = append(out, "root "+kw)
		}
	}
	return out
}

func checkMCPTool(t map[string]any) []string {
	out := onlyKeys(t, "name", "title", "description", "inputSchema", "annotations")
	if n, _ := t["name"].(string); !mcpName.MatchString(n) {
		out = append(out, "name")
	}
	s, ok := t["inputSchema"].(map[string]any)
	if !ok {
		return append(out, "no inputSchema")
	}
	out = append(out, rootRules(s)...)
	a, _ := t["annotations"].(map[string]any)
	if _, ok := a["destructiveHint"].(bool); !ok {
		out = append(out, "annotations: destructiveHint missing")
	}
	if _, ok := a["readOnlyHint"].(bool); !ok {
		out = append(out, "annotations: readOnlyHint missing")
	}
	return out
}

func checkOpenAITool(p Profile, t map[string]any) []string {
	var out []string
	if t["type"] != "function" {
		out = append(out, "type not function")
	}
	fn := t
	if p == OpenAIChat {
		out = append(out, onlyKeys(t, "type", "function")...)
		fn, _ = t["function"].(map[string]any)
		if fn == nil {
			return append(out, "no function")
		}
		out = append(out, onlyKeys(fn, "name", "description", "parameters", "strict")...)
	} else {
		out = append(out, onlyKeys(t, "type", "name", "description", "parameters", "strict")...)
	}
	if n, _ := fn["name"].(string); !openAIName.MatchString(n) {
		out = append(out, "name")
	}
	if d, _ := fn["description"].(string); utf8.RuneCountInString(d) > checkOpenAIDescription {
		out = append(out, "description over 1024 characters")
	}
	strict, ok := fn["strict"].(bool)
	if !ok {
		out = append(out, "strict not sent")
	}
	s, ok := fn["parameters"].(map[string]any)
	if !ok {
		return append(out, "no parameters")
	}
	out = append(out, rootRules(s)...)
	if strict {
		out = append(out, checkOpenAIStrict(s)...)
	}
	return out
}

func checkOpenAIStrict(root map[string]any) []string {
	var out []string
	props, enums := 0, 0
	eachSchema(root, "", func(m map[string]any, ptr string) {
		for k := range m {
			if !checkOpenAIStrictKeys[k] {
				out = append(out, "strict keyword "+k+": "+ptr)
			}
		}
		if f, ok := m["format"].(string); ok && !checkOpenAIFormats[f] {
			out = append(out, "strict format: "+ptr)
		}
		_, typed := m["type"]
		_, anyOf := m["anyOf"]
		_, ref := m["$ref"]
		_, enum := m["enum"]
		_, cnst := m["const"]
		if !typed && !anyOf && !ref && !enum && !cnst && !strings.HasSuffix(ptr, "/$defs") {
			out = append(out, "strict schema without type: "+ptr)
		}
		if e, ok := m["enum"].([]any); ok {
			enums += len(e)
		}
		if _, ok := m["$ref"]; ok && len(m) > 1 {
			out = append(out, "strict $ref with siblings: "+ptr)
		}
		if !isObjectSchema(m) {
			return
		}
		if m["additionalProperties"] != false {
			out = append(out, "strict object not closed: "+ptr)
		}
		ps, _ := m["properties"].(map[string]any)
		props += len(ps)
		req := requiredSet(m)
		for n := range ps {
			if !req[n] {
				out = append(out, "strict property not required: "+ptr+"/properties/"+n)
			}
		}
	})
	if d := objectDepth(root); d > 10 {
		out = append(out, "strict nesting over 10 levels")
	}
	if props > 5000 {
		out = append(out, "strict over 5000 properties")
	}
	if enums > 1000 {
		out = append(out, "strict over 1000 enum values")
	}
	return out
}

// objectDepth counts the levels of objects nested through properties,
// items and anyOf.
func objectDepth(v any) int {
	m, ok := v.(map[string]any)
	if !ok {
		return 0
	}
	deepest := 0
	visit := func(sub any) {
		if d := objectDepth(sub); d > deepest {
			deepest = d
		}
	}
	if ps, ok := m["properties"].(map[string]any); ok {
		for _, p := range ps {
			visit(p)
		}
	}
	visit(m["items"])
	if a, ok := m["anyOf"].([]any); ok {
		for _, b := range a {
			visit(b)
		}
	}
	if isObjectSchema(m) {
		return deepest + 1
	}
	return deepest
}

func checkAnthropicTool(t map[string]any) []string {
	out := onlyKeys(t, "name", "description", "input_schema", "strict")
	if n, _ := t["name"].(string); !anthropicName.MatchString(n) {
		out = append(out, "name")
	}
	s, ok := t["input_schema"].(map[string]any)
	if !ok {
		return append(out, "no input_schema")
	}
	out = append(out, rootRules(s)...)
	for _, k := range keysOf(s) {
		if !checkAnthropicKeyRule.MatchString(lastCut(k)) {
			out = append(out, "property key: "+strings.TrimSuffix(k, "\x00"+lastCut(k)))
		}
	}
	if v, ok := t["strict"]; ok && v != true {
		out = append(out, "strict other than true")
	}
	if t["strict"] != true {
		return out
	}
	if recursive(s) {
		out = append(out, "strict recursion")
	}
	eachSchema(s, "", func(m map[string]any, ptr string) {
		for k := range m {
			if !checkAnthropicStrict[k] {
				out = append(out, "strict keyword "+k+": "+ptr)
			}
		}
		if f, ok := m["format"].(string); ok && !checkAnthropicFormats[f] {
			out = append(out, "strict format: "+ptr)
		}
		if n, ok := m["minItems"]; ok && fmt.Sprint(n) != "0" && fmt.Sprint(n) != "1" {
			out = append(out, "strict minItems over 1: "+ptr)
		}
		if e, ok := m["enum"].([]any); ok {
			for _, v := range e {
				switch v.(type) {
				case map[string]any, []any:
					out = append(out, "strict enum of a non-primitive: "+ptr)
				}
			}
		}
		if isObjectSchema(m) && m["additionalProperties"] != false {
			out = append(out, "strict object not closed: "+ptr)
		}
		if a, ok := m["allOf"].([]any); ok && refIn(a) {
			out = append(out, "strict allOf with $ref: "+ptr)
		}
	})
	return out
}

func checkAnthropicCaps(tools []map[string]any) []string {
	var out []string
	strict, optional, unions := 0, 0, 0
	for _, t := range tools {
		if t["strict"] != true {
			continue
		}
		strict++
		o, u := countParams(t["input_schema"])
		optional += o
		unions += u
	}
	if strict > 20 {
		out = append(out, "over 20 strict tools")
	}
	if optional > 24 {
		out = append(out, "over 24 optional parameters in strict tools")
	}
	if unions > 16 {
		out = append(out, "over 16 union parameters in strict tools")
	}
	return out
}

func checkGeminiTool(t map[string]any) []string {
	out := onlyKeys(t, "name", "description", "parametersJsonSchema")
	if n, _ := t["name"].(string); !geminiName.MatchString(n) {
		out = append(out, "name")
	}
	s, ok := t["parametersJsonSchema"].(map[string]any)
	if !ok {
		return append(out, "no parametersJsonSchema")
	}
	out = append(out, rootRules(s)...)
	out = append(out, undeclaredRequired(s)...)
	eachSchema(s, "", func(m map[string]any, ptr string) {
		for k := range m {
			if !checkGeminiJSONKeys[k] {
				out = append(out, "keyword "+k+": "+ptr)
			}
		}
	})
	return out
}

func checkGeminiOpenAPITool(t map[string]any) []string {
	out := onlyKeys(t, "name", "description", "parameters")
	if n, _ := t["name"].(string); !geminiName.MatchString(n) {
		out = append(out, "name")
	}
	s, ok := t["parameters"].(map[string]any)
	if !ok {
		return out // a declaration without parameters takes no arguments
	}
	out = append(out, rootRules(s)...)
	out = append(out, undeclaredRequired(s)...)
	eachSchema(s, "", func(m map[string]any, ptr string) {
		typ, typed := m["type"].(string)
		if _, ok := m["anyOf"]; !typed && !ok {
			out = append(out, "schema without a type: "+ptr)
		}
		switch typ {
		case "ARRAY":
			if it, ok := m["items"].(map[string]any); !ok || it["type"] == nil && it["anyOf"] == nil {
				out = append(out, "ARRAY without typed items: "+ptr)
			}
		case "OBJECT":
			if ps, _ := m["properties"].(map[string]any); len(ps) == 0 {
				out = append(out, "OBJECT without properties: "+ptr)
			}
		}
		if _, ok := m["enum"]; ok && typ != "STRING" {
			out = append(out, "enum without type STRING: "+ptr)
		}
		for k := range m {
			if !checkGeminiOpenAPI[k] {
				out = append(out, "field "+k+": "+ptr)
			}
		}
		if t, ok := m["type"]; ok {
			if n, isStr := t.(string); !isStr || !checkGeminiTypes[n] {
				out = append(out, "type not one upper-case type: "+ptr)
			}
		}
		if e, ok := m["enum"].([]any); ok {
			for _, v := range e {
				if _, ok := v.(string); !ok {
					out = append(out, "enum of a non-string: "+ptr)
				}
			}
		}
		if n, ok := m["nullable"]; ok && n != true && n != false {
			out = append(out, "nullable not a boolean: "+ptr)
		}
	})
	return out
}
