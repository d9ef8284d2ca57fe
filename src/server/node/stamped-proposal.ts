// A time-stamped command proposed so that its stamp is the cluster time when it enters the log
// (ProposalData as a function): stamps then never decrease in log order on one leader, even when
// a proposal waits before its append (a leadership transfer settling) or its maker awaited reads
// after taking the time. The stamp only moves later, as if the command had been made then.
import { encodeCommand, type FsmCommand } from '../../fsm/index.js';
import type { ProposalData } from '../../raft/driver/proposal-tracker.js';

export function stampedAtAppend(cmd: FsmCommand, clock: { nowMs(): number | undefined } | undefined, encode: (c: FsmCommand) => Uint8Array = encodeCommand): ProposalData {
  if (!clock) return encode(cmd);
  return () => {
    const now = clock.nowMs();
    return encode(now !== undefined && now > cmd.nowMs ? { ...cmd, nowMs: now } : cmd);
  };
}
