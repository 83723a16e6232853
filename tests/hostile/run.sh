#!/usr/bin/env bash
# Hostile and careless input (cases from tests/hostile/make_cases.py): each must end as a clean
# error — the exit code and the first line of stderr are checked — or, where a case is benign,
# succeed; nothing may crash, hang (60 s) or grow past 4 GiB of address space.
#   run.sh KILN CASES_DIR [REPORT.tsv]
# REPORT gets one line per case: class, case, exit code, first line (control bytes shown as ^X).
set -u
kiln=$1
cases=$2
report=${3:-/dev/null}
: >"$report"
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/xdg-cache XDG_DATA_HOME=$tmp/xdg-data  # never the user's caches

# run ARGS...: kiln ARGS under the limits (KILN_CASE_TIMEOUT seconds, KILN_CASE_VMEM KiB of address
# space); sets $rc and $first (the first line of stderr, else of stdout).
run() {
  (ulimit -v "${KILN_CASE_VMEM:-4194304}"; exec timeout -k 5 "${KILN_CASE_TIMEOUT:-60}" "$kiln" "$@") >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  first=$(head -n 1 "$tmp/err")
  [ -n "$first" ] || first=$(head -n 1 "$tmp/out")
}

record() {  # CLASS CASE OK
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$rc" "$(printf '%s' "$first" | cat -v | cut -c1-160)" >>"$report"
  if [ "$3" = 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

# expect CLASS CASE RC PATTERN -- ARGS...: exit code RC and the first line of stderr (stdout when
# stderr is empty) matching the extended regex PATTERN.
expect() {
  local class=$1 name=$2 want=$3 pattern=$4
  shift 5
  run "$@"
  if [[ $rc -eq $want ]] && grep -Eq -- "$pattern" <<<"$first"; then
    record "$class" "$name" 1
  else
    record "$class" "$name" 0
    local args="$*"
    echo "FAIL [$class] $name: kiln ${args:0:200} → exit $rc (want $want)"
    echo "    first line: $(printf '%s' "$first" | cat -v | cut -c1-300)"
    echo "    (wanted /$pattern/)"
  fi
}

# check CLASS CASE DESCRIPTION COMMAND...: a condition after a case (a file unchanged, ...).
check() {
  local class=$1 name=$2 what=$3
  shift 3
  if "$@" >/dev/null 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL [$class] $name: $what"
  fi
}

C=$cases
M=$C/outputs/mlp.onnxtxt  # models/tiny/mlp.onnxtxt; never an output target (those use copies)

# ---- A. A model's files stay inside its folder -------------------------------------------------
expect external ext_abs 2 "ext_abs/model.onnx: initializer 'w': external data '/etc/hostname': the location must be a relative path" -- plan "$C/ext_abs/model.onnx"
expect external ext_dotdot 2 "external data '../outside/secret.bin': the location must be a relative path inside the model's folder, without '..'" -- plan "$C/ext_dotdot/model.onnx"
expect external ext_link_file 2 "external data 'w.bin': a symbolic link on the way leads out of the model's folder" -- plan "$C/ext_link_file/model.onnx"
expect external ext_link_relative 2 "external data 'w.bin': a symbolic link on the way leads out of the model's folder" -- eval "$C/ext_link_relative/model.onnx" --inputs "$C/ext_inputs.npz"
expect external ext_link_dir 2 "external data 'sub/secret.bin': a symbolic link on the way leads out" -- plan "$C/ext_link_dir/model.onnx"
expect external ext_link_root 2 "external data 'root/etc/hostname': a symbolic link on the way leads out" -- plan "$C/ext_link_root/model.onnx"
expect external ext_fifo 2 "external data 'w.bin' is a FIFO, not a regular file" -- plan "$C/ext_fifo/model.onnx"
expect external ext_dir 2 "external data 'w.bin' is a directory, not a regular file" -- plan "$C/ext_dir/model.onnx"
expect external ext_offset_overflow 2 "external data 'w.bin' has 24 bytes, less than the offset 9223372036854775807" -- plan "$C/ext_offset_overflow/model.onnx"
expect external ext_length_huge 2 "external data 'w.bin': length 4611686018427387904 does not match the 24 bytes" -- plan "$C/ext_length_huge/model.onnx"
expect external ext_offset_past_end 2 "external data 'w.bin' has 24 bytes, less than the offset 1000" -- plan "$C/ext_offset_past_end/model.onnx"
expect external ext_inside_link 0 "^output " -- eval "$C/ext_inside_link/model.onnx" --inputs "$C/ext_inputs.npz"
expect external ext_allow_outside 0 "^output " -- eval "$C/ext_link_relative/model.onnx" --inputs "$C/ext_inputs.npz" --allow-external-outside
expect external ext_allow_fifo 2 "external data 'w.bin' is a FIFO, not a regular file" -- plan "$C/ext_fifo/model.onnx" --allow-external-outside

# ---- B. Outputs never clobber inputs or devices ------------------------------------------------
# Each case on a fresh copy (hard link, symbolic link and FIFO included): a kiln that clobbers
# must not break the cases after it.
O=$tmp/o
fresh() { rm -rf "$O" && cp -a "$C/outputs" "$O"; }
before=$(sha256sum <"$C/outputs/mlp.onnxtxt")
fresh
expect outputs compile_onto_model 2 "-o: will not write '.*mlp.onnxtxt': it is the input '.*mlp.onnxtxt' of this command" -- compile "$O/mlp.onnxtxt" -o "$O/mlp.onnxtxt"
fresh
expect outputs compile_onto_hardlink 2 "-o: will not write '.*hardlink.onnxtxt': it is the input '.*mlp.onnxtxt' \(the same file\)" -- compile "$O/mlp.onnxtxt" -o "$O/hardlink.onnxtxt"
fresh
expect outputs compile_onto_symlink 2 "-o: will not write '.*symlink.onnxtxt': it is the input" -- compile "$O/mlp.onnxtxt" -o "$O/symlink.onnxtxt"
# A character device as the output: as root a private one (a kiln that replaced /dev/null would
# break the machine: an older kiln did), else /dev/null, which a non-root rename cannot replace.
chardev=/dev/null
if [ "$(id -u)" = 0 ] && mknod "$tmp/null" c 1 3 2>/dev/null; then chardev=$tmp/null; fi
fresh
expect outputs compile_onto_chardev 2 "-o: will not write '.*null': it is a character device \(kiln replaces regular files only\)" -- compile "$O/mlp.onnxtxt" -o "$chardev"
check outputs compile_onto_chardev "the device is still a device" test -c "$chardev"
fresh
expect outputs compile_onto_fifo 2 "-o: will not write '.*fifo': it is a FIFO" -- compile "$O/mlp.onnxtxt" -o "$O/fifo"
fresh
expect outputs compile_onto_folder 2 "-o: will not write '.*folder': it is a directory" -- compile "$O/mlp.onnxtxt" -o "$O/folder"
fresh
expect outputs calibrate_onto_data 2 "-o: will not write '.*x.npz': it is the input" -- calibrate "$O/mlp.onnxtxt" --data "$O/x.npz" -o "$O/x.npz"
fresh
expect outputs calibrate_onto_model 2 "-o: will not write '.*mlp.onnxtxt': it is the input" -- calibrate "$O/mlp.onnxtxt" --data "$O/x.npz" -o "$O/mlp.onnxtxt"
fresh
expect outputs eval_onto_inputs 2 "--outputs: will not write '.*x.npz': it is the input" -- eval "$O/mlp.onnxtxt" --inputs "$O/x.npz" --outputs "$O/x.npz"
fresh
expect outputs run_onto_inputs 2 "--outputs: will not write '.*x.npz': it is the input" -- run "$C/engines/valid.kiln" --inputs "$O/x.npz" --outputs "$O/x.npz"
fresh
expect outputs tune_onto_model 2 "-o: will not write '.*mlp.onnxtxt': it is the input" -- tune "$O/mlp.onnxtxt" --route 'precision=.*' --dry-run -o "$O/mlp.onnxtxt"
run cache import "$C/files/rows.jsonl" --cache "$tmp/c.db"
expect outputs export_onto_cache 2 "cache export: will not write '.*c.db': it is the input" -- cache export "$tmp/c.db" --cache "$tmp/c.db"
check outputs export_onto_cache "the cache still holds its rows" bash -c "'$kiln' cache list --cache '$tmp/c.db' | grep -q '50 measurements'"
fresh
"$kiln" compile "$O/mlp.onnxtxt" -o "$O/mlp.onnxtxt" >/dev/null 2>&1  # (refused: the model stays)
check outputs inputs_unchanged "the model is unchanged" bash -c "[ \"\$(sha256sum <'$O/mlp.onnxtxt')\" = '$before' ]"
check outputs no_temporaries "no temporary file is left" bash -c "! ls '$O' | grep -q tmp"
fresh
(ulimit -v 4194304; timeout 60 "$kiln" inspect --json "$C/engines/valid.kiln" >/dev/full 2>"$tmp/err"); rc=$?; first=$(head -n1 "$tmp/err")
record outputs stdout_full_inspect $([[ $rc -eq 2 && $first == *"No space left on device"* ]] && echo 1 || echo 0)
(ulimit -v 4194304; timeout 60 "$kiln" plan "$O/mlp.onnxtxt" >/dev/full 2>"$tmp/err"); rc=$?; first=$(head -n1 "$tmp/err")
record outputs stdout_full_plan $([[ $rc -eq 2 && $first == *"No space left on device"* ]] && echo 1 || echo 0)
(ulimit -v 4194304; timeout 60 "$kiln" import "$O/mlp.onnxtxt" >/dev/full 2>"$tmp/err"); rc=$?; first=$(head -n1 "$tmp/err")
record outputs stdout_full_import $([[ $rc -eq 2 && $first == *"No space left on device"* ]] && echo 1 || echo 0)

# ---- C. npz ------------------------------------------------------------------------------------
N=$C/npz
# (1 GiB of address space: inflating any of these would fail as out of memory, not as refused)
KILN_CASE_VMEM=1048576 expect npz bomb_declared 2 "bomb_declared.npz: entry 'x.npy': inflates to 3221225472 bytes, more than the limit of 1073741824" -- eval "$M" --inputs "$N/bomb_declared.npz"
KILN_CASE_VMEM=1048576 expect npz bomb_real 2 "bomb_real.npz: entry 'x.npy': inflates to 1100000000 bytes, more than the limit" -- eval "$M" --inputs "$N/bomb_real.npz"
KILN_CASE_VMEM=1048576 expect npz bomb_total 2 "bomb_total.npz: compressed entries inflate to more than the limit of 4294967296 bytes in all" -- eval "$M" --inputs "$N/bomb_total.npz"
expect npz zip_slip_name 0 "^output \.\./\.\./\.\./\.\./tmp/kiln-zip-slip" -- eval "$N/slip.onnx" --inputs "$N/x.npz" --outputs "$tmp/slip.npz"
check npz zip_slip_name "no entry name holds a path separator" /usr/bin/python3 -c "
import zipfile, sys; n = zipfile.ZipFile('$tmp/slip.npz').namelist(); print(n); sys.exit(any('/' in x or '\\\\' in x for x in n))"
check npz zip_slip_name "numpy sees the escaped name" /usr/bin/python3 -c "
import numpy as np; assert '..%2F..%2F..%2F..%2Ftmp%2Fkiln-zip-slip' in np.load('$tmp/slip.npz').files"
expect npz control_name 0 '^output a\\x1b\[2Jb' -- eval "$N/ctrl.onnx" --inputs "$N/x.npz" --outputs "$tmp/ctrl.npz"
check npz control_name "the entry name has no control byte" /usr/bin/python3 -c "
import zipfile, sys; sys.exit(any(ord(c) < 32 for x in zipfile.ZipFile('$tmp/ctrl.npz').namelist() for c in x))"
cp "$N/fortran.npy" "$tmp/x.npy"
# (a Relu of x = [[1,2,3],[4,5,6]] stored column-major: C order must come back)
/usr/bin/python3 - "$tmp" <<'EOF2'
import onnx, sys
from onnx import helper, TensorProto
m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]),
    opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
