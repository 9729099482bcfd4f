# Muster. `make help` lists the targets.
#
# Tools and control-plane binaries are built from the Go module proxy into
# $(MUSTER_CACHE), one folder per tool and version, so only the first run
# pays for them. The folder is git-ignored.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

export MUSTER_CACHE ?= $(CURDIR)/.cache
# The project's version: the binaries report it, and the Helm chart's
# version and appVersion (v$(VERSION)) must match it (tools/chart checks).
VERSION := 0.1.0
CONTROLLER_GEN_VERSION := v0.21.0
GOLANGCI_LINT_VERSION  := v2.15.0
CONTROLLER_GEN := $(MUSTER_CACHE)/tools/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen
# conversion-gen writes the field-by-field conversions between API versions;
# its version follows the k8s libraries in go.mod.
CONVERSION_GEN_VERSION := v0.36.3
CONVERSION_GEN := $(MUSTER_CACHE)/tools/conversion-gen-$(CONVERSION_GEN_VERSION)/conversion-gen
# kube-api-linter has no releases: a pseudo-version. tools/lint/go.mod pins it
# and GOLANGCI_LINT_VERSION, and its go.sum holds their checksums.
KUBE_API_LINTER_VERSION := v0.0.0-20260716143926-092fe0c72997
# helm, built from tools/chart, whose go.mod pins the Helm libraries the
# chart's tests render with: the binary installs the chart with the same
# Helm (test/install).
HELM_VERSION := v3.22.0
HELM           := $(MUSTER_CACHE)/tools/helm-$(HELM_VERSION)/helm
# golangci-lint with kube-api-linter compiled in, built from tools/lint: the
# one golangci-lint, for the code (.golangci.yml) and the API types
# (.golangci-kal.yml), so a fresh machine builds golangci-lint once.
GOLANGCI_KAL   := $(MUSTER_CACHE)/tools/golangci-lint-kal-$(GOLANGCI_LINT_VERSION)-$(KUBE_API_LINTER_VERSION)/golangci-lint-kal

