# PEACH2 emulation stack: the two commands a user needs are
#   make demo    set up, build, boot a 2-node cluster, run PIO ping-pong
#   make check   set up, build, run every test (host unit tests, then VM tests)
# Every step is idempotent and cached, so a warm run only redoes what changed.

PY      := /usr/bin/python3
BUILD   := $(CURDIR)/build
export PEACH2_BUILD := $(BUILD)

.PHONY: all deps qemu kernel driver userlib selftests image \
        core-test userlib-test host-test vm-test check demo bench sparse clean

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

image: driver userlib selftests kernel
	@scripts/build-initramfs.sh

core-test: deps
	@cmake -S qemu-device/core -B $(BUILD)/core -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@ninja -C $(BUILD)/core
	@ctest --test-dir $(BUILD)/core --output-on-failure

userlib-test: userlib
	@$(MAKE) --no-print-directory -C userlib test

host-test: core-test userlib-test

vm-test: qemu image
	@$(PY) -m pytest tests

check: host-test vm-test

demo: qemu image
	@scripts/run-demo.sh

bench: qemu image
	@scripts/run-bench.sh

sparse: deps
	@$(MAKE) --no-print-directory -C driver sparse

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C driver clean
