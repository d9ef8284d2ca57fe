// Per task type gauges (the leader's): runs running, and which limits held runs back in the last
// dispatch round. Label cardinality is bounded: the first MAX_TASK_TYPE_LABELS task types seen
// get their own label, later ones are summed under "other" (task types are user input).
import type { NodeMetrics } from '../node/metrics.js';
import type { RunningCounts } from './leases/running-counts.js';
import type { DispatchGate } from './dispatch/dispatch-gate.js';

export const MAX_TASK_TYPE_LABELS = 100;
export const OTHER_TASK_TYPES = 'other';
const PUBLISH_MS = 1_000;

/** Task type → metric label, at most `cap` distinct labels plus "other". */
export class BoundedLabels {
  private readonly known = new Set<string>();
  constructor(private readonly cap: number) {}

  of(taskType: string): string {
    if (this.known.has(taskType)) return taskType;
    if (this.known.size >= this.cap) return OTHER_TASK_TYPES;
    this.known.add(taskType);
    return taskType;
  }
}

export class TaskTypeMetrics {
  private timer: NodeJS.Timeout | undefined;
  private readonly labels: BoundedLabels;

  constructor(
    private readonly metrics: Pick<NodeMetrics, 'taskTypeRunning' | 'taskTypeHeld'>,
    private readonly running: RunningCounts,
    private readonly gate: Pick<DispatchGate, 'held'>,
    cap = MAX_TASK_TYPE_LABELS,
  ) {
    this.labels = new BoundedLabels(cap);
  }

  start(): void {
    this.timer = setInterval(() => this.publish(), PUBLISH_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.metrics.taskTypeRunning.reset();
    this.metrics.taskTypeHeld.reset();
  }

  publish(): void {
    const running = new Map<string, number>();
    for (const [t, n] of this.running.taskTypes()) {
      const l = this.labels.of(t);
      running.set(l, (running.get(l) ?? 0) + n);
    }
    this.metrics.taskTypeRunning.reset();
    for (const [l, n] of running) this.metrics.taskTypeRunning.set({ task_type: l }, n);
    this.metrics.taskTypeHeld.reset();
    for (const [t, kinds] of this.gate.held) {
      const l = this.labels.of(t);
      for (const [kind, n] of kinds) this.metrics.taskTypeHeld.inc({ task_type: l, limit: kind }, n);
    }
  }
}
