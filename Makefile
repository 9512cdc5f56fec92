# collagec - one flat Makefile. `make` builds, `make test` tests, `make demo`
# compiles and runs the demo models; every target installs missing Debian
# packages first (tools/deps.sh).

CC      ?= cc
CFLAGS  ?= -O2 -g
BUILD   ?= build
PREFIX  ?= /usr/local
WARN     = -Wall -Wextra -pedantic -Wno-unused-parameter
CPPFLAGS_ALL = -D_GNU_SOURCE -I$(BUILD)/gen
ALL_CFLAGS = -std=c11 $(WARN) $(CFLAGS) $(CPPFLAGS_ALL) $(EXTRA_CFLAGS)
LIBS     = -lprotobuf-c -lcjson -lsqlite3 -lcrypto -ldl -lm
VERSION := $(shell sed -n 's/^\#define COLLAGEC_VERSION "\(.*\)"$$/\1/p' core/compile.h)

SRCS   := $(wildcard core/*.c core/*/*.c backends/*.c backends/*/*.c cli/*.c) runtime/loader.c
HDRS   := $(wildcard core/*.h core/*/*.h core/*/*.def backends/*.h backends/*/*.h runtime/*.h runtime/*.def \
	    cli/*.h)
OBJS   := $(patsubst %.c,$(BUILD)/%.o,$(SRCS)) $(BUILD)/gen/onnx.pb-c.o $(BUILD)/gen/embed.o \
	  $(BUILD)/gen/codegen_id.o
RTSRC  := runtime/collagec.h runtime/rt_plan.h runtime/rt_half.h runtime/rt_float8.h runtime/rt_string.h runtime/rt_ml.h runtime/rt_random.h \
	  runtime/rt_model.h runtime/rt_wino.h runtime/rt_par.h runtime/rt_cores.h \
	  runtime/rt_model.c runtime/rt_shape.c runtime/rt_imgprobe.c runtime/rt_par.c runtime/rt_image.h backends/opencl/rt_opencl.h backends/cuda/rt_cuda.h backends/cublas/rt_cublas.h backends/cudnn/rt_cudnn.h backends/dnnl/rt_dnnl.h \
	  backends/blas/rt_blas.h \
	  backends/c/rt_cgemm.h backends/c/rt_cconv.h backends/c/rt_cwino.h \
	  backends/c/rt_crows.h backends/c/rt_cpool.h backends/c/rt_cipack.h backends/c/rt_cquant.h \
	  backends/c/rt_cnbits.h backends/c/rt_cvec.h backends/c/rt_cdw.h backends/c/rt_cpw.h backends/c/rt_cqpool.h
# embedded in collagec: the runtime sources, the built-in pattern tables and
# the page explain --html fills in
EMBED  := $(RTSRC) $(wildcard patterns/*.pat) cli/explorer.html
UNIT   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/*_test.c)) \
	  $(BUILD)/tests/cdw_avx2_test $(BUILD)/tests/cdw_generic_test \
	  $(BUILD)/tests/q8_avx2_test $(BUILD)/tests/q8_generic_test \
	  $(BUILD)/tests/cgemv16_v3_test $(BUILD)/tests/cgemv16_generic_test
# the fuzz harnesses over the compiler (tests/fuzz/fuzz_*.c), and their
# replay drivers that make test runs over tests/fuzz/corpus/
HARNESS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
REPLAY := $(patsubst %,$(BUILD)/tests/replay_%,$(HARNESS))
FUZZ_SECONDS ?= 10
LIBOBJS := $(filter-out $(BUILD)/cli/%,$(OBJS))
# the subcommands without main(), for the harnesses of what cli/ reads (fuzz_meta)
CLIOBJS := $(filter-out $(BUILD)/cli/main.o,$(filter $(BUILD)/cli/%,$(OBJS)))

.PHONY: all deps test test-full test-all test-build test-oom oom-build test-asan test-valgrind demo bench bench-busy bench-gemm bench-nbits bench-quant bench-collage bench-compile bench-search bench-decode install clean regen fuzz

all: $(BUILD)/collagec

$(BUILD)/deps.stamp: tools/deps.sh
	@mkdir -p $(BUILD)
	@sh tools/deps.sh
	@touch $@

deps:
	@sh tools/deps.sh

$(BUILD)/gen/onnx.pb-c.c $(BUILD)/gen/onnx.pb-c.h: | $(BUILD)/deps.stamp
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen -I/usr/include/onnx /usr/include/onnx/onnx.proto

$(BUILD)/tools/embed: tools/embed.c | $(BUILD)/deps.stamp
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) -O1 -o $@ $<

$(BUILD)/gen/embed.c: $(BUILD)/tools/embed $(EMBED)
	@mkdir -p $(BUILD)/gen
	$(BUILD)/tools/embed $@ $(EMBED)

# collagec_codegen_id (core/compile.h): the version and a hash of every
# source built into collagec, part of each cost-cache key
$(BUILD)/gen/codegen_id.c: $(SRCS) $(HDRS) $(EMBED) Makefile
	@mkdir -p $(BUILD)/gen
	@printf 'const char collagec_codegen_id[] = "%s+%s";\n' $(VERSION) \
		"$$(cat $(sort $(SRCS) $(HDRS) $(EMBED)) | sha256sum | cut -c1-12)" >$@.tmp
	@mv $@.tmp $@

$(BUILD)/gen/codegen_id.o: $(BUILD)/gen/codegen_id.c
	$(CC) -std=c11 $(EXTRA_CFLAGS) -c -o $@ $<

$(BUILD)/gen/onnx.pb-c.o: $(BUILD)/gen/onnx.pb-c.c
	$(CC) -std=c11 -O2 $(EXTRA_CFLAGS) -I$(BUILD)/gen -c -o $@ $<

$(BUILD)/gen/embed.o: $(BUILD)/gen/embed.c
	$(CC) -std=c11 -O1 $(EXTRA_CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.c $(HDRS) $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/collagec: $(OBJS)
	$(CC) $(CFLAGS) $(EXTRA_CFLAGS) -o $@ $(OBJS) $(LIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/test.h $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBOBJS) $(LIBS)

# rt_cgemm.h's tiles as the generated code has them on this host
$(BUILD)/tests/cgemm_test: ALL_CFLAGS += -march=native

# rt_model.h's rt_expf compiled as the generated code is (emit_math_flags)
$(BUILD)/tests/vecmath_test: ALL_CFLAGS += -ffp-contract=fast -fno-math-errno -fno-trapping-math \
	-fvect-cost-model=cheap

# rt_cdw.h and rt_cpw.h on this host, and on their AVX2 and plain paths,
# contracting a * b + c into fmaf as the generated code (-std=gnu11) does
CDW_FLAGS = -ffp-contract=fast -Wno-psabi
$(BUILD)/tests/cdw_test: ALL_CFLAGS += -march=native $(CDW_FLAGS)
$(BUILD)/tests/cdw_avx2_test: tests/unit/cdw_test.c tests/unit/test.h $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -march=x86-64-v3 $(CDW_FLAGS) -o $@ $< $(LIBOBJS) $(LIBS)
$(BUILD)/tests/cdw_generic_test: tests/unit/cdw_test.c tests/unit/test.h $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -march=x86-64 $(CDW_FLAGS) -o $@ $< $(LIBOBJS) $(LIBS)

# rt_cquant.h's rt_qadd likewise: its AVX-512 and AVX2 FMA paths and plain loops
$(BUILD)/tests/q8_test: ALL_CFLAGS += -march=native $(CDW_FLAGS)
$(BUILD)/tests/q8_avx2_test: tests/unit/q8_test.c tests/unit/test.h $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -march=x86-64-v3 $(CDW_FLAGS) -o $@ $< $(LIBOBJS) $(LIBS)
$(BUILD)/tests/q8_generic_test: tests/unit/q8_test.c tests/unit/test.h $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -march=x86-64 $(CDW_FLAGS) -o $@ $< $(LIBOBJS) $(LIBS)

# rt_cgemm16's float16 loads: AVX-512's, F16C's and rt_half.h's
$(BUILD)/tests/cgemv16_test: ALL_CFLAGS += -march=native $(CDW_FLAGS)
$(BUILD)/tests/cgemv16_v3_test: tests/unit/cgemv16_test.c tests/unit/test.h $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -march=x86-64-v3 $(CDW_FLAGS) -o $@ $< $(LIBOBJS) $(LIBS)
$(BUILD)/tests/cgemv16_generic_test: tests/unit/cgemv16_test.c tests/unit/test.h $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -march=x86-64 $(CDW_FLAGS) -o $@ $< $(LIBOBJS) $(LIBS)

# The tests in three tiers (tests/lib.sh, README "Tests"): make test runs
# every suite, sampled where the full run is exhaustive (what CI runs);
# make test-full everything; make test-all that, the whole OOM walk,
# memcheck and a short fuzz. All build with every core, then run two suites
# at a time (tests/run.sh).
NPROC := $(shell nproc 2>/dev/null || echo 1)

test-build: $(BUILD)/collagec $(UNIT) $(REPLAY) oom-build

test:
	@$(MAKE) --no-print-directory -j$(NPROC) test-build
	@BUILD=$(BUILD) COLLAGEC_TEST_TIER=quick sh tests/run.sh

test-full:
	@$(MAKE) --no-print-directory -j$(NPROC) test-build
	@BUILD=$(BUILD) COLLAGEC_TEST_TIER=full sh tests/run.sh

test-all:
	@sh tools/deps.sh valgrind clang
	@$(MAKE) --no-print-directory -j$(NPROC) test-build
	@BUILD=$(BUILD) COLLAGEC_TEST_TIER=all sh tests/run.sh

# build-oom: ASan + LeakSanitizer with allocation-failure injection
# (core/base/fault.c); tests/oom.sh walks COLLAGEC_FAIL_ALLOC over it.
# make test walks a sample of the allocations, make test-oom every one.
OOM_BUILD = build-oom
oom-build: | $(BUILD)/deps.stamp
	@$(MAKE) --no-print-directory BUILD=$(OOM_BUILD) \
		CFLAGS="-O1 -g -fsanitize=address -fno-omit-frame-pointer" \
		EXTRA_CFLAGS="-fsanitize=address -DCOLLAGEC_FAULT_INJECTION" $(OOM_BUILD)/collagec

test-oom: oom-build
	@OOM_BUILD=$(OOM_BUILD) OOM_FULL=1 sh tests/oom.sh

$(BUILD)/tests/replay_%: tests/fuzz/%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(LIBOBJS) $(CLIOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/fuzz/replay.c $< $(LIBOBJS) $(CLIOBJS) $(LIBS)

# libFuzzer builds (clang, tests/fuzz/run.sh builds them in build-fuzz)
$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(LIBOBJS) $(CLIOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIBOBJS) $(CLIOBJS) $(LIBS)

# make fuzz FUZZ_SECONDS=N: every harness for N seconds (tests/fuzz/run.sh)
fuzz: $(BUILD)/collagec
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh

# memcheck over compile and run of the five reference models (slow)
test-valgrind: $(BUILD)/collagec
	@BUILD=$(BUILD) sh tests/valgrind.sh

test-asan:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
		EXTRA_CFLAGS="-fsanitize=address,undefined" test

demo: $(BUILD)/collagec
	@BUILD=$(BUILD) sh tests/demo.sh

bench: $(BUILD)/collagec $(BUILD)/tests/gemm_bench
	@BUILD=$(BUILD) sh tests/bench.sh

# OpenBLAS's sgemm next to rt_cgemm.h, compiled as generated code is
$(BUILD)/tests/gemm_bench: tests/gemm_bench.c backends/c/rt_cgemm.h runtime/rt_par.c runtime/rt_par.h | $(BUILD)/deps.stamp
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -march=native $(WARN) -o $@ tests/gemm_bench.c -lopenblas -lm

bench-gemm: $(BUILD)/collagec $(BUILD)/tests/gemm_bench
	@BUILD=$(BUILD) sh tests/bench_gemm.sh

# a decoder-sized MatMulNBits against ONNX Runtime (ORT_PY: a python with it)
bench-nbits: $(BUILD)/collagec
	@BUILD=$(BUILD) sh tests/bench_nbits.sh

# issue 31's table: quantized models against ONNX Runtime and collagec's float32
# builds (ORT_PY: a python with onnxruntime; skipped without one)
bench-quant: $(BUILD)/collagec
	@BUILD=$(BUILD) sh tests/bench_quant.sh

bench-compile: $(BUILD)/collagec
	@BUILD=$(BUILD) sh tests/bench_compile.sh

# issue 32's: the default compile at 2 threads beside one busy process, unpinned
# then pinned to CPU 0, next to ONNX Runtime beside the same process
bench-busy: $(BUILD)/collagec
	@for b in unpinned pinned; do BUILD=$(BUILD) BUSY=$$b THREADS=2 TARGET=default \
		SEARCH=default REPEAT=$${REPEAT:-7} \
		MODELS="$${MODELS:-mnist_cnn mlp bert_tiny mobilenetv2 resnet18 bert_base resnet50}" \
		sh tests/bench.sh || exit 1; done

bench-collage: $(BUILD)/collagec
	@BUILD=$(BUILD) python3 tests/bench_collage.py

# issue 29's table: the default compile's time, memory and bytes, its build's
# speed; GNU time (the Debian package time) reads the peak RSS
bench-search: $(BUILD)/collagec
	@sh tools/deps.sh time
	@BUILD=$(BUILD) sh tests/bench_search.sh

bench-decode: $(BUILD)/collagec
	@BUILD=$(BUILD) sh tests/bench_decode.sh

# the binary, the man page, collagec.h with its pkg-config file (written
# here, so it names this PREFIX), bash completion and the pattern files
install: $(BUILD)/collagec
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/collagec/patterns \
		$(DESTDIR)$(PREFIX)/share/pkgconfig \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 755 $(BUILD)/collagec $(DESTDIR)$(PREFIX)/bin/collagec
	install -m 644 man/collagec.1 $(DESTDIR)$(PREFIX)/share/man/man1/collagec.1
	install -m 644 runtime/collagec.h $(DESTDIR)$(PREFIX)/include/collagec.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' runtime/collagec.pc.in \
		>$(DESTDIR)$(PREFIX)/share/pkgconfig/collagec.pc
	chmod 644 $(DESTDIR)$(PREFIX)/share/pkgconfig/collagec.pc
	install -m 644 tools/collagec.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/collagec
	for f in patterns/*.pat; do [ ! -f "$$f" ] || \
		install -m 644 "$$f" $(DESTDIR)$(PREFIX)/share/collagec/patterns/; done

# generated tables (see the generators' headers); review the diff
# versions.def needs the schemas of opset 23: onnx >= 1.18 (pip install onnx)
regen:
	/usr/bin/python3 tools/gen-op-attrs.py >core/ops/attrs.def.tmp
	mv core/ops/attrs.def.tmp core/ops/attrs.def
	python3 tools/gen-op-versions.py >core/ops/versions.def.tmp
	mv core/ops/versions.def.tmp core/ops/versions.def
	python3 testdata/gen_control_tests.py testdata/control
	python3 testdata/gen_ml_tests.py testdata/ml
	/usr/bin/python3 testdata/gen_sequence_tests.py testdata/sequence
	python3 testdata/gen_decoder.py testdata/decoder --hidden 64 --heads 4 --kv-heads 2 \
		--vocab 256 --long 1100

clean:
	rm -rf build build-asan build-fuzz build-oom
