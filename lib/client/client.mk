# The client library: a libcuda.so.1 that programs load in place of the
# CUDA driver.  Included by the top-level Makefile, whose all depends on
# $(CLIENT_LIBS).  It compiles against the CUDA headers (CUDA_HOME) but
# never links the real driver.

CUDA_HOME	?= /usr/local/cuda
CUDA_INC	?= $(CUDA_HOME)/include

# The sanitizer build (BUILD=build/asan) gets its own copy, so that it does
# not replace the one that programs load from lib/.
CLIENT_SO	:= $(strip $(if $(filter build/default,$(BUILD)),\
		    lib/libcuda.so.1, $(BUILD)/lib/libcuda.so.1))
CLIENT_LIBS	+= $(CLIENT_SO)

CLIENT_SRC	:= $(wildcard lib/client/*.c lib/client/gen/*.c)
CLIENT_OBJ	:= $(CLIENT_SRC:%.c=$(BUILD)/%.o)
# The shared lib/ modules the library uses, already built -fPIC.
CLIENT_DEPS	:= $(patsubst %,$(BUILD)/lib/common/%.o,log conn chan chanrd stripe net proto auth rpc util parse yamlio htab zframe cname clenv keep meter)

$(CLIENT_OBJ): CPPFLAGS += -Ilib/client -Ilib/client/gen -I$(CUDA_INC)
$(CLIENT_OBJ): CFLAGS += -fvisibility=hidden
# sigwrap.c runs inside the sanitizers' start-up: never instrumented.
$(BUILD)/lib/client/sigwrap.o: override CFLAGS += -fno-sanitize=all

# exports.map keeps everything but cu* local; -Bsymbolic makes the table
# of cuGetProcAddress and the export tables point at our own functions
# even where another object in the process defines the same names.
client_link	 = $(CC) $(CFLAGS) $(LDFLAGS) -shared \
		    -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic \
		    -Wl,--version-script=lib/client/exports.map \
		    -Wl,-z,defs -o $@ $(filter %.o,$^)

$(CLIENT_SO): $(CLIENT_OBJ) $(CLIENT_DEPS) lib/client/exports.map
	@mkdir -p $(@D)
	$(call say,LD,$@)$(client_link) -lsodium -lcrypto -lyaml -lzstd -lpthread
	@ln -sf libcuda.so.1 $(@D)/libcuda.so

# libcuda.so beside it: programs that dlopen the development name (numba,
# ctypes users) find this library first in gleam-run's library path, not
# the real driver's libcuda.so further on.

# The local half alone: the same objects, with the hooks' local defaults
# (hooks.c) in place of the remoting layer, so one placeholder device and
# no server.  Tests use it for what needs an initialized device without a
# server: cudart's whole start-up with the integrity check, the device
# queries, the primary-context slot.  A module listed here that comes to
# need the remoting layer belongs in the full library only.
CLIENT_LOCAL	:= cls device gen/entry-points exporttable hooks integrity \
		    procaddr stub gen/stubs
CLIENT_LOCAL_SO	:= $(BUILD)/client-local/libcuda.so.1

$(CLIENT_LOCAL_SO): $(CLIENT_LOCAL:%=$(BUILD)/lib/client/%.o) \
    $(BUILD)/lib/common/log.o lib/client/exports.map
	@mkdir -p $(@D)
	$(call say,LD,$@)$(client_link) -lpthread

# The client's unit tests dlopen the library (GLEAM_LIBCUDA, default
# lib/libcuda.so.1) or its local half (GLEAM_LIBCUDA_LOCAL, default
# build/default/client-local/libcuda.so.1); some compile a module in.
CLIENT_TESTS	:= $(patsubst tests/unit/%.c,$(BUILD)/tests/%,\
		    $(wildcard tests/unit/test_client_*.c))
$(CLIENT_TESTS): | $(CLIENT_SO) $(CLIENT_LOCAL_SO)
$(BUILD)/tests/test_client_integrity: lib/client/integrity.[ch]
$(BUILD)/tests/test_client_exporttable: lib/client/integrity.[ch]
$(BUILD)/tests/test_client_cls: lib/client/cls.[ch]
$(BUILD)/tests/test_client_procaddr: tests/unit/test_client_rows.h
# test_client_tmap compiles tmap.c in, with the client's headers.
$(BUILD)/tests/test_client_tmap: lib/client/tmap.c lib/client/client.h
$(BUILD)/tests/test_client_tmap: CPPFLAGS += -Ilib/client -Ilib/client/gen
# test_client_readahead compiles readahead.c in, with a fake transport.
$(BUILD)/tests/test_client_readahead: lib/client/readahead.c \
    lib/client/readahead.h lib/client/io.h lib/client/client.h
$(BUILD)/tests/test_client_readahead: CPPFLAGS += -Ilib/client -Ilib/client/gen

# Regenerate entry-points.[ch], stubs.c and tests/unit/test_client_rows.h
# after a change to the entry-point list, entry-points.extra or the CUDA
# headers.  The outputs are committed; the normal build does not run this.
CLIENT_TSV	?= $(firstword $(wildcard ref/cuda13-entry-points.tsv \
		    shared/ref/cuda13-entry-points.tsv \
		    ../shared/ref/cuda13-entry-points.tsv))

.PHONY: client-gen client-check
client-gen:
	@test -n "$(CLIENT_TSV)" || \
	    { echo "client-gen: set CLIENT_TSV" >&2; exit 1; }
	lib/client/gen-entry-points -c $(CUDA_INC) -o lib/client/gen \
	    -r tests/unit/test_client_rows.h \
	    -x lib/client/entry-points.extra \
	    -e lib/client/ref/libcuda-exports.txt $(CLIENT_TSV)

# The library's exports, then real cudart against it and against its local
# half (skipped without nvcc).
client-check: $(CLIENT_SO) $(CLIENT_LOCAL_SO)
	@BUILD=$(BUILD) tests/cuda/run-local-checks $(CLIENT_SO) \
	    $(CLIENT_LOCAL_SO)

# Only where NVIDIA's driver is installed (a GPU host): the library's local
# answers against the real driver's.  The local half answers the same and
# needs none of the remoting layer's libraries on the GPU host.
.PHONY: client-gpu-check
client-gpu-check: $(BUILD)/cuda/against-driver $(CLIENT_LOCAL_SO)
	$(BUILD)/cuda/against-driver libcuda.so.1 $(CLIENT_LOCAL_SO)

$(BUILD)/cuda/against-driver: tests/cuda/against-driver.c \
    lib/client/integrity.[ch] tests/unit/test_client_rows.h
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARNFLAGS) $(LDFLAGS) -o $@ $< \
	    -ldl -lpthread

clean: client-clean
.PHONY: client-clean
client-clean:
	rm -f lib/libcuda.so.1 lib/libcuda.so
