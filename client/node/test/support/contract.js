// The contract check: a fetch that validates every request the client sends and every answer
// it reads against openapi/openapi.json (JSON Schema 2020-12, as OpenAPI 3.1 writes it).

import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";

const OPENAPI = path.resolve(fileURLToPath(import.meta.url), "../../../../../openapi/openapi.json");
const document = JSON.parse(readFileSync(OPENAPI, "utf8"));
const ajv = new Ajv2020.default({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: "openapi", components: document.components });

/** @type {Array<{method: string, pattern: RegExp, operation: any}>} */
const routes = Object.entries(document.paths).flatMap(([template, item]) =>
  Object.entries(/** @type {Record<string, any>} */ (item)).map(([method, operation]) => ({
    method: method.toUpperCase(),
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    operation,
  })),
);

/** @type {Map<string, import("ajv").ValidateFunction>} */
const compiled = new Map();

/** @param {any} schema compiled once: compiling blocks the event loop, renewals included */
function validator(schema) {
  const text = JSON.stringify(schema).replaceAll('"#/components', '"openapi#/components');
  if (!compiled.has(text)) compiled.set(text, ajv.compile(JSON.parse(text)));
  return /** @type {import("ajv").ValidateFunction} */ (compiled.get(text));
}

/** Every request and answer checked so far, by operation id. */
export const checked = new Map();

/**
 * @param {string} what @param {any} schema @param {unknown} value
 */
function check(what, schema, value) {
  const validate = validator(schema);
  if (!validate(value)) {
    throw new Error(`${what} does not match the OpenAPI document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
  }
}

/** @type {typeof fetch} */
export async function contractFetch(input, init = {}) {
  const url = new URL(String(input));
  const method = (init.method ?? "GET").toUpperCase();
  const route = routes.find((r) => r.method === method && r.pattern.test(url.pathname));
  if (!route) throw new Error(`${method} ${url.pathname} is not in the OpenAPI document`);
  const id = route.operation.operationId;
  const bodySchema = route.operation.requestBody?.content?.["application/json"]?.schema;
  if (bodySchema) check(`${id} request`, bodySchema, JSON.parse(String(init.body)));
  const response = await fetch(input, init);
  const text = await response.clone().text();
  const answer = route.operation.responses[String(response.status)];
  if (!answer) throw new Error(`${id} answered ${response.status}, which the document does not list`);
  const schema = answer.content?.["application/json"]?.schema;
  if (schema && text) check(`${id} ${response.status} answer`, schema, JSON.parse(text));
  checked.set(id, (checked.get(id) ?? 0) + 1);
  return response;
}
