package deploy

import (
	"archive/tar"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goTool runs the go command in dir and fails the test on error.
func goTool(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestImageIsStaticBinaryAndCertsOnly builds stormctl-actuator for linux,
// builds its image with hack/image (no container engine) and reads the OCI
// layout back with the standard library: one layer with the static binary,
// the CA bundle and the passwd entry of a non-root user, no shell, and the
// binary runs.
func TestImageIsStaticBinaryAndCertsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary and an image")
	}
	dir := t.TempDir()
	tool := filepath.Join(dir, "image-tool")
	toolsModuleBuilds(t, "image", ".", tool)
	bin := filepath.Join(dir, "stormctl-actuator")
	goTool(t, repoRoot, []string{"CGO_ENABLED=0", "GOOS=linux"}, "build", "-tags", "actuator", "-ldflags=-s -w", "-o", bin, "./cmd/stormctl")
	lay := filepath.Join(dir, "layout")
	if out, err := exec.Command(tool, "-binary", bin, "-layout", lay, "-tag", "stormctl-actuator:test", "-arch", "amd64").CombinedOutput(); err != nil {
		t.Fatalf("image tool: %v\n%s", err, out)
	}

	var index struct {
		Manifests []struct {
			MediaType, Digest string
			Annotations       map[string]string
		}
	}
	readJSON(t, filepath.Join(lay, "index.json"), &index)
	if len(index.Manifests) != 1 || index.Manifests[0].MediaType != "application/vnd.oci.image.manifest.v1+json" ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "stormctl-actuator:test" {
		t.Fatalf("index.json: %+v", index)
	}
	var manifest struct {
		Config struct{ MediaType, Digest string }
		Layers []struct {
			MediaType, Digest string
			Size              int64
		}
	}
	readJSON(t, blob(lay, index.Manifests[0].Digest), &manifest)
	var cfg struct {
		OS, Architecture string
		Config           struct {
			Entrypoint, Cmd, Env []string
			User                 string
		}
	}
	readJSON(t, blob(lay, manifest.Config.Digest), &cfg)
	if cfg.OS != "linux" || !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/local/bin/stormctl-actuator"}) || len(cfg.Config.Cmd) != 0 {
		t.Errorf("config: os %s, entrypoint %q, cmd %q", cfg.OS, cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want the non-root 65532:65532", cfg.Config.User)
	}
	if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("layers: %+v", manifest.Layers)
	}
	const maxCompressed = 40 << 20
	if s := manifest.Layers[0].Size; s > maxCompressed {
		t.Errorf("layer is %d bytes compressed, more than %d", s, maxCompressed)
	}

	files := layerFiles(t, blob(lay, manifest.Layers[0].Digest), dir)
	want := []string{"etc/group", "etc/passwd", "etc/ssl/certs/ca-certificates.crt", "usr/local/bin/stormctl-actuator"}
	var got []string
	for name, mode := range files {
		if !strings.HasSuffix(name, "/") {
			got = append(got, name)
		}
		if mode&0o111 != 0 && !strings.HasSuffix(name, "/") && name != "usr/local/bin/stormctl-actuator" {
			t.Errorf("%s is executable", name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("files %q, want only %q (no shell, no package manager)", got, want)
	}
	passwd, _ := os.ReadFile(filepath.Join(dir, "rootfs/etc/passwd"))
	if !strings.HasPrefix(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("passwd: %q", passwd)
	}
	exe := filepath.Join(dir, "rootfs/usr/local/bin/stormctl-actuator")
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: it is not static")
		}
	}
	f.Close()
	out, err := exec.Command(exe, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "stormctl-actuator ") {
		t.Errorf("the image's binary: %v %s", err, out)
	}
}

func blob(lay, digest string) string {
	alg, hex, _ := strings.Cut(digest, ":")
	return filepath.Join(lay, "blobs", alg, hex)
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// layerFiles unpacks a gzip tar layer under dir/rootfs and returns each
// entry's mode.
func layerFiles(t *testing.T, path, dir string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h.Mode
		if h.Typeflag != tar.TypeReg || strings.Contains(h.Name, "..") {
			continue
		}
		dst := filepath.Join(dir, "rootfs", h.Name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, os.FileMode(h.Mode)); err != nil {
			t.Fatal(err)
		}
	}
}
