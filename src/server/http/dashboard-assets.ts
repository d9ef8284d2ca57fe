// The dashboard's static files (built by `npm run build` into dist/dashboard from dashboard/),
// read once at start and served from memory: a handful of small files, nothing fetched at run time.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};
// Everything the page loads comes from this node; no inline scripts, no framing.
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** dist/dashboard of this installation, found whether the node runs from src/ or dist/. */
export function dashboardDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'dist', 'dashboard');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

interface Asset {
  body: Buffer;
  type: string;
  immutable: boolean;
}

function readAll(root: string): Map<string, Asset> {
  const files = new Map<string, Asset>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else {
        const rel = relative(root, p).split(sep).join('/');
        // vite puts a content hash in every name under assets/: safe to cache for good.
        files.set(`/${rel}`, { body: readFileSync(p), type: TYPES[extname(p)] ?? 'application/octet-stream', immutable: rel.startsWith('assets/') });
      }
    }
  };
  walk(root);
  return files;
}

export interface DashboardAssets {
  handle(req: IncomingMessage, res: ServerResponse): void;
}

export function dashboardAssets(root: string | undefined = dashboardDir()): DashboardAssets {
  const files = root ? readAll(root) : new Map<string, Asset>();
  return {
    handle(req, res) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
        return;
      }
      const path = (req.url ?? '/').split('?')[0]!;
      const asset = files.get(path === '/' ? '/index.html' : path);
      if (!asset) {
        const why = files.size === 0 ? 'the dashboard is not built in this installation: run `npm run build`\n' : `not found: ${path}\n`;
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(why);
        return;
      }
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': asset.type,
        'content-length': asset.body.length,
        'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      });
      res.end(req.method === 'HEAD' ? undefined : asset.body);
    },
  };
}
