/**
 * Issue 25 item 5: the root `postinstall` (scripts/prune-onnxruntime.cjs) trims onnxruntime-node to this machine's
 * binaries. Run as npm runs it (a child `node` process) on fake trees in a temporary folder, never on this clone's
 * node_modules: what it removes, the MB it prints, the symlink in place of the duplicate library, idempotence, the
 * no-ops, that it never fails (exit 0), and, on linux-x64, that the real binding loads through the symlink.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const script = path.join(repoRoot, 'scripts', 'prune-onnxruntime.cjs');
const require = createRequire(import.meta.url);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'prune-ort-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function run(...args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', cwd: dir, env: { ...process.env, RETRIEVAL_SWEEP_KEEP_ALL_PLATFORMS: '' } });
  return { status: r.status, out: r.stdout + r.stderr };
}

/** Writes `files` (path under bin/napi-v3 → byte count or content) into an onnxruntime-node folder at `pkg`. */
function fakeOrt(pkg: string, files: Record<string, number | Buffer>): void {
  for (const [rel, body] of Object.entries(files)) {
    const f = path.join(pkg, 'bin', 'napi-v3', rel);
    mkdirSync(path.dirname(f), { recursive: true });
    writeFileSync(f, typeof body === 'number' ? Buffer.alloc(body, 7) : body);
  }
}

/** Every file under `root`, relative, sorted; symlinks as `name -> target`. */
function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d).sort()) {
      const f = path.join(d, e);
      const st = lstatSync(f);
      if (st.isSymbolicLink()) out.push(`${path.relative(root, f)} -> ${readlinkSync(f)}`);
      else if (st.isDirectory()) walk(f);
      else out.push(path.relative(root, f));
    }
  };
  walk(root);
  return out;
}

const MB = 1048576;
const lib = Buffer.alloc(3 * MB, 1);

