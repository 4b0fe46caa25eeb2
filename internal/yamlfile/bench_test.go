package yamlfile

import (
	"os"
	"testing"

	"github.com/goccy/go-yaml/parser"
)

// BenchmarkRead compares the bounded reader (limits checked, then parsed,
// then aliases sized) with the YAML library's parse alone, on every YAML
// and JSON file of the repository. Compare the ns/op of the two.
func BenchmarkRead(b *testing.B) {
	var files [][]byte
	var names []string
	for _, f := range projectFiles(b) {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := parser.ParseBytes(data, 0); err != nil {
			continue // fixtures of malformed files
		}
		files, names = append(files, data), append(names, f)
	}
	b.Run("unbounded", func(b *testing.B) {
		for b.Loop() {
			for _, d := range files {
				if _, err := parser.ParseBytes(d, 0); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("bounded", func(b *testing.B) {
		for b.Loop() {
			for i, d := range files {
				if _, err := Parse(names[i], d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
