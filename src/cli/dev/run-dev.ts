// `herald dev`: a local 3- or 5-node cluster, a demo worker and demo schedules in one command.
// Lifecycle: start nodes → wait for a leader → worker + demo jobs → print where to connect →
// stream runs until SIGINT/SIGTERM → drain the worker → stop the nodes (SIGKILL after a grace).
// A second signal skips the grace. Nothing outlives this process: nodes run in their own process
// groups with the orphan guard, and an exit hook SIGKILLs any node still running.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { status } from '@grpc/grpc-js';
import { HeraldClientError } from '../../client/errors.js';
import { HeraldClient } from '../../client/herald-client.js';
import type { Worker } from '../../client/worker/worker.js';
import { createDemoWorker } from '../worker/demo-worker.js';
import { DEMO_TASK_TYPE, ensureDemoJobs } from './demo-jobs.js';
import { DevCluster } from './dev-cluster.js';
import { RunFeed } from './run-feed.js';
import { devNodePorts } from './dev-ports.js';
import { nodeCount, recordJoined, resolveLayout } from './dev-state.js';
import { startDevControl, type DevControl } from './dev-control.js';
import { addDevNode } from './dev-add-node.js';
import { assertPortsFree } from './port-check.js';
import { serverCapabilities, serverExtraArgs } from './server-flags.js';
import { devTlsFlags, ensureDevCerts, ensureDevToken } from './dev-certs.js';

export interface DevOptions {
  dataDir: string;
  basePort: number | undefined;
  /** Nodes to bootstrap (3 or 5); undefined: what the data dir was created with, else 3. */
  nodes?: number;
  demoJobs: boolean;
  worker: boolean;
  concurrency: number;
  logLevel: string;
  startTimeoutMs: number;
}

const say = (line: string) => process.stdout.write(line + '\n');
const warn = (line: string) => process.stderr.write(line + '\n');

