// The app's id and URLs come from atlasConfig.json, which the build copies next to the page.
export async function loadConfig() {
  const response = await fetch('./atlasConfig.json');
  if (!response.ok) throw new Error(`atlasConfig.json could not be loaded (${response.status})`);
  const config = await response.json();
  if (!config.appId) throw new Error('atlasConfig.json has no appId: put your app id there (see README.md)');
  // Served by the app's own hosting (http://<app id>.localhost:<port>/): the API answers on this origin.
  if (window.location.hostname === `${config.appId.toLowerCase()}.localhost`) {
    const origin = window.location.origin;
    return { ...config, baseUrl: origin, clientApiBaseUrl: origin, dataApiBaseUrl: origin };
  }
  return config;
}
