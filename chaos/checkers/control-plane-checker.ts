// Control plane (I4 seen from clients): the recorded history of creates, updates, gets and
// deletes on control-plane jobs is linearizable against the versioned-document model (WGL
// checker, partitioned per job), and no acknowledged create is lost — the history ends with a
// linearizable get of every job after heal, so a lost create shows as a get that returned
// NOT_FOUND for a job no delete touched; it is also counted on its own for the report.
import { checkOperations, describeResult } from '../../src/raft/linearizability/checker.js';
import { documentModel, type DocOperation } from '../../src/raft/linearizability/document-model.js';

/** The part of a job that control-plane clients write and read back. */
export type ControlDoc = string;

export interface ControlPlaneCheckResult {
  ok: boolean;
  linearizable: boolean | 'unknown';
  operations: number;
  unknownOutcomes: number;
  partitions: number;
  steps: number;
  lostCreates: number;
  explanation?: string;
  problems: string[];
}

export function checkControlPlane(history: readonly DocOperation<ControlDoc>[], opts: { maxSteps?: number; timeLimitMs?: number } = {}): ControlPlaneCheckResult {
  const model = documentModel<ControlDoc>({ versions: 'increasing' });
  const r = checkOperations(model, history, {
    maxSteps: opts.maxSteps ?? 5_000_000,
    deadline: { now: () => performance.now(), ms: opts.timeLimitMs ?? 60_000 },
  });
  const problems: string[] = [];

  // Acknowledged creates whose job a final read did not find, with no delete of it in flight.
  let lostCreates = 0;
  const ids = new Set(history.map((o) => o.input.id));
  for (const id of ids) {
    const ops = history.filter((o) => o.input.id === id);
    const ackedCreate = ops.find((o) => o.input.kind === 'create' && o.return !== Infinity && o.output?.status === 'ok');
    if (!ackedCreate) continue;
    const deleted = ops.some((o) => o.input.kind === 'delete' && (o.return === Infinity || o.output?.status === 'ok'));
    const finalGet = [...ops].reverse().find((o) => o.input.kind === 'get' && o.return !== Infinity);
    if (!deleted && finalGet?.output?.status === 'not_found' && finalGet.call > ackedCreate.return) {
      lostCreates++;
      if (problems.length < 10) problems.push(`job ${id}: create acknowledged at ${ackedCreate.return}, not found by a later get`);
    }
  }

  const linearizable = r.result === 'ok' ? true : r.result === 'illegal' ? false : 'unknown';
  const explanation = r.result === 'ok' ? undefined : describeResult(model, r).slice(0, 4_000);
  return {
    ok: linearizable === true && lostCreates === 0,
    linearizable,
    operations: history.length,
    unknownOutcomes: history.filter((o) => o.return === Infinity).length,
    partitions: r.partitions,
    steps: r.steps,
    lostCreates,
    ...(explanation ? { explanation } : {}),
    problems,
  };
}
