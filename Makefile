# flexwatt: the two commands a new user needs are `make demo` and `make test`.
# Both install missing Debian packages first (needs root or sudo on a fresh machine).

BUILD ?= build
JOBS  ?= $(shell nproc)
DEB_PACKAGES := build-essential cmake pkg-config libeigen3-dev nlohmann-json3-dev \
  libyaml-cpp-dev libcli11-dev libcpp-httplib-dev libspdlog-dev libfmt-dev \
  libgtest-dev libgmock-dev libbenchmark-dev jq clang-format ccache \
  etcd-server etcd-client openssl prometheus chromium-headless-shell systemd shellcheck python3-yaml \
  python3-torch tmux
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SHELL := /bin/bash

# Extra packages of `make bench` (pandas, the comparison) and `make fuzz` (clang, libFuzzer);
# never installed by `make test`. DuckDB and Polars come from npm (bench/package.json and its
# lock file pin them) into bench/node_modules (git-ignored), with Debian's nodejs and npm when
# the machine has no npm; only `make bench-deps` installs them, never the build.
BENCH_PACKAGES := python3-pandas
BENCH_NODE_PACKAGES := nodejs npm
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev

.PHONY: deps bench-deps bench-node-deps fuzz-deps build test demo bench fuzz results results-all format format-check tidy clean dist sanitize fleet-faults screenshots

# install-missing PACKAGES...: apt-get installs the ones dpkg does not list as installed.
define install-missing
	@missing=$$(for p in $(1); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	else echo "$@: all Debian packages present"; fi
endef

deps:
	$(call install-missing,$(DEB_PACKAGES))

bench-deps:
	$(call install-missing,$(BENCH_PACKAGES))
	@command -v npm >/dev/null || $(MAKE) --no-print-directory bench-node-deps
	cd bench && npm install --no-audit --no-fund --prefer-offline

bench-node-deps:
	$(call install-missing,$(BENCH_NODE_PACKAGES))

fuzz-deps:
	$(call install-missing,$(FUZZ_PACKAGES))

# ccache, when the machine has it, makes rebuilds of unchanged files free (not required).
CCACHE := $(shell command -v ccache)
# ccache caches files built with a precompiled header only with these relaxed checks.
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime
# A checkout elsewhere (CI's clean one) hits what this one cached: paths under the checkout are
# hashed relative to it, and the Debug builds' (make sanitize, -g) working directory is not
# hashed (their debug info may then name the other checkout's files).
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

# CMAKE_FLAGS: extra configure flags (CI: -DFLEXWATT_WERROR=ON).
$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE)) $(CMAKE_FLAGS)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# Tests run one per core by default. About half of the suite's test time is real-time waiting
# (agents, etcd, fleet-sim): on 2 cores 642 s at -j2 and 400 s at -j4 (TEST_JOBS=4). Not the
# default: under -j4 readme_quickstart's knob check failed in 1 of 3 full runs (the job saw one
# gen_concurrency value in 20 s), and again alone beside three busy loops.
TEST_JOBS ?= $(JOBS)
test: build
	cd $(BUILD) && ctest -j $(TEST_JOBS) --output-on-failure

# The agent and control path under ASan+UBSan, then TSan (separate build directories): the
# agent's tests (the job-traffic stress test, the HTTP limits, the loop and its restores) and
# the control tests; under TSan also the fleet's threaded tests against a real etcd
# (SAN_FLEET_FILTER of test_fleet: coordinator, node links, watches, lease keepers, TLS).
# CI runs it after `make test`. The ASan build goes without precompiled headers: it is the
# build that checks every file of the agent and control path includes what it uses.
SAN_TESTS := test_agent test_control
# Each binary runs as this many gtest shards at once (most of the agent's tests wait on real
# time: two shards on two cores halve the wall time, and each shard is its own process, as
# ctest runs them).
SAN_SHARDS ?= $(JOBS)
SAN_FILTER ?= *
SAN_FLEET_FILTER ?= $(SAN_FLEET_FAST)
# ~35 s under TSan (leader takeover, a killed member, etcd rebuilt, a join, watches, lease loss,
# TLS + auth, the client's kept connections, plans to the nodes); SAN_FLEET_FILTER='*' runs all
# of test_fleet.
SAN_FLEET_FAST := CoordinatorLive.LeaderCrash*:CoordinatorLive.KilledEtcdMember*:$\
  CoordinatorLive.LinksFollowTheNewLeader*:CoordinatorLive.NodesNotBack*:$\
  CoordinatorLive.AJoiner*:EtcdLive.Watch*:EtcdLive.KeeperPresumes*:$\
  EtcdSecureLive.CoordinatorAndNodeLinks*:EtcdRetry.*:CoordinatorLive.Plans*
sanitize: deps
	@set -e; for san in address thread; do \
	  dir=build-$${san:0:1}san; echo "== $$san ($$dir)"; \
	  fleet=; pch=OFF; [ $$san = thread ] && fleet=test_fleet && pch=ON; \
	  cmake -S . -B $$dir -DCMAKE_BUILD_TYPE=Debug -DFLEXWATT_SANITIZE=$$san \
	    -DFLEXWATT_BUILD_BENCH=OFF -DFLEXWATT_PCH=$$pch $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE)) >/dev/null; \
	  cmake --build $$dir -j $(JOBS) --target $(SAN_TESTS) $$fleet fake_nvml fake_nvml_old; \
	  for t in $(SAN_TESTS) $$fleet; do \
	    filter='$(SAN_FILTER)'; [ $$t = test_fleet ] && filter='$(SAN_FLEET_FILTER)'; \
	    pids=; for k in $$(seq 0 $$(($(SAN_SHARDS) - 1))); do \
	      ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	      GTEST_TOTAL_SHARDS=$(SAN_SHARDS) GTEST_SHARD_INDEX=$$k \
	        $$dir/tests/$$t --gtest_filter="$$filter" --gtest_brief=1 >$$dir/$$t.shard$$k.log 2>&1 & \
	      pids="$$pids $$!"; \
	    done; \
	    rc=0; for p in $$pids; do wait $$p || rc=1; done; \
	    for k in $$(seq 0 $$(($(SAN_SHARDS) - 1))); do \
	      echo "-- $$t shard $$k/$(SAN_SHARDS)"; cat $$dir/$$t.shard$$k.log; \
	    done; \
	    [ $$rc = 0 ] || { echo "$$t failed under $$san (the shards' logs above)"; exit 1; }; \
	  done; \
	done

