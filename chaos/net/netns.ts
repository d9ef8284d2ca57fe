// Kernel network partitions for tests, benches and the chaos suite: each member gets a network
// namespace of its own, joined to the others by a bridge in the root namespace (which keeps an
// address on the bridge, so processes left in the root namespace — the orchestrator, the ledger,
// SDK clients — reach every member). All faults are made in the kernel and are silent: no RST,
// FIN or ICMP error tells anyone, as when a switch port or a VM's network freezes.
// - cut(i): the host side of member i's veth goes down — nothing in or out, for anyone.
// - drop(pairs): nftables drops frames from member a to member b on the bridge (directed, so
//   one-way partitions exist; both still reach the root namespace). See nft-drops.ts.
// - loss(members, perMille): random frame loss between those members (nft numgen).
// - block(i, j): routes between i and j through a gateway nobody holds (no nft needed).
// The proxy faults (link-proxy.ts) close or stall connections they own; these do not.
//
//   const lab = await NetnsLab.create(3);   // needs root and iproute2; see netnsUnavailable()
//   spawn('ip', [...lab.exec(0), process.execPath, ...]);  // member 0 runs in its namespace
//   await lab.cut(0); ...; await lab.heal(0);
//   await lab.destroy();                     // deletes everything it made, nothing else
// Everything a lab makes is also removed on exit, on SIGINT/SIGTERM/SIGHUP (netns-registry.ts),
// and swept by the next lab if its process died of SIGKILL.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { nextLabPrefix, registerLab, sweepOrphans, unregisterLab } from './netns-registry.js';
import { NftDrops, nftUnavailable } from './nft-drops.js';

const run = promisify(execFile);

async function ip(...args: string[]): Promise<string> {
  return (await run('ip', args, { timeout: 10_000 })).stdout;
}

function ipSync(...args: string[]): void {
  try {
    execFileSync('ip', args, { timeout: 10_000, stdio: 'ignore' });
  } catch {
    // already gone
  }
}

/**
 * Why namespaces cannot be made here (not root, no `ip`), or undefined when they can. Tests skip
 * with this reason in their name.
 */
export async function netnsUnavailable(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'network namespaces need root (run as root, as CI does)';
  try {
    await run('ip', ['-V'], { timeout: 5_000 });
  } catch {
    return 'network namespaces need iproute2 (`ip` not found)';
  }
  return undefined;
}

/** netnsUnavailable, and nft for drop()/loss() (installed with apt-get when missing, as root). */
export async function kernelFaultsUnavailable(): Promise<string | undefined> {
  return (await netnsUnavailable()) ?? (await nftUnavailable());
}

/** A free 10.a.b.0/24 (a in 200..249): none of the root namespace's addresses in it. */
async function freeSubnet(seed: number): Promise<string> {
  const used = new Set([...(await ip('-4', '-o', 'addr', 'show')).matchAll(/inet (\d+\.\d+\.\d+)\.\d+/g)].map((m) => m[1]!));
  for (let k = 0; k < 50 * 250; k++) {
    const n = (seed + k * 7919) % (50 * 250);
    const s = `10.${200 + Math.floor(n / 250)}.${n % 250}`;
    if (!used.has(s)) return s;
  }
  throw new Error('no free /24 in 10.200.0.0 - 10.249.249.0');
}

export class NetnsLab {
  private destroyed = false;
  private readonly cutMembers = new Set<number>();
  private readonly nft: NftDrops;

  private constructor(
    /** Unique to this lab: every name made starts with it (see netns-registry.ts). */
    readonly prefix: string,
    /** The first three octets of the /24 the members and the bridge live in. */
    private readonly subnet: string,
    readonly size: number,
  ) {
    this.nft = new NftDrops(prefix);
  }

  /**
   * Makes `size` namespaces on one new bridge, in a /24 no address of this machine is in. On
   * failure, whatever was made is removed again.
   */
  static async create(size: number): Promise<NetnsLab> {
    sweepOrphans();
    const prefix = nextLabPrefix();
    const subnet = await freeSubnet(process.pid * 31 + Number(prefix.slice(prefix.indexOf('_') + 1)));
    const lab = new NetnsLab(prefix, subnet, size);
    registerLab(lab);
    try {
      await ip('link', 'add', lab.bridge, 'type', 'bridge');
      await ip('addr', 'add', `${subnet}.254/24`, 'dev', lab.bridge);
      await ip('link', 'set', lab.bridge, 'up');
      for (let i = 0; i < size; i++) {
        const ns = lab.namespace(i);
        await ip('netns', 'add', ns);
        await ip('link', 'add', lab.hostVeth(i), 'type', 'veth', 'peer', 'name', lab.nsVeth(i));
        await ip('link', 'set', lab.nsVeth(i), 'netns', ns);
        await ip('link', 'set', lab.hostVeth(i), 'master', lab.bridge);
        await ip('link', 'set', lab.hostVeth(i), 'up');
        await ip('-n', ns, 'link', 'set', 'lo', 'up');
        await ip('-n', ns, 'addr', 'add', `${lab.address(i)}/24`, 'dev', lab.nsVeth(i));
        await ip('-n', ns, 'link', 'set', lab.nsVeth(i), 'up');
      }
    } catch (e) {
      await lab.destroy();
      throw e;
    }
    return lab;
  }

