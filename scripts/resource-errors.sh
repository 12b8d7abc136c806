#!/usr/bin/env bash
# Real resource errors, not injected ones (issue 24 §3 acceptance): provokes ENOSPC, EROFS, EACCES, ENOTDIR and EMFILE
# under --out (and its lock, `<out>.lock` in the same parent), under cacheDir, and for open files (EMFILE), runs the CLI, and prints a markdown
# table: case, exit code, first line of the message, the files left behind (temporaries flagged). Expected for every
# case: exit 1, a message naming the path, the key or flag that chose it and the remedy, nothing half-written, no
# temporary left.
#
#   sudo bash scripts/resource-errors.sh [WORK]        (default WORK /tmp/resource-errors)
#
# Needs root (mount -t tmpfs; setpriv to run as nobody for EACCES); every mount is undone on exit (trap). Config: the
# tiny fixture (test/fixtures/sweep/tiny), chunkings none and 16, keyword and semantic over the tiny transformers model
# that scripts/build-tiny-model.ts writes (so the cache holds checkpoints, chunk files and embeddings.sqlite).
set -u
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-/tmp/resource-errors}"
[ "$(id -u)" = 0 ] || { echo "resource-errors.sh: needs root (mount, setpriv)" >&2; exit 2; }

mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
}
trap cleanup EXIT INT TERM
rm -rf "$work"
mkdir -p "$work"
chmod 755 "$work"
(cd "$repo" && node --import tsx scripts/build-tiny-model.ts "$work/tiny-model" >/dev/null)
chmod -R a+rX "$work/tiny-model"

# config NAME CACHEDIR: writes $work/NAME.yaml.
config() {
  cat >"$work/$1.yaml" <<EOF
name: $1
dataset: { path: $repo/test/fixtures/sweep/tiny }
chunking: { sizes: [none, 16], overlap: 4 }
topK: [1, 3]
modes: [keyword, semantic]
embeddings: [{ model: "transformers:$work/tiny-model", label: tiny }]
primaryMetric: ndcg@3
cacheDir: $2
EOF
  chmod 644 "$work/$1.yaml"
  echo "$work/$1.yaml"
}

# tmpfs DIR OPTIONS: mounts a tmpfs at DIR (created), remembered for the trap.
tmpfs() {
  mkdir -p "$1"
  mount -t tmpfs -o "$2" tmpfs "$1" && mounts+=("$1")
}

