// English inflection following the default rule set of Rails ActiveSupport, because the platform
// names generated GraphQL types and root fields with those rules (graphql.md §2).
// Semantics kept from Rails: the newest rule wins, the first matching rule is applied once,
// matching ignores case while the replacement keeps the matched letters' case, and a word that ends
// (at a word boundary) in an uncountable word is returned unchanged.

interface Rule { pattern: RegExp; replacement: string }

class InflectionRules {
  /** Newest first, as rules defined later take precedence. */
  readonly plurals: Rule[] = [];
  readonly singulars: Rule[] = [];
  private uncountablePatterns: RegExp[] = [];

  plural(pattern: RegExp, replacement: string): void { this.plurals.unshift({ pattern, replacement }); }
  singular(pattern: RegExp, replacement: string): void { this.singulars.unshift({ pattern, replacement }); }

  /** Every default irregular pair shares its first letter, which is captured so the word's own case survives. */
  irregular(singular: string, plural: string): void {
    const first = singular[0], sRest = singular.slice(1), pRest = plural.slice(1);
    this.plural(new RegExp(`(${first})${sRest}$`, 'i'), `$1${pRest}`);
    this.plural(new RegExp(`(${first})${pRest}$`, 'i'), `$1${pRest}`);
    this.singular(new RegExp(`(${first})${sRest}$`, 'i'), `$1${sRest}`);
    this.singular(new RegExp(`(${first})${pRest}$`, 'i'), `$1${sRest}`);
  }

  uncountable(...words: string[]): void {
    for (const word of words) this.uncountablePatterns.push(new RegExp(`\\b${word.toLowerCase()}$`, 'i'));
  }

  isUncountable(word: string): boolean {
    return this.uncountablePatterns.some((p) => p.test(word));
  }
}

const english = new InflectionRules();

english.plural(/$/, 's');
english.plural(/s$/i, 's');
english.plural(/^(ax|test)is$/i, '$1es');
english.plural(/(octop|vir)us$/i, '$1i');
english.plural(/(octop|vir)i$/i, '$1i');
english.plural(/(alias|status)$/i, '$1es');
english.plural(/(bu)s$/i, '$1ses');
english.plural(/(buffal|tomat)o$/i, '$1oes');
english.plural(/([ti])um$/i, '$1a');
english.plural(/([ti])a$/i, '$1a');
english.plural(/sis$/i, 'ses');
english.plural(/(?:([^f])fe|([lr])f)$/i, '$1$2ves');
english.plural(/(hive)$/i, '$1s');
english.plural(/([^aeiouy]|qu)y$/i, '$1ies');
english.plural(/(x|ch|ss|sh)$/i, '$1es');
english.plural(/(matr|vert|ind)(?:ix|ex)$/i, '$1ices');
english.plural(/^(m|l)ouse$/i, '$1ice');
english.plural(/^(m|l)ice$/i, '$1ice');
english.plural(/^(ox)$/i, '$1en');
english.plural(/^(oxen)$/i, '$1');
english.plural(/(quiz)$/i, '$1zes');

english.singular(/s$/i, '');
english.singular(/(ss)$/i, '$1');
english.singular(/(n)ews$/i, '$1ews');
english.singular(/([ti])a$/i, '$1um');
english.singular(/((a)naly|(b)a|(d)iagno|(p)arenthe|(p)rogno|(s)ynop|(t)he)(sis|ses)$/i, '$1sis');
english.singular(/(^analy)(sis|ses)$/i, '$1sis');
english.singular(/([^f])ves$/i, '$1fe');
english.singular(/(hive)s$/i, '$1');
english.singular(/(tive)s$/i, '$1');
english.singular(/([lr])ves$/i, '$1f');
english.singular(/([^aeiouy]|qu)ies$/i, '$1y');
english.singular(/(s)eries$/i, '$1eries');
english.singular(/(m)ovies$/i, '$1ovie');
english.singular(/(x|ch|ss|sh)es$/i, '$1');
english.singular(/^(m|l)ice$/i, '$1ouse');
english.singular(/(bus)(es)?$/i, '$1');
english.singular(/(o)es$/i, '$1');
english.singular(/(shoe)s$/i, '$1');
english.singular(/(cris|test)(is|es)$/i, '$1is');
english.singular(/^(a)x[ie]s$/i, '$1xis');
english.singular(/(octop|vir)(us|i)$/i, '$1us');
english.singular(/(alias|status)(es)?$/i, '$1');
english.singular(/^(ox)en/i, '$1');
english.singular(/(vert|ind)ices$/i, '$1ex');
english.singular(/(matr)ices$/i, '$1ix');
english.singular(/(quiz)zes$/i, '$1');
english.singular(/(database)s$/i, '$1');

english.irregular('person', 'people');
english.irregular('man', 'men');
english.irregular('child', 'children');
english.irregular('sex', 'sexes');
english.irregular('move', 'moves');
english.irregular('zombie', 'zombies');

english.uncountable('equipment', 'information', 'rice', 'money', 'species', 'series', 'fish', 'sheep', 'jeans', 'police');

function applyFirstRule(word: string, rules: readonly Rule[]): string {
  if (word === '' || english.isUncountable(word)) return word;
  for (const { pattern, replacement } of rules) {
    if (pattern.test(word)) return word.replace(pattern, replacement);
  }
  return word;
}

/** Rails `pluralize`: `Mouse` → `Mice`, `Entity` → `Entities`; uncountable words are unchanged. */
export function pluralize(word: string): string {
  return applyFirstRule(word, english.plurals);
}

/** Rails `singularize`: `candidates` → `candidate`, `UserAdminData` → `UserAdminDatum`. */
export function singularize(word: string): string {
  return applyFirstRule(word, english.singulars);
}

/**
 * The plural used for GraphQL root fields: natural pluralisation with the platform's fallback of
 * singular + `s` when there is no distinct plural (`Equipment` → `Equipments`), or always singular + `s`
 * when natural pluralisation is off.
 */
export function graphqlPlural(singular: string, naturalPluralization: boolean): string {
  if (!naturalPluralization) return `${singular}s`;
  const plural = pluralize(singular);
  return plural === '' || plural === singular ? `${singular}s` : plural;
}

export function upperFirst(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1);
}

const validGraphqlName = /^[_A-Za-z][_0-9A-Za-z]*$/;

export type SanitizedName =
  | { ok: true; name: string; changed: boolean }
  | { ok: false; reason: 'reserved-prefix' | 'empty' };

/**
 * Turns a document key into a GraphQL name (graphql.md §2): valid names stay as they are; otherwise
 * unsupported characters split the key into words, each word is capitalised and the words are joined,
 * and leading digits are removed (`Assigned to team` → `AssignedToTeam`). Names starting with `__` are
 * reserved by GraphQL introspection and cannot be used.
 */
export function sanitizeGraphqlName(key: string): SanitizedName {
  if (validGraphqlName.test(key)) return key.startsWith('__') ? { ok: false, reason: 'reserved-prefix' } : { ok: true, name: key, changed: false };
  const words = key.split(/[^_0-9A-Za-z]+/).filter((w) => w !== '');
  const name = words.map(upperFirst).join('').replace(/^[0-9]+/, '');
  if (name === '') return { ok: false, reason: 'empty' };
  if (name.startsWith('__')) return { ok: false, reason: 'reserved-prefix' };
  return { ok: true, name, changed: true };
}

export function isValidGraphqlName(name: string): boolean {
  return validGraphqlName.test(name) && !name.startsWith('__');
}
