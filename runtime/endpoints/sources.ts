// Function sources the endpoints run through the ordinary function runner. Functions run in worker threads
// and their arguments cross as BSON, so the `response` object an endpoint function writes to, and the
// `body.text()` it reads with, cannot be passed in: they are built inside the worker by a few lines appended
// to the function's own source. The runner asks for these sources by reserved names; a colon cannot occur in
// an app's function names, so the names never collide.
import type { AppModel } from '../../core/model';
import type { FunctionSource } from '../functions';
import { isObject } from '../../core/json';

/** The endpoint form of function `<name>`: called with the request, returns the result and the response it built. */
export const ENDPOINT_FUNCTION_PREFIX = 'https-endpoint:';
/** The `run_as_user_id_script_source` of function `<name>`. */
export const USER_ID_SCRIPT_PREFIX = 'https-endpoint-user-id:';
/** The Data API's `run_as_user_id_script_source`. */
export const DATA_API_USER_ID_SCRIPT = 'data-api:user-id-script';

/** Marks what the appended wrapper returns, so a source that skipped it (a top-level `return`) is recognised. */
export const WRAPPED_RESULT_MARK = 'httpsEndpointResult';

/**
 * Appended after the function's source, so line numbers in its errors stay right. It takes whichever export
 * the source assigned (`exports = f` or `module.exports = f`, as the worker does) and exports a function
 * that builds the request and response objects, calls it and returns both what it returned and the response.
 */
const ENDPOINT_WRAPPER = `
;exports = (function (handler) {
  if (typeof handler !== 'function') return handler;
  return async function (request) {
    const headers = new Map();
    const state = { statusCode: undefined, body: undefined };
    const response = {
      setStatusCode(code) { state.statusCode = code; },
      setHeader(name, value) { headers.set(String(name).toLowerCase(), [String(name), [String(value)]]); },
      addHeader(name, value) {
        const key = String(name).toLowerCase();
        const entry = headers.get(key) || [String(name), []];
        entry[1].push(String(value));
        headers.set(key, entry);
      },
      setBody(body) {
        if (typeof body === 'string' || body === undefined || body === null) state.body = body == null ? undefined : body;
        else if (ArrayBuffer.isView(body) || body._bsontype === 'Binary') state.body = body;
        else state.body = EJSON.stringify(body);
      },
    };
    const input = { query: request.query, headers: request.headers };
    if (request.body !== undefined) {
      const body = request.body;
      Object.defineProperty(body, 'text', { value: () => body.toString('utf8'), enumerable: false });
      input.body = body;
    }
    const result = await handler(input, response);
    return { ${WRAPPED_RESULT_MARK}: true, result, response: { statusCode: state.statusCode, headers: [...headers.values()], body: state.body } };
  };
})(typeof exports === 'function' ? exports : module.exports);
`;

export type SourceLoader = (name: string) => FunctionSource | undefined | Promise<FunctionSource | undefined>;

/**
 * A `loadSource` for the function runner that also answers the endpoints' reserved names; other names go
 * to `load`. `app` is read on every call so that a reload's new sources are used.
 */
export function withEndpointSources(app: () => AppModel, load: SourceLoader): SourceLoader {
  return (name) => {
    if (name.startsWith(ENDPOINT_FUNCTION_PREFIX)) {
      const file = app().functions.get(name.slice(ENDPOINT_FUNCTION_PREFIX.length))?.sourceFile;
      return file ? { source: file.text + ENDPOINT_WRAPPER, path: file.path } : undefined;
    }
    if (name.startsWith(USER_ID_SCRIPT_PREFIX)) {
      const fn = app().functions.get(name.slice(USER_ID_SCRIPT_PREFIX.length));
      const source = fn?.runAsUserIdScriptSource;
      return source ? { source, path: `${fn.manifest?.file.path ?? fn.name} (run_as_user_id_script_source of ${fn.name})` } : undefined;
    }
    if (name === DATA_API_USER_ID_SCRIPT) {
      const config = app().dataApiConfig;
      const source = isObject(config?.value) ? config.value.run_as_user_id_script_source : undefined;
      return typeof source === 'string' && source !== '' ? { source, path: `${config!.path} (run_as_user_id_script_source)` } : undefined;
    }
    return load(name);
  };
}
