// A time-stamped command proposed so that its stamp is the cluster time when it enters the log
// (ProposalData as a function): stamps then never decrease in log order on one leader, even when
// a proposal waits before its append (a leadership transfer settling) or its maker awaited reads
// after taking the time. The stamp only moves later, as if the command had been made then.
import { encodeCommand, type FsmCommand } from '../../fsm/index.js';
import type { ProposalData } from '../../raft/driver/proposal-tracker.js';

/** A cluster clock: its time now (undefined while unknown) and the last it handed out (ClusterClock). */
export interface StampClock {
  nowMs(): number | undefined;
  readonly lastKnownMs?: number;
}

export function stampedAtAppend(cmd: FsmCommand, clock: StampClock | undefined, encode: (c: FsmCommand) => Uint8Array = encodeCommand): ProposalData {
  if (!clock) return encode(cmd);
  return () => {
    // While cluster time is unknown (samples gone stale), the last time handed out: commands
    // stamped since then must not be passed by this one's older stamp (seed 107, 3 nodes).
    const now = clock.nowMs() ?? clock.lastKnownMs;
    return encode(now !== undefined && now > cmd.nowMs ? { ...cmd, nowMs: now } : cmd);
  };
}
