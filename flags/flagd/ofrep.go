package flagd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/open-feature/flagd/core/pkg/model"
	"github.com/open-feature/flagd/core/pkg/service/ofrep"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// maxOFREPBody bounds a request body: an evaluation context is small.
const maxOFREPBody = 64 << 10

// ofrepBodyName names a request body in the errors a client gets back.
const ofrepBodyName = "request body"

// ofrepLimits are the bounds of one request body: the size above and, from
// the input limits every stormctl parser shares, depth, values and keys
// per mapping, so that a hostile context never reaches the JSON decoder or
// the targeting rules whole.
func ofrepLimits() yamlfile.Limits {
	lim := yamlfile.DefaultLimits()
	lim.MaxBytes = maxOFREPBody
	return lim
}

// ofrepHandler serves the OpenFeature Remote Evaluation Protocol: single
// flag and bulk evaluation, the bulk one with an ETag per snapshot and
// context so that polling clients get 304 while nothing changed.
func (s *Server) ofrepHandler() http.Handler {
	lim := ofrepLimits()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ofrep/v1/evaluate/flags/{key}", func(w http.ResponseWriter, r *http.Request) { s.ofrepOne(w, r, lim) })
	mux.HandleFunc("POST /ofrep/v1/evaluate/flags", func(w http.ResponseWriter, r *http.Request) { s.ofrepBulk(w, r, lim) })
	return mux
}

// ofrepContext reads {"context": {...}}; an empty body is an empty
// context. A body past the limits, or not JSON, is an error naming
// "request body:line:col", for a 400.
func ofrepContext(r *http.Request, lim yamlfile.Limits) (map[string]any, []byte, error) {
	body, err := yamlfile.ReadAll(ofrepBodyName, r.Body, lim)
	if err != nil {
		return nil, nil, clientErr(err)
	}
	var req struct {
		Context map[string]any `json:"context"`
	}
	if len(body) > 0 {
		if err := yamlfile.DecodeJSON(ofrepBodyName, body, &req, lim); err != nil {
			if !yamlfile.IsLimit(err) {
				err = yamlfile.Prefix(`the body is not {"context": {...}}`, err)
			}
			return nil, nil, clientErr(err)
		}
	}
	canon, _ := json.Marshal(req.Context) // map keys sorted: a stable ETag input
	return req.Context, canon, nil
}

// clientErr drops the fix a limit error suggests to the person running
// stormctl (an environment variable), which a remote client cannot use.
func clientErr(err error) error {
	var e *yamlfile.Error
	if errors.As(err, &e) && e.Fix != "" {
		c := *e
		c.Fix = ""
		return &c
	}
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) ofrepOne(w http.ResponseWriter, r *http.Request, lim yamlfile.Limits) {
	key := r.PathValue("key")
	ctx, _, err := ofrepContext(r, lim)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ofrep.EvaluationError{Key: key, ErrorCode: model.InvalidContextCode, ErrorDetails: err.Error()})
		return
	}
	if !s.eval.loaded.Load() {
		writeJSON(w, http.StatusServiceUnavailable, ofrep.InternalError{ErrorDetails: "no lever snapshot loaded from Redis yet"})
		return
	}
	res := s.eval.eval.ResolveAsAnyValue(r.Context(), "", key, ctx)
	s.metrics.evaluation("ofrep", res.Error)
	if res.Error != nil {
		status, body := ofrep.EvaluationErrorResponseFrom(res)
		writeJSON(w, status, body)
		return
	}
	writeJSON(w, http.StatusOK, ofrep.SuccessResponseFrom(res))
}

func (s *Server) ofrepBulk(w http.ResponseWriter, r *http.Request, lim yamlfile.Limits) {
	ctx, canon, err := ofrepContext(r, lim)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ofrep.BulkEvaluationContextErrorFrom(model.InvalidContextCode, err.Error()))
		return
	}
	cur := s.hub.Current()
	if cur == nil || !s.eval.loaded.Load() {
		writeJSON(w, http.StatusServiceUnavailable, ofrep.InternalError{ErrorDetails: "no lever snapshot loaded from Redis yet"})
		return
	}
	sum := sha256.Sum256(append([]byte(cur.Version+"\n"), canon...))
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	all, meta, err := s.eval.eval.ResolveAllValues(r.Context(), "", ctx)
	s.metrics.evaluation("ofrep", err)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, ofrep.BulkEvaluationContextErrorFrom(model.GeneralErrorCode, err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, ofrep.BulkEvaluationResponseFrom(all, meta))
}
