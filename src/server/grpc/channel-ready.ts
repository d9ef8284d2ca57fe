// Whether a call made now on a client's channel would be sent. grpc-js fails a call at once, before
// it leaves the process, when the channel is in TRANSIENT_FAILURE (it could not connect), and
// queues it while the channel connects; but its error does not say which happened (only its
// message text does). A caller that must know whether a failed call could have reached the server
// asks here first: false means no call was made, so the server cannot have acted on it.

import { connectivityState, type Client } from '@grpc/grpc-js';

/**
 * True when the channel is connected; otherwise waits (at most `waitMs`) for a connection attempt
 * to end: true once connected, false when it failed, took too long, or the channel is closed.
 */
export function channelReady(client: Client, waitMs: number): boolean | Promise<boolean> {
  const channel = client.getChannel();
  let state = channel.getConnectivityState(false);
  if (state === connectivityState.READY) return true;
  if (state === connectivityState.IDLE) {
    channel.getConnectivityState(true); // starts connecting
    state = channel.getConnectivityState(false);
  }
  if (state === connectivityState.TRANSIENT_FAILURE || state === connectivityState.SHUTDOWN || waitMs <= 0) return false;
  // grpc-js takes a wall-clock deadline here.
  const deadline = Date.now() + waitMs;
  return new Promise<boolean>((resolve) => {
    const watch = (from: connectivityState): void => {
      channel.watchConnectivityState(from, deadline, (err) => {
        const now = channel.getConnectivityState(false);
        if (now === connectivityState.READY) resolve(true);
        else if (err || now === connectivityState.TRANSIENT_FAILURE || now === connectivityState.SHUTDOWN) resolve(false);
        else watch(now);
      });
    };
    watch(state);
  });
}
