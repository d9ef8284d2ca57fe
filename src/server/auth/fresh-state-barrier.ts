// The revocation rule's barrier. A token is checked against this node's applied state only
// after a read barrier that started after the call arrived: the barrier waits until this node
// applied everything the leader had committed by then, so a revoke acknowledged before the call
// came (acknowledged = committed and applied on the leader) is applied here too — on a follower
// as on the leader. Calls share barriers: one that arrives while a barrier runs waits for the
// next one (the running one may have started before it arrived), so a burst of calls costs two
// barriers, not one each.
export class FreshStateBarrier {
  private current: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(private readonly readIndex: () => Promise<unknown>) {}

  wait(): Promise<void> {
    if (!this.current) return (this.current = this.launch());
    return (this.queued ??= this.current.then(noop, noop).then(() => {
      this.queued = undefined;
      return (this.current ??= this.launch());
    }));
  }

  private launch(): Promise<void> {
    const p: Promise<void> = this.readIndex().then(noop).finally(() => {
      if (this.current === p) this.current = undefined;
    });
    return p;
  }
}

function noop(): void {}
