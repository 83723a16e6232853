#!/bin/sh
# ctest `realmodels`: fetch the corpus (cached downloads; exit 77 = skipped when the registry is
# unreachable and a model is not cached), then run_corpus.py against expected.json.
#   ctest.sh PYTHON_WITH_ONNXRUNTIME KILN OUT_DIR
set -u
here=$(dirname "$0")
"$1" -c 'import onnxruntime' 2>/dev/null || { echo "realmodels: skipped: no Python with onnxruntime ($1; tools/setup-debian.sh makes one)"; exit 77; }
"$1" "$here/fetch.py" --out "$3" --skip-exit-code 77 || exit $?
exec "$1" "$here/run_corpus.py" --dir "$3" --kiln "$2" --expect "$here/expected.json" --json "$3/results.json"
