import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { checkOutputDir, checkOutputOutsideDataset } from '../../src/run/artifacts.js';
import {
  OWNER_FILE,
  acquireOutputLock,
  isOwnerAlive,
  lockFileOf,
  ownerRecord,
  processStartTime,
  removeStaleTemporaries,
} from '../../src/run/lock.js';
import { CheckpointStore, chunkingCheckpointKey } from '../../src/run/checkpoint.js';
import { chunkDocuments, defaultTokenizer } from '../../src/chunk/chunker.js';
import { isHarnessError } from '../../src/errors.js';
import type { Doc } from '../../src/types.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const hasProc = existsSync('/proc/self/stat');

/** The PID of a process that has exited (a child we ran to completion). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid!;
}

function freshParent(): string {
  return mkdtempSync(path.join(tmpdir(), 'rs-crash-'));
}

function tempFolder(parent: string, owner: object | null, pid = deadPid()): string {
  const dir = path.join(parent, `.results.tmp-${pid}-${Date.now()}`);
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'matrix.csv'), 'half written');
  if (owner) writeFileSync(path.join(dir, OWNER_FILE), JSON.stringify(owner));
  return dir;
}

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

describe('temporary result folders left by a killed run', () => {
  it('a stale temp folder of a dead owner is removed', () => {
    const parent = freshParent();
    const pid = deadPid();
    const dir = tempFolder(parent, { pid, startTime: 1, hostname: hostname(), createdAt: '2026-01-01T00:00:00Z' }, pid);
    checkOutputDir(path.join(parent, 'results'));
    expect(existsSync(dir)).toBe(false);
  });

  it("a live owner's temp folder is kept", () => {
    const parent = freshParent();
    const dir = tempFolder(parent, ownerRecord(), process.pid);
    checkOutputDir(path.join(parent, 'results'));
    expect(existsSync(dir)).toBe(true);
    expect(readFileSync(path.join(dir, 'matrix.csv'), 'utf8')).toBe('half written');
  });

  it.skipIf(!hasProc)('a reused PID is not mistaken for the owner: same PID, other start time, folder removed', () => {
    const parent = freshParent();
    const me = ownerRecord();
    const dir = tempFolder(parent, { ...me, startTime: me.startTime! + 1 }, process.pid);
    expect(isOwnerAlive({ ...me, startTime: me.startTime! + 1 })).toBe(false);
    removeStaleTemporaries(path.join(parent, 'results'));
    expect(existsSync(dir)).toBe(false);
  });

  it('a temp folder without an owner record falls back to the PID in its name', () => {
    const parent = freshParent();
    const dead = tempFolder(parent, null);
    const live = tempFolder(parent, null, process.pid);
    const r = removeStaleTemporaries(path.join(parent, 'results'));
    expect(r.removed).toEqual([dead]);
    expect(existsSync(live)).toBe(true);
  });

  it('a kill between the two renames of writeArtifacts loses nothing: the .old folder is put back as <out>', () => {
    const parent = freshParent();
    const old = path.join(parent, `results.old-${deadPid()}-${Date.now()}`);
    mkdirSync(old);
    writeFileSync(path.join(old, 'manifest.json'), JSON.stringify({ tool: 'retrieval-sweep', run: 'previous' }));
    const r = removeStaleTemporaries(path.join(parent, 'results'));
    expect(r.restored).toBe(old);
    expect(JSON.parse(readFileSync(path.join(parent, 'results', 'manifest.json'), 'utf8')).run).toBe('previous');
  });

  it.skipIf(!hasProc)('processStartTime reads field 22 of /proc/<pid>/stat (a number, stable for a live process)', () => {
    const t = processStartTime(process.pid);
    expect(Number.isInteger(t)).toBe(true);
    expect(processStartTime(process.pid)).toBe(t);
    expect(processStartTime(deadPid())).toBe(null);
  });
});

describe('the --out lock', () => {
  it('a second run on the same --out is refused naming the holder (in one process: the lock is not re-entrant)', () => {
    const out = path.join(freshParent(), 'results');
    const release = acquireOutputLock(out);
    const e = thrown(() => acquireOutputLock(out));
    expect(isHarnessError(e) && e.code).toBe('OUTPUT_INVALID');
    expect(e.message).toContain(`process ${process.pid}`);
    release();
    expect(existsSync(lockFileOf(out))).toBe(false);
  });

  it('the lock is taken when the parent of --out does not exist yet (results/ in a fresh clone)', () => {
    const out = path.join(freshParent(), 'results', 'helpdesk');
    const release = acquireOutputLock(out);
    expect(existsSync(lockFileOf(out))).toBe(true);
    release();
    expect(existsSync(lockFileOf(out))).toBe(false);
  });

  it('a stale lock of a dead owner is taken over', () => {
    const out = path.join(freshParent(), 'results');
    writeFileSync(lockFileOf(out), JSON.stringify({ pid: deadPid(), startTime: 1, hostname: hostname(), createdAt: '2026-01-01T00:00:00Z' }));
    const release = acquireOutputLock(out);
    expect(JSON.parse(readFileSync(lockFileOf(out), 'utf8')).pid).toBe(process.pid);
    release();
    expect(existsSync(lockFileOf(out))).toBe(false);
  });

  it('release never removes a lock another process has taken over since', () => {
    const out = path.join(freshParent(), 'results');
    const release = acquireOutputLock(out);
    const other = { pid: process.ppid, startTime: processStartTime(process.ppid), hostname: hostname(), createdAt: '2026-01-01T00:00:00Z' };
    writeFileSync(lockFileOf(out), JSON.stringify(other));
    release();
    expect(JSON.parse(readFileSync(lockFileOf(out), 'utf8')).pid).toBe(process.ppid);
  });

  it("checkOutputDir (and so writeArtifacts) refuses a folder whose lock a live process holds, naming its PID", () => {
    const out = path.join(freshParent(), 'results');
    writeFileSync(
      lockFileOf(out),
      JSON.stringify({ pid: process.ppid, startTime: processStartTime(process.ppid), hostname: hostname(), createdAt: '2026-01-01T00:00:00Z' }),
    );
    const e = thrown(() => checkOutputDir(out));
    expect(isHarnessError(e) && e.code).toBe('OUTPUT_INVALID');
    expect(e.message).toContain(`process ${process.ppid}`);
  });
});

describe('--out and the dataset folder', () => {
  it('--out inside the docs folder is refused, naming both paths', () => {
    const out = path.join(tiny, 'docs', 'results');
    const e = thrown(() => checkOutputOutsideDataset({ datasetPath: tiny }, out));
    expect(isHarnessError(e) && e.code).toBe('OUTPUT_INVALID');
    expect(e.message).toContain(out);
    expect(e.message).toContain(path.join(tiny, 'docs'));
  });

  it('--out inside the dataset root is refused; a dataset inside --out is refused; a sibling folder passes', () => {
    expect(() => checkOutputOutsideDataset({ datasetPath: tiny }, path.join(tiny, 'results'))).toThrow(/inside the dataset folder/);
    expect(() => checkOutputOutsideDataset({ datasetPath: tiny }, path.dirname(tiny))).toThrow(/would delete the dataset/);
    expect(() => checkOutputOutsideDataset({ datasetPath: tiny }, path.join(path.dirname(tiny), 'tiny-results'))).not.toThrow();
  });

  it('the refusal suggests a folder that works (not results/<name>, which just failed from inside the dataset)', () => {
    const suggested = (out: string): string => {
      const e = thrown(() => checkOutputOutsideDataset({ datasetPath: tiny, name: 'demo' }, out));
      const m = /--out (\S+)/.exec((e as { remedy?: string }).remedy ?? '');
      expect(m).not.toBeNull();
      return m![1];
    };
    // Run from inside the dataset, the default results/demo lands in it.
    const inside = suggested(path.join(tiny, 'results', 'demo'));
    expect(inside).toBe(path.join(path.dirname(tiny), 'results', 'demo'));
    expect(() => checkOutputOutsideDataset({ datasetPath: tiny, name: 'demo' }, inside)).not.toThrow();
    const around = suggested(path.dirname(tiny));
    expect(around).toBe(path.join(path.dirname(tiny), 'tiny-results', 'demo'));
    expect(() => checkOutputOutsideDataset({ datasetPath: tiny, name: 'demo' }, around)).not.toThrow();
  });
});

describe('chunking checkpoints', () => {
  const docs: Doc[] = [
    { id: 'a.md', text: 'First sentence here. Second sentence follows. A third one ends the document.' },
    { id: 'empty.md', text: '   ' },
    { id: 'b.md', text: 'Short.' },
  ];
  const spec = { size: 8, overlap: 2 };
  const tok = defaultTokenizer();

  it('a chunking read back from its checkpoint equals chunkDocuments, text re-sliced from the documents', () => {
    const store = new CheckpointStore(freshParent());
    const key = chunkingCheckpointKey('fp', docs, spec, tok.name);
    const chunks = chunkDocuments(docs, spec, tok);
    expect(store.getChunks(key, docs)).toBe(undefined);
    expect(store.putChunks(key, docs, chunks)).toBe(chunks);
    // 76-byte header (magic, count, key digest, sha256 of the fields) + 5 int32 (20 bytes) per chunk.
    expect(readFileSync(path.join(store.dir, `${key}.chunks`)).length).toBe(8 + 4 + 32 + 32 + 20 * chunks.length);
    expect(store.getChunks(key, docs)).toEqual(chunks);
    expect(store.hits).toEqual([key]);
    expect(store.writes).toEqual([key]);
  });

  it('putChunks with the caller\'s document index writes the same file; an index that disagrees with docs writes nothing', () => {
    const chunks = chunkDocuments(docs, spec, tok);
    const key = chunkingCheckpointKey('fp', docs, spec, tok.name);
    const plain = new CheckpointStore(freshParent());
    plain.putChunks(key, docs, chunks);
    const indexed = new CheckpointStore(freshParent());
    expect(indexed.putChunks(key, docs, chunks, new Map(docs.map((d, i) => [d.id, i])))).toBe(chunks);
    expect(readFileSync(path.join(indexed.dir, `${key}.chunks`))).toEqual(readFileSync(path.join(plain.dir, `${key}.chunks`)));
    // the index swaps the two documents: a.md's chunks would be stored under b.md's index, so nothing is written
    const wrong = new CheckpointStore(freshParent());
    wrong.putChunks(key, docs, chunks, new Map(docs.map((d, i) => [d.id, docs.length - 1 - i])));
    expect(existsSync(path.join(wrong.dir, `${key}.chunks`))).toBe(false);
    expect(wrong.writes).toEqual([]);
  });

  it('the chunking key changes with the spec, the tokenizer, the fingerprint and the document order', () => {
    const k = chunkingCheckpointKey('fp', docs, spec, tok.name);
    expect(chunkingCheckpointKey('fp', docs, { size: 8, overlap: 1 }, tok.name)).not.toBe(k);
    expect(chunkingCheckpointKey('fp', docs, spec, 'other')).not.toBe(k);
    expect(chunkingCheckpointKey('fp2', docs, spec, tok.name)).not.toBe(k);
    expect(chunkingCheckpointKey('fp', [...docs].reverse(), spec, tok.name)).not.toBe(k);
  });

  it('a damaged chunking checkpoint is removed and recomputed, never trusted', () => {
    const store = new CheckpointStore(freshParent());
    const key = chunkingCheckpointKey('fp', docs, spec, tok.name);
    store.putChunks(key, docs, chunkDocuments(docs, spec, tok));
    const file = path.join(store.dir, `${key}.chunks`);
    writeFileSync(file, readFileSync(file).subarray(0, 30));
    expect(store.getChunks(key, docs)).toBe(undefined);
    expect(existsSync(file)).toBe(false);
  });

  it('a checkpoint whose ranges do not fit the documents is not trusted', () => {
    const store = new CheckpointStore(freshParent());
    const key = chunkingCheckpointKey('fp', docs, spec, tok.name);
    store.putChunks(key, docs, chunkDocuments(docs, spec, tok));
    const shorter = docs.map((d) => ({ ...d, text: d.text.slice(0, 3) }));
    expect(store.getChunks(key, shorter)).toBe(undefined);
  });
});
