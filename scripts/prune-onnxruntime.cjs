#!/usr/bin/env node
/**
 * The root `postinstall`: trims onnxruntime-node (a dependency of transformers.js) to the binaries this machine can
 * load. Issue 25 item 5; figures in docs/scale.md, "Install size and time".
 *
 * onnxruntime-node 1.21.0 ships prebuilt binaries for six platform/architecture pairs under
 * `bin/napi-v3/<platform>/<arch>/` (about 208 MB) and loads only `bin/napi-v3/${process.platform}/${process.arch}/
 * onnxruntime_binding.node` (its dist/binding.js). This script, for every onnxruntime-node folder in ./node_modules
 * (hoisted, or nested one level under another package):
 *   1. removes the `<platform>/<arch>` folders other than this process's platform and architecture (nothing is removed
 *      when this machine's own folder is absent: then onnxruntime-node reports its own error at load time);
 *   2. in the kept folder, replaces a versioned library that is a byte-identical copy of the library its versionless
 *      name points at (linux: `libonnxruntime.so.1.21.0` beside `libonnxruntime.so.1`, the SONAME the binding is
 *      linked against, `readelf -d`) with a relative symlink to it, then loads the binding in a child process; if that
 *      fails, the copy is put back. Skipped on win32 (symlinks need privileges there).
 *
 * Safe by construction: idempotent (a second run finds nothing to do), a no-op when onnxruntime-node is absent, and it
 * never fails the install (any error is printed as a warning and the exit code is 0). It prints what it removed and the
 * MB saved. Set RETRIEVAL_SWEEP_KEEP_ALL_PLATFORMS=1 to skip it (a node_modules shared by machines of several kinds).
 *
 * Plain Node, CommonJS, no dependencies: it runs at install time, before anything is built and without tsx. The root
 * `postinstall` in package.json calls it only when this file exists, so installing the packed tarball (which ships
 * no scripts/) skips it.
 *
 * Usage: node scripts/prune-onnxruntime.cjs [--node-modules <dir>] [--platform <p>] [--arch <a>] [--no-verify]
 *   --node-modules  the node_modules folder to scan (default: ./node_modules of the working directory)
 *   --platform/--arch  the pair to keep (default: process.platform / process.arch; tests pass others)
 *   --no-verify  do not load the binding after the symlink step (tests, whose fake trees have no real binding)
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const TAG = 'retrieval-sweep postinstall:';

/** Parses the flags above; unknown flags are an error (caught by main, which warns and exits 0). */
function parseArgs(argv) {
  const opts = {
    nodeModules: path.resolve('node_modules'),
    platform: process.platform,
    arch: process.arch,
    verify: true,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--no-verify') opts.verify = false;
    else if (a === '--node-modules' || a === '--platform' || a === '--arch') {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      if (a === '--node-modules') opts.nodeModules = path.resolve(v);
      else opts[a.slice(2)] = v;
    } else throw new Error(`unknown argument ${JSON.stringify(a)} (known: --node-modules, --platform, --arch, --no-verify)`);
  }
  return opts;
}

