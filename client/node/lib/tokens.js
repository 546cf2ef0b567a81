// Tokens on the wire: the fencing token `Fencing-Token: <lease>/<generation>`, and the
// idempotency key of an occurrence `<job>/<window>/<part>/…`, exactly as tenure._tokens writes
// them (the cases in tests/shared/idempotency_keys.json are checked by both clients).

export const FENCING_HEADER = "Fencing-Token";
/** The largest generation Tenure hands out, 2**53 - 1: the largest integer JSON readers
 * holding numbers as doubles (JavaScript) read exactly. */
export const MAX_GENERATION = Number.MAX_SAFE_INTEGER;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
const GENERATION = /^[1-9][0-9]{0,18}$/;

/**
 * The generation if it is an exact one (an integer from 1 to MAX_GENERATION); throws
 * otherwise: a generation is never rounded.
 * @param {unknown} generation
 * @returns {number}
 */
export function checkGeneration(generation) {
  if (typeof generation !== "number" || !Number.isSafeInteger(generation)) {
    throw new RangeError(`generation must be a safe integer, got ${String(generation)}`);
  }
  if (generation < 1) throw new RangeError(`generation must be at least 1, got ${generation}`);
  return generation;
}

/**
 * `"close-day/7"`.
 * @param {string} lease
 * @param {number} generation
 */
export function formatToken(lease, generation) {
  if (typeof lease !== "string" || !NAME.test(lease)) {
    throw new RangeError(`not a lease name: ${JSON.stringify(lease)}`);
  }
  return `${lease}/${checkGeneration(generation)}`;
}

/**
 * `"close-day/7"` → `["close-day", 7]`; throws RangeError for anything else.
 * @param {string} value
 * @returns {[string, number]}
 */
export function parseToken(value) {
  const slash = typeof value === "string" ? value.indexOf("/") : -1;
  const lease = slash < 0 ? "" : value.slice(0, slash);
  const digits = slash < 0 ? "" : value.slice(slash + 1);
  if (!NAME.test(lease) || !GENERATION.test(digits)) {
    throw new RangeError(`not a fencing token (<lease>/<generation>): ${JSON.stringify(value)}`);
  }
  // Compared as text first: a number above 2**53 - 1 would be rounded by Number().
  if (digits.length > 16 || (digits.length === 16 && digits > String(MAX_GENERATION))) {
    throw new RangeError(`fencing token generation is above ${MAX_GENERATION}: ${value}`);
  }
  return [lease, Number(digits)];
}

/**
 * `{"Fencing-Token": "<lease>/<generation>"}`, to merge into a request's headers.
 * @param {string} lease
 * @param {number} generation
 * @returns {Record<string, string>}
 */
export function fencingHeaders(lease, generation) {
  return { [FENCING_HEADER]: formatToken(lease, generation) };
}

/** @param {string} component */
function escape(component) {
  // "%" first: the "%" that escapes "/" must not be escaped again.
  return component.replaceAll("%", "%25").replaceAll("/", "%2F");
}

/**
 * `idempotencyKey("close-day", "2026-09-25", "store", 42)` is `"close-day/2026-09-25/store/42"`,
 * byte for byte what the Python client's `tenure.idempotency_key` gives for strings and integers
 * (safe integers or bigints); any other part is refused (its text would differ between the two).
 * @param {string} job
 * @param {string} window
 * @param {...(string | number | bigint)} parts
 */
export function idempotencyKey(job, window, ...parts) {
  return [job, window, ...parts].map((part) => escape(partText(part))).join("/");
}

/** @param {unknown} part */
function partText(part) {
  if (typeof part === "string" || typeof part === "bigint") return String(part);
  if (typeof part === "number" && Number.isSafeInteger(part)) return String(part);
  throw new TypeError(
    `an idempotency key part must be a string, a safe integer or a bigint, got ${String(part)}`,
  );
}
