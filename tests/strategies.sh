#!/bin/sh
# strategies.sh - op strategies of the c target: a symbolic MatMul gets one
# kernel per specialization and a run-time dispatcher, and one .so run at
# sizes that hit each specialization matches numpy each time; static Convs
# get their specialization chosen at compile time, and a symbolic-batch one
# matches numpy at two batch sizes. Implementations that need a scratch
# buffer (matmul.packed, conv.im2col) list it in OUT.json, and so do the
# micro-kernel ones (matmul.micro, gemm.micro, conv.micro: rt_cgemm.h) for B
# packed at compile time or (conv.micro, rt_cconv.h) the panel slots.
# A MatMul of fewer rows by a constant B is matmul.gemv (rt_cgemm's GEMV
# form for up to 4 rows), whose row has the bits it has among the tiles.
# micro_edges.onnx puts those at the edges of their tiles and blocks, each
# against numpy, at 1 and 3 threads and at every ISA level the host runs; rows_edges.onnx does the same for
# the row form of depthwise Conv and MaxPool (conv.depthwise_rows,
# maxpool.vrows), dw_edges.onnx for depthwise Convs across channels
# (conv.depthwise_vec), pwc_edges.onnx for pointwise ones over small images
# (conv.1x1_chan), gap_edges.onnx for GlobalAveragePool by rows,
# pool_edges.onnx for the pools of rt_cpool.h
# (maxpool.vrows, averagepool.vrows) and the float64 ones of the loop forms
# (maxpool.rows, averagepool.window), epi_edges.onnx for the fused chains
# that rt_cgemm.h's write-back applies, softmax_edges.onnx for Softmax by rows,
# lnorm_edges.onnx for LayerNormalization by rows, rmsnorm_edges.onnx for
# RMSNormalization's, transpose_edges.onnx for Transpose in squares,
# wino_edges.onnx and wino_sym.onnx for conv.winograd (rt_cwino.h, with and
# without AVX). `run --kernels`
# names the variant that ran at each size, and a C program checks
# collagec_get_kernel_info: nothing before a run, one record per handle,
# times only while profiling.
SUITE=strategies
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 testdata/strategies/make_models.py "$T" || { fail generate "make_models.py"; exit 1; }

# kernels.py OUT.json: per kernel "NODE DISPATCH IMPL if COND,... scratch=SHAPES"
cat >"$T/kernels.py" <<'EOF'
import json, sys
for p in json.load(open(sys.argv[1]))["partitions"]:
    for k in p["kernels"]:
        print(p["onnx_nodes"][0]["name"], k["dispatch"],
              ",".join("%s if %s" % (v["implementation"], v["condition"]) for v in k["variants"]),
              "scratch=" + ";".join("x".join(str(d) for d in s["shape"])
                                    for s in k.get("scratch", [])))
EOF
kernels() { /usr/bin/python3 "$T/kernels.py" "$1" | tr '\n' '|'; }
# check NAME SO EXPECTED_DIR INPUT...: runs SO on the inputs, compares with numpy
check() {
	name=$1 so=$2 exp=$3 log=$T/$(echo "$1" | tr '/,=' '___').log
	shift 3
	args=""
	for i in "$@"; do args="$args --input $i"; done
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$so" $args --check "$exp" --rtol 1e-4 --atol 1e-4 \
		>"$log" 2>&1; then
		ok "$name-matches-numpy"
	else
		fail "$name-matches-numpy" "$(head -1 "$log")"
	fi
}
expect() {
	mkdir -p "$T/$1"
	cp "$2" "$T/$1/y.npy"
}

# MatMul by a constant [32, 24], M symbolic: K = 32 is static, so "K > 16"
# always holds and matmul.ijk is never needed; B is packed at compile time
# into the panels that matmul.micro and matmul.gemv share (one constant
# buffer listed with the scratch)
"$COLLAGEC" compile --search none --target c "$T/matmul_sym.onnx" -o "$T/mm.so" --dump-ir "$T/ir" ||
	fail matmul/compile "exit $?"
v=$(kernels "$T/mm.json")
want="mm run-time matmul.micro if float32, static K and N, one B, batch * M >= 16 && K > 16,\
matmul.gemv if always scratch=1024|"
if [ "$v" = "$want" ]; then ok matmul/metadata-lists-variants; else
	fail matmul/metadata-lists-variants "got '$v'"; fi
# M = 1, 4: matmul.gemv (rt_cgemm's GEMV form); 16, 64: micro tiles; 17:
# micro with an edge row
for m in 1 4 16 17 64; do
	expect "exp$m" "$T/y_$m.npy"
	check "matmul/M=$m" "$T/mm.so" "$T/exp$m" "a=$T/a_$m.npy"
