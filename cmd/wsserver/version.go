package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/stompgate/stompgate/metrics"
)

// version is the release, stamped at build time from the git tag:
//
//	go build -ldflags "-X main.version=v0.1.0" ./cmd/wsserver
//
// `make build` and `make release` do this. Empty (a plain go build, go run
// or go test) means the version Go recorded in the binary: the module
// version for `go install github.com/stompgate/stompgate/cmd/wsserver@v0.1.0`,
// a pseudo-version built from the commit for a go build in a clone.
var version string

// release is the version this tree is released as: `make tag` tags the
// commit with it, `make release` names the archives after the tag, and a
// build that knows no version (go run, a go build in a clone without
// tags) reports release+"-dev". Raise it after each release.
const release = "v0.1.0"

// revision is the VCS commit, stamped at build time like version
// (-X main.revision=...). Empty means the commit Go recorded, which it
// does for a go build in a git clone, though not in a git worktree.
var revision string

// buildInfo returns what this binary is: the stamped version or the one
// Go recorded, the VCS commit (with "-dirty" when the tree had
// uncommitted changes) and the Go toolchain.
func buildInfo() metrics.BuildInfo {
	info := metrics.BuildInfo{Version: version, Revision: revision, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	return fromBuildInfo(info, bi)
}

// fromBuildInfo fills what info lacks from bi.
func fromBuildInfo(info metrics.BuildInfo, bi *debug.BuildInfo) metrics.BuildInfo {
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	if info.Version == "" || info.Version == "(devel)" || strings.HasPrefix(info.Version, "v0.0.0-") {
		// Go knows no version ("(devel)"), or only a pseudo-version
		// from a clone without tags: this is the release being made.
		info.Version = release + "-dev"
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	if info.Revision != "" {
		return info
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if info.Revision != "" && modified {
		info.Revision += "-dirty"
	}
	return info
}

// versionRequested reports whether args ask for the version: -version or
// --version before any other argument ends the flags. It is not a flag
// of the server's, so no environment variable can turn it on.
func versionRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "-version", "--version":
			return true
		case "--":
			return false
		}
	}
	return false
}

// printVersion writes the one-line version: "wsserver v0.1.0 (commit
// 3fdcbc7, go1.26.8, linux/amd64)".
func printVersion(w io.Writer, info metrics.BuildInfo) error {
	rev := info.Revision
	if rev == "" {
		rev = "unknown"
	}
	_, err := fmt.Fprintf(w, "wsserver %s (commit %s, %s, %s/%s)\n", info.Version, rev, info.GoVersion, runtime.GOOS, runtime.GOARCH)
	return err
}

// logBuild writes the build as the log's first line, before anything
// else the server logs: the line an operator looks for after a deploy.
func logBuild(logger *slog.Logger) {
	info := buildInfo()
	logger.Info("wsserver starting", "version", info.Version, "revision", info.Revision, "go", info.GoVersion)
}
