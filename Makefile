# tir — one hand-written GNU Makefile.  Settings first; local overrides in
# config.mk (not committed).  `make run`, `make test`, `make asan`,
# `make fuzz`, `make bench`, `make soak`, `make test-torch`.

CC       ?= cc
OPT      ?= -O2 -g
WERROR   ?= -Werror
WARN     := -std=c11 -Wall -Wextra $(WERROR) -Wshadow -Wundef -Wwrite-strings \
            -Wmissing-prototypes -Wstrict-prototypes -Wno-unused-parameter
PKGS     := jansson openblas libedit sleef libprotobuf-c libpcre2-8
# lib/net's libraries load only when a remote or the server is used (see
# NET_SO below): linked into tir they would be loaded at every start.
NET_PKGS := libmicrohttpd libcurl libcrypto jansson
BUILD    ?= build
SAN      ?=
FUZZTIME ?= 60
SOAK_SECONDS ?= 1800
V        ?= 0

-include config.mk

ifeq ($(V),0)
Q  := @
SAY = @printf '  %-6s %s\n' $(1) $(2);
else
Q  :=
SAY =
endif

# Debian packages the tool and its tests need (the dependency step).
DEB_PKGS := build-essential pkg-config libjansson-dev \
            libopenblas-dev libmicrohttpd-dev libcurl4-openssl-dev \
            libedit-dev libssl-dev libsleef-dev python3-numpy openssl graphviz \
            libopenmpi-dev openmpi-bin \
            libprotobuf-c-dev protobuf-c-compiler libonnx-dev libpcre2-dev \
            libonnx-testdata python3-onnx
# MPI (server groups, docs/groups.md) is optional: libtir-mpi.so is built
# only when pkg-config finds it (ompi-c, else mpi).  NO_MPI=1 builds as if
# it found none.
MPI_PKGS := ompi-c mpi
NO_MPI   ?=

# What pkg-config says of the libraries is asked only after the dependency
# step has run: $(BUILD)/pkg.mk is made by a rule that first installs what is
# missing (tests/deps.sh), and make reads this file again with it.  (Asked
# as this file is read, pkg-config answers nothing on a fresh machine, and
# the first build links without the libraries.)  Goals that build nothing
# do not need it.
NOPKG_GOALS := clean deps fresh-check help
ifneq ($(filter-out $(NOPKG_GOALS),$(or $(MAKECMDGOALS),all)),)
include $(BUILD)/pkg.mk
endif

CPPFLAGS += -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Ilib $(PKG_CFLAGS)
CFLAGS   += $(OPT) $(WARN) $(SAN) -MMD -MP -pthread
LDLIBS   += $(PKG_LIBS) -lm -pthread
LDFLAGS  += $(SAN)