done
# ran SO INPUT...: "IMPL if COND|" per kernel that ran (run --kernels, tab-separated)
ran() {
	so=$1
	shift
	args=""
	for i in "$@"; do args="$args --input $i"; done
	# shellcheck disable=SC2086
	"$COLLAGEC" run "$so" $args --kernels 2>&1 |
		awk -F '\t' '$1 == "kernel" { printf "%s if %s|", $5, $6 }'
}
micro="float32, static K and N, one B, batch * M >= 16 && K > 16"
for mi in 1:matmul.gemv:always 4:matmul.gemv:always "16:matmul.micro:$micro" \
	"17:matmul.micro:$micro" "64:matmul.micro:$micro"; do
	m=${mi%%:*} rest=${mi#*:}
	want="${rest%%:*} if ${rest#*:}|"
	v=$(ran "$T/mm.so" "a=$T/a_$m.npy")
	if [ "$v" = "$want" ]; then ok "matmul/M=$m-ran-${rest%%:*}"; else
		fail "matmul/M=$m-ran-${rest%%:*}" "got '$v'"; fi
done
# a row through matmul.gemv's GEMV form has the bits it has among 17 rows
# through matmul.micro's tiles, at 1 and 3 threads
/usr/bin/python3 -c '
import numpy as np, sys
a = np.load(sys.argv[1]); a[:1] = np.load(sys.argv[2])[:1]; np.save(sys.argv[3], a)' \
	"$T/a_17.npy" "$T/a_1.npy" "$T/a_17r.npy"
for th in 1 3; do
	rm -rf "$T/gv1" "$T/gv17"
	if "$COLLAGEC" run "$T/mm.so" --input "a=$T/a_1.npy" --threads $th --npy \
		--output-dir "$T/gv1" >"$T/gv.log" 2>&1 &&
		"$COLLAGEC" run "$T/mm.so" --input "a=$T/a_17r.npy" --threads $th --npy \
			--output-dir "$T/gv17" >>"$T/gv.log" 2>&1 &&
		/usr/bin/python3 -c '
import numpy as np, sys
sys.exit(np.load(sys.argv[1]).tobytes() != np.load(sys.argv[2])[:1].tobytes())' \
			"$T/gv1/y.npy" "$T/gv17/y.npy"; then
		ok "matmul/threads=$th-gemv-row-equals-micro-row"
	else
		fail "matmul/threads=$th-gemv-row-equals-micro-row" "$(head -1 "$T/gv.log")"
	fi
done
# the whole --kernels line: index, name, partition, implementation, condition, nodes
v=$("$COLLAGEC" run "$T/mm.so" --input "a=$T/a_4.npy" --kernels 2>&1 | grep '^kernel' |
	tr '\t' '|')
if [ "$v" = "kernel|0|k0_0_MatMul|0|matmul.gemv|always|mm(MatMul)" ]; then
	ok matmul/kernels-line; else fail matmul/kernels-line "got '$v'"; fi

# the C API: two handles of one model at different M keep their own record;
# nothing before the first run; times only while profiling
cat >"$T/api.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include "collagec.h"
static float a[64 * 32];
static int run(collagec_model *m, int64_t rows)
{
	int64_t dims[2] = { rows, 32 };
	return collagec_set_input(m, 0, a, dims, 2) || collagec_run(m);
}
int main(void)
{
	collagec_model *h1, *h2;
	collagec_kernel_info i1, i2;
	if (collagec_open(&h1) || collagec_open(&h2) || collagec_num_kernels(h1) != 1)
		return puts("open"), 1;
	if (collagec_get_kernel_info(h1, 0, &i1) || i1.implementation || i1.condition ||
	    i1.variant != -1 || i1.time_ns != -1 || i1.n_variants != 2 || i1.partition != 0 ||
	    strcmp(i1.name, "k0_0_MatMul"))
		return puts("before-run"), 1;
	if (collagec_get_kernel_info(h1, 1, &i1) != COLLAGEC_E_ARG ||
	    collagec_get_kernel_info(h1, -1, &i1) != COLLAGEC_E_ARG)
		return puts("bad-index"), 1;
	if (run(h1, 4) || run(h2, 64) || collagec_get_kernel_info(h1, 0, &i1) ||
	    collagec_get_kernel_info(h2, 0, &i2))
		return puts("run"), 1;
	if (strcmp(i1.implementation, "matmul.gemv") || i1.variant != 1 ||
	    strcmp(i2.implementation, "matmul.micro") || i2.variant != 0 ||
	    strcmp(i2.condition, "float32, static K and N, one B, batch * M >= 16 && K > 16") ||
	    i1.time_ns != -1 || i2.time_ns != -1)
		return printf("per-handle %s %s\n", i1.implementation, i2.implementation), 1;
	if (collagec_set_profiling(h2, 1) || run(h2, 4) || collagec_get_kernel_info(h2, 0, &i2) ||
	    i2.time_ns < 0 || strcmp(i2.implementation, "matmul.gemv"))
		return puts("profiled"), 1;
	if (collagec_set_profiling(h2, 0) || run(h2, 4) || collagec_get_kernel_info(h2, 0, &i2) ||
	    i2.time_ns != -1)
		return puts("profiling-off"), 1;
	collagec_close(h1);
	collagec_close(h2);
	return puts("ok"), 0;
}
EOF
if ${CC:-cc} -std=c11 -Iruntime -o "$T/api" "$T/api.c" "$T/mm.so" >"$T/api.log" 2>&1 &&
	[ "$("$T/api" 2>&1)" = ok ]; then ok matmul/api-kernel-info-per-handle; else
	fail matmul/api-kernel-info-per-handle "$(cat "$T/api.log") $("$T/api" 2>&1)"; fi
# each variant is a function of its own in the lowered IR
for f in k0_0_MatMul_v0 k0_0_MatMul_v1; do
	grep -q "kernel $f(" "$T/ir/10-lower.tir" && ok "matmul/variant-$f" ||
		fail "matmul/variant-$f" "not in 10-lower.tir"
done

# M and K symbolic: all three specializations at run time, no scratch (a
# symbolic K gives matmul.packed no constant panel)
"$COLLAGEC" compile --search none --target c "$T/matmul_kn.onnx" -o "$T/kn.so" || fail matmul-kn/compile "exit $?"
v=$(kernels "$T/kn.json")
want="mm run-time matmul.packed if M >= 16 && K > 16,matmul.ikj if K > 16,matmul.ijk \
if always scratch=|"
if [ "$v" = "$want" ]; then ok matmul-kn/metadata-lists-variants; else
	fail matmul-kn/metadata-lists-variants "got '$v'"; fi
# (4, 8): ijk; (4, 32): ikj; (64, 32), (19, 40): the large-batch variant
for mk in 4_8 4_32 64_32 19_40; do
	expect "kn$mk" "$T/kn_y_$mk.npy"
	check "matmul-kn/M,K=$mk" "$T/kn.so" "$T/kn$mk" "a=$T/kn_a_$mk.npy" "b=$T/kn_b_$mk.npy"
done
for mk in 4_8:matmul.ijk 4_32:matmul.ikj 64_32:matmul.packed 19_40:matmul.packed; do
	m=${mk%%:*} want=${mk#*:}
	v=$(ran "$T/kn.so" "a=$T/kn_a_$m.npy" "b=$T/kn_b_$m.npy")
	if [ "${v%% *}" = "$want" ]; then ok "matmul-kn/M,K=$m-ran-$want"; else
		fail "matmul-kn/M,K=$m-ran-$want" "got '$v'"; fi
done

# a batch of B matrices: packed one at a time into one scratch of two
# 16-column panels (32 x 32), each matrix one rt_cgemm (matmul.micro)
"$COLLAGEC" compile --search none --target c "$T/matmul_batched.onnx" -o "$T/bt.so" || fail matmul-batched/compile "exit $?"
v=$(kernels "$T/bt.json")
want="mm compile-time matmul.micro if always scratch=1024|"
if [ "$v" = "$want" ]; then ok matmul-batched/metadata; else
	fail matmul-batched/metadata "got '$v'"; fi
expect btexp "$T/bt_y.npy"
check matmul-batched/B=3 "$T/bt.so" "$T/btexp" "a=$T/bt_a.npy" "b=$T/bt_b.npy"

"$COLLAGEC" compile --search none --target c "$T/conv_kinds.onnx" -o "$T/conv.so" || fail conv/compile "exit $?"
v=$(kernels "$T/conv.json")
want="depthwise compile-time conv.depthwise_vec if always scratch=|pointwise compile-time \
conv.1x1_tiles if always scratch=|full3x3 compile-time conv.im2col_tiles if always \
scratch=2304|"
if [ "$v" = "$want" ]; then ok conv/static-choices; else fail conv/static-choices "got '$v'"; fi
expect convexp "$T/conv_y.npy"
check conv/static "$T/conv.so" "$T/convexp" "x=$T/x.npy"

# batch N symbolic: conv.im2col_tiles per image (grouped; 1x1 with stride 2:
# both too small for conv.micro), direct for 2 output channels; the scratch
# does not grow with N
"$COLLAGEC" compile --search none --target c "$T/conv_sym.onnx" -o "$T/cs.so" || fail conv-sym/compile "exit $?"
v=$(kernels "$T/cs.json")
want="grouped compile-time conv.im2col_tiles if always scratch=7200|strided1x1 compile-time \
conv.im2col_tiles if always scratch=200|two_out compile-time conv.direct if always scratch=|"
if [ "$v" = "$want" ]; then ok conv-sym/static-choices; else
	fail conv-sym/static-choices "got '$v'"; fi
for n in 1 3; do
	expect "csexp$n" "$T/cs_y_$n.npy"
	check "conv-sym/N=$n" "$T/cs.so" "$T/csexp$n" "x=$T/cs_x_$n.npy"
done

# the micro-kernel GEMM at its edges (testdata/strategies/make_models.py)
"$COLLAGEC" compile --search none --target c "$T/micro_edges.onnx" -o "$T/me.so" ||
	fail micro-edges/compile "exit $?"
v=$(kernels "$T/me.json")
want="g_tiny compile-time gemm.micro if always scratch=80|g_edges compile-time gemm.micro if \
always scratch=1056|g_kblocks compile-time gemm.micro if always scratch=14400|g_full_c \
compile-time gemm.micro if always scratch=320|g_scalar_c compile-time gemm.micro if always \
scratch=6192|g_blocks compile-time gemm.micro if always scratch=41600|g_rows4 compile-time \
gemm.micro if always scratch=2304|g_rows3 compile-time gemm.micro if always scratch=3072|\
mm_batch compile-time \
matmul.micro if always scratch=1280|mm_input compile-time matmul.micro if always scratch=768|\
mm_bbatch compile-time matmul.micro if always scratch=640|mm_bcast compile-time matmul.micro \
if always scratch=1280|cv compile-time conv.micro if always scratch=3456|cv1d \
compile-time conv.micro if always scratch=2688|cvwide compile-time conv.micro if always \
scratch=36864|cvs2 compile-time conv.micro if always scratch=6912|cvpw compile-time \
conv.1x1_chan if always scratch=3072|gv_m1 compile-time matmul.gemv if always scratch=38400|gv_m2 \
compile-time matmul.gemv if always scratch=14400|gv_m3 compile-time matmul.gemv if always \
scratch=3360|gv_g4 compile-time gemm.micro if always scratch=4800|cv1d_col compile-time \
conv.im2col_tiles if always scratch=390|cv1d_dil compile-time conv.im2col_tiles if always \
scratch=435|"
if [ "$v" = "$want" ]; then ok micro-edges/static-choices; else
	fail micro-edges/static-choices "got '$v'"; fi
args=""
for f in "$T"/me_*.npy; do
	n=${f##*/me_}
	args="$args --input ${n%.npy}=$f"
done
for th in 1 3; do
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$T/me.so" $args --threads $th --check "$T/me_exp" --rtol 1e-4 \
		--atol 1e-4 >"$T/me.log" 2>&1; then ok "micro-edges/threads=$th-matches-numpy"; else
		fail "micro-edges/threads=$th-matches-numpy" "$(grep -v ': ok$' "$T/me.log" | head -1)"
	fi
done
# the tiles of every ISA level this host can run (rows per tile: 3 with
# SSE, 6 with AVX2, 8 with AVX-512), so the last tiles of fewer rows are
# checked whatever --cpu native gives here
levels=x86-64-v2
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { for f in "$@"; do case " $flags " in *" $f "*) ;; *) return 1 ;; esac; done; }
has avx2 fma bmi2 && levels="$levels x86-64-v3"
has avx2 fma bmi2 avx512f avx512bw avx512dq avx512vl && levels="$levels x86-64-v4"
for lv in $levels; do
	if ! "$COLLAGEC" compile --search none --target c --cpu $lv "$T/micro_edges.onnx" \
		-o "$T/me-$lv.so" >"$T/me.log" 2>&1; then
		fail "micro-edges/$lv-compile" "$(head -n 1 "$T/me.log")"
		continue
	fi
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$T/me-$lv.so" $args --threads 2 --check "$T/me_exp" --rtol 1e-4 \
		--atol 1e-4 >"$T/me.log" 2>&1; then ok "micro-edges/$lv-matches-numpy"; else
		fail "micro-edges/$lv-matches-numpy" "$(grep -v ': ok$' "$T/me.log" | head -1)"
	fi
done

# depthwise Conv and MaxPool row by row: strides, dilations, asymmetric
# pads, ceil_mode and a 5x5 kernel against numpy (-dwvec=0: these
# depthwise Convs would take conv.depthwise_vec)
"$COLLAGEC" compile --search none --target "c -dwvec=0" "$T/rows_edges.onnx" -o "$T/rows.so" ||
	fail rows-edges/compile "exit $?"
v=$(kernels "$T/rows.json")
want="dw_strided compile-time conv.depthwise_rows if always scratch=|dw_5x5 compile-time \
conv.depthwise_rows if always scratch=|mp_resnet compile-time maxpool.vrows if always scratch=|\
mp_ceil compile-time maxpool.vrows if always scratch=|mp_dilated compile-time maxpool.vrows if \
always scratch=|"
if [ "$v" = "$want" ]; then ok rows-edges/static-choices; else
	fail rows-edges/static-choices "got '$v'"; fi
if "$COLLAGEC" run "$T/rows.so" --input "x=$T/re_x.npy" --check "$T/re_exp" --rtol 1e-4 \
	--atol 1e-4 >"$T/rows.log" 2>&1; then ok rows-edges/matches-numpy; else
	fail rows-edges/matches-numpy "$(grep -v ': ok$' "$T/rows.log" | head -1)"; fi

# check_nt NAME SO P RTOL ATOL INPUT...: SO on $T/P_INPUT_N.npy against
# $T/P_exp_N at N = 1 and 3 (a symbolic batch), 1 and 3 threads
check_nt() {
	_n=$1 _so=$2 _p=$3 _rt=$4 _at=$5
	shift 5
	for b in 1 3; do
		_ins=""
		for i in "$@"; do _ins="$_ins --input $i=$T/${_p}_${i}_$b.npy"; done
		for th in 1 3; do
			# shellcheck disable=SC2086
			if "$COLLAGEC" run "$_so" $_ins --threads $th --check "$T/${_p}_exp_$b" \
				--rtol "$_rt" --atol "$_at" >"$T/$_p.log" 2>&1; then
				ok "$_n/N=$b-threads=$th-matches-numpy"
			else
				fail "$_n/N=$b-threads=$th-matches-numpy" "$(grep -v ': ok$' "$T/$_p.log" | head -1)"
			fi
		done
	done
}

# depthwise Convs 8 channels a vector (conv.depthwise_vec, rt_cdw.h): a
# block and a tail, a tail alone, strides, dilations, asymmetric pads,
# 5x5 and 7x1 kernels, strips of the padded buffer, the chain after them
# per block (the per-channel Add's loop after the nest), batch N symbolic,
# against numpy at N = 1 and 3, 1 and 3 threads
"$COLLAGEC" compile --search none --target c "$T/dw_edges.onnx" -o "$T/de.so" ||
	fail dw-edges/compile "exit $?"
v=$(kernels "$T/de.json")
want=""
for n in dv_tail dv_strided dv_5x5 dv_7x1 dv_small dv_strips dv_strips_s2; do
	want="$want$n compile-time conv.depthwise_vec if always scratch=|"
done
if [ "$v" = "$want" ]; then ok dw-edges/static-choices; else
	fail dw-edges/static-choices "got '$v'"; fi
check_nt dw-edges "$T/de.so" de 1e-4 1e-4 xa xb xc

# pointwise Convs over small images with the channels a vector
# (conv.1x1_chan, rt_cpwc): blocks of 48 channels and tails, 49, 25, 9 and
# 63 pixels, 196 of 256 channels (255: conv.1x1_tiles), the chain after them per block, batch N symbolic, against numpy
# at N = 1 and 3, 1 and 3 threads; -chan=0 gives conv.1x1_tiles the same bits
"$COLLAGEC" compile --search none --target c "$T/pwc_edges.onnx" -o "$T/pc.so" ||
	fail pwc-edges/compile "exit $?"
v=$(kernels "$T/pc.json")
want=""
# the packed weights: 16-channel panels (50 -> 64, 100 -> 112, 33 -> 48) x K
for n in pc_block_tail:2560 pc_blocks:3840 pc_small:48 pc_3x3:7168 pc_odd:1152 pc_14:12288; do
	want="$want${n%%:*} compile-time conv.1x1_chan if always scratch=${n#*:}|"
done
want="${want}pc_14_tiles compile-time conv.1x1_tiles if always scratch=|"
if [ "$v" = "$want" ]; then ok pwc-edges/static-choices; else
	fail pwc-edges/static-choices "got '$v'"; fi
check_nt pwc-edges "$T/pc.so" pc 1e-4 1e-4 pa pb pc pd pe pf
"$COLLAGEC" compile --search none --target "c -chan=0" "$T/pwc_edges.onnx" -o "$T/pt.so" ||
	fail pwc-edges/compile-chan-0 "exit $?"
case "$(kernels "$T/pt.json")" in
*conv.1x1_chan*) fail pwc-edges/chan-0-tiles "got '$(kernels "$T/pt.json")'" ;;
*) ok pwc-edges/chan-0-tiles ;;
esac
_ins=""
for i in pa pb pc pd pe pf; do _ins="$_ins --input $i=$T/pc_${i}_3.npy"; done
# shellcheck disable=SC2086
if "$COLLAGEC" run "$T/pc.so" $_ins --threads 3 --output-dir "$T/pc_out" >/dev/null 2>&1 &&
	"$COLLAGEC" run "$T/pt.so" $_ins --output-dir "$T/pt_out" >/dev/null 2>&1 &&
	cmp -s "$T/pc_out/pc_block_tail.pb" "$T/pt_out/pc_block_tail.pb" &&
	cmp -s "$T/pc_out/pc_odd.pb" "$T/pt_out/pc_odd.pb" &&
	cmp -s "$T/pc_out/pc_14.pb" "$T/pt_out/pc_14.pb"; then
	ok pwc-edges/same-bits-as-tiles
