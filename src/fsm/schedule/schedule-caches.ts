// Parsed cron expressions and zone rules, memoized per owner (a state machine, an API service)
// rather than per process, so nothing in the schedule math is module-level state: two nodes in one
// process share nothing, and a test's caches start empty. The values are immutable and pure
// functions of their key, so a hit can never change a result — only its cost.
import { parseCronExpression, type CronExpression } from './cron-expression.js';
import { loadZoneRules, type ZoneRules } from './zone-rules.js';

/** Bounds: user input (any letter case of a zone, any expression text) must not grow these without end. */
const MAX_EXPRESSIONS = 10_000;
const MAX_ZONE_SPELLINGS = 10_000;

export class ScheduleCaches {
  private readonly expressions = new Map<string, CronExpression>();
  /** By the zone name as given. */
  private readonly zones = new Map<string, ZoneRules>();
  /** By the name Intl resolves it to: spellings of one zone ("EST5EDT", "america/new_york") share one rules object and its tables. */
  private readonly byResolvedName = new Map<string, ZoneRules>();
  private readonly findResolved = (resolved: string): ZoneRules | undefined => this.byResolvedName.get(resolved);

  /** The parsed expression; throws INVALID_CRON as parseCronExpression does. */
  cron(expression: string): CronExpression {
    let c = this.expressions.get(expression);
    if (c === undefined) {
      c = parseCronExpression(expression);
      if (this.expressions.size >= MAX_EXPRESSIONS) this.expressions.clear();
      this.expressions.set(expression, c);
    }
    return c;
  }

  /** The zone's rules ("" means UTC); throws UNKNOWN_TIME_ZONE naming the zone. */
  zone(timeZone: string): ZoneRules {
    const cached = this.zones.get(timeZone);
    if (cached !== undefined) return cached;
    const { rules, resolved } = loadZoneRules(timeZone, this.findResolved);
    this.byResolvedName.set(resolved, rules);
    if (this.zones.size >= MAX_ZONE_SPELLINGS) this.zones.clear();
    this.zones.set(timeZone, rules);
    return rules;
  }
}
