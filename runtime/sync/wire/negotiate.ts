// Sync subprotocol negotiation over the WebSocket upgrade's Sec-WebSocket-Protocol header. realm-core 14 offers
// `com.mongodb.realm-sync#14, ..., #2` (partition-based) or `com.mongodb.realm-query-sync#14, ..., #2` (flexible).
// The protocol doc also allows a range `#<from>-<to>`, and clients before protocol 8 wrote `/` instead of `#`.
import { CURRENT_PROTOCOL_VERSION, OLDEST_PROTOCOL_VERSION } from './messages';

export const PARTITION_PROTOCOL_PREFIX = 'com.mongodb.realm-sync';
export const FLEXIBLE_PROTOCOL_PREFIX = 'com.mongodb.realm-query-sync';

export interface NegotiateOptions {
  /** Which sync kinds the server accepts; both by default. */
  accept?: { partition?: boolean; flexible?: boolean };
  minVersion?: number;
  maxVersion?: number;
}

export interface NegotiatedProtocol {
  /** The value for the response's Sec-WebSocket-Protocol header. */
  protocol: string;
  version: number;
  flexible: boolean;
}

const OFFER = /^com\.mongodb\.realm-(sync|query-sync)([#/])(\d{1,4})(?:-(\d{1,4}))?$/;
const MAX_OFFERS = 64;

/**
 * Picks the highest protocol version both sides speak from the offered list (a header value, or the list `ws`
 * hands to handleProtocols). Returns null when there is none; offers that do not parse are ignored.
 */
export function negotiate(offered: string | Iterable<string> | undefined, options: NegotiateOptions = {}): NegotiatedProtocol | null {
  const minVersion = options.minVersion ?? OLDEST_PROTOCOL_VERSION;
  const maxVersion = options.maxVersion ?? CURRENT_PROTOCOL_VERSION;
  const acceptPartition = options.accept?.partition ?? true;
  const acceptFlexible = options.accept?.flexible ?? true;
  const tokens = typeof offered === 'string' ? offered.split(',') : offered ? [...offered] : [];
  let best: NegotiatedProtocol | null = null;
  for (const raw of tokens.slice(0, MAX_OFFERS)) {
    const match = OFFER.exec(raw.trim());
    if (!match) continue;
    const flexible = match[1] === 'query-sync';
    if (flexible ? !acceptFlexible : !acceptPartition) continue;
    const from = Number(match[3]);
    const to = match[4] === undefined ? from : Number(match[4]);
    const version = Math.min(to, maxVersion);
    if (version < from || version < minVersion) continue;
    if (best && best.version >= version) continue;
    const prefix = flexible ? FLEXIBLE_PROTOCOL_PREFIX : PARTITION_PROTOCOL_PREFIX;
    best = { protocol: `${prefix}${match[2]}${version}`, version, flexible };
  }
  return best;
}
