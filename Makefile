# PEACH2 emulation stack: the two commands a user needs are
#   make demo    set up, build, boot a 2-node cluster, run PIO ping-pong
#   make check   set up, build, run every test (host unit tests, then VM tests)
# Every step is idempotent and cached, so a warm run only redoes what changed.

PY      := /usr/bin/python3
BUILD   := $(or $(PEACH2_BUILD),$(CURDIR)/build)
export PEACH2_BUILD := $(BUILD)

.PHONY: all deps qemu kernel driver userlib selftests firmware guest-root image model \
        core-test userlib-test model-test host-test vm-test check demo bench sparse clean \
        core-fuzz qemu-fuzz fuzz fuzz-check

all: qemu image

deps:
	@scripts/install-deps.sh

qemu: deps
	@scripts/build-qemu.sh

kernel: deps
	@scripts/fetch-guest-kernel.sh

driver: deps
	@$(MAKE) --no-print-directory -C driver

userlib: deps
	@$(MAKE) --no-print-directory -C userlib

selftests: deps
	@$(MAKE) --no-print-directory -C selftests O=$(BUILD)/selftests

# Firmware tools, and an image for every standard topology (for the guests).
TOPOLOGIES := 2 ring:3 ring:4 ring:8 double-ring:4 double-ring:8
firmware: deps
	@cmake -S firmware -B $(BUILD)/firmware -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@ninja -C $(BUILD)/firmware peach2-fwgen peach2-fwdump >/dev/null
	@mkdir -p $(BUILD)/firmware/images
	@for t in $(TOPOLOGIES); do \
	  $(BUILD)/firmware/peach2-fwgen $$t $(BUILD)/firmware/images/$$(echo $$t | tr : -).bin >/dev/null || exit 1; \
	done

# The Debian root of the guests (packages: scripts/guest/packages.txt), cached in
# ~/.cache/peach2/guest keyed by the package list and the builder.
guest-root: deps
	@$(PY) scripts/build-guest-root.py

image: driver userlib selftests kernel firmware guest-root
	@scripts/build-initramfs.sh

# peach2-model: predicts real PEACH2 time from card traces (docs/timing-model.md).
model: deps
	@cmake -S model -B $(BUILD)/model -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@ninja -C $(BUILD)/model peach2-model peach2-model-bench >/dev/null

core-test: deps
	@cmake -S qemu-device/core -B $(BUILD)/core -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@ninja -C $(BUILD)/core
	@ctest --test-dir $(BUILD)/core --output-on-failure

userlib-test: userlib
	@$(MAKE) --no-print-directory -C userlib test

# The trace reader and the model under ASan/UBSan, with the calibration test.
model-test: deps
	@cmake -S model -B $(BUILD)/model-test -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPEACH2_SANITIZE=ON >/dev/null
	@ninja -C $(BUILD)/model-test peach2_model_tests peach2-model
	@ctest --test-dir $(BUILD)/model-test -L model --output-on-failure

host-test: core-test userlib-test model-test

# Fuzzing (docs/fuzzing.md): the core's libFuzzer harness (clang), QEMU's
# generic-fuzz target for -device peach2 (its own QEMU build, ~1200 steps).
# `make fuzz [FUZZ_SECONDS=600] [FUZZ_JOBS=1]` runs both, then the in-guest fuzzer (tca_fuzz as
# root and as a user on two VMs, with driver rebinds: tests/test_guest_fuzz.py)
# and the random rogue peer on a card's port (tests/test_hostile_peer.py) for as
# long each; make check runs each of the two for a minute (building the fuzz
# QEMU: ~4 min on a quiet 2-core machine), the guest's for 20 s and the rogue
# for 8 s (FUZZ_CHECK_TARGETS=core leaves QEMU's out).
FUZZ_CHECK_TARGETS ?= core generic-peach2
core-fuzz: deps
	@CC=clang CXX=clang++ cmake -S qemu-device/core -B $(BUILD)/core-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPEACH2_FUZZ=ON >/dev/null
	@ninja -C $(BUILD)/core-fuzz peach2-core-fuzz

qemu-fuzz: deps
	@scripts/build-qemu-fuzz.sh

fuzz: core-fuzz qemu-fuzz qemu image
	@scripts/fuzz.sh $(if $(FUZZ_SECONDS),-t $(FUZZ_SECONDS)) $(if $(FUZZ_JOBS),-j $(FUZZ_JOBS))
	@PEACH2_FUZZ_SECONDS=$(or $(FUZZ_SECONDS),600) $(PY) -m pytest -q tests/test_guest_fuzz.py \
		tests/test_hostile_peer.py::test_random_streams_hurt_only_the_rogue

fuzz-check: core-fuzz $(if $(filter generic-peach2,$(FUZZ_CHECK_TARGETS)),qemu-fuzz)
	@scripts/fuzz.sh --fresh -t 60 $(FUZZ_CHECK_TARGETS)

vm-test: qemu image
	@$(PY) -m pytest tests

check: host-test fuzz-check vm-test

demo: qemu image
	@scripts/run-demo.sh

bench: qemu image model
	@$(BUILD)/model/peach2-model-bench
	@scripts/run-bench.sh
	@$(PY) scripts/plot-model.py --measured $(BUILD)/bench/model-summary-dma.csv \
		--measured $(BUILD)/bench/model-summary-get.csv

sparse: deps
	@$(MAKE) --no-print-directory -C driver sparse

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C driver clean
