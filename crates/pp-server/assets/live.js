// One live event connection for everything decide shows on a page (the cards that
// follow an outcome, the decisions panel): browsers allow only six connections per
// server, and the shell and the timeline hold one each already. Subscribers filter by
// task themselves; the connection closes when the last one leaves.

import { followEvents } from "./api.js";

const subscribers = new Set();
let stream = null;
let sweeper = null;

function sweep() {
  for (const entry of subscribers) {
    if (!entry.alive()) {
      subscribers.delete(entry);
    }
  }
  if (subscribers.size === 0 && stream) {
    stream.close();
    stream = null;
    clearInterval(sweeper);
    sweeper = null;
  }
}

/**
 * Calls `handler(stored)` for every event of every task from now on, while `alive()`
 * (checked on each event and every few seconds) says the subscriber is still on the
 * page. Each time the connection opens (first or again) `handler({ type: "resync" })`
 * runs: events before that moment were not seen, so a subscriber re-reads. Returns `unsubscribe()`.
 */
export function subscribe(handler, alive = () => true) {
  const entry = { handler, alive };
  subscribers.add(entry);
  if (!stream) {
    stream = followEvents("/api/events", {
      onEvent(stored) {
        for (const subscriber of [...subscribers]) {
          if (subscriber.alive()) {
            subscriber.handler(stored);
          }
        }
        sweep();
      },
      onStatus(state) {
        // Connected (first time or again): events before this moment were not seen.
        if (state === "live") {
          for (const subscriber of [...subscribers]) {
            subscriber.handler({ type: "resync" });
          }
        }
      },
    });
    sweeper = setInterval(sweep, 5000);
  }
  return () => {
    subscribers.delete(entry);
    sweep();
  };
}
