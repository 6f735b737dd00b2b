// Keyboard decisions on any page with approval cards: a approve, r reject, e edit,
// Esc close the open panel, j / k next / previous card. Keys act on the card that has
// the focus (or holds it), else on the first pending card; they are off while typing in
// a field (except Esc). A "Skip to decisions" link leads to the first pending card; it
// is the page's first Tab stop (index.html has it first in <body>).
//
// Type-ahead (issue 27): a decision key (a, r, e) does nothing for 700 ms after the card
// it would act on appeared, changed (a redraw, a new precheck) or got the focus after
// the previous decision: a second `a` pressed right after a new card appeared must not
// approve a card the person has not seen.

import { h } from "./dom.js";
import { cardFor, announce } from "./card.js";
import { installNotifications } from "./notify.js";

/** The hint line shown above card lists. */
export const KEY_HINT = "Keys: a approve · r reject · e edit · Esc back · j / k next / previous card";

function typing(target) {
  return (
    target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))
  );
}

function allCards() {
  return [...document.querySelectorAll("main article.card")].filter((element) => element.offsetParent !== null || element === document.activeElement);
}

function pendingCards() {
  return allCards().filter((element) => element.dataset.state === "pending");
}

function focusedCard() {
  return document.activeElement?.closest?.("article.card") || null;
}

/** Moves the focus to the first pending card (or says there is none). */
export function focusFirstDecision() {
  const first = pendingCards()[0];
  if (first) {
    cardFor(first)?.guardKeys();
    first.focus();
    first.scrollIntoView({ block: "start" });
  } else {
    announce("Nothing is waiting for your decision on this page.");
  }
}

export function installKeys() {
  const skip = document.querySelector("a.skip-link") || h("a", { href: "#decisions", class: "skip-link", text: "Skip to decisions" });
  skip.addEventListener("click", (event) => {
    // The hash is the router's: focus instead of navigating.
    event.preventDefault();
    focusFirstDecision();
  });
  if (document.body.firstElementChild !== skip) {
    document.body.prepend(skip);
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    const own = focusedCard();
    if (event.key === "Escape") {
      const card = own && cardFor(own);
      if (card) {
        card.closePanels();
        own.focus();
      }
      return;
    }
    if (typing(event.target) || event.repeat) {
      return;
    }
    const key = event.key.toLowerCase();
    if (!["a", "r", "e", "j", "k"].includes(key) || event.shiftKey) {
      return;
    }
    if (key === "j" || key === "k") {
      const cards = pendingCards().length ? pendingCards() : allCards();
      if (!cards.length) {
        return;
      }
      event.preventDefault();
      const at = own ? cards.indexOf(own) : -1;
      const next = key === "j" ? cards[Math.min(cards.length - 1, at + 1)] : cards[Math.max(0, at === -1 ? 0 : at - 1)];
      if (next !== own) {
        cardFor(next)?.guardKeys();
      }
      next.focus();
      next.scrollIntoView({ block: "nearest" });
      return;
    }
    const element = own && own.dataset.state === "pending" ? own : pendingCards()[0];
    const card = element && cardFor(element);
    // With the editor or the reject panel open, a stray key must not approve the
    // unedited call: only Esc (above) acts there.
    if (!card || !card.isPending() || card.panelOpen()) {
      return;
    }
    event.preventDefault();
    if (!card.keysReady()) {
      announce("Not done: this card just appeared or changed. Look at it, then press the key again.");
      return;
    }
    if (key === "a") {
      card.approve();
    } else if (key === "r") {
      card.openReject();
    } else {
      card.openEditor();
    }
  });
}

/** Everything decide adds to the shell: the keys, the skip link and the notifications. */
export function installDecide() {
  installKeys();
  installNotifications();
}
