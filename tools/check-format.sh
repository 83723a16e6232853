#!/bin/sh
# The C and C++ sources as .clang-format says (ctest `format`; `tools/check-format.sh --fix`
# rewrites them). Exit 77 (skipped) without clang-format or outside a git checkout.
cd "$(dirname "$0")/.." || exit 2
command -v clang-format >/dev/null || { echo "format: skipped: no clang-format"; exit 77; }
files=$(git ls-files '*.cpp' '*.h' '*.c' 2>/dev/null) || { echo "format: skipped: not a git checkout"; exit 77; }
if [ "${1:-}" = --fix ]; then
  echo "$files" | xargs clang-format -i
  exit 0
fi
# One pass: clang-format names each line to change on stderr and fails (xargs: 123).
if ! report=$(echo "$files" | xargs clang-format --dry-run --Werror 2>&1); then
  echo "$report" | head -40
  echo "format: run tools/check-format.sh --fix"
  exit 1
fi
echo "format: $(echo "$files" | wc -l) files as .clang-format says"
