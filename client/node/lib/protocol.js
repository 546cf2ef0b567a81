// The HTTP API v1 without I/O (as tenure._protocol): what to send for each operation, and what
// an answer means. Answers are read into plain objects with camelCase keys; a generation (or
// any count) outside Number.isSafeInteger is refused, never rounded.

import { ServiceUnavailable, TenureError, UnexpectedResponse } from "./errors.js";
import { ERROR_CLASSES, TYPE_PREFIX } from "./problems.js";
import { checkGeneration } from "./tokens.js";

/**
 * @typedef {object} Request
 * @property {"GET" | "POST" | "PUT" | "DELETE"} method
 * @property {string} path
 * @property {Record<string, unknown>} [body]
 * @property {number} [wait] seconds the service may hold the request open (a waiting acquire)
 */

// Members holding integers that must be exact (JSON numbers above 2**53 - 1 would be rounded).
const EXACT = new Set(["generation", "highest", "current_generation", "attempt"]);

/** @param {string} value @param {string} what */
function segment(value, what) {
  // Names never contain "/" on the service; encoding keeps a wrong one from changing the route.
  if (typeof value !== "string" || value === "" || value === "." || value === "..") {
    throw new TypeError(`not a ${what}: ${JSON.stringify(value)}`);
  }
  return encodeURIComponent(value);
}

/** @param {string} name @param {string} action */
const leasePath = (name, action) => `/v1/leases/${segment(name, "lease name")}/${action}`;

/** @param {string} job @param {string} window @param {string} action */
const windowPath = (job, window, action) =>
  `/v1/jobs/${segment(job, "job name")}/windows/${segment(window, "window key")}/${action}`;

/**
 * @param {string} name @param {string} holder @param {number} ttl @param {number} wait
 * @returns {Request}
 */
export function acquire(name, holder, ttl, wait) {
  /** @type {Record<string, unknown>} */
  const body = { holder, ttl_seconds: ttl };
  if (wait > 0) body.wait_seconds = wait;
  return { method: "POST", path: leasePath(name, "acquire"), body, wait: Math.max(wait, 0) };
}

/**
 * @param {string} holder @param {Array<[string, number]>} holdings @param {number} ttl
 * @returns {Request}
 */
export function renewMany(holder, holdings, ttl) {
  const leases = holdings.map(([name, generation]) => ({
    name,
    generation: checkGeneration(generation),
  }));
  return { method: "POST", path: "/v1/leases/renew", body: { holder, ttl_seconds: ttl, leases } };
}

/**
 * @param {string} name @param {string} holder @param {number} generation @param {string} grant
 * @returns {Request}
 */
export function release(name, holder, generation, grant) {
  const body = { holder, generation: checkGeneration(generation), grant };
  return { method: "POST", path: leasePath(name, "release"), body };
}

/**
 * @param {"claim" | "complete"} action @param {string} job @param {string} window
 * @param {string} lease @param {string} holder @param {number} generation
 * @returns {Request}
 */
export function windowAction(action, job, window, lease, holder, generation) {
  const body = { holder, lease, generation: checkGeneration(generation) };
  return { method: "POST", path: windowPath(job, window, action), body };
}

/**
 * @param {string} cron @param {string} timezone @param {string} key @param {number} tolerance
 * @returns {Request}
 */
export function resolveWindow(cron, timezone, key, tolerance) {
  const body = { cron, timezone, key, early_tolerance_seconds: tolerance };
  return { method: "POST", path: "/v1/windows/resolve", body };
}

/**
 * @param {string} resource @param {string} lease @param {number} generation
 * @returns {Request}
 */
export function verifyFence(resource, lease, generation) {
  const path = `/v1/fences/${segment(resource, "resource name")}/verify`;
  return { method: "POST", path, body: { lease, generation: checkGeneration(generation) } };
}

/**
 * @param {string[]} resources @param {string} lease @param {number} generation
 * @returns {Request}
 */
export function verifyFences(resources, lease, generation) {
  checkGeneration(generation);
  const fences = resources.map((resource) => ({ resource, lease, generation }));
  return { method: "POST", path: "/v1/fences/verify", body: { fences } };
}

/** @param {string} name @returns {Request} */
export function getLease(name) {
  return { method: "GET", path: `/v1/leases/${segment(name, "lease name")}` };
}