onnx.save(m, sys.argv[1] + "/relu.onnx")
EOF2
expect npz fortran_order_read 0 "^output y +float32 +2x3: 1 2 3 4" -- eval "$tmp/relu.onnx" --inputs "$tmp/x.npy"

# ---- D. Crashes --------------------------------------------------------------------------------
E=$C/engines
expect crash inspect_dir 2 "cannot read engine file '.*folder': it is a directory, not a regular file" -- inspect "$C/outputs/folder"
expect crash run_dir 2 "cannot read engine file '.*folder': it is a directory, not a regular file" -- run "$C/outputs/folder"
expect crash check_dir 2 "cannot read engine file '.*folder': it is a directory, not a regular file" -- check "$C/outputs/folder" --onnx "$M"
expect crash plan_dir 2 "cannot read model file '.*folder': it is a directory, not a regular file" -- plan "$C/outputs/folder"
expect crash inspect_devzero 2 "cannot read engine file '/dev/zero': it is a character device, not a regular file" -- inspect /dev/zero
expect crash plan_fifo 2 "cannot read model file '.*fifo': it is a FIFO, not a regular file" -- plan "$C/outputs/fifo"
expect crash tune_config_dir 2 "--config: cannot read config file '.*folder': it is a directory" -- tune "$M" --route 'precision=.*' --dry-run --config "$C/files/folder"
expect crash tune_config_deep 2 "--config: .*deep.yaml" -- tune "$M" --dry-run --config "$C/files/deep.yaml"
expect crash calib_deep 2 "deep.calib" -- compile "$M" --precision int8 --calib "$C/files/deep.calib" -o "$tmp/x.kiln"
expect crash engine_modules_alias 2 "modules_alias.kiln: metadata: modules\[1\].cubin: section 1 is already the image of module 0" -- inspect "$E/modules_alias.kiln"
expect crash engine_extent_wrap 2 "extent_wrap.kiln: launch 0 \(node '/wrap'\): gemm A: extent of 1073741826 products overflows 64 bits" -- inspect "$E/extent_wrap.kiln"
KILN_CASE_TIMEOUT=20 expect crash engine_long_entry 0 "^engine: " -- inspect "$E/long_entry.kiln"
KILN_CASE_TIMEOUT=20 expect crash engine_many_objects 0 "^engine: " -- inspect "$E/many_objects.kiln"
expect crash engine_deep_json 2 "deep_json.kiln: metadata is nested more than 16 levels deep" -- inspect "$E/deep_json.kiln"
expect crash engine_valid 0 "^engine: " -- inspect "$E/valid.kiln"
expect crash nested_if_5000 2 "nested_if.onnxtxt.*not a valid text-format ONNX model .*(too deep|recursion)" -- plan "$C/models/nested_if.onnxtxt"
parens=$(printf '%*s' 50000 '' | tr ' ' '(')x$(printf '%*s' 50000 '' | tr ' ' ')')
expect crash route_parens_50k 2 "route term '\\(\\(\\(.*\\.\\.\\.': regular expression of 100001 bytes is longer than the limit of 4096" -- tune "$M" --route "$parens=.*" --dry-run
parens=$(printf '%*s' 2000 '' | tr ' ' '(')x$(printf '%*s' 2000 '' | tr ' ' ')')
expect crash route_parens_2000 2 "route term '\\(\\(\\(.*\\.\\.\\.' matches no knob" -- tune "$M" --route "$parens=.*" --dry-run
expect crash route_long_name 2 "route term 'node\\\\\.\.\*=\.\*': a name of 100[0-9]+ bytes is longer than the 4096" -- tune "$C/models/long_name.onnx" --route 'node\..*=.*' --dry-run
expect crash route_catastrophic 2 "route term '\(\.\*a\)\{12\}b=\.\*' matches no knob" -- tune "$C/models/aaaa_name.onnx" --route '(.*a){12}b=.*' --dry-run
run calibrate "$C/models/aaaa_name.onnx" --data "$C/models/aaaa_x.npz" -o "$tmp/aaaa.calib"
expect crash keep_float_catastrophic 0 "1 of 1 int8/fp8 convolutions/matrix products of the route quantized" -- eval "$C/models/aaaa_name.onnx" --inputs "$C/models/aaaa_x.npz" --precision int8 --calib "$tmp/aaaa.calib" --keep-float '(.*a){12}b'

