package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"time"
)

// rootFile is one entry of the image's file system.
type rootFile struct {
	name string // without the leading slash
	mode int64
	dir  bool
	body []byte
}

// rootFiles is the whole file system: the binary, the user it runs as
// and, when given, the CA bundle. Nothing else: no shell, no /tmp (the
// server writes no file).
func rootFiles(binary, caCerts []byte) []rootFile {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonrootUID, NonrootUID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonrootUID)
	files := []rootFile{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
	}
	if caCerts != nil {
		files = append(files,
			rootFile{name: "etc/ssl/", mode: 0o755, dir: true},
			rootFile{name: "etc/ssl/certs/", mode: 0o755, dir: true},
			rootFile{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: caCerts})
	}
	return append(files, rootFile{name: "wsserver", mode: 0o755, body: binary})
}

// buildLayer returns the gzipped tar of files and its diff ID (the digest
// of the uncompressed tar). Every entry is owned by root and dated
// created, and gzip records no name or time, so the same files give the
// same bytes.
func buildLayer(files []rootFile, created time.Time) (layer []byte, diffID string, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, f := range files {
		hdr := &tar.Header{
			Name: f.name, Mode: f.mode, ModTime: created, Uname: "root", Gname: "root",
			Typeflag: tar.TypeReg, Size: int64(len(f.body)), Format: tar.FormatPAX,
		}
		if f.dir {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), digestOf(raw.Bytes()), nil
}
