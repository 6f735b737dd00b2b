// @ts-check
// Who is logged in (`GET /api/me`) and what that role may do, so pages hide controls the
// server would refuse anyway (team mode, docs/team.md). Single-user mode answers
// `{"user": null, "role": "owner", …}`: everything stays as it was.

import { api } from "./api.js";

/** @typedef {{ user: string | null, role: string, workspaces: string[] }} Me */

/** @type {Me} */
let me = { user: null, role: "owner", workspaces: [] };

/**
 * Asks the server who is logged in; keeps the previous answer when it cannot say.
 * @returns {Promise<Me>}
 */
export async function loadMe() {
  try {
    const answer = await api("/api/me");
    if (answer && typeof answer.role === "string") {
      me = { user: answer.user ?? null, role: answer.role, workspaces: answer.workspaces || [] };
    }
  } catch (error) {
    console.warn("cannot read /api/me", error);
  }
  return me;
}

/** @returns {Me} the caller as last loaded. */
export function currentUser() {
  return me;
}

/**
 * Whether the caller may approve or reject (owners; approvers, who only ever see the
 * approvals of their granted workspaces).
 * @returns {boolean}
 */
export function canDecide() {
  return me.role === "owner" || me.role === "approver";
}
