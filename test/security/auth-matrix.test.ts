// Issue 29 acceptance: every public RPC called as none / viewer / operator / worker / admin gets
// exactly the expected status, on a live in-process cluster over real gRPC on loopback; tokens
// are revoked on the next call, also through a follower; a worker token is limited to its task
// types; a forged forwarded principal is refused; jobs record who created and changed them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { status, type Client } from '@grpc/grpc-js';
import { AuthServiceService, CreateTokenRequest, RevokeTokenRequest } from '../../src/gen/herald/v1/auth_service.js';
import { ClusterServiceService } from '../../src/gen/herald/v1/cluster_service.js';
import { JobServiceService, PauseJobRequest } from '../../src/gen/herald/v1/job_service.js';
import { DeleteTaskTypeRequest, SetTaskTypeRequest, TaskTypeServiceService } from '../../src/gen/herald/v1/task_type_service.js';
import { WatchServiceService } from '../../src/gen/herald/v1/watch_service.js';
import { ConnectRequest, WorkerServiceService } from '../../src/gen/herald/v1/worker_service.js';
import { HeraldClient } from '../../src/client/herald-client.js';
import { every } from '../../src/client/job-spec-builders.js';
import { newTokenSecret } from '../../src/server/auth/token-secret.js';
import { METHOD_ROLES } from '../../src/server/auth/method-roles.js';
import { encodeForwardedPrincipal, FORWARDED_PRINCIPAL_KEY } from '../../src/server/auth/authenticator.js';
import { Role } from '../../src/gen/herald/v1/auth_service.js';
import { startInProcessCluster, type InProcessCluster } from '../dispatch/helpers/in-process-cluster.js';
import { rawClient, rawStream, rawUnary } from './helpers/raw-calls.js';

const SERVICES = [JobServiceService, TaskTypeServiceService, WatchServiceService, WorkerServiceService, ClusterServiceService, AuthServiceService];
type Who = 'none' | 'viewer' | 'operator' | 'worker' | 'admin';
const WHO: Who[] = ['none', 'viewer', 'operator', 'worker', 'admin'];

/**
 * What an allowed caller gets for an empty request (every field at its default): the handler's
 * own answer, proving the call got past the guard. Anything not listed answers OK.
 */
const ALLOWED_STATUS: Record<string, status> = {
  CreateJob: status.INVALID_ARGUMENT, // no spec
  CreateJobs: status.INVALID_ARGUMENT, // no items
  GetJob: status.INVALID_ARGUMENT, // no job id
  UpdateJob: status.INVALID_ARGUMENT,
  DeleteJob: status.INVALID_ARGUMENT,
  PauseJob: status.INVALID_ARGUMENT,
  ResumeJob: status.INVALID_ARGUMENT,
  TriggerJob: status.INVALID_ARGUMENT,
  BackfillJob: status.INVALID_ARGUMENT,
  GetRun: status.INVALID_ARGUMENT,
  CancelRun: status.INVALID_ARGUMENT,
  RetryRun: status.INVALID_ARGUMENT,
  RetryRuns: status.INVALID_ARGUMENT,
  ValidateJob: status.INVALID_ARGUMENT,
  SetTaskType: status.INVALID_ARGUMENT,
  GetTaskType: status.INVALID_ARGUMENT,
  DeleteTaskType: status.INVALID_ARGUMENT,
  CreateToken: status.INVALID_ARGUMENT,
  RevokeToken: status.INVALID_ARGUMENT,
  TransferLeadership: status.INVALID_ARGUMENT, // target "nobody" (below): leadership stays put
  AddMember: status.INVALID_ARGUMENT, // no member id
  PromoteMember: status.INVALID_ARGUMENT,
  RemoveMember: status.INVALID_ARGUMENT,
};

const ROLE_OF: Record<Exclude<Who, 'none'>, Role> = { viewer: Role.ROLE_VIEWER, operator: Role.ROLE_OPERATOR, worker: Role.ROLE_WORKER, admin: Role.ROLE_ADMIN };

