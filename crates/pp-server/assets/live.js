// Live events for decide's parts of a page (the cards that follow an outcome, the
// decisions panel), taken from the shell's all-tasks stream (api.js `onAllEvents`):
// browsers allow only six connections per server, so decide opens none of its own.
// Subscribers filter by task themselves.

import { onAllEvents } from "./api.js";

/**
 * Calls `handler(stored)` for every event of every task from now on, while `alive()`
 * says the subscriber is still on the page (a card removed from the page unsubscribes
 * itself on the next event). Each time the shell's stream (re)connects
 * `handler({ type: "resync" })` runs: events before that moment were not seen, so a
 * subscriber re-reads. Returns `unsubscribe()`.
 */
export function subscribe(handler, alive = () => true) {
  const unsubscribe = onAllEvents((stored) => {
    if (!alive()) {
      unsubscribe();
      return;
    }
    handler(stored);
  });
  return unsubscribe;
}
