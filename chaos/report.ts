// The run's report: one JSON document (written to <dir>/chaos-report-<seed>.json) with the seed,
// the faults injected by kind and in order, the operations, every checker's figures, lateness
// and recovery times; a short human summary; and the one-line JSON summary that is the run's
// last line on stdout.
import type { SlotsCheckResult } from './checkers/slots-checker.js';
import type { FencingCheckResult } from './checkers/fencing-checker.js';
import type { ControlPlaneCheckResult } from './checkers/control-plane-checker.js';
import type { RecoveryCheckResult } from './checkers/recovery-checker.js';
import type { ConvergenceCheckResult } from './checkers/convergence-checker.js';
import type { FaultRecord, StartFailure } from './nemesis/nemesis.js';

export interface ChaosReport {
  seed: number;
  nodes: number;
  durationS: number;
  /** proxy: faults through TCP proxies; netns: kernel network faults (`--netns`). */
  network: 'proxy' | 'netns';
  /** TLS on both ports and auth on (`--secure`). */
  secure: boolean;
  /** `--secure`: what a call without a token and a viewer's write got (both must be refused). */
  authProbe?: { noToken: string; viewerWrite: string };
  faultFamilies: string[];
  /** Kinds selected but not available on this cluster, with the reason. */
  unavailableFaults: Record<string, string>;
  faults: number;
  faultsByKind: Record<string, number>;
  faultLog: FaultRecord[];
  /** The members at the end as the cluster reports them (the nodes convergence compares). */
  finalMembers: string[];
  /** Leader recovery after leader faults (ms from the fault) and after kill-majority/all (from the restart). */
  leaderRecoveryMs: { samples: number; p50: number; max: number; none: number };
  /** Nodes that refused to restart during the run (each one fails the run). */
  nodeStartFailures: StartFailure[];
  /** Jobs whose run history could not be read after the heal (each one fails the run). */
  readErrors: Record<string, string>;
  operations: { total: number; controlPlane: number; jobActions: number; jobsCreated: number };
  workers: { started: number };
  windowEndUnixMs: number;
  checks: {
    slots: SlotsCheckResult;
    fencing: FencingCheckResult;
    controlPlane: ControlPlaneCheckResult;
    recovery: RecoveryCheckResult;
    convergence: ConvergenceCheckResult;
  };
  unsafe: string[];
  ok: boolean;
  wallTimeS: number;
}

export interface ChaosSummary {
  seed: number;
  nodes: number;
  durationS: number;
  network: 'proxy' | 'netns';
  secure: boolean;
  faults: number;
  operations: number;
  slotsChecked: number;
  lost: number;
  duplicateEffects: number;
  unexpected: number;
  early: number;
  staleAccepted: number;
  linearizable: boolean | 'unknown';
  converged: boolean;
  reExecutions: number;
  notTerminal: number;
  recovered: boolean;
  nodeStartFailures: number;
  ok: boolean;
  report?: string;
}

export function summarize(r: ChaosReport, reportPath?: string): ChaosSummary {
  const s = r.checks.slots;
  return {
    seed: r.seed,
    nodes: r.nodes,
    durationS: r.durationS,
    network: r.network,
    secure: r.secure,
    faults: r.faults,
    operations: r.operations.total,
    slotsChecked: s.slotsChecked,
    lost: s.lost,
    duplicateEffects: s.duplicateEffects,
    unexpected: s.unexpected,
    early: s.early,
    staleAccepted: r.checks.fencing.staleAccepted,
    linearizable: r.checks.controlPlane.linearizable,
    converged: r.checks.convergence.converged,
    reExecutions: r.checks.fencing.reExecutions,
    notTerminal: s.notTerminal,
    recovered: r.checks.recovery.ok,
    nodeStartFailures: r.nodeStartFailures.length,
    ok: r.ok,
    ...(reportPath ? { report: reportPath } : {}),
  };
}

