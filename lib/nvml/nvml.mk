# Gleam's libnvidia-ml.so.1: NVML's common queries answered from the
# server's status (lib/nvml/nvml.c), beside the client library in lib/,
# where gleam-run puts it first in the library path and in LD_PRELOAD.
# Included by the top-level Makefile, whose all depends on $(CLIENT_LIBS).
# No header of NVIDIA's is needed: gnvml.h declares what it answers.

NVML_SO		:= $(strip $(if $(filter build/default,$(BUILD)),\
		    lib/libnvidia-ml.so.1, $(BUILD)/lib/libnvidia-ml.so.1))
CLIENT_LIBS	+= $(NVML_SO)

NVML_OBJ	:= $(patsubst %.c,$(BUILD)/%.o,$(wildcard lib/nvml/*.c))
NVML_DEPS	:= $(patsubst %,$(BUILD)/lib/common/%.o,log conn chan net \
		    proto auth util parse yamlio cfgtab status clenv)

$(NVML_OBJ): CPPFLAGS += -Ilib/nvml

$(NVML_SO): $(NVML_OBJ) $(NVML_DEPS) lib/nvml/exports.map
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 \
	    -Wl,-Bsymbolic -Wl,--version-script=lib/nvml/exports.map \
	    -Wl,-z,defs -o $@ $(filter %.o,$^) -lsodium -lcrypto -lyaml \
	    -lpthread -lm
	@ln -sf libnvidia-ml.so.1 $(@D)/libnvidia-ml.so

# The test program: every call it answers, against a server that reports
# the GPUs of a file (GLEAM_TEST_GPUS; tests/bats/nvml.bats).  Linked
# against the library as a program links NVIDIA's.
NVML_TEST	:= $(BUILD)/tests/nvml-check
$(NVML_TEST): tests/nvml/nvml-check.c lib/nvml/gnvml.h $(NVML_SO) $(LIBA)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -Ilib/nvml $(CFLAGS) $(WARNFLAGS) $(LDFLAGS) \
	    -o $@ $< -L$(dir $(NVML_SO)) -l:libnvidia-ml.so.1 $(LIBA) \
	    $(LDLIBS)

clean: nvml-clean
.PHONY: nvml-clean
nvml-clean:
	rm -f lib/libnvidia-ml.so.1 lib/libnvidia-ml.so