describe('auth: roles on every public method', () => {
  let cluster: InProcessCluster;
  const bootstrap = newTokenSecret().token;
  const tokens: Partial<Record<Who, string>> = {};
  let leaderAddr: string;
  let followerAddr: string;
  const raw: Client[] = [];

  beforeAll(async () => {
    cluster = await startInProcessCluster(3, {}, { auth: { bootstrapToken: bootstrap } }, bootstrap);
    const leader = await cluster.leader();
    leaderAddr = `127.0.0.1:${leader.node.clientPort}`;
    followerAddr = `127.0.0.1:${cluster.nodes.find((n) => n !== leader)!.node.clientPort}`;
    // The bootstrap token is put by the first leader; until then the admin's calls are refused.
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await cluster.client.listTokens();
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    tokens.admin = bootstrap;
    tokens.viewer = (await cluster.client.createToken('dash', 'viewer')).secret;
    tokens.operator = (await cluster.client.createToken('ops', 'operator')).secret;
    tokens.worker = (await cluster.client.createToken('billing-workers', 'worker', ['report', 'email-x'])).secret;
  }, 60_000);

  afterAll(async () => {
    for (const c of raw) c.close();
    await cluster?.stop();
  });

  function client(addr: string): Client {
    const c = rawClient(addr);
    raw.push(c);
    return c;
  }

  it('has a table entry for every method of every public service', () => {
    for (const def of SERVICES) for (const m of Object.values(def)) expect(METHOD_ROLES[m.path], m.path).toBeDefined();
    // The dashboard's Overview counts runs with a viewer token (the matrix below calls it as every role).
    expect(Object.values(JobServiceService).map((m) => m.path)).toContain('/herald.v1.JobService/CountRuns');
    expect(METHOD_ROLES['/herald.v1.JobService/CountRuns']).toEqual([Role.ROLE_ADMIN, Role.ROLE_OPERATOR, Role.ROLE_VIEWER]);
  });

  it('answers every method × role with exactly the expected status', async () => {
    const c = client(leaderAddr);
    const hello = Buffer.from(ConnectRequest.encode({ message: { $case: 'hello', hello: { workerId: 'm', taskTypes: ['report'], capacity: 0, heldRuns: [], version: '', batches: true } } }).finish());
    const failures: string[] = [];
    for (const def of SERVICES) {
      for (const m of Object.values(def)) {
        const name = m.path.slice(m.path.lastIndexOf('/') + 1);
        const body = name === 'TransferLeadership' ? Buffer.from([0x0a, 0x06, ...Buffer.from('nobody')]) : name === 'Connect' ? hello : Buffer.alloc(0);
        for (const who of WHO) {
          const o = { token: tokens[who as Exclude<Who, 'none'>] };
          const got = m.requestStream ? await rawStream(c, m.path, 'bidi', o, body) : m.responseStream ? await rawStream(c, m.path, 'server', o, body) : await rawUnary(c, m.path, o, body);
          const want =
            who === 'none' ? status.UNAUTHENTICATED : !METHOD_ROLES[m.path]!.includes(ROLE_OF[who]) ? status.PERMISSION_DENIED : (ALLOWED_STATUS[name] ?? status.OK);
          if (got.code !== want) failures.push(`${name} as ${who}: got ${status[got.code]} (${got.details}), want ${status[want]}`);
          if (want === status.PERMISSION_DENIED && !/needs the .* role/.test(got.details)) failures.push(`${name} as ${who}: message does not name the role needed: ${got.details}`);
        }
      }
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('refuses a malformed or unknown bearer token, saying which', async () => {
    const c = client(leaderAddr);
    const path = '/herald.v1.JobService/ListJobs';
    expect(await rawUnary(c, path, { metadata: { authorization: 'Basic abc' } })).toMatchObject({ code: status.UNAUTHENTICATED, details: expect.stringMatching(/Bearer/) });
    expect(await rawUnary(c, path, { token: 'hrd.nope' })).toMatchObject({ code: status.UNAUTHENTICATED, details: expect.stringMatching(/not a Herald token/) });
    expect(await rawUnary(c, path, { token: newTokenSecret().token })).toMatchObject({ code: status.UNAUTHENTICATED, details: expect.stringMatching(/unknown or revoked/) });
    // The right id with a wrong secret.
    const id = tokens.viewer!.split('.')[1]!;
    expect(await rawUnary(c, path, { token: `hrd.${id}.${'A'.repeat(43)}` })).toMatchObject({ code: status.UNAUTHENTICATED });
  });

  it('refuses a forged forwarded principal, and a forged forwarded-call marker grants nothing', async () => {
    for (const addr of [leaderAddr, followerAddr]) {
      const c = client(addr);
      const forged = encodeForwardedPrincipal({ name: 'mallory', role: Role.ROLE_ADMIN, taskTypes: new Set(), via: 'certificate' });
      expect(await rawUnary(c, '/herald.v1.AuthService/ListTokens', { metadata: { [FORWARDED_PRINCIPAL_KEY]: forged } })).toMatchObject({
        code: status.PERMISSION_DENIED,
        details: expect.stringMatching(/only from a cluster member/),
      });
      expect(await rawUnary(c, '/herald.v1.AuthService/ListTokens', { metadata: { 'herald-forwarded-call': '1' } })).toMatchObject({ code: status.UNAUTHENTICATED });
      expect(await rawUnary(c, '/herald.v1.AuthService/ListTokens', { token: tokens.viewer, metadata: { 'herald-forwarded-call': '1' } })).toMatchObject({
        code: status.PERMISSION_DENIED,
      });
    }
  });

  // Issue 29: job records say who created and last changed them (Job.created_by / updated_by).
  it('records the caller\'s name as created_by / updated_by, also for a write a follower forwarded', async () => {
    const viaFollower = new HeraldClient({ endpoints: [followerAddr], token: tokens.operator! });
    const viaLeader = new HeraldClient({ endpoints: [leaderAddr], token: tokens.operator! });
    const spec = { taskType: 'who', schedule: every('1h') };
    try {
      // The operator creates through the follower: the leader authenticates the forwarded call
      // and puts the caller's name into the command.
      const { job } = await viaFollower.createJob(spec, { id: 'who-1' });
      expect(job).toMatchObject({ createdBy: 'ops', updatedBy: 'ops' });
      // The admin changes it: updated_by follows, created_by stays.
      await cluster.client.updateJob('who-1', { ...spec, priority: 3 });
      expect(await viaLeader.getJob('who-1')).toMatchObject({ createdBy: 'ops', updatedBy: 'bootstrap-admin' });
      await viaLeader.pauseJob('who-1', 'maintenance');
      const got = await viaFollower.getJob('who-1');
      expect(got).toMatchObject({ createdBy: 'ops', updatedBy: 'ops', pauseNote: 'maintenance' });
      // Bulk creates record it on every item.
      const bulk = await viaFollower.createJobs([{ id: 'who-2', spec }, { id: 'who-3', spec }]);
      expect(bulk.map((r) => r.job?.createdBy)).toEqual(['ops', 'ops']);
      expect((await cluster.client.getJob('who-3')).createdBy).toBe('ops');
    } finally {
      viaFollower.close();
      viaLeader.close();
    }
  }, 30_000);

  it('token lifecycle: create → use (leader and follower) → revoke → the next call is refused on both', async () => {
    const admin = cluster.client;
    const { secret, token } = await admin.createToken('short-lived', 'operator');
    expect(token).toMatchObject({ name: 'short-lived', role: Role.ROLE_OPERATOR, createdBy: 'bootstrap-admin' });
    expect(secret).toMatch(/^hrd\./);
    const listed = await admin.listTokens();
    expect(listed.map((t) => t.name)).toContain('short-lived');
    expect(JSON.stringify(listed)).not.toContain(secret.split('.')[2]);
    const viaFollower = new HeraldClient({ endpoints: [followerAddr], token: secret });
    const viaLeader = new HeraldClient({ endpoints: [leaderAddr], token: secret });
    try {
      // A write through the follower: forwarded to the leader, which authenticates it itself.
      await viaFollower.setTaskType('lifecycle', { maxRunning: 2 });
      // A JobService write through the follower is forwarded; the leader authenticates it itself.
      const pause = Buffer.from(PauseJobRequest.encode({ jobId: 'no-such-job', note: '' }).finish());
      expect(await rawUnary(client(followerAddr), '/herald.v1.JobService/PauseJob', { token: secret }, pause)).toMatchObject({ code: status.NOT_FOUND });
      expect((await viaFollower.listJobs({})).items).toBeDefined();
      expect((await viaLeader.listJobs({})).items).toBeDefined();
      await admin.revokeToken('short-lived');
      const c = client(followerAddr);
      expect(await rawUnary(c, '/herald.v1.JobService/ListJobs', { token: secret })).toMatchObject({ code: status.UNAUTHENTICATED });
      expect(await rawUnary(client(leaderAddr), '/herald.v1.JobService/ListJobs', { token: secret })).toMatchObject({ code: status.UNAUTHENTICATED });
      await expect(viaFollower.listJobs({})).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
      expect((await admin.listTokens()).map((t) => t.name)).not.toContain('short-lived');
      await expect(admin.revokeToken('short-lived')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    } finally {
      viaFollower.close();
      viaLeader.close();
    }
  }, 30_000);

  it('token and task-type writes sent to a follower are forwarded to the leader, which checks the caller itself', async () => {
    const c = client(followerAddr);
    const setTt = Buffer.from(SetTaskTypeRequest.encode(SetTaskTypeRequest.fromPartial({ config: { taskType: 'forwarded-tt', maxRunning: 3 } })).finish());
    // The operator may set limits through any node; the viewer is refused by the leader too.
    expect(await rawUnary(c, '/herald.v1.TaskTypeService/SetTaskType', { token: tokens.operator }, setTt)).toEqual({ code: status.OK, details: '' });
    expect(await rawUnary(c, '/herald.v1.TaskTypeService/SetTaskType', { token: tokens.viewer }, setTt)).toMatchObject({ code: status.PERMISSION_DENIED });
    expect((await cluster.client.getTaskType('forwarded-tt')).maxRunning).toBe(3);
    const del = Buffer.from(DeleteTaskTypeRequest.encode({ taskType: 'forwarded-tt' }).finish());
    expect(await rawUnary(c, '/herald.v1.TaskTypeService/DeleteTaskType', { token: tokens.operator }, del)).toEqual({ code: status.OK, details: '' });
    await expect(cluster.client.getTaskType('forwarded-tt')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // An admin creates and revokes a token through the follower; an operator cannot.
    const create = Buffer.from(CreateTokenRequest.encode({ name: 'via-follower', role: Role.ROLE_VIEWER, taskTypes: [] }).finish());
    expect(await rawUnary(c, '/herald.v1.AuthService/CreateToken', { token: tokens.operator }, create)).toMatchObject({ code: status.PERMISSION_DENIED });
    expect(await rawUnary(c, '/herald.v1.AuthService/CreateToken', { token: tokens.admin }, create)).toEqual({ code: status.OK, details: '' });
    expect((await cluster.client.listTokens()).map((t) => t.name)).toContain('via-follower');
    const revoke = Buffer.from(RevokeTokenRequest.encode({ nameOrId: 'via-follower' }).finish());
    expect(await rawUnary(c, '/herald.v1.AuthService/RevokeToken', { token: tokens.admin }, revoke)).toEqual({ code: status.OK, details: '' });
    expect((await cluster.client.listTokens()).map((t) => t.name)).not.toContain('via-follower');
  }, 30_000);
});
