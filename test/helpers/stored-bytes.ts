/**
 * The text store's size rule (src/load/text-store.ts), written out independently for tests: bytes a text takes in the
 * store. One a code unit when every code unit is below 256 (latin1); else its UTF-8 bytes when it is well formed (every
 * surrogate paired) and at most `utf8MaxUnits` code units long; else two a code unit (UTF-16LE).
 */
export function storedBytes(text: string, utf8MaxUnits: number): number {
  if (!/[^\u0000-\u00ff]/.test(text)) return text.length;
  const wellFormed = !/[\ud800-\udfff]/.test(text.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''));
  return wellFormed && text.length <= utf8MaxUnits ? Buffer.byteLength(text, 'utf8') : 2 * text.length;
}
