#!/usr/bin/env python3
"""Docs as tests: run every ```bash / ```sh / ```console block of README.md and docs/*.md.

Each block runs as one bash script (set -eo pipefail) in a temporary directory of its own that
mirrors the checkout (a symlink per top-level entry, so scenarios/, scripts/ and tests/ resolve)
with build/ pointing at the test build, and with the test build's binaries first on PATH, so both
`build/harness/cli/encbench` and a bare `encbench` are the binaries under test. A block passes when
every command exits 0 (or the code the doc states in a trailing comment, `# exit 2`, `# exit 0 or 1`) and every
output file a command names (--out, --result, --json, --html, ...) exists afterwards.

The command text is the doc's. What the runner changes, each change listed in SUBSTITUTIONS below:
  - `cmake --build ...` lines do nothing (ctest builds the binaries before this test runs);
  - /tmp/ is the block's own temporary directory (blocks run in parallel and leave nothing behind);
  - a line ending in `&` starts a server in the background; the runner waits for the port it prints
    (`port=N` or `http://127.0.0.1:N`, in the doc's own `> FILE` if it has one) and the word PORT
    in later lines is that port, unless the block sets PORT itself; the runner stops every server
    it started when the block ends;
  - sizes are scaled down (--num-prompts 500 -> 10, --seeds 10 -> 1, ...) so the whole run takes a few
    minutes on two cores.

A block preceded by the line `<!-- doc-test: skip: REASON -->` is not run; it is listed with its
reason. In a ```console block only the lines starting with `$ ` are commands (the rest is output).

  run_doc_blocks.py --source CHECKOUT --build BUILD_DIR [--jobs N] [--only SUBSTRING] [--list]
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

RUNNABLE_LANGUAGES = {"bash", "sh", "console", "shell"}
SKIP_MARKER = re.compile(r"^<!--\s*doc-test:\s*skip:\s*(.+?)\s*-->\s*$")

# The binaries the test build has, by their path in the build directory: their directories go
# first on PATH, so a doc's bare `encbench` runs the build's.
BINARIES = [
    "harness/cli/encbench",
    "tests/support/encbench-test-server",
    "tests/server/encbench_server_load",
]

# (pattern, replacement, why): applied in order to each command line, never to output lines.
# Sizes only: the flags and their meaning stay the doc's.
SUBSTITUTIONS = [
    (r"^\s*cmake --build .*$", ": # cmake --build: the test build has the binaries already",
     "ctest builds the binaries before this test"),
    (r"(?<![\w.-])/tmp/", "$DOC_TMP/", "each block writes under its own temporary directory"),
    (r"(--num-prompts[ =])(\d+)", lambda m: m.group(1) + str(min(int(m.group(2)), 10)),
     "--num-prompts N -> at most 10 (requests)"),
    (r"(--seeds[ =])(\d+)", lambda m: m.group(1) + str(min(int(m.group(2)), 1)), "--seeds N -> 1"),
    (r"(--rounds[ =])(\d+)", lambda m: m.group(1) + str(min(int(m.group(2)), 2)),
     "--rounds N -> at most 2 (bench ab, run --clock real: one A and one B per round)"),
    (r"(--repetitions[ =])(\d+)", lambda m: m.group(1) + str(min(int(m.group(2)), 3)),
     "--repetitions N -> at most 3 (encbench ab's forwards per side)"),
    (r"(--sweep[ =]'?[\w-]+=)([\d.,inf]+)", lambda m: m.group(1) + shorten_sweep(m.group(2)),
     "--sweep K=v1,v2,...,vn -> K=v1,vn (two load points)"),
    (r"--model (qwen2\.5-vl-7b|qwen2-vl-7b|qwen3-vl-8b|qwen3-vl-4b)\b(?=.*--verify)", lambda m: "--model tiny-" +
     {"qwen2.5-vl-7b": "qwen2.5-vl", "qwen2-vl-7b": "qwen2-vl", "qwen3-vl-8b": "qwen3-vl", "qwen3-vl-4b": "qwen3-vl-4b"}[m.group(1)],
     "with --verify a full-size model -> its tiny-* counterpart (the reference forward of a 7B ViT takes minutes)"),
    (r"--num-warmups[ =]\d+", "--num-warmups 0", "--num-warmups N -> 0"),
    (r"\bhttp://host:8000\b", "http://127.0.0.1:$DOC_PORT",
     "http://host:8000 (any live server) -> an encbench serve the runner starts"),
    (r"(?<![\w/.$-])va\.jsonl\b", "$DOC_TMP/va.jsonl",
     "va.jsonl (a VisionArena sample) -> one the runner generates (dataset generate --num 20)"),
]

# The options whose value is a file or directory the command writes.
OUTPUT_OPTIONS = {"--out", "--result", "--json", "--html", "--plot-timeline", "--result-dir", "--ab-dir",
                  "--trace", "--sweep-html", "--result-json", "--markdown", "--chrome-trace"}

PRELUDE = r"""
set -eo pipefail
__doc_pids=()
__doc_stop() { for p in "${__doc_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done;
               for p in "${__doc_pids[@]}"; do wait "$p" 2>/dev/null || true; done; }