# ---- E. Wrong answers to bad input ------------------------------------------------------------
F=$C/files
for p in nan NaN -1 100.5 inf; do
  expect input "calibrate_percentile_$p" 2 "--percentile: $p is not a percentage in \(0, 100\]" -- calibrate "$M" --data "$F/cal.npz" --method percentile --percentile "$p" -o "$tmp/p.calib"
done
check input calibrate_percentile "no calibration file was written" test ! -e "$tmp/p.calib"
expect input cache_import_dir 2 "cache import: cannot read export file '.*folder': it is a directory" -- cache import "$F/folder" --cache "$tmp/i.db"
run cache import "$F/rows.jsonl" --cache "$tmp/i.db"
expect input cache_merge_missing 2 "cache merge: cannot open cache '.*missing.db': no such file" -- cache merge "$tmp/missing.db" --cache "$tmp/i.db"
check input cache_merge_missing "the missing file was not created" test ! -e "$tmp/missing.db"
expect input cache_list_missing 2 "cache list: cannot open cache '.*none.db': no such file" -- cache list --cache "$tmp/none.db"
check input cache_list_missing "the missing cache was not created" test ! -e "$tmp/none.db"
stamp=$(stat -c %Y /tmp/.local/share/kiln/tune-cache.db 2>/dev/null)
(unset HOME XDG_DATA_HOME; run cache list; [[ $rc -eq 2 && $first == *"no cache folder"*"--cache"* ]] && ok=1 || ok=0
 [ "$ok" = 1 ] || echo "FAIL [input] no_home: exit $rc, $first"; echo "$rc $ok $first" >"$tmp/nohome")
