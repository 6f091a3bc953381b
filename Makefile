# The two commands a new user needs: `make demo` and `make test`.
# `make check` is the quick loop while editing: unit tests, the SDK's lint and
# types, and the pytest tests that need no built Debian template.
SHELL := /bin/bash
BUILD := build
ASAN_BUILD := build-asan
TSAN_BUILD := build-tsan
STRICT_BUILD := build-strict
VENV := $(BUILD)/venv
PY := $(VENV)/bin/python

.PHONY: all build deps demo check test unit unit-tsan strict e2e offline lint-python \
	format format-check bench clean

all: build

# System packages (installed only when missing) and the Python test venv.
deps:
	scripts/install-deps.sh $(VENV)

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/build.ninja
	ninja -C $(BUILD) abx abx-init

demo: deps build
	scripts/demo.sh

check: deps build lint-python unit offline

test: deps build format-check lint-python unit unit-tsan e2e

# Unit tests run under AddressSanitizer and UndefinedBehaviorSanitizer.
unit:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DABX_SANITIZE=ON >/dev/null
	ninja -C $(ASAN_BUILD) abx_unit_tests abx-init
	$(ASAN_BUILD)/abx_unit_tests --gtest_brief=1

# The same unit tests under ThreadSanitizer: the daemon runs I/O, pool, reaper
# and warm-pool threads. See tests/unit/tsan.supp for what it is told to skip.
unit-tsan:
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DABX_TSAN=ON >/dev/null
	ninja -C $(TSAN_BUILD) abx_unit_tests abx-init
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/unit/tsan.supp" \
	  $(TSAN_BUILD)/abx_unit_tests --gtest_brief=1

# -Wshadow -Wconversion -Wsign-conversion, in a dir of their own (ABX_STRICT_WARNINGS).
strict:
	cmake -S . -B $(STRICT_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DABX_STRICT_WARNINGS=ON >/dev/null
	ninja -C $(STRICT_BUILD) abx abx-init abx_unit_tests

e2e:
	ABX_BIN=$(CURDIR)/$(BUILD)/abx $(PY) -m pytest -q

# The pytest tests marked `offline`: they start real daemons but need no built template.
offline:
	ABX_BIN=$(CURDIR)/$(BUILD)/abx $(PY) -m pytest -q -m offline

# Their caches live in the build dir, not in the source tree.
lint-python:
	$(PY) -m ruff check --cache-dir $(BUILD)/ruff-cache sdk/python
	cd sdk/python && $(CURDIR)/$(PY) -m mypy --strict --cache-dir $(CURDIR)/$(BUILD)/mypy-cache agent_sandbox

bench: deps build
	$(PY) bench/run.py --abx $(CURDIR)/$(BUILD)/abx --out bench/RESULTS.md --cold-build \
	  $(if $(BASELINE_ABX),--baseline-abx $(BASELINE_ABX))

CXX_SOURCES = find src tests/unit -name '*.cc' -o -name '*.h'

format:
	$(CXX_SOURCES) | xargs clang-format -i

format-check:
	$(CXX_SOURCES) | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(STRICT_BUILD)
