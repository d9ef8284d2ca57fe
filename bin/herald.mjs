#!/usr/bin/env node
// The `herald` command. Runs the compiled CLI (dist/ is built by `npm ci` via `prepare`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
if (!existsSync(main)) {
  console.error('herald: the CLI is not built yet. Run `npm run build` (npm ci does it for you).');
  process.exit(70);
}
await import(main);
