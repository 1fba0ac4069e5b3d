# dpstat's two everyday commands:
#   make demo   runs a differentially private query on the bundled example data
#   make test   runs every test (the same command CI runs)
#   make install puts dpstat on PATH (go install, into $(go env GOPATH)/bin)

GO ?= go
LEDGER ?= $(CURDIR)/.dpstat/demo-ledger.db

# Packages with concurrent code, also tested under the race detector.
RACE_PKGS = ./random/ ./accounting/ ./ledger/ ./analyst/ ./collector/ ./server/... ./pgwire/ ./query/

.PHONY: demo test build install vet fmt-check bench

build:
	@test -x dpstat || echo "building ./dpstat: the first build compiles DuckDB and the SQL parser (cgo) and can take a few minutes"
	$(GO) build -o dpstat ./cmd/dpstat

install:
	@echo "installing dpstat into $$($(GO) env GOPATH)/bin: the first build can take a few minutes (cgo)"
	$(GO) install ./cmd/dpstat

demo: build
	./dpstat query --catalog examples/catalog.yaml --ledger $(LEDGER) \
		"SELECT sex, COUNT(*), AVG(hours_per_week) FROM adult GROUP BY sex"
	./dpstat budget show --ledger $(LEDGER)

test: fmt-check vet
	$(GO) test ./...
	$(GO) test -race $(RACE_PKGS)
	cd bench && $(GO) test ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchtime=200ms ./noise/ ./mechanism/ ./ledger/
	cd bench && $(GO) test -run '^$$' -bench . -benchtime=200ms ./...
