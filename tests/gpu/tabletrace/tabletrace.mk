# tabletrace: the tracing libcuda.so.1 for the GPU machine
# (tests/gpu/tabletrace/README), its test against a fake driver, and the
# programs tests/gpu/tabletrace/run traces (those need nvcc and are built
# by tests/gpu/tabletrace/build-progs).

TT_DIR		 = tests/gpu/tabletrace
TT_OUT		 = build/tabletrace
TT_EXPORTS	 = lib/client/ref/libcuda-exports.txt
TT_CFLAGS	 = -O2 -g -fPIC -fvisibility=hidden -D_GNU_SOURCE \
		   -I$(TT_DIR) -Ilib/client $(WARNFLAGS)
TT_SRC		 = $(TT_DIR)/tabletrace.c $(TT_DIR)/tramp.S \
		   $(TT_OUT)/fwd.S $(TT_OUT)/fwd.c lib/client/integrity.c

.PHONY: tabletrace tabletrace-check

tabletrace: $(TT_OUT)/libcuda.so.1 $(TT_OUT)/libcuda.so

$(TT_OUT)/fwd.S $(TT_OUT)/fwd.c: $(TT_DIR)/gen-forwarders $(TT_EXPORTS)
	@mkdir -p $(TT_OUT)
	$(call say,GEN,$(TT_OUT)/fwd.S)$(TT_DIR)/gen-forwarders $(TT_EXPORTS) \
	    $(TT_OUT)/fwd.S $(TT_OUT)/fwd.c

$(TT_OUT)/libcuda.so.1: $(TT_SRC) $(TT_DIR)/tabletrace.h lib/client/integrity.h
	$(call say,CCLD,$@)$(CC) $(TT_CFLAGS) -shared -Wl,-soname,libcuda.so.1 \
	    -Wl,-z,noexecstack -o $@ $(TT_SRC) -ldl -lpthread

$(TT_OUT)/libcuda.so: $(TT_OUT)/libcuda.so.1
	$(Q)ln -sf libcuda.so.1 $@

# The test: a fake real driver and a program that calls through the tracer.
$(TT_OUT)/fake/libcuda-fake.so: $(TT_DIR)/fake.c lib/client/integrity.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(TT_CFLAGS) -shared -o $@ $^ -lpthread

$(TT_OUT)/tt-test: $(TT_DIR)/test.c lib/client/integrity.c
	$(call say,CCLD,$@)$(CC) $(TT_CFLAGS) -o $@ $^ -ldl -lpthread

tabletrace-check: tabletrace $(TT_OUT)/fake/libcuda-fake.so $(TT_OUT)/tt-test
	$(call say,BATS,tabletrace.bats)bats tests/bats/tabletrace.bats
