GO ?= go
FUZZTIME ?= 30s

.PHONY: test deps bench fuzz lint

# test installs the servers the suite needs when they are missing, then runs
# every test with the race detector.
test: deps
	$(GO) test -race -timeout 20m ./...

deps:
	@./scripts/install-test-deps.sh
	@./scripts/kube-assets.sh >/dev/null  # kube-apiserver for envtest; ~1 s when built

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...

# fuzz runs each fuzz target for FUZZTIME (the suite runs their seed corpora).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1x $$pkg || exit 1; \
	  done; \
	done

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