demo: build
	$(BUILD)/flexwatt demo --out flexwatt-demo

# The screenshots under docs/ (dashboards, reports, the demo's first screen) from this build.
screenshots: build
	bash scripts/screenshots.sh $(BUILD)/flexwatt docs

# A portable tarball for a GPU node: the binary, the shared libraries it needs beyond libc,
# deploy/ (systemd unit, DaemonSet, Slurm prolog/epilog) and the agent docs (docs/agent.md).
dist: build
	deploy/dist.sh $(BUILD) dist

# Every figure behind README's results table and docs/results.md, regenerated (slow; not in test)
# in blocks (`bash scripts/results.sh --list`): BLOCK=NAME[,NAME...] runs those only; a block whose
# binaries, code and inputs are unchanged is re-spliced from .results-cache/ without running, so
# an interrupted run resumes where it stopped; FORCE=1 runs the blocks again.
RESULTS_FLAGS = $(if $(BLOCK),--block '$(BLOCK)') $(if $(filter-out 0,$(FORCE)),--force)
results: build
	bash scripts/results.sh $(RESULTS_FLAGS) $(BUILD)/flexwatt

# results plus the slower blocks (docs/caps.md's balanced, H100/H200 and pipeline scenarios, the
# fleet runs and fault campaign of docs/fleet.md on etcd, the analyze-vs-engines table of
# docs/analysis.md: bench-deps, the drift tables, ...).
results-all: build bench-deps
	bash scripts/results.sh --all $(RESULTS_FLAGS) $(BUILD)/flexwatt

# The fleet's fault campaign (docs/fleet.md, "Fault campaign"): 3 etcd members, 2
# coordinators, 4 simulated agents on loopback, ~4 minutes; not part of `make test`.
fleet-faults: build
	FLEXWATT=$(BUILD)/flexwatt bash scripts/fleet_faults.sh --out $(BUILD)/fleet-faults

# The benchmarks, then analyze against the I/O floor (cat), pandas, DuckDB and Polars on one
# generated 10M-row 8-GPU trace, with the violation counts compared window by window.
# Google Benchmark exits 0 when a benchmark skips with an error: the output is checked too.
bench: build bench-deps
	@for b in $(BUILD)/bench/*_bench; do echo "== $$b"; \
	  { $$b; echo $$? > $(BUILD)/bench.rc; } 2>&1 | tee $(BUILD)/bench.out; \
	  [ "$$(cat $(BUILD)/bench.rc)" = 0 ] || exit 1; \
	  if grep -q "ERROR OCCURRED" $(BUILD)/bench.out; then echo "$$b: a benchmark failed (above)"; exit 1; fi; \
	done
	/usr/bin/python3 bench/analyze_vs_pandas.py $(BUILD)/flexwatt $(BUILD)/bench/analyze_bench

# libFuzzer harnesses (fuzz/), each run FUZZ_SECONDS with a seed corpus from the test inputs;
# crashes land in $(FUZZ_BUILD)/crashes/. Needs clang (fuzz-deps); separate build directory.
FUZZ_SECONDS ?= 600
FUZZ_BUILD ?= build-fuzz
FUZZ_TARGETS := fuzz_csv fuzz_trace_reader fuzz_nvsmi fuzz_scenario fuzz_policy
fuzz: deps fuzz-deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFLEXWATT_FUZZ=ON -DFLEXWATT_BUILD_TESTS=OFF -DFLEXWATT_BUILD_BENCH=OFF \
	  $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE))
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	fuzz/seeds.sh $(FUZZ_BUILD)/corpus
	@mkdir -p $(FUZZ_BUILD)/crashes; fail=0; for t in $(FUZZ_TARGETS); do \
	  echo "== $$t ($(FUZZ_SECONDS) s)"; \
	  $(FUZZ_BUILD)/fuzz/$$t $(FUZZ_BUILD)/corpus/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t- 2>&1 | grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|ERROR|SUMMARY|Done' ; \
	  [ $${PIPESTATUS[0]} -eq 0 ] || fail=1; \
	  echo "corpus: $$(ls $(FUZZ_BUILD)/corpus/$$t | wc -l) files"; done; exit $$fail

FORMAT_FILES = find src tests bench \( -name '*.cpp' -o -name '*.hpp' \) -print0

format:
	$(FORMAT_FILES) | xargs -0 clang-format -i

# Fails when any file differs from .clang-format's style (CI runs it before the tests).
format-check: deps
	$(FORMAT_FILES) | xargs -0 clang-format --dry-run --Werror

# clang-tidy with .clang-tidy's checks over every source file under src/ (needs the build's
# compile_commands.json; slow: minutes per core).
tidy: build
	find src -name '*.cpp' -print0 | xargs -0 -n 8 -P $(JOBS) clang-tidy -p $(BUILD) --quiet

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD) build-asan build-tsan
