# flexwatt: the two commands a new user needs are `make demo` and `make test`.
# Both install missing Debian packages first (needs root or sudo on a fresh machine).

BUILD ?= build
JOBS  ?= $(shell nproc)
DEB_PACKAGES := build-essential cmake pkg-config libeigen3-dev nlohmann-json3-dev \
  libyaml-cpp-dev libcli11-dev libcpp-httplib-dev libspdlog-dev libfmt-dev \
  libgtest-dev libgmock-dev libbenchmark-dev jq clang-format \
  etcd-server etcd-client prometheus
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build test demo bench results format format-check clean

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	else echo "deps: all Debian packages present"; fi

# ccache, when the machine has it, makes rebuilds of unchanged files free (not required).
CCACHE := $(shell command -v ccache)

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE))

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure

demo: build
	$(BUILD)/flexwatt demo --out flexwatt-demo

# Every figure behind README's results table and docs/results.md, regenerated (slow; not in test).
results: build
	bash scripts/results.sh $(BUILD)/flexwatt

bench: build
	@for b in $(BUILD)/bench/*_bench; do echo "== $$b"; $$b || exit 1; done

FORMAT_FILES = find src tests bench \( -name '*.cpp' -o -name '*.hpp' \) -print0

format:
	$(FORMAT_FILES) | xargs -0 clang-format -i

# Fails when any file differs from .clang-format's style (CI runs it before the tests).
format-check: deps
	$(FORMAT_FILES) | xargs -0 clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD)
