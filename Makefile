# dpstat's two everyday commands:
#   make demo   runs a differentially private query on the bundled example data
#   make test   runs every test (the same command CI runs)
#   make install puts dpstat on PATH (go install, into $(go env GOPATH)/bin)

GO ?= go
# The embedded engine hands bounded queries over tables declared
# clustered_by_unit to Go as Arrow batches (the streaming form) only when
# built with this tag; without it they run the ranged SQL form.
export GOFLAGS := $(strip $(GOFLAGS) -tags=duckdb_arrow)
LEDGER ?= $(CURDIR)/.dpstat/demo-ledger.db

# Packages with concurrent code, also tested under the race detector.
RACE_PKGS = ./random/ ./accounting/ ./ledger/ ./analyst/ ./collector/ ./answer/... ./server/... ./pgwire/ ./query/ ./query/enginetest/ ./engine/...

.PHONY: demo test build install vet fmt-check bench fuzz

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

# Optional tools some tests need (a browser, psql, Node.js, the Python
# clients, a JDK): their fingerprint is passed to the tests, which read it,
# so that installing one reruns the tests that skipped for want of it
# instead of reusing a cached skip.
TEST_TOOLS = /usr/bin/chromium /usr/bin/psql /usr/bin/node /usr/bin/nodejs /usr/bin/python3 /usr/bin/javac \
	/usr/share/java/postgresql.jar /usr/lib/python3/dist-packages/psycopg /usr/lib/python3/dist-packages/psycopg2 \
	/usr/lib/python3/dist-packages/pandas /usr/lib/python3/dist-packages/sqlalchemy \
	/usr/lib/python3/dist-packages/matplotlib /usr/lib/python3/dist-packages/pip \
	/usr/sbin/clickhouse-server /usr/bin/clickhouse-client
export DPSTAT_TEST_TOOLS := $(shell ls -ldL $(TEST_TOOLS) 2>/dev/null | cksum)

# Tests run through internal/testsummary, which prints each package's
# result, failed tests in full and every skipped test with its reason.
test: fmt-check vet
	$(GO) run ./internal/testsummary ./...
	$(GO) run ./internal/testsummary -race $(RACE_PKGS)
	cd bench && $(GO) test ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	@if git grep -nE '^(<<<<<<< |>>>>>>> )' -- . ':!*.csv' 2>/dev/null; then echo "unresolved merge conflict markers (above)"; exit 1; fi

# Fuzz the planner and the neighbouring-table oracle (docs/privacy.md §7),
# and run the relational generator's queries on every engine; make test
# runs only their seed corpus and a few generated queries per engine.
FUZZTIME ?= 2m
# How many generated queries each engine checks (query/enginetest).
GENSEEDS ?= 1000
fuzz:
	$(GO) test ./query/ -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME)
	$(GO) test ./query/ -run '^$$' -fuzz '^FuzzNeighbours$$' -fuzztime $(FUZZTIME)
	$(GO) test ./query/ -run '^$$' -fuzz '^FuzzGenerated$$' -fuzztime $(FUZZTIME)
	DPSTAT_GENERATED_SEEDS=$(GENSEEDS) $(GO) test ./query/enginetest/ -run '^Test[A-Za-z]+$$/^generated' -timeout 0 -count=1

bench:
	$(GO) test -run '^$$' -bench . -benchtime=200ms ./noise/ ./mechanism/ ./ledger/
	cd bench && $(GO) test -run '^$$' -bench . -benchtime=200ms ./...
