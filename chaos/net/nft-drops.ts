// Packet drops between the members of a lab, made by nftables on the lab's bridge (one table of
// the `bridge` family in the root namespace, hook forward): a frame from member A to member B is
// dropped silently — no RST, no ICMP — while both still reach the root namespace (the
// orchestrator, the ledger) and everyone else. Drops are directed, so one-way partitions are
// possible; each change replaces the whole set in one nft transaction (atomic: a partition
// shape never shows half-applied). Random loss between chosen members uses `numgen random`.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

let nftCheck: Promise<string | undefined> | undefined;

/**
 * Why nft cannot be used here, or undefined. When `nft` is missing and we are root with apt-get
 * (CI), installs the nftables package first (once per process; said on stderr).
 */
export function nftUnavailable(): Promise<string | undefined> {
  nftCheck ??= (async () => {
    const works = async () => {
      try {
        await run('nft', ['--version'], { timeout: 5_000 });
        return true;
      } catch {
        return false;
      }
    };
    if (await works()) return undefined;
    if (process.getuid?.() !== 0) return 'nft (nftables) not found, and installing it needs root';
    try {
      await run('apt-get', ['--version'], { timeout: 5_000 });
    } catch {
      return 'nft (nftables) not found and no apt-get to install it';
    }
    process.stderr.write('[netns] nft not found: installing nftables with apt-get\n');
    const install = () => run('apt-get', ['install', '-y', '-q', '-o', 'DPkg::Lock::Timeout=120', 'nftables'], { timeout: 300_000, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    try {
      await install();
    } catch {
      try {
        await run('apt-get', ['update', '-q'], { timeout: 300_000 });
        await install();
      } catch (e) {
        return `nft (nftables) not found and apt-get could not install it: ${(e as Error).message.split('\n')[0]}`;
      }
    }
    return (await works()) ? undefined : 'nft (nftables) still not usable after apt-get install';
  })();
  return nftCheck;
}

async function nft(script: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = execFile('nft', ['-f', '-'], { timeout: 10_000 }, (err, _out, stderr) => (err ? reject(new Error(`nft: ${stderr || err.message}`)) : resolve()));
    child.stdin!.end(script);
  });
}

export class NftDrops {
  private created = false;

  /** `table` must be a valid nft identifier; it is created on first use, in the root namespace. */
  constructor(readonly table: string) {}

  private async ensure(): Promise<void> {
    if (this.created) return;
    const why = await nftUnavailable();
    if (why) throw new Error(why);
    await nft(
      `table bridge ${this.table} {\n` +
        `  set drops { type ipv4_addr . ipv4_addr; }\n` +
        `  chain partition { type filter hook forward priority 0; policy accept; ip saddr . ip daddr @drops drop; }\n` +
        `  chain loss { type filter hook forward priority 1; policy accept; }\n` +
        `}\n`,
    );
    this.created = true;
  }

  /** Exactly these directed pairs [from, to] drop (every other pair flows). */
  async setDrops(pairs: ReadonlyArray<readonly [string, string]>): Promise<void> {
    if (!this.created && pairs.length === 0) return;
    await this.ensure();
    const elems = pairs.map(([a, b]) => `${a} . ${b}`).join(', ');
    await nft(`flush set bridge ${this.table} drops\n${pairs.length ? `add element bridge ${this.table} drops { ${elems} }\n` : ''}`);
  }

  /** Frames between any two of `addresses` are dropped with probability perMille/1000 (0 = none). */
  async setLoss(addresses: readonly string[], perMille: number): Promise<void> {
    if (!this.created && perMille <= 0) return;
    await this.ensure();
    const set = `{ ${addresses.join(', ')} }`;
    const share = perMille >= 1000 ? '' : `numgen random mod 1000 < ${Math.round(perMille)} `;
    const rule = perMille > 0 && addresses.length > 1 ? `add rule bridge ${this.table} loss ip saddr ${set} ip daddr ${set} ${share}drop\n` : '';
    await nft(`flush chain bridge ${this.table} loss\n${rule}`);
  }

  async destroy(): Promise<void> {
    if (!this.created) return;
    this.created = false;
    await run('nft', ['delete', 'table', 'bridge', this.table], { timeout: 10_000 }).catch(() => undefined);
  }

  destroySync(): void {
    if (!this.created) return;
    this.created = false;
    try {
      execFileSync('nft', ['delete', 'table', 'bridge', this.table], { timeout: 10_000, stdio: 'ignore' });
    } catch {
      // already gone
    }
  }
}
