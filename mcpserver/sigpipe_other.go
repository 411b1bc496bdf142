//go:build !unix

package mcpserver

// holdSIGPIPE does nothing where there is no SIGPIPE: a write to a closed
// pipe fails with an error there.
func holdSIGPIPE() (release func()) { return func() {} }
