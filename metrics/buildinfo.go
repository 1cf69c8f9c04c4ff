package metrics

import "runtime"

// BuildInfo says which build of stompgate runs, for
// stompgate_build_info. The zero value reports "unknown" for Version and
// Revision and the running Go version.
type BuildInfo struct {
	// Version is the release ("v0.2.0") or the Go module pseudo-version
	// the binary was built as. Empty means "unknown".
	Version string
	// Revision is the VCS commit the binary was built from. Empty means
	// "unknown".
	Revision string
	// GoVersion is the Go toolchain that built the binary. Empty means
	// runtime.Version().
	GoVersion string
}

// unknownBuild is the label value of a BuildInfo field left empty.
const unknownBuild = "unknown"

// buildBuildInfo registers stompgate_build_info: one series, always 1,
// whose labels name the build. One binary has one build, so the labels
// add one series per instance, however long it runs; a rolling upgrade
// shows as two label sets side by side.
func (m *Metrics) buildBuildInfo(b *builder, info BuildInfo) {
	if info.Version == "" {
		info.Version = unknownBuild
	}
	if info.Revision == "" {
		info.Revision = unknownBuild
	}
	if info.GoVersion == "" {
		info.GoVersion = runtime.Version()
	}
	g := b.gaugeVec("stompgate_build_info",
		"Always 1; the labels name the running build: version, revision (VCS commit) and goversion.",
		"version", "revision", "goversion")
	g.WithLabelValues(info.Version, info.Revision, info.GoVersion).Set(1)
}
