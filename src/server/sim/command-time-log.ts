// The time stamps (nowMs: the cluster time each command was made at) of every command that
// applied, by log index, collected from every replica's apply like JobChangeLog (the first to
// apply an entry records it; every committed entry is evaluated by some replica). Cluster time
// never runs backwards (DESIGN §5a), across leaders too: a command's stamp is never below that of
// a command before it in the log. The check fails on the first few entries that break it.
import { decodeCommand } from '../../fsm/index.js';
import type { Entry } from '../../raft/types.js';

interface Stamp {
  index: number;
  term: number;
  type: string;
  nowMs: number;
}

export class CommandTimeLog {
  private readonly stamps = new Map<number, Stamp>();

  observe(entries: readonly Entry[]): void {
    for (const e of entries) {
      if (e.type !== 'normal' || e.data.length === 0 || this.stamps.has(e.index)) continue;
      try {
        const cmd = decodeCommand(e.data);
        this.stamps.set(e.index, { index: e.index, term: e.term, type: cmd.type, nowMs: cmd.nowMs });
      } catch {
        // Not a command this build decodes: it carries no time stamp to judge.
      }
    }
  }

  /** Commands recorded. */
  get size(): number {
    return this.stamps.size;
  }

  /** One line per command stamped below an earlier command in log order (at most `max`). */
  regressions(max = 3): string[] {
    const out: string[] = [];
    let high: Stamp | undefined;
    for (const s of [...this.stamps.values()].sort((a, b) => a.index - b.index)) {
      if (high && s.nowMs < high.nowMs) {
        out.push(`entry ${s.index} (${s.type}, term ${s.term}) is stamped ${s.nowMs}, ${high.nowMs - s.nowMs} ms below entry ${high.index} (${high.type}, term ${high.term}) at ${high.nowMs}`);
        if (out.length >= max) break;
      }
      if (!high || s.nowMs >= high.nowMs) high = s;
    }
    return out;
  }
}
