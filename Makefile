# dawnrun quick start. `make demo` installs what is missing (Debian, as root), builds and
# runs the demo experiment; `make test` builds with warnings as errors and runs ctest.
# Data: $DAWNRUN_DATA, else data/cifar-10-batches-bin (fetched by scripts/get-cifar10.sh).

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
DEB_PACKAGES = build-essential cmake pkg-config libconfig-dev libsqlite3-dev sqlite3 \
               libdnnl-dev curl ca-certificates
DATA_DIR = $(if $(DAWNRUN_DATA),$(DAWNRUN_DATA),data/cifar-10-batches-bin)

.PHONY: all deps build build-werror demo test data clean

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

demo: build data
	DAWNRUN_DATA=$(DATA_DIR) $(BUILD)/dawnrun train configs/demo.cfg --engine cpu

test: build-werror
	cd $(BUILD) && DAWNRUN_DATA=$(if $(DAWNRUN_DATA),$(abspath $(DAWNRUN_DATA)),$(abspath data/cifar-10-batches-bin)) \
	  ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
