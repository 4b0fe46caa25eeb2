package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Load builds a client TLS configuration: the CA to trust, the server name
// to expect and the client certificate to present. key names the config
// section in errors, e.g. "prometheus.tls".
func (t TLS) Load(key string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.ca-file: %w", key, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.ca-file %s: no PEM certificate in it", key, t.CAFile)
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New(key + ": cert-file and key-file go together; set both or neither")
	}
	if t.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s.cert-file/key-file: %w", key, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
