package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
)

// TestHostileStateFiles: the files stormctl reads back from its own state
// and cache directories (the label cache, the journal pending file, the
// written record, the journal mark) are held to the same limits as any
// input. A file too deep, too large, too long or malformed is refused with
// its file:line:col and the exit code of the command that read it, within
// 100 MB and a second of CPU, and nothing is acted on half-read.
func TestHostileStateFiles(t *testing.T) {
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	dir := t.TempDir()
	state, cache := filepath.Join(dir, "state"), filepath.Join(dir, "cache")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("current-context: t\ncontexts:\n  t: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pending := filepath.Join(dir, "pending.jsonl")
	env := []string{"STORMCTL_CONFIG=" + cfg, "STORMCTL_REDIS_URL=" + r.URL("", ""), "STORMCTL_PROMETHEUS_URL=http://127.0.0.1:1",
		"STORMCTL_ACTOR=alice", "XDG_STATE_HOME=" + state, "XDG_CACHE_HOME=" + cache, "STORMCTL_JOURNAL_PENDING=" + pending}
	getenv := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	store, err := controlplane.Open(context.Background(), config.Redis{URL: r.URL("", "")}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	written, mark := store.WrittenPath(getenv), store.MarkPath(getenv)
	labels := filepath.Join(cache, "stormctl", "t", "labels.json")

	nested := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	sync := []string{"journal", "sync"}
	shed := []string{"shed", "search", "20", "--ttl", "5m", "--reason", "pool full", "--yes"}
	cases := []struct {
		name string
		path string
		data func() []byte
		size int64 // a sparse file of this size instead of data
		args []string
		code int
		want string // a pattern in stderr; FILE stands for the path
	}{
		{"label cache nested", labels, func() []byte { return nested(1 << 20) }, 0, shed, exit.Refused,
			`the label cache cannot be used: FILE:1:65: nested more than 64 deep`},
		{"label cache huge", labels, nil, 65 << 20, shed, exit.Refused,
			`the label cache cannot be used: FILE: file is 65 MiB; the limit is 64 MiB`},
		{"label cache many values", labels, func() []byte {
			return []byte(`{"service":{"values":[` + strings.TrimSuffix(strings.Repeat(`"a",`, 200_000), ",") + `]}}`)
		}, 0, shed, exit.Refused, `the label cache cannot be used: FILE:1:\d+: more than 100000 values`},
		{"label cache malformed", labels, func() []byte { return []byte("{\n  \"service\": {\"values\": [\"a\" \"b\"]}\n}\n") }, 0, shed, exit.Refused,
			`the label cache cannot be used: FILE:2:30: invalid character '"' after array element`},
		{"pending nested", pending, func() []byte { return append([]byte("{}\n"), nested(200_000)...) }, 0, sync, exit.Error,
			`FILE:2:65: nested more than 64 deep`},
		{"pending long line", pending, func() []byte { return []byte(`{"reason":"` + strings.Repeat("x", 2<<20) + "\"}\n") }, 0, sync, exit.Error,
			`FILE:1:1048577: line longer than 1 MiB`},
		{"pending many lines", pending, func() []byte { return []byte(strings.Repeat("{}\n", 100_001)) }, 0, sync, exit.Error,
			`FILE:100001:1: more than 100000 lines; the limit is 100000`},
		{"pending malformed", pending, func() []byte { return []byte("{}\n\n{\"id\": }\n") }, 0, sync, exit.Error,
			`FILE:3:8: journal record: invalid character '}' looking for beginning of value`},
		{"written nested", written, func() []byte { return nested(200_000) }, 0, sync, exit.Error, `FILE:1:65: nested more than 64 deep`},
		{"written malformed", written, func() []byte { return []byte(`{"id": 5}` + "\n") }, 0, sync, exit.Error,
			`FILE:1:8: journal record: number was used where a string is expected`},
		{"written bad time", written, func() []byte { return []byte("\n" + `{"time": 5}` + "\n") }, 0, sync, exit.Error,
			`FILE:2:1: journal record: Time.UnmarshalJSON: input is not a JSON string`},
		{"mark huge", mark, nil, 1 << 30, []string{"journal", "verify"}, exit.Error, `FILE: journal mark: file is 1024 MiB; the limit is 4 KiB`},
		{"mark nested", mark, func() []byte { return nested(1000) }, 0, []string{"journal", "verify"}, exit.Error,
			`FILE:1:65: journal mark: nested more than 64 deep`},
		{"mark malformed", mark, func() []byte { return []byte("{\"count\": 3,\n \"head\": x}\n") }, 0, []string{"journal", "verify"}, exit.Error,
			`FILE:2:10: journal mark: invalid character 'x' looking for beginning of value`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []string{labels, pending, written, mark} {
				_ = os.Remove(p)
			}
			if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
				t.Fatal(err)
			}
			if c.data != nil {
				if err := os.WriteFile(c.path, c.data(), 0o600); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(c.path, nil, 0o600); err != nil || os.Truncate(c.path, c.size) != nil {
				t.Fatal("sparse file", err)
			}
			before := journalLen(t, store)
			code, stderr, rss, cpu := runChildEnv(t, env, c.args)
			want := strings.ReplaceAll(c.want, "FILE", regexp.QuoteMeta(c.path))
			if code != c.code || !regexp.MustCompile(want).MatchString(stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, c.code, want)
			}
			if lines := strings.Count(stderr, "\n"); lines > 5 {
				t.Errorf("%d lines on stderr", lines)
			}
			if c.path == pending {
				// Refused as a whole: nothing of it reached the journal.
				if n := journalLen(t, store); n != before {
					t.Errorf("the journal went from %d to %d entries on a refused pending file", before, n)
				}
			}
			t.Logf("exit %d, peak RSS %d MB, CPU %v", code, rss>>20, cpu.Round(time.Millisecond))
			if raceEnabled {
				return
			}
			if rss > 100<<20 {
				t.Errorf("peak RSS %d MB, want at most 100 MB", rss>>20)
			}
			if cpu > time.Second {
				t.Errorf("CPU %v, want at most 1s", cpu)
			}
		})
	}
}

func journalLen(t *testing.T, s *controlplane.Store) int {
	t.Helper()
	n := 0
	for _, err := range s.Journal().Range(context.Background(), "-", "+") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