read -r rc ok first <"$tmp/nohome"; record input no_home_cache "$ok"
(unset HOME XDG_DATA_HOME; run tune "$M" --route 'precision=fp32|fp16'; [[ $rc -eq 2 && $first == *"no cache folder"* ]] && ok=1 || ok=0
 [ "$ok" = 1 ] || echo "FAIL [input] no_home_tune: exit $rc, $first"; echo "$rc $ok $first" >"$tmp/nohome")
read -r rc ok first <"$tmp/nohome"; record input no_home_tune "$ok"
check input no_home "nothing was written under /tmp/.local" test "$(stat -c %Y /tmp/.local/share/kiln/tune-cache.db 2>/dev/null)" = "$stamp"
expect input escapes_plan 0 'model: ' -- plan "$C/models/escapes.onnx"
check input escapes_plan "names from the model are escaped (no ESC byte on stdout)" bash -c "'$kiln' plan '$C/models/escapes.onnx' | grep -q 'x\\\\x1b\[2J' && ! '$kiln' plan '$C/models/escapes.onnx' | grep -q $'\x1b'"
check input escapes_plan_json "JSON keeps the names exact" bash -c "'$kiln' plan --json '$C/models/escapes.onnx' | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); assert j[\"inputs\"][0][\"name\"] == \"x\x1b[2J\"'"
expect input escapes_inspect 0 '^engine: ' -- inspect "$E/escapes.kiln"
check input escapes_inspect "engine metadata is escaped" bash -c "! '$kiln' inspect '$E/escapes.kiln' | grep -q $'\x1b' && '$kiln' inspect '$E/escapes.kiln' | grep -q 'route: .*\\\\x1b\]0;pwned\\\\x07'"
run cache import "$F/escapes.jsonl" --cache "$tmp/e.db"
expect input escapes_cache 0 "measurements" -- cache show 0123 --cache "$tmp/e.db"
check input escapes_cache "cache rows are escaped" bash -c "! '$kiln' cache show 0123 --cache '$tmp/e.db' | grep -q $'\x1b'"
expect input escapes_error 2 "no value for the model's input 'x\\\\x1b\\[2J'" -- eval "$C/models/escapes.onnx" --inputs "$C/outputs/x.npz"
check input escapes_error "error messages are escaped" bash -c "! '$kiln' eval '$C/models/escapes.onnx' --inputs '$C/outputs/x.npz' 2>&1 | grep -q $'\x1b'"
expect input cache_import_deep 2 "cache import: .*deep.jsonl: line 1: " -- cache import "$F/deep.jsonl" --cache "$tmp/i.db"

