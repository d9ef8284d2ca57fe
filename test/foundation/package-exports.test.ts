import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

describe('package exports', () => {
  it("exposes the SDK and Worker library as 'herald/client' (the README's import)", () => {
    const script = "import('herald/client').then((m) => console.log(['HeraldClient','Worker','cron','every','at','jobSpec','NonRetryableError'].map((k) => typeof m[k]).join(',')))";
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
    expect(res.stderr).toBe('');
    expect(res.stdout.trim()).toBe('function,function,function,function,function,function,function');
  });
});
