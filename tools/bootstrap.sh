#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install dependencies, build kiln, generate
# ResNet-18 and plan it. Re-running is cheap (apt skips, ccache + ninja rebuild nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
bash tools/build.sh
/usr/bin/python3 models/make_zoo.py --only resnet18 --out build/models --skip-existing
build/bin/kiln plan build/models/resnet18.onnx
