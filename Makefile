# The two commands a new user needs: `make demo` and `make test`.
SHELL := /bin/bash
BUILD := build
ASAN_BUILD := build-asan
VENV := $(BUILD)/venv
PY := $(VENV)/bin/python

.PHONY: all build deps demo test unit e2e bench format clean

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

test: deps build unit e2e

# Unit tests run under AddressSanitizer and UndefinedBehaviorSanitizer.
unit:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DABX_SANITIZE=ON >/dev/null
	ninja -C $(ASAN_BUILD) abx_unit_tests abx-init
	$(ASAN_BUILD)/abx_unit_tests --gtest_brief=1

e2e:
	ABX_BIN=$(CURDIR)/$(BUILD)/abx $(PY) -m pytest -q

bench: deps build
	$(PY) bench/run.py --abx $(CURDIR)/$(BUILD)/abx --out bench/RESULTS.md --cold-build

format:
	find src tests/unit -name '*.cc' -o -name '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
