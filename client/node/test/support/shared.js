// The tables of cases the Python tests read too (tests/shared/).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SHARED = path.resolve(fileURLToPath(import.meta.url), "../../../../../tests/shared");

/** @param {string} name */
export function shared(name) {
  return JSON.parse(readFileSync(path.join(SHARED, name), "utf8"));
}
