package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag value of bytes: a plain number, or one with a
// binary unit as GOMEMLIMIT writes it (B, KiB, MiB, GiB, TiB), so that
// -memory-limit 512MiB and GOMEMLIMIT=512MiB read alike.
type byteSize uint64

var byteUnits = []struct {
	suffix string
	mult   uint64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1},
}

// parseByteSize reads v as byteSize does.
func parseByteSize(v string) (uint64, error) {
	v = strings.TrimSpace(v)
	mult := uint64(1)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want bytes, optionally with a unit B, KiB, MiB, GiB or TiB (512MiB)")
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("too large")
	}
	return n * mult, nil
}

func (b *byteSize) Set(v string) error {
	n, err := parseByteSize(v)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// String writes the size with the largest unit that divides it.
func (b *byteSize) String() string {
	n := uint64(*b)
	if n == 0 {
		return "0"
	}
	for _, u := range byteUnits {
		if n%u.mult == 0 {
			return strconv.FormatUint(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10)
}
