// Serves a folder as any static host would: files only, no rewrites, no server-side state.
//   node scripts/serve.mjs DIR [--port N] [--prefix /some/sub/folder/]
// Binds 127.0.0.1 (localhost is a secure context, so WebCrypto can verify the component). Prints
// the page's URL. `startServer` is the same server for the end-to-end tests.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.ts': 'text/plain; charset=utf-8',
};

/** Starts the server; resolves to `{url, close()}`. `prefix` mounts the site below a sub-path. */
export async function startServer(dir, { port = 0, prefix = '/' } = {}) {
  const root = resolve(dir);
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://localhost');
    const path = decodeURIComponent(url.pathname);
    if (!path.startsWith(prefix)) {
      res.writeHead(404).end('not found');
      return;
    }
    let file = normalize(join(root, path.slice(prefix.length)));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end('forbidden');
      return;
    }
    try {
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      await stat(file);
    } catch {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache' });
    createReadStream(file).pipe(res);
  });
  await new Promise((ok, fail) => server.once('error', fail).listen(port, '127.0.0.1', ok));
  return {
    url: `http://localhost:${server.address().port}${prefix}`,
    close: () => new Promise((ok) => server.close(ok)),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args.splice(i, 2)[1] : fallback;
  };
  const port = Number(option('--port', '5180'));
  const prefix = option('--prefix', '/');
  const dir = args[0] ?? 'dist';
  const { url } = await startServer(dir, { port, prefix });
  console.log(`The playground: ${url}  (Ctrl-C stops it)`);
}
