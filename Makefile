# dmabridge — the two commands a newcomer needs:
#   make demo   what dmabridge can do here, then the zero-copy proof and a zero-copy
#               video capture (PNGs left in target/demo-capture) in the QEMU guest
#   make test   every test: host tests, guest tests (QEMU rig, x86_64 and arm64 guests) and rig tests
# Both install what they need (apt packages, the pinned guest kernel and QEMU).

SHELL      := /bin/bash
CARGO      ?= cargo
RIG        := qemu/run-in-guest
# The guest tests' machine: edu 00:10.0 and ivshmem 00:08.0 bound to vfio-pci,
# edu 00:11.0 left unbound (for the "not bound" cases), vgem and vivid
# (V4L2 capture /dev/video0 and output /dev/video1, vmalloc buffers) loaded.
GUEST_RIG  := --edu 2 --bind 0000:00:10.0 --bind 0000:00:08.0 --module vgem --module vivid
LOGS       := target/test-logs

.PHONY: check-offline check-msrv deb test-deb test-deb-arm64 build-install ci-deps
.PHONY: all build deps guest demo test test-host test-icd icd install build-gst build-gst-tests test-gst test-gst-guest gst-guest-plugins install-gst test-guest test-guest-icd test-guest-doc test-nonroot test-removal test-rig lint bench fuzz fuzz-icd clean-guest
.PHONY: deps-arm64 build-arm64 build-arm64-doc test-arm64 test-arm64-run test-doc test-arm64-guest test-arm64-icd test-arm64-doc test-arm64-nonroot test-arm64-removal test-arm64-gst-guest

all: build

deps:
	@qemu/fetch-guest >/dev/null

guest: deps

build:
	@echo "== building (cargo build --workspace)"
	@$(CARGO) build --workspace --quiet
	@$(MAKE) --no-print-directory build-gst

# The GStreamer plugin (driver/gst-dmabridge, a workspace of its own so that
# the builds above need no GStreamer dev packages): tests/gst-deps installs
# them first. GST_CARGO builds it into target/gst: a build folder of its own,
# so that `make test` can compile it while the main workspace's tests run
# (two cargo runs on one build folder wait for each other's lock).
GST_TARGET := target/gst
GST_CARGO  = CARGO_TARGET_DIR=$(CURDIR)/$(GST_TARGET) $(CARGO)
GST_DIR    := driver/gst-dmabridge
build-gst:
	@tests/gst-deps
	@echo "== building the GStreamer plugin ($(GST_DIR): $(GST_TARGET)/debug/libgstdmabridge.so)"
	@cd $(GST_DIR) && $(GST_CARGO) build --quiet

# The plugin, its Harness tests and its guest tests compiled, nothing run
# (`make test` does this in the background during the host tests).
build-gst-tests: build-gst
	@cd $(GST_DIR) && $(GST_CARGO) test --test harness --test guest --no-run --quiet

# Its Harness tests on this machine (part of test-host), and its pipeline
# tests where dmabridge exports dma-bufs (udmabuf: the guest; part of
# test-guest; vivid for capture, one edu bound to vfio-pci: a device without
# the conversion kernels). GStreamer in the guest keeps its registry in the
# guest's /tmp.
test-gst: build-gst
	@mkdir -p $(LOGS)
	@echo "== GStreamer plugin: Harness tests of dmabridgeconvert ($(GST_DIR)/tests/harness.rs)"
	@set -o pipefail; cd $(GST_DIR) && $(GST_CARGO) test --test harness --color never 2>&1 | tee $(CURDIR)/$(LOGS)/gst.log

# GStreamer scans every plugin of its path into a fresh registry in each
# guest (over 9p: most of a test's time): the guest tests' path holds only
# the plugins they use ($(call gst_guest_plugins,FOLDER,PLUGINDIR): symlinks
# in FOLDER to those of PLUGINDIR), and $(call gst_guest_env,FOLDER) points
# GStreamer there, with its registry in the guest's /tmp. The rig's devices:
# vivid for capture, one edu bound to vfio-pci (a device without the
# conversion kernels).
GST_SYSTEM_PLUGINS = $(shell pkg-config --variable=pluginsdir gstreamer-1.0 2>/dev/null)
GST_GUEST_PLUGINS := target/gst-guest-plugins
gst_guest_plugins = rm -rf $(1) && mkdir -p $(1) && \
    for p in coreelements videotestsrc app video4linux2 videoconvertscale; do ln -s $(2)/libgst$$p.so $(1)/; done
gst_guest_env = --env GST_REGISTRY=/tmp/gst-registry.bin --env GST_PLUGIN_SYSTEM_PATH_1_0=$(CURDIR)/$(1)
GST_GUEST_ENV = $(call gst_guest_env,$(GST_GUEST_PLUGINS))
GST_GUEST_RIG := --module vivid --edu 1 --bind 0000:00:10.0
gst-guest-plugins:
	@$(call gst_guest_plugins,$(GST_GUEST_PLUGINS),$(GST_SYSTEM_PLUGINS))

test-gst-guest: guest build-gst gst-guest-plugins
	@mkdir -p $(LOGS)
	@echo "== GStreamer plugin in the QEMU guest: the allocator, its pool and dmabridgeconvert on dma-bufs ($(GST_DIR)/tests/guest.rs)"
	@bin=$$(cd $(GST_DIR) && $(GST_CARGO) test --test guest --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "test-gst-guest: could not build the plugin's guest tests"; exit 1; }; \
	set -o pipefail; $(RIG) $(GST_GUEST_RIG) $(GST_GUEST_ENV) -- tests/guest-runner $$bin --color never 2>&1 | tee $(LOGS)/gst-guest.log

# Where `make demo` leaves the frames `dmabridge capture` wrote in the guest.
DEMO_PNG   := target/demo-capture
# Where `make demo` leaves the frames of the GStreamer pipeline (x86_64 only:
# the arm64 guest has GStreamer's libraries and the plugins of the plugin's
# guest tests, not gst-launch-1.0 or pngenc).
DEMO_GST   := target/demo-gst

# `make demo ARCH=arm64`: the guest parts of the demo in the arm64 guest
# (virt + SMMUv3 + GICv3) with the aarch64 build of dmabridge.
ARCH       ?= x86_64
ifeq ($(ARCH),arm64)
DEMO_RIG   := $(RIG) --arch arm64
DEMO_BIN   := target/aarch64/aarch64-unknown-linux-gnu
DEMO_CARGO := toolchain/cargo-aarch64
DEMO_DEPS  := build-arm64
else
DEMO_RIG   := $(RIG)
DEMO_BIN   := target
DEMO_CARGO := $(CARGO)
DEMO_DEPS  :=
endif

demo: guest build $(DEMO_DEPS)
	@echo "== dmabridge info on this host"
	@target/debug/dmabridge info || true
	@echo
	@echo "== dmabridge info in the QEMU guest ($(ARCH): Linux 6.12, $(if $(filter arm64,$(ARCH)),SMMUv3,intel-iommu), edu, ivshmem)"
	@$(DEMO_RIG) --bind 0000:00:10.0 --bind 0000:00:08.0 -- $(DEMO_BIN)/debug/dmabridge info
	@echo
	@echo "== the vertical proof in the guest"
	@shm=/dev/shm/dmabridge-demo-$$$$; \
	$(DEMO_RIG) --ivshmem $$shm --bind 0000:00:10.0 --bind 0000:00:08.0 -- $(DEMO_BIN)/debug/dmabridge proof --marker "hello from edu, via the IOMMU" || { rm -f $$shm; exit 1; }; \
	echo "== on the host, outside the guest: the first bytes of the ivshmem backing file $$shm"; \
	head -c 29 $$shm; echo; rm -f $$shm
	@echo
	@echo "== dmabridge capture in the guest: vivid (V4L2) writes its 640x480 YUYV test pattern straight into dmabridge"
	@echo "   buffers exported as dma-bufs, yuyv_to_rgba converts each frame in place on a dmabridge queue (release build)"
	@$(DEMO_CARGO) build --release -p dmabridge-cli --quiet
	@rm -rf $(DEMO_PNG) && mkdir -p $(DEMO_PNG)
	@$(DEMO_RIG) --module vivid --rw $(DEMO_PNG) -- $(DEMO_BIN)/release/dmabridge capture --frames 60 --fps 30 --png-dir $(DEMO_PNG)
	@echo "== on the host: the captured frames as PNG in $(CURDIR)/$(DEMO_PNG)/"
	@ls $(DEMO_PNG)
