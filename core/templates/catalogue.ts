// The 13 template apps the platform offers (templates-admin-cli.md §1.1), with where each one's files live
// under `templates/` and where its client expects the app id (§1.2, §1.3). Data only.

/** The exported backends the templates share; each is the folder `templates/<backend>/`. */
export type TemplateBackend = 'sync-todo' | 'web-js' | 'web-js-data-api' | 'add-collaborators' | 'restricted-feed' | 'tiered' | 'triggers';

/**
 * How the client reads its app id and URLs: the full JSON (C++, web), the short JSON (Flutter, MAUI,
 * React Native), `realm.json` (Node.js demos), Android string resources (Kotlin), a property list (SwiftUI).
 */
export type MetadataKind = 'json-full' | 'json-short' | 'realm-json' | 'android-xml' | 'plist';

export interface TemplateClient {
  /** Folder of the client's sources, relative to the templates folder: the template id itself. */
  readonly dir: string;
  readonly metadataPath: string;
  readonly metadataFilename: string;
  readonly fileFormat: 'json' | 'xml' | 'plist';
  readonly metadataKind: MetadataKind;
  /** The platform's UI offers the client as a zip (all but the C++ client). */
  readonly downloadable: boolean;
}

export interface TemplateInfo {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  /** The client's language and framework, or undefined for a backend-only template. */
  readonly clientLanguage?: string;
  readonly backend: TemplateBackend;
  readonly client?: TemplateClient;
}

const client = (dir: string, metadataFile: string, metadataKind: MetadataKind, downloadable = true): TemplateClient => {
  const slash = metadataFile.lastIndexOf('/');
  const base = metadataFile.slice(slash + 1);
  const dot = base.lastIndexOf('.');
  return {
    dir,
    metadataPath: slash < 0 ? '' : metadataFile.slice(0, slash),
    metadataFilename: base.slice(0, dot),
    fileFormat: base.slice(dot + 1) as TemplateClient['fileFormat'],
    metadataKind,
    downloadable,
  };
};

const guide = (strategy: string, title: string, description: string): TemplateInfo => ({
  id: `flex-sync-guides.${strategy}`,
  name: `Flex Sync Permissions Guide: '${title}' Demo`,
  description,
  clientLanguage: 'Node.js console demo',
  backend: strategy as TemplateBackend,
  client: client(`flex-sync-guides.${strategy}`, 'src/realm.json', 'realm-json'),
});

export const TEMPLATES: readonly TemplateInfo[] = [
  guide('add-collaborators', 'Add Collaborators', 'Dynamic collaboration permissions: an item is readable and writable by its owner and the users it lists as collaborators.'),
  guide('restricted-feed', 'Restricted Feed', 'Restricted news feed permissions: users read the items of the authors they subscribed to (custom user data filled by a creation trigger).'),
  guide('tiered', 'Tiered', 'Tiered privileges permissions: team members write their own items, team admins read and write all of their team\'s items.'),
  {
    id: 'cpp.todo.flex', name: 'C++ Todo App', description: 'Terminal to-do list app syncing with flexible sync.',
    clientLanguage: 'C++17 (CMake)', backend: 'sync-todo', client: client('cpp.todo.flex', 'atlasConfig.json', 'json-full', false),
  },
  {
    id: 'flutter.todo.flex', name: 'Flutter Todo App', description: 'Cross-platform to-do app syncing with flexible sync.',
    clientLanguage: 'Dart / Flutter', backend: 'sync-todo', client: client('flutter.todo.flex', 'assets/config/atlasConfig.json', 'json-short'),
  },
  {
    id: 'kotlin.todo.flex', name: 'Kotlin Todo App', description: 'Android to-do app (Jetpack Compose) syncing with flexible sync.',
    clientLanguage: 'Kotlin (Android)', backend: 'sync-todo', client: client('kotlin.todo.flex', 'app/src/main/res/values/atlasConfig.xml', 'android-xml'),
  },
  {
    id: 'maui.todo.flex', name: '.NET MAUI Todo App', description: 'Cross-platform mobile to-do app syncing with flexible sync.',
    clientLanguage: 'C# (.NET MAUI)', backend: 'sync-todo', client: client('maui.todo.flex', 'RealmTodo/atlasConfig.json', 'json-short'),
  },
  {
    id: 'react-native.todo.flex', name: 'React Native Todo App (TypeScript)', description: 'Cross-platform mobile to-do app syncing with flexible sync.',
    clientLanguage: 'TypeScript (React Native)', backend: 'sync-todo', client: client('react-native.todo.flex', 'atlasConfig.json', 'json-short'),
  },
  {
    id: 'swiftui.todo.flex', name: 'SwiftUI Todo App', description: 'iOS to-do app syncing with flexible sync.',
    clientLanguage: 'Swift (SwiftUI)', backend: 'sync-todo', client: client('swiftui.todo.flex', 'App/atlasConfig.plist', 'plist'),
  },
  {
    id: 'sync.todo', name: 'Flexible Sync Todo App',
    description: 'Backend only: the configuration the *.todo.flex clients sync with (to-do items, owner rules, flexible sync).',
    backend: 'sync-todo',
  },
  {
    id: 'triggers', name: 'Triggers Template',
    description: 'Backend only: a database trigger that copies each new item into a view collection.',
    backend: 'triggers',
  },
  {
    id: 'web.mql.todo', name: 'Web (MQL) Todo App', description: 'Hosted to-do web app: React, data access through the Web SDK under rules.',
    clientLanguage: 'React (Web SDK)', backend: 'web-js', client: client('web.mql.todo', 'src/atlasConfig.json', 'json-full'),
  },
  {
    id: 'web.data-api.todo', name: 'Data API Todo Web App', description: 'Hosted to-do web app: React over plain HTTPS (client API login and the Data API).',
    clientLanguage: 'React (HTTPS)', backend: 'web-js-data-api', client: client('web.data-api.todo', 'src/atlasConfig.json', 'json-full'),
  },
];

const BY_ID = new Map(TEMPLATES.map((t) => [t.id, t]));

/** Own lookups only: an id such as `__proto__` or `constructor` is simply not a template. */
export function findTemplate(id: string): TemplateInfo | undefined {
  return BY_ID.get(id);
}

/** The templates an app created from `templateId` may pull client code of: those sharing its backend. */
export function compatibleTemplates(templateId: string): TemplateInfo[] {
  const backend = findTemplate(templateId)?.backend;
  return backend ? TEMPLATES.filter((t) => t.backend === backend) : [];
}
