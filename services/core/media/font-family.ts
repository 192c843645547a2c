import { readFile } from 'node:fs/promises';

/**
 * The family name (name ID 1) a TrueType or OpenType font file declares, which libass needs to
 * pick that font among those of a `fontsdir`; undefined when the file has no readable name table.
 */
export async function fontFamily(fontFile: string): Promise<string | undefined> {
  const font = await readFile(fontFile);
  const tables = font.length >= 12 ? font.readUInt16BE(4) : 0;
  for (let t = 0; t < tables && 12 + 16 * (t + 1) <= font.length; t++) {
    const record = 12 + 16 * t;
    if (font.toString('latin1', record, record + 4) !== 'name') continue;
    return familyFromNameTable(font, font.readUInt32BE(record + 8));
  }
  return undefined;
}

function familyFromNameTable(font: Buffer, table: number): string | undefined {
  if (table + 6 > font.length) return undefined;
  const count = font.readUInt16BE(table + 2);
  const strings = table + font.readUInt16BE(table + 4);
  let fallback: string | undefined;
  for (let i = 0; i < count && table + 6 + 12 * (i + 1) <= font.length; i++) {
    const r = table + 6 + 12 * i;
    const [platform, nameId, length, offset] = [0, 6, 8, 10].map((at) => font.readUInt16BE(r + at));
    if (nameId !== 1 || length === undefined || offset === undefined) continue;
    const bytes = font.subarray(strings + offset, strings + offset + length);
    // Windows names are UTF-16BE; Macintosh ones are single bytes (ASCII for family names).
    if (platform === 3) return Buffer.from(bytes).swap16().toString('utf16le');
    if (platform === 1) fallback ??= bytes.toString('latin1');
  }
  return fallback;
}
