//go:build !unix

package chart

import "math"

// fileLimit is unbounded where there is no RLIMIT_NOFILE.
func fileLimit() (uint64, error) { return math.MaxUint64, nil }
