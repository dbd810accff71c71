import { useCallback, useEffect, useState } from 'react';

export function App({ store, config }) {
  const [user, setUser] = useState(store.user);
  return user
    ? <TodoPage store={store} user={user} config={config} onLogOut={async () => { await store.logOut(); setUser(null); }} />
    : <LoginPage store={store} onLoggedIn={setUser} />;
}

function LoginPage({ store, onLoggedIn }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const run = (action) => async (event) => {
    event.preventDefault();
    setError('');
    try { onLoggedIn(await action(email, password)); } catch (e) { setError(e.error ?? e.message); }
  };
  return (
    <section className="card">
      <h1>To-do list</h1>
      <p className="meta">Log in or register with an email and a password (at least 6 characters).</p>
      <form onSubmit={run(store.logIn)}>
        <input type="email" aria-label="Email" placeholder="Email" value={email} onChange={(e) => setEmail(e.target.value)} required />
        <input type="password" aria-label="Password" placeholder="Password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        <button type="submit">Log in</button>
        <button type="button" className="secondary" onClick={run(store.register)}>Register</button>
      </form>
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}

function TodoPage({ store, user, config, onLogOut }) {
  const [items, setItems] = useState(null);
  const [summary, setSummary] = useState('');
  const [error, setError] = useState('');
  const refresh = useCallback(async () => {
    try { setItems(await store.list()); } catch (e) { setError(e.error ?? e.message); }
  }, [store]);
  useEffect(() => { refresh(); }, [refresh]);
  const act = (action) => async (...args) => {
    setError('');
    try { await action(...args); await refresh(); } catch (e) { setError(e.error ?? e.message); }
  };
  const add = act(async (event) => {
    event.preventDefault();
    if (!summary.trim()) return;
    await store.add(summary.trim());
    setSummary('');
  });
  return (
    <section className="card">
      <header>
        <h1>My to-dos</h1>
        <button type="button" className="secondary" onClick={onLogOut}>Log out</button>
      </header>
      <p className="meta">Logged in as {user.profile?.email ?? user.id} · app {config.appId}</p>
      <form onSubmit={add}>
        <input type="text" aria-label="New to-do" placeholder="What needs doing?" value={summary} onChange={(e) => setSummary(e.target.value)} />
        <button type="submit">Add</button>
      </form>
      {error && <p className="error" role="alert">{error}</p>}
      {items === null ? <p className="meta">Loading…</p> : (
        <ul aria-label="To-do items">
          {items.length === 0 && <li className="meta">Nothing to do.</li>}
          {items.map((item) => (
            <li key={String(item._id)} className={item.isComplete ? 'done' : ''}>
              <input type="checkbox" aria-label={`Done: ${item.summary}`} checked={item.isComplete} onChange={(e) => act(store.setComplete)(item, e.target.checked)} />
              <span>{item.summary}</span>
              <button type="button" className="secondary" aria-label={`Delete ${item.summary}`} onClick={() => act(store.remove)(item)}>Delete</button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
