# Lavik: `make` lists the targets. CI runs `make test` (through .ci/run).

GO        ?= go
BIN       := bin
PORT      ?= 6379
DATA_DIR  ?= ./data
# Fuzz budgets are execution counts, not durations: a duration races Go 1.26's fuzz
# coordinator at the deadline and can fail with "context deadline exceeded" on a busy machine
# (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME  ?= 100000x
GOFLAGS   ?=

BINARIES := lavik-data lavik-bench lavikctl
# The concurrent packages, tested again under the race detector; the storage packages, tested
# again with their costly self-checks (the invariants build tag).
RACE_PKGS      := ./services/data/vlog ./services/data/keyspace ./services/data/server ./services/data/repl ./services/meta/...
INVARIANT_PKGS := ./services/data/vlog ./services/data/keyspace

.DEFAULT_GOAL := help

include proto.mk

.PHONY: help
help: ## list the targets
	@echo "Lavik make targets:"
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build every binary into bin/
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS) -o $(BIN)/lavik-data ./services/data/cmd/lavik-data
	$(GO) build $(GOFLAGS) -o $(BIN)/lavik-meta ./services/meta/cmd/lavik-meta
	@if [ -d tools/lavik-bench ] && ls tools/lavik-bench/*.go >/dev/null 2>&1; then \
		$(GO) build $(GOFLAGS) -o $(BIN)/lavik-bench ./tools/lavik-bench; fi
	@if [ -d tools/lavikctl ] && ls tools/lavikctl/*.go >/dev/null 2>&1; then \
		$(GO) build $(GOFLAGS) -o $(BIN)/lavikctl ./tools/lavikctl; fi

.PHONY: run
run: build ## build and start a standalone lavik-data on $(PORT) with data in $(DATA_DIR)
	@echo "lavik-data: listening on 127.0.0.1:$(PORT), data in $(DATA_DIR); try: redis-cli -p $(PORT)"
	$(BIN)/lavik-data --port $(PORT) --dir $(DATA_DIR)

.PHONY: cluster
cluster: build ## start the reference topology on loopback: two data nodes, two meta members beside them, one meta-only member
	@deploy/local-cluster.sh start

.PHONY: cluster-stop
cluster-stop: ## stop what make cluster started
	@deploy/local-cluster.sh stop

.PHONY: test
test: build vet fmt-check proto-check ## build and run the whole test suite (unit, fuzz smoke, end-to-end)
	$(GO) test $(GOFLAGS) -count=1 -timeout 20m ./...
	$(GO) test $(GOFLAGS) -race -count=1 -timeout 20m $(RACE_PKGS)
	$(GO) test $(GOFLAGS) -tags invariants -count=1 -timeout 20m $(INVARIANT_PKGS)
	$(GO) test $(GOFLAGS) -run='^$$' -fuzz='^FuzzReader$$' -fuzztime=$(FUZZTIME) ./pkg/resp
	$(GO) test $(GOFLAGS) -run='^$$' -fuzz='^FuzzReplyReader$$' -fuzztime=$(FUZZTIME) ./pkg/resp
	$(GO) test $(GOFLAGS) -run='^$$' -fuzz='^FuzzDecodeRecord$$' -fuzztime=$(FUZZTIME) ./services/data/vlog
	$(GO) test $(GOFLAGS) -run='^$$' -fuzz='^FuzzDecodeDir$$' -fuzztime=$(FUZZTIME) ./services/data/keyspace
	$(GO) test $(GOFLAGS) -run='^$$' -fuzz='^FuzzDecodeHash$$' -fuzztime=$(FUZZTIME) ./services/data/commands
	$(GO) test $(GOFLAGS) -run='^$$' -fuzz='^FuzzDecodeSet$$' -fuzztime=$(FUZZTIME) ./services/data/commands
	$(GO) test $(GOFLAGS) -run='^$$' -fuzz='^FuzzDecodeZSet$$' -fuzztime=$(FUZZTIME) ./services/data/commands
	$(GO) test $(GOFLAGS) -run='^$$' -fuzz='^FuzzDecodeStream$$' -fuzztime=$(FUZZTIME) ./services/data/commands
	cd test && LAVIK_DATA_BIN=$(CURDIR)/$(BIN)/lavik-data LAVIK_META_BIN=$(CURDIR)/$(BIN)/lavik-meta LAVIK_CTL_BIN=$(CURDIR)/$(BIN)/lavikctl $(GO) test $(GOFLAGS) -count=1 -timeout 30m ./...

.PHONY: test-unit
test-unit: ## unit tests only (fast)
	$(GO) test $(GOFLAGS) -count=1 ./...

.PHONY: test-e2e
test-e2e: build ## end-to-end tests against the real binaries
	cd test && LAVIK_DATA_BIN=$(CURDIR)/$(BIN)/lavik-data LAVIK_META_BIN=$(CURDIR)/$(BIN)/lavik-meta LAVIK_CTL_BIN=$(CURDIR)/$(BIN)/lavikctl $(GO) test $(GOFLAGS) -count=1 -timeout 30m ./...

.PHONY: test-redis
test-redis: ## run the end-to-end suite against redis-server (the reference behaviour)
	cd test && LAVIK_TEST_SERVER=redis $(GO) test $(GOFLAGS) -count=1 -timeout 30m ./...

.PHONY: soak
soak: build ## long randomized model test across restarts
	cd test && LAVIK_DATA_BIN=$(CURDIR)/$(BIN)/lavik-data LAVIK_META_BIN=$(CURDIR)/$(BIN)/lavik-meta LAVIK_CTL_BIN=$(CURDIR)/$(BIN)/lavikctl LAVIK_MODEL_OPS=500000 $(GO) test -count=1 -timeout 2h -run 'Model|Kill9' ./...

# The comparison in one run: the disk's random-read ceiling first (a 2 GiB file under
# BENCH_WORKDIR), then both servers loaded with 1M keys x 1 KiB and every key overwritten twice
# (lavik-data's collector busy), GET/SET at pipeline 1 and 16 unpinned and pinned (servers on
# CPU 0, the generator on CPU 1), zipf GET with lavik-data's value cache at 10% of the data.
.PHONY: bench
bench: build ## Lavik vs redis-server: 1M keys x 1 KiB; GET/SET unpinned and pinned, zipf GET, CPU per op, disk ceiling (~6 min)
	$(BIN)/lavik-bench compare --lavik-bin $(BIN)/lavik-data --redis-bin redis-server \
		--keys 1000000 --value-size 1024 --workloads get,set --conns 50 --pipelines 1,16 \
		--pin server=0,client=1 --overwrites 2 --zipf-pipelines 1,16 --zipf-cache 10% --disk-ceiling 2GiB \
		--rounds 2 --warmup 2s --duration 6s $(if $(BENCH_WORKDIR),--workdir $(BENCH_WORKDIR)) --json $(BIN)/bench.json

# The larger-than-memory run: lavik-data in a 2 GiB memory cgroup (needs root), GET at 1M keys,
# then at 20M keys x 1 KiB (about 22 GB on disk in a temporary directory under BENCH_WORKDIR,
# default the system temp dir; it must be on the disk under test, not a tmpfs). bench puts its
# data directories and its ceiling file there too.
BENCH_WORKDIR ?=
BENCH_CAPACITY = $(BIN)/lavik-bench capacity --lavik-bin $(BIN)/lavik-data --memory-limit 2GiB \
		--base-keys 1000000 --keys 20000000 --value-size 1024 --conns 50 --pipelines 1,16 --rounds 2 \
		$(if $(BENCH_WORKDIR),--workdir $(BENCH_WORKDIR)) --json $(BIN)/bench-capacity.json

.PHONY: bench-full
bench-full: build ## longer sweeps over 50..1280 connections, 1,000-4,000 byte values, and a chart; then bench-capacity
	$(BIN)/lavik-bench compare --full --lavik-bin $(BIN)/lavik-data --redis-bin redis-server \
		--keys 1000000 --value-min 1000 --value-max 4000 --rounds 2 \
		--json $(BIN)/bench-full.json --csv $(BIN)/bench-full.csv --chart $(BIN)/bench-full.html
	$(BENCH_CAPACITY)

.PHONY: bench-capacity
bench-capacity: build ## larger than memory: lavik-data in a 2 GiB cgroup, GET at 1M then 20M keys x 1 KiB (root, ~22 GB disk)
	$(BENCH_CAPACITY)

# Replication, Lavik and Redis side by side: each kind in turn loads a primary with 1M keys x 1 KiB,
# times a full resync with the primary idle, measures the primary under GET+SET load before,
# during and after a second follower's full resync, then the follower's lag under SET load.
# Every server on CPU 0, the generator on CPU 1. About 6 minutes; `make bench-repl
# REPL_KEYS=200000` takes about 2.
REPL_KEYS ?= 1000000
.PHONY: bench-repl
bench-repl: build ## replication, Lavik vs Redis: full resync time, the primary while a follower syncs, lag under SET load (~6 min)
	$(BIN)/lavik-bench repl --lavik-bin $(BIN)/lavik-data --redis-bin redis-server \
		--keys $(REPL_KEYS) --value-size 1024 --conns 50 --pipeline 1 --pin server=0,client=1 \
		$(if $(BENCH_WORKDIR),--workdir $(BENCH_WORKDIR)) --json $(BIN)/bench-repl.json

# Failover, Lavik and Redis side by side: per system, FAILOVER_TRIALS kill -9s of the primary
# under two writers (SET alone, SET + WAIT 1), the time until the survivor takes writes, the
# acknowledged writes missing on it, spurious failovers; the killed node restarted and back in
# sync before the next trial. Lavik takes about 2 minutes, Redis about 8 (Sentinel turns a
# restarted node into a replica and sees it healthy only at its 10 s INFO polls).
FAILOVER_TRIALS ?= 20
.PHONY: bench-failover
bench-failover: build ## failover, Lavik (lavik-meta) vs Redis (Sentinel): kill -9 of the primary under writes, 20 trials each (~10 min)
	$(BIN)/lavik-bench failover --lavik-bin $(BIN)/lavik-data --meta-bin $(BIN)/lavik-meta --redis-bin redis-server \
		--trials $(FAILOVER_TRIALS) $(if $(BENCH_WORKDIR),--workdir $(BENCH_WORKDIR)) --json $(BIN)/bench-failover.json

.PHONY: vet
vet: ## go vet
	$(GO) vet ./... ./test/...

.PHONY: fmt-check
fmt-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: clean
clean: ## remove build output
	rm -rf $(BIN)
