package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// DefaultArchs are the release architectures of `make release`.
var DefaultArchs = []string{"amd64", "arm64"}

// NonrootUID is the user and group the image runs as: the number the
// distroless images give their nonroot user, outside the range a host
// gives its own users, so a container escape lands on no one's files.
const NonrootUID = 65532

// Options say what Build builds.
type Options struct {
	// Root is the module's root directory; "" is the working directory.
	Root string
	// Version and Revision are stamped with -X main.version and
	// -X main.revision, as `make release` does, and become the image's
	// org.opencontainers.image.version and .revision labels.
	Version, Revision string
	// Archs are the GOARCH values to build for linux; nil is DefaultArchs.
	Archs []string
	// CACerts is a PEM file installed as the image's CA bundle; "" puts
	// none in (TLS to Redis or a JWKS URL then needs one mounted and
	// SSL_CERT_FILE pointing at it).
	CACerts string
	// Created is the time recorded in the image and on its files; zero is
	// the Unix epoch, so that builds of one commit are identical.
	Created time.Time
}

// Summary is what Build wrote.
type Summary struct {
	// Index is the digest of the image index, the multi-architecture
	// image a registry serves under its tag.
	Index string
	// Images are the per-architecture images, in Options.Archs order.
	Images []ImageSummary
}

// ImageSummary describes one architecture's image.
type ImageSummary struct {
	Arch     string
	Manifest string // digest of its manifest
	// Size is what a node pulls: the compressed layer, the config and the
	// manifest, in bytes.
	Size int64
	// BinarySize is the size of /wsserver, in bytes.
	BinarySize int64
}

// Build compiles ./cmd/wsserver for each architecture and writes the OCI
// image layout of the multi-architecture image to w, as a tar stream.
func Build(w io.Writer, o Options) (Summary, error) {
	if len(o.Archs) == 0 {
		o.Archs = DefaultArchs
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0).UTC()
	}
	var caCerts []byte
	if o.CACerts != "" {
		b, err := os.ReadFile(o.CACerts)
		if err != nil {
			return Summary{}, fmt.Errorf("ca-certs: %w", err)
		}
		caCerts = b
	}
	tmp, err := os.MkdirTemp("", "stompgate-image-")
	if err != nil {
		return Summary{}, err
	}
	defer os.RemoveAll(tmp)

	lw := newLayoutWriter(w)
	var sum Summary
	var manifests []descriptor
	for _, arch := range o.Archs {
		bin := filepath.Join(tmp, "wsserver-"+arch)
		if err := compile(o, arch, bin); err != nil {
			return Summary{}, err
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return Summary{}, err
		}
		layer, diffID, err := buildLayer(rootFiles(binary, caCerts), o.Created)
		if err != nil {
			return Summary{}, err
		}
		layerDesc, err := lw.blob(mediaLayer, layer)
		if err != nil {
			return Summary{}, err
		}
		cfg, err := json.Marshal(imageConfig(o, arch, diffID))
		if err != nil {
			return Summary{}, err
		}
		cfgDesc, err := lw.blob(mediaConfig, cfg)
		if err != nil {
			return Summary{}, err
		}
		man, err := json.Marshal(manifest{
			SchemaVersion: 2, MediaType: mediaManifest,
			Config: cfgDesc, Layers: []descriptor{layerDesc},
			Annotations: map[string]string{"org.opencontainers.image.base.name": "scratch"},
		})
		if err != nil {
			return Summary{}, err
		}
		manDesc, err := lw.blob(mediaManifest, man)
		if err != nil {
			return Summary{}, err
		}
		manDesc.Platform = &platform{OS: "linux", Architecture: arch}
		manifests = append(manifests, manDesc)
		sum.Images = append(sum.Images, ImageSummary{
			Arch: arch, Manifest: manDesc.Digest,
			Size:       layerDesc.Size + cfgDesc.Size + manDesc.Size,
			BinarySize: int64(len(binary)),
		})
	}
	idx, err := json.Marshal(index{
		SchemaVersion: 2, MediaType: mediaIndex, Manifests: manifests,
		Annotations: labels(o),
	})
	if err != nil {
		return Summary{}, err
	}
	idxDesc, err := lw.blob(mediaIndex, idx)
	if err != nil {
		return Summary{}, err
	}
	sum.Index = idxDesc.Digest
	idxDesc.Annotations = map[string]string{"org.opencontainers.image.ref.name": o.Version}
	return sum, lw.finish(idxDesc)
}

// compile builds a static, stripped wsserver for linux/arch, stamped as
// `make release` stamps it.
func compile(o Options, arch, out string) error {
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.revision=%s", o.Version, o.Revision)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/wsserver")
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w\n%s", arch, err, b)
	}
	return nil
}

// imageConfig is the runtime configuration of the image for arch.
func imageConfig(o Options, arch, diffID string) config {
	created := o.Created.Format(time.RFC3339)
	return config{
		Created: created, OS: "linux", Architecture: arch,
		Config: runConfig{
			User:       fmt.Sprintf("%d:%d", NonrootUID, NonrootUID),
			Entrypoint: []string{"/wsserver"},
			// The public listener's default port and the admin one's
			// (the admin listener binds it on loopback unless
			// -admin-addr says otherwise: the chart gives :8082).
			ExposedPorts: map[string]struct{}{"8080/tcp": {}, "8082/tcp": {}},
			WorkingDir:   "/",
			StopSignal:   "SIGTERM",
			Labels:       labels(o),
		},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{diffID}},
		History: []history{{Created: created, CreatedBy: "deploy/image: wsserver " + o.Version}},
	}
}

// labels are the image's OCI annotations, on the configs and the index.
func labels(o Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "stompgate",
		"org.opencontainers.image.description": "STOMP over WebSocket server that protects itself",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.source":      "https://github.com/stompgate/stompgate",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
	}
}

// digestOf is the OCI digest of b.
func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// layoutWriter writes an OCI image layout as a tar stream: each blob
// once, then index.json.
type layoutWriter struct {
	tw   *tar.Writer
	seen map[string]bool
}

func newLayoutWriter(w io.Writer) *layoutWriter {
	return &layoutWriter{tw: tar.NewWriter(w), seen: map[string]bool{}}
}

// blob writes b under blobs/sha256/ and returns its descriptor.
func (l *layoutWriter) blob(mediaType string, b []byte) (descriptor, error) {
	d := descriptor{MediaType: mediaType, Digest: digestOf(b), Size: int64(len(b))}
	if l.seen[d.Digest] {
		return d, nil
	}
	l.seen[d.Digest] = true
	return d, l.file("blobs/sha256/"+d.Digest[len("sha256:"):], b)
}

// file writes one regular file of the layout.
func (l *layoutWriter) file(name string, b []byte) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := l.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := io.Copy(l.tw, bytes.NewReader(b))
	return err
}

// finish writes oci-layout and index.json, naming top, and closes the tar.
func (l *layoutWriter) finish(top descriptor) error {
	if err := l.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	b, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{top}})
	if err != nil {
		return err
	}
	if err := l.file("index.json", b); err != nil {
		return err
	}
	return l.tw.Close()
}
