// `npm run bench -- <name> [args]`: runs bench/<name>.ts (each bench prints JSON as its last line).
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'cli.ts')
  .map((f) => f.slice(0, -3))
  .sort();
const name = process.argv[2];
if (!name || !available.includes(name)) {
  process.stderr.write(`usage: npm run bench -- <name> [args]\navailable: ${available.join(', ')}\n`);
  process.exit(2);
}
// The bench sees its own arguments from argv[2] on.
process.argv.splice(2, 1);
await import(pathToFileURL(join(here, `${name}.ts`)).href);
