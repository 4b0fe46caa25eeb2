package lab

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// epochFor picks the wall time of simulated time zero for a run of until
// starting now at speed (0: as fast as possible). Samples are stamped
// epoch + simulated time and never ahead of the wall clock: a run at N×
// real time starts until·(1−1/N) in the past and ends about now, so a
// real-time run starts now and a max-speed run ends now.
func epochFor(now time.Time, until time.Duration, speed float64) time.Time {
	if speed <= 0 {
		return now.Add(-until)
	}
	return now.Add(-time.Duration(float64(until) * max(0, 1-1/speed)))
}

// atLabNow evaluates instant queries that name no time at the lab's
// present (now()), rather than at the wall clock: during a run faster than
// real time the newest samples lie behind the wall clock, and after the run
// "now" stays at its end, so `stormctl query run` and the evidence guards
// see the simulated present.
func atLabNow(now func() time.Time, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/api/v1/query") {
			next.ServeHTTP(w, r)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.Form.Get("time") == "" {
			// ParseForm read the body: the handler reads r.Form from now on.
			r.Form.Set("time", strconv.FormatFloat(float64(now().UnixMilli())/1e3, 'f', 3, 64))
		}
		next.ServeHTTP(w, r)
	})
}