  get bridge(): string {
    return `${this.prefix}-br`;
  }

  /** The root namespace's address on the bridge (what members see the orchestrator as). */
  get hostAddress(): string {
    return `${this.subnet}.254`;
  }

  namespace(i: number): string {
    return `${this.prefix}-n${i}`;
  }

  private hostVeth(i: number): string {
    return `${this.prefix}-h${i}`;
  }

  private nsVeth(i: number): string {
    return `${this.prefix}-v${i}`;
  }

  /** Member i's address (inside its namespace). */
  address(i: number): string {
    return `${this.subnet}.${i + 1}`;
  }

  /** The command prefix that runs a program in member i's namespace (`ip netns exec` execs in place: same pid). */
  exec(i: number): string[] {
    return ['ip', 'netns', 'exec', this.namespace(i)];
  }

  /** Member i's link goes silent both ways, for everyone (no RST, no FIN, no ICMP). */
  async cut(i: number): Promise<void> {
    await ip('link', 'set', this.hostVeth(i), 'down');
    this.cutMembers.add(i);
  }

  /** Member i's link carries traffic again. */
  async heal(i: number): Promise<void> {
    await ip('link', 'set', this.hostVeth(i), 'up');
    this.cutMembers.delete(i);
  }

  /** Members whose link is cut now. */
  get cutNow(): number[] {
    return [...this.cutMembers];
  }

  /**
   * Exactly these directed member pairs [from, to] drop (frames from `from` to `to` vanish on
   * the bridge); every other pair flows. An empty list heals every drop. Needs nft.
   */
  async drop(pairs: ReadonlyArray<readonly [number, number]>): Promise<void> {
    await this.nft.setDrops(pairs.map(([a, b]) => [this.address(a), this.address(b)] as const));
  }

  /** Random loss (perMille/1000 of frames) between any two of `members`; 0 heals. Needs nft. */
  async loss(members: readonly number[], perMille: number): Promise<void> {
    await this.nft.setLoss(
      members.map((m) => this.address(m)),
      perMille,
    );
  }

  /**
   * Members i and j stop hearing each other while both keep talking to everyone else (a worker
   * cut from the leader only): each routes the other's address through a gateway that does not
   * exist, so packets between them go nowhere — no RST, no FIN on the wire; only a new connect
   * may see EHOSTUNREACH locally once address resolution gives up, as on a real network.
   * (Routes, not nft: works where nftables is not installed.)
   */
  async block(i: number, j: number): Promise<void> {
    await ip('-n', this.namespace(i), 'route', 'add', `${this.address(j)}/32`, 'via', this.nowhere);
    await ip('-n', this.namespace(j), 'route', 'add', `${this.address(i)}/32`, 'via', this.nowhere);
  }

  async unblock(i: number, j: number): Promise<void> {
    await ip('-n', this.namespace(i), 'route', 'del', `${this.address(j)}/32`).catch(() => undefined);
    await ip('-n', this.namespace(j), 'route', 'del', `${this.address(i)}/32`).catch(() => undefined);
  }

  /** An address on the members' subnet that nobody holds. */
  private get nowhere(): string {
    return `${this.subnet}.250`;
  }

  /** Deletes the namespaces, veths, bridge and nft table this lab made (and nothing else). */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    await this.nft.destroy();
    for (let i = 0; i < this.size; i++) {
      await ip('netns', 'delete', this.namespace(i)).catch(() => undefined); // takes its veth end along
      await ip('link', 'delete', this.hostVeth(i)).catch(() => undefined);
    }
    await ip('link', 'delete', this.bridge).catch(() => undefined);
    unregisterLab(this);
  }

  /** destroy(), synchronously (exit hooks). */
  destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.nft.destroySync();
    for (let i = 0; i < this.size; i++) {
      ipSync('netns', 'delete', this.namespace(i));
      ipSync('link', 'delete', this.hostVeth(i));
    }
    ipSync('link', 'delete', this.bridge);
    unregisterLab(this);
  }
}
