// Command image builds stormctl's container image without a daemon: one
// layer holding the static binary, the CA bundle and a passwd entry for the
// non-root user, written as an OCI image layout (and optionally a tarball
// that `docker load` and `podman load` accept).
//
//	go run . -binary ../../dist/stormctl-actuator_linux_amd64_v1/stormctl-actuator \
//	  -layout ../../dist/image -tag stormctl-actuator:dev
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// uid and gid of the image's only user, as distroless's nonroot.
const uid = 65532

func main() {
	binary := flag.String("binary", "", "static linux binary to ship (required)")
	ca := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to ship")
	out := flag.String("layout", "", "write an OCI image layout into this directory (required)")
	tarPath := flag.String("tar", "", "also write a docker/podman-loadable tarball here")
	tag := flag.String("tag", "stormctl:dev", "image reference recorded in the layout and tarball")
	arch := flag.String("arch", "amd64", "the binary's GOARCH")
	version := flag.String("version", "dev", "org.opencontainers.image.version")
	flag.Parse()
	if *binary == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "image: -binary and -layout are required")
		os.Exit(2)
	}
	if err := build(*binary, *ca, *out, *tarPath, *tag, *arch, *version); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(binary, ca, out, tarPath, tag, arch, version string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	certs, err := os.ReadFile(ca)
	if err != nil {
		return fmt.Errorf("CA bundle: %w (install Debian's ca-certificates)", err)
	}
	exe := "/usr/local/bin/" + path.Base(binary)
	epoch := sourceDate()
	layerTar, err := layerBytes(epoch, []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, uid))},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("nonroot:x:%d:\n", uid))},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, owner: uid},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: exe[1:], mode: 0o755, data: bin},
	})
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: epoch}, CreatedBy: "hack/image: " + path.Base(binary) + ", CA bundle, nonroot user"}})
	if err != nil {
		return err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{exe}
	cfg.Config.User = strconv.Itoa(uid) + ":" + strconv.Itoa(uid)
	cfg.Config.WorkingDir = "/home/nonroot"
	cfg.Config.Env = []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "HOME=/home/nonroot"}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   path.Base(binary),
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  "https://github.com/stormctl/stormctl",
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag})); err != nil {
		return err
	}
	if tarPath != "" {
		ref, err := name.ParseReference(tag)
		if err != nil {
			return err
		}
		if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
			return err
		}
	}
	return nil
}

type file struct {
	name  string
	mode  int64
	data  []byte
	dir   bool
	owner int
}

// layerBytes writes the files as one tar layer, owned by root unless said,
// every time stamped epoch so that the image is reproducible.
func layerBytes(epoch time.Time, files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch, Uid: f.owner, Gid: f.owner, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sourceDate is $SOURCE_DATE_EPOCH (GoReleaser and reproducible-builds set
// it), else the Unix epoch.
func sourceDate() time.Time {
	if s := strings.TrimSpace(os.Getenv("SOURCE_DATE_EPOCH")); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}
