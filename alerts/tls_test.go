package alerts

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	commoncfg "github.com/prometheus/common/config"

	"github.com/stormctl/stormctl/internal/testenv"
)

// TestServeTLS: the webhook served over TLS with a certificate of a
// throwaway CA. Alertmanager's own HTTP client (prometheus/common/config,
// as webhook_configs' http_config builds it) with that CA in tls_config
// and a bearer token is answered and acted on; a client that trusts
// another CA fails the handshake, and plain HTTP to the TLS port is
// refused; neither acts.
func TestServeTLS(t *testing.T) {
	certs := testenv.NewCerts(t)
	rg := newRig(t, testenvOptions())
	s := rg.stack(t, t.Name(), stackOptions{certs: certs})
	url := "https://" + s.srv.Addr() + "/alertmanager"
	client := func(ca string) *http.Client {
		c, err := commoncfg.NewClientFromConfig(commoncfg.HTTPClientConfig{
			Authorization: &commoncfg.Authorization{Type: "Bearer", Credentials: commoncfg.Secret(testToken)},
			TLSConfig:     commoncfg.TLSConfig{CAFile: ca},
		}, "webhook")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	body := fixture(t, nil)

	other := testenv.NewCerts(t)
	if resp, err := client(other.CAFile).Post(url, "application/json", bytes.NewReader(body)); err == nil {
		resp.Body.Close()
		t.Fatalf("a client trusting another CA got HTTP %d, want a failed handshake", resp.StatusCode)
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted: %v, want a certificate error", err)
	}
	resp, err := http.Post("http://"+s.srv.Addr()+"/alertmanager", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS listener: HTTP %d, want 400", resp.StatusCode)
	}
	if n := countEvents(s.entries(t), AlertFired); n != 0 {
		t.Fatalf("%d alert.fired before a trusted delivery, want 0", n)
	}

	resp, err = client(certs.CAFile).Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("over TLS with the CA: HTTP %d (TLS %v), want 200", resp.StatusCode, resp.TLS != nil)
	}
	es := s.entries(t)
	if n := countEvents(es, AlertFired); n != 1 {
		t.Errorf("%d alert.fired after the trusted delivery, want 1", n)
	}
}