# lib/net (but its door, which loads it) is built into $(NET_SO), a
# shared object that tir dlopens from next to itself on first use, and
# reaches through the one table it exports (lib/tir.h, struct tir_net_api).
NET_SRC  := $(filter-out lib/net/door.c,$(sort $(wildcard lib/net/*.c)))
NET_OBJ  := $(NET_SRC:%.c=$(BUILD)/%.o)
NET_SO   := $(BUILD)/libtir-net.so
# lib/mpi is libtir-mpi.so, which a `tir serve` under mpirun loads
# (lib/net/group.c); built only when pkg.mk found MPI.
MPI_SRC  := $(sort $(wildcard lib/mpi/*.c))
MPI_OBJ  := $(MPI_SRC:%.c=$(BUILD)/%.o)
MPI_SO   := $(if $(and $(MPI_LIBS),$(if $(NO_MPI),,1)),$(BUILD)/libtir-mpi.so)
LIB_SRC  := $(filter-out $(NET_SRC) $(MPI_SRC),$(sort $(wildcard lib/*/*.c)))
# lib/onnx reads models with protobuf-c over Debian's own onnx.proto
# (libonnx-dev), generated here at build time: $(BUILD)/gen/onnx/onnx.pb-c.[ch].
ONNX_PROTO := /usr/include/onnx/onnx.proto
ONNX_GEN := $(BUILD)/gen/onnx/onnx.pb-c.c
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(ONNX_GEN:.c=.o)
CLI_SRC  := $(sort $(wildcard cli/*.c))
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# the plain MPI peer of all_reduce over a group (bench/allreduce.py), with MPI
BENCH_MPI := $(if $(MPI_SO),$(BUILD)/bench/allreduce_mpi)

.PHONY: all deps run test asan fuzz fuzz-parse fuzz-onnx bench soak clean golden-update fresh-check test-kernels \
	test-torch test-onnx

# tests/net/xfer_test.py's driver of the client's server-to-server calls
XFER_CLIENT := $(BUILD)/tests/xfer_client
# The parser's fuzz target, tests/fuzz/fuzz_parse.c, linked with libtir.a
# like every other program here (the same sources and flags), and with
# FUZZ_MAIN: tests/fuzz/replay.c, a main that runs it on the files named
# (`make test` replays the corpus: tests/suites/fuzz_parse.sh).  `make
# fuzz` builds it in build-fuzz with clang and libFuzzer's own main
# instead (FUZZ_MAIN empty, FUZZ_LINK=-fsanitize=fuzzer).
FUZZ_BIN  := $(BUILD)/tests/fuzz_parse
# the ONNX importer's target (tests/fuzz/fuzz_onnx.c), built the same way;
# its seeds are tests/fuzz/onnx (tests/suites/onnx_fuzz.sh replays them)
FUZZ_ONNX := $(BUILD)/tests/fuzz_onnx
FUZZ_MAIN ?= tests/fuzz/replay.c
FUZZ_LINK ?=
FUZZ_SAN  := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
             -fno-omit-frame-pointer

all: $(BUILD)/tir $(NET_SO) $(MPI_SO) $(UNIT_BIN) $(XFER_CLIENT) $(FUZZ_BIN) $(FUZZ_ONNX)
ifeq ($(MPI_SO),)
	@rm -f $(BUILD)/libtir-mpi.so
endif

# The dependency step: install what is missing (as root), else say how.
deps:
	@sh tests/deps.sh $(DEB_PKGS)

$(BUILD)/pkg.mk: Makefile
	@sh tests/deps.sh $(DEB_PKGS) || { \
		echo "make: the Debian packages above are missing; install them, then run make again" >&2; exit 1; }
	@pkg-config --exists --print-errors $(PKGS) $(NET_PKGS) || { \
		echo "make: pkg-config does not find the libraries above" >&2; exit 1; }
	@mkdir -p $(@D)
	@{ echo "PKG_CFLAGS := $$(pkg-config --cflags $(PKGS) $(NET_PKGS))"; \
	   echo "PKG_LIBS := $$(pkg-config --libs $(PKGS))"; \
	   echo "NET_LIBS := $$(pkg-config --libs $(NET_PKGS))"; \
	   d=$$(pkg-config --variable=libdir openblas); d=$${d%/}; \
	   echo "BLAS_SO := $$(objdump -p $$d/libopenblas.so 2>/dev/null | sed -n 's/^ *SONAME *//p')"; \
	   echo "BLAS_DIR := $$d"; \
	   d=$$(pkg-config --variable=libdir sleef); d=$${d%/}; \
	   echo "SLEEF_SO := $$(objdump -p $$d/libsleef.so 2>/dev/null | sed -n 's/^ *SONAME *//p')"; \
	   d=$$(pkg-config --variable=libdir jansson); d=$${d%/}; \
	   echo "JANSSON_SO := $$(objdump -p $$d/libjansson.so 2>/dev/null | sed -n 's/^ *SONAME *//p')"; \
	   d=$$(pkg-config --variable=libdir libprotobuf-c); d=$${d%/}; \
	   echo "PROTOBUF_SO := $$(objdump -p $$d/libprotobuf-c.so 2>/dev/null | sed -n 's/^ *SONAME *//p')"; \
	   d=$$(pkg-config --variable=libdir libpcre2-8); d=$${d%/}; \
	   echo "PCRE2_SO := $$(objdump -p $$d/libpcre2-8.so 2>/dev/null | sed -n 's/^ *SONAME *//p')"; \
	   for m in $(MPI_PKGS); do \
		if pkg-config --exists $$m; then \
			echo "MPI_CFLAGS := $$(pkg-config --cflags $$m)"; \
			echo "MPI_LIBS := $$(pkg-config --libs $$m)"; break; \
		fi; \
	   done; } >$@.tmp && mv $@.tmp $@

$(BUILD)/libtir.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call SAY,AR,$@)rm -f $@ && $(AR) rcs $@ $^

