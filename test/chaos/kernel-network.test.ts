// The kernel fault primitives of `npm run chaos -- --netns` (chaos/net/netns.ts) really drop, and
// silently: across a cut link or an nft drop a TCP connect gets no answer at all (it times out —
// no RST, no ICMP error), traffic the fault does not name still flows, and the heal restores it.
// Each member runs a small agent (fixtures/net-agent.mjs) in its namespace. Also: whatever a lab
// made is gone after destroy(), after SIGTERM / SIGINT of its process, and — after SIGKILL — once
// the next lab is made (the sweep). Needs root, iproute2 and nft (installed with apt-get when
// missing); skipped with the reason otherwise.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kernelFaultsUnavailable, NetnsLab } from '../../chaos/net/netns.js';
import { waitFor } from '../../chaos/orchestrator/free-port.js';

const unavailable = await kernelFaultsUnavailable();
if (unavailable) console.warn(`kernel-network tests skipped: ${unavailable}`);
const skipNote = unavailable ? ` (skipped: ${unavailable})` : '';
const AGENT = join(import.meta.dirname, 'fixtures', 'net-agent.mjs');
const LAB_PROCESS = join(import.meta.dirname, 'fixtures', 'netns-lab-process.ts');
const PORT = 7411;
/** Long enough for a SYN/SYN-ACK on a bridge many times over; a drop never answers. */
const SILENT_MS = 800;

class Agent {
  private next = 0;
  private readonly waiting = new Map<number, (r: unknown) => void>();
  readonly ready: Promise<void>;
  constructor(readonly proc: ChildProcess) {
    let ready!: () => void;
    this.ready = new Promise((r) => (ready = r));
    createInterface({ input: proc.stdout! }).on('line', (l) => {
      const j = JSON.parse(l) as { ready?: boolean; id?: number; result?: unknown };
      if (j.ready) ready();
      else this.waiting.get(j.id!)?.(j.result);
    });
  }
  ask<T>(cmd: Record<string, unknown>): Promise<T> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve as (r: unknown) => void);
      this.proc.stdin!.write(`${JSON.stringify({ id, ...cmd })}\n`);
    });
  }
  connect(host: string, port = PORT): Promise<string> {
    return this.ask({ op: 'connect', host, port, timeoutMs: SILENT_MS });
  }
}

function names(prefix: string): string[] {
  const out = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' });
  const all = [out('ip', ['netns', 'list']), out('ip', ['-o', 'link', 'show']), out('nft', ['list', 'tables'])].join('\n');
  const words = all.split(/\s+/).map((w) => w.replace(/[:@].*$/, ''));
  return [...new Set(words.filter((w) => w.startsWith(`${prefix}-`) || w === prefix))].sort();
}

