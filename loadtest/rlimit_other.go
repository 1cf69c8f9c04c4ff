//go:build !unix

package main

import "io"

// raiseFileLimit does nothing: the descriptor limit it raises on Unix
// has no counterpart here.
func raiseFileLimit(io.Writer) {}
