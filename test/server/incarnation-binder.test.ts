// The leader binds bootstrap members (listed without an incarnation) to the incarnation it heard
// from each: which binding comes next, and what the configuration change allows.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { applyConfChange, incarnationOf, type ConfChange } from '../../src/raft/core/membership.js';
import type { ConfState } from '../../src/raft/types.js';
import { bindNextIncarnation, HeardIncarnations, nextBinding } from '../../src/server/node/incarnation-binder.js';
import { HeraldError, isHeraldError } from '../../src/herald-error.js';

const boot: ConfState = { voters: ['n1', 'n2', 'n3'] };

describe('binding member incarnations', () => {
  it('binds the leader itself first, then each member once heard from, and nothing bound twice', () => {
    const heard = new HeardIncarnations();
    expect(nextBinding(boot, 'n1', 'i1', (id) => heard.get(id))).toEqual({ kind: 'bindIncarnation', id: 'n1', incarnation: 'i1' });
    const c1 = applyConfChange(boot, { kind: 'bindIncarnation', id: 'n1', incarnation: 'i1' });
    expect(nextBinding(c1, 'n1', 'i1', (id) => heard.get(id))).toBeUndefined(); // n2, n3 not heard yet
    heard.hear('n3', '');
    expect(nextBinding(c1, 'n1', 'i1', (id) => heard.get(id))).toBeUndefined(); // a pre-incarnation data dir names none
    heard.hear('n3', 'i3');
    const cc = nextBinding(c1, 'n1', 'i1', (id) => heard.get(id))!;
    expect(cc).toEqual({ kind: 'bindIncarnation', id: 'n3', incarnation: 'i3' });
    const c2 = applyConfChange(c1, cc);
    expect(c2.voters).toEqual(boot.voters);
    expect(incarnationOf(c2, 'n3')).toBe('i3');
    // Bound stays bound: a wiped n3 heard under a new incarnation is not bound over the old one.
    heard.hear('n3', 'wiped');
    expect(nextBinding(c2, 'n1', 'i1', (id) => heard.get(id))).toBeUndefined();
    const again = (cc2: ConfChange) => {
      try {
        applyConfChange(c2, cc2);
        return 'applied';
      } catch (e) {
        return isHeraldError(e) ? e.code : 'other';
      }
    };
    expect(again({ kind: 'bindIncarnation', id: 'n3', incarnation: 'wiped' })).toBe('ALREADY_EXISTS');
    expect(again({ kind: 'bindIncarnation', id: 'n9', incarnation: 'x' })).toBe('MEMBER_NOT_FOUND');
    expect(again({ kind: 'bindIncarnation', id: 'n2', incarnation: '' })).toBe('INVALID_ARGUMENT');
    // Removing a member forgets its binding: the id may come back as a new incarnation.
    const c3 = applyConfChange(c2, { kind: 'remove', id: 'n3' });
    expect(incarnationOf(c3, 'n3')).toBe('');
  });

  it('proposes only as a leader with no change pending, and a refused proposal waits for the next check', async () => {
    const proposed: ConfChange[] = [];
    let leader = false;
    let pending = false;
    let refuse = false;
    const deps = {
      selfId: 'n1',
      selfIncarnation: 'i1',
      heard: new HeardIncarnations(),
      isLeader: () => leader,
      confState: () => boot,
      confChangePending: () => pending,
      proposeConfChange: async (cc: ConfChange) => {
        if (refuse) throw new HeraldError('CONF_CHANGE_PENDING', 'a configuration change is already pending');
        proposed.push(cc);
      },
      logger: pino({ level: 'silent' }),
    };
    await bindNextIncarnation(deps);
    leader = true;
    pending = true;
    await bindNextIncarnation(deps);
    expect(proposed).toEqual([]);
    pending = false;
    await bindNextIncarnation(deps);
    expect(proposed).toEqual([{ kind: 'bindIncarnation', id: 'n1', incarnation: 'i1' }]);
    await bindNextIncarnation({ ...deps, selfIncarnation: '' });
    expect(proposed.length).toBe(1); // a node from before incarnations binds nobody
    refuse = true;
    await bindNextIncarnation(deps); // refused: logged, not thrown; the next check tries again
    expect(proposed.length).toBe(1);
  });
});
