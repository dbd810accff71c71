// Request bodies of the Admin API's piecewise routes: JSON whatever the Content-Type says (the harnesses
// send `application/json;charset=utf-8`, the docs' curl examples a form type), checked field by field with
// a 400 naming the field.
import { badRequest } from '../http/errors';
import type { HttpRequest } from '../http/server';

/** Deepest nesting of objects and arrays a body may have (an app's configuration needs far less). */
export const MAX_BODY_DEPTH = 64;

/** The body as JSON; an empty body is `{}`. */
export async function parseBody(req: HttpRequest): Promise<unknown> {
  const text = await req.text();
  if (text.trim() === '') return {};
  if (nestingDepth(text) > MAX_BODY_DEPTH) throw badRequest(`the JSON body nests deeper than ${MAX_BODY_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch (e) {
    // V8 quotes the text around the error, which may be a secret's value: the answer keeps only what went wrong.
    throw badRequest(`invalid JSON body: ${(e as Error).message.replace(/, (\.\.\.)?".*$/s, '')}`);
  }
}

export function requiredString(body: Record<string, unknown>, key: string): string {
  const value = body[key];
  if (typeof value !== 'string' || value === '') throw badRequest(`"${key}" is required and must be a non-empty string`);
  return value;
}

export function optionalString(body: Record<string, unknown>, key: string): string | undefined {
  const value = body[key];
  if (value !== undefined && typeof value !== 'string') throw badRequest(`"${key}" must be a string`);
  return value as string | undefined;
}

export function optionalBoolean(body: Record<string, unknown>, key: string): boolean | undefined {
  const value = body[key];
  if (value !== undefined && typeof value !== 'boolean') throw badRequest(`"${key}" must be a boolean`);
  return value as boolean | undefined;
}

/** How deep the text's brackets nest, outside strings (measured before parsing, so no parse or write recurses far). */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) { depth++; if (depth > deepest) deepest = depth; }
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}
