/**
 * The published package: `npm pack` (which runs `prepare`, i.e. the build) ships only bin/, dist/, schema/, README.md,
 * LICENSE and package.json, and the packed tarball, installed into an empty folder, runs `npx retrieval-sweep
 * --version` and imports as `retrieval-sweep` without tsx.
 *
 * How it is installed (the dependencies weigh several hundred MB: onnxruntime-node, LanceDB, transformers.js):
 * - RS_TARBALL_INSTALL=registry (set by .ci/run, where the npm registry is reachable): a real
 *   `npm install --prefer-offline --ignore-scripts --omit=dev <tarball>` into the empty folder. Scripts are skipped
 *   (better-sqlite3's prebuild download and onnxruntime-node's GPU download need the network beyond the registry);
 *   `--version` and the import need neither native module.
 * - otherwise (offline, the default here): npm cannot resolve the dependencies without the network, so the tarball
 *   is unpacked by npm's own tar format into `node_modules/retrieval-sweep` of the empty folder, its dependencies
 *   are linked to this clone's node_modules, and the bin is linked into node_modules/.bin as npm links it. The files
 *   shipped, the bin entry, `exports` and the compiled code are the tarball's; only the dependency install is not.
 * This is the only test that builds dist/ (through `npm pack`).
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
};
const mode = process.env.RS_TARBALL_INSTALL === 'registry' ? 'registry' : 'linked';
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';

let work: string;
let tarball: string;
let files: string[];
let app: string;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'rs-pack-'));
  const { stdout } = await run(npm, ['pack', '--json', '--pack-destination', work], { cwd: repoRoot, maxBuffer: 64 << 20 });
  const info = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  tarball = path.join(work, info[0].filename);
  files = info[0].files.map((f) => f.path).sort();
  app = path.join(work, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'empty-app', private: true, type: 'module' }));
  if (mode === 'registry') {
    await run(npm, ['install', '--prefer-offline', '--ignore-scripts', '--omit=dev', '--no-audit', '--no-fund', tarball], {
      cwd: app,
      maxBuffer: 64 << 20,
    });
  } else {
    const dest = path.join(app, 'node_modules', pkg.name);
    mkdirSync(dest, { recursive: true });
    await run('tar', ['-xzf', tarball, '-C', dest, '--strip-components=1']);
    // The dependencies, as npm would have placed them: found by Node's resolution from the package's folder.
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(dest, 'node_modules'), 'dir');
    const bin = path.join(app, 'node_modules', '.bin');
    mkdirSync(bin);
    for (const [name, target] of Object.entries(pkg.bin)) {
      symlinkSync(path.join('..', pkg.name, target), path.join(bin, name));
      chmodSync(path.join(dest, target), 0o755);
    }
  }
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe(`npm pack and an install of the tarball into an empty folder (${mode})`, () => {
  it('ships bin/, dist/, schema/, README.md, LICENSE and package.json only (no src/, test/, .ci/, configs/)', () => {
    const top = [...new Set(files.map((f) => f.split('/')[0]))].sort();
    for (const t of top) expect(['LICENSE', 'README.md', 'bin', 'dist', 'package.json', 'schema']).toContain(t);
    expect(files).toContain('dist/cli/bin.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files).toContain('dist/embed/use-lite-worker.cjs');
    expect(files.filter((f) => /\.test\.|^test\/|^src\/|^\.ci\//.test(f))).toEqual([]);
  });

  it('npx retrieval-sweep --version prints the version from the installed package, with no TypeScript loader', async () => {
    const { stdout } = await run(npx, ['--offline', '--no-install', 'retrieval-sweep', '--version'], { cwd: app });
    expect(stdout).toBe(`${pkg.version}\n`);
    const installed = path.join(app, 'node_modules', pkg.name);
    expect(existsSync(path.join(installed, 'src'))).toBe(false);
    expect(readFileSync(path.join(installed, pkg.bin['retrieval-sweep']), 'utf8')).not.toContain('tsx');
  });

  it('a usage error from the installed bin exits 2 with the usage line', async () => {
    const err = await run(npx, ['--offline', '--no-install', 'retrieval-sweep', 'run', '--bogus'], { cwd: app }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 2 });
    expect((err as { stderr: string }).stderr).toContain('usage: retrieval-sweep run [options] [config]');
  });

  it('imports as "retrieval-sweep" through the exports map (ESM, with types beside it)', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('retrieval-sweep'); console.log(typeof m.runSweep, typeof m.evaluate, typeof m.parseConfig)"],
      { cwd: app },
    );
    expect(stdout).toBe('function function function\n');
    const installedPkg = JSON.parse(readFileSync(path.join(app, 'node_modules', pkg.name, 'package.json'), 'utf8')) as {
      exports: { '.': { types: string } };
    };
    expect(existsSync(path.join(app, 'node_modules', pkg.name, installedPkg.exports['.'].types))).toBe(true);
  });
});