# tir and libtir-net.so both link the library as one shared object,
# libtir.so, found next to them ($$ORIGIN): one copy of it, and of its
# state (the memory accounting, the thread pool, the vector path chosen,
# the interrupt flag), in the process whatever loads the network part.
# It exports only what those two call of it: the tir_ names the CLI's and
# lib/net's objects leave undefined that the library defines
# ($(BUILD)/libtir.sym, made at each link); its calls among its own
# functions are bound inside it (-fno-semantic-interposition within a
# file, -Bsymbolic-functions across its files: an exported function it
# calls itself was bound through the loader at its first call; the rest
# local).  Its few thread-locals take the initial-exec model, as
# libtir.so is loaded at start, never dlopened.  Tests and benchmarks
# link libtir.a (the same objects) and lib/net's directly.
LIB_PIC  := -fPIC -fno-semantic-interposition -ftls-model=initial-exec
$(LIB_OBJ): CFLAGS += $(LIB_PIC)

$(BUILD)/libtir.sym: $(LIB_OBJ) $(CLI_OBJ) $(NET_OBJ)
	$(Q)nm -g --defined-only $(LIB_OBJ) | awk '$$3 ~ /^tir_/ {print $$3}' | sort -u >$@.def
	$(Q)nm -u $(CLI_OBJ) $(NET_OBJ) | awk '$$2 ~ /^tir_/ {print $$2}' | sort -u >$@.use
	$(Q){ echo '{ global:'; comm -12 $@.def $@.use | sed 's/.*/	&;/'; echo 'local: *; };'; } >$@
	@rm -f $@.def $@.use

$(BUILD)/libtir.so: $(LIB_OBJ) $(BUILD)/libtir.sym
	$(call SAY,LINK,$@)$(CC) $(LDFLAGS) -shared -Wl,-soname,libtir.so -Wl,--version-script=$(BUILD)/libtir.sym \
		-Wl,-z,defs -Wl,-Bsymbolic-functions -Wl,--as-needed -o $@ $(LIB_OBJ) $(LDLIBS)

# OpenBLAS is not linked (--as-needed drops it: nothing refers to it):
# lib/exec/blas.c dlopens it by its soname (else its path) at its first
# use.  SLEEF likewise: lib/exec/vmath.c dlopens it by its soname at the
# first transcendental (as it loads, SLEEF binds some 900 of its own
# symbols, most of a one-line program's start-up when it was linked).
$(BUILD)/lib/exec/blas.o: CPPFLAGS += -DTIR_BLAS_SONAME='"$(or $(BLAS_SO),libopenblas.so.0)"' \
	-DTIR_BLAS_PATH='"$(BLAS_DIR)$(if $(BLAS_DIR),/)$(or $(BLAS_SO),libopenblas.so.0)"'
