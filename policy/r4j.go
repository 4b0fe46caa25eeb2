package policy

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// resilience4j's documented defaults (RetryConfig, IntervalFunction,
// BulkheadConfig, TimeLimiterConfig): 3 attempts counting the first, a
// constant 500 ms wait, an exponential multiplier of 1.5, a randomized
// wait factor of 0.5, 25 concurrent calls per bulkhead, a 1 s time
// limit; Spring Boot's Tomcat serves with 200 threads.
const (
	r4jAttempts      = 3
	r4jWait          = 500 * time.Millisecond
	r4jMultiplier    = 1.5
	r4jRandomFactor  = 0.5
	r4jBulkhead      = 25
	r4jTimeLimit     = time.Second
	tomcatMaxThreads = 200
)

// springProps is a Spring Boot YAML file flattened to relaxed property
// names (lowercase, no dashes or underscores), as Spring binds them.
type springProps struct {
	d     *doc
	props map[string]*node
	names map[string]string // relaxed instance key → name as written
}

func isSpring(root *node) bool {
	p := flatten(root.d, []*node{root})
	for k := range p.props {
		if strings.HasPrefix(k, "resilience4j.") {
			return true
		}
	}
	return false
}

func flatten(d *doc, docs []*node) *springProps {
	p := &springProps{d: d, props: map[string]*node{}, names: map[string]string{}}
	for _, root := range docs {
		p.walk(root, nil, 0)
	}
	return p
}

func (p *springProps) walk(n *node, prefix []string, depth int) {
	if depth > 32 || !n.isMap() {
		if len(prefix) > 0 {
			p.props[strings.Join(prefix, ".")] = n
		}
		return
	}
	for _, e := range n.entries() {
		key := strings.Trim(e.key, "[]")
		segs := append([]string(nil), prefix...)
		for _, s := range strings.Split(key, ".") {
			if len(segs) == 3 && segs[0] == "resilience4j" {
				p.names[norm(s)] = clean(s)
			}
			segs = append(segs, norm(s))
		}
		p.walk(e.v, segs, depth+1)
	}
}

func (p *springProps) get(key string) *node { return p.props[key] }