# Packages of the main module that unit tests cover: everything but the
# tiers that need a cluster.
UNIT_PKGS = $$(go list ./... | grep -v -e /test/integration -e /test/e2e -e /test/chaos -e /test/install)
# Separate modules with their own go.mod.
TOOL_MODULES := tools/procnode tools/chart

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) $(CONVERSION_GEN) ## Generate deepcopy and conversion code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONVERSION_GEN) --output-file zz_generated.conversion.go --go-header-file hack/boilerplate.go.txt ./api/v1alpha1

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests in config/, and copy the CRD into the Helm chart.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true rbac:roleName=muster-operator paths=./... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	rm -f charts/muster/crds/*.yaml
	go run ./hack/release crd -out charts/muster/crds/muster.dev_trainingjobs.yaml

.PHONY: fmt
fmt: ## Format the code.
	gofmt -s -w $$(git ls-files '*.go' | grep -v zz_generated)

.PHONY: vet
vet: ## Run go vet.
	go vet ./...
	@for m in $(TOOL_MODULES); do [ -f $$m/go.mod ] && (cd $$m && go vet ./...) || true; done

.PHONY: lint
lint: lint-api $(GOLANGCI_KAL) ## Run golangci-lint on every module, and lint-api.
	$(GOLANGCI_KAL) run ./...
	@for m in $(TOOL_MODULES); do (cd $$m && $(GOLANGCI_KAL) run --config $(CURDIR)/.golangci.yml ./...); done

.PHONY: lint-api
lint-api: $(GOLANGCI_KAL) ## Check the API types in api/ against the Kubernetes API conventions (kube-api-linter).
	$(GOLANGCI_KAL) run --config .golangci-kal.yml ./api/...

.PHONY: verify
verify: generate manifests fmt vet lint test-chart ## Regenerate, lint, test the chart, and fail if anything generated or formatted differs from git.
	@git diff --exit-code -- api charts config internal cmd test tools || \
		{ echo "Generated or formatted files are out of date: run 'make generate manifests fmt' and commit."; exit 1; }

##@ Build

.PHONY: build
build: ## Build the operator and the CLI into bin/.
	go build -ldflags "-X github.com/muster-dev/muster/internal/version.Version=v$(VERSION)" -o bin/muster-operator ./cmd/muster-operator
	go build -ldflags "-X github.com/muster-dev/muster/internal/version.Version=v$(VERSION)" -o bin/muster ./cmd/muster

# A release's version with its v (make release VERSION=v0.2.0 or 0.2.0).
RELEASE_VERSION = v$(VERSION:v%=%)

.PHONY: image
image: ## Build the operator image from source (linux/amd64 and linux/arm64, no Docker) into _output/image as an OCI layout; IMAGE_PUSH=host/path:tag also pushes it.
	go run ./hack/release image -version $(RELEASE_VERSION) $(if $(IMAGE_PUSH),-push $(IMAGE_PUSH))

.PHONY: release
release: ## Cut release VERSION into _output/release (image, install.yaml, chart, CLIs, SHA256SUMS, notes); PUSH=1 REGISTRY=host/path pushes the image and chart.
	go run ./hack/release release -version $(RELEASE_VERSION) $(if $(REGISTRY),-registry $(REGISTRY)) $(if $(PUSH),-push)

##@ Test

.PHONY: test
# The tiers `make test` runs, in order.
TEST_TIERS ?= test-unit test-fuzz test-integration test-e2e test-chaos

test: ## Run every test tier, one after the other, each saying how long it took.
	@for tier in $(TEST_TIERS); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$tier || { echo "== $$tier failed after $$(( $$(date +%s) - start ))s"; exit 1; }; \
		echo "== $$tier took $$(( $$(date +%s) - start ))s"; \
	done

.PHONY: test-unit
test-unit: ## Unit tests of pure logic, with the race detector (no cluster).
	go test -race -count=1 $(UNIT_PKGS)
	cd tools/procnode && go test -race -count=1 ./...
	@# The chart's tests render and lint templates in one goroutine: without
	@# the race detector they share the build make verify already made,
	@# where -race would compile Helm and its Kubernetes libraries again.
	$(MAKE) --no-print-directory test-chart

.PHONY: test-chart
test-chart: ## Lint and render the Helm chart; check it against config/ (rules, CRD, flags). UPDATE=1 rewrites its golden file.
	cd tools/chart && go test -count=1 ./... $(if $(UPDATE),-update)

# How long test-fuzz runs each fuzz target, and fuzz for long runs.
FUZZTIME_SHORT ?= 10s
FUZZTIME ?= 10m

.PHONY: test-fuzz
test-fuzz: ## Every fuzz target for 10s (FUZZTIME_SHORT), from its checked-in corpus, shrinking a new input for 1s at most, one target per core at a time; under a minute in all.
	FUZZTIME=$(FUZZTIME_SHORT) FUZZMINIMIZETIME=1s hack/fuzz.sh

.PHONY: fuzz
fuzz: ## Every fuzz target for a long run: 10m each (make fuzz FUZZTIME=1h).
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

.PHONY: test-integration
test-integration: ## The operator against a real kube-apiserver and etcd (built on first use), with the race detector.
	@bin_dir=$$(hack/build-cluster.sh) && \
		MUSTER_K8S_BIN=$$bin_dir go test -race -count=1 -timeout 20m ./test/integration/...

.PHONY: test-e2e
test-e2e: deps $(HELM) ## The local cluster with real processes and real torch; a release cut, installed, upgraded and uninstalled on one (needs root).
	@# One after the other: each starts a cluster on the same ports. The
	@# install tests mostly wait on their cluster, so the gang schedulers and
	@# Kueue, which only the e2e tests run, are built meanwhile (once, into the
	@# cache; at low priority), and the e2e tests start when both are done.
	@log=$$(mktemp); nice -n 19 hack/build-cluster.sh -extras >"$$log" 2>&1 & extras=$$!; \
		MUSTER_HELM=$(HELM) go test -count=1 -timeout 30m ./test/install/... || rc=$$?; \
		wait $$extras || { cat "$$log"; echo "building the gang schedulers and Kueue failed" >&2; exit 1; }; \
		rm -f "$$log"; exit $${rc:-0}
	@# Every e2e test is parallel and waits for its lane (test/e2e/lanes_test.go):
	@# -parallel only has to admit them all.
	go test -count=1 -parallel 64 -timeout 60m ./test/e2e/...

.PHONY: test-chaos
test-chaos: deps ## Crash the operator, the control plane and the node under running jobs (needs root; MUSTER_CHAOS_SEED replays a run).
	go test -count=1 -timeout 30m -v ./test/chaos/...

.PHONY: deps
deps: ## Install the system packages the local cluster and the examples need.
	hack/install-deps.sh

##@ Try it

.PHONY: dev-up
dev-up: deps ## Start the local cluster (root). Then: eval "$$(go run ./tools/musterdev env)"
	go run ./tools/musterdev up $(DEV_FLAGS)

.PHONY: dev-down
dev-down: ## Stop the local cluster and remove its state.
	go run ./tools/musterdev down

.PHONY: demo
demo: deps ## Start a local cluster, run the elastic PyTorch example (4 -> 2 -> 3 workers), clean up.
	go run ./tools/musterdev demo $(DEMO_FLAGS)

.PHONY: bench
bench: deps ## Benchmarks on the local cluster (root); writes _output/bench/report.md with every ratio to its floor.
	go run ./test/bench $(BENCH_FLAGS)

##@ Tools

$(CONTROLLER_GEN):
	GOBIN=$(dir $@) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(CONVERSION_GEN):
	GOBIN=$(dir $@) go install k8s.io/code-generator/cmd/conversion-gen@$(CONVERSION_GEN_VERSION)

# The folder is keyed by the versions above, so refuse to build if
# tools/lint/go.mod pins others: the cache would keep serving a stale binary.
# Keyed by HELM_VERSION, so refuse to build if tools/chart/go.mod pins
# another Helm.
$(HELM):
	@got=$$(cd tools/chart && go list -m -f '{{.Version}}' helm.sh/helm/v3); \
		[ "$$got" = "$(HELM_VERSION)" ] || { echo "tools/chart/go.mod pins helm $$got, the Makefile $(HELM_VERSION): make them agree." >&2; exit 1; }
	@# The ldflags of Helm's own Makefile: its version, and the Kubernetes
	@# version of its client-go as the default for `helm template` and lint.
	cd tools/chart && minor=$$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2) && \
		go build -ldflags "-X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
			-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$$minor \
			-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$$minor" \
			-o $@ helm.sh/helm/v3/cmd/helm

.PHONY: helm
helm: $(HELM) ## Build helm (the version tools/chart pins) into the cache and print its path.
	@echo $(HELM)

$(GOLANGCI_KAL):
	@for m in github.com/golangci/golangci-lint/v2@$(GOLANGCI_LINT_VERSION) sigs.k8s.io/kube-api-linter@$(KUBE_API_LINTER_VERSION); do \
		got=$$(cd tools/lint && go list -m -f '{{.Path}}@{{.Version}}' $${m%@*}); \
		[ "$$got" = "$$m" ] || { echo "tools/lint/go.mod pins $$got, the Makefile $$m: make them agree." >&2; exit 1; }; \
	done
	cd tools/lint && go build -o $@ .
