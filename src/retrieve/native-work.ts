/**
 * Telling a long native call from a stuck one, per unit (issue 26). A LanceDB index build (`createIndex`) runs in
 * LanceDB's own threads and reports nothing until it returns; the stall watchdog (src/run/stall.ts) needs progress
 * from it, but only progress that belongs to that unit: a busy BM25 build or an embedding in the same process must not
 * keep a deadlocked LanceDB build alive.
 *
 * Two counters are read every `pollMs` while the call is pending:
 * - **the CPU time of the native library's own threads** (Linux: `/proc/self/task/<tid>/stat`, threads whose name,
 *   `comm`, starts with one of the given prefixes; LanceDB 0.31.0's are `lance-cpu` (its CPU pool) and
 *   `tokio-rt-worker` (its async runtime); Node's main thread and its worker threads are all named `node`). It counts
 *   when those threads used at least `minCpuShare` of one core over the interval;
 * - **the bytes under the unit's own folder** (the table being indexed): any growth counts.
 *
 * Either one calls `onProgress()`. What is still shared: two LanceDB calls in flight at once in one process (e.g.
 * two embedding models' LanceDB units building together) use one thread pool, so one's CPU counts for the other; the
 * folder bytes stay per unit. Where `/proc` is absent (macOS, Windows) the CPU counter falls back to the whole
 * process's CPU time (`process.cpuUsage()`), the behaviour before this module, and only then does any busy unit count.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Thread-name prefixes of LanceDB 0.31.0's native threads (Linux `comm`, at most 15 bytes). */
export const LANCEDB_THREAD_PREFIXES: readonly string[] = ['lance-cpu', 'tokio-rt-worker'];

/**
 * Clock ticks per second of `/proc/<pid>/task/<tid>/stat`'s utime and stime (`USER_HZ`): 100 on every Linux ABI Node
 * supports (the kernel exports USER_HZ, not its internal HZ, to user space; `getconf CLK_TCK`).
 */
const USER_HZ = 100;

/** One reading of per-thread CPU: thread id → CPU seconds (user + system) of the matching threads. */
export type ThreadCpu = Map<string, number>;

/**
 * CPU seconds (user + system) of this process's threads whose name starts with one of `prefixes`, per thread id, read
 * from `<taskDir>/<tid>/stat` (fields 14 utime and 15 stime, in USER_HZ ticks; the name is the text between the first
 * `(` and the last `)`, so names with spaces or parentheses parse). Threads that exit between the listing and the read
 * are skipped.
 * @param taskDir default `/proc/self/task`.
 * @returns undefined when `taskDir` cannot be listed (no procfs).
 */
export function readThreadCpu(prefixes: readonly string[], taskDir = '/proc/self/task'): ThreadCpu | undefined {
  let tids: string[];
  try {
    tids = readdirSync(taskDir);
  } catch {
    return undefined;
  }
  const out: ThreadCpu = new Map();
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(path.join(taskDir, tid, 'stat'), 'utf8');
    } catch {
      continue; // the thread exited
    }
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    if (open < 0 || close < open) continue;
    const name = stat.slice(open + 1, close);
    if (!prefixes.some((p) => name.startsWith(p))) continue;
    // After ") ": field 3 (state) is index 0, so utime (field 14) is index 11 and stime (field 15) index 12.
    const f = stat.slice(close + 2).split(' ');
    const ticks = Number(f[11]) + Number(f[12]);
    if (Number.isFinite(ticks)) out.set(tid, ticks / USER_HZ);
  }
  return out;
}

/**
 * CPU seconds the threads of `now` used since `before`: the sum over threads of now − before (a thread new since
 * `before` counts in full; a thread that exited since counts nothing more). Never negative.
 */
export function threadCpuDelta(before: ThreadCpu, now: ThreadCpu): number {
  let s = 0;
  for (const [tid, sec] of now) s += Math.max(0, sec - (before.get(tid) ?? 0));
  return s;
}

