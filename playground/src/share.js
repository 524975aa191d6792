// The whole playground state in the URL fragment: JSON, deflate-raw (the browser's own
// CompressionStream), base64url. A fragment never reaches the server, so any static host works.

const PREFIX = 's1.';

function toBase64Url(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function fromBase64Url(text) {
  const binary = atob(text.replaceAll('-', '+').replaceAll('_', '/'));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

async function pipe(bytes, stream) {
  const out = new Response(new Blob([bytes]).stream().pipeThrough(stream));
  return new Uint8Array(await out.arrayBuffer());
}

/** State -> `s1.<base64url of deflate-raw(JSON)>`. */
export async function encodeState(state) {
  const json = new TextEncoder().encode(JSON.stringify(state));
  return PREFIX + toBase64Url(await pipe(json, new CompressionStream('deflate-raw')));
}

/** The inverse of encodeState; throws on a fragment it did not write. */
export async function decodeState(fragment) {
  if (!fragment.startsWith(PREFIX)) throw new Error('not a playground share link');
  const json = await pipe(fromBase64Url(fragment.slice(PREFIX.length)), new DecompressionStream('deflate-raw'));
  return JSON.parse(new TextDecoder().decode(json));
}
