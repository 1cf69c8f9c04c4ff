package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestImage builds the image as `make image` does and reads the tar back
// with nothing but archive/tar and encoding/json: every blob matches its
// digest, the index holds linux/amd64 and linux/arm64, each image runs
// /wsserver as a non-root user, carries the version labels, and its one
// layer holds a static binary of its architecture, stamped with the
// version, and no shell. A second build of the same inputs gives the
// same bytes.
func TestImage(t *testing.T) {
	const version, revision = "v9.8.7-imagetest", "0123456789ab"
	opts := Options{
		Root: "../..", Version: version, Revision: revision,
		CACerts: writeFile(t, "ca.pem", "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"),
		Created: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC),
	}
	var first bytes.Buffer
	sum, err := Build(&first, opts)
	if err != nil {
		t.Fatal(err)
	}
	files := readTar(t, bytes.NewReader(first.Bytes()))

	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", got)
	}
	blob := func(d descriptor) []byte {
		t.Helper()
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok {
			t.Fatalf("blob %s (%s) is missing", d.Digest, d.MediaType)
		}
		if got := digestOf(b); got != d.Digest || int64(len(b)) != d.Size {
			t.Fatalf("blob %s: digest %s, size %d, want size %d", d.Digest, got, len(b), d.Size)
		}
		return b
	}

	var top index
	decode(t, files["index.json"], &top)
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != mediaIndex {
		t.Fatalf("index.json lists %+v, want one image index", top.Manifests)
	}
	if got := top.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != version {
		t.Errorf("index.json ref.name = %q, want %q", got, version)
	}
	if top.Manifests[0].Digest != sum.Index {
		t.Errorf("index.json names %s, Build reported %s", top.Manifests[0].Digest, sum.Index)
	}
	var idx index
	decode(t, blob(top.Manifests[0]), &idx)
	var archs []string
	for _, md := range idx.Manifests {
		if md.MediaType != mediaManifest || md.Platform == nil || md.Platform.OS != "linux" {
			t.Fatalf("image index entry %+v: want a linux image manifest", md)
		}
		archs = append(archs, md.Platform.Architecture)
		t.Run(md.Platform.Architecture, func(t *testing.T) {
			checkImage(t, md.Platform.Architecture, blob(md), blob, version, revision)
		})
	}
	if !slices.Equal(archs, []string{"amd64", "arm64"}) {
		t.Errorf("architectures %v, want [amd64 arm64]", archs)
	}

	var second bytes.Buffer
	if _, err := Build(&second, opts); err != nil {
		t.Fatal(err)
	}
	if a, b := sha256.Sum256(first.Bytes()), sha256.Sum256(second.Bytes()); a != b {
		t.Errorf("two builds of the same commit differ: %x and %x", a, b)
	}
}

// checkImage checks one architecture's manifest, config and layer.
func checkImage(t *testing.T, arch string, man []byte, blob func(descriptor) []byte, version, revision string) {
	var m manifest
	decode(t, man, &m)
	if m.Config.MediaType != mediaConfig || len(m.Layers) != 1 || m.Layers[0].MediaType != mediaLayer {
		t.Fatalf("manifest %+v: want an OCI config and one gzip layer", m)
	}
	var c config
	decode(t, blob(m.Config), &c)
	if c.OS != "linux" || c.Architecture != arch {
		t.Errorf("config is for %s/%s, the index says linux/%s", c.OS, c.Architecture, arch)
	}
	if u := c.Config.User; u == "" || u == "0" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root") {
		t.Errorf("User = %q: the image would run as root", u)
	}
	if c.Config.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532", c.Config.User)
	}
	if !slices.Equal(c.Config.Entrypoint, []string{"/wsserver"}) {
		t.Errorf("Entrypoint = %q, want [/wsserver]", c.Config.Entrypoint)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/stompgate/stompgate",
		"org.opencontainers.image.created":  "2026-11-01T12:00:00Z",
	} {
		if got := c.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	gz := blob(m.Layers[0])
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.RootFS.DiffIDs) != 1 || c.RootFS.DiffIDs[0] != digestOf(raw) {
		t.Errorf("diff_ids %v, the layer's uncompressed digest is %s", c.RootFS.DiffIDs, digestOf(raw))
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	var names []string
	var bin, passwd []byte
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Mode&0o7022 != 0 {
			t.Errorf("%s: owner %d:%d, mode %o: want root's, not writable by others, no setuid", hdr.Name, hdr.Uid, hdr.Gid, hdr.Mode)
		}
		b, _ := io.ReadAll(tr)
		switch hdr.Name {
		case "wsserver":
			bin = b
			if hdr.Mode != 0o755 {
				t.Errorf("wsserver mode %o, want 755", hdr.Mode)
			}
		case "etc/passwd":
			passwd = b
		}
	}
	want := []string{"etc/", "etc/group", "etc/passwd", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", "wsserver"}
	if !slices.Equal(names, want) {
		t.Errorf("layer holds %q, want exactly %q (no shell, nothing else)", names, want)
	}
	if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", passwd)
	}

	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/wsserver is no ELF file: %v", err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != machine {
		t.Errorf("/wsserver is for %v, want %v", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("/wsserver has a %v program header: dynamically linked, it needs a libc the image lacks", p.Type)
		}
	}
	if !bytes.Contains(bin, []byte(version)) || !bytes.Contains(bin, []byte(revision)) {
		t.Errorf("/wsserver holds no %q or %q: the version is not stamped", version, revision)
	}
}

// readTar returns the regular files of the tar stream r by name.
func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = b
	}
}

// decode unmarshals b into v, refusing fields v does not have.
func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// writeFile writes body to a file in the test's temporary directory.
func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
