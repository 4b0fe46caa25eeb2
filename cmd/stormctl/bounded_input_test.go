package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/iostreams"
)

// boundedArgs carries a child's command line (see TestBoundedInputChild).
const boundedArgs = "STORMCTL_TEST_BOUNDED_ARGS"

// TestBoundedInputChild runs stormctl's Main in a process of its own when
// the parent test asks for it, so that the parent can read the child's
// peak memory (max RSS) and CPU time.
func TestBoundedInputChild(t *testing.T) {
	raw := os.Getenv(boundedArgs)
	if raw == "" {
		t.Skip("run by TestHostileInputFiles")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(Main(args, iostreams.System()))
}

// hostileFiles writes the four hostile shapes of an input file.
func hostileFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	// 2 MB of brackets: 1M levels deep.
	write("nested.yaml", []byte(strings.Repeat("[", 1<<20)+strings.Repeat("]", 1<<20)))
	// Each line ten aliases of the one before: 10^6 values from 400 bytes.
	var b strings.Builder
	b.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	for c := 'b'; c <= 'f'; c++ {
		fmt.Fprintf(&b, "%c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*%c, ", c-1), 10), ", "))
	}
	write("aliases.yaml", []byte(b.String()))
	// 9 MB, past the 8 MiB limit (sparse: refused by its size alone).
	big := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 9<<20); err != nil {
		t.Fatal(err)
	}
	files["huge.yaml"] = big
	// 1,900 unknown keys in one mapping, every one of them a mistake.
	b.Reset()
	b.WriteString("apiVersion: stormctl/v1\nkind: CallPath\n")
	for i := range 1900 {
		fmt.Fprintf(&b, "bogus_%d: 1\n", i)
	}
	write("many.yaml", []byte(b.String()))
	return files
}

// TestHostileInputFiles: every YAML/JSON input path refuses the hostile
// shapes with exit 2 and the file:line:col where the limit was reached,
// within 100 MB of memory and a second of CPU, and never floods stderr.
func TestHostileInputFiles(t *testing.T) {
	dir := t.TempDir()
	files := hostileFiles(t, dir)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("current-context: t\ncontexts:\n  t: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inputs := []struct {
		name string
		args func(file string) []string
	}{
		{"config", func(f string) []string { return []string{"--config", f, "query", "list"} }},
		{"playbook", func(f string) []string { return []string{"playbook", "validate", f} }},
		{"queries", func(f string) []string {
			d := filepath.Join(dir, "q-"+filepath.Base(f))
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(f, filepath.Join(d, filepath.Base(f))); err != nil {
				t.Fatal(err)
			}
			return []string{"query", "list", "--queries", d}
		}},
		{"policy", func(f string) []string { return []string{"policy", "analyze", f} }},
		{"scenario", func(f string) []string { return []string{"lab", "run", "--scenario", f} }},
		{"events", func(f string) []string { return []string{"lab", "run", "--scenario", "gateway-blip", "--events", f} }},
		{"mapping", func(f string) []string { return []string{"actuate", "kubernetes", "--mapping", f} }},
	}
	shapes := []struct {
		file string
		want string // a pattern in stderr
	}{
		{"nested.yaml", `nested\.yaml:1:65: nested more than 64 deep`},
		{"aliases.yaml", `aliases\.yaml:5:\d+: aliases expand the document past 100000 values`},
		{"huge.yaml", `huge\.yaml: file is 9 MiB; the limit is 8 MiB`},
		// The YAML library names one unknown field; policy names them all.
		{"many.yaml", `many\.yaml:\d+:\d+: unknown field|many\.yaml:1:\d+: mapping was used where sequence|many\.yaml:1:1: .*\n(.*\n){19}\.\.\. and \d+ more problems`},
	}
	for _, in := range inputs {
		if in.name == "mapping" && !withKubernetes {
			continue // the mapping is read by stormctl-actuator: make test runs this test again with -tags actuator
		}
		for _, sh := range shapes {
			t.Run(in.name+"/"+sh.file, func(t *testing.T) {
				args := in.args(files[sh.file])
				if in.name != "config" {
					args = append([]string{"--config", cfg}, args...)
				}
				code, stderr, rss, cpu := runChild(t, args)
				if code != exit.Usage {
					t.Errorf("exit %d, want %d: %s", code, exit.Usage, stderr)
				}
				if !regexp.MustCompile(sh.want).MatchString(stderr) {
					t.Errorf("stderr %q, want %q", clip(stderr), sh.want)
				}
				if in.name == "policy" && sh.file == "many.yaml" && !strings.Contains(stderr, "... and 1880 more problems") {
					t.Errorf("policy: want the first 20 of 1,900 problems: %s", clip(stderr))
				}
				if lines := strings.Count(stderr, "\n"); lines > 25 {
					t.Errorf("%d lines on stderr", lines)
				}
				if raceEnabled {
					return
				}
				if rss > 100<<20 {
					t.Errorf("peak RSS %d MB, want at most 100 MB", rss>>20)
				}
				if cpu > time.Second {
					t.Errorf("CPU %v, want at most 1s", cpu)
				}
				t.Logf("%s: exit %d, peak RSS %d MB, CPU %v", sh.file, code, rss>>20, cpu.Round(time.Millisecond))
			})
		}
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// runChild runs stormctl args in a child process; it returns the exit
// code, stderr, the peak resident memory and the CPU time used.
func runChild(t *testing.T, args []string) (int, string, int64, time.Duration) {
	t.Helper()
	return runChildEnv(t, nil, args)
}

// runChildEnv is runChild with env (KEY=value) added to the child's.
func runChildEnv(t *testing.T, env []string, args []string) (int, string, int64, time.Duration) {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoundedInputChild$")
	cmd.Env = append(os.Environ(), boundedArgs+"="+string(raw), "STORMCTL_REDIS_URL=redis://127.0.0.1:1", "NO_COLOR=1")
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return cmd.ProcessState.ExitCode(), stderr.String(), ru.Maxrss << 10,
		cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
