#!/usr/bin/env bash
# Runs the commands a refactor must leave unchanged with two encbench binaries and diffs their
# outputs: stdout and stderr byte for byte, result JSON key by key. What may differ is left out:
# the keys created_utc, git_sha, argv, machine, wall_s and *_wall_s (when and where it ran), and
# the lines of stderr that print wall times, and dates in other files (HTML pages). Each binary runs in a folder of its own with the same
# relative output paths, so the paths printed are the same text. The preset A/B's result schema
# name is compared as one across its rename (the legacy name encbench-closed-loop = encbench-preset-ab).
#
#   scripts/check-outputs-identical.sh OLD_ENCBENCH NEW_ENCBENCH [WORK_DIR]
#   KEEP_OLD=1 scripts/check-outputs-identical.sh ... WORK_DIR   (reuse WORK_DIR's old outputs)
#
# The commands, at small size (about 10 minutes per binary on two shared cores): the main job's virtual run
# (scenarios/seeds/pr7104.json, 2 seeds), run --sweep with an SLO, run --sweep --save-detailed,
# encode and ab on qwen3-vl-8b 448x448 sim:ascend-910b (ab without --verify: its fp32 reference
# forward took over 10 minutes on the shared 2-core machine), ab out of device memory, and
# encode --sweep --verify on tiny-qwen2.5-vl. Exit 0 when every output is the same, 1 otherwise.
set -uo pipefail
old=$(readlink -f "$1")
new=$(readlink -f "$2")
work=${3:-$(mktemp -d /tmp/check-outputs-XXXXXX)}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"

# name|arguments (out/ is the output folder, relative to the binary's own folder)
commands=(
  "main-run|run --scenario $repo/scenarios/seeds/pr7104.json --seeds 2 --result out/main.json --result-dir out"
  "run-sweep|run --scenario $repo/scenarios/seeds/pr7104.json --seeds 2 --num-prompts 60 --sweep request-rate=2,8,inf --slo ttft_p99<=3000 --result out/sweep.json --result-dir out"
  "run-sweep-detailed|run --scenario $repo/scenarios/seeds/pr7104.json --seeds 1 --num-prompts 30 --sweep max-concurrency=2,8 --save-detailed --result out/detailed.json --result-dir out"
  "encode|encode --model qwen3-vl-8b --image 448x448 --device sim:ascend-910b --forwards 3 --json out/encode.json"
  "ab|ab --model qwen3-vl-8b --image 448x448 --device sim:ascend-910b --forwards 3 --json out/ab.json"
  "ab-oom|ab --model qwen3-vl-8b --image 448x448 --device sim:ascend-910b --forwards 2 --device-memory-gb 0.05 --json out/ab-oom.json"
  "encode-sweep|encode --model tiny-qwen2.5-vl --image 224x224 --device sim:ascend-910b --forwards 2 --sweep --verify --json out/encode-sweep.json"
)

normalise_json() {  # FILE -> the file's values as sorted "path = value" lines, when-and-where keys left out
  python3 - "$1" <<'PY'
import json, sys
SKIP = {'created_utc', 'git_sha', 'argv', 'machine', 'wall_s'}
def walk(value, path, out):
    if isinstance(value, dict):
        for k, v in value.items():
            if k in SKIP or k.endswith('_wall_s'):
                continue
            walk(v, f'{path}.{k}', out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            walk(v, f'{path}[{i}]', out)
    else:
        if value == 'encbench-closed-loop':  # the legacy name of the preset A/B's schema
            value = 'encbench-preset-ab'
        out.append(f'{path} = {json.dumps(value)}')
out = []
walk(json.load(open(sys.argv[1])), '', out)
print('\n'.join(out))
PY
}

failures=0
for entry in "${commands[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  for side in old new; do
    dir="$work/$side/$name"
    # KEEP_OLD=1: the old binary's outputs of an earlier call with this WORK_DIR are kept (main's
    # outputs made once, compared with several branches' binaries).
    [ "$side" = old ] && [ "${KEEP_OLD:-0}" = 1 ] && [ -e "$dir/rc.txt" ] && continue
    rm -rf "$dir" && mkdir -p "$dir/out"
    binary=$old; [ "$side" = new ] && binary=$new
    # shellcheck disable=SC2086  # the arguments are words
    (cd "$dir" && "$binary" $args >stdout.txt 2>stderr.txt; echo $? >rc.txt)
    grep -v -i -E 'wall|elapsed|[0-9]+(\.[0-9]+)? ?s\b.*(took|in)' "$dir/stderr.txt" >"$dir/stderr.norm" || true
    for f in "$dir"/out/*.json; do
      [ -e "$f" ] && normalise_json "$f" >"$f.norm"
    done
  done
  verdict=same
  for f in rc.txt stdout.txt stderr.norm; do
    cmp -s "$work/old/$name/$f" "$work/new/$name/$f" || { verdict="differs ($f)"; diff "$work/old/$name/$f" "$work/new/$name/$f" | head -5; }
  done
  old_files=$(cd "$work/old/$name/out" && ls | sort | tr '\n' ' ')
  new_files=$(cd "$work/new/$name/out" && ls | sort | tr '\n' ' ')
  [ "$old_files" = "$new_files" ] || verdict="differs (files: $old_files vs $new_files)"
  for f in "$work/old/$name"/out/*; do  # the other files (HTML pages, datasets): byte for byte, dates aside
    case "$f" in *.json|*.norm) continue ;; esac
    [ -f "$f" ] || continue
    g="$work/new/$name/out/$(basename "$f")"
    cmp -s <(sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?//g' "$f") \
           <(sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?//g' "$g" 2>/dev/null) || verdict="differs ($(basename "$f"))"
  done
  values=0
  for f in "$work/old/$name"/out/*.json.norm; do
    [ -e "$f" ] || continue
    g="$work/new/$name/out/$(basename "$f")"
    values=$((values + $(wc -l <"$f")))
    cmp -s "$f" "$g" || { verdict="differs ($(basename "${f%.norm}"))"; diff "$f" "$g" | head -5; }
  done
  echo "[$name] exit $(cat "$work/old/$name/rc.txt")/$(cat "$work/new/$name/rc.txt"), $values JSON values, stdout $(wc -c <"$work/old/$name/stdout.txt") bytes: $verdict"
  [ "$verdict" = same ] || failures=$((failures + 1))
done
echo "check-outputs-identical: $failures command(s) differ (outputs under $work)"
[ "$failures" = 0 ]
