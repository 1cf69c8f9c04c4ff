// Package scenario is loadtest's scenarios (flood, throughput,
// handshake-storm, idle, abuse, rooms, compare, reconnect-storm) and what
// they share: the flags every one takes, the run of publishers and
// subscribers with its once-a-second sampling, the server probes, and the
// report each prints.
// Each Run function takes a scenario's arguments (after its name) and
// writes the report to stdout and progress to stderr.
package scenario
