// Received snapshots are staged on disk (never held whole in memory): written chunk by chunk
// while hashing, verified, fsynced, then renamed into place. The staged file stays until the
// state machine restored from it, so a crash between recording the snapshot in the log and
// restoring the state machine can be finished on restart.

import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import { createHash, type Hash } from 'node:crypto';
import { join } from 'node:path';
import type { SnapshotStaging } from '../ports.js';
import type { SnapshotMeta } from '../types.js';

export function stagedSnapshotPath(dir: string, meta: { index: number; term: number }): string {
  return join(dir, `snap-${meta.term}-${meta.index}.bin`);
}

export async function* readSnapshotFile(path: string): AsyncGenerator<Uint8Array> {
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) yield chunk as Buffer;
}

const STAGED_NAME = /^snap-\d+-(\d+)\.bin$/;

/**
 * Removes staged snapshots: with `upToIndex`, the finished ones at or below it (transfers still
 * being written and newer snapshots stay); without, everything (at startup, when no transfer runs).
 */
export async function pruneStagedSnapshots(dir: string, upToIndex?: number): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const doomed = names.filter((n) => {
    if (upToIndex === undefined) return true;
    const m = STAGED_NAME.exec(n);
    return m !== null && Number(m[1]) <= upToIndex;
  });
  await Promise.all(doomed.map((n) => rm(join(dir, n), { force: true })));
}

/** One incoming snapshot being written to disk. */
export class SnapshotWriter {
  private readonly hash: Hash = createHash('sha256');
  private bytes = 0;

  private constructor(
    private readonly fh: FileHandle,
    private readonly tmpPath: string,
    readonly finalPath: string,
  ) {}

  static async create(dir: string, meta: SnapshotMeta): Promise<SnapshotWriter> {
    await mkdir(dir, { recursive: true });
    const finalPath = stagedSnapshotPath(dir, meta);
    const tmpPath = `${finalPath}.${process.pid}.${Date.now()}.tmp`;
    return new SnapshotWriter(await open(tmpPath, 'w'), tmpPath, finalPath);
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    await this.fh.write(chunk);
  }

  /** Verifies size and SHA-256, fsyncs and renames into place; throws on a mismatch. */
  async finish(totalBytes: number, sha256: Uint8Array): Promise<string> {
    const digest = this.hash.digest();
    if (totalBytes !== this.bytes || !digest.equals(Buffer.from(sha256))) {
      await this.abort();
      throw new Error(`snapshot checksum mismatch (got ${this.bytes} bytes, trailer says ${totalBytes})`);
    }
    await this.fh.sync();
    await this.fh.close();
    await rename(this.tmpPath, this.finalPath);
    return this.finalPath;
  }

  async abort(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    await rm(this.tmpPath, { force: true });
  }
}

/** Production's SnapshotStaging: the staged snapshot files in one directory. */
export class StagedSnapshots implements SnapshotStaging {
  constructor(readonly dir: string) {}

  read(meta: SnapshotMeta): AsyncIterable<Uint8Array> {
    return readSnapshotFile(stagedSnapshotPath(this.dir, meta));
  }

  prune(installed: SnapshotMeta): Promise<void> {
    return pruneStagedSnapshots(this.dir, installed.index);
  }
}
