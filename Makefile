# dawnrun quick start. `make demo` installs what is missing (Debian, as root), builds and
# runs the demo experiment; `make test` builds with warnings as errors and runs ctest.
# Data: $DAWNRUN_DATA, else data/cifar-10-batches-bin (fetched by scripts/get-cifar10.sh).

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
DEB_PACKAGES = build-essential cmake pkg-config libconfig-dev libsqlite3-dev sqlite3 \
               libdnnl-dev curl ca-certificates python3
# The test suite also opens the results page in headless Chromium (report_html_browser).
TEST_PACKAGES = chromium
# The fuzz stage compiles with clang and links libFuzzer (clang's runtime) and libomp.
FUZZ_PACKAGES = clang libclang-rt-14-dev libomp-dev
DATA_DIR = $(if $(DAWNRUN_DATA),$(DAWNRUN_DATA),data/cifar-10-batches-bin)
DATA_ABS = $(if $(DAWNRUN_DATA),$(abspath $(DAWNRUN_DATA)),$(abspath data/cifar-10-batches-bin))
SANITIZE_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: all deps fuzz-deps build build-werror demo test test-sanitize fuzz data \
        data-if-possible clean

all: build

deps:
	@scripts/install-deps.sh $(DEB_PACKAGES)

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

build-werror: deps
	cmake -S . -B $(BUILD) -DDAWNRUN_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

data:
	@if [ -f "$(DATA_DIR)/test_batch.bin" ]; then echo "CIFAR-10 found in $(DATA_DIR)"; \
	 else scripts/get-cifar10.sh data; fi

DEMO_DB ?= results/demo.db

# Two seeds of the demo experiment into results/demo.db (epoch tables and the batch
# report), the rows the database holds, the report again from the database, and the
# curves as SVG. Run it again and the finished runs are skipped.
# For the tests the data is welcome but not required: offline without it, the tests that
# need it are skipped (exit 77) and the rest run.
data-if-possible:
	@$(MAKE) --no-print-directory data || echo "dawnrun: no CIFAR-10 here; data-dependent tests will be skipped"

demo: build data
	DAWNRUN_DATA=$(DATA_DIR) $(BUILD)/dawnrun run configs/demo.cfg --engine cpu \
	  --db $(DEMO_DB)
	@echo; echo "== rows in $(DEMO_DB) (sqlite3) =="
	sqlite3 -header -column $(DEMO_DB) \
	  "SELECT run_id, experiment, seed, status, round(final_test_acc, 4) AS test_acc, \
	          round(train_time, 1) AS train_s FROM run_summary;"
	sqlite3 -header -column $(DEMO_DB) \
	  "SELECT run_id, epoch, round(lr, 4) AS lr, round(train_loss, 4) AS train_loss, \
	          round(test_acc, 4) AS test_acc, round(total_time, 1) AS total_s \
	   FROM epochs ORDER BY run_id, epoch;"
	@echo; echo "== dawnrun report configs/demo.cfg =="
	$(BUILD)/dawnrun report configs/demo.cfg --db $(DEMO_DB)
	@echo; echo "== dawnrun plot configs/demo.cfg =="
	$(BUILD)/dawnrun plot configs/demo.cfg --db $(DEMO_DB) -o results/demo-curves.svg
	@echo "open results/demo-curves.svg in a browser: test accuracy, train loss and lr per epoch" 

test: build-werror data-if-possible
	@scripts/install-deps.sh $(TEST_PACKAGES) || echo "dawnrun: no chromium here; the results page browser test will be skipped"
	cd $(BUILD) && DAWNRUN_DATA=$(DATA_ABS) ctest --output-on-failure -j $(JOBS)

# The suite again, built with gcc's AddressSanitizer, LeakSanitizer and UBSan (CPU engine;
# see docs/testing.md): fails on any test failure or sanitizer report.
test-sanitize: deps data-if-possible
	DAWNRUN_DATA=$(DATA_ABS) scripts/test-sanitize.sh $(SANITIZE_BUILD) $(JOBS)

fuzz-deps:
	@scripts/install-deps.sh $(FUZZ_PACKAGES)

# Each libFuzzer target for FUZZ_SECONDS under ASan + UBSan; a crash fails.
fuzz: deps fuzz-deps
	scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BUILD)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
