/**
 * Real resource errors through the CLI (issue 24 §3), not injected ones: a full disk (a filled 64 KiB tmpfs) under
 * cacheDir and under --out, and a read-only file system under cacheDir. Each exits 1 naming the errno, the path's
 * config key or flag and a remedy, and leaves no temporary behind. Needs root and a working `mount -t tmpfs`; skipped
 * otherwise (the reason is in the test's name). scripts/resource-errors.sh runs these and more (EACCES, ENOTDIR,
 * EMFILE) by hand.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT, runCli } from '../../src/cli/main.js';

const tiny = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sweep/tiny');
const work = mkdtempSync(path.join(tmpdir(), 'rs-mount-'));
const mounted: string[] = [];

/** Mounts a tmpfs with `options` at a new folder under the work folder; undefined when mounting is not possible. */
function tmpfs(name: string, options: string): string | undefined {
  const dir = path.join(work, name);
  mkdirSync(dir);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  mounted.push(dir);
  return dir;
}
const canMount = process.getuid?.() === 0 && tmpfs('probe', 'size=16k') !== undefined;

afterAll(() => {
  for (const m of mounted) {
    try {
      execFileSync('umount', [m], { stdio: 'ignore' });
    } catch {
      execFileSync('umount', ['-l', m], { stdio: 'ignore' });
    }
  }
  rmSync(work, { recursive: true, force: true });
});

async function run(name: string, cacheDir: string, out: string): Promise<{ code: number; err: string }> {
  const config = path.join(work, `${name}.yaml`);
  writeFileSync(config, `name: ${name}\ndataset: { path: ${tiny} }\nchunking: { sizes: [none, 16], overlap: 4 }\ntopK: [1, 3]\nmodes: [keyword]\nprimaryMetric: ndcg@3\ncacheDir: ${cacheDir}\n`);
  let err = '';
  const code = await runCli(['node', 'retrieval-sweep', 'run', config, '--out', out], { stdout: () => undefined, stderr: (s) => void (err += s) });
  process.exitCode = undefined;
  return { code, err };
}

/** Every name under `dir` that is a temporary of src/store/temp.ts or src/run/lock.ts. */
const temporaries = (dir: string): string[] =>
  (readdirSync(dir, { recursive: true }) as string[]).filter((n) => /\.(tmp|probe)-\d+-\d+$|\.old-\d+-\d+$|\.lock$/.test(n));

describe.skipIf(!canMount)(`real resource errors${canMount ? '' : ' (skipped: needs root and mount -t tmpfs)'}`, () => {
  it('a full disk under cacheDir: exit 1, ENOSPC under cacheDir with its remedy, no temporary left', async () => {
    const disk = tmpfs('full-cache', 'size=64k')!;
    writeFileSync(path.join(disk, 'filler'), Buffer.alloc(60 * 1024));
    const r = await run('full-cache', path.join(disk, 'c'), path.join(work, 'res-full-cache'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`under cacheDir ${path.join(disk, 'c')}`);
    expect(r.err).toContain(`ENOSPC: no space left on the device at ${path.join(disk, 'c', 'checkpoints')}/`);
    expect(r.err).toContain('remedy: free disk space there, or point cacheDir at a disk with room');
    expect(temporaries(disk)).toEqual([]);
  });

  it('a full disk under --out: exit 1, ENOSPC under --out, no temporary folder and no lock left', async () => {
    const disk = tmpfs('full-out', 'size=64k')!;
    writeFileSync(path.join(disk, 'filler'), Buffer.alloc(56 * 1024));
    const r = await run('full-out', path.join(work, 'cache-ok'), path.join(disk, 'res'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toMatch(new RegExp(`ENOSPC: no space left on the device at ${disk}/\\.res\\.tmp-\\d+-\\d+/\\S+ \\(write\\), under --out ${disk}`));
    expect(r.err).toContain('remedy: free disk space there, or point --out at a disk with room');
    expect(readdirSync(disk)).toEqual(['filler']);
  });

  it('a read-only file system under cacheDir is refused before any work, naming cacheDir', async () => {
    const disk = tmpfs('ro-cache', 'ro,size=16k')!;
    const r = await run('ro-cache', path.join(disk, 'c'), path.join(work, 'res-ro'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`cacheDir ${path.join(disk, 'c')} cannot be written: EROFS`);
    expect(r.err).not.toContain('chunk:');
  });
});
