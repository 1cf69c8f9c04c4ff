package scenario

import (
	"context"
	"flag"
	"io"
)

// scenarioConfig is the settings of one scenario.
type scenarioConfig interface {
	// flagSet returns the scenario's flags, bound to the settings.
	flagSet(stderr io.Writer) *flag.FlagSet
	// validate checks the scenario's own settings once the flags are
	// parsed; the shared ones have been checked by then.
	validate() error
	// shared returns the settings every scenario has.
	shared() *common
	// title is the report's first line: the scenario and its settings.
	title() string
}

// runScenario is what every scenario does around its load: it parses args
// into cfg, validates the shared settings and then the scenario's own,
// starts the -cpuprofile, runs body, and writes the report body returns to
// stdout (and the -chart file).
func runScenario(ctx context.Context, cfg scenarioConfig, args []string, stdout, stderr io.Writer,
	body func(ctx context.Context) (*runReport, error)) error {
	if err := parseFlags(cfg.flagSet(stderr), args); err != nil {
		return err
	}
	if err := cfg.shared().validate(); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	stopProfile, err := cfg.shared().startProfile()
	if err != nil {
		return err
	}
	defer stopProfile()
	rep, err := body(ctx)
	if err != nil {
		return err
	}
	return rep.emit(cfg.shared(), stdout, cfg.title())
}
