import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

function copyProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-proto-'));
  for (const p of ['proto', 'scripts', 'buf.yaml', 'buf.gen.yaml', 'src/gen']) {
    cpSync(join(root, p), join(dir, p), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

describe('generated code stays current with proto/', () => {
  let dir = '';
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = '';
  });

  it('passes the check on the committed tree', () => {
    const out = execFileSync('node', ['scripts/gen-proto.mjs', '--check'], { cwd: root, encoding: 'utf8' });
    expect(out).toContain('current');
  });

  it('fails with a message naming the fix when a .proto is edited without regenerating', () => {
    dir = copyProject();
    const file = join(dir, 'proto/herald/v1/job.proto');
    const before = readFileSync(file, 'utf8');
    // A field appended to the last message of the file.
    const end = before.lastIndexOf('\n}');
    const text = `${before.slice(0, end)}\n  // A field added without regenerating.\n  string extra_field_for_test = 99;${before.slice(end)}`;
    expect(text).not.toBe(before);
    writeFileSync(file, text);
    const res = spawnSync('node', ['scripts/gen-proto.mjs', '--check'], { cwd: dir, encoding: 'utf8' });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('src/gen is stale');
    expect(res.stderr).toContain('npm run proto');
    expect(res.stderr).toContain('herald/v1/job.ts');

    // Regenerating fixes it.
    execFileSync('node', ['scripts/gen-proto.mjs'], { cwd: dir, encoding: 'utf8' });
    const again = spawnSync('node', ['scripts/gen-proto.mjs', '--check'], { cwd: dir, encoding: 'utf8' });
    expect(again.status).toBe(0);
    expect(readFileSync(join(dir, 'src/gen/herald/v1/job.ts'), 'utf8')).toContain('extraField');
  });

  it('buf lint is clean', () => {
    const res = spawnSync(join(root, 'node_modules/.bin/buf'), ['lint'], { cwd: root, encoding: 'utf8' });
    expect(res.stdout + res.stderr).toBe('');
    expect(res.status).toBe(0);
  });
});
