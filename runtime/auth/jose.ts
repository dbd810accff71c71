// jose is ESM-only; this package compiles as CommonJS, so it is loaded with a dynamic import (esbuild and
// tsx both resolve it) and its types come through a type-only import in ESM resolution mode.
import type * as JoseModule from 'jose' with { 'resolution-mode': 'import' };

export type Jose = typeof JoseModule;
export type JWTPayload = JoseModule.JWTPayload;
export type FetchImplementation = JoseModule.FetchImplementation;
export type RemoteKeySet = ReturnType<Jose['createRemoteJWKSet']>;
export type VerificationKey = Uint8Array | import('node:crypto').KeyObject | Awaited<ReturnType<Jose['importSPKI']>>;

let loading: Promise<Jose> | undefined;

export function loadJose(): Promise<Jose> {
  return (loading ??= import('jose'));
}
