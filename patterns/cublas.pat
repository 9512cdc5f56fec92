# cublas.pat - the partition rules of the cublas target (see PATTERNS in
# collagec(1)). Each rule places a MatMul or Gemm on cublas as one
# cuBLASLt matmul, with what follows it that cuBLASLt fuses as its
# epilogue: a bias over the output's columns (a constant [N]) and a Relu.
# The target's check decides whether a match fits (float32, 2-D or
# batched alike, a Gemm's C only as such a bias).
target cublas

let mm      = MatMul(*, *) | Gemm(*, *, *?)
let mm_bias = Add($mm, const) | Add(const, $mm)

matmul_bias_relu = Relu($mm_bias)
matmul_relu      = Relu($mm)
matmul_bias      = $mm_bias
matmul           = $mm