else
	fail pwc-edges/same-bits-as-tiles "outputs differ from conv.1x1_tiles'"
fi

# GlobalAveragePool a plane a row (globalaveragepool.rows, rt_mean_rows):
# 2-D, 3-D and 1-D planes, one split between threads, and a float64 one
# (the loop form), at N = 1 and 3
"$COLLAGEC" compile --search none --target c "$T/gap_edges.onnx" -o "$T/ge.so" ||
	fail gap-edges/compile "exit $?"
v=$(kernels "$T/ge.json")
want=""
for n in ga gb gc gd; do want="${want}gap_$n compile-time globalaveragepool.rows if always scratch=|"; done
want="${want}gap_gf compile-time globalaveragepool.loops if always scratch=|"
if [ "$v" = "$want" ]; then ok gap-edges/static-choices; else
	fail gap-edges/static-choices "got '$v'"; fi
check_nt gap-edges "$T/ge.so" ge 1e-5 1e-6 ga gb gc gd gf

# MaxPool and AveragePool by rows (rt_cpool.h): every window geometry, NaN
# and inf inputs, windows wholly in the padding, 1-D, at 1 and 3 threads
# (mp_team and ap_team large enough for the team); float64 pools keep the
# loop forms
"$COLLAGEC" compile --search none --target c "$T/pool_edges.onnx" -o "$T/pe.so" ||
	fail pool-edges/compile "exit $?"
