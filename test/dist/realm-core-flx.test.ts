// realm-core's test/object-store/sync/flx_sync.cpp and client_reset.cpp `[baas]` test cases against the
// shipped runtime (issue 32): flexible sync's subscriptions, bootstraps and their batching, compensating
// writes, TEST_COMMAND, client errors, and client resets in both sync modes.
import { describeRealmCoreSuite } from './fixtures/realm-core-suite';

/** Failing cases with what the failure showed (none since 2026-12-04); each one that passes comes off the list. */
const KNOWN_FAILING = new Map<string, string>();

describeRealmCoreSuite({ title: 'flx_sync.cpp + client_reset.cpp', spec: '[baas]', files: ['flx_sync.cpp', 'client_reset.cpp'], knownFailing: KNOWN_FAILING });
