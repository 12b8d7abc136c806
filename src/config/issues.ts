/**
 * Turning zod issues into the project's messages, `key.path: problem (got value); allowed ...`, with one rule for
 * unknown keys at any depth: each unknown key gets its own line naming its full key path, the nearest known key of
 * the same object (Levenshtein distance ≤ 2, via fastest-levenshtein) and that object's known keys.
 *
 * The known keys are read from the zod schema itself by walking it along the issue's path (through defaults,
 * optionals, pipes, arrays, records and unions), so a key added to a schema is known here without further code.
 */
import { closest, distance } from 'fastest-levenshtein';
import type { z } from 'zod';

/** Short JSON of a value for messages (at most 60 characters); `nothing` for undefined. */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** The value at `keyPath` inside `obj`; a non-object met on the way (a shorthand such as `use-lite`) is returned. */
export function valueAt(obj: unknown, keyPath: readonly PropertyKey[]): unknown {
  let cur: unknown = obj;
  for (const key of keyPath) {
    if (cur === null || typeof cur !== 'object') return cur;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** A dotted key path, array indices included as numbers: `embeddings.1.dtype`, `chunking.sizes.0`. */
export function formatKeyPath(keyPath: readonly PropertyKey[]): string {
  return keyPath.map(String).join('.');
}

type AnySchema = z.core.$ZodType;

interface Def {
  type: string;
  innerType?: AnySchema;
  in?: AnySchema;
  out?: AnySchema;
  element?: AnySchema;
  valueType?: AnySchema;
  options?: readonly AnySchema[];
  shape?: Record<string, AnySchema>;
  getter?: () => AnySchema;
}

function defOf(s: AnySchema): Def {
  return (s as unknown as { _zod: { def: Def } })._zod.def;
}

/** The schemas a value at this node may be checked by, wrappers removed (an object, array, record, union member...). */
function unwrap(s: AnySchema, depth = 0): AnySchema[] {
  if (depth > 20) return [];
  const d = defOf(s);
  switch (d.type) {
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return d.innerType ? unwrap(d.innerType, depth + 1) : [];
    case 'pipe': {
      // z.preprocess = pipe(transform, schema); .transform() = pipe(schema, transform): keep the side that checks.
      const side = d.in && defOf(d.in).type !== 'transform' ? d.in : d.out;
      return side ? unwrap(side, depth + 1) : [];
    }
    case 'lazy':
      return d.getter ? unwrap(d.getter(), depth + 1) : [];
    case 'union':
      return (d.options ?? []).flatMap((o) => unwrap(o, depth + 1));
    default:
      return [s];
  }
}

/**
 * The known keys of the object schema that checks the value at `keyPath`, or undefined when none is found. Among
 * several object schemas (a union) those that know none of `unknownKeys` (keys reported unknown there) are kept, and
 * the one sharing most keys with `value` wins.
 */
export function knownKeysAt(
  root: AnySchema,
  keyPath: readonly PropertyKey[],
  value: unknown,
  unknownKeys: readonly string[] = [],
): string[] | undefined {
  const shapes = objectShapesAt(root, keyPath);
  const all = shapes.map((shape) => Object.keys(shape));
  const unaware = all.filter((keys) => !unknownKeys.some((k) => keys.includes(k)));
  const candidates = unaware.length > 0 ? unaware : all;
  if (candidates.length === 0) return undefined;
  const given = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  const literalMismatches = (keys: string[]): number => {
    const shape = shapes[all.indexOf(keys)];
    let n = 0;
    for (const k of keys) {
      if (!Object.hasOwn(given, k)) continue;
      for (const node of unwrap(shape[k])) {
        const d = defOf(node) as Def & { values?: readonly unknown[] };
        if (d.type === 'literal' && d.values !== undefined && !d.values.includes(given[k])) n++;
      }
    }
    return n;
  };
  let best = candidates[0];
  let bestScore = -Infinity;
  for (const keys of candidates) {
    // A member whose literal (a discriminator such as engine: lancedb) the value contradicts is not the one meant.
    const score = Object.keys(given).filter((k) => keys.includes(k)).length - 1000 * literalMismatches(keys);
    if (score > bestScore) {
      best = keys;
      bestScore = score;
    }
  }
  return best;
}

/** The shapes of the object schemas that may check the value at `keyPath` (several for a union). */
function objectShapesAt(root: AnySchema, keyPath: readonly PropertyKey[]): Record<string, AnySchema>[] {
  let nodes = unwrap(root);
  for (const seg of keyPath) {
    const next: AnySchema[] = [];
    for (const n of nodes) {
      const d = defOf(n);
      if (d.type === 'object' && typeof seg === 'string' && d.shape && seg in d.shape) next.push(...unwrap(d.shape[seg]));
      else if (d.type === 'array' && typeof seg === 'number' && d.element) next.push(...unwrap(d.element));
      else if (d.type === 'record' && d.valueType) next.push(...unwrap(d.valueType));
    }
    nodes = next;
  }
  return nodes.filter((n) => defOf(n).type === 'object').map((n) => defOf(n).shape ?? {});
}

/** The known key nearest to `key` (Levenshtein distance ≤ 2 and shorter than the key, case ignored), if any. */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  if (known.length === 0) return undefined;
  const lower = key.toLowerCase();
  const byLower = new Map(known.map((k) => [k.toLowerCase(), k] as const));
  const hit = closest(lower, [...byLower.keys()]);
  const d = distance(lower, hit);
  return d <= 2 && d < key.length ? byLower.get(hit) : undefined;
}

/**
 * One message per problem: `key.path: message (got value)`, and for every unknown key (also inside a union member:
 * {@link flattenUnionIssues})
 * `key.path.key: unknown key (got value); did you mean key.path.near? known keys of key.path: a, b, c`
 * (the suggestion only when a known key is near).
 * @param root the schema that produced the issues (its shape supplies the known keys).
 * @param input what was parsed (for the values shown).
 * @param prefix key path the input sits at inside a larger document (e.g. `['embeddings', 1]`), default none.
 */
export function describeIssues(
  root: AnySchema,
  input: unknown,
  issues: readonly z.core.$ZodIssue[],
  prefix: readonly PropertyKey[] = [],
): string[] {
  const out: string[] = [];
  for (const issue of flattenUnionIssues(issues)) {
    const at = issue.path as PropertyKey[];
    if (issue.code === 'unrecognized_keys') {
      const parentValue = valueAt(input, at);
      const known = knownKeysAt(root, at, parentValue, issue.keys) ?? [];
      const parent = formatKeyPath([...prefix, ...at]);
      for (const key of issue.keys) {
        const full = formatKeyPath([...prefix, ...at, key]);
        const got = describeValue(valueAt(parentValue, [key]));
        const near = nearestKey(key, known);
        const tail: string[] = [];
        if (near !== undefined) tail.push(`did you mean ${formatKeyPath([...prefix, ...at, near])}?`);
        if (known.length > 0) tail.push(`known keys${parent ? ` of ${parent}` : ''}: ${known.join(', ')}`);
        out.push(`${full}: unknown key (got ${got})${tail.length > 0 ? `; ${tail.join(' ')}` : ''}`);
      }
      continue;
    }
    if (issue.code === 'invalid_union' && issue.errors.length === 0 && at.length > 0) {
      // A discriminated union whose discriminator matched no member (`keyword: [{engin: bm25}]`): besides saying so,
      // name the keys that no member knows, with the nearest known key (the misspelt discriminator itself).
      const parentAt = at.slice(0, -1);
      const parentValue = valueAt(input, parentAt);
      const memberKeys = [...new Set(objectShapesAt(root, parentAt).flatMap((shape) => Object.keys(shape)))];
      if (parentValue !== null && typeof parentValue === 'object' && !Array.isArray(parentValue) && memberKeys.length > 0) {
        for (const key of Object.keys(parentValue)) {
          if (memberKeys.includes(key)) continue;
          const near = nearestKey(key, memberKeys);
          out.push(
            `${formatKeyPath([...prefix, ...parentAt, key])}: unknown key (got ${describeValue((parentValue as Record<string, unknown>)[key])})` +
              `${near !== undefined ? `; did you mean ${formatKeyPath([...prefix, ...parentAt, near])}?` : ''}`,
          );
        }
      }
    }
    const keyPath = formatKeyPath([...prefix, ...at]) || '(top level)';
    // An apiKeyEnv that fails validation may be a pasted key: never echo it.
    const got = /(^|\.)apiKeyEnv$/.test(keyPath) ? '(value hidden)' : describeValue(valueAt(input, at));
    out.push(`${keyPath}: ${issue.message} (got ${got})`);
  }
  return out;
}

type Issue = z.core.$ZodIssue;

/** True when `issue` says the value is not of this union member's kind at all (a string given to an object member). */
function kindMismatch(issue: Issue): boolean {
  return issue.path.length === 0 && (issue.code === 'invalid_type' || issue.code === 'invalid_value');
}

/** What a member expected, for the message of a value no member fits: `"none"`, `number`, `array`. */
function expectation(issue: Issue): string {
  if (issue.code === 'invalid_type') return issue.expected;
  if (issue.code === 'invalid_value') return issue.values.map((v) => JSON.stringify(v)).join(' or ');
  return 'something else';
}

/**
 * `issues` with every `invalid_union` ("Invalid input", no key named) replaced by the issues of the union member the
 * value was meant for, paths made absolute, recursively. zod 4 reports a union's members' issues under one
 * `invalid_union` whenever more than one member failed, so an unknown key inside a fusion or rerank entry used to reach
 * the user as `rerank.0: Invalid input`. The member chosen: among those whose issues do not reject the value's kind at
 * its root (a string to an object member, another literal), the one with the fewest literal mismatches
 * (`invalid_value`, e.g. `method: convex` against the rrf member), then the fewest issues, then the first. When every
 * member rejects the value's kind, one issue at the union's path says what would fit (`must be "none" or object`).
 */
export function flattenUnionIssues(issues: readonly Issue[], base: readonly PropertyKey[] = []): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    const at = [...base, ...(issue.path as PropertyKey[])];
    if (issue.code !== 'invalid_union' || issue.errors.length === 0) {
      out.push({ ...issue, path: at } as Issue);
      continue;
    }
    const branches = issue.errors.filter((b) => b.length > 0);
    const fitting = branches.filter((b) => !b.some(kindMismatch));
    if (fitting.length === 0) {
      const wanted = [...new Set(branches.flatMap((b) => b.filter(kindMismatch).map(expectation)))];
      out.push({ ...issue, code: 'custom', path: at, message: `must be ${wanted.join(' or ')}` } as Issue);
      continue;
    }
    let best = fitting[0];
    const score = (b: readonly Issue[]) => b.filter((i) => i.code === 'invalid_value').length * 1000 + b.length;
    for (const b of fitting) if (score(b) < score(best)) best = b;
    out.push(...flattenUnionIssues(best, at));
  }
  return out;
}
