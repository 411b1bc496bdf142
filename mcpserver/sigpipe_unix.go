//go:build unix

package mcpserver

import (
	"os"
	"os/signal"
	"syscall"
)

// holdSIGPIPE keeps a write to a closed standard output from ending the
// process while a session is served, and returns the function that lets
// go. Go's runtime ends a program that writes to a broken pipe on file
// descriptor 1 or 2 with SIGPIPE unless the program asks to be notified
// of the signal (os/signal, "SIGPIPE"); once asked, the write fails with
// EPIPE instead, which Serve handles as a client that is gone (the calls
// left are cancelled and recorded). The signals received are dropped.
func holdSIGPIPE() (release func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
