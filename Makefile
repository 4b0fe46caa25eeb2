GO ?= go
FUZZTIME ?= 30s

.PHONY: test deps bench fuzz lint release-snapshot image

# test installs the servers the suite needs when they are missing, then runs
# every test with the race detector.
test: deps
	$(GO) test -race -timeout 35m ./...
	$(GO) test -race -timeout 10m -tags actuator -run 'Actuate|TestHostileInputFiles' ./cmd/stormctl  # stormctl-actuator's own tests

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
	$(GO) vet -tags actuator ./cmd/stormctl
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# release-snapshot builds the release archives (linux/darwin × amd64/arm64),
# checksums and SBOMs into dist/ with GoReleaser from its tools module,
# without publishing anything.
release-snapshot:
	cd hack/release && $(GO) build -o bin/ github.com/goreleaser/goreleaser/v2 github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod
	PATH="$(CURDIR)/hack/release/bin:$$PATH" goreleaser release --snapshot --clean

# image writes the stormctl-actuator image (static binary, CA bundle,
# non-root user) as an OCI layout into dist/image, without a container engine.
image:
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -tags actuator -ldflags "-s -w" -o dist/image-bin/stormctl-actuator ./cmd/stormctl
	cd hack/image && $(GO) run . -binary ../../dist/image-bin/stormctl-actuator -layout ../../dist/image -tag stormctl-actuator:dev