v=$(kernels "$T/pe.json")
want=""
for n in mp_s1 mp_resnet mp_s3 mp_dil mp_ceil mp_big mp_padonly mp_same mp_nan mp_1d mp_wide \
	mp_team; do
	want="$want$n compile-time maxpool.vrows if always scratch=|"
done
for n in ap_excl ap_incl ap_ceil_incl ap_dil ap_s1 ap_1d ap_team; do
	want="$want$n compile-time averagepool.vrows if always scratch=|"
done
want="${want}mpd_resnet compile-time maxpool.rows if always scratch=|mpd_ceil compile-time \
maxpool.rows if always scratch=|mpd_dil compile-time maxpool.rows if always scratch=|apd_excl \
compile-time averagepool.window if always scratch=|"
if [ "$v" = "$want" ]; then ok pool-edges/static-choices; else
	fail pool-edges/static-choices "got '$v'"; fi
args=""
for f in "$T"/pe_*.npy; do
	n=${f##*/pe_}
	args="$args --input ${n%.npy}=$f"
done
for th in 1 3; do
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$T/pe.so" $args --threads $th --check "$T/pe_exp" --rtol 1e-5 \
		--atol 1e-6 >"$T/pe.log" 2>&1; then ok "pool-edges/threads=$th-matches-numpy"; else
		fail "pool-edges/threads=$th-matches-numpy" "$(grep -v ': ok$' "$T/pe.log" | head -1)"
	fi
done

# Epilogues on rt_cgemm.h's write-back: a Conv, Gemm or MatMul followed by
# [Add residual] [Relu | Clip] is one extern call with no loop after it
# (the kernel's outermost loops: conv.micro's batch loop alone), ck's Relu
# (its Conv output read too) keeps its loop; depthwise Convs (conv.depthwise_vec)
# apply their chain per block of planes, the tiled GEMM's Convs (conv.1x1_tiles,
# conv.im2col_tiles: a nest for the whole blocks, one for the last) per block
# of pixels, all inside their nest, but for dwb's and pwb's
# broadcast Add (a loop after the nest); the fused build matches numpy
# and, bit for bit, the unfused one (-fuse=0: the chain as loops of its
# own), at 1, 2 and 3 threads, NaN included; crows splits rows at 2 and 3
"$COLLAGEC" compile --search none --target c "$T/epi_edges.onnx" -o "$T/ee.so" \
	--dump-ir "$T/ee_ir" >"$T/ee.log" 2>&1 || fail epi-edges/compile "$(head -1 "$T/ee.log")"
"$COLLAGEC" compile --search none --target "c -fuse=0" "$T/epi_edges.onnx" -o "$T/ee0.so" \
	>"$T/ee.log" 2>&1 || fail epi-edges/compile-unfused "$(head -1 "$T/ee.log")"
v=$(kernels "$T/ee.json")
want=""
for n in cr cc car ca cac ck; do want="${want}$n compile-time conv.micro if always scratch=16128|"; done
want="${want}gr compile-time gemm.micro if always scratch=3360|mac compile-time matmul.micro if \
always scratch=3360|"
for n in dwc dwar dwb; do want="${want}$n compile-time conv.depthwise_vec if always scratch=|"; done
want="${want}pwc compile-time conv.1x1_tiles if always scratch=|imar compile-time \
conv.im2col_tiles if always scratch=14256|pwb compile-time conv.1x1_tiles if always scratch=|crows compile-time conv.micro if \
always scratch=16128|gvar compile-time matmul.gemv if always scratch=3360|gvc compile-time \
gemm.micro if always scratch=3360|"
if [ "$v" = "$want" ]; then ok epi-edges/static-choices; else
	fail epi-edges/static-choices "got '$v'"; fi
# per kernel of the fused dump: NAME:LOOPS (its outermost loops)
v=$(awk '/^kernel /{if (k) printf "%s:%d|", k, n; k = $2; sub(/\(.*/, "", k); n = 0}
	/^\tfor /{n++} END {if (k) printf "%s:%d|", k, n}' "$T/ee_ir/10-lower.3-fuse.tir")
want="k0_0_Conv_fused:1|k1_0_Conv_fused:1|k2_0_Conv_fused:1|k3_0_Conv_fused:1|k4_0_Conv_fused:1|\
k5_0_Conv_fused:2|k6_0_Gemm_fused:0|k7_0_MatMul_fused:0|k8_0_Conv_fused:1|k9_0_Conv_fused:1|\
k10_0_Conv_fused:2|k11_0_Conv_fused:2|k12_0_Conv_fused:1|k13_0_Conv_fused:3|k14_0_Conv_fused:1|\
k15_0_MatMul_fused:0|k16_0_Gemm_fused:0|"
if [ "$v" = "$want" ]; then ok epi-edges/chains-in-the-write-back; else
	fail epi-edges/chains-in-the-write-back "got '$v'"; fi
args=""
for f in "$T"/ee_*.npy; do
	n=${f##*/ee_}
	args="$args --input ${n%.npy}=$f"
done
rm -rf "$T/ee0_out"
# shellcheck disable=SC2086
"$COLLAGEC" run "$T/ee0.so" $args --output-dir "$T/ee0_out" >"$T/ee.log" 2>&1 ||
	fail epi-edges/run-unfused "$(head -1 "$T/ee.log")"
for th in 1 2 3; do
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$T/ee.so" $args --threads $th --check "$T/ee_exp" --rtol 1e-4 \
		--atol 1e-4 >"$T/ee.log" 2>&1; then ok "epi-edges/threads=$th-matches-numpy"; else
		fail "epi-edges/threads=$th-matches-numpy" "$(grep -v ': ok$' "$T/ee.log" | head -1)"
	fi
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$T/ee.so" $args --threads $th --check "$T/ee0_out" --rtol 0 \
		--atol 0 >"$T/ee.log" 2>&1; then ok "epi-edges/threads=$th-equals-unfused"; else
		fail "epi-edges/threads=$th-equals-unfused" "$(grep -v ': ok$' "$T/ee.log" | head -1)"
	fi
done

# Softmax and LogSoftmax by rows (rt_crows.h): masks, NaN and -inf rows, a
# tail shorter than a vector, opset 11's flattened rows, at 1 and 3 threads
"$COLLAGEC" compile --search none --target c "$T/softmax_edges.onnx" -o "$T/se.so" ||
	fail softmax-edges/compile "exit $?"
"$COLLAGEC" compile --search none --target c "$T/softmax_v11.onnx" -o "$T/se11.so" ||
	fail softmax-edges/compile-v11 "exit $?"
v=$(kernels "$T/se.json")$(kernels "$T/se11.json")
want="sm_last compile-time softmax.rows if always scratch=|lsm_last compile-time softmax.rows if \
always scratch=|sm_mid compile-time softmax.loops if always scratch=|sm_short compile-time \
softmax.rows if always scratch=|sm_v11 compile-time softmax.rows if always scratch=|lsm_v11 \
compile-time softmax.rows if always scratch=|"
if [ "$v" = "$want" ]; then ok softmax-edges/static-choices; else
	fail softmax-edges/static-choices "got '$v'"; fi
for th in 1 3; do
	if "$COLLAGEC" run "$T/se.so" --input "x=$T/se_x.npy" --input "x5=$T/se_x5.npy" \
		--threads $th --check "$T/se_exp" --rtol 1e-5 --atol 1e-6 >"$T/se.log" 2>&1 &&
		"$COLLAGEC" run "$T/se11.so" --input "x=$T/se_x.npy" --threads $th \
		--check "$T/se11_exp" --rtol 1e-5 --atol 1e-6 >>"$T/se.log" 2>&1; then
		ok "softmax-edges/threads=$th-matches-numpy"
	else
		fail "softmax-edges/threads=$th-matches-numpy" "$(grep -v ': ok$' "$T/se.log" | head -1)"
	fi
done

# Transpose moving the last axis in squares (transpose.blocks): edges of
# the squares, a parallel region of calls, a split matrix; one keeping the
# last axis stays loops. Exact, at 1 and 3 threads and at each ISA level
"$COLLAGEC" compile --search none --target c "$T/transpose_edges.onnx" -o "$T/tr.so" ||
	fail transpose-edges/compile "exit $?"
v=$(kernels "$T/tr.json")
want="tr_head compile-time transpose.blocks if always scratch=|tr_rev compile-time transpose.blocks \
if always scratch=|tr_mat compile-time transpose.blocks if always scratch=|tr_big compile-time \
transpose.blocks if always scratch=|tr_mid compile-time transpose.loops if always scratch=|"
if [ "$v" = "$want" ]; then ok transpose-edges/static-choices; else
	fail transpose-edges/static-choices "got '$v'"; fi
for th in 1 3; do
	if "$COLLAGEC" run "$T/tr.so" --input "x=$T/tr_x.npy" --input "m=$T/tr_m.npy" \
		--input "b=$T/tr_b.npy" --threads $th --check "$T/tr_exp" --rtol 0 --atol 0 \
		>"$T/tr.log" 2>&1; then
		ok "transpose-edges/threads=$th-equals-numpy"
	else
		fail "transpose-edges/threads=$th-equals-numpy" "$(grep -v ': ok$' "$T/tr.log" | head -1)"
	fi
done
# the squares of every ISA level (16 lanes, 8, and element by element)
for lv in $levels; do
	if "$COLLAGEC" compile --search none --target c --cpu $lv "$T/transpose_edges.onnx" \
		-o "$T/tr-$lv.so" >"$T/tr.log" 2>&1 &&
		"$COLLAGEC" run "$T/tr-$lv.so" --input "x=$T/tr_x.npy" --input "m=$T/tr_m.npy" \
		--input "b=$T/tr_b.npy" --threads 3 --check "$T/tr_exp" --rtol 0 --atol 0 \
		>"$T/tr.log" 2>&1; then
		ok "transpose-edges/$lv-equals-numpy"
	else
		fail "transpose-edges/$lv-equals-numpy" "$(grep -v ': ok$' "$T/tr.log" | head -1)"
	fi
done

# LayerNormalization by rows (rt_crows.h): a tail shorter than a vector, a
# NaN row and a constant one, two normalised axes with Mean and InvStdDev,
# a team of threads; a scale broadcast inside the normalised axes keeps the
# loop form. At 1 and 3 threads
"$COLLAGEC" compile --search none --target c "$T/lnorm_edges.onnx" -o "$T/ln.so" ||
	fail lnorm-edges/compile "exit $?"
v=$(kernels "$T/ln.json")
want="ln_last compile-time layernorm.rows if always scratch=|ln_2ax compile-time layernorm.rows \
if always scratch=|ln_big compile-time layernorm.rows if always scratch=|ln_bcast compile-time \
layernorm.loops if always scratch=|"
if [ "$v" = "$want" ]; then ok lnorm-edges/static-choices; else
	fail lnorm-edges/static-choices "got '$v'"; fi
for th in 1 3; do
	if "$COLLAGEC" run "$T/ln.so" --input "x=$T/ln_x.npy" --input "xb=$T/ln_xb.npy" \
		--threads $th --check "$T/ln_exp" --rtol 1e-4 --atol 1e-5 >"$T/ln.log" 2>&1; then
		ok "lnorm-edges/threads=$th-matches-numpy"
	else
		fail "lnorm-edges/threads=$th-matches-numpy" "$(grep -v ': ok$' "$T/ln.log" | head -1)"
	fi
done

# RMSNormalization by rows (rt_crows.h): a tail shorter than a vector, a NaN
# row and a zero one, two normalised axes, a team of threads; a scale
# broadcast inside the normalised axes keeps the loop form. At 1 and 3 threads
"$COLLAGEC" compile --search none --target c "$T/rmsnorm_edges.onnx" -o "$T/rms.so" ||
	fail rmsnorm-edges/compile "exit $?"
v=$(kernels "$T/rms.json")
want="rms_last compile-time rmsnorm.rows if always scratch=|rms_2ax compile-time rmsnorm.rows \
if always scratch=|rms_big compile-time rmsnorm.rows if always scratch=|rms_bcast compile-time \
rmsnorm.loops if always scratch=|"
if [ "$v" = "$want" ]; then ok rmsnorm-edges/static-choices; else
	fail rmsnorm-edges/static-choices "got '$v'"; fi
for th in 1 3; do
	if "$COLLAGEC" run "$T/rms.so" --input "x=$T/rms_x.npy" --input "xb=$T/rms_xb.npy" \
		--threads $th --check "$T/rms_exp" --rtol 1e-5 --atol 1e-6 >"$T/rms.log" 2>&1; then
		ok "rmsnorm-edges/threads=$th-matches-numpy"
	else
		fail "rmsnorm-edges/threads=$th-matches-numpy" "$(grep -v ': ok$' "$T/rms.log" | head -1)"
	fi
done

# 3x3 stride-1 Convs by Winograd's F(4x4, 3x3) (rt_cwino.h): one panel,
# edge tiles and asymmetric pads on 2 images, two K blocks, many panels,
# no padding, SAME_UPPER, fused Relu, Clip and residual Add + Relu; a Conv
# of 4 tiles stays on conv.micro. Against numpy at 1, 2 and 3 threads (the
# one-panel Convs split their steps over the team), bit for bit across
# thread counts; a symbolic batch; and -winograd=0 turns it off
"$COLLAGEC" compile --search none --target c "$T/wino_edges.onnx" -o "$T/we.so" ||
	fail wino-edges/compile "exit $?"
v=$(kernels "$T/we.json")
want="wb compile-time conv.winograd if always scratch=9344;19008|wodd compile-time conv.winograd \
if always scratch=14516;47232|wk compile-time conv.winograd if always scratch=261600;187200|wbig \
compile-time conv.winograd if always scratch=9344;304128|wnopad compile-time conv.winograd if \
always scratch=37120;37440|wsame compile-time conv.winograd if always scratch=9344;38016|wr \
compile-time conv.winograd if always scratch=18560;56448|wc compile-time conv.winograd if always \
scratch=15744;49536|war compile-time conv.winograd if always scratch=9344;38016|wfew \
compile-time conv.micro if always scratch=9216|"
if [ "$v" = "$want" ]; then ok wino-edges/static-choices; else
	fail wino-edges/static-choices "got '$v'"; fi
wargs=""
for f in "$T"/we_*.npy; do
	n=${f##*/we_}
	wargs="$wargs --input ${n%.npy}=$f"
done
for th in 1 2 3; do
	rm -rf "$T/we_out$th"
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$T/we.so" $wargs --threads $th --check "$T/we_exp" --rtol 1e-4 \
		--atol 1e-4 --output-dir "$T/we_out$th" >"$T/we.log" 2>&1; then
		ok "wino-edges/threads=$th-matches-numpy"
	else
		fail "wino-edges/threads=$th-matches-numpy" "$(grep -v ': ok$' "$T/we.log" | head -1)"
	fi
done
same=yes
for f in "$T"/we_out1/*; do
	for th in 2 3; do cmp -s "$f" "$T/we_out$th/${f##*/}" || same="no: ${f##*/} at $th"; done
done
if [ "$same" = yes ]; then ok wino-edges/threads-bit-identical; else
	fail wino-edges/threads-bit-identical "$same"; fi
"$COLLAGEC" compile --search none --target c "$T/wino_sym.onnx" -o "$T/ws.so" ||
	fail wino-sym/compile "exit $?"
v=$(kernels "$T/ws.json")
if [ "$v" = "wsym compile-time conv.winograd if always scratch=12376;43776|" ]; then
	ok wino-sym/static-choice; else fail wino-sym/static-choice "got '$v'"; fi
for n in 1 3; do
	check "wino-sym/N=$n" "$T/ws.so" "$T/ws_exp_$n" "x=$T/ws_x_$n.npy"
done
"$COLLAGEC" compile --search none --target "c -winograd=0" "$T/wino_edges.onnx" \
	-o "$T/we0.so" || fail wino-edges/compile-off "exit $?"
v=$(kernels "$T/we0.json" | tr '|' '\n' | grep -c winograd)
if [ "$v" = 0 ]; then ok wino-edges/option-off; else
	fail wino-edges/option-off "$v kernels still take conv.winograd"; fi
# shellcheck disable=SC2086
if "$COLLAGEC" run "$T/we0.so" $wargs --check "$T/we_exp" --rtol 1e-4 --atol 1e-4 \
	>"$T/we.log" 2>&1; then ok wino-edges/off-matches-numpy; else
	fail wino-edges/off-matches-numpy "$(grep -v ': ok$' "$T/we.log" | head -1)"; fi
# the same without AVX (x86-64-v2: the transforms' scalar gather and stores)
"$COLLAGEC" compile --search none --target c --cpu x86-64-v2 "$T/wino_edges.onnx" \
	-o "$T/wev2.so" || fail wino-edges/compile-v2 "exit $?"
for th in 1 3; do
	# shellcheck disable=SC2086
	if "$COLLAGEC" run "$T/wev2.so" $wargs --threads $th --check "$T/we_exp" --rtol 1e-4 \
		--atol 1e-4 >"$T/we.log" 2>&1; then ok "wino-edges/x86-64-v2-threads=$th-matches-numpy"
	else
		fail "wino-edges/x86-64-v2-threads=$th-matches-numpy" \
			"$(grep -v ': ok$' "$T/we.log" | head -1)"
	fi
done
t_exit
