// JSON.parse with exact integers: an integer literal past Number.MAX_SAFE_INTEGER becomes a
// BigInt, every other value is what JSON.parse gives. For the derivation, whose products reach
// about 10^19 (SPEC §7 C4), past a JS number's exact range. Node 20 has no reviver source text,
// so long integer literals outside strings are marked before parsing and revived after.

// The marker as parsed (a NUL, then a name) and as written in JSON text (`\u0000` escaped).
const MARK = '\u0000scale-units-bigint:';
const MARK_TEXT = '\\u0000scale-units-bigint:';
// A string literal (kept as is) or a long integer literal (15+ digits: below that, always safe).
const TOKENS = /"(?:[^"\\]|\\.)*"|-?\d{16,}(?![.eE\d])/g;

/** Parses JSON text; integers past 2^53 - 1 in magnitude come back as BigInt. */
export function parseExactJson(text) {
  const marked = text.replace(TOKENS, (token) => (token.startsWith('"') ? token : `"${MARK_TEXT}${token}"`));
  return JSON.parse(marked, (_key, value) => {
    if (typeof value !== 'string' || !value.startsWith(MARK)) return value;
    const digits = value.slice(MARK.length);
    const number = Number(digits);
    return Number.isSafeInteger(number) ? number : BigInt(digits);
  });
}
