# dpstat's two everyday commands:
#   make demo   runs a differentially private query on the bundled example data
#   make test   runs every test (the same command CI runs)

GO ?= go
LEDGER ?= $(CURDIR)/.dpstat/demo-ledger.db

# Packages with concurrent code, also tested under the race detector.
RACE_PKGS = ./random/ ./accounting/ ./ledger/ ./analyst/ ./collector/ ./server/... ./pgwire/ ./query/ ./engine/...

.PHONY: demo test build vet fmt-check bench fuzz

build:
	$(GO) build -o dpstat ./cmd/dpstat

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

# Fuzz the planner and the neighbouring-table oracle (docs/privacy.md §7);
# make test runs only their seed corpus.
FUZZTIME ?= 2m
fuzz:
	$(GO) test ./query/ -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME)
	$(GO) test ./query/ -run '^$$' -fuzz '^FuzzNeighbours$$' -fuzztime $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchtime=200ms ./noise/ ./mechanism/ ./ledger/
	cd bench && $(GO) test -run '^$$' -bench . -benchtime=200ms ./...
