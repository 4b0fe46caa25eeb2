package flagd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/open-feature/flagd/core/pkg/model"
	"github.com/open-feature/flagd/core/pkg/service/ofrep"
)

// maxOFREPBody bounds a request body: an evaluation context is small.
const maxOFREPBody = 64 << 10

// ofrepHandler serves the OpenFeature Remote Evaluation Protocol: single
// flag and bulk evaluation, the bulk one with an ETag per snapshot and
// context so that polling clients get 304 while nothing changed.
func (s *Server) ofrepHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ofrep/v1/evaluate/flags/{key}", s.ofrepOne)
	mux.HandleFunc("POST /ofrep/v1/evaluate/flags", s.ofrepBulk)
	return mux
}

// ofrepContext reads {"context": {...}}; an empty body is an empty context.
func ofrepContext(r *http.Request) (map[string]any, []byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxOFREPBody))
	if err != nil {
		return nil, nil, err
	}
	var req struct {
		Context map[string]any `json:"context"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, nil, errors.New("the body is not {\"context\": {...}}: " + err.Error())
		}
	}
	canon, _ := json.Marshal(req.Context) // map keys sorted: a stable ETag input
	return req.Context, canon, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) ofrepOne(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	ctx, _, err := ofrepContext(r)
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

func (s *Server) ofrepBulk(w http.ResponseWriter, r *http.Request) {
	ctx, canon, err := ofrepContext(r)
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
