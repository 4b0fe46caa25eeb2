package alerts

import (
	"testing"
	"text/template"
)

// mustTemplate renders a notice as its own JSON, so the test webhook can
// check every field; a real one would render a chat message.
func mustTemplate(t testing.TB) *template.Template {
	t.Helper()
	return template.Must(template.New("notice").Funcs(template.FuncMap{"json": jsonText}).Parse(`{{ json . }}`))
}
