package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// envPrefix starts the name of every setting's environment variable.
const envPrefix = "WSSERVER_"

// checkEnviron returns an error naming every WSSERVER_ variable of
// environ ("NAME=value" entries, as os.Environ gives) that is no setting
// of the server or of nginx-config, with the nearest setting's name when
// one is close. The environment file is the configuration of a systemd
// deployment: a misspelt name there would otherwise be ignored, and the
// server would start on the default it meant to change.
func checkEnviron(environ []string) error {
	known := knownEnv()
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || known[name] {
			continue
		}
		msg := fmt.Sprintf("environment variable %s is not a setting", name)
		if near := nearestName(name, known); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		errs = append(errs, errors.New(msg+"; wsserver -h lists them"))
	}
	return errors.Join(errs...)
}

// knownEnv is the environment variable of every flag of the server and
// of nginx-config: one environment file may serve both.
func knownEnv() map[string]bool {
	known := map[string]bool{}
	var st settings
	var n nginxSettings
	for _, fs := range []*flag.FlagSet{st.flagSet(io.Discard), n.flagSet(io.Discard)} {
		fs.VisitAll(func(f *flag.Flag) { known[envName(f.Name)] = true })
	}
	return known
}

// nearestName returns the known name closest to name by the edit
// distance of what follows envPrefix, if that is within a third of its
// length (a typo, not another word); "" otherwise.
func nearestName(name string, known map[string]bool) string {
	name = strings.TrimPrefix(name, envPrefix)
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	slices.Sort(names) // ties go to the first name, the same every run
	best, bestD := "", len(name)/3+1
	for _, k := range names {
		if d := editDistance(name, strings.TrimPrefix(k, envPrefix)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// valueHint says what a flag's value must look like, for an error about
// a value it could not parse: the flag package says only "parse error".
func valueHint(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "want a duration with a unit, such as 500ms, 10s, 2m or 1h30m"
	case int, int64, uint, uint64:
		return "want a whole number, such as 0 or 100"
	case float64:
		return "want a number, such as 0.5"
	case bool:
		return "want true or false"
	}
	return ""
}
