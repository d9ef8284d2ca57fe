// Kernel network partitions for tests, benches and the chaos suite: each member gets a network
// namespace of its own, joined to the others by a bridge in the root namespace (which keeps an
// address on the bridge, so processes left in the root namespace — the orchestrator, workers —
// reach every member). A cut takes the host side of a member's veth down: frames stop both ways,
// and no RST, FIN or ICMP error tells anyone, as when a switch port or a VM's network freezes.
// The proxy faults (link-proxy.ts) close or stall connections they own; these do not.
//
//   const lab = await NetnsLab.create(3);   // needs root and iproute2; see netnsUnavailable()
//   spawn('ip', [...lab.exec(0), process.execPath, ...]);  // member 0 runs in its namespace
//   await lab.cut(0); ...; await lab.heal(0);
//   await lab.destroy();                     // deletes everything it made, nothing else
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function ip(...args: string[]): Promise<void> {
  await run('ip', args, { timeout: 10_000 });
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

export class NetnsLab {
  private destroyed = false;

  private constructor(
    /** Unique to this process: every name made starts with it. */
    readonly prefix: string,
    /** The first three octets of the /24 the members and the bridge live in. */
    private readonly subnet: string,
    readonly size: number,
  ) {}

  /**
   * Makes `size` namespaces on one new bridge. Names start with hx<pid>- style prefixes (15
   * characters at most for interfaces); the /24 is picked from the pid so that concurrent labs
   * on one machine do not collide. On failure, whatever was made is removed again.
   */
  static async create(size: number, id = process.pid): Promise<NetnsLab> {
    const prefix = `hx${id % 100_000}`;
    const subnet = `10.${200 + (Math.floor(id / 250) % 50)}.${id % 250}`;
    const lab = new NetnsLab(prefix, subnet, size);
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

  /** The command prefix that runs a program in member i's namespace. */
  exec(i: number): string[] {
    return ['ip', 'netns', 'exec', this.namespace(i)];
  }

  /** Member i's link goes silent both ways (no RST, no FIN, no ICMP). */
  async cut(i: number): Promise<void> {
    await ip('link', 'set', this.hostVeth(i), 'down');
  }

  /** Member i's link carries traffic again. */
  async heal(i: number): Promise<void> {
    await ip('link', 'set', this.hostVeth(i), 'up');
  }

  /**
   * Members i and j stop hearing each other while both keep talking to everyone else (a worker
   * cut from the leader only): each routes the other's address through a gateway that does not
   * exist, so packets between them go nowhere — no RST, no FIN on the wire; only a new connect
   * may see EHOSTUNREACH locally once address resolution gives up, as on a real network.
   * (Routes, not traffic-control filters: the drop action is not available on every kernel.)
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

  /** Deletes the namespaces, veths and the bridge this lab made (and nothing else). */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    for (let i = 0; i < this.size; i++) {
      await ip('netns', 'delete', this.namespace(i)).catch(() => undefined); // takes its veth end along
      await ip('link', 'delete', this.hostVeth(i)).catch(() => undefined);
    }
    await ip('link', 'delete', this.bridge).catch(() => undefined);
  }
}
