// @ts-check
// The model in use, from `GET /api/health` (`model_name`: "provider:model" or
// "scripted"), asked once per page load.

import { api } from "./api.js";

/** @type {Promise<string> | null} */
let cached = null;

/**
 * The configured model's name, or "" when the server does not say (older servers) or
 * cannot be reached (asked again next time).
 * @returns {Promise<string>}
 */
export function modelName() {
  if (!cached) {
    cached = api("/api/health").then(
      (health) => (health && typeof health.model_name === "string" ? health.model_name : ""),
      () => {
        cached = null;
        return "";
      },
    );
  }
  return cached;
}
