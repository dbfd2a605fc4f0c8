# tabletrace: the tracing libcuda.so.1 and libnvidia-ml.so.1 for the GPU
# machine (tests/gpu/tabletrace/README), their tests against a fake driver
# and a fake NVML, and the programs tests/gpu/tabletrace/run traces (those
# need nvcc and are built by tests/gpu/tabletrace/build-progs).  Both
# tracers are built by build-tracer, which the GPU machine runs too.

TT_DIR		 = tests/gpu/tabletrace
TT_OUT		 = build/tabletrace
TT_EXPORTS	 = lib/client/ref/libcuda-exports.txt
# NVML's exports: those Gleam's library has (lib/nvml/exports.h) and
# nvmlErrorString.  Another list: make tabletrace TT_NVML_EXPORTS=file.
TT_NVML_EXPORTS	?= $(TT_OUT)/nvml/exports.txt
TT_CFLAGS	 = -O2 -g -fPIC -fvisibility=hidden -D_GNU_SOURCE \
		   -I$(TT_DIR) -Ilib/client $(WARNFLAGS)
TT_CORE		 = $(TT_DIR)/build-tracer $(TT_DIR)/gen-forwarders \
		   $(TT_DIR)/ttcore.c $(TT_DIR)/tramp.S $(TT_DIR)/tabletrace.h

.PHONY: tabletrace tabletrace-check

tabletrace: $(TT_OUT)/libcuda.so.1 $(TT_OUT)/nvml/libnvidia-ml.so.1

$(TT_OUT)/libcuda.so.1: $(TT_CORE) $(TT_DIR)/tabletrace.c $(TT_EXPORTS) \
    lib/client/integrity.c lib/client/integrity.h
	$(call say,CCLD,$@)CC="$(CC)" TT_WARN="$(WARNFLAGS)" \
	    $(TT_DIR)/build-tracer cuda $(TT_EXPORTS) $(TT_OUT)

$(TT_OUT)/nvml/exports.txt: lib/nvml/exports.h
	@mkdir -p $(@D)
	$(call say,GEN,$@){ sed -n 's/^NVML_FN(\(.*\))$$/\1/p' $<; \
	    echo nvmlErrorString; } >$@

$(TT_OUT)/nvml/libnvidia-ml.so.1: $(TT_CORE) $(TT_DIR)/nvmltrace.c \
    $(TT_NVML_EXPORTS)
	$(call say,CCLD,$@)CC="$(CC)" TT_WARN="$(WARNFLAGS)" \
	    $(TT_DIR)/build-tracer nvml $(TT_NVML_EXPORTS) $(TT_OUT)/nvml

# The tests: a fake real driver and a program that calls through the
# tracer; a fake NVML (with the real one's soname) and a program linked
# against libnvidia-ml.so.1, as nvidia-smi is.
$(TT_OUT)/fake/libcuda-fake.so: $(TT_DIR)/fake.c lib/client/integrity.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(TT_CFLAGS) -shared -o $@ $^ -lpthread

$(TT_OUT)/tt-test: $(TT_DIR)/test.c lib/client/integrity.c
	$(call say,CCLD,$@)$(CC) $(TT_CFLAGS) -o $@ $^ -ldl -lpthread

$(TT_OUT)/fake/libnvidia-ml-fake.so: $(TT_DIR)/fake-nvml.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(TT_CFLAGS) -shared \
	    -Wl,-soname,libnvidia-ml.so.1 -o $@ $^

$(TT_OUT)/nvml-test: $(TT_DIR)/nvml-test.c $(TT_OUT)/nvml/libnvidia-ml.so.1
	$(call say,CCLD,$@)$(CC) $(TT_CFLAGS) -o $@ $< \
	    -L$(TT_OUT)/nvml -l:libnvidia-ml.so.1 -ldl

TT_TESTS	 = $(TT_OUT)/fake/libcuda-fake.so $(TT_OUT)/tt-test \
		   $(TT_OUT)/fake/libnvidia-ml-fake.so $(TT_OUT)/nvml-test

tabletrace-check: tabletrace $(TT_TESTS)
	$(call say,BATS,tabletrace.bats)bats tests/bats/tabletrace.bats
