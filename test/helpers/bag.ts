/**
 * A deterministic bag-of-words vector for tests that need a dense ranking without a model: each lower-cased
 * [a-z0-9]+ word adds 1 to bucket (31-polynomial hash of its characters mod 9973) mod `dimensions`; the vector is then
 * L2-normalised (all zeros when the text has no word). Same text, same vector, on every machine.
 */
export function bagVector(text: string, dimensions: number): Float32Array {
  const v = new Float32Array(dimensions);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 0;
    for (const c of w) h = (h * 31 + c.charCodeAt(0)) % 9973;
    v[h % dimensions] += 1;
  }
  let n = 0;
  for (const x of v) n += x * x;
  if (n > 0) for (let i = 0; i < dimensions; i++) v[i] /= Math.sqrt(n);
  return v;
}
