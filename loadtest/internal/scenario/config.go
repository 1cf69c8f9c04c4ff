package scenario

import (
	"context"
	"flag"
	"io"
)

// Config is the settings of one scenario.
type Config interface {
	// FlagSet returns the scenario's flags, bound to the settings.
	FlagSet(stderr io.Writer) *flag.FlagSet
	// Validate checks the scenario's own settings once the flags are
	// parsed; the shared ones have been checked by then.
	Validate() error
	// Shared returns the settings every scenario has.
	Shared() *Common
	// Title is the report's first line: the scenario and its settings.
	Title() string
}

// RunScenario is what every scenario does around its load: it parses args
// into cfg, validates the shared settings and then the scenario's own,
// starts the -cpuprofile, runs body, and writes the report body returns to
// stdout (and the -chart file).
func RunScenario(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer,
	body func(ctx context.Context) (*Report, error)) error {
	if err := parseFlags(cfg.FlagSet(stderr), args); err != nil {
		return err
	}
	if err := cfg.Shared().Validate(); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	stopProfile, err := cfg.Shared().startProfile()
	if err != nil {
		return err
	}
	defer stopProfile()
	rep, err := body(ctx)
	if err != nil {
		return err
	}
	return rep.emit(cfg.Shared(), stdout, cfg.Title())
}