trap __doc_stop EXIT
# The port a background server printed in its log (port=N, or http://127.0.0.1:N).
__doc_wait_port() {
  local log=$1 i
  for i in $(seq 1 300); do
    local p
    p=$(grep -oE '(port=|127\.0\.0\.1:)[0-9]+' "$log" 2>/dev/null | head -1 | grep -oE '[0-9]+$' || true)
    if [ -n "$p" ]; then echo "$p"; return 0; fi
    sleep 0.1
  done
  echo "doc-test: no port in $log after 30 s:" >&2; cat "$log" >&2; return 1
}
__doc_expect() {
  [ -e "$1" ] || { echo "doc-test: the command named $1 but it was not written" >&2; return 1; }
}
__doc_expect_rc() {
  local want=$1 got=$2 code
  for code in $want; do [ "$got" = "$code" ] && return 0; done
  echo "doc-test: exit $got, the doc states $want" >&2; return 1
}
"""


def shorten_sweep(values):
    items = values.split(",")
    return values if len(items) <= 2 else items[0] + "," + items[-1]


class Block:
    def __init__(self, path, line, language, text, skip_reason):
        self.path, self.line, self.language, self.text, self.skip_reason = path, line, language, text, skip_reason

    @property
    def name(self):
        return f"{self.path}:{self.line}"


def extract_blocks(source, relative_path):
    """Every fenced block of a Markdown file whose language is runnable, with its skip marker."""
    blocks = []
    with open(os.path.join(source, relative_path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(```+|~~~+)\s*([\w-]*)", lines[i])
        if not fence:
            i += 1
            continue
        start, marker, language = i, fence.group(2), fence.group(3).lower()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(marker):
            j += 1
        if language in RUNNABLE_LANGUAGES:
            previous = start - 1
            while previous >= 0 and not lines[previous].strip():
                previous -= 1
            skip = SKIP_MARKER.match(lines[previous].strip()) if previous >= 0 else None
            blocks.append(Block(relative_path, start + 1, language, "\n".join(lines[start + 1:j]),
                                skip.group(1) if skip else None))
        i = j + 1
    return blocks


def logical_lines(block):
    """Command lines with their continuations joined; a console block's `$ ` lines only."""
    raw = block.text.split("\n")
    if block.language == "console":
        commands, taking = [], False
        for line in raw:
            if line.startswith("$ "):
                commands.append(line[2:])
                taking = line.rstrip().endswith("\\")
            elif taking:
                commands.append(line)
                taking = line.rstrip().endswith("\\")
        raw = commands
    joined, pending = [], ""
    for line in raw:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    if pending:
        joined.append(pending)
    return [line for line in joined if line.strip()]


def split_comment(line):
    """The command and its trailing comment (a # outside quotes that starts a word)."""
    quote = None
    for k, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (k == 0 or line[k - 1].isspace()):
            return line[:k].rstrip(), line[k + 1:].strip()
    return line.rstrip(), ""


def output_paths(command):
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        return []
    paths = []
    for k, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in OUTPUT_OPTIONS:
            if eq:
                paths.append(value)
            elif k + 1 < len(words) and not words[k + 1].startswith("-"):
                paths.append(words[k + 1])
    return paths


def to_script(block):
    """The block as the bash script the runner executes."""
    body, background = [], 0
    needs_live_server = any("http://host:8000" in line for line in logical_lines(block))
    needs_dataset = any(re.search(r"(?<![\w/.$-])va\.jsonl\b", line) for line in logical_lines(block))
    if needs_dataset:
        body.append('encbench dataset generate --layout vision-arena-bench --num 20 --out "$DOC_TMP/va.jsonl" '
                    "--seed 1 >/dev/null")
    if needs_live_server:
        body.append('encbench serve --port 0 --null > "$DOC_TMP/live-server.log" 2>&1 & __doc_pids+=($!)')
        body.append('DOC_PORT=$(__doc_wait_port "$DOC_TMP/live-server.log")')
    # A block that sets PORT itself (PORT=$(grep ... server.txt)) keeps its own; else the word
    # PORT is the port the last background server printed.
    assigns_port = any(re.search(r"(^|[;&\s])PORT=", split_comment(line)[0]) for line in logical_lines(block))
    for line in logical_lines(block):
        command, comment = split_comment(line)
        if not command.strip():
            continue
        for pattern, replacement, _why in SUBSTITUTIONS:
            command = re.sub(pattern, replacement, command)
        if not assigns_port:
            command = re.sub(r"(?<![\w$-])PORT\b(?!=)", "$PORT", command)
        if command.rstrip().endswith("&") and not command.rstrip().endswith("&&"):
            background += 1
            command = command.rstrip()[:-1].rstrip()
            # The doc's own `> FILE` keeps its output there (a later line may read it); else a log.
            own = re.search(r"(?<![0-9&])>\s*(\S+)\s*$", command)
            log = f'"{own.group(1)}"' if own else f'"$DOC_TMP/background-{background}.log"'
            body.append(f"{command} {'' if own else '> ' + log + ' 2>&1'} & __doc_pids+=($!)")
            if assigns_port:
                body.append(f"__doc_wait_port {log} >/dev/null")
            else:
                body.append(f"PORT=$(__doc_wait_port {log})")
            continue
        stated = re.search(r"\bexits? (\d+(?:(?:,| or|, or) \d+)*)\b", comment)
        if stated:
            codes = " ".join(re.findall(r"\d+", stated.group(1)))
            body.append(f'__doc_rc=0; {command} || __doc_rc=$?; __doc_expect_rc "{codes}" $__doc_rc')
        else:
            body.append(command)
        for path in output_paths(command):
            if "{" not in path:  # {port}, {round_dir}: the tool's own placeholders
                body.append(f'__doc_expect "{path}"')
    return PRELUDE + "\n".join(body) + "\n"


