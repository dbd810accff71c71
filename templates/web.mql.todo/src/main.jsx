import { createRoot } from 'react-dom/client';
import { App } from './App';
import { loadConfig } from './config';
import { createTodoStore } from './todoStore';

const root = createRoot(document.getElementById('root'));
loadConfig().then(
  (config) => root.render(<App store={createTodoStore(config)} config={config} />),
  (error) => root.render(<p className="error" role="alert">{error.message}</p>),
);
