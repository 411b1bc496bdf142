// Package tooltext holds the sentences an MCP tool's description and
// its schema's descriptions are written with, so that the registry's
// tools and package profiles' exports say the same thing the same way.
package tooltext

import "strings"

// Append adds the sentence s after text and a space, ending text with a
// full stop first when it ends with no '.', '!' or '?'.
func Append(text, s string) string {
	text = strings.TrimRight(text, " \t\r\n")
	switch {
	case text == "":
		return s
	case strings.HasSuffix(text, "."), strings.HasSuffix(text, "!"), strings.HasSuffix(text, "?"):
		return text + " " + s
	}
	return text + ". " + s
}

// Ref is the description of a ref value of the model schema named
// schema.
func Ref(schema string) string {
	article := "a "
	if schema != "" && strings.ContainsRune("AEIOUaeiou", rune(schema[0])) {
		article = "an "
	}
	return "The id or the exact display name of " + article + schema + "."
}

// AtLeastOneOf returns the property names of an anyOf whose every branch
// is {"required": [one name]}, in the order of the branches, or nil when
// the anyOf says anything else: the "at least one of" rule a tool's
// description states, since providers refuse anyOf at a schema's root.
func AtLeastOneOf(anyOf any) []string {
	branches, ok := anyOf.([]any)
	if !ok || len(branches) == 0 {
		return nil
	}
	names := make([]string, 0, len(branches))
	for _, b := range branches {
		m, ok := b.(map[string]any)
		if !ok || len(m) != 1 {
			return nil
		}
		req, ok := m["required"].([]any)
		if !ok || len(req) != 1 {
			return nil
		}
		name, ok := req[0].(string)
		if !ok {
			return nil
		}
		names = append(names, name)
	}
	return names
}
