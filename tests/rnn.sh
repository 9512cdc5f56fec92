#!/bin/sh
# rnn.sh - node tests of RNN, GRU and LSTM (testdata/gen_rnn_tests.py) for
# what libonnx-testdata lacks: every good model compiles, runs and matches
# the numpy outputs of its generator (collagec conformance, rtol 1e-4, atol
# 1e-5); every bad model is refused with exit status 1 and the expected message.
SUITE=rnn
. "$(dirname "$0")/nodetests.sh"

nt_generate testdata/gen_rnn_tests.py
nt_conformance 1e-4 1e-5 "$T/good" | sort
nt_bad
