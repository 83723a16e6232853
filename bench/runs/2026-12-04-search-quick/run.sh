#!/usr/bin/env bash
# Session 2026-12-04c, call 1: quick (node tests, kernel cases, tiny/case models over 12 routes)
# at de6b201 -- runtime.gemm_search=auto on fp32 -- then MobileNetV2 b32 fp32 with/without the search.
set -u
export KILN_BIN=.carry/bin KILN_CASES=.carry/cases KILN_ONNX_DATA=$PWD/.carry/onnxnode
t0=$(date +%s)
OUT=$OUT/quick bash bench/gpu_suite.sh quick
echo "quick $(( $(date +%s) - t0 )) s"
left=$(( 585 - ($(date +%s) - t0) ))
KILN_ZOO_MODELS=mobilenetv2_b32 KILN_ROUTES='|runtime.gemm_search=off' OUT=$OUT/zoo timeout $left bash bench/gpu_suite.sh zoo
echo "all $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz quick/logs zoo/logs && rm -rf quick/logs zoo/logs