/** @param {string} job @param {string} window @returns {Request} */
export function getWindow(job, window) {
  return { method: "GET", path: windowPath(job, window, "").slice(0, -1) };
}

// Answers ------------------------------------------------------------------------------------

/** @param {string} key */
const camel = (key) => key.replace(/_([a-z])/g, (_, letter) => letter.toUpperCase());

/**
 * JSON with camelCase keys, refusing inexact integers where exactness matters.
 * @param {unknown} value
 * @param {string} [key]
 * @returns {any}
 */
export function readJson(value, key = "") {
  if (EXACT.has(key) && typeof value === "number" && !Number.isSafeInteger(value)) {
    throw new TypeError(`field '${key}' is not an exact integer (above 2**53 - 1?): ${value}`);
  }
  if (Array.isArray(value)) return value.map((item) => readJson(item));
  // A problem keeps its wire names: its error class reads (and checks) them.
  if (key === "problem") return value;
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, item]) => [camel(name), readJson(item, name)]),
  );
}

/**
 * The `Retry-After` header in seconds, when it is one.
 * @param {Headers} headers
 */
export function retryAfterHeader(headers) {
  const value = headers.get("retry-after");
  const seconds = value === null || value.trim() === "" ? NaN : Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
}

/**
 * The error a problem names (its class by `type`), as if it had been answered alone.
 * @param {number} status
 * @param {Record<string, unknown>} problem
 * @param {number | null} [retryAfter]
 * @returns {TenureError}
 */
export function problemError(status, problem, retryAfter = null) {
  const kind = String(problem.type);
  const detail = typeof problem.detail === "string" ? problem.detail : `HTTP ${status}: ${kind}`;
  const seconds = problem.retry_after_seconds;
  const options = {
    status,
    problem,
    retryAfter: typeof seconds === "number" && Number.isFinite(seconds) ? seconds : retryAfter,
  };
  const slug = kind.startsWith(TYPE_PREFIX) ? kind.slice(TYPE_PREFIX.length) : "";
  const ErrorClass = Object.hasOwn(ERROR_CLASSES, slug) ? ERROR_CLASSES[slug] : TenureError;
  try {
    return new ErrorClass(detail, options);
  } catch (error) {
    return new UnexpectedResponse(`${detail} (malformed ${kind} problem: ${error})`, options);
  }
}

/** @param {string} text */
function jsonObject(text) {
  try {
    const body = JSON.parse(text);
    return body !== null && typeof body === "object" && !Array.isArray(body) ? body : null;
  } catch {
    return null;
  }
}

/**
 * The decoded body of a 2xx answer (camelCase keys); otherwise throws the error it describes.
 * @param {number} status
 * @param {Headers} headers
 * @param {string} text
 * @returns {any}
 */
export function decodeResponse(status, headers, text) {
  const body = jsonObject(text);
  if (status < 200 || status >= 300) {
    if (body !== null && typeof body.type === "string") {
      return throwing(problemError(status, body, retryAfterHeader(headers)));
    }
    const detail = `HTTP ${status}` + (text.trim() ? `: ${text.slice(0, 200).trim()}` : "");
    const retryAfter = retryAfterHeader(headers);
    if ([502, 503, 504].includes(status)) {
      return throwing(new ServiceUnavailable(detail, { status, retryAfter }));
    }
    return throwing(new TenureError(detail, { status }));
  }
  if (status === 204) return null;
  if (body === null) {
    throw new UnexpectedResponse(`HTTP ${status}: the body is not a JSON object`, { status });
  }
  try {
    return readJson(body);
  } catch (error) {
    throw new UnexpectedResponse(`HTTP ${status}: ${error}`, { status });
  }
}

/** @param {Error} error @returns {never} */
function throwing(error) {
  throw error;
}

/**
 * A batch verify's answer, each refusal's problem read into the error a single verify throws.
 * @param {any} answer
 * @returns {{accepted: any[], refused: Array<{resource: string, lease: string, generation: number, error: TenureError}>}}
 */
export function verifications(answer) {
  const refused = answer.refused.map((/** @type {any} */ item) => ({
    resource: item.resource,
    lease: item.lease,
    generation: item.generation,
    error: problemError(item.problem.status, item.problem),
  }));
  return { accepted: answer.accepted, refused };
}
