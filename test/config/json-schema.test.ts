/** The shipped JSON Schemas are generated from the zod schemas and cannot drift from them. */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runSchemaCommand } from '../../src/cli/schema.js';
import { jsonSchemas, SCHEMA_FILES, schemaFileText } from '../../src/config/json-schema.js';
import { configSchema } from '../../src/config/schema.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

type Json = Record<string, any>;

describe('JSON Schemas', () => {
  const schemas = jsonSchemas();

  it('the committed schema/*.json equal what jsonSchemas() generates (run `retrieval-sweep schema` after a schema change)', () => {
    for (const key of ['config', 'question'] as const) {
      const committed = readFileSync(path.join(repoRoot, 'schema', SCHEMA_FILES[key]), 'utf8');
      expect(committed, SCHEMA_FILES[key]).toBe(schemaFileText(schemas[key]));
    }
  });

  it('the config schema lists every top-level key of the zod schema and refuses unknown keys at every depth', () => {
    const c = schemas.config as Json;
    expect(Object.keys(c.properties)).toEqual(Object.keys(configSchema.shape));
    expect(c.additionalProperties).toBe(false);
    for (const k of ['dataset', 'chunking', 'hybrid', 'bm25', 'statistics']) expect(c.properties[k].additionalProperties, k).toBe(false);
    expect(c.required).toEqual(['dataset']);
    expect(c.properties.dataset.properties.strictness).toMatchObject({ enum: ['strict', 'warn'], default: 'strict' });
    expect(c.properties.chunking.properties.sizes.description).toContain('tokens');
  });

  it('an embedding entry is the string shorthand or the strict object form', () => {
    const items = (schemas.config as Json).properties.embeddings.items;
    expect(items.anyOf[0]).toEqual({ type: 'string' });
    expect(items.anyOf[1].additionalProperties).toBe(false);
    expect(items.anyOf[1].required).toEqual(['model']);
  });

  it('the question schema is strict, needs id and question, and bounds grades to 0..100', () => {
    const q = schemas.question as Json;
    expect(q.additionalProperties).toBe(false);
    expect(q.required).toEqual(['id', 'question']);
    expect(q.properties.relevant.anyOf[1].additionalProperties).toMatchObject({ type: 'integer', minimum: 0, maximum: 100 });
    expect(q.properties.evidence.items.additionalProperties).toBe(false);
  });

  it('retrieval-sweep schema --out writes the same two files', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-schema-'));
    const out = runSchemaCommand({ out: dir });
    expect(out.stderr).toContain(SCHEMA_FILES.config);
    expect(readdirSync(dir).sort()).toEqual(['config.schema.json', 'question.schema.json']);
    expect(readFileSync(path.join(dir, SCHEMA_FILES.question), 'utf8')).toBe(schemaFileText(schemas.question));
    expect(JSON.parse(runSchemaCommand({ stdout: true }).stdout)).toEqual(schemas);
  });

  it('every bundled config starts with the yaml-language-server $schema line', () => {
    const dir = path.join(repoRoot, 'configs');
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
      const first = readFileSync(path.join(dir, f), 'utf8').split('\n')[0];
      expect(first, f).toBe('# yaml-language-server: $schema=../schema/config.schema.json');
    }
  });
});

describe("README's option table", () => {
  it('names every config key (or its parent object), so a key added to the schema gets documented', () => {
    const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Outputs'));
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    const documented = new Set(rows.flatMap((r) => [...r.split('|')[1].matchAll(/`([^`]+)`/g)].map((m) => m[1])));
    const missing: string[] = [];
    const walk = (props: Record<string, Json>, prefix: string) => {
      for (const [key, sub] of Object.entries(props)) {
        const p = prefix ? `${prefix}.${key}` : key;
        if (documented.has(p)) continue;
        if (sub.type === 'object' && sub.properties && !documented.has(p)) walk(sub.properties, p);
        else if (!documented.has(prefix)) missing.push(p);
      }
    };
    walk((jsonSchemas().config as Json).properties, '');
    expect(missing).toEqual([]);
  });
});
