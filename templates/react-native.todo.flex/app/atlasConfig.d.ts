// The shape of ../atlasConfig.json: every key is required.
export interface AtlasConfig {
  appId: string;
  baseUrl: string;
  dataExplorerLink: string;
}
