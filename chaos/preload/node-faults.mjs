// Test-only fault injection inside a `herald server` process, loaded with
// `node --import ./chaos/preload/node-faults.mjs bin/herald.mjs server ...` by the chaos
// orchestrator and by nothing else (plain JS: it runs before any TypeScript loader could).
//
// It polls a JSON control file named by CHAOS_CONTROL_FILE (written atomically by the
// orchestrator) and applies:
// - clock: { offsetMs, driftMsPerS, sinceMs } — Date.now() returns real time + offset (+ drift
//   accumulated since sinceMs). Only the wall clock moves: performance.now()/hrtime (the monotonic
//   clock Raft uses for timeouts and leases) is untouched, exactly as with a real NTP step.
// - crash: { id, point, phase, nth } — SIGKILL this process at the nth matching persistence event
//   after arming: point 'sync' (any LevelDB write with sync:true), 'compaction' (the Raft log's
//   synced batch recording a new compaction base, m/base), 'snapshot-save' (the state machine's synced applied-index
//   write that precedes compaction), 'snapshot-install' (the rename of a received snapshot into
//   place); phase 'before' or 'after' the write completes.
// - ioError: { id, op, nth } — the nth read ('read': a getMany or getSync) or batch write ('write': a chained
//   batch's write, what every apply writes) of the STATE MACHINE store (<data-dir>/sm) after
//   arming fails with an injected LevelDB I/O error, once per id (a write fails without writing).
// - routes: { "host:port": "host:port" } — an outgoing TCP connection (net.connect, what gRPC
//   dials with) to a key goes to its value instead. On the proxy network every member is known by
//   one peer address (its real port: what --peers, the configuration's address book and
//   `herald cluster add` record, so membership changes see one address per member), and each
//   node's routes send its own dials through its directed-link proxies (chaos/net/proxy-network.ts).
// Without CHAOS_CONTROL_FILE this module does nothing.
import { readFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';

const file = process.env.CHAOS_CONTROL_FILE;
if (file) {
  const require = createRequire(import.meta.url);
  const realNow = Date.now.bind(Date);
  let control = { clock: { offsetMs: 0, driftMsPerS: 0, sinceMs: 0 }, crash: undefined, ioError: undefined, routes: {} };
  let armedId;
  let matches = 0;
  let ioArmedId;
  let ioMatches = 0;

  const read = () => {
    try {
      const next = JSON.parse(readFileSync(file, 'utf8'));
      control = { clock: { offsetMs: 0, driftMsPerS: 0, sinceMs: 0, ...(next.clock ?? {}) }, crash: next.crash, ioError: next.ioError, routes: next.routes ?? {} };
      if (control.crash && control.crash.id !== armedId) {
        armedId = control.crash.id;
        matches = 0;
      }
      if (control.ioError && control.ioError.id !== ioArmedId) {
        ioArmedId = control.ioError.id;
        ioMatches = 0;
      }
    } catch {
      // missing or half-written: keep the last control
    }
  };
  read();
  setInterval(read, 25).unref();
  // The node runs in its own process group: when the orchestrator is gone (even by SIGKILL), go.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
  }, 500).unref();

  Date.now = () => {
    const now = realNow();
    const c = control.clock;
    const drift = c.driftMsPerS && c.sinceMs ? ((now - c.sinceMs) / 1000) * c.driftMsPerS : 0;
    return Math.round(now + c.offsetMs + drift);
  };

  const die = (what) => {
    process.stderr.write(`chaos: crash point ${what} reached; SIGKILL\n`);
    process.kill(process.pid, 'SIGKILL');
  };
  /** True when this event is the armed crash point's nth match ('sync' matches every synced write). */
  const hit = (point, phase) => {
    const c = control.crash;
    if (!c || c.id !== armedId || c.phase !== phase) return false;
    if (c.point !== 'sync' && c.point !== point) return false;
    matches += 1;
    return matches === (c.nth ?? 1);
  };
  const pointOf = (kind, opsOrKey) => {
    // The Raft log's compaction point: one synced batch recording m/snap and m/base.
    if (kind === 'batch' && Array.isArray(opsOrKey) && opsOrKey.some((o) => o.type === 'put' && String(o.key) === 'm/base')) return 'compaction';
    if (kind === 'put' && String(opsOrKey) === 'm\u0000applied') return 'snapshot-save';
    return 'sync';
  };
  const wrap = (kind, original) =>
    async function (...args) {
      const opts = kind === 'batch' ? args[1] : args[2];
      if (!opts || opts.sync !== true || !control.crash) return original.apply(this, args);
      const point = pointOf(kind, args[0]);
      if (hit(point, 'before')) die(`${point}/before`);
      const result = await original.apply(this, args);
      if (hit(point, 'after')) die(`${point}/after`);
      return result;
    };
  /** True when this operation on `db` is the armed I/O error's nth match (state machine store only). */
  const ioHit = (db, op) => {
    const f = control.ioError;
    if (!f || f.id !== ioArmedId || f.op !== op || ioMatches >= (f.nth ?? 1)) return false;
    if (!/[\\/]sm$/.test(String(db.location))) return false;
    ioMatches += 1;
    return ioMatches === (f.nth ?? 1);
  };
  const ioError = (op) => {
    process.stderr.write(`chaos: injected I/O error (${op})\n`);
    return Object.assign(new Error(`IO error: chaos: injected ${op} failure`), { code: 'LEVEL_IO_ERROR' });
  };
  try {
    const { ClassicLevel } = require('classic-level');
    const proto = Object.getPrototypeOf(ClassicLevel.prototype);
    const batch = ClassicLevel.prototype.batch ?? proto.batch;
    const put = ClassicLevel.prototype.put ?? proto.put;
    const getMany = ClassicLevel.prototype.getMany ?? proto.getMany;
    const getSync = ClassicLevel.prototype.getSync ?? proto.getSync;
    ClassicLevel.prototype.batch = function (...args) {
      // The chained form (no arguments) keeps its own write(), hooked only for I/O errors.
      if (args.length === 0 || !Array.isArray(args[0])) {
        const chained = batch.apply(this, args);
        if (!control.ioError) return chained;
        const db = this;
        const write = chained.write;
        chained.write = async function (...a) {
          if (ioHit(db, 'write')) {
            await this.close();
            throw ioError('write');
          }
          return write.apply(this, a);
        };
        return chained;
      }
      return wrap('batch', batch).apply(this, args);
    };
    ClassicLevel.prototype.put = wrap('put', put);
    ClassicLevel.prototype.getMany = async function (...args) {
      if (control.ioError && ioHit(this, 'read')) throw ioError('read');
      return getMany.apply(this, args);
    };
    // Apply reads a few keys synchronously (src/fsm/store/store-reads.ts): those are reads too.
    ClassicLevel.prototype.getSync = function (...args) {
      if (control.ioError && ioHit(this, 'read')) throw ioError('read');
      return getSync.apply(this, args);
    };
  } catch (e) {
    process.stderr.write(`chaos: could not hook classic-level: ${e}\n`);
  }

  const net = require('node:net');
  const connect = net.connect;
  const routed = (args) => {
    const o = args[0];
    if (!o || typeof o !== 'object' || o.port === undefined) return args;
    const to = control.routes[`${o.host ?? 'localhost'}:${o.port}`];
    if (!to) return args;
    const i = to.lastIndexOf(':');
    return [{ ...o, host: to.slice(0, i), port: Number(to.slice(i + 1)) }, ...args.slice(1)];
  };
  net.connect = function (...args) {
    return connect.apply(this, routed(args));
  };
  net.createConnection = net.connect;

  const fsp = require('node:fs/promises');
  const rename = fsp.rename;
  fsp.rename = async function (from, to) {
    const install = control.crash && /snapshots/.test(String(to));
    if (install && hit('snapshot-install', 'before')) die('snapshot-install/before');
    await rename.call(this, from, to);
    if (install && control.crash && hit('snapshot-install', 'after')) die('snapshot-install/after');
  };
  syncBuiltinESMExports();
}