ifeq ($(ARCH),x86_64)
	@echo
	@echo "== GStreamer in the guest: v4l2src io-mode=dmabuf-import captures vivid's frames into dmabridge memory"
	@echo "   (the pool dmabridgeconvert offers), dmabridgeconvert converts them on a dmabridge queue, pngenc writes them"
	@tests/gst-deps
	@cd $(GST_DIR) && $(GST_CARGO) build --release --quiet
	@rm -rf $(DEMO_GST) && mkdir -p $(DEMO_GST)
	@$(DEMO_RIG) --module vivid --rw $(DEMO_GST) --env GST_REGISTRY=/tmp/gst-registry.bin --env GST_PLUGIN_PATH=$(CURDIR)/$(GST_TARGET)/release \
	    -- gst-launch-1.0 -q --no-position v4l2src device=/dev/video0 io-mode=dmabuf-import num-buffers=5 \
	    ! video/x-raw,format=YUY2,width=640,height=480,framerate=30/1 ! dmabridgeconvert ! video/x-raw,format=RGBA \
	    ! pngenc ! multifilesink location=$(DEMO_GST)/frame-%02d.png
	@echo "== on the host: the pipeline's frames as PNG in $(CURDIR)/$(DEMO_GST)/"
	@ls $(DEMO_GST)
endif

# After the host tests, two lanes share the machine's two cores. Lane 1 (in
# the foreground): the x86_64 guest tests, the GStreamer plugin's and the doc
# examples. Lane 2 (in the background): the aarch64 build (library,
# CLI, guest tests, the ICD's C programs). Then both take suites one at a
# time from a shared queue ($(LOGS)/shared.queue, longest first): the arm64
# guest suites and the x86_64 ones that can run in either lane, so that
# neither lane idles while the other has a long list. Lane 1 takes an arm64
# suite only once the aarch64 build is done (until then the first x86_64
# one); if that build failed, the arm64 suites fail, said once, and the
# x86_64 ones still run. A TCG guest keeps about one core busy (measured:
# see tests/README.md). Lane 2's output is printed when both are done; each
# step's time is in $(LOGS)/times.txt and under the summary, with the CPU
# time its processes used (the guests' QEMU included; from /proc's cutime
# and cstime of a subshell that ran the step alone: the lane's own shell
# also reaps the other lane when it ends): on a machine this size
# make test is CPU bound, so a step's CPU time is what it costs the others.
# test-arm64-gst-guest comes first: it cross-builds the GStreamer plugin's
# guest tests itself (gstreamer-rs for aarch64, in $(GST_A64_TARGET)), the
# longest arm64 step. Measured on the 2-core machine: from an empty target
# folder 7 min 47 s of CPU, the guest run included (15 min 55 s wall, niced,
# beside others' builds at load 13-14); with the build up to date 70 s wall
# (the guest run alone 40-98 s, by load, for the suite's 8 tests).
# Not in make test (make test-arm64 runs them): the doc examples
# on arm64 (test-arm64-doc: 563 examples compiled for aarch64 and run under
# TCG: 336-494 s of guest time in the last two fresh-clone runs, beside
# their build) and test-arm64-nonroot (what it checks on
# arm64, dmabridge info, proof, capture and a C program as a group member
# with the rules applied by udevd, test-deb-arm64 checks as installed). The
# examples are the same code on both architectures and run on the host and
# in the x86_64 guest; the arm64 guest suites check what differs by
# architecture (SMMUv3, non-coherent syncs, c_char, the aarch64 build).
# The queue, longest first (times of a fresh-clone CI run, 2026-12-07:
# 315, 222, 155, 126, 123, 104, 86, 84, 56 and 42 s).
SHARED_QUEUE := test-arm64-gst-guest test-rig test-guest-icd test-arm64-guest test-deb-arm64 test-deb \
                test-nonroot test-removal test-arm64-icd test-arm64-removal
