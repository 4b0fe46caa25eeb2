package alerts

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a signed body, the same for webhooks received and
// notifications sent: the signature is HMAC-SHA256 over
// "<timestamp>.<body>", so a captured body cannot be replayed later with
// a new timestamp.
const (
	HeaderSignature = "X-Stormctl-Signature" // sha256=<hex>
	HeaderTimestamp = "X-Stormctl-Timestamp" // unix seconds
)

// MaxSkew is how far a signed request's timestamp may be from now.
const MaxSkew = 5 * time.Minute

// Sign returns the signature header value of body at ts.
func Sign(key, body []byte, ts time.Time) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// SetSignature signs a request's body with key.
func SetSignature(h http.Header, key, body []byte, now time.Time) {
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderSignature, Sign(key, body, now))
}

// VerifySignature checks h's signature of body with key, and that its
// timestamp is within MaxSkew of now. It returns the signature, which the
// receiver claims once so the same request cannot be replayed.
func VerifySignature(h http.Header, key, body []byte, now time.Time) (string, error) {
	sig, tsText := h.Get(HeaderSignature), h.Get(HeaderTimestamp)
	secs, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil || sig == "" {
		return "", refused("bad_signature", http.StatusUnauthorized, "want headers %s and %s", HeaderSignature, HeaderTimestamp)
	}
	ts := time.Unix(secs, 0)
	if d := now.Sub(ts); d > MaxSkew || d < -MaxSkew {
		return "", refused("replayed", http.StatusUnauthorized, "timestamp %s is more than %s from now", ts.UTC().Format(time.RFC3339), MaxSkew)
	}
	if !hmac.Equal([]byte(sig), []byte(Sign(key, body, ts))) {
		return "", refused("bad_signature", http.StatusUnauthorized, "signature does not match the body")
	}
	return sig, nil
}

// checkBearer compares the request's bearer token with want in constant time.
func checkBearer(h http.Header, want string) error {
	got, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return refused("unauthorized", http.StatusUnauthorized, "want Authorization: Bearer <token of --token-env>")
	}
	return nil
}