async function waitForLeader(client: HeraldClient, timeoutMs: number): Promise<{ leaderId: string; clusterId: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const st = await client.status({ deadlineMs: 2_000 });
      if (st.leaderId !== '') return { leaderId: st.leaderId, clusterId: st.clusterId };
    } catch {
      // nodes still starting
    }
    if (Date.now() > deadline) throw new Error(`no leader was elected within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** True when the cluster serves JobService (false while the server runs a state machine without it). */
async function servesJobs(client: HeraldClient): Promise<boolean> {
  try {
    await client.listJobs({ pageSize: 1 }, { deadlineMs: 10_000 });
    return true;
  } catch (e) {
    if (e instanceof HeraldClientError && e.grpcCode === status.UNIMPLEMENTED) return false;
    throw e;
  }
}

class StartAborted extends Error {}

/** Runs the dev cluster until a signal; resolves with the exit code. */
export async function runDev(o: DevOptions): Promise<number> {
  const dataDir = resolve(o.dataDir);
  let layout = resolveLayout(dataDir, { basePort: o.basePort, nodes: o.nodes });
  const { basePort, nodes } = layout;
  const caps = serverCapabilities();
  // Bootstrap members, then the nodes `herald dev add-node` added since.
  const allPorts = devNodePorts(basePort, nodeCount(layout));
  const ports = allPorts.slice(0, nodes);
  await assertPortsFree(allPorts, caps.metricsFlag !== undefined, caps.httpFlag);
  let certs = await ensureDevCerts(dataDir, allPorts.map((p) => p.id));
  // Without openssl: plaintext, which the nodes allow on 127.0.0.1 only.
  if (typeof certs === 'string') warn(`note: running without TLS (${certs})`);
  const tls = typeof certs === 'string' ? undefined : { ca: readFileSync(certs.ca) };
  // Auth on, like a real cluster: the nodes put this admin token once; the CLI finds it here.
  const tokenFile = ensureDevToken(dataDir);
  const token = readFileSync(tokenFile, 'utf8').trim();
  const cluster = new DevCluster({
    dataDir,
    nodes: ports,
    joined: allPorts.slice(nodes),
    logLevel: o.logLevel,
    extraArgs: (n) => [
      ...(typeof certs === 'string' ? ['--insecure'] : devTlsFlags(certs, n.id)),
      '--auth-bootstrap-file',
      tokenFile,
      ...serverExtraArgs(caps, n.metricsPort, n.httpPort),
    ],
  });
  const endpoints = cluster.clientEndpoints();
  // Last resort: whatever happens to this process's JS, no node outlives it.
  const killAll = () => cluster.kill();
  process.on('exit', killAll);

  let worker: Worker | undefined;
  let feed: RunFeed | undefined;
  let control: DevControl | undefined;
  let client: HeraldClient | undefined;
  let signals = 0;
  let stopping: Promise<number> | undefined;
  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((r) => (resolveDone = r));

  const shutdown = (code: number): Promise<number> =>
    (stopping ??= (async () => {
      say(worker ? 'stopping: draining the worker, then the nodes (Ctrl-C again to force)' : 'stopping the nodes (Ctrl-C again to force)');
      feed?.stop();
      control?.close();
      await worker?.shutdown({ graceMs: 5_000 }).catch(() => undefined);
      client?.close();
      await cluster.stop(10_000);
      say('stopped');
      return code;
    })().then((c) => {
      resolveDone(c);
      return c;
    }));

  const onSignal = () => {
    signals += 1;
    if (signals === 1) void shutdown(0);
    else {
      warn('second signal: killing the nodes now');
      worker?.force();
      cluster.kill();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let started = false;
  cluster.on('nodeExit', (n, code, signal) => {
    if (!started) return; // reported by start() itself
    warn(`node ${n.id} exited unexpectedly (${code ?? signal}); its log: ${n.logPath}`);
    const total = cluster.nodes.length;
    const quorum = Math.floor(total / 2) + 1;
    if (cluster.aliveCount() < quorum && !stopping) {
      warn(`fewer than ${quorum} of ${total} nodes are running: the cluster cannot make progress; stopping`);
      void shutdown(1);
    }
  });

  try {
    say(`starting a ${cluster.nodes.length}-node Herald dev cluster in ${dataDir} (base port ${basePort})`);
    await cluster.start(o.startTimeoutMs);
    started = true;
    client = new HeraldClient({ endpoints, tls, token, defaultDeadlineMs: 10_000 });
    const { leaderId, clusterId } = await waitForLeader(client, o.startTimeoutMs);
    const jobsServed = await servesJobs(client);
    // A signal during startup already began the shutdown: start nothing more.
    if (stopping) throw new StartAborted();

    let demo: Array<{ id: string; created: boolean }> = [];
    if (!jobsServed) {
      warn('note: this build of `herald server` does not serve JobService yet (no scheduler state machine); the cluster runs without jobs');
    } else {
      if (o.worker) {
        worker = createDemoWorker({
          endpoints,
          tls,
          token,
          taskTypes: [DEMO_TASK_TYPE],
          concurrency: o.concurrency,
          json: false,
          workerId: `dev-worker-${process.pid}`,
          write: (line) => say(`fire  ${line}`),
          notice: warn,
        });
        worker.start();
      }
      if (o.demoJobs) demo = await ensureDemoJobs(client);
      if (stopping) throw new StartAborted();
      feed = new RunFeed({ client, write: (line) => say(`run   ${line}`), everything: !o.worker });
      feed.start();
    }

    // A fresh link token per start; the dashboard trades it for a session token and revokes it
    // (dashboard/src/login-link.ts), so the printed link signs in once.
    const loginLink = caps.httpFlag && token ? await mintLoginLink(client) : undefined;
    if (stopping) throw new StartAborted();

    const metrics = cluster.nodes
      .map((n) => n.announcedMetricsPort || (caps.metricsFlag ? n.metricsPort : 0))
      .filter((p) => p > 0)
      .map((p) => `http://127.0.0.1:${p}/metrics`);
    // One write for the whole banner: whoever reads our stdout (a terminal, a test, a script
    // waiting for "ready") never sees the ready line without the endpoints under it.
    const banner: string[] = [''];
    banner.push(`Herald dev cluster ready: cluster ${clusterId}, leader ${leaderId}`);
    banner.push(`  client endpoints  ${endpoints.join(',')}`);
    banner.push(`                    (the CLI finds them from this directory; elsewhere: export HERALD_ENDPOINTS=${endpoints.join(',')})`);
    if (typeof certs !== 'string') {
      banner.push(`  TLS CA            ${certs.ca}`);
      banner.push(`                    (the CLI finds it from this directory; elsewhere: export HERALD_CA=${certs.ca})`);
    }
    banner.push(`  admin token       ${tokenFile}`);
    banner.push(`                    (the CLI finds it from this directory; elsewhere: export HERALD_TOKEN=$(cat ${tokenFile}))`);
    if (metrics.length > 0) banner.push(`  metrics           ${metrics.join('  ')}`);
    if (caps.httpFlag) {
      banner.push(`  dashboard         http://127.0.0.1:${ports[0]!.httpPort}/  (every node serves it: ${ports.slice(1).map((p) => `:${p.httpPort}`).join(', ')})`);
      // The token rides in the fragment, which the browser never sends: the page signs in with it
      // and drops it from the address bar.
      if (loginLink) banner.push(`  dashboard login   http://127.0.0.1:${ports[0]!.httpPort}/#login=${encodeURIComponent(loginLink)}  (signs in once)`);
      banner.push(`  API over HTTP     curl -H "Authorization: Bearer $(cat ${tokenFile})" -d '{}' http://127.0.0.1:${ports[0]!.httpPort}/herald.v1.JobService/ListJobs`);
    }
    banner.push(`  data and logs     ${dataDir}  (node logs: ${cluster.nodes.map((n) => `${n.id}.log`).join(', ')})`);
    if (jobsServed) {
      banner.push(`  demo worker       ${o.worker ? `task type "${DEMO_TASK_TYPE}", concurrency ${o.concurrency}` : 'off (--no-worker)'}`);
      if (demo.length > 0) banner.push(`  demo jobs         ${demo.map((d) => d.id + (d.created ? '' : ' (existing)')).join(', ')}`);
      banner.push('  try               npx herald job ls   |   npx herald run ls   |   npx herald cluster status');
    } else {
      banner.push('  try               npx herald cluster status');
    }
    if (jobsServed) banner.push('streaming runs: "fire" lines as the demo worker executes them, "run" lines for other outcomes; Ctrl-C stops everything');
    else banner.push('Ctrl-C stops everything');
    banner.push('');
    say(banner.join('\n'));
    // Requests from other CLI processes (herald dev add-node) on <data-dir>/dev.sock.
    const c = client;
    control = await startDevControl(dataDir, async (_req, progress) => {
      const line = (l: string) => {
        say(`dev   ${l}`);
        progress(l);
      };
      const added = await addDevNode({
        cluster,
        client: c,
        basePort,
        withMetrics: caps.metricsFlag !== undefined,
        withHttp: caps.httpFlag,
        prepare: async (n) => {
          if (typeof certs !== 'string') certs = await ensureDevCerts(dataDir, [...cluster.nodes.map((x) => x.id), n.id]);
        },
        record: () => (layout = recordJoined(dataDir, layout)),
        progress: line,
        timeoutMs: o.startTimeoutMs,
      });
      return { ...added };
    });
  } catch (e) {
    if (!(e instanceof StartAborted)) {
      warn(`herald dev: ${e instanceof Error ? e.message : String(e)}`);
      await shutdown(1);
    }
  }
  const code = await done;
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  process.off('exit', killAll);
  return code;
}

/** Name of the token behind the printed login link (the dashboard redeems tokens named login-link…). */
export const LOGIN_LINK_TOKEN = 'login-link-dev';

/** A new admin token for the login link, replacing an unused one from an earlier start. */
async function mintLoginLink(client: HeraldClient): Promise<string> {
  await client.revokeToken(LOGIN_LINK_TOKEN).catch((e: unknown) => {
    if (!(e instanceof HeraldClientError && e.code === 'NOT_FOUND')) throw e;
  });
  return (await client.createToken(LOGIN_LINK_TOKEN, 'admin')).secret;
}

