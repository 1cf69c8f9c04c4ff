// Command image builds stompgate's OCI image without a container engine:
// a static wsserver for each release architecture, one layer each on an
// empty base, written as an OCI image layout in one tar file (an
// oci-archive, as skopeo names it: `skopeo copy --all oci-archive:FILE
// docker://REGISTRY/stompgate:TAG` pushes every architecture).
//
//	go run ./deploy/image -o dist/stompgate-oci.tar -version v0.1.0 -revision 3fdcbc7a1b2c
//
// `make image` runs it with the version and revision `make release`
// stamps. The image holds /wsserver (the entrypoint), /etc/passwd and
// /etc/group naming the user it runs as (nonroot, 65532) and, when given,
// a CA bundle for rediss:// and JWKS over HTTPS; no shell, no package
// manager, nothing writable, so it runs with a read-only root file system.
// Nothing is pulled: the base is empty, so the build works offline and
// the image holds nothing that was not built here.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run parses the flags, builds the image and prints its size by
// architecture.
func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("o", "dist/stompgate-oci.tar", "the OCI image layout tar file to write")
	var o Options
	fs.StringVar(&o.Root, "root", ".", "the module's root directory, where ./cmd/wsserver is built")
	fs.StringVar(&o.Version, "version", "", "stamped into the binary (-X main.version) and the image's labels (required)")
	fs.StringVar(&o.Revision, "revision", "", "the commit, stamped like -version (required)")
	archs := fs.String("archs", strings.Join(DefaultArchs, ","), "comma-separated GOARCH values, one image each in the index")
	fs.StringVar(&o.CACerts, "ca-certs", "", "a PEM bundle to install as /etc/ssl/certs/ca-certificates.crt (empty: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Version == "" || o.Revision == "" {
		return fmt.Errorf("-version and -revision are required")
	}
	o.Archs = strings.Split(*archs, ",")
	// SOURCE_DATE_EPOCH is the reproducible-builds convention: the same
	// commit builds the same bytes, on any machine, at any time.
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
		o.Created = time.Unix(sec, 0).UTC()
	}

	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	sum, err := Build(f, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*out)
		return err
	}
	fmt.Printf("%s: %s, index %s\n", *out, o.Version, sum.Index)
	for _, img := range sum.Images {
		fmt.Printf("  linux/%s: %s compressed (binary %s), manifest %s\n",
			img.Arch, mib(img.Size), mib(img.BinarySize), img.Manifest)
	}
	return nil
}

// mib formats n bytes in MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
