#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests start
# for real (redis-server, nginx, promtool, Node packages) when missing, then
# runs the format check, go vet and go test -race.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v node >/dev/null 2>&1 || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
export PATH="$PATH:/usr/sbin"

if [ -f e2e/js/package.json ]; then
  (cd e2e/js && { [ -d node_modules ] || npm ci --no-audit --no-fund --silent; })
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:" $unformatted
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 20m ./...
