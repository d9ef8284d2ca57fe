// The public write path: createJob through the SDK (HeraldClient as a user runs it: concurrent
// creates batched, batches over its CreateJobsStream to the leader; endpoints = every node) on a real 3-node scheduler cluster, closed loop at concurrency 1 and
// then 64 — the same shape as bench/raft-commit.ts and ../shared/peers/etcd-bench.mjs (2 s
// warm-up, then the measured phase), so `compare` can set it beside etcd's puts. Each job is a
// one-off a week ahead (nothing fires) with a 256-byte payload; every call carries the SDK's
// generated idempotency key and is answered only once committed on a quorum and evaluated by the
// leader's state machine.
//
// --via sdk (default): the SDK as a user runs it (it learns the leader and sends writes there);
// --via follower: the SDK given one follower's address only, so every call is forwarded.
// --batch-creates false: the SDK without its batching of concurrent creates (one CreateJob each).
// --stream-creates false: batches as CreateJob(s) calls, not over the SDK's CreateJobsStream.
//
// Run: npx tsx bench/public-commit.ts [--seq-seconds 12] [--conc-seconds 12] [--warmup-seconds 2]
//      [--concurrency 64] [--payload-bytes 256] [--via sdk|follower] [--batch-creates true|false]
//      [--stream-creates true|false]
// Progress goes to stderr; the last stdout line is JSON.
import { HeraldClient } from '../src/client/herald-client.js';
import { JobSpec } from '../src/gen/herald/v1/job.js';
import { SchedulerCluster } from '../test/dispatch/helpers/process-cluster.js';
import { numArg, strArg } from './lib/args.js';
import { machineLoad } from './lib/machine.js';
import { processCpuMs } from './lib/process-cpu.js';

const SEQ_S = numArg('seq-seconds', 12);
const CONC_S = numArg('conc-seconds', 12);
const WARMUP_S = numArg('warmup-seconds', 2);
const CONCURRENCY = numArg('concurrency', 64);
const PAYLOAD = numArg('payload-bytes', 256);
const VIA = strArg('via', 'sdk');
const BATCH_CREATES = strArg('batch-creates', 'true') !== 'false';
const STREAM_CREATES = strArg('stream-creates', 'true') !== 'false';
if (VIA !== 'sdk' && VIA !== 'follower') throw new Error(`--via must be sdk or follower (got ${VIA})`);

const log = (m: string) => process.stderr.write(`[public-commit] ${m}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function summarize(values: number[]) {
  const a = Float64Array.from(values).sort();
  const at = (p: number) => (a.length ? a[Math.min(a.length - 1, Math.max(0, Math.ceil(p * a.length) - 1))]! : NaN);
  const r = (x: number) => Number(x.toFixed(3));
  let sum = 0;
  for (const v of a) sum += v;
  return { n: a.length, min: r(a[0] ?? NaN), p50: r(at(0.5)), p90: r(at(0.9)), p99: r(at(0.99)), p999: r(at(0.999)), max: r(a[a.length - 1] ?? NaN), mean: r(sum / Math.max(1, a.length)) };
}

const c = await SchedulerCluster.start({});
let client: HeraldClient | undefined;
try {
  const leaderId = await c.raft.waitForLeader();
  const followerId = [...c.raft.nodes.keys()].find((id) => id !== leaderId)!;
  const address = (id: string) => `${c.raft.hostOf(id)}:${c.raft.nodes.get(id)!.clientPort}`;
  const endpoints = VIA === 'sdk' ? c.endpoints : [address(followerId)];
  client = new HeraldClient({ endpoints, defaultDeadlineMs: 20_000, batchCreates: BATCH_CREATES, streamCreates: STREAM_CREATES });
  log(`leader ${leaderId}; calls via ${VIA} (${endpoints.join(',')})`);
  const spec = JobSpec.fromPartial({
    taskType: 'bench',
    payload: Buffer.alloc(PAYLOAD, 'x'),
    schedule: { kind: { $case: 'at', at: { atUnixMs: Date.now() + 7 * 86_400_000 } } },
  });
  const pids = [...c.raft.nodes.values()].map((n) => n.proc!.pid!);
  const serverCpuMs = async () => (await Promise.all(pids.map((p) => processCpuMs(p)))).reduce((a, b) => a + b, 0);

  const phase = async (conc: number, seconds: number) => {
    let stop = false;
    let measuring = false;
    let errors = 0;
    let firstError = '';
    const lat: number[] = [];
    const loop = async () => {
      while (!stop) {
        const t = performance.now();
        try {
          await client!.createJob(spec);
        } catch (e) {
          errors++;
          firstError ||= (e as Error).message;
          continue;
        }
        if (measuring) lat.push(performance.now() - t);
      }
    };
    const loops = Array.from({ length: conc }, loop);
    await sleep(WARMUP_S * 1000);
    const srv0 = await serverCpuMs();
    const cli0 = process.cpuUsage();
    const t0 = performance.now();
    measuring = true;
    errors = 0;
    await sleep(seconds * 1000);
    measuring = false;
    const elapsedS = (performance.now() - t0) / 1000;
    const cli = process.cpuUsage(cli0);
    const srvMs = (await serverCpuMs()) - srv0;
    stop = true;
    await Promise.all(loops);
    return {
      concurrency: conc,
      seconds: Number(elapsedS.toFixed(2)),
      ops: lat.length,
      ops_per_s: Number((lat.length / elapsedS).toFixed(1)),
      lat_ms: summarize(lat),
      errors,
      ...(firstError && { firstError }),
      client_cpu_pct: Number((((cli.user + cli.system) / 1000 / 1000 / elapsedS) * 100).toFixed(1)),
      herald_cpu_pct_total: Number(((srvMs / 1000 / elapsedS) * 100).toFixed(1)),
      herald_cpu_us_per_op: Number(((srvMs * 1000) / Math.max(1, lat.length)).toFixed(1)),
    };
  };

  const load0 = machineLoad().loadavg[0];
  log(`(a) concurrency 1 for ${SEQ_S}s`);
  const seq = await phase(1, SEQ_S);
  log(`seq ${JSON.stringify(seq)}`);
  log(`(b) concurrency ${CONCURRENCY} for ${CONC_S}s`);
  const conc = await phase(CONCURRENCY, CONC_S);
  log(`conc ${JSON.stringify(conc)}`);
  console.log(
    JSON.stringify({
      bench: 'public-commit',
      config: { members: 3, via: VIA, batch_creates: BATCH_CREATES, stream_creates: STREAM_CREATES, call: STREAM_CREATES && BATCH_CREATES ? 'HeraldClient.createJob (CreateJobsStream)' : 'HeraldClient.createJob (unary CreateJob)', payload_bytes: PAYLOAD, warmup_s: WARMUP_S },
      seq_puts: seq,
      conc_puts: conc,
      loadavg1m: { start: load0, end: machineLoad().loadavg[0] },
      machine: machineLoad(),
    }),
  );
} finally {
  client?.close();
  await c.raft.stopAll('SIGTERM').catch(() => undefined); // graceful: CPU profiles get written
  await c.cleanup();
}