# leftovers DIR...: every file under the folders (relative to $work), temporaries marked with '!'.
leftovers() {
  local out=()
  for d in "$@"; do
    [ -e "$d" ] || continue
    while IFS= read -r f; do
      local rel="${f#"$work"/}"
      if [[ "$(basename "$f")" =~ \.tmp-[0-9]+-[0-9]+$|\.probe-[0-9]+-[0-9]+$|-wal$|-shm$|-journal$|\.lock$ ]]; then rel="!$rel"; fi
      out+=("$rel")
    done < <(find "$d" -mindepth 1 \( -type f -o -type d -empty \) 2>/dev/null | sort)
  done
  if [ ${#out[@]} -eq 0 ]; then echo "none"; else local IFS=' '; echo "${out[*]}"; fi
}

rows=()
# case NAME EXPECTED_PATH_PART [env/ulimit prefix...] -- CLI ARGS: runs the CLI, records exit code, first line, leftovers.
run_case() {
  local name="$1" watch="$2"
  shift 2
  local prefix=()
  while [ "$1" != "--" ]; do prefix+=("$1"); shift; done
  shift
  local err="$work/$name.stderr"
  (cd "$repo" && "${prefix[@]}" node --import tsx src/cli/bin.ts "$@" >/dev/null 2>"$err")
  local code=$?
  local first
  first="$(grep -m1 -E '^(error|internal error)' "$err" | cut -c1-220)"
  [ -n "$first" ] || first="$(head -c 220 "$err" | head -1)"
  local remedy
  remedy="$(grep -m1 -iE 'remedy|→|fix:' "$err" | cut -c1-160)"
  rows+=("| $name | $code | \`${first//|/\\|}\` | ${remedy//|/\\|} | $(leftovers $watch) |")
  echo "$name: exit $code: $first" >&2
}

none=(env)

# 1. ENOSPC under --out: a 64 KiB tmpfs holds the lock but not the reports.
tmpfs "$work/full-out" size=64k
run_case enospc-out "$work/full-out" "${none[@]}" -- run "$(config enospc-out "$work/cache-ok")" --out "$work/full-out/res"
# 2. ENOSPC under cacheDir: a 64 KiB tmpfs filled but for 8 KiB cannot hold the checkpoints and embeddings.sqlite.
tmpfs "$work/full-cache" size=64k
head -c 57344 /dev/zero >"$work/full-cache/filler" 2>/dev/null
run_case enospc-cache "$work/full-cache" "${none[@]}" -- run "$(config enospc-cache "$work/full-cache/c")" --out "$work/res-enospc-cache"
# 3. EROFS under --out (the lock is the first write there).
tmpfs "$work/ro-out" ro,size=1m
run_case erofs-out "$work/ro-out" "${none[@]}" -- run "$(config erofs-out "$work/cache-ok")" --out "$work/ro-out/res"
# 4. EROFS under cacheDir.
tmpfs "$work/ro-cache" ro,size=1m
run_case erofs-cache "$work/ro-cache" "${none[@]}" -- run "$(config erofs-cache "$work/ro-cache/c")" --out "$work/res-erofs-cache"
# 5. EACCES under --out: nobody may not write in a root-owned 755 folder (the lock fails first).
mkdir -p "$work/root-out" "$work/nobody" && chmod 755 "$work/root-out" && chown nobody "$work/nobody"
run_case eacces-out "$work/root-out" setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$work/nobody" -- run "$(config eacces-out "$work/nobody/cache")" --out "$work/root-out/res"
# 6. EACCES under cacheDir (results folder writable, cache folder root-owned).
mkdir -p "$work/root-cache"
run_case eacces-cache "$work/root-cache" setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$work/nobody" -- run "$(config eacces-cache "$work/root-cache/c")" --out "$work/nobody/res"
# 7. EACCES on the lock only: --out exists and is nobody's, its parent is root's.
mkdir -p "$work/lock-parent/res" && chown nobody "$work/lock-parent/res"
run_case eacces-lock "$work/lock-parent" setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$work/nobody" -- run "$(config eacces-lock "$work/nobody/cache2")" --out "$work/lock-parent/res"
# 8. ENOTDIR under --out: a file where a folder is expected.
mkdir -p "$work/notdir" && echo x >"$work/notdir/file"
run_case enotdir-out "$work/notdir" "${none[@]}" -- run "$(config enotdir-out "$work/cache-ok")" --out "$work/notdir/file/res"
# 9. ENOTDIR under cacheDir.
mkdir -p "$work/notdir-cache" && echo x >"$work/notdir-cache/file"
run_case enotdir-cache "$work/notdir-cache" "${none[@]}" -- run "$(config enotdir-cache "$work/notdir-cache/file/c")" --out "$work/res-enotdir-cache"
# 10. EMFILE: once the sweep has started (its "load:" line), the process's open-file limit is lowered to the number
# it holds (prlimit), so its next open fails (a limit set before start-up fails inside Node's module loader instead).
cat >"$work/emfile-wrap.sh" <<'EOF2'
log="$(mktemp)"
"$@" 2>"$log" &
pid=$!
while kill -0 "$pid" 2>/dev/null && ! grep -q '^load:' "$log"; do sleep 0.02; done
n="$(ls /proc/"$pid"/fd 2>/dev/null | wc -l)"
[ "$n" -gt 0 ] && prlimit --pid "$pid" --nofile="$n:$n"
wait "$pid"
code=$?
cat "$log" >&2
rm -f "$log"
exit "$code"
EOF2
run_case emfile "$work/res-emfile $work/cache-emfile" bash "$work/emfile-wrap.sh" -- run "$(config emfile "$work/cache-emfile")" --out "$work/res-emfile"

echo
echo '| case | exit | first line of the message | remedy line | files left (! = temporary) |'
echo '|---|---|---|---|---|'
printf '%s\n' "${rows[@]}"