const mark = (ok: boolean) => (ok ? 'ok  ' : 'FAIL');

export function humanSummary(r: ChaosReport): string {
  const c = r.checks;
  const s = c.slots;
  const f = c.fencing;
  const lines = [
    `chaos run: seed ${r.seed}, ${r.nodes} nodes, ${r.durationS} s of faults (${r.faultFamilies.join(',') || 'none'}; ${r.network === 'netns' ? 'kernel network faults in namespaces' : 'proxy network faults'}${r.secure ? '; TLS + auth' : ''}) — ${r.ok ? 'PASSED' : 'FAILED'}`,
    `  faults injected: ${r.faults} ${JSON.stringify(r.faultsByKind)}`,
    ...(Object.keys(r.unavailableFaults).length ? [`  not available: ${Object.entries(r.unavailableFaults).map(([k, v]) => `${k} (${v})`).join('; ')}`] : []),
    `  leader recovery: ${r.leaderRecoveryMs.samples} samples, p50 ${r.leaderRecoveryMs.p50} / max ${r.leaderRecoveryMs.max} ms, ${r.leaderRecoveryMs.none} without a new leader within the fault`,
    `  operations: ${r.operations.total} (control plane ${r.operations.controlPlane}, job actions ${r.operations.jobActions}, jobs ${r.operations.jobsCreated}); workers started ${r.workers.started}`,
    `  ${mark(s.ok)} slots: ${s.slotsChecked} checked in ${s.jobsChecked} jobs; lost ${s.lost}, duplicate effects ${s.duplicateEffects}, unexpected ${s.unexpected}, early ${s.early}, not terminal ${s.notTerminal}, success without effect ${s.missingEffects}; runs ${JSON.stringify(s.runsByState)}; lateness p50 ${s.latenessMs.p50} / p99 ${s.latenessMs.p99} / max ${s.latenessMs.max} ms`,
    `  ${mark(f.ok)} fencing: stale accepted ${f.staleAccepted}, token order violations ${f.tokenOrderViolations}, unknown tokens ${f.unknownTokens}; ${f.invocations} executions, ${f.reExecutions} re-executions ${JSON.stringify(f.causes)}`,
    `  ${mark(c.controlPlane.ok)} control plane: ${c.controlPlane.operations} ops (${c.controlPlane.unknownOutcomes} unknown outcomes) linearizable=${c.controlPlane.linearizable}, lost creates ${c.controlPlane.lostCreates}`,
    `  ${mark(c.recovery.ok)} recovery: leader ${c.recovery.leaderAfterHealMs ?? 'never'} ms after heal (bound ${c.recovery.bounds.leaderMs}); ${c.recovery.slotsAfterHeal} slots after heal, fire delay p50 ${c.recovery.fireDelayAfterHealMs.p50} / max ${c.recovery.fireDelayAfterHealMs.max} ms (bound ${c.recovery.bounds.fireMs} after recovery)`,
    `  ${mark(c.convergence.ok)} convergence: ${c.convergence.nodes.map((n) => `${n.id}@${n.appliedIndex}:${n.stateHash?.slice(0, 10) ?? '?'}`).join(' ')}`,
  ];
  for (const [job, err] of Object.entries(r.readErrors)) lines.push(`  FAIL runs of ${job} unreadable: ${err}`);
  for (const f of r.nodeStartFailures) lines.push(`  FAIL node ${f.node} refused to start at +${f.atMs} ms: ${f.error}`);
  const problems = [...s.problems, ...f.problems, ...c.controlPlane.problems, ...c.recovery.problems, ...c.convergence.problems];
  if (problems.length) lines.push('  problems:', ...problems.slice(0, 20).map((p) => `    - ${p}`));
  if (c.controlPlane.explanation && c.controlPlane.linearizable !== true) lines.push(c.controlPlane.explanation.split('\n').map((l) => `    ${l}`).join('\n'));
  return lines.join('\n');
}
