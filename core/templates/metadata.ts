// The file a template client reads its app id and URLs from, in each of the five shapes the platform writes
// (templates-admin-cli.md §1.3). Every key is always written: the clients fail on a missing one.
import type { MetadataKind } from './catalogue';

export interface MetadataValues {
  /** The client app id; empty in the download form. */
  appId: string;
  /** Where the client API answers (locally: the runtime, e.g. `http://localhost:8080`). */
  baseUrl: string;
  /** The app's page (on the platform, its dashboard). */
  appUrl: string;
  clientApiBaseUrl: string;
  dataApiBaseUrl: string;
  /** A browser link to the app's data; any harmless URL locally. */
  dataExplorerLink: string;
  dataSourceName: string;
}

/** The values for a runtime at `baseUrl`: every URL is the runtime, the data link its start page. */
export function localMetadataValues(appId: string, baseUrl: string, dataSourceName = 'mongodb-atlas'): MetadataValues {
  const base = baseUrl.replace(/\/+$/, '');
  return { appId, baseUrl: base, appUrl: `${base}/`, clientApiBaseUrl: base, dataApiBaseUrl: base, dataExplorerLink: `${base}/`, dataSourceName };
}

export function renderMetadata(kind: MetadataKind, v: MetadataValues): string {
  switch (kind) {
    case 'json-full':
      return json({
        appId: v.appId, baseUrl: v.baseUrl, appUrl: v.appUrl, clientApiBaseUrl: v.clientApiBaseUrl,
        dataApiBaseUrl: v.dataApiBaseUrl, dataExplorerLink: v.dataExplorerLink, dataSourceName: v.dataSourceName,
      });
    case 'json-short':
      return json({ appId: v.appId, baseUrl: v.baseUrl, dataExplorerLink: v.dataExplorerLink });
    case 'realm-json':
      return json({ appId: v.appId, baseUrl: v.baseUrl });
    case 'android-xml':
      return [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<resources>',
        `    <string name="realm_app_id">${xmlText(v.appId)}</string>`,
        `    <string name="realm_base_url">${xmlText(v.baseUrl)}</string>`,
        `    <string name="realm_data_explorer_link">${xmlText(v.dataExplorerLink)}</string>`,
        '</resources>',
        '',
      ].join('\n');
    case 'plist':
      return [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
        '<plist version="1.0">',
        '<dict>',
        `\t<key>appId</key>\n\t<string>${xmlText(v.appId)}</string>`,
        `\t<key>baseUrl</key>\n\t<string>${xmlText(v.baseUrl)}</string>`,
        `\t<key>dataExplorerLink</key>\n\t<string>${xmlText(v.dataExplorerLink)}</string>`,
        '</dict>',
        '</plist>',
        '',
      ].join('\n');
  }
}

/** The keys each shape carries, for callers and tests that check a written file. */
export const METADATA_KEYS: Readonly<Record<MetadataKind, readonly string[]>> = {
  'json-full': ['appId', 'baseUrl', 'appUrl', 'clientApiBaseUrl', 'dataApiBaseUrl', 'dataExplorerLink', 'dataSourceName'],
  'json-short': ['appId', 'baseUrl', 'dataExplorerLink'],
  'realm-json': ['appId', 'baseUrl'],
  'android-xml': ['realm_app_id', 'realm_base_url', 'realm_data_explorer_link'],
  plist: ['appId', 'baseUrl', 'dataExplorerLink'],
};

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

function xmlText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
