import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { graphqlPlural, pluralize, sanitizeGraphqlName, singularize } from '../../core/graphql/inflect';

describe('pluralize (Rails rules)', () => {
  const cases: [string, string][] = [
    // graphql.md §2
    ['Mouse', 'Mice'], ['Entity', 'Entities'], ['Taxa', 'Taxas'], ['Quickadd', 'Quickadds'], ['Task', 'Tasks'], ['History_incident', 'History_incidents'],
    // irregulars keep the word's own case and also apply at the end of compound words
    ['Person', 'People'], ['person', 'people'], ['Salesperson', 'Salespeople'], ['Woman', 'Women'], ['Child', 'Children'], ['Zombie', 'Zombies'], ['Move', 'Moves'],
    // regular rules
    ['Status', 'Statuses'], ['Alias', 'Aliases'], ['Bus', 'Buses'], ['Octopus', 'Octopi'], ['Virus', 'Viri'], ['Axis', 'Axes'], ['Testis', 'Testes'],
    ['Tomato', 'Tomatoes'], ['Buffalo', 'Buffaloes'], ['Photo', 'Photos'], ['Medium', 'Media'], ['Datum', 'Data'], ['Analysis', 'Analyses'],
    ['Wife', 'Wives'], ['Half', 'Halves'], ['Wolf', 'Wolves'], ['Chief', 'Chiefs'], ['Hive', 'Hives'], ['Query', 'Queries'], ['Day', 'Days'],
    ['Box', 'Boxes'], ['Match', 'Matches'], ['Class', 'Classes'], ['Wish', 'Wishes'], ['Matrix', 'Matrices'], ['Vertex', 'Vertices'], ['Index', 'Indices'],
    ['Louse', 'Lice'], ['Ox', 'Oxen'], ['Quiz', 'Quizzes'], ['Tasks', 'Tasks'],
    // uncountables are returned unchanged, also at the end of a word after a boundary
    ['Equipment', 'Equipment'], ['Information', 'Information'], ['Sheep', 'Sheep'], ['Series', 'Series'], ['Police', 'Police'],
    ['old equipment', 'old equipment'],
  ];
  for (const [word, plural] of cases) test(`${word} → ${plural}`, () => assert.equal(pluralize(word), plural));

  test('an uncountable word inside an identifier is not uncountable', () => {
    assert.equal(pluralize('UserEquipment'), 'UserEquipments');
    assert.equal(pluralize('user_fish'), 'user_fishes');
  });
});

describe('singularize (Rails rules)', () => {
  const cases: [string, string][] = [
    // graphql.md §2 and §10.2
    ['candidates', 'candidate'], ['UserAdminData', 'UserAdminDatum'], ['ReportTranslations', 'ReportTranslation'], ['Taxa', 'Taxa'], ['Quickadd', 'Quickadd'],
    ['Task', 'Task'], ['Mouse', 'Mouse'], ['Mice', 'Mouse'], ['incident', 'incident'], ['history_incident', 'history_incident'],
    ['People', 'Person'], ['Children', 'Child'], ['Women', 'Woman'], ['Moves', 'Move'],
    ['Statuses', 'Status'], ['Status', 'Status'], ['Buses', 'Bus'], ['Addresses', 'Address'], ['Class', 'Class'], ['Movies', 'Movie'],
    ['Series', 'Series'], ['News', 'News'], ['Databases', 'Database'], ['Analyses', 'Analysis'], ['Diagnoses', 'Diagnosis'], ['Crises', 'Crisis'],
    ['Wives', 'Wife'], ['Halves', 'Half'], ['Hives', 'Hive'], ['Objectives', 'Objective'], ['Queries', 'Query'], ['Shoes', 'Shoe'], ['Tomatoes', 'Tomato'],
    ['Quizzes', 'Quiz'], ['Matrices', 'Matrix'], ['Vertices', 'Vertex'], ['Oxen', 'Ox'], ['Axes', 'Axis'], ['Octopi', 'Octopus'], ['Checklist', 'Checklist'],
    ['Equipment', 'Equipment'],
  ];
  for (const [word, singular] of cases) test(`${word} → ${singular}`, () => assert.equal(singularize(word), singular));
});

describe('graphqlPlural', () => {
  test('natural pluralisation falls back to singular + s when there is no distinct plural', () => {
    assert.equal(graphqlPlural('Mouse', true), 'Mice');
    assert.equal(graphqlPlural('Equipment', true), 'Equipments');
    assert.equal(graphqlPlural('Sheep', true), 'Sheeps');
    assert.equal(graphqlPlural('Entity', true), 'Entities');
  });

  test('without natural pluralisation the plural is always singular + s', () => {
    assert.equal(graphqlPlural('Mouse', false), 'Mouses');
    assert.equal(graphqlPlural('Entity', false), 'Entitys');
    assert.equal(graphqlPlural('Person', false), 'Persons');
  });
});

describe('sanitizeGraphqlName', () => {
  test('valid names stay unchanged', () => {
    for (const name of ['_id', 'editor_notes', 'dueDate', 'a1', 'Field_list']) {
      assert.deepEqual(sanitizeGraphqlName(name), { ok: true, name, changed: false });
    }
  });

  test('words are capitalised and joined, unsupported characters and leading digits removed', () => {
    assert.deepEqual(sanitizeGraphqlName('Assigned to team'), { ok: true, name: 'AssignedToTeam', changed: true });
    assert.deepEqual(sanitizeGraphqlName('due-date'), { ok: true, name: 'DueDate', changed: true });
    assert.deepEqual(sanitizeGraphqlName('price ($)'), { ok: true, name: 'Price', changed: true });
    assert.deepEqual(sanitizeGraphqlName('1st choice'), { ok: true, name: 'stChoice', changed: true });
    assert.deepEqual(sanitizeGraphqlName('42'), { ok: false, reason: 'empty' });
    assert.deepEqual(sanitizeGraphqlName('é'), { ok: false, reason: 'empty' });
  });

  test('names starting with __ are dropped', () => {
    assert.deepEqual(sanitizeGraphqlName('__typename'), { ok: false, reason: 'reserved-prefix' });
    assert.deepEqual(sanitizeGraphqlName('__ x'), { ok: false, reason: 'reserved-prefix' });
  });
});
