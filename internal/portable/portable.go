// Package portable holds the one rule on tool names that every export
// profile accepts, so that the registry's Options.PortableNames and
// package profiles apply the same rule.
package portable

import "fmt"

// MaxToolNameLength is the longest tool name every provider profile
// accepts: OpenAI, Anthropic and Gemini all take 64 characters (MCP 128).
const MaxToolNameLength = 64

// MCPToolNameLength is the longest tool name MCP allows (the schema's
// Tool.name guidance: 1 to 128 characters), and so the longest action id
// the registry registers.
const MCPToolNameLength = 128

// Fault says why the tool name name is not portable, or is "" when it
// is. The name is assumed to come from a valid id, so it matches
// [A-Za-z_][A-Za-z0-9_-]* and only its length can break the rule.
func Fault(name string) string {
	if n := len(name); n > MaxToolNameLength {
		return fmt.Sprintf("the tool name has %d characters, more than the %d AI providers accept", n, MaxToolNameLength)
	}
	return ""
}