describe('scripts/prune-onnxruntime.cjs (the root postinstall)', () => {
  it('keeps only the given platform/arch, makes the identical versioned .so a symlink, prints the MB freed; a second run changes nothing', () => {
    const nm = path.join(dir, 'node_modules');
    const pkg = path.join(nm, 'onnxruntime-node');
    fakeOrt(pkg, {
      'darwin/arm64/libonnxruntime.1.21.0.dylib': 2 * MB,
      'darwin/x64/libonnxruntime.1.21.0.dylib': 2 * MB,
      'win32/x64/onnxruntime.dll': MB,
      'win32/x64/DirectML.dll': MB / 2,
      'linux/arm64/libonnxruntime.so.1': MB,
      'linux/x64/onnxruntime_binding.node': 1000,
      'linux/x64/libonnxruntime.so.1': lib,
      'linux/x64/libonnxruntime.so.1.21.0': lib,
      'linux/x64/libonnxruntime_providers_shared.so': 100,
    });
    const first = run('--node-modules', nm, '--platform', 'linux', '--arch', 'x64', '--no-verify');
    expect(first.status).toBe(0);
    const freed = (2 * MB + 2 * MB + MB + MB / 2 + MB + 3 * MB) / MB; // 9.5 MB
    expect(first.out).toContain(`removed ${freed.toFixed(1)} MB: darwin/arm64, darwin/x64, linux/arm64, win32/x64, linux/x64/libonnxruntime.so.1.21.0 (now a symlink to libonnxruntime.so.1)`);
    const after = [
      'bin/napi-v3/linux/x64/libonnxruntime.so.1',
      'bin/napi-v3/linux/x64/libonnxruntime.so.1.21.0 -> libonnxruntime.so.1',
      'bin/napi-v3/linux/x64/libonnxruntime_providers_shared.so',
      'bin/napi-v3/linux/x64/onnxruntime_binding.node',
    ];
    expect(tree(pkg)).toEqual(after);
    expect(readFileSync(path.join(pkg, 'bin/napi-v3/linux/x64/libonnxruntime.so.1.21.0')).equals(lib)).toBe(true);
    const second = run('--node-modules', nm, '--platform', 'linux', '--arch', 'x64', '--no-verify');
    expect(second.status).toBe(0);
    expect(second.out).toContain('only linux/x64 binaries left; nothing to remove');
    expect(tree(pkg)).toEqual(after);
  });

  it('also trims a copy nested under another package; libraries that differ stay two files', () => {
    const nm = path.join(dir, 'node_modules');
    const nested = path.join(nm, '@huggingface', 'transformers', 'node_modules', 'onnxruntime-node');
    const other = Buffer.from(lib);
    other[5] = 2;
    fakeOrt(nested, { 'darwin/x64/x.dylib': MB, 'linux/x64/libonnxruntime.so.1': lib, 'linux/x64/libonnxruntime.so.1.21.0': other });
    const r = run('--node-modules', nm, '--platform', 'linux', '--arch', 'x64', '--no-verify');
    expect([r.status, r.out.includes('removed 1.0 MB: darwin/x64 (keeps linux/x64')]).toEqual([0, true]);
    expect(tree(nested)).toEqual(['bin/napi-v3/linux/x64/libonnxruntime.so.1', 'bin/napi-v3/linux/x64/libonnxruntime.so.1.21.0']);
  });

  it('no-ops: no onnxruntime-node, no binaries for this platform, RETRIEVAL_SWEEP_KEEP_ALL_PLATFORMS=1; a bad argument warns; all exit 0', () => {
    const nm = path.join(dir, 'node_modules');
    mkdirSync(nm);
    const none = run('--node-modules', nm);
    expect([none.status, none.out.includes('no onnxruntime-node in')]).toEqual([0, true]);
    const pkg = path.join(nm, 'onnxruntime-node');
    fakeOrt(pkg, { 'linux/x64/a.so': 10, 'darwin/x64/b.dylib': 10 });
    const foreign = run('--node-modules', nm, '--platform', 'sunos', '--arch', 'sparc', '--no-verify');
    expect([foreign.status, foreign.out.includes('no sunos/sparc binaries in')]).toEqual([0, true]);
    const keep = spawnSync(process.execPath, [script, '--node-modules', nm, '--platform', 'linux', '--arch', 'x64'], {
      encoding: 'utf8',
      env: { ...process.env, RETRIEVAL_SWEEP_KEEP_ALL_PLATFORMS: '1' },
    });
    expect([keep.status, keep.stdout.includes('left as installed')]).toEqual([0, true]);
    const bad = run('--bogus');
    expect([bad.status, bad.out.includes('warning: could not trim onnxruntime-node (unknown argument "--bogus"')]).toEqual([0, true]);
    expect(tree(pkg)).toEqual(['bin/napi-v3/darwin/x64/b.dylib', 'bin/napi-v3/linux/x64/a.so']);
  });

  it('puts the copy back when the binding does not load through the symlink (a binding that is not a library at all)', () => {
    const nm = path.join(dir, 'node_modules');
    const pkg = path.join(nm, 'onnxruntime-node');
    fakeOrt(pkg, { 'linux/x64/onnxruntime_binding.node': Buffer.from('not an ELF file'), 'linux/x64/libonnxruntime.so.1': lib, 'linux/x64/libonnxruntime.so.1.21.0': lib });
    const r = run('--node-modules', nm, '--platform', 'linux', '--arch', 'x64');
    expect(r.status).toBe(0);
    expect(r.out).toContain('the binding did not load with libonnxruntime.so.1.21.0 as a symlink; put the copy back');
    expect(tree(pkg)).toEqual(['bin/napi-v3/linux/x64/libonnxruntime.so.1', 'bin/napi-v3/linux/x64/libonnxruntime.so.1.21.0', 'bin/napi-v3/linux/x64/onnxruntime_binding.node']);
    expect(readFileSync(path.join(pkg, 'bin/napi-v3/linux/x64/libonnxruntime.so.1.21.0')).equals(lib)).toBe(true);
  });

  it.skipIf(process.platform !== 'linux' || process.arch !== 'x64')('linux-x64: the real onnxruntime-node binding, trimmed, loads through the symlinked library (its InferenceSession is there)', () => {
    const real = path.dirname(require.resolve('onnxruntime-node/package.json'));
    const pkg = path.join(dir, 'node_modules', 'onnxruntime-node');
    mkdirSync(path.join(pkg, 'bin', 'napi-v3', 'linux'), { recursive: true });
    cpSync(path.join(real, 'bin', 'napi-v3', 'linux', 'x64'), path.join(pkg, 'bin', 'napi-v3', 'linux', 'x64'), { recursive: true, dereference: true });
    const r = run('--node-modules', path.join(dir, 'node_modules'));
    expect(r.status).toBe(0);
    expect(r.out).toContain('linux/x64/libonnxruntime.so.1.21.0 (now a symlink to libonnxruntime.so.1)');
    const binding = path.join(pkg, 'bin', 'napi-v3', 'linux', 'x64', 'onnxruntime_binding.node');
    const probe = spawnSync(process.execPath, ['-e', `const b = require(${JSON.stringify(binding)}); console.log(typeof b.InferenceSession)`], { encoding: 'utf8' });
    expect([probe.status, probe.stdout.trim()]).toEqual([0, 'function']);
    expect(existsSync(path.join(pkg, 'bin', 'napi-v3', 'linux', 'x64', 'libonnxruntime.so.1.21.0'))).toBe(true);
  });
});
