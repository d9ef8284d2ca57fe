import type { ConnectedWorker } from '../../gen/herald/v1/cluster_service.js';
import type { LeaderServices } from './leader-services.js';

/** The worker streams connected to this leader, as ClusterService.ListWorkers shows them. */
export function connectedWorkers(services: Pick<LeaderServices, 'sessions' | 'leases'>): ConnectedWorker[] {
  const held = services.leases.heldByWorker();
  return services.sessions
    .all()
    .filter((s) => !s.closed)
    .map((s) => ({
      workerId: s.workerId,
      taskTypes: [...s.taskTypes].sort(),
      credits: s.credits,
      heldRuns: held.get(s.workerId) ?? 0,
      connectedUnixMs: s.connectedUnixMs,
      lastHeardUnixMs: s.lastHeardUnixMs,
      silent: s.isParked,
      draining: s.draining,
    }))
    .sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
}
