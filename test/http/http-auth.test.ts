// Auth on the HTTP port is the gRPC port's own (one guard around the handlers both transports
// call): no token, a bad token, a role too small, a revoked token and a forged forwarding header
// get the same code and message both ways; the JSON API honours the role a token carries.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthServiceClient, CreateTokenRequest, ListTokensRequest, Role, WhoAmIRequest } from '../../src/gen/herald/v1/auth_service.js';
import { JobServiceClient, ListJobsRequest, PauseJobRequest, ResumeJobRequest } from '../../src/gen/herald/v1/job_service.js';
import { FORWARDED_PRINCIPAL_KEY } from '../../src/server/auth/authenticator.js';
import { ERROR_CODE_KEY } from '../../src/server/grpc/grpc-status-map.js';
import { httpStatusOf } from '../../src/server/http/http-status.js';
import { fromServiceError } from '../../src/client/errors.js';
import { newTokenSecret } from '../../src/server/auth/token-secret.js';
import { createSchedulerNode, type SchedulerNode } from '../../src/server/scheduler-node.js';
import { freePort } from '../api/helpers/free-port.js';
import { SUPPORTED_FEATURE_LEVEL } from '../../src/fsm/commands/feature-levels.js';

type Unary = (req: unknown, md: Metadata, opts: { deadline: Date }, cb: (err: ServiceError | null, res?: unknown) => void) => unknown;

/** A gRPC call with the given metadata, as a promise. */
function grpcCall<Res>(client: object, method: string, request: unknown, headers: Record<string, string>): Promise<Res> {
  const md = new Metadata();
  for (const [k, v] of Object.entries(headers)) md.set(k, v);
  const fn = (client as Record<string, Unary>)[method]!.bind(client);
  return new Promise((resolve, reject) => fn(request, md, { deadline: new Date(Date.now() + 10_000) }, (err, res) => (err ? reject(err) : resolve(res as Res))));
}

async function grpcError(client: object, method: string, request: unknown, headers: Record<string, string>): Promise<ServiceError> {
  try {
    await grpcCall(client, method, request, headers);
  } catch (e) {
    return e as ServiceError;
  }
  throw new Error(`${method} succeeded but was expected to fail`);
}

