.PHONY: run build release image tag version test bench clean

# What the binary says it is (wsserver -version, stompgate_build_info).
# VERSION is the git tag (v0.1.0; v0.1.0-3-gabc1234 past it), with -dirty
# for uncommitted changes; without a tag it is RELEASE-dev. REVISION is
# the commit. Either can be given: make release VERSION=v0.1.0.
# RELEASE is the version this tree is released as (cmd/wsserver's
# release constant); `make tag` tags the commit with it.
RELEASE  := $(shell sed -n 's/^const release = "\(.*\)"$$/\1/p' cmd/wsserver/version.go)
VERSION  ?= $(or $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null),$(RELEASE)-dev)
REVISION ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
LDFLAGS  := -X main.version=$(VERSION) -X main.revision=$(REVISION)

# Static binaries (no cgo): they run on any Linux of their architecture,
# including distroless images, and cross-compile without a C toolchain.
# -trimpath keeps the build machine's paths out of them.
BUILD := CGO_ENABLED=0 go build -trimpath

# The architectures of the release: x86 servers and ARM ones (Graviton,
# Ampere, Raspberry Pi 4 and later).
RELEASE_ARCHS := amd64 arm64

run:
	go run ./cmd/wsserver

# bin/wsserver for this machine.
build:
	$(BUILD) -ldflags '$(LDFLAGS)' -o bin/wsserver ./cmd/wsserver
	@bin/wsserver -version

# dist/wsserver-VERSION-linux-ARCH for each release architecture, stripped
# of debug symbols, and dist/SHA256SUMS to check them with sha256sum -c.
release:
	@case "$(VERSION)" in ""|*-dev) echo "release: $(VERSION) is no release: tag the commit (make tag tags it $(RELEASE)) or set VERSION=" >&2; exit 1;; esac
	rm -rf dist && mkdir -p dist
	for arch in $(RELEASE_ARCHS); do \
	  GOOS=linux GOARCH=$$arch $(BUILD) -ldflags '-s -w $(LDFLAGS)' \
	    -o dist/wsserver-$(VERSION)-linux-$$arch ./cmd/wsserver || exit 1; \
	done
	cd dist && sha256sum wsserver-* > SHA256SUMS && cat SHA256SUMS

# dist/stompgate-VERSION-oci.tar: the multi-architecture OCI image of the
# release architectures, stamped like release, as an OCI image layout in
# one tar (skopeo copy --all oci-archive:dist/... docker://... pushes
# it). Built by deploy/image with no container engine and nothing
# pulled: an empty base, the static binary, a nonroot user and CA_CERTS
# (the build machine's bundle, when it has one). SOURCE_DATE_EPOCH is the
# commit's time, so one commit built with the same Go and CA bundle gives
# the same bytes.
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
image:
	mkdir -p dist
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) \
	  go run ./deploy/image -o dist/stompgate-$(VERSION)-oci.tar \
	    -version $(VERSION) -revision $(REVISION) \
	    -archs $(shell echo $(RELEASE_ARCHS) | tr ' ' ,) \
	    $(if $(wildcard $(CA_CERTS)),-ca-certs $(CA_CERTS))

# An annotated tag of RELEASE on this commit: what make release and
# go install ...@RELEASE then find.
tag:
	git tag -a $(RELEASE) -m "stompgate $(RELEASE)"

# The version a build of this tree reports.
version:
	@echo $(VERSION)

test:
	./scripts/test.sh

bench:
	./scripts/bench.sh

clean:
	rm -rf bin dist
