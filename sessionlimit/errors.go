package sessionlimit

import "errors"

// ErrInvalidConfig is the sentinel every configuration error wraps, so a
// caller can tell a bad setting from other failures with errors.Is.
var ErrInvalidConfig = errors.New("sessionlimit: invalid config")

// ConfigError reports one setting that New, NewFactory, Config.Validate or
// ParseAlgorithm refused. Its message names the setting and the offending
// value, for example "sessionlimit: Window -1s is negative". It wraps
// ErrInvalidConfig.
type ConfigError struct {
	// Setting is the Config field at fault: "Algorithm", "Limit" or "Window".
	Setting string
	// Value is the offending value as written in the message (strings quoted).
	Value string
	// Problem says what is wrong with Value, such as "is negative".
	Problem string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return "sessionlimit: " + e.Setting + " " + e.Value + " " + e.Problem
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }
