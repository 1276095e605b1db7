#!/bin/sh
# tests/suites/onnx_seq.sh — the ONNX importer's sequence and index ops
# (RNN, GRU, LSTM, GatherND, ScatterND, ScatterElements, ReverseSequence,
# BatchNormalization in training mode) in the variants ONNX's suite lacks,
# against NumPy (tests/onnx/seq_check.py), run as oracle.sh runs its table.
# POSIX sh.
ORACLE_SCRIPT=../onnx/seq_check.py exec sh "$(dirname "$0")/oracle.sh"
