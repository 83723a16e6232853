#!/usr/bin/env bash
# kiln run's trtexec-style options on the GPU (label gpu; exit 77 = skipped without one): several
# contexts of one engine at once (--streams), host latency (--host-io), --duration, the Chrome
# trace (--trace, parsed back: one complete event per launch), and a device that is not there.
#   run_options.sh KILN SOURCE_DIR
set -u
kiln=$1 src=$2
[ -e /dev/nvidia0 ] || { echo "skipped: no GPU"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
check() {  # NAME PATTERN COMMAND...
  local name=$1 pattern=$2 out
  shift 2
  if out=$("$@" 2>&1) && grep -Eq -- "$pattern" <<<"$out"; then echo "ok   $name"; else echo "FAIL $name: $out" | head -5; failed=1; fi
}
"$kiln" compile "$src/models/tiny/mlp.onnxtxt" --precision fp16 -o "$tmp/m.kiln" > /dev/null || exit 1
check streams '"streams": \{' "$kiln" run "$tmp/m.kiln" --iterations 50 --streams 3 --json
check streams_text "^streams: +3 at once" "$kiln" run "$tmp/m.kiln" --iterations 50 --streams 3
check host_io '"host_io": true' "$kiln" run "$tmp/m.kiln" --iterations 50 --host-io --json
check duration '"runs": [0-9]{3,}' "$kiln" run "$tmp/m.kiln" --iterations 10 --duration 0.5 --json
check trace "^trace: " "$kiln" run "$tmp/m.kiln" --trace "$tmp/t.json"
check trace_parsed "^events [1-9]" python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['traceEvents']; \
assert all(x['ph'] == 'X' and x['dur'] > 0 and 'node' in x['args'] for x in e); print('events', len(e))" "$tmp/t.json"
if out=$("$kiln" run "$tmp/m.kiln" --device 99 2>&1); then echo "FAIL no_device: exit 0"; failed=1
else check no_device "no CUDA device 99 \(this machine has" echo "$out"; fi
exit $failed
