# Gleam: GPU remoting and compressed training over a LAN.  `make help` lists
# the targets; README.md says what they do.

PREFIX		?= /usr/local
BINDIR		?= $(PREFIX)/bin
LIBDIR		?= $(PREFIX)/lib
MANDIR		?= $(PREFIX)/share/man
DOCDIR		?= $(PREFIX)/share/doc/gleam
DESTDIR		?=

CC		?= cc
CFLAGS		?= -O2 -g
WARNFLAGS	 = -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes \
		   -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral \
		   -Wno-unused-parameter -Wno-missing-field-initializers
CPPFLAGS	+= -D_GNU_SOURCE -Ilib/common -Ilib/codec
LDLIBS		 = -levent -levent_pthreads -lyaml -lsodium -lcrypto -lzstd -lpthread -lm -ldl

# Short lines while building ("CC gleam-serve/main.o", "LD bin/gleam-serve"),
# as the kernel's and automake's silent rules; make V=1 prints every command
# in full.  Nothing reads these lines: a failing command's own messages say
# what failed.
V		?= 0
ifeq ($(V),1)
Q		 =
say		 =
else
Q		 = @
say		 = @printf '  %-6s %s\n' '$(1)' '$(patsubst build/default/%,%,$(2))';
MAKEFLAGS	+= --no-print-directory
endif
# make -s: not even those.
ifneq ($(findstring s,$(filter-out ---%,$(firstword -$(MAKEFLAGS)))),)
say		 = @
endif
# The version: GLEAM_VERSION in lib/common/util.h, the one place it is
# written; the pkg-config files take it from there.
VERSION		:= $(shell sed -n 's/^\#define GLEAM_VERSION[^"]*"\([^"]*\)".*/\1/p' lib/common/util.h)

# Where this build's objects, programs and library go.  The sanitizer build
# (make asan) reuses these rules with other values.
.DEFAULT_GOAL	:= all

BUILD		?= build/default
BINOUT		?= bin
LIBA		?= lib/libgleam.a

