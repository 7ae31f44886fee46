# Tamga -- thin wrapper over CMake.  `make run` and `make test` install what
# is missing first (scripts/install-deps.sh).
JOBS ?= $(shell nproc)
PORT ?= 27017
DBPATH ?= ./data

.PHONY: all build deps run run-standalone cluster test test-unit bench conformance compat fuzz install clean demo

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTAMGA_TESTS=OFF >/dev/null
	@cmake --build build -j $(JOBS)

# A single-node replica set rs0, initiated on its first start (and left as
# it is on every later one), so sessions-based features work with no extra
# step; `make run-standalone` starts a plain standalone server.
REPLSET ?= rs0
run: build
	@mkdir -p $(DBPATH)
	./build/tamgad --dbpath $(DBPATH) --port $(PORT) --bind_ip 127.0.0.1 --replSet $(REPLSET) --replSetAutoInitiate

run-standalone: build
	@mkdir -p $(DBPATH)
	./build/tamgad --dbpath $(DBPATH) --port $(PORT) --bind_ip 127.0.0.1

# A replica set of three members on 127.0.0.1 (ports PORT..PORT+2, their Raft
# ports + 1000), data under $(DBPATH)/rs0, rs1, rs2; initiated on its first
# start (scripts/cluster.sh).
cluster: build
	@scripts/cluster.sh ./build/tamgad $(PORT) $(DBPATH) $(REPLSET)

# Every test, built with AddressSanitizer and UndefinedBehaviorSanitizer.
test: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTAMGA_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 900

bench: deps
	@cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTAMGA_TESTS=OFF -DTAMGA_BENCH=ON >/dev/null
	@cmake --build build-bench -j $(JOBS)
	@bench/run.sh build-bench

conformance: build
	@tests/conformance/run.sh build

# issue 22's compatibility cases against a fresh tamgad: per item (1-7) how
# many pass (also in `make test` as e2e.compat)
compat: build
	@tests/compat/run.sh build

fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DTAMGA_FUZZ=ON -DTAMGA_TESTS=OFF >/dev/null
	@cmake --build build-fuzz -j $(JOBS)

# The seed walk-through: a fresh tamgad (--auth) on a temporary folder, the
# bookstore loaded, every examples/bookstore/scripts/NN-*.js run and printed.
demo: build
	@BOOKSTORE_AUTH=1 tests/e2e/bookstore/run.sh --demo build/tamgad tests/clients/node_modules/.bin/mongosh

install: build
	cmake --install build

clean:
	rm -rf build build-asan build-bench build-fuzz
