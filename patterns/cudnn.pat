# cudnn.pat - the partition rules of the cudnn target (see PATTERNS in
# collagec(1)). A 2-D Conv as one cuDNN call, with what cuDNN's fused
# convolution (cudnnConvolutionBiasActivationForward) takes after it: a
# bias per channel (the Conv's own, or an Add of a constant [M,1,1]), a
# residual Add of a tensor of the output's shape, and a Relu or a Clip to
# [0, c] (cuDNN's clipped Relu: MobileNet's Relu6). The target's
# check decides whether a match fits (float32, symmetric pads, a bias
# before any residual or Relu).
target cudnn

let conv      = Conv(*, *, *?)
let conv_bias = Add($conv, const) | Add(const, $conv)
let cb        = $conv_bias | $conv

conv_bias_add_relu = Relu(Add($cb, *) | Add(*, $cb)) | Clip(Add($cb, *) | Add(*, $cb), *?, *?)
conv_bias_add      = Add($conv_bias, *) | Add(*, $conv_bias)
conv_add           = Add($conv, *) | Add(*, $conv)
conv_bias_relu     = Relu($cb) | Clip($cb, *?, *?)
conv_bias          = $conv_bias
conv               = $conv