describe('the HTTP port authenticates and authorizes exactly as the gRPC port', () => {
  let dir: string;
  let sn: SchedulerNode;
  let base: string;
  let jobs: JobServiceClient;
  let auth: AuthServiceClient;
  const admin = newTokenSecret().token;
  let viewer = '';
  let operator = '';

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}/${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

  /** The same call both ways must fail alike: gRPC code, Herald code, message; HTTP status of that code. */
  async function sameRefusal(service: object, method: string, request: unknown, path: string, headers: Record<string, string>, code: status): Promise<string> {
    const g = await grpcError(service, method, request, headers);
    expect(g.code).toBe(code);
    const h = await post(path, {}, headers);
    expect(h.status).toBe(httpStatusOf[code]);
    expect(h.body.code).toBe(status[code]);
    expect(h.body.message).toBe(g.details);
    expect(h.body.heraldCode).toBe(g.metadata.get(ERROR_CODE_KEY)[0]);
    return g.details;
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'herald-http-auth-'));
    const [peer, api] = [await freePort(), await freePort()];
    sn = await createSchedulerNode({
      id: 'n1',
      members: [{ id: 'n1', peerAddress: `127.0.0.1:${peer}`, clientAddress: `127.0.0.1:${api}` }],
      dataDir: join(dir, 'n1'),
      logger: pino({ level: 'silent' }),
      tickMs: 20,
      httpListen: '127.0.0.1:0',
      auth: { bootstrapToken: admin },
    });
    base = `http://127.0.0.1:${sn.httpPort}`;
    jobs = new JobServiceClient(`127.0.0.1:${api}`, credentials.createInsecure());
    auth = new AuthServiceClient(`127.0.0.1:${api}`, credentials.createInsecure());
    // The first leader puts the bootstrap admin token; until then it is refused.
    const end = Date.now() + 20_000;
    for (;;) {
      try {
        await grpcCall(jobs, 'listJobs', ListJobsRequest.fromPartial({}), bearer(admin));
        break;
      } catch (e) {
        if (Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    // A new cluster raises its feature level to what its nodes support right after the election;
    // jobs record who made them from then on.
    for (const end = Date.now() + 10_000; ; ) {
      const st = await post('herald.v1.ClusterService/GetStatus', {}, bearer(admin));
      if (st.body.featureLevel === SUPPORTED_FEATURE_LEVEL) break;
      if (Date.now() > end) throw new Error(`feature level not raised: ${JSON.stringify(st.body.featureLevel)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Tokens made over HTTP with the admin token: the secret comes back once, in JSON.
    const v = await post('herald.v1.AuthService/CreateToken', { name: 'http-viewer', role: 'ROLE_VIEWER' }, bearer(admin));
    expect(v.status, JSON.stringify(v.body)).toBe(200);
    viewer = v.body.secret as string;
    const o = await grpcCall<{ secret: string }>(auth, 'createToken', CreateTokenRequest.fromPartial({ name: 'grpc-operator', role: Role.ROLE_OPERATOR }), bearer(admin));
    operator = o.secret;
  }, 60_000);

  afterAll(async () => {
    jobs?.close();
    auth?.close();
    await sn?.stop({ transfer: false, graceMs: 500 });
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a call with no token, or a token it does not know, the same way', async () => {
    await sameRefusal(jobs, 'listJobs', ListJobsRequest.fromPartial({}), 'herald.v1.JobService/ListJobs', {}, status.UNAUTHENTICATED);
    await sameRefusal(jobs, 'listJobs', ListJobsRequest.fromPartial({}), 'herald.v1.JobService/ListJobs', bearer(newTokenSecret().token), status.UNAUTHENTICATED);
    await sameRefusal(jobs, 'listJobs', ListJobsRequest.fromPartial({}), 'herald.v1.JobService/ListJobs', { authorization: 'Basic abc' }, status.UNAUTHENTICATED);
  });

  it('lets a viewer read and refuses it a write, naming the role needed, the same way', async () => {
    const list = await post('herald.v1.JobService/ListJobs', {}, bearer(viewer));
    expect(list.status).toBe(200);
    // WhoAmI (any role): what the dashboard asks to offer only what the role may do.
    const me = await post('herald.v1.AuthService/WhoAmI', {}, bearer(viewer));
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ name: 'http-viewer', role: 'ROLE_VIEWER', authEnabled: true });
    await sameRefusal(auth, 'whoAmI', WhoAmIRequest.fromPartial({}), 'herald.v1.AuthService/WhoAmI', {}, status.UNAUTHENTICATED);
    const message = await sameRefusal(jobs, 'pauseJob', PauseJobRequest.fromPartial({}), 'herald.v1.JobService/PauseJob', bearer(viewer), status.PERMISSION_DENIED);
    expect(message).toMatch(/operator/);
    await sameRefusal(auth, 'createToken', CreateTokenRequest.fromPartial({}), 'herald.v1.AuthService/CreateToken', bearer(operator), status.PERMISSION_DENIED);
  });

  it('an operator token writes over HTTP; revoked, the next call is refused both ways', async () => {
    const created = await post(
      'herald.v1.JobService/CreateJob',
      { jobId: 'http-auth-job', spec: { taskType: 'email', schedule: { cron: { expression: '0 3 * * *', timeZone: 'UTC' } } } },
      bearer(operator),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    // The job records who made it, in the JSON too (Job.created_by / updated_by).
    expect(created.body.job).toMatchObject({ createdBy: 'grpc-operator', updatedBy: 'grpc-operator' });
    const paused = await post('herald.v1.JobService/PauseJob', { jobId: 'http-auth-job' }, bearer(operator));
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    const got = await post('herald.v1.JobService/GetJob', { jobId: 'http-auth-job' }, bearer(admin));
    expect(got.body.job).toMatchObject({ createdBy: 'grpc-operator', updatedBy: 'grpc-operator', state: 'JOB_STATE_PAUSED' });
    // And the request ids of those calls (feature level 3): the create's, then the pause's.
    const ids = got.body.job as { createdRequestId?: string; updatedRequestId?: string };
    expect(ids.createdRequestId).toBe((created.body.job as { createdRequestId?: string }).createdRequestId);
    expect(ids.createdRequestId).toMatch(/.+/);
    expect(ids.updatedRequestId).toMatch(/.+/);
    expect(ids.updatedRequestId).not.toBe(ids.createdRequestId);
    const listed = await grpcCall<{ tokens: { id: string; name: string }[] }>(auth, 'listTokens', ListTokensRequest.fromPartial({}), bearer(admin));
    const id = listed.tokens.find((t) => t.name === 'grpc-operator')!.id;
    const revoked = await post('herald.v1.AuthService/RevokeToken', { nameOrId: id }, bearer(admin));
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    await sameRefusal(jobs, 'resumeJob', ResumeJobRequest.fromPartial({}), 'herald.v1.JobService/ResumeJob', bearer(operator), status.UNAUTHENTICATED);
  });

  it('a forwarded-principal header from a client grants nothing on either port', async () => {
    const forged = { [FORWARDED_PRINCIPAL_KEY]: 'admin' };
    const g = await grpcError(jobs, 'pauseJob', PauseJobRequest.fromPartial({}), forged);
    expect([status.UNAUTHENTICATED, status.PERMISSION_DENIED]).toContain(g.code);
    const h = await post('herald.v1.JobService/PauseJob', {}, forged);
    expect([401, 403]).toContain(h.status);
  });

  it('a principal over its rate limit gets RESOURCE_EXHAUSTED with when to retry, on both transports', async () => {
    const d = await mkdtemp(join(tmpdir(), 'herald-http-rate-'));
    const [peer, api] = [await freePort(), await freePort()];
    const limited = await createSchedulerNode({
      id: 'r1',
      members: [{ id: 'r1', peerAddress: `127.0.0.1:${peer}`, clientAddress: `127.0.0.1:${api}` }],
      dataDir: join(d, 'r1'),
      logger: pino({ level: 'silent' }),
      tickMs: 20,
      httpListen: '127.0.0.1:0',
      auth: { bootstrapToken: admin, ratePerSecond: 1 },
    });
    const authClient = new AuthServiceClient(`127.0.0.1:${api}`, credentials.createInsecure());
    try {
      const url = `http://127.0.0.1:${limited.httpPort}/herald.v1.AuthService/WhoAmI`;
      // The bucket holds two calls and refills one a second: of ten sent at once, some are refused
      // (at once, so however slow the machine).
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', ...bearer(admin) } })),
      );
      const refused = answers.find((r) => r.status === 429);
      expect(refused, 'no call was refused').toBeDefined();
      const body = (await refused!.json()) as { code: string; heraldCode: string; retryAfterMs: number };
      expect(body).toMatchObject({ code: 'RESOURCE_EXHAUSTED', heraldCode: 'LIMIT_EXCEEDED' });
      expect(body.retryAfterMs).toBeGreaterThan(0);
      expect(body.retryAfterMs).toBeLessThanOrEqual(1000);
      expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // gRPC: the same hint in a trailer, which the SDK reads into HeraldClientError.retryAfterMs.
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, () => grpcError(authClient, 'whoAmI', WhoAmIRequest.fromPartial({}), bearer(admin)).catch(() => undefined)),
      );
      const g = outcomes.find((e) => e !== undefined);
      expect(g?.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(Number(g!.metadata.get('herald-retry-after-ms')[0])).toBeGreaterThan(0);
      expect(fromServiceError(g!).retryAfterMs).toBeGreaterThan(0);
    } finally {
      authClient.close();
      await limited.stop({ transfer: false, graceMs: 500 });
      await rm(d, { recursive: true, force: true });
    }
  }, 30_000);
});