test: guest deps-arm64
	@rm -rf $(LOGS) && mkdir -p $(LOGS)
	@status=0; q=$(LOGS)/shared.queue; hz=$$(getconf CLK_TCK); \
	cpu() { local s; read -ra s </proc/$$BASHPID/stat; cpu_s=$$(( (s[15] + s[16]) / hz )); }; \
	step() { local t=$$SECONDS; ( $(MAKE) --no-print-directory "$$@"; rc=$$?; cpu; \
	    echo "$$1: $$((SECONDS - t)) s (CPU $$cpu_s s)" >>$(LOGS)/times.txt; exit $$rc ) || status=1; }; \
	take() { flock $$q.lock sh -c 'if [ "$$1" = x86 ]; then l=$$(grep -n -m 1 -v arm64 "$$0"); else l=$$(grep -n -m 1 . "$$0"); fi || exit 0; \
	    sed -i "$${l%%:*}d" "$$0"; echo "$${l#*:}"' $$q "$$1"; }; \
	built() { [ -f $(LOGS)/arm64-build.rc ] || ! kill -0 $$lane2 2>/dev/null; }; \
	build_ok() { [ "$$(cat $(LOGS)/arm64-build.rc 2>/dev/null)" = 0 ]; }; \
	( t=$$SECONDS; $(MAKE) --no-print-directory build-gst-tests >$(LOGS)/gst-build.txt 2>&1; rc=$$?; cpu; \
	  echo "build-gst-tests (beside test-host): $$((SECONDS - t)) s (CPU $$cpu_s s)" >>$(LOGS)/times.txt; \
	  echo $$rc >$(LOGS)/gst-build.rc ) & \
	gstb=$$!; \
	step test-host GST_IN_LANE=1; \
	printf '%s\n' $(SHARED_QUEUE) >$$q; \
	t=$$SECONDS; \
	( $(MAKE) --no-print-directory build-arm64 >$(LOGS)/arm64-build.txt 2>&1; rc=$$?; cpu; \
	  echo "build-arm64 (lane 2): $$((SECONDS - t)) s (CPU $$cpu_s s)" >>$(LOGS)/times.txt; \
	  echo "$$rc" >$(LOGS)/arm64-build.rc; \
	  [ "$$rc" = 0 ] || exit 0; \
	  while s=$$(take any) && [ -n "$$s" ]; do step "$$s"; done >$(LOGS)/lane2.txt 2>&1; exit $$status ) & \
	lane2=$$!; \
	step test-guest; \
	wait $$gstb; \
	if [ "$$(cat $(LOGS)/gst-build.rc 2>/dev/null)" = 0 ]; then step test-gst; step test-gst-guest; \
	else status=1; { echo "test-gst: FAILED: the GStreamer plugin did not build (see $(LOGS)/gst-build.txt):"; \
	    tail -n 30 $(LOGS)/gst-build.txt; } | tee $(LOGS)/gst-build.log; fi; \
	step test-guest-doc DOCTESTS_BUILT=1; \
	while :; do \
	    if built; then s=$$(take any); else s=$$(take x86); fi; \
	    if [ -z "$$s" ]; then built && break; sleep 2; continue; fi; \
	    case $$s in *arm64*) build_ok || continue ;; esac; \
	    step "$$s"; \
	done; \
	if ! build_ok; then \
	    status=1; \
	    { echo "test-arm64: FAILED: the aarch64 build failed, the arm64 guest suites did not run (see $(LOGS)/arm64-build.txt):"; \
	      tail -n 30 $(LOGS)/arm64-build.txt; } | tee $(LOGS)/arm64-build.log; \
	fi; \
	wait $$lane2 || status=1; \
	if [ -s $(LOGS)/lane2.txt ]; then echo "== the suites lane 2 ran ($(LOGS)/lane2.txt):"; cat $(LOGS)/lane2.txt; fi; \
	tests/summarize $(LOGS)/*.log; \
	echo "time per step (s): $$(tr '\n' ';' <$(LOGS)/times.txt | sed 's/;$$//; s/;/; /g')"; \
	cpu; echo "make test: $$SECONDS s (CPU $$cpu_s s, with the guests' QEMU)"; \
	exit $$status

# One shape for every debug build of this workspace that make test makes,
# on both architectures: every member (--workspace), with a test target
# among those built (so that dev-dependencies count). cargo resolves
# features per invocation, from the packages named and whether tests are
# built: until 2026-12-07 `-p dmabridge-cli`, `-p dmabridge-icd`,
# `-p dmabridge-tests` and `--workspace` without tests each gave the
# library's dependencies (rustix's net, log's std, syn's full and
# extra-traits, so the whole proc-macro stack) other features, and make test
# built the library (opt-level 1) four times for each architecture. Any
# `cargo test --workspace ...` or `cargo build $(DEV_BUILD) ...` shares one
# build of it. DEV_BUILD itself: the library, the ICD (cdylib), the CLI and
# the guest tests.
DEV_BUILD := --workspace --lib --bins --test guest

test-host:
	@mkdir -p $(LOGS)
	@echo "== host tests (unit, doc and integration tests on this machine)"
	@tests/icd-deps
	@$(CARGO) build $(DEV_BUILD) --quiet
	@echo "$(CURDIR)/target/debug/libdmabridge_icd.so" > target/debug/dmabridge.icd  # tests/icd-client loads it
	@# tests/icd-deps installed PoCL: the Rust tests of kernels from source
	@# (tests/host/programs.rs) fail instead of skipping when it cannot load.
	@set -o pipefail; DMABRIDGE_EXPECT_POCL=1 $(CARGO) test --workspace --lib --bins --tests --examples --color never -- --test-threads=1 2>&1 | tee $(LOGS)/host.log
	@$(MAKE) --no-print-directory test-doc
	@$(MAKE) --no-print-directory test-icd
	@test -n "$(GST_IN_LANE)" || $(MAKE) --no-print-directory test-gst

# The OpenCL ICD's C tests through the real loader (ocl-icd), and clinfo.
test-icd:
	@mkdir -p $(LOGS)
	@echo "== OpenCL ICD: C tests and clinfo through the loader (tests/icd)"
	@set -o pipefail; tests/icd/run 2>&1 | tee $(LOGS)/icd.log

# The ICD and target/<profile>/dmabridge.icd (for OCL_ICD_VENDORS=...).
ICD_PROFILE ?= release
icd:
	@$(CARGO) build $(if $(filter release,$(ICD_PROFILE)),-p dmabridge-icd --release,$(DEV_BUILD)) --quiet
	@echo "$(CURDIR)/target/$(ICD_PROFILE)/libdmabridge_icd.so" > target/$(ICD_PROFILE)/dmabridge.icd
	@echo "wrote target/$(ICD_PROFILE)/dmabridge.icd: OCL_ICD_VENDORS=$(CURDIR)/target/$(ICD_PROFILE)/dmabridge.icd"

# `make install`: everything a board needs, from a release build, into
# $(DESTDIR): the dmabridge command and its man page; the ICD library, its
# registration with the loaders (/etc/OpenCL/vendors/dmabridge.icd naming the
# installed library, libdmabridge_icd.so.1 after its SONAME: ICD_NAME, an
# absolute path by default, the bare file name in the Debian packages, whose
# library lies in the dynamic loader's search path) and
# the headers of dmabridge's own extension (include/CL/cl_dmabridge.h) and of
# cl_amd_bus_addressable_memory (include/CL/cl_amd_bus.h); the udev rules and
# a sysusers.d line for the group they grant; kmod-helpers (dmabridge-kmod,
# in sbin: it binds drivers and raises limits, a root's tool); the docs.
# ARCH=arm64 installs the aarch64 build (toolchain/cargo-aarch64); the man
# pages come from the host build's --help either way (help2man), the text is
# the same. With DESTDIR empty and as root, the group is created and a running
# udevd reloads the rules (the packages' maintainer scripts do it otherwise).
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
DOCDIR     ?= $(DATADIR)/doc/dmabridge
MANDIR     ?= $(DATADIR)/man
# The loaders (ocl-icd, Khronos) read /etc/OpenCL/vendors whatever PREFIX is.
ICD_VENDORS_DIR ?= /etc/OpenCL/vendors
# udev and systemd-sysusers read /usr/lib/... and /etc/..., never /usr/local.
UDEVRULESDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/udev/rules.d,/etc/udev/rules.d)
SYSUSERSDIR  ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/sysusers.d,/etc/sysusers.d)
# The ICD's file name is its SONAME (driver/dmabridge-icd/build.rs).
ICD_SONAME := libdmabridge_icd.so.1
ICD_NAME   ?= $(LIBDIR)/$(ICD_SONAME)
VERSION    := $(shell sed -n '/^version = /{s/.*"\(.*\)"/\1/p;q}' Cargo.toml)
# The cargo profile whose programs are installed: release (what make deb
# packages), or debug (make test-deb and test-deb-arm64: the packages of
# what make test builds anyway, see test-deb).
INSTALL_PROFILE ?= release
INSTALL_FLAGS   := $(if $(filter release,$(INSTALL_PROFILE)),--release)
# What a release install builds: the CLI and the ICD. A debug one (make
# test's packages) builds them as make test does (DEV_BUILD, above): named
# with -p, the library got other features and was built once more.
INSTALL_CRATES  := $(if $(filter release,$(INSTALL_PROFILE)),-p dmabridge-cli -p dmabridge-icd,$(DEV_BUILD))
INSTALL_HELP    := $(if $(filter release,$(INSTALL_PROFILE)),-p dmabridge-cli,$(DEV_BUILD))
ifeq ($(ARCH),arm64)
INSTALL_CARGO := toolchain/cargo-aarch64
INSTALL_BIN   := target/aarch64/aarch64-unknown-linux-gnu/$(INSTALL_PROFILE)
else
INSTALL_CARGO := $(CARGO)
INSTALL_BIN   := target/$(INSTALL_PROFILE)
endif
# The GStreamer plugin (install-gst, below): on by default; INSTALL_GST=0
# leaves it out.
INSTALL_GST   ?= 1
build-install:
	@command -v help2man >/dev/null || { echo "make install: no help2man (it writes the man pages from --help): apt-get install help2man"; exit 1; }
	@case "$(INSTALL_PROFILE)" in release | debug) ;; *) echo "make install: INSTALL_PROFILE is release or debug"; exit 1 ;; esac
	$(INSTALL_CARGO) build $(INSTALL_FLAGS) --locked $(INSTALL_CRATES)
	$(CARGO) build $(INSTALL_FLAGS) --locked $(INSTALL_HELP) --quiet  # the man page's --help
	@mkdir -p target/man
	@# The help texts name the source tree's tools only when run from it
	@# (dmabridge::sys::hints): the man pages are written from copies outside it.
	@man=$$(mktemp -d) && trap 'rm -rf "$$man"' EXIT && cp target/$(INSTALL_PROFILE)/dmabridge kmod-helpers/dmabridge-kmod "$$man/" && \
	help2man --no-info --no-discard-stderr --section 1 --output target/man/dmabridge.1 \
	    --name "zero-copy memory for Linux pipelines (info, proof, capture, remote-dma)" "$$man/dmabridge" && \
	help2man --no-info --no-discard-stderr --section 8 --version-string "$(VERSION)" --output target/man/dmabridge-kmod.8 \
	    --name "put a machine in the state dmabridge needs (modules, vfio-pci, memlock)" "$$man/dmabridge-kmod"

install: build-install
	install -D -m 0755 $(INSTALL_BIN)/dmabridge $(DESTDIR)$(BINDIR)/dmabridge
	install -D -m 0755 kmod-helpers/dmabridge-kmod $(DESTDIR)$(SBINDIR)/dmabridge-kmod
	install -D -m 0644 $(INSTALL_BIN)/libdmabridge_icd.so $(DESTDIR)$(LIBDIR)/$(ICD_SONAME)
	install -d $(DESTDIR)$(ICD_VENDORS_DIR)
	echo "$(ICD_NAME)" > $(DESTDIR)$(ICD_VENDORS_DIR)/dmabridge.icd
	install -D -m 0644 include/CL/cl_dmabridge.h $(DESTDIR)$(INCLUDEDIR)/CL/cl_dmabridge.h
	install -D -m 0644 include/CL/cl_amd_bus.h $(DESTDIR)$(INCLUDEDIR)/CL/cl_amd_bus.h
	install -D -m 0644 udev/70-dmabridge.rules $(DESTDIR)$(UDEVRULESDIR)/70-dmabridge.rules
	install -d $(DESTDIR)$(SYSUSERSDIR)
	echo "g dmabridge - -" > $(DESTDIR)$(SYSUSERSDIR)/dmabridge.conf
	install -D -m 0644 target/man/dmabridge.1 $(DESTDIR)$(MANDIR)/man1/dmabridge.1
	install -D -m 0644 target/man/dmabridge-kmod.8 $(DESTDIR)$(MANDIR)/man8/dmabridge-kmod.8
	install -D -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -D -m 0644 udev/README.md $(DESTDIR)$(DOCDIR)/udev.md
	install -D -m 0644 docs/ARCHITECTURE.md $(DESTDIR)$(DOCDIR)/ARCHITECTURE.md
	install -D -m 0644 examples/c/usm_dmabuf.c $(DESTDIR)$(DOCDIR)/examples/usm_dmabuf.c
	$(if $(filter 1,$(INSTALL_GST)),@$(MAKE) --no-print-directory install-gst,@echo "make install: the GStreamer plugin left out (INSTALL_GST=0)")
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
	    getent group dmabridge >/dev/null || groupadd --system dmabridge; \
	    if udevadm control --reload 2>/dev/null; then \
	        udevadm trigger --action=add --subsystem-match=misc --subsystem-match=dma_heap --subsystem-match=vfio; fi; \
	    echo "make install: group dmabridge ready; add users with: usermod -aG dmabridge USER"; \
	fi

# Offline builds as Yocto and Buildroot make them: the crates vendored
# (`cargo vendor`, into $(VENDOR)), then `cargo build --offline --locked` of
# every crate of the workspace with the vendored tree as crates.io and an
# empty CARGO_HOME, so nothing from ~/.cargo or the network is used. Their
# libraries and programs, which is what an image build builds: not the
# tests, examples and benches (criterion and the dev-dependencies), which
# are the developer's and make test builds with the current Rust; with them
# (--all-targets, until 2026-12-07) this was the longest job beside make
# test in CI (3066-3768 s there, niced).
# OFFLINE_CARGO picks the cargo (check-msrv: the oldest promised one),
# OFFLINE_TARGET the target folder. CI runs it as part of check-msrv.
VENDOR         := target/vendor
OFFLINE_CARGO  ?= $(CARGO)
OFFLINE_TARGET ?= target/offline
check-offline:
	@echo "== offline build: cargo vendor, then $(OFFLINE_CARGO) build --offline --locked (every crate, $(OFFLINE_TARGET))"
	@$(CARGO) vendor --locked --versioned-dirs --quiet $(VENDOR) >/dev/null
	@rm -rf $(OFFLINE_TARGET)/cargo-home && mkdir -p $(OFFLINE_TARGET)/cargo-home
	@CARGO_HOME=$(CURDIR)/$(OFFLINE_TARGET)/cargo-home CARGO_TARGET_DIR=$(CURDIR)/$(OFFLINE_TARGET) \
	    $(OFFLINE_CARGO) build --offline --locked --workspace --keep-going --quiet \
	    --config 'source.crates-io.replace-with="vendored-sources"' \
	    --config 'source.vendored-sources.directory="$(CURDIR)/$(VENDOR)"'
	@echo "check-offline: every crate built offline from $(VENDOR) with $$($(OFFLINE_CARGO) --version)"

# The oldest Rust the README promises (rust-version in Cargo.toml): Debian
# bookworm's rustc-web and cargo-web 1.85, pinned in toolchain/msrv.lock
# (toolchain/fetch-msrv), build every crate, offline from the
# vendored tree (check-offline), as a Yocto or Buildroot release with that
# Rust would.
check-msrv:
	@msrv=$$(toolchain/fetch-msrv | tail -n 1) && \
	$(MAKE) --no-print-directory check-offline OFFLINE_CARGO=$$msrv/bin/cargo OFFLINE_TARGET=target/msrv

# What .ci/run's side-by-side jobs (make test, check-msrv, test-deb) need
# from outside, fetched once before they start: the guest kernel and QEMU,
# the aarch64 toolchain, Rust 1.85, the apt packages. (Each job also fetches
# what it lacks by itself; the scripts are idempotent.)
ci-deps: guest deps-arm64
	@toolchain/fetch-msrv >/dev/null
	@tests/icd-deps
	@tests/gst-deps
	@tests/apt-deps test-deb help2man

# Debian packages for amd64 and arm64 (packaging/deb/build: from `make
# install` into a staging DESTDIR, dpkg-deb; why not cargo-deb is said
# there), in target/deb, then checked with lintian (errors fail; an initial
# upload closing no bug is no concern outside Debian's archive) and for
# Multi-Arch co-installation (packaging/deb/check-coinstall).
DEB_ARCHES ?= amd64 arm64
deb: $(if $(filter arm64,$(DEB_ARCHES)),deps-arm64)
	@tests/apt-deps deb help2man lintian
	@rm -f target/deb/*.deb
	@for a in $(DEB_ARCHES); do packaging/deb/build --arch $$a || exit 1; done
	@echo "== lintian"
	@lintian --fail-on error --suppress-tags initial-upload-closes-no-bugs target/deb/*.deb 2>&1 \
	    | grep -v '^running with root privileges'; test $${PIPESTATUS[0]} -eq 0
	@$(if $(filter amd64,$(DEB_ARCHES)),$(if $(filter arm64,$(DEB_ARCHES)),packaging/deb/check-coinstall target/deb))

# The amd64 packages as a board gets them (tests/deb/guest-run), in a guest
# whose root is writable and where the checkout and ~/.cargo are hidden
# (run-in-guest --clean-root), with a plain systemd-udevd (--udevd): dpkg -i
# of an older version, then as a member of the group dmabridge info, proof,
# capture and a C program through the installed ICD, then the upgrade (files
# replaced; group, rules and conffile kept), the installed messages (no
# source-tree path), the GStreamer plugin, remove and purge.
#
# The packages hold make test's debug build (DEB_TEST_PROFILE, packaging/deb/build
# --profile): what is checked, the files, the maintainer scripts, udev, the
# loader and the upgrade, does not depend on the optimisation, and a release
# build for the packages alone compiles every dependency of the CLI, the ICD
# and the GStreamer plugin a second time (measured on a quiet machine: 4 min
# of CPU, 2 min 21 s; the old version's build added its own; the debug
# packaging with make test's build done: 6 s). The older version
# is these packages relabelled DEB_OLD (tests/deb/relabel; DEB_OLD sorts
# before the workspace's version), so two checks that need a really older
# build are skipped, saying so. DEB_OLD_REAL=1 (with DEB_TEST_PROFILE=release)
# upgrades from what the first packaging commit built (DEB_OLD_COMMIT):
# tests/deb/old-packages builds it once and keeps it in target/deb-old (why
# not committed .deb files: said there).
DEB_OLD_COMMIT := 8254b1f829267661cc5aa5135f422449117f74b6
DEB_OLD  := 0.1.0~8254b1f-1
DEB_TEST := target/deb-test
DEB_TEST_PROFILE ?= debug
DEB_OLD_REAL ?= 0
test-deb: guest
	@mkdir -p $(LOGS)
	@echo "== the Debian packages, installed with dpkg -i in the QEMU guest with the source tree hidden"
	@tests/icd-deps
	@tests/gst-deps
	@tests/apt-deps test-deb help2man
	@rm -rf $(DEB_TEST)
	@packaging/deb/build --arch amd64 --profile $(DEB_TEST_PROFILE) --out $(DEB_TEST) >/dev/null
	@$(if $(filter 1,$(DEB_OLD_REAL)),tests/deb/old-packages $(DEB_OLD_COMMIT) $(DEB_OLD),tests/deb/relabel $(DEB_OLD)) $(DEB_TEST)
	@$(call deb_guest_run,$(RIG),$(DEB_TEST),examples/c/usm_dmabuf.c,$(LOGS)/deb.log)

# tests/deb/guest-run in a clean-root guest: RIG, the folder of the packages
# (both versions), the other files it takes, the log.
define deb_guest_run
	new=$$(sed -n '/^version = /{s/.*"\(.*\)"/\1/p;q}' Cargo.toml)-1; \
	set -o pipefail; $(1) --clean-root --udevd $(GUEST_RIG) \
	    $$(for f in $(2)/*.deb $(3); do printf -- '--file %s ' "$$f"; done) \
	    --env DMABRIDGE_DEB_OLD=$(DEB_OLD) --env DMABRIDGE_DEB_NEW=$$new --env DMABRIDGE_DEB_REPO=$(CURDIR) \
	    --env DMABRIDGE_DEB_OLD_REAL=$$(test -e $(2)/.old-is-relabelled && echo 0 || echo 1) \
	    -- tests/deb/guest-run 2>&1 | tee $(4)
endef

# The arm64 packages the same way, in the arm64 guest (run-in-guest --arch
# arm64 --clean-root --udevd; dpkg, passwd and setpriv come from
# qemu/guest-arm64.lock, which registers that userland in the guest's own
# dpkg database). Part of make test's shared queue (SHARED_QUEUE), after
# build-arm64, whose debug build it packages (DEB_TEST_PROFILE, as test-deb).
# What differs from test-deb, and why: no GStreamer plugin (that board has
# GStreamer's libraries and the plugins of test-arm64-gst-guest, which tests
# the plugin on arm64, but not gst-inspect-1.0 or gst-launch-1.0, which the
# package's case runs); the C example is cross-compiled here against the
# headers of the dmabridge-dev package (the guest has no C compiler).
# Measured here (2-core machine under load 10-13): the guest run 59 s, the
# packaging 24 s.
DEB_TEST_A64 := target/deb-test-arm64
test-deb-arm64: guest deps-arm64
	@mkdir -p $(LOGS)
	@echo "== the arm64 Debian packages, installed with dpkg -i in the arm64 QEMU guest with the source tree hidden"
	@tests/icd-deps
	@tests/apt-deps test-deb help2man
	@rm -rf $(DEB_TEST_A64)
	@packaging/deb/build --arch arm64 --no-gst --profile $(DEB_TEST_PROFILE) --out $(DEB_TEST_A64) >/dev/null
	@inc=$$(mktemp -d) && trap 'rm -rf "$$inc"' EXIT && dpkg-deb -x $(DEB_TEST_A64)/dmabridge-dev_*_all.deb "$$inc" && \
	aarch64-linux-gnu-gcc -std=c11 -Wall -Werror -I"$$inc/usr/include" -o $(DEB_TEST_A64)/usm_dmabuf examples/c/usm_dmabuf.c \
	    -L"$$(qemu/fetch-guest --arch arm64 | tail -1)/root/usr/lib/aarch64-linux-gnu" -lOpenCL
	@tests/deb/relabel $(DEB_OLD) $(DEB_TEST_A64)
	@$(call deb_guest_run,$(RIG) --arch arm64,$(DEB_TEST_A64),$(DEB_TEST_A64)/usm_dmabuf,$(LOGS)/arm64-deb.log)

# The GStreamer plugin, in GStreamer's plugin folder under PREFIX: for
# PREFIX=/usr the system one gst-inspect-1.0 scans (Debian's multiarch
# /usr/lib/<triplet>/gstreamer-1.0), else $(LIBDIR)/gstreamer-1.0, which
# GST_PLUGIN_PATH must name. ARCH=arm64 cross-builds it with the pinned
# toolchain against the arm64 GStreamer libraries of toolchain/fetch-gst-arm64,
# into target/gst-aarch64.
# GST_A64_CARGO: cargo in the plugin's folder for aarch64, with the arm64
# GStreamer libraries to link (install-gst, test-arm64-gst-guest).
GST_A64_TARGET := target/gst-aarch64
GST_A64_PLUGINDIR := /usr/lib/aarch64-linux-gnu/gstreamer-1.0
GST_A64_CARGO   = set -a && . "$$(toolchain/fetch-gst-arm64 | tail -n 1)" && set +a && cd $(GST_DIR) && \
    CARGO_TARGET_DIR_AARCH64=$(CURDIR)/$(GST_A64_TARGET) ../../toolchain/cargo-aarch64
ifeq ($(ARCH),arm64)
GST_SYSTEM_DIR    := $(GST_A64_PLUGINDIR)
GST_INSTALL_SO    := $(GST_A64_TARGET)/aarch64-unknown-linux-gnu/$(INSTALL_PROFILE)/libgstdmabridge.so
GST_INSTALL_BUILD  = $(GST_A64_CARGO) build $(INSTALL_FLAGS) --lib --quiet
else
GST_SYSTEM_DIR     = $(shell pkg-config --variable=pluginsdir gstreamer-1.0 2>/dev/null || echo $(LIBDIR)/gstreamer-1.0)
GST_INSTALL_SO    := $(GST_TARGET)/$(INSTALL_PROFILE)/libgstdmabridge.so
GST_INSTALL_BUILD  = cd $(GST_DIR) && $(GST_CARGO) build $(INSTALL_FLAGS) --quiet
endif
GST_PLUGINDIR ?= $(if $(filter /usr,$(PREFIX)),$(GST_SYSTEM_DIR),$(LIBDIR)/gstreamer-1.0)
install-gst:
	@tests/gst-deps
	@$(GST_INSTALL_BUILD)
	install -D -m 0644 $(GST_INSTALL_SO) $(DESTDIR)$(GST_PLUGINDIR)/libgstdmabridge.so

# The guest suites run under tests/guest-runner: one process per test, each
# killed and reported by name when it gives no result within its timeout
# (DMABRIDGE_TEST_TIMEOUT, default 120 s) while the others go on. A guest
# that stops making progress altogether is run-in-guest's watchdog's
# (--stall-timeout): it stops the run, says why, and retries it once, loudly.
test-guest: guest
	@mkdir -p $(LOGS)
	@echo "== guest tests (built here, run inside the QEMU guest)"
	@$(CARGO) build $(DEV_BUILD) --quiet
	@bin=$$($(CARGO) test --workspace --test guest --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "test-guest: could not build the guest tests"; exit 1; }; \
	set -o pipefail; $(RIG) $(GUEST_RIG) -- tests/guest-runner $$bin --color never 2>&1 | tee $(LOGS)/guest.log

# The ICD's C tests and C examples again, in the guest, where udmabuf (so
# cl_dmabridge_dma_buf_export really exports), the edu devices and the BAR
# device are there: compiled on the host by tests/icd/run, run with --exec-only.
test-guest-icd: guest
	@mkdir -p $(LOGS)
	@echo "== OpenCL ICD: the C tests and examples through the loader, inside the QEMU guest"
	@test -f target/debug/dmabridge.icd -a -d target/debug/icd-tests || tests/icd/run >/dev/null 2>&1 || true
	@set -o pipefail; $(RIG) $(GUEST_RIG) --env DMABRIDGE_BAR_DEVICE=0000:00:08.0,bar=2,engine=0000:00:10.0 \
	    -- tests/icd/run --exec-only 2>&1 | tee $(LOGS)/guest-icd.log

# The doc examples on this machine (part of test-host). rustdoc keeps each
# compiled example in $(DOCTESTS) (--persist-doctests, an unstable option,
# which tests/rustdoc-bootstrap lets the stable rustdoc use without changing
# what cargo fingerprints: nothing is rebuilt), for test-guest-doc.
DOCTESTS   := target/doctests
# $(call persist_doctests,DIR): the environment of a cargo run that keeps its
# compiled doc examples in DIR (the rustdoc of toolchain/cargo-aarch64 too).
persist_doctests = DMABRIDGE_REAL_RUSTDOC=$${RUSTDOC:-rustdoc} RUSTDOC=$(CURDIR)/tests/rustdoc-bootstrap \
    DMABRIDGE_RUSTDOC_WRAPPER=$(CURDIR)/tests/rustdoc-bootstrap \
    RUSTDOCFLAGS="-Z unstable-options --persist-doctests $(CURDIR)/$(1) -C strip=debuginfo"
# $(call doc_build_failed,STEP,LOG): what a failed doc-example build says.
doc_build_failed = { echo "$(1): FAILED: the rustdoc run that compiles the examples failed; those it did not compile do not run in the guest (see $(2))"; \
    grep -m 20 -E '^(error(\[E[0-9]+\])?:|---- .* stdout ----)' $(2); }
test-doc:
	@mkdir -p $(LOGS)
	@echo "== doc examples (kept in $(DOCTESTS) for test-guest-doc)"
	@rm -rf $(DOCTESTS)
	@set -o pipefail; $(call persist_doctests,$(DOCTESTS)) $(CARGO) test --workspace --doc --color never 2>&1 | tee $(LOGS)/doc.log

# The doc examples again, in the guest: on a development host the examples
# of udmabuf, VFIO, edu and the BAR device only reach their "no device"
# branch. Only those that can reach a device run there (tests/device-doctests:
# those that link a module of the library naming a /dev or /sys path); the
# others ran the same in test-doc (measured: ~135 ms each in the guest, 126
# of 503 left out: ~17 s). Nor those that build OpenCL C with PoCL
# (--without-pocl: 107 s and 60 s under TCG for the two that reach a
# device; the host runs them, tests/guest/capture_kernel.rs builds kernels
# in the guest). Measured on a quiet machine: 420 examples in 192 s.
# DOCTESTS_BUILT=1 (make test, after test-host): run those test-doc kept.
test-guest-doc: guest
	@mkdir -p $(LOGS)
	@echo "== doc examples, compiled here, run inside the QEMU guest"
	@status=0; : >$(LOGS)/guest-doc.log; \
	if [ "$(DOCTESTS_BUILT)" != 1 ]; then \
	    rm -rf $(DOCTESTS); \
	    $(call persist_doctests,$(DOCTESTS)) $(CARGO) test --workspace --doc --color never >$(LOGS)/guest-doc-build.txt 2>&1 \
	        || { status=1; $(call doc_build_failed,test-guest-doc,$(LOGS)/guest-doc-build.txt) | tee $(LOGS)/guest-doc.log; }; \
	fi; \
	tests/device-doctests --without-pocl $(DOCTESTS) >$(LOGS)/guest-doc.list || status=1; \
	set -o pipefail; $(RIG) $(GUEST_RIG) --env DMABRIDGE_BAR_DEVICE=0000:00:08.0,bar=2,engine=0000:00:10.0 \
	    -- tests/guest-runner --doctests $(DOCTESTS) --only $(LOGS)/guest-doc.list 2>&1 | tee -a $(LOGS)/guest-doc.log || status=1; \
	exit $$status

# dmabridge as a service user in the guest, in one boot: systemd-udevd runs
# with udev/70-dmabridge.rules (run-in-guest --udev, which also adds the group
# and the user dmabridge-svc), kmod-helpers binds the functions, and
# tests/nonroot/run drops to the user (setpriv) under a service's memlock
# limit for dmabridge info, proof and capture and the ICD's C tests, and
# checks the memlock and permission errors name the limit and the fix.
test-nonroot: guest
	@mkdir -p $(LOGS)
	@echo "== as a service user: dmabridge info, proof, capture and the ICD's C tests, in the QEMU guest"
	@$(CARGO) build $(DEV_BUILD) --quiet
	@test -f target/debug/dmabridge.icd -a -d target/debug/icd-tests || tests/icd/run >/dev/null 2>&1 || true
	@set -o pipefail; $(RIG) $(GUEST_RIG) --udev -- tests/nonroot/run 2>&1 | tee $(LOGS)/nonroot.log

# Device removal (tests/guest/removal.rs): each test removes a PCI function
# of its guest (/sys/bus/pci/devices/<bdf>/remove) under a process using it,
# so each runs alone in a guest of its own (25-50 s each here, boot included),
# the test and the new process it starts after the rescan. The device loss
# an engine finds itself (tests/guest/engine_loss.rs: a missed completion, a
# register reading all ones) breaks both edus: a guest of its own too (21 s on
# x86_64, 33 s on arm64, boot included: most of it is one 10 s edu timeout).
# A PCIe error (AER_TESTS, x86_64 only): --aer-device adds QEMU's NVMe
# controller behind a PCIe root port, the BAR device over its memory buffer;
# the test has the rig inject an error at the port (25-27 s, boot included).
# edu and ivshmem are plain PCI functions: vfio-pci gives them no error
# interrupt. Not on arm64: there the port shares the function's IOMMU group,
# and once VFIO holds the group the port's AER MSI faults in the SMMU (event
# 0x10 at the ITS doorbell): the kernel never hears of the error.
# removal_runs: the rig, the guest-test executable, the log, the tests.
REMOVAL_RIG   := --edu 2 --bind 0000:00:10.0 --bind 0000:00:11.0 --bind 0000:00:08.0
REMOVAL_TESTS := removal::edu_removed_while_its_queue_copies removal::ivshmem_removed_under_a_resident_external_buffer \
                 engine_loss::edu_lost_by_a_missed_completion_or_an_all_ones_register
AER_RIG       := --aer-device --bind 0000:01:00.0
AER_TESTS     := removal::bar_device_lost_to_a_pcie_error_while_its_queue_copies
define removal_runs
	status=0; \
	for t in $(4); do \
	    $(1) --env DMABRIDGE_BAR_DEVICE=0000:00:08.0,bar=2,engine=0000:00:10.0 -- $(2) --exact $$t --ignored \
	        --test-threads=1 --nocapture --color never 2>&1 | tee -a $(3) || status=1; \
	done; exit $$status
endef

test-removal: guest
	@mkdir -p $(LOGS)
	@echo "== device removal, each test in a guest of its own"
	@$(CARGO) build $(DEV_BUILD) --quiet  # the tests run dmabridge info after a removal
	@bin=$$($(CARGO) test --workspace --test guest --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "test-removal: could not build the guest tests"; exit 1; }; \
	: >$(LOGS)/removal.log; set -o pipefail; $(call removal_runs,$(RIG) $(REMOVAL_RIG) $(AER_RIG),$$bin,$(LOGS)/removal.log,$(REMOVAL_TESTS) $(AER_TESTS))

test-rig: guest
	@mkdir -p $(LOGS)
	@echo "== rig tests (host side: boot guests, check what crosses the boundary)"
	@$(CARGO) build $(DEV_BUILD) --quiet
	@$(CARGO) test --workspace --test guest --no-run --quiet 2>/dev/null
	@test -d $(DOCTESTS) || $(MAKE) --no-print-directory test-doc >/dev/null  # rig/doc_selection.rs reads them
	@set -o pipefail; $(CARGO) test --workspace --test rig --color never -- --test-threads=1 2>&1 | tee $(LOGS)/rig.log

# Benchmarks print the peers' figures from the same run beside ours. First the C
# program bench/icd/icd_bench.c through the ICD loader, one column each for
# dmabridge's ICD, PoCL and Intel's OpenCL CPU runtime (bench/icd/run; bench/intel-rt
# installs Intel's from PyPI into target/bench-peers for the benchmark only); then
# the Rust benches, whose peer is the same C program (benches/common/peer.rs
# compiles it) on PoCL, and on our ICD for the C-vs-Rust allocation row.
# bench/images/run: image copy, fill and read/write with pitches of a 1080p
# RGBA frame against memcpy/memset of the same bytes, dmabridge beside PoCL.
# bench/peer-deps installs PoCL, the ICD loader and the OpenCL headers, and
# GStreamer and v4l-utils for the last one: bench/capture/run-guest, the
# capture -> output loopback on vivid in the guest, dmabridge capture --output
# against GStreamer's v4l2src ! v4l2sink in dma-buf mode, in a guest with one
# vCPU: with two vCPU threads and QEMU's I/O thread on a 2-core host, a vCPU
# stalls for half a frame now and then and vivid's clock slips frames, for
# either pipeline (up to 84 in 600); with one, it hardly ever does. Then
# $(GST_DIR)/benches/guest_pipeline.rs, also with one vCPU: vivid capture ->
# YUY2 to BGRx -> vivid output through GStreamer, dmabridgeconvert with
# dma-buf import on both sides against videoconvert with default io-modes
# (CPU per frame of the process, dropped frames, the ratio).
# Last figures: docs/BENCHMARKS.md.
bench: guest icd
	@bench/peer-deps
	@tests/gst-deps
	@cd $(GST_DIR) && $(GST_CARGO) build --release --quiet
	@echo "== dmabridgeconvert against GStreamer's videoconvert, YUY2 -> RGBA (host; bench/gst/run)"
	@bench/gst/run $(GST_TARGET)/release
	@ICD_PROFILE=$(ICD_PROFILE) bench/icd/run
	@ICD_PROFILE=$(ICD_PROFILE) bench/images/run
	@DMABRIDGE_ICD=$(CURDIR)/target/$(ICD_PROFILE)/dmabridge.icd $(CARGO) bench -p dmabridge --bench memory
	@echo "== buffer map/unmap, linked vs unlinked (in the QEMU guest: the BAR device is ivshmem's BAR 2)"
	@bin=$$($(CARGO) bench -p dmabridge --bench buffer_map --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "bench: could not build benches/buffer_map.rs"; exit 1; }; \
	$(RIG) --ivshmem-size 256M --bind 0000:00:08.0 --env DMABRIDGE_BAR_DEVICE=0000:00:08.0,bar=2 -- $$bin
	@$(CARGO) build --release -p dmabridge-cli --quiet
	@$(RIG) --smp 1 --module vivid -- bench/capture/run-guest
	@echo "== vivid capture -> YUY2 to BGRx -> vivid output: dmabridgeconvert on dma-bufs against videoconvert, default io-modes (in the QEMU guest: $(GST_DIR)/benches/guest_pipeline.rs)"
	@$(MAKE) --no-print-directory gst-guest-plugins
	@bin=$$(cd $(GST_DIR) && $(GST_CARGO) bench --bench guest_pipeline --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "bench: could not build $(GST_DIR)/benches/guest_pipeline.rs"; exit 1; }; \
	$(RIG) --smp 1 --module vivid $(GST_GUEST_ENV) -- $$bin
	@echo "== dma-buf import (clImportMemoryARM), 4 MiB vs 256 MiB (in the QEMU guest: the DMA-BUF system heap)"
	@bin=$$($(CARGO) bench -p dmabridge --bench arm_import --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "bench: could not build benches/arm_import.rs"; exit 1; }; \
	$(RIG) -- $$bin
	@echo "== Khronos external memory and semaphores: import vs clImportMemoryARM, fence wait vs a thread in poll() (in the QEMU guest: system heap, vgem)"
	@bin=$$($(CARGO) bench -p dmabridge --bench khr_external --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "bench: could not build benches/khr_external.rs"; exit 1; }; \
	$(RIG) --module vgem -- $$bin
	@echo "== cl_amd_bus_addressable_memory: make-resident vs raw VFIO map, WaitSignal vs busy polling (in the QEMU guest: two edus)"
	@bin=$$($(CARGO) bench -p dmabridge --bench amd_bus --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "bench: could not build benches/amd_bus.rs"; exit 1; }; \
	$(RIG) --edu 3 --bind 0000:00:10.0 --bind 0000:00:12.0 --no-ivshmem -- $$bin

# The property-based tests (tests/prop: USM, SVM and buffer commands against
# reference models) with many more cases than `make test` gives them:
# FUZZ_CASES per property, in a debug build (overflow checks on), bounded by
# FUZZ_SECONDS; a run that does not end in time fails (a hang is a bug).
# Shrunk failing inputs land in tests/prop/*.regressions: commit them.
# Then the fuzzer of the C boundary (tests/icd/fuzz_test.c, through the
# loader, against the debug ICD) for FUZZ_ICD_SECONDS, FUZZ_ICD_CALLS calls
# per child process; a failure prints its seed and call sequence and how to
# replay it (--seed N --child K). FUZZ_ICD_FLAGS=--no-stale leaves released
# handles out. The fuzzer runs without PoCL (DMABRIDGE_POCL=off): its
# expectations are the no-compiler answers, and compiling random programs
# would spend its time in LLVM.
FUZZ_CASES     ?= 20000
FUZZ_SECONDS   ?= 3600
FUZZ_ICD_SECONDS ?= 600
FUZZ_ICD_CALLS ?= 400
FUZZ_ICD_FLAGS ?=
fuzz:
	@mkdir -p $(LOGS)
	@bin=$$($(CARGO) test --workspace --test prop --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "fuzz: could not build tests/prop"; exit 1; }; \
	echo "== property-based tests, $(FUZZ_CASES) cases per property, at most $(FUZZ_SECONDS) s"; \
	set -o pipefail; PROPTEST_CASES=$(FUZZ_CASES) timeout -k 10 $(FUZZ_SECONDS) $$bin --color never 2>&1 | tee $(LOGS)/fuzz.log; \
	status=$$?; test $$status -ne 124 || echo "fuzz: not finished within $(FUZZ_SECONDS) s"; \
	$(MAKE) --no-print-directory fuzz-icd || status=1; exit $$status

# The C boundary's fuzzer alone (part of `make fuzz`).
fuzz-icd:
	@mkdir -p $(LOGS)
	@tests/icd-deps
	@$(MAKE) --no-print-directory icd ICD_PROFILE=debug >/dev/null
	@gcc -std=c11 -Wall -Wextra -Werror -Wno-deprecated-declarations -Iinclude -o target/debug/fuzz_icd tests/icd/fuzz_test.c -lOpenCL
	@echo "== the C boundary fuzzed through the loader, $(FUZZ_ICD_SECONDS) s, $(FUZZ_ICD_CALLS) calls per child"
	@set -o pipefail; DMABRIDGE_POCL=off OCL_ICD_VENDORS=$(CURDIR)/target/debug/dmabridge.icd timeout -k 10 $$(( $(FUZZ_ICD_SECONDS) + 300 )) \
	    target/debug/fuzz_icd --seconds $(FUZZ_ICD_SECONDS) --calls $(FUZZ_ICD_CALLS) $(FUZZ_ICD_FLAGS) 2>&1 | tee $(LOGS)/fuzz-icd.log

# arm64: the same guest suites, C tests through the ICD and doc examples,
# built here for aarch64-unknown-linux-gnu (toolchain/cargo-aarch64: Debian's
# rustc-web and its arm64 standard library, pinned in toolchain/aarch64.lock)
# and run in the arm64 guest (qemu/run-in-guest --arch arm64: QEMU's virt
# machine with an SMMUv3 and a GICv3, Debian's arm64 6.12 kernel, pinned in
# qemu/guest-arm64.lock). Same devices and addresses as GUEST_RIG.
A64        := target/aarch64/aarch64-unknown-linux-gnu/debug
RIG_A64    := $(RIG) --arch arm64 $(GUEST_RIG)
deps-arm64:
	@qemu/fetch-guest --arch arm64 >/dev/null
	@toolchain/fetch-aarch64 >/dev/null
	@toolchain/fetch-gst-arm64 >/dev/null

build-arm64: deps-arm64
	@echo "== building for aarch64-unknown-linux-gnu (toolchain/cargo-aarch64, target/aarch64)"
	@toolchain/cargo-aarch64 build $(DEV_BUILD) --quiet
	@tests/icd/run --arch arm64

# Part of `make test`; alone: `make test-arm64`.
test-arm64: guest build-arm64
	@$(MAKE) --no-print-directory test-arm64-run

# The arm64 guest suites, on what build-arm64 built.
test-arm64-run:
	@mkdir -p $(LOGS)
	@status=0; \
	$(MAKE) --no-print-directory test-arm64-guest || status=1; \
	$(MAKE) --no-print-directory test-arm64-icd || status=1; \
	$(MAKE) --no-print-directory test-arm64-doc || status=1; \
	$(MAKE) --no-print-directory test-arm64-nonroot || status=1; \
	$(MAKE) --no-print-directory test-arm64-removal || status=1; \
	$(MAKE) --no-print-directory test-arm64-gst-guest || status=1; \
	$(MAKE) --no-print-directory test-deb-arm64 || status=1; \
	exit $$status

test-arm64-guest:
	@echo "== guest tests on arm64 (built here for aarch64, run inside the arm64 QEMU guest)"
	@bin=$$(toolchain/cargo-aarch64 test --workspace --test guest --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "test-arm64-guest: could not build the guest tests"; exit 1; }; \
	set -o pipefail; $(RIG_A64) -- tests/guest-runner $$bin --color never 2>&1 | tee $(LOGS)/arm64-guest.log

test-arm64-removal:
	@mkdir -p $(LOGS)
	@echo "== device removal on arm64, each test in an arm64 guest of its own"
	@toolchain/cargo-aarch64 build $(DEV_BUILD) --quiet  # the tests run dmabridge info after a removal
	@bin=$$(toolchain/cargo-aarch64 test --workspace --test guest --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "test-arm64-removal: could not build the guest tests"; exit 1; }; \
	: >$(LOGS)/arm64-removal.log; set -o pipefail; $(call removal_runs,$(RIG) --arch arm64 $(REMOVAL_RIG),$$bin,$(LOGS)/arm64-removal.log,$(REMOVAL_TESTS))

test-arm64-icd:
	@echo "== OpenCL ICD on arm64: the C tests and examples through the loader, inside the arm64 QEMU guest"
	@set -o pipefail; $(RIG_A64) --env DMABRIDGE_BAR_DEVICE=0000:00:08.0,bar=2,engine=0000:00:10.0 \
	    -- tests/icd/run --exec-only --arch arm64 2>&1 | tee $(LOGS)/arm64-icd.log

# The GStreamer plugin's guest tests on arm64 ($(GST_DIR)/tests/guest.rs,
# as test-gst-guest runs them): cross-built with $(GST_A64_CARGO) into
# $(GST_A64_TARGET), run in the arm64 guest, whose userland has GStreamer's
# libraries and the plugins the tests use (qemu/guest-arm64.lock). The
# plugin path's links name the guest's arm64 plugins (they dangle on the host).
# No test skips on arm64: every one passes there (measured times: see SHARED_QUEUE).
GST_A64_PLUGINS := target/gst-guest-plugins-arm64
test-arm64-gst-guest: deps-arm64
	@mkdir -p $(LOGS)
	@$(call gst_guest_plugins,$(GST_A64_PLUGINS),$(GST_A64_PLUGINDIR))
	@echo "== GStreamer plugin on arm64: the allocator, its pool and dmabridgeconvert on dma-bufs, in the arm64 QEMU guest ($(GST_DIR)/tests/guest.rs)"
	@bin=$$($(GST_A64_CARGO) test --test guest --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1); \
	test -n "$$bin" || { echo "test-arm64-gst-guest: could not build the plugin's guest tests for aarch64"; exit 1; }; \
	set -o pipefail; $(RIG) --arch arm64 $(GST_GUEST_RIG) $(call gst_guest_env,$(GST_A64_PLUGINS)) \
	    -- tests/guest-runner $$bin --color never 2>&1 | tee $(LOGS)/arm64-gst-guest.log

# test-nonroot in the arm64 guest: its systemd-udevd is the arm64 build of
# the host's udev version (qemu/guest-arm64.lock), busybox su drops to the user.
test-arm64-nonroot:
	@echo "== as a service user on arm64: dmabridge info, proof, capture and the ICD's C tests, in the arm64 QEMU guest"
	@set -o pipefail; $(RIG_A64) --udev -- tests/nonroot/run --arch arm64 2>&1 | tee $(LOGS)/arm64-nonroot.log

# rustdoc compiles the examples for aarch64 and keeps them; the runner
# `true` stands in for running them here (cargo hands it to rustdoc as the
# doctests' runtool), the guest runs them. A failed build leaves its first
# errors in $(A64_DOCTESTS).failed, which test-arm64-doc reports.
A64_DOCTESTS := target/aarch64/doctests
build-arm64-doc: deps-arm64
	@mkdir -p $(LOGS)
	@echo "== compiling the doc examples for aarch64 ($(A64_DOCTESTS))"
	@rm -rf $(A64_DOCTESTS) $(A64_DOCTESTS).failed
	@CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=true $(call persist_doctests,$(A64_DOCTESTS)) \
	    toolchain/cargo-aarch64 test --workspace --doc --color never >$(LOGS)/arm64-doc-build.txt 2>&1 \
	    || { $(call doc_build_failed,test-arm64-doc,$(LOGS)/arm64-doc-build.txt) >$(A64_DOCTESTS).failed; exit 1; }

# Builds them (build-arm64-doc), then runs every example (no host runs the
# aarch64 build), less those that need PoCL, which the arm64 guest lacks
# (tests/device-doctests --every --without-pocl: 563 of 579). Not part of
# make test (see SHARED_QUEUE).
test-arm64-doc:
	@mkdir -p $(LOGS)
	@$(MAKE) --no-print-directory build-arm64-doc || true
	@echo "== doc examples on arm64, compiled here for aarch64, run inside the arm64 QEMU guest"
	@status=0; : >$(LOGS)/arm64-doc.log; \
	if [ -f $(A64_DOCTESTS).failed ]; then status=1; tee $(LOGS)/arm64-doc.log <$(A64_DOCTESTS).failed; fi; \
	tests/device-doctests --every --without-pocl $(A64_DOCTESTS) >$(LOGS)/arm64-doc.list || status=1; \
	set -o pipefail; $(RIG_A64) --env DMABRIDGE_BAR_DEVICE=0000:00:08.0,bar=2,engine=0000:00:10.0 \
	    -- tests/guest-runner --doctests $(A64_DOCTESTS) --only $(LOGS)/arm64-doc.list 2>&1 | tee -a $(LOGS)/arm64-doc.log || status=1; \
	exit $$status

# tests/lint-pipes: no script pipes into a reader that stops early (grep -q,
# head), which under pipefail fails on the writer's SIGPIPE. gen-stubs.py
# --check: the ICD's generated stubs.rs is what its generator writes.
# gen-cl-asserts.py --check: the ICD's cl_constants.rs (the core's OpenCL
# constants asserted against opencl-sys) is what its generator writes.
# tools/layercheck: no module of the library names a layer above its own
# (sys < memory < runtime < ext < pipeline, tools/layercheck/layers.conf),
# every path resolved (use trees, crate/self/super, aliases, macro calls),
# and no crate-visible function or field carries an address as a bare
# integer (in the library and, --addrs-only, the ICD); then its own tests,
# on fixtures that must fail and pass.
# constants asserted against opencl-sys) is what its generator writes. The lock
# check: every lock in driver/*/src is taken through dmabridge::sync (one
# policy: a poisoned lock is taken all the same, see driver/dmabridge/src/sync.rs),
# so no unwrap or expect of a lock, and no PoisonError handled anywhere else.
LOCK_MISUSE := \.(lock|read|write|get_mut)\(\)\.(unwrap|expect)\(|\.wait\([^()]*\)\.(unwrap|expect)\(|PoisonError
lint:
	tests/lint-pipes
	cd driver/dmabridge-icd && python3 tools/gen-stubs.py --check
	driver/dmabridge-icd/tools/gen-cl-asserts.py --check
	$(CARGO) run -p layercheck --quiet -- driver/dmabridge/src
	$(CARGO) run -p layercheck --quiet -- --addrs-only driver/dmabridge-icd/src
	$(CARGO) test -p layercheck --quiet
	@if grep -rnE '$(LOCK_MISUSE)' --include='*.rs' driver/*/src | grep -v '^driver/dmabridge/src/sync.rs:'; then \
	    echo "lint: take locks with dmabridge::sync::{lock, read, write, wait, get_mut} (see driver/dmabridge/src/sync.rs)"; exit 1; fi
	$(CARGO) fmt --all --check
	cd $(GST_DIR) && $(CARGO) fmt --all --check
	@tests/gst-deps
	cd $(GST_DIR) && $(GST_CARGO) clippy --all-targets -- -D warnings
	@if grep -rnE '$(LOCK_MISUSE)|eprintln!' --include='*.rs' $(GST_DIR)/src; then echo "lint: $(GST_DIR)/src: locks through dmabridge::sync, no eprintln!"; exit 1; fi
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p dmabridge-tests --test guest --test rig -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -p dmabridge -p dmabridge-icd --no-deps --quiet

clean-guest:
	rm -rf $${DMABRIDGE_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/dmabridge}
