# dawnrun quick start. `make demo` installs what is missing (Debian, as root), builds and
# runs the demo experiment; `make test` builds with warnings as errors and runs ctest, all but
# the long emulated CUDA runs, which `make test-long` runs.
# Data: $DAWNRUN_DATA, else data/cifar-10-batches-bin (fetched by scripts/get-cifar10.sh).

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# The Debian packages, by group (build, test, fuzz), are listed in scripts/packages.txt.
DATA_DIR = $(if $(DAWNRUN_DATA),$(DAWNRUN_DATA),data/cifar-10-batches-bin)
DATA_ABS = $(if $(DAWNRUN_DATA),$(abspath $(DAWNRUN_DATA)),$(abspath data/cifar-10-batches-bin))
SANITIZE_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: all deps test-deps fuzz-deps build build-werror demo test test-long test-sanitize fuzz \
        data data-if-possible clean

all: build

deps:
	@scripts/install-deps.sh build

# What the tests use besides the build (the single-node Slurm of tests/slurm_real.sh).
# Welcome but not required: without them (not root, offline) the tests that need them
# are skipped (exit 77) and the rest run.
test-deps:
	@scripts/install-deps.sh test || echo "dawnrun: test packages missing; the tests that need them will be skipped"

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
# The demo trains configs/demo.cfg on half of its training subset, so that the whole flow
# shows in a few minutes; the same flags select the experiment for the report and plot.
# DEMO_SETS= runs the config as it is.
DEMO_SETS ?= --set data.train_subset=5000

# Two seeds of the demo experiment into results/demo.db (epoch tables and the batch
# report), the rows the database holds, the report again from the database, and the
# curves as SVG. Run it again and the finished runs are skipped.
# For the tests the data is welcome but not required: offline without it, the tests that
# need it are skipped (exit 77) and the rest run.
data-if-possible:
	@$(MAKE) --no-print-directory data || echo "dawnrun: no CIFAR-10 here; data-dependent tests will be skipped"

demo: build data
	DAWNRUN_DATA=$(DATA_DIR) $(BUILD)/dawnrun run configs/demo.cfg $(DEMO_SETS) --engine cpu \
	  --db $(DEMO_DB)
	@echo; echo "== rows in $(DEMO_DB) (sqlite3) =="
	sqlite3 -header -column $(DEMO_DB) \
	  "SELECT run_id, experiment, seed, status, round(final_test_acc, 4) AS test_acc, \
	          round(train_time, 1) AS train_s FROM run_summary;"
	sqlite3 -header -column $(DEMO_DB) \
	  "SELECT run_id, epoch, round(lr, 4) AS lr, round(train_loss, 4) AS train_loss, \
	          round(test_acc, 4) AS test_acc, round(total_time, 1) AS total_s \
	   FROM epochs ORDER BY run_id, epoch;"
	@echo; echo "== dawnrun report configs/demo.cfg $(DEMO_SETS) =="
	$(BUILD)/dawnrun report configs/demo.cfg $(DEMO_SETS) --db $(DEMO_DB)
	@echo; echo "== dawnrun plot configs/demo.cfg $(DEMO_SETS) =="
	$(BUILD)/dawnrun plot configs/demo.cfg $(DEMO_SETS) --db $(DEMO_DB) -o results/demo-curves.svg
	@echo "open results/demo-curves.svg in a browser: test accuracy, train loss and lr per epoch" 

# The suite without the tests labelled `long` (the CUDA engine's full selfchecks and benches
# under the emulator, many minutes each on 2 cores); `make test-long` runs those alone.
test: build-werror test-deps data-if-possible
	cd $(BUILD) && DAWNRUN_DATA=$(DATA_ABS) ctest --output-on-failure -j $(JOBS) -LE long
	@echo "dawnrun: the long emulated CUDA tests are left to 'make test-long'"

test-long: build-werror test-deps data-if-possible
	cd $(BUILD) && DAWNRUN_DATA=$(DATA_ABS) ctest --output-on-failure -j $(JOBS) -L long

# The suite again, built with gcc's AddressSanitizer, LeakSanitizer and UBSan (CPU engine;
# see docs/testing.md): fails on any test failure or sanitizer report.
test-sanitize: deps test-deps data-if-possible
	DAWNRUN_DATA=$(DATA_ABS) scripts/test-sanitize.sh $(SANITIZE_BUILD) $(JOBS)

fuzz-deps:
	@scripts/install-deps.sh fuzz

# Each libFuzzer target for FUZZ_SECONDS under ASan + UBSan; a crash fails.
fuzz: deps fuzz-deps
	scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BUILD)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
