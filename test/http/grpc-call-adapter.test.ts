import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { FORWARDED_CALL_KEY, REQUEST_ID_KEY } from '../../src/server/api/unary-handler.js';
import { deadlineOf, metadataOf } from '../../src/server/http/grpc-call-adapter.js';

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('HTTP headers as call metadata', () => {
  it('passes the bearer token and request id, never the forwarded-call marker', () => {
    const md = metadataOf(req({ authorization: 'Bearer t0k3n', [REQUEST_ID_KEY]: 'r-1', [FORWARDED_CALL_KEY]: '1', cookie: 'a=b' }));
    expect(md.get('authorization')).toEqual(['Bearer t0k3n']);
    expect(md.get(REQUEST_ID_KEY)).toEqual(['r-1']);
    expect(md.get(FORWARDED_CALL_KEY)).toEqual([]);
    expect(md.get('cookie')).toEqual([]);
  });

  it('turns timeout-ms into a deadline, and no header into none', () => {
    const before = Date.now();
    expect(deadlineOf(req({ 'timeout-ms': '1500' }))).toBeGreaterThanOrEqual(before + 1500);
    expect(deadlineOf(req({}))).toBe(Infinity);
    expect(deadlineOf(req({ 'timeout-ms': 'soon' }))).toBe(Infinity);
  });
});
