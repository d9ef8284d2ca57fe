// `herald cluster status` shows the cluster feature level and each member's supported level.
import { describe, expect, it } from 'vitest';
import { GetStatusResponse, Member, NodeRole } from '../../src/gen/herald/v1/cluster_service.js';
import { MEMBER_HEADERS, joinMembers, memberRow, statusHeadline, statusJson } from '../../src/cli/output/cluster-view.js';

describe('cluster status: feature levels', () => {
  it('headline, column and JSON', () => {
    const members = [Member.fromPartial({ id: 'n1', supportedFeatureLevel: 2 }), Member.fromPartial({ id: 'n2', supportedFeatureLevel: 1 }), Member.fromPartial({ id: 'n3' })];
    const base = GetStatusResponse.fromPartial({ clusterId: 'c', nodeId: 'n1', leaderId: 'n1', role: NodeRole.NODE_ROLE_LEADER, featureLevel: 1, members });
    expect(statusHeadline(base)).toContain('feature level 1');
    const views = joinMembers(base, new Map([['n1', base]]));
    const col = MEMBER_HEADERS.indexOf('supports');
    expect(views.map((v) => memberRow(v)[col])).toEqual(['level 2', 'level 1', '-']);
    const json = statusJson(base, views) as { featureLevel: number; members: { supportedFeatureLevel: number | null }[] };
    expect(json.featureLevel).toBe(1);
    expect(json.members.map((m) => m.supportedFeatureLevel)).toEqual([2, 1, null]);
  });
});
