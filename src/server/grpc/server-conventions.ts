import { loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import type { Server } from '@grpc/grpc-js';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import { PUBLIC_PROTO_FILES, protoRoot } from './proto-files.js';

/** Services the health check reports on ('' is the whole server). */
const HEALTH_SERVICES = ['', 'herald.v1.JobService', 'herald.v1.WorkerService', 'herald.v1.ClusterService', 'herald.v1.TaskTypeService', 'herald.v1.AuthService'];

/**
 * gRPC keepalive suited to long-lived worker streams: the server pings idle connections so dead
 * workers are noticed, and tolerates clients that ping every 10 s.
 */
export const CLIENT_SERVER_OPTIONS = {
  'grpc.keepalive_time_ms': 20_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.min_ping_interval_without_data_ms': 10_000,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.max_send_message_length': 64 * 1024 * 1024,
} as const;

export interface ReadinessSource {
  /** True once the node knows a leader and has applied everything it knows committed. */
  isReady(): boolean;
}

/**
 * Adds gRPC health checking and server reflection to the client server. Health reports
 * NOT_SERVING until `readiness` says ready, re-evaluated every `pollMs`.
 */
export function addServerConventions(server: Server, readiness: ReadinessSource, pollMs = 200): { stop(): void; health: HealthImplementation } {
  const health = new HealthImplementation(Object.fromEntries(HEALTH_SERVICES.map((s) => [s, 'NOT_SERVING' as ServingStatus])));
  health.addToServer(server);
  const pkg = loadSync(PUBLIC_PROTO_FILES, { includeDirs: [protoRoot()], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  new ReflectionService(pkg).addToServer(server);
  let last: ServingStatus = 'NOT_SERVING';
  const update = () => {
    const next: ServingStatus = readiness.isReady() ? 'SERVING' : 'NOT_SERVING';
    if (next === last) return;
    last = next;
    for (const s of HEALTH_SERVICES) health.setStatus(s, next);
  };
  update();
  const timer = setInterval(update, pollMs);
  timer.unref();
  return {
    health,
    stop: () => {
      clearInterval(timer);
      for (const s of HEALTH_SERVICES) health.setStatus(s, 'NOT_SERVING');
    },
  };
}

/**
 * Readiness of a Raft node: it has not failed (a node whose store failed stops applying), a
 * leader is known and the node applied all it knows committed.
 */
export function raftReadiness(driver: { status(): { leader: string; commit: number }; appliedIndex(): number; failure(): Error | undefined }): ReadinessSource {
  return {
    isReady() {
      if (driver.failure()) return false;
      const s = driver.status();
      return s.leader !== '' && driver.appliedIndex() >= s.commit;
    },
  };
}
