// THE table of who may call what: fully-qualified gRPC method name → the roles allowed. Every
// public method is listed; a method missing here is refused to everyone (deny by default).
// gRPC health is open (it is never guarded); reflection needs any valid credential. The HTTP
// transport authorizes with the same names.
import { Role } from '../../gen/herald/v1/auth_service.js';
import { HeraldError } from '../../herald-error.js';
import type { Principal } from './principal.js';
import { roleName } from './principal.js';

const { ROLE_ADMIN: ADMIN, ROLE_OPERATOR: OPERATOR, ROLE_VIEWER: VIEWER, ROLE_WORKER: WORKER } = Role;
const READ = [ADMIN, OPERATOR, VIEWER] as const;
const WRITE = [ADMIN, OPERATOR] as const;
const ADMIN_ONLY = [ADMIN] as const;
const ANY = [ADMIN, OPERATOR, VIEWER, WORKER] as const;

export const METHOD_ROLES: Readonly<Record<string, readonly Role[]>> = {
  '/herald.v1.JobService/CreateJob': WRITE,
  '/herald.v1.JobService/CreateJobs': WRITE,
  '/herald.v1.JobService/CreateJobsStream': WRITE,
  '/herald.v1.JobService/GetJob': READ,
  '/herald.v1.JobService/ListJobs': READ,
  '/herald.v1.JobService/UpdateJob': WRITE,
  '/herald.v1.JobService/DeleteJob': WRITE,
  '/herald.v1.JobService/PauseJob': WRITE,
  '/herald.v1.JobService/ResumeJob': WRITE,
  '/herald.v1.JobService/TriggerJob': WRITE,
  '/herald.v1.JobService/BackfillJob': WRITE,
  '/herald.v1.JobService/ListRuns': READ,
  '/herald.v1.JobService/GetRun': READ,
  '/herald.v1.JobService/CountRuns': READ,
  '/herald.v1.JobService/CancelRun': WRITE,
  '/herald.v1.JobService/RetryRun': WRITE,
  '/herald.v1.JobService/RetryRuns': WRITE,
  // Validation changes nothing, but it is part of writing a job.
  '/herald.v1.JobService/ValidateJob': WRITE,
  '/herald.v1.TaskTypeService/SetTaskType': WRITE,
  '/herald.v1.TaskTypeService/GetTaskType': READ,
  '/herald.v1.TaskTypeService/ListTaskTypes': READ,
  '/herald.v1.TaskTypeService/DeleteTaskType': WRITE,
  '/herald.v1.WatchService/WatchRuns': READ,
  '/herald.v1.WatchService/WatchJobs': READ,
  // Workers for the task types on their credential; an admin may run a worker of any task type.
  '/herald.v1.WorkerService/Connect': [WORKER, ADMIN],
  '/herald.v1.ClusterService/GetStatus': READ,
  '/herald.v1.ClusterService/TransferLeadership': ADMIN_ONLY,
  // Membership (issue 28) and the worker list (issue 32), when those services carry them.
  '/herald.v1.ClusterService/AddMember': ADMIN_ONLY,
  '/herald.v1.ClusterService/PromoteMember': ADMIN_ONLY,
  '/herald.v1.ClusterService/RemoveMember': ADMIN_ONLY,
  '/herald.v1.ClusterService/ListWorkers': READ,
  '/herald.v1.AuthService/CreateToken': ADMIN_ONLY,
  '/herald.v1.AuthService/ListTokens': ADMIN_ONLY,
  '/herald.v1.AuthService/RevokeToken': ADMIN_ONLY,
  '/herald.v1.AuthService/WhoAmI': ANY,
  '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo': ANY,
  '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo': ANY,
};

/** Methods no credential is asked for. */
export const OPEN_METHODS: ReadonlySet<string> = new Set(['/grpc.health.v1.Health/Check', '/grpc.health.v1.Health/Watch']);

/** Throws PERMISSION_DENIED naming the roles that may call `method`. */
export function authorize(principal: Principal, method: string): void {
  const allowed = METHOD_ROLES[method];
  if (allowed === undefined) throw new HeraldError('PERMISSION_DENIED', `${method} is not a public method any role may call`);
  if (allowed.includes(principal.role)) return;
  throw new HeraldError(
    'PERMISSION_DENIED',
    `${method} needs the ${allowed.map(roleName).join(' or ')} role; ${principal.via === 'certificate' ? 'certificate' : 'token'} "${principal.name}" has the ${roleName(principal.role)} role`,
    { neededRoles: allowed.map(roleName) },
  );
}