PROGS		 = gleam-serve gleam-probe gleam-link gleam-run gleam-sched gleam-cache gleam-reduce gleam-key
# svc.c (readiness and the pid file) links libsystemd: only the daemons
# take it, so that libgleam.a and what is made of it do not depend on it.
LIB_SRC		:= $(filter-out lib/common/svc.c,\
		    $(wildcard lib/common/*.c lib/codec/*.c))
LIB_OBJ		:= $(LIB_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC	:= $(wildcard tests/unit/test_*.c)
UNIT_BIN	:= $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
MANPAGES	:= $(wildcard man/*.[1-8])
# examples/README: the example set-up and the sample files; the scripts
# among them are installed executable.
EXAMPLES	:= $(wildcard examples/*)
EXAMPLE_BIN	 = examples/try-scheduler examples/cuda-hello.py
PROG_BIN	:= $(PROGS:%=$(BINOUT)/%)
DAEMONS		 = gleam-serve gleam-sched gleam-reduce
DAEMON_BIN	:= $(DAEMONS:%=$(BINOUT)/%)
UNITS		 = gleam-serve@.service gleam-sched.service gleam-reduce.service
# systemd looks in /usr/local/lib/systemd/system too; sysusers.d only
# under /usr/lib and /etc (gleam-serve(8), SERVICE).
UNITDIR		?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR	?= $(PREFIX)/lib/sysusers.d

# gleam-serve's cuda backend compiles against the CUDA headers (it loads the
# driver at run time).
CUDA_HOME	?= /usr/local/cuda
$(BUILD)/gleam-serve/%.o: CPPFLAGS += -I$(CUDA_HOME)/include

# gleam-run looks for the client library where make install puts it.
$(BUILD)/gleam-run/run.o: CPPFLAGS += -DGLEAM_LIBDIR='"$(LIBDIR)/gleam"'

# Program sources: every .c in the program's directory.
prog_obj	 = $(patsubst %.c,$(BUILD)/%.o,$(wildcard $(1)/*.c))

# The client library, libcuda.so.1, has its rules beside its sources.
CLIENT_LIBS	:=
-include lib/client/client.mk
-include lib/nvml/nvml.mk
-include lib/codec/codec.mk
-include tests/gpu/tabletrace/tabletrace.mk

check-install: all
	@tests/check-install

.PHONY: check-install all check unit unit-bins bats cuda-tests asan tsan fuzz lint-man synopsis emulator-check \
	demo install uninstall clean help deps-check deps-demo plots

all: $(PROG_BIN) $(CLIENT_LIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARNFLAGS) -fPIC -MMD -MP -c -o $@ $<

$(LIBA): $(LIB_OBJ)
	@mkdir -p $(@D)
	@rm -f $@
	$(call say,AR,$@)$(AR) rcs $@ $^

# Programs' objects are built through a pattern rule: keep them, or make
# deletes them as intermediates and relinks every program each time.
.SECONDARY:
.SECONDEXPANSION:
$(BINOUT)/%: $$(call prog_obj,%) $(LIBA)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIBA) $(LDLIBS)

$(DAEMON_BIN): $(BUILD)/lib/common/svc.o
$(DAEMON_BIN): LDLIBS += -lsystemd

$(BUILD)/tests/%: tests/unit/%.c $(LIBA)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -I$(CUDA_HOME)/include $(CFLAGS) $(WARNFLAGS) -Itests/unit $(LDFLAGS) \
	    -MMD -MP -MF $@.d -o $@ $< $(LIBA) $(LDLIBS)

# test_hreduce includes gleam-reduce's server, a daemon's: svc.o too.
$(BUILD)/tests/test_hreduce: tests/unit/test_hreduce.c $(LIBA) $(BUILD)/lib/common/svc.o
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -I$(CUDA_HOME)/include $(CFLAGS) $(WARNFLAGS) -Itests/unit $(LDFLAGS) \
	    -MMD -MP -MF $@.d -o $@ $< $(BUILD)/lib/common/svc.o $(LIBA) $(LDLIBS) -lsystemd

# The host backend's unit test drives gleam-serve's own modules.
HOST_TEST_OBJ	 = $(BUILD)/gleam-serve/host.o $(BUILD)/gleam-serve/remote.o \
		   $(BUILD)/gleam-serve/check.o \
		   $(BUILD)/gleam-serve/copy3d.o $(BUILD)/gleam-serve/wcache.o \
		   $(BUILD)/gleam-serve/pool.o $(BUILD)/gleam-serve/lanes.o \
		   $(BUILD)/gleam-serve/output.o $(BUILD)/gleam-serve/vmm.o \
		   $(BUILD)/gleam-serve/gap.o
$(BUILD)/tests/test_host_backend: tests/unit/test_host_backend.c \
    $(HOST_TEST_OBJ) $(LIBA) | build/tests/host-kernels.so
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -I$(CUDA_HOME)/include -Igleam-serve $(CFLAGS) \
	    $(WARNFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(HOST_TEST_OBJ) \
	    $(LIBA) $(LDLIBS)

# The server's bulk lanes, driven by a scripted client.
$(BUILD)/tests/test_serve_lanes: tests/unit/test_serve_lanes.c \
    $(BUILD)/gleam-serve/lanes.o $(LIBA)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -I$(CUDA_HOME)/include -Igleam-serve $(CFLAGS) \
	    $(WARNFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< \
	    $(BUILD)/gleam-serve/lanes.o $(LIBA) $(LDLIBS)

# gleam-serve's modules tested on their own, test_X against X.o: the
# staging ring's arithmetic (the cuda backend's staged copies), the
# serving thread's learned spin.
$(BUILD)/tests/test_stage $(BUILD)/tests/test_gap: $(BUILD)/tests/test_%: \
    tests/unit/test_%.c $(BUILD)/gleam-serve/%.o $(LIBA)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -Igleam-serve $(CFLAGS) \
	    $(WARNFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< \
	    $(BUILD)/gleam-serve/$*.o $(LIBA) $(LDLIBS)

# The wire checks' unit test drives them, and the host backend's table.
$(BUILD)/tests/test_wirecheck: tests/unit/test_wirecheck.c $(HOST_TEST_OBJ) \
    $(LIBA)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -I$(CUDA_HOME)/include -Igleam-serve $(CFLAGS) \
	    $(WARNFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(HOST_TEST_OBJ) \
	    $(LIBA) $(LDLIBS)

-include $(shell find build -name '*.d' 2>/dev/null)

# ---- checks ---------------------------------------------------------------

# Each stage's output is kept in build/check.log; tests/summary adds up the
# "N passed, N failed" lines for the closing line of `make check`.
SHELL		:= /bin/bash
.SHELLFLAGS	:= -o pipefail -c
# Seconds each fuzz target runs: 16 targets at 7 s are about the two
# minutes that 12 at 10 s were.
FUZZ_SECONDS	?= 7
# The bats files two at a time (GNU parallel; tests/deps installs it): the
# tests mostly wait on daemons and links, and each file keeps its tests in
# order.  BATS_JOBS=1 runs them one after the other.
BATS_JOBS	?= 2
BATS_PAR	= $(shell [ "$(BATS_JOBS)" -gt 1 ] 2>/dev/null && command -v parallel >/dev/null 2>&1 && \
		    echo --jobs $(BATS_JOBS) --no-parallelize-within-files)
CHECKLOG	 = build/check.log
CHECKTIMES	 = build/check-times
# $(call timed,NAME,COMMAND): runs COMMAND, noting its seconds if it passed.
timed		 = t0=$$(date +%s) && $(2) && \
		   echo "$(1) $$(( $$(date +%s) - t0 ))s" >>$(CHECKTIMES)

check: deps-check
	@mkdir -p build && : >$(CHECKLOG) && : >$(CHECKTIMES)
	$(call say,CHECK,build)$(call timed,all-build,$(MAKE) all unit-bins)
	$(call say,CHECK,unit)$(call timed,unit,$(MAKE) unit 2>&1 | tee -a $(CHECKLOG))
	$(call say,CHECK,bats)$(call timed,bats,$(MAKE) bats 2>&1 | tee -a $(CHECKLOG))
	$(call say,CHECK,lint-man)$(call timed,lint-man,$(MAKE) lint-man 2>&1 | tee -a $(CHECKLOG))
	$(call say,CHECK,synopsis)$(call timed,synopsis,$(MAKE) synopsis 2>&1 | tee -a $(CHECKLOG))
	$(call say,CHECK,install)$(call timed,install,$(MAKE) check-install 2>&1 | tee -a $(CHECKLOG))
	$(call say,CHECK,asan)$(call timed,asan,$(MAKE) asan 2>&1 | tee -a $(CHECKLOG))
	@# The fuzzers take one CPU each in turn, the race checks another:
	@# side by side, their logs one after the other.
	$(call say,CHECK,tsan+fuzz)$(call timed,tsan+fuzz,{ $(MAKE) tsan >build/tsan.log 2>&1 & p=$$!; \
	    $(MAKE) fuzz >build/fuzz.log 2>&1; r=$$?; wait $$p; t=$$?; \
	    cat build/tsan.log build/fuzz.log | tee -a $(CHECKLOG); \
	    [ $$r -eq 0 ] && [ $$t -eq 0 ]; })
	$(call say,CHECK,emulator-check)$(call timed,emulator-check,$(MAKE) emulator-check 2>&1 | tee -a $(CHECKLOG))
	@tr '\n' ' ' <$(CHECKTIMES); echo
	@tests/summary $(CHECKLOG)

unit-bins: $(UNIT_BIN)

unit: $(UNIT_BIN) $(CLIENT_SO)
	@tests/run-unit $(UNIT_BIN)
	@tests/check-driver-truth $(CLIENT_SO)

bats: $(PROG_BIN) cuda-tests $(NVML_TEST) tabletrace $(TT_TESTS)
	$(call say,BATS,tests/bats)GLEAM_BIN=$(CURDIR)/$(BINOUT) bats $(BATS_PAR) --formatter tap --print-output-on-failure tests/bats

# The nvcc-built test programs (static and shared cudart), the bulk bench
# (the lanes' tests run it) and the host kernels that let the host
# backend run them; skipped without nvcc.
cuda-tests: build/tests/host-kernels.so build/tests/fullfs.so build/tests/cacheput
	@if command -v nvcc >/dev/null 2>&1 || [ -x $(CUDA_HOME)/bin/nvcc ]; then \
	    PATH=$$PATH:$(CUDA_HOME)/bin tests/cuda/build build/cuda; rc=$$?; \
	    PATH=$$PATH:$(CUDA_HOME)/bin bench/workloads/build build/workloads || rc=1; \
	    if [ ! build/bench/bulk -nt bench/bulk.cu ]; then \
	        mkdir -p build/bench && \
	        PATH=$$PATH:$(CUDA_HOME)/bin nvcc -O2 -o build/bench/bulk bench/bulk.cu || rc=1; \
	    fi; \
	    exit $$rc; \
	else echo "cuda-tests: no nvcc: the remoting tests will be skipped"; fi

# -ffp-contract=off: the float kernels must round as the GPU's (infer-math.h).
build/tests/host-kernels.so: tests/cuda/host-kernels.c gleam-serve/gleam-host-kernel.h \
    bench/workloads/infer-math.h
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) -shared -fPIC -O2 -ffp-contract=off -Igleam-serve $(WARNFLAGS) -o $@ \
	    tests/cuda/host-kernels.c -lm

# A client of the weight cache that speaks its calls itself: the tests that
# play an attacker (tests/cuda/cacheput.c).
build/tests/cacheput: tests/cuda/cacheput.c $(LIBA)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARNFLAGS) $(LDFLAGS) -o $@ \
	    tests/cuda/cacheput.c $(LIBA) $(LDLIBS)

# A full disk for the cache tests: write(2) fails with ENOSPC under a
# directory (tests/cuda/fullfs.c).
build/tests/fullfs.so: tests/cuda/fullfs.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) -shared -fPIC -O2 $(WARNFLAGS) -o $@ tests/cuda/fullfs.c -ldl

# The client library built with ThreadSanitizer, preloaded into the
# many-thread and one-way test programs (its I/O thread and the program's
# threads share the send queue and the replies); and the codec's threads.
tsan: $(PROG_BIN) cuda-tests
	$(call say,MAKE,build/tsan)$(MAKE) BUILD=build/tsan BINOUT=build/tsan/bin LIBA=build/tsan/libgleam.a \
	    CC=cc CFLAGS="-O1 -g -fsanitize=thread" LDFLAGS="-fsanitize=thread" \
	    build/tsan/lib/libcuda.so.1 build/tsan/tests/test_hcodec \
	    build/tsan/tests/test_hreduce build/tsan/bin/gleam-serve
	@tests/tsan-client $(BINOUT) build/tsan/lib/libcuda.so.1
	$(call say,TSAN,gleam-serve)tests/tsan-serve $(BINOUT) build/tsan/bin/gleam-serve
	$(call say,TSAN,test_hcodec)TSAN_OPTIONS=die_after_fork=0:halt_on_error=1 HC_TEST_THREADS_ONLY=1 \
	    build/tsan/tests/test_hcodec
	$(call say,TSAN,test_hreduce)TSAN_OPTIONS=die_after_fork=0:halt_on_error=1 HR_TEST_DEV_ONLY=1 \
	    build/tsan/tests/test_hreduce

# The unit and interface tests again, built with AddressSanitizer and UBSan.
asan:
	$(call say,MAKE,build/asan)$(MAKE) BUILD=build/asan BINOUT=build/asan/bin LIBA=build/asan/libgleam.a \
	    CC=cc CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=address,undefined" all unit-bins
	$(call say,ASAN,unit)ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    tests/run-unit $(UNIT_SRC:tests/unit/%.c=build/asan/tests/%)
	@# The client library too is the ASan build, its runtime loaded first
	@# into the test programs (not built with it); teardown fails a test
	@# whose daemons logged a sanitizer's report (sanitizer_check).
	$(call say,ASAN,tests/bats)ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	    GLEAM_PRELOAD=$$(cc -print-file-name=libasan.so) \
	    GLEAM_LIBDIR=$(CURDIR)/build/asan/lib GLEAM_BIN=$(CURDIR)/build/asan/bin bats $(BATS_PAR) --formatter tap --print-output-on-failure tests/bats

fuzz:
	@tests/fuzz/run $(FUZZ_SECONDS)

lint-man:
	@mandoc -Tlint -W warning $(MANPAGES) && \
	    echo 'lint-man: $(words $(MANPAGES)) passed, 0 failed'
	@tests/check-rpc-doc

synopsis: $(PROG_BIN)
	@tests/check-synopsis $(BINOUT) $(PROGS)

emulator-check: $(PROG_BIN)
	@bench/link-accuracy -b -r 3 -t 2 $(BINOUT)

deps-check:
	@tests/deps check

deps-demo:
	@tests/deps demo

# bench/RESULTS.md's figures, from the data files beside them; the SVGs
# are committed.  gnuplot-nox is needed here only.
plots:
	@tests/deps plots
	@bench/plot

demo: deps-demo
	$(Q)$(MAKE) all build/tests/host-kernels.so
	@tests/demo $(BINOUT)

# ---- installation ---------------------------------------------------------

# The client library goes where only gleam-run looks, never into the
# system's library path: it would take the place of the real driver.
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/gleam \
	    $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/include/gleam
	install -m 755 $(PROG_BIN) $(DESTDIR)$(BINDIR)
	install -m 755 $(CLIENT_LIBS) $(DESTDIR)$(LIBDIR)/gleam
	ln -sf libcuda.so.1 $(DESTDIR)$(LIBDIR)/gleam/libcuda.so
	ln -sf libnvidia-ml.so.1 $(DESTDIR)$(LIBDIR)/gleam/libnvidia-ml.so
	install -m 644 $(LIBA) $(DESTDIR)$(LIBDIR)
	install -m 644 $(CODEC_HEADERS) $(DESTDIR)$(PREFIX)/include/gleam
	for pc in $(CODEC_PC); do \
	    sed 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@VERSION@|$(VERSION)|' \
	    lib/codec/$$pc.pc.in \
	    >$(DESTDIR)$(LIBDIR)/pkgconfig/$$pc.pc || exit 1; done
	for p in $(MANPAGES); do s=$${p##*.}; \
	    install -d $(DESTDIR)$(MANDIR)/man$$s && \
	    install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s; done
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR)
	for u in $(UNITS); do \
	    sed 's|@BINDIR@|$(BINDIR)|g' systemd/$$u >$(DESTDIR)$(UNITDIR)/$$u && \
	    chmod 644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; done
	install -m 644 systemd/gleam.sysusers $(DESTDIR)$(SYSUSERSDIR)/gleam.conf
	install -d $(DESTDIR)$(DOCDIR)/examples
	install -m 644 $(filter-out $(EXAMPLE_BIN),$(EXAMPLES)) \
	    $(DESTDIR)$(DOCDIR)/examples
	install -m 755 $(EXAMPLE_BIN) $(DESTDIR)$(DOCDIR)/examples

uninstall:
	for p in $(PROGS); do rm -f $(DESTDIR)$(BINDIR)/$$p; done
	rm -f $(DESTDIR)$(LIBDIR)/gleam/libcuda.so.1 \
	    $(DESTDIR)$(LIBDIR)/gleam/libcuda.so \
	    $(DESTDIR)$(LIBDIR)/gleam/libnvidia-ml.so \
	    $(DESTDIR)$(LIBDIR)/gleam/libnvidia-ml.so.1 $(DESTDIR)$(LIBDIR)/libgleam.a \
	    $(CODEC_PC:%=$(DESTDIR)$(LIBDIR)/pkgconfig/%.pc) \
	    $(CODEC_HEADERS:lib/codec/%=$(DESTDIR)$(PREFIX)/include/gleam/%)
	-rmdir $(DESTDIR)$(LIBDIR)/gleam $(DESTDIR)$(PREFIX)/include/gleam 2>/dev/null
	for p in $(MANPAGES); do s=$${p##*.}; \
	    rm -f $(DESTDIR)$(MANDIR)/man$$s/$${p##*/}; done
	rm -f $(UNITS:%=$(DESTDIR)$(UNITDIR)/%) $(DESTDIR)$(SYSUSERSDIR)/gleam.conf
	rm -f $(EXAMPLES:examples/%=$(DESTDIR)$(DOCDIR)/examples/%)
	-rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -rf build $(BINOUT)/gleam-* lib/libgleam.a

help:
	@echo "make             build the programs into bin/ and libraries into lib/"
	@echo "make check       install missing test packages, run every test"
	@echo "make demo        install missing packages, serve and probe on loopback"
	@echo "make unit        C unit tests"
	@echo "make bats        interface and end-to-end tests (bats), BATS_JOBS files at a time (default 2)"
	@echo "make asan        unit and bats tests built with ASan and UBSan"
	@echo "make tsan        the client library and gleam-serve with TSan: threaded programs, lanes and cache tests"
	@echo "make fuzz        each fuzz target for FUZZ_SECONDS (default 7)"
	@echo "make lint-man    mandoc -Tlint over every manual page"
	@echo "make synopsis    each program's usage() against its SYNOPSIS"
	@echo "make check-install  the installed headers and pkg-config files, as a user builds with them"
	@echo "make emulator-check  gleam-probe through gleam-link reads the configured link"
	@echo "make plots       bench/plots/*.svg from their data (installs gnuplot-nox)"
	@echo "make install     install into DESTDIR/PREFIX (default /usr/local), examples too"
	@echo "make clean       remove build products"
	@echo "make V=1 ...     print each command in full, not a short line"
