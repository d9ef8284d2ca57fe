#!/usr/bin/env node
// Generates src/gen from proto/ with buf and the local ts-proto plugin.
// `--check` regenerates into a temp dir and fails when src/gen differs (stale generated code).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, mkdirSync, cpSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, dirname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const out = mkdtempSync(join(tmpdir(), 'herald-gen-'));
const buf = join(root, 'node_modules', '.bin', 'buf');

// ts-proto's grpc-js serializers copy every encoded message once more (`Buffer.from(bytes)`)
// before grpc-js copies it again into its frame. The encoded bytes are a fresh array that no one
// else holds, so the Buffer can be a view of them: one copy (and, for the multi-megabyte peer
// stream batches, one set of freshly faulted pages) less per message sent. And they encode with
// src/uninitialized-bytes.ts's writer, whose buffers are not zeroed (why: that file).
const COPYING_SERIALIZE = /Buffer\.from\((\w+)\.encode\(value\)\.finish\(\)\)/g;
const VIEW_SERIALIZE = 'viewAsBuffer($1.encode(value, new UninitializedWriter()).finish())';
const WIRE_IMPORT = /^import \{ BinaryReader, BinaryWriter \} from "@bufbuild\/protobuf\/wire";$/m;
const VIEW_HELPER = `
/** The encoded bytes as a Buffer without copying them (scripts/gen-proto.mjs adds this). */
function viewAsBuffer(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}
`;

function rewriteSerializers(dir) {
  for (const f of listFiles(dir)) {
    if (!f.endsWith('.ts')) continue;
    const text = readFileSync(f, 'utf8');
    let next = text.replace(COPYING_SERIALIZE, VIEW_SERIALIZE);
    if (next === text) continue;
    // src/uninitialized-bytes.ts, from this file's folder under src/gen.
    const up = '../'.repeat(relative(dir, dirname(f)).split(sep).filter((p) => p !== '').length + 1);
    next = next.replace(WIRE_IMPORT, `$&\nimport { UninitializedWriter } from "${up}uninitialized-bytes.js";`);
    writeFileSync(f, next + VIEW_HELPER);
  }
}

function listFiles(dir) {
  if (!existsSync(dir)) return [];
  const files = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files.push(...listFiles(p));
    else files.push(p);
  }
  return files;
}

try {
  execFileSync(buf, ['generate', '--template', 'buf.gen.yaml', '-o', out], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  const fresh = join(out, 'src', 'gen');
  rewriteSerializers(fresh);
  const target = join(root, 'src', 'gen');
  if (check) {
    const a = listFiles(fresh).map((f) => relative(fresh, f)).sort();
    const b = listFiles(target).map((f) => relative(target, f)).filter((f) => f.endsWith('.ts')).sort();
    const problems = [];
    for (const f of a) {
      if (!b.includes(f)) problems.push(`missing ${f}`);
      else if (readFileSync(join(fresh, f), 'utf8') !== readFileSync(join(target, f), 'utf8')) problems.push(`differs ${f}`);
    }
    for (const f of b) if (!a.includes(f)) problems.push(`extra ${f}`);
    if (problems.length) {
      console.error(`src/gen is stale against proto/ (${problems.join('; ')}).\nFix: run \`npm run proto\` and commit src/gen.`);
      // Not process.exit: the temp dir is removed below first.
      process.exitCode = 1;
    } else {
      console.log('src/gen is current with proto/');
    }
  } else {
    rmSync(target, { recursive: true, force: true });
    mkdirSync(target, { recursive: true });
    cpSync(fresh, target, { recursive: true });
    console.log(`generated ${listFiles(target).length} files into src/gen`);
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