$(BUILD)/lib/exec/vmath.o: CPPFLAGS += -DTIR_SLEEF_SONAME='"$(or $(SLEEF_SO),libsleef.so.3)"'
# jansson too: lib/exec/json.c dlopens it at the first JSON libtir writes or
# reads (lib/net, loaded only when used, links it as it is).
$(BUILD)/lib/exec/json.o: CPPFLAGS += -DTIR_JANSSON_SONAME='"$(or $(JANSSON_SO),libjansson.so.4)"'
# libedit (and libtinfo, libbsd, libmd under it) likewise: cli/repl.c
# dlopens it by this soname when a REPL at a terminal starts, so that
# --as-needed leaves it out of tir's start.
$(BUILD)/cli/repl.o: CPPFLAGS += -DTIR_EDIT_SONAME='"$(or $(EDIT_SO),libedit.so.2)"'
$(BUILD)/tir: $(CLI_OBJ) $(BUILD)/libtir.so
	$(call SAY,LINK,$@)$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) -Wl,--as-needed \
		$(BUILD)/libtir.so -Wl,-rpath,'$$ORIGIN' $(LDLIBS)

# vmath.c lets GCC contract its polynomials into FMAs, and which it
# contracts depends on the optimization level: it is built at -O2 in every
# build (asan's too), so that results never depend on the build.
$(BUILD)/lib/exec/vmath.o: override OPT := -O2 -g

# libtir-net.so exports tir_net_api alone (TIR_NET_API_ENTRY); what it
# uses of libtir is libtir.so's, checked when linked (-z defs).
$(NET_OBJ): CFLAGS += -fPIC
$(BUILD)/libtir-net.sym: Makefile
	@mkdir -p $(@D)
	$(Q)echo '{ global: tir_net_api; local: *; };' >$@
$(NET_SO): $(NET_OBJ) $(BUILD)/libtir.so $(BUILD)/libtir-net.sym
	$(call SAY,LINK,$@)$(CC) $(LDFLAGS) -shared -Wl,--version-script=$(BUILD)/libtir-net.sym -Wl,-z,defs \
		-Wl,-rpath,'$$ORIGIN' -o $@ $(NET_OBJ) $(BUILD)/libtir.so $(NET_LIBS)

$(MPI_OBJ): CFLAGS += -fPIC
$(MPI_OBJ): CPPFLAGS += $(MPI_CFLAGS)
$(BUILD)/libtir-mpi.so: $(MPI_OBJ)
	$(call SAY,LINK,$@)$(CC) $(LDFLAGS) -shared -Wl,-Bsymbolic -o $@ $(MPI_OBJ) $(MPI_LIBS) -pthread

$(ONNX_GEN): $(ONNX_PROTO) $(BUILD)/pkg.mk
	@mkdir -p $(BUILD)/gen
	$(call SAY,PROTOC,$@)protoc-c --c_out=$(BUILD)/gen -I$(dir $(ONNX_PROTO)).. onnx/onnx.proto
$(ONNX_GEN:.c=.h): $(ONNX_GEN)
# protobuf-c and PCRE2 are not linked either: lib/onnx/libs.c dlopens them
# at the first model or pattern (each was loaded at every start of tir),
# and the generated reader's calls go through its pointers (libs.h,
# included first).
$(ONNX_GEN:.c=.o): $(ONNX_GEN)
	$(call SAY,CC,$<)$(CC) $(CPPFLAGS) -I$(BUILD)/gen $(CFLAGS) -Wno-missing-prototypes \
		-include lib/onnx/libs.h -c -o $@ $<
$(BUILD)/lib/onnx/libs.o: CPPFLAGS += -DTIR_PROTOBUF_SONAME='"$(or $(PROTOBUF_SO),libprotobuf-c.so.1)"' \
	-DTIR_PCRE2_SONAME='"$(or $(PCRE2_SO),libpcre2-8.so.0)"'
