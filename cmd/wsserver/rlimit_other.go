//go:build !unix

package main

// fileLimit reports no limit of open files: the platform has none that
// a process can read as one number.
func fileLimit() (uint64, bool) { return 0, false }
