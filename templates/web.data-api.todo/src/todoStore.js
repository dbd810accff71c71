// Login through the client API and the to-do items through the Data API, with nothing but fetch.
// The Data API runs each request as the logged-in user (bearer access token), under the app's rules
// (role "owner": a user sees and changes only the items whose owner_id is their user id).
const SESSION_KEY = 'todo-data-api-session';

export function createTodoStore(config) {
  const clientApi = `${config.clientApiBaseUrl}/api/client/v2.0`;
  const appApi = `${clientApi}/app/${config.appId}`;
  const dataApi = `${config.dataApiBaseUrl}/app/${config.appId}/endpoint/data/v1/action`;
  let session = JSON.parse(localStorage.getItem(SESSION_KEY) ?? 'null');
  const save = (next) => {
    session = next;
    if (next) localStorage.setItem(SESSION_KEY, JSON.stringify(next)); else localStorage.removeItem(SESSION_KEY);
  };

  async function request(url, { method = 'POST', body, token } = {}) {
    const response = await fetch(url, {
      method,
      headers: { ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const payload = text ? JSON.parse(text) : undefined;
    if (!response.ok) throw Object.assign(new Error(payload?.error ?? `${response.status} ${response.statusText}`), { status: response.status });
    return payload;
  }

  async function logIn(email, password) {
    const tokens = await request(`${appApi}/auth/providers/local-userpass/login`, { body: { username: email, password } });
    save({ id: tokens.user_id, email, accessToken: tokens.access_token, refreshToken: tokens.refresh_token });
    return userOf(session);
  }

  /** A Data API action as the user; an expired access token is refreshed once. */
  async function action(name, body) {
    const call = () => request(`${dataApi}/${name}`, { body: { dataSource: config.dataSourceName, database: 'todo', collection: 'Item', ...body }, token: session.accessToken });
    try {
      return await call();
    } catch (e) {
      if (e.status !== 401) throw e;
      const { access_token } = await request(`${clientApi}/auth/session`, { token: session.refreshToken });
      save({ ...session, accessToken: access_token });
      return call();
    }
  }
  const userOf = (s) => ({ id: s.id, profile: { email: s.email } });
  const byId = (item) => ({ _id: { $oid: item._id } });

  return {
    get user() { return session && userOf(session); },
    async register(email, password) {
      await request(`${appApi}/auth/providers/local-userpass/register`, { body: { email, password } });
      return logIn(email, password);
    },
    logIn,
    async logOut() {
      if (session) await request(`${clientApi}/auth/session`, { method: 'DELETE', token: session.refreshToken }).catch(() => undefined);
      save(null);
    },
    list: async () => (await action('find', { filter: {}, sort: { _id: 1 } })).documents,
    add: (summary) => action('insertOne', { document: { summary, isComplete: false, owner_id: session.id } }),
    setComplete: (item, isComplete) => action('updateOne', { filter: byId(item), update: { $set: { isComplete } } }),
    remove: (item) => action('deleteOne', { filter: byId(item) }),
  };
}
