// Local secret values from `secrets.json`: `{"name": "value"}`, or, in legacy (stitch.json) apps, grouped by
// owner as the old CLI wrote them: `{"auth_providers": {"oauth2-google": {"clientSecret": "…"}}, "services": {…}}`.
// Grouped leaves are secrets named by their own key.
import { isObject, type JSONPath } from './json';

export interface SecretEntry { name: string; value: string; path: JSONPath }

/** Secret values in the file, and the paths of entries that are neither a string nor a group of strings. */
export function secretEntries(root: Record<string, unknown>): { entries: SecretEntry[]; invalid: JSONPath[] } {
  const entries: SecretEntry[] = [];
  const invalid: JSONPath[] = [];
  const walk = (value: unknown, path: string[], depth: number) => {
    const name = path[path.length - 1]!;
    if (typeof value === 'string') entries.push({ name, value, path });
    else if (isObject(value) && depth < 3) for (const [key, inner] of Object.entries(value)) walk(inner, [...path, key], depth + 1);
    else invalid.push(path);
  };
  for (const [name, value] of Object.entries(root)) walk(value, [name], 1);
  return { entries, invalid };
}