# ---- F. The cache under concurrency ------------------------------------------------------------
# Two imports into a fresh cache at the same moment: the WAL switch's lock was not waited for, and
# one import in about 3 of 100 rounds failed ("database is locked").
lost=0
for round in $(seq 1 30); do
  db=$tmp/conc$round.db
  "$kiln" cache import "$F/rows.jsonl" --cache "$db" >/dev/null 2>"$tmp/c1" &
  a=$!
  "$kiln" cache import "$F/rows2.jsonl" --cache "$db" >/dev/null 2>"$tmp/c2" &
  b=$!
  wait $a; ra=$?
  wait $b; rb=$?
  n=$("$kiln" cache list --cache "$db" | head -n1 | grep -Eo '[0-9]+ measurements')
  if [[ $ra -ne 0 || $rb -ne 0 || $n != "100 measurements" ]]; then
    lost=$((lost + 1))
    echo "round $round: exits $ra $rb, $n: $(cat "$tmp/c1" "$tmp/c2")"
  fi
done
rc=$lost first="$lost of 30 rounds of two concurrent imports lost rows"
record cache concurrent_imports $([ "$lost" = 0 ] && echo 1 || echo 0)

# ---- G. Cost that grows too fast ---------------------------------------------------------------
start=$(date +%s)
KILN_CASE_TIMEOUT=30 expect cost plan_100k_relu 0 "^model: " -- plan "$C/models/relu_100k.onnx"
echo "plan of 100,000 Relus feeding one Sum: $(($(date +%s) - start)) s"
expect cost tune_full_saturates 2 "a full search of this route expression has [0-9.e+]+ candidates, more than --max-candidates 64: use --search fast or mixed" -- tune "$C/models/mm30.onnx" --route 'node\..*\.tile=.*' --search full --dry-run
expect cost tune_full_millions 2 "--max-candidates 10000000 is more than the 100000 candidates a search may plan" -- tune "$C/models/mm9.onnx" --route 'node\..*\.tile=.*' --search full --dry-run --max-candidates 10000000

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
