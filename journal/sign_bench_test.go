package journal

import (
	"testing"
	"time"
)

// BenchmarkSeal measures what signing adds to sealing one entry (the cost
// paid inside every control-plane write), against the unsigned Seal in
// the same run: an ed25519 key file, an RSA-3072 key file, and an
// ed25519 key in a real ssh-agent (one socket round trip per signature).
func BenchmarkSeal(b *testing.B) {
	dir := b.TempDir()
	ed := newKey(b, dir, "ed", "ed25519")
	rsa := newKey(b, dir, "rsa", "rsa")
	sock := startAgent(b, dir, ed.path)
	agentSigner, err := LoadSigner(ed.path+".pub", func(k string) string { return map[string]string{"SSH_AUTH_SOCK": sock}[k] })
	if err != nil {
		b.Fatal(err)
	}
	e := scriptedIncident()[2]
	prev := "4d0fa030141fef9e4f8b84c710ae9b3266976b9c7d9a514fcd32f9903bf33a14"
	var base float64
	for _, tc := range []struct {
		name   string
		signer Signer
	}{{"unsigned", nil}, {"ed25519-file", ed.signer}, {"rsa3072-file", rsa.signer}, {"ed25519-agent", agentSigner}} {
		b.Run(tc.name, func(b *testing.B) {
			var size int
			start := time.Now()
			for b.Loop() {
				_, stored, err := e.SealWith(prev, tc.signer)
				if err != nil {
					b.Fatal(err)
				}
				size = len(stored)
			}
			b.ReportMetric(float64(size), "B-stored")
			per := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			if tc.signer == nil {
				base = per
			}
			if base > 0 {
				b.ReportMetric(per/base, "x-unsigned")
			}
		})
	}
}

// BenchmarkCheck measures verifying a 10,000-entry journal with every
// entry signed (ed25519) and checked against allowed_signers, against
// checking the hash chain of the same journal unsigned, in the same run.
func BenchmarkCheck(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	alice := newKey(b, dir, "alice", "ed25519")
	_, allowed := allowedFile(b, dir, "alice "+alice.pub)
	build := func(signer Signer) [][]byte {
		lines := make([][]byte, n)
		prev := ""
		for i := range lines {
			e := scriptedIncident()[i%11]
			e.Actor, e.ID = "alice", NewID()
			sealed, stored, err := e.SealWith(prev, signer)
			if err != nil {
				b.Fatal(err)
			}
			prev, lines[i] = sealed.Hash, stored
		}
		return lines
	}
	unsigned, signed := build(nil), build(alice.signer)
	var base float64
	for _, tc := range []struct {
		name  string
		lines [][]byte
		opts  VerifyOptions
	}{
		{"chain-only", unsigned, VerifyOptions{}},
		{"signed-allowed-signers", signed, VerifyOptions{AllowedSigners: allowed, RequireSignatures: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				rep, err := Check(records(tc.lines), tc.opts)
				if err != nil || rep.Entries != n {
					b.Fatalf("%v %d", err, rep.Entries)
				}
			}
			per := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			b.ReportMetric(per/n/1000, "µs/entry")
			// The last run of the baseline is the one the ratio is against
			// (the first run of a benchmark is a one-iteration probe).
			if tc.opts.AllowedSigners == nil {
				base = per
			}
			b.ReportMetric(per/base, "x-chain-only")
		})
	}
}
