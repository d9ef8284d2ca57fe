// The build a chaos run's nodes execute, copied once at the start of the run into the run's
// directory (dist/, bin/, proto/, package.json; node_modules linked). Several engineers rebuild
// dist/ in the shared tree while long runs go on; without this copy a node restarted mid-run
// would run different code than its peers and read its own data with a changed record format.
import { cp, copyFile, mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from './cluster-processes.js';

/** Copies the current build under `dir`; returns the path of its bin/herald.mjs. */
export async function snapshotBuild(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  await Promise.all([
    cp(join(REPO_ROOT, 'dist'), join(dir, 'dist'), { recursive: true }),
    cp(join(REPO_ROOT, 'bin'), join(dir, 'bin'), { recursive: true }),
    cp(join(REPO_ROOT, 'proto'), join(dir, 'proto'), { recursive: true }),
    copyFile(join(REPO_ROOT, 'package.json'), join(dir, 'package.json')),
    symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir'),
  ]);
  return join(dir, 'bin', 'herald.mjs');
}