$(filter $(BUILD)/lib/onnx/%,$(LIB_OBJ)): CPPFLAGS += -I$(BUILD)/gen
$(filter $(BUILD)/lib/onnx/%,$(LIB_OBJ)): $(ONNX_GEN:.c=.h)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(call SAY,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Tests and benchmarks link lib/net in directly (before libtir.a, so that
# the door is not pulled in).
$(BUILD)/tests/%: tests/unit/%.c $(NET_OBJ) $(BUILD)/libtir.a
	@mkdir -p $(@D)
	$(call SAY,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(NET_OBJ) $(BUILD)/libtir.a $(LDFLAGS) $(NET_LIBS) $(LDLIBS)

$(XFER_CLIENT): tests/net/xfer_client.c $(NET_OBJ) $(BUILD)/libtir.a
	@mkdir -p $(@D)
	$(call SAY,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(NET_OBJ) $(BUILD)/libtir.a $(LDFLAGS) $(NET_LIBS) $(LDLIBS)

$(FUZZ_BIN): tests/fuzz/fuzz_parse.c $(FUZZ_MAIN) $(BUILD)/libtir.a
	@mkdir -p $(@D)
	$(call SAY,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) $(FUZZ_LINK) -o $@ $< $(FUZZ_MAIN) $(BUILD)/libtir.a \
		$(LDFLAGS) $(LDLIBS)

$(FUZZ_ONNX): tests/fuzz/fuzz_onnx.c $(FUZZ_MAIN) $(BUILD)/libtir.a
	@mkdir -p $(@D)
	$(call SAY,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) $(FUZZ_LINK) -o $@ $< $(FUZZ_MAIN) $(BUILD)/libtir.a \
		$(LDFLAGS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(NET_OBJ) $(BUILD)/libtir.a
	@mkdir -p $(@D)
	$(call SAY,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(NET_OBJ) $(BUILD)/libtir.a $(LDFLAGS) $(NET_LIBS) $(LDLIBS)

$(BUILD)/bench/hand_fused: LDLIBS += -lsleef

$(BUILD)/bench/allreduce_mpi: bench/mpi/allreduce.c
	@mkdir -p $(@D)
	$(call SAY,CC,$<)$(CC) $(CPPFLAGS) $(MPI_CFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) $(MPI_LIBS)

run: deps all
	$(BUILD)/tir run samples/mlp.tir

# The bench's programs are built too (not run): a change that stops them
# building fails the tests, not the next `make bench`.
test: all $(BENCH_BIN) $(BENCH_MPI)
	@BUILD=$(BUILD) sh tests/run.sh

# The suites that go through OpenBLAS or a vector path, under each kernel
# choice other machines make (OPENBLAS_CORETYPE, TIR_VMATH); CI runs it.
test-kernels: all
	@BUILD=$(BUILD) sh tests/kernels.sh

# tir against torch.nn modules (a transformer encoder block, a small CNN)
# loaded from the same .safetensors checkpoint: tests/torch/torch_check.py.
# Needs PyTorch (python3-torch, which `make bench` installs; `make deps`
# never does): without it this fails and says so.  Not part of `make test`,
# whose oracle is NumPy.  TORCH_FLAGS=--brief leaves out the "ok" lines.
test-torch: all
	@timeout 300 /usr/bin/python3 tests/torch/torch_check.py --tir $(BUILD)/tir $(TORCH_FLAGS)
	@echo "== a residual CNN with batch norm and a transformer encoder exported to ONNX (tests/onnx/torch_onnx.py)"
	@timeout 300 /usr/bin/python3 tests/onnx/torch_onnx.py --tir $(BUILD)/tir

# ONNX's conformance suite (Debian's libonnx-testdata) through tir import
# and tir run: passed / wrong / unsupported counts and the names that fail
# (tests/onnx/run.py).  `make test` runs the ones in tests/onnx/pass.txt;
# ONNX_FLAGS=--write-pass=tests/onnx/pass.txt rewrites that list.
test-onnx: all
	@/usr/bin/python3 tests/onnx/run.py --tir $(BUILD)/tir $(ONNX_FLAGS)

# AddressSanitizer + UBSan over the whole suite, in its own object folder.
ASAN_OPT := -O1 -g -fno-omit-frame-pointer
ASAN_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
asan:
	$(MAKE) BUILD=build-asan OPT="$(ASAN_OPT)" SAN="$(ASAN_SAN)" test

# libFuzzer on the parser (tests/fuzz/run.sh), then the protocol fuzzer
# (tests/net/fuzz_serve.py) on the ASan build's `tir serve`, each for
# FUZZTIME seconds (FUZZSEED: the protocol fuzzer's seed; default a random
# one, printed).  Both run; either failing fails it.
fuzz: $(BUILD)/pkg.mk
	@st=0; sh tests/fuzz/run.sh $(FUZZTIME) || st=1; \
	sh tests/fuzz/run.sh $(FUZZTIME) fuzz_onnx || st=1; \
	$(MAKE) --no-print-directory BUILD=build-asan OPT="$(ASAN_OPT)" SAN="$(ASAN_SAN)" all || exit 1; \
	echo "fuzz: the protocol fuzzer on build-asan/tir for $(FUZZTIME)s"; \
	/usr/bin/python3 tests/net/fuzz_serve.py --tir build-asan/tir --seconds $(FUZZTIME) \
		--out build-asan/fuzz-serve $(if $(FUZZSEED),--seed $(FUZZSEED)) || st=1; \
	exit $$st

# The libFuzzer build of the parser's target, build-fuzz/tests/fuzz_parse
# (tests/fuzz/run.sh makes it): clang, ASan and UBSan, the Makefile's
# sources and flags, but that clang's warnings do not stop it (it knows
# none of GCC's pragmas, vmath.c's ivdep): `make test` builds the same
# target with -Werror.  FUZZ_CC picks another clang.
fuzz-parse:
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(or $(FUZZ_CC),clang) OPT="-g -O1" SAN="$(FUZZ_SAN)" \
		WERROR="-Wno-error -Wno-unknown-pragmas" FUZZ_MAIN= FUZZ_LINK=-fsanitize=fuzzer \
		build-fuzz/tests/fuzz_parse

# The same for the ONNX importer's target, build-fuzz/tests/fuzz_onnx.
fuzz-onnx:
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(or $(FUZZ_CC),clang) OPT="-g -O1" SAN="$(FUZZ_SAN)" \
		WERROR="-Wno-error -Wno-unknown-pragmas" FUZZ_MAIN= FUZZ_LINK=-fsanitize=fuzzer \
		build-fuzz/tests/fuzz_onnx

# A soak of tir serve (tests/net/soak.py): SOAK_SECONDS of mixed clients,
# restarts and kills; memory flat and no request lost.  Not part of `make
# test`.  SOAK_OUT=DIR keeps its CSV and logs there (default: a new
# temporary folder, printed).
soak: all
	@/usr/bin/python3 tests/net/soak.py --seconds $(SOAK_SECONDS) --tir $(BUILD)/tir $(if $(SOAK_OUT),--out $(SOAK_OUT))

# The peers (NumPy, numexpr, PyTorch) are installed here only, never by
# deps/test; bench/hand_fused.c links SLEEF.  With torch there, test-torch
# runs first (its failure fails bench, after the benchmarks have run).
bench:
	@sh tests/deps.sh python3-numexpr python3-torch || \
		echo "bench: peers missing (see above); their columns stay empty"
	@$(MAKE) --no-print-directory all $(BENCH_BIN) $(BENCH_MPI) LDLIBS='$(LDLIBS) -lsleef'
	@st=0; echo "== test-torch: tir against torch.nn modules from one checkpoint (tests/torch)"; \
	if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory test-torch TORCH_FLAGS=--brief || { st=1; echo "bench: make test-torch FAILED"; }; \
	else \
		echo "  skipped: torch does not import (python3-torch missing, see above)"; \
	fi; \
	BUILD=$(BUILD) sh bench/run.sh || st=1; \
	exit $$st

# The README's two commands on a fresh Debian 12 root (debootstrap, chroot):
# not part of `make test`; needs root and Debian's mirror.
fresh-check:
	@sh tests/fresh-check.sh

# Rewrite one golden file on purpose: make golden-update NAME=foo
golden-update: all
	@BUILD=$(BUILD) sh tests/golden-update.sh $(NAME)

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(NET_OBJ:.o=.d) $(MPI_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(UNIT_BIN:=.d)