// instances lists the instance names under resilience4j.<module>.instances
// (and the older .backends).
func (p *springProps) instances(module string) []string {
	seen := map[string]bool{}
	for k := range p.props {
		for _, group := range []string{".instances.", ".backends."} {
			pre := "resilience4j." + module + group
			if rest, ok := strings.CutPrefix(k, pre); ok {
				seen[strings.SplitN(rest, ".", 2)[0]] = true
			}
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// prop returns an instance's property, falling back along its baseConfig
// chain and then to configs.default, as resilience4j merges them.
func (p *springProps) prop(module, inst, key string) *node {
	pre := "resilience4j." + module + "."
	var base *node
	for _, group := range []string{"instances.", "backends."} {
		if n := p.get(pre + group + inst + "." + key); n != nil {
			return n
		}
		if b := p.get(pre + group + inst + ".baseconfig"); b != nil {
			base = b
		}
	}
	seen := map[string]bool{}
	for range 8 {
		name := "default"
		if base != nil {
			name = norm(base.str("baseConfig"))
		}
		if seen[name] {
			return nil
		}
		seen[name] = true
		if n := p.get(pre + "configs." + name + "." + key); n != nil {
			return n
		}
		base = p.get(pre + "configs." + name + ".baseconfig")
	}
	return nil
}

// firstOf is the position of the first property under any of prefixes.
func (p *springProps) firstOf(prefixes ...string) string {
	var first *node
	fl := 0
	for k, n := range p.props {
		for _, pre := range prefixes {
			if l, _ := n.pos(); strings.HasPrefix(k, pre) && l > 0 && (first == nil || l < fl) {
				first, fl = n, l
			}
		}
	}
	if first == nil {
		return clean(p.d.file)
	}
	return first.where()
}

func (p *springProps) has(module, inst string) bool {
	for k := range p.props {
		for _, group := range []string{".instances.", ".backends."} {
			if strings.HasPrefix(k, "resilience4j."+module+group+inst+".") {
				return true
			}
		}
	}
	return false
}

// resilience4j reads the retry instances of a Spring Boot application.yml
// with the circuit breaker, bulkhead and time limiter of the same name.
// Documents for a profile (spring.config.activate.on-profile) are skipped.
func resilience4j(d *doc) []candidate {
	var docs []*node
	skipped := false
	for _, root := range d.docs {
		if root.path("spring", "config", "activate", "on-profile") != nil || root.path("spring", "profiles") != nil {
			skipped = true
			continue
		}
		docs = append(docs, root)
	}
	p := flatten(d, docs)
	app := p.get("spring.application.name").str("spring.application.name")
	var out []candidate
	for _, inst := range p.instances("retry") {
		name := p.names[inst]
		hop := &Hop{Service: "resilience4j:" + name, Format: FormatResilience4j, Retry: Retry{Attempts: r4jAttempts}}
		if app != "" {
			hop.Service = app + "/" + name
		}
		hop.Source = p.firstOf("resilience4j.retry.instances."+inst+".", "resilience4j.retry.backends."+inst+".")
		if skipped {
			hop.Notes = append(hop.Notes, "profile-specific documents skipped")
		}
		p.retry(inst, hop)
		p.neighbours(inst, name, hop, len(out) == 0)
		out = append(out, candidate{name: name, keys: []string{name, inst, app}, target: name, hop: hop})
	}
	return out
}

func (p *springProps) retry(inst string, hop *Hop) {
	r := &hop.Retry
	if n := p.prop("retry", inst, "maxattempts"); n != nil {
		if a, ok := n.integer("maxAttempts", 1, 1000); ok {
			r.Attempts = a
		}
	} else if n := p.prop("retry", inst, "maxretryattempts"); n != nil {
		if a, ok := n.integer("maxRetryAttempts", 1, 1000); ok {
			r.Attempts = a
		}
	} else {
		hop.Notes = append(hop.Notes, "maxAttempts not set: resilience4j's default 3 (counting the first call) applies")
	}
	b := Backoff{Kind: BackoffConstant, Base: Duration(r4jWait), Multiplier: r4jMultiplier, Jitter: JitterNone}
	flag := func(key string) bool {
		v, _ := p.prop("retry", inst, key).boolean(key)
		return v
	}
	if n := p.prop("retry", inst, "waitduration"); n != nil {
		b.Base = springDuration(n, "waitDuration")
		if flag("enableexponentialbackoff") {
			b.Kind = BackoffExponential
			if m := p.prop("retry", inst, "exponentialbackoffmultiplier"); m != nil {
				b.Multiplier, _ = m.number("exponentialBackoffMultiplier", 1, 100)
			}
			if m := p.prop("retry", inst, "exponentialmaxwaitduration"); m != nil {
				b.Max = springDuration(m, "exponentialMaxWaitDuration")
			}
		}
		if flag("enablerandomizedwait") {
			b.Jitter, b.JitterFactor = JitterProportional, r4jRandomFactor
			if f := p.prop("retry", inst, "randomizedwaitfactor"); f != nil {
				b.JitterFactor, _ = f.number("randomizedWaitFactor", 0, 1)
			}
		}
	} else if flag("enableexponentialbackoff") || flag("enablerandomizedwait") {
		hop.Notes = append(hop.Notes, "exponential or randomized wait without waitDuration: resilience4j keeps its constant 500ms")
	}
	if b.Base == 0 {
		b.Kind = BackoffNone
	}
	r.Backoff = b
	r.On = ClassSet(0).With(Classes...)
	if n := p.prop("retry", inst, "retryexceptions"); n != nil {
		r.On = 0
		for _, ex := range n.strs("retryExceptions") {
			cs, known := exceptionClasses(ex)
			if !known {
				hop.Notes = append(hop.Notes, "retryExceptions "+ex+" not recognised: counted as any failure")
			}
			r.On |= cs
		}
	}
	if n := p.prop("retry", inst, "ignoreexceptions"); n != nil {
		for _, ex := range n.strs("ignoreExceptions") {
			if cs, known := exceptionClasses(ex); known {
				r.On &^= cs
			}
		}
	}
	if p.prop("retry", inst, "retryexceptionpredicate") != nil || p.prop("retry", inst, "resultpredicate") != nil {
		hop.Notes = append(hop.Notes, "retry predicates are code: the classes retried may differ")
	}
}

// neighbours takes the time limiter, circuit breaker and bulkhead of the
// retry instance's name; the first instance without a bulkhead holds a
// Tomcat request thread.
func (p *springProps) neighbours(inst, name string, hop *Hop, first bool) {
	if p.has("timelimiter", inst) {
		hop.Timeout = Duration(r4jTimeLimit)
		if n := p.prop("timelimiter", inst, "timeoutduration"); n != nil {
			hop.Timeout = springDuration(n, "timeoutDuration")
		}
	} else {
		hop.Notes = append(hop.Notes, "no timelimiter "+name+": the HTTP client's timeouts are not in application.yml; set timeout: on the hop in a CallPath")
	}
	if p.has("circuitbreaker", inst) {
		hop.Breaker = &Breaker{Kind: "resilience4j circuitbreaker", Scope: "process",
			Source: p.firstOf("resilience4j.circuitbreaker.instances."+inst+".", "resilience4j.circuitbreaker.backends."+inst+".")}
	}
	switch {
	case p.has("bulkhead", inst):
		size := r4jBulkhead
		if n := p.prop("bulkhead", inst, "maxconcurrentcalls"); n != nil {
			size, _ = n.integer("maxConcurrentCalls", 1, 1_000_000)
		}
		hop.Pool = &Pool{Name: "bulkhead " + name, Size: size, Replicas: 1}
	case p.has("threadpoolbulkhead", inst):
		size := 0
		if n := p.prop("threadpoolbulkhead", inst, "maxthreadpoolsize"); n != nil {
			size, _ = n.integer("maxThreadPoolSize", 1, 1_000_000)
		}
		if size > 0 {
			hop.Pool = &Pool{Name: "thread-pool-bulkhead " + name, Size: size, Replicas: 1}
		} else {
			hop.Notes = append(hop.Notes, "thread-pool-bulkhead without maxThreadPoolSize: its size is the host's processor count")
		}
	case first:
		size := tomcatMaxThreads
		if n := p.get("server.tomcat.threads.max"); n != nil {
			size, _ = n.integer("server.tomcat.threads.max", 1, 1_000_000)
		} else {
			hop.Notes = append(hop.Notes, "no bulkhead: calls hold Tomcat's request threads (default 200), shared by every endpoint")
		}
		hop.Pool = &Pool{Name: "tomcat threads", Size: size, Replicas: 1, Shared: true}
	}
}

// exceptionClasses maps a Java exception class name to the failures it
// stands for; false when the name is not one the analysis knows.
func exceptionClasses(ex string) (ClassSet, bool) {
	simple := ex[strings.LastIndexAny(ex, ".$")+1:]
	var none ClassSet
	switch simple {
	case "Exception", "Throwable", "RuntimeException":
		return none.With(Classes...), true
	case "TimeoutException", "SocketTimeoutException", "ReadTimeoutException", "HttpTimeoutException", "WriteTimeoutException":
		return none.With(Timeout), true
	case "ConnectException", "UnknownHostException", "NoRouteToHostException", "ConnectTimeoutException", "HttpHostConnectException":
		return none.With(ConnectError), true
	case "IOException", "ResourceAccessException", "WebClientRequestException", "RetryableException", "UncheckedIOException":
		return none.With(Timeout, ConnectError, Reset), true
	case "SocketException", "ClosedChannelException", "PrematureCloseException":
		return none.With(Reset, ConnectError), true
	case "HttpServerErrorException", "InternalServerError", "BadGateway", "ServiceUnavailable", "GatewayTimeout", "ServerErrorException":
		return none.With(ServerError), true
	case "TooManyRequests":
		return none.With(Throttled), true
	case "HttpClientErrorException":
		return none.With(Throttled), true
	case "HttpStatusCodeException", "WebClientResponseException", "FeignException", "RestClientResponseException", "ResponseStatusException":
		return none.With(ServerError, Throttled), true
	case "CallNotPermittedException", "BulkheadFullException":
		return none, true
	}
	return none.With(Classes...), false
}

var springSimpleRE = regexp.MustCompile(`^([+-]?[0-9]+)(ns|us|ms|s|m|h|d)?$`)
var isoRE = regexp.MustCompile(`^P(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?$`)

// springDuration reads a Spring Boot duration: 500ms, 10s, 500 (ms) or
// ISO-8601 such as PT0.5S.
func springDuration(n *node, what string) Duration {
	s, ok := n.scalar(what)
	if !ok {
		return 0
	}
	s = strings.TrimSpace(s)
	if m := springSimpleRE.FindStringSubmatch(s); m != nil {
		v, err := strconv.ParseInt(m[1], 10, 64)
		unit := map[string]time.Duration{"": time.Millisecond, "ns": 1, "us": time.Microsecond, "ms": time.Millisecond,
			"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
		if err == nil && v >= 0 && v <= int64(24*time.Hour/unit) {
			return Duration(time.Duration(v) * unit)
		}
	} else if m := isoRE.FindStringSubmatch(strings.ToUpper(s)); m != nil && s != "P" && !strings.HasSuffix(strings.ToUpper(s), "T") {
		var d float64
		for i, unit := range []float64{86400, 3600, 60, 1} {
			if m[i+1] != "" {
				v, _ := strconv.ParseFloat(m[i+1], 64)
				d += v * unit
			}
		}
		if d <= 86400 {
			return Duration(time.Duration(d * float64(time.Second)))
		}
	}
	n.d.bad(n, "a Spring Boot duration such as 500ms, 10s, or ISO-8601 such as PT0.5S", "%s %q", what, s)
	return 0
}
