#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests start
# for real (redis-server, nginx, promtool, Node packages) and systemd-analyze
# when missing, and a pinned helm, then runs the format check, go vet (also
# for darwin and windows, with a build for each), staticcheck, the systemd
# unit check, the Helm chart's tests and go test -race.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v node >/dev/null 2>&1 || need+=(nodejs npm)
if [ -f e2e/browser/package.json ] && [ ! -x /usr/bin/chromium ]; then need+=(chromium); fi
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
export PATH="$PATH:/usr/sbin"

# Node test projects: (re)install when the lock file changed since the
# last install.
for dir in e2e/js e2e/browser; do
  [ -f "$dir/package-lock.json" ] || continue
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.stompgate-lock"; then
    (cd "$dir" && npm ci --no-audit --no-fund --silent && cp package-lock.json node_modules/.stompgate-lock)
  fi
done

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:" $unformatted
  exit 1
fi
# go.mod lists what the code imports, direct and indirect apart.
go mod tidy -diff
go vet ./...
# The other systems it builds on. Linux-only code (internal/wsconn's raw
# read(2)/write(2) path, /proc readers, process groups) sits in
# build-tagged files with a fallback; these keep the fallbacks compiling,
# tests included (vet type-checks them).
for goos in darwin windows; do
  GOOS=$goos go build ./...
  GOOS=$goos go vet ./...
done
go vet -tags wsconn_portable ./internal/wsconn
# staticcheck, pinned: the module proxy serves this exact version.
go run honnef.co/go/tools/cmd/staticcheck@v0.6.1 ./...

# The systemd unit. systemd-analyze needs no running systemd (CI has none as
# PID 1). verify checks the directives and that ExecStart exists, so it runs
# on a copy whose ExecStart is a freshly built binary; it exits 0 on an
# unknown or misspelt key, only warning, so any output fails. security
# scores the sandboxing from the file alone (threshold 20 is an exposure
# of 2.0 of 10; the unit scores 1.4): above it, a hardening line was lost.
unitdir=$(mktemp -d)
trap 'rm -rf "$unitdir"' EXIT
go build -o "$unitdir/wsserver" ./cmd/wsserver
sed "s|^ExecStart=/usr/local/bin/wsserver\$|ExecStart=$unitdir/wsserver|" deploy/stompgate.service >"$unitdir/stompgate.service"
grep -qx "ExecStart=$unitdir/wsserver" "$unitdir/stompgate.service" || {
  echo "deploy/stompgate.service: ExecStart is not /usr/local/bin/wsserver"
  exit 1
}
if ! verify=$(systemd-analyze verify "$unitdir/stompgate.service" 2>&1) || [ -n "$verify" ]; then
  echo "systemd-analyze verify deploy/stompgate.service:"
  echo "$verify"
  exit 1
fi
systemd-analyze security --offline=true --threshold=20 "$unitdir/stompgate.service" | tail -1

# The Helm chart (deploy/helm/stompgate): helm lint and helm template of
# the default and the full values, every rendered manifest decoded
# strictly into its Kubernetes API type and checked offline, and the
# server started on what the chart renders. Its tests are a module of
# their own, so that k8s.io/api stays out of the server's go.mod. helm is
# pinned and built once with go install from the module proxy.
HELM_VERSION=v3.19.0
helm_dir="$(go env GOPATH)/tools/helm-$HELM_VERSION"
if [ ! -x "$helm_dir/helm" ]; then
  echo "installing: helm $HELM_VERSION"
  GOBIN="$helm_dir" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
(
  cd deploy/helm
  go mod tidy -diff
  go vet ./...
  go run honnef.co/go/tools/cmd/staticcheck@v0.6.1 ./...
  HELM="$helm_dir/helm" go test -race -count=1 -timeout 10m ./...
)

go test -race -count=1 -timeout 20m ./...
# internal/wsconn once more through net.Conn, the path other systems take.
go test -race -count=1 -tags wsconn_portable ./internal/wsconn