/** Whether `p` is a directory (not following a symlink to one). */
function isDir(p) {
  try {
    return fs.lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The onnxruntime-node folders under `nodeModules`: hoisted, or nested one level below another package. */
function findOnnxruntimeNode(nodeModules) {
  const found = [];
  const consider = (dir) => {
    if (isDir(path.join(dir, 'bin', 'napi-v3'))) found.push(dir);
  };
  if (!isDir(nodeModules)) return found;
  consider(path.join(nodeModules, 'onnxruntime-node'));
  for (const entry of fs.readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const pkgs = entry.startsWith('@')
      ? (isDir(path.join(nodeModules, entry)) ? fs.readdirSync(path.join(nodeModules, entry)) : []).map((n) => path.join(entry, n))
      : [entry];
    for (const p of pkgs) consider(path.join(nodeModules, p, 'node_modules', 'onnxruntime-node'));
  }
  return found;
}

/** Bytes under `p` (regular files; symlinks count as 0, as `du` counts them). */
function sizeOf(p) {
  const st = fs.lstatSync(p);
  if (st.isSymbolicLink()) return 0;
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of fs.readdirSync(p)) total += sizeOf(path.join(p, e));
  return total;
}

/** Whether two regular files hold the same bytes (compared in 1 MiB blocks). */
function sameBytes(a, b) {
  const sa = fs.lstatSync(a);
  const sb = fs.lstatSync(b);
  if (!sa.isFile() || !sb.isFile() || sa.size !== sb.size) return false;
  const fa = fs.openSync(a, 'r');
  const fb = fs.openSync(b, 'r');
  try {
    const ba = Buffer.alloc(1 << 20);
    const bb = Buffer.alloc(1 << 20);
    for (let pos = 0; pos < sa.size; ) {
      const na = fs.readSync(fa, ba, 0, ba.length, pos);
      const nb = fs.readSync(fb, bb, 0, bb.length, pos);
      if (na !== nb || na === 0 || !ba.subarray(0, na).equals(bb.subarray(0, nb))) return false;
      pos += na;
    }
    return true;
  } finally {
    fs.closeSync(fa);
    fs.closeSync(fb);
  }
}

/** Whether the binding in `dir` loads in a fresh Node process. */
function bindingLoads(dir) {
  const binding = path.join(dir, 'onnxruntime_binding.node');
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(binding)})`], { stdio: 'pipe', timeout: 60_000 });
  return r.status === 0;
}

/**
 * Trims one onnxruntime-node folder. Returns { removed: string[], bytes: number, notes: string[] } (removed: paths
 * relative to bin/napi-v3; bytes: freed).
 */
function prune(pkgDir, opts) {
  const napi = path.join(pkgDir, 'bin', 'napi-v3');
  const out = { removed: [], bytes: 0, notes: [] };
  const keep = path.join(napi, opts.platform, opts.arch);
  if (!isDir(keep)) {
    out.notes.push(`no ${opts.platform}/${opts.arch} binaries in ${napi}; left it as it is`);
    return out;
  }
  for (const platform of fs.readdirSync(napi)) {
    const pDir = path.join(napi, platform);
    if (!isDir(pDir)) continue;
    for (const arch of fs.readdirSync(pDir)) {
      if (platform === opts.platform && arch === opts.arch) continue;
      const aDir = path.join(pDir, arch);
      const bytes = sizeOf(aDir);
      fs.rmSync(aDir, { recursive: true, force: true });
      out.removed.push(`${platform}/${arch}`);
      out.bytes += bytes;
    }
    if (platform !== opts.platform && fs.readdirSync(pDir).length === 0) fs.rmdirSync(pDir);
  }
  if (opts.platform === 'win32') return out;
  // lib<name>.so.<major>.<minor>.<patch> beside lib<name>.so.<major> (the SONAME), or lib<name>.<major>.<minor>.<patch>.dylib
  // beside lib<name>.<major>.dylib: the longer name becomes a symlink to the shorter when both hold the same bytes.
  for (const name of fs.readdirSync(keep)) {
    const m = /^(.+\.so\.\d+)\.\d+\.\d+$/.exec(name) || /^(.+\.\d+)\.\d+\.\d+(\.dylib)$/.exec(name);
    if (!m) continue;
    const target = m[2] ? m[1] + m[2] : m[1];
    const full = path.join(keep, name);
    const targetFull = path.join(keep, target);
    if (!fs.existsSync(targetFull) || fs.lstatSync(full).isSymbolicLink() || !sameBytes(full, targetFull)) continue;
    const bytes = fs.lstatSync(full).size;
    const tmp = `${full}.prune-tmp`;
    fs.rmSync(tmp, { force: true });
    fs.symlinkSync(target, tmp);
    fs.renameSync(tmp, full); // atomic: the name is always either the copy or the symlink
    if (opts.verify && !bindingLoads(keep)) {
      fs.copyFileSync(targetFull, tmp);
      fs.renameSync(tmp, full);
      out.notes.push(`the binding did not load with ${name} as a symlink; put the copy back`);
      continue;
    }
    out.removed.push(`${opts.platform}/${opts.arch}/${name} (now a symlink to ${target})`);
    out.bytes += bytes;
  }
  return out;
}

function main() {
  try {
    if (process.env.RETRIEVAL_SWEEP_KEEP_ALL_PLATFORMS === '1') {
      console.log(`${TAG} RETRIEVAL_SWEEP_KEEP_ALL_PLATFORMS=1, onnxruntime-node left as installed`);
      return;
    }
    const opts = parseArgs(process.argv.slice(2));
    const dirs = findOnnxruntimeNode(opts.nodeModules);
    if (dirs.length === 0) {
      console.log(`${TAG} no onnxruntime-node in ${opts.nodeModules}; nothing to trim`);
      return;
    }
    for (const dir of dirs) {
      const r = prune(dir, opts);
      const rel = path.relative(process.cwd(), dir) || dir;
      for (const n of r.notes) console.log(`${TAG} ${rel}: ${n}`);
      if (r.removed.length === 0) console.log(`${TAG} ${rel}: only ${opts.platform}/${opts.arch} binaries left; nothing to remove`);
      else
        console.log(
          `${TAG} ${rel}: removed ${(r.bytes / 1048576).toFixed(1)} MB: ${r.removed.join(', ')}` +
            ` (keeps ${opts.platform}/${opts.arch}; RETRIEVAL_SWEEP_KEEP_ALL_PLATFORMS=1 keeps all)`,
        );
    }
  } catch (err) {
    console.warn(`${TAG} warning: could not trim onnxruntime-node (${err && err.message ? err.message : err}); the install is unchanged otherwise and works as is`);
  }
}

main();
process.exitCode = 0;
