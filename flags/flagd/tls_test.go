package flagd_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"buf.build/gen/go/open-feature/flagd/connectrpc/go/flagd/sync/v1/syncv1connect"
	syncv1 "buf.build/gen/go/open-feature/flagd/protocolbuffers/go/flagd/sync/v1"
	"connectrpc.com/connect"
	gofd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"

	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// TestTLSOnEveryListener: with --tls-cert/--tls-key the Go flagd provider
// connects over TLS in both modes and a plaintext client is refused.
func TestTLSOnEveryListener(t *testing.T) {
	certs := testenv.NewCerts(t)
	e := startEnv(t, flagd.Options{TLSCert: certs.ServerCert, TLSKey: certs.ServerKey})
	e.w.set(t, lever.Retries, "checkout->payments", "off", time.Hour)
	for mode, opt := range map[string]gofd.ProviderOption{
		"in-process": gofd.WithInProcessResolver(), "rpc": gofd.WithRPCResolver(),
	} {
		addr := e.srv.Addr("sync")
		if mode == "rpc" {
			addr = e.srv.Addr("eval")
		}
		c := goClient(t, opt, gofd.WithPort(port(t, addr)), gofd.WithTLS(certs.CAFile))
		eventually(t, 5*time.Second, mode+" over TLS", func() bool {
			return !c.Boolean(context.Background(), lever.RetriesEnabled, true, ctxOf("checkout", "payments"))
		})
	}
	if code, _ := get(t, "http://"+e.srv.Addr("management")+"/healthz"); code == http.StatusOK {
		t.Error("the management port answered plaintext HTTP under TLS")
	}
}

// TestMutualTLS: with --client-ca a client without a certificate signed by
// that CA is refused; one with it is served.
func TestMutualTLS(t *testing.T) {
	certs := testenv.NewCerts(t)
	e := startEnv(t, flagd.Options{TLSCert: certs.ServerCert, TLSKey: certs.ServerKey, ClientCA: certs.CAFile})
	pem, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	clientCert, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(cfg *tls.Config) error {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
		_, err := syncv1connect.NewFlagSyncServiceClient(hc, "https://"+e.srv.Addr("sync")).
			FetchAllFlags(context.Background(), connect.NewRequest(&syncv1.FetchAllFlagsRequest{}))
		return err
	}
	if err := fetch(&tls.Config{RootCAs: roots}); err == nil {
		t.Error("a client without a certificate was served under --client-ca")
	}
	other := testenv.NewCerts(t)
	stranger, _ := tls.LoadX509KeyPair(other.ClientCert, other.ClientKey)
	if err := fetch(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{stranger}}); err == nil {
		t.Error("a client certificate from another CA was accepted")
	}
	if err := fetch(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clientCert}}); err != nil {
		t.Errorf("the CA's client was refused: %v", err)
	}
	if _, err := flagd.Start(flagd.Options{Redis: e.client, ClientCA: certs.CAFile, SyncAddr: "127.0.0.1:0"}); err == nil ||
		!strings.Contains(err.Error(), "--client-ca needs --tls-cert") {
		t.Errorf("--client-ca without a certificate: %v", err)
	}
}
