export { Lease } from "./lib/lease.js";
export * from "./lib/problems.js";
export { Tenure, DEFAULT_EARLY_TOLERANCE, DEFAULT_TIMEOUT, DEFAULT_TTL } from "./lib/client.js";
export { TenureError, TransportError, UnexpectedResponse, ServiceUnavailable } from "./lib/errors.js";
export { DEFAULT_RETRY, NO_RETRY } from "./lib/retry.js";
export { FENCING_HEADER, MAX_GENERATION, checkGeneration, fencingHeaders, formatToken, idempotencyKey, parseToken } from "./lib/tokens.js";
export { FencingError, MemoryFenceStore, RemoteFenceStore, fastifyFencing, fencing, tenureResourceName } from "./lib/middleware.js";
