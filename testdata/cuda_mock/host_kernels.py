#!/usr/bin/env python3
"""host_kernels.py KERNELS_CU OUT_CPP: a model's kernels.cu (the cuda
target's, kept with --keep-temps) as host C++ for mock_cuda.c: the file
itself (compiled with -include host_cuda.h), then per kernel a launcher
NAME__launch(params, grid, block) that runs it once per block and thread
with the arguments cuLaunchKernel was given."""
import re
import sys

src = open(sys.argv[1]).read()
out = [src, "\n/* ---- launchers (host_kernels.py) ---- */\n"]
for m in re.finditer(r'extern "C" __global__ void (\w+)\(([^)]*)\)', src):
    name, params = m.group(1), m.group(2)
    args = []
    for i, p in enumerate(x.strip() for x in params.split(",") if x.strip()):
        # "const float *__restrict__ b0" or "const int64_t sym_3"
        ty = re.sub(r"\b\w+$", "", p).replace("__restrict__", "").strip()
        if ty.startswith("const ") and "*" not in ty:
            ty = ty[len("const "):]
        args.append("*(%s *)p[%d]" % (ty, i))
    out.append('extern "C" void %s__launch(void **p, unsigned grid, unsigned block)\n{\n'
               "\tgridDim.x = grid;\n\tblockDim.x = block;\n"
               "\tfor (unsigned b = 0; b < grid; b++)\n"
               "\t\tfor (unsigned t = 0; t < block; t++) {\n"
               "\t\t\tblockIdx.x = b;\n\t\t\tthreadIdx.x = t;\n"
               "\t\t\t%s(%s);\n\t\t}\n}\n" % (name, name, ", ".join(args)))
open(sys.argv[2], "w").write("".join(out))
