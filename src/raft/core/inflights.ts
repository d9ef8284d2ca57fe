// The append messages sent to one follower and not yet acknowledged (etcd's Inflights): in
// replicate state the leader pipelines appends until this window is full, which bounds how much
// unacknowledged data one slow follower can pin in flight.

export class Inflights {
  /** Last entry index of each in-flight append, oldest first (always increasing). */
  private readonly queue: number[] = [];
  private head = 0;

  constructor(readonly capacity: number) {}

  get count(): number {
    return this.queue.length - this.head;
  }

  full(): boolean {
    return this.count >= this.capacity;
  }

  add(lastIndex: number): void {
    this.queue.push(lastIndex);
  }

  /** Frees every append whose last index is <= `index` (acknowledged cumulatively). */
  freeLE(index: number): void {
    while (this.head < this.queue.length && this.queue[this.head]! <= index) this.head++;
    // Compact lazily so freeing stays O(1) amortized.
    if (this.head > 64 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Frees the oldest append: a heartbeat reply proves the link works, so a lost append must not stall the window forever. */
  freeFirstOne(): void {
    if (this.count > 0) this.freeLE(this.queue[this.head]!);
  }

  reset(): void {
    this.queue.length = 0;
    this.head = 0;
  }
}
