# dnnl.pat - the partition rules of the dnnl target (see PATTERNS in
# collagec(1)). Each rule places what it matches on dnnl as one partition: an
# anchor that oneDNN runs as a primitive (Conv, MatMul, Gemm), optionally
# with the elementwise ops after it - a bias, a residual add, an activation -
# fused as the primitive's post-ops. The target's check still decides whether
# a match fits (float32, shapes it handles, every epilogue op a post-op: an
# eltwise activation, or an Add of a tensor of the output's shape, a scalar,
# a per-channel or last-dim vector). At each node, from the last to the
# first, the rules are tried in order: longer ones come first. The last
# rules take one op alone (see the end).
target dnnl

let mm   = MatMul(*, *) | Gemm(*, *, *?)
let conv = Conv(*, *, *?)
let act  = {Relu|LeakyRelu|Sigmoid|Tanh|HardSigmoid|HardSwish|Elu|Exp|Abs|Gelu}

# An add of two convs' outputs (Add(block input, last conv) in MobileNetV2,
# Add(last conv, block input) in EfficientNet, where the block input is also
# the next conv's x) fuses the conv read only there: the matcher tries the
# next alternative when the first would read a value used outside the match.

# conv + bias + residual add + activation: the end of a ResNet block
let conv_bias = Add($conv, const) | Add(const, $conv)
conv_bias_add_act = $act(Add(*, $conv_bias) | Add($conv_bias, *)) |
		    Clip(Add(*, $conv_bias) | Add($conv_bias, *), *?, *?)
conv_bias_add     = Add(*, $conv_bias) | Add($conv_bias, *)

# anchor + bias (or residual) + activation
let conv_add = Add(*, $conv) | Add($conv, *)
let mm_add   = Add(*, $mm) | Add($mm, *)
conv_add_act   = $act($conv_add) | Clip($conv_add, *?, *?)
matmul_add_act = $act($mm_add) | Clip($mm_add, *?, *?)

# anchor (+ bias or residual) + SiLU, x * sigmoid(x) as exporters write
# Swish: oneDNN's swish post-op
conv_add_silu   = Mul($conv_add, Sigmoid($conv_add)) | Mul(Sigmoid($conv_add), $conv_add)
matmul_add_silu = Mul($mm_add, Sigmoid($mm_add)) | Mul(Sigmoid($mm_add), $mm_add)
conv_silu   = Mul($conv, Sigmoid($conv)) | Mul(Sigmoid($conv), $conv)
matmul_silu = Mul($mm, Sigmoid($mm)) | Mul(Sigmoid($mm), $mm)

# the same with HardSigmoid (alpha 1/6, beta 0.5: HardSwish as torch
# exports it before opset 14, MobileNetV3's): oneDNN's hardswish post-op
conv_add_hswish   = Mul($conv_add, HardSigmoid($conv_add)) | Mul(HardSigmoid($conv_add), $conv_add)
matmul_add_hswish = Mul($mm_add, HardSigmoid($mm_add)) | Mul(HardSigmoid($mm_add), $mm_add)
conv_hswish   = Mul($conv, HardSigmoid($conv)) | Mul(HardSigmoid($conv), $conv)
matmul_hswish = Mul($mm, HardSigmoid($mm)) | Mul(HardSigmoid($mm), $mm)

# anchor + activation
conv_act   = $act($conv) | Clip($conv, *?, *?)
matmul_act = $act($mm) | Clip($mm, *?, *?)

# anchor + bias (or residual)
conv_add   = $conv_add
matmul_add = $mm_add

# the anchors alone
conv   = $conv
matmul = $mm

# a QLinearConv (the qdq pass's integer convolution) on oneDNN's int8 one,
# with its requantization as output scales and zero points
qconv  = QLinearConv(*, *, *?, *, *, *?, *, *?, *?)
# a MatMulInteger (quantize_dynamic's) on oneDNN's int8 matmul, int32 out
qmatmul = MatMulInteger(*, *, *?, *?)
# a QLinearMatMul (the qdq pass's integer MatMul or Gemm) on the same, with
# its requantization as output scales and zero points
qlmatmul = QLinearMatMul(*, *, *, *, *, *, *, *, *?)

# squeeze-and-excitation (EfficientNet's, MobileNetV3's) as one kernel of
# rt_dnnl.h's: x's global average pool, a 1x1 Conv, Relu, SiLU or HardSwish,
# a 1x1 Conv, a Sigmoid or HardSigmoid gate, and the Mul of the gate by x
# (or by the next 1x1 Conv's weights, where pass_fold_scale moved it there);
# the check says which Muls it takes
let se_sq   = Conv(GlobalAveragePool(*), const, const?)
let se_mid  = Relu($se_sq) | HardSwish($se_sq) |
	      Mul($se_sq, Sigmoid($se_sq)) | Mul(Sigmoid($se_sq), $se_sq)
let se_gate = {Sigmoid|HardSigmoid}(Conv($se_mid, const, const?))
se = Mul(*, $se_gate) | Mul($se_gate, *)

# the ops oneDNN runs alone, one primitive each (pooling, normalisation,
# softmax, eltwise); after the anchors' rules, so that an activation after
# an anchor stays fused. Not Log: oneDNN's is off by 1.4e-6 at log(1).
let elt = {Relu|LeakyRelu|Sigmoid|Tanh|HardSigmoid|HardSwish|Elu|Exp|Sqrt|Abs|Round|Gelu}
deconv  = ConvTranspose(*, *, *?)
pool    = MaxPool(*) | AveragePool(*) | GlobalAveragePool(*) | GlobalMaxPool(*)
bnorm   = BatchNormalization(*, *, *, *, *)
lnorm   = LayerNormalization(*, *, *?)
softmax = Softmax(*) | LogSoftmax(*)
lrn     = LRN(*)
eltwise = $elt(*) | Clip(*, *?, *?)
# x times one value per channel (a squeeze-and-excitation block's end),
# blocked like the convolutions around it
scale   = Mul(*, *)
