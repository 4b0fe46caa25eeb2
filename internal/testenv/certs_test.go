package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
)

// TestCertsServeRedisTLS: the server certificate verifies for 127.0.0.1
// against its own CA only, and redis-server accepts the client certificate.
func TestCertsServeRedisTLS(t *testing.T) {
	certs, other := NewCerts(t), NewCerts(t)
	r := StartRedis(t, RedisOptions{TLS: certs.Server()})
	pool := func(c *Certs) *x509.CertPool {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		p := x509.NewCertPool()
		p.AppendCertsFromPEM(pem)
		return p
	}
	pair, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", r.Addr, &tls.Config{RootCAs: pool(certs), Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatalf("TLS to redis with the CA: %v", err)
	}
	defer conn.Close()
	conn.Write([]byte("PING\r\n"))
	buf := make([]byte, 16)
	n, _ := conn.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		t.Fatalf("PING over TLS: %q", buf[:n])
	}
	if c, err := tls.Dial("tcp", r.Addr, &tls.Config{RootCAs: pool(other)}); err == nil {
		c.Close()
		t.Fatal("another CA trusted the server certificate")
	}
}