describe('kernel network faults (network namespaces on a bridge)', () => {
  let lab: NetnsLab;
  let agents: Agent[] = [];
  let rootServer: Server;

  beforeAll(async () => {
    if (unavailable) return;
    lab = await NetnsLab.create(3);
    agents = [0, 1, 2].map((i) => new Agent(spawn(lab.exec(i)[0]!, [...lab.exec(i).slice(1), process.execPath, AGENT, lab.address(i), String(PORT)], { stdio: ['pipe', 'pipe', 'inherit'] })));
    await Promise.all(agents.map((a) => a.ready));
    rootServer = createServer((s) => s.on('error', () => undefined));
    await new Promise<void>((r) => rootServer.listen(PORT, lab.hostAddress, r));
  });

  afterAll(async () => {
    if (unavailable) return;
    for (const a of agents) a.proc.stdin!.end();
    await Promise.all(agents.map((a) => new Promise((r) => (a.proc.exitCode !== null ? r(null) : a.proc.once('exit', r)))));
    rootServer?.close();
    const prefix = lab.prefix;
    await lab.destroy();
    expect(names(prefix)).toEqual([]);
  });

  it.skipIf(!!unavailable)(`a cut link is silent both ways, for everyone; heal restores it${skipNote}`, async () => {
    const [a0, a1] = agents as [Agent, Agent, Agent];
    expect(await a1.connect(lab.address(0))).toBe('connected');
    await lab.cut(0);
    try {
      expect(await a1.connect(lab.address(0))).toBe('timeout');
      expect(await a0.connect(lab.address(1))).toBe('timeout');
      expect(await a0.connect(lab.hostAddress)).toBe('timeout');
      expect(await a1.connect(lab.address(2))).toBe('connected');
    } finally {
      await lab.heal(0);
    }
    await waitFor('member 0 reachable again', async () => (await a1.connect(lab.address(0))) === 'connected', 5_000);
    expect(await a0.connect(lab.address(2))).toBe('connected');
  });

  it.skipIf(!!unavailable)(`an nft drop is directed and silent; members keep the root namespace; an empty set heals${skipNote}`, async () => {
    const [a0, a1, a2] = agents as [Agent, Agent, Agent];
    await lab.drop([[0, 1]]);
    try {
      // Datagrams show the direction: 0 → 1 vanish, 1 → 0 arrive.
      await a0.ask({ op: 'udp', host: lab.address(1), port: PORT, text: 'from-0' });
      await a1.ask({ op: 'udp', host: lab.address(0), port: PORT, text: 'from-1' });
      await waitFor('1 → 0 arrives', async () => (await a0.ask<string[]>({ op: 'received' })).includes('from-1'), 2_000);
      expect(await a1.ask<string[]>({ op: 'received' })).not.toContain('from-0');
      // TCP needs both directions: a connect across a one-way drop gets no answer either way.
      expect(await a0.connect(lab.address(1))).toBe('timeout');
      expect(await a1.connect(lab.address(0))).toBe('timeout');
      expect(await a0.connect(lab.address(2))).toBe('connected');
      expect(await a2.connect(lab.address(1))).toBe('connected');
      expect(await a0.connect(lab.hostAddress)).toBe('connected');
      expect(await a1.connect(lab.hostAddress)).toBe('connected');
      // A new set replaces the old one whole: now 0 is cut from both members both ways.
      await lab.drop([
        [0, 1],
        [1, 0],
        [0, 2],
        [2, 0],
      ]);
      expect(await a2.connect(lab.address(0))).toBe('timeout');
      expect(await a1.connect(lab.address(2))).toBe('connected');
      expect(await a0.connect(lab.hostAddress)).toBe('connected');
    } finally {
      await lab.drop([]);
    }
    expect(await a0.connect(lab.address(1))).toBe('connected');
    expect(await a2.connect(lab.address(0))).toBe('connected');
  });

  it.skipIf(!!unavailable)(`loss between members drops that share of frames; 0 heals${skipNote}`, async () => {
    const [a0] = agents as [Agent, Agent, Agent];
    await lab.loss([0, 1], 1000);
    try {
      expect(await a0.connect(lab.address(1))).toBe('timeout');
      expect(await a0.connect(lab.address(2))).toBe('connected');
    } finally {
      await lab.loss([], 0);
    }
    expect(await a0.connect(lab.address(1))).toBe('connected');
  });

  it.skipIf(!!unavailable)(`a lab's process ended by SIGTERM or SIGINT leaves no namespace, link or nft table behind; after SIGKILL the next lab sweeps them${skipNote}`, async () => {
    const signals = ['SIGTERM', 'SIGINT', 'SIGKILL'] as const;
    const children = signals.map(() => spawn(process.execPath, ['--import', 'tsx', LAB_PROCESS], { stdio: ['ignore', 'pipe', 'inherit'] }));
    const exited = children.map((c) => new Promise((r) => c.once('exit', r)));
    const prefixes = await Promise.all(
      children.map(async (c) => (JSON.parse(await new Promise<string>((r) => createInterface({ input: c.stdout! }).once('line', r))) as { prefix: string }).prefix),
    );
    // Each: two namespaces, two host veths, the bridge, the nft table.
    for (const p of prefixes) expect(names(p).length).toBe(6);
    signals.forEach((sig, i) => children[i]!.kill(sig));
    await Promise.all(exited);
    expect(names(prefixes[0]!)).toEqual([]);
    expect(names(prefixes[1]!)).toEqual([]);
    expect(names(prefixes[2]!).length).toBe(6); // SIGKILL: no hook ran
    const next = await NetnsLab.create(1);
    await next.destroy();
    expect(names(prefixes[2]!)).toEqual([]);
  });
});