def make_workdir(source, build):
    work = tempfile.mkdtemp(prefix="encbench-doc-")
    for entry in os.listdir(source):
        if entry.startswith(".") or entry.startswith("build"):
            continue
        os.symlink(os.path.join(source, entry), os.path.join(work, entry))
    os.symlink(build, os.path.join(work, "build"))
    os.mkdir(os.path.join(work, "tmp"))
    return work


# Blocks that bind a fixed port (vLLM's 8000, as `bench sweep serve` examples do) run one at a time.
FIXED_PORT = re.compile(r"--port[ =]8000\b|:8000\b")
FIXED_PORT_LOCK = threading.Lock()


def run_block(block, source, build, timeout_s):
    if FIXED_PORT.search(block.text) and "http://host:8000" not in block.text:
        with FIXED_PORT_LOCK:
            return run_block_now(block, source, build, timeout_s)
    return run_block_now(block, source, build, timeout_s)


def run_block_now(block, source, build, timeout_s):
    work = make_workdir(source, build)
    script = to_script(block)
    env = dict(os.environ)
    env["DOC_TMP"] = os.path.join(work, "tmp")
    env["PATH"] = os.pathsep.join(sorted({os.path.dirname(os.path.join(build, b)) for b in BINARIES})) + \
        os.pathsep + env.get("PATH", "")
    started = time.monotonic()
    try:
        done = subprocess.run(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout_s, start_new_session=True)
        rc, output = done.returncode, done.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, output = 124, (e.stdout or b"").decode("utf-8", "replace") + f"\ndoc-test: timed out after {timeout_s} s"
    seconds = time.monotonic() - started
    shutil.rmtree(work, ignore_errors=True)
    return block, rc, output, seconds, script


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True, help="the checkout (README.md and docs/ live here)")
    parser.add_argument("--build", required=True, help="the build directory with the binaries")
    parser.add_argument("--jobs", type=int, default=2, help="blocks run at once (default 2)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a block may take (default 300)")
    parser.add_argument("--only", help="run only blocks whose name (file:line) contains this")
    parser.add_argument("--list", action="store_true", help="print the blocks and their scripts, run nothing")
    args = parser.parse_args()
    source, build = os.path.abspath(args.source), os.path.abspath(args.build)
    for binary in BINARIES[:2]:  # encbench_server_load is built on demand (EXCLUDE_FROM_ALL)
        if not os.access(os.path.join(build, binary), os.X_OK):
            print(f"doc-test: {os.path.join(build, binary)} is missing: build it first", file=sys.stderr)
            return 2
    pages = ["README.md"] + sorted(os.path.join("docs", p) for p in os.listdir(os.path.join(source, "docs"))
                                   if p.endswith(".md"))
    blocks = [b for page in pages for b in extract_blocks(source, page)]
    if args.only:
        blocks = [b for b in blocks if args.only in b.name]
    skipped = [b for b in blocks if b.skip_reason]
    runnable = [b for b in blocks if not b.skip_reason]
    if args.list:
        for b in runnable:
            print(f"==== {b.name}\n{to_script(b)[len(PRELUDE):]}")
        for b in skipped:
            print(f"==== {b.name} skipped: {b.skip_reason}")
        return 0
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_block, b, source, build, args.timeout) for b in runnable]
        for future in concurrent.futures.as_completed(futures):
            block, rc, output, seconds, script = future.result()
            print(f"{'ok  ' if rc == 0 else 'FAIL'} {block.name} ({seconds:.1f} s)", flush=True)
            if rc != 0:
                failures.append(block.name)
                print(f"---- script\n{script[len(PRELUDE):]}---- output (last 60 lines)")
                print("\n".join(output.rstrip().split("\n")[-60:]))
                print("----", flush=True)
    print(f"doc-test: {len(runnable)} block(s) run, {len(runnable) - len(failures)} passed, "
          f"{len(failures)} failed; {len(skipped)} skipped:")
    for b in skipped:
        print(f"  skipped {b.name}: {b.skip_reason}")
    for name in failures:
        print(f"  FAILED {name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