/** Total size in bytes of the files under `folder` (recursive; 0 when it does not exist; entries that vanish are skipped). */
export function folderBytes(folder: string): number {
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch {
    return 0;
  }
  let total = 0;
  for (const e of entries) {
    const p = path.join(folder, e.name);
    if (e.isDirectory()) total += folderBytes(p);
    else
      try {
        total += statSync(p).size;
      } catch {
        // removed meanwhile
      }
  }
  return total;
}

/** The counters {@link watchNativeCall} reads; injectable for tests. */
export interface NativeWorkSources {
  /** Cumulative CPU seconds of the unit's native threads (never decreasing). */
  cpuSeconds: () => number;
  /** Bytes of the unit's own files (a folder), or any other counter that grows only when this unit works. */
  bytes: () => number;
}

/** Options of {@link watchNativeCall}. */
export interface NativeWatchOptions {
  /** Called once per poll interval in which the call showed work (its threads' CPU, or its folder grew). */
  onProgress: () => void;
  /** The unit's own folder, whose growth counts as progress (e.g. `<cacheDir>/lancedb/<table>.lance`). */
  folder?: string;
  /** Thread-name prefixes whose CPU counts; default {@link LANCEDB_THREAD_PREFIXES}. */
  threadPrefixes?: readonly string[];
  /** Poll interval, ms > 0; default 5000. */
  pollMs?: number;
  /**
   * Share of one core the threads must have used over an interval to count, in (0, 1]; default 0.02. The FTS deadlock
   * (issue 26) used about 0.5 % of one core for the whole process while it waited; a working LanceDB build on a
   * machine loaded 10× over its cores still got 5 % or more.
   */
  minCpuShare?: number;
  /** Replaces the counters (tests); default: this process's named threads under `/proc`, else `process.cpuUsage()`. */
  sources?: NativeWorkSources;
}

/**
 * A cumulative CPU-seconds counter of this process's threads named with one of `prefixes`: each call adds what the
 * threads used since the previous call ({@link threadCpuDelta}), so threads that start or exit in between do not
 * make it jump or fall. Starts at 0.
 * @returns undefined when `taskDir` cannot be read (no procfs).
 */
export function threadCpuCounter(prefixes: readonly string[], taskDir = '/proc/self/task'): (() => number) | undefined {
  let last = readThreadCpu(prefixes, taskDir);
  if (last === undefined) return undefined;
  let total = 0;
  return () => {
    const now = readThreadCpu(prefixes, taskDir);
    if (now === undefined) return total;
    total += threadCpuDelta(last!, now);
    last = now;
    return total;
  };
}

/** CPU seconds of the whole process (user + system), cumulative: the fallback where /proc is absent. */
function processCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * Awaits `call` (a native call without a progress API, e.g. LanceDB's `createIndex`), calling `onProgress()` after
 * each `pollMs` in which the call showed work of its own (module comment): the CPU of the native library's threads
 * (≥ `minCpuShare` of one core) or growth of the unit's folder. Resolves or rejects as `call` does; the poll timer is
 * cleared either way. Intervals are measured with `Date.now()` (so tests can drive them with fake timers).
 */
export async function watchNativeCall<T>(call: Promise<T>, options: NativeWatchOptions): Promise<T> {
  const pollMs = options.pollMs ?? 5000;
  const share = options.minCpuShare ?? 0.02;
  const folder = options.folder;
  const sources: NativeWorkSources = options.sources ?? {
    cpuSeconds: threadCpuCounter(options.threadPrefixes ?? LANCEDB_THREAD_PREFIXES) ?? processCpuSeconds,
    bytes: () => (folder === undefined ? 0 : folderBytes(folder)),
  };
  let cpu = sources.cpuSeconds();
  let bytes = sources.bytes();
  let at = Date.now();
  const timer = setInterval(() => {
    const nowCpu = sources.cpuSeconds();
    const nowBytes = sources.bytes();
    const now = Date.now();
    if ((nowCpu - cpu) * 1000 >= share * (now - at) || nowBytes > bytes) options.onProgress();
    cpu = nowCpu;
    bytes = nowBytes;
    at = now;
  }, pollMs);
  try {
    return await call;
  } finally {
    clearInterval(timer);
  }
}
